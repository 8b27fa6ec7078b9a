// RUN: ad-opt %s --split-input-file --ad-generate-derivatives --verify-diagnostics

// Run alone, derivative generation wants structured control flow; the
// ad-differentiate pipeline structures it first.
// expected-error @+1 {{cannot differentiate 'branchy': it has several blocks; structure its control flow first with lift-cf-to-scf (ad-differentiate does)}}
func.func @branchy(%x: f64, %c: i1) -> f64 {
  cf.cond_br %c, ^a, ^b
^a:
  return %x : f64
^b:
  %y = arith.negf %x : f64
  return %y : f64
}

func.func @caller(%x: f64, %c: i1) -> f64 {
  // expected-note @+1 {{while differentiating this call of @branchy}}
  %g = ad.grad @branchy(%x, %c) : (f64, i1) -> f64
  return %g : f64
}

// -----

func.func @nested_while(%x: f64) -> f64 {
  %ten = arith.constant 10.0 : f64
  %two = arith.constant 2.0 : f64
  // expected-error @+1 {{cannot differentiate nested scf.while loops yet}}
  %r = scf.while (%s = %x) : (f64) -> f64 {
    %go = arith.cmpf olt, %s, %ten : f64
    scf.condition(%go) %s : f64
  } do {
  ^bb0(%s: f64):
    %t = scf.while (%u = %s) : (f64) -> f64 {
      %go2 = arith.cmpf olt, %u, %two : f64
      scf.condition(%go2) %u : f64
    } do {
    ^bb0(%u: f64):
      %m = arith.mulf %u, %x : f64
      scf.yield %m : f64
    }
    %n = arith.addf %t, %x : f64
    scf.yield %n : f64
  }
  return %r : f64
}

func.func @caller(%x: f64) -> f64 {
  %g = ad.grad @nested_while(%x) : (f64) -> f64
  return %g : f64
}
