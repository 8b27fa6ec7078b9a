"""Gradients of scalar programs (straight-line code, branches, loops, while
loops, calls, recursion, unstructured control flow) against closed forms and
central finite differences of independent numpy/Python references, in f64
and f32."""

import math
import re

import numpy as np
import pytest

import mlir_ad
from conftest import assert_grads_close, numerical_grad

SOURCE = """
func.func @trig(%x: T, %y: T) -> T {
  %one = arith.constant 1.0 : T
  %s = math.sin %x : T
  %y2 = arith.mulf %y, %y : T
  %y3 = arith.mulf %y2, %y : T
  %a = arith.mulf %s, %y3 : T
  %q = arith.divf %x, %y : T
  %e = math.exp %q : T
  %xx = arith.mulf %x, %x : T
  %l1 = arith.addf %one, %xx : T
  %l = math.log %l1 : T
  %at = math.atan2 %x, %y : T
  %xy = arith.mulf %x, %y : T
  %th = math.tanh %xy : T
  %r1 = arith.addf %a, %e : T
  %r2 = arith.subf %r1, %l : T
  %r3 = arith.addf %r2, %at : T
  %r4 = arith.addf %r3, %th : T
  return %r4 : T
}

func.func @powers(%x: T, %y: T) -> T {
  %p = math.powf %x, %y : T
  %s = math.sqrt %x : T
  %c = math.cbrt %y : T
  %m = arith.maximumf %p, %s : T
  %n = arith.minimumf %c, %x : T
  %r = arith.addf %m, %n : T
  return %r : T
}

// A branch on data: the two arms compute different functions.
func.func @branch(%x: T, %y: T) -> T {
  %c = arith.cmpf ogt, %x, %y : T
  %r = scf.if %c -> (T) {
    %a = arith.mulf %x, %x : T
    %b = arith.mulf %a, %y : T
    scf.yield %b : T
  } else {
    %s = math.sin %x : T
    %b = arith.addf %s, %y : T
    %e = math.exp %b : T
    scf.yield %e : T
  }
  return %r : T
}

// A while loop whose trip count depends on the data:
//   s = b; while s < 10: s = s * a + 1
func.func @while_growth(%a: T, %b: T) -> T {
  %ten = arith.constant 10.0 : T
  %one = arith.constant 1.0 : T
  %r = scf.while (%s = %b) : (T) -> T {
    %go = arith.cmpf olt, %s, %ten : T
    scf.condition(%go) %s : T
  } do {
  ^bb0(%s: T):
    %m = arith.mulf %s, %a : T
    %n = arith.addf %m, %one : T
    scf.yield %n : T
  }
  return %r : T
}

// A damped spring integrated for n steps (explicit Euler, dt = 0.1).
func.func @spring(%x0: T, %v0: T, %k: T, %c: T, %n: index) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %dt = arith.constant 0.1 : T
  %half = arith.constant 0.5 : T
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %x0, %v = %v0) -> (T, T) {
    %kx = arith.mulf %k, %x : T
    %cv = arith.mulf %c, %v : T
    %f = arith.addf %kx, %cv : T
    %a = arith.negf %f : T
    %dv = arith.mulf %a, %dt : T
    %v1 = arith.addf %v, %dv : T
    %dx = arith.mulf %v1, %dt : T
    %x1 = arith.addf %x, %dx : T
    scf.yield %x1, %v1 : T, T
  }
  %xx = arith.mulf %r#0, %r#0 : T
  %kxx = arith.mulf %xx, %k : T
  %vv = arith.mulf %r#1, %r#1 : T
  %e = arith.addf %kxx, %vv : T
  %e2 = arith.mulf %e, %half : T
  return %e2 : T
}

// Self recursion: x^n.
func.func @power(%x: T, %n: i32) -> T {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %one = arith.constant 1.0 : T
  %done = arith.cmpi sle, %n, %c0 : i32
  %r = scf.if %done -> (T) {
    scf.yield %one : T
  } else {
    %m = arith.subi %n, %c1 : i32
    %p = func.call @power(%x, %m) : (T, i32) -> T
    %q = arith.mulf %p, %x : T
    scf.yield %q : T
  }
  return %r : T
}

// Tree recursion: f(0) = 1, f(1) = x, f(n) = f(n-1) + x f(n-2).
func.func @fib(%x: T, %n: i32) -> T {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %one = arith.constant 1.0 : T
  %small = arith.cmpi slt, %n, %c2 : i32
  %r = scf.if %small -> (T) {
    %is0 = arith.cmpi slt, %n, %c1 : i32
    %b = arith.select %is0, %one, %x : T
    scf.yield %b : T
  } else {
    %n1 = arith.subi %n, %c1 : i32
    %n2 = arith.subi %n, %c2 : i32
    %f1 = func.call @fib(%x, %n1) : (T, i32) -> T
    %f2 = func.call @fib(%x, %n2) : (T, i32) -> T
    %xf2 = arith.mulf %x, %f2 : T
    %s = arith.addf %f1, %xf2 : T
    scf.yield %s : T
  }
  return %r : T
}

// Mutual recursion with a data-dependent depth.
func.func @ping(%x: T, %y: T) -> T {
  %one = arith.constant 1.0 : T
  %half = arith.constant 0.5 : T
  %low = arith.cmpf olt, %y, %one : T
  %r = scf.if %low -> (T) {
    %e = arith.mulf %x, %y : T
    scf.yield %e : T
  } else {
    %h = arith.mulf %y, %half : T
    %p = func.call @pong(%x, %h) : (T, T) -> T
    scf.yield %p : T
  }
  return %r : T
}

func.func @pong(%x: T, %y: T) -> T {
  %quarter = arith.constant 0.25 : T
  %sx = math.sin %x : T
  %s = arith.mulf %sx, %quarter : T
  %z = arith.addf %y, %s : T
  %q = func.call @ping(%x, %z) : (T, T) -> T
  %t = math.tanh %q : T
  %u = arith.addf %t, %y : T
  return %u : T
}

// Calls between functions: a leaf used twice, a middle layer, a top.
func.func private @leaf(%x: T) -> T {
  %s = math.sin %x : T
  %p = arith.mulf %s, %x : T
  return %p : T
}

func.func @middle(%x: T, %w: T) -> T {
  %a = func.call @leaf(%x) : (T) -> T
  %xw = arith.mulf %x, %w : T
  %b = func.call @leaf(%xw) : (T) -> T
  %r = arith.addf %a, %b : T
  return %r : T
}

func.func @top(%x: T, %w: T) -> T {
  %m = func.call @middle(%x, %w) : (T, T) -> T
  %e = math.exp %w : T
  %r = arith.mulf %m, %e : T
  return %r : T
}

// Unstructured control flow: a loop of blocks (x <- x * w, n times), then a
// branch on the sign of the result.
func.func @blocks(%x: T, %w: T, %n: index) -> T {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^loop(%c0, %x : index, T)
^loop(%i: index, %acc: T):
  %more = arith.cmpi ult, %i, %n : index
  cf.cond_br %more, ^body, ^exit
^body:
  %m = arith.mulf %acc, %w : T
  %i1 = arith.addi %i, %c1 : index
  cf.br ^loop(%i1, %m : index, T)
^exit:
  %zero = arith.constant 0.0 : T
  %pos = arith.cmpf ogt, %acc, %zero : T
  cf.cond_br %pos, ^p, ^q
^p:
  %s = math.sqrt %acc : T
  return %s : T
^q:
  %t = arith.mulf %acc, %acc : T
  return %t : T
}

// floor has a zero derivative; the product rule still applies.
func.func @floor_times(%x: T) -> T {
  %f = math.floor %x : T
  %r = arith.mulf %f, %x : T
  return %r : T
}
"""

