// Benchmark: gradient of a scalar loop of 10^6 iterations,
//   s_{k+1} = 0.5 s_k + x^2 sin(x),  s_0 = 0,  f(x) = s_n,
// against the primal and a hand-written adjoint, compiled the same way and
// timed in one run (best of several repetitions). Prints the ratios.
// Run: bench/run.sh scalar-loop

func.func @primal(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %half = arith.constant 0.5 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %zero) -> (f64) {
    %xx = arith.mulf %x, %x : f64
    %sx = math.sin %x : f64
    %t = arith.mulf %xx, %sx : f64
    %hs = arith.mulf %half, %s : f64
    %s2 = arith.addf %hs, %t : f64
    scf.yield %s2 : f64
  }
  return %r : f64
}

// The adjoint by hand: ds runs backwards through s = 0.5 s + t, every
// iteration adds ds to dt, and dt/dx = 2x sin(x) + x^2 cos(x).
func.func @adjoint_by_hand(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %half = arith.constant 0.5 : f64
  %two = arith.constant 2.0 : f64
  %ds, %dt = scf.for %i = %c0 to %n step %c1 iter_args(%a = %one, %b = %zero) -> (f64, f64) {
    %b2 = arith.addf %b, %a : f64
    %a2 = arith.mulf %a, %half : f64
    scf.yield %a2, %b2 : f64, f64
  }
  %sx = math.sin %x : f64
  %cx = math.cos %x : f64
  %xx = arith.mulf %x, %x : f64
  %tx = arith.mulf %two, %x : f64
  %d1 = arith.mulf %tx, %sx : f64
  %d2 = arith.mulf %xx, %cx : f64
  %dtdx = arith.addf %d1, %d2 : f64
  %g = arith.mulf %dt, %dtdx : f64
  return %g : f64
}

func.func @gradient(%x: f64, %n: index) -> f64 {
  %g = ad.grad @primal(%x, %n) : (f64, index) -> f64
  return %g : f64
}

func.func private @rtclock() -> f64

// Inputs and outputs go through globals so that the compiler cannot move
// the work out of the timed region (rtclock may read or write them).
memref.global @input : memref<f64> = dense<0.7>
memref.global @output : memref<f64> = dense<0.0>

// Best time of `reps` runs of one variant; also returns the last result.
func.func @time_primal(%x: f64, %n: index, %reps: index) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 1.0e30 : f64
  %zero = arith.constant 0.0 : f64
  %best, %last = scf.for %i = %c0 to %reps step %c1 iter_args(%b = %inf, %l = %zero) -> (f64, f64) {
    %t0 = func.call @rtclock() : () -> f64
    %in = memref.get_global @input : memref<f64>
    %out = memref.get_global @output : memref<f64>
    %xv = memref.load %in[] : memref<f64>
    %v = func.call @primal(%xv, %n) : (f64, index) -> f64
    memref.store %v, %out[] : memref<f64>
    %t1 = func.call @rtclock() : () -> f64
    %dt = arith.subf %t1, %t0 : f64
    %b2 = arith.minimumf %b, %dt : f64
    scf.yield %b2, %v : f64, f64
  }
  return %best, %last : f64, f64
}

func.func @time_gradient(%x: f64, %n: index, %reps: index) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 1.0e30 : f64
  %zero = arith.constant 0.0 : f64
  %best, %last = scf.for %i = %c0 to %reps step %c1 iter_args(%b = %inf, %l = %zero) -> (f64, f64) {
    %t0 = func.call @rtclock() : () -> f64
    %in = memref.get_global @input : memref<f64>
    %out = memref.get_global @output : memref<f64>
    %xv = memref.load %in[] : memref<f64>
    %v = func.call @gradient(%xv, %n) : (f64, index) -> f64
    memref.store %v, %out[] : memref<f64>
    %t1 = func.call @rtclock() : () -> f64
    %dt = arith.subf %t1, %t0 : f64
    %b2 = arith.minimumf %b, %dt : f64
    scf.yield %b2, %v : f64, f64
  }
  return %best, %last : f64, f64
}

func.func @time_by_hand(%x: f64, %n: index, %reps: index) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 1.0e30 : f64
  %zero = arith.constant 0.0 : f64
  %best, %last = scf.for %i = %c0 to %reps step %c1 iter_args(%b = %inf, %l = %zero) -> (f64, f64) {
    %t0 = func.call @rtclock() : () -> f64
    %in = memref.get_global @input : memref<f64>
    %out = memref.get_global @output : memref<f64>
    %xv = memref.load %in[] : memref<f64>
    %v = func.call @adjoint_by_hand(%xv, %n) : (f64, index) -> f64
    memref.store %v, %out[] : memref<f64>
    %t1 = func.call @rtclock() : () -> f64
    %dt = arith.subf %t1, %t0 : f64
    %b2 = arith.minimumf %b, %dt : f64
    scf.yield %b2, %v : f64, f64
  }
  return %best, %last : f64, f64
}

func.func @main() {
  %x = arith.constant 0.7 : f64
  %n = arith.constant 1000000 : index
  %reps = arith.constant 20 : index
  %tp, %vp = func.call @time_primal(%x, %n, %reps) : (f64, index, index) -> (f64, f64)
  %tg, %vg = func.call @time_gradient(%x, %n, %reps) : (f64, index, index) -> (f64, f64)
  %th, %vh = func.call @time_by_hand(%x, %n, %reps) : (f64, index, index) -> (f64, f64)
  vector.print str "primal value            "
  vector.print %vp : f64
  vector.print str "gradient (ad.grad)      "
  vector.print %vg : f64
  vector.print str "gradient (by hand)      "
  vector.print %vh : f64
  vector.print str "primal time [s]         "
  vector.print %tp : f64
  vector.print str "gradient time [s]       "
  vector.print %tg : f64
  vector.print str "hand adjoint time [s]   "
  vector.print %th : f64
  %r1 = arith.divf %tg, %tp : f64
  %r2 = arith.divf %tg, %th : f64
  vector.print str "gradient / primal       "
  vector.print %r1 : f64
  vector.print str "gradient / hand adjoint "
  vector.print %r2 : f64
  return
}
