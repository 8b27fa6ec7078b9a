"""Adjoints that need only the shape of a tensor an iteration computes.

A zero cotangent, the adjoint of `tensor.extract`, `extract_slice`, `pad`,
`concat`, `collapse_shape` or `reshape` of a dynamically sized tensor reads
the tensor only for its sizes. Inside an `scf.while` loop (whose tape rows
hold scalars and statically shaped tensors) or a recursion, keeping the
tensor itself is impossible, and these programs were rejected ("cannot keep
a value of type 'tensor<?xf64>'"); the pullback now keeps the sizes. Each
gradient is checked against finite differences, and against the same
program written with `scf.for` where the trip count is known."""

import numpy as np
import pytest

import mlir_ad
from conftest import assert_grads_close, numerical_grad

# In iteration i (while the sum stays below a bound): p = pad(x[i:], low i)
# (zeros before x[i]); p[i]^2 (1 + p[n-1]) is added, p read element by
# element (the adjoints of the extracts and of the pad need p's and the
# slice's sizes only).
PAD_IN_WHILE = """
func.func @f(%x: tensor<?xf64>, %bound: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %r:2 = scf.while (%i = %c0, %acc = %zero) : (index, f64) -> (index, f64) {
    %more = arith.cmpi slt, %i, %n : index
    %small = arith.cmpf olt, %acc, %bound : f64
    %go = arith.andi %more, %small : i1
    scf.condition(%go) %i, %acc : index, f64
  } do {
  ^bb0(%i: index, %acc: f64):
    %m = arith.subi %n, %i : index
    %s = tensor.extract_slice %x[%i] [%m] [1] : tensor<?xf64> to tensor<?xf64>
    %p = tensor.pad %s low[%i] high[0] {
    ^bb0(%j: index):
      tensor.yield %zero : f64
    } : tensor<?xf64> to tensor<?xf64>
    %v = tensor.extract %p[%i] : tensor<?xf64>
    %nm1 = arith.subi %n, %c1 : index
    %w = tensor.extract %p[%nm1] : tensor<?xf64>
    %vv = arith.mulf %v, %v : f64
    %vw = arith.mulf %vv, %w : f64
    %t = arith.addf %vw, %vv : f64
    %a = arith.addf %acc, %t : f64
    %i1 = arith.addi %i, %c1 : index
    scf.yield %i1, %a : index, f64
  }
  return %r#1 : f64
}
"""


def _pad_in_while_numpy(x, bound):
    acc, i = 0.0, 0
    while i < len(x) and acc < bound:
        acc += x[i] ** 2 * (1.0 + x[-1])
        i += 1
    return acc


@pytest.mark.parametrize("n,bound", [(1, 100.0), (5, 100.0), (7, 3.0), (6, 0.5)])
def test_pad_of_slice_in_while(n, bound):
    m = mlir_ad.compile(PAD_IN_WHILE)
    x = np.linspace(0.3, 1.1, n) * np.where(np.arange(n) % 2, -1.0, 1.0)
    assert m.f(x, bound) == pytest.approx(_pad_in_while_numpy(x, bound),
                                          rel=1e-13)
    gx = mlir_ad.grad(m.f, wrt=0)(x, bound)
    expected = numerical_grad(lambda v: m.f(v, bound), [x], [0])
    assert_grads_close((gx,), expected, rtol=1e-6, atol=1e-8)


