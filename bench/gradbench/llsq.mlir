// GradBench eval "llsq": primal(x, n) = 1/2 sum_{i<n} (s_i - sum_{j<m} x_j t_i^j)^2
// with t_i = -1 + 2 i / (n - 1) and s_i = sign(t_i) (sign(0) = 0), m = |x|;
// gradient(x, n) = its gradient with respect to x, requested with ad.grad.
//
// The polynomials p_i = sum_j x_j t_i^j are evaluated for all i at once by
// Horner's rule, p = (...((x_{m-1} t + x_{m-2}) t + x_{m-3}) ...) t + x_0:
// a loop over j carrying the vector p of n values, one multiply-add per
// element and step, with no power computed. t does not depend on x, so the
// gradient keeps nothing per step: its reverse loop multiplies the
// cotangent of p by t and sums it into the cotangent of x_j.

// t_i = -1 + 2 i / (n - 1) for i < n.
func.func private @points(%n: index) -> tensor<?xf64> {
  %one = arith.constant 1.0 : f64
  %two = arith.constant 2.0 : f64
  %nf = arith.index_cast %n : index to i64
  %nfl = arith.sitofp %nf : i64 to f64
  %den = arith.subf %nfl, %one : f64
  %init = tensor.empty(%n) : tensor<?xf64>
  %t = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%init : tensor<?xf64>) {
  ^bb0(%out: f64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %if = arith.sitofp %ii : i64 to f64
    %r = arith.divf %if, %den : f64
    %r2 = arith.mulf %two, %r : f64
    %ti = arith.subf %r2, %one : f64
    linalg.yield %ti : f64
  } -> tensor<?xf64>
  return %t : tensor<?xf64>
}

func.func @primal(%x: tensor<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %minus = arith.constant -1.0 : f64
  %half = arith.constant 0.5 : f64
  %m = tensor.dim %x, %c0 : tensor<?xf64>
  %t = func.call @points(%n) : (index) -> tensor<?xf64>
  %init = tensor.empty(%n) : tensor<?xf64>
  %p0 = linalg.fill ins(%zero : f64) outs(%init : tensor<?xf64>) -> tensor<?xf64>
  // Step k updates p to p t + x_j with j = m - 1 - k (p starts at 0).
  %p = scf.for %k = %c0 to %m step %c1 iter_args(%acc = %p0) -> tensor<?xf64> {
    %last = arith.subi %m, %c1 : index
    %j = arith.subi %last, %k : index
    %xj = tensor.extract %x[%j] : tensor<?xf64>
    %next = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%acc, %t : tensor<?xf64>, tensor<?xf64>) outs(%init : tensor<?xf64>) {
    ^bb0(%a: f64, %ti: f64, %out: f64):
      %prod = arith.mulf %a, %ti : f64
      %sum = arith.addf %prod, %xj : f64
      linalg.yield %sum : f64
    } -> tensor<?xf64>
    scf.yield %next : tensor<?xf64>
  }
  %scalar = tensor.empty() : tensor<f64>
  %l0 = linalg.fill ins(%zero : f64) outs(%scalar : tensor<f64>) -> tensor<f64>
  %l = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%p, %t : tensor<?xf64>, tensor<?xf64>) outs(%l0 : tensor<f64>) {
  ^bb0(%pi: f64, %ti: f64, %acc: f64):
    %pos = arith.cmpf ogt, %ti, %zero : f64
    %neg = arith.cmpf olt, %ti, %zero : f64
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
