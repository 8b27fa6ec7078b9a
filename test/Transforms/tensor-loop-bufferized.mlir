// RUN: ad-opt %s --pass-pipeline='builtin.module(canonicalize,cse,loop-invariant-code-motion,lift-cf-to-scf,linalg-generalize-named-ops,ad-generate-derivatives,ad-lower-closures,inline,canonicalize,cse,func.func(convert-elementwise-to-linalg),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},buffer-deallocation-pipeline,convert-bufferization-to-memref)' | FileCheck %s

// A tensor carried through scf.for with one element inserted per iteration:
// after bufferization neither the forward nor the reverse loop copies or
// allocates the tensor; each iteration touches one element.
// CHECK-LABEL: func.func @gradient
// CHECK-NOT: memref.copy
// CHECK: scf.for
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: memref.store
// CHECK: }
// CHECK: scf.for
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: memref.load
// CHECK: }
// CHECK-NOT: memref.copy
// CHECK: return
func.func @fill_loop(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<8xf64>
  %t0 = linalg.fill ins(%z : f64) outs(%e : tensor<8xf64>) -> tensor<8xf64>
  %t = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %t0) -> (tensor<8xf64>) {
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %v = arith.mulf %x, %fi : f64
    %s = math.sin %v : f64
    %u = tensor.insert %s into %acc[%i] : tensor<8xf64>
    scf.yield %u : tensor<8xf64>
  }
  %s0 = tensor.empty() : tensor<f64>
  %s1 = linalg.fill ins(%z : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %r = linalg.reduce ins(%t : tensor<8xf64>) outs(%s1 : tensor<f64>) dimensions = [0]
    (%in: f64, %a: f64) {
      %q = arith.mulf %in, %in : f64
      %w = arith.addf %a, %q : f64
      linalg.yield %w : f64
    }
  %o = tensor.extract %r[] : tensor<f64>
  return %o : f64
}

func.func @gradient(%x: f64) -> f64 {
  %g = ad.grad @fill_loop(%x) : (f64) -> f64
  return %g : f64
}
