"""Element types at the boundary: integers of every width, index and i1 as
scalars and tensors, functions without results, mixed results, f16 and bf16."""

import warnings

import numpy as np
import pytest

import mlir_ad
from conftest import assert_grads_close

SOURCE = """
func.func @ints(%a: i1, %b: i8, %c: i16, %d: i32, %e: i64, %f: index) -> (i1, i8, i16, i32, i64, index) {
  %t = arith.constant true
  %na = arith.xori %a, %t : i1
  %c3_8 = arith.constant 3 : i8
  %b2 = arith.muli %b, %c3_8 : i8
  %c2_16 = arith.constant 2 : i16
  %c2 = arith.muli %c, %c2_16 : i16
  %c7_32 = arith.constant 7 : i32
  %d2 = arith.subi %d, %c7_32 : i32
  %e2 = arith.muli %e, %e : i64
  %c1 = arith.constant 1 : index
  %f2 = arith.addi %f, %c1 : index
  return %na, %b2, %c2, %d2, %e2, %f2 : i1, i8, i16, i32, i64, index
}

func.func @lt(%x: f64, %y: f64) -> i1 {
  %c = arith.cmpf olt, %x, %y : f64
  return %c : i1
}

func.func @length(%v: tensor<?xf64>) -> index {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %v, %c0 : tensor<?xf64>
  return %n : index
}

// Integer and boolean tensors in and out, with a float result to
// differentiate: y = where(mask, x * k, 0); (2k, y, k as index).
func.func @masked(%k: tensor<4xi32>, %mask: tensor<4xi1>, %x: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf32>, tensor<4xindex>, tensor<4xi1>) {
  %z = arith.constant dense<0.0> : tensor<4xf32>
  %kf = arith.sitofp %k : tensor<4xi32> to tensor<4xf32>
  %xk = arith.mulf %x, %kf : tensor<4xf32>
  %y = arith.select %mask, %xk, %z : tensor<4xi1>, tensor<4xf32>
  %k2 = arith.addi %k, %k : tensor<4xi32>
  %ki = arith.index_cast %k : tensor<4xi32> to tensor<4xindex>
  %pos = arith.cmpf ogt, %y, %z : tensor<4xf32>
  return %k2, %y, %ki, %pos : tensor<4xi32>, tensor<4xf32>, tensor<4xindex>, tensor<4xi1>
}

func.func @index_tensor(%i: tensor<?xindex>, %v: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %i, %c0 : tensor<?xindex>
  %z = arith.constant 0.0 : f64
  // sum_k v[i[k]]^2: a gather at run-time indices.
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %j = tensor.extract %i[%k] : tensor<?xindex>
    %e = tensor.extract %v[%j] : tensor<?xf64>
    %sq = arith.mulf %e, %e : f64
    %a = arith.addf %acc, %sq : f64
    scf.yield %a : f64
  }
  return %r : f64
}

func.func @nothing(%x: f64, %v: tensor<3xf64>) {
  return
}

func.func @many(%x: f64) -> (f64, i8, f32, i1, tensor<2xf64>, i64, f16, tensor<2x2xf32>, index, i16) {
  %f32 = arith.truncf %x : f64 to f32
  %f16 = arith.truncf %f32 : f32 to f16
  %i8 = arith.constant -5 : i8
  %i1 = arith.constant true
  %i64 = arith.constant 123456789012 : i64
  %idx = arith.constant 42 : index
  %i16 = arith.constant -300 : i16
  %t = tensor.from_elements %x, %x : tensor<2xf64>
  %two = arith.constant 2.0 : f32
  %f2 = arith.mulf %f32, %two : f32
  %m = tensor.from_elements %f32, %f2, %f2, %f32 : tensor<2x2xf32>
  return %x, %i8, %f32, %i1, %t, %i64, %f16, %m, %idx, %i16 : f64, i8, f32, i1, tensor<2xf64>, i64, f16, tensor<2x2xf32>, index, i16
}

func.func @half(%x: f16, %y: f16) -> f16 {
  %s = math.sin %x : f16
  %r = arith.mulf %s, %y : f16
  return %r : f16
}

func.func @half_tensor(%x: tensor<?xf16>) -> f16 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tensor.extract %x[%c0] : tensor<?xf16>
  %b = tensor.extract %x[%c1] : tensor<?xf16>
  %e = math.exp %a : f16
  %r = arith.mulf %e, %b : f16
  return %r : f16
}

func.func @half_map(%x: tensor<?xf16>) -> tensor<?xf16> {
  %t = math.tanh %x : tensor<?xf16>
  return %t : tensor<?xf16>
}

func.func @brain(%x: bf16) -> bf16 {
  %y = arith.mulf %x, %x : bf16
  return %y : bf16
}

func.func @brain_tensor(%x: tensor<2xbf16>) -> tensor<2xbf16> {
  return %x : tensor<2xbf16>
}
"""


