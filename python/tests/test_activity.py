"""Activity followed through linalg bodies and stopped at booleans.

The analysis decides per output of a linalg op whether it carries a
derivative: an output computed only from comparisons and constants (a count
of ties next to a sum) is inactive, while one that reads another output's
partial value (a reduction carried through the block argument), or an init
that an empty reduction returns unchanged, stays active. Each case is checked
in both modes against finite differences or the closed form, and the jvp
against the gradient (dot-product test)."""

import numpy as np
import pytest

import mlir_ad
from conftest import assert_grads_close, numerical_grad

# s = sum x^2; c = #{i : x_i == m}; the mean square of the matching
# elements uses the (inactive) count in an active division.
SUM_AND_COUNT = """
#id = affine_map<(i) -> (i)>
#sc = affine_map<(i) -> ()>
func.func @f(%x: tensor<?xf64>, %m: f64) -> f64 {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %e = tensor.empty() : tensor<f64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<f64>) -> tensor<f64>
  %r:3 = linalg.generic {indexing_maps = [#id, #sc, #sc, #sc], iterator_types = ["reduction"]}
      ins(%x : tensor<?xf64>) outs(%z, %z, %z : tensor<f64>, tensor<f64>, tensor<f64>) {
  ^bb0(%v: f64, %s: f64, %c: f64, %w: f64):
    %sq = arith.mulf %v, %v : f64
    %s2 = arith.addf %s, %sq : f64
    %eq = arith.cmpf oeq, %v, %m : f64
    %inc = arith.select %eq, %one, %zero : f64
    %c2 = arith.addf %c, %inc : f64
    %hit = arith.select %eq, %sq, %zero : f64
    %w2 = arith.addf %w, %hit : f64
    linalg.yield %s2, %c2, %w2 : f64, f64, f64
  } -> (tensor<f64>, tensor<f64>, tensor<f64>)
  %s = tensor.extract %r#0[] : tensor<f64>
  %c = tensor.extract %r#1[] : tensor<f64>
  %w = tensor.extract %r#2[] : tensor<f64>
  %mean = arith.divf %w, %c : f64
  %y = arith.addf %s, %mean : f64
  return %y : f64
}
"""


def test_count_next_to_sum():
    m = mlir_ad.compile(SUM_AND_COUNT)
    x = np.array([0.5, 1.5, -0.25, 1.5, 2.0])
    # Two elements equal m: the mean square of the hits is 1.5^2.
    y = m.f(x, 1.5)
    assert y == pytest.approx(np.sum(x * x) + 1.5 ** 2, rel=1e-14)
    (gx, gm) = mlir_ad.grad(m.f)(x, 1.5)
    expected = 2 * x + np.where(x == 1.5, 2 * x / 2, 0.0)
    assert_grads_close(gx, expected, rtol=1e-14, atol=0)
    assert gm == 0.0
    t = np.array([0.3, -1.0, 0.7, 2.0, -0.4])
    _, ty = mlir_ad.jvp(m.f, (x, 1.5), (t,), wrt=0)
    assert ty == pytest.approx(float(np.dot(expected, t)), rel=1e-13)


# w accumulates the running sum s before each step (s's block argument, not
# the value yielded for it), so w depends on x only through the other
# output's partial values: w = sum_i (x_0 + ... + x_{i-1}) =
# sum_i (n - 1 - i) x_i.
RUNNING_SUM = """
#id = affine_map<(i) -> (i)>
#sc = affine_map<(i) -> ()>
func.func @f(%x: tensor<?xf64>) -> f64 {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<f64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<f64>) -> tensor<f64>
  %r:2 = linalg.generic {indexing_maps = [#id, #sc, #sc], iterator_types = ["reduction"]}
      ins(%x : tensor<?xf64>) outs(%z, %z : tensor<f64>, tensor<f64>) {
  ^bb0(%v: f64, %s: f64, %w: f64):
    %s2 = arith.addf %s, %v : f64
    %w2 = arith.addf %w, %s : f64
    linalg.yield %s2, %w2 : f64, f64
  } -> (tensor<f64>, tensor<f64>)
  %w = tensor.extract %r#1[] : tensor<f64>
  return %w : f64
}
"""


def test_output_carried_by_another_outputs_block_argument():
    m = mlir_ad.compile(RUNNING_SUM)
    x = np.array([1.0, -2.0, 0.5, 3.0])
    n = len(x)
    weights = np.arange(n - 1, -1, -1, dtype=np.float64)
    assert m.f(x) == pytest.approx(float(np.dot(weights, x)), rel=1e-14)
    (gx,) = mlir_ad.grad(m.f)(x)
    assert_grads_close(gx, weights, rtol=1e-14, atol=0)
    t = np.array([0.5, 0.25, -1.0, 2.0])
    _, ty = mlir_ad.jvp(m.f, (x,), (t,))
    assert ty == pytest.approx(float(np.dot(weights, t)), rel=1e-14)


