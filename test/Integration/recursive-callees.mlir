// Calls of recursive functions from outside their recursion that cannot
// keep the callee's tape (a buffer) as a value: from loops of a
// non-recursive function (the loop threads a tape of the call's own), and
// from another recursion (the callee fills rows of the caller's tape, whose
// rows become as wide as the widest of both). Gradients against central
// finite differences.
// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s

// A recursion with one slot per row: y = sin(... sin(x)), n deep, scaled.
func.func @narrow(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = math.sin %x : f64
    %p = func.call @narrow(%s, %m) : (f64, index) -> f64
    %h = arith.constant 0.5 : f64
    %q = arith.mulf %p, %h : f64
    %y = arith.addf %q, %s : f64
    scf.yield %y : f64
  }
  return %r : f64
}

// A recursion with wider rows, which calls @narrow (another recursion)
// directly and from a loop.
func.func @wide(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    %t = func.call @narrow(%x, %c2) : (f64, index) -> f64
    scf.yield %t : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %a = math.sin %x : f64
    %b = math.cos %x : f64
    %ab = arith.mulf %a, %b : f64
    %e = math.exp %ab : f64
    %l = scf.for %i = %c0 to %c2 step %c1 iter_args(%z = %e) -> (f64) {
      %t = func.call @narrow(%z, %n) : (f64, index) -> f64
      %u = math.sin %t : f64
      scf.yield %u : f64
    }
    %p = func.call @wide(%l, %m) : (f64, index) -> f64
    %q = arith.mulf %p, %ab : f64
    %y = arith.addf %q, %b : f64
    scf.yield %y : f64
  }
  return %r : f64
}

// A non-recursive function calling both from loops: a for loop, a nest,
// and a while loop.
func.func @loops(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %f = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %x) -> (f64) {
    %v = func.call @narrow(%a, %n) : (f64, index) -> f64
    %g = scf.for %j = %c0 to %c2 step %c1 iter_args(%b = %v) -> (f64) {
      %w = func.call @wide(%b, %c1) : (f64, index) -> f64
      %h = arith.constant 0.3 : f64
      %s = arith.mulf %w, %h : f64
      %y = arith.addf %s, %a : f64
      scf.yield %y : f64
    }
    scf.yield %g : f64
  }
  %w:2 = scf.while (%a = %f, %k = %c0) : (f64, index) -> (f64, index) {
    %go = arith.cmpi ult, %k, %n : index
    scf.condition(%go) %a, %k : f64, index
  } do {
  ^bb0(%a: f64, %k: index):
    %v = func.call @narrow(%a, %k) : (f64, index) -> f64
    %k1 = arith.addi %k, %c1 : index
    scf.yield %v, %k1 : f64, index
  }
  return %w#0 : f64
}

// A loop-free wrapper of a recursive function, called from a loop and
// from another recursion: inlined there, since its tape would hold the
// callee's fresh tape (found by review: it was rejected).
func.func private @wrap(%x: f64, %n: index) -> f64 {
  %v = func.call @narrow(%x, %n) : (f64, index) -> f64
  %h = arith.constant 0.5 : f64
  %y = arith.mulf %v, %h : f64
  %s = arith.addf %y, %x : f64
  return %s : f64
}

func.func @wrapped(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %l = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %x) -> (f64) {
    %v = func.call @wrap(%a, %n) : (f64, index) -> f64
    scf.yield %v : f64
  }
  %r = func.call @wrapped_rec(%l, %n) : (f64, index) -> f64
  return %r : f64
}

func.func private @wrapped_rec(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %w = func.call @wrap(%x, %m) : (f64, index) -> f64
    %p = func.call @wrapped_rec(%w, %m) : (f64, index) -> f64
    scf.yield %p : f64
  }
  return %r : f64
}

func.func @report(%name: i64, %n: index, %g: f64, %fd: f64) {
  %tol = arith.constant 1.0e-6 : f64
  %floor = arith.constant 1.0e-2 : f64
  %d = arith.subf %g, %fd : f64
  %ad = math.absf %d : f64
  %afd = math.absf %fd : f64
  %scale = arith.maximumf %afd, %floor : f64
  %bound = arith.mulf %tol, %scale : f64
  %ok = arith.cmpf ole, %ad, %bound : f64
  %ni = arith.index_cast %n : index to i64
  vector.print %name : i64 punctuation <no_punctuation>
  vector.print str " n="
  vector.print %ni : i64 punctuation <no_punctuation>
  scf.if %ok {
    vector.print str " ok "
    vector.print %g : f64
  } else {
    vector.print str " FAIL gradient "
    vector.print %g : f64 punctuation <no_punctuation>
    vector.print str " finite difference "
    vector.print %fd : f64
  }
  return
}

func.func @check(%x: f64, %n: index) {
  %h = arith.constant 1.0e-6 : f64
  %h2 = arith.constant 2.0e-6 : f64
  %xp = arith.addf %x, %h : f64
  %xm = arith.subf %x, %h : f64

  %g1 = ad.grad @wide(%x, %n) : (f64, index) -> f64
  %p1 = func.call @wide(%xp, %n) : (f64, index) -> f64
  %m1 = func.call @wide(%xm, %n) : (f64, index) -> f64
  %d1 = arith.subf %p1, %m1 : f64
  %fd1 = arith.divf %d1, %h2 : f64
  %id1 = arith.constant 1 : i64
  func.call @report(%id1, %n, %g1, %fd1) : (i64, index, f64, f64) -> ()

  %g2 = ad.grad @loops(%x, %n) : (f64, index) -> f64
  %p2 = func.call @loops(%xp, %n) : (f64, index) -> f64
  %m2 = func.call @loops(%xm, %n) : (f64, index) -> f64
  %d2 = arith.subf %p2, %m2 : f64
  %fd2 = arith.divf %d2, %h2 : f64
  %id2 = arith.constant 2 : i64
  func.call @report(%id2, %n, %g2, %fd2) : (i64, index, f64, f64) -> ()

  %g3 = ad.grad @wrapped(%x, %n) : (f64, index) -> f64
  %p3 = func.call @wrapped(%xp, %n) : (f64, index) -> f64
  %m3 = func.call @wrapped(%xm, %n) : (f64, index) -> f64
  %d3 = arith.subf %p3, %m3 : f64
  %fd3 = arith.divf %d3, %h2 : f64
  %id3 = arith.constant 3 : i64
  func.call @report(%id3, %n, %g3, %fd3) : (i64, index, f64, f64) -> ()
  return
}

func.func @main() {
  %x = arith.constant 0.7 : f64
  %y = arith.constant -0.4 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  func.call @check(%x, %c0) : (f64, index) -> ()
  func.call @check(%x, %c1) : (f64, index) -> ()
  func.call @check(%y, %c2) : (f64, index) -> ()
  func.call @check(%x, %c3) : (f64, index) -> ()
  return
}

// CHECK-NOT: FAIL
// CHECK: 1 n=0 ok
// CHECK: 2 n=0 ok
// CHECK: 3 n=0 ok
// CHECK: 1 n=1 ok
// CHECK: 2 n=1 ok
// CHECK: 3 n=1 ok
// CHECK: 1 n=2 ok
// CHECK: 2 n=2 ok
// CHECK: 3 n=2 ok
// CHECK: 1 n=3 ok
// CHECK: 2 n=3 ok
// CHECK: 3 n=3 ok
// CHECK-NOT: FAIL
