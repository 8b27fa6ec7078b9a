"""Tree recursions (calling themselves from loops) differentiated through
their checkpointed levels: the first levels of invocations are copies whose
calls to the next level run as the primal in the forward sweep and again in
the pullback (ad-generate-derivatives, checkpoint-levels). Each program is
checked against a Python reference and finite differences, at depths below,
at and beyond the number of levels; in reverse mode, pullbacks applied
twice, and forward over reverse (hvp)."""

import math

import numpy as np
import pytest

import mlir_ad
from conftest import assert_grads_close, numerical_grad


TREE = """
// tree(x, n) = x for n = 0, else the sum over j < n of sin(x tree(x + j/8, n - 1)).
func.func private @tree(%x: T, %n: index) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : T
  %eighth = arith.constant 0.125 : T
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> T {
    scf.yield %x : T
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> T {
      %j64 = arith.index_cast %j : index to i64
      %jf = arith.sitofp %j64 : i64 to T
      %dx = arith.mulf %jf, %eighth : T
      %y = arith.addf %x, %dx : T
      %sub = func.call @tree(%y, %m) : (T, index) -> T
      %p = arith.mulf %x, %sub : T
      %t = math.sin %p : T
      %a = arith.addf %acc, %t : T
      scf.yield %a : T
    }
    scf.yield %s : T
  }
  return %r : T
}

func.func @f(%x: T, %n: index) -> T {
  %y = func.call @tree(%x, %n) : (T, index) -> T
  %z = arith.mulf %y, %y : T
  return %z : T
}
"""


def tree_ref(x, n):
    if n == 0:
        return x
    return sum(math.sin(x * tree_ref(x + j / 8, n - 1)) for j in range(n))


def f_ref(x, n):
    return tree_ref(x, n) ** 2


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5])
def test_tree_recursion(n):
    m = mlir_ad.compile(TREE.replace("T", "f64"))
    x = 0.7
    assert m.f(x, n) == pytest.approx(f_ref(x, n), rel=1e-12)
    expected = numerical_grad(f_ref, [x, n], [0])
    assert_grads_close(mlir_ad.grad(m.f)(x, n), expected, rtol=1e-6,
                       atol=1e-9)
    value, grads = mlir_ad.value_and_grad(m.f)(x, n)
    assert value == pytest.approx(f_ref(x, n), rel=1e-12)
    assert_grads_close(grads, expected, rtol=1e-6, atol=1e-9)
    # A pullback applied twice gives the same gradients (the recomputed
    # subtrees' tapes are the pullback's own).
    value, pullback = mlir_ad.vjp(m.f)(x, n)
    first, second = pullback(1.0), pullback(1.0)
    assert_grads_close(first, expected, rtol=1e-6, atol=1e-9)
    assert_grads_close(second, first, rtol=0, atol=0)
    # Forward over reverse: the derivative of the gradient.
    gradient = lambda x_, n_: float(mlir_ad.grad(m.f)(x_, n_)[0])  # noqa: E731
    hessian = numerical_grad(gradient, [x, n], [0], eps=1e-5)
    assert_grads_close(mlir_ad.hvp(m.f, (x, n), (1.0,)), hessian, rtol=1e-5,
                       atol=1e-7)


def test_tree_recursion_f32():
    m = mlir_ad.compile(TREE.replace("T", "f32"))
    x = np.float32(0.7)
    expected = numerical_grad(f_ref, [0.7, 4], [0])
    assert_grads_close(mlir_ad.grad(m.f)(x, 4), expected, rtol=2e-4,
                       atol=1e-5)


