// A function whose branches nest deep enough for the branch tape (a
// buffer) called where a buffer cannot be kept: inside a for loop, inside a
// while loop, and from a recursive function. Preparation inlines such calls
// (found by review: they were rejected once the branch tape existed).
// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s

func.func private @deep(%a: f64) -> f64 {
  %z = arith.constant 0.0 : f64
  %c = arith.cmpf ogt, %a, %z : f64
  %r = scf.if %c -> (f64) {
    %p1 = math.sin %a : f64
    %c1 = arith.cmpf olt, %p1, %a : f64
    %r1 = scf.if %c1 -> (f64) {
      %p2 = math.cos %p1 : f64
      %c2 = arith.cmpf ogt, %p2, %z : f64
      %r2 = scf.if %c2 -> (f64) {
        %p3 = math.exp %p2 : f64
        %q3 = arith.mulf %p3, %p1 : f64
        scf.yield %q3 : f64
      } else {
        scf.yield %p2 : f64
      }
      scf.yield %r2 : f64
    } else {
      scf.yield %p1 : f64
    }
    scf.yield %r1 : f64
  } else {
    scf.yield %a : f64
  }
  return %r : f64
}

// Through a function in between, which itself has no loop or branch.
func.func private @middle(%a: f64) -> f64 {
  %d = func.call @deep(%a) : (f64) -> f64
  %h = arith.constant 0.3 : f64
  %y = arith.mulf %d, %h : f64
  return %y : f64
}

func.func @in_for(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %x) -> (f64) {
    %y = func.call @middle(%a) : (f64) -> f64
    %s = arith.addf %y, %a : f64
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @in_while(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r:2 = scf.while (%a = %x, %k = %c0) : (f64, index) -> (f64, index) {
    %go = arith.cmpi ult, %k, %c3 : index
    scf.condition(%go) %a, %k : f64, index
  } do {
  ^bb0(%a: f64, %k: index):
    %y = func.call @middle(%a) : (f64) -> f64
    %s = arith.addf %y, %a : f64
    %k1 = arith.addi %k, %c1 : index
    scf.yield %s, %k1 : f64, index
  }
  return %r#0 : f64
}

func.func @in_recursion(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    scf.yield %x : f64
  } else {
    %y = func.call @middle(%x) : (f64) -> f64
    %s = arith.addf %y, %x : f64
    %m = arith.subi %n, %c1 : index
    %w = func.call @in_recursion(%s, %m) : (f64, index) -> f64
    scf.yield %w : f64
  }
  return %r : f64
}

func.func @report(%name: i64, %g: f64, %fd: f64) {
  %tol = arith.constant 1.0e-6 : f64
  %floor = arith.constant 1.0e-2 : f64
  %d = arith.subf %g, %fd : f64
  %ad = math.absf %d : f64
  %afd = math.absf %fd : f64
  %scale = arith.maximumf %afd, %floor : f64
  %bound = arith.mulf %tol, %scale : f64
  %ok = arith.cmpf ole, %ad, %bound : f64
  vector.print %name : i64 punctuation <no_punctuation>
  scf.if %ok {
    vector.print str " ok\n"
  } else {
    vector.print str " FAIL gradient "
    vector.print %g : f64 punctuation <no_punctuation>
    vector.print str " finite difference "
    vector.print %fd : f64
  }
  return
}

func.func @check(%x: f64) {
  %h = arith.constant 1.0e-6 : f64
  %h2 = arith.constant 2.0e-6 : f64
  %xp = arith.addf %x, %h : f64
  %xm = arith.subf %x, %h : f64
  %n = arith.constant 3 : index

  %g1 = ad.grad @in_for(%x) : (f64) -> f64
  %p1 = func.call @in_for(%xp) : (f64) -> f64
  %m1 = func.call @in_for(%xm) : (f64) -> f64
  %d1 = arith.subf %p1, %m1 : f64
  %fd1 = arith.divf %d1, %h2 : f64
  %id1 = arith.constant 1 : i64
  func.call @report(%id1, %g1, %fd1) : (i64, f64, f64) -> ()

  %g2 = ad.grad @in_while(%x) : (f64) -> f64
  %p2 = func.call @in_while(%xp) : (f64) -> f64
  %m2 = func.call @in_while(%xm) : (f64) -> f64
  %d2 = arith.subf %p2, %m2 : f64
  %fd2 = arith.divf %d2, %h2 : f64
  %id2 = arith.constant 2 : i64
  func.call @report(%id2, %g2, %fd2) : (i64, f64, f64) -> ()

  %g3 = ad.grad @in_recursion(%x, %n) {wrt = array<i64: 0>} : (f64, index) -> f64
  %p3 = func.call @in_recursion(%xp, %n) : (f64, index) -> f64
  %m3 = func.call @in_recursion(%xm, %n) : (f64, index) -> f64
  %d3 = arith.subf %p3, %m3 : f64
  %fd3 = arith.divf %d3, %h2 : f64
  %id3 = arith.constant 3 : i64
  func.call @report(%id3, %g3, %fd3) : (i64, f64, f64) -> ()
  return
}

func.func @main() {
  %a = arith.constant 0.7 : f64
  %b = arith.constant 1.9 : f64
  %c = arith.constant -0.5 : f64
  func.call @check(%a) : (f64) -> ()
  func.call @check(%b) : (f64) -> ()
  func.call @check(%c) : (f64) -> ()
  return
}

// CHECK-NOT: FAIL
// CHECK: 1 ok
// CHECK-NEXT: 2 ok
// CHECK-NEXT: 3 ok
// CHECK-NEXT: 1 ok
// CHECK-NEXT: 2 ok
// CHECK-NEXT: 3 ok
// CHECK-NEXT: 1 ok
// CHECK-NEXT: 2 ok
// CHECK-NEXT: 3 ok
