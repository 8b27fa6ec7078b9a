// ad.grad, ad.value_and_grad and ad.forward + ad.pullback give bit-identical
// gradients; pullbacks are linear and reusable; arguments that do not reach
// the result get an exact zero; integer and index arguments are accepted.
// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s

func.func @model(%x: f64, %w: f64, %unused: f64, %n: i32, %k: index) -> f64 {
  %nf = arith.sitofp %n : i32 to f64
  %ki = arith.index_cast %k : index to i64
  %kf = arith.sitofp %ki : i64 to f64
  %p = math.fpowi %x, %n : f64, i32
  %s = math.sin %w : f64
  %t = arith.mulf %p, %s : f64
  %u = arith.mulf %t, %nf : f64
  %v = arith.addf %u, %kf : f64
  %e = math.exp %x : f64
  %y = arith.divf %v, %e : f64
  return %y : f64
}

// Prints 1 when a == b exactly.
func.func @same(%a: f64, %b: f64) {
  %eq = arith.cmpf oeq, %a, %b : f64
  vector.print %eq : i1
  return
}

func.func @main() {
  %x = arith.constant 0.8 : f64
  %w = arith.constant -1.3 : f64
  %z = arith.constant 4.0 : f64
  %n = arith.constant 3 : i32
  %k = arith.constant 5 : index
  %one = arith.constant 1.0 : f64
  %two = arith.constant 2.0 : f64

  %gx, %gw, %gz = ad.grad @model(%x, %w, %z, %n, %k)
      : (f64, f64, f64, i32, index) -> (f64, f64, f64)
  %y, %vx, %vw, %vz = ad.value_and_grad @model(%x, %w, %z, %n, %k)
      : (f64, f64, f64, i32, index) -> (f64, f64, f64, f64)
  %fy, %pb = ad.forward @model(%x, %w, %z, %n, %k)
      : (f64, f64, f64, i32, index) -> (f64, !ad.pullback<(f64) -> (f64, f64, f64)>)
  %px, %pw, %pz = ad.pullback %pb(%one) : !ad.pullback<(f64) -> (f64, f64, f64)>
  // Applied a second time, and to a doubled cotangent.
  %qx, %qw, %qz = ad.pullback %pb(%one) : !ad.pullback<(f64) -> (f64, f64, f64)>
  %dx, %dw, %dz = ad.pullback %pb(%two) : !ad.pullback<(f64) -> (f64, f64, f64)>
  %primal = func.call @model(%x, %w, %z, %n, %k)
      : (f64, f64, f64, i32, index) -> f64
  // wrt restricts to one argument; its gradient is the same number.
  %onlyw = ad.grad @model(%x, %w, %z, %n, %k) {wrt = array<i64: 1>}
      : (f64, f64, f64, i32, index) -> f64

  // CHECK-COUNT-13: {{^}}1{{$}}
  func.call @same(%gx, %px) : (f64, f64) -> ()
  func.call @same(%gw, %pw) : (f64, f64) -> ()
  func.call @same(%gx, %vx) : (f64, f64) -> ()
  func.call @same(%gw, %vw) : (f64, f64) -> ()
  func.call @same(%y, %primal) : (f64, f64) -> ()
  func.call @same(%fy, %primal) : (f64, f64) -> ()
  func.call @same(%px, %qx) : (f64, f64) -> ()
  func.call @same(%pw, %qw) : (f64, f64) -> ()
  %gx2 = arith.mulf %gx, %two : f64
  %gw2 = arith.mulf %gw, %two : f64
  func.call @same(%dx, %gx2) : (f64, f64) -> ()
  func.call @same(%dw, %gw2) : (f64, f64) -> ()
  func.call @same(%onlyw, %gw) : (f64, f64) -> ()
  %zero = arith.constant 0.0 : f64
  func.call @same(%gz, %zero) : (f64, f64) -> ()
  func.call @same(%pz, %zero) : (f64, f64) -> ()
  // CHECK-NOT: {{^}}0{{$}}

  // Closed form: y = 3 x^3 sin(w) e^-x + 5 e^-x.
  // dy/dx = 3 sin(w) e^-x (3x^2 - x^3) - 5 e^-x, dy/dw = 3 x^3 cos(w) e^-x.
  // CHECK: -4.07545
  // CHECK: 0.184619
  vector.print %gx : f64
  vector.print %gw : f64
  return
}
