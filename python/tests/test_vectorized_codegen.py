"""The tiled, vectorized code ad-lower-to-llvm generates (ad-vectorize,
ad-vector-math) against numpy: contractions in every operand layout (A B,
A^T B, A B^T, A^T B^T, batched, matvec, vecmat, dot), with sizes that are
multiples of the register tiles, smaller than them and with remainders in
every dimension, static and dynamic; elementwise ops, broadcasts and
reductions with remainders; element types of 1, 8, 16, 32 and 64 bits; the
math functions libmvec computes, with their special values; and gradients
of a small network through all of it."""

import numpy as np
import pytest

import mlir_ad
from conftest import numerical_grad

# Contraction layouts: (lhs map, rhs map, output map, iterator types) over
# (d0, d1, d2); shapes are computed from M, N, K.
LAYOUTS = {
    "ab": ("(d0, d2)", "(d2, d1)", "(d0, d1)", "parallel, parallel, reduction"),
    "atb": ("(d2, d0)", "(d2, d1)", "(d0, d1)", "parallel, parallel, reduction"),
    "abt": ("(d0, d2)", "(d1, d2)", "(d0, d1)", "parallel, parallel, reduction"),
    "atbt": ("(d2, d0)", "(d1, d2)", "(d0, d1)", "parallel, parallel, reduction"),
    # The adjoint form: reduction loop first, output transposed.
    "red_first": ("(d0, d2)", "(d0, d1)", "(d2, d1)",
                  "reduction, parallel, parallel"),
}


def _contraction_source(layout, lhs_shape, rhs_shape, out_shape, t="f64"):
    lhs_map, rhs_map, out_map, iterators = LAYOUTS[layout]
    iters = ", ".join(f'"{i.strip()}"' for i in iterators.split(","))

    def ty(shape):
        return "tensor<" + "x".join(str(s) for s in shape) + f"x{t}>"

    dyn = any(s == "?" for s in out_shape)
    sizes = ""
    if dyn:
        # The output's sizes come from the inputs' (out = f(lhs, rhs) dims).
        sizes = "%c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
    return f"""
func.func @f(%a: {ty(lhs_shape)}, %b: {ty(rhs_shape)}, %o: {ty(out_shape)}) -> {ty(out_shape)} {{
  %c = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> {lhs_map}>,
      affine_map<(d0, d1, d2) -> {rhs_map}>, affine_map<(d0, d1, d2) -> {out_map}>],
      iterator_types = [{iters}]}}
      ins(%a, %b : {ty(lhs_shape)}, {ty(rhs_shape)}) outs(%o : {ty(out_shape)}) {{
  ^bb0(%x: {t}, %y: {t}, %acc: {t}):
    %m = arith.mulf %x, %y : {t}
    %s = arith.addf %acc, %m : {t}
    linalg.yield %s : {t}
  }} -> {ty(out_shape)}
  return %c : {ty(out_shape)}
}}
"""


def _operands(layout, m, n, k, rng, dtype=np.float64):
    shapes = {
        "ab": ((m, k), (k, n), (m, n)),
        "atb": ((k, m), (k, n), (m, n)),
        "abt": ((m, k), (n, k), (m, n)),
        "atbt": ((k, m), (n, k), (m, n)),
        "red_first": ((m, k), (m, n), (k, n)),
    }[layout]
    a, b, o = (rng.standard_normal(s).astype(dtype) for s in shapes)
    expected = {
        "ab": lambda: o + a @ b,
        "atb": lambda: o + a.T @ b,
        "abt": lambda: o + a @ b.T,
        "atbt": lambda: o + a.T @ b.T,
        "red_first": lambda: o + a.T @ b,
    }[layout]()
    return shapes, (a, b, o), expected


# (200, 19, 600) and (97, 10, 257): more rows and reduction steps than one
# cache block holds (96 or 128 rows, 256 steps), with partial last blocks.
SIZES = [(16, 32, 8), (8, 16, 1), (3, 5, 7), (21, 37, 13), (64, 48, 100),
         (1, 40, 9), (9, 1, 3), (200, 19, 600), (97, 10, 257)]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("m,n,k", SIZES)
@pytest.mark.parametrize("dynamic", [False, True])
def test_contraction_layouts(layout, m, n, k, dynamic):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    shapes, args, expected = _operands(layout, m, n, k, rng)
    if dynamic:
        shapes = tuple(tuple("?" for _ in s) for s in shapes)
    mod = mlir_ad.compile(_contraction_source(layout, *shapes))
    np.testing.assert_allclose(mod.f(*args), expected, rtol=1e-12, atol=1e-12)


# 24, 20 and 28 columns: between one and two vectors of 16 lanes (AVX-512),
# a tile of one vector and a remainder.
@pytest.mark.parametrize("m,n,k", [(16, 32, 8), (13, 35, 6), (100, 40, 300),
                                   (40, 24, 64), (33, 20, 17), (16, 28, 5)])
def test_contraction_f32(m, n, k):
    rng = np.random.default_rng(1)
    shapes, args, expected = _operands("abt", m, n, k, rng, np.float32)
    mod = mlir_ad.compile(_contraction_source("abt", *shapes, t="f32"))
    np.testing.assert_allclose(mod.f(*args), expected, rtol=1e-5, atol=1e-5)


# At the thresholds of the transposed copies: the narrow input of A^T B
# is copied with the reduction innermost when its rows are a multiple of
# 4 KB apart (static: 512 f64 or 1024 f32 columns), from 8 steps (7: read
# in place) and four strips of the wide dimension; the strips of B^T are
# copied transposed one at a time from 32 rows and 16 steps (31 rows: all
# of B^T first), up to one cache block of rows (200: all of B^T first),
# with partial last strips (33, 40, 17 columns) and reductions longer than
# a cache block (300); the MLP adjoint's 64 x 1024 x 64.
PACKED_SIZES = [(32, 33, 16), (31, 40, 16), (512, 64, 8), (512, 64, 7),
                (1024, 128, 9), (65, 17, 300), (200, 40, 20), (64, 1024, 64)]


