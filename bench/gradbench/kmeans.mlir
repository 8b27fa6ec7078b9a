// GradBench eval "kmeans": cost(P, C) = sum_i min_j ||C_j - P_i||^2 over
// points P [n][d] and centroids C [k][d], and dir = J / diag(H) where J is
// the gradient of the cost with respect to C and H its Hessian. H is
// diagonal (within the region where each point's nearest centroid stays
// the same, the cost is a sum of squares of single coordinates of C), so
// diag(H) = H 1: J and H 1 come from one forward-mode derivative (ad.jvp)
// of the reverse-mode gradient (ad.grad), in the direction of all ones.

func.func @cost(%p: tensor<?x?xf64>, %c: tensor<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f64
  %inf = arith.constant 0x7FF0000000000000 : f64
  %n = tensor.dim %p, %c0 : tensor<?x?xf64>
  %k = tensor.dim %c, %c0 : tensor<?x?xf64>
  %e = tensor.empty(%n, %k) : tensor<?x?xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
  // dist[i][j] = sum_l (C[j][l] - P[i][l])^2
  %dist = linalg.generic {indexing_maps = [affine_map<(i, j, l) -> (i, l)>, affine_map<(i, j, l) -> (j, l)>, affine_map<(i, j, l) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %c : tensor<?x?xf64>, tensor<?x?xf64>) outs(%z : tensor<?x?xf64>) {
  ^bb0(%pv: f64, %cv: f64, %acc: f64):
    %diff = arith.subf %cv, %pv : f64
    %sq = arith.mulf %diff, %diff : f64
    %s = arith.addf %acc, %sq : f64
    linalg.yield %s : f64
  } -> tensor<?x?xf64>
  %me = tensor.empty(%n) : tensor<?xf64>
  %m0 = linalg.fill ins(%inf : f64) outs(%me : tensor<?xf64>) -> tensor<?xf64>
  %mins = linalg.reduce ins(%dist : tensor<?x?xf64>) outs(%m0 : tensor<?xf64>) dimensions = [1]
    (%v: f64, %acc: f64) {
      %m = arith.minimumf %v, %acc : f64
      linalg.yield %m : f64
    }
  %se = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%zero : f64) outs(%se : tensor<f64>) -> tensor<f64>
  %sum = linalg.reduce ins(%mins : tensor<?xf64>) outs(%s0 : tensor<f64>) dimensions = [0]
    (%v: f64, %acc: f64) {
      %s = arith.addf %v, %acc : f64
      linalg.yield %s : f64
    }
  %r = tensor.extract %sum[] : tensor<f64>
  return %r : f64
}

func.func private @gradient(%p: tensor<?x?xf64>, %c: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %g = ad.grad @cost(%p, %c) {wrt = array<i64: 1>} : (tensor<?x?xf64>, tensor<?x?xf64>) -> tensor<?x?xf64>
  return %g : tensor<?x?xf64>
}

func.func @dir(%p: tensor<?x?xf64>, %c: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %k = tensor.dim %c, %c0 : tensor<?x?xf64>
  %d = tensor.dim %c, %c1 : tensor<?x?xf64>
  %e = tensor.empty(%k, %d) : tensor<?x?xf64>
  %ones = linalg.fill ins(%one : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
  %j, %h = ad.jvp @gradient(%p, %c) tangents(%ones) {wrt = array<i64: 1>} : (tensor<?x?xf64>, tensor<?x?xf64>) -> (tensor<?x?xf64>, tensor<?x?xf64>)
  %dir = linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]}
      ins(%j, %h : tensor<?x?xf64>, tensor<?x?xf64>) outs(%e : tensor<?x?xf64>) {
  ^bb0(%jv: f64, %hv: f64, %o: f64):
    %q = arith.divf %jv, %hv : f64
    linalg.yield %q : f64
  } -> tensor<?x?xf64>
  return %dir : tensor<?x?xf64>
}
