"""Forward mode over a matrix product makes the product and its tangent one
loop nest with two outputs; ad-vectorize plans such a generic as one
contraction per output when each output is one (splitContractions), which
is where the product's register tiles come from. These tests check the
values through that path (one operand active: `W dT`), through the path it
refuses (both active: `dW T + W dT` is not one contraction), at widths whose
tiles differ (5, 12, 16, 33) with static and dynamic rows, in f64 and f32,
and inside a loop of jvps (a Jacobian by columns, as the ht eval does)."""

import numpy as np
import pytest

import mlir_ad

SOURCE = """
func.func @blend(%w: tensor<ROWSx22xT>, %t: tensor<22xCOLSxT>) -> tensor<ROWSxCOLSxT> {
  %z = arith.constant 0.0 : T
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %w, %c0 : tensor<ROWSx22xT>
  %e = tensor.empty(DIMS) : tensor<ROWSxCOLSxT>
  %f = linalg.fill ins(%z : T) outs(%e : tensor<ROWSxCOLSxT>) -> tensor<ROWSxCOLSxT>
  %m = linalg.matmul ins(%w, %t : tensor<ROWSx22xT>, tensor<22xCOLSxT>) outs(%f : tensor<ROWSxCOLSxT>) -> tensor<ROWSxCOLSxT>
  %s = math.sin %m : tensor<ROWSxCOLSxT>
  return %s : tensor<ROWSxCOLSxT>
}
func.func @tangent_t(%w: tensor<ROWSx22xT>, %t: tensor<22xCOLSxT>, %dt: tensor<22xCOLSxT>) -> (tensor<ROWSxCOLSxT>, tensor<ROWSxCOLSxT>) {
  %r, %d = ad.jvp @blend(%w, %t) tangents(%dt) {wrt = array<i64: 1>} : (tensor<ROWSx22xT>, tensor<22xCOLSxT>) -> (tensor<ROWSxCOLSxT>, tensor<ROWSxCOLSxT>)
  return %r, %d : tensor<ROWSxCOLSxT>, tensor<ROWSxCOLSxT>
}
func.func @tangent_both(%w: tensor<ROWSx22xT>, %t: tensor<22xCOLSxT>, %dw: tensor<ROWSx22xT>, %dt: tensor<22xCOLSxT>) -> (tensor<ROWSxCOLSxT>, tensor<ROWSxCOLSxT>) {
  %r, %d = ad.jvp @blend(%w, %t) tangents(%dw, %dt) : (tensor<ROWSx22xT>, tensor<22xCOLSxT>) -> (tensor<ROWSxCOLSxT>, tensor<ROWSxCOLSxT>)
  return %r, %d : tensor<ROWSxCOLSxT>, tensor<ROWSxCOLSxT>
}
"""


def _source(t, rows, cols, static):
    text = SOURCE.replace("COLS", str(cols)).replace("T", t)
    if static:
        return text.replace("ROWS", str(rows)).replace("DIMS", "")
    return text.replace("ROWS", "?").replace("DIMS", "%rows")


@pytest.mark.parametrize("t,dtype,rtol", [("f64", np.float64, 1e-12),
                                           ("f32", np.float32, 1e-4)])
@pytest.mark.parametrize("cols", [5, 12, 16, 33])
@pytest.mark.parametrize("rows,static", [(1, False), (7, False), (37, False),
                                         (100, False), (37, True)])
