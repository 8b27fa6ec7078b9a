"""Memory at the boundary: inputs are neither copied needlessly nor modified,
any array layout gives the right answer, results own their memory, nothing
leaks, concurrent calls are safe, and memref arguments are written through."""

import gc
import threading
import tracemalloc

import numpy as np
import pytest

import mlir_ad
from conftest import run_isolated

SOURCE = """
// Writes into its argument's tensor: tensor.insert, then a linalg.generic
// whose output is the argument.
func.func @writes(%x: tensor<?xf64>, %v: f64) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %y = tensor.insert %v into %x[%c0] : tensor<?xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%y : tensor<?xf64>) {
  ^bb0(%o: f64):
    %q = arith.mulf %o, %v : f64
    linalg.yield %q : f64
  } -> tensor<?xf64>
  return %z : tensor<?xf64>
}

// A scalar loss of the same, for grad: sum(writes(x, v)^2).
func.func @writes_loss(%x: tensor<?xf64>, %v: f64) -> f64 {
  %w = func.call @writes(%x, %v) : (tensor<?xf64>, f64) -> tensor<?xf64>
  %sq = arith.mulf %w, %w : tensor<?xf64>
  %z = arith.constant 0.0 : f64
  %init = tensor.from_elements %z : tensor<f64>
  %r = linalg.reduce ins(%sq : tensor<?xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%a: f64, %b: f64) {
      %s = arith.addf %a, %b : f64
      linalg.yield %s : f64
    }
  %e = tensor.extract %r[] : tensor<f64>
  return %e : f64
}

// Fills its argument in place through linalg.fill on the tensor.
func.func @fill_arg(%x: tensor<2x3xf64>, %v: f64) -> tensor<2x3xf64> {
  %f = linalg.fill ins(%v : f64) outs(%x : tensor<2x3xf64>) -> tensor<2x3xf64>
  return %f : tensor<2x3xf64>
}

// A @ B + C on dynamic shapes: sensitive to the layout of every operand.
func.func @affine(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>, %c: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %p = linalg.matmul ins(%a, %b : tensor<?x?xf64>, tensor<?x?xf64>) outs(%c : tensor<?x?xf64>) -> tensor<?x?xf64>
  return %p : tensor<?x?xf64>
}

func.func @weighted_sum(%x: tensor<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf64>
  %m = tensor.dim %x, %c1 : tensor<?x?xf64>
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %r2 = scf.for %j = %c0 to %m step %c1 iter_args(%acc2 = %acc) -> (f64) {
      %v = tensor.extract %x[%i, %j] : tensor<?x?xf64>
      %k = arith.muli %i, %m : index
      %l = arith.addi %k, %j : index
      %li = arith.index_cast %l : index to i64
      %lf = arith.sitofp %li : i64 to f64
      %w = arith.mulf %v, %lf : f64
      %s = math.sin %w : f64
      %a = arith.addf %acc2, %s : f64
      scf.yield %a : f64
    }
    scf.yield %r2 : f64
  }
  return %r : f64
}

func.func @identity(%x: tensor<?xf64>) -> tensor<?xf64> {
  return %x : tensor<?xf64>
}

func.func @twice(%x: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  return %x, %x : tensor<?xf64>, tensor<?xf64>
}

func.func @constant() -> tensor<3xf64> {
  %c = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf64>
  return %c : tensor<3xf64>
}

func.func @sines(%x: tensor<?xf64>) -> tensor<?xf64> {
  %s = math.sin %x : tensor<?xf64>
  return %s : tensor<?xf64>
}

func.func @sum_sin(%x: tensor<?xf64>) -> f64 {
  %s = math.sin %x : tensor<?xf64>
  %z = arith.constant 0.0 : f64
  %init = tensor.from_elements %z : tensor<f64>
  %r = linalg.reduce ins(%s : tensor<?xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%a: f64, %b: f64) {
      %t = arith.addf %a, %b : f64
      linalg.yield %t : f64
    }
  %e = tensor.extract %r[] : tensor<f64>
  return %e : f64
}

func.func @first(%x: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %x[%c0] : tensor<?xf64>
  return %e : f64
}

// memref arguments are buffers the function may write.
func.func @fill_memref(%m: memref<?xf64>, %v: f64) {
  linalg.fill ins(%v : f64) outs(%m : memref<?xf64>)
  return
}
"""


@pytest.fixture(scope="module")
def m():
    return mlir_ad.compile(SOURCE)


# ----------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------

