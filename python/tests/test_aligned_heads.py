"""A one-loop elementwise op whose output starts between two vector
registers' addresses runs its first elements (fewer than a register's lanes)
apart, so that its vector loop stores aligned vectors (ad-vectorize
alignOutput): the split point is known at compile time for an aligned
allocation viewed at a static offset, and computed from the address
otherwise. Whatever the split, every element must be computed exactly once
and nothing outside the output written: these tests write into windows of a
buffer filled with a sentinel, at every offset within two registers and
every length from 0 to 40 (dynamic), at static offsets and lengths, into
numpy views at odd addresses, through a shift (RK4's stage, an output at
offset 1 of a length that may be 0 or 1), and through a gradient."""

import numpy as np
import pytest

import mlir_ad
from conftest import numerical_grad

SENTINEL = -7.0

DYNAMIC = """
// out = sentinel everywhere but [at, at + len), where it is exp(x) + x.
func.func @window(%x: tensor<?xT>, %at: index, %n: index) -> tensor<?xT> {
  %s = arith.constant -7.0 : T
  %c0 = arith.constant 0 : index
  %len = tensor.dim %x, %c0 : tensor<?xT>
  %e = tensor.empty(%n) : tensor<?xT>
  %filled = linalg.fill ins(%s : T) outs(%e : tensor<?xT>) -> tensor<?xT>
  %dest = tensor.extract_slice %filled[%at] [%len] [1] : tensor<?xT> to tensor<?xT>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<?xT>) outs(%dest : tensor<?xT>) {
  ^bb0(%a: T, %o: T):
    %ex = math.exp %a : T
    %r = arith.addf %ex, %a : T
    linalg.yield %r : T
  } -> tensor<?xT>
  %out = tensor.insert_slice %y into %filled[%at] [%len] [1] : tensor<?xT> into tensor<?xT>
  return %out : tensor<?xT>
}

// acc + x * 2 (adds to its output: an element computed twice shows).
func.func @accumulate(%x: tensor<?xT>, %acc: tensor<?xT>) -> tensor<?xT> {
  %two = arith.constant 2.0 : T
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<?xT>) outs(%acc : tensor<?xT>) {
  ^bb0(%a: T, %o: T):
    %m = arith.mulf %a, %two : T
    %s = arith.addf %o, %m : T
    linalg.yield %s : T
  } -> tensor<?xT>
  return %r : tensor<?xT>
}

// z_0 = x_0, z_i = x_i * y_{i-1}, then t = y + h z: RK4's stage, whose
// outputs past the first element start at offset 1.
func.func @stage(%x: tensor<?xT>, %y: tensor<?xT>, %h: T) -> tensor<?xT> {
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
  %t = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %shifted, %y : tensor<?xT>, tensor<?xT>, tensor<?xT>) outs(%init : tensor<?xT>) {
  ^bb0(%a: T, %b: T, %c: T, %out: T):
    %p = arith.mulf %a, %b : T
    %q = arith.mulf %h, %p : T
    %r = arith.addf %c, %q : T
    linalg.yield %r : T
  } -> tensor<?xT>
  return %t : tensor<?xT>
}

// Two stages in a loop, the last element's gradient.
func.func @stages(%x: tensor<?xT>, %steps: index) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %h = arith.constant 0.25 : T
  %n = tensor.dim %x, %c0 : tensor<?xT>
  %y = scf.for %i = %c0 to %steps step %c1 iter_args(%y = %x) -> tensor<?xT> {
    %t = func.call @stage(%x, %y, %h) : (tensor<?xT>, tensor<?xT>, T) -> tensor<?xT>
    %u = func.call @stage(%x, %t, %h) : (tensor<?xT>, tensor<?xT>, T) -> tensor<?xT>
    scf.yield %u : tensor<?xT>
  }
  %last = arith.subi %n, %c1 : index
  %v = tensor.extract %y[%last] : tensor<?xT>
  return %v : T
}
"""

TYPES = [("f64", np.float64, 1e-14), ("f32", np.float32, 1e-6)]


@pytest.fixture(scope="module", params=TYPES, ids=["f64", "f32"])
def dynamic(request):
    t, dtype, rtol = request.param
    return mlir_ad.compile(DYNAMIC.replace("T", t)), dtype, rtol


def test_windows_at_every_offset_and_length(dynamic, rng):
    m, dtype, rtol = dynamic
    for at in range(0, 33):
        for length in range(0, 41):
            n = at + length + 19
            x = rng.uniform(-1, 1, length).astype(dtype)
            out = m.window(x, at, n)
            want = np.full(n, SENTINEL, dtype)
            want[at:at + length] = np.exp(x) + x
            np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol,
                                       err_msg=f"at={at} length={length}")


def test_accumulating_into_views_at_odd_addresses(dynamic, rng):
    m, dtype, rtol = dynamic
    for skip in range(0, 18):
        for length in [0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 40, 100]:
            base = rng.uniform(-1, 1, skip + length).astype(dtype)
            acc = base[skip:]  # starts skip elements into numpy's buffer
            x = rng.uniform(-1, 1, length).astype(dtype)
            before = base.copy()
            out = m.accumulate(x, acc)
            np.testing.assert_allclose(out, before[skip:] + 2 * x, rtol=rtol,
                                       atol=rtol,
                                       err_msg=f"skip={skip} length={length}")


