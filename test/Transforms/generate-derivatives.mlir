// RUN: ad-opt %s --split-input-file --ad-generate-derivatives | FileCheck %s

// Nothing to tape for a sum: the pullback copies the cotangent to both
// arguments.
// CHECK-LABEL: func.func private @sum_ad_fwd_0_1
// CHECK-SAME: (%{{.*}}: f64, %{{.*}}: f64) -> f64
// CHECK: %[[S:.*]] = arith.addf
// CHECK: return %[[S]] : f64
// CHECK-LABEL: func.func private @sum_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: f64) -> (f64, f64)
// CHECK-NEXT: return %[[DY]], %[[DY]] : f64, f64
// CHECK-LABEL: func.func @caller
// CHECK: %[[R:.*]] = call @sum_ad_fwd_0_1(%{{.*}}, %{{.*}}) : (f64, f64) -> f64
// CHECK: %[[PB:.*]] = ad.make_pullback @sum_ad_pb_0_1() : () -> !ad.pullback<(f64) -> (f64, f64)>
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK: ad.pullback %[[PB]](%[[ONE]]) : !ad.pullback<(f64) -> (f64, f64)>
func.func @sum(%x: f64, %y: f64) -> f64 {
  %s = arith.addf %x, %y : f64
  return %s : f64
}

func.func @caller(%x: f64, %y: f64) -> (f64, f64) {
  %gx, %gy = ad.grad @sum(%x, %y) : (f64, f64) -> (f64, f64)
  return %gx, %gy : f64, f64
}

// -----

// sin's adjoint reads its operand, exp's adjoint its result: exactly those
// are taped. The constant factor is rebuilt in the pullback, not taped.
// CHECK-LABEL: func.func private @tape_ad_fwd_0
// CHECK: %[[S:.*]] = math.sin %[[X:.*]] : f64
// CHECK: %[[E:.*]] = math.exp %[[S]] : f64
// CHECK: %[[Y:.*]] = arith.mulf %[[E]], %{{.*}} : f64
// CHECK: return %[[Y]], %[[E]], %[[X]] : f64, f64, f64
// CHECK-LABEL: func.func private @tape_ad_pb_0
// CHECK-SAME: (%[[TE:.*]]: f64, %[[TX:.*]]: f64, %[[DY:.*]]: f64) -> f64
// CHECK: %[[C:.*]] = arith.constant 3.000000e+00 : f64
// CHECK: %[[D1:.*]] = arith.mulf %[[DY]], %[[C]] : f64
// CHECK: %[[D2:.*]] = arith.mulf %[[D1]], %[[TE]] : f64
// CHECK: %[[COS:.*]] = math.cos %[[TX]] : f64
// CHECK: %[[D3:.*]] = arith.mulf %[[D2]], %[[COS]] : f64
// CHECK: return %[[D3]] : f64
func.func @tape(%x: f64) -> f64 {
  %three = arith.constant 3.0 : f64
  %s = math.sin %x : f64
  %e = math.exp %s : f64
  %y = arith.mulf %e, %three : f64
  return %y : f64
}

func.func @caller(%x: f64) -> f64 {
  %g = ad.grad @tape(%x) : (f64) -> f64
  return %g : f64
}

// -----

// A value used twice gets the sum of both contributions.
// CHECK-LABEL: func.func private @square_ad_pb_0
// CHECK-SAME: (%[[X:.*]]: f64, %[[DY:.*]]: f64) -> f64
// CHECK: %[[A:.*]] = arith.mulf %[[DY]], %[[X]] : f64
// CHECK: %[[B:.*]] = arith.mulf %[[DY]], %[[X]] : f64
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[B]] : f64
// CHECK: return %[[S]] : f64
func.func @square(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}

func.func @caller(%x: f64) -> f64 {
  %g = ad.grad @square(%x) : (f64) -> f64
  return %g : f64
}

// -----

// Integer work stays in the forward function only; an argument that does
// not reach the result gets an exact zero; the index argument gets nothing.
// CHECK-LABEL: func.func private @mixed_ad_fwd_0_1
// CHECK: arith.index_cast
// CHECK: arith.sitofp
// CHECK-LABEL: func.func private @mixed_ad_pb_0_1
// CHECK-SAME: (%[[N:.*]]: f64, %[[DY:.*]]: f64) -> (f64, f64)
// CHECK-NOT: index_cast
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-DAG: %[[GX:.*]] = arith.mulf %[[DY]], %[[N]] : f64
// CHECK: return %[[GX]], %[[ZERO]] : f64, f64
func.func @mixed(%x: f64, %unused: f64, %n: index) -> f64 {
  %i = arith.index_cast %n : index to i64
  %f = arith.sitofp %i : i64 to f64
  %y = arith.mulf %x, %f : f64
  return %y : f64
}