# A "reduction" that keeps the last element and never reads its output:
# over an empty range it returns its init unchanged, which depends on y.
LAST_OR_INIT = """
#id = affine_map<(i) -> (i)>
#sc = affine_map<(i) -> ()>
func.func @f(%x: tensor<?xf64>, %y: f64) -> f64 {
  %e = tensor.empty() : tensor<f64>
  %sq = arith.mulf %y, %y : f64
  %init = linalg.fill ins(%sq : f64) outs(%e : tensor<f64>) -> tensor<f64>
  %r = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction"]}
      ins(%x : tensor<?xf64>) outs(%init : tensor<f64>) {
  ^bb0(%v: f64, %out: f64):
    %t = arith.mulf %v, %v : f64
    linalg.yield %t : f64
  } -> tensor<f64>
  %l = tensor.extract %r[] : tensor<f64>
  return %l : f64
}
"""


@pytest.mark.parametrize("n", [0, 1, 3])
def test_empty_reduction_returns_its_active_init(n):
    m = mlir_ad.compile(LAST_OR_INIT)
    x = np.linspace(0.5, 1.5, n)
    y = 0.75
    expected = x[-1] ** 2 if n else y * y
    assert m.f(x, y) == pytest.approx(expected, rel=1e-14)
    gx, gy = mlir_ad.grad(m.f)(x, y)
    ex = np.zeros(n)
    if n:
        ex[-1] = 2 * x[-1]
    assert_grads_close(gx, ex, rtol=1e-14, atol=0)
    assert gy == pytest.approx(0.0 if n else 2 * y, abs=0, rel=1e-14)
    t = np.full(n, 0.5)
    _, ty = mlir_ad.jvp(m.f, (x, y), (t, 1.25))
    assert ty == pytest.approx(float(np.dot(ex, t)) + gy * 1.25, rel=1e-14)
    # With respect to y alone, only the init carries the derivative.
    assert mlir_ad.grad(m.f, wrt=1)(x, y) == gy
    _, ty = mlir_ad.jvp(m.f, (x, y), (1.25,), wrt=1)
    assert ty == gy * 1.25


# Branches on comparisons: a step that yields constants has no derivative
# of its own; one that yields active values passes theirs.
BRANCHES = """
func.func @f(%x: f64, %y: f64) -> f64 {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %two = arith.constant 2.0 : f64
  %pos = arith.cmpf ogt, %x, %zero : f64
  %k = scf.if %pos -> f64 {
    scf.yield %one : f64
  } else {
    scf.yield %two : f64
  }
  %big = arith.cmpf ogt, %y, %x : f64
  %v = scf.if %big -> f64 {
    %yy = arith.mulf %y, %y : f64
    scf.yield %yy : f64
  } else {
    scf.yield %x : f64
  }
  %kx = arith.mulf %k, %x : f64
  %s = arith.select %big, %kx, %v : f64
  %r = arith.addf %s, %v : f64
  return %r : f64
}
"""


def _branches(x, y):
    k = 1.0 if x > 0 else 2.0
    v = y * y if y > x else x
    return (k * x if y > x else v) + v


@pytest.mark.parametrize("x,y", [(0.7, 1.3), (-0.7, 1.3), (0.7, -1.3),
                                 (-0.7, -1.3)])
def test_branches_on_comparisons(x, y):
    m = mlir_ad.compile(BRANCHES)
    assert m.f(x, y) == pytest.approx(_branches(x, y), rel=1e-14)
    g = mlir_ad.grad(m.f)(x, y)
    assert_grads_close(g, numerical_grad(_branches, (x, y), (0, 1)),
                       rtol=1e-6)
    _, tx = mlir_ad.jvp(m.f, (x, y), (1.0, 0.0))
    _, ty = mlir_ad.jvp(m.f, (x, y), (0.0, 1.0))
    assert (tx, ty) == pytest.approx(g, rel=1e-14)


# Second order through a min reduction with ties (the kmeans eval's shape):
# the jvp of the gradient against finite differences of the gradient.
MIN_DISTANCE = """
func.func @cost(%p: tensor<?xf64>, %c: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f64
  %inf = arith.constant 0x7FF0000000000000 : f64
  %n = tensor.dim %p, %c0 : tensor<?xf64>
  %me = tensor.empty(%n) : tensor<?xf64>
  %m0 = linalg.fill ins(%inf : f64) outs(%me : tensor<?xf64>) -> tensor<?xf64>
  %mins = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%p, %c : tensor<?xf64>, tensor<?xf64>) outs(%m0 : tensor<?xf64>) {
  ^bb0(%pv: f64, %cv: f64, %acc: f64):
    %d = arith.subf %cv, %pv : f64
    %sq = arith.mulf %d, %d : f64
    %m = arith.minimumf %sq, %acc : f64
    linalg.yield %m : f64
  } -> tensor<?xf64>
  %se = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%zero : f64) outs(%se : tensor<f64>) -> tensor<f64>
  %sum = linalg.reduce ins(%mins : tensor<?xf64>) outs(%s0 : tensor<f64>) dimensions = [0]
    (%v: f64, %acc: f64) {
      %s = arith.addf %v, %acc : f64
      linalg.yield %s : f64
    }
  %r = tensor.extract %sum[] : tensor<f64>
  return %r : f64
}
func.func @gradient(%p: tensor<?xf64>, %c: tensor<?xf64>) -> tensor<?xf64> {
  %g = ad.grad @cost(%p, %c) {wrt = array<i64: 1>} : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
  return %g : tensor<?xf64>
}
"""


