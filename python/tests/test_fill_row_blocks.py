"""A contraction whose output was just filled fills each block of rows right
before the block's register tiles run (ad-vectorize), instead of the whole
output first. Sizes around the row block (16 register tiles of rows) and the
reduction block (256 steps), an empty reduction (the output is then the
fill), a fill read before the product (it must stay whole), f32 and f64,
static and dynamic shapes, and a kmeans-like distance matrix."""

import numpy as np
import pytest

import mlir_ad

PRODUCT = """
func.func @f(%a: tensor<?x?xT>, %b: tensor<?x?xT>, %c: T) -> tensor<?x?xT> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xT>
  %n = tensor.dim %b, %c1 : tensor<?x?xT>
  %e = tensor.empty(%m, %n) : tensor<?x?xT>
  %f = linalg.fill ins(%c : T) outs(%e : tensor<?x?xT>) -> tensor<?x?xT>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xT>, tensor<?x?xT>) outs(%f : tensor<?x?xT>) -> tensor<?x?xT>
  return %r : tensor<?x?xT>
}
"""

# The fill is read (summed) between the fill and the product.
READ_BETWEEN = """
func.func @f(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>, %c: f64) -> (tensor<?x?xf64>, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %m = tensor.dim %a, %c0 : tensor<?x?xf64>
  %n = tensor.dim %b, %c1 : tensor<?x?xf64>
  %e = tensor.empty(%m, %n) : tensor<?x?xf64>
  %f = linalg.fill ins(%c : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
  %se = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%zero : f64) outs(%se : tensor<f64>) -> tensor<f64>
  %s = linalg.reduce ins(%f : tensor<?x?xf64>) outs(%s0 : tensor<f64>) dimensions = [0, 1]
    (%v: f64, %acc: f64) {
      %t = arith.addf %v, %acc : f64
      linalg.yield %t : f64
    }
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf64>, tensor<?x?xf64>) outs(%f : tensor<?x?xf64>) -> tensor<?x?xf64>
  %sv = tensor.extract %s[] : tensor<f64>
  return %r, %sv : tensor<?x?xf64>, f64
}
"""

STATIC = """
func.func @f(%a: tensor<300x40xf64>, %b: tensor<40x24xf64>) -> tensor<300x24xf64> {
  %c = arith.constant -2.5 : f64
  %e = tensor.empty() : tensor<300x24xf64>
  %f = linalg.fill ins(%c : f64) outs(%e : tensor<300x24xf64>) -> tensor<300x24xf64>
  %r = linalg.matmul ins(%a, %b : tensor<300x40xf64>, tensor<40x24xf64>) outs(%f : tensor<300x24xf64>) -> tensor<300x24xf64>
  return %r : tensor<300x24xf64>
}
"""

DISTANCES = """
func.func @f(%p: tensor<?x?xf64>, %c: tensor<?x?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f64
  %inf = arith.constant 0x7FF0000000000000 : f64
  %n = tensor.dim %p, %c0 : tensor<?x?xf64>
  %k = tensor.dim %c, %c0 : tensor<?x?xf64>
  %e = tensor.empty(%n, %k) : tensor<?x?xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
  %dist = linalg.generic {indexing_maps = [affine_map<(i, j, l) -> (i, l)>, affine_map<(i, j, l) -> (j, l)>, affine_map<(i, j, l) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %c : tensor<?x?xf64>, tensor<?x?xf64>) outs(%z : tensor<?x?xf64>) {
  ^bb0(%pv: f64, %cv: f64, %acc: f64):
    %diff = arith.subf %cv, %pv : f64
    %sq = arith.mulf %diff, %diff : f64
    %s = arith.addf %acc, %sq : f64
    linalg.yield %s : f64
  } -> tensor<?x?xf64>
  %me = tensor.empty(%n) : tensor<?xf64>
  %m0 = linalg.fill ins(%inf : f64) outs(%me : tensor<?xf64>) -> tensor<?xf64>
  %mins = linalg.reduce ins(%dist : tensor<?x?xf64>) outs(%m0 : tensor<?xf64>) dimensions = [1]
    (%v: f64, %acc: f64) {
      %m = arith.minimumf %v, %acc : f64
      linalg.yield %m : f64
    }
  return %mins : tensor<?xf64>
}
"""