@pytest.fixture(scope="module")
def m():
    return mlir_ad.compile(SOURCE)


def test_integer_scalars(m):
    assert m.ints(True, -5, 300, -7, 3_000_000_000, 2 ** 40) == \
        (False, -15, 600, -14, 9_000_000_000_000_000_000, 2 ** 40 + 1)
    r = m.ints(False, 100, 0, 0, -1, 0)
    assert r == (True, 44, 0, -7, 1, 1)  # i8: 300 wraps to 44 in the code
    assert [type(v) for v in r] == [bool, int, int, int, int, int]


def test_numpy_integer_scalars(m):
    assert m.ints(True, np.int8(3), np.int16(3), np.int32(3),
                  np.int64(3), np.uint64(3)) == (False, 9, 6, -4, 9, 4)


def test_numpy_bool_for_i1(m):
    # np.bool_ is the element type of i1 tensors; as a scalar it must be taken
    # without relying on its deprecated __index__ (an error in numpy 2).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert m.ints(np.bool_(True), 0, 0, 0, 0, 0)[0] is False
        assert m.ints(np.array([False])[0], 0, 0, 0, 0, 0)[0] is True


def test_floats_are_not_integers(m):
    with pytest.raises(TypeError, match="argument 1"):
        m.ints(True, 1.0, 1, 1, 1, 1)
    with pytest.raises(TypeError, match="argument 5"):
        m.ints(True, 1, 1, 1, 1, np.float64(1))


def test_i64_out_of_range(m):
    with pytest.raises(ValueError, match="out of range"):
        m.ints(True, 1, 1, 1, 2 ** 63, 1)


def test_i1_and_index_results(m):
    assert m.lt(1.0, 2.0) is True
    assert m.lt(2.0, 1.0) is False
    assert m.length(np.zeros(17)) == 17
    assert m.length(np.zeros(0)) == 0


def test_integer_and_boolean_tensors(m):
    k = np.array([1, -2, 3, 4], np.int32)
    mask = np.array([True, False, True, True])
    x = np.array([0.5, 1.0, -2.0, 0.25], np.float32)
    k2, y, ki, pos = m.masked(k, mask, x)
    assert k2.dtype == np.int32 and y.dtype == np.float32
    assert ki.dtype == np.int64 and pos.dtype == np.bool_
    np.testing.assert_array_equal(k2, 2 * k)
    np.testing.assert_array_equal(y, np.where(mask, x * k, 0))
    np.testing.assert_array_equal(ki, k)
    np.testing.assert_array_equal(pos, np.where(mask, x * k, 0) > 0)
    # Lists convert to the declared element types.
    k2l, yl, _, _ = m.masked([1, -2, 3, 4], [1, 0, 1, 1], [0.5, 1.0, -2.0, 0.25])
    np.testing.assert_array_equal(k2l, k2)
    np.testing.assert_array_equal(yl, y)


def test_integer_tensor_dtype_is_checked(m):
    mask = np.array([True, False, True, True])
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="int32"):
        m.masked(np.arange(4), mask, x)  # int64 for i32
    with pytest.raises(TypeError, match="bool"):
        m.masked(np.arange(4, dtype=np.int32), np.ones(4, np.int8), x)


def test_vjp_through_integer_tensors(m):
    k = np.array([1, -2, 3, 4], np.int32)
    mask = np.array([True, False, True, True])
    x = np.array([0.5, 1.0, -2.0, 0.25], np.float32)
    results, pullback = mlir_ad.vjp(m.masked)(k, mask, x)
    assert len(results) == 4
    # One cotangent: only the second result is a float.
    c = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    (g,) = pullback(c)
    np.testing.assert_array_equal(g, np.where(mask, c * k, 0))


