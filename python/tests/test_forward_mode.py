"""Forward mode (ad.jvp), Hessian-vector products (ad.hvp), second order and
ad.stop_gradient through the package.

The first check is the dot-product test: for every function of every
program of the other test modules, <ybar, jvp(x; t)> = <vjp(x)(ybar), t>
for random t and ybar. The two modes have separate sweeps and separate
rules for control flow, calls, linalg and tensor ops, so their agreement to
near machine precision checks those against each other; they share the
arith/math partial derivatives, activity analysis and preparation, which
only finite differences check (here for jvp, in the other modules for
the reverse rules). Finite differences of gradients check hvp."""

import importlib
import re

import numpy as np
import pytest

import mlir_ad
from conftest import assert_grads_close, numerical_grad

# ---------------------------------------------------------------------------
# The dot-product test over the programs of the other test modules.

PROGRAM_MODULES = ["test_programs", "test_scalar_grads", "test_tensor_grads",
                   "test_vjp", "test_wrt", "test_types"]


def _program_sources():
    sources = []
    for name in PROGRAM_MODULES:
        module = importlib.import_module(name)
        for attr, value in sorted(vars(module).items()):
            if isinstance(value, str) and "func.func" in value:
                sources.append(pytest.param(name, attr, id=f"{name}.{attr}"))
    return sources


def _compile_program(module_name, attr):
    text = getattr(importlib.import_module(module_name), attr)
    # Some sources are templates over the float type T.
    text = re.sub(r"(\b|(?<=x))T\b", "f64", text)
    try:
        return mlir_ad.compile(text)
    except mlir_ad.CompileError:
        return None


def _sample(type_desc, rng, size):
    """A random argument for a type (element, shape, mlir type, dtype,
    differentiable); None when the test does not know how to make one."""
    element, shape, _, dtype, differentiable = type_desc
    if dtype is None:
        return None
    if shape is None:
        if differentiable:
            return float(rng.uniform(0.5, 1.5))
        if element == "i1":
            return True
        return size
    dims = tuple(size if d is None or d < 0 else d for d in shape)
    if differentiable:
        return rng.uniform(0.5, 1.5, dims).astype(dtype)
    return np.full(dims, 1, dtype=dtype)


def _inner(a, b):
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _random_like(value, rng):
    if np.ndim(value):
        return rng.standard_normal(np.shape(value)).astype(np.float64)
    return float(rng.standard_normal())


def _sample_arguments(fun, inputs, rng):
    """Arguments at which `fun` runs and returns finite values, or None."""
    for size in (3, 2, 4, 1):
        candidate = [_sample(t, rng, size) for t in inputs]
        if any(a is None for a in candidate):
            return None
        try:
            outputs = _tuple(fun(*candidate))
        except Exception:
            continue
        if all(np.all(np.isfinite(np.asarray(o, np.float64))) for o in outputs):
            return candidate
    return None


# Relative error of each function checked (bench/forward-mode.py reports it).
DOT_PRODUCT_ERRORS = {}


@pytest.mark.parametrize("module_name, attr", _program_sources())
def test_dot_product_of_jvp_and_vjp(module_name, attr):
    m = _compile_program(module_name, attr)
    if m is None:
        pytest.skip("a program of error tests")
    rng = np.random.default_rng(7)
    checked = 0
    worst = 0.0
    for name in m.functions:
        fun = m[name]
        try:
            inputs, results = m._program.signature(name)
        except Exception:
            continue
        if not fun.differentiable_arguments:
            continue
        float_results = [i for i, r in enumerate(results) if r[4]]
        if not float_results or any(r[3] is None for r in results):
            continue
        # f64 only: the test wants machine precision.
        if any(t[4] and t[0] != "f64" for t in list(inputs) + list(results)):
            continue
        args = _sample_arguments(fun, inputs, rng)
        if args is None:
            continue
        outputs = _tuple(fun(*args))
        positions = fun.differentiable_arguments
        tangents = [rng.standard_normal(np.shape(args[p])) if np.ndim(args[p])
                    else float(rng.standard_normal()) for p in positions]
        tangents = [t.astype(np.float64) if isinstance(t, np.ndarray) else t
                    for t in tangents]
        values, result_tangents = mlir_ad.jvp(fun, tuple(args), tuple(tangents))
        values = _tuple(values)
        result_tangents = _tuple(result_tangents)
        assert len(result_tangents) == len(float_results)
        for got, want in zip(values, outputs):
            np.testing.assert_allclose(np.asarray(got, np.float64),
                                       np.asarray(want, np.float64),
                                       rtol=1e-12, atol=0)
        cotangents = [rng.standard_normal(np.shape(values[i])) if np.ndim(values[i])
                      else float(rng.standard_normal()) for i in float_results]
        _, pullback = mlir_ad.vjp(fun)(*args)
        grads = _tuple(pullback(*cotangents))
        lhs = sum(_inner(c, t) for c, t in zip(cotangents, result_tangents))
        rhs = sum(_inner(g, t) for g, t in zip(grads, tangents))
        scale = sum(abs(_inner(np.abs(c), np.abs(t)))
                    for c, t in zip(cotangents, result_tangents)) + \
            sum(abs(_inner(np.abs(g), np.abs(t))) for g, t in zip(grads, tangents))
        error = abs(lhs - rhs) / max(scale, 1e-300)
        worst = max(worst, error)
        assert error < 1e-10, (name, lhs, rhs)
        checked += 1
        DOT_PRODUCT_ERRORS[f"{module_name}.{attr}.{name}"] = error
    if checked == 0:
        pytest.skip("no function with float arguments and results to check")


# ---------------------------------------------------------------------------
# jvp against finite differences, every float type.

SCALARS = """
func.func @mix(%x: T, %y: T, %n: index) -> (T, i32, T) {
  %s = math.sin %x : T
  %e = math.exp %y : T
  %p = arith.mulf %s, %e : T
  %t = math.tanh %p : T
  %a = math.atan2 %x, %y : T
  %q = math.powf %y, %x : T
  %m = arith.maximumf %t, %a : T
  %er = math.erf %q : T
  %r = arith.addf %m, %er : T
  %k = arith.constant 7 : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %w = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %r) -> T {
    %sq = arith.mulf %acc, %acc : T
    %h = arith.constant 0.5 : T
    %hs = arith.mulf %sq, %h : T
    %v = math.cos %hs : T
    %z = arith.addf %v, %x : T
    scf.yield %z : T
  }
  return %w, %k, %r : T, i32, T
}
"""


