// convert-ds-to-arith rewrites each ds op into arith/math on the same type
// and leaves other ops alone.
// RUN: ds-opt %s --split-input-file --convert-ds-to-arith | FileCheck %s

// CHECK-LABEL: func.func @softplus
// CHECK-SAME: (%[[X:.*]]: f64)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-DAG: %[[ABS:.*]] = math.absf %[[X]] : f64
// CHECK: %[[NEG:.*]] = arith.negf %[[ABS]] : f64
// CHECK: %[[EXP:.*]] = math.exp %[[NEG]] : f64
// CHECK: %[[TAIL:.*]] = math.log1p %[[EXP]] : f64
// CHECK: %[[HEAD:.*]] = arith.maximumf %[[X]], %[[ZERO]] : f64
// CHECK: %[[Y:.*]] = arith.addf %[[HEAD]], %[[TAIL]] : f64
// CHECK: return %[[Y]]
func.func @softplus(%x: f64) -> f64 {
  %y = ds.softplus %x : f64
  return %y : f64
}

// -----

// CHECK-LABEL: func.func @cube
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : tensor<4xf32>
// CHECK: %[[Y:.*]] = arith.mulf %[[SQ]], %[[X]] : tensor<4xf32>
// CHECK: return %[[Y]]
func.func @cube(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = ds.cube %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @quantize
// CHECK-SAME: (%[[X:.*]]: f32, %[[S:.*]]: f32)
// CHECK: %[[R:.*]] = arith.divf %[[X]], %[[S]] : f32
// CHECK: %[[N:.*]] = math.round %[[R]] : f32
// CHECK: %[[Y:.*]] = arith.mulf %[[N]], %[[S]] : f32
// CHECK: return %[[Y]]
func.func @quantize(%x: f32, %step: f32) -> f32 {
  %y = ds.quantize %x, %step : f32
  return %y : f32
}

// -----

// A dynamically shaped tensor: the zero of max(x, 0) takes x's size.
// CHECK-LABEL: func.func @softplus_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?xf64>)
// CHECK: %[[DIM:.*]] = tensor.dim %[[X]]
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[DIM]]) : tensor<?xf64>
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f64) outs(%[[EMPTY]] : tensor<?xf64>)
// CHECK: arith.maximumf %[[X]], %[[ZERO]] : tensor<?xf64>
// CHECK-NOT: ds.
func.func @softplus_dynamic(%x: tensor<?xf64>) -> tensor<?xf64> {
  %y = ds.softplus %x : tensor<?xf64>
  return %y : tensor<?xf64>
}

// -----

// Other ops, even dead ones, stay.
// CHECK-LABEL: func.func @others
// CHECK: arith.mulf
// CHECK: return %{{.*}} : f64
func.func @others(%x: f64) -> f64 {
  %unused = arith.mulf %x, %x : f64
  return %x : f64
}
