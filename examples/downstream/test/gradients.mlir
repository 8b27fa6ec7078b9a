// Gradients through ds ops, executed: each line prints the gradient from
// ad.grad, the analytical derivative (written out with upstream ops, not
// with ds ops or their rules) and a central finite difference of the
// function, then "ok" when the gradient is within 1e-10 of the analytical
// value and 1e-6 of the finite difference (relative, floor 0.01). The
// expected numbers were computed independently (Python, math module).
// RUN: ds-opt %s --ad-differentiate --convert-ds-to-arith --ad-lower-to-llvm \
// RUN:   | %run | FileCheck %s

// The external-model rule alone.
func.func @softplus(%x: f64) -> f64 {
  %y = ds.softplus %x : f64
  return %y : f64
}

// exp(x) / (1 + exp(x)).
func.func @softplus_derivative(%x: f64) -> f64 {
  %one = arith.constant 1.0 : f64
  %e = math.exp %x : f64
  %d = arith.addf %e, %one : f64
  %r = arith.divf %e, %d : f64
  return %r : f64
}

// Both ds ops (softplus: external model; cube: implemented in ODS) among
// upstream ops, differentiated with respect to both arguments:
// softplus(w x) sin(x) + cube(x - w).
func.func @mixed(%x: f64, %w: f64) -> f64 {
  %u = arith.mulf %w, %x : f64
  %s = ds.softplus %u : f64
  %sin = math.sin %x : f64
  %p = arith.mulf %s, %sin : f64
  %d = arith.subf %x, %w : f64
  %c = ds.cube %d : f64
  %y = arith.addf %p, %c : f64
  return %y : f64
}

// d/dx = sigmoid(w x) w sin(x) + softplus(w x) cos(x) + 3 (x - w)^2,
// d/dw = sigmoid(w x) x sin(x) - 3 (x - w)^2, with softplus(u) written as
// log1p(exp(u)).
func.func @mixed_derivatives(%x: f64, %w: f64) -> (f64, f64) {
  %three = arith.constant 3.0 : f64
  %u = arith.mulf %w, %x : f64
  %sigma = func.call @softplus_derivative(%u) : (f64) -> f64
  %e = math.exp %u : f64
  %sp = math.log1p %e : f64
  %sin = math.sin %x : f64
  %cos = math.cos %x : f64
  %d = arith.subf %x, %w : f64
  %d2 = arith.mulf %d, %d : f64
  %cubic = arith.mulf %three, %d2 : f64
  %a0 = arith.mulf %sigma, %w : f64
  %a1 = arith.mulf %a0, %sin : f64
  %a2 = arith.mulf %sp, %cos : f64
  %a3 = arith.addf %a1, %a2 : f64
  %dx = arith.addf %a3, %cubic : f64
  %b0 = arith.mulf %sigma, %x : f64
  %b1 = arith.mulf %b0, %sin : f64
  %dw = arith.subf %b1, %cubic : f64
  return %dx, %dw : f64, f64
}

// Elementwise on a tensor: sum_i softplus(v_i) v_i, whose gradient is
// sigmoid(v_i) v_i + softplus(v_i).
func.func @weighted_sum(%v: tensor<3xf64>) -> f64 {
  %s = ds.softplus %v : tensor<3xf64>
  %p = arith.mulf %s, %v : tensor<3xf64>
  %zero = arith.constant 0.0 : f64
  %init = tensor.from_elements %zero : tensor<f64>
  %sum = linalg.reduce ins(%p : tensor<3xf64>) outs(%init : tensor<f64>)
      dimensions = [0]
    (%a: f64, %acc: f64) {
      %n = arith.addf %acc, %a : f64
      linalg.yield %n : f64
    }
  %r = tensor.extract %sum[] : tensor<f64>
  return %r : f64
}

// x +- h with h = 1e-5 max(|x|, 1).
func.func @step(%x: f64) -> (f64, f64) {
  %one = arith.constant 1.0 : f64
  %eps = arith.constant 1.0e-5 : f64
  %ax = math.absf %x : f64
  %s = arith.maximumf %ax, %one : f64
  %h = arith.mulf %s, %eps : f64
  %p = arith.addf %x, %h : f64
  %m = arith.subf %x, %h : f64
  return %p, %m : f64, f64
}

