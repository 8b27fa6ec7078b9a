// ds.quantize has no derivative rule: a differentiated value flowing
// through it is the project's usual error at the op, with a note at the
// request; quantizing values that do not depend on a differentiated
// argument is fine.
// RUN: ds-opt %s --split-input-file --ad-differentiate --verify-diagnostics

func.func @rounded(%x: f64) -> f64 {
  %step = arith.constant 0.25 : f64
  // expected-error @+1 {{no derivative rule for 'ds.quantize', whose result depends on a differentiated argument}}
  %q = ds.quantize %x, %step : f64
  %y = ds.softplus %q : f64
  return %y : f64
}

func.func @caller(%x: f64) -> f64 {
  // expected-note @+1 {{while differentiating this call of @rounded}}
  %g = ad.grad @rounded(%x) : (f64) -> f64
  return %g : f64
}

// -----

// Through a call and inside a loop: the error names the op in the callee,
// with a note per call on the way.
func.func @inner(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %step = arith.constant 0.5 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> (f64) {
    %c = ds.cube %s : f64
    // expected-error @+1 {{no derivative rule for 'ds.quantize'}}
    %q = ds.quantize %c, %step : f64
    scf.yield %q : f64
  }
  return %r : f64
}

func.func @outer(%x: f64, %n: index) -> f64 {
  // expected-note @+1 {{while differentiating this call of @inner}}
  %y = func.call @inner(%x, %n) : (f64, index) -> f64
  %s = ds.softplus %y : f64
  return %s : f64
}

func.func @caller(%x: f64, %n: index) -> f64 {
  // expected-note @+1 {{while differentiating this call of @outer}}
  %g = ad.grad @outer(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// The quantized step size does not depend on %x: no error.
func.func @inactive(%x: f64, %step: f64) -> f64 {
  %coarse = arith.constant 0.1 : f64
  %q = ds.quantize %step, %coarse : f64
  %m = arith.mulf %x, %q : f64
  %y = ds.softplus %m : f64
  return %y : f64
}

func.func @caller(%x: f64, %step: f64) -> f64 {
  %g = ad.grad @inactive(%x, %step) {wrt = array<i64: 0>} : (f64, f64) -> f64
  return %g : f64
}