BUILTINS = {
    # math.fpowi lowers to a call of the compiler runtime's __powidf2.
    "fpowi": """
// Scalar loss with an integer scale and a power with an integer exponent.
func.func @scaled(%x: f64, %k: i16, %p: i32) -> f64 {
  %kf = arith.sitofp %k : i16 to f64
  %xk = arith.mulf %x, %kf : f64
  %r = math.fpowi %xk, %p : f64, i32
  return %r : f64
}
""",
    # Truncating f64 to f16 calls __truncdfhf2 (compiler-rt/libgcc).
    "truncf_bf16": """
func.func @to_brain(%x: f64) -> bf16 {
  %h = arith.truncf %x : f64 to bf16
  return %h : bf16
}
""",
    "truncf": """
func.func @to_half(%x: f64) -> f16 {
  %h = arith.truncf %x : f64 to f16
  return %h : f16
}

func.func @half_loss(%x: f64) -> f64 {
  %h = arith.truncf %x : f64 to f16
  %s = math.sin %h : f16
  %e = arith.extf %s : f16 to f64
  %r = arith.mulf %e, %x : f64
  return %r : f64
}
""",
    # An integer power: not differentiated, but part of programs that are.
    "ipowi": """
func.func @ipow(%x: f64, %n: i32) -> f64 {
  %c2 = arith.constant 2 : i32
  %p = math.ipowi %n, %c2 : i32
  %pf = arith.sitofp %p : i32 to f64
  %r = arith.mulf %x, %pf : f64
  return %r : f64
}
""",
}


def test_gradient_with_integer_arguments_and_fpowi():
    m = mlir_ad.compile(BUILTINS["fpowi"])
    x, k, p = 0.7, 3, 4
    (g,) = mlir_ad.grad(m.scaled)(x, k, p)
    assert m.scaled(x, k, p) == pytest.approx((x * k) ** p)
    assert g == pytest.approx(p * (x * k) ** (p - 1) * k)
    assert mlir_ad.grad(m.scaled)(x, k, 0) == (0.0,)


def test_truncation_from_f64_to_half_types():
    m = mlir_ad.compile(BUILTINS["truncf"])
    assert m.to_half(1.0 + 2 ** -12) == 1.0
    assert m.to_half(0.1) == float(np.float16(0.1))
    x = 0.8
    h = float(np.float16(x))
    assert m.half_loss(x) == pytest.approx(np.sin(h) * x, rel=2e-3)
    # d/dx [sin(trunc(x)) x] with the derivative of the rounding taken as 1.
    (g,) = mlir_ad.grad(m.half_loss)(x)
    assert g == pytest.approx(np.cos(h) * x + np.sin(h), rel=3e-3)


def test_truncation_from_f64_to_bf16():
    # Truncating f64 to bf16 calls __truncdfbf2 (compiler-rt).
    m = mlir_ad.compile(BUILTINS["truncf_bf16"])
    assert m.to_brain(3.0) == 3.0
    assert m.to_brain(1.0 + 2 ** -9) == 1.0
    # Rounded once, to nearest (not through f32, which would round this to
    # the tie 1 + 2^-8 and then to even, 1.0).
    assert m.to_brain(1.0 + 2 ** -8 + 2 ** -30) == 1.0 + 2 ** -7


def test_integer_power():
    m = mlir_ad.compile(BUILTINS["ipowi"])
    assert m.ipow(1.5, 3) == 13.5
    assert mlir_ad.grad(m.ipow)(1.5, 3) == (9.0,)


def test_index_tensor_gather(m):
    idx = np.array([2, 0, 2, 2, 4])
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert m.index_tensor(idx, v) == 9 + 1 + 9 + 9 + 25
    (g,) = mlir_ad.grad(m.index_tensor)(idx, v)
    np.testing.assert_array_equal(g, [2.0, 0.0, 18.0, 0.0, 10.0])
    with pytest.raises(TypeError):
        m.index_tensor(idx.astype(np.int32), v)


def test_function_without_results(m):
    assert m.nothing(1.0, np.zeros(3)) is None
    results, pullback = mlir_ad.vjp(m.nothing)(1.0, np.zeros(3))
    assert results is None
    gx, gv = pullback()
    assert gx == 0.0
    np.testing.assert_array_equal(gv, np.zeros(3))


