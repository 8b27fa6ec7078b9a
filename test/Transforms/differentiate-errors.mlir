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

// The bits cross a call as an integer argument: the callee's activity starts
// at that argument (as if the call were inlined), in both modes; the
// derivative was silently zero.
func.func private @from_bits(%i: i64) -> f64 {
  // expected-error @+2 {{no derivative rule for 'arith.bitcast'}}
  // expected-error @+1 {{no tangent rule for 'arith.bitcast'}}
  %x = arith.bitcast %i : i64 to f64
  %y = arith.mulf %x, %x : f64
  return %y : f64
}

func.func @bits_through_call(%x: f64) -> f64 {
  %i = arith.bitcast %x : f64 to i64
  // expected-note @+1 {{while differentiating this call of @from_bits}}
  %y = func.call @from_bits(%i) : (i64) -> f64
  return %y : f64
}

func.func @caller(%x: f64, %t: f64) -> (f64, f64) {
  // expected-note @+1 {{while differentiating this call of @bits_through_call}}
  %g = ad.grad @bits_through_call(%x) : (f64) -> f64
  // expected-note @+1 {{while differentiating this call of @bits_through_call}}
  %y, %ty = ad.jvp @bits_through_call(%x) tangents(%t) : (f64) -> (f64, f64)
  return %g, %ty : f64, f64
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

// Reverse over reverse through a loop: the inner gradient keeps its tape in
// a buffer, which reverse mode does not follow (forward mode does, with
// shadow buffers: differentiate-jvp.mlir). The error names the op whose
// value the derivative keeps per iteration (cos(a), the derivative of
// sin(a)) and the request.
func.func @inner(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> f64 {
    // expected-error @+1 {{cannot take the gradient of a derivative that keeps its tape in memory (the tape of a loop, a while loop, a recursion or deeply nested branches;}}
    %s = math.sin %a : f64
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @takes_gradient(%x: f64, %n: index) -> f64 {
  // expected-note @+1 {{reached through this call}}
  %g = ad.grad @inner(%x, %n) : (f64, index) -> f64
  %z = arith.mulf %g, %x : f64
  return %z : f64
}

func.func @caller(%x: f64, %n: index) -> f64 {
  // expected-note @+1 {{while differentiating this call of @takes_gradient}}
  %g = ad.grad @takes_gradient(%x, %n) : (f64, index) -> f64
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
    // expected-error @+1 {{cannot keep a value of type 'tensor<?xf64>' for the adjoint of this op yet (a row of a while loop's or a recursion's tape has a fixed width and holds scalars of at most 64 bits and statically shaped tensors of such floats or of integers of at most 32 bits)}}
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

// A store inside a region op without results (here an scf.if) is found.
func.func @store_in_if(%x: f64, %m: memref<1xf64>, %c: i1) -> f64 {
  %c0 = arith.constant 0 : index
  scf.if %c {
    %y = arith.mulf %x, %x : f64
    // expected-error @+1 {{cannot differentiate through memory: 'memref.store' writes a value that depends on a differentiated argument}}
    memref.store %y, %m[%c0] : memref<1xf64>
  }
  %l = memref.load %m[%c0] : memref<1xf64>
  return %l : f64
}

func.func @caller(%x: f64, %m: memref<1xf64>, %c: i1) -> f64 {
  // expected-note @+1 {{while differentiating this call of @store_in_if}}
  %g = ad.grad @store_in_if(%x, %m, %c) : (f64, memref<1xf64>, i1) -> f64
  return %g : f64
}

// -----

// ... and inside memref.alloca_scope.
func.func @store_in_scope(%x: f64, %m: memref<1xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  memref.alloca_scope {
    // expected-error @+1 {{cannot differentiate through memory: 'memref.store'}}
    memref.store %x, %m[%c0] : memref<1xf64>
  }
  %l = memref.load %m[%c0] : memref<1xf64>
  return %l : f64
}

func.func @caller(%x: f64, %m: memref<1xf64>) -> f64 {
  // expected-note @+1 {{while differentiating this call of @store_in_scope}}
  %g = ad.grad @store_in_scope(%x, %m) : (f64, memref<1xf64>) -> f64
  return %g : f64
}

// -----

// ... and in a callee whose results are unused, with a note at the call.
func.func @stores(%x: f64, %m: memref<1xf64>) {
  %c0 = arith.constant 0 : index
  %y = arith.mulf %x, %x : f64
  // expected-error @+1 {{cannot differentiate through memory: 'memref.store'}}
  memref.store %y, %m[%c0] : memref<1xf64>
  return
}

func.func @calls_stores(%x: f64, %m: memref<1xf64>) -> f64 {
  // expected-note @+1 {{reached through this call}}
  func.call @stores(%x, %m) : (f64, memref<1xf64>) -> ()
  %c0 = arith.constant 0 : index
  %l = memref.load %m[%c0] : memref<1xf64>
  return %l : f64
}

func.func @caller(%x: f64, %m: memref<1xf64>) -> f64 {
  // expected-note @+1 {{while differentiating this call of @calls_stores}}
  %g = ad.grad @calls_stores(%x, %m) : (f64, memref<1xf64>) -> f64
  return %g : f64
}

// -----

// A function without a body may do anything with what it is given.
func.func private @opaque(f64)

func.func @calls_opaque(%x: f64) -> f64 {
  // expected-error @+1 {{this call passes a value that depends on a differentiated argument to a function without a body here}}
  func.call @opaque(%x) : (f64) -> ()
  return %x : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @calls_opaque}}
  %g = ad.grad @calls_opaque(%x) : (f64) -> f64
  return %g : f64
}

// -----

// scf.forall passes values out through tensor.parallel_insert_slice, not
// through its terminator's operands: it is active, and has no rule.
func.func @forall(%x: tensor<4xf64>) -> f64 {
  %e = tensor.empty() : tensor<4xf64>
  // expected-error @+1 {{no derivative rule for 'scf.forall', whose result depends on a differentiated argument}}
  %r = scf.forall (%i) in (4) shared_outs(%o = %e) -> tensor<4xf64> {
    %v = tensor.extract %x[%i] : tensor<4xf64>
    %w = arith.mulf %v, %v : f64
    %s = tensor.from_elements %w : tensor<1xf64>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%i] [1] [1] : tensor<1xf64> into tensor<4xf64>
    }
  }
  %c0 = arith.constant 0 : index
  %a = tensor.extract %r[%c0] : tensor<4xf64>
  return %a : f64
}

