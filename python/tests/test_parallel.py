"""Code compiled with parallel=True (ad-parallelize: the tile loops of linalg
ops over parallel dimensions on OpenMP threads) gives the same bits as the
sequential code and numpy's values: contractions, elementwise ops,
broadcasts and row reductions, with sizes below and above the threshold
and with remainders, static and dynamic; gradients of a network, of loops
around tensor ops and of GradBench's evals."""

import json

import numpy as np
import pytest

import mlir_ad
from mlir_ad import gradbench
from test_gradbench import _gmm_data, _lse_data, _lstm_data, _ode_data

MATMUL = """
func.func @f(%a: tensor<?x?xT>, %b: tensor<?x?xT>) -> tensor<?x?xT> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xT>
  %n = tensor.dim %b, %c1 : tensor<?x?xT>
  %z = arith.constant 0.0 : T
  %e = tensor.empty(%m, %n) : tensor<?x?xT>
  %f = linalg.fill ins(%z : T) outs(%e : tensor<?x?xT>) -> tensor<?x?xT>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xT>, tensor<?x?xT>)
                     outs(%f : tensor<?x?xT>) -> tensor<?x?xT>
  return %r : tensor<?x?xT>
}
"""

# exp(a) * b + rowsum(a) broadcast: an elementwise op, a broadcast and a
# reduction along rows.
ROWS = """
func.func @f(%a: tensor<?x?xT>, %b: tensor<?x?xT>) -> (tensor<?x?xT>, tensor<?xT>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xT>
  %n = tensor.dim %a, %c1 : tensor<?x?xT>
  %z = arith.constant 0.0 : T
  %e1 = tensor.empty(%m) : tensor<?xT>
  %f1 = linalg.fill ins(%z : T) outs(%e1 : tensor<?xT>) -> tensor<?xT>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<?x?xT>) outs(%f1 : tensor<?xT>) {
  ^bb0(%x: T, %acc: T):
    %y = arith.addf %acc, %x : T
    linalg.yield %y : T
  } -> tensor<?xT>
  %e2 = tensor.empty(%m, %n) : tensor<?x?xT>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, %b, %s : tensor<?x?xT>, tensor<?x?xT>, tensor<?xT>) outs(%e2 : tensor<?x?xT>) {
  ^bb0(%x: T, %y: T, %t: T, %out: T):
    %ex = math.exp %x : T
    %p = arith.mulf %ex, %y : T
    %q = arith.addf %p, %t : T
    linalg.yield %q : T
  } -> tensor<?x?xT>
  return %r, %s : tensor<?x?xT>, tensor<?xT>
}
"""

