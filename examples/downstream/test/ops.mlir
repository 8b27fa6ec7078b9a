// The ds ops print and parse back, on scalars and tensors.
// RUN: ds-opt %s | ds-opt | FileCheck %s

// CHECK-LABEL: func.func @scalars
// CHECK-SAME: (%[[X:.*]]: f64, %[[S:.*]]: f64)
func.func @scalars(%x: f64, %step: f64) -> (f64, f64, f64) {
  // CHECK: ds.softplus %[[X]] : f64
  %a = ds.softplus %x : f64
  // CHECK: ds.cube %[[X]] : f64
  %b = ds.cube %x : f64
  // CHECK: ds.quantize %[[X]], %[[S]] : f64
  %c = ds.quantize %x, %step : f64
  return %a, %b, %c : f64, f64, f64
}

// CHECK-LABEL: func.func @tensors
func.func @tensors(%t: tensor<?xf32>, %u: tensor<2x3xbf16>) -> (tensor<?xf32>, tensor<2x3xbf16>) {
  // CHECK: ds.softplus %{{.*}} : tensor<?xf32>
  %a = ds.softplus %t : tensor<?xf32>
  // CHECK: ds.cube %{{.*}} : tensor<2x3xbf16>
  %b = ds.cube %u : tensor<2x3xbf16>
  return %a, %b : tensor<?xf32>, tensor<2x3xbf16>
}