@pytest.mark.parametrize("dtype, mlir, rtol", [(np.float64, "f64", 1e-7),
                                                (np.float32, "f32", 2e-2)])
def test_jvp_of_scalars_against_finite_differences(dtype, mlir, rtol):
    m = mlir_ad.compile(SCALARS.replace("T", mlir))
    x, y, tx, ty = 0.7, 1.3, 0.4, -0.9
    (w, k, r), (tw, tr) = mlir_ad.jvp(m.mix, (x, y, 3), (tx, ty))
    assert k == 7
    eps = 1e-6
    plus = m.mix(x + eps * tx, y + eps * ty, 3)
    minus = m.mix(x - eps * tx, y - eps * ty, 3)
    if dtype == np.float64:
        fd = [(plus[0] - minus[0]) / (2 * eps), (plus[2] - minus[2]) / (2 * eps)]
    else:
        m64 = mlir_ad.compile(SCALARS.replace("T", "f64"))
        p = m64.mix(x + eps * tx, y + eps * ty, 3)
        q = m64.mix(x - eps * tx, y - eps * ty, 3)
        fd = [(p[0] - q[0]) / (2 * eps), (p[2] - q[2]) / (2 * eps)]
    np.testing.assert_allclose([tw, tr], fd, rtol=rtol)
    # wrt: only y varies.
    _, (tw_y, tr_y) = mlir_ad.jvp(m.mix, (x, y, 3), (ty,), wrt=[1])
    _, (tw_x, tr_x) = mlir_ad.jvp(m.mix, (x, y, 3), tx, wrt=0)
    np.testing.assert_allclose([tw_x + tw_y, tr_x + tr_y], [tw, tr],
                               rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_jvp_of_f16_runs_alongside_f32():
    m16 = mlir_ad.compile(SCALARS.replace("T", "f16"))
    m32 = mlir_ad.compile(SCALARS.replace("T", "f32"))
    _, (t16, _) = mlir_ad.jvp(m16.mix, (0.7, 1.3, 2), (0.4, -0.9))
    _, (t32, _) = mlir_ad.jvp(m32.mix, (0.7, 1.3, 2), (0.4, -0.9))
    assert float(t16) == pytest.approx(float(t32), rel=3e-2, abs=3e-2)


TENSORS = """
// A while loop with a data-dependent trip count over a dynamic tensor,
// a matmul, a max reduction, slices and a pad.
func.func @net(%w: tensor<3x4xf64>, %x: tensor<?x3xf64>, %limit: f64) -> (tensor<?x4xf64>, f64) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x3xf64>
  %e = tensor.empty(%n) : tensor<?x4xf64>
  %z = arith.constant 0.0 : f64
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<?x4xf64>) -> tensor<?x4xf64>
  %h = linalg.matmul ins(%x, %w : tensor<?x3xf64>, tensor<3x4xf64>) outs(%f : tensor<?x4xf64>) -> tensor<?x4xf64>
  %a = math.tanh %h : tensor<?x4xf64>
  %one = arith.constant 1.0 : f64
  %r:2 = scf.while (%v = %a, %s = %one) : (tensor<?x4xf64>, f64) -> (tensor<?x4xf64>, f64) {
    %go = arith.cmpf olt, %s, %limit : f64
    scf.condition(%go) %v, %s : tensor<?x4xf64>, f64
  } do {
  ^bb0(%v: tensor<?x4xf64>, %s: f64):
    %sq = arith.mulf %v, %v : tensor<?x4xf64>
    %sin = math.sin %sq : tensor<?x4xf64>
    %two = arith.constant 2.0 : f64
    %s2 = arith.mulf %s, %two : f64
    scf.yield %sin, %s2 : tensor<?x4xf64>, f64
  }
  %init = tensor.from_elements %z : tensor<f64>
  %mx = linalg.reduce ins(%r#0 : tensor<?x4xf64>) outs(%init : tensor<f64>) dimensions = [0, 1]
    (%p: f64, %q: f64) {
      %t = arith.maximumf %p, %q : f64
      linalg.yield %t : f64
    }
  %m = tensor.extract %mx[] : tensor<f64>
  %col = tensor.extract_slice %r#0[0, 1] [%n, 2] [1, 1] : tensor<?x4xf64> to tensor<?x2xf64>
  %pad = tensor.pad %col low[0, 1] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %m : f64
  } : tensor<?x2xf64> to tensor<?x4xf64>
  %out = arith.addf %pad, %r#0 : tensor<?x4xf64>
  return %out, %m : tensor<?x4xf64>, f64
}
"""


def test_jvp_of_tensor_program_against_finite_differences(rng):
    m = mlir_ad.compile(TENSORS)
    w = rng.uniform(-0.5, 0.5, (3, 4))
    x = rng.uniform(-0.5, 0.5, (5, 3))
    tw, tx = rng.standard_normal((3, 4)), rng.standard_normal((5, 3))
    (out, mx), (tout, tm) = mlir_ad.jvp(m.net, (w, x, 6.0), (tw, tx, 0.0))
    eps = 1e-6
    p = m.net(w + eps * tw, x + eps * tx, 6.0)
    q = m.net(w - eps * tw, x - eps * tx, 6.0)
    np.testing.assert_allclose(tout, (p[0] - q[0]) / (2 * eps), rtol=1e-6,
                               atol=1e-8)
    assert tm == pytest.approx((p[1] - q[1]) / (2 * eps), rel=1e-6)


RECURSION = """
// g(n, x) = g(n-1, x) * x + sin(g(n-2, x)), g(0) = 1, g(1) = x
func.func @g(%n: index, %x: f64) -> f64 {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %small = arith.cmpi ult, %n, %c2 : index
  %r = scf.if %small -> f64 {
    %is0 = arith.cmpi eq, %n, %c1 : index
    %one = arith.constant 1.0 : f64
    %v = arith.select %is0, %x, %one : f64
    scf.yield %v : f64
  } else {
    %n1 = arith.subi %n, %c1 : index
    %n2 = arith.subi %n, %c2 : index
    %a = func.call @g(%n1, %x) : (index, f64) -> f64
    %b = func.call @g(%n2, %x) : (index, f64) -> f64
    %ax = arith.mulf %a, %x : f64
    %sb = math.sin %b : f64
    %s = arith.addf %ax, %sb : f64
    scf.yield %s : f64
  }
  return %r : f64
}
"""


def test_jvp_through_recursion():
    m = mlir_ad.compile(RECURSION)
    for n in (0, 1, 2, 7):
        y, t = mlir_ad.jvp(m.g, (n, 0.9), (1.0,))
        assert y == m.g(n, 0.9)
        fd = (m.g(n, 0.9 + 1e-6) - m.g(n, 0.9 - 1e-6)) / 2e-6
        assert t == pytest.approx(fd, rel=1e-6, abs=1e-9)
        assert t == pytest.approx(mlir_ad.grad(m.g)(n, 0.9)[0], rel=1e-12)


INTEGER_FROM_FLOAT = """
func.func private @scale(%n: i64, %x: f64) -> f64 {
  %f = arith.sitofp %n : i64 to f64
  %a = arith.mulf %f, %x : f64
  %b = arith.mulf %x, %x : f64
  %y = arith.addf %a, %b : f64
  return %y : f64
}
func.func @f(%x: f64) -> f64 {
  %c3 = arith.constant 3.0 : f64
  %x3 = arith.mulf %x, %c3 : f64
  %n = arith.fptosi %x3 : f64 to i64
  %y = func.call @scale(%n, %x) : (i64, f64) -> f64
  return %y : f64
}
"""


def test_integer_computed_from_a_float_crosses_a_call():
    # The callee's activity starts at the varied integer too (it could hold
    # the float's bits); a piecewise constant one still has zero derivative.
    m = mlir_ad.compile(INTEGER_FROM_FLOAT)
    for x in (0.2, 0.9, 1.7):
        expected = np.trunc(3 * x) + 2 * x
        assert mlir_ad.grad(m.f)(x)[0] == pytest.approx(expected, rel=1e-14)
        y, t = mlir_ad.jvp(m.f, (x,), (1.0,))
        assert t == pytest.approx(expected, rel=1e-14)


# ---------------------------------------------------------------------------
# Second order.

STRAIGHT = """
func.func @f(%x: f64, %w: tensor<4xf64>) -> f64 {
  %e = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%w : tensor<4xf64>) outs(%init : tensor<f64>) {
    ^bb0(%a: f64, %acc: f64):
      %xa = arith.mulf %a, %x : f64
      %s = math.sin %xa : f64
      %sq = arith.mulf %s, %a : f64
      %r = arith.addf %acc, %sq : f64
      linalg.yield %r : f64
  } -> tensor<f64>
  %v = tensor.extract %e[] : tensor<f64>
  %c = arith.cmpf ogt, %x, %v : f64
  %y = scf.if %c -> f64 {
    %t = func.call @helper(%x, %v) : (f64, f64) -> f64
    scf.yield %t : f64
  } else {
    %t = math.exp %v : f64
    scf.yield %t : f64
  }
  return %y : f64
}
func.func @helper(%a: f64, %b: f64) -> f64 {
  %p = arith.mulf %a, %b : f64
  %l = math.log1p %p : f64
  %q = arith.divf %l, %a : f64
  return %q : f64
}
// jvp of a function that takes a gradient gives the hvp too.
func.func @gradient(%x: f64, %w: tensor<4xf64>) -> (f64, tensor<4xf64>) {
  %gx, %gw = ad.grad @f(%x, %w) : (f64, tensor<4xf64>) -> (f64, tensor<4xf64>)
  return %gx, %gw : f64, tensor<4xf64>
}
// grad of a function that takes a gradient: reverse over reverse.
func.func @slope_x(%x: f64, %w: tensor<4xf64>) -> f64 {
  %gx, %gw = ad.grad @f(%x, %w) : (f64, tensor<4xf64>) -> (f64, tensor<4xf64>)
  return %gx : f64
}
"""
STRAIGHT = STRAIGHT.replace(
    "func.func @f(%x: f64, %w: tensor<4xf64>) -> f64 {\n",
    "func.func @f(%x: f64, %w: tensor<4xf64>) -> f64 {\n"
    "  %zero = arith.constant 0.0 : f64\n"
    "  %init = tensor.from_elements %zero : tensor<f64>\n", 1)


@pytest.mark.parametrize("x", [2.5, 0.3])  # both branches
def test_hvp_against_finite_differences_of_gradients(x, rng):
    m = mlir_ad.compile(STRAIGHT)
    w = rng.uniform(0.2, 1.0, 4)
    vx, vw = 0.7, rng.standard_normal(4)
    hx, hw = mlir_ad.hvp(m.f, (x, w), (vx, vw))
    eps = 1e-5
    gp = mlir_ad.grad(m.f)(x + eps * vx, w + eps * vw)
    gm = mlir_ad.grad(m.f)(x - eps * vx, w - eps * vw)
    assert_grads_close((hx, hw), [(a - b) / (2 * eps) for a, b in zip(gp, gm)],
                       rtol=1e-6, atol=1e-8)
    # The same from ad.jvp of a function containing ad.grad.
    (gx, gw), (jx, jw) = mlir_ad.jvp(m.gradient, (x, w), (vx, vw))
    assert_grads_close((gx, gw), mlir_ad.grad(m.f)(x, w), rtol=1e-14, atol=0)
    assert_grads_close((jx, jw), (hx, hw), rtol=1e-12, atol=1e-14)
    # Reverse over reverse: the first row of the Hessian.
    hrow = mlir_ad.grad(m.slope_x)(x, w)
    e0 = mlir_ad.hvp(m.f, (x, w), (1.0, np.zeros(4)))
    assert_grads_close(hrow, e0, rtol=1e-12, atol=1e-14)


def test_hvp_closed_form():
    m = mlir_ad.compile("""
    func.func @q(%x: f64, %y: f64) -> f64 {
      %xx = arith.mulf %x, %x : f64
      %xxy = arith.mulf %xx, %y : f64
      %s = math.sin %y : f64
      %r = arith.addf %xxy, %s : f64
      return %r : f64
    }""")
    # H = [[2y, 2x], [2x, -sin y]]
    x, y, vx, vy = 1.5, 0.4, 0.3, -2.0
    hx, hy = mlir_ad.hvp(m.q, (x, y), (vx, vy))
    assert hx == pytest.approx(2 * y * vx + 2 * x * vy, rel=1e-14)
    assert hy == pytest.approx(2 * x * vx - np.sin(y) * vy, rel=1e-14)
    assert mlir_ad.hvp(m.q, (x, y), vy, wrt=1) == pytest.approx(-np.sin(y) * vy)


def test_jvp_of_jvp_is_a_second_directional_derivative():
    m = mlir_ad.compile("""
    func.func @f(%x: f64) -> f64 {
      %s = math.sin %x : f64
      %e = math.exp %s : f64
      return %e : f64
    }
    func.func @df(%x: f64, %t: f64) -> f64 {
      %y, %ty = ad.jvp @f(%x) tangents(%t) : (f64) -> (f64, f64)
      return %ty : f64
    }""")
    x = 0.8
    _, d2 = mlir_ad.jvp(m.df, (x, 1.0), (1.0,), wrt=0)
    # d2/dx2 exp(sin x) = exp(sin x) (cos^2 x - sin x)
    assert d2 == pytest.approx(np.exp(np.sin(x)) * (np.cos(x) ** 2 - np.sin(x)),
                               rel=1e-13)


@pytest.mark.parametrize("module_name, attr", _program_sources())
def test_hvp_of_every_program(module_name, attr):
    """Forward over reverse on every f64 function with one float result of
    the other test modules, loops, while loops, recursion and tensor tapes
    included (the tapes are buffers, which forward mode follows with shadow
    buffers): Hessian symmetry <u, H v> = <v, H u>, which needs nothing but
    hvp, and H v against central differences of the gradient."""
    m = _compile_program(module_name, attr)
    if m is None:
        pytest.skip("a program of error tests")
    rng = np.random.default_rng(11)
    checked = 0
    for name in m.functions:
        fun = m[name]
        try:
            inputs, results = m._program.signature(name)
        except Exception:
            continue
        positions = fun.differentiable_arguments
        if not positions or len(results) != 1 or not results[0][4]:
            continue
        if results[0][1] not in (None, ()):  # a scalar or a rank-0 tensor
            continue
        if any(t[4] and t[0] != "f64" for t in list(inputs) + list(results)):
            continue
        args = _sample_arguments(fun, inputs, rng)
        if args is None:
            continue
        u = [_random_like(args[p], rng) for p in positions]
        v = [_random_like(args[p], rng) for p in positions]
        hu = _tuple(mlir_ad.hvp(fun, tuple(args), tuple(u)))
        hv = _tuple(mlir_ad.hvp(fun, tuple(args), tuple(v)))
        lhs = sum(_inner(a, b) for a, b in zip(u, hv))
        rhs = sum(_inner(a, b) for a, b in zip(v, hu))
        scale = sum(_inner(np.abs(a), np.abs(b)) for a, b in zip(u, hv)) + 1e-300
        assert abs(lhs - rhs) / scale < 1e-9, (name, lhs, rhs)
        # Central differences of the gradient along v.
        grad = mlir_ad.grad(fun)
        eps = 1e-6

        def shifted(sign):
            moved = list(args)
            for p, d in zip(positions, v):
                moved[p] = args[p] + sign * eps * (np.asarray(d) if np.ndim(d) else d)
            return _tuple(grad(*moved))

        plus, minus = shifted(1.0), shifted(-1.0)
        for got, a, b in zip(hv, plus, minus):
            fd = (np.asarray(a, np.float64) - np.asarray(b, np.float64)) / (2 * eps)
            np.testing.assert_allclose(np.asarray(got, np.float64), fd,
                                       rtol=2e-5, atol=2e-6 * (1 + np.max(np.abs(fd))),
                                       err_msg=name)
        checked += 1
    if checked == 0:
        pytest.skip("no function with one float result to check")


LOOPS = """
func.func @for_loop(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> f64 {
    %s = math.sin %a : f64
    %m = arith.mulf %s, %x : f64
    scf.yield %m : f64
  }
  return %r : f64
}
// A trip count that depends on x: the tape grows row by row.
func.func @while_loop(%x: f64) -> f64 {
  %one = arith.constant 1.0 : f64
  %r:2 = scf.while (%a = %x, %k = %one) : (f64, f64) -> (f64, f64) {
    %lim = arith.constant 6.0 : f64
    %go = arith.cmpf olt, %k, %lim : f64
    scf.condition(%go) %a, %k : f64, f64
  } do {
  ^bb0(%a: f64, %k: f64):
    %c = math.cos %a : f64
    %p = arith.mulf %c, %x : f64
    %q = arith.addf %p, %a : f64
    %k2 = arith.addf %k, %x : f64
    scf.yield %q, %k2 : f64, f64
  }
  return %r#0 : f64
}
// Recursion keeps its tape in rows of one growable buffer.
func.func @rec(%n: index, %x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %g = func.call @rec(%m, %x) : (index, f64) -> f64
    %s = math.sin %g : f64
    %p = arith.mulf %s, %x : f64
    %q = arith.addf %p, %g : f64
    scf.yield %q : f64
  }
  return %r : f64
}
// A tensor carried through a loop: its tape is a buffer of rows.
func.func @tensor_loop(%w: tensor<4xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %w) -> tensor<4xf64> {
    %e = tensor.empty() : tensor<4xf64>
    %t = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                         iterator_types = ["parallel"]}
        ins(%a, %w : tensor<4xf64>, tensor<4xf64>) outs(%e : tensor<4xf64>) {
      ^bb0(%p: f64, %q: f64, %o: f64):
        %s = math.sin %p : f64
        %m = arith.mulf %s, %q : f64
        linalg.yield %m : f64
    } -> tensor<4xf64>
    scf.yield %t : tensor<4xf64>
  }
  %zero = arith.constant 0.0 : f64
  %init = tensor.from_elements %zero : tensor<f64>
  %sum = linalg.reduce ins(%r : tensor<4xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%a: f64, %b: f64) {
      %s = arith.addf %a, %b : f64
      linalg.yield %s : f64
    }
  %y = tensor.extract %sum[] : tensor<f64>
  return %y : f64
}
func.func @hvp_for(%x: f64, %n: index, %v: f64) -> f64 {
  %h = ad.hvp @for_loop(%x, %n) tangents(%v) : (f64, index) -> f64
  return %h : f64
}
// jvp of a function that takes a gradient is the same thing.
func.func @gradient_for(%x: f64, %n: index) -> f64 {
  %g = ad.grad @for_loop(%x, %n) : (f64, index) -> f64
  return %g : f64
}
"""


def test_hvp_through_loops_while_loops_recursion_and_tensor_tapes():
    m = mlir_ad.compile(LOOPS)
    grad_for = mlir_ad.grad(m.for_loop)
    for x in (0.3, 1.1):
        for n in (0, 1, 7):
            (h,) = mlir_ad.hvp(m.for_loop, (x, n), (1.0,))
            fd = (grad_for(x + 1e-6, n)[0] - grad_for(x - 1e-6, n)[0]) / 2e-6
            assert h == pytest.approx(fd, rel=1e-6, abs=1e-9)
            # The ad.hvp op, and ad.jvp of ad.grad, agree with the Python call.
            assert m.hvp_for(x, n, 1.0) == pytest.approx(h, rel=1e-14, abs=1e-300)
            _, t = mlir_ad.jvp(m.gradient_for, (x, n), (1.0,), wrt=0)
            assert t == pytest.approx(h, rel=1e-14, abs=1e-300)
    for x in (0.4, 0.9, 2.3):  # 13, 6 and 3 iterations
        (h,) = mlir_ad.hvp(m.while_loop, (x,), (1.0,))
        g = mlir_ad.grad(m.while_loop)
        fd = (g(x + 1e-6)[0] - g(x - 1e-6)[0]) / 2e-6
        assert h == pytest.approx(fd, rel=1e-6, abs=1e-9)
    for n in (0, 1, 2, 9):
        (h,) = mlir_ad.hvp(m.rec, (n, 0.7), (1.0,))
        g = mlir_ad.grad(m.rec)
        fd = (g(n, 0.7 + 1e-6)[0] - g(n, 0.7 - 1e-6)[0]) / 2e-6
        assert h == pytest.approx(fd, rel=1e-6, abs=1e-9)
    rng = np.random.default_rng(3)
    w = rng.uniform(0.5, 1.5, 4)
    v = rng.standard_normal(4)
    (h,) = mlir_ad.hvp(m.tensor_loop, (w, 5), (v,))
    g = mlir_ad.grad(m.tensor_loop)
    fd = (g(w + 1e-6 * v, 5)[0] - g(w - 1e-6 * v, 5)[0]) / 2e-6
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-9)