DTYPES = {
    "f64": dict(rtol=1e-6, atol=1e-8, np=np.float64),
    "f32": dict(rtol=2e-3, atol=1e-4, np=np.float32),
}


@pytest.fixture(scope="module", params=list(DTYPES))
def mod(request):
    return request.param, mlir_ad.compile(re.sub(r"\bT\b", request.param,
                                                 SOURCE))


def _tol(dtype):
    return dict(rtol=DTYPES[dtype]["rtol"], atol=DTYPES[dtype]["atol"])


def test_type_substitution_left_nothing(mod):
    dtype, m = mod
    assert m.trig.signature == ((dtype, dtype), (dtype,))
    assert m.spring.signature == ((dtype,) * 4 + ("index",), (dtype,))


# References in plain Python (float64).

def trig_ref(x, y):
    return (math.sin(x) * y ** 3 + math.exp(x / y) - math.log(1 + x * x) +
            math.atan2(x, y) + math.tanh(x * y))


def trig_grad(x, y):
    dx = (math.cos(x) * y ** 3 + math.exp(x / y) / y - 2 * x / (1 + x * x) +
          y / (x * x + y * y) + y * (1 - math.tanh(x * y) ** 2))
    dy = (3 * math.sin(x) * y ** 2 - math.exp(x / y) * x / y ** 2 -
          x / (x * x + y * y) + x * (1 - math.tanh(x * y) ** 2))
    return dx, dy


