"""Restartable recursions: a recursion that only computes passes its tape down
but not back; a row past the tape's end goes to the tape's last row, and the
caller of the outermost call (the entry point, or a loop or another
recursion sharing the tape) reallocates the tape and runs the recursion
again when the rows did not fit. These tests make the tape overflow at
every kind of caller (first calls, calls larger than every earlier one,
calls from loops that share the tape, rows taken by loops inside the
recursion) and check every gradient against complex-step derivatives of a
Python copy of the program (exact to rounding)."""

import cmath

import numpy as np
import pytest

import mlir_ad
from conftest import numerical_grad

TREE = """
// g(n) = g(n-1) x + sin(g(n-2)), g(n < 2) = x.
func.func @tree(%x: f64, %n: index) -> f64 {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %small = arith.cmpi ult, %n, %c2 : index
  %r = scf.if %small -> f64 {
    scf.yield %x : f64
  } else {
    %n1 = arith.subi %n, %c1 : index
    %n2 = arith.subi %n, %c2 : index
    %a = func.call @tree(%x, %n1) : (f64, index) -> f64
    %b = func.call @tree(%x, %n2) : (f64, index) -> f64
    %ax = arith.mulf %a, %x : f64
    %sb = math.sin %b : f64
    %s = arith.addf %ax, %sb : f64
    scf.yield %s : f64
  }
  return %r : f64
}

"""

SRC = TREE + """
// A loop calling the recursion: the calls share the loop's tape, which the
// loop's function creates; each call may overflow it.
// s <- tree(sin(s) / 2, n + i) + x, k times.
func.func @from_for(%x: f64, %k: index, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f64
  %r = scf.for %i = %c0 to %k step %c1 iter_args(%s = %x) -> f64 {
    %ss = math.sin %s : f64
    %h = arith.mulf %ss, %half : f64
    %m = arith.addi %n, %i : index
    %t = func.call @tree(%h, %m) : (f64, index) -> f64
    %u = arith.addf %t, %x : f64
    scf.yield %u : f64
  }
  return %r : f64
}

// A while loop with a data-dependent trip count calling the recursion:
// s <- s + 0.5 + 0.1 sin(tree(sin(s x) / 2, n)) while s < 4.
func.func @from_while(%x: f64, %n: index) -> f64 {
  %four = arith.constant 4.0 : f64
  %half = arith.constant 0.5 : f64
  %tenth = arith.constant 0.1 : f64
  %r = scf.while (%s = %x) : (f64) -> f64 {
    %go = arith.cmpf olt, %s, %four : f64
    scf.condition(%go) %s : f64
  } do {
  ^bb0(%s: f64):
    %sx = arith.mulf %s, %x : f64
    %ssx = math.sin %sx : f64
    %h = arith.mulf %ssx, %half : f64
    %t = func.call @tree(%h, %n) : (f64, index) -> f64
    %st = math.sin %t : f64
    %d = arith.mulf %st, %tenth : f64
    %a = arith.addf %s, %half : f64
    %b = arith.addf %a, %d : f64
    scf.yield %b : f64
  }
  return %r : f64
}

// Loops inside the recursion take rows of its tape: an scf.for of n
// iterations and a while loop.
// l(n) = w(f(l(n-1))), f: a <- sin(a) x + a / 2 (n times),
// w: t <- t + 0.3 + 0.1 sin(t x) while t < 2, then t - 2 + 0.1; l(0) = x.
func.func @loops(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f64
  %two = arith.constant 2.0 : f64
  %d3 = arith.constant 0.3 : f64
  %d1 = arith.constant 0.1 : f64
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %p = func.call @loops(%x, %m) : (f64, index) -> f64
    %f = scf.for %i = %c0 to %n step %c1 iter_args(%a = %p) -> f64 {
      %s = math.sin %a : f64
      %sx = arith.mulf %s, %x : f64
      %ah = arith.mulf %a, %half : f64
      %b = arith.addf %sx, %ah : f64
      scf.yield %b : f64
    }
    %w = scf.while (%t = %f) : (f64) -> f64 {
      %go = arith.cmpf olt, %t, %two : f64
      scf.condition(%go) %t : f64
    } do {
    ^bb0(%t: f64):
      %tx = arith.mulf %t, %x : f64
      %st = math.sin %tx : f64
      %e = arith.mulf %st, %d1 : f64
      %t3 = arith.addf %t, %d3 : f64
      %tn = arith.addf %t3, %e : f64
      scf.yield %tn : f64
    }
    %wm = arith.subf %w, %two : f64
    %wr = arith.addf %wm, %d1 : f64
    scf.yield %wr : f64
  }
  return %r : f64
}

// A recursion that is not restartable (it writes memory) calling one that
// is: the outer recursion's tape grows as before, and the call site runs
// the inner recursion again when its rows did not fit.
// o(n) = tree(sin(o(n-1)) / 2, n) + x, o(0) = x.
func.func @outer(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f64
  %cell = memref.alloca() : memref<index>
  memref.store %n, %cell[] : memref<index>
  %k = memref.load %cell[] : memref<index>
  %done = arith.cmpi eq, %k, %c0 : index
  %r = scf.if %done -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %k, %c1 : index
    %p = func.call @outer(%x, %m) : (f64, index) -> f64
    %sp = math.sin %p : f64
    %h = arith.mulf %sp, %half : f64
    %t = func.call @tree(%h, %k) : (f64, index) -> f64
    %u = arith.addf %t, %x : f64
    scf.yield %u : f64
  }
  return %r : f64
}
"""