func.func @caller(%x: f64, %u: f64, %n: index) -> (f64, f64) {
  %gx, %gu = ad.grad @mixed(%x, %u, %n) : (f64, f64, index) -> (f64, f64)
  return %gx, %gu : f64, f64
}

// -----

// A call runs the callee's forward function once; its tape travels in the
// caller's tape to the callee's pullback. A tape value that is the callee's
// own argument (here x) is kept as the call's operand.
// CHECK-LABEL: func.func private @inner_ad_fwd_0
// CHECK: math.sin
// CHECK-LABEL: func.func private @inner_ad_pb_0
// CHECK: math.cos
// CHECK-LABEL: func.func private @outer_ad_fwd_0
// CHECK-SAME: (%[[X:.*]]: f64)
// CHECK-NOT: call @inner(
// CHECK: %[[R:.*]]:2 = call @inner_ad_fwd_0(%[[X]]) : (f64) -> (f64, f64)
// CHECK-NOT: call @inner(
// CHECK: return %{{.*}}, %[[X]] : f64, f64
// CHECK-LABEL: func.func private @outer_ad_pb_0
// CHECK-SAME: (%[[T:.*]]: f64, %[[DY:.*]]: f64) -> f64
// CHECK: %[[G:.*]] = call @inner_ad_pb_0(%[[T]], %{{.*}}) : (f64, f64) -> f64
func.func @inner(%x: f64) -> f64 {
  %y = math.sin %x : f64
  return %y : f64
}

func.func @outer(%x: f64) -> f64 {
  %y = func.call @inner(%x) : (f64) -> f64
  %z = arith.negf %y : f64
  return %z : f64
}

func.func @caller(%x: f64) -> f64 {
  %g = ad.grad @outer(%x) : (f64) -> f64
  return %g : f64
}

// -----

// ad.forward keeps all results; the closure's type lists the cotangents of
// the float results only. wrt restricts the gradients.
// CHECK-LABEL: func.func private @multi_ad_pb_1
// CHECK-SAME: (%{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64) -> f64
// CHECK-LABEL: func.func @caller
// CHECK: %[[R:.*]]:4 = call @multi_ad_fwd_1(%{{.*}}, %{{.*}}) : (f64, f64) -> (f64, i32, f64, f64)
// CHECK: %[[PB:.*]] = ad.make_pullback @multi_ad_pb_1(%[[R]]#3) : (f64) -> !ad.pullback<(f64, f64) -> f64>
// CHECK: ad.pullback %[[PB]](%{{.*}}, %{{.*}}) : !ad.pullback<(f64, f64) -> f64>
func.func @multi(%x: f64, %y: f64) -> (f64, i32, f64) {
  %p = arith.mulf %x, %y : f64
  %i = arith.fptosi %p : f64 to i32
  %s = arith.addf %x, %y : f64
  return %p, %i, %s : f64, i32, f64
}

func.func @caller(%x: f64, %y: f64, %d0: f64, %d1: f64) -> f64 {
  %p, %i, %s, %pb = ad.forward @multi(%x, %y) {wrt = array<i64: 1>}
      : (f64, f64) -> (f64, i32, f64, !ad.pullback<(f64, f64) -> f64>)
  %g = ad.pullback %pb(%d0, %d1) : !ad.pullback<(f64, f64) -> f64>
  return %g : f64
}

// -----

// Requests for the same (function, wrt) share one pair of functions.
// CHECK-LABEL: func.func private @shared_ad_fwd_0
// CHECK-NOT: func.func private @shared_ad_fwd_0
// CHECK-LABEL: func.func @caller
// CHECK: call @shared_ad_fwd_0
// CHECK: call @shared_ad_fwd_0
func.func @shared(%x: f64) -> f64 {
  %y = math.tanh %x : f64
  return %y : f64
}

func.func @caller(%x: f64) -> (f64, f64, f64) {
  %g = ad.grad @shared(%x) : (f64) -> f64
  %y, %h = ad.value_and_grad @shared(%x) : (f64) -> (f64, f64)
  return %g, %y, %h : f64, f64, f64
}