func.func @caller(%x: tensor<4xf64>) -> f64 {
  // expected-note @+1 {{while differentiating this call of @forall}}
  %g = ad.grad @forall(%x) : (tensor<4xf64>) -> tensor<4xf64>
  %c0 = arith.constant 0 : index
  %e = tensor.extract %g[%c0] : tensor<4xf64>
  return %e : f64
}

// -----

// A value that cannot carry a derivative (an unranked tensor, not folded
// away) between differentiated values is reported, not dropped.
func.func @through_unranked(%x: tensor<3xf64>, %c: i1) -> f64 {
  %u = scf.if %c -> tensor<*xf64> {
    %a = tensor.cast %x : tensor<3xf64> to tensor<*xf64>
    scf.yield %a : tensor<*xf64>
  } else {
    %b = tensor.cast %x : tensor<3xf64> to tensor<*xf64>
    scf.yield %b : tensor<*xf64>
  }
  // expected-error @+1 {{cannot differentiate 'tensor.cast': its operand of type 'tensor<*xf64>' depends on a differentiated argument, but values of that type cannot carry a derivative}}
  %r = tensor.cast %u : tensor<*xf64> to tensor<3xf64>
  %c0 = arith.constant 0 : index
  %e = tensor.extract %r[%c0] : tensor<3xf64>
  return %e : f64
}

func.func @caller(%x: tensor<3xf64>, %c: i1) -> f64 {
  // expected-note @+1 {{while differentiating this call of @through_unranked}}
  %g = ad.grad @through_unranked(%x, %c) : (tensor<3xf64>, i1) -> tensor<3xf64>
  %c0 = arith.constant 0 : index
  %e = tensor.extract %g[%c0] : tensor<3xf64>
  return %e : f64
}

// -----