@pytest.fixture(scope="module", params=["f64", "f32"])
def product(request):
    return request.param, mlir_ad.compile(PRODUCT.replace("T", request.param))


@pytest.mark.parametrize("m", [1, 7, 127, 128, 129, 300])
@pytest.mark.parametrize("k", [0, 1, 13, 255, 257, 600])
def test_product_after_fill(product, m, k):
    dtype, module = product
    rng = np.random.default_rng(m * 1000 + k)
    np_type = {"f64": np.float64, "f32": np.float32}[dtype]
    a = rng.standard_normal((m, k)).astype(np_type)
    b = rng.standard_normal((k, 33)).astype(np_type)
    r = module.f(a, b, 1.5)
    want = 1.5 + a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if dtype == "f64" else 2e-4
    np.testing.assert_allclose(r, want, rtol=tol, atol=tol * max(1, k))


@pytest.mark.parametrize("m, k", [(5, 3), (200, 300), (129, 0)])
def test_fill_read_before_the_product_stays(m, k):
    module = mlir_ad.compile(READ_BETWEEN)
    rng = np.random.default_rng(m + k)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, 20))
    r, s = module.f(a, b, 0.75)
    assert s == pytest.approx(0.75 * m * 20, rel=1e-14)
    np.testing.assert_allclose(r, 0.75 + a @ b, rtol=1e-12, atol=1e-12)


def test_static_product_after_fill():
    module = mlir_ad.compile(STATIC)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((300, 40)), rng.standard_normal((40, 24))
    np.testing.assert_allclose(module.f(a, b), -2.5 + a @ b, rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("n, k, d", [(1, 1, 1), (300, 10, 8), (1000, 130, 16),
                                     (129, 1000, 3)])
def test_distance_matrix_after_fill(n, k, d):
    module = mlir_ad.compile(DISTANCES)
    rng = np.random.default_rng(n + k + d)
    p, c = rng.random((n, d)), rng.random((k, d))
    want = ((c[None, :, :] - p[:, None, :]) ** 2).sum(axis=2).min(axis=1)
    np.testing.assert_allclose(module.f(p, c), want, rtol=1e-13, atol=1e-15)


# A generic writing a scalar to part of the output (the diagonal: lambda I +
# A B, a ridge Gram matrix; one column) is not a fill of it: it stays.
PARTIAL = """
func.func @f(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>, %lam: f64) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f64
  %n = tensor.dim %a, %c0 : tensor<?x?xf64>
  %e = tensor.empty(%n, %n) : tensor<?x?xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
  %d = linalg.generic {indexing_maps = [affine_map<(i) -> ()>, affine_map<(i) -> MAP>], iterator_types = ["parallel"]}
      ins(%lam : f64) outs(%z : tensor<?x?xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<?x?xf64>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf64>, tensor<?x?xf64>) outs(%d : tensor<?x?xf64>) -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}
"""


@pytest.mark.parametrize("part", ["diagonal", "column"])
@pytest.mark.parametrize("n", [5, 128, 129, 300])
def test_partial_fill_before_the_product_stays(part, n):
    module = mlir_ad.compile(PARTIAL.replace(
        "MAP", "(i, i)" if part == "diagonal" else "(i, 0)"))
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n, 4)), rng.standard_normal((4, n))
    want = a @ b
    if part == "diagonal":
        want += 3.0 * np.eye(n)
    else:
        want[:, 0] += 3.0
    np.testing.assert_allclose(module.f(a, b, 3.0), want, rtol=1e-12,
                               atol=1e-12)
