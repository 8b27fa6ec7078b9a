// RUN: ad-opt %s --split-input-file --ad-differentiate --verify-diagnostics

// A float computed from a float through an integer bitcast has no rule: an
// error at that op, not a silently zero gradient.
func.func @bits(%x: f64) -> f64 {
  %i = arith.bitcast %x : f64 to i64
  // expected-error @+1 {{no derivative rule for 'arith.bitcast', whose result depends on a differentiated argument}}
  %y = arith.bitcast %i : i64 to f64
  return %y : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @bits}}
  %g = ad.grad @bits(%x) : (f64) -> f64
  return %g : f64
}

// -----

// The error names the op inside the callee and notes the call chain.
func.func @inner(%x: f64) -> f64 {
  %i = arith.bitcast %x : f64 to i64
  // expected-error @+1 {{no derivative rule for 'arith.bitcast'}}
  %y = arith.bitcast %i : i64 to f64
  return %y : f64
}

func.func @outer(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @inner}}
  %y = func.call @inner(%x) : (f64) -> f64
  return %y : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @outer}}
  %g = ad.grad @outer(%x) : (f64) -> f64
  return %g : f64
}

// -----

func.func private @external(f64) -> f64

func.func @calls_external(%x: f64) -> f64 {
  // expected-error @+1 {{cannot differentiate this call: 'external' has no body in this module}}
  %y = func.call @external(%x) : (f64) -> f64
  return %y : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @calls_external}}
  %g = ad.grad @calls_external(%x) : (f64) -> f64
  return %g : f64
}

// -----

func.func @f(%x: f64) -> f64 {
  %y = math.sin %x : f64
  return %y : f64
}

func.func @escapes(%x: f64) -> !ad.pullback<(f64) -> f64> {
  %y, %pb = ad.forward @f(%x) : (f64) -> (f64, !ad.pullback<(f64) -> f64>)
  // expected-error @+1 {{'func.return' op uses a pullback closure, which cannot leave the function that created it yet; apply it with ad.pullback there}}
  return %pb : !ad.pullback<(f64) -> f64>
}

// -----

func.func @apply(%pb: !ad.pullback<(f64) -> f64>, %dy: f64) -> f64 {
  // expected-error @+1 {{'ad.pullback' op applies a closure that does not come from an ad.forward in the same function; closures passed through arguments, results or control flow are not supported yet}}
  %g = ad.pullback %pb(%dy) : !ad.pullback<(f64) -> f64>
  return %g : f64
}

// -----

// Memory is not followed by the analysis: storing an active value is an
// error, not a silently zero gradient.
func.func @through_memory(%x: f64) -> f64 {
  %m = memref.alloca() : memref<f64>
  %s = math.sin %x : f64
  // expected-error @+1 {{cannot differentiate through memory: 'memref.store' writes a value that depends on a differentiated argument}}
  memref.store %s, %m[] : memref<f64>
  %y = memref.load %m[] : memref<f64>
  return %y : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @through_memory}}
  %g = ad.grad @through_memory(%x) : (f64) -> f64
  return %g : f64
}

// -----

// Printing an active value is fine (it writes no memref).
func.func @prints(%x: f64) -> f64 {
  %s = math.sin %x : f64
  vector.print %s : f64
  return %s : f64
}

func.func @caller(%x: f64) -> f64 {
  %g = ad.grad @prints(%x) : (f64) -> f64
  return %g : f64
}

// -----

// A linalg.generic on buffers that writes an active value (read inside its
// body) is memory the analysis cannot follow.
func.func @buffer_generic(%x: f64, %m: memref<4xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{cannot differentiate through memory: 'linalg.generic' writes a value that depends on a differentiated argument}}
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%m : memref<4xf64>) {
  ^bb0(%o: f64):
    %s = arith.mulf %o, %x : f64
    linalg.yield %s : f64
  }
  %v = memref.load %m[%c0] : memref<4xf64>
  %r = arith.mulf %v, %x : f64
  return %r : f64
}

func.func @caller(%x: f64, %m: memref<4xf64>) -> f64 {
  // expected-note @+1 {{while differentiating this call of @buffer_generic}}
  %g = ad.grad @buffer_generic(%x, %m) : (f64, memref<4xf64>) -> f64
  return %g : f64
}

// -----

func.func @inner(%x: f64) -> f64 {
  %y = math.sin %x : f64
  return %y : f64
}

func.func @takes_gradient(%x: f64) -> f64 {
  // expected-error @+1 {{cannot differentiate a function that itself takes derivatives (higher-order derivatives are not supported yet)}}
  %g = ad.grad @inner(%x) : (f64) -> f64
  %z = arith.mulf %g, %x : f64
  return %z : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @takes_gradient}}
  %g = ad.grad @takes_gradient(%x) : (f64) -> f64
  return %g : f64
}

// -----

// A dynamically shaped tensor the adjoint reads in each iteration of a
// while loop: a row of the tape has a fixed width.
func.func @tensor_in_while(%t: tensor<?xf64>) -> tensor<?xf64> {
  %one = arith.constant 1.0 : f64
  %r:2 = scf.while (%v = %t, %s = %one) : (tensor<?xf64>, f64) -> (tensor<?xf64>, f64) {
    %ten = arith.constant 10.0 : f64
    %go = arith.cmpf olt, %s, %ten : f64
    scf.condition(%go) %v, %s : tensor<?xf64>, f64
  } do {
  ^bb0(%v: tensor<?xf64>, %s: f64):
    // expected-error @+1 {{cannot keep a value of type 'tensor<?xf64>' for the adjoint of this op yet (only scalars and statically shaped tensors of floats can be stored per iteration)}}
    %w = math.sin %v : tensor<?xf64>
    %two = arith.constant 2.0 : f64
    %s2 = arith.mulf %s, %two : f64
    scf.yield %w, %s2 : tensor<?xf64>, f64
  }
  return %r#0 : tensor<?xf64>
}

func.func @caller(%t: tensor<?xf64>, %dy: tensor<?xf64>) -> tensor<?xf64> {
  // expected-note @+1 {{while differentiating this call of @tensor_in_while}}
  %y, %pb = ad.forward @tensor_in_while(%t) : (tensor<?xf64>) -> (tensor<?xf64>, !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>)
  %g = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>
  return %g : tensor<?xf64>
}

// -----

// A dynamically shaped tensor read per iteration of a for loop: its size
// could change from one iteration to the next.
func.func @dynamic_tensor_in_for(%t: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%v = %t) -> (tensor<?xf64>) {
    // expected-error @+1 {{cannot keep a value of type 'tensor<?xf64>' for the adjoint of this op yet}}
    %w = math.sin %v : tensor<?xf64>
    scf.yield %w : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}

func.func @caller(%t: tensor<?xf64>, %dy: tensor<?xf64>) -> tensor<?xf64> {
  // expected-note @+1 {{while differentiating this call of @dynamic_tensor_in_for}}
  %y, %pb = ad.forward @dynamic_tensor_in_for(%t) : (tensor<?xf64>) -> (tensor<?xf64>, !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>)
  %g = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>
  return %g : tensor<?xf64>
}