// The growable tape of a while loop holds scalars of at most 64 bits.
func.func @wide_integer(%x: f64) -> f64 {
  %c0 = arith.constant 0 : i128
  %c1 = arith.constant 1 : i128
  %c3 = arith.constant 3 : i128
  %r:2 = scf.while (%i = %c0, %s = %x) : (i128, f64) -> (i128, f64) {
    %c = arith.cmpi slt, %i, %c3 : i128
    scf.condition(%c) %i, %s : i128, f64
  } do {
  ^bb0(%i: i128, %s: f64):
    %n = arith.addi %i, %c1 : i128
    // expected-error @+1 {{cannot keep a value of type 'i128' for the adjoint of this op yet}}
    %m = math.fpowi %s, %n : f64, i128
    scf.yield %n, %m : i128, f64
  }
  return %r#1 : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @wide_integer}}
  %g = ad.grad @wide_integer(%x) : (f64) -> f64
  return %g : f64
}

// -----

// Buffers, vectors and integers holding a float's bits carry its derivative
// through memory as well.
func.func @copy_buffer(%x: f64) -> f64 {
  %t = tensor.from_elements %x : tensor<1xf64>
  %m = bufferization.to_buffer %t : tensor<1xf64> to memref<1xf64>
  %d = memref.alloca() : memref<1xf64>
  // expected-error @+1 {{cannot differentiate through memory: 'memref.copy' writes a value that depends on a differentiated argument}}
  memref.copy %m, %d : memref<1xf64> to memref<1xf64>
  %c0 = arith.constant 0 : index
  %l = memref.load %d[%c0] : memref<1xf64>
  return %l : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @copy_buffer}}
  %g = ad.grad @copy_buffer(%x) : (f64) -> f64
  return %g : f64
}

// -----

func.func @store_bits(%x: f64) -> f64 {
  %i = arith.bitcast %x : f64 to i64
  %m = memref.alloca() : memref<1xi64>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{cannot differentiate through memory: 'memref.store' writes a value that depends on a differentiated argument}}
  memref.store %i, %m[%c0] : memref<1xi64>
  %l = memref.load %m[%c0] : memref<1xi64>
  %y = arith.bitcast %l : i64 to f64
  %r = arith.mulf %y, %x : f64
  return %r : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @store_bits}}
  %g = ad.grad @store_bits(%x) : (f64) -> f64
  return %g : f64
}

// -----

// A request inherited by a generated function that fails is reported once
// (the rewriting of inherited requests stops).
func.func @stores_arg(%x: f64) -> f64 {
  %m = memref.alloca() : memref<f64>
  // expected-error @+1 {{cannot differentiate through memory: 'memref.store'}}
  memref.store %x, %m[] : memref<f64>
  %l = memref.load %m[] : memref<f64>
  return %l : f64
}

func.func @inherits(%x: f64, %y: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @stores_arg}}
  %g = ad.grad @stores_arg(%y) : (f64) -> f64
  %r = arith.mulf %x, %g : f64
  return %r : f64
}

func.func @caller(%x: f64, %y: f64) -> f64 {
  %g = ad.grad @inherits(%x, %y) {wrt = array<i64: 0>} : (f64, f64) -> f64
  return %g : f64
}

// -----

// Requests inside a nested module are not supported yet.
func.func @outside() {
  return
}

module @inner {
  func.func @f(%x: f64) -> f64 {
    return %x : f64
  }
  func.func @caller(%x: f64) -> f64 {
    // expected-error @+1 {{cannot differentiate @f yet: requests are supported in the top-level module only}}
    %g = ad.grad @f(%x) : (f64) -> f64
    return %g : f64
  }
}

// -----

// A loop calling a recursive function registers the loop's tape with the
// callee's recursion; when the function then fails, the discarded tape is
// forgotten (found by review: the generator set its width after it was
// freed; the sanitizer build catches a regression).
func.func @rec_callee(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = math.sin %x : f64
    %p = func.call @rec_callee(%s, %m) : (f64, index) -> f64
    scf.yield %p : f64
  }
  return %r : f64
}

func.func @loop_then_failure(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %l = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %x) -> (f64) {
    %v = func.call @rec_callee(%a, %n) : (f64, index) -> f64
    scf.yield %v : f64
  }
  // expected-error @+1 {{no derivative rule for 'math.sincos'}}
  %s, %c = math.sincos %l : f64
  %y = arith.addf %s, %c : f64
  return %y : f64
}