@pytest.mark.parametrize("x,y", [(0.3, 1.7), (-1.2, 0.8), (2.5, -1.5)])
def test_trig_closed_form(mod, x, y):
    dtype, m = mod
    tol = _tol(dtype)
    assert m.trig(x, y) == pytest.approx(trig_ref(x, y), rel=tol["rtol"],
                                         abs=tol["atol"])
    g = mlir_ad.grad(m.trig)(x, y)
    assert isinstance(g, tuple) and len(g) == 2
    assert all(isinstance(v, float) for v in g)
    assert_grads_close(g, trig_grad(x, y), **tol)


def test_trig_value_and_grad(mod):
    dtype, m = mod
    value, grads = mlir_ad.value_and_grad(m.trig)(0.4, 1.1)
    assert value == m.trig(0.4, 1.1)
    assert_grads_close(grads, trig_grad(0.4, 1.1), **_tol(dtype))


def powers_ref(x, y):
    return max(x ** y, math.sqrt(x)) + min(math.copysign(abs(y) ** (1 / 3), y), x)


@pytest.mark.parametrize("x,y", [(1.7, 2.3), (0.6, 0.4), (2.0, -8.5)])
def test_powers_against_finite_differences(mod, x, y):
    dtype, m = mod
    tol = _tol(dtype)
    assert m.powers(x, y) == pytest.approx(powers_ref(x, y), rel=tol["rtol"])
    assert_grads_close(mlir_ad.grad(m.powers)(x, y),
                       numerical_grad(powers_ref, [x, y], [0, 1]), rtol=1e-4,
                       atol=1e-5)


def branch_ref(x, y):
    return x * x * y if x > y else math.exp(math.sin(x) + y)


@pytest.mark.parametrize("x,y", [(2.0, 0.5), (0.5, 2.0), (-1.0, -0.3), (1.3, -2.0)])
def test_branch_on_data(mod, x, y):
    dtype, m = mod
    tol = _tol(dtype)
    assert m.branch(x, y) == pytest.approx(branch_ref(x, y), rel=tol["rtol"])
    if x > y:
        expected = (2 * x * y, x * x)
    else:
        e = math.exp(math.sin(x) + y)
        expected = (math.cos(x) * e, e)
    assert_grads_close(mlir_ad.grad(m.branch)(x, y), expected, **tol)


def while_ref(a, b):
    s, n = b, 0
    while s < 10:
        s = s * a + 1
        n += 1
    return s, n


@pytest.mark.parametrize("a,b", [(1.5, 0.7), (2.1, 3.3), (1.2, 9.5), (3.0, 12.0)])
def test_while_data_dependent_trip_count(mod, a, b):
    dtype, m = mod
    tol = _tol(dtype)
    value, trips = while_ref(a, b)
    assert m.while_growth(a, b) == pytest.approx(value, rel=tol["rtol"])
    # The trip count is locally constant at these points, so the function is
    # smooth there: s_n = a^n b + sum_{k<n} a^k.
    expected = numerical_grad(lambda a_, b_: while_ref(a_, b_)[0], [a, b],
                              [0, 1])
    assert_grads_close(mlir_ad.grad(m.while_growth)(a, b), expected,
                       rtol=max(tol["rtol"], 1e-5), atol=tol["atol"])
    if trips == 0:
        assert mlir_ad.grad(m.while_growth)(a, b) == (0.0, 1.0)


def spring_ref(x0, v0, k, c, n):
    x, v = x0, v0
    for _ in range(n):
        v = v + (-(k * x + c * v)) * 0.1
        x = x + v * 0.1
    return 0.5 * (k * x * x + v * v)


@pytest.mark.parametrize("n", [0, 1, 4, 37])
def test_scf_for_dynamic_trip_count(mod, n):
    dtype, m = mod
    tol = _tol(dtype)
    args = [1.0, 0.3, 2.5, 0.4, n]
    assert m.spring(*args) == pytest.approx(spring_ref(*args), rel=tol["rtol"])
    expected = numerical_grad(spring_ref, args, [0, 1, 2, 3])
    got = mlir_ad.grad(m.spring)(*args)
    assert len(got) == 4
    assert_grads_close(got, expected, rtol=max(tol["rtol"], 1e-5),
                       atol=max(tol["atol"], 1e-7))


