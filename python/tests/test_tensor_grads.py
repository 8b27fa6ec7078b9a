"""Gradients of tensor programs (elementwise math, linalg.matmul/matvec/
generic/reduce/broadcast, reductions with sum and max, scf.for loops carrying
tensors, element-wise loops over dynamic tensors) against numpy closed forms
and finite differences, in f64 and f32, on static and dynamic shapes."""

import re

import numpy as np
import pytest

import mlir_ad
from conftest import assert_grads_close, numerical_grad

SOURCE = """
func.func private @sum2(%t: tensor<?x?xT>) -> T {
  %z = arith.constant 0.0 : T
  %init = tensor.from_elements %z : tensor<T>
  %r = linalg.reduce ins(%t : tensor<?x?xT>) outs(%init : tensor<T>) dimensions = [0, 1]
    (%a: T, %b: T) {
      %s = arith.addf %a, %b : T
      linalg.yield %s : T
    }
  %v = tensor.extract %r[] : tensor<T>
  return %v : T
}

func.func private @sum1(%t: tensor<?xT>) -> T {
  %z = arith.constant 0.0 : T
  %init = tensor.from_elements %z : tensor<T>
  %r = linalg.reduce ins(%t : tensor<?xT>) outs(%init : tensor<T>) dimensions = [0]
    (%a: T, %b: T) {
      %s = arith.addf %a, %b : T
      linalg.yield %s : T
    }
  %v = tensor.extract %r[] : tensor<T>
  return %v : T
}

// sum(exp(sin x) * y + tanh(x y) - log1p(x^2))
func.func @elementwise(%x: tensor<?x?xT>, %y: T) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?xT>
  %d1 = tensor.dim %x, %c1 : tensor<?x?xT>
  %ys = tensor.splat %y[%d0, %d1] : tensor<?x?xT>
  %s = math.sin %x : tensor<?x?xT>
  %e = math.exp %s : tensor<?x?xT>
  %a = arith.mulf %e, %ys : tensor<?x?xT>
  %xy = arith.mulf %x, %ys : tensor<?x?xT>
  %th = math.tanh %xy : tensor<?x?xT>
  %xx = arith.mulf %x, %x : tensor<?x?xT>
  %l = math.log1p %xx : tensor<?x?xT>
  %r1 = arith.addf %a, %th : tensor<?x?xT>
  %r2 = arith.subf %r1, %l : tensor<?x?xT>
  %r = func.call @sum2(%r2) : (tensor<?x?xT>) -> T
  return %r : T
}

// sum(tanh(A B)^2) on static shapes.
func.func @mm_static(%a: tensor<4x3xT>, %b: tensor<3x5xT>) -> T {
  %z = arith.constant 0.0 : T
  %e = tensor.empty() : tensor<4x5xT>
  %f = linalg.fill ins(%z : T) outs(%e : tensor<4x5xT>) -> tensor<4x5xT>
  %p = linalg.matmul ins(%a, %b : tensor<4x3xT>, tensor<3x5xT>) outs(%f : tensor<4x5xT>) -> tensor<4x5xT>
  %t = math.tanh %p : tensor<4x5xT>
  %sq = arith.mulf %t, %t : tensor<4x5xT>
  %c = tensor.cast %sq : tensor<4x5xT> to tensor<?x?xT>
  %r = func.call @sum2(%c) : (tensor<?x?xT>) -> T
  return %r : T
}

// sum(tanh(A B) * C) on dynamic shapes.
func.func @mm_dynamic(%a: tensor<?x?xT>, %b: tensor<?x?xT>, %w: tensor<?x?xT>) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xT>
  %n = tensor.dim %b, %c1 : tensor<?x?xT>
  %z = arith.constant 0.0 : T
  %e = tensor.empty(%m, %n) : tensor<?x?xT>
  %f = linalg.fill ins(%z : T) outs(%e : tensor<?x?xT>) -> tensor<?x?xT>
  %p = linalg.matmul ins(%a, %b : tensor<?x?xT>, tensor<?x?xT>) outs(%f : tensor<?x?xT>) -> tensor<?x?xT>
  %t = math.tanh %p : tensor<?x?xT>
  %tw = arith.mulf %t, %w : tensor<?x?xT>
  %r = func.call @sum2(%tw) : (tensor<?x?xT>) -> T
  return %r : T
}

// sum_ij sin(x_i y_j), through a linalg.generic with broadcasting maps.
func.func @outer(%x: tensor<?xT>, %y: tensor<?xT>) -> T {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xT>
  %m = tensor.dim %y, %c0 : tensor<?xT>
  %e = tensor.empty(%n, %m) : tensor<?x?xT>
  %o = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<?xT>, tensor<?xT>) outs(%e : tensor<?x?xT>) {
  ^bb0(%a: T, %b: T, %out: T):
    %p = arith.mulf %a, %b : T
    %s = math.sin %p : T
    linalg.yield %s : T
  } -> tensor<?x?xT>
  %r = func.call @sum2(%o) : (tensor<?x?xT>) -> T
  return %r : T
}

// sum_i sqrt(sum_j x_ij^2), the inner sum a reduction in a linalg.generic.
func.func @row_norms(%x: tensor<?x?xT>) -> T {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xT>
  %z = arith.constant 0.0 : T
  %e = tensor.empty(%n) : tensor<?xT>
  %f = linalg.fill ins(%z : T) outs(%e : tensor<?xT>) -> tensor<?xT>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x?xT>) outs(%f : tensor<?xT>) {
  ^bb0(%a: T, %o: T):
    %sq = arith.mulf %a, %a : T
    %s = arith.addf %o, %sq : T
    linalg.yield %s : T
  } -> tensor<?xT>
  %s = math.sqrt %r : tensor<?xT>
  %v = func.call @sum1(%s) : (tensor<?xT>) -> T
  return %v : T
}

// sum over rows of logsumexp(x_i:), shifted by the row max.
func.func @logsumexp(%x: tensor<?x?xT>) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xT>
  %k = tensor.dim %x, %c1 : tensor<?x?xT>
  %low = arith.constant -1.0e30 : T
  %z = arith.constant 0.0 : T
  %e = tensor.empty(%n) : tensor<?xT>
  %mi = linalg.fill ins(%low : T) outs(%e : tensor<?xT>) -> tensor<?xT>
  %mx = linalg.reduce ins(%x : tensor<?x?xT>) outs(%mi : tensor<?xT>) dimensions = [1]
    (%a: T, %b: T) {
      %m = arith.maximumf %a, %b : T
      linalg.yield %m : T
    }
  %e2 = tensor.empty(%n, %k) : tensor<?x?xT>
  %mb = linalg.broadcast ins(%mx : tensor<?xT>) outs(%e2 : tensor<?x?xT>) dimensions = [1]
  %sh = arith.subf %x, %mb : tensor<?x?xT>
  %ex = math.exp %sh : tensor<?x?xT>
  %si = linalg.fill ins(%z : T) outs(%e : tensor<?xT>) -> tensor<?xT>
  %se = linalg.reduce ins(%ex : tensor<?x?xT>) outs(%si : tensor<?xT>) dimensions = [1]
    (%a: T, %b: T) {
      %s = arith.addf %a, %b : T
      linalg.yield %s : T
    }
  %lg = math.log %se : tensor<?xT>
  %l = arith.addf %lg, %mx : tensor<?xT>
  %r = func.call @sum1(%l) : (tensor<?xT>) -> T
  return %r : T
}

// max_i x_i * w: the gradient is one-hot.
func.func @max_times(%x: tensor<?xT>, %w: T) -> T {
  %ninf = arith.constant -1.0e30 : T
  %init = tensor.from_elements %ninf : tensor<T>
  %r = linalg.reduce ins(%x : tensor<?xT>) outs(%init : tensor<T>) dimensions = [0]
    (%a: T, %b: T) {
      %m = arith.maximumf %a, %b : T
      linalg.yield %m : T
    }
  %v = tensor.extract %r[] : tensor<T>
  %p = arith.mulf %v, %w : T
  return %p : T
}

// A recurrence carrying a tensor: h <- tanh(W h + b), n times; sum(sin(h)).
func.func @rnn(%w: tensor<4x4xT>, %h0: tensor<4xT>, %b: tensor<4xT>, %n: index) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : T
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%h = %h0) -> (tensor<4xT>) {
    %e = tensor.empty() : tensor<4xT>
    %f = linalg.fill ins(%z : T) outs(%e : tensor<4xT>) -> tensor<4xT>
    %wh = linalg.matvec ins(%w, %h : tensor<4x4xT>, tensor<4xT>) outs(%f : tensor<4xT>) -> tensor<4xT>
    %a = arith.addf %wh, %b : tensor<4xT>
    %t = math.tanh %a : tensor<4xT>
    scf.yield %t : tensor<4xT>
  }
  %s = math.sin %r : tensor<4xT>
  %c = tensor.cast %s : tensor<4xT> to tensor<?xT>
  %v = func.call @sum1(%c) : (tensor<?xT>) -> T
  return %v : T
}

// A scan over a dynamic tensor, element by element: out_i = prod_{j<=i} x_j;
// sum(sin(out)).
func.func @cumprod(%x: tensor<?xT>) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : T
  %n = tensor.dim %x, %c0 : tensor<?xT>
  %e = tensor.empty(%n) : tensor<?xT>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %e, %p = %one) -> (tensor<?xT>, T) {
    %xi = tensor.extract %x[%i] : tensor<?xT>
    %p1 = arith.mulf %p, %xi : T
    %acc1 = tensor.insert %p1 into %acc[%i] : tensor<?xT>
    scf.yield %acc1, %p1 : tensor<?xT>, T
  }
  %s = math.sin %r#0 : tensor<?xT>
  %v = func.call @sum1(%s) : (tensor<?xT>) -> T
  return %v : T
}

// A tensor-valued function, for vjp: (x * sum(x), exp(x)).
func.func @two_tensors(%x: tensor<?xT>) -> (tensor<?xT>, tensor<?xT>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xT>
  %s = func.call @sum1(%x) : (tensor<?xT>) -> T
  %ss = tensor.splat %s[%n] : tensor<?xT>
  %a = arith.mulf %x, %ss : tensor<?xT>
  %b = math.exp %x : tensor<?xT>
  return %a, %b : tensor<?xT>, tensor<?xT>
}
"""

