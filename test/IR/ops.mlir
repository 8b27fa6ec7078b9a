// RUN: ad-opt %s | ad-opt | FileCheck %s
// RUN: ad-opt %s --mlir-print-op-generic | ad-opt | FileCheck %s

func.func @f(%x: f64, %w: tensor<4xf64>, %n: index) -> f64 {
  return %x : f64
}

func.func @two(%x: f32, %k: i32) -> (f32, i32, tensor<?xf32>) {
  %c3 = arith.constant 3 : index
  %t = tensor.empty(%c3) : tensor<?xf32>
  return %x, %k, %t : f32, i32, tensor<?xf32>
}

// CHECK-LABEL: func.func @grad
func.func @grad(%x: f64, %w: tensor<4xf64>, %n: index) -> (f64, tensor<4xf64>) {
  // CHECK: ad.grad @f(%{{.*}}, %{{.*}}, %{{.*}}) : (f64, tensor<4xf64>, index) -> (f64, tensor<4xf64>)
  %gx, %gw = ad.grad @f(%x, %w, %n) : (f64, tensor<4xf64>, index) -> (f64, tensor<4xf64>)
  return %gx, %gw : f64, tensor<4xf64>
}

// CHECK-LABEL: func.func @grad_wrt
func.func @grad_wrt(%x: f64, %w: tensor<4xf64>, %n: index) -> tensor<4xf64> {
  // CHECK: ad.grad @f(%{{.*}}) {wrt = array<i64: 1>} : (f64, tensor<4xf64>, index) -> tensor<4xf64>
  %gw = ad.grad @f(%x, %w, %n) {wrt = array<i64: 1>} : (f64, tensor<4xf64>, index) -> tensor<4xf64>
  return %gw : tensor<4xf64>
}

// CHECK-LABEL: func.func @value_and_grad
func.func @value_and_grad(%x: f64, %w: tensor<4xf64>, %n: index) -> (f64, f64, tensor<4xf64>) {
  // CHECK: ad.value_and_grad @f({{.*}}) : (f64, tensor<4xf64>, index) -> (f64, f64, tensor<4xf64>)
  %y, %gx, %gw = ad.value_and_grad @f(%x, %w, %n)
      : (f64, tensor<4xf64>, index) -> (f64, f64, tensor<4xf64>)
  return %y, %gx, %gw : f64, f64, tensor<4xf64>
}

// CHECK-LABEL: func.func @forward_pullback
func.func @forward_pullback(%x: f64, %w: tensor<4xf64>, %n: index, %dy: f64) -> (f64, tensor<4xf64>) {
  // CHECK: %[[Y:.*]], %[[PB:.*]] = ad.forward @f({{.*}}) : (f64, tensor<4xf64>, index) -> (f64, !ad.pullback<(f64) -> (f64, tensor<4xf64>)>)
  %y, %pb = ad.forward @f(%x, %w, %n)
      : (f64, tensor<4xf64>, index) -> (f64, !ad.pullback<(f64) -> (f64, tensor<4xf64>)>)
  // CHECK: ad.pullback %[[PB]](%{{.*}}) : !ad.pullback<(f64) -> (f64, tensor<4xf64>)>
  %gx, %gw = ad.pullback %pb(%dy) : !ad.pullback<(f64) -> (f64, tensor<4xf64>)>
  return %gx, %gw : f64, tensor<4xf64>
}

// Integer results take no cotangent; dynamic tensors are differentiable.
// CHECK-LABEL: func.func @forward_several_results
func.func @forward_several_results(%x: f32, %k: i32, %d0: f32, %d1: tensor<?xf32>) -> f32 {
  // CHECK: ad.forward @two({{.*}}) {wrt = array<i64: 0>} : (f32, i32) -> (f32, i32, tensor<?xf32>, !ad.pullback<(f32, tensor<?xf32>) -> f32>)
  %a, %b, %c, %pb = ad.forward @two(%x, %k) {wrt = array<i64: 0>}
      : (f32, i32) -> (f32, i32, tensor<?xf32>, !ad.pullback<(f32, tensor<?xf32>) -> f32>)
  %g = ad.pullback %pb(%d0, %d1) : !ad.pullback<(f32, tensor<?xf32>) -> f32>
  return %g : f32
}

func.func private @f_pb(%t: f64, %dy: f64) -> f64

