// Benchmark: mul_tr(A, B) = trace(A B) for 30x30 f64 matrices. Times, in one
// run (best of 200 samples, each the mean of 200 calls), the primal, the
// gradient from ad.grad and the hand-written adjoint dA = B^T, dB = A^T,
// lowered the same way, and prints the ratios. Each variant returns a checksum (sum of its results)
// so that nothing is dead. Run: bench/run.sh mul-tr

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#all = affine_map<(d0, d1) -> ()>
#diag = affine_map<(d0) -> (d0, d0)>
#none = affine_map<(d0) -> ()>

memref.global @matrix_a : memref<30x30xf64> = dense<0.5>
memref.global @matrix_b : memref<30x30xf64> = dense<0.25>
memref.global @output : memref<f64> = dense<0.0>
memref.global @zero : memref<f64> = dense<0.0>
func.func private @rtclock() -> f64

func.func @mul_tr(%a: tensor<30x30xf64>, %b: tensor<30x30xf64>) -> tensor<f64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<30x30xf64>
  %c0 = linalg.fill ins(%z : f64) outs(%e : tensor<30x30xf64>) -> tensor<30x30xf64>
  %c = linalg.matmul ins(%a, %b : tensor<30x30xf64>, tensor<30x30xf64>) outs(%c0 : tensor<30x30xf64>) -> tensor<30x30xf64>
  %s = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%z : f64) outs(%s : tensor<f64>) -> tensor<f64>
  %t = linalg.generic {indexing_maps = [#diag, #none], iterator_types = ["reduction"]} ins(%c : tensor<30x30xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%x: f64, %acc: f64):
    %y = arith.addf %acc, %x : f64
    linalg.yield %y : f64
  } -> tensor<f64>
  return %t : tensor<f64>
}

// Sum of all elements.
func.func @checksum(%m: tensor<30x30xf64>) -> f64 {
  %z = arith.constant 0.0 : f64
  %s = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%z : f64) outs(%s : tensor<f64>) -> tensor<f64>
  %r = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]} ins(%m : tensor<30x30xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%x: f64, %acc: f64):
    %y = arith.addf %acc, %x : f64
    linalg.yield %y : f64
  } -> tensor<f64>
  %v = tensor.extract %r[] : tensor<f64>
  return %v : f64
}

func.func @primal_checksum(%a: tensor<30x30xf64>, %b: tensor<30x30xf64>) -> f64 {
  %t = func.call @mul_tr(%a, %b) : (tensor<30x30xf64>, tensor<30x30xf64>) -> tensor<f64>
  %v = tensor.extract %t[] : tensor<f64>
  return %v : f64
}

func.func @gradient_checksum(%a: tensor<30x30xf64>, %b: tensor<30x30xf64>) -> f64 {
  %ga, %gb = ad.grad @mul_tr(%a, %b) : (tensor<30x30xf64>, tensor<30x30xf64>) -> (tensor<30x30xf64>, tensor<30x30xf64>)
  %x = func.call @checksum(%ga) : (tensor<30x30xf64>) -> f64
  %y = func.call @checksum(%gb) : (tensor<30x30xf64>) -> f64
  %s = arith.addf %x, %y : f64
  return %s : f64
}

// dA = B^T, dB = A^T.
func.func @hand_checksum(%a: tensor<30x30xf64>, %b: tensor<30x30xf64>) -> f64 {
  %e1 = tensor.empty() : tensor<30x30xf64>
  %ga = linalg.transpose ins(%b : tensor<30x30xf64>) outs(%e1 : tensor<30x30xf64>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<30x30xf64>
  %gb = linalg.transpose ins(%a : tensor<30x30xf64>) outs(%e2 : tensor<30x30xf64>) permutation = [1, 0]
  %x = func.call @checksum(%ga) : (tensor<30x30xf64>) -> f64
  %y = func.call @checksum(%gb) : (tensor<30x30xf64>) -> f64
  %s = arith.addf %x, %y : f64
  return %s : f64
}

func.func @time_primal(%reps: index, %inner: index, %inner_f: f64, %zero_but_opaque: f64) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 1.0e30 : f64
  %zero = arith.constant 0.0 : f64
  %half = arith.constant 0.5 : f64
  %best, %last = scf.for %i = %c0 to %reps step %c1 iter_args(%b = %inf, %l = %zero) -> (f64, f64) {
    %t0 = func.call @rtclock() : () -> f64
    %v = scf.for %j = %c0 to %inner step %c1 iter_args(%unused = %zero) -> (f64) {
      %am = memref.get_global @matrix_a : memref<30x30xf64>
      %bm = memref.get_global @matrix_b : memref<30x30xf64>
      // A store the compiler cannot see through: no call is hoisted.
      %jf = arith.index_cast %j : index to i64
      %jd = arith.sitofp %jf : i64 to f64
      %tiny = arith.mulf %jd, %zero_but_opaque : f64
      %seed = arith.addf %tiny, %half : f64
      memref.store %seed, %am[%c0, %c0] : memref<30x30xf64>
      %a = bufferization.to_tensor %am restrict : memref<30x30xf64> to tensor<30x30xf64>
      %bt = bufferization.to_tensor %bm restrict : memref<30x30xf64> to tensor<30x30xf64>
      %w = func.call @primal_checksum(%a, %bt) : (tensor<30x30xf64>, tensor<30x30xf64>) -> f64
      %out = memref.get_global @output : memref<f64>
      memref.store %w, %out[] : memref<f64>
      scf.yield %w : f64
    }
    %t1 = func.call @rtclock() : () -> f64
    %elapsed = arith.subf %t1, %t0 : f64
    %dt = arith.divf %elapsed, %inner_f : f64
    %b2 = arith.minimumf %b, %dt : f64
    scf.yield %b2, %v : f64, f64
  }
  return %best, %last : f64, f64
}