func.func @caller(%x: f64, %n: index) -> f64 {
  // expected-note @+1 {{while differentiating this call of @loop_then_failure}}
  %g = ad.grad @loop_then_failure(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// A function that takes its own derivative: one error, however many
// requests meet it.
func.func @self(%x: f64, %n: i64) -> f64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %z = arith.cmpi sle, %n, %c0 : i64
  %r = scf.if %z -> f64 {
    %s = math.sin %x : f64
    scf.yield %s : f64
  } else {
    %n1 = arith.subi %n, %c1 : i64
    // expected-error @+2 {{cannot differentiate a function that takes the derivative of itself (or of a function of its recursion)}}
    // expected-note @+1 {{while differentiating this call of @self}}
    %t = ad.grad @self(%x, %n1) : (f64, i64) -> f64
    scf.yield %t : f64
  }
  return %r : f64
}

func.func @jvp_self(%x: f64, %t: f64) -> (f64, f64) {
  %n = arith.constant 2 : i64
  %y, %ty = ad.jvp @self(%x, %n) tangents(%t) : (f64, i64) -> (f64, f64)
  return %y, %ty : f64, f64
}

// -----

// Forward mode: a returned unranked tensor that depends on a tangent would
// silently get none.
func.func @unranked(%x: tensor<3xf64>) -> tensor<*xf64> {
  %c = tensor.cast %x : tensor<3xf64> to tensor<*xf64>
  // expected-error @+1 {{cannot differentiate 'func.return': its operand of type 'tensor<*xf64>' depends on a differentiated argument, but values of that type cannot carry a derivative}}
  return %c : tensor<*xf64>
}

func.func @jvp_unranked(%x: tensor<3xf64>, %t: tensor<3xf64>) -> tensor<*xf64> {
  // expected-note @+1 {{while differentiating this call of @unranked}}
  %y = ad.jvp @unranked(%x) tangents(%t) : (tensor<3xf64>) -> tensor<*xf64>
  return %y : tensor<*xf64>
}

// -----

// Forward mode follows a float's bits into a buffer of integers: reading
// them back into a float meets the bitcast, which has no rule.
func.func @store_bits_forward(%x: f64) -> f64 {
  %i = arith.bitcast %x : f64 to i64
  %m = memref.alloca() : memref<1xi64>
  %c0 = arith.constant 0 : index
  memref.store %i, %m[%c0] : memref<1xi64>
  %l = memref.load %m[%c0] : memref<1xi64>
  // expected-error @+1 {{no tangent rule for 'arith.bitcast', whose result depends on a differentiated argument}}
  %y = arith.bitcast %l : i64 to f64
  %r = arith.mulf %y, %x : f64
  return %r : f64
}

func.func @caller(%x: f64, %t: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @store_bits_forward}}
  %y, %ty = ad.jvp @store_bits_forward(%x) tangents(%t) : (f64) -> (f64, f64)
  return %ty : f64
}

// -----

// A buffer argument of the function a jvp is taken of gets no shadow: a
// write of a differentiable value to it is an error, not a tangent lost.
// expected-error @+1 {{cannot differentiate 'writes_argument': it writes a value that depends on a differentiated argument to its buffer argument 1, whose tangent forward mode cannot return}}
func.func @writes_argument(%x: f64, %m: memref<f64>) -> f64 {
  %s = math.sin %x : f64
  memref.store %s, %m[] : memref<f64>
  %l = memref.load %m[] : memref<f64>
  return %l : f64
}

func.func @caller(%x: f64, %m: memref<f64>, %t: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @writes_argument}}
  %y, %ty = ad.jvp @writes_argument(%x, %m) tangents(%t) : (f64, memref<f64>) -> (f64, f64)
  return %ty : f64
}

// -----

// An op on a shadowed buffer without a tangent rule is reported.
func.func @no_rule_on_buffer(%x: f64) -> f64 {
  %m = memref.alloca() : memref<4xf64>
  %c0 = arith.constant 0 : index
  %v = vector.broadcast %x : f64 to vector<4xf64>
  // expected-error @+1 {{no tangent rule for 'vector.store', which writes a buffer holding values that depend on a differentiated argument}}
  vector.store %v, %m[%c0] : memref<4xf64>, vector<4xf64>
  %l = memref.load %m[%c0] : memref<4xf64>
  return %l : f64
}

func.func @caller(%x: f64, %t: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @no_rule_on_buffer}}
  %y, %ty = ad.jvp @no_rule_on_buffer(%x) tangents(%t) : (f64) -> (f64, f64)
  return %ty : f64
}

