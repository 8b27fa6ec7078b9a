// What the rules of the ds ops emit into the pullback: ds.softplus (an
// external model) reads its operand and divides the cotangent by
// 1 + exp(-x); ds.cube (implemented in ODS) multiplies it by 3 x^2. The
// forward function keeps the ds ops; ds ops never appear in a pullback.
// RUN: ds-opt %s --split-input-file --ad-differentiate | FileCheck %s

func.func @softplus(%x: f64) -> f64 {
  %y = ds.softplus %x : f64
  return %y : f64
}

func.func @grad_softplus(%x: f64) -> f64 {
  %g = ad.grad @softplus(%x) : (f64) -> f64
  return %g : f64
}

// CHECK-LABEL: func.func private @softplus_ad_fwd_0
// CHECK-SAME: (%[[X:.*]]: f64) -> (f64, f64)
// CHECK: %[[Y:.*]] = ds.softplus %[[X]] : f64
// CHECK: return %[[Y]], %[[X]] : f64, f64

// CHECK-LABEL: func.func private @softplus_ad_pb_0
// CHECK-SAME: (%[[PX:.*]]: f64, %[[DY:.*]]: f64) -> f64
// CHECK-NOT: ds.
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK-DAG: %[[NEG:.*]] = arith.negf %[[PX]] : f64
// CHECK: %[[EXP:.*]] = math.exp %[[NEG]] : f64
// CHECK: %[[DEN:.*]] = arith.addf %[[EXP]], %[[ONE]] : f64
// CHECK: %[[DX:.*]] = arith.divf %[[DY]], %[[DEN]] : f64
// CHECK: return %[[DX]] : f64

// -----

// tensor<?xf32>: the constant of the rule takes the operand's shape.
func.func @cube(%t: tensor<?xf32>) -> tensor<?xf32> {
  %y = ds.cube %t : tensor<?xf32>
  return %y : tensor<?xf32>
}

func.func @pullback_cube(%t: tensor<?xf32>, %dy: tensor<?xf32>) -> tensor<?xf32> {
  %y, %pb = ad.forward @cube(%t)
      : (tensor<?xf32>) -> (tensor<?xf32>, !ad.pullback<(tensor<?xf32>) -> tensor<?xf32>>)
  %g = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf32>) -> tensor<?xf32>>
  return %g : tensor<?xf32>
}

// CHECK-LABEL: func.func private @cube_ad_pb_0
// CHECK-SAME: (%[[T:.*]]: tensor<?xf32>, %[[DY:.*]]: tensor<?xf32>) -> tensor<?xf32>
// CHECK-NOT: ds.
// CHECK: %[[SQ:.*]] = arith.mulf %[[T]], %[[T]] : tensor<?xf32>
// CHECK: %[[THREE:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?xf32>)
// CHECK: %[[SLOPE:.*]] = arith.mulf %[[SQ]], %[[THREE]] : tensor<?xf32>
// CHECK: %[[DX:.*]] = arith.mulf %[[DY]], %[[SLOPE]] : tensor<?xf32>
// CHECK: return %[[DX]] : tensor<?xf32>