BUFFERS = """
// A scratch buffer: x^2 and sin(x) * y written, read back in a loop.
func.func @scratch(%x: f64, %y: f64) -> f64 {
  %m = memref.alloca() : memref<2xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %sq = arith.mulf %x, %x : f64
  memref.store %sq, %m[%c0] : memref<2xf64>
  %s = math.sin %x : f64
  %sy = arith.mulf %s, %y : f64
  memref.store %sy, %m[%c1] : memref<2xf64>
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %z) -> f64 {
    %v = memref.load %m[%i] : memref<2xf64>
    %e = math.exp %v : f64
    %a = arith.addf %acc, %e : f64
    scf.yield %a : f64
  }
  return %r : f64
}
// A growable buffer (realloc), a copy, a subview and a generic on buffers.
func.func @grow(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b0 = memref.alloc() : memref<1xf64>
  %b = memref.cast %b0 : memref<1xf64> to memref<?xf64>
  memref.store %x, %b[%c0] : memref<?xf64>
  %big = memref.realloc %b(%n) : memref<?xf64> to memref<?xf64>
  scf.for %i = %c1 to %n step %c1 {
    %p = arith.subi %i, %c1 : index
    %prev = memref.load %big[%p] : memref<?xf64>
    %s = math.sin %prev : f64
    %t = arith.mulf %s, %x : f64
    memref.store %t, %big[%i] : memref<?xf64>
  }
  %copy = memref.alloc(%n) : memref<?xf64>
  memref.copy %big, %copy : memref<?xf64> to memref<?xf64>
  %tail = memref.subview %copy[1] [2] [1] : memref<?xf64> to memref<2xf64, strided<[1], offset: 1>>
  %sq = memref.alloc() : memref<2xf64>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%tail : memref<2xf64, strided<[1], offset: 1>>) outs(%sq : memref<2xf64>) {
    ^bb0(%a: f64, %o: f64):
      %m = arith.mulf %a, %a : f64
      linalg.yield %m : f64
  }
  %t = bufferization.to_tensor %sq restrict : memref<2xf64> to tensor<2xf64>
  %e0 = tensor.extract %t[%c0] : tensor<2xf64>
  %e1 = tensor.extract %t[%c1] : tensor<2xf64>
  %r = arith.addf %e0, %e1 : f64
  return %r : f64
}
"""


