// RUN: ad-opt %s --ad-differentiate | FileCheck %s

// Forward mode: one tangent function per (callee, wrt), the primal ops
// followed by their tangents, no tape.

// Arithmetic: the product rule, one term per active operand; a conversion
// is its own tangent; an inactive operand contributes nothing.
func.func @arith(%x: f32, %y: f32, %k: f32) -> f64 {
  %p = arith.mulf %x, %y : f32
  %q = arith.mulf %p, %k : f32
  %s = math.sin %q : f32
  %e = arith.extf %s : f32 to f64
  return %e : f64
}
func.func @request_arith(%x: f32, %y: f32, %k: f32, %tx: f32, %ty: f32) -> (f64, f64) {
  %r, %t = ad.jvp @arith(%x, %y, %k) tangents(%tx, %ty) {wrt = array<i64: 0, 1>} : (f32, f32, f32) -> (f64, f64)
  return %r, %t : f64, f64
}
// CHECK-LABEL: func.func private @arith_ad_jvp_0_1
// CHECK-SAME: (%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[K:.*]]: f32, %[[TX:.*]]: f32, %[[TY:.*]]: f32) -> (f64, f64)
// CHECK: %[[P:.*]] = arith.mulf %[[X]], %[[Y]]
// CHECK: %[[A:.*]] = arith.mulf %[[TX]], %[[Y]]
// CHECK: %[[B:.*]] = arith.mulf %[[TY]], %[[X]]
// CHECK: %[[TP:.*]] = arith.addf %[[A]], %[[B]]
// CHECK: %[[Q:.*]] = arith.mulf %[[P]], %[[K]]
// CHECK: %[[TQ:.*]] = arith.mulf %[[TP]], %[[K]]
// CHECK-NOT: arith.addf
// CHECK: %[[S:.*]] = math.sin %[[Q]]
// CHECK: %[[C:.*]] = math.cos %[[Q]]
// CHECK: %[[TS:.*]] = arith.mulf %[[TQ]], %[[C]]
// CHECK: %[[E:.*]] = arith.extf %[[S]] : f32 to f64
// CHECK: %[[TE:.*]] = arith.extf %[[TS]] : f32 to f64
// CHECK: return %[[E]], %[[TE]] : f64, f64
// CHECK-LABEL: func.func @request_arith
// CHECK: call @arith_ad_jvp_0_1

// scf.while: the tangent of each active loop-carried value is carried next
// to it; no tape.
func.func @grow(%x: f64, %limit: f64) -> f64 {
  %r = scf.while (%v = %x) : (f64) -> f64 {
    %go = arith.cmpf olt, %v, %limit : f64
    scf.condition(%go) %v : f64
  } do {
  ^bb0(%v: f64):
    %sq = arith.mulf %v, %v : f64
    scf.yield %sq : f64
  }
  return %r : f64
}
func.func @request_grow(%x: f64, %l: f64, %t: f64) -> (f64, f64) {
  %r, %tr = ad.jvp @grow(%x, %l) tangents(%t) {wrt = array<i64: 0>} : (f64, f64) -> (f64, f64)
  return %r, %tr : f64, f64
}
// CHECK-LABEL: func.func private @grow_ad_jvp_0
// CHECK-SAME: (%[[X:.*]]: f64, %[[L:.*]]: f64, %[[T:.*]]: f64) -> (f64, f64)
// CHECK-NOT: memref
// CHECK: scf.while (%[[V:.*]] = %[[X]], %[[TV:.*]] = %[[T]]) : (f64, f64) -> (f64, f64)
// CHECK: scf.condition(%{{.*}}) %[[V]], %[[TV]] : f64, f64
// CHECK: ^bb0(%[[V2:.*]]: f64, %[[TV2:.*]]: f64):
// CHECK: %[[SQ:.*]] = arith.mulf %[[V2]], %[[V2]]
// CHECK: %[[T1:.*]] = arith.mulf %[[TV2]], %[[V2]]
// CHECK: %[[T2:.*]] = arith.mulf %[[TV2]], %[[V2]]
// CHECK: %[[TSQ:.*]] = arith.addf %[[T1]], %[[T2]]
// CHECK: scf.yield %[[SQ]], %[[TSQ]]

// scf.if yields the tangent of its result from each branch; a recursive
// call calls the tangent function itself.
func.func @rec(%n: index, %x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %a = func.call @rec(%m, %x) : (index, f64) -> f64
    %s = math.sin %a : f64
    scf.yield %s : f64
  }
  return %r : f64
}
func.func @request_rec(%n: index, %x: f64, %t: f64) -> (f64, f64) {
  %r, %tr = ad.jvp @rec(%n, %x) tangents(%t) : (index, f64) -> (f64, f64)
  return %r, %tr : f64, f64
}
// CHECK-LABEL: func.func private @rec_ad_jvp_1
// CHECK-SAME: (%[[N:.*]]: index, %[[X:.*]]: f64, %[[T:.*]]: f64) -> (f64, f64)
// CHECK: scf.if %{{.*}} -> (f64, f64)
// CHECK: scf.yield %[[X]], %[[T]] : f64, f64
// CHECK: %[[R:.*]]:2 = func.call @rec_ad_jvp_1(%{{.*}}, %[[X]], %[[T]])
// CHECK: %[[S:.*]] = math.sin %[[R]]#0
// CHECK: %[[C:.*]] = math.cos %[[R]]#0
// CHECK: %[[TS:.*]] = arith.mulf %[[R]]#1, %[[C]]
// CHECK: scf.yield %[[S]], %[[TS]]