# loss = 0.5 sum((tanh(X W1 + b1) W2 - T)^2), steps times with a carried
# state: a loop around contractions and elementwise ops.
NETWORK = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @loss(%x: tensor<?x?xf64>, %w1: tensor<?x?xf64>, %b1: tensor<?xf64>,
                %w2: tensor<?x?xf64>, %t: tensor<?x?xf64>, %steps: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %half = arith.constant 0.5 : f64
  %m = tensor.dim %x, %c0 : tensor<?x?xf64>
  %n = tensor.dim %w1, %c1 : tensor<?x?xf64>
  %e = tensor.empty(%m, %n) : tensor<?x?xf64>
  %h = scf.for %i = %c0 to %steps step %c1 iter_args(%cur = %x) -> tensor<?x?xf64> {
    %f0 = linalg.fill ins(%z : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
    %m1 = linalg.matmul ins(%cur, %w1 : tensor<?x?xf64>, tensor<?x?xf64>)
                        outs(%f0 : tensor<?x?xf64>) -> tensor<?x?xf64>
    %a = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%m1, %b1 : tensor<?x?xf64>, tensor<?xf64>) outs(%e : tensor<?x?xf64>) {
    ^bb0(%p: f64, %q: f64, %o: f64):
      %s = arith.addf %p, %q : f64
      %th = math.tanh %s : f64
      linalg.yield %th : f64
    } -> tensor<?x?xf64>
    scf.yield %a : tensor<?x?xf64>
  }
  %f1 = linalg.fill ins(%z : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
  %y = linalg.matmul ins(%h, %w2 : tensor<?x?xf64>, tensor<?x?xf64>)
                     outs(%f1 : tensor<?x?xf64>) -> tensor<?x?xf64>
  %s0 = tensor.empty() : tensor<f64>
  %s1 = linalg.fill ins(%z : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %l = linalg.generic {indexing_maps = [#id, #id, affine_map<(d0, d1) -> ()>],
                       iterator_types = ["reduction", "reduction"]}
      ins(%y, %t : tensor<?x?xf64>, tensor<?x?xf64>) outs(%s1 : tensor<f64>) {
  ^bb0(%p: f64, %q: f64, %acc: f64):
    %d = arith.subf %p, %q : f64
    %dd = arith.mulf %d, %d : f64
    %hd = arith.mulf %dd, %half : f64
    %r = arith.addf %acc, %hd : f64
    linalg.yield %r : f64
  } -> tensor<f64>
  %v = tensor.extract %l[] : tensor<f64>
  return %v : f64
}
"""

TYPES = [("f64", np.float64), ("f32", np.float32)]


def _both(source):
    return mlir_ad.compile(source), mlir_ad.compile(source, parallel=True)


def _same(parallel, sequential):
    if not isinstance(parallel, tuple):
        parallel, sequential = (parallel,), (sequential,)
    assert len(parallel) == len(sequential)
    for p, s in zip(parallel, sequential):
        p, s = np.asarray(p), np.asarray(s)
        assert p.shape == s.shape
        assert np.array_equal(p, s), float(np.abs(p - s).max())


@pytest.mark.parametrize("t,dtype", TYPES)
@pytest.mark.parametrize("m,n,k", [(3, 5, 7), (64, 64, 64), (200, 130, 70),
                                   (257, 33, 129), (16, 1000, 8),
                                   (300, 40, 600)])
def test_matmul(t, dtype, m, n, k):
    sequential, parallel = _both(MATMUL.replace("T", t))
    rng = np.random.default_rng(m * n * k)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    got = parallel.f(a, b)
    _same(got, sequential.f(a, b))
    tol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(got, a @ b, rtol=tol, atol=tol * k)


@pytest.mark.parametrize("t,dtype", TYPES)
@pytest.mark.parametrize("m,n", [(1, 3), (7, 9), (100, 100), (3001, 50),
                                 (5, 40001)])
def test_elementwise_and_row_reductions(t, dtype, m, n):
    sequential, parallel = _both(ROWS.replace("T", t))
    rng = np.random.default_rng(m + n)
    a = rng.uniform(-2, 2, (m, n)).astype(dtype)
    b = rng.standard_normal((m, n)).astype(dtype)
    got = parallel.f(a, b)
    _same(got, sequential.f(a, b))
    s = a.astype(np.float64).sum(axis=1)
    r = np.exp(a.astype(np.float64)) * b + s[:, None]
    tol = 1e-12 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(got[1], s, rtol=tol, atol=tol * n)
    np.testing.assert_allclose(got[0], r, rtol=tol, atol=tol * n)


@pytest.mark.parametrize("m,n,steps", [(4, 6, 2), (64, 96, 3), (130, 257, 2)])
def test_gradient_of_a_network_in_a_loop(m, n, steps):
    sequential, parallel = _both(NETWORK)
    rng = np.random.default_rng(m)
    x = rng.standard_normal((m, n)) * 0.5
    w1 = rng.standard_normal((n, n)) / np.sqrt(n)
    b1 = rng.standard_normal(n) * 0.1
    w2 = rng.standard_normal((n, n)) / np.sqrt(n)
    t = rng.standard_normal((m, n))
    args = (x, w1, b1, w2, t, steps)
    wrt = [0, 1, 2, 3]
    got = mlir_ad.grad(parallel.loss, wrt=wrt)(*args)
    _same(tuple(got), tuple(mlir_ad.grad(sequential.loss, wrt=wrt)(*args)))
    # Against central differences along a random direction.
    directions = [rng.standard_normal(a.shape) for a in args[:4]]
    eps = 1e-6

    def at(sign):
        moved = [a + sign * eps * d for a, d in zip(args[:4], directions)]
        return parallel.loss(*moved, t, steps)

    numeric = (at(1) - at(-1)) / (2 * eps)
    analytic = sum(float(np.sum(g * d)) for g, d in zip(got, directions))
    assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(analytic))


@pytest.mark.parametrize("eval_name,function,data", [
    ("gmm", "jacobian", lambda: _gmm_data(8, 12, 900)),
    ("ode", "gradient", lambda: _ode_data(20000, 5)),
    ("lstm", "jacobian", lambda: _lstm_data(2, 64, 10)),
    ("lse", "gradient", lambda: _lse_data(100000)),
], ids=["gmm", "ode", "lstm", "lse"])
def test_gradbench_evals(eval_name, function, data):
    """GradBench's evals compiled in parallel give the sequential bits."""
    data = data()
    got, _ = gradbench.evaluate(eval_name, function, data, parallel=True)
    want, _ = gradbench.evaluate(eval_name, function, data)
    # Python floats print every bit (repr round-trips).
    assert json.dumps(got) == json.dumps(want)


SCALE = """
func.func @scale(%in: memref<?xf64>, %out: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%in : memref<?xf64>) outs(%out : memref<?xf64>) {
  ^bb0(%x: f64, %o: f64):
    %two = arith.constant 2.0 : f64
    %y = arith.mulf %x, %two : f64
    linalg.yield %y : f64
  }
  return
}
"""


def test_overlapping_buffers_stay_sequential():
    """out[i] = 2 in[i] on overlapping views of one array (in = a[1:], out =
    a[:-1]) reads each element before overwriting it on one thread; shared
    out among threads, the element at a thread's boundary was read after
    the next thread overwrote it (review finding). Two buffer arguments may
    be one buffer: such an op is not shared out."""
    module = mlir_ad.compile(SCALE, parallel=True)
    n = 4_000_000
    for _ in range(3):
        a = np.arange(n, dtype=np.float64)
        module.scale(a[1:], a[:-1])
        assert np.array_equal(a[:-1], 2 * np.arange(1, n, dtype=np.float64))


def test_parallel_must_be_a_bool():
    with pytest.raises(TypeError, match="parallel"):
        mlir_ad.compile(MATMUL.replace("T", "f64"), parallel="yes")
