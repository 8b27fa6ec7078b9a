// Benchmark: gradient of logsumexp over 1000000 logits, against the primal
// in the same run. The gradient is softmax(x); its checksum is 1 up to
// rounding. Run: bench/run.sh logsumexp

memref.global @logits : memref<1000000xf64> = dense<0.25>
func.func private @rtclock() -> f64
memref.global @output : memref<f64> = dense<0.0>

// logsumexp(x) = m + log(sum(exp(x - m))), m = max(x) (a constant shift:
// its derivative cancels).
func.func @logsumexp(%x: tensor<1000000xf64>) -> f64 {
  %low = arith.constant -1.0e300 : f64
  %z = arith.constant 0.0 : f64
  %s0 = tensor.empty() : tensor<f64>
  %m0 = linalg.fill ins(%low : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %mt = linalg.reduce ins(%x : tensor<1000000xf64>) outs(%m0 : tensor<f64>) dimensions = [0]
    (%in: f64, %acc: f64) {
      %mx = arith.maximumf %in, %acc : f64
      linalg.yield %mx : f64
    }
  %m = tensor.extract %mt[] : tensor<f64>
  %z0 = linalg.fill ins(%z : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %st = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%x, %mt : tensor<1000000xf64>, tensor<f64>) outs(%z0 : tensor<f64>) {
  ^bb0(%in: f64, %mm: f64, %acc: f64):
    %d = arith.subf %in, %mm : f64
    %e = math.exp %d : f64
    %n = arith.addf %acc, %e : f64
    linalg.yield %n : f64
  } -> tensor<f64>
  %s = tensor.extract %st[] : tensor<f64>
  %ls = math.log %s : f64
  %lse = arith.addf %ls, %m : f64
  return %lse : f64
}
// Sum of all elements of a tensor<1000000xf64>.
func.func @sum_all(%m: tensor<1000000xf64>) -> f64 {
  %z = arith.constant 0.0 : f64
  %s = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%z : f64) outs(%s : tensor<f64>) -> tensor<f64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%m : tensor<1000000xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%x: f64, %acc: f64):
    %y = arith.addf %acc, %x : f64
    linalg.yield %y : f64
  } -> tensor<f64>
  %v = tensor.extract %r[] : tensor<f64>
  return %v : f64
}

func.func @primal_value(%x: tensor<1000000xf64>) -> f64 {
  %v = func.call @logsumexp(%x) : (tensor<1000000xf64>) -> f64
  return %v : f64
}

func.func @gradient_checksum(%x: tensor<1000000xf64>) -> f64 {
  %g = ad.grad @logsumexp(%x) : (tensor<1000000xf64>) -> tensor<1000000xf64>
  %s = func.call @sum_all(%g) : (tensor<1000000xf64>) -> f64
  return %s : f64
}

func.func @time_primal(%reps: index) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 1.0e30 : f64
  %zero = arith.constant 0.0 : f64
  %best, %last = scf.for %i = %c0 to %reps step %c1 iter_args(%b = %inf, %l = %zero) -> (f64, f64) {
    %t0 = func.call @rtclock() : () -> f64
    %l_m = memref.get_global @logits : memref<1000000xf64>
    %xt = bufferization.to_tensor %l_m restrict : memref<1000000xf64> to tensor<1000000xf64>
    %v = func.call @primal_value(%xt) : (tensor<1000000xf64>) -> f64
    %out = memref.get_global @output : memref<f64>
    memref.store %v, %out[] : memref<f64>
    %t1 = func.call @rtclock() : () -> f64
    %dt = arith.subf %t1, %t0 : f64
    %b2 = arith.minimumf %b, %dt : f64
    scf.yield %b2, %v : f64, f64
  }
  return %best, %last : f64, f64
}

func.func @time_gradient(%reps: index) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 1.0e30 : f64
  %zero = arith.constant 0.0 : f64
  %best, %last = scf.for %i = %c0 to %reps step %c1 iter_args(%b = %inf, %l = %zero) -> (f64, f64) {
    %t0 = func.call @rtclock() : () -> f64
    %l_m = memref.get_global @logits : memref<1000000xf64>
    %xt = bufferization.to_tensor %l_m restrict : memref<1000000xf64> to tensor<1000000xf64>
    %v = func.call @gradient_checksum(%xt) : (tensor<1000000xf64>) -> f64
    %out = memref.get_global @output : memref<f64>
    memref.store %v, %out[] : memref<f64>
    %t1 = func.call @rtclock() : () -> f64
    %dt = arith.subf %t1, %t0 : f64
    %b2 = arith.minimumf %b, %dt : f64
    scf.yield %b2, %v : f64, f64
  }
  return %best, %last : f64, f64
}

func.func @main() {
  %reps = arith.constant 20 : index
  %tp, %vp = func.call @time_primal(%reps) : (index) -> (f64, f64)
  %tg, %vg = func.call @time_gradient(%reps) : (index) -> (f64, f64)
  vector.print str "primal value             "
  vector.print %vp : f64
  vector.print str "gradient checksum        "
  vector.print %vg : f64
  vector.print str "primal time [s]          "
  vector.print %tp : f64
  vector.print str "gradient time [s]        "
  vector.print %tg : f64
  %r1 = arith.divf %tg, %tp : f64
  vector.print str "gradient / primal        "
  vector.print %r1 : f64
  return
}
