"""vjp: several results (floats, tensors, integers), pullbacks applied several
times (linearity), cotangent checks, and the arguments a pullback uses."""

import numpy as np
import pytest

import mlir_ad

SOURCE = """
// (sin(x) * w, count of positive entries, x * w^2, w^3)
func.func @multi(%x: tensor<?xf64>, %w: f64) -> (tensor<?xf64>, i32, tensor<?xf64>, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %ws = tensor.splat %w[%n] : tensor<?xf64>
  %s = math.sin %x : tensor<?xf64>
  %a = arith.mulf %s, %ws : tensor<?xf64>
  %w2 = arith.mulf %w, %w : f64
  %w2s = tensor.splat %w2[%n] : tensor<?xf64>
  %b = arith.mulf %x, %w2s : tensor<?xf64>
  %w3 = arith.mulf %w2, %w : f64
  %zero = arith.constant 0.0 : f64
  %i0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  %cnt = scf.for %i = %c0 to %n step %c1 iter_args(%k = %i0) -> (i32) {
    %v = tensor.extract %x[%i] : tensor<?xf64>
    %pos = arith.cmpf ogt, %v, %zero : f64
    %k1 = arith.addi %k, %i1 : i32
    %k2 = arith.select %pos, %k1, %k : i32
    scf.yield %k2 : i32
  }
  return %a, %cnt, %b, %w3 : tensor<?xf64>, i32, tensor<?xf64>, f64
}

// An integer result first, then a float scalar.
func.func @int_first(%x: f64, %n: i32) -> (i32, f64) {
  %nf = arith.sitofp %n : i32 to f64
  %y = arith.mulf %x, %nf : f64
  %e = math.exp %y : f64
  return %n, %e : i32, f64
}

// A scalar function, for comparisons with grad.
func.func @scalar(%x: tensor<3xf64>, %w: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %a = tensor.extract %x[%c0] : tensor<3xf64>
  %b = tensor.extract %x[%c2] : tensor<3xf64>
  %p = arith.mulf %a, %b : f64
  %q = arith.mulf %p, %w : f64
  %r = math.sin %q : f64
  return %r : f64
}

// A rank-0 tensor result.
func.func @rank0(%x: f64) -> tensor<f64> {
  %y = arith.mulf %x, %x : f64
  %t = tensor.from_elements %y : tensor<f64>
  return %t : tensor<f64>
}

// No float result at all.
func.func @count(%x: tensor<?xf64>) -> index {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  return %n : index
}
"""


@pytest.fixture(scope="module")
def m():
    return mlir_ad.compile(SOURCE)


X = np.array([0.3, -1.2, 2.0, 0.7, -0.1])
W = 1.3


def expected_vjp(ca, cb, cw3, x=X, w=W):
    gx = ca * np.cos(x) * w + cb * w * w
    gw = np.dot(ca, np.sin(x)) + np.dot(cb, x) * 2 * w + cw3 * 3 * w * w
    return gx, gw


def test_results_as_the_call_returns_them(m):
    results, pullback = mlir_ad.vjp(m.multi)(X, W)
    direct = m.multi(X, W)
    assert isinstance(results, tuple) and len(results) == 4
    np.testing.assert_allclose(results[0], np.sin(X) * W)
    assert results[1] == 3 and isinstance(results[1], int)
    np.testing.assert_allclose(results[2], X * W * W)
    assert results[3] == pytest.approx(W ** 3)
    for r, d in zip(results, direct):
        np.testing.assert_array_equal(r, d)


def test_pullback_takes_one_cotangent_per_float_result(m, rng):
    _, pullback = mlir_ad.vjp(m.multi)(X, W)
    ca, cb = rng.standard_normal(5), rng.standard_normal(5)
    gx, gw = pullback(ca, cb, 0.5)
    ex, ew = expected_vjp(ca, cb, 0.5)
    np.testing.assert_allclose(gx, ex, rtol=1e-12)
    assert gw == pytest.approx(ew, rel=1e-12)