def test_product_tangents(rng, t, dtype, rtol, cols, rows, static):
    m = mlir_ad.compile(_source(t, rows, cols, static))
    w = rng.uniform(-1, 1, (rows, 22)).astype(dtype)
    dw = rng.uniform(-1, 1, (rows, 22)).astype(dtype)
    tt = rng.uniform(-1, 1, (22, cols)).astype(dtype)
    dt = rng.uniform(-1, 1, (22, cols)).astype(dtype)
    w64, dw64, t64, dt64 = (a.astype(np.float64) for a in (w, dw, tt, dt))
    prod = w64 @ t64
    r, d = m.tangent_t(w, tt, dt)
    np.testing.assert_allclose(r, np.sin(prod), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(d, np.cos(prod) * (w64 @ dt64), rtol=rtol,
                               atol=rtol)
    r, d = m.tangent_both(w, tt, dw, dt)
    np.testing.assert_allclose(r, np.sin(prod), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(
        d, np.cos(prod) * (dw64 @ t64 + w64 @ dt64), rtol=rtol, atol=rtol)


JACOBIAN = """
func.func private @blend(%w: tensor<?x22xf64>, %t: tensor<22x12xf64>) -> tensor<?x12xf64> {
  %z = arith.constant 0.0 : f64
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %w, %c0 : tensor<?x22xf64>
  %e = tensor.empty(%rows) : tensor<?x12xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<?x12xf64>) -> tensor<?x12xf64>
  %m = linalg.matmul ins(%w, %t : tensor<?x22xf64>, tensor<22x12xf64>) outs(%f : tensor<?x12xf64>) -> tensor<?x12xf64>
  %s = math.tanh %m : tensor<?x12xf64>
  return %s : tensor<?x12xf64>
}
// Column (a, b) of the Jacobian along t[a][b], for every a, b: [rows][12][22][12].
func.func @jacobian(%w: tensor<?x22xf64>, %t: tensor<22x12xf64>) -> tensor<?x12x22x12xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %c22 = arith.constant 22 : index
  %z = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %rows = tensor.dim %w, %c0 : tensor<?x22xf64>
  %je = tensor.empty(%rows) : tensor<?x12x22x12xf64>
  %de = tensor.empty() : tensor<22x12xf64>
  %d0 = linalg.fill ins(%z : f64) outs(%de : tensor<22x12xf64>) -> tensor<22x12xf64>
  %jac = scf.for %a = %c0 to %c22 step %c1 iter_args(%ja = %je) -> tensor<?x12x22x12xf64> {
    %jb = scf.for %b = %c0 to %c12 step %c1 iter_args(%jc = %ja) -> tensor<?x12x22x12xf64> {
      %dir = tensor.insert %one into %d0[%a, %b] : tensor<22x12xf64>
      %r, %col = ad.jvp @blend(%w, %t) tangents(%dir) {wrt = array<i64: 1>} : (tensor<?x22xf64>, tensor<22x12xf64>) -> (tensor<?x12xf64>, tensor<?x12xf64>)
      %ins = tensor.insert_slice %col into %jc[0, 0, %a, %b] [%rows, 12, 1, 1] [1, 1, 1, 1] : tensor<?x12xf64> into tensor<?x12x22x12xf64>
      scf.yield %ins : tensor<?x12x22x12xf64>
    }
    scf.yield %jb : tensor<?x12x22x12xf64>
  }
  return %jac : tensor<?x12x22x12xf64>
}
"""


@pytest.mark.parametrize("rows", [1, 9, 30])
def test_jacobian_by_columns(rng, rows):
    m = mlir_ad.compile(JACOBIAN)
    w = rng.uniform(-1, 1, (rows, 22))
    t = rng.uniform(-1, 1, (22, 12))
    jac = m.jacobian(w, t)
    sech2 = 1.0 - np.tanh(w @ t) ** 2
    # d tanh(W T)[i, j] / d T[a, b] = sech^2 (W T)[i, j] * W[i, a] [j == b].
    want = np.einsum("ij,ia,jb->ijab", sech2, w, np.eye(12))
    np.testing.assert_allclose(jac, want, rtol=1e-12, atol=1e-13)


HVP = """
func.func @loss(%x: tensor<ROWSx48xT>, %w: tensor<48xCOLSxT>) -> T {
  %z = arith.constant 0.0 : T
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<ROWSx48xT>
  %e = tensor.empty(DIMS) : tensor<ROWSxCOLSxT>
  %f = linalg.fill ins(%z : T) outs(%e : tensor<ROWSxCOLSxT>) -> tensor<ROWSxCOLSxT>
  %h = linalg.matmul ins(%x, %w : tensor<ROWSx48xT>, tensor<48xCOLSxT>) outs(%f : tensor<ROWSxCOLSxT>) -> tensor<ROWSxCOLSxT>
  %t = math.tanh %h : tensor<ROWSxCOLSxT>
  %s0 = tensor.empty() : tensor<T>
  %s1 = linalg.fill ins(%z : T) outs(%s0 : tensor<T>) -> tensor<T>
  %s = linalg.reduce ins(%t : tensor<ROWSxCOLSxT>) outs(%s1 : tensor<T>) dimensions = [0, 1]
    (%a: T, %b: T) {
      %q = arith.mulf %a, %a : T
      %r = arith.addf %q, %b : T
      linalg.yield %r : T
    }
  %v = tensor.extract %s[] : tensor<T>
  return %v : T
}
func.func @hvp(%x: tensor<ROWSx48xT>, %w: tensor<48xCOLSxT>, %dx: tensor<ROWSx48xT>, %dw: tensor<48xCOLSxT>) -> (tensor<ROWSx48xT>, tensor<48xCOLSxT>) {
  %hx, %hw = ad.hvp @loss(%x, %w) tangents(%dx, %dw) : (tensor<ROWSx48xT>, tensor<48xCOLSxT>) -> (tensor<ROWSx48xT>, tensor<48xCOLSxT>)
  return %hx, %hw : tensor<ROWSx48xT>, tensor<48xCOLSxT>
}
"""


def _loss_grad(x, w):
    t = np.tanh(x @ w)
    g = 2 * t * (1 - t * t)
    return g @ w.T, x.T @ g


@pytest.mark.parametrize("t,dtype,rtol", [("f64", np.float64, 1e-6),
                                           ("f32", np.float32, 2e-3)])
@pytest.mark.parametrize("rows,cols,static", [(1, 5, False), (9, 12, False),
                                              (64, 33, False), (16, 24, True)])
def test_hessian_vector_products_through_products(rng, t, dtype, rtol, rows,
                                                  cols, static):
    # Forward mode over the gradient: the tangents of X W and of the
    # adjoints G W^T and X^T G are sums of two products of active operands
    # (split into one contraction per term).
    text = HVP.replace("COLS", str(cols)).replace("T", t)
    if static:
        text = text.replace("ROWS", str(rows)).replace("DIMS", "")
    else:
        text = text.replace("ROWS", "?").replace("DIMS", "%rows")
    m = mlir_ad.compile(text)
    x = (rng.standard_normal((rows, 48)) * 0.2).astype(dtype)
    w = (rng.standard_normal((48, cols)) * 0.2).astype(dtype)
    dx = rng.standard_normal((rows, 48)).astype(dtype)
    dw = rng.standard_normal((48, cols)).astype(dtype)
    hx, hw = m.hvp(x, w, dx, dw)
    x64, w64, dx64, dw64 = (a.astype(np.float64) for a in (x, w, dx, dw))
    eps = 1e-5
    plus = _loss_grad(x64 + eps * dx64, w64 + eps * dw64)
    minus = _loss_grad(x64 - eps * dx64, w64 - eps * dw64)
    for got, p, q in zip((hx, hw), plus, minus):
        want = (p - q) / (2 * eps)
        scale = max(1.0, np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


ACCUMULATOR = """
func.func @product(%a: tensor<ROWSx7xf64>, %b: tensor<7x9xf64>, %c: tensor<ROWSx9xf64>) -> tensor<ROWSx9xf64> {
  %m = linalg.matmul ins(%a, %b : tensor<ROWSx7xf64>, tensor<7x9xf64>) outs(%c : tensor<ROWSx9xf64>) -> tensor<ROWSx9xf64>
  %t = math.tanh %m : tensor<ROWSx9xf64>
  return %t : tensor<ROWSx9xf64>
}
func.func @along(%a: tensor<ROWSx7xf64>, %b: tensor<7x9xf64>, %c: tensor<ROWSx9xf64>, %dc: tensor<ROWSx9xf64>) -> (tensor<ROWSx9xf64>, tensor<ROWSx9xf64>) {
  %r, %d = ad.jvp @product(%a, %b, %c) tangents(%dc) {wrt = array<i64: 2>} : (tensor<ROWSx7xf64>, tensor<7x9xf64>, tensor<ROWSx9xf64>) -> (tensor<ROWSx9xf64>, tensor<ROWSx9xf64>)
  return %r, %d : tensor<ROWSx9xf64>, tensor<ROWSx9xf64>
}
"""


@pytest.mark.parametrize("rows,static", [(2, True), (2, False), (40, False)])
def test_tangent_of_the_accumulator_alone(rng, rows, static):
    # The tangent's body reads no input (`out + 0`): a part of its own
    # would have a reduction loop that indexes nothing (it crashed the
    # compiler: new-user finding).
    m = mlir_ad.compile(ACCUMULATOR.replace("ROWS", str(rows) if static
                                            else "?"))
    a = rng.uniform(-1, 1, (rows, 7))
    b = rng.uniform(-1, 1, (7, 9))
    c = rng.uniform(-1, 1, (rows, 9))
    dc = rng.uniform(-1, 1, (rows, 9))
    r, d = m.along(a, b, c, dc)
    prod = a @ b + c
    np.testing.assert_allclose(r, np.tanh(prod), rtol=1e-13)
    np.testing.assert_allclose(d, (1 - np.tanh(prod) ** 2) * dc, rtol=1e-12,
                               atol=1e-14)


def test_a_term_added_twice_stays_whole(rng):
    # dC = out + (p + p) + ... doubled 12 times, p = a b: splitting per
    # occurrence made 2^depth contractions (4096 here: minutes of
    # compilation; review finding); a repeated term keeps the sum whole.
    depth = 12
    lines = ["%s0 = arith.mulf %x, %y : f64"] + [
        f"%s{i + 1} = arith.addf %s{i}, %s{i} : f64" for i in range(depth)]
    body = "\n    ".join(lines)
    source = f"""
func.func @f(%a: tensor<16x16xf64>, %b: tensor<16x16xf64>) -> (tensor<16x16xf64>, tensor<16x16xf64>) {{
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<16x16xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<16x16xf64>) -> tensor<16x16xf64>
  %r:2 = linalg.generic {{indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%a, %b : tensor<16x16xf64>, tensor<16x16xf64>) outs(%f, %f : tensor<16x16xf64>, tensor<16x16xf64>) {{
  ^bb0(%x: f64, %y: f64, %o: f64, %do: f64):
    %m = arith.mulf %x, %y : f64
    %c = arith.addf %o, %m : f64
    {body}
    %d = arith.addf %do, %s{depth} : f64
    linalg.yield %c, %d : f64, f64
  }} -> (tensor<16x16xf64>, tensor<16x16xf64>)
  return %r#0, %r#1 : tensor<16x16xf64>, tensor<16x16xf64>
}}
"""
    m = mlir_ad.compile(source)
    a = rng.uniform(-1, 1, (16, 16))
    b = rng.uniform(-1, 1, (16, 16))
    c, d = m.f(a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(d, 2.0 ** depth * (a @ b), rtol=1e-13,
                               atol=1e-10)