DTYPES = {
    "f64": dict(np=np.float64, rtol=1e-6, atol=1e-8, fd_rtol=1e-5),
    "f32": dict(np=np.float32, rtol=1e-4, atol=1e-5, fd_rtol=1e-3),
}


@pytest.fixture(scope="module", params=list(DTYPES))
def mod(request):
    dtype = request.param
    return dtype, DTYPES[dtype], mlir_ad.compile(re.sub(r"(\b|(?<=x))T\b", dtype, SOURCE))


def arr(rng, shape, dt, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape).astype(dt["np"])


def test_elementwise(mod, rng):
    dtype, dt, m = mod
    x = arr(rng, (3, 5), dt)
    y = 0.7
    xd = x.astype(np.float64)
    value = np.sum(np.exp(np.sin(xd)) * y + np.tanh(xd * y) - np.log1p(xd * xd))
    assert m.elementwise(x, y) == pytest.approx(value, rel=dt["rtol"])
    gx, gy = mlir_ad.grad(m.elementwise)(x, y)
    assert gx.dtype == dt["np"] and gx.shape == x.shape
    assert isinstance(gy, float)
    th = np.tanh(xd * y)
    ex = np.exp(np.sin(xd))
    expected_x = ex * np.cos(xd) * y + (1 - th ** 2) * y - 2 * xd / (1 + xd * xd)
    expected_y = np.sum(ex + (1 - th ** 2) * xd)
    assert_grads_close((gx, gy), (expected_x, expected_y), rtol=dt["rtol"],
                       atol=dt["atol"])


