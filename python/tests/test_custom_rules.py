"""User-written derivative rules: ad.custom_vjp and ad.custom_jvp.

A rule replaces the differentiation of a function's body wherever the
function is differentiated: direct requests, calls from differentiated
functions, loops, recursion, forward over reverse. Rules that give a
deliberately different derivative than the body show which one is used."""

import numpy as np
import pytest

import mlir_ad

CBRT = """
// libm's cbrt, differentiable through user-written rules.
func.func private @cbrt(f64) -> f64
func.func private @cbrt_fwd(%x: f64) -> (f64, f64) {
  %y = func.call @cbrt(%x) : (f64) -> f64
  return %y, %y : f64, f64
}
func.func private @cbrt_pb(%y: f64, %dy: f64) -> f64 {
  %y2 = arith.mulf %y, %y : f64
  %three = arith.constant 3.0 : f64
  %d = arith.mulf %three, %y2 : f64
  %dx = arith.divf %dy, %d : f64
  return %dx : f64
}
ad.custom_vjp @cbrt forward @cbrt_fwd pullback @cbrt_pb
func.func private @cbrt_tangent(%x: f64, %dx: f64) -> (f64, f64) {
  %y = func.call @cbrt(%x) : (f64) -> f64
  %y2 = arith.mulf %y, %y : f64
  %three = arith.constant 3.0 : f64
  %d = arith.mulf %three, %y2 : f64
  %dy = arith.divf %dx, %d : f64
  return %y, %dy : f64, f64
}
ad.custom_jvp @cbrt tangent @cbrt_tangent
// r = r * cbrt(x (i + 1)) + cbrt(x (i + 1)), n times
func.func @f(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> f64 {
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %one = arith.constant 1.0 : f64
    %w = arith.addf %fi, %one : f64
    %xw = arith.mulf %x, %w : f64
    %c = func.call @cbrt(%xw) : (f64) -> f64
    %s = arith.mulf %c, %a : f64
    %t = arith.addf %s, %c : f64
    scf.yield %t : f64
  }
  return %r : f64
}
"""


@pytest.mark.parametrize("x", [0.5, 2.0])
@pytest.mark.parametrize("n", [1, 4])
def test_external_function_in_a_loop_all_modes(x, n):
    m = mlir_ad.compile(CBRT)
    fd = (m.f(x + 1e-6, n) - m.f(x - 1e-6, n)) / 2e-6
    (g,) = mlir_ad.grad(m.f)(x, n)
    assert g == pytest.approx(fd, rel=1e-7)
    _, t = mlir_ad.jvp(m.f, (x, n), (1.0,))
    assert t == pytest.approx(g, rel=1e-13)
    (h,) = mlir_ad.hvp(m.f, (x, n), (1.0,))
    grad = mlir_ad.grad(m.f)
    fdh = (grad(x + 1e-5, n)[0] - grad(x - 1e-5, n)[0]) / 2e-5
    assert h == pytest.approx(fdh, rel=1e-6)


# @sq's body is x * x, but its rules say the derivative is 3 x (reverse)
# and 5 x (forward): the results show which is used.
MARKED = """
func.func private @sq(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}
func.func private @sq_fwd(%x: f64) -> (f64, f64) {
  %y = arith.mulf %x, %x : f64
  return %y, %x : f64, f64
}
func.func private @sq_pb(%x: f64, %dy: f64) -> f64 {
  %three = arith.constant 3.0 : f64
  %d = arith.mulf %three, %x : f64
  %dx = arith.mulf %d, %dy : f64
  return %dx : f64
}
func.func private @sq_tangent(%x: f64, %tx: f64) -> (f64, f64) {
  %y = arith.mulf %x, %x : f64
  %five = arith.constant 5.0 : f64
  %d = arith.mulf %five, %x : f64
  %ty = arith.mulf %d, %tx : f64
  return %y, %ty : f64, f64
}
ad.custom_vjp @sq forward @sq_fwd pullback @sq_pb
ad.custom_jvp @sq tangent @sq_tangent

func.func @direct(%x: f64) -> f64 {
  %y = func.call @sq(%x) : (f64) -> f64
  return %y : f64
}
// sum over i < n of sq(x): derivative n * rule
func.func @loop(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> f64 {
    %s = func.call @sq(%x) : (f64) -> f64
    %t = arith.addf %a, %s : f64
    scf.yield %t : f64
  }
  return %r : f64
}
// rec(n, x) = sq(x) + rec(n - 1, x), rec(0, x) = 0
func.func @rec(%n: index, %x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> f64 {
    %z = arith.constant 0.0 : f64
    scf.yield %z : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %g = func.call @rec(%m, %x) : (index, f64) -> f64
    %s = func.call @sq(%x) : (f64) -> f64
    %t = arith.addf %g, %s : f64
    scf.yield %t : f64
  }
  return %r : f64
}
// Requests inside MLIR use the rules too.
func.func @grad_sq(%x: f64) -> f64 {
  %g = ad.grad @sq(%x) : (f64) -> f64
  return %g : f64
}
func.func @jvp_sq(%x: f64, %t: f64) -> f64 {
  %y, %ty = ad.jvp @sq(%x) tangents(%t) : (f64) -> (f64, f64)
  return %ty : f64
}
"""