def test_jvp_through_buffers_of_a_user_function():
    # Scratch buffers, a reallocation, a copy, a subview, a generic on
    # buffers and a loop without results that writes a buffer: shadow
    # buffers carry the tangents.
    m = mlir_ad.compile(BUFFERS)
    for args, t in [((0.7, 1.3), (1.0, 0.0)), ((0.7, 1.3), (0.0, 1.0)),
                    ((0.2, -0.4), (0.3, -2.0))]:
        _, ty = mlir_ad.jvp(m.scratch, args, t)
        e = 1e-6
        fd = (m.scratch(args[0] + e * t[0], args[1] + e * t[1]) -
              m.scratch(args[0] - e * t[0], args[1] - e * t[1])) / (2 * e)
        assert ty == pytest.approx(fd, rel=1e-7)
    for x in (0.5, 1.2):
        _, ty = mlir_ad.jvp(m.grow, (x, 5), (1.0,))
        fd = (m.grow(x + 1e-6, 5) - m.grow(x - 1e-6, 5)) / 2e-6
        assert ty == pytest.approx(fd, rel=1e-7)


ALIASES = """
func.func private @id(%m: memref<f64>) -> memref<f64> {
  return %m : memref<f64>
}
// scf.if yields one of two buffers; x is stored through the result and %a
// read directly: f = x * x when c, else 0.
func.func @through_if(%x: f64, %c: i1) -> f64 {
  %zero = arith.constant 0.0 : f64
  %a = memref.alloc() : memref<f64>
  %b = memref.alloc() : memref<f64>
  memref.store %zero, %a[] : memref<f64>
  memref.store %zero, %b[] : memref<f64>
  %r = scf.if %c -> memref<f64> {
    %p = func.call @id(%a) : (memref<f64>) -> memref<f64>
    scf.yield %p : memref<f64>
  } else {
    %q = func.call @id(%b) : (memref<f64>) -> memref<f64>
    scf.yield %q : memref<f64>
  }
  memref.store %x, %r[] : memref<f64>
  %v = memref.load %a[] : memref<f64>
  %w = arith.mulf %v, %x : f64
  return %w : f64
}
// The same choice as an arith.select of the buffers.
func.func @through_select(%x: f64, %c: i1) -> f64 {
  %zero = arith.constant 0.0 : f64
  %a = memref.alloc() : memref<f64>
  %b = memref.alloc() : memref<f64>
  memref.store %zero, %a[] : memref<f64>
  memref.store %zero, %b[] : memref<f64>
  %r = arith.select %c, %a, %b : memref<f64>
  memref.store %x, %r[] : memref<f64>
  %v = memref.load %a[] : memref<f64>
  %w = arith.mulf %v, %x : f64
  return %w : f64
}
// scf.for carries a buffer and yields the outer %b, which later
// iterations write through the iter_arg: f = x^3 for n >= 2.
func.func @through_for(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %a = memref.alloc() : memref<f64>
  %b = memref.alloc() : memref<f64>
  memref.store %zero, %a[] : memref<f64>
  memref.store %zero, %b[] : memref<f64>
  %res = scf.for %i = %c0 to %n step %c1 iter_args(%cur = %a) -> memref<f64> {
    %sq = arith.mulf %x, %x : f64
    memref.store %sq, %cur[] : memref<f64>
    scf.yield %b : memref<f64>
  }
  %v = memref.load %b[] : memref<f64>
  %r = arith.mulf %v, %x : f64
  return %r : f64
}
// scf.while's condition passes the outer %b on: f = x^3.
func.func @through_while(%x: f64) -> f64 {
  %zero = arith.constant 0.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<f64>
  %b = memref.alloc() : memref<f64>
  memref.store %zero, %a[] : memref<f64>
  memref.store %zero, %b[] : memref<f64>
  %res:2 = scf.while (%m = %a, %k = %c0) : (memref<f64>, index) -> (memref<f64>, index) {
    %go = arith.cmpi ult, %k, %c1 : index
    %p = func.call @id(%b) : (memref<f64>) -> memref<f64>
    scf.condition(%go) %p, %k : memref<f64>, index
  } do {
  ^bb0(%m: memref<f64>, %k: index):
    %sq = arith.mulf %x, %x : f64
    memref.store %sq, %m[] : memref<f64>
    %k1 = arith.addi %k, %c1 : index
    scf.yield %m, %k1 : memref<f64>, index
  }
  %v = memref.load %b[] : memref<f64>
  %r = arith.mulf %v, %x : f64
  return %r : f64
}
// A constant table read at an index computed from x, in a loop and after
// it, inline and through a call: piecewise constant, zero derivative.
memref.global "private" constant @table : memref<4xf64> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func private @lookup(%i: index) -> f64 {
  %t = memref.get_global @table : memref<4xf64>
  %v = memref.load %t[%i] : memref<4xf64>
  return %v : f64
}
func.func @lookups(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = memref.get_global @table : memref<4xf64>
  %k64 = arith.fptosi %x : f64 to i64
  %k = arith.index_cast %k64 : i64 to index
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> f64 {
    %v = memref.load %t[%k] : memref<4xf64>
    %p = arith.mulf %acc, %v : f64
    scf.yield %p : f64
  }
  %w = func.call @lookup(%k) : (index) -> f64
  %r = arith.mulf %s, %w : f64
  return %r : f64
}
"""


