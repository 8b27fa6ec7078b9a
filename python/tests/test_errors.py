"""Every error path: parse, verification and differentiation errors as
CompileError with MLIR locations; wrong arguments as TypeError/ValueError;
unknown functions; unsupported signatures; files."""

import pathlib
import re

import numpy as np
import pytest

import mlir_ad


def test_compile_error_is_an_exception():
    assert issubclass(mlir_ad.CompileError, Exception)
    assert mlir_ad.CompileError is mlir_ad._mlir_ad.CompileError


# ----------------------------------------------------------------------------
# Parsing and verification
# ----------------------------------------------------------------------------

def test_parse_error_has_location():
    src = ("func.func @f(%x: f64) -> f64 {\n"
           "  %y = arith.mulf %x, %x : f64\n"
           "  return %z : f64\n"
           "}\n")
    with pytest.raises(mlir_ad.CompileError) as info:
        mlir_ad.compile(src)
    message = str(info.value)
    assert "<source>:3:10: error: use of undeclared SSA value name" in message
    assert "return %z : f64" in message  # the source line is shown


def test_unknown_op_parse_error():
    src = "func.func @f(%x: f64) -> f64 {\n  %y = arith.frobnicate %x : f64\n  return %y : f64\n}"
    with pytest.raises(mlir_ad.CompileError, match=r"<source>:2:\d+: error: .*frobnicate"):
        mlir_ad.compile(src)


def test_verifier_error_has_location():
    src = ("func.func @f(%x: f64) -> f32 {\n"
           "  %y = arith.mulf %x, %x : f64\n"
           "  return %y : f64\n"
           "}\n")
    with pytest.raises(mlir_ad.CompileError) as info:
        mlir_ad.compile(src)
    message = str(info.value)
    assert "<source>:3:3: error:" in message
    assert "doesn't match function result type" in message


def test_ad_op_verifier_error():
    src = ("func.func @f(%x: f64) -> f64 {\n"
           "  return %x : f64\n"
           "}\n"
           "func.func @g(%x: f64) -> f32 {\n"
           "  %r = ad.grad @f(%x) : (f64) -> f32\n"
           "  return %r : f32\n"
           "}\n")
    with pytest.raises(mlir_ad.CompileError, match=r"<source>:5:\d+: error: 'ad.grad' op"):
        mlir_ad.compile(src)


def test_empty_module():
    m = mlir_ad.compile("")
    assert m.functions == []
    with pytest.raises(AttributeError, match="none"):
        m.f


def test_compile_rejects_non_text():
    with pytest.raises(TypeError):
        mlir_ad.compile(42)
    with pytest.raises(TypeError):
        mlir_ad.compile(None)


GOOD = "func.func @sq(%x: f64) -> f64 {\n  %y = arith.mulf %x, %x : f64\n  return %y : f64\n}\n"
BAD = "func.func @sq(%x: f64) -> f64 {\n  %y = arith.mulf %x, %x : f64\n  return %w : f64\n}\n"


@pytest.mark.parametrize("as_path", [str, pathlib.Path])
def test_compile_from_file(tmp_path, as_path):
    path = tmp_path / "good.mlir"
    path.write_text(GOOD)
    m = mlir_ad.compile(as_path(path))
    assert m.functions == ["sq"]
    assert m.sq(3.0) == 9.0
    assert mlir_ad.grad(m.sq, wrt=0)(3.0) == 6.0
    assert str(path) in repr(m)


@pytest.mark.parametrize("as_path", [str, pathlib.Path])
def test_compile_error_in_file_shows_the_path(tmp_path, as_path):
    path = tmp_path / "bad.mlir"
    path.write_text(BAD)
    with pytest.raises(mlir_ad.CompileError) as info:
        mlir_ad.compile(as_path(path))
    assert f"{path}:3:10: error: use of undeclared SSA value name" in str(info.value)


def test_differentiation_error_in_file_shows_the_path(tmp_path):
    path = tmp_path / "nodiff.mlir"
    path.write_text("func.func @f(%x: f64) -> f64 {\n"
                    "  %s, %c = math.sincos %x : f64\n"
                    "  %y = arith.addf %s, %c : f64\n"
                    "  return %y : f64\n"
                    "}\n")
    m = mlir_ad.compile(path)
    with pytest.raises(mlir_ad.CompileError) as info:
        mlir_ad.grad(m.f)
    assert f"{path}:2:12: error: no derivative rule for 'math.sincos'" in str(info.value)


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        mlir_ad.compile(pathlib.Path("/nonexistent/dir/prog.mlir"))