def _shares(p, c):
    """How much of each point each centroid wins (ties split evenly)."""
    shares = np.zeros(len(c))
    for pv in p:
        d = (c - pv) ** 2
        winners = d == d.min()
        shares += winners / winners.sum()
    return shares


@pytest.mark.parametrize("p", [
    # 0.5 and 2.5 are equally far from two centroids each: ties split the
    # derivative.
    [0.5, 2.5, 0.1, 1.4, 3.0],
    [0.45, 2.6, 0.1, 1.4, 3.0],
])
def test_second_order_through_min_with_ties(p):
    m = mlir_ad.compile(MIN_DISTANCE)
    p = np.array(p)
    c = np.array([-0.5, 1.5, 3.5])
    g = m.gradient(p, c)
    ties = any(np.sum((c - pv) ** 2 == ((c - pv) ** 2).min()) > 1 for pv in p)
    for direction in (np.ones(3), np.array([0.3, -1.0, 0.5])):
        gj, hj = mlir_ad.jvp(m.gradient, (p, c), (direction,), wrt=1)
        assert_grads_close(gj, g, rtol=1e-14, atol=0)
        # The cost is piecewise quadratic: its Hessian is diagonal, 2 x the
        # share of the points each centroid wins.
        assert_grads_close(hj, 2 * _shares(p, c) * direction, rtol=1e-13,
                           atol=1e-15)
        if not ties:
            eps = 1e-6
            fd = (m.gradient(p, c + eps * direction) -
                  m.gradient(p, c - eps * direction)) / (2 * eps)
            assert_grads_close(hj, fd, rtol=1e-6, atol=1e-8)


# Loops: the induction variable varies with the bounds only. The slice of w
# read at it is inactive when only x is differentiated and active when w is;
# a bound computed from x makes the trip count, not a derivative.
LOOPS = """
func.func @scale(%x: f64, %w: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %w, %c0 : tensor<?xf64>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> f64 {
    %s = tensor.extract_slice %w[%i] [1] [1] : tensor<?xf64> to tensor<1xf64>
    %v = tensor.extract %s[%c0] : tensor<1xf64>
    %p = arith.mulf %acc, %v : f64
    scf.yield %p : f64
  }
  return %r : f64
}
func.func @ramp(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %k = arith.fptosi %x : f64 to i64
  %n = arith.index_cast %k : i64 to index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %t = arith.mulf %x, %fi : f64
    %a = arith.addf %acc, %t : f64
    scf.yield %a : f64
  }
  return %r : f64
}
"""


def test_loop_reads_at_its_induction_variable():
    m = mlir_ad.compile(LOOPS)
    x, w = 0.75, np.array([1.5, -0.5, 2.0, 0.25])
    p = float(np.prod(w))
    assert m.scale(x, w) == pytest.approx(x * p, rel=1e-14)
    assert mlir_ad.grad(m.scale, wrt=0)(x, w) == pytest.approx(p, rel=1e-14)
    gx, gw = mlir_ad.grad(m.scale)(x, w)
    assert gx == pytest.approx(p, rel=1e-14)
    assert_grads_close(gw, x * p / w, rtol=1e-14, atol=0)
    _, t = mlir_ad.jvp(m.scale, (x, w), (2.0,), wrt=0)
    assert t == pytest.approx(2.0 * p, rel=1e-14)
    tw = np.array([0.5, 1.0, -1.0, 2.0])
    _, t = mlir_ad.jvp(m.scale, (x, w), (2.0, tw))
    assert t == pytest.approx(2.0 * p + float(np.dot(x * p / w, tw)),
                              rel=1e-14)


@pytest.mark.parametrize("x", [0.5, 3.25, 6.75])
def test_loop_bound_from_an_active_float(x):
    m = mlir_ad.compile(LOOPS)
    n = int(x)
    s = float(sum(range(n)))
    assert m.ramp(x) == pytest.approx(x * s, rel=1e-14)
    assert mlir_ad.grad(m.ramp)(x)[0] == pytest.approx(s, rel=1e-14, abs=0)
    _, t = mlir_ad.jvp(m.ramp, (x,), (1.5,))
    assert t == pytest.approx(1.5 * s, rel=1e-14, abs=0)