# Each iteration builds t = [x[:k] * c, x[k:]] (concat of two dynamic parts)
# and reads t[k - 1] and t[n - 1] through a 2-D view of t; k grows until the
# product of the read elements exceeds a bound.
CONCAT_COLLAPSE_IN_WHILE = """
#id = affine_map<(i) -> (i)>
func.func @f(%x: tensor<?xf64>, %c: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %big = arith.constant 50.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %r:2 = scf.while (%k = %c1, %acc = %one) : (index, f64) -> (index, f64) {
    %more = arith.cmpi sle, %k, %n : index
    %small = arith.cmpf olt, %acc, %big : f64
    %go = arith.andi %more, %small : i1
    scf.condition(%go) %k, %acc : index, f64
  } do {
  ^bb0(%k: index, %acc: f64):
    %head = tensor.extract_slice %x[0] [%k] [1] : tensor<?xf64> to tensor<?xf64>
    %rest = arith.subi %n, %k : index
    %tail = tensor.extract_slice %x[%k] [%rest] [1] : tensor<?xf64> to tensor<?xf64>
    %e = tensor.empty(%k) : tensor<?xf64>
    %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%head : tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %o: f64):
      %s = arith.mulf %a, %c : f64
      linalg.yield %s : f64
    } -> tensor<?xf64>
    %t = tensor.concat dim(0) %scaled, %tail : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
    %km1 = arith.subi %k, %c1 : index
    %v = tensor.extract %t[%km1] : tensor<?xf64>
    %t2 = tensor.expand_shape %t [[0, 1]] output_shape [%n, 1] : tensor<?xf64> into tensor<?x1xf64>
    %nm1 = arith.subi %n, %c1 : index
    %w = tensor.extract %t2[%nm1, %c0] : tensor<?x1xf64>
    %vw = arith.mulf %v, %w : f64
    %a1 = arith.mulf %acc, %vw : f64
    %k1 = arith.addi %k, %c1 : index
    scf.yield %k1, %a1 : index, f64
  }
  return %r#1 : f64
}
"""


def _concat_numpy(x, c):
    acc, k = 1.0, 1
    while k <= len(x) and acc < 50.0:
        t = np.concatenate([x[:k] * c, x[k:]])
        acc *= t[k - 1] * t[-1]
        k += 1
    return acc


@pytest.mark.parametrize("n", [1, 3, 6])
def test_concat_and_reshape_in_while(n):
    m = mlir_ad.compile(CONCAT_COLLAPSE_IN_WHILE)
    x = np.linspace(0.8, 1.6, n)
    assert m.f(x, 1.3) == pytest.approx(_concat_numpy(x, 1.3), rel=1e-13)
    gx, gc = mlir_ad.grad(m.f, wrt=(0, 1))(x, 1.3)
    expected = numerical_grad(m.f, [x, 1.3], [0, 1])
    assert_grads_close((gx, gc), expected, rtol=1e-6, atol=1e-8)


# A recursion: f(x) = x[0]^2 x[n-1] + f(x[1:]), x[n-1] read from a padded
# copy of the tail (p = [x[1:], 0]; p[n-1] is the padding), whose sizes
# alone the pullback needs.
PAD_IN_RECURSION = """
func.func @f(%x: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %small = arith.cmpi sle, %n, %c1 : index
  %r = scf.if %small -> f64 {
    scf.yield %zero : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %tail = tensor.extract_slice %x[1] [%m] [1] : tensor<?xf64> to tensor<?xf64>
    %p = tensor.pad %tail low[0] high[%c1] {
    ^bb0(%j: index):
      tensor.yield %zero : f64
    } : tensor<?xf64> to tensor<?xf64>
    %last = tensor.extract %p[%m] : tensor<?xf64>
    %mm1 = arith.subi %m, %c1 : index
    %t1 = tensor.extract %p[%mm1] : tensor<?xf64>
    %x0 = tensor.extract %x[%c0] : tensor<?xf64>
    %x02 = arith.mulf %x0, %x0 : f64
    %term = arith.mulf %x02, %t1 : f64
    %term2 = arith.addf %term, %last : f64
    %rec = func.call @f(%tail) : (tensor<?xf64>) -> f64
    %sum = arith.addf %term2, %rec : f64
    scf.yield %sum : f64
  }
  return %r : f64
}
"""


def _recursion_numpy(x):
    if len(x) <= 1:
        return 0.0
    return x[0] ** 2 * x[-1] + _recursion_numpy(x[1:])