# ----------------------------------------------------------------------------
# Differentiation errors
# ----------------------------------------------------------------------------

NODIFF = """
func.func @neg_bits(%x: f64) -> f64 {
  %i = arith.bitcast %x : f64 to i64
  %s = arith.constant -9223372036854775808 : i64
  %j = arith.xori %i, %s : i64
  %y = arith.bitcast %j : i64 to f64
  %z = arith.mulf %y, %x : f64
  return %z : f64
}

func.func @outer(%x: f64, %w: f64) -> f64 {
  %y = func.call @neg_bits(%x) : (f64) -> f64
  %z = arith.mulf %y, %w : f64
  return %z : f64
}

func.func @through_memory(%x: f64) -> f64 {
  %m = memref.alloca() : memref<f64>
  %s = math.sin %x : f64
  memref.store %s, %m[] : memref<f64>
  %y = memref.load %m[] : memref<f64>
  return %y : f64
}
"""


@pytest.fixture(scope="module")
def nodiff():
    return mlir_ad.compile(NODIFF)


def test_no_rule_is_a_compile_error_with_location(nodiff):
    with pytest.raises(mlir_ad.CompileError) as info:
        mlir_ad.grad(nodiff.neg_bits)
    message = str(info.value)
    assert "<source>:6:8: error: no derivative rule for 'arith.bitcast', whose " \
           "result depends on a differentiated argument" in message
    assert "%y = arith.bitcast %j : i64 to f64" in message
    # The function itself still runs.
    assert nodiff.neg_bits(1.5) == -2.25


def test_no_rule_inside_a_callee_notes_the_call(nodiff):
    with pytest.raises(mlir_ad.CompileError) as info:
        mlir_ad.value_and_grad(nodiff.outer)
    message = str(info.value)
    assert "<source>:6:8: error: no derivative rule for 'arith.bitcast'" in message
    assert re.search(r"<source>:12:\d+: note: while differentiating this call of "
                     r"@neg_bits", message), message


def test_no_rule_off_the_differentiated_path_is_fine(nodiff):
    # Only w is differentiated: neg_bits(x) is a constant factor.
    g = mlir_ad.grad(nodiff.outer, wrt=1)(1.5, 2.0)
    assert g == -2.25


def test_memory_is_a_compile_error(nodiff):
    with pytest.raises(mlir_ad.CompileError,
                       match=r"<source>:20:\d+: error: cannot differentiate through "
                             r"memory: 'memref.store'"):
        mlir_ad.vjp(nodiff.through_memory)


def test_failed_entries_are_not_cached(nodiff):
    before = mlir_ad.num_compilations()
    for _ in range(2):
        with pytest.raises(mlir_ad.CompileError):
            mlir_ad.grad(nodiff.neg_bits)
    assert mlir_ad.num_compilations() == before


# ----------------------------------------------------------------------------
# Arguments
# ----------------------------------------------------------------------------

ARGS = """
func.func @f(%x: f64, %n: i32, %t: tensor<2x3xf64>, %d: tensor<?xf32>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tensor.extract %t[%c1, %c0] : tensor<2x3xf64>
  %b = tensor.extract %d[%c0] : tensor<?xf32>
  %bd = arith.extf %b : f32 to f64
  %nf = arith.sitofp %n : i32 to f64
  %p = arith.mulf %a, %bd : f64
  %q = arith.mulf %p, %x : f64
  %r = arith.addf %q, %nf : f64
  return %r : f64
}

func.func @r0(%x: tensor<f64>) -> f64 {
  %e = tensor.extract %x[] : tensor<f64>
  %y = arith.mulf %e, %e : f64
  return %y : f64
}

func.func @vec(%t: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %t[%c0] : tensor<?xf64>
  return %e : f64
}

func.func @i8(%a: i8) -> i8 {
  return %a : i8
}

func.func @tensor_result(%x: tensor<3xf64>) -> tensor<3xf64> {
  %y = math.sin %x : tensor<3xf64>
  return %y : tensor<3xf64>
}

func.func @two_results(%x: f64) -> (f64, f64) {
  return %x, %x : f64, f64
}

func.func @float_and_int(%x: f64, %n: i32) -> (f64, i32) {
  %y = arith.mulf %x, %x : f64
  return %y, %n : f64, i32
}

func.func @nothing(%x: f64) {
  return
}

func.func @vector_arg(%x: vector<4xf64>) -> f64 {
  %y = vector.extract %x[0] : f64 from vector<4xf64>
  return %y : f64
}
"""