@pytest.mark.parametrize("n", [0, 1, 5, 9])
def test_self_recursion(mod, n):
    dtype, m = mod
    x = 1.3
    assert m.power(x, n) == pytest.approx(x ** n, rel=_tol(dtype)["rtol"])
    g = mlir_ad.grad(m.power, wrt=0)(x, n)
    assert g == pytest.approx(n * x ** (n - 1) if n else 0.0,
                              rel=_tol(dtype)["rtol"], abs=1e-12)


def fib_ref(x, n):
    if n < 2:
        return 1.0 if n < 1 else x
    return fib_ref(x, n - 1) + x * fib_ref(x, n - 2)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 12])
def test_tree_recursion(mod, n):
    dtype, m = mod
    tol = _tol(dtype)
    x = 0.7
    assert m.fib(x, n) == pytest.approx(fib_ref(x, n), rel=tol["rtol"])
    (g,) = mlir_ad.grad(m.fib)(x, n)
    assert g == pytest.approx(numerical_grad(fib_ref, [x, n], [0])[0],
                              rel=max(tol["rtol"], 1e-6), abs=1e-7)



def test_tapes_sized_by_earlier_calls(mod):
    """A growable tape starts with as many rows as the largest earlier call
    needed (a global per tape, raised atomically): gradients stay right as
    calls shrink and grow again, one after another and from several threads
    at once."""
    from concurrent.futures import ThreadPoolExecutor
    dtype, m = mod
    tol = _tol(dtype)
    x = 0.7
    sizes = [12, 2, 16, 0, 9, 17, 1]
    tree = {n: numerical_grad(fib_ref, [x, n], [0])[0] for n in sizes}
    grad_fib = mlir_ad.grad(m.fib, wrt=0)
    for n in sizes:
        assert grad_fib(x, n) == pytest.approx(tree[n], rel=max(tol["rtol"], 1e-6),
                                               abs=1e-7)
    starts = [0.7, 9.5, 0.01, 3.0, 0.2]  # 0 to 7 trips of the while loop
    loop = {b: numerical_grad(lambda a_, b_: while_ref(a_, b_)[0], [1.5, b],
                              [0, 1]) for b in starts}
    grad_while = mlir_ad.grad(m.while_growth)
    with ThreadPoolExecutor(max_workers=4) as pool:
        trees = list(pool.map(lambda n: grad_fib(x, n), sizes * 4))
        loops = list(pool.map(lambda b: grad_while(1.5, b), starts * 4))
    for n, g in zip(sizes * 4, trees):
        assert g == pytest.approx(tree[n], rel=max(tol["rtol"], 1e-6), abs=1e-7)
    for b, g in zip(starts * 4, loops):
        assert_grads_close(g, loop[b], rtol=max(tol["rtol"], 1e-5),
                           atol=tol["atol"])

def ping_ref(x, y):
    if y < 1:
        return x * y
    return pong_ref(x, y * 0.5)


def pong_ref(x, y):
    z = y + 0.25 * math.sin(x)
    return math.tanh(ping_ref(x, z)) + y


@pytest.mark.parametrize("x,y", [(0.4, 0.5), (0.9, 3.0), (-0.6, 11.0)])
def test_mutual_recursion(mod, x, y):
    dtype, m = mod
    tol = _tol(dtype)
    assert m.ping(x, y) == pytest.approx(ping_ref(x, y), rel=tol["rtol"])
    assert_grads_close(mlir_ad.grad(m.ping)(x, y),
                       numerical_grad(ping_ref, [x, y], [0, 1]),
                       rtol=max(tol["rtol"], 1e-5), atol=tol["atol"])


def top_ref(x, w):
    leaf = lambda t: math.sin(t) * t  # noqa: E731
    return (leaf(x) + leaf(x * w)) * math.exp(w)


def test_calls_between_functions(mod):
    dtype, m = mod
    tol = _tol(dtype)
    x, w = 0.8, -0.6
    assert m.top(x, w) == pytest.approx(top_ref(x, w), rel=tol["rtol"])
    assert_grads_close(mlir_ad.grad(m.top)(x, w),
                       numerical_grad(top_ref, [x, w], [0, 1]),
                       rtol=max(tol["rtol"], 1e-6), atol=tol["atol"])
    # The callee alone, through its own entry point.
    dleaf = lambda t: math.cos(t) * t + math.sin(t)  # noqa: E731
    assert_grads_close(mlir_ad.grad(m.middle)(x, w),
                       (dleaf(x) + w * dleaf(x * w), x * dleaf(x * w)), **tol)


