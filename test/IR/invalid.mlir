// RUN: ad-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{cotangent #0 of a pullback has type 'i32', which is not differentiable (expected a float or a ranked tensor of floats)}}
func.func private @bad_pullback_type(!ad.pullback<(i32) -> f64>)

// -----

// expected-error @+1 {{gradient #1 of a pullback has type 'tensor<4xi32>', which is not differentiable}}
func.func private @bad_pullback_type(!ad.pullback<(f64) -> (f64, tensor<4xi32>)>)

// -----

func.func @caller(%x: f64) -> f64 {
  // expected-error @+1 {{'ad.grad' op callee @missing does not reference a symbol in this module}}
  %g = ad.grad @missing(%x) : (f64) -> f64
  return %g : f64
}

// -----

memref.global "private" @not_a_function : memref<2xf64>

func.func @caller(%x: f64) -> f64 {
  // expected-error @+1 {{'ad.grad' op callee @not_a_function is a 'memref.global', expected a 'func.func'}}
  %g = ad.grad @not_a_function(%x) : (f64) -> f64
  return %g : f64
}

// -----

func.func private @declared(%x: f64) -> f64

func.func @caller(%x: f64) -> f64 {
  // expected-error @+1 {{'ad.grad' op callee @declared is a declaration without an 'ad.custom_vjp' rule; only functions with a body or a rule can be differentiated}}
  %g = ad.grad @declared(%x) : (f64) -> f64
  return %g : f64
}

// -----

func.func @f(%x: f64, %y: f64) -> f64 {
  return %x : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-error @+1 {{'ad.grad' op has 1 operands but @f takes 2 arguments}}
  %g = ad.grad @f(%x) : (f64) -> f64
  return %g : f64
}

// -----

func.func @f(%x: f64) -> f64 {
  return %x : f64
}

func.func @caller(%x: f32) -> f32 {
  // expected-error @+1 {{'ad.grad' op operand #0 has type 'f32' but @f expects 'f64'}}
  %g = ad.grad @f(%x) : (f32) -> f32
  return %g : f32
}

// -----

func.func @f(%x: f64, %n: index) -> f64 {
  return %x : f64
}

func.func @caller(%x: f64, %n: index) -> f64 {
  // expected-error @+1 {{'ad.grad' op wrt position 2 is out of range for @f, which has 2 arguments}}
  %g = ad.grad @f(%x, %n) {wrt = array<i64: 2>} : (f64, index) -> f64
  return %g : f64
}

// -----

func.func @f(%x: f64, %y: f64) -> f64 {
  return %x : f64
}

func.func @caller(%x: f64) -> (f64, f64) {
  // expected-error @+1 {{'ad.grad' op wrt positions must be strictly increasing}}
  %g:2 = ad.grad @f(%x, %x) {wrt = array<i64: 1, 0>} : (f64, f64) -> (f64, f64)
  return %g#0, %g#1 : f64, f64
}

// -----

func.func @f(%x: f64, %n: index) -> f64 {
  return %x : f64
}

func.func @caller(%x: f64, %n: index) -> index {
  // expected-error @+1 {{'ad.grad' op wrt position 1 names an argument of type 'index', which is not differentiable (expected a float or a ranked tensor of floats)}}
  %g = ad.grad @f(%x, %n) {wrt = array<i64: 1>} : (f64, index) -> index
  return %g : index
}

// -----

func.func @two_results(%x: f64) -> (f64, f64) {
  return %x, %x : f64, f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-error @+1 {{'ad.grad' op needs @two_results to return exactly one float scalar or rank-0 tensor of floats, but it returns (f64, f64)}}
  %g = ad.grad @two_results(%x) : (f64) -> f64
  return %g : f64
}

// -----

func.func @int_result(%x: f64) -> i32 {
  %i = arith.fptosi %x : f64 to i32
  return %i : i32
}

func.func @caller(%x: f64) -> f64 {
  // expected-error @+1 {{'ad.value_and_grad' op needs @int_result to return exactly one float scalar or rank-0 tensor of floats, but it returns (i32)}}
  %y, %g = ad.value_and_grad @int_result(%x) : (f64) -> (i32, f64)
  return %g : f64
}

// -----

func.func @vector_result(%x: tensor<2xf64>) -> tensor<2xf64> {
  return %x : tensor<2xf64>
}