def test_many_mixed_results(m):
    r = m.many(1.25)
    assert len(r) == 10
    assert r[0] == 1.25 and isinstance(r[0], float)
    assert r[1] == -5
    assert r[2] == 1.25
    assert r[3] is True
    np.testing.assert_array_equal(r[4], [1.25, 1.25])
    assert r[5] == 123456789012
    assert r[6] == 1.25
    np.testing.assert_array_equal(r[7], np.array([[1.25, 2.5], [2.5, 1.25]], np.float32))
    assert r[7].dtype == np.float32
    assert r[8] == 42
    assert r[9] == -300
    _, pullback = mlir_ad.vjp(m.many)(1.25)
    # Cotangents of the float results: f64, f32, tensor<2xf64>, f16,
    # tensor<2x2xf32>.
    (g,) = pullback(1.0, 2.0, np.array([3.0, 4.0]), 5.0,
                    np.array([[1.0, 1.0], [1.0, 1.0]], np.float32))
    assert g == pytest.approx(1 + 2 + 7 + 5 + 6)


def test_f16_scalars(m):
    x, y = 0.5, 2.0
    assert m.half(x, y) == pytest.approx(np.sin(x) * y, rel=2e-3)
    gx, gy = mlir_ad.grad(m.half)(x, y)
    assert gx == pytest.approx(np.cos(x) * y, rel=2e-3)
    assert gy == pytest.approx(np.sin(x), rel=2e-3)
    # Values are rounded to f16 on the way in.
    assert m.half(np.float16(0.5), np.float16(2.0)) == m.half(0.5, 2.0)


def test_f16_tensors(m):
    x = np.array([0.5, 1.5, 3.0], np.float16)
    assert m.half_tensor(x) == pytest.approx(np.exp(0.5) * 1.5, rel=2e-3)
    (g,) = mlir_ad.grad(m.half_tensor)(x)
    assert g.dtype == np.float16
    assert_grads_close((g,), (np.array([np.exp(0.5) * 1.5, np.exp(0.5), 0.0]),),
                       rtol=3e-3, atol=1e-3)
    t, pullback = mlir_ad.vjp(m.half_map)(x)
    assert t.dtype == np.float16
    np.testing.assert_allclose(t, np.tanh(x.astype(np.float64)), rtol=2e-3)
    (g,) = pullback(np.ones(3, np.float16))
    np.testing.assert_allclose(g, 1 - np.tanh(x.astype(np.float64)) ** 2,
                               rtol=5e-3, atol=1e-3)
    with pytest.raises(TypeError, match="float16"):
        m.half_tensor(x.astype(np.float32))


def test_bf16_scalars(m):
    assert m.brain(3.0) == 9.0
    assert mlir_ad.grad(m.brain)(3.0) == (6.0,)
    assert mlir_ad.value_and_grad(m.brain, wrt=0)(1.5) == (2.25, 3.0)
    # bf16 keeps 8 bits of mantissa.
    assert m.brain(1.0 + 2 ** -9) == 1.0


def test_bf16_tensors_are_refused_clearly(m):
    with pytest.raises(TypeError, match="bf16|bfloat16"):
        m.brain_tensor(np.ones(2))


def test_many_tensor_arguments_and_results():
    # Eight rank-2 descriptors in and out (a result struct of 448 bytes).
    n = 8
    args = ", ".join(f"%a{i}: tensor<?x?xf64>" for i in range(n))
    body = "\n".join(f"  %s{i} = math.sin %a{i} : tensor<?x?xf64>" for i in range(n))
    names = ", ".join(f"%s{i}" for i in range(n))
    types = ", ".join(["tensor<?x?xf64>"] * n)
    m = mlir_ad.compile(f"func.func @many({args}) -> ({types}) {{\n{body}\n"
                        f"  return {names} : {types}\n}}\n")
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((i + 1, 8 - i)) for i in range(n)]
    out = m.many(*xs)
    assert len(out) == n
    for o, x in zip(out, xs):
        np.testing.assert_allclose(o, np.sin(x), rtol=1e-15)
    _, pullback = mlir_ad.vjp(m.many)(*xs)
    cts = [rng.standard_normal(x.shape) for x in xs]
    grads = pullback(*cts)
    for g, c, x in zip(grads, cts, xs):
        np.testing.assert_allclose(g, c * np.cos(x), rtol=1e-14)