MUTUAL = """
// f(x, n) = cos(x) for n = 0, else x times the sum over j < n of
// g(x + j/4, n - 1); g(x, n) = sin(f(x, n)) + x^2: a recursion of two
// functions, calling each other from a loop and outside one.
func.func private @f(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %quarter = arith.constant 0.25 : f64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    %c = math.cos %x : f64
    scf.yield %c : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %j64 = arith.index_cast %j : index to i64
      %jf = arith.sitofp %j64 : i64 to f64
      %dx = arith.mulf %jf, %quarter : f64
      %y = arith.addf %x, %dx : f64
      %sub = func.call @g(%y, %m) : (f64, index) -> f64
      %a = arith.addf %acc, %sub : f64
      scf.yield %a : f64
    }
    %p = arith.mulf %x, %s : f64
    scf.yield %p : f64
  }
  return %r : f64
}

func.func private @g(%x: f64, %n: index) -> f64 {
  %v = func.call @f(%x, %n) : (f64, index) -> f64
  %s = math.sin %v : f64
  %x2 = arith.mulf %x, %x : f64
  %r = arith.addf %s, %x2 : f64
  return %r : f64
}

func.func @top(%x: f64, %n: index) -> f64 {
  %y = func.call @g(%x, %n) : (f64, index) -> f64
  return %y : f64
}
"""


def mutual_f(x, n):
    if n == 0:
        return math.cos(x)
    return x * sum(mutual_g(x + j / 4, n - 1) for j in range(n))


def mutual_g(x, n):
    return math.sin(mutual_f(x, n)) + x * x


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5])
def test_mutual_tree_recursion(n):
    m = mlir_ad.compile(MUTUAL)
    x = 0.4
    assert m.top(x, n) == pytest.approx(mutual_g(x, n), rel=1e-12)
    assert_grads_close(mlir_ad.grad(m.top)(x, n),
                       numerical_grad(mutual_g, [x, n], [0]), rtol=1e-6,
                       atol=1e-9)


TENSORS = """
// A tensor changed at each level (v, static) and one passed on unchanged
// (w, dynamic): t(v, w, n) = sum(v^2) for n = 0, else the sum over j < n of
// w[j + 1] t(sin(v) w[j], w, n - 1).
func.func private @t(%v: tensor<4xf64>, %w: tensor<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    %init = tensor.from_elements %zero : tensor<f64>
    %sq = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                          iterator_types = ["reduction"]}
        ins(%v : tensor<4xf64>) outs(%init : tensor<f64>) {
    ^bb0(%a: f64, %out: f64):
      %p = arith.mulf %a, %a : f64
      %s = arith.addf %out, %p : f64
      linalg.yield %s : f64
    } -> tensor<f64>
    %e = tensor.extract %sq[] : tensor<f64>
    scf.yield %e : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %wj = tensor.extract %w[%j] : tensor<?xf64>
      %j1 = arith.addi %j, %c1 : index
      %wj1 = tensor.extract %w[%j1] : tensor<?xf64>
      %empty = tensor.empty() : tensor<4xf64>
      %v2 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                            iterator_types = ["parallel"]}
          ins(%v : tensor<4xf64>) outs(%empty : tensor<4xf64>) {
      ^bb0(%a: f64, %out: f64):
        %sa = math.sin %a : f64
        %p = arith.mulf %sa, %wj : f64
        linalg.yield %p : f64
      } -> tensor<4xf64>
      %sub = func.call @t(%v2, %w, %m) : (tensor<4xf64>, tensor<?xf64>, index) -> f64
      %term = arith.mulf %wj1, %sub : f64
      %a = arith.addf %acc, %term : f64
      scf.yield %a : f64
    }
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @top(%v: tensor<4xf64>, %w: tensor<?xf64>, %n: index) -> f64 {
  %y = func.call @t(%v, %w, %n) : (tensor<4xf64>, tensor<?xf64>, index) -> f64
  return %y : f64
}
"""


def tensors_ref(v, w, n):
    if n == 0:
        return float(np.sum(v * v))
    return sum(w[j + 1] * tensors_ref(np.sin(v) * w[j], w, n - 1)
               for j in range(n))


