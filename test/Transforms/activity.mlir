// RUN: ad-opt %s --split-input-file --ad-differentiate | FileCheck %s

// Activity is followed through linalg bodies and stops at booleans: an
// output computed only from comparisons and constants (a count of ties next
// to a sum) gets no tangent output, a branch on a comparison that yields
// constants has no tangent, and sizes read from an active tensor make
// nothing they shape active.

#id = affine_map<(i) -> (i)>
#sc = affine_map<(i) -> ()>
func.func @sum_and_count(%x: tensor<?xf64>, %m: f64) -> (f64, f64) {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %e = tensor.empty() : tensor<f64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<f64>) -> tensor<f64>
  %r:2 = linalg.generic {indexing_maps = [#id, #sc, #sc], iterator_types = ["reduction"]}
      ins(%x : tensor<?xf64>) outs(%z, %z : tensor<f64>, tensor<f64>) {
  ^bb0(%v: f64, %s: f64, %c: f64):
    %sq = arith.mulf %v, %v : f64
    %s2 = arith.addf %s, %sq : f64
    %eq = arith.cmpf oeq, %v, %m : f64
    %inc = arith.select %eq, %one, %zero : f64
    %c2 = arith.addf %c, %inc : f64
    linalg.yield %s2, %c2 : f64, f64
  } -> (tensor<f64>, tensor<f64>)
  %s = tensor.extract %r#0[] : tensor<f64>
  %c = tensor.extract %r#1[] : tensor<f64>
  return %s, %c : f64, f64
}
func.func @request_sum_and_count(%x: tensor<?xf64>, %m: f64, %t: tensor<?xf64>) -> (f64, f64, f64, f64) {
  %s, %c, %ts, %tc = ad.jvp @sum_and_count(%x, %m) tangents(%t) {wrt = array<i64: 0>} : (tensor<?xf64>, f64) -> (f64, f64, f64, f64)
  return %s, %c, %ts, %tc : f64, f64, f64, f64
}
// The sum, the count and the sum's tangent: three outputs, not four.
// CHECK-LABEL: func.func private @sum_and_count_ad_jvp_0
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK-SAME: outs(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}} : tensor<f64>, tensor<f64>, tensor<f64>)
// CHECK: ^bb0(%{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64):
// CHECK: linalg.yield %{{.*}}, %{{.*}}, %{{.*}} : f64, f64, f64
// The count's tangent is zero.
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]] : f64, f64, f64, f64

// -----

func.func @step(%x: f64) -> f64 {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %two = arith.constant 2.0 : f64
  %pos = arith.cmpf ogt, %x, %zero : f64
  %r = scf.if %pos -> f64 {
    scf.yield %one : f64
  } else {
    scf.yield %two : f64
  }
  %y = arith.mulf %r, %x : f64
  return %y : f64
}
func.func @request_step(%x: f64, %t: f64) -> (f64, f64) {
  %y, %ty = ad.jvp @step(%x) tangents(%t) {wrt = array<i64: 0>} : (f64) -> (f64, f64)
  return %y, %ty : f64, f64
}
// The branch yields constants: it is cloned with its one result, and the
// tangent is r * t.
// CHECK-LABEL: func.func private @step_ad_jvp_0
// CHECK-SAME: (%[[X:.*]]: f64, %[[T:.*]]: f64) -> (f64, f64)
// CHECK: %[[R:.*]] = scf.if %{{.*}} -> (f64) {
// CHECK: %[[Y:.*]] = arith.mulf %[[R]], %[[X]]
// CHECK: %[[TY:.*]] = arith.mulf %[[T]], %[[R]]
// CHECK: return %[[Y]], %[[TY]]

// -----

#id = affine_map<(i) -> (i)>
func.func @scaled_ones(%x: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %ones = linalg.fill ins(%one : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %ones : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64, %out: f64):
    %p = arith.mulf %v, %o : f64
    linalg.yield %p : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}
func.func @request_scaled_ones(%x: tensor<?xf64>, %t: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %y, %ty = ad.jvp @scaled_ones(%x) tangents(%t) {wrt = array<i64: 0>} : (tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>)
  return %y, %ty : tensor<?xf64>, tensor<?xf64>
}
// The tensor of ones, sized by the active x, is not active: the product's
// tangent reads x's tangent only (two inputs and their one tangent).
// CHECK-LABEL: func.func private @scaled_ones_ad_jvp_0
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}} :
// CHECK-SAME: tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) outs
// CHECK: return

// -----

// An inactive tensor read by an active op in a loop (w inserted into the
// active accumulator): its zero tangent is made once, where w is defined,
// not filled again at every iteration.
func.func @patch(%x: tensor<?xf64>, %w: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x) -> tensor<?xf64> {
    %n = tensor.dim %w, %c0 : tensor<?xf64>
    %u = tensor.insert_slice %w into %acc[%i] [%n] [1] : tensor<?xf64> into tensor<?xf64>
    scf.yield %u : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}
func.func @request_patch(%x: tensor<?xf64>, %w: tensor<?xf64>, %t: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %y, %ty = ad.jvp @patch(%x, %w) tangents(%t) {wrt = array<i64: 0>} : (tensor<?xf64>, tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>)
  return %y, %ty : tensor<?xf64>, tensor<?xf64>
}
// CHECK-LABEL: func.func private @patch_ad_jvp_0
// CHECK-SAME: (%[[X:.*]]: tensor<?xf64>, %[[W:.*]]: tensor<?xf64>, %[[T:.*]]: tensor<?xf64>)
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: scf.for
// CHECK-NOT: linalg.fill
// CHECK: tensor.insert_slice %[[W]]
// CHECK: tensor.insert_slice %[[Z]]
// CHECK: scf.yield

// -----

// A loop's induction variable varies with its bounds only, not with its
// active iteration arguments: the slice of the inactive w it reads is
// inactive (no tangent slice, no zero tensor).
func.func @scale(%x: f64, %w: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %w, %c0 : tensor<?xf64>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> f64 {
    %s = tensor.extract_slice %w[%i] [1] [1] : tensor<?xf64> to tensor<1xf64>
    %v = tensor.extract %s[%c0] : tensor<1xf64>
    %p = arith.mulf %acc, %v : f64
    scf.yield %p : f64
  }
  return %r : f64
}
func.func @request_scale(%x: f64, %w: tensor<?xf64>, %t: f64) -> (f64, f64) {
  %y, %ty = ad.jvp @scale(%x, %w) tangents(%t) {wrt = array<i64: 0>} : (f64, tensor<?xf64>) -> (f64, f64)
  return %y, %ty : f64, f64
}
// CHECK-LABEL: func.func private @scale_ad_jvp_0
// CHECK-NOT: linalg.fill
// CHECK: scf.for
// CHECK: tensor.extract_slice
// CHECK-NOT: tensor.extract_slice
// CHECK: scf.yield