def tree(x, n):
    if n < 2:
        return x
    return tree(x, n - 1) * x + cmath.sin(tree(x, n - 2))


def tree_fast(x, n):
    # The same values without the exponential call tree.
    a, b = x, x
    for _ in range(2, n + 1):
        a, b = a * x + cmath.sin(b), a
    return a


def from_for(x, k, n):
    s = x
    for i in range(k):
        s = tree_fast(cmath.sin(s) * 0.5, n + i) + x
    return s


def from_while(x, n):
    s = x
    while s.real < 4.0:
        s = s + 0.5 + 0.1 * cmath.sin(tree_fast(cmath.sin(s * x) * 0.5, n))
    return s


def loops(x, n):
    if n == 0:
        return x
    a = loops(x, n - 1)
    for _ in range(n):
        a = cmath.sin(a) * x + a * 0.5
    t = a
    while t.real < 2.0:
        t = t + 0.3 + 0.1 * cmath.sin(t * x)
    return t - 2.0 + 0.1


def outer(x, n):
    if n == 0:
        return x
    return tree_fast(cmath.sin(outer(x, n - 1)) * 0.5, n) + x


def complex_step(f, x, *rest):
    h = 1e-30
    v = f(complex(x, h), *rest)
    return v.real, v.imag / h


@pytest.fixture(scope="module")
def m():
    return mlir_ad.compile(SRC)


def test_reference_agrees_with_the_tree():
    assert tree_fast(0.3 + 0j, 12) == pytest.approx(tree(0.3 + 0j, 12),
                                                    rel=1e-14)


def test_tree_recursion_overflowing_its_tape(m):
    # The first call with many rows overflows the 16 rows of a fresh tape
    # and runs again; a larger one overflows the hint; smaller ones fit.
    g = mlir_ad.value_and_grad(m.tree, wrt=0)
    for x in (0.3, -0.7):
        for n in (1, 2, 22, 6, 22, 24, 3, 0, 24):
            value, grad = g(x, n)
            ref_value, ref_grad = complex_step(tree_fast, x, n)
            assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-14)
            assert grad == pytest.approx(ref_grad, rel=1e-11, abs=1e-13), (x, n)


def test_recursion_called_from_loops(m):
    # Each call takes more rows than the last: the loop's shared tape
    # overflows at calls in the middle of the loop.
    g = mlir_ad.grad(m.from_for, wrt=0)
    for x, k, n in ((0.4, 0, 5), (0.4, 1, 3), (0.4, 6, 8), (-0.6, 9, 12),
                    (0.4, 6, 8)):
        ref_value, ref_grad = complex_step(from_for, x, k, n)
        assert m.from_for(x, k, n) == pytest.approx(ref_value, rel=1e-12)
        assert g(x, k, n) == pytest.approx(ref_grad, rel=1e-10, abs=1e-12), \
            (x, k, n)
    g = mlir_ad.grad(m.from_while, wrt=0)
    for x, n in ((0.9, 4), (1.3, 15), (0.7, 18), (3.9, 18), (4.5, 2)):
        ref_value, ref_grad = complex_step(from_while, x, n)
        assert m.from_while(x, n) == pytest.approx(ref_value, rel=1e-12)
        assert g(x, n) == pytest.approx(ref_grad, rel=1e-10, abs=1e-12), (x, n)


