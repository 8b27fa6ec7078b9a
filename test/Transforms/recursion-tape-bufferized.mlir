// RUN: ad-opt %s --ad-lower-to-llvm --mlir-print-ir-after=convert-bufferization-to-memref -o /dev/null 2>&1 | FileCheck %s

// A recursion that only computes is restartable: its forward function is
// handed the tape and returns only the next free row, so after buffer
// deallocation it neither allocates, copies nor passes ownership.
// CHECK-LABEL: func.func private @g_ad_fwdrec_1
// CHECK-SAME: -> (f64, index) {
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.realloc
// CHECK: return
// CHECK-NEXT: }

// The pullback reads the tape and copies nothing.
// CHECK-LABEL: func.func private @g_ad_pbrec_1
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.alloc
// CHECK: return
// CHECK-NEXT: }

// A recursion that calls a function without a body (which may do anything
// when run again) threads the tape through its results instead: after
// buffer deallocation it returns the tape's ownership as an extra i1
// instead of a copy; the only copy left is the one that grows the tape (a
// copy at every invocation made the gradient quadratic in the number of
// invocations).
// CHECK-LABEL: func.func private @h_ad_fwdrec_1
// CHECK-SAME: -> (f64, memref<?xf64>, index, i1)
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK-NOT: memref.copy
// CHECK: return
// CHECK-NEXT: }
// CHECK-LABEL: func.func private @h_ad_pbrec_1
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.alloc
// CHECK: return
// CHECK-NEXT: }

func.func @g(%n: index, %x: f64) -> f64 {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %lt = arith.cmpi ult, %n, %c2 : index
  %r = scf.if %lt -> f64 {
    scf.yield %x : f64
  } else {
    %n1 = arith.subi %n, %c1 : index
    %n2 = arith.subi %n, %c2 : index
    %a = func.call @g(%n1, %x) : (index, f64) -> f64
    %b = func.call @g(%n2, %x) : (index, f64) -> f64
    %ax = arith.mulf %a, %x : f64
    %sb = math.sin %b : f64
    %s = arith.addf %ax, %sb : f64
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @gradient(%n: index, %x: f64) -> f64 {
  %g = ad.grad @g(%n, %x) {wrt = array<i64: 1>} : (index, f64) -> f64
  return %g : f64
}

func.func private @trace(index)

func.func @h(%n: index, %x: f64) -> f64 {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %lt = arith.cmpi ult, %n, %c2 : index
  %r = scf.if %lt -> f64 {
    scf.yield %x : f64
  } else {
    func.call @trace(%n) : (index) -> ()
    %n1 = arith.subi %n, %c1 : index
    %n2 = arith.subi %n, %c2 : index
    %a = func.call @h(%n1, %x) : (index, f64) -> f64
    %b = func.call @h(%n2, %x) : (index, f64) -> f64
    %ax = arith.mulf %a, %x : f64
    %sb = math.sin %b : f64
    %s = arith.addf %ax, %sb : f64
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @gradient_traced(%n: index, %x: f64) -> f64 {
  %g = ad.grad @h(%n, %x) {wrt = array<i64: 1>} : (index, f64) -> f64
  return %g : f64
}
