// Loops inside recursive functions that run other loops or recursive calls:
// their iterations' rows in the recursion's shared tape are not consecutive
// (what runs inside an iteration takes the rows after it), so each row
// links back to the previous iteration's. Gradients against central finite
// differences at several depths and points.
// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s

// A loop nest, then a loop whose iterations each recurse.
func.func @nest_and_calls(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %tenth = arith.constant 0.1 : f64
  %half = arith.constant 0.5 : f64
  %p = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %x) -> (f64) {
    %q = scf.for %j = %c0 to %c2 step %c1 iter_args(%b = %a) -> (f64) {
      %s = math.sin %b : f64
      %t = arith.mulf %s, %a : f64
      %w = arith.mulf %t, %tenth : f64
      %u = arith.addf %w, %b : f64
      scf.yield %u : f64
    }
    %e = math.sin %q : f64
    %v = arith.mulf %e, %tenth : f64
    %y = arith.addf %v, %q : f64
    scf.yield %y : f64
  }
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    scf.yield %p : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %w = scf.for %k = %c0 to %c2 step %c1 iter_args(%z = %p) -> (f64) {
      %t = func.call @nest_and_calls(%z, %m) : (f64, index) -> f64
      %h = arith.mulf %t, %half : f64
      %s = math.sin %z : f64
      %y = arith.addf %h, %s : f64
      scf.yield %y : f64
    }
    scf.yield %w : f64
  }
  return %r : f64
}

// Mutual recursion, each function with a loop around the call of the other
// and an inner loop whose trip count depends on the depth.
func.func @ping(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    %s = math.sin %x : f64
    scf.yield %s : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %w = scf.for %k = %c0 to %c2 step %c1 iter_args(%z = %x) -> (f64) {
      %inner = scf.for %j = %c0 to %n step %c1 iter_args(%b = %z) -> (f64) {
        %c = math.cos %b : f64
        %u = arith.mulf %c, %z : f64
        %third = arith.constant 0.3 : f64
        %v = arith.mulf %u, %third : f64
        %y = arith.addf %v, %b : f64
        scf.yield %y : f64
      }
      %t = func.call @pong(%inner, %m) : (f64, index) -> f64
      %half = arith.constant 0.5 : f64
      %h = arith.mulf %t, %half : f64
      %s = math.sin %z : f64
      %y = arith.addf %h, %s : f64
      scf.yield %y : f64
    }
    scf.yield %w : f64
  }
  return %r : f64
}
func.func @pong(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %q = arith.constant 0.25 : f64
  %w = scf.for %k = %c0 to %c3 step %c1 iter_args(%z = %x) -> (f64) {
    %t = func.call @ping(%z, %n) : (f64, index) -> f64
    %s = arith.mulf %t, %q : f64
    %c = math.cos %z : f64
    %y = arith.addf %s, %c : f64
    scf.yield %y : f64
  }
  return %w : f64
}

// A while loop whose iterations each recurse, with a loop nest in its body
// and a while loop in its condition region.
func.func @while_calls(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    %s = math.sin %x : f64
    scf.yield %s : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %w:2 = scf.while (%a = %x, %k = %c0) : (f64, index) -> (f64, index) {
      // Two steps of a while loop in the condition region.
      %inner:2 = scf.while (%b = %a, %j = %c0) : (f64, index) -> (f64, index) {
        %more = arith.cmpi ult, %j, %c2 : index
        scf.condition(%more) %b, %j : f64, index
      } do {
      ^bb0(%b: f64, %j: index):
        %c = math.cos %b : f64
        %tenth = arith.constant 0.1 : f64
        %u = arith.mulf %c, %tenth : f64
        %y = arith.addf %u, %b : f64
        %j1 = arith.addi %j, %c1 : index
        scf.yield %y, %j1 : f64, index
      }
      %go = arith.cmpi ult, %k, %c2 : index
      scf.condition(%go) %inner#0, %k : f64, index
    } do {
    ^bb0(%a: f64, %k: index):
      %t = func.call @while_calls(%a, %m) : (f64, index) -> f64
      %nest = scf.for %i = %c0 to %c2 step %c1 iter_args(%z = %t) -> (f64) {
        %s = math.sin %z : f64
        %h = arith.constant 0.5 : f64
        %v = arith.mulf %s, %h : f64
        %y = arith.addf %v, %a : f64
        scf.yield %y : f64
      }
      %q = arith.constant 0.3 : f64
      %y = arith.mulf %nest, %q : f64
      %k1 = arith.addi %k, %c1 : index
      scf.yield %y, %k1 : f64, index
    }
    scf.yield %w#0 : f64
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

  %g1 = ad.grad @nest_and_calls(%x, %n) : (f64, index) -> f64
  %p1 = func.call @nest_and_calls(%xp, %n) : (f64, index) -> f64
  %m1 = func.call @nest_and_calls(%xm, %n) : (f64, index) -> f64
  %d1 = arith.subf %p1, %m1 : f64
  %fd1 = arith.divf %d1, %h2 : f64
  %id1 = arith.constant 1 : i64
  func.call @report(%id1, %n, %g1, %fd1) : (i64, index, f64, f64) -> ()

  %g2 = ad.grad @ping(%x, %n) : (f64, index) -> f64
  %p2 = func.call @ping(%xp, %n) : (f64, index) -> f64
  %m2 = func.call @ping(%xm, %n) : (f64, index) -> f64
  %d2 = arith.subf %p2, %m2 : f64
  %fd2 = arith.divf %d2, %h2 : f64
  %id2 = arith.constant 2 : i64
  func.call @report(%id2, %n, %g2, %fd2) : (i64, index, f64, f64) -> ()

  %g3 = ad.grad @while_calls(%x, %n) : (f64, index) -> f64
  %p3 = func.call @while_calls(%xp, %n) : (f64, index) -> f64
  %m3 = func.call @while_calls(%xm, %n) : (f64, index) -> f64
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
  func.call @check(%x, %c2) : (f64, index) -> ()
  func.call @check(%y, %c3) : (f64, index) -> ()
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
