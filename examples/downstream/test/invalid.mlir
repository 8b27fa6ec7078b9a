// The verifier rejects ds ops on non-float types and mismatched types (the
// generic form, since the custom form already fixes the types).
// RUN: ds-opt %s --split-input-file --verify-diagnostics

func.func @integer(%x: i32) -> i32 {
  // expected-error @+1 {{'ds.softplus' op operand #0 must be floating-point or ranked tensor of floating-point values, but got 'i32'}}
  %y = "ds.softplus"(%x) : (i32) -> i32
  return %y : i32
}

// -----

func.func @mismatch(%x: f32, %step: f64) -> f32 {
  // expected-error @+1 {{'ds.quantize' op requires the same type for all operands and results}}
  %y = "ds.quantize"(%x, %step) : (f32, f64) -> f32
  return %y : f32
}