@pytest.mark.parametrize("layout", ["atb", "abt", "atbt", "red_first"])
@pytest.mark.parametrize("m,n,k", PACKED_SIZES)
@pytest.mark.parametrize("t,dtype,tol", [("f64", np.float64, 1e-12),
                                         ("f32", np.float32, 1e-4)])
@pytest.mark.parametrize("dynamic", [False, True])
def test_transposed_copies(layout, m, n, k, t, dtype, tol, dynamic):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    shapes, args, expected = _operands(layout, m, n, k, rng, dtype)
    if dynamic:
        shapes = tuple(tuple("?" for _ in s) for s in shapes)
    mod = mlir_ad.compile(_contraction_source(layout, *shapes, t=t))
    np.testing.assert_allclose(mod.f(*args), expected, rtol=tol,
                               atol=tol * np.sqrt(k))


# Static widths of the output between and around vectors (8 f64 or 16 f32
# lanes with AVX-512; 4 and 8 with AVX2): register tiles of a divisor of at
# most one vector, of one vector and a remainder, or of two vectors.
@pytest.mark.parametrize("layout", ["ab", "abt", "atb"])
@pytest.mark.parametrize("n", [10, 12, 14, 20, 23, 24, 28, 40, 48])
@pytest.mark.parametrize("t,dtype,tol", [("f64", np.float64, 1e-12),
                                         ("f32", np.float32, 1e-4)])
def test_static_widths(layout, n, t, dtype, tol):
    m, k = 37, 19
    rng = np.random.default_rng(n)
    shapes, args, expected = _operands(layout, m, n, k, rng, dtype)
    mod = mlir_ad.compile(_contraction_source(layout, *shapes, t=t))
    np.testing.assert_allclose(mod.f(*args), expected, rtol=tol,
                               atol=tol * np.sqrt(k))


NAMED = """
func.func @matmul(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>, %o: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf64>, tensor<?x?xf64>) outs(%o : tensor<?x?xf64>) -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}
func.func @batch(%a: tensor<3x10x7xf64>, %b: tensor<3x7x20xf64>, %o: tensor<3x10x20xf64>) -> tensor<3x10x20xf64> {
  %r = linalg.batch_matmul ins(%a, %b : tensor<3x10x7xf64>, tensor<3x7x20xf64>) outs(%o : tensor<3x10x20xf64>) -> tensor<3x10x20xf64>
  return %r : tensor<3x10x20xf64>
}
func.func @matvec(%a: tensor<?x?xf64>, %x: tensor<?xf64>, %o: tensor<?xf64>) -> tensor<?xf64> {
  %r = linalg.matvec ins(%a, %x : tensor<?x?xf64>, tensor<?xf64>) outs(%o : tensor<?xf64>) -> tensor<?xf64>
  return %r : tensor<?xf64>
}
func.func @vecmat(%x: tensor<?xf64>, %a: tensor<?x?xf64>, %o: tensor<?xf64>) -> tensor<?xf64> {
  %r = linalg.vecmat ins(%x, %a : tensor<?xf64>, tensor<?x?xf64>) outs(%o : tensor<?xf64>) -> tensor<?xf64>
  return %r : tensor<?xf64>
}
func.func @dot(%x: tensor<?xf64>, %y: tensor<?xf64>, %o: tensor<f64>) -> tensor<f64> {
  %r = linalg.dot ins(%x, %y : tensor<?xf64>, tensor<?xf64>) outs(%o : tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}
"""


@pytest.fixture(scope="module")
def named():
    return mlir_ad.compile(NAMED)


@pytest.mark.parametrize("m,n,k", SIZES)
def test_named_contractions(named, m, n, k):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    o = rng.standard_normal((m, n))
    np.testing.assert_allclose(named.matmul(a, b, o), o + a @ b, rtol=1e-12,
                               atol=1e-12)
    x, y = rng.standard_normal(k), rng.standard_normal(m)
    np.testing.assert_allclose(named.matvec(a, x, y), y + a @ x, rtol=1e-12,
                               atol=1e-12)
    z = rng.standard_normal(k)
    np.testing.assert_allclose(named.vecmat(y, a, z), z + y @ a, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(named.dot(x, z, np.array(1.5)),
                               1.5 + x @ z, rtol=1e-12)


def test_batch_matmul(named):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 10, 7)), rng.standard_normal((3, 7, 20))
    o = rng.standard_normal((3, 10, 20))
    np.testing.assert_allclose(named.batch(a, b, o), o + a @ b, rtol=1e-12)


# Generics shaped like contractions but not contractions: an elementwise
# function of the inputs combined into the output at each reduction step.
# They are tiled like contractions (ad-vectorize's outer-product tiles): the
# results must be those of the scalar loops, in every size and layout.
OUTER = """
#pl = affine_map<(i, j, l) -> (i, l)>
#cl = affine_map<(i, j, l) -> (j, l)>
#lj = affine_map<(i, j, l) -> (l, j)>
#ij = affine_map<(i, j, l) -> (i, j)>
#sc = affine_map<(i, j, l) -> ()>
func.func @distances(%p: tensor<?x?xT>, %c: tensor<?x?xT>, %o: tensor<?x?xT>) -> tensor<?x?xT> {
  %r = linalg.generic {indexing_maps = [#pl, #cl, #ij], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %c : tensor<?x?xT>, tensor<?x?xT>) outs(%o : tensor<?x?xT>) {
  ^bb0(%pv: T, %cv: T, %acc: T):
    %d = arith.subf %cv, %pv : T
    %sq = arith.mulf %d, %d : T
    %s = arith.addf %acc, %sq : T
    linalg.yield %s : T
  } -> tensor<?x?xT>
  return %r : tensor<?x?xT>
}
func.func @max_products(%a: tensor<?x?xT>, %b: tensor<?x?xT>, %s: T, %o: tensor<?x?xT>) -> tensor<?x?xT> {
  %r = linalg.generic {indexing_maps = [#pl, #lj, #sc, #ij], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b, %s : tensor<?x?xT>, tensor<?x?xT>, T) outs(%o : tensor<?x?xT>) {
  ^bb0(%av: T, %bv: T, %sv: T, %acc: T):
    %m = arith.mulf %av, %bv : T
    %d = arith.subf %m, %sv : T
    %x = arith.maximumf %acc, %d : T
    linalg.yield %x : T
  } -> tensor<?x?xT>
  return %r : tensor<?x?xT>
}
func.func @centered(%m: tensor<?x?x?xT>, %x: tensor<?x?xT>, %mu: tensor<?x?xT>, %o: tensor<?x?x?xT>) -> tensor<?x?x?xT> {
  %r = linalg.generic {indexing_maps = [affine_map<(n, k, j, i) -> (k, j, i)>, affine_map<(n, k, j, i) -> (n, i)>, affine_map<(n, k, j, i) -> (k, i)>, affine_map<(n, k, j, i) -> (n, k, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%m, %x, %mu : tensor<?x?x?xT>, tensor<?x?xT>, tensor<?x?xT>) outs(%o : tensor<?x?x?xT>) {
  ^bb0(%mv: T, %xv: T, %muv: T, %acc: T):
    %c = arith.subf %xv, %muv : T
    %p = arith.mulf %mv, %c : T
    %s = arith.addf %acc, %p : T
    linalg.yield %s : T
  } -> tensor<?x?x?xT>
  return %r : tensor<?x?x?xT>
}
"""