// -----

// A global buffer a caller writes a differentiable value to: other calls
// return the same memory, which no shadow per call would share.
memref.global "private" @g : memref<2xf64> = dense<0.0>

func.func private @global_buffer() -> memref<2xf64> {
  // expected-error @+1 {{no tangent rule for 'memref.get_global', whose result depends on a differentiated argument}}
  %m = memref.get_global @g : memref<2xf64>
  return %m : memref<2xf64>
}

func.func @writes_global(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @global_buffer}}
  %m = func.call @global_buffer() : () -> memref<2xf64>
  %c0 = arith.constant 0 : index
  memref.store %x, %m[%c0] : memref<2xf64>
  %l = memref.load %m[%c0] : memref<2xf64>
  return %l : f64
}

func.func @caller(%x: f64, %t: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @writes_global}}
  %y, %ty = ad.jvp @writes_global(%x) tangents(%t) : (f64) -> (f64, f64)
  return %ty : f64
}

// -----

// A user-written rule replaces the derivative of a function's results, not
// of what it writes to memory its caller reads.
func.func private @writes_buffer(%x: f64, %buf: memref<1xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %y = arith.mulf %x, %x : f64
  // expected-error @+1 {{cannot differentiate through memory: 'memref.store' writes a value that depends on a differentiated argument}}
  memref.store %y, %buf[%c0] : memref<1xf64>
  return %x : f64
}
func.func private @writes_buffer_fwd(%x: f64, %buf: memref<1xf64>) -> f64 {
  %y = func.call @writes_buffer(%x, %buf) : (f64, memref<1xf64>) -> f64
  return %y : f64
}
func.func private @writes_buffer_pb(%dy: f64) -> f64 {
  return %dy : f64
}
ad.custom_vjp @writes_buffer forward @writes_buffer_fwd pullback @writes_buffer_pb

func.func @reads_back(%x: f64) -> f64 {
  %buf = memref.alloc() : memref<1xf64>
  // expected-note @+1 {{reached through this call}}
  %y = func.call @writes_buffer(%x, %buf) : (f64, memref<1xf64>) -> f64
  %c0 = arith.constant 0 : index
  %z = memref.load %buf[%c0] : memref<1xf64>
  %r = arith.addf %y, %z : f64
  return %r : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @reads_back}}
  %g = ad.grad @reads_back(%x) : (f64) -> f64
  return %g : f64
}

// -----

// A float's bits reaching a function with a rule through an integer: the
// rule takes integers as constants.
func.func private @from_bits_ruled(%i: i64) -> f64 {
  // expected-error @+1 {{a float's bits reach 'from_bits_ruled' through an integer argument here, but its user-written rule takes integers as constants}}
  %x = arith.bitcast %i : i64 to f64
  %y = arith.mulf %x, %x : f64
  return %y : f64
}
func.func private @from_bits_ruled_tangent(%i: i64) -> (f64, f64) {
  %y = func.call @from_bits_ruled(%i) : (i64) -> f64
  %z = arith.constant 0.0 : f64
  return %y, %z : f64, f64
}
ad.custom_jvp @from_bits_ruled tangent @from_bits_ruled_tangent

func.func @bits_to_ruled(%x: f64) -> f64 {
  %i = arith.bitcast %x : f64 to i64
  // expected-note @+1 {{while differentiating this call of @from_bits_ruled}}
  %y = func.call @from_bits_ruled(%i) : (i64) -> f64
  return %y : f64
}

func.func @caller(%x: f64, %t: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @bits_to_ruled}}
  %y, %ty = ad.jvp @bits_to_ruled(%x) tangents(%t) : (f64) -> (f64, f64)
  return %ty : f64
}

// -----

// A user-written rule's residual of dynamic shape, kept per iteration of a
// loop: the error names the rule.
func.func private @f(%x: tensor<?xf64>) -> tensor<?xf64>
func.func private @f_fwd(%x: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>)
func.func private @f_pb(%r: tensor<?xf64>, %dy: tensor<?xf64>) -> tensor<?xf64>
// expected-note @+1 {{the value is a residual of @f_fwd, the forward function of this rule}}
ad.custom_vjp @f forward @f_fwd pullback @f_pb