@pytest.fixture(scope="module")
def am():
    return mlir_ad.compile(ARGS)


T = np.arange(6.0).reshape(2, 3)
D = np.array([2.0, 5.0], np.float32)


def test_good_call(am):
    assert am.f(1.5, 4, T, D) == 3.0 * 2.0 * 1.5 + 4
    gx, gt, gd = mlir_ad.grad(am.f)(1.5, 4, T, D)
    assert gx == 6.0
    expected_t = np.zeros((2, 3))
    expected_t[1, 0] = 2.0 * 1.5
    np.testing.assert_array_equal(gt, expected_t)
    assert gd.dtype == np.float32
    np.testing.assert_array_equal(gd, [3.0 * 1.5, 0.0])


@pytest.mark.parametrize("make", [
    lambda am: am.f,
    lambda am: mlir_ad.grad(am.f),
    lambda am: mlir_ad.value_and_grad(am.f, wrt=0),
    lambda am: mlir_ad.vjp(am.f),
])
@pytest.mark.parametrize("args", [(), (1.5, 4, T), (1.5, 4, T, D, 1.0)])
def test_wrong_number_of_arguments(am, make, args):
    with pytest.raises(TypeError, match="takes 4 arguments, got %d" % len(args)):
        make(am)(*args)


@pytest.mark.parametrize("position,value", [
    (2, T.astype(np.float32)),         # f32 array for f64
    (2, T.astype(np.int64)),           # integer array for floats
    (3, D.astype(np.float64)),         # f64 array for f32
    (3, D.astype(np.float16)),
    (1, 4.0),                          # float for i32
    (1, 4.5),
    (1, "4"),
    (0, "1.5"),                        # strings are not numbers
    (0, None),
    (0, 1 + 2j),
    (0, object()),
    (0, np.ones(2)),                   # an array for a scalar
    (2, None),
    (2, "abc"),
    (2, [["a", "b", "c"], ["d", "e", "f"]]),
    (2, object()),
])
def test_wrong_type(am, position, value):
    args = [1.5, 4, T, D]
    args[position] = value
    with pytest.raises(TypeError, match=f"argument {position}"):
        am.f(*args)
    with pytest.raises(TypeError, match=f"argument {position}"):
        mlir_ad.grad(am.f)(*args)


@pytest.mark.parametrize("position,value", [
    (2, np.ones((3, 2))),              # static shape mismatch
    (2, np.ones(6)),                   # rank
    (2, np.ones((1, 2, 3))),
    (2, [[1.0, 2.0, 3.0]]),
    (3, np.ones((2, 1), np.float32)),  # rank of a dynamic tensor
])
def test_wrong_shape(am, position, value):
    args = [1.5, 4, T, D]
    args[position] = value
    with pytest.raises(ValueError, match=f"argument {position}"):
        am.f(*args)
    with pytest.raises(ValueError, match=f"argument {position}"):
        mlir_ad.grad(am.f, wrt=(0, 2))(*args)


def test_scalar_for_a_dynamic_vector_is_a_rank_error(am):
    # 2.0 is not a tensor<?xf64>: it has rank 0, not 1. It must not be taken
    # for the one-element array [2.0].
    with pytest.raises(ValueError, match="rank"):
        am.vec(2.0)


def test_number_for_a_rank0_tensor(am):
    # A rank-0 tensor holds one number; a plain number (or a 0-d array) is the
    # natural way to pass it, as for the cotangent of a rank-0 result.
    assert am.r0(np.array(3.0)) == 9.0
    assert am.r0(3.0) == 9.0
    assert mlir_ad.grad(am.r0, wrt=0)(3.0) == pytest.approx(6.0)


def test_numpy_scalars_and_zero_d_arrays(am):
    assert am.f(np.float64(1.5), np.int32(4), T, D) == am.f(1.5, 4, T, D)
    assert am.f(np.array(1.5), np.array(4), T, D) == am.f(1.5, 4, T, D)
    assert am.f(True, 4, T, D) == am.f(1.0, 4, T, D)


@pytest.mark.parametrize("value", [256, 300, -129, 2 ** 40])
def test_integer_out_of_range(am, value):
    # 2**64 is reported for i64 ("integer out of range"); so must values that
    # fit i8 neither signed nor unsigned, rather than wrapping silently
    # (300 -> 44).
    with pytest.raises((ValueError, OverflowError)):
        r = am.i8(value)
        pytest.fail(f"i8 argument {value} was accepted and became {r}")


