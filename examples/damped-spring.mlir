// Demo: sensitivity of a damped spring's final energy to its parameters.
//
// A mass on a spring with stiffness k and damping c starts at position x0
// with velocity v0 and is integrated for four semi-implicit Euler steps.
// The program returns its mechanical energy at the end. ad.value_and_grad
// gives dE/dx0, dE/dv0, dE/dk and dE/dc in one forward and one reverse run;
// main prints each next to a central finite difference of the same program.
//
// Run: scripts/demo.sh  (or ad-opt --ad-lower-to-llvm | mlir-runner ...)

// The spring force -k x - c v on a unit mass.
func.func @force(%x: f64, %v: f64, %k: f64, %c: f64) -> f64 {
  %kx = arith.mulf %k, %x : f64
  %cv = arith.mulf %c, %v : f64
  %s = arith.addf %kx, %cv : f64
  %f = arith.negf %s : f64
  return %f : f64
}

// One semi-implicit Euler step of length dt.
func.func @step(%x: f64, %v: f64, %k: f64, %c: f64, %dt: f64) -> (f64, f64) {
  %f = func.call @force(%x, %v, %k, %c) : (f64, f64, f64, f64) -> f64
  %dv = arith.mulf %f, %dt : f64
  %v1 = arith.addf %v, %dv : f64
  %dx = arith.mulf %v1, %dt : f64
  %x1 = arith.addf %x, %dx : f64
  return %x1, %v1 : f64, f64
}

// Kinetic plus potential energy.
func.func @energy(%x: f64, %v: f64, %k: f64) -> f64 {
  %half = arith.constant 0.5 : f64
  %vv = arith.mulf %v, %v : f64
  %xx = arith.mulf %x, %x : f64
  %kxx = arith.mulf %k, %xx : f64
  %e = arith.addf %vv, %kxx : f64
  %he = arith.mulf %half, %e : f64
  return %he : f64
}

// Energy after four steps; dt is fixed (a constant, not differentiated).
func.func @final_energy(%x0: f64, %v0: f64, %k: f64, %c: f64) -> f64 {
  %dt = arith.constant 0.1 : f64
  %x1, %v1 = func.call @step(%x0, %v0, %k, %c, %dt) : (f64, f64, f64, f64, f64) -> (f64, f64)
  %x2, %v2 = func.call @step(%x1, %v1, %k, %c, %dt) : (f64, f64, f64, f64, f64) -> (f64, f64)
  %x3, %v3 = func.call @step(%x2, %v2, %k, %c, %dt) : (f64, f64, f64, f64, f64) -> (f64, f64)
  %x4, %v4 = func.call @step(%x3, %v3, %k, %c, %dt) : (f64, f64, f64, f64, f64) -> (f64, f64)
  %e = func.call @energy(%x4, %v4, %k) : (f64, f64, f64) -> f64
  return %e : f64
}

// Central difference of @final_energy along one parameter (index 0..3).
func.func @finite_difference(%p: memref<4xf64>, %i: index) -> f64 {
  %h = arith.constant 1.0e-6 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %orig = memref.load %p[%i] : memref<4xf64>
  %up = arith.addf %orig, %h : f64
  memref.store %up, %p[%i] : memref<4xf64>
  %a0 = memref.load %p[%c0] : memref<4xf64>
  %a1 = memref.load %p[%c1] : memref<4xf64>
  %a2 = memref.load %p[%c2] : memref<4xf64>
  %a3 = memref.load %p[%c3] : memref<4xf64>
  %ep = func.call @final_energy(%a0, %a1, %a2, %a3) : (f64, f64, f64, f64) -> f64
  %down = arith.subf %orig, %h : f64
  memref.store %down, %p[%i] : memref<4xf64>
  %b0 = memref.load %p[%c0] : memref<4xf64>
  %b1 = memref.load %p[%c1] : memref<4xf64>
  %b2 = memref.load %p[%c2] : memref<4xf64>
  %b3 = memref.load %p[%c3] : memref<4xf64>
  %em = func.call @final_energy(%b0, %b1, %b2, %b3) : (f64, f64, f64, f64) -> f64
  memref.store %orig, %p[%i] : memref<4xf64>
  %de = arith.subf %ep, %em : f64
  %twoh = arith.addf %h, %h : f64
  %fd = arith.divf %de, %twoh : f64
  return %fd : f64
}

func.func @print_row(%g: f64, %p: memref<4xf64>, %i: index) {
  %fd = func.call @finite_difference(%p, %i) : (memref<4xf64>, index) -> f64
  vector.print %g : f64 punctuation <no_punctuation>
  vector.print str "   finite difference "
  vector.print %fd : f64
  return
}

func.func @main() {
  %x0 = arith.constant 1.0 : f64
  %v0 = arith.constant 0.5 : f64
  %k = arith.constant 4.0 : f64
  %c = arith.constant 0.3 : f64
  %e, %gx0, %gv0, %gk, %gc = ad.value_and_grad @final_energy(%x0, %v0, %k, %c)
      : (f64, f64, f64, f64) -> (f64, f64, f64, f64, f64)

  %p = memref.alloca() : memref<4xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  memref.store %x0, %p[%c0] : memref<4xf64>
  memref.store %v0, %p[%c1] : memref<4xf64>
  memref.store %k, %p[%c2] : memref<4xf64>
  memref.store %c, %p[%c3] : memref<4xf64>

  vector.print str "energy after 4 steps: "
  vector.print %e : f64
  vector.print str "dE/dx0 = "
  func.call @print_row(%gx0, %p, %c0) : (f64, memref<4xf64>, index) -> ()
  vector.print str "dE/dv0 = "
  func.call @print_row(%gv0, %p, %c1) : (f64, memref<4xf64>, index) -> ()
  vector.print str "dE/dk  = "
  func.call @print_row(%gk, %p, %c2) : (f64, memref<4xf64>, index) -> ()
  vector.print str "dE/dc  = "
  func.call @print_row(%gc, %p, %c3) : (f64, memref<4xf64>, index) -> ()
  return
}