def test_call_does_not_modify_its_input(m):
    x = np.array([1.0, 2.0, 3.0, 4.0])
    keep = x.copy()
    r = m.writes(x, 3.0)
    np.testing.assert_array_equal(r, [9.0, 6.0, 9.0, 12.0])
    np.testing.assert_array_equal(x, keep)
    assert not np.shares_memory(r, x)
    r = m.fill_arg(np.ascontiguousarray(np.arange(6.0).reshape(2, 3)), 7.0)
    np.testing.assert_array_equal(r, np.full((2, 3), 7.0))


def test_gradients_do_not_modify_their_inputs(m):
    x = np.array([1.0, -2.0, 0.5])
    keep = x.copy()
    v = 1.5
    gx, gv = mlir_ad.grad(m.writes_loss)(x, v)
    w = np.concatenate([[v], x[1:]]) * v
    np.testing.assert_allclose(gx, np.concatenate([[0.0], 2 * w[1:] * v]))
    np.testing.assert_allclose(gv, np.sum(2 * w * np.concatenate([[2 * v], x[1:]])))
    np.testing.assert_array_equal(x, keep)
    value, _ = mlir_ad.value_and_grad(m.writes_loss)(x, v)
    assert value == pytest.approx(np.sum(w * w))
    r, pullback = mlir_ad.vjp(m.writes)(x, v)
    pullback(np.ones(3))
    np.testing.assert_array_equal(x, keep)
    np.testing.assert_array_equal(r, w)


def test_contiguous_inputs_are_not_copied(m):
    x = np.ones(1_000_000)  # 8 MB
    m.first(x)
    mlir_ad.grad(m.first)(x)
    tracemalloc.start()
    try:
        assert m.first(x) == 1.0
        assert tracemalloc.get_traced_memory()[1] < 100_000  # no copy of x
        tracemalloc.reset_peak()
        # A non-contiguous view is copied (numpy reports the copy).
        assert m.first(x[::2]) == 1.0
        assert tracemalloc.get_traced_memory()[1] > 4_000_000
    finally:
        tracemalloc.stop()
    # The identity's result is a new buffer, not the input.
    r = m.identity(x[:5])
    np.testing.assert_array_equal(r, x[:5])
    assert not np.shares_memory(r, x)


def test_read_only_input(m):
    # Tensor arguments are read-only to the compiled code: a read-only array
    # (np.frombuffer of bytes, a memory-mapped file opened "r", an array
    # flagged unwriteable) is a valid input.
    x = np.linspace(-1.0, 1.0, 6)
    x.flags.writeable = False
    np.testing.assert_allclose(m.sines(x), np.sin(x))
    (g,) = mlir_ad.grad(m.sum_sin)(x)
    np.testing.assert_allclose(g, np.cos(x))
    b = np.frombuffer(np.arange(4.0).tobytes(), dtype=np.float64)
    np.testing.assert_allclose(m.sines(b), np.sin(np.arange(4.0)))


LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: np.ascontiguousarray(a.T).T,
    "fortran": lambda a: np.asfortranarray(a),
    "every_other_row": lambda a: np.repeat(a, 2, axis=0)[::2],
    "every_third_column": lambda a: np.repeat(a, 3, axis=1)[:, 1::3],
    "reversed": lambda a: a[::-1, ::-1].copy()[::-1, ::-1],
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_non_contiguous_inputs(m, rng, layout):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2))
    c = rng.standard_normal((3, 2))
    la, lb, lc = (LAYOUTS[layout](v) for v in (a, b, c))
    np.testing.assert_array_equal(la, a)
    keep = [v.copy() for v in (la, lb, lc)]
    np.testing.assert_allclose(m.affine(la, lb, lc), a @ b + c, rtol=1e-12)
    for v, k in zip((la, lb, lc), keep):
        np.testing.assert_array_equal(v, k)
    big = rng.standard_normal((5, 7))
    lbig = LAYOUTS[layout](big)
    (g,) = mlir_ad.grad(m.weighted_sum)(lbig)
    weights = np.arange(35.0).reshape(5, 7)
    np.testing.assert_allclose(g, np.cos(big * weights) * weights, rtol=1e-12)
    assert m.weighted_sum(lbig) == pytest.approx(np.sum(np.sin(big * weights)))


def test_broadcast_and_sliced_views(m):
    row = np.array([1.0, 2.0, 3.0, 4.0])
    view = np.broadcast_to(row, (3, 4))  # zero strides, read-only
    b = np.eye(4)
    c = np.zeros((3, 4))
    np.testing.assert_allclose(m.affine(view, b, c), np.tile(row, (3, 1)))
    x = np.arange(20.0)
    np.testing.assert_allclose(m.sines(x[3:17:4]), np.sin(x[3:17:4]))
    np.testing.assert_allclose(m.sines(x[::-1]), np.sin(x[::-1]))
    (g,) = mlir_ad.grad(m.sum_sin)(x[::-3])
    np.testing.assert_allclose(g, np.cos(x[::-3]))