// CHECK-LABEL: func.func @make_pullback
func.func @make_pullback(%t: f64) -> !ad.pullback<(f64) -> f64> {
  // CHECK: ad.make_pullback @f_pb(%{{.*}}) : (f64) -> !ad.pullback<(f64) -> f64>
  %pb = ad.make_pullback @f_pb(%t) : (f64) -> !ad.pullback<(f64) -> f64>
  return %pb : !ad.pullback<(f64) -> f64>
}

// CHECK-LABEL: func.func @jvp
func.func @jvp(%x: f64, %w: tensor<4xf64>, %n: index, %tx: f64, %tw: tensor<4xf64>) -> (f64, f64) {
  // CHECK: ad.jvp @f(%{{.*}}, %{{.*}}, %{{.*}}) tangents(%{{.*}}, %{{.*}}) : (f64, tensor<4xf64>, index) -> (f64, f64)
  %y, %ty = ad.jvp @f(%x, %w, %n) tangents(%tx, %tw) : (f64, tensor<4xf64>, index) -> (f64, f64)
  return %y, %ty : f64, f64
}

// CHECK-LABEL: func.func @jvp_wrt
func.func @jvp_wrt(%x: f32, %k: i32, %t: f32) -> (f32, i32, tensor<?xf32>, f32, tensor<?xf32>) {
  // CHECK: ad.jvp @two(%{{.*}}, %{{.*}}) tangents(%{{.*}}) {wrt = array<i64: 0>} : (f32, i32) -> (f32, i32, tensor<?xf32>, f32, tensor<?xf32>)
  %a, %b, %c, %ta, %tc = ad.jvp @two(%x, %k) tangents(%t) {wrt = array<i64: 0>}
      : (f32, i32) -> (f32, i32, tensor<?xf32>, f32, tensor<?xf32>)
  return %a, %b, %c, %ta, %tc : f32, i32, tensor<?xf32>, f32, tensor<?xf32>
}

// CHECK-LABEL: func.func @hvp
func.func @hvp(%x: f64, %w: tensor<4xf64>, %n: index, %vx: f64, %vw: tensor<4xf64>) -> (f64, tensor<4xf64>) {
  // CHECK: ad.hvp @f(%{{.*}}, %{{.*}}, %{{.*}}) tangents(%{{.*}}, %{{.*}}) : (f64, tensor<4xf64>, index) -> (f64, tensor<4xf64>)
  %hx, %hw = ad.hvp @f(%x, %w, %n) tangents(%vx, %vw) : (f64, tensor<4xf64>, index) -> (f64, tensor<4xf64>)
  return %hx, %hw : f64, tensor<4xf64>
}

// CHECK-LABEL: func.func @stop_gradient
func.func @stop_gradient(%x: tensor<4xf64>, %s: bf16) -> (tensor<4xf64>, bf16) {
  // CHECK: ad.stop_gradient %{{.*}} : tensor<4xf64>
  %y = ad.stop_gradient %x : tensor<4xf64>
  // CHECK: ad.stop_gradient %{{.*}} : bf16
  %z = ad.stop_gradient %s : bf16
  return %y, %z : tensor<4xf64>, bf16
}

// User-written rules.
func.func private @ext(f64, tensor<2xf64>, index) -> (f64, i32)
func.func private @ext_fwd(%x: f64, %w: tensor<2xf64>, %n: index) -> (f64, i32, f64, tensor<2xf64>, index) {
  %y, %k = func.call @ext(%x, %w, %n) : (f64, tensor<2xf64>, index) -> (f64, i32)
  return %y, %k, %x, %w, %n : f64, i32, f64, tensor<2xf64>, index
}
func.func private @ext_pb(%x: f64, %w: tensor<2xf64>, %n: index, %dy: f64) -> (f64, tensor<2xf64>) {
  return %dy, %w : f64, tensor<2xf64>
}
func.func private @ext_tangent(%x: f64, %w: tensor<2xf64>, %n: index, %tx: f64, %tw: tensor<2xf64>) -> (f64, i32, f64) {
  %y, %k = func.call @ext(%x, %w, %n) : (f64, tensor<2xf64>, index) -> (f64, i32)
  return %y, %k, %tx : f64, i32, f64
}
// CHECK: ad.custom_vjp @ext forward @ext_fwd pullback @ext_pb
ad.custom_vjp @ext forward @ext_fwd pullback @ext_pb
// CHECK: ad.custom_jvp @ext tangent @ext_tangent
ad.custom_jvp @ext tangent @ext_tangent