@pytest.mark.parametrize("n", [1, 2, 5])
def test_pad_in_recursion(n):
    m = mlir_ad.compile(PAD_IN_RECURSION)
    x = np.linspace(-0.7, 1.2, n)
    assert m.f(x) == pytest.approx(_recursion_numpy(x), rel=1e-13, abs=1e-15)
    (gx,) = mlir_ad.grad(m.f)(x)
    expected = numerical_grad(m.f, [x], [0])
    assert_grads_close((gx,), expected, rtol=1e-6, atol=1e-8)


# Programs differentiate-errors.mlir rejected before (each in a for loop):
# a slice of the argument whose size grows with the induction variable,
# written into the carried tensor (the adjoint of insert_slice needs the
# slice's shape; sin's adjoint takes the slice again from the argument);
# a carried tensor only yielded (its zero cotangent); a user-written rule's
# unused tensor result (its zero cotangent, whose size the rule checks).
GROWING_SLICES = """
func.func @f(%t: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%v = %t) -> (tensor<?xf64>) {
    %size = arith.addi %i, %c1 : index
    %p = tensor.extract_slice %t[0] [%size] [1] : tensor<?xf64> to tensor<?xf64>
    %w = math.sin %p : tensor<?xf64>
    %u = tensor.insert_slice %w into %v[0] [%size] [1] : tensor<?xf64> into tensor<?xf64>
    scf.yield %u : tensor<?xf64>
  }
  %s0 = tensor.extract %r[%c0] : tensor<?xf64>
  %s1 = tensor.extract %r[%c1] : tensor<?xf64>
  %s2 = tensor.extract %r[%c2] : tensor<?xf64>
  %s3 = tensor.extract %r[%c3] : tensor<?xf64>
  %a = arith.mulf %s0, %s1 : f64
  %b = arith.mulf %s2, %s3 : f64
  %y = arith.addf %a, %b : f64
  return %y : f64
}
func.func @g(%x: f64, %t: tensor<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x, %v = %t) -> (f64, tensor<?xf64>) {
    %y = math.sin %s : f64
    %w = tensor.extract_slice %t[0] [%i] [1] : tensor<?xf64> to tensor<?xf64>
    scf.yield %y, %w : f64, tensor<?xf64>
  }
  return %r#0 : f64
}
func.func private @h(%x: f64, %k: index) -> (f64, tensor<?xf64>) {
  %three = arith.constant 3.0 : f64
  %y = arith.mulf %x, %three : f64
  %t = tensor.splat %x[%k] : tensor<?xf64>
  return %y, %t : f64, tensor<?xf64>
}
func.func private @h_fwd(%x: f64, %k: index) -> (f64, tensor<?xf64>, index) {
  %y, %t = func.call @h(%x, %k) : (f64, index) -> (f64, tensor<?xf64>)
  return %y, %t, %k : f64, tensor<?xf64>, index
}
func.func private @h_pb(%k: index, %dy: f64, %dt: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %three = arith.constant 3.0 : f64
  %n = tensor.dim %dt, %c0 : tensor<?xf64>
  %ok = arith.cmpi eq, %n, %k : index
  cf.assert %ok, "the cotangent of the tensor result has the result's size"
  %d = arith.mulf %dy, %three : f64
  return %d : f64
}
ad.custom_vjp @h forward @h_fwd pullback @h_pb
func.func @rule(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> (f64) {
    %k = arith.addi %i, %c1 : index
    %y, %t = func.call @h(%s, %k) : (f64, index) -> (f64, tensor<?xf64>)
    %z = math.sin %y : f64
    scf.yield %z : f64
  }
  return %r : f64
}
"""


def test_sizes_that_change_in_a_for_loop():
    m = mlir_ad.compile(GROWING_SLICES)
    t = np.array([0.3, -0.7, 1.1, 0.4, 2.0])
    assert m.f(t) == pytest.approx(np.sin(t[0]) * np.sin(t[1]) +
                                   np.sin(t[2]) * t[3], rel=1e-14)
    (gt,) = mlir_ad.grad(m.f)(t)
    assert_grads_close((gt,), numerical_grad(m.f, [t], [0]), rtol=1e-6, atol=1e-8)
    for n in (0, 1, 3):
        gx = mlir_ad.grad(m.g, wrt=0)(0.7, t, n)
        assert gx == pytest.approx(numerical_grad(m.g, [0.7, t, n], [0])[0],
                                   rel=1e-6, abs=1e-8)
    for n in (0, 1, 4):
        gx = mlir_ad.grad(m.rule, wrt=0)(0.3, n)
        assert gx == pytest.approx(numerical_grad(m.rule, [0.3, n], [0])[0],
                                   rel=1e-6, abs=1e-8)


