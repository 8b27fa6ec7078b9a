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
// An scf.index_switch whose pullback yields one zero tensor from several
// cases: one-shot bufferization (LLVM 22) wrote into that buffer while it
// was still read, a wrong gradient. Closed form 1/b - a 2x / b^2 with
// a = x + 0.2, b = x^2 + 0.5 at x = 0.6: -0.135208 (case 0), 1.00054
// (case 3, the other element).
func.func @switch_shared_zero(%x: f64, %n: index) -> f64 {
  %sp = tensor.splat %x : tensor<2xf64>
  %off = arith.constant dense<[-0.5, 0.2]> : tensor<2xf64>
  %a = arith.addf %sp, %off : tensor<2xf64>
  %h = arith.constant dense<0.5> : tensor<2xf64>
  %e = tensor.empty() : tensor<2xf64>
  %b0 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : f64) outs(%e : tensor<2xf64>) {
  ^bb0(%in: f64, %o: f64):
    %m = arith.mulf %in, %in : f64
    linalg.yield %m : f64
  } -> tensor<2xf64>
  %b = arith.addf %b0, %h : tensor<2xf64>
  %e2 = tensor.empty() : tensor<2xf64>
  %d = linalg.div ins(%a, %b : tensor<2xf64>, tensor<2xf64>) outs(%e2 : tensor<2xf64>) -> tensor<2xf64>
  %k0 = arith.constant 0 : index
  %k1 = arith.constant 1 : index
  %v = tensor.extract %d[%k1] : tensor<2xf64>
  %r = scf.index_switch %n -> f64
  case 0 {
    scf.yield %v : f64
  }
  case 3 {
    %z = tensor.extract %d[%k0] : tensor<2xf64>
    scf.yield %z : f64
  }
  default {
    scf.yield %v : f64
  }
  return %r : f64
}
// A strided slice dropping unit dimensions (ad-opt crashed in upstream
// expand-strided-metadata): sin(x)^2, derivative 2 sin x cos x.
func.func @strided_unit_slice(%x: f64) -> f64 {
  %t = tensor.splat %x : tensor<2x3x1xf64>
  %u = math.sin %t : tensor<2x3x1xf64>
  %s = tensor.extract_slice %u[1, 0, 0] [1, 2, 1] [1, 2, 1] : tensor<2x3x1xf64> to tensor<2xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.extract %s[%c0] : tensor<2xf64>
  %f = tensor.extract %s[%c1] : tensor<2xf64>
  %r = arith.mulf %e, %f : f64
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
  %x06 = arith.constant 0.6 : f64
  %zero = arith.constant 0 : index
  // CHECK-NEXT: -0.135208
  %g6 = ad.grad @switch_shared_zero(%x06, %zero) : (f64, index) -> f64
  vector.print %g6 : f64
  // CHECK-NEXT: 1.00054
  %g7 = ad.grad @switch_shared_zero(%x06, %three) : (f64, index) -> f64
  vector.print %g7 : f64
  // 2 sin(0.7) cos(0.7)
  // CHECK-NEXT: 0.98545
  %g8 = ad.grad @strided_unit_slice(%x) : (f64) -> f64
  vector.print %g8 : f64
  // The same bufferization problem without any ad op: 7000 + 1.
  // CHECK-NEXT: 7001
  %a57 = arith.constant dense<[5.0, 7.0]> : tensor<2xf64>
  %s = func.call @switch_buffers(%zero, %a57) {no_inline} : (index, tensor<2xf64>) -> f64
  vector.print %s : f64
  return
}

func.func @main() {
  %x = arith.constant 0.7 : f64
  %n = arith.constant 1 : index
  func.call @run(%x, %n) {no_inline} : (f64, index) -> ()
  return
}

// sum(a * t) * 1000 + sum(t), t = [0, 1] for n = 0.
#sw_id = affine_map<(d0) -> (d0)>
#sw_sc = affine_map<(d0) -> ()>
func.func @switch_buffers(%n: index, %a: tensor<2xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %e0 = tensor.empty() : tensor<2xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e0 : tensor<2xf64>) -> tensor<2xf64>
  %s:2 = scf.index_switch %n -> f64, tensor<2xf64>
  case 3 {
    %i = tensor.insert %one into %z[%c0] : tensor<2xf64>
    scf.yield %zero, %i : f64, tensor<2xf64>
  }
  default {
    scf.yield %one, %z : f64, tensor<2xf64>
  }
  %old = tensor.extract %s#1[%c1] : tensor<2xf64>
  %new = arith.addf %old, %s#0 : f64
  %t = tensor.insert %new into %s#1[%c1] : tensor<2xf64>
  %e = tensor.empty() : tensor<2xf64>
  %p = linalg.generic {indexing_maps = [#sw_id, #sw_id, #sw_id], iterator_types = ["parallel"]} ins(%a, %t : tensor<2xf64>, tensor<2xf64>) outs(%e : tensor<2xf64>) {
  ^bb0(%x: f64, %y: f64, %o: f64):
    %m = arith.mulf %x, %y : f64
    linalg.yield %m : f64
  } -> tensor<2xf64>
  %e1 = tensor.empty() : tensor<f64>
  %f1 = linalg.fill ins(%zero : f64) outs(%e1 : tensor<f64>) -> tensor<f64>
  %sp = linalg.generic {indexing_maps = [#sw_id, #sw_sc], iterator_types = ["reduction"]} ins(%p : tensor<2xf64>) outs(%f1 : tensor<f64>) {
  ^bb0(%x: f64, %o: f64):
    %q = arith.addf %o, %x : f64
    linalg.yield %q : f64
  } -> tensor<f64>
  %e2 = tensor.empty() : tensor<f64>
  %f2 = linalg.fill ins(%zero : f64) outs(%e2 : tensor<f64>) -> tensor<f64>
  %st = linalg.generic {indexing_maps = [#sw_id, #sw_sc], iterator_types = ["reduction"]} ins(%t : tensor<2xf64>) outs(%f2 : tensor<f64>) {
  ^bb0(%x: f64, %o: f64):
    %q = arith.addf %o, %x : f64
    linalg.yield %q : f64
  } -> tensor<f64>
  %a1 = tensor.extract %sp[] : tensor<f64>
  %a2 = tensor.extract %st[] : tensor<f64>
  // sum(a * t) * 1000 + sum(t): with n = 0, t = [0, 1], a = [5, 7]: 7000 + 1
  %k = arith.constant 1000.0 : f64
  %a1k = arith.mulf %a1, %k : f64
  %r = arith.addf %a1k, %a2 : f64
  return %r : f64
}