def _stage(x, y, h):
    return y + h * x * np.concatenate([[1.0], y[:-1]]).astype(x.dtype)


def test_shifted_stage_every_length(dynamic, rng):
    m, dtype, rtol = dynamic
    for n in range(0, 41):
        x = rng.uniform(-1, 1, n).astype(dtype)
        y = rng.uniform(-1, 1, n).astype(dtype)
        if n == 0:
            continue  # the slice of n - 1 elements would be out of range
        np.testing.assert_allclose(m.stage(x, y, dtype(0.5)),
                                   _stage(x, y, dtype(0.5)), rtol=4 * rtol,
                                   atol=4 * rtol, err_msg=f"n={n}")


@pytest.mark.parametrize("n,steps", [(1, 2), (2, 1), (7, 3), (9, 2), (17, 3),
                                     (40, 4), (1001, 2)])
def test_gradient_through_shifted_stages(n, steps, rng):
    m = mlir_ad.compile(DYNAMIC.replace("T", "f64"))
    x = rng.uniform(0.2, 1.0, n)

    def ref(x_, s_):
        y = x_
        for _ in range(s_):
            y = _stage(x_, _stage(x_, y, 0.25), 0.25)
        return y[-1]

    assert m.stages(x, steps) == pytest.approx(ref(x, steps), rel=1e-13)
    (g,) = mlir_ad.grad(m.stages, wrt=[0])(x, steps)
    (want,) = numerical_grad(ref, [x, steps], [0])
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-9)


STATIC = """
func.func @window(%x: tensor<LENxT>) -> tensor<SIZExT> {
  %s = arith.constant -7.0 : T
  %e = tensor.empty() : tensor<SIZExT>
  %filled = linalg.fill ins(%s : T) outs(%e : tensor<SIZExT>) -> tensor<SIZExT>
  %dest = tensor.extract_slice %filled[AT] [LEN] [1] : tensor<SIZExT> to tensor<LENxT>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<LENxT>) outs(%dest : tensor<LENxT>) {
  ^bb0(%a: T, %o: T):
    %ex = math.exp %a : T
    %r = arith.addf %ex, %a : T
    linalg.yield %r : T
  } -> tensor<LENxT>
  %out = tensor.insert_slice %y into %filled[AT] [LEN] [1] : tensor<LENxT> into tensor<SIZExT>
  return %out : tensor<SIZExT>
}
"""


@pytest.mark.parametrize("t,dtype,rtol", TYPES)
@pytest.mark.parametrize("at", [0, 1, 3, 5, 7, 8, 9, 13, 15])
@pytest.mark.parametrize("length", [7, 16, 33, 64, 70, 129])
def test_static_windows(t, dtype, rtol, at, length, rng):
    size = at + length + 11
    source = (STATIC.replace("SIZE", str(size)).replace("LEN", str(length))
              .replace("AT", str(at)).replace("T", t))
    m = mlir_ad.compile(source)
    x = rng.uniform(-1, 1, length).astype(dtype)
    want = np.full(size, SENTINEL, dtype)
    want[at:at + length] = np.exp(x) + x
    np.testing.assert_allclose(m.window(x), want, rtol=rtol, atol=rtol)


NARROW = """
func.func @window(%x: tensor<LENxf64>) -> tensor<SIZExi8> {
  %s = arith.constant -7 : i8
  %e = tensor.empty() : tensor<SIZExi8>
  %filled = linalg.fill ins(%s : i8) outs(%e : tensor<SIZExi8>) -> tensor<SIZExi8>
  %dest = tensor.extract_slice %filled[AT] [LEN] [1] : tensor<SIZExi8> to tensor<LENxi8>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<LENxf64>) outs(%dest : tensor<LENxi8>) {
  ^bb0(%a: f64, %o: i8):
    %c = arith.fptosi %a : f64 to i8
    linalg.yield %c : i8
  } -> tensor<LENxi8>
  %out = tensor.insert_slice %y into %filled[AT] [LEN] [1] : tensor<LENxi8> into tensor<SIZExi8>
  return %out : tensor<SIZExi8>
}
"""


@pytest.mark.parametrize("at", [1, 5, 63])
@pytest.mark.parametrize("length", [33, 40, 63, 64, 65, 130])
def test_static_windows_of_narrower_elements(at, length, rng):
    # The head is counted in i8 (up to 63 at 512 bits) while the tile is
    # set by f64 (8 lanes): a static head longer than the loop made views
    # past its end (review finding).
    size = at + length + 9
    source = (NARROW.replace("SIZE", str(size)).replace("LEN", str(length))
              .replace("AT", str(at)))
    m = mlir_ad.compile(source)
    x = rng.uniform(-100, 100, length)
    want = np.full(size, -7, np.int8)
    want[at:at + length] = np.trunc(x).astype(np.int8)
    np.testing.assert_array_equal(m.window(x), want)
