// RUN: ad-opt %s --ad-generate-derivatives | FileCheck %s

// A recursion reading elements of a tensor it passes on unchanged. Its
// pullback takes that tensor (after the tape and the row) instead of
// keeping it per invocation, and the cotangent accumulated so far for it
// (threaded through the recursive calls: each invocation adds its few
// elements, not a whole tensor). The elements it multiplies by are read
// again from the tensor, and the parity of the loop's induction variable
// is computed again: neither takes a tape slot.

// The entry forward returns the tensor after the tape and the row; the
// entry pullback starts the accumulator at zero.
// CHECK-LABEL: func.func private @walk_ad_fwd_0
// CHECK-SAME: -> (f64, memref<?xf64>, index, tensor<?xf64>)
// CHECK-LABEL: func.func private @walk_ad_pb_0
// CHECK-SAME: (%[[TAPE:.*]]: memref<?xf64>, %[[ROW:.*]]: index, %[[A:.*]]: tensor<?xf64>, %[[CT:.*]]: f64) -> tensor<?xf64>
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: call @walk_ad_pbrec_0(%[[TAPE]], %[[ROW]], %[[A]], %[[ZERO]], %[[CT]])

// Each iteration of the loop stores the element's index, the callee's
// result and the callee's last row, in rows the loop takes at its entry
// (no link to the row before); the element and the parity are not stored.
// CHECK-LABEL: func.func private @walk_ad_fwdrec_0
// CHECK: scf.for
// CHECK-COUNT-1: memref.store
// CHECK-NOT: memref.store
// CHECK: tensor.extract
// CHECK: call @walk_ad_fwdrec_0
// CHECK-COUNT-2: memref.store
// CHECK-NOT: memref.store
// CHECK: scf.yield

// CHECK-LABEL: func.func private @walk_ad_pbrec_0
// CHECK-SAME: (%{{.*}}: memref<?xf64>, %{{.*}}: index, %[[A:.*]]: tensor<?xf64>, %[[ACC:.*]]: tensor<?xf64>, %{{.*}}: f64) -> tensor<?xf64>
// CHECK: scf.for %[[K:.*]] = {{.*}} iter_args({{.*}}, %[[CARRIED:.*]] = %[[ACC]]
// CHECK: arith.andi
// CHECK: tensor.extract %[[A]]
// CHECK: %[[INNER:.*]] = func.call @walk_ad_pbrec_0(%{{.*}}, %{{.*}}, %[[A]], %[[CARRIED]],
// CHECK: tensor.insert %{{.*}} into %[[INNER]]

func.func private @walk(%a: tensor<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f64
  %x = tensor.extract %a[%n] : tensor<?xf64>
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> f64 {
      %j = arith.addi %k, %m : index
      %p = arith.remui %j, %n : index
      %y = tensor.extract %a[%p] : tensor<?xf64>
      %sub = func.call @walk(%a, %m) : (tensor<?xf64>, index) -> f64
      %t = arith.mulf %y, %sub : f64
      %odd = arith.andi %k, %c1 : index
      %isodd = arith.cmpi ne, %odd, %c0 : index
      %plus = arith.addf %acc, %t : f64
      %minus = arith.subf %acc, %t : f64
      %new = arith.select %isodd, %minus, %plus : f64
      scf.yield %new : f64
    }
    %q = arith.mulf %s, %x : f64
    scf.yield %q : f64
  }
  return %r : f64
}

func.func @gradient(%a: tensor<?xf64>, %n: index) -> tensor<?xf64> {
  %g = ad.grad @walk(%a, %n) {wrt = array<i64: 0>} : (tensor<?xf64>, index) -> tensor<?xf64>
  return %g : tensor<?xf64>
}
