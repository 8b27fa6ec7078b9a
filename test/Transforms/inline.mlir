// RUN: ad-opt %s --ad-inline | FileCheck %s
// RUN: ad-opt %s --ad-inline=max-callee-ops=3 | FileCheck %s --check-prefix=SMALL

// A chain of private functions, each called once: moved into @top, gone.
// CHECK-LABEL: func.func @top
// CHECK-NOT: call
// CHECK: math.sin
// CHECK: math.cos
// CHECK: math.exp
// CHECK-NOT: call
// CHECK: return
// CHECK-NOT: func.func private @chain
// SMALL-LABEL: func.func @top
// SMALL-NOT: call
// SMALL: return
func.func @top(%x: f64) -> f64 {
  %y = func.call @chain1(%x) : (f64) -> f64
  return %y : f64
}
func.func private @chain1(%x: f64) -> f64 {
  %s = math.sin %x : f64
  %y = func.call @chain2(%s) : (f64) -> f64
  return %y : f64
}
func.func private @chain2(%x: f64) -> f64 {
  %s = math.cos %x : f64
  %y = func.call @chain3(%s) : (f64) -> f64
  return %y : f64
}
func.func private @chain3(%x: f64) -> f64 {
  %s = math.exp %x : f64
  return %s : f64
}

// A recursive function is never inlined into itself or its caller by the
// first step.
// CHECK-LABEL: func.func @use_recursion
// CHECK: call @rec
// CHECK-LABEL: func.func private @rec
// CHECK: call @rec
func.func @use_recursion(%x: f64, %n: index) -> f64 {
  %y = func.call @rec(%x, %n) : (f64, index) -> f64
  return %y : f64
}
func.func private @rec(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = math.sin %x : f64
    %y = func.call @rec(%s, %m) : (f64, index) -> f64
    scf.yield %y : f64
  }
  return %r : f64
}

// A public function called twice: inlined when small enough (step 2), and
// kept, since it is public.
// CHECK-LABEL: func.func @twice
// CHECK-NOT: call
// CHECK: return
// SMALL-LABEL: func.func @twice
// SMALL: call @helper
// SMALL: call @helper
func.func @twice(%x: f64) -> f64 {
  %a = func.call @helper(%x) : (f64) -> f64
  %b = func.call @helper(%a) : (f64) -> f64
  return %b : f64
}
// CHECK-LABEL: func.func @helper
// SMALL-LABEL: func.func @helper
func.func @helper(%x: f64) -> f64 {
  %s = math.sin %x : f64
  %c = math.cos %s : f64
  %t = arith.mulf %s, %c : f64
  return %t : f64
}

// A callee with several blocks, called once from inside an scf.if (whose
// region holds one block): not moved there (found by review: step 1 once
// made invalid IR), and left alone by step 2 as well.
// CHECK-LABEL: func.func @multi_block_caller
// CHECK: scf.if
// CHECK: call @multi_block
func.func @multi_block_caller(%x: f64, %c: i1) -> f64 {
  %r = scf.if %c -> (f64) {
    %y = func.call @multi_block(%x) : (f64) -> f64
    scf.yield %y : f64
  } else {
    scf.yield %x : f64
  }
  return %r : f64
}
func.func private @multi_block(%x: f64) -> f64 {
  %z = arith.constant 0.0 : f64
  %p = arith.cmpf ogt, %x, %z : f64
  cf.cond_br %p, ^pos, ^neg
^pos:
  %s = math.sin %x : f64
  return %s : f64
^neg:
  return %x : f64
}
