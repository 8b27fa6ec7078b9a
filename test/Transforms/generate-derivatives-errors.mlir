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