def test_matmul_static(mod, rng):
    dtype, dt, m = mod
    a, b = arr(rng, (4, 3), dt), arr(rng, (3, 5), dt)
    ad_, bd = a.astype(np.float64), b.astype(np.float64)
    t = np.tanh(ad_ @ bd)
    assert m.mm_static(a, b) == pytest.approx(np.sum(t * t), rel=dt["rtol"])
    g = 2 * t * (1 - t * t)
    assert_grads_close(mlir_ad.grad(m.mm_static)(a, b), (g @ bd.T, ad_.T @ g),
                       rtol=dt["rtol"], atol=dt["atol"])


def test_matmul_dynamic_several_shapes_no_recompilation(mod, rng):
    dtype, dt, m = mod
    grad = mlir_ad.grad(m.mm_dynamic)
    shapes = [(2, 3, 4), (1, 1, 1), (5, 2, 3), (7, 6, 1), (3, 4, 2)]
    before = None
    for mi, ki, ni in shapes:
        a, b, w = arr(rng, (mi, ki), dt), arr(rng, (ki, ni), dt), arr(rng, (mi, ni), dt)
        ad_, bd, wd = (v.astype(np.float64) for v in (a, b, w))
        t = np.tanh(ad_ @ bd)
        assert m.mm_dynamic(a, b, w) == pytest.approx(np.sum(t * wd), rel=dt["rtol"],
                                                      abs=dt["atol"])
        ga, gb, gw = grad(a, b, w)
        g = wd * (1 - t * t)
        assert_grads_close((ga, gb, gw), (g @ bd.T, ad_.T @ g, t), rtol=dt["rtol"],
                           atol=dt["atol"])
        if before is None:
            before = mlir_ad.num_compilations()  # the call and the gradient
        else:
            assert mlir_ad.num_compilations() == before


def test_generic_outer_product(mod, rng):
    dtype, dt, m = mod
    x, y = arr(rng, 4, dt, -2, 2), arr(rng, 6, dt, -2, 2)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    p = np.outer(xd, yd)
    assert m.outer(x, y) == pytest.approx(np.sum(np.sin(p)), rel=dt["rtol"])
    c = np.cos(p)
    assert_grads_close(mlir_ad.grad(m.outer)(x, y), (c @ yd, c.T @ xd),
                       rtol=dt["rtol"], atol=dt["atol"])