def test_rules_replace_the_body_everywhere():
    m = mlir_ad.compile(MARKED)
    x = 0.7
    assert mlir_ad.grad(m.sq)(x)[0] == pytest.approx(3 * x, rel=1e-15)
    assert m.grad_sq(x) == pytest.approx(3 * x, rel=1e-15)
    assert mlir_ad.jvp(m.sq, (x,), (1.0,))[1] == pytest.approx(5 * x, rel=1e-15)
    assert m.jvp_sq(x, 1.0) == pytest.approx(5 * x, rel=1e-15)
    assert mlir_ad.grad(m.direct)(x)[0] == pytest.approx(3 * x, rel=1e-15)
    for n in (0, 1, 6):
        assert mlir_ad.grad(m.loop)(x, n)[0] == pytest.approx(3 * x * n, rel=1e-15)
        assert mlir_ad.jvp(m.loop, (x, n), (1.0,))[1] == \
            pytest.approx(5 * x * n, rel=1e-15)
        assert mlir_ad.grad(m.rec)(n, x)[0] == pytest.approx(3 * x * n, rel=1e-15)
        assert mlir_ad.jvp(m.rec, (n, x), (1.0,))[1] == \
            pytest.approx(5 * x * n, rel=1e-15)
    # Forward over reverse differentiates the rule's forward and pullback:
    # d/dx (3 x) = 3 per call.
    assert mlir_ad.hvp(m.loop, (x, 4), (1.0,))[0] == pytest.approx(12.0, rel=1e-15)


TENSOR_RULE = """
// g(w, s, n) = s * sum(w * w), with residuals w and s.
func.func private @g(%w: tensor<3xf64>, %s: f64, %n: index) -> f64 {
  %y, %rw, %rs = func.call @g_fwd(%w, %s, %n) : (tensor<3xf64>, f64, index) -> (f64, tensor<3xf64>, f64)
  return %y : f64
}
func.func private @g_fwd(%w: tensor<3xf64>, %s: f64, %n: index) -> (f64, tensor<3xf64>, f64) {
  %sq = arith.mulf %w, %w : tensor<3xf64>
  %z = arith.constant 0.0 : f64
  %init = tensor.from_elements %z : tensor<f64>
  %sum = linalg.reduce ins(%sq : tensor<3xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%a: f64, %b: f64) {
      %t = arith.addf %a, %b : f64
      linalg.yield %t : f64
    }
  %v = tensor.extract %sum[] : tensor<f64>
  %y = arith.mulf %s, %v : f64
  return %y, %w, %s : f64, tensor<3xf64>, f64
}
func.func private @g_pb(%w: tensor<3xf64>, %s: f64, %dy: f64) -> (tensor<3xf64>, f64) {
  %two = arith.constant 2.0 : f64
  %k = arith.mulf %two, %s : f64
  %kd = arith.mulf %k, %dy : f64
  %ks = tensor.splat %kd : tensor<3xf64>
  %dw = arith.mulf %ks, %w : tensor<3xf64>
  %sq = arith.mulf %w, %w : tensor<3xf64>
  %z = arith.constant 0.0 : f64
  %init = tensor.from_elements %z : tensor<f64>
  %sum = linalg.reduce ins(%sq : tensor<3xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%a: f64, %b: f64) {
      %t = arith.addf %a, %b : f64
      linalg.yield %t : f64
    }
  %v = tensor.extract %sum[] : tensor<f64>
  %ds = arith.mulf %v, %dy : f64
  return %dw, %ds : tensor<3xf64>, f64
}
ad.custom_vjp @g forward @g_fwd pullback @g_pb
// Called in a loop: the tensor residual is taped per iteration.
func.func @uses(%w: tensor<3xf64>, %s: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %s) -> f64 {
    %y = func.call @g(%w, %a, %n) : (tensor<3xf64>, f64, index) -> f64
    %t = math.sin %y : f64
    scf.yield %t : f64
  }
  return %r : f64
}
"""