func.func @rule_in_loop(%t: tensor<?xf64>, %n: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%v = %t) -> (tensor<?xf64>) {
    // expected-error @+2 {{cannot keep a value of type 'tensor<?xf64>' for the adjoint of this op yet (a buffer per value of a loop nest holds integer, index and float scalars and tensors whose sizes are the same in every iteration and known before the nest)}}
    // expected-note @+1 {{the value is defined here; its size could not be shown to be the same in every iteration of the loop nest}}
    %w = func.call @f(%v) : (tensor<?xf64>) -> tensor<?xf64>
    scf.yield %w : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}

func.func @caller(%t: tensor<?xf64>, %n: index, %dy: tensor<?xf64>) -> tensor<?xf64> {
  // expected-note @+1 {{while differentiating this call of @rule_in_loop}}
  %y, %pb = ad.forward @rule_in_loop(%t, %n) : (tensor<?xf64>, index) -> (tensor<?xf64>, !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>)
  %g = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>
  return %g : tensor<?xf64>
}

// -----

// A tensor that grows in every iteration cannot be kept in a buffer sized
// before the loop (the sine's adjoint reads the carried tensor; the
// concat's needs only the sizes of its inputs).
// expected-note @+1 {{the value is defined here; its size could not be shown to be the same in every iteration of the loop nest}}
func.func @growing(%x: tensor<?xf64>, %n: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%y = %x) -> tensor<?xf64> {
    %len = tensor.dim %y, %c0 : tensor<?xf64>
    %e = tensor.empty(%len) : tensor<?xf64>
    // expected-error @+1 {{cannot keep a value of type 'tensor<?xf64>' for the adjoint of this op yet (a buffer per value of a loop nest holds integer, index and float scalars and tensors whose sizes are the same in every iteration and known before the nest)}}
    %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
        ins(%y : tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %o: f64):
      %t = math.sin %a : f64
      linalg.yield %t : f64
    } -> tensor<?xf64>
    %c = tensor.concat dim(0) %s, %x : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
    scf.yield %c : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}

func.func @caller(%x: tensor<?xf64>, %n: index, %dy: tensor<?xf64>) -> tensor<?xf64> {
  // expected-note @+1 {{while differentiating this call of @growing}}
  %y, %pb = ad.forward @growing(%x, %n) : (tensor<?xf64>, index) -> (tensor<?xf64>, !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>)
  %g = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>
  return %g : tensor<?xf64>
}

// -----

// Forward mode runs an atomic update of integers as is (a growable tape's
// row count) but has no rule for one of floats that depend on an argument.
func.func @atomic_sum(%x: f64) -> f64 {
  %m = memref.alloc() : memref<f64>
  %z = arith.constant 0.0 : f64
  memref.store %z, %m[] : memref<f64>
  // expected-error @+1 {{no tangent rule for 'memref.atomic_rmw' of floats, whose buffer holds a value that depends on a differentiated argument}}
  %old = memref.atomic_rmw addf %x, %m[] : (f64, memref<f64>) -> f64
  %v = memref.load %m[] : memref<f64>
  memref.dealloc %m : memref<f64>
  return %v : f64
}

func.func @caller(%x: f64, %t: f64) -> (f64, f64) {
  // expected-note @+1 {{while differentiating this call of @atomic_sum}}
  %y, %ty = ad.jvp @atomic_sum(%x) tangents(%t) : (f64) -> (f64, f64)
  return %y, %ty : f64, f64
}

// -----

// The bits of a float rebuilt through comparisons (one bit at a time), loop
// trip counts or tensor sizes, then bitcast back to a float: the error as
// for any integer path, not a constant (activity's precise rules stop at
// booleans, bounds and sizes; what may hold a float's bits follows them).
func.func @bits_bool_f(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %z64 = arith.constant 0 : i64
  %one64 = arith.constant 1 : i64
  %b = arith.bitcast %x : f64 to i64
  %r = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %z64) -> i64 {
    %ki = arith.index_cast %k : index to i64
    %m = arith.shli %one64, %ki : i64
    %a = arith.andi %b, %m : i64
    %set = arith.cmpi ne, %a, %z64 : i64
    %v = arith.select %set, %m, %z64 : i64
    %n = arith.ori %acc, %v : i64
    scf.yield %n : i64
  }
  // expected-error @+2 {{no derivative rule for 'arith.bitcast'}}
  // expected-error @+1 {{no tangent rule for 'arith.bitcast'}}
  %y = arith.bitcast %r : i64 to f64
  %two = arith.constant 2.0 : f64
  %z = arith.mulf %y, %two : f64
  return %z : f64
}