@pytest.mark.parametrize("value", [-128, -1, 0, 127])
def test_integer_in_range(am, value):
    assert am.i8(value) == value


def test_unknown_function(am):
    with pytest.raises(AttributeError, match=r"no function @g.*@f"):
        am.g
    with pytest.raises(KeyError, match="no function @g"):
        am["g"]
    assert not hasattr(am, "_private")


def test_grad_needs_one_float_scalar_result(am):
    with pytest.raises(ValueError, match=r"tensor<3xf64>.*use vjp"):
        mlir_ad.grad(am.tensor_result)
    with pytest.raises(ValueError, match=r"\(f64, f64\)"):
        mlir_ad.value_and_grad(am.two_results)
    with pytest.raises(ValueError, match=r"returns \(\)"):
        mlir_ad.grad(am.nothing)


def test_grad_of_float_and_int_results(am):
    # Like any other signature grad does not take: a ValueError naming the
    # results (and suggesting vjp), not an internal CompileError about the
    # entry function the package generated.
    with pytest.raises(ValueError, match=r"\(f64, i32\)"):
        mlir_ad.grad(am.float_and_int)
    with pytest.raises(ValueError, match=r"\(f64, i32\)"):
        mlir_ad.value_and_grad(am.float_and_int)
    # vjp does take it.
    (y, n), pullback = mlir_ad.vjp(am.float_and_int)(3.0, 7)
    assert (y, n) == (9.0, 7)
    assert pullback(1.0) == (6.0,)


def test_unsupported_argument_type(am):
    with pytest.raises(ValueError, match="vector<4xf64>"):
        am.vector_arg(np.ones(4))
    with pytest.raises(ValueError, match="vector<4xf64>"):
        mlir_ad.grad(am.vector_arg)
    assert "vector_arg" in am.functions


def test_repr_of_a_function_with_an_unsupported_signature(am):
    # repr() of an object must not raise, even if the object is unusable.
    text = repr(am.vector_arg)
    assert "vector_arg" in text


def test_module_and_function_repr(am):
    assert repr(am.f) == ("<mlir_ad.Function @f: (f64, i32, tensor<2x3xf64>, "
                          "tensor<?xf32>) -> (f64)>")
    assert "<source>" in repr(am) and "tensor_result" in repr(am)
    assert am.f.signature == (("f64", "i32", "tensor<2x3xf64>", "tensor<?xf32>"),
                              ("f64",))
    assert "f" in dir(am)


# ----------------------------------------------------------------------------
# External functions
# ----------------------------------------------------------------------------

EXTERNAL = """
func.func private @external(f64) -> f64

func.func @uses_external(%x: f64) -> f64 {
  %y = func.call @external(%x) : (f64) -> f64
  return %y : f64
}

func.func @self_contained(%x: f64) -> f64 {
  %y = math.sin %x : f64
  return %y : f64
}
"""


@pytest.fixture(scope="module")
def ext():
    return mlir_ad.compile(EXTERNAL)


def test_declarations_are_not_functions(ext):
    assert ext.functions == ["uses_external", "self_contained"]


def test_unrelated_external_declaration_does_not_break_other_functions(ext):
    # @self_contained never calls @external; calling it or its gradient must
    # not need a definition of @external.
    assert ext.self_contained(0.5) == pytest.approx(np.sin(0.5))
    assert mlir_ad.grad(ext.self_contained, wrt=0)(0.5) == pytest.approx(np.cos(0.5))


def test_unresolved_external_names_the_symbol(ext):
    with pytest.raises(mlir_ad.CompileError, match="external"):
        ext.uses_external(0.5)
    try:
        ext.uses_external(0.5)
    except mlir_ad.CompileError as e:
        # The message must say what is missing, not only list the symbols
        # that failed to materialize.
        assert re.search(r"[Ss]ymbols? not found.*external|@external", str(e)), str(e)


def test_differentiating_through_an_external_call(ext):
    with pytest.raises(mlir_ad.CompileError,
                       match=r"<source>:5:\d+: error: cannot differentiate this call: "
                             r"'external' has no body"):
        mlir_ad.grad(ext.uses_external)


OUT_OF_BOUNDS = """
func.func @sum(%x: tensor<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> f64 {
    %v = tensor.extract %x[%i] : tensor<?xf64>
    %q = arith.mulf %v, %v : f64
    %b = arith.addf %a, %q : f64
    scf.yield %b : f64
  }
  return %s : f64
}
"""