@pytest.mark.parametrize("t,dtype,rtol", [("f64", np.float64, 1e-13),
                                          ("f32", np.float32, 1e-5)])
@pytest.mark.parametrize("m,n,k", [(16, 32, 8), (3, 5, 7), (21, 37, 13),
                                   (9, 17, 1), (8, 16, 20), (40, 3, 2)])
def test_outer_product_tiles(t, dtype, rtol, m, n, k):
    mod = mlir_ad.compile(OUTER.replace("T", t))
    rng = np.random.default_rng(m * 100 + n + k)
    p = rng.standard_normal((m, k)).astype(dtype)
    c = rng.standard_normal((n, k)).astype(dtype)
    o = rng.standard_normal((m, n)).astype(dtype)
    expected = o + ((c[None, :, :] - p[:, None, :]) ** 2).sum(-1)
    np.testing.assert_allclose(mod.distances(p, c, o), expected, rtol=rtol)
    b = rng.standard_normal((k, n)).astype(dtype)
    s = 0.25
    expected = np.maximum(o, (p[:, :, None] * b[None, :, :] - s).max(1))
    np.testing.assert_allclose(mod.max_products(p, b, s, o), expected,
                               rtol=rtol)
    # Batch k = 3 of (j: n, i: k) matrices applied to centered rows of x.
    mm = rng.standard_normal((3, n, k)).astype(dtype)
    mu = rng.standard_normal((3, k)).astype(dtype)
    o3 = rng.standard_normal((m, 3, n)).astype(dtype)
    centered = p[:, None, :] - mu[None, :, :]
    expected = o3 + np.einsum("kji,nki->nkj", mm, centered)
    np.testing.assert_allclose(mod.centered(mm, p, mu, o3), expected,
                               rtol=rtol, atol=rtol)