def test_jvp_through_aliased_buffers_and_tables():
    # Writes through an alias made by scf.if, arith.select, scf.for and
    # scf.while results reach the other names of the buffer; a table
    # lookup at a varied index has a zero derivative in both modes.
    m = mlir_ad.compile(ALIASES)
    x = 1.5

    def check(fun, args, position=0):
        _, t = mlir_ad.jvp(fun, args, (1.0,), wrt=position)
        moved = [list(args), list(args)]
        moved[0][position] += 1e-6
        moved[1][position] -= 1e-6
        fd = (fun(*moved[0]) - fun(*moved[1])) / 2e-6
        assert t == pytest.approx(fd, rel=1e-7, abs=1e-12), fun.name
        return t

    assert check(m.through_if, (x, True)) == pytest.approx(2 * x, rel=1e-14)
    assert check(m.through_if, (x, False)) == 0.0
    assert check(m.through_select, (x, True)) == pytest.approx(2 * x, rel=1e-14)
    for n in (1, 2, 3):
        check(m.through_for, (x, n))
    assert check(m.through_while, (x,)) == pytest.approx(3 * x * x, rel=1e-14)
    for n in (0, 2):
        # f = x * table[2]^(n + 1): linear in x away from integers.
        t = check(m.lookups, (2.5, n))
        assert t == pytest.approx(3.0 ** (n + 1), rel=1e-14)
        assert mlir_ad.grad(m.lookups, wrt=0)(2.5, n) == pytest.approx(t, rel=1e-14)
        assert mlir_ad.hvp(m.lookups, (2.5, n), (1.0,), wrt=0) == 0.0