def test_pullback_is_linear_and_reusable(m, rng):
    _, pullback = mlir_ad.vjp(m.multi)(X, W)
    c1 = (rng.standard_normal(5), rng.standard_normal(5), 0.25)
    c2 = (rng.standard_normal(5), rng.standard_normal(5), -2.0)
    g1 = pullback(*c1)
    g2 = pullback(*c2)
    g1_again = pullback(*c1)
    np.testing.assert_array_equal(g1[0], g1_again[0])
    assert g1[1] == g1_again[1]
    a, b = 2.0, -3.5
    combo = tuple(a * u + b * v for u, v in zip(c1[:2], c2[:2])) + (a * c1[2] + b * c2[2],)
    g = pullback(*combo)
    np.testing.assert_allclose(g[0], a * g1[0] + b * g2[0], rtol=1e-12, atol=1e-12)
    assert g[1] == pytest.approx(a * g1[1] + b * g2[1], rel=1e-12)
    zero = pullback(np.zeros(5), np.zeros(5), 0.0)
    np.testing.assert_array_equal(zero[0], np.zeros(5))
    assert zero[1] == 0.0
    # The results of earlier calls were not overwritten by later ones.
    np.testing.assert_allclose(g1[0], expected_vjp(*c1)[0], rtol=1e-12)


def test_vjp_agrees_with_grad(m):
    x = np.array([0.4, 9.0, -0.8])
    gx, gw = mlir_ad.grad(m.scalar)(x, 0.6)
    y, pullback = mlir_ad.vjp(m.scalar)(x, 0.6)
    assert y == m.scalar(x, 0.6)
    px, pw = pullback(1.0)
    np.testing.assert_allclose(px, gx, rtol=1e-14)
    assert pw == pytest.approx(gw, rel=1e-14)
    px3, pw3 = pullback(3.0)
    np.testing.assert_allclose(px3, 3 * gx, rtol=1e-14)
    c = np.cos(x[0] * x[2] * 0.6)
    np.testing.assert_allclose(gx, [c * x[2] * 0.6, 0.0, c * x[0] * 0.6])


def test_integer_result_before_float(m):
    (n, y), pullback = mlir_ad.vjp(m.int_first)(0.3, 4)
    assert n == 4 and y == pytest.approx(np.exp(1.2))
    (g,) = pullback(2.0)
    assert g == pytest.approx(2.0 * 4 * np.exp(1.2))
    with pytest.raises(TypeError, match="1 cotangents"):
        pullback(1.0, 1.0)


def test_wrong_cotangent_count(m):
    _, pullback = mlir_ad.vjp(m.multi)(X, W)
    with pytest.raises(TypeError):
        pullback(np.ones(5), np.ones(5))
    with pytest.raises(TypeError):
        pullback(np.ones(5), 1, np.ones(5), 1.0)  # a cotangent for the i32
    with pytest.raises(TypeError):
        pullback()


@pytest.mark.parametrize("cotangents", [
    (np.ones(4), np.ones(5), 1.0),
    (np.ones(5), np.ones((5, 1)), 1.0),
    (np.ones(5), np.ones(5), np.ones(1)),
    (1.0, np.ones(5), 1.0),
])
def test_wrong_cotangent_shape(m, cotangents):
    _, pullback = mlir_ad.vjp(m.multi)(X, W)
    with pytest.raises(ValueError, match="cotangent"):
        pullback(*cotangents)


def test_cotangent_dtype_and_lists(m):
    _, pullback = mlir_ad.vjp(m.multi)(X, W)
    with pytest.raises(TypeError):
        pullback(np.ones(5, np.float32), np.ones(5), 1.0)
    g_list = pullback([1.0] * 5, [0.0] * 5, 0)
    g_arr = pullback(np.ones(5), np.zeros(5), 0.0)
    np.testing.assert_array_equal(g_list[0], g_arr[0])


def test_rank0_tensor_result_takes_a_number_cotangent(m):
    y, pullback = mlir_ad.vjp(m.rank0)(3.0)
    assert np.shape(y) == () and float(y) == 9.0
    # The cotangent of a rank-0 tensor: a 0-d array and a plain number
    # (the shape check accepts both) must work alike.
    assert pullback(np.array(2.0))[0] == pytest.approx(12.0)
    assert pullback(2.0)[0] == pytest.approx(12.0)


def test_pullback_uses_the_arguments_of_the_forward_call(m):
    # The results are those of the arguments at the forward call; the pullback
    # must be their pullback too, even if the caller reuses the array.
    x = X.copy()
    _, pullback = mlir_ad.vjp(m.multi)(x, W)
    ca, cb = np.ones(5), np.ones(5)
    expected = expected_vjp(ca, cb, 1.0, x=X.copy())
    x[:] = 100.0  # e.g. an optimizer updating its parameters in place
    gx, gw = pullback(ca, cb, 1.0)
    np.testing.assert_allclose(gx, expected[0], rtol=1e-12)
    assert gw == pytest.approx(expected[1], rel=1e-12)


def test_function_without_float_results(m):
    n, pullback = mlir_ad.vjp(m.count)(X)
    assert n == 5
    (g,) = pullback()
    np.testing.assert_array_equal(g, np.zeros(5))