ELEMENTWISE = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>
func.func @bias_tanh(%x: tensor<?x?xT>, %b: tensor<?xT>) -> tensor<?x?xT> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x?xT>
  %n = tensor.dim %x, %c1 : tensor<?x?xT>
  %e = tensor.empty(%m, %n) : tensor<?x?xT>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<?x?xT>, tensor<?xT>) outs(%e : tensor<?x?xT>) {
  ^bb0(%a: T, %c: T, %o: T):
    %s = arith.addf %a, %c : T
    %t = math.tanh %s : T
    linalg.yield %t : T
  } -> tensor<?x?xT>
  return %r : tensor<?x?xT>
}
// Row sums and column sums at once (one reduction and one parallel output).
func.func @sums(%x: tensor<?x?xT>, %rows: tensor<?xT>, %cols: tensor<?xT>) -> (tensor<?xT>, tensor<?xT>) {
  %r:2 = linalg.generic {indexing_maps = [#id, #col, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x?xT>) outs(%rows, %cols : tensor<?xT>, tensor<?xT>) {
  ^bb0(%a: T, %r: T, %c: T):
    %s = arith.addf %r, %a : T
    %t = arith.addf %c, %a : T
    linalg.yield %s, %t : T, T
  } -> (tensor<?xT>, tensor<?xT>)
  return %r#0, %r#1 : tensor<?xT>, tensor<?xT>
}
func.func @total(%x: tensor<?x?xT>) -> T {
  %z = arith.constant 0.0 : T
  %init = tensor.from_elements %z : tensor<T>
  %r = linalg.reduce ins(%x : tensor<?x?xT>) outs(%init : tensor<T>) dimensions = [0, 1]
    (%a: T, %b: T) {
      %s = arith.addf %a, %b : T
      linalg.yield %s : T
    }
  %v = tensor.extract %r[] : tensor<T>
  return %v : T
}
func.func @rowmax(%x: tensor<?x?xT>, %init: tensor<?xT>) -> tensor<?xT> {
  %r = linalg.reduce ins(%x : tensor<?x?xT>) outs(%init : tensor<?xT>) dimensions = [1]
    (%a: T, %b: T) {
      %s = arith.maximumf %a, %b : T
      linalg.yield %s : T
    }
  return %r : tensor<?xT>
}
"""


@pytest.mark.parametrize("t,dtype,tol", [("f64", np.float64, 1e-13),
                                         ("f32", np.float32, 2e-6),
                                         ("f16", np.float16, 2e-3)])
@pytest.mark.parametrize("m,n", [(1, 1), (3, 7), (5, 8), (4, 16), (9, 33),
                                 (17, 100)])
def test_elementwise_and_reductions(t, dtype, tol, m, n):
    mod = mlir_ad.compile(ELEMENTWISE.replace("T", t))
    rng = np.random.default_rng(m * n)
    x = rng.standard_normal((m, n)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    np.testing.assert_allclose(mod.bias_tanh(x, b), np.tanh(x + b),
                               rtol=tol, atol=tol)
    rows, cols = rng.standard_normal(m).astype(dtype), rng.standard_normal(
        n).astype(dtype)
    r, c = mod.sums(x, rows, cols)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(r, rows + x64.sum(1), rtol=tol * 10,
                               atol=tol * 10)
    np.testing.assert_allclose(c, cols + x64.sum(0), rtol=tol * 10,
                               atol=tol * 10)
    np.testing.assert_allclose(mod.total(x), x64.sum(), rtol=tol * 10,
                               atol=tol * m * n)
    init = np.full(m, -np.inf, dtype)
    np.testing.assert_array_equal(mod.rowmax(x, init), x.max(1))


INTEGERS = """
func.func @ints(%a: tensor<?xI>, %b: tensor<?xI>, %mask: tensor<?xi1>) -> (tensor<?xI>, tensor<?xi1>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xI>
  %e = tensor.empty(%n) : tensor<?xI>
  %eb = tensor.empty(%n) : tensor<?xi1>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a, %b, %mask : tensor<?xI>, tensor<?xI>, tensor<?xi1>) outs(%e, %eb : tensor<?xI>, tensor<?xi1>) {
  ^bb0(%x: I, %y: I, %m: i1, %o: I, %ob: i1):
    %p = arith.muli %x, %y : I
    %s = arith.select %m, %p, %x : I
    %g = arith.cmpi sgt, %s, %y : I
    linalg.yield %s, %g : I, i1
  } -> (tensor<?xI>, tensor<?xi1>)
  return %r#0, %r#1 : tensor<?xI>, tensor<?xi1>
}
func.func @scale(%a: tensor<?xI>) -> tensor<?xI> {
  %r = arith.addi %a, %a : tensor<?xI>
  return %r : tensor<?xI>
}
"""


@pytest.mark.parametrize("t,dtype", [("i8", np.int8), ("i16", np.int16),
                                     ("i32", np.int32), ("i64", np.int64)])
@pytest.mark.parametrize("n", [1, 7, 16, 67])
def test_integer_and_boolean_elements(t, dtype, n):
    mod = mlir_ad.compile(INTEGERS.replace("I", t))
    rng = np.random.default_rng(n)
    a = rng.integers(-9, 9, n).astype(dtype)
    b = rng.integers(-9, 9, n).astype(dtype)
    mask = rng.integers(0, 2, n).astype(bool)
    s, g = mod.ints(a, b, mask)
    expected = np.where(mask, a * b, a).astype(dtype)
    np.testing.assert_array_equal(s, expected)
    np.testing.assert_array_equal(g, expected > b)
    np.testing.assert_array_equal(mod.scale(a), (a + a).astype(dtype))


UNARY_SOURCE = """
func.func @f(%x: tensor<?xT>) -> tensor<?xT> {
  %r = math.OP %x : tensor<?xT>
  return %r : tensor<?xT>
}
"""

BINARY_SOURCE = """
func.func @g(%x: tensor<?xT>, %y: tensor<?xT>) -> tensor<?xT> {
  %r = math.OP %x, %y : tensor<?xT>
  return %r : tensor<?xT>
}
"""


def _math(source, t, op):
    return mlir_ad.compile(source.replace("T", t).replace("OP", op))


UNARY = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "cbrt": np.cbrt,
}


def _domain(op, rng, n, dtype):
    x = rng.uniform(-3, 3, n)
    if op in ("log", "log2", "log10"):
        x = np.abs(x) + 1e-3
    if op == "log1p":
        x = np.abs(x) - 0.9
    if op in ("asin", "acos", "atanh"):
        x = x / 3.1
    if op == "acosh":
        x = np.abs(x) + 1
    return x.astype(dtype)


@pytest.mark.parametrize("t,dtype,rtol", [("f64", np.float64, 1e-14),
                                          ("f32", np.float32, 3e-6)])
@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("n", [1, 3, 8, 21])
def test_vector_math_matches_numpy(t, dtype, rtol, op, n):
    mod = _math(UNARY_SOURCE, t, op)
    rng = np.random.default_rng(n)
    x = _domain(op, rng, n, dtype)
    with np.errstate(all="ignore"):
        expected = UNARY[op](x.astype(np.float64))
    np.testing.assert_allclose(mod.f(x), expected, rtol=rtol, atol=rtol * 10)


@pytest.mark.parametrize("t,dtype,rtol", [("f64", np.float64, 1e-14),
                                          ("f32", np.float32, 3e-6)])
def test_vector_math_binary_and_erf(t, dtype, rtol):
    from math import erf, erfc
    rng = np.random.default_rng(5)
    x = rng.uniform(0.1, 3, 19).astype(dtype)
    y = rng.uniform(-3, 3, 19).astype(dtype)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_allclose(_math(BINARY_SOURCE, t, "powf").g(x, y),
                               x64 ** y64, rtol=rtol * 10)
    np.testing.assert_allclose(_math(BINARY_SOURCE, t, "atan2").g(x, y),
                               np.arctan2(x64, y64), rtol=rtol * 10)
    for op, reference in [("erf", erf), ("erfc", erfc)]:
        np.testing.assert_allclose(
            _math(UNARY_SOURCE, t, op).f(y), [reference(v) for v in y64],
            rtol=rtol * 10, atol=rtol)


def test_vector_math_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 800.0, -800.0, 1e-310,
                  709.7, -745.2])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(_math(UNARY_SOURCE, "f64", "exp").f(x),
                                   np.exp(x), rtol=1e-14)
    x = np.array([0.0, 1.0, np.inf, -1.0, np.nan, 1e-310, 2.0, 0.5, 1e300])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(_math(UNARY_SOURCE, "f64", "log").f(x),
                                   np.log(x), rtol=1e-14)


NETWORK = """
func.func @loss(%x: tensor<?x?xf64>, %w1: tensor<?x?xf64>, %b1: tensor<?xf64>, %w2: tensor<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %m = tensor.dim %x, %c0 : tensor<?x?xf64>
  %h = tensor.dim %w1, %c1 : tensor<?x?xf64>
  %o = tensor.dim %w2, %c1 : tensor<?x?xf64>
  %e1 = tensor.empty(%m, %h) : tensor<?x?xf64>
  %f1 = linalg.fill ins(%z : f64) outs(%e1 : tensor<?x?xf64>) -> tensor<?x?xf64>
  %a1 = linalg.matmul ins(%x, %w1 : tensor<?x?xf64>, tensor<?x?xf64>) outs(%f1 : tensor<?x?xf64>) -> tensor<?x?xf64>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a1, %b1 : tensor<?x?xf64>, tensor<?xf64>) outs(%e1 : tensor<?x?xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %s = arith.addf %a, %b : f64
    %th = math.tanh %s : f64
    %ex = math.exp %th : f64
    linalg.yield %ex : f64
  } -> tensor<?x?xf64>
  %e2 = tensor.empty(%m, %o) : tensor<?x?xf64>
  %f2 = linalg.fill ins(%z : f64) outs(%e2 : tensor<?x?xf64>) -> tensor<?x?xf64>
  %a2 = linalg.matmul ins(%t, %w2 : tensor<?x?xf64>, tensor<?x?xf64>) outs(%f2 : tensor<?x?xf64>) -> tensor<?x?xf64>
  %init = tensor.from_elements %z : tensor<f64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%a2 : tensor<?x?xf64>) outs(%init : tensor<f64>) {
  ^bb0(%a: f64, %acc: f64):
    %l = math.log1p %a : f64
    %sq = arith.mulf %l, %l : f64
    %s = arith.addf %acc, %sq : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  %v = tensor.extract %r[] : tensor<f64>
  return %v : f64
}
"""


@pytest.mark.parametrize("m,d,h,o", [(5, 3, 4, 2), (9, 17, 33, 10),
                                     (16, 8, 32, 16)])
def test_network_gradient(m, d, h, o):
    mod = mlir_ad.compile(NETWORK)
    rng = np.random.default_rng(m + d + h + o)
    x = rng.uniform(0, 0.5, (m, d))
    w1 = rng.uniform(-0.3, 0.3, (d, h))
    b1 = rng.uniform(-0.1, 0.1, h)
    w2 = rng.uniform(0, 0.2, (h, o))

    def reference(x, w1, b1, w2):
        return np.sum(np.log1p(np.exp(np.tanh(x @ w1 + b1)) @ w2) ** 2)

    args = (x, w1, b1, w2)
    assert mod.loss(*args) == pytest.approx(reference(*args), rel=1e-12)
    grads = mlir_ad.grad(mod.loss, wrt=[0, 1, 2, 3])(*args)
    expected = numerical_grad(reference, args, [0, 1, 2, 3])
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


NAMED_ELEMENTWISE = """
func.func @row_max(%x: tensor<?x?xT>, %m: tensor<?xT>) -> tensor<?xT> {
  %r = linalg.reduce ins(%x : tensor<?x?xT>) outs(%m : tensor<?xT>) dimensions = [1]
    (%in: T, %acc: T) {
      %y = arith.maximumf %in, %acc : T
      linalg.yield %y : T
    }
  return %r : tensor<?xT>
}
func.func @exp_sum(%x: tensor<3xNxT>, %y: tensor<3xNxT>, %o: tensor<3xNxT>) -> tensor<3xNxT> {
  %r = linalg.map ins(%x, %y : tensor<3xNxT>, tensor<3xNxT>) outs(%o : tensor<3xNxT>)
    (%a: T, %b: T, %out: T) {
      %e = math.exp %a : T
      %s = arith.addf %e, %b : T
      linalg.yield %s : T
    }
  return %r : tensor<3xNxT>
}
func.func @rows(%v: tensor<NxT>, %o: tensor<3xNxT>) -> tensor<3xNxT> {
  %r = linalg.broadcast ins(%v : tensor<NxT>) outs(%o : tensor<3xNxT>) dimensions = [0]
  return %r : tensor<3xNxT>
}
"""


@pytest.mark.parametrize("t,dtype,rtol", [("f64", np.float64, 1e-14),
                                          ("f32", np.float32, 4e-6)])
@pytest.mark.parametrize("n", [1, 7, 17, 40, 1000])
def test_named_elementwise_ops_with_remainders(t, dtype, rtol, n):
    # Tiles of linalg.reduce, linalg.map and linalg.broadcast with a
    # remainder along the vector loop (their main tiles are vectorized once
    # the casts canonicalization leaves are folded into them).
    mod = mlir_ad.compile(NAMED_ELEMENTWISE.replace("T", t)
                          .replace("N", str(n)))
    rng = np.random.default_rng(n)
    x = rng.standard_normal((3, n)).astype(dtype)
    y = rng.standard_normal((3, n)).astype(dtype)
    x[1, n // 2] = np.nan if n > 1 else x[1, 0]
    with np.errstate(invalid="ignore"):
        expected_max = np.max(x, axis=1, initial=-np.inf)
    np.testing.assert_array_equal(
        mod.row_max(x, np.full(3, -np.inf, dtype)), expected_max)
    np.testing.assert_allclose(mod.exp_sum(x, y, np.zeros((3, n), dtype)),
                               np.exp(x) + y, rtol=rtol, atol=10 * rtol)
    v = rng.standard_normal(n).astype(dtype)
    np.testing.assert_array_equal(mod.rows(v, np.zeros((3, n), dtype)),
                                  np.broadcast_to(v, (3, n)))


MLP = """
func.func @loss(%x: tensor<?x?xT>, %w1: tensor<?x?xT>, %b1: tensor<?xT>, %w2: tensor<?x?xT>, %t: tensor<?x?xT>) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : T
  %half = arith.constant 0.5 : T
  %m = tensor.dim %x, %c0 : tensor<?x?xT>
  %h = tensor.dim %w1, %c1 : tensor<?x?xT>
  %o = tensor.dim %w2, %c1 : tensor<?x?xT>
  %e1 = tensor.empty(%m, %h) : tensor<?x?xT>
  %f1 = linalg.fill ins(%z : T) outs(%e1 : tensor<?x?xT>) -> tensor<?x?xT>
  %a1 = linalg.matmul ins(%x, %w1 : tensor<?x?xT>, tensor<?x?xT>) outs(%f1 : tensor<?x?xT>) -> tensor<?x?xT>
  %th = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a1, %b1 : tensor<?x?xT>, tensor<?xT>) outs(%e1 : tensor<?x?xT>) {
  ^bb0(%a: T, %b: T, %out: T):
    %s = arith.addf %a, %b : T
    %y = math.tanh %s : T
    linalg.yield %y : T
  } -> tensor<?x?xT>
  %e2 = tensor.empty(%m, %o) : tensor<?x?xT>
  %f2 = linalg.fill ins(%z : T) outs(%e2 : tensor<?x?xT>) -> tensor<?x?xT>
  %a2 = linalg.matmul ins(%th, %w2 : tensor<?x?xT>, tensor<?x?xT>) outs(%f2 : tensor<?x?xT>) -> tensor<?x?xT>
  %init = tensor.from_elements %z : tensor<T>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%a2, %t : tensor<?x?xT>, tensor<?x?xT>) outs(%init : tensor<T>) {
  ^bb0(%a: T, %b: T, %acc: T):
    %d = arith.subf %a, %b : T
    %sq = arith.mulf %d, %d : T
    %hs = arith.mulf %sq, %half : T
    %s = arith.addf %acc, %hs : T
    linalg.yield %s : T
  } -> tensor<T>
  %v = tensor.extract %r[] : tensor<T>
  return %v : T
}
"""


@pytest.mark.parametrize("t,dtype,rtol", [("f64", np.float64, 1e-11),
                                          ("f32", np.float32, 2e-4)])
@pytest.mark.parametrize("m,d,h,o", [(64, 96, 128, 80), (33, 40, 37, 64),
                                     (40, 7, 300, 33)])
def test_mlp_gradient_matches_its_adjoint(t, dtype, rtol, m, d, h, o):
    # Large enough for the adjoint's contractions to take the transposed
    # copies (X^T dZ and H^T dY: the narrow input; dY W2^T: strips of W2
    # copied transposed), checked against the adjoint written with numpy.
    mod = mlir_ad.compile(MLP.replace("T", t))
    rng = np.random.default_rng(m + d + h + o)
    x = rng.standard_normal((m, d)).astype(dtype) * 0.3
    w1 = rng.standard_normal((d, h)).astype(dtype) * 0.2
    b1 = rng.standard_normal(h).astype(dtype) * 0.1
    w2 = rng.standard_normal((h, o)).astype(dtype) * 0.1
    target = rng.standard_normal((m, o)).astype(dtype)
    grads = mlir_ad.grad(mod.loss, wrt=(0, 1, 2, 3))(x, w1, b1, w2, target)
    x64, w164, b164, w264, t64 = (a.astype(np.float64)
                                  for a in (x, w1, b1, w2, target))
    hid = np.tanh(x64 @ w164 + b164)
    dy = hid @ w264 - t64
    dz = (dy @ w264.T) * (1 - hid * hid)
    expected = (dz @ w164.T, x64.T @ dz, dz.sum(0), hid.T @ dy)
    for g, e in zip(grads, expected):
        scale = np.abs(e).max()
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * scale)


INDEX = """
func.func @scale_by_column(%x: tensor<3x16xf64>) -> tensor<3x16xf64> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%x : tensor<3x16xf64>) {
  ^bb0(%o: f64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %f = arith.sitofp %ji : i64 to f64
    %g = arith.mulf %o, %f : f64
    linalg.yield %g : f64
  } -> tensor<3x16xf64>
  return %r : tensor<3x16xf64>
}
func.func @sum_of_column_indices(%x: tensor<3x16xf64>, %o: tensor<3xf64>) -> tensor<3xf64> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x16xf64>) outs(%o : tensor<3xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %f = arith.sitofp %ji : i64 to f64
    %g = arith.addf %f, %acc : f64
    linalg.yield %g : f64
  } -> tensor<3xf64>
  return %r : tensor<3xf64>
}
"""


def test_index_of_the_innermost_loop():
    # Upstream vectorization of linalg.index with leading unit tile loops
    # dropped the output (and stored 8 elements into 3): such tiles stay
    # scalar.
    mod = mlir_ad.compile(INDEX)
    np.testing.assert_array_equal(mod.scale_by_column(np.full((3, 16), 100.0)),
                                  np.tile(np.arange(16) * 100.0, (3, 1)))
    np.testing.assert_array_equal(
        mod.sum_of_column_indices(np.zeros((3, 16)), np.full(3, 1000.0)),
        np.full(3, 1120.0))


EXPM1_LOG1P = """
func.func @expm1(%x: tensor<?xT>) -> tensor<?xT> {
  %r = math.expm1 %x : tensor<?xT>
  return %r : tensor<?xT>
}
func.func @log1p(%x: tensor<?xT>) -> tensor<?xT> {
  %r = math.log1p %x : tensor<?xT>
  return %r : tensor<?xT>
}
func.func @expm1_scalar(%x: T) -> T {
  %r = math.expm1 %x : T
  return %r : T
}
func.func @log1p_scalar(%x: T) -> T {
  %r = math.log1p %x : T
  return %r : T
}
"""


@pytest.mark.parametrize("t,dtype,rtol", [("f64", np.float64, 4e-16),
                                          ("f32", np.float32, 4e-7)])
def test_expm1_log1p_keep_their_digits(t, dtype, rtol):
    # Upstream lowers them as exp(x) - 1 and log(1 + x), which lose every
    # digit for tiny x; whole vectors (libmvec), the scalar remainder and
    # scalars must all agree with the accurate values.
    mod = mlir_ad.compile(EXPM1_LOG1P.replace("T", t))
    values = np.array([1e-30, -1e-30, 1e-10, -1e-10, 3e-8, -4.4e-4, 1e-5,
                       0.0, -0.0, 0.5, -0.5, 2.0, -30.0, 60.0, np.inf,
                       -np.inf, np.nan], dtype)
    for v in values:
        x = np.full(17, v, dtype)  # 16 + 1 (f32) or 2 x 8 + 1 (f64)
        with np.errstate(all="ignore"):
            want_e, want_l = np.expm1(x.astype(np.float64)), np.log1p(
                np.abs(x).astype(np.float64))
        np.testing.assert_allclose(mod.expm1(x), want_e, rtol=rtol * 4)
        np.testing.assert_allclose(mod.log1p(np.abs(x)), want_l, rtol=rtol * 4)
        np.testing.assert_allclose(mod.expm1_scalar(v), want_e[0],
                                   rtol=rtol * 4)
        np.testing.assert_allclose(mod.log1p_scalar(abs(v)), want_l[0],
                                   rtol=rtol * 4)


# Named contractions that extend their operands: unsigned casts (a
# vector.contract made from the named op sign-extended them: 255 * 13 came
# out as -13) and mixed element types in a batch_matmul (a vector.contract
# nothing lowered). Both are vectorized from their generic form.
EXTENDING = """
func.func @mm_u8(%a: tensor<?x?xi8>, %b: tensor<?x?xi8>, %o: tensor<?x?xi32>) -> tensor<?x?xi32> {
  %r = linalg.matmul {cast = #linalg.type_fn<cast_unsigned>} ins(%a, %b : tensor<?x?xi8>, tensor<?x?xi8>) outs(%o : tensor<?x?xi32>) -> tensor<?x?xi32>
  return %r : tensor<?x?xi32>
}
func.func @mm_u16(%a: tensor<?x?xi16>, %b: tensor<?x?xi16>, %o: tensor<?x?xi64>) -> tensor<?x?xi64> {
  %r = linalg.matmul {cast = #linalg.type_fn<cast_unsigned>} ins(%a, %b : tensor<?x?xi16>, tensor<?x?xi16>) outs(%o : tensor<?x?xi64>) -> tensor<?x?xi64>
  return %r : tensor<?x?xi64>
}
func.func @bmm_f16(%a: tensor<?x?x?xf16>, %b: tensor<?x?x?xf16>, %o: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %r = linalg.batch_matmul ins(%a, %b : tensor<?x?x?xf16>, tensor<?x?x?xf16>) outs(%o : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}
func.func @bmm_i8(%a: tensor<?x?x?xi8>, %b: tensor<?x?x?xi8>, %o: tensor<?x?x?xi32>) -> tensor<?x?x?xi32> {
  %r = linalg.batch_matmul ins(%a, %b : tensor<?x?x?xi8>, tensor<?x?x?xi8>) outs(%o : tensor<?x?x?xi32>) -> tensor<?x?x?xi32>
  return %r : tensor<?x?x?xi32>
}
"""


@pytest.mark.parametrize("m,n,k", [(8, 32, 13), (17, 40, 5), (8, 16, 3)])
def test_extending_named_contractions(m, n, k):
    mod = mlir_ad.compile(EXTENDING)
    rng = np.random.default_rng(m + n + k)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    o = np.zeros((m, n), np.int32)
    want = a.view(np.uint8).astype(np.int64) @ b.view(np.uint8).astype(np.int64)
    np.testing.assert_array_equal(mod.mm_u8(a, b, o), want.astype(np.int32))
    a16 = rng.integers(-2**15, 2**15, (m, k)).astype(np.int16)
    b16 = rng.integers(-2**15, 2**15, (k, n)).astype(np.int16)
    want = (a16.view(np.uint16).astype(np.uint64) @
            b16.view(np.uint16).astype(np.uint64)).astype(np.int64)
    np.testing.assert_array_equal(
        mod.mm_u16(a16, b16, np.zeros((m, n), np.int64)), want)
    x = rng.standard_normal((2, m, k)).astype(np.float16)
    y = rng.standard_normal((2, k, n)).astype(np.float16)
    want = x.astype(np.float32) @ y.astype(np.float32)
    np.testing.assert_allclose(
        mod.bmm_f16(x, y, np.zeros((2, m, n), np.float32)), want, rtol=1e-5,
        atol=1e-5)
    xi = rng.integers(-128, 128, (2, m, k)).astype(np.int8)
    yi = rng.integers(-128, 128, (2, k, n)).astype(np.int8)
    want = (xi.astype(np.int64) @ yi.astype(np.int64)).astype(np.int32)
    np.testing.assert_array_equal(
        mod.bmm_i8(xi, yi, np.zeros((2, m, n), np.int32)), want)


SHIFTS = """
// Elementwise ops on padded tensors, which ad-fuse-elementwise reads in
// place (a generic per border, reading the padding value, and one over the
// rest): a shift right by one with 1 in front (RK4's right-hand side), a
// pad by runtime amounts on both sides, and a slice inserted into zeros.
func.func @shift(%x: tensor<?xT>, %y: tensor<?xT>) -> tensor<?xT> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : T
  %n = tensor.dim %x, %c0 : tensor<?xT>
  %m = arith.subi %n, %c1 : index
  %head = tensor.extract_slice %y[0] [%m] [1] : tensor<?xT> to tensor<?xT>
  %shifted = tensor.pad %head low[1] high[0] {
  ^bb0(%i: index):
    tensor.yield %one : T
  } : tensor<?xT> to tensor<?xT>
  %init = tensor.empty(%n) : tensor<?xT>
  %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %shifted : tensor<?xT>, tensor<?xT>) outs(%init : tensor<?xT>) {
  ^bb0(%a: T, %b: T, %out: T):
    %p = arith.mulf %a, %b : T
    %s = math.sin %p : T
    linalg.yield %s : T
  } -> tensor<?xT>
  return %z : tensor<?xT>
}

func.func @padded(%x: tensor<?xT>, %y: tensor<?xT>, %lo: index, %hi: index) -> tensor<?xT> {
  %c0 = arith.constant 0 : index
  %c = arith.constant -2.5 : T
  %n = tensor.dim %x, %c0 : tensor<?xT>
  %p = tensor.pad %y low[%lo] high[%hi] {
  ^bb0(%i: index):
    tensor.yield %c : T
  } : tensor<?xT> to tensor<?xT>
  %init = tensor.empty(%n) : tensor<?xT>
  %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %p : tensor<?xT>, tensor<?xT>) outs(%init : tensor<?xT>) {
  ^bb0(%a: T, %b: T, %out: T):
    %q = arith.mulf %a, %b : T
    %s = arith.addf %q, %a : T
    linalg.yield %s : T
  } -> tensor<?xT>
  return %z : tensor<?xT>
}