// linalg.generic: one more input per active input and one more output per
// active result; the body holds the scalar tangent rules.
#id = affine_map<(i) -> (i)>
#sc = affine_map<(i) -> ()>
func.func @dot(%a: tensor<?xf64>, %b: tensor<?xf64>) -> tensor<f64> {
  %z = arith.constant 0.0 : f64
  %init = tensor.from_elements %z : tensor<f64>
  %d = linalg.generic {indexing_maps = [#id, #id, #sc], iterator_types = ["reduction"]}
      ins(%a, %b : tensor<?xf64>, tensor<?xf64>) outs(%init : tensor<f64>) {
    ^bb0(%u: f64, %v: f64, %acc: f64):
      %m = arith.mulf %u, %v : f64
      %s = arith.addf %acc, %m : f64
      linalg.yield %s : f64
  } -> tensor<f64>
  return %d : tensor<f64>
}
func.func @request_dot(%a: tensor<?xf64>, %b: tensor<?xf64>, %t: tensor<?xf64>) -> (tensor<f64>, tensor<f64>) {
  %r, %tr = ad.jvp @dot(%a, %b) tangents(%t) {wrt = array<i64: 0>} : (tensor<?xf64>, tensor<?xf64>) -> (tensor<f64>, tensor<f64>)
  return %r, %tr : tensor<f64>, tensor<f64>
}
// CHECK-LABEL: func.func private @dot_ad_jvp_0
// CHECK-SAME: (%[[A:.*]]: tensor<?xf64>, %[[B:.*]]: tensor<?xf64>, %[[T:.*]]: tensor<?xf64>)
// CHECK: %[[TI:.*]] = linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[A]], %[[B]], %[[T]] : {{.*}}) outs(%{{.*}}, %[[TI]] : tensor<f64>, tensor<f64>)
// CHECK: ^bb0(%[[U:.*]]: f64, %[[V:.*]]: f64, %[[TU:.*]]: f64, %[[ACC:.*]]: f64, %[[TACC:.*]]: f64):
// CHECK: %[[M:.*]] = arith.mulf %[[U]], %[[V]]
// CHECK: %[[TM:.*]] = arith.mulf %[[TU]], %[[V]]
// CHECK-NOT: arith.mulf
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[M]]
// CHECK: %[[TS:.*]] = arith.addf %[[TACC]], %[[TM]]
// CHECK: linalg.yield %[[S]], %[[TS]]

// Tensor ops that move elements are their own tangents; a stopped value
// has none.
func.func @moves(%x: tensor<4xf64>, %s: f64) -> tensor<2xf64> {
  %stopped = ad.stop_gradient %s : f64
  %c1 = arith.constant 1 : index
  %i = tensor.insert %stopped into %x[%c1] : tensor<4xf64>
  %sl = tensor.extract_slice %i[1] [2] [1] : tensor<4xf64> to tensor<2xf64>
  return %sl : tensor<2xf64>
}
func.func @request_moves(%x: tensor<4xf64>, %s: f64, %tx: tensor<4xf64>, %ts: f64) -> (tensor<2xf64>, tensor<2xf64>) {
  %r, %tr = ad.jvp @moves(%x, %s) tangents(%tx, %ts) : (tensor<4xf64>, f64) -> (tensor<2xf64>, tensor<2xf64>)
  return %r, %tr : tensor<2xf64>, tensor<2xf64>
}
// CHECK-LABEL: func.func private @moves_ad_jvp_0_1
// CHECK-SAME: (%[[X:.*]]: tensor<4xf64>, %[[S:.*]]: f64, %[[TX:.*]]: tensor<4xf64>, %{{.*}}: f64)
// CHECK: %[[I:.*]] = tensor.insert %[[S]] into %[[X]]
// CHECK: %[[ZERO:.*]] = arith.constant 0.0
// CHECK: %[[TI:.*]] = tensor.insert %[[ZERO]] into %[[TX]]
// CHECK: tensor.extract_slice %[[I]][1] [2] [1]
// CHECK: tensor.extract_slice %[[TI]][1] [2] [1]
// CHECK-NOT: ad.stop_gradient

// ad.hvp: the jvp of a generated function returning the gradient.
func.func @sq(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  %z = math.exp %y : f64
  return %z : f64
}
func.func @request_hvp(%x: f64, %v: f64) -> f64 {
  %h = ad.hvp @sq(%x) tangents(%v) : (f64) -> f64
  return %h : f64
}

// CHECK-LABEL: func.func private @sq_ad_gradient_0_ad_jvp_0
// CHECK: call @sq_ad_fwd_0_ad_jvp_0
// CHECK: call @sq_ad_pb_0_ad_jvp_0_1
// CHECK-LABEL: func.func @request_hvp
// CHECK: %[[R:.*]]:2 = call @sq_ad_gradient_0_ad_jvp_0
// CHECK: return %[[R]]#1

