// RUN: ad-opt %s --ad-differentiate --mlir-print-debuginfo | FileCheck %s --check-prefix=DIFF
// RUN: ad-opt %s --ad-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// ad-differentiate leaves only upstream dialects, and the adjoint of an op
// carries the op's location.
// DIFF-NOT: ad.
// DIFF-LABEL: func.func private @f_ad_pb_0
// DIFF: math.cos %{{.*}} : f64 loc(#[[SIN:.*]])
// DIFF-NOT: ad.
// DIFF: #[[SIN]] = loc("model.py":3:7)

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