func.func @inserted(%acc: tensor<?xT>, %d: tensor<?xT>, %at: index) -> tensor<?xT> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : T
  %n = tensor.dim %acc, %c0 : tensor<?xT>
  %m = tensor.dim %d, %c0 : tensor<?xT>
  %e = tensor.empty(%n) : tensor<?xT>
  %z = linalg.fill ins(%zero : T) outs(%e : tensor<?xT>) -> tensor<?xT>
  %ins = tensor.insert_slice %d into %z[%at] [%m] [1] : tensor<?xT> into tensor<?xT>
  %sum = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%acc, %ins : tensor<?xT>, tensor<?xT>) outs(%e : tensor<?xT>) {
  ^bb0(%a: T, %b: T, %out: T):
    %s = arith.addf %a, %b : T
    %t = arith.mulf %s, %a : T
    linalg.yield %t : T
  } -> tensor<?xT>
  return %sum : tensor<?xT>
}

// The shift inside a loop, differentiated: a chain of shifted products.
func.func @chain(%x: tensor<?xT>, %steps: index) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?xT>
  %y = scf.for %i = %c0 to %steps step %c1 iter_args(%y = %x) -> tensor<?xT> {
    %z = func.call @shift(%x, %y) : (tensor<?xT>, tensor<?xT>) -> tensor<?xT>
    scf.yield %z : tensor<?xT>
  }
  %last = arith.subi %n, %c1 : index
  %v = tensor.extract %y[%last] : tensor<?xT>
  return %v : T
}
"""


def _shift_ref(x, y):
    return np.sin(x * np.concatenate([[1.0], y[:-1]]))


@pytest.mark.parametrize("t,dtype,rtol", [("f64", np.float64, 1e-14),
                                           ("f32", np.float32, 1e-6)])
@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 33, 1000])
def test_padded_tensors_read_in_place(rng, t, dtype, rtol, n):
    m = mlir_ad.compile(SHIFTS.replace("T", t))
    x = rng.uniform(-1, 1, n).astype(dtype)
    y = rng.uniform(-1, 1, n).astype(dtype)
    np.testing.assert_allclose(m.shift(x, y), _shift_ref(x, y), rtol=rtol,
                               atol=rtol)
    for lo, hi in [(0, 0), (1, 0), (0, 1), (2, 3), (n, 0), (0, n)]:
        if lo + hi > n:
            continue
        src = y[:n - lo - hi]
        want = x * np.concatenate([np.full(lo, -2.5), src,
                                   np.full(hi, -2.5)]).astype(dtype) + x
        np.testing.assert_allclose(m.padded(x, src, lo, hi), want,
                                   rtol=rtol, atol=rtol)
    for at, length in [(0, n), (0, n - 1), (1, n - 1), (n // 2, n - n // 2),
                       (n, 0)]:
        if length < 0:
            continue
        d = y[:length]
        ins = np.zeros(n, dtype)
        ins[at:at + length] = d
        np.testing.assert_allclose(m.inserted(x, d, at), (x + ins) * x,
                                   rtol=rtol, atol=rtol)


@pytest.mark.parametrize("n,steps", [(1, 3), (2, 1), (9, 4), (40, 6)])
def test_gradient_through_shifts(rng, n, steps):
    m = mlir_ad.compile(SHIFTS.replace("T", "f64"))
    x = rng.uniform(0.2, 1.0, n)

    def ref(x_, s_):
        y = x_
        for _ in range(s_):
            y = _shift_ref(x_, y)
        return y[-1]

    assert m.chain(x, steps) == pytest.approx(ref(x, steps), rel=1e-13)
    (g,) = mlir_ad.grad(m.chain, wrt=[0])(x, steps)
    (want,) = numerical_grad(ref, [x, steps], [0])
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-9)


def test_packed_contractions_in_a_deep_recursion():
    # Contractions with enough rows copy their wide input's strips to a
    # buffer first. A buffer on the stack per packed op and frame made this
    # recursion overflow the stack at a depth of about 490 (review finding);
    # the function's one buffer is on the heap.
    src = """