func.func @bits_bool_g(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @bits_bool_f}}
  %g = ad.grad @bits_bool_f(%x) : (f64) -> f64
  return %g : f64
}
func.func @bits_bool_j(%x: f64, %t: f64) -> (f64, f64) {
  // expected-note @+1 {{while differentiating this call of @bits_bool_f}}
  %y, %ty = ad.jvp @bits_bool_f(%x) tangents(%t) : (f64) -> (f64, f64)
  return %y, %ty : f64, f64
}


// -----

func.func @bits_trip_f(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z64 = arith.constant 0 : i64
  %one64 = arith.constant 1 : i64
  %eight = arith.constant 8 : i64
  %ff = arith.constant 255 : i64
  %b = arith.bitcast %x : f64 to i64
  %r = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %z64) -> i64 {
    %ki = arith.index_cast %k : index to i64
    %sh = arith.muli %ki, %eight : i64
    %s = arith.shrui %b, %sh : i64
    %byte = arith.andi %s, %ff : i64
    %ub = arith.index_cast %byte : i64 to index
    %cnt = scf.for %j = %c0 to %ub step %c1 iter_args(%c = %z64) -> i64 {
      %c2 = arith.addi %c, %one64 : i64
      scf.yield %c2 : i64
    }
    %v = arith.shli %cnt, %sh : i64
    %n = arith.ori %acc, %v : i64
    scf.yield %n : i64
  }
  // expected-error @+2 {{no derivative rule for 'arith.bitcast'}}
  // expected-error @+1 {{no tangent rule for 'arith.bitcast'}}
  %y = arith.bitcast %r : i64 to f64
  %two = arith.constant 2.0 : f64
  %z = arith.mulf %y, %two : f64
  return %z : f64
}

func.func @bits_trip_g(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @bits_trip_f}}
  %g = ad.grad @bits_trip_f(%x) : (f64) -> f64
  return %g : f64
}
func.func @bits_trip_j(%x: f64, %t: f64) -> (f64, f64) {
  // expected-note @+1 {{while differentiating this call of @bits_trip_f}}
  %y, %ty = ad.jvp @bits_trip_f(%x) tangents(%t) : (f64) -> (f64, f64)
  return %y, %ty : f64, f64
}


// -----

func.func private @size(%t: tensor<?xf64>) -> index {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %t, %c0 : tensor<?xf64>
  return %d : index
}
func.func @bits_dim_f(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z64 = arith.constant 0 : i64
  %eight = arith.constant 8 : i64
  %ff = arith.constant 255 : i64
  %b = arith.bitcast %x : f64 to i64
  %r = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %z64) -> i64 {
    %ki = arith.index_cast %k : index to i64
    %sh = arith.muli %ki, %eight : i64
    %s = arith.shrui %b, %sh : i64
    %byte = arith.andi %s, %ff : i64
    %sz = arith.index_cast %byte : i64 to index
    %e = tensor.empty(%sz) : tensor<?xf64>
    %d = func.call @size(%e) : (tensor<?xf64>) -> index
    %cnt = arith.index_cast %d : index to i64
    %v = arith.shli %cnt, %sh : i64
    %n = arith.ori %acc, %v : i64
    scf.yield %n : i64
  }
  // expected-error @+2 {{no derivative rule for 'arith.bitcast'}}
  // expected-error @+1 {{no tangent rule for 'arith.bitcast'}}
  %y = arith.bitcast %r : i64 to f64
  %two = arith.constant 2.0 : f64
  %z = arith.mulf %y, %two : f64
  return %z : f64
}

func.func @bits_dim_g(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @bits_dim_f}}
  %g = ad.grad @bits_dim_f(%x) : (f64) -> f64
  return %g : f64
}
func.func @bits_dim_j(%x: f64, %t: f64) -> (f64, f64) {
  // expected-note @+1 {{while differentiating this call of @bits_dim_f}}
  %y, %ty = ad.jvp @bits_dim_f(%x) tangents(%t) : (f64) -> (f64, f64)
  return %y, %ty : f64, f64
}