// (fp - fm) / (xp - xm).
func.func @difference(%fp: f64, %fm: f64, %xp: f64, %xm: f64) -> f64 {
  %df = arith.subf %fp, %fm : f64
  %dx = arith.subf %xp, %xm : f64
  %r = arith.divf %df, %dx : f64
  return %r : f64
}

// Whether |a - b| <= tol max(|b|, 0.01).
func.func @close(%a: f64, %b: f64, %tol: f64) -> i1 {
  %floor = arith.constant 1.0e-2 : f64
  %d = arith.subf %a, %b : f64
  %ad = math.absf %d : f64
  %ab = math.absf %b : f64
  %scale = arith.maximumf %ab, %floor : f64
  %bound = arith.mulf %tol, %scale : f64
  %ok = arith.cmpf ole, %ad, %bound : f64
  return %ok : i1
}

// Prints "ad <g> analytic <a> fd <fd> ok" (FAIL instead of ok when the
// gradient is off).
func.func @report(%g: f64, %a: f64, %fd: f64) {
  %exact = arith.constant 1.0e-10 : f64
  %approx = arith.constant 1.0e-6 : f64
  vector.print str "ad "
  vector.print %g : f64 punctuation <no_punctuation>
  vector.print str " analytic "
  vector.print %a : f64 punctuation <no_punctuation>
  vector.print str " fd "
  vector.print %fd : f64 punctuation <no_punctuation>
  %c0 = func.call @close(%g, %a, %exact) : (f64, f64, f64) -> i1
  %c1 = func.call @close(%g, %fd, %approx) : (f64, f64, f64) -> i1
  %ok = arith.andi %c0, %c1 : i1
  scf.if %ok {
    vector.print str " ok\n"
  } else {
    vector.print str " FAIL\n"
  }
  return
}

func.func @check_softplus(%x: f64) {
  %g = ad.grad @softplus(%x) : (f64) -> f64
  %a = func.call @softplus_derivative(%x) : (f64) -> f64
  %xp, %xm = func.call @step(%x) : (f64) -> (f64, f64)
  %fp = func.call @softplus(%xp) : (f64) -> f64
  %fm = func.call @softplus(%xm) : (f64) -> f64
  %fd = func.call @difference(%fp, %fm, %xp, %xm) : (f64, f64, f64, f64) -> f64
  vector.print str "softplus "
  vector.print %x : f64 punctuation <no_punctuation>
  vector.print str ": "
  func.call @report(%g, %a, %fd) : (f64, f64, f64) -> ()
  return
}

func.func @check_mixed(%x: f64, %w: f64) {
  %v, %gx, %gw = ad.value_and_grad @mixed(%x, %w) : (f64, f64) -> (f64, f64, f64)
  %ax, %aw = func.call @mixed_derivatives(%x, %w) : (f64, f64) -> (f64, f64)
  %xp, %xm = func.call @step(%x) : (f64) -> (f64, f64)
  %fxp = func.call @mixed(%xp, %w) : (f64, f64) -> f64
  %fxm = func.call @mixed(%xm, %w) : (f64, f64) -> f64
  %fdx = func.call @difference(%fxp, %fxm, %xp, %xm) : (f64, f64, f64, f64) -> f64
  %wp, %wm = func.call @step(%w) : (f64) -> (f64, f64)
  %fwp = func.call @mixed(%x, %wp) : (f64, f64) -> f64
  %fwm = func.call @mixed(%x, %wm) : (f64, f64) -> f64
  %fdw = func.call @difference(%fwp, %fwm, %wp, %wm) : (f64, f64, f64, f64) -> f64
  vector.print str "mixed value "
  vector.print %v : f64
  vector.print str "mixed d/dx: "
  func.call @report(%gx, %ax, %fdx) : (f64, f64, f64) -> ()
  vector.print str "mixed d/dw: "
  func.call @report(%gw, %aw, %fdw) : (f64, f64, f64) -> ()
  return
}