func.func private @rec(%x: tensor<40x?xf64>, %w: tensor<?x?xf64>, %n: index) -> tensor<40x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> tensor<40x?xf64> {
    scf.yield %x : tensor<40x?xf64>
  } else {
    %m = arith.subi %n, %c1 : index
    %y = linalg.matmul ins(%x, %w : tensor<40x?xf64>, tensor<?x?xf64>) outs(%x : tensor<40x?xf64>) -> tensor<40x?xf64>
    %s = func.call @rec(%y, %w, %m) : (tensor<40x?xf64>, tensor<?x?xf64>, index) -> tensor<40x?xf64>
    scf.yield %s : tensor<40x?xf64>
  }
  return %r : tensor<40x?xf64>
}
func.func @f(%x: tensor<40x?xf64>, %w: tensor<?x?xf64>, %n: index) -> tensor<40x?xf64> {
  %r = func.call @rec(%x, %w, %n) : (tensor<40x?xf64>, tensor<?x?xf64>, index) -> tensor<40x?xf64>
  return %r : tensor<40x?xf64>
}
"""
    m = mlir_ad.compile(src)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 16)) * 0.01
    w = rng.standard_normal((16, 16)) * 0.001
    depth = 3000
    expected = x.copy()
    for _ in range(depth):
        expected = expected + expected @ w
    np.testing.assert_allclose(m.f(x, w, depth), expected, rtol=1e-12,
                               atol=1e-15)
