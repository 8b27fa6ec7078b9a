"""User function names are the user's: a function called like a C library
function (@sin, @exp, @malloc, ...) must neither replace that function in the
compiled code nor keep the module from compiling."""

import numpy as np
import pytest

import mlir_ad

TEMPLATE = """
// The user's own @NAME, unrelated to the C library's.
func.func @NAME(%a: f64, %b: f64) -> f64 {
  %r = arith.addf %a, %b : f64
  return %r : f64
}

// sum(sin(x) * exp(x) + log(x) + tanh(x) + cos(x)), with temporaries.
func.func @loss(%x: tensor<?xf64>) -> f64 {
  %s = math.sin %x : tensor<?xf64>
  %e = math.exp %x : tensor<?xf64>
  %l = math.log %x : tensor<?xf64>
  %t = math.tanh %x : tensor<?xf64>
  %c = math.cos %x : tensor<?xf64>
  %p = arith.mulf %s, %e : tensor<?xf64>
  %q = arith.addf %p, %l : tensor<?xf64>
  %u = arith.addf %q, %t : tensor<?xf64>
  %v = arith.addf %u, %c : tensor<?xf64>
  %z = arith.constant 0.0 : f64
  %init = tensor.from_elements %z : tensor<f64>
  %r = linalg.reduce ins(%v : tensor<?xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%a: f64, %b: f64) {
      %w = arith.addf %a, %b : f64
      linalg.yield %w : f64
    }
  %y = tensor.extract %r[] : tensor<f64>
  return %y : f64
}

func.func @scalar(%x: f64) -> f64 {
  %s = math.sin %x : f64
  %e = math.exp %s : f64
  return %e : f64
}
"""


def reference(x):
    return np.sum(np.sin(x) * np.exp(x) + np.log(x) + np.tanh(x) + np.cos(x))


def reference_grad(x):
    return (np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x) + 1 / x +
            (1 - np.tanh(x) ** 2) - np.sin(x))


def test_ordinary_names_work():
    m = mlir_ad.compile(TEMPLATE.replace("NAME", "plus"))
    x = np.linspace(0.2, 2.0, 7)
    assert m.loss(x) == pytest.approx(reference(x), rel=1e-12)
    np.testing.assert_allclose(mlir_ad.grad(m.loss)(x)[0], reference_grad(x), rtol=1e-10)


@pytest.mark.parametrize("name", ["sin", "cos", "exp", "log", "tanh", "malloc"])
def test_function_named_like_a_c_library_function(name):
    m = mlir_ad.compile(TEMPLATE.replace("NAME", name))
    assert m[name](1.0, 2.0) == 3.0
    x = np.linspace(0.2, 2.0, 7)
    assert m.loss(x) == pytest.approx(reference(x), rel=1e-12)
    (g,) = mlir_ad.grad(m.loss)(x)
    np.testing.assert_allclose(g, reference_grad(x), rtol=1e-10)
    assert m.scalar(0.5) == pytest.approx(np.exp(np.sin(0.5)), rel=1e-14)
    assert mlir_ad.grad(m.scalar, wrt=0)(0.5) == pytest.approx(
        np.exp(np.sin(0.5)) * np.cos(0.5), rel=1e-14)


def test_user_llvm_functions_and_runner_names_do_not_replace_the_runtimes():
    # Every defined function is renamed in the JIT-ed module: an llvm.func
    # @sin used to replace libm's for math.sin, and a func.func @memrefCopy
    # took the place of the runner library's.
    m = mlir_ad.compile("""
llvm.func @sin(%x: f64) -> f64 {
  %c = llvm.mlir.constant(42.0 : f64) : f64
  llvm.return %c : f64
}
func.func @memrefCopy(%x: f64) -> f64 { return %x : f64 }
func.func @f(%x: f64, %m: tensor<4x4xf64>) -> f64 {
  %s = math.sin %x : f64
  %slice = tensor.extract_slice %m[1, 1] [2, 2] [1, 1] : tensor<4x4xf64> to tensor<2x2xf64>
  %c0 = arith.constant 0 : index
  %v = tensor.extract %slice[%c0, %c0] : tensor<2x2xf64>
  %r = arith.addf %s, %v : f64
  %t = func.call @memrefCopy(%r) : (f64) -> f64
  return %t : f64
}""")
    grid = np.arange(16.0).reshape(4, 4)
    assert m.f(0.5, grid) == pytest.approx(np.sin(0.5) + 5.0)
    gx, gm = mlir_ad.grad(m.f)(0.5, grid)
    assert gx == pytest.approx(np.cos(0.5))
    assert gm[1, 1] == 1.0 and gm.sum() == 1.0
