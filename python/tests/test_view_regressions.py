"""Rank-reducing views upstream misreads (ad-legalize-views): a convolution
applied in an scf.for over dynamically shaped images reads its cotangent
through a view with dynamic strides, whose dropped unit dimensions upstream
inferred wrongly (the image's gradient was wrong from width 8 on); a strided
slice that drops a unit dimension crashed expand-strided-metadata. Each
gradient is checked against numpy formulas and finite differences."""

import numpy as np
import pytest

import mlir_ad
from conftest import assert_grads_close, numerical_grad

LOOPED_CONV = """
func.func @loss(%x: tensor<?x?x?x?xf64>, %k: tensor<?x?x?x?xf64>, %t: tensor<?x?x?x?xf64>, %steps: index) -> f64 {
  %z = arith.constant 0.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %f = tensor.dim %k, %c3 : tensor<?x?x?x?xf64>
  %hf = scf.for %it = %c0 to %steps step %c1 iter_args(%h = %x) -> (tensor<?x?x?x?xf64>) {
    %n0 = tensor.dim %h, %c0 : tensor<?x?x?x?xf64>
    %h0 = tensor.dim %h, %c1 : tensor<?x?x?x?xf64>
    %w0 = tensor.dim %h, %c2 : tensor<?x?x?x?xf64>
    %hp = tensor.pad %h low[0, 0, 1, 0] high[0, 0, 1, 0] {
    ^bb0(%a: index, %b: index, %cc: index, %d: index):
      tensor.yield %z : f64
    } : tensor<?x?x?x?xf64> to tensor<?x?x?x?xf64>
    %e = tensor.empty(%n0, %h0, %w0, %f) : tensor<?x?x?x?xf64>
    %fz = linalg.fill ins(%z : f64) outs(%e : tensor<?x?x?x?xf64>) -> tensor<?x?x?x?xf64>
    %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%hp, %k : tensor<?x?x?x?xf64>, tensor<?x?x?x?xf64>) outs(%fz : tensor<?x?x?x?xf64>) -> tensor<?x?x?x?xf64>
    scf.yield %y : tensor<?x?x?x?xf64>
  }
  %p = arith.mulf %hf, %t : tensor<?x?x?x?xf64>
  %i = tensor.empty() : tensor<f64>
  %i0 = linalg.fill ins(%z : f64) outs(%i : tensor<f64>) -> tensor<f64>
  %r = linalg.reduce ins(%p : tensor<?x?x?x?xf64>) outs(%i0 : tensor<f64>) dimensions = [0, 1, 2, 3]
    (%a: f64, %b: f64) {
      %u = arith.addf %a, %b : f64
      linalg.yield %u : f64
    }
  %v = tensor.extract %r[] : tensor<f64>
  return %v : f64
}
"""


def conv_1x3(x, k):
    """conv_2d_nhwc_hwcf of x padded by one column each side, kernel 1x3."""
    w = x.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 0)))
    return sum(np.einsum("nhwc,cf->nhwf", xp[:, :, j:j + w, :], k[0, j])
               for j in range(3))


@pytest.fixture(scope="module")
def looped_conv():
    return mlir_ad.compile(LOOPED_CONV)


@pytest.mark.parametrize("n,h,w,c", [(1, 1, 7, 8), (1, 1, 8, 8), (1, 2, 9, 8),
                                     (2, 1, 16, 8), (1, 3, 8, 4)])
def test_looped_conv_one_step(looped_conv, n, h, w, c):
    rng = np.random.default_rng(w + 10 * c)
    x = rng.standard_normal((n, h, w, c))
    k = rng.standard_normal((1, 3, c, c))
    t = rng.standard_normal((n, h, w, c))
    gx, gk = mlir_ad.grad(looped_conv.loss, wrt=(0, 1))(x, k, t, 1)
    # dL/dx: the cotangent t correlated with the kernel's transpose.
    tp = np.pad(t, ((0, 0), (0, 0), (1, 1), (0, 0)))
    ex = sum(np.einsum("nhwf,cf->nhwc", tp[:, :, 2 - j:2 - j + w, :], k[0, j])
             for j in range(3))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 0)))
    ek = np.stack([np.einsum("nhwc,nhwf->cf", xp[:, :, j:j + w, :], t)
                   for j in range(3)])[None]
    np.testing.assert_allclose(gx, ex, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gk, ek, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(looped_conv.loss(x, k, t, 1),
                               np.sum(conv_1x3(x, k) * t), rtol=1e-12)


def test_looped_conv_three_steps(looped_conv):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 9, 8))
    k = 0.3 * rng.standard_normal((1, 3, 8, 8))
    t = rng.standard_normal((1, 2, 9, 8))
    gx, gk = mlir_ad.grad(looped_conv.loss, wrt=(0, 1))(x, k, t, 3)
    expected = numerical_grad(looped_conv.loss, (x, k, t, 3), wrt=(0, 1))
    assert_grads_close((gx, gk), expected)
    y = x
    for _ in range(3):
        y = conv_1x3(y, k)
    np.testing.assert_allclose(looped_conv.loss(x, k, t, 3), np.sum(y * t),
                               rtol=1e-12)


STRIDED_SLICE = """
func.func @f(%x: tensor<1x5x1xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %y = tensor.extract_slice %x[0, 0, 0] [1, 3, 1] [1, 2, 1] : tensor<1x5x1xf64> to tensor<3x1xf64>
  %a = tensor.extract %y[%c1, %c0] : tensor<3x1xf64>
  %b = tensor.extract %y[%c2, %c0] : tensor<3x1xf64>
  %three = arith.constant 3.0 : f64
  %p = arith.mulf %a, %three : f64
  %q = arith.mulf %b, %b : f64
  %r = arith.addf %p, %q : f64
  return %r : f64
}
"""


def test_strided_slice_dropping_a_unit_dimension():
    m = mlir_ad.compile(STRIDED_SLICE)
    x = np.arange(1.0, 6.0).reshape(1, 5, 1)
    assert m.f(x) == 3 * 3.0 + 5.0 * 5.0
    assert m.f.differentiable_arguments == (0,)
    (g,) = mlir_ad.grad(m.f)(x)
    np.testing.assert_array_equal(g.ravel(), [0.0, 0.0, 3.0, 0.0, 10.0])