def test_tensor_residuals_in_a_loop_and_wrt_subsets():
    m = mlir_ad.compile(TENSOR_RULE)
    w = np.array([0.3, -0.2, 0.5])
    s, n = 0.9, 3

    def primal(w, s):  # the same computation in numpy
        r = s
        for _ in range(n):
            r = np.sin(r * np.sum(w * w))
        return r

    gw, gs = mlir_ad.grad(m.uses)(w, s, n)
    fd_s = (primal(w, s + 1e-6) - primal(w, s - 1e-6)) / 2e-6
    fd_w = [(primal(w + 1e-6 * e, s) - primal(w - 1e-6 * e, s)) / 2e-6
            for e in np.eye(3)]
    assert gs == pytest.approx(fd_s, rel=1e-7)
    np.testing.assert_allclose(gw, fd_w, rtol=1e-7)
    only_s = mlir_ad.grad(m.uses, wrt=1)(w, s, n)
    assert only_s == pytest.approx(gs, rel=1e-15)
    only_w = mlir_ad.grad(m.uses, wrt=0)(w, s, n)
    np.testing.assert_allclose(only_w, gw, rtol=1e-15)


def test_one_rule_only():
    # custom_vjp only: forward mode differentiates the body (2 x); an
    # external declaration without custom_jvp cannot be.
    m = mlir_ad.compile(MARKED.replace("ad.custom_jvp @sq tangent @sq_tangent", ""))
    assert mlir_ad.jvp(m.direct, (0.7,), (1.0,))[1] == pytest.approx(1.4, rel=1e-15)
    assert mlir_ad.grad(m.direct)(0.7)[0] == pytest.approx(2.1, rel=1e-15)
    # custom_jvp only: reverse mode differentiates the body.
    m = mlir_ad.compile(MARKED.replace(
        "ad.custom_vjp @sq forward @sq_fwd pullback @sq_pb", ""))
    assert mlir_ad.grad(m.direct)(0.7)[0] == pytest.approx(1.4, rel=1e-15)
    assert mlir_ad.jvp(m.direct, (0.7,), (1.0,))[1] == pytest.approx(3.5, rel=1e-15)
    m = mlir_ad.compile(CBRT.replace("ad.custom_jvp @cbrt tangent @cbrt_tangent", ""))
    with pytest.raises(mlir_ad.CompileError, match="to a function without a body here"):
        mlir_ad.jvp(m.f, (0.5, 2), (1.0,))
    assert mlir_ad.grad(m.f)(0.5, 2)[0] == pytest.approx(
        (m.f(0.5 + 1e-6, 2) - m.f(0.5 - 1e-6, 2)) / 2e-6, rel=1e-7)


def test_wrong_rule_signature_is_a_compile_error():
    bad = MARKED.replace("func.func private @sq_pb(%x: f64, %dy: f64) -> f64 {",
                         "func.func private @sq_pb(%x: f64, %dy: f32) -> f64 {") \
        .replace("%dx = arith.mulf %d, %dy : f64", "%dx = arith.mulf %d, %d : f64")
    with pytest.raises(mlir_ad.CompileError,
                       match=r"pullback @sq_pb must take the residuals of @sq_fwd "
                             r"and a cotangent per float result of @sq, \(f64, f64\), "
                             r"but takes \(f64, f32\)"):
        mlir_ad.compile(bad)


