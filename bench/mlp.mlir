// Benchmark: gradient of a two-layer MLP (batch 64, widths 256, tanh,
// squared loss) with respect to both weight matrices and biases, against
// the primal in the same run (best of several repetitions).
// Run: bench/run.sh mlp

memref.global @x : memref<64x256xf64> = dense<0.01>
memref.global @w1 : memref<256x256xf64> = dense<0.02>
memref.global @b1 : memref<256xf64> = dense<0.1>
memref.global @w2 : memref<256x256xf64> = dense<-0.03>
memref.global @b2 : memref<256xf64> = dense<0.05>
memref.global @t : memref<64x256xf64> = dense<0.5>
func.func private @rtclock() -> f64
memref.global @output : memref<f64> = dense<0.0>

// loss = 0.5 sum((tanh(X W1 + b1) W2 + b2 - T)^2)
func.func @mlp_loss(%x: tensor<64x256xf64>, %w1: tensor<256x256xf64>, %b1: tensor<256xf64>, %w2: tensor<256x256xf64>, %b2: tensor<256xf64>, %t: tensor<64x256xf64>) -> tensor<f64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<64x256xf64>
  %f0 = linalg.fill ins(%z : f64) outs(%e : tensor<64x256xf64>) -> tensor<64x256xf64>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<64x256xf64>, tensor<256x256xf64>) outs(%f0 : tensor<64x256xf64>) -> tensor<64x256xf64>
  %h = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m1, %b1 : tensor<64x256xf64>, tensor<256xf64>) outs(%e : tensor<64x256xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %s = arith.addf %a, %b : f64
    %th = math.tanh %s : f64
    linalg.yield %th : f64
  } -> tensor<64x256xf64>
  %f1 = linalg.fill ins(%z : f64) outs(%e : tensor<64x256xf64>) -> tensor<64x256xf64>
  %m2 = linalg.matmul ins(%h, %w2 : tensor<64x256xf64>, tensor<256x256xf64>) outs(%f1 : tensor<64x256xf64>) -> tensor<64x256xf64>
  %s0 = tensor.empty() : tensor<f64>
  %s1 = linalg.fill ins(%z : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%m2, %b2, %t : tensor<64x256xf64>, tensor<256xf64>, tensor<64x256xf64>) outs(%s1 : tensor<f64>) {
  ^bb0(%y: f64, %bb: f64, %tt: f64, %acc: f64):
    %yb = arith.addf %y, %bb : f64
    %d = arith.subf %yb, %tt : f64
    %dd = arith.mulf %d, %d : f64
    %half = arith.constant 0.5 : f64
    %hd = arith.mulf %dd, %half : f64
    %n = arith.addf %acc, %hd : f64
    linalg.yield %n : f64
  } -> tensor<f64>
  return %l : tensor<f64>
}
// Sum of all elements of a tensor<256x256xf64>.
func.func @sum_matrix(%m: tensor<256x256xf64>) -> f64 {
  %z = arith.constant 0.0 : f64
  %s = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%z : f64) outs(%s : tensor<f64>) -> tensor<f64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%m : tensor<256x256xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%x: f64, %acc: f64):
    %y = arith.addf %acc, %x : f64
    linalg.yield %y : f64
  } -> tensor<f64>
  %v = tensor.extract %r[] : tensor<f64>
  return %v : f64
}
// Sum of all elements of a tensor<256xf64>.
func.func @sum_vector(%m: tensor<256xf64>) -> f64 {
  %z = arith.constant 0.0 : f64
  %s = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%z : f64) outs(%s : tensor<f64>) -> tensor<f64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%m : tensor<256xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%x: f64, %acc: f64):
    %y = arith.addf %acc, %x : f64
    linalg.yield %y : f64
  } -> tensor<f64>
  %v = tensor.extract %r[] : tensor<f64>
  return %v : f64
}

func.func @primal_value(%x: tensor<64x256xf64>, %w1: tensor<256x256xf64>, %b1: tensor<256xf64>, %w2: tensor<256x256xf64>, %b2: tensor<256xf64>, %t: tensor<64x256xf64>) -> f64 {
  %l = func.call @mlp_loss(%x, %w1, %b1, %w2, %b2, %t) : (tensor<64x256xf64>, tensor<256x256xf64>, tensor<256xf64>, tensor<256x256xf64>, tensor<256xf64>, tensor<64x256xf64>) -> tensor<f64>
  %v = tensor.extract %l[] : tensor<f64>
  return %v : f64
}

