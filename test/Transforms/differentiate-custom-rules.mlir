// RUN: ad-opt %s --ad-differentiate | FileCheck %s

// A function with user-written rules: reverse mode calls the rule's forward
// function and a generated pullback that calls the rule's and keeps the
// gradients asked for; forward mode calls the rule's tangent function with
// zero tangents for the arguments not differentiated. The function's body
// (here there is none) is never differentiated; the rule ops are erased.

// CHECK-NOT: ad.custom_vjp
// CHECK-NOT: ad.custom_jvp
func.func private @ext(f64, f64) -> f64

func.func private @ext_fwd(%x: f64, %y: f64) -> (f64, f64) {
  %r = func.call @ext(%x, %y) : (f64, f64) -> f64
  return %r, %x : f64, f64
}

func.func private @ext_pb(%x: f64, %dr: f64) -> (f64, f64) {
  %two = arith.constant 2.0 : f64
  %dx = arith.mulf %dr, %two : f64
  return %dx, %x : f64, f64
}

func.func private @ext_tangent(%x: f64, %y: f64, %tx: f64, %ty: f64) -> (f64, f64) {
  %r = func.call @ext(%x, %y) : (f64, f64) -> f64
  %t = arith.addf %tx, %ty : f64
  return %r, %t : f64, f64
}

ad.custom_vjp @ext forward @ext_fwd pullback @ext_pb
ad.custom_jvp @ext tangent @ext_tangent

func.func @f(%x: f64, %y: f64) -> f64 {
  %s = math.sin %x : f64
  %r = func.call @ext(%s, %y) : (f64, f64) -> f64
  return %r : f64
}

// The tangent function of @ext with respect to its first argument: the
// second argument's tangent is zero.
// CHECK-LABEL: func.func private @ext_ad_jvp_0(
// CHECK-SAME: %[[X:.*]]: f64, %[[Y:.*]]: f64, %[[TX:.*]]: f64) -> (f64, f64)
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: call @ext_tangent(%[[X]], %[[Y]], %[[TX]], %[[Z]])

// The pullback of @ext with respect to its first argument only.
// CHECK-LABEL: func.func private @ext_ad_pb_0(
// CHECK-SAME: %[[S:.*]]: f64, %[[D:.*]]: f64) -> f64
// CHECK: %[[G:.*]]:2 = call @ext_pb(%[[S]], %[[D]]) : (f64, f64) -> (f64, f64)
// CHECK: return %[[G]]#0 : f64

// CHECK-LABEL: func.func private @f_ad_jvp_0(
// CHECK: call @ext_ad_jvp_0(
// CHECK-LABEL: func.func private @f_ad_fwd_0(
// CHECK: call @ext_fwd(
// CHECK-LABEL: func.func private @f_ad_pb_0(
// CHECK: call @ext_ad_pb_0(
// CHECK-NOT: call @ext(
func.func @grad_f(%x: f64, %y: f64) -> f64 {
  %g = ad.grad @f(%x, %y) {wrt = array<i64: 0>} : (f64, f64) -> f64
  return %g : f64
}

func.func @jvp_f(%x: f64, %y: f64, %t: f64) -> f64 {
  %r, %tr = ad.jvp @f(%x, %y) tangents(%t) {wrt = array<i64: 0>} : (f64, f64) -> (f64, f64)
  return %tr : f64
}

// Rules in nested modules are erased too.
// CHECK-LABEL: module @nested
// CHECK: func.func private @g_pb
// CHECK-NOT: ad.custom_vjp
module @nested {
  func.func private @g(f64) -> f64
  func.func private @g_fwd(%x: f64) -> f64 {
    return %x : f64
  }
  func.func private @g_pb(%dy: f64) -> f64 {
    return %dy : f64
  }
  ad.custom_vjp @g forward @g_fwd pullback @g_pb
}