def test_out_of_bounds_index_is_an_error_not_a_crash():
    # A loop bound past the end read and wrote outside the buffers (inf,
    # a gradient missing the term, or a segfault for a large bound).
    m = mlir_ad.compile(OUT_OF_BOUNDS)
    x = np.ones(4)
    assert m.sum(x, 4) == 4.0
    np.testing.assert_array_equal(mlir_ad.grad(m.sum)(x, 4)[0], 2 * x)
    for n in (5, 10**8):
        with pytest.raises(ValueError, match=r"'tensor.extract' at loc\(\"<source>\":7:\d+\): out-of-bounds"):
            m.sum(x, n)
        with pytest.raises(ValueError, match="out-of-bounds"):
            mlir_ad.grad(m.sum)(x, n)
    # The process and the entry keep working.
    assert m.sum(x, 3) == 3.0


def test_cotangent_errors_name_the_cotangent():
    m = mlir_ad.compile("""
func.func @f(%x: tensor<?xf64>, %w: f64) -> (tensor<?xf64>, f64) {
  %s = math.sin %x : tensor<?xf64>
  return %s, %w : tensor<?xf64>, f64
}""")
    _, pullback = mlir_ad.vjp(m.f)(np.ones(3), 2.0)
    with pytest.raises(TypeError, match=r"vjp of @f: cotangent 0: expected an array of dtype float64"):
        pullback(np.ones(3, np.float32), 1.0)
    with pytest.raises(TypeError, match=r"cotangent 1: expected a number"):
        pullback(np.ones(3), None)


def test_insert_slice_out_of_bounds_is_an_error():
    # Upstream has no run-time check of tensor.insert_slice: writing 10,000
    # elements at offset 2 of a 4-element tensor corrupted the heap.
    m = mlir_ad.compile("""
func.func @ins(%x: tensor<?xf64>, %y: tensor<?xf64>, %o: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %y, %c0 : tensor<?xf64>
  %r = tensor.insert_slice %y into %x[%o] [%n] [1] : tensor<?xf64> into tensor<?xf64>
  return %r : tensor<?xf64>
}""")
    np.testing.assert_array_equal(m.ins(np.zeros(4), np.full(2, 7.0), 1), [0, 7, 7, 0])
    for y, offset in ((np.full(10000, 7.0), 2), (np.full(2, 7.0), 3), (np.full(1, 7.0), -1)):
        with pytest.raises(ValueError, match=r"'tensor.insert_slice' at loc\(\"<source>\":5:\d+\)"):
            m.ins(np.zeros(4), y, offset)
    np.testing.assert_array_equal(m.ins(np.zeros(4), np.full(2, 7.0), 2), [0, 0, 7, 7])


def test_cast_to_a_wrong_static_size_is_an_error():
    m = mlir_ad.compile("""
func.func @c(%x: tensor<?xf64>) -> f64 {
  %s = tensor.cast %x : tensor<?xf64> to tensor<5xf64>
  %c0 = arith.constant 0 : index
  %v = tensor.extract %s[%c0] : tensor<5xf64>
  return %v : f64
}""")
    assert m.c(np.arange(5.0) + 1) == 1.0
    with pytest.raises(ValueError, match="tensor.cast"):
        mlir_ad.grad(m.c)(np.ones(3))


