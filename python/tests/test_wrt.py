"""Which arguments grad, value_and_grad and vjp differentiate: the default,
an int, tuples and lists (in sorted order), and the rejected cases."""

import math

import numpy as np
import pytest

import mlir_ad

SOURCE = """
// f(x, n, v, w) = sum(v) * x^2 * w + n * w, with an index argument in between.
func.func @f(%x: f64, %n: index, %v: tensor<3xf64>, %w: f64) -> f64 {
  %z = arith.constant 0.0 : f64
  %init = tensor.from_elements %z : tensor<f64>
  %r = linalg.reduce ins(%v : tensor<3xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%a: f64, %b: f64) {
      %s = arith.addf %a, %b : f64
      linalg.yield %s : f64
    }
  %sv = tensor.extract %r[] : tensor<f64>
  %xx = arith.mulf %x, %x : f64
  %p = arith.mulf %sv, %xx : f64
  %pw = arith.mulf %p, %w : f64
  %ni = arith.index_cast %n : index to i64
  %nf = arith.sitofp %ni : i64 to f64
  %nw = arith.mulf %nf, %w : f64
  %y = arith.addf %pw, %nw : f64
  return %y : f64
}

func.func @ints_only(%n: i32, %m: index) -> f64 {
  %f = arith.sitofp %n : i32 to f64
  return %f : f64
}
"""

X, N, V, W = 1.5, 4, np.array([0.5, -1.0, 2.0]), -0.75
SV = V.sum()
DX = 2 * X * SV * W
DV = np.full(3, X * X * W)
DW = SV * X * X + N
VALUE = SV * X * X * W + N * W


@pytest.fixture(scope="module")
def m():
    return mlir_ad.compile(SOURCE)


def test_differentiable_arguments(m):
    assert m.f.differentiable_arguments == (0, 2, 3)
    assert m.ints_only.differentiable_arguments == ()


def test_default_wrt_is_every_float_argument(m):
    g = mlir_ad.grad(m.f)(X, N, V, W)
    assert isinstance(g, tuple) and len(g) == 3
    assert g[0] == pytest.approx(DX)
    np.testing.assert_allclose(g[1], DV)
    assert g[2] == pytest.approx(DW)


def test_int_wrt_returns_the_gradient_alone(m):
    g = mlir_ad.grad(m.f, wrt=2)(X, N, V, W)
    assert isinstance(g, np.ndarray)
    np.testing.assert_allclose(g, DV)
    g = mlir_ad.grad(m.f, wrt=3)(X, N, V, W)
    assert isinstance(g, float) and g == pytest.approx(DW)


@pytest.mark.parametrize("wrt", [(3, 0), [3, 0], (0, 3), range(0, 4, 3)])
def test_sequence_wrt_in_sorted_order(m, wrt):
    g = mlir_ad.grad(m.f, wrt=wrt)(X, N, V, W)
    assert isinstance(g, tuple) and len(g) == 2
    assert g == (pytest.approx(DX), pytest.approx(DW))


def test_one_element_tuple_returns_a_tuple(m):
    g = mlir_ad.grad(m.f, wrt=(0,))(X, N, V, W)
    assert isinstance(g, tuple) and len(g) == 1 and g[0] == pytest.approx(DX)


def test_numpy_integer_wrt(m):
    # wrt=np.int64(3) is an int to everyone else in the numpy world
    # (operator.index works on it).
    g = mlir_ad.grad(m.f, wrt=np.int64(3))(X, N, V, W)
    assert g == pytest.approx(DW)
    g = mlir_ad.grad(m.f, wrt=np.array([3, 0]))(X, N, V, W)
    assert g == (pytest.approx(DX), pytest.approx(DW))


def test_value_and_grad_wrt_variants(m):
    value, g = mlir_ad.value_and_grad(m.f)(X, N, V, W)
    assert value == pytest.approx(VALUE) and value == m.f(X, N, V, W)
    assert len(g) == 3
    value, g = mlir_ad.value_and_grad(m.f, wrt=0)(X, N, V, W)
    assert value == pytest.approx(VALUE) and g == pytest.approx(DX)
    value, g = mlir_ad.value_and_grad(m.f, wrt=(3, 2))(X, N, V, W)
    np.testing.assert_allclose(g[0], DV)
    assert g[1] == pytest.approx(DW)


def test_vjp_wrt_variants(m):
    y, pb = mlir_ad.vjp(m.f, wrt=3)(X, N, V, W)
    assert y == pytest.approx(VALUE)
    assert pb(2.0) == pytest.approx(2 * DW)
    y, pb = mlir_ad.vjp(m.f, wrt=[2, 0])(X, N, V, W)
    gx, gv = pb(-1.0)
    assert gx == pytest.approx(-DX)
    np.testing.assert_allclose(gv, -DV)


@pytest.mark.parametrize("transform", [mlir_ad.grad, mlir_ad.value_and_grad,
                                       mlir_ad.vjp])
@pytest.mark.parametrize("wrt", [1, (0, 1)])
def test_non_differentiable_position(m, transform, wrt):
    with pytest.raises(ValueError, match=r"argument 1 has type index.*cannot be "
                                         r"differentiated"):
        transform(m.f, wrt=wrt)


@pytest.mark.parametrize("wrt", [4, 17, (0, 4), -1])
def test_out_of_range(m, wrt):
    with pytest.raises(ValueError, match="has 4 arguments"):
        mlir_ad.grad(m.f, wrt=wrt)


@pytest.mark.parametrize("wrt", [(0, 0), [3, 2, 3]])
def test_duplicates(m, wrt):
    with pytest.raises(ValueError, match="listed twice"):
        mlir_ad.grad(m.f, wrt=wrt)


def test_empty_wrt(m):
    with pytest.raises(ValueError, match="empty"):
        mlir_ad.grad(m.f, wrt=())


@pytest.mark.parametrize("wrt", [True, 1.0, "0", (0, None), (0, 2.0)])
def test_wrt_of_wrong_type(m, wrt):
    with pytest.raises(TypeError):
        mlir_ad.grad(m.f, wrt=wrt)


def test_no_differentiable_argument(m):
    with pytest.raises(ValueError, match="no differentiable argument"):
        mlir_ad.grad(m.ints_only)
    with pytest.raises(ValueError, match="no differentiable argument"):
        mlir_ad.vjp(m.ints_only)


def test_not_a_function():
    with pytest.raises(TypeError, match="m.f"):
        mlir_ad.grad(math.sin)
    with pytest.raises(TypeError):
        mlir_ad.vjp(lambda x: x)
    with pytest.raises(TypeError):
        mlir_ad.value_and_grad("f")
