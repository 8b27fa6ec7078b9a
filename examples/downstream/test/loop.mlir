// A loop over ds ops, differentiated and executed through the pipeline
// ds-lower-to-llvm (ad-differentiate, convert-ds-to-arith, ad-lower-to-llvm):
// s_0 = x, s_{k+1} = softplus(w s_k + x) - 0.1 cube(s_k), n iterations (a
// run-time trip count, zero included). Each line prints the gradient from
// ad.grad, the analytical derivative (a hand-written tangent recurrence
// with upstream ops) and a central finite difference, then "ok" when the
// gradient is within 1e-10 of the analytical value and 1e-6 of the finite
// difference (relative, floor 0.01). The expected numbers were computed
// independently (Python, math module).
// RUN: ds-opt %s --ds-lower-to-llvm | %run | FileCheck %s

func.func @recurrence(%x: f64, %w: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tenth = arith.constant 0.1 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> (f64) {
    %ws = arith.mulf %w, %s : f64
    %z = arith.addf %ws, %x : f64
    %sp = ds.softplus %z : f64
    %c = ds.cube %s : f64
    %d = arith.mulf %tenth, %c : f64
    %next = arith.subf %sp, %d : f64
    scf.yield %next : f64
  }
  return %r : f64
}

// The same recurrence carrying the tangents t_x = ds/dx and t_w = ds/dw:
// with z = w s + x and sigma(z) = exp(z) / (1 + exp(z)),
// t_x' = sigma(z) (w t_x + 1) - 0.3 s^2 t_x and
// t_w' = sigma(z) (s + w t_w) - 0.3 s^2 t_w; softplus(z) is log1p(exp(z)).
func.func @recurrence_derivatives(%x: f64, %w: f64, %n: index) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %tenth = arith.constant 0.1 : f64
  %three_tenths = arith.constant 0.3 : f64
  %r:3 = scf.for %i = %c0 to %n step %c1
      iter_args(%s = %x, %tx = %one, %tw = %zero) -> (f64, f64, f64) {
    %ws = arith.mulf %w, %s : f64
    %z = arith.addf %ws, %x : f64
    %e = math.exp %z : f64
    %e1 = arith.addf %e, %one : f64
    %sigma = arith.divf %e, %e1 : f64
    %sp = math.log1p %e : f64
    %s2 = arith.mulf %s, %s : f64
    %k = arith.mulf %three_tenths, %s2 : f64
    %wtx = arith.mulf %w, %tx : f64
    %wtx1 = arith.addf %wtx, %one : f64
    %ax = arith.mulf %sigma, %wtx1 : f64
    %bx = arith.mulf %k, %tx : f64
    %tx2 = arith.subf %ax, %bx : f64
    %wtw = arith.mulf %w, %tw : f64
    %swtw = arith.addf %s, %wtw : f64
    %aw = arith.mulf %sigma, %swtw : f64
    %bw = arith.mulf %k, %tw : f64
    %tw2 = arith.subf %aw, %bw : f64
    %s3 = arith.mulf %s2, %s : f64
    %d = arith.mulf %tenth, %s3 : f64
    %s2n = arith.subf %sp, %d : f64
    scf.yield %s2n, %tx2, %tw2 : f64, f64, f64
  }
  return %r#1, %r#2 : f64, f64
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

func.func @check(%x: f64, %w: f64, %n: index) {
  %v, %gx, %gw = ad.value_and_grad @recurrence(%x, %w, %n)
      : (f64, f64, index) -> (f64, f64, f64)
  %ax, %aw = func.call @recurrence_derivatives(%x, %w, %n)
      : (f64, f64, index) -> (f64, f64)
  %xp, %xm = func.call @step(%x) : (f64) -> (f64, f64)
  %fxp = func.call @recurrence(%xp, %w, %n) : (f64, f64, index) -> f64
  %fxm = func.call @recurrence(%xm, %w, %n) : (f64, f64, index) -> f64
  %dfx = arith.subf %fxp, %fxm : f64
  %dx = arith.subf %xp, %xm : f64
  %fdx = arith.divf %dfx, %dx : f64
  %wp, %wm = func.call @step(%w) : (f64) -> (f64, f64)
  %fwp = func.call @recurrence(%x, %wp, %n) : (f64, f64, index) -> f64
  %fwm = func.call @recurrence(%x, %wm, %n) : (f64, f64, index) -> f64
  %dfw = arith.subf %fwp, %fwm : f64
  %dw = arith.subf %wp, %wm : f64
  %fdw = arith.divf %dfw, %dw : f64
  vector.print str "n = "
  vector.print %n : index punctuation <no_punctuation>
  vector.print str ": value "
  vector.print %v : f64
  vector.print str "d/dx: "
  func.call @report(%gx, %ax, %fdx) : (f64, f64, f64) -> ()
  vector.print str "d/dw: "
  func.call @report(%gw, %aw, %fdw) : (f64, f64, f64) -> ()
  return
}

func.func @main() {
  %x = arith.constant 0.3 : f64
  %w = arith.constant 0.8 : f64
  // No iteration: the result is x.
  // CHECK: n = 0: value 0.3
  // CHECK-NEXT: d/dx: ad 1 analytic 1 fd 1 ok
  // CHECK-NEXT: d/dw: ad 0 analytic 0 fd 0 ok
  %n0 = arith.constant 0 : index
  func.call @check(%x, %w, %n0) : (f64, f64, index) -> ()
  // CHECK: n = 1: value 0.996463
  // CHECK-NEXT: d/dx: ad 1.11026 analytic 1.11026 fd 1.11026 ok
  // CHECK-NEXT: d/dw: ad 0.189544 analytic 0.189544 fd 0.189544 ok
  %n1 = arith.constant 1 : index
  func.call @check(%x, %w, %n1) : (f64, f64, index) -> ()
  // CHECK: n = 5: value 1.35913
  // CHECK-NEXT: d/dx: ad 0.876584 analytic 0.876584 fd 0.876584 ok
  // CHECK-NEXT: d/dw: ad 1.18912 analytic 1.18912 fd 1.18912 ok
  %n5 = arith.constant 5 : index
  func.call @check(%x, %w, %n5) : (f64, f64, index) -> ()
  // CHECK: n = 7: value 0.270214
  // CHECK-NEXT: d/dx: ad 0.204583 analytic 0.204583 fd 0.204583 ok
  // CHECK-NEXT: d/dw: ad 0.0552031 analytic 0.0552031 fd 0.0552031 ok
  %x7 = arith.constant -1.0 : f64
  %w7 = arith.constant -0.6 : f64
  %n7 = arith.constant 7 : index
  func.call @check(%x7, %w7, %n7) : (f64, f64, index) -> ()
  return
}
// CHECK-NOT: FAIL