def test_generic_reduction(mod, rng):
    dtype, dt, m = mod
    x = arr(rng, (5, 3), dt)
    xd = x.astype(np.float64)
    norms = np.sqrt(np.sum(xd * xd, axis=1))
    assert m.row_norms(x) == pytest.approx(np.sum(norms), rel=dt["rtol"])
    (g,) = mlir_ad.grad(m.row_norms)(x)
    assert_grads_close((g,), (xd / norms[:, None],), rtol=dt["rtol"], atol=dt["atol"])


def test_logsumexp_max_and_sum_reductions(mod, rng):
    dtype, dt, m = mod
    x = arr(rng, (4, 7), dt, -3, 3)
    xd = x.astype(np.float64)
    mx = xd.max(axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(xd - mx), axis=1)) + mx[:, 0]
    assert m.logsumexp(x) == pytest.approx(np.sum(lse), rel=dt["rtol"])
    softmax = np.exp(xd - lse[:, None])
    assert_grads_close(mlir_ad.grad(m.logsumexp)(x), (softmax,), rtol=dt["rtol"],
                       atol=dt["atol"])


def test_max_reduction_one_hot(mod, rng):
    dtype, dt, m = mod
    x = arr(rng, 9, dt, -5, 5)
    w = -1.5
    gx, gw = mlir_ad.grad(m.max_times)(x, w)
    expected = np.zeros(9)
    expected[np.argmax(x)] = w
    assert_grads_close((gx, gw), (expected, float(x.max())), rtol=dt["rtol"],
                       atol=dt["atol"])


def rnn_ref(w, h0, b, n):
    h = np.asarray(h0, np.float64)
    for _ in range(n):
        h = np.tanh(np.asarray(w, np.float64) @ h + b)
    return float(np.sum(np.sin(h)))


@pytest.mark.parametrize("n", [0, 1, 6])
def test_scf_for_tensor_carry(mod, rng, n):
    dtype, dt, m = mod
    w = arr(rng, (4, 4), dt)
    h0, b = arr(rng, 4, dt), arr(rng, 4, dt)
    args = [w, h0, b, n]
    assert m.rnn(*args) == pytest.approx(rnn_ref(*args), rel=dt["rtol"], abs=dt["atol"])
    expected = numerical_grad(rnn_ref, args, [0, 1, 2])
    got = mlir_ad.grad(m.rnn)(*args)
    assert [g.shape for g in got] == [(4, 4), (4,), (4,)]
    assert_grads_close(got, expected, rtol=dt["fd_rtol"], atol=10 * dt["atol"])


@pytest.mark.parametrize("n", [1, 2, 6, 11])
def test_elementwise_loop_over_dynamic_tensor(mod, rng, n):
    dtype, dt, m = mod
    x = arr(rng, n, dt, 0.5, 1.5)

    def ref(v):
        return float(np.sum(np.sin(np.cumprod(np.asarray(v, np.float64)))))

    assert m.cumprod(x) == pytest.approx(ref(x), rel=dt["rtol"])
    assert_grads_close(mlir_ad.grad(m.cumprod)(x), numerical_grad(ref, [x], [0]),
                       rtol=dt["fd_rtol"], atol=10 * dt["atol"])


def test_vjp_of_tensor_valued_function(mod, rng):
    dtype, dt, m = mod
    x = arr(rng, 5, dt)
    xd = x.astype(np.float64)
    (a, b), pullback = mlir_ad.vjp(m.two_tensors)(x)
    np.testing.assert_allclose(a, xd * xd.sum(), rtol=dt["rtol"])
    np.testing.assert_allclose(b, np.exp(xd), rtol=dt["rtol"])
    ca, cb = arr(rng, 5, dt), arr(rng, 5, dt)
    # J_a = diag(sum x) + x 1^T, so J_a^T ca = ca sum(x) + (ca . x) 1.
    expected = ca * xd.sum() + np.dot(ca, xd) + cb * np.exp(xd)
    (g,) = pullback(ca, cb)
    assert g.dtype == dt["np"]
    np.testing.assert_allclose(g, expected, rtol=dt["rtol"] * 10, atol=dt["atol"])


def test_empty_dimension(mod):
    dtype, dt, m = mod
    x = np.zeros((0, 3), dt["np"])
    assert m.elementwise(x, 2.0) == 0.0
    gx, gy = mlir_ad.grad(m.elementwise)(x, 2.0)
    assert gx.shape == (0, 3) and gy == 0.0
