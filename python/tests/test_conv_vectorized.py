"""Convolutions through ad-vectorize's register tiles (issue 10): the primal
`linalg.conv_2d_nhwc_hwcf` and both adjoints (the kernel's, a contraction
over the output pixels; the image's, which scatters into the window) are
tiled like contractions and vectorized. Each case is checked against an
independent numpy reference of the value and of both gradients, on shapes
where the narrow tile divides the output width, where it leaves a scalar
remainder, with a batch, with f32, and with strides and dilations (which stay
scalar loops)."""

import numpy as np
import pytest

import mlir_ad
from conftest import assert_grads_close, numerical_grad


def conv_source(n, h, w, c, f, kh, kw, dtype, stride=1, dilation=1):
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (w - dilation * (kw - 1) - 1) // stride + 1
    x = f"tensor<{n}x{h}x{w}x{c}x{dtype}>"
    k = f"tensor<{kh}x{kw}x{c}x{f}x{dtype}>"
    o = f"tensor<{n}x{oh}x{ow}x{f}x{dtype}>"
    return f"""
func.func @loss(%x: {x}, %k: {k}, %wt: {o}) -> {dtype} {{
  %z = arith.constant 0.0 : {dtype}
  %e = tensor.empty() : {o}
  %fill = linalg.fill ins(%z : {dtype}) outs(%e : {o}) -> {o}
  %c = linalg.conv_2d_nhwc_hwcf {{dilations = dense<{dilation}> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>}}
         ins(%x, %k : {x}, {k}) outs(%fill : {o}) -> {o}
  %t = math.tanh %c : {o}
  %p = arith.mulf %t, %wt : {o}
  %init = tensor.from_elements %z : tensor<{dtype}>
  %s = linalg.reduce ins(%p : {o}) outs(%init : tensor<{dtype}>) dimensions = [0, 1, 2, 3]
    (%a: {dtype}, %b: {dtype}) {{
      %u = arith.addf %a, %b : {dtype}
      linalg.yield %u : {dtype}
    }}
  %v = tensor.extract %s[] : tensor<{dtype}>
  return %v : {dtype}
}}
""", (n, oh, ow, f)


def conv_ref(x, k, stride, dilation):
    n, h, w, c = x.shape
    kh, kw, _, f = k.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (w - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, oh, ow, f))
    for a in range(kh):
        for b in range(kw):
            rows = x[:, a * dilation:a * dilation + stride * (oh - 1) + 1:stride,
                     b * dilation:b * dilation + stride * (ow - 1) + 1:stride, :]
            out += np.einsum("nijc,cf->nijf", rows, k[a, b])
    return out


def grads_ref(x, k, wt, stride, dilation):
    """The gradients of sum(wt * tanh(conv(x, k))) by the adjoint formulas:
    dK[a, b] = sum over pixels of the window rows times dC, dX scatters
    dC K[a, b]^T back into each window."""
    x = x.astype(np.float64)
    k = k.astype(np.float64)
    conv = conv_ref(x, k, stride, dilation)
    dc = wt * (1.0 - np.tanh(conv) ** 2)
    n, oh, ow, f = dc.shape
    kh, kw = k.shape[:2]
    dx = np.zeros_like(x)
    dk = np.zeros_like(k)
    for a in range(kh):
        for b in range(kw):
            hs = slice(a * dilation, a * dilation + stride * (oh - 1) + 1, stride)
            ws = slice(b * dilation, b * dilation + stride * (ow - 1) + 1, stride)
            dk[a, b] = np.einsum("nijc,nijf->cf", x[:, hs, ws, :], dc)
            dx[:, hs, ws, :] += np.einsum("nijf,cf->nijc", dc, k[a, b])
    return float(np.sum(wt * np.tanh(conv))), dx, dk


CASES = [
    # n, h, w, c, f, kh, kw, dtype, stride, dilation
    pytest.param(1, 10, 12, 4, 16, 3, 3, "f64", 1, 1, id="width-10-tiles-of-5"),
    pytest.param(2, 9, 13, 3, 8, 3, 3, "f64", 1, 1, id="batch-width-11-remainder"),
    pytest.param(1, 8, 9, 8, 24, 2, 2, "f64", 1, 1, id="f-24-kernel-2x2"),
    pytest.param(1, 7, 10, 5, 32, 3, 3, "f32", 1, 1, id="f32"),
    # Channels a power of two below a vector's lanes (f32: 16 with AVX-512,
    # 8 with AVX2; f64: 8 and 4): the image's adjoint runs on narrower
    # vectors of channels.
    pytest.param(1, 12, 12, 8, 16, 3, 3, "f32", 1, 1, id="f32-8-channels"),
    pytest.param(1, 12, 10, 4, 16, 3, 3, "f32", 1, 1, id="f32-4-channels"),
    pytest.param(2, 9, 11, 4, 8, 3, 3, "f64", 1, 1, id="f64-4-channels"),
    pytest.param(1, 11, 11, 4, 16, 3, 3, "f64", 2, 1, id="stride-2-scalar"),
    pytest.param(1, 11, 12, 4, 16, 3, 3, "f64", 1, 2, id="dilation-2-scalar"),
]


@pytest.mark.parametrize("n,h,w,c,f,kh,kw,dtype,stride,dilation", CASES)
def test_conv_value_and_gradients(n, h, w, c, f, kh, kw, dtype, stride,
                                  dilation):
    source, out_shape = conv_source(n, h, w, c, f, kh, kw, dtype, stride,
                                    dilation)
    m = mlir_ad.compile(source)
    np_type = np.float64 if dtype == "f64" else np.float32
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, h, w, c)).astype(np_type)
    k = (rng.standard_normal((kh, kw, c, f)) * 0.3).astype(np_type)
    wt = rng.standard_normal(out_shape).astype(np_type)
    value, dx, dk = grads_ref(x, k, wt.astype(np.float64), stride, dilation)
    rtol = 1e-11 if dtype == "f64" else 2e-4
    atol = 1e-11 if dtype == "f64" else 2e-4
    assert float(m.loss(x, k, wt)) == pytest.approx(value, rel=rtol, abs=atol)
    gx, gk = mlir_ad.grad(m.loss, wrt=[0, 1])(x, k, wt)
    assert gx.dtype == np_type and gk.dtype == np_type
    np.testing.assert_allclose(gx, dx, rtol=rtol, atol=atol)
    np.testing.assert_allclose(gk, dk, rtol=rtol, atol=atol)


def test_conv_gradient_finite_differences():
    """The reference itself against finite differences, on a small case the
    vectorized path takes (f = 8 lanes of f64, width 6)."""
    source, out_shape = conv_source(1, 5, 8, 2, 8, 3, 3, "f64")
    m = mlir_ad.compile(source)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 5, 8, 2))
    k = rng.standard_normal((3, 3, 2, 8)) * 0.3
    wt = rng.standard_normal(out_shape)

    def loss(x, k):
        return float(np.sum(wt * np.tanh(conv_ref(x, k, 1, 1))))

    assert_grads_close(mlir_ad.grad(m.loss, wrt=[0, 1])(x, k, wt),
                       numerical_grad(loss, [x, k], [0, 1]), rtol=1e-6,
                       atol=1e-8)