def test_python_lists_and_tuples(m):
    np.testing.assert_allclose(m.sines([0.0, 0.5, 1]), np.sin([0.0, 0.5, 1.0]))
    np.testing.assert_allclose(m.sines((1, 2)), np.sin([1.0, 2.0]))
    (g,) = mlir_ad.grad(m.sum_sin)([0.25, 0.5])
    np.testing.assert_allclose(g, np.cos([0.25, 0.5]))
    r = m.affine([[1, 2]], [[3], [4]], [[0.5]])
    np.testing.assert_allclose(r, [[11.5]])


# ----------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------

def _owner(array):
    """The end of an array's base chain."""
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    return array


def test_results_own_their_memory(m):
    x = np.arange(6.0)
    r = m.sines(x)
    assert r.flags.writeable and r.flags.c_contiguous and r.flags.aligned
    assert not isinstance(_owner(r), np.ndarray) or _owner(r) is r
    assert not np.shares_memory(r, x)
    r[:] = -1.0  # writable, and writing does not touch anything else
    np.testing.assert_array_equal(x, np.arange(6.0))
    np.testing.assert_allclose(m.sines(x), np.sin(x))


def test_constant_results_are_fresh_copies(m):
    a = m.constant()
    a[0] = 100.0
    b = m.constant()
    np.testing.assert_array_equal(b, [1.0, 2.0, 3.0])
    assert not np.shares_memory(a, b)


def test_same_value_returned_twice_gives_two_arrays(m):
    x = np.arange(4.0)
    a, b = m.twice(x)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x)
    assert not np.shares_memory(a, b)
    assert not np.shares_memory(a, x) and not np.shares_memory(b, x)
    a[0] = 9.0
    assert b[0] == 0.0


def test_gradients_are_fresh_arrays(m):
    x = np.arange(3.0)
    g1 = mlir_ad.grad(m.sum_sin, wrt=0)(x)
    g2 = mlir_ad.grad(m.sum_sin, wrt=0)(x)
    assert not np.shares_memory(g1, g2)
    g1[:] = 0
    np.testing.assert_allclose(g2, np.cos(x))


STRIDED = """
// A view of the argument with a stride: the result is a strided slice.
func.func @every_other(%x: tensor<8xf64>) -> tensor<3xf64> {
  %s = tensor.extract_slice %x[1] [3] [2] : tensor<8xf64> to tensor<3xf64>
  return %s : tensor<3xf64>
}

func.func @every_other_loss(%x: tensor<8xf64>) -> f64 {
  %s = tensor.extract_slice %x[1] [3] [2] : tensor<8xf64> to tensor<3xf64>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %a = tensor.extract %s[%c0] : tensor<3xf64>
  %b = tensor.extract %s[%c2] : tensor<3xf64>
  %p = arith.mulf %a, %b : f64
  return %p : f64
}
"""


def test_strided_slice_result():
    # (In a module of its own: the whole module is compiled for each entry.)
    m = mlir_ad.compile(STRIDED)
    x = np.arange(8.0)
    np.testing.assert_array_equal(m.every_other(x), [1.0, 3.0, 5.0])
    (g,) = mlir_ad.grad(m.every_other_loss)(x)
    expected = np.zeros(8)
    expected[1], expected[5] = 5.0, 1.0
    np.testing.assert_array_equal(g, expected)


def test_results_survive_the_module():
    src = SOURCE.replace("@sines(", "@sines_survivor(")
    mod = mlir_ad.compile(src)
    x = np.linspace(0, 1, 1000)
    r = mod.sines_survivor(x)
    g = mlir_ad.grad(mod.sum_sin)
    del mod
    gc.collect()
    mlir_ad.clear_cache()
    garbage = [np.full(1000, 7.0) for _ in range(50)]
    np.testing.assert_allclose(r, np.sin(x))
    # A gradient function keeps what it needs alive.
    (gx,) = g(x)
    np.testing.assert_allclose(gx, np.cos(x))
    del garbage, r, gx
    gc.collect()


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_no_leak_across_many_calls(m):
    x = np.random.default_rng(0).standard_normal(20000)  # 160 kB per buffer
    grad = mlir_ad.grad(m.sum_sin)
    vjp = mlir_ad.vjp(m.sines)
    for _ in range(20):
        grad(x)
        vjp(x)[1](x)
        m.twice(x)
    gc.collect()
    before = _rss_bytes()
    for _ in range(300):
        grad(x)
        y, pullback = vjp(x)
        pullback(x)
        m.twice(x)
        try:
            m.sines(x.reshape(100, 200))
        except ValueError:
            pass
    gc.collect()
    # 300 iterations allocate ~300 MB in total; a leak of even one buffer per
    # iteration would add 48 MB.
    assert _rss_bytes() - before < 16 * 2 ** 20