@pytest.mark.parametrize("n", [0, 1, 3, 4])
def test_tree_recursion_over_tensors(rng, n):
    m = mlir_ad.compile(TENSORS)
    v = rng.uniform(0.2, 1.2, 4)
    w = rng.uniform(0.5, 1.5, 6)
    assert m.top(v, w, n) == pytest.approx(tensors_ref(v, w, n), rel=1e-12)
    assert_grads_close(mlir_ad.grad(m.top, wrt=[0, 1])(v, w, n),
                       numerical_grad(tensors_ref, [v, w, n], [0, 1]),
                       rtol=1e-6, atol=1e-9)


RESULTS = """
// Two float results and an integer one (the number of leaves), combined
// nonlinearly by the caller: (a, b, k)(x, n) = (x, x^2, 1) for n = 0, else
// sums over j < n of (sin(a_j b_j), (sin(a_j) + b_j) / 4, k_j) for the
// subtree at x + j/2, n - 1.
func.func private @r(%x: f64, %n: index) -> (f64, f64, i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %half = arith.constant 0.5 : f64
  %quarter = arith.constant 0.25 : f64
  %i0 = arith.constant 0 : i64
  %i1 = arith.constant 1 : i64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %res:3 = scf.if %leaf -> (f64, f64, i64) {
    %x2 = arith.mulf %x, %x : f64
    scf.yield %x, %x2, %i1 : f64, f64, i64
  } else {
    %m = arith.subi %n, %c1 : index
    %s:3 = scf.for %j = %c0 to %n step %c1 iter_args(%sa = %zero, %sb = %zero, %sk = %i0) -> (f64, f64, i64) {
      %j64 = arith.index_cast %j : index to i64
      %jf = arith.sitofp %j64 : i64 to f64
      %dx = arith.mulf %jf, %half : f64
      %y = arith.addf %x, %dx : f64
      %sub:3 = func.call @r(%y, %m) : (f64, index) -> (f64, f64, i64)
      %prod = arith.mulf %sub#0, %sub#1 : f64
      %ab = math.sin %prod : f64
      %sin = math.sin %sub#0 : f64
      %sum = arith.addf %sin, %sub#1 : f64
      %sb2 = arith.mulf %sum, %quarter : f64
      %na = arith.addf %sa, %ab : f64
      %nb = arith.addf %sb, %sb2 : f64
      %nk = arith.addi %sk, %sub#2 : i64
      scf.yield %na, %nb, %nk : f64, f64, i64
    }
    scf.yield %s#0, %s#1, %s#2 : f64, f64, i64
  }
  return %res#0, %res#1, %res#2 : f64, f64, i64
}

func.func @top(%x: f64, %n: index) -> f64 {
  %a, %b, %k = func.call @r(%x, %n) : (f64, index) -> (f64, f64, i64)
  %kf = arith.sitofp %k : i64 to f64
  %q = arith.divf %a, %kf : f64
  %c = math.cos %b : f64
  %y = arith.mulf %q, %c : f64
  return %y : f64
}
"""


def results_ref(x, n):
    if n == 0:
        return x, x * x, 1
    a = b = 0.0
    k = 0
    for j in range(n):
        sa, sb, sk = results_ref(x + j / 2, n - 1)
        a += math.sin(sa * sb)
        b += (math.sin(sa) + sb) / 4
        k += sk
    return a, b, k


def results_top(x, n):
    a, b, k = results_ref(x, n)
    return a / k * math.cos(b)


@pytest.mark.parametrize("n", [0, 2, 3, 4])
def test_tree_recursion_with_several_results(n):
    m = mlir_ad.compile(RESULTS)
    x = 0.3
    assert m.top(x, n) == pytest.approx(results_top(x, n), rel=1e-12)
    assert_grads_close(mlir_ad.grad(m.top)(x, n),
                       numerical_grad(results_top, [x, n], [0]), rtol=1e-6,
                       atol=1e-9)