def test_non_array_tensor_arguments_convert_only_exactly():
    m = mlir_ad.compile("""
func.func @i(%x: tensor<2xi8>) -> tensor<2xi8> { return %x : tensor<2xi8> }
func.func @s(%x: f64) -> f64 { return %x : f64 }
func.func @sq(%x: tensor<3xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = tensor.extract %x[%c0] : tensor<3xf32>
  %r = arith.mulf %v, %v : f32
  return %r : f32
}""")
    np.testing.assert_array_equal(m.i([1, -2]), [1, -2])
    with pytest.raises(TypeError, match="float64 values"):
        m.i([1.5, 2.7])
    with pytest.raises(TypeError):
        m.i(["1", "2"])
    with pytest.raises(ValueError, match="out of range"):
        m.i([300, 1])
    with pytest.raises(TypeError):
        m.s(np.complex128(1 + 2j))
    # vjp keeps the list argument in the dtype the call used (f32).
    _, pullback = mlir_ad.vjp(m.sq)([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(pullback(np.float32(1.0))[0], [2, 0, 0])


def test_negative_padding_is_an_error():
    # Upstream has no run-time check of tensor.pad: a negative amount wrote
    # before the buffer it made (a segmentation fault).
    m = mlir_ad.compile("""
func.func @pad(%x: tensor<?xf64>, %lo: index, %hi: index) -> tensor<?xf64> {
  %z = arith.constant 0.0 : f64
  %p = tensor.pad %x low[%lo] high[%hi] {
  ^bb0(%i: index):
    tensor.yield %z : f64
  } : tensor<?xf64> to tensor<?xf64>
  return %p : tensor<?xf64>
}
func.func @loss(%x: tensor<?xf64>, %lo: index, %hi: index) -> f64 {
  %p = func.call @pad(%x, %lo, %hi) : (tensor<?xf64>, index, index) -> tensor<?xf64>
  %c0 = arith.constant 0 : index
  %v = tensor.extract %p[%c0] : tensor<?xf64>
  %s = arith.mulf %v, %v : f64
  return %s : f64
}""")
    np.testing.assert_array_equal(m.pad(np.ones(2), 1, 2), [0, 1, 1, 0, 0])
    for lo, hi, side in ((-2, 0, "low"), (0, -1, "high")):
        with pytest.raises(ValueError, match=rf"'tensor.pad' at loc\(\"<source>\":4:\d+\): {side} padding must not be negative"):
            m.pad(np.ones(3), lo, hi)
        with pytest.raises(ValueError, match="padding must not be negative"):
            mlir_ad.grad(m.loss, wrt=0)(np.ones(3), lo, hi)
    np.testing.assert_array_equal(mlir_ad.grad(m.loss, wrt=0)(np.full(2, 3.0), 0, 1), [6, 0])


def test_whole_tensor_ops_on_different_sizes_are_an_error():
    # An elementwise arith/math op on tensors reads every operand at the
    # first one's indices: a shorter operand was read out of bounds.
    m = mlir_ad.compile("""
func.func @add(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %r = arith.addf %a, %b : tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}
func.func @sel(%c: tensor<?xi1>, %a: tensor<?xf64>, %b: tensor<4xf64>) -> tensor<?xf64> {
  %d = tensor.cast %b : tensor<4xf64> to tensor<?xf64>
  %r = arith.select %c, %a, %d : tensor<?xi1>, tensor<?xf64>
  return %r : tensor<?xf64>
}""")
    np.testing.assert_array_equal(m.add(np.ones((2, 3)), np.ones((2, 3))), np.full((2, 3), 2.0))
    for a, b, dim in ((np.ones((2, 3)), np.ones((2, 100000)), 1), (np.ones((3, 3)), np.ones((2, 3)), 0)):
        with pytest.raises(ValueError, match=rf"'arith.addf' at loc\(\"<source>\":3:\d+\): the operands' sizes differ in dimension {dim}"):
            m.add(a, b)
    with pytest.raises(ValueError, match="'arith.select'.*differ in dimension 0"):
        m.sel(np.ones(3, bool), np.ones(3), np.ones(4))
    np.testing.assert_array_equal(m.sel(np.array([1, 0, 1, 0], bool), np.zeros(4), np.ones(4)), [0, 1, 0, 1])


def test_loop_that_runs_no_iteration_computes_nothing():
    # Loop-invariant code motion took the slice of n - 1 elements out of a
    # loop of n iterations: with n = 0, a slice of -1 elements before the
    # loop (a garbage gradient or a corrupted heap), above the run-time
    # check inside the loop. It now leaves only into a branch taken when the
    # loop runs, with its check.
    m = mlir_ad.compile("""
#v = affine_map<(j) -> (j)>
#s = affine_map<(j) -> ()>
func.func @f(%x: tensor<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %nm1 = arith.subi %n, %c1 : index
  %r = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f64) {
    %s = tensor.extract_slice %x[0] [%nm1] [1] : tensor<?xf64> to tensor<?xf64>
    %e = tensor.empty(%nm1) : tensor<?xf64>
    %t = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
        ins(%s : tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %o: f64):
      %th = math.exp %a : f64
      linalg.yield %th : f64
    } -> tensor<?xf64>
    %z0 = tensor.empty() : tensor<f64>
    %z = linalg.fill ins(%zero : f64) outs(%z0 : tensor<f64>) -> tensor<f64>
    %sum = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
        ins(%t : tensor<?xf64>) outs(%z : tensor<f64>) {
    ^bb0(%a: f64, %o: f64):
      %ad = arith.addf %o, %a : f64
      linalg.yield %ad : f64
    } -> tensor<f64>
    %v = tensor.extract %sum[] : tensor<f64>
    %a1 = arith.addf %acc, %v : f64
    scf.yield %a1 : f64
  }
  return %r : f64
}
""")
    x = np.array([0.1, 0.2, 0.3])
    assert m.f(x, 2) == pytest.approx(2 * np.exp(0.1), rel=1e-15)
    np.testing.assert_allclose(mlir_ad.grad(m.f, wrt=0)(x, 2), [2 * np.exp(0.1), 0, 0], rtol=1e-15)
    for _ in range(300):
        assert m.f(x, 0) == 0.0
        np.testing.assert_array_equal(mlir_ad.grad(m.f, wrt=0)(x, 0), np.zeros(3))
    # A loop that runs with a slice out of bounds is an error of the call.
    with pytest.raises(ValueError, match="tensor.extract_slice"):
        m.f(x, 5)


def test_inner_loop_of_a_loop_that_runs_no_iteration_does_not_run():
    # An invariant inner loop with a scalar body left a loop of unknown trip
    # count unguarded: with n = 0, the unsigned inner loop to n - 1 ran
    # 2^64 - 1 times (the call never returned). Loops leave only loops that
    # run, or into the branch taken when they do.
    m = mlir_ad.compile("""
func.func @f(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %half = arith.constant 0.5 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f64) {
    %nm1 = arith.subi %n, %c1 : index
    %s = scf.for unsigned %j = %c0 to %nm1 step %c1 iter_args(%a = %x) -> (f64) {
      %h = arith.mulf %a, %half : f64
      %b = arith.addf %h, %x : f64
      scf.yield %b : f64
    }
    %t = arith.addf %acc, %s : f64
    scf.yield %t : f64
  }
  return %r : f64
}
""")

    def reference(x, n):
        total = 0.0
        for _ in range(n):
            a = x
            for _ in range(n - 1):
                a = a * 0.5 + x
            total += a
        return total

    assert m.f(1.0, 3) == pytest.approx(reference(1.0, 3), rel=1e-15)
    assert m.f(1.0, 0) == 0.0
    assert mlir_ad.grad(m.f, wrt=0)(1.0, 0) == 0.0
    assert mlir_ad.grad(m.f, wrt=0)(2.0, 3) == pytest.approx(
        (reference(2.0 + 1e-6, 3) - reference(2.0 - 1e-6, 3)) / 2e-6, rel=1e-7)


def test_negative_sizes_are_named():
    # x[1:] - x[:-1] of an empty x slices n - 1 = -1 elements: the first
    # failed check was upstream's "offset 0 is out-of-bounds" (0 being the
    # dimension). A tensor of -1 elements made a buffer of 2^64 - 8 bytes.
    m = mlir_ad.compile("""
#v = affine_map<(i) -> (i)>
func.func @diff(%x: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %m = arith.subi %n, %c1 : index
  %a = tensor.extract_slice %x[1] [%m] [1] : tensor<?xf64> to tensor<?xf64>
  %b = tensor.extract_slice %x[0] [%m] [1] : tensor<?xf64> to tensor<?xf64>
  %d = arith.subf %a, %b : tensor<?xf64>
  return %d : tensor<?xf64>
}
func.func @make(%n: index, %v: f64) -> tensor<?x2xf64> {
  %e = tensor.empty(%n) : tensor<?x2xf64>
  %f = linalg.fill ins(%v : f64) outs(%e : tensor<?x2xf64>) -> tensor<?x2xf64>
  return %f : tensor<?x2xf64>
}
func.func @put(%x: tensor<?xf64>, %y: tensor<?xf64>, %k: index) -> tensor<?xf64> {
  %r = tensor.insert_slice %y into %x[0] [%k] [1] : tensor<?xf64> into tensor<?xf64>
  return %r : tensor<?xf64>
}""")
    np.testing.assert_array_equal(m.diff(np.array([1.0, 3.0, 6.0])), [2.0, 3.0])
    assert m.diff(np.array([5.0])).shape == (0,)
    with pytest.raises(ValueError, match=r"'tensor.extract_slice' at loc\(\"<source>\":8:\d+\): the slice's size in dimension 0 is negative"):
        m.diff(np.zeros(0))
    with pytest.raises(ValueError, match=r"'tensor.extract_slice' at loc\(\"<source>\":8:\d+\): the slice's size in dimension 0 is negative"):
        mlir_ad.vjp(m.diff)(np.zeros(0))
    np.testing.assert_array_equal(m.make(2, 1.5), np.full((2, 2), 1.5))
    assert m.make(0, 1.5).shape == (0, 2)
    with pytest.raises(ValueError, match=r"'tensor.empty' at loc\(\"<source>\":14:\d+\): the size in dimension 0 is negative"):
        m.make(-1, 1.5)
    np.testing.assert_array_equal(m.put(np.zeros(3), np.ones(2), 2), [1, 1, 0])
    with pytest.raises(ValueError, match=r"'tensor.insert_slice' at loc\(\"<source>\":19:\d+\): the slice's size in dimension 0 is negative"):
        m.put(np.zeros(3), np.ones(0), -2)
    # The entries keep working.
    np.testing.assert_array_equal(m.diff(np.array([1.0, 2.0])), [1.0])


def test_sizes_that_do_not_fit_are_named():
    # A slice of an empty tensor failed upstream's first check as "offset 0
    # is out-of-bounds" (0 being the dimension). An inserted tensor of
    # another size than the slice's, a reshape to another element count and
    # an expand_shape whose sizes do not multiply to the expanded one's ran
    # and read out of bounds: garbage in the result and a gradient of the
    # wrong shape.
    m = mlir_ad.compile("""
func.func @head(%x: tensor<?xf64>) -> tensor<1xf64> {
  %s = tensor.extract_slice %x[0] [1] [1] : tensor<?xf64> to tensor<1xf64>
  return %s : tensor<1xf64>
}
func.func @put(%x: tensor<?xf64>, %y: tensor<?xf64>, %m: index) -> f64 {
  %c0 = arith.constant 0 : index
  %r = tensor.insert_slice %y into %x[0] [%m] [1] : tensor<?xf64> into tensor<?xf64>
  %v = tensor.extract %r[%c0] : tensor<?xf64>
  return %v : f64
}
func.func @flat(%x: tensor<?x?xf64>, %n: index) -> tensor<?xf64> {
  %s = tensor.from_elements %n : tensor<1xindex>
  %r = tensor.reshape %x(%s) : (tensor<?x?xf64>, tensor<1xindex>) -> tensor<?xf64>
  return %r : tensor<?xf64>
}
func.func @rows(%x: tensor<?xf64>, %m: index) -> tensor<?x2xf64> {
  %r = tensor.expand_shape %x [[0, 1]] output_shape [%m, 2] : tensor<?xf64> into tensor<?x2xf64>
  return %r : tensor<?x2xf64>
}""")
    np.testing.assert_array_equal(m.head(np.array([4.0, 5.0])), [4.0])
    for args in ((np.zeros(0),),):
        with pytest.raises(ValueError, match=r"'tensor.extract_slice' at loc\(\"<source>\":3:\d+\): the slice does not fit in dimension 0 of the tensor"):
            m.head(*args)
    assert m.put(np.zeros(4), np.full(2, 7.0), 2) == 7.0
    gx, gy = mlir_ad.grad(m.put, wrt=(0, 1))(np.zeros(4), np.full(2, 7.0), 2)
    np.testing.assert_array_equal(gx, np.zeros(4))
    np.testing.assert_array_equal(gy, [1.0, 0.0])
    for size in (1, 3):
        with pytest.raises(ValueError, match=r"'tensor.insert_slice' at loc\(\"<source>\":8:\d+\): the inserted tensor's size in dimension 0 is not the slice's"):
            m.put(np.zeros(4), np.full(2, 7.0), size)
        with pytest.raises(ValueError, match="the inserted tensor's size"):
            mlir_ad.grad(m.put, wrt=(0, 1))(np.zeros(4), np.full(2, 7.0), size)
    with pytest.raises(ValueError, match=r"'tensor.insert_slice' at loc\(\"<source>\":8:\d+\): the slice does not fit in dimension 0 of the tensor"):
        m.put(np.zeros(4), np.full(5, 7.0), 5)
    np.testing.assert_array_equal(m.flat(np.ones((2, 3)), 6), np.ones(6))
    for n in (5, 9, 0):
        with pytest.raises(ValueError, match=r"'tensor.reshape' at loc\(\"<source>\":14:\d+\): the new shape does not have the source's number of elements"):
            m.flat(np.ones((2, 3)), n)
    np.testing.assert_array_equal(m.rows(np.arange(6.0), 3), np.arange(6.0).reshape(3, 2))
    for rows in (2, 4, 0, -1):
        with pytest.raises(ValueError, match=r"'tensor.expand_shape' at loc\(\"<source>\":18:\d+\): the output sizes expanding dimension 0 do not multiply to its size"):
            m.rows(np.arange(6.0), rows)
    # The entries keep working.
    np.testing.assert_array_equal(m.rows(np.arange(4.0), 2), [[0, 1], [2, 3]])