def test_a_global_written_by_a_callee_is_an_error_in_forward_mode():
    m = mlir_ad.compile("""
    memref.global "private" @g : memref<f64> = dense<0.0>
    func.func private @stash(%v: f64) {
      %m = memref.get_global @g : memref<f64>
      memref.store %v, %m[] : memref<f64>
      return
    }
    func.func private @fetch() -> f64 {
      %m = memref.get_global @g : memref<f64>
      %v = memref.load %m[] : memref<f64>
      return %v : f64
    }
    func.func @f(%x: f64) -> f64 {
      func.call @stash(%x) : (f64) -> ()
      %v = func.call @fetch() : () -> f64
      %r = arith.mulf %v, %x : f64
      return %r : f64
    }""")
    with pytest.raises(mlir_ad.CompileError,
                       match="no tangent rule for 'memref.get_global'"):
        mlir_ad.jvp(m.f, (1.5,), (1.0,))
    with pytest.raises(mlir_ad.CompileError, match="cannot differentiate through memory"):
        mlir_ad.grad(m.f)(1.5)


# Found by a random-program trial: tapes whose buffers hold nothing
# differentiable (a dead loop kept by the runtime's bounds checks, an unused
# recursive call) in a branch; their zero shadows must dominate every use.
DEAD_TAPES = """
func.func @dead_loop(%x: f64, %y: f64, %z: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %p7 = arith.cmpi eq, %n, %c0 : index
  %r8 = scf.if %p7 -> f64 {
    scf.yield %x : f64
  } else {
    %f58 = scf.for %i59 = %c0 to %c3 step %c1 iter_args(%a60 = %x) -> (f64) {
      %t62 = tensor.from_elements %x, %a60, %a60 : tensor<3xf64>
      %tl67 = scf.for %i68 = %c0 to %i59 step %c1 iter_args(%fa70 = %x) -> (f64) {
        %v72 = tensor.extract %t62[%i68] : tensor<3xf64>
        %v77 = arith.addf %fa70, %v72 : f64
        scf.yield %v77 : f64
      }
      %v82 = math.tanh %a60 : f64
      scf.yield %v82 : f64
    }
    %v83 = arith.mulf %x, %y : f64
    scf.yield %v83 : f64
  }
  %v95 = arith.mulf %r8, %r8 : f64
  return %v95 : f64
}
func.func private @h0(%x: f64, %y: f64, %n: index) -> f64 {
  %z0 = arith.constant 0 : index
  %z1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %z0 : index
  %res = scf.if %done -> f64 {
    %v95 = math.tanh %x : f64
    scf.yield %v95 : f64
  } else {
    %m = arith.subi %n, %z1 : index
    %v98 = math.sin %y : f64
    %v101 = func.call @h0(%v98, %y, %m) : (f64, f64, index) -> f64
    %v107 = math.tanh %y : f64
    scf.yield %v107 : f64
  }
  return %res : f64
}
func.func @dead_recursion(%x: f64, %y: f64, %z: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %p = arith.cmpi eq, %n, %c0 : index
  %s3 = scf.if %p -> f64 {
    %c108 = arith.constant 1 : index
    %v109 = func.call @h0(%z, %y, %c108) : (f64, f64, index) -> f64
    scf.yield %v109 : f64
  } else {
    scf.yield %y : f64
  }
  return %s3 : f64
}
"""