NESTED = """
// The rule's pullback takes a gradient itself; hvp differentiates it.
func.func private @e_impl(%x: f64) -> f64 {
  %s = math.sin %x : f64
  %y = arith.mulf %s, %x : f64
  return %y : f64
}
func.func private @e(%x: f64) -> f64 {
  %y = func.call @e_impl(%x) : (f64) -> f64
  return %y : f64
}
func.func private @e_fwd(%x: f64) -> (f64, f64) {
  %y = func.call @e_impl(%x) : (f64) -> f64
  return %y, %x : f64, f64
}
func.func private @e_pb(%x: f64, %dy: f64) -> f64 {
  %g = ad.grad @e_impl(%x) : (f64) -> f64
  %dx = arith.mulf %g, %dy : f64
  return %dx : f64
}
ad.custom_vjp @e forward @e_fwd pullback @e_pb
func.func @uses(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> f64 {
    %y = func.call @e(%a) : (f64) -> f64
    scf.yield %y : f64
  }
  return %r : f64
}
// A declaration with a rule can be differentiated directly.
func.func @grad_cbrt(%x: f64) -> f64 {
  %g = ad.grad @cbrt(%x) : (f64) -> f64
  return %g : f64
}
"""


def test_rule_functions_with_requests_and_direct_requests_on_declarations():
    m = mlir_ad.compile(CBRT + NESTED)
    grad = mlir_ad.grad(m.uses, wrt=0)
    for n in (1, 3):
        h = mlir_ad.hvp(m.uses, (0.6, n), (1.0,), wrt=0)
        fd = (grad(0.6 + 1e-6, n) - grad(0.6 - 1e-6, n)) / 2e-6
        assert h == pytest.approx(fd, rel=1e-6)
    assert m.grad_cbrt(8.0) == pytest.approx(1.0 / 12.0, rel=1e-15)


def test_a_function_with_only_a_tangent_rule_in_a_reverse_loop():
    # Reverse mode inlines a callee with loops into the loop calling it;
    # a function with only ad.custom_jvp is inlined like any other.
    m = mlir_ad.compile("""
    func.func private @inner(%x: f64, %n: index) -> f64 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> f64 {
        %s = math.sin %a : f64
        scf.yield %s : f64
      }
      return %r : f64
    }
    func.func private @inner_tangent(%x: f64, %n: index, %t: f64) -> (f64, f64) {
      %y = func.call @inner(%x, %n) : (f64, index) -> f64
      return %y, %t : f64, f64
    }
    ad.custom_jvp @inner tangent @inner_tangent
    func.func @outer(%x: f64, %n: index) -> f64 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> f64 {
        %y = func.call @inner(%a, %n) : (f64, index) -> f64
        scf.yield %y : f64
      }
      return %r : f64
    }""")
    g = mlir_ad.grad(m.outer, wrt=0)(0.7, 3)
    fd = (m.outer(0.7 + 1e-6, 3) - m.outer(0.7 - 1e-6, 3)) / 2e-6
    assert g == pytest.approx(fd, rel=1e-7)


def test_a_short_function_with_a_tangent_rule_in_a_loop_keeps_its_rule():
    # Calls in loops of short functions of cheap ops are inlined before
    # differentiation (the reverse sweep then computes their values again
    # instead of keeping them), but not those of a function with a
    # user-written rule: forward mode uses the rule (5 x, where the body
    # says 2 x).
    m = mlir_ad.compile("""
    func.func private @sq(%x: tensor<3xf64>) -> tensor<3xf64> {
      %y = arith.mulf %x, %x : tensor<3xf64>
      return %y : tensor<3xf64>
    }
    func.func private @sq_tangent(%x: tensor<3xf64>, %t: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>) {
      %y = arith.mulf %x, %x : tensor<3xf64>
      %five = arith.constant dense<5.0> : tensor<3xf64>
      %d = arith.mulf %five, %x : tensor<3xf64>
      %ty = arith.mulf %d, %t : tensor<3xf64>
      return %y, %ty : tensor<3xf64>, tensor<3xf64>
    }
    ad.custom_jvp @sq tangent @sq_tangent
    func.func @loop(%x: tensor<3xf64>, %n: index) -> tensor<3xf64> {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %z = arith.constant dense<0.0> : tensor<3xf64>
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> tensor<3xf64> {
        %s = func.call @sq(%x) : (tensor<3xf64>) -> tensor<3xf64>
        %t = arith.addf %a, %s : tensor<3xf64>
        scf.yield %t : tensor<3xf64>
      }
      return %r : tensor<3xf64>
    }""")
    x = np.array([0.5, -1.0, 2.0])
    _, t = mlir_ad.jvp(m.loop, (x, 3), (np.ones(3),))
    np.testing.assert_allclose(t, 15 * x, rtol=1e-15)
