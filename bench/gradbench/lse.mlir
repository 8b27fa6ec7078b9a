// GradBench eval "lse": primal(x) = logsumexp(x) with the max shift, and
// gradient(x) = its gradient (softmax(x)), requested with ad.grad. The shift
// is under ad.stop_gradient: its derivative cancels, so none is computed.
func.func @primal(%x: tensor<?xf64>) -> f64 {
  %low = arith.constant 0xFFF0000000000000 : f64
  %zero = arith.constant 0.0 : f64
  %scalar = tensor.empty() : tensor<f64>
  %m0 = linalg.fill ins(%low : f64) outs(%scalar : tensor<f64>) -> tensor<f64>
  %mt = linalg.reduce ins(%x : tensor<?xf64>) outs(%m0 : tensor<f64>) dimensions = [0]
    (%in: f64, %acc: f64) {
      %mx = arith.maximumf %in, %acc : f64
      linalg.yield %mx : f64
    }
  %shift = ad.stop_gradient %mt : tensor<f64>
  %s0 = linalg.fill ins(%zero : f64) outs(%scalar : tensor<f64>) -> tensor<f64>
  %st = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%x, %shift : tensor<?xf64>, tensor<f64>) outs(%s0 : tensor<f64>) {
  ^bb0(%in: f64, %m: f64, %acc: f64):
    %d = arith.subf %in, %m : f64
    %e = math.exp %d : f64
    %n = arith.addf %acc, %e : f64
    linalg.yield %n : f64
  } -> tensor<f64>
  %s = tensor.extract %st[] : tensor<f64>
  %m = tensor.extract %shift[] : tensor<f64>
  %ls = math.log %s : f64
  %lse = arith.addf %ls, %m : f64
  return %lse : f64
}

func.func @gradient(%x: tensor<?xf64>) -> tensor<?xf64> {
  %g = ad.grad @primal(%x) : (tensor<?xf64>) -> tensor<?xf64>
  return %g : tensor<?xf64>
}