@pytest.mark.parametrize("x,w,n", [(1.5, 1.1, 3), (-2.0, 0.9, 2), (0.7, -1.3, 5),
                                   (4.0, 0.5, 0)])
def test_unstructured_control_flow(mod, x, w, n):
    dtype, m = mod
    tol = _tol(dtype)
    acc = x * w ** n
    expected_value = math.sqrt(acc) if acc > 0 else acc * acc
    assert m.blocks(x, w, n) == pytest.approx(expected_value, rel=tol["rtol"])
    if acc > 0:
        dacc = 0.5 / math.sqrt(acc)
    else:
        dacc = 2 * acc
    expected = (dacc * w ** n, dacc * x * n * w ** (n - 1) if n else 0.0)
    assert_grads_close(mlir_ad.grad(m.blocks)(x, w, n), expected, **tol)


@pytest.mark.parametrize("x", [2.5, -0.5, 3.0 + 1e-3])
def test_floor_has_zero_derivative(mod, x):
    dtype, m = mod
    assert mlir_ad.grad(m.floor_times, wrt=0)(x) == pytest.approx(math.floor(x))


# sin and cos: for a scalar, the forward function computes the derivative
# (cos of sin's operand, sin of cos's) next to the op and keeps it for the
# pullback in place of the operand (LLVM computes the pair with one sincos
# call). Every place a kept value can live: the argument of the pullback,
# a branch's results, per-iteration buffers, a while loop's rows, a
# recursion's rows; both ops of one value; the value also read by another
# adjoint; second order; tensors (which keep the operand).
SINCOS = """
func.func @both(%x: f64) -> f64 {
  %s = math.sin %x : f64
  %c = math.cos %x : f64
  %sc = arith.mulf %s, %c : f64
  %xs = arith.mulf %x, %s : f64
  %r = arith.addf %sc, %xs : f64
  return %r : f64
}

func.func @d_both(%x: f64) -> f64 {
  %g = ad.grad @both(%x) : (f64) -> f64
  return %g : f64
}

func.func @dd_both(%x: f64) -> f64 {
  %g = ad.grad @d_both(%x) : (f64) -> f64
  return %g : f64
}

func.func @switch(%x: f64, %k: index) -> f64 {
  %r = scf.index_switch %k -> f64
  case 0 {
    %c = math.cos %x : f64
    scf.yield %c : f64
  }
  default {
    %s = math.sin %x : f64
    %t = arith.mulf %s, %x : f64
    scf.yield %t : f64
  }
  return %r : f64
}

func.func @loop(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> f64 {
    %c = math.cos %s : f64
    %t = arith.mulf %c, %x : f64
    %u = arith.addf %t, %s : f64
    scf.yield %u : f64
  }
  return %r : f64
}

// Data-dependent trip count: s <- s + 1 + 0.4 x sin(s) until s >= 6 (steps
// of at least 0.16 for |x| < 2.1).
func.func @until(%x: f64) -> f64 {
  %six = arith.constant 6.0 : f64
  %one = arith.constant 1.0 : f64
  %k = arith.constant 0.4 : f64
  %r = scf.while (%s = %x) : (f64) -> f64 {
    %go = arith.cmpf olt, %s, %six : f64
    scf.condition(%go) %s : f64
  } do {
  ^bb0(%s: f64):
    %sn = math.sin %s : f64
    %xk = arith.mulf %x, %k : f64
    %xs = arith.mulf %xk, %sn : f64
    %a = arith.addf %s, %one : f64
    %b = arith.addf %a, %xs : f64
    scf.yield %b : f64
  }
  return %r : f64
}

func.func @tensor(%x: tensor<5xf64>) -> f64 {
  %s = math.sin %x : tensor<5xf64>
  %c = math.cos %s : tensor<5xf64>
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<f64>
  %init = linalg.fill ins(%z : f64) outs(%e : tensor<f64>) -> tensor<f64>
  %sum = linalg.reduce ins(%c : tensor<5xf64>) outs(%init : tensor<f64>)
      dimensions = [0]
    (%in: f64, %acc: f64) {
      %a = arith.addf %in, %acc : f64
      linalg.yield %a : f64
    }
  %r = tensor.extract %sum[] : tensor<f64>
  return %r : f64
}
"""