def test_loops_inside_the_recursion(m):
    g = mlir_ad.grad(m.loops, wrt=0)
    for x in (0.35, 1.1):
        for n in (0, 1, 2, 7, 3, 12):
            ref_value, ref_grad = complex_step(loops, x, n)
            assert m.loops(x, n) == pytest.approx(ref_value, rel=1e-12)
            assert g(x, n) == pytest.approx(ref_grad, rel=1e-10,
                                            abs=1e-12), (x, n)


def test_recursion_that_writes_memory_calls_a_restartable_one(m):
    g = mlir_ad.grad(m.outer, wrt=0)
    for x in (0.45, -0.3):
        for n in (0, 1, 4, 14, 9, 16):
            ref_value, ref_grad = complex_step(outer, x, n)
            assert m.outer(x, n) == pytest.approx(ref_value, rel=1e-12)
            assert g(x, n) == pytest.approx(ref_grad, rel=1e-10,
                                            abs=1e-12), (x, n)


def test_second_order_through_a_restartable_recursion(m):
    # Forward over reverse: the tangent of the forward function runs the
    # recursion again on the tangent's tape too.
    for n in (3, 15, 9):
        (h,) = mlir_ad.hvp(m.tree, (0.3, n), (1.0,))
        grad = lambda y, k: mlir_ad.grad(m.tree, wrt=0)(y, k)
        expected = numerical_grad(grad, [0.3, n], [0])[0]
        assert h == pytest.approx(expected, rel=1e-6, abs=1e-8), n
        (h,) = mlir_ad.hvp(m.loops, (0.35, n), (1.0,))
        grad = lambda y, k: mlir_ad.grad(m.loops, wrt=0)(y, k)
        expected = numerical_grad(grad, [0.35, n], [0])[0]
        assert h == pytest.approx(expected, rel=1e-6, abs=1e-8), n


def test_float32_recursion():
    m32 = mlir_ad.compile(TREE.replace("f64", "f32"))
    g = mlir_ad.grad(m32.tree, wrt=0)
    for n in (2, 20, 7, 21):
        x = np.float32(0.3)
        ref = complex_step(tree_fast, float(x), n)[1]
        assert g(x, n) == pytest.approx(ref, rel=1e-4, abs=1e-5), n


# The tape's owner is a recursion that is not restartable, and its rows may
# end exactly at the tape's capacity when it calls a restartable one: the
# tape must first grow so that the callee's first row fits (its rows past
# the end go to the last row, which must be one the callee fills and
# rewrites when it runs again, not the owner's). Each case on a fresh
# module: only a first call starts from 16 rows. A while loop inside the
# owner calls the restartable recursion too, and a value computed after the
# call (the cos kept for the sin of its result) goes to the grown tape.
EXACT_FILL = TREE + """
// o(0) = tree(x, b), o(n) = tree(sin(o(n-1)) / 2, m) x.
func.func @owner(%x: f64, %n: index, %m: index, %b: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f64
  %cell = memref.alloca() : memref<index>
  memref.store %n, %cell[] : memref<index>
  %k = memref.load %cell[] : memref<index>
  %done = arith.cmpi eq, %k, %c0 : index
  %r = scf.if %done -> f64 {
    %tb = func.call @tree(%x, %b) : (f64, index) -> f64
    scf.yield %tb : f64
  } else {
    %km = arith.subi %k, %c1 : index
    %p = func.call @owner(%x, %km, %m, %b) : (f64, index, index, index) -> f64
    %sp = math.sin %p : f64
    %h = arith.mulf %sp, %half : f64
    %t = func.call @tree(%h, %m) : (f64, index) -> f64
    %u = arith.mulf %t, %x : f64
    scf.yield %u : f64
  }
  return %r : f64
}

// w(0) = x; w(n): s = w(n-1), c = 1/2; while c < lim:
// s = cos(tree(sin(s) x, m)) sin(s) x, c += 1/2; then s + x.
func.func @owner_while(%x: f64, %n: index, %m: index, %lim: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f64
  %cell = memref.alloca() : memref<index>
  memref.store %n, %cell[] : memref<index>
  %k = memref.load %cell[] : memref<index>
  %done = arith.cmpi eq, %k, %c0 : index
  %r = scf.if %done -> f64 {
    scf.yield %x : f64
  } else {
    %km = arith.subi %k, %c1 : index
    %p = func.call @owner_while(%x, %km, %m, %lim)
        : (f64, index, index, f64) -> f64
    %w:2 = scf.while (%s = %p, %c = %half) : (f64, f64) -> (f64, f64) {
      %go = arith.cmpf olt, %c, %lim : f64
      scf.condition(%go) %s, %c : f64, f64
    } do {
    ^bb0(%s: f64, %c: f64):
      %ss = math.sin %s : f64
      %sx = arith.mulf %ss, %x : f64
      %t = func.call @tree(%sx, %m) : (f64, index) -> f64
      %ct = math.cos %t : f64
      %u = arith.mulf %ct, %sx : f64
      %c2 = arith.addf %c, %half : f64
      scf.yield %u, %c2 : f64, f64
    }
    %v = arith.addf %w#0, %x : f64
    scf.yield %v : f64
  }
  return %r : f64
}
"""


