"""The remainder of a vector loop (fewer elements than a vector) runs as
vectors of half the width, a quarter, ... two lanes, then at most one scalar
element (ad-vectorize). Every length from 0 to 40 on f64 and f32 (4 and 8
lanes with AVX2, 8 and 16 with AVX-512), with bodies that add to their
output (an element computed twice, or not at all, shows), a column sum whose
remainder runs inside the reduction loop, and a gradient through tanh."""

import numpy as np
import pytest

import mlir_ad
from conftest import numerical_grad

SOURCE = """
func.func @accumulate(%x: tensor<?xT>, %acc: tensor<?xT>) -> tensor<?xT> {
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<?xT>) outs(%acc : tensor<?xT>) {
  ^bb0(%a: T, %o: T):
    %e = math.exp %a : T
    %s = arith.addf %o, %e : T
    linalg.yield %s : T
  } -> tensor<?xT>
  return %r : tensor<?xT>
}
func.func @column_sums(%x: tensor<?x?xT>, %acc: tensor<?xT>) -> tensor<?xT> {
  %r = linalg.generic {indexing_maps = [affine_map<(k, i) -> (k, i)>, affine_map<(k, i) -> (i)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<?x?xT>) outs(%acc : tensor<?xT>) {
  ^bb0(%a: T, %o: T):
    %t = math.tanh %a : T
    %s = arith.addf %o, %t : T
    linalg.yield %s : T
  } -> tensor<?xT>
  return %r : tensor<?xT>
}
func.func @loss(%x: tensor<?xT>, %w: tensor<?xT>) -> T {
  %z = arith.constant 0.0 : T
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xT>
  %e = tensor.empty(%n) : tensor<?xT>
  %t = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x, %w : tensor<?xT>, tensor<?xT>) outs(%e : tensor<?xT>) {
  ^bb0(%a: T, %b: T, %o: T):
    %p = arith.mulf %a, %b : T
    %h = math.tanh %p : T
    linalg.yield %h : T
  } -> tensor<?xT>
  %i = tensor.from_elements %z : tensor<T>
  %s = linalg.reduce ins(%t : tensor<?xT>) outs(%i : tensor<T>) dimensions = [0]
    (%a: T, %b: T) {
      %q = arith.addf %a, %b : T
      linalg.yield %q : T
    }
  %v = tensor.extract %s[] : tensor<T>
  return %v : T
}
func.func @grad(%x: tensor<?xT>, %w: tensor<?xT>) -> tensor<?xT> {
  %g = ad.grad @loss(%x, %w) {wrt = array<i64: 0>} : (tensor<?xT>, tensor<?xT>) -> tensor<?xT>
  return %g : tensor<?xT>
}
"""


@pytest.fixture(scope="module", params=[("f64", np.float64, 1e-14),
                                        ("f32", np.float32, 3e-6)],
                ids=["f64", "f32"])
def module(request):
    t, dtype, rtol = request.param
    return mlir_ad.compile(SOURCE.replace("T", t)), dtype, rtol


def test_every_length(module):
    mod, dtype, rtol = module
    rng = np.random.default_rng(0)
    for n in range(41):
        x = rng.uniform(-2, 2, n).astype(dtype)
        acc = rng.standard_normal(n).astype(dtype)
        expected = acc.astype(np.float64) + np.exp(x.astype(np.float64))
        np.testing.assert_allclose(mod.accumulate(x, acc), expected,
                                   rtol=rtol, atol=rtol, err_msg=f"n={n}")
        for k in (1, 3):
            m = rng.uniform(-2, 2, (k, n)).astype(dtype)
            sums = acc.astype(np.float64) + np.tanh(m.astype(np.float64)).sum(0)
            np.testing.assert_allclose(mod.column_sums(m, acc), sums,
                                       rtol=rtol * 4, atol=rtol * 4,
                                       err_msg=f"n={n}, k={k}")


@pytest.fixture(scope="module")
def module64():
    return mlir_ad.compile(SOURCE.replace("T", "f64"))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 9, 14, 15, 17])
def test_gradient(module64, n):
    mod = module64
    rng = np.random.default_rng(n)
    x, w = rng.standard_normal(n), rng.standard_normal(n)
    g = mod.grad(x, w)
    np.testing.assert_allclose(g, w * (1 - np.tanh(x * w) ** 2), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(g, numerical_grad(mod.loss, [x, w], [0])[0],
                               rtol=1e-6, atol=1e-8)