func.func @caller(%x: tensor<2xf64>) -> tensor<2xf64> {
  // expected-error @+1 {{'ad.grad' op needs @vector_result to return exactly one float scalar or rank-0 tensor of floats, but it returns (tensor<2xf64>)}}
  %g = ad.grad @vector_result(%x) : (tensor<2xf64>) -> tensor<2xf64>
  return %g : tensor<2xf64>
}

// -----

func.func @f(%x: f64, %y: f64) -> f64 {
  return %x : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-error @+1 {{'ad.grad' op expected 2 gradient results (one per differentiated argument), got 1}}
  %g = ad.grad @f(%x, %x) : (f64, f64) -> f64
  return %g : f64
}

// -----

func.func @f(%x: f64, %y: tensor<2xf64>) -> f64 {
  return %x : f64
}

func.func @caller(%x: f64, %y: tensor<2xf64>) -> f64 {
  // expected-error @+1 {{'ad.grad' op result #1 has type 'f64' but the gradient of its argument has type 'tensor<2xf64>'}}
  %g:2 = ad.grad @f(%x, %y) : (f64, tensor<2xf64>) -> (f64, f64)
  return %g#0 : f64
}

// -----

func.func @f(%x: f64) -> f64 {
  return %x : f64
}

func.func @caller(%x: f64) -> f32 {
  // expected-error @+1 {{'ad.value_and_grad' op result #0 has type 'f32' but @f returns 'f64'}}
  %y, %g = ad.value_and_grad @f(%x) : (f64) -> (f32, f64)
  return %y : f32
}

// -----