def owner(x, n, m, b):
    if n == 0:
        return tree_fast(x, b)
    return tree_fast(cmath.sin(owner(x, n - 1, m, b)) * 0.5, m) * x


def owner_while(x, n, m, lim):
    if n == 0:
        return x
    s, c = owner_while(x, n - 1, m, lim), 0.5
    while c < lim:
        sx = cmath.sin(s) * x
        s, c = cmath.cos(tree_fast(sx, m)) * sx, c + 0.5
    return s + x


@pytest.mark.parametrize("m,b,n", [(0, 0, 9), (1, 2, 7), (2, 2, 4),
                                   (3, 1, 7), (2, 2, 3)])
def test_owner_rows_ending_at_the_tape_capacity(m, b, n):
    fresh = mlir_ad.compile(f"// owner {m} {b} {n}\n" + EXACT_FILL)
    ref_value, ref_grad = complex_step(owner, 0.45, n, m, b)
    value, grad = mlir_ad.value_and_grad(fresh.owner, wrt=0)(0.45, n, m, b)
    assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-300)
    assert grad == pytest.approx(ref_grad, rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("n,m,lim", [(6, 2, 1.0), (13, 5, 2.1), (3, 9, 3.1)])
def test_while_loop_of_an_owner_calling_a_restartable_recursion(n, m, lim):
    fresh = mlir_ad.compile(f"// owner_while {n} {m} {lim}\n" + EXACT_FILL)
    ref_value, ref_grad = complex_step(owner_while, 0.8, n, m, lim)
    value, grad = mlir_ad.value_and_grad(fresh.owner_while, wrt=0)(
        0.8, n, m, lim)
    assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-300)
    assert grad == pytest.approx(ref_grad, rel=1e-10, abs=1e-300)


# Arguments the pullback gets from its caller rather than from the rows:
# here x and y swap places at every call (both are invariants: each call
# passes the caller's own arguments), and the pullback of the call must
# pass them swapped too.
SWAP = """
// f(x, y, n) = x^2 y for n = 0, else sin(x) f(y, x, n - 1) + x.
func.func @swap(%x: f64, %y: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %small = arith.cmpi ule, %n, %c0 : index
  %r = scf.if %small -> f64 {
    %xx = arith.mulf %x, %x : f64
    %v = arith.mulf %xx, %y : f64
    scf.yield %v : f64
  } else {
    %n1 = arith.subi %n, %c1 : index
    %a = func.call @swap(%y, %x, %n1) : (f64, f64, index) -> f64
    %s = math.sin %x : f64
    %p = arith.mulf %s, %a : f64
    %q = arith.addf %p, %x : f64
    scf.yield %q : f64
  }
  return %r : f64
}
"""


def swap(x, y, n):
    return x * x * y if n <= 0 else cmath.sin(x) * swap(y, x, n - 1) + x


def test_arguments_swapped_at_every_call():
    m = mlir_ad.compile(SWAP)
    x, y = 0.7, 1.3
    for n in (0, 1, 2, 3, 4, 21):
        gx, gy = mlir_ad.grad(m.swap, wrt=[0, 1])(x, y, n)
        assert gx == pytest.approx(complex_step(lambda a: swap(a, y, n), x)[1],
                                   rel=1e-11, abs=1e-14), n
        assert gy == pytest.approx(complex_step(lambda b: swap(x, b, n), y)[1],
                                   rel=1e-11, abs=1e-14), n
