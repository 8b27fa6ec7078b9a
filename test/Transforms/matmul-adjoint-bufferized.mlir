// RUN: ad-opt %s --pass-pipeline='builtin.module(canonicalize,cse,lift-cf-to-scf,linalg-generalize-named-ops,ad-generate-derivatives,ad-lower-closures,inline,canonicalize,cse,func.func(convert-elementwise-to-linalg),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},buffer-deallocation-pipeline,convert-bufferization-to-memref)' | FileCheck %s

// After bufferization the gradient of a matmul-based loss copies nothing:
// each adjoint generic accumulates (mulf + addf) straight into the buffer
// of its gradient, zero-filled once.
// CHECK-LABEL: func.func @gradient
// CHECK-NOT: memref.copy
// CHECK: %[[GA:.*]] = memref.alloc() {{.*}} : memref<3x4xf64>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f64) outs(%[[GA]] : memref<3x4xf64>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[GA]] : memref<3x4xf64>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
// CHECK: %[[GB:.*]] = memref.alloc() {{.*}} : memref<4x5xf64>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f64) outs(%[[GB]] : memref<4x5xf64>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[GB]] : memref<4x5xf64>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @loss(%a: tensor<3x4xf64>, %b: tensor<4x5xf64>) -> tensor<f64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<3x5xf64>
  %c = linalg.fill ins(%z : f64) outs(%e : tensor<3x5xf64>) -> tensor<3x5xf64>
  %m = linalg.matmul ins(%a, %b : tensor<3x4xf64>, tensor<4x5xf64>) outs(%c : tensor<3x5xf64>) -> tensor<3x5xf64>
  %t = tensor.empty() : tensor<f64>
  %t0 = linalg.fill ins(%z : f64) outs(%t : tensor<f64>) -> tensor<f64>
  %s = linalg.reduce ins(%m : tensor<3x5xf64>) outs(%t0 : tensor<f64>) dimensions = [0, 1]
    (%in: f64, %acc: f64) {
      %q = arith.mulf %in, %in : f64
      %r = arith.addf %acc, %q : f64
      linalg.yield %r : f64
    }
  return %s : tensor<f64>
}

func.func @gradient(%a: tensor<3x4xf64>, %b: tensor<4x5xf64>) -> (tensor<3x4xf64>, tensor<4x5xf64>) {
  %ga, %gb = ad.grad @loss(%a, %b) : (tensor<3x4xf64>, tensor<4x5xf64>) -> (tensor<3x4xf64>, tensor<4x5xf64>)
  return %ga, %gb : tensor<3x4xf64>, tensor<4x5xf64>
}