@pytest.mark.parametrize("name", ["dead_loop", "dead_recursion"])
def test_hvp_with_unused_tapes_in_branches(name, rng):
    m = mlir_ad.compile(DEAD_TAPES)
    fun = m[name]
    grad = mlir_ad.grad(fun)
    for n in (0, 1, 2):
        v = rng.standard_normal(3)
        h = np.array(mlir_ad.hvp(fun, (0.3, 0.4, 0.5, n), tuple(v)))
        base = np.array([0.3, 0.4, 0.5])
        fd = (np.array(grad(*(base + 1e-6 * v), n)) -
              np.array(grad(*(base - 1e-6 * v), n))) / 2e-6
        np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)


def test_grad_of_grad_through_a_loop_is_a_clear_error():
    m = mlir_ad.compile(LOOPS + """
    func.func @slope(%x: f64, %n: index) -> f64 {
      %g = ad.grad @for_loop(%x, %n) : (f64, index) -> f64
      return %g : f64
    }""")
    with pytest.raises(mlir_ad.CompileError,
                       match="cannot take the gradient of a derivative that keeps its tape"):
        mlir_ad.grad(m.slope)(0.5, 3)


# ---------------------------------------------------------------------------
# stop_gradient

LSE = """
func.func @lse(%x: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %init = tensor.from_elements %ninf : tensor<f64>
  %mt = linalg.reduce ins(%x : tensor<?xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%a: f64, %b: f64) {
      %m = arith.maximumf %a, %b : f64
      linalg.yield %m : f64
    }
  %m0 = tensor.extract %mt[] : tensor<f64>
  %m = STOP
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %ex = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                        iterator_types = ["parallel"]}
      ins(%x : tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %o: f64):
      %d = arith.subf %a, %m : f64
      %v = math.exp %d : f64
      linalg.yield %v : f64
  } -> tensor<?xf64>
  %z = arith.constant 0.0 : f64
  %zi = tensor.from_elements %z : tensor<f64>
  %st = linalg.reduce ins(%ex : tensor<?xf64>) outs(%zi : tensor<f64>) dimensions = [0]
    (%a: f64, %b: f64) {
      %s = arith.addf %a, %b : f64
      linalg.yield %s : f64
    }
  %s = tensor.extract %st[] : tensor<f64>
  %l = math.log %s : f64
  %r = arith.addf %l, %m : f64
  return %r : f64
}
"""


def test_stop_gradient_keeps_the_gradient_of_a_shift_invariant_function(rng):
    stopped = mlir_ad.compile(LSE.replace("STOP", "ad.stop_gradient %m0 : f64"))
    plain = mlir_ad.compile(LSE.replace("%m = STOP", "%m = arith.addf %m0, %z0 : f64")
                            .replace("%c0 = arith.constant 0 : index",
                                     "%c0 = arith.constant 0 : index\n"
                                     "  %z0 = arith.constant 0.0 : f64"))
    x = rng.standard_normal(50)
    softmax = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    assert stopped.lse(x) == pytest.approx(plain.lse(x), rel=1e-14)
    (g,) = mlir_ad.grad(stopped.lse)(x)
    np.testing.assert_allclose(g, softmax, rtol=1e-12)
    np.testing.assert_allclose(mlir_ad.grad(plain.lse)(x)[0], softmax,
                               rtol=1e-12, atol=1e-15)
    t = rng.standard_normal(50)
    _, tl = mlir_ad.jvp(stopped.lse, (x,), (t,))
    assert tl == pytest.approx(float(softmax @ t), rel=1e-12)