# g(n) = g(n-1) x + sin(g(n-2)) + cos(g(n-1)), g(n < 2) = x, as @rec_f64
# and @rec_f32.
SINCOS_REC = """
func.func @rec_T(%x: T, %n: index) -> T {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %small = arith.cmpi ult, %n, %c2 : index
  %r = scf.if %small -> T {
    scf.yield %x : T
  } else {
    %n1 = arith.subi %n, %c1 : index
    %n2 = arith.subi %n, %c2 : index
    %a = func.call @rec_T(%x, %n1) : (T, index) -> T
    %b = func.call @rec_T(%x, %n2) : (T, index) -> T
    %ax = arith.mulf %a, %x : T
    %sb = math.sin %b : T
    %ca = math.cos %a : T
    %s = arith.addf %ax, %sb : T
    %t = arith.addf %s, %ca : T
    scf.yield %t : T
  }
  return %r : T
}
"""


def _rec_ref(x, n):
    if n < 2:
        return x
    a, b = _rec_ref(x, n - 1), _rec_ref(x, n - 2)
    return a * x + math.sin(b) + math.cos(a)


def _until_ref(x):
    s = x
    while s < 6.0:
        s = s + 1.0 + 0.4 * x * math.sin(s)
    return s


def _loop_ref(x, n):
    s = x
    for _ in range(n):
        s = math.cos(s) * x + s
    return s


@pytest.mark.parametrize("x", [-2.1, 0.3, 1.7])
def test_sin_and_cos_keep_their_derivatives(x):
    m = mlir_ad.compile(SINCOS + SINCOS_REC.replace("T", "f64")
                        + SINCOS_REC.replace("T", "f32"))
    # Closed forms: (sin x cos x + x sin x)' = cos 2x + sin x + x cos x,
    # and its derivative -2 sin 2x + 2 cos x - x sin x.
    (g,) = mlir_ad.grad(m.both)(x)
    assert g == pytest.approx(math.cos(2 * x) + math.sin(x) + x * math.cos(x),
                              rel=1e-12, abs=1e-14)
    assert m.d_both(x) == pytest.approx(g, rel=1e-14, abs=1e-15)
    second = -2 * math.sin(2 * x) + 2 * math.cos(x) - x * math.sin(x)
    assert m.dd_both(x) == pytest.approx(second, rel=1e-12, abs=1e-13)
    (h,) = mlir_ad.hvp(m.both, (x,), (1.0,))
    assert h == pytest.approx(second, rel=1e-12, abs=1e-13)

    assert mlir_ad.grad(m.switch, wrt=0)(x, 0) == pytest.approx(
        -math.sin(x), rel=1e-14, abs=1e-15)
    assert mlir_ad.grad(m.switch, wrt=0)(x, 3) == pytest.approx(
        math.cos(x) * x + math.sin(x), rel=1e-14, abs=1e-15)

    for n in (0, 1, 6):
        assert_grads_close(mlir_ad.grad(m.loop, wrt=[0])(x, n),
                           numerical_grad(_loop_ref, [x, n], [0]))
    assert_grads_close(mlir_ad.grad(m.until)(x),
                       numerical_grad(_until_ref, [x], [0]), rtol=1e-5)
    for n in (0, 1, 2, 9):
        assert m.rec_f64(x, n) == pytest.approx(_rec_ref(x, n), rel=1e-12)
        assert_grads_close(mlir_ad.grad(m.rec_f64, wrt=[0])(x, n),
                           numerical_grad(_rec_ref, [x, n], [0]), rtol=1e-5)
        (h,) = mlir_ad.hvp(m.rec_f64, (x, n), (1.0,))
        grad = lambda y, k: mlir_ad.grad(m.rec_f64, wrt=0)(y, k)
        assert_grads_close((h,), numerical_grad(grad, [x, n], [0]), rtol=1e-5,
                           atol=1e-6)
    for n in (0, 2, 9):
        x32 = np.float32(x / 4)
        g32 = mlir_ad.grad(m.rec_f32, wrt=0)(x32, n)
        assert g32 == pytest.approx(
            numerical_grad(_rec_ref, [float(x32), n], [0])[0], rel=1e-4,
            abs=1e-5)

    v = np.linspace(x - 1, x + 1, 5)
    (gt,) = mlir_ad.grad(m.tensor)(v)
    np.testing.assert_allclose(gt, -np.sin(np.sin(v)) * np.cos(v),
                               rtol=1e-13, atol=1e-15)
