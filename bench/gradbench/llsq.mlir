// GradBench eval "llsq": primal(x, n) = 1/2 sum_{i<n} (s_i - sum_{j<m} x_j t_i^j)^2
// with t_i = -1 + 2 i / (n - 1) and s_i = sign(t_i) (sign(0) = 0), m = |x|;
// gradient(x, n) = its gradient with respect to x, requested with ad.grad.
func.func @primal(%x: tensor<?xf64>, %n: index) -> f64 {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %two = arith.constant 2.0 : f64
  %half = arith.constant 0.5 : f64
  %nf = arith.index_cast %n : index to i64
  %nfl = arith.sitofp %nf : i64 to f64
  %den = arith.subf %nfl, %one : f64
  %pred = tensor.empty(%n) : tensor<?xf64>
  %p0 = linalg.fill ins(%zero : f64) outs(%pred : tensor<?xf64>) -> tensor<?xf64>
  // p_i = sum_j x_j t_i^j, the powers built up along j.
  %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?xf64>) outs(%p0 : tensor<?xf64>) {
  ^bb0(%xj: f64, %acc: f64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i32
    %if = arith.sitofp %ii : i64 to f64
    %r = arith.divf %if, %den : f64
    %r2 = arith.mulf %two, %r : f64
    %t = arith.subf %r2, %one : f64
    %tj = math.fpowi %t, %jj : f64, i32
    %term = arith.mulf %xj, %tj : f64
    %sum = arith.addf %acc, %term : f64
    linalg.yield %sum : f64
  } -> tensor<?xf64>
  %scalar = tensor.empty() : tensor<f64>
  %l0 = linalg.fill ins(%zero : f64) outs(%scalar : tensor<f64>) -> tensor<f64>
  %l = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%p : tensor<?xf64>) outs(%l0 : tensor<f64>) {
  ^bb0(%pi: f64, %acc: f64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %if = arith.sitofp %ii : i64 to f64
    %r = arith.divf %if, %den : f64
    %r2 = arith.mulf %two, %r : f64
    %t = arith.subf %r2, %one : f64
    %pos = arith.cmpf ogt, %t, %zero : f64
    %neg = arith.cmpf olt, %t, %zero : f64
    %minus = arith.constant -1.0 : f64
    %sn = arith.select %neg, %minus, %zero : f64
    %s = arith.select %pos, %one, %sn : f64
    %d = arith.subf %s, %pi : f64
    %dd = arith.mulf %d, %d : f64
    %sum = arith.addf %acc, %dd : f64
    linalg.yield %sum : f64
  } -> tensor<f64>
  %lv = tensor.extract %l[] : tensor<f64>
  %y = arith.mulf %half, %lv : f64
  return %y : f64
}

func.func @gradient(%x: tensor<?xf64>, %n: index) -> tensor<?xf64> {
  %g = ad.grad @primal(%x, %n) : (tensor<?xf64>, index) -> tensor<?xf64>
  return %g : tensor<?xf64>
}