# A recursion on x[1:] with a loop inside that reads elements of slices of
# its argument: the pullback cannot take the slice again (the argument
# changes from level to level and a row holds no tensor of dynamic size),
# and keeps the slice's size instead of failing.
RECURSION_WITH_LOOPS = """
func.func @f(%x: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %k = tensor.dim %x, %c0 : tensor<?xf64>
  %e = arith.cmpi eq, %k, %c0 : index
  %r = scf.if %e -> f64 {
    scf.yield %zero : f64
  } else {
    %km1 = arith.subi %k, %c1 : index
    %w:2 = scf.while (%i = %c0, %a = %zero) : (index, f64) -> (index, f64) {
      %go = arith.cmpi slt, %i, %k : index
      scf.condition(%go) %i, %a : index, f64
    } do {
    ^bb0(%i: index, %a: f64):
      %len = arith.subi %k, %i : index
      %s = tensor.extract_slice %x[%i] [%len] [1] : tensor<?xf64> to tensor<?xf64>
      %v = tensor.extract %s[%c0] : tensor<?xf64>
      %q = arith.mulf %v, %v : f64
      %a2 = arith.addf %a, %q : f64
      %i1 = arith.addi %i, %c1 : index
      scf.yield %i1, %a2 : index, f64
    }
    %acc = scf.for %i = %c0 to %k step %c1 iter_args(%a = %w#1) -> (f64) {
      %s = tensor.extract_slice %x[0] [%k] [1] : tensor<?xf64> to tensor<?xf64>
      %v = tensor.extract %s[%i] : tensor<?xf64>
      %q = arith.mulf %v, %a : f64
      %a2 = arith.addf %a, %q : f64
      scf.yield %a2 : f64
    }
    %rest = tensor.extract_slice %x[1] [%km1] [1] : tensor<?xf64> to tensor<?xf64>
    %rec = func.call @f(%rest) : (tensor<?xf64>) -> f64
    %y = arith.addf %acc, %rec : f64
    scf.yield %y : f64
  }
  return %r : f64
}
"""


def _recursion_with_loops_numpy(x):
    if len(x) == 0:
        return 0.0
    a = np.sum(x ** 2)
    for v in x:
        a = a + v * a
    return a + _recursion_with_loops_numpy(x[1:])


@pytest.mark.parametrize("n", [0, 1, 4])
def test_recursion_with_loops_over_slices(n):
    m = mlir_ad.compile(RECURSION_WITH_LOOPS)
    x = np.linspace(-0.6, 0.5, n)
    assert m.f(x) == pytest.approx(_recursion_with_loops_numpy(x), rel=1e-13,
                                   abs=1e-15)
    (gx,) = mlir_ad.grad(m.f)(x)
    assert_grads_close((gx,), numerical_grad(m.f, [x], [0]), rtol=1e-6,
                       atol=1e-8)


