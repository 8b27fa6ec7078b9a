// RUN: ad-opt %s --ad-differentiate --mlir-print-debuginfo | FileCheck %s --check-prefix=DIFF
// RUN: ad-opt %s --ad-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// ad-differentiate leaves only upstream dialects, and what the derivative
// of an op computes carries the op's location (cos, sin's derivative, is
// computed in the forward function, the product in the pullback).
// DIFF: #[[SIN:.*]] = loc("model.py":3:7)
// DIFF-NOT: ad.
// DIFF-LABEL: func.func private @f_ad_fwd_0
// DIFF: math.cos %{{.*}} : f64 loc(#[[SIN]])
// DIFF-LABEL: func.func private @f_ad_pb_0
// DIFF: arith.mulf %{{.*}} : f64 loc(#[[SIN]])
// DIFF-NOT: ad.

// ad-lower-to-llvm leaves only the LLVM dialect.
// LLVM-NOT: func.func
// LLVM-NOT: ad.
// LLVM: llvm.func @main
// LLVM-NOT: func.func
func.func @f(%x: f64) -> f64 {
  %y = math.sin %x : f64 loc("model.py":3:7)
  return %y : f64
}

func.func @main() {
  %x = arith.constant 0.5 : f64
  %g = ad.grad @f(%x) : (f64) -> f64
  vector.print %g : f64
  return
}