def test_large_blocks_kept_between_calls(m):
    # Blocks of 32 MB and more that compiled code frees are kept (up to
    # 256 MB) for the next calls: results stay right with fresh inputs,
    # in threads too, and memory stays bounded.
    n = 5 * 2 ** 20  # 40 MB per buffer
    grad = mlir_ad.grad(m.sum_sin)
    before = None
    for k in range(8):
        x = np.full(n, 0.1 * k) + np.linspace(0, 1, n)
        np.testing.assert_allclose(m.sines(x)[:: 2 ** 16],
                                   np.sin(x)[:: 2 ** 16], rtol=1e-15)
        (g,) = grad(x)
        np.testing.assert_allclose(g[:: 2 ** 16], np.cos(x)[:: 2 ** 16],
                                   rtol=1e-15)
        del g
        gc.collect()
        if k == 1:
            before = _rss_bytes()
    assert _rss_bytes() - before < 300 * 2 ** 20
    errors = []

    def work(seed):
        x = np.full(n // 2, float(seed))
        for _ in range(3):
            if not np.allclose(m.sines(x)[:: 2 ** 16],
                               np.sin(x)[:: 2 ** 16], rtol=1e-15, atol=0):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_concurrent_calls(m, rng):
    a = rng.standard_normal((30, 30))
    grad = mlir_ad.grad(m.weighted_sum)
    (expected,) = grad(a)
    errors = []

    def work(seed):
        local = np.random.default_rng(seed)
        for _ in range(30):
            (g,) = grad(a)
            if not np.array_equal(g, expected):
                errors.append("grad")
            x = local.standard_normal(50)
            if not np.allclose(m.sines(x), np.sin(x)):
                errors.append("sin")

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# ----------------------------------------------------------------------------
# memref arguments: borrowed buffers the function writes
# ----------------------------------------------------------------------------

def test_memref_argument_is_written_through(m):
    buf = np.zeros(4)
    assert m.fill_memref(buf, 2.5) is None
    np.testing.assert_array_equal(buf, np.full(4, 2.5))


def test_memref_argument_that_cannot_be_written_through(m):
    # A strided view or a read-only array cannot be handed to code that
    # writes it: either the write reaches the caller's array or the call is
    # refused; silently writing into a temporary copy loses the result.
    buf = np.zeros(8)
    try:
        m.fill_memref(buf[::2], 2.5)
    except (ValueError, TypeError):
        pass
    else:
        np.testing.assert_array_equal(buf[::2], np.full(4, 2.5))
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises((ValueError, TypeError)):
        m.fill_memref(ro, 1.0)
    assert not ro.any()


# ----------------------------------------------------------------------------
# Dynamic shapes that do not agree
# ----------------------------------------------------------------------------

def test_mismatched_dynamic_shapes_do_not_crash_the_process():
    # linalg.matmul of a 50x40 and a 50x40 matrix: the inner dimensions
    # disagree. Python code must get an exception, not a corrupted heap.
    proc = run_isolated("""
        import numpy as np, mlir_ad
        m = mlir_ad.compile('''
        func.func @mm(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>) -> tensor<?x?xf64> {
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %m = tensor.dim %a, %c0 : tensor<?x?xf64>
          %n = tensor.dim %b, %c1 : tensor<?x?xf64>
          %z = arith.constant 0.0 : f64
          %e = tensor.empty(%m, %n) : tensor<?x?xf64>
          %f = linalg.fill ins(%z : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
          %p = linalg.matmul ins(%a, %b : tensor<?x?xf64>, tensor<?x?xf64>) outs(%f : tensor<?x?xf64>) -> tensor<?x?xf64>
          return %p : tensor<?x?xf64>
        }
        ''')
        a = np.ones((50, 40))
        for _ in range(20):
            try:
                m.mm(a, a)
            except (ValueError, RuntimeError) as e:
                print("raised", type(e).__name__)
                break
        else:
            print("no error")
        junk = [np.ones(1000) for _ in range(1000)]
        print("alive")
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "raised" in proc.stdout, proc.stdout