func.func @f(%x: f64) -> f64 {
  return %x : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-error @+1 {{'ad.value_and_grad' op result #1 has type 'f32' but the gradient of its argument has type 'f64'}}
  %y, %g = ad.value_and_grad @f(%x) : (f64) -> (f64, f32)
  return %y : f64
}

// -----

func.func @f(%x: f64) -> (f64, i32) {
  %i = arith.fptosi %x : f64 to i32
  return %x, %i : f64, i32
}

func.func @caller(%x: f64) {
  // expected-error @+1 {{'ad.forward' op expected 2 results of @f before the pullback, got 1}}
  %y, %pb = ad.forward @f(%x) : (f64) -> (f64, !ad.pullback<(f64) -> f64>)
  return
}

// -----

func.func @f(%x: f64) -> (f64, i32) {
  %i = arith.fptosi %x : f64 to i32
  return %x, %i : f64, i32
}

func.func @caller(%x: f64) {
  // expected-error @+1 {{'ad.forward' op result #1 has type 'i64' but @f returns 'i32'}}
  %y, %i, %pb = ad.forward @f(%x) : (f64) -> (f64, i64, !ad.pullback<(f64) -> f64>)
  return
}

// -----

func.func @f(%x: f64) -> (f64, i32) {
  %i = arith.fptosi %x : f64 to i32
  return %x, %i : f64, i32
}

func.func @caller(%x: f64) {
  // expected-error @+1 {{'ad.forward' op pullback has type '!ad.pullback<(f64) -> f32>' but differentiating @f with respect to these arguments gives '!ad.pullback<(f64) -> f64>'}}
  %y, %i, %pb = ad.forward @f(%x) : (f64) -> (f64, i32, !ad.pullback<(f64) -> f32>)
  return
}

// -----

func.func @caller(%pb: !ad.pullback<(f64) -> f64>, %dy: f32) -> f64 {
  // expected-error @+1 {{'ad.pullback' op failed to verify that cotangent types match the pullback signature}}
  %g = "ad.pullback"(%pb, %dy) : (!ad.pullback<(f64) -> f64>, f32) -> f64
  return %g : f64
}

// -----

func.func @caller(%pb: !ad.pullback<(f64) -> f64>, %dy: f64) -> f32 {
  // expected-error @+1 {{'ad.pullback' op failed to verify that gradient types match the pullback signature}}
  %g = "ad.pullback"(%pb, %dy) : (!ad.pullback<(f64) -> f64>, f64) -> f32
  return %g : f32
}

// -----

func.func @caller(%t: f64) {
  // expected-error @+1 {{'ad.make_pullback' op callee @nowhere does not reference a 'func.func'}}
  %pb = ad.make_pullback @nowhere(%t) : (f64) -> !ad.pullback<(f64) -> f64>
  return
}

// -----

func.func private @pb(%t: f64, %dy: f64) -> f32

func.func @caller(%t: f64) {
  // expected-error @+1 {{'ad.make_pullback' op callee @pb has type '(f64, f64) -> f32' but capturing these values for this closure needs '(f64, f64) -> f64'}}
  %pb = ad.make_pullback @pb(%t) : (f64) -> !ad.pullback<(f64) -> f64>
  return
}

// -----

// expected-note @+1 {{argument #0 of @vec has type 'vector<4xf64>', which is not differentiated (only floats and ranked tensors of floats are)}}
func.func @vec(%a: vector<4xf64>, %x: f64) -> f64 {
  return %x : f64
}

func.func @caller(%a: vector<4xf64>, %x: f64) {
  // expected-error @+1 {{'ad.grad' op expected 1 gradient results (one per differentiated argument), got 2}}
  %g:2 = ad.grad @vec(%a, %x) : (vector<4xf64>, f64) -> (vector<4xf64>, f64)
  return
}

// -----

func.func @f(%x: f64, %w: tensor<4xf64>, %n: index) -> f64 {
  return %x : f64
}

func.func @jvp_tangent_count(%x: f64, %w: tensor<4xf64>, %n: index, %t: f64) {
  // expected-error @+1 {{expected 2 tangents (one per differentiated argument), got 1}}
  %y, %ty = ad.jvp @f(%x, %w, %n) tangents(%t) : (f64, tensor<4xf64>, index) -> (f64, f64)
  return
}

// -----

func.func @f(%x: f64, %w: tensor<4xf64>, %n: index) -> f64 {
  return %x : f64
}

func.func @jvp_result_count(%x: f64, %w: tensor<4xf64>, %n: index, %t: f64, %tw: tensor<4xf64>) {
  // expected-error @+1 {{'ad.jvp' op expected 2 results (1 of @f, then one tangent per float result), got 1}}
  %y = ad.jvp @f(%x, %w, %n) tangents(%t, %tw) : (f64, tensor<4xf64>, index) -> (f64)
  return
}

// -----

func.func @f(%x: f64, %w: tensor<4xf64>, %n: index) -> f64 {
  return %x : f64
}

func.func @jvp_tangent_result_type(%x: f64, %w: tensor<4xf64>, %n: index, %t: f64, %tw: tensor<4xf64>) {
  // expected-error @+1 {{'ad.jvp' op result #1 has type 'f32' but the tangent it stands for has type 'f64'}}
  %y, %ty = ad.jvp @f(%x, %w, %n) tangents(%t, %tw) : (f64, tensor<4xf64>, index) -> (f64, f32)
  return
}

// -----

func.func @f(%x: f64, %w: tensor<4xf64>, %n: index) -> f64 {
  return %x : f64
}

func.func @jvp_wrt_integer(%x: f64, %w: tensor<4xf64>, %n: index) {
  // expected-error @+1 {{'ad.jvp' op wrt position 2 names an argument of type 'index', which is not differentiable}}
  %y, %ty = ad.jvp @f(%x, %w, %n) tangents(%n) {wrt = array<i64: 2>} : (f64, tensor<4xf64>, index) -> (f64, f64)
  return
}

// -----

func.func @g(%x: f64) -> (f64, f64) {
  return %x, %x : f64, f64
}

func.func @hvp_needs_one_result(%x: f64) {
  // expected-error @+1 {{'ad.hvp' op needs @g to return exactly one float scalar or rank-0 tensor of floats, but it returns (f64, f64)}}
  %h = ad.hvp @g(%x) tangents(%x) : (f64) -> f64
  return
}

// -----

func.func @f(%x: f64) -> f64 {
  return %x : f64
}

func.func @hvp_result_type(%x: f64) {
  // expected-error @+1 {{'ad.hvp' op result #0 has type 'f32' but the gradient of its argument has type 'f64'}}
  %h = ad.hvp @f(%x) tangents(%x) : (f64) -> f32
  return
}

// -----

func.func @stop_gradient_integer(%k: i32) {
  // expected-error @+1 {{'ad.stop_gradient' op operand has type 'i32', expected a float or a ranked tensor of floats}}
  %s = ad.stop_gradient %k : i32
  return
}

// -----

func.func @stop_gradient_type_mismatch(%x: f64) {
  // expected-error @+2 {{use of value '%x' expects different type than prior uses: 'f32' vs 'f64'}}
  // expected-note @-2 {{prior use here}}
  %s = ad.stop_gradient %x : f32
  return
}

// -----

func.func private @f(%x: f64, %n: index) -> f64
func.func private @fwd(%x: f64) -> (f64, f64)
func.func private @pb(%s: f64, %dy: f64) -> f64
// expected-error @+1 {{'ad.custom_vjp' op forward @fwd must take the arguments of @f, (f64, index), but takes (f64)}}
ad.custom_vjp @f forward @fwd pullback @pb

// -----

func.func private @f(%x: f64) -> (f64, i1)
func.func private @fwd(%x: f64) -> (f64, f64)
func.func private @pb(%s: f64, %dy: f64) -> f64
// expected-error @+1 {{'ad.custom_vjp' op forward @fwd must return the results of @f, (f64, i1), followed by residuals, but returns (f64, f64)}}
ad.custom_vjp @f forward @fwd pullback @pb

// -----

func.func private @f(%x: f64) -> f64
func.func private @fwd(%x: f64) -> (f64, memref<f64>)
func.func private @pb(%s: memref<f64>, %dy: f64) -> f64
// expected-error @+1 {{'ad.custom_vjp' op residual 0 of forward @fwd has type 'memref<f64>', but residuals are float, integer or index scalars or ranked tensors of them}}
ad.custom_vjp @f forward @fwd pullback @pb

// -----

func.func private @f(%x: f64) -> f64
func.func private @fwd(%x: f64) -> (f64, f32)
func.func private @pb(%dy: f64, %s: f32) -> f64
// expected-error @+1 {{'ad.custom_vjp' op pullback @pb must take the residuals of @fwd and a cotangent per float result of @f, (f32, f64), but takes (f64, f32)}}
ad.custom_vjp @f forward @fwd pullback @pb

// -----

func.func private @f(%x: f64, %n: index, %w: tensor<3xf32>) -> f64
func.func private @fwd(%x: f64, %n: index, %w: tensor<3xf32>) -> f64
func.func private @pb(%dy: f64) -> (f64, index, tensor<3xf32>)
// expected-error @+1 {{'ad.custom_vjp' op pullback @pb must return a gradient per float argument of @f, (f64, tensor<3xf32>), but returns (f64, index, tensor<3xf32>)}}
ad.custom_vjp @f forward @fwd pullback @pb

// -----

func.func private @f(%x: f64) -> f64
func.func private @pb(%dy: f64) -> f64
// expected-error @+1 {{'ad.custom_vjp' op forward @missing does not reference a 'func.func'}}
ad.custom_vjp @f forward @missing pullback @pb

// -----

func.func private @f(%x: f64) -> f64
func.func private @fwd(%x: f64) -> f64
func.func private @pb(%dy: f64) -> f64
ad.custom_vjp @f forward @fwd pullback @pb
// expected-error @+1 {{'ad.custom_vjp' op is a second rule for @f (a function has at most one 'ad.custom_vjp')}}
ad.custom_vjp @f forward @fwd pullback @pb

// -----

func.func private @f(%x: f64) -> (f64, f64)
func.func private @pb(%dy: f64) -> f64
// expected-error @+1 {{'ad.custom_vjp' op names @f as its own forward or pullback function}}
ad.custom_vjp @f forward @f pullback @pb

// -----

func.func private @f(%x: f64, %n: index) -> (f64, index)
func.func private @tan(%x: f64, %n: index, %tx: f64, %tn: index) -> (f64, index, f64)
// expected-error @+1 {{'ad.custom_jvp' op tangent @tan must take the arguments of @f and a tangent per float argument, (f64, index, f64), but takes (f64, index, f64, index)}}
ad.custom_jvp @f tangent @tan

// -----

func.func private @f(%x: f64, %n: index) -> (f64, index)
func.func private @tan(%x: f64, %n: index, %tx: f64) -> (f64, index, f64, index)
// expected-error @+1 {{'ad.custom_jvp' op tangent @tan must return the results of @f and a tangent per float result, (f64, index, f64), but returns (f64, index, f64, index)}}
ad.custom_jvp @f tangent @tan

// -----

func.func private @f(%x: f64) -> f64
func.func private @tan(%x: f64, %tx: f64) -> (f64, f64)
ad.custom_jvp @f tangent @tan
// expected-error @+1 {{'ad.custom_jvp' op is a second rule for @f (a function has at most one 'ad.custom_jvp')}}
ad.custom_jvp @f tangent @tan

// -----

func.func @nested() {
  // expected-error @+1 {{'ad.custom_jvp' op expects parent op 'builtin.module'}}
  "ad.custom_jvp"() {function = @f, tangent = @f} : () -> ()
  return
}