# Linear generics over a tensor whose size changes from row to row of a
# while loop: the adjoint of a sum or of a scaling reads no element of its
# input, only its shape. (A body that needs the elements, a sine, is still
# refused: the last test.)
LINEAR_IN_WHILE = """
#id = affine_map<(i) -> (i)>
func.func @sums(%x: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %r:2 = scf.while (%t = %x, %acc = %zero) : (tensor<?xf64>, f64) -> (tensor<?xf64>, f64) {
    %k = tensor.dim %t, %c0 : tensor<?xf64>
    %a = arith.cmpi sgt, %k, %c0 : index
    scf.condition(%a) %t, %acc : tensor<?xf64>, f64
  } do {
  ^bb0(%t: tensor<?xf64>, %acc: f64):
    %e = tensor.empty() : tensor<f64>
    %z = linalg.fill ins(%zero : f64) outs(%e : tensor<f64>) -> tensor<f64>
    %s = linalg.reduce ins(%t : tensor<?xf64>) outs(%z : tensor<f64>) dimensions = [0]
      (%in: f64, %ac: f64) {
        %q = arith.addf %in, %ac : f64
        linalg.yield %q : f64
      }
    %sv = tensor.extract %s[] : tensor<f64>
    %ss = arith.mulf %sv, %sv : f64
    %acc2 = arith.addf %acc, %ss : f64
    %k = tensor.dim %t, %c0 : tensor<?xf64>
    %km1 = arith.subi %k, %c1 : index
    %u = tensor.extract_slice %t[1] [%km1] [1] : tensor<?xf64> to tensor<?xf64>
    scf.yield %u, %acc2 : tensor<?xf64>, f64
  }
  return %r#1 : f64
}
func.func @scaled(%x: tensor<?xf64>, %c: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.while (%t = %x) : (tensor<?xf64>) -> (tensor<?xf64>) {
    %k = tensor.dim %t, %c0 : tensor<?xf64>
    %a = arith.cmpi sgt, %k, %c1 : index
    scf.condition(%a) %t : tensor<?xf64>
  } do {
  ^bb0(%t: tensor<?xf64>):
    %k = tensor.dim %t, %c0 : tensor<?xf64>
    %km1 = arith.subi %k, %c1 : index
    %u = tensor.extract_slice %t[1] [%km1] [1] : tensor<?xf64> to tensor<?xf64>
    %e = tensor.empty(%km1) : tensor<?xf64>
    %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%u : tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %o: f64):
      %m = arith.mulf %a, %c : f64
      %n = arith.negf %m : f64
      linalg.yield %n : f64
    } -> tensor<?xf64>
    scf.yield %v : tensor<?xf64>
  }
  %v = tensor.extract %r[%c0] : tensor<?xf64>
  return %v : f64
}
"""


@pytest.mark.parametrize("n", [0, 1, 5])
def test_linear_generics_in_while(n):
    m = mlir_ad.compile(LINEAR_IN_WHILE)
    x = np.linspace(-0.9, 1.3, n)
    assert m.sums(x) == pytest.approx(
        sum(np.sum(x[i:]) ** 2 for i in range(n)), rel=1e-13, abs=1e-15)
    (gx,) = mlir_ad.grad(m.sums)(x)
    assert_grads_close((gx,), numerical_grad(m.sums, [x], [0]), rtol=1e-6,
                       atol=1e-8)
    if n == 0:
        return
    assert m.scaled(x, 0.5) == pytest.approx(x[-1] * (-0.5) ** (n - 1),
                                             rel=1e-14)
    gx = mlir_ad.grad(m.scaled, wrt=0)(x, 0.5)
    assert_grads_close((gx,), numerical_grad(m.scaled, [x, 0.5], [0]),
                       rtol=1e-6, atol=1e-8)


def test_generic_reading_elements_in_while_is_refused():
    # The sine's adjoint reads the elements; so does the scaling's adjoint
    # with respect to the scale.
    sines = LINEAR_IN_WHILE.replace(
        "%m = arith.mulf %a, %c : f64\n      %n = arith.negf %m : f64",
        "%m = math.sin %a : f64\n      %n = arith.mulf %m, %c : f64")
    assert sines != LINEAR_IN_WHILE
    m = mlir_ad.compile(sines)
    with pytest.raises(mlir_ad.CompileError,
                       match="cannot keep a value of type 'tensor<\\?xf64>'"):
        mlir_ad.grad(m.scaled, wrt=0)(np.ones(3), 0.5)
    m = mlir_ad.compile(LINEAR_IN_WHILE)
    with pytest.raises(mlir_ad.CompileError,
                       match="cannot keep a value of type 'tensor<\\?xf64>'"):
        mlir_ad.grad(m.scaled, wrt=1)(np.ones(3), 0.5)