def test_stop_gradient_has_zero_derivative():
    m = mlir_ad.compile("""
    func.func @f(%x: f64) -> f64 {
      %s = ad.stop_gradient %x : f64
      %y = arith.mulf %s, %x : f64
      return %y : f64
    }""")
    assert m.f(3.0) == 9.0
    assert mlir_ad.grad(m.f)(3.0)[0] == 3.0
    assert mlir_ad.jvp(m.f, (3.0,), (1.0,))[1] == 3.0


# ---------------------------------------------------------------------------
# Errors

def test_jvp_argument_errors():
    m = mlir_ad.compile("""
    func.func @f(%x: f64, %v: tensor<?xf64>) -> f64 {
      %c0 = arith.constant 0 : index
      %e = tensor.extract %v[%c0] : tensor<?xf64>
      %y = arith.mulf %e, %x : f64
      return %y : f64
    }""")
    v = np.ones(3)
    with pytest.raises(TypeError, match="takes 2 tangents"):
        mlir_ad.jvp(m.f, (1.0, v), (1.0,))
    with pytest.raises(TypeError, match="tangent 1"):
        mlir_ad.jvp(m.f, (1.0, v), (1.0, "no"))
    with pytest.raises(ValueError, match="tangent 1 differs from argument 1"):
        mlir_ad.jvp(m.f, (1.0, v), (1.0, np.ones(4)))
    with pytest.raises(TypeError, match="tuple"):
        mlir_ad.jvp(m.f, 1.0, (1.0,))
    _, t = mlir_ad.jvp(m.f, (2.0, v), (1.0, np.full(3, 2.0)))
    assert t == 1.0 + 2.0 * 2.0


# ---------------------------------------------------------------------------
# Regressions found by trying the feature.

def test_hvp_with_a_user_function_named_like_the_generated_one():
    m = mlir_ad.compile("""
    func.func @f_ad_gradient_0(%x: f64) -> f64 {
      %y = arith.mulf %x, %x : f64
      return %y : f64
    }
    func.func @f(%x: f64) -> f64 {
      %s = func.call @f_ad_gradient_0(%x) : (f64) -> f64
      %y = arith.mulf %s, %x : f64
      return %y : f64
    }""")
    assert mlir_ad.hvp(m.f, (2.0,), (1.0,)) == (12.0,)  # (x^3)'' = 6x


def test_tangents_follow_the_order_of_wrt():
    m = mlir_ad.compile("""
    func.func @f(%x: f64, %y: f64) -> f64 {
      %a = arith.mulf %x, %y : f64
      %b = math.sin %a : f64
      return %b : f64
    }""")
    x, y = 0.5, 2.0
    _, ty = mlir_ad.jvp(m.f, (x, y), (1.0, 0.0), wrt=(1, 0))
    assert ty == pytest.approx(x * np.cos(x * y), rel=1e-14)  # d/dy
    h10 = mlir_ad.hvp(m.f, (x, y), (1.0, 0.0), wrt=(1, 0))
    h01 = mlir_ad.hvp(m.f, (x, y), (0.0, 1.0), wrt=(0, 1))
    assert_grads_close(h10, h01, rtol=1e-14, atol=0)


def test_stop_gradient_inside_a_generic_body():
    m = mlir_ad.compile("""
    func.func @f(%v: tensor<4xf64>, %s: f64) -> f64 {
      %z = arith.constant 0.0 : f64
      %init = tensor.from_elements %z : tensor<f64>
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                           iterator_types = ["reduction"]}
          ins(%v : tensor<4xf64>) outs(%init : tensor<f64>) {
        ^bb0(%a: f64, %acc: f64):
          %st = ad.stop_gradient %a : f64
          %p = arith.mulf %st, %a : f64
          %q = arith.mulf %p, %s : f64
          %t = arith.addf %acc, %q : f64
          linalg.yield %t : f64
      } -> tensor<f64>
      %e = tensor.extract %r[] : tensor<f64>
      return %e : f64
    }""")
    v = np.array([1.0, 2.0, -1.0, 0.5])
    gv, gs = mlir_ad.grad(m.f)(v, 3.0)
    np.testing.assert_allclose(gv, 3.0 * v, rtol=1e-15)  # d/dv of stop(v) v s
    assert gs == pytest.approx(float(v @ v))
    _, t = mlir_ad.jvp(m.f, (v, 3.0), (np.ones(4), 0.0))
    assert t == pytest.approx(3.0 * v.sum())


def test_wrong_static_tangent_shape_names_the_tangent():
    m = mlir_ad.compile("""
    func.func @f(%x: f64, %v: tensor<3xf64>) -> f64 {
      %c0 = arith.constant 0 : index
      %e = tensor.extract %v[%c0] : tensor<3xf64>
      %y = arith.mulf %e, %x : f64
      return %y : f64
    }""")
    with pytest.raises(ValueError, match="tangent 1: expected tensor<3xf64>"):
        mlir_ad.jvp(m.f, (1.0, np.ones(3)), (1.0, np.ones(4)))
    with pytest.raises(ValueError, match="cotangent 0"):
        mlir_ad.vjp(m.f)(1.0, np.ones(3))[1](np.ones(2))


def test_wrt_given_as_an_iterator():
    m = mlir_ad.compile("""
    func.func @f(%x: f64, %y: f64) -> f64 {
      %three = arith.constant 3.0 : f64
      %b = arith.mulf %y, %three : f64
      %r = arith.addf %x, %b : f64
      return %r : f64
    }""")
    _, t = mlir_ad.jvp(m.f, (1.0, 2.0), (1.0, 0.0), wrt=iter([1, 0]))
    assert t == 3.0
    with pytest.raises(TypeError, match="one per position of wrt"):
        mlir_ad.jvp(m.f, (1.0, 2.0), (1.0,), wrt=(1, 0))
