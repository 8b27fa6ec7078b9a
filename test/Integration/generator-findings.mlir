// Programs utils/fuzz_gradients.py found mishandled (a crash, or a
// documented construct rejected), reduced; each gradient checked against
// the finite difference recorded with the finding.
// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s

// An scf.for whose adjoint reads a per-iteration tape, inside an scf.if
// branch (ad-opt crashed: the tape was allocated before the draft of the
// branch op, erased since). d/dx x^4 at 0.7.
func.func @taped_loop_in_branch(%x: f64, %n: index) -> f64 {
  %z = arith.constant 0 : index
  %c = arith.cmpi ne, %n, %z : index
  %r = scf.if %c -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %l = scf.for %i = %c0 to %c2 step %c1 iter_args(%s = %x) -> (f64) {
      %d = arith.mulf %s, %s : f64
      scf.yield %d : f64
    }
    scf.yield %l : f64
  } else {
    scf.yield %x : f64
  }
  return %r : f64
}

// A dynamically shaped tensor the adjoint reads, computed in a branch
// (was rejected): x cos x + sin x at 0.7.
func.func @dynamic_tensor_in_branch(%x: f64, %d: index) -> f64 {
  %z = arith.constant 0.0 : f64
  %c = arith.cmpf ogt, %x, %z : f64
  %r = scf.if %c -> f64 {
    %t = tensor.splat %x[%d] : tensor<?xf64>
    %s = math.sin %t : tensor<?xf64>
    %p = arith.mulf %s, %t : tensor<?xf64>
    %i0 = arith.constant 0 : index
    %e = tensor.extract %p[%i0] : tensor<?xf64>
    scf.yield %e : f64
  } else {
    scf.yield %x : f64
  }
  return %r : f64
}

// A select on tensors in an scf.while body: its i1 condition tensor goes to
// the rows of the growable tape (was rejected). Finite difference 14.439594.
func.func @tensor_select_in_while(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %off = arith.constant dense<[0.0, 0.5, -0.5]> : tensor<3xf64>
  %t0 = tensor.splat %x : tensor<3xf64>
  %t = arith.addf %t0, %off : tensor<3xf64>
  %k0 = arith.constant 0 : i32
  %r, %kf = scf.while (%s = %t, %k = %k0) : (tensor<3xf64>, i32) -> (tensor<3xf64>, i32) {
    %three = arith.constant 3 : i32
    %go = arith.cmpi slt, %k, %three : i32
    scf.condition(%go) %s, %k : tensor<3xf64>, i32
  } do {
  ^bb0(%s: tensor<3xf64>, %k: i32):
    %q = arith.mulf %s, %s : tensor<3xf64>
    %c = arith.cmpf olt, %s, %q : tensor<3xf64>
    %m = arith.select %c, %q, %s : tensor<3xi1>, tensor<3xf64>
    %h = arith.constant dense<0.9> : tensor<3xf64>
    %n = arith.mulf %m, %h : tensor<3xf64>
    %one = arith.constant 1 : i32
    %k2 = arith.addi %k, %one : i32
    scf.yield %n, %k2 : tensor<3xf64>, i32
  }
  %e0 = tensor.extract %r[%c0] : tensor<3xf64>
  %e1 = tensor.extract %r[%c1] : tensor<3xf64>
  %s = arith.addf %e0, %e1 : f64
  return %s : f64
}

// A recursive function calling a function that runs a loop: the call is
// inlined, as calls inside loops are (was rejected: the callee's tape is a
// buffer). Finite difference 0.16269496.
func.func @grow(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %l = scf.for %i = %c0 to %c3 step %c1 iter_args(%s = %x) -> (f64) {
    %d = math.sin %s : f64
    %h = arith.constant 0.5 : f64
    %hs = arith.mulf %s, %h : f64
    %e = arith.addf %d, %hs : f64
    scf.yield %e : f64
  }
  return %l : f64
}
func.func @rec(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = math.cos %x : f64
    %p = func.call @rec(%s, %m) : (f64, index) -> f64
    %q = arith.mulf %p, %x : f64
    scf.yield %q : f64
  }
  %g = func.call @grow(%r) : (f64) -> f64
  return %g : f64
}
// A call of a recursive function inside a branch: its tape (a growable
// buffer) is carried out of the branch, an empty buffer from the other one
// (was rejected). Finite differences: 0.0945491 at x = 0.3, n = 3; at
// x = 0.7 the branch is not taken and the gradient is 1.
func.func @rec_sin(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %done -> (f64) {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = math.sin %x : f64
    %p = func.call @rec_sin(%s, %m) : (f64, index) -> f64
    %q = arith.mulf %p, %x : f64
    scf.yield %q : f64
  }
  return %r : f64
}
func.func @recursive_call_in_branch(%x: f64, %n: index) -> f64 {
  %z = arith.constant 0.5 : f64
  %c = arith.cmpf olt, %x, %z : f64
  %r = scf.if %c -> (f64) {
    %v = func.call @rec_sin(%x, %n) : (f64, index) -> f64
    scf.yield %v : f64
  } else {
    scf.yield %x : f64
  }
  return %r : f64
}
func.func @run(%x: f64, %n: index) {
  // CHECK: 1.372
  %g0 = ad.grad @taped_loop_in_branch(%x, %n) : (f64, index) -> f64
  vector.print %g0 : f64
  %d = arith.constant 3 : index
  // CHECK-NEXT: 1.17961
  %g1 = ad.grad @dynamic_tensor_in_branch(%x, %d) : (f64, index) -> f64
  vector.print %g1 : f64
  // CHECK-NEXT: 14.4396
  %g2 = ad.grad @tensor_select_in_while(%x) : (f64) -> f64
  vector.print %g2 : f64
  %two = arith.constant 2 : index
  // CHECK-NEXT: 0.162695
  %g3 = ad.grad @rec(%x, %two) : (f64, index) -> f64
  vector.print %g3 : f64
  %three = arith.constant 3 : index
  %x03 = arith.constant 0.3 : f64
  // CHECK-NEXT: 0.0945491
  %g4 = ad.grad @recursive_call_in_branch(%x03, %three) : (f64, index) -> f64
  vector.print %g4 : f64
  // CHECK-NEXT: 1
  %g5 = ad.grad @recursive_call_in_branch(%x, %three) : (f64, index) -> f64
  vector.print %g5 : f64
  return
}

func.func @main() {
  %x = arith.constant 0.7 : f64
  %n = arith.constant 1 : index
  func.call @run(%x, %n) {no_inline} : (f64, index) -> ()
  return
}