func.func @check_weighted_sum(%v: tensor<3xf64>) {
  %g = ad.grad @weighted_sum(%v) : (tensor<3xf64>) -> tensor<3xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c3 step %c1 {
    %vi = tensor.extract %v[%i] : tensor<3xf64>
    %gi = tensor.extract %g[%i] : tensor<3xf64>
    %sigma = func.call @softplus_derivative(%vi) : (f64) -> f64
    %e = math.exp %vi : f64
    %sp = math.log1p %e : f64
    %t = arith.mulf %sigma, %vi : f64
    %a = arith.addf %t, %sp : f64
    %xp, %xm = func.call @step(%vi) : (f64) -> (f64, f64)
    %vp = tensor.insert %xp into %v[%i] : tensor<3xf64>
    %vm = tensor.insert %xm into %v[%i] : tensor<3xf64>
    %fp = func.call @weighted_sum(%vp) : (tensor<3xf64>) -> f64
    %fm = func.call @weighted_sum(%vm) : (tensor<3xf64>) -> f64
    %fd = func.call @difference(%fp, %fm, %xp, %xm) : (f64, f64, f64, f64) -> f64
    vector.print str "weighted_sum element "
    vector.print %i : index punctuation <no_punctuation>
    vector.print str ": "
    func.call @report(%gi, %a, %fd) : (f64, f64, f64) -> ()
  }
  return
}

func.func @main() {
  // exp(x) underflows at -800: the rule's 1 / (1 + exp(800)) is 0, not NaN.
  // CHECK: softplus -800: ad 0 analytic 0 fd 0 ok
  %x0 = arith.constant -800.0 : f64
  func.call @check_softplus(%x0) : (f64) -> ()
  // CHECK: softplus -3: ad 0.0474259 analytic 0.0474259 fd 0.0474259 ok
  %x1 = arith.constant -3.0 : f64
  func.call @check_softplus(%x1) : (f64) -> ()
  // CHECK: softplus 0: ad 0.5 analytic 0.5 fd 0.5 ok
  %x2 = arith.constant 0.0 : f64
  func.call @check_softplus(%x2) : (f64) -> ()
  // CHECK: softplus 0.5: ad 0.622459 analytic 0.622459 fd 0.622459 ok
  %x3 = arith.constant 0.5 : f64
  func.call @check_softplus(%x3) : (f64) -> ()
  // CHECK: softplus 40: ad 1 analytic 1 fd 1 ok
  %x4 = arith.constant 40.0 : f64
  func.call @check_softplus(%x4) : (f64) -> ()

  // CHECK: mixed value 0.357732
  // CHECK: mixed d/dx: ad 3.66841 analytic 3.66841 fd 3.66841 ok
  // CHECK: mixed d/dw: ad -1.58595 analytic -1.58595 fd -1.58595 ok
  %m0 = arith.constant 0.7 : f64
  %w0 = arith.constant 1.5 : f64
  func.call @check_mixed(%m0, %w0) : (f64, f64) -> ()
  // CHECK: mixed value -4.54494
  // CHECK: mixed d/dx: ad 7.71203 analytic 7.71203 fd 7.71203 ok
  // CHECK: mixed d/dw: ad -7.25247 analytic -7.25247 fd -7.25247 ok
  %m1 = arith.constant -1.2 : f64
  %w1 = arith.constant 0.4 : f64
  func.call @check_mixed(%m1, %w1) : (f64, f64) -> ()

  // CHECK: weighted_sum element 0: ad -0.072225 analytic -0.072225 fd -0.072225 ok
  // CHECK: weighted_sum element 1: ad 0.966484 analytic 0.966484 fd 0.966484 ok
  // CHECK: weighted_sum element 2: ad 3.88852 analytic 3.88852 fd 3.88852 ok
  %v = arith.constant dense<[-1.5, 0.25, 2.0]> : tensor<3xf64>
  func.call @check_weighted_sum(%v) : (tensor<3xf64>) -> ()
  return
}
// CHECK-NOT: FAIL