func.func @time_gradient(%reps: index, %inner: index, %inner_f: f64, %zero_but_opaque: f64) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 1.0e30 : f64
  %zero = arith.constant 0.0 : f64
  %half = arith.constant 0.5 : f64
  %best, %last = scf.for %i = %c0 to %reps step %c1 iter_args(%b = %inf, %l = %zero) -> (f64, f64) {
    %t0 = func.call @rtclock() : () -> f64
    %v = scf.for %j = %c0 to %inner step %c1 iter_args(%unused = %zero) -> (f64) {
      %am = memref.get_global @matrix_a : memref<30x30xf64>
      %bm = memref.get_global @matrix_b : memref<30x30xf64>
      // A store the compiler cannot see through: no call is hoisted.
      %jf = arith.index_cast %j : index to i64
      %jd = arith.sitofp %jf : i64 to f64
      %tiny = arith.mulf %jd, %zero_but_opaque : f64
      %seed = arith.addf %tiny, %half : f64
      memref.store %seed, %am[%c0, %c0] : memref<30x30xf64>
      %a = bufferization.to_tensor %am restrict : memref<30x30xf64> to tensor<30x30xf64>
      %bt = bufferization.to_tensor %bm restrict : memref<30x30xf64> to tensor<30x30xf64>
      %w = func.call @gradient_checksum(%a, %bt) : (tensor<30x30xf64>, tensor<30x30xf64>) -> f64
      %out = memref.get_global @output : memref<f64>
      memref.store %w, %out[] : memref<f64>
      scf.yield %w : f64
    }
    %t1 = func.call @rtclock() : () -> f64
    %elapsed = arith.subf %t1, %t0 : f64
    %dt = arith.divf %elapsed, %inner_f : f64
    %b2 = arith.minimumf %b, %dt : f64
    scf.yield %b2, %v : f64, f64
  }
  return %best, %last : f64, f64
}

func.func @time_by_hand(%reps: index, %inner: index, %inner_f: f64, %zero_but_opaque: f64) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 1.0e30 : f64
  %zero = arith.constant 0.0 : f64
  %half = arith.constant 0.5 : f64
  %best, %last = scf.for %i = %c0 to %reps step %c1 iter_args(%b = %inf, %l = %zero) -> (f64, f64) {
    %t0 = func.call @rtclock() : () -> f64
    %v = scf.for %j = %c0 to %inner step %c1 iter_args(%unused = %zero) -> (f64) {
      %am = memref.get_global @matrix_a : memref<30x30xf64>
      %bm = memref.get_global @matrix_b : memref<30x30xf64>
      // A store the compiler cannot see through: no call is hoisted.
      %jf = arith.index_cast %j : index to i64
      %jd = arith.sitofp %jf : i64 to f64
      %tiny = arith.mulf %jd, %zero_but_opaque : f64
      %seed = arith.addf %tiny, %half : f64
      memref.store %seed, %am[%c0, %c0] : memref<30x30xf64>
      %a = bufferization.to_tensor %am restrict : memref<30x30xf64> to tensor<30x30xf64>
      %bt = bufferization.to_tensor %bm restrict : memref<30x30xf64> to tensor<30x30xf64>
      %w = func.call @hand_checksum(%a, %bt) : (tensor<30x30xf64>, tensor<30x30xf64>) -> f64
      %out = memref.get_global @output : memref<f64>
      memref.store %w, %out[] : memref<f64>
      scf.yield %w : f64
    }
    %t1 = func.call @rtclock() : () -> f64
    %elapsed = arith.subf %t1, %t0 : f64
    %dt = arith.divf %elapsed, %inner_f : f64
    %b2 = arith.minimumf %b, %dt : f64
    scf.yield %b2, %v : f64, f64
  }
  return %best, %last : f64, f64
}

func.func @main() {
  %reps = arith.constant 200 : index
  %inner = arith.constant 200 : index
  %inner_f = arith.constant 200.0 : f64
  // Zero, but read from memory so that the compiler cannot fold it.
  %zm = memref.get_global @zero : memref<f64>
  %z = memref.load %zm[] : memref<f64>
  %tp, %vp = func.call @time_primal(%reps, %inner, %inner_f, %z) : (index, index, f64, f64) -> (f64, f64)
  %tg, %vg = func.call @time_gradient(%reps, %inner, %inner_f, %z) : (index, index, f64, f64) -> (f64, f64)
  %th, %vh = func.call @time_by_hand(%reps, %inner, %inner_f, %z) : (index, index, f64, f64) -> (f64, f64)
  vector.print str "primal value             "
  vector.print %vp : f64
  vector.print str "gradient checksum (ad)   "
  vector.print %vg : f64
  vector.print str "gradient checksum (hand) "
  vector.print %vh : f64
  vector.print str "primal time [s]          "
  vector.print %tp : f64
  vector.print str "gradient time [s]        "
  vector.print %tg : f64
  vector.print str "hand adjoint time [s]    "
  vector.print %th : f64
  %r1 = arith.divf %tg, %tp : f64
  %r2 = arith.divf %tg, %th : f64
  vector.print str "gradient / primal        "
  vector.print %r1 : f64
  vector.print str "gradient / hand adjoint  "
  vector.print %r2 : f64
  return
}