func.func @gradient_checksum(%x: tensor<64x256xf64>, %w1: tensor<256x256xf64>, %b1: tensor<256xf64>, %w2: tensor<256x256xf64>, %b2: tensor<256xf64>, %t: tensor<64x256xf64>) -> f64 {
  %g1, %gb1, %g2, %gb2 = ad.grad @mlp_loss(%x, %w1, %b1, %w2, %b2, %t) {wrt = array<i64: 1, 2, 3, 4>} : (tensor<64x256xf64>, tensor<256x256xf64>, tensor<256xf64>, tensor<256x256xf64>, tensor<256xf64>, tensor<64x256xf64>) -> (tensor<256x256xf64>, tensor<256xf64>, tensor<256x256xf64>, tensor<256xf64>)
  %a = func.call @sum_matrix(%g1) : (tensor<256x256xf64>) -> f64
  %b = func.call @sum_vector(%gb1) : (tensor<256xf64>) -> f64
  %c = func.call @sum_matrix(%g2) : (tensor<256x256xf64>) -> f64
  %d = func.call @sum_vector(%gb2) : (tensor<256xf64>) -> f64
  %s1 = arith.addf %a, %b : f64
  %s2 = arith.addf %c, %d : f64
  %s = arith.addf %s1, %s2 : f64
  return %s : f64
}

func.func @time_primal(%reps: index) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 1.0e30 : f64
  %zero = arith.constant 0.0 : f64
  %best, %last = scf.for %i = %c0 to %reps step %c1 iter_args(%b = %inf, %l = %zero) -> (f64, f64) {
    %t0 = func.call @rtclock() : () -> f64
    %x_m = memref.get_global @x : memref<64x256xf64>
    %xt = bufferization.to_tensor %x_m restrict : memref<64x256xf64> to tensor<64x256xf64>
    %w1_m = memref.get_global @w1 : memref<256x256xf64>
    %w1t = bufferization.to_tensor %w1_m restrict : memref<256x256xf64> to tensor<256x256xf64>
    %b1_m = memref.get_global @b1 : memref<256xf64>
    %b1t = bufferization.to_tensor %b1_m restrict : memref<256xf64> to tensor<256xf64>
    %w2_m = memref.get_global @w2 : memref<256x256xf64>
    %w2t = bufferization.to_tensor %w2_m restrict : memref<256x256xf64> to tensor<256x256xf64>
    %b2_m = memref.get_global @b2 : memref<256xf64>
    %b2t = bufferization.to_tensor %b2_m restrict : memref<256xf64> to tensor<256xf64>
    %t_m = memref.get_global @t : memref<64x256xf64>
    %tt = bufferization.to_tensor %t_m restrict : memref<64x256xf64> to tensor<64x256xf64>
    %v = func.call @primal_value(%xt, %w1t, %b1t, %w2t, %b2t, %tt) : (tensor<64x256xf64>, tensor<256x256xf64>, tensor<256xf64>, tensor<256x256xf64>, tensor<256xf64>, tensor<64x256xf64>) -> f64
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
    %x_m = memref.get_global @x : memref<64x256xf64>
    %xt = bufferization.to_tensor %x_m restrict : memref<64x256xf64> to tensor<64x256xf64>
    %w1_m = memref.get_global @w1 : memref<256x256xf64>
    %w1t = bufferization.to_tensor %w1_m restrict : memref<256x256xf64> to tensor<256x256xf64>
    %b1_m = memref.get_global @b1 : memref<256xf64>
    %b1t = bufferization.to_tensor %b1_m restrict : memref<256xf64> to tensor<256xf64>
    %w2_m = memref.get_global @w2 : memref<256x256xf64>
    %w2t = bufferization.to_tensor %w2_m restrict : memref<256x256xf64> to tensor<256x256xf64>
    %b2_m = memref.get_global @b2 : memref<256xf64>
    %b2t = bufferization.to_tensor %b2_m restrict : memref<256xf64> to tensor<256xf64>
    %t_m = memref.get_global @t : memref<64x256xf64>
    %tt = bufferization.to_tensor %t_m restrict : memref<64x256xf64> to tensor<64x256xf64>
    %v = func.call @gradient_checksum(%xt, %w1t, %b1t, %w2t, %b2t, %tt) : (tensor<64x256xf64>, tensor<256x256xf64>, tensor<256xf64>, tensor<256x256xf64>, tensor<256xf64>, tensor<64x256xf64>) -> f64
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
  %reps = arith.constant 5 : index
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
