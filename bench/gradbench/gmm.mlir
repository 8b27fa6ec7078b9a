// GradBench eval "gmm": the log-posterior of a Gaussian mixture model with a
// Wishart prior (GradBench's gmm.hpp), and its gradient with respect to
// alpha, mu, q and l, requested with ad.grad.
//
// Arguments: alpha [K], mu [K][D], q [K][D], l [K][D(D-1)/2] (the strictly
// lower triangle of Q_k, column by column), x [N][D], gamma and m of the
// prior, and `norm`: K * C, the prior's normalization, which depends on no
// parameter (C = n' D (log gamma - log(2)/2) - log Gamma_D(n'/2),
// n' = D + m + 1; the tool computes it, the math dialect has no lgamma).
//
//   F = -N D/2 log(2 pi) + sum_i logsumexp_k(beta_ik) - N logsumexp(alpha)
//       - sum_k [gamma^2/2 (|exp(q_k)|^2 + |l_k|^2) - m sum_j q_kj] + norm
//   beta_ik = alpha_k + sum_j q_kj - 1/2 |Q_k (x_i - mu_k)|^2
//   Q_k = diag(exp(q_k)) + the strictly lower triangle from l_k.

#lse_in = affine_map<(n, k) -> (n, k)>
#lse_row = affine_map<(n, k) -> (n)>

func.func @objective(%alpha: tensor<?xf64>, %mu: tensor<?x?xf64>, %q: tensor<?x?xf64>, %l: tensor<?x?xf64>, %x: tensor<?x?xf64>, %gamma: f64, %m: f64, %norm: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f64
  %half = arith.constant 0.5 : f64
  %low = arith.constant 0xFFF0000000000000 : f64
  %n = tensor.dim %x, %c0 : tensor<?x?xf64>
  %d = tensor.dim %x, %c1 : tensor<?x?xf64>
  %k = tensor.dim %alpha, %c0 : tensor<?xf64>

  // M[k, j, i]: Q_k, exp(q) on the diagonal, l below it.
  %me = tensor.empty(%k, %d, %d) : tensor<?x?x?xf64>
  %mq = linalg.generic {indexing_maps = [affine_map<(k, j, i) -> (k, j)>, affine_map<(k, j, i) -> (k, j, i)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%q : tensor<?x?xf64>) outs(%me : tensor<?x?x?xf64>) {
  ^bb0(%qkj: f64, %o: f64):
    %kk = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i = linalg.index 2 : index
    %diag = arith.cmpi eq, %i, %j : index
    %below = arith.cmpi ult, %i, %j : index
    // Column i of the strict lower triangle starts at i (2 D - i - 1) / 2.
    %twod = arith.muli %d, %c2 : index
    %a = arith.subi %twod, %i : index
    %a1 = arith.subi %a, %c1 : index
    %a2 = arith.muli %i, %a1 : index
    %start = arith.divui %a2, %c2 : index
    %off = arith.subi %j, %i : index
    %off1 = arith.subi %off, %c1 : index
    %idx = arith.addi %start, %off1 : index
    %lower = scf.if %below -> (f64) {
      %lv = tensor.extract %l[%kk, %idx] : tensor<?x?xf64>
      scf.yield %lv : f64
    } else {
      scf.yield %zero : f64
    }
    %ev = math.exp %qkj : f64
    %v = arith.select %diag, %ev, %lower : f64
    linalg.yield %v : f64
  } -> tensor<?x?x?xf64>

  // Qx[n, k, j] = sum_i M[k, j, i] (x[n, i] - mu[k, i]).
  %qe = tensor.empty(%n, %k, %d) : tensor<?x?x?xf64>
  %q0 = linalg.fill ins(%zero : f64) outs(%qe : tensor<?x?x?xf64>) -> tensor<?x?x?xf64>
  %qx = linalg.generic {indexing_maps = [affine_map<(n, k, j, i) -> (k, j, i)>, affine_map<(n, k, j, i) -> (n, i)>, affine_map<(n, k, j, i) -> (k, i)>, affine_map<(n, k, j, i) -> (n, k, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%mq, %x, %mu : tensor<?x?x?xf64>, tensor<?x?xf64>, tensor<?x?xf64>) outs(%q0 : tensor<?x?x?xf64>) {
  ^bb0(%mv: f64, %xv: f64, %muv: f64, %acc: f64):
    %c = arith.subf %xv, %muv : f64
    %p = arith.mulf %mv, %c : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<?x?x?xf64>

  // sum_j q[k, j].
  %ke = tensor.empty(%k) : tensor<?xf64>
  %k0 = linalg.fill ins(%zero : f64) outs(%ke : tensor<?xf64>) -> tensor<?xf64>
  %sumq = linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (k)>], iterator_types = ["parallel", "reduction"]} ins(%q : tensor<?x?xf64>) outs(%k0 : tensor<?xf64>) {
  ^bb0(%v: f64, %acc: f64):
    %s = arith.addf %acc, %v : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>

  // beta[n, k] = alpha[k] + sumq[k] - 1/2 sum_j Qx[n, k, j]^2.
  %be = tensor.empty(%n, %k) : tensor<?x?xf64>
  %b0 = linalg.fill ins(%zero : f64) outs(%be : tensor<?x?xf64>) -> tensor<?x?xf64>
  %sq = linalg.generic {indexing_maps = [affine_map<(n, k, j) -> (n, k, j)>, affine_map<(n, k, j) -> (n, k)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%qx : tensor<?x?x?xf64>) outs(%b0 : tensor<?x?xf64>) {
  ^bb0(%v: f64, %acc: f64):
    %p = arith.mulf %v, %v : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<?x?xf64>
  %beta = linalg.generic {indexing_maps = [affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n, k)>], iterator_types = ["parallel", "parallel"]} ins(%sq, %alpha, %sumq : tensor<?x?xf64>, tensor<?xf64>, tensor<?xf64>) outs(%be : tensor<?x?xf64>) {
  ^bb0(%s: f64, %a: f64, %sqk: f64, %o: f64):
    %h = arith.mulf %half, %s : f64
    %t = arith.addf %a, %sqk : f64
    %b = arith.subf %t, %h : f64
    linalg.yield %b : f64
  } -> tensor<?x?xf64>

  // sum_n logsumexp_k beta[n, k], each shifted by its max.
  %ne = tensor.empty(%n) : tensor<?xf64>
  %nm0 = linalg.fill ins(%low : f64) outs(%ne : tensor<?xf64>) -> tensor<?xf64>
  %rowmax = linalg.generic {indexing_maps = [#lse_in, #lse_row], iterator_types = ["parallel", "reduction"]} ins(%beta : tensor<?x?xf64>) outs(%nm0 : tensor<?xf64>) {
  ^bb0(%v: f64, %acc: f64):
    %mx = arith.maximumf %v, %acc : f64
    linalg.yield %mx : f64
  } -> tensor<?xf64>
  %shift = ad.stop_gradient %rowmax : tensor<?xf64>
  %ns0 = linalg.fill ins(%zero : f64) outs(%ne : tensor<?xf64>) -> tensor<?xf64>
  %rowsum = linalg.generic {indexing_maps = [#lse_in, #lse_row, #lse_row], iterator_types = ["parallel", "reduction"]} ins(%beta, %shift : tensor<?x?xf64>, tensor<?xf64>) outs(%ns0 : tensor<?xf64>) {
  ^bb0(%v: f64, %mx: f64, %acc: f64):
    %c = arith.subf %v, %mx : f64
    %e = math.exp %c : f64
    %s = arith.addf %acc, %e : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>
  %scalar = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%zero : f64) outs(%scalar : tensor<f64>) -> tensor<f64>
  %slse = linalg.generic {indexing_maps = [affine_map<(n) -> (n)>, affine_map<(n) -> (n)>, affine_map<(n) -> ()>], iterator_types = ["reduction"]} ins(%rowsum, %shift : tensor<?xf64>, tensor<?xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%s: f64, %mx: f64, %acc: f64):
    %lg = math.log %s : f64
    %v = arith.addf %lg, %mx : f64
    %t = arith.addf %acc, %v : f64
    linalg.yield %t : f64
  } -> tensor<f64>

  // logsumexp(alpha).
  %am0 = linalg.fill ins(%low : f64) outs(%scalar : tensor<f64>) -> tensor<f64>
  %amax = linalg.reduce ins(%alpha : tensor<?xf64>) outs(%am0 : tensor<f64>) dimensions = [0]
    (%v: f64, %acc: f64) {
      %mx = arith.maximumf %v, %acc : f64
      linalg.yield %mx : f64
    }
  %ashift = ad.stop_gradient %amax : tensor<f64>
  %asum = linalg.generic {indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> ()>, affine_map<(k) -> ()>], iterator_types = ["reduction"]} ins(%alpha, %ashift : tensor<?xf64>, tensor<f64>) outs(%s0 : tensor<f64>) {
  ^bb0(%v: f64, %mx: f64, %acc: f64):
    %c = arith.subf %v, %mx : f64
    %e = math.exp %c : f64
    %s = arith.addf %acc, %e : f64
    linalg.yield %s : f64
  } -> tensor<f64>

  // The prior: sum_k gamma^2/2 (|exp(q_k)|^2 + |l_k|^2) - m sum_j q_kj.
  %pq = linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%q : tensor<?x?xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%v: f64, %acc: f64):
    %e = math.exp %v : f64
    %e2 = arith.mulf %e, %e : f64
    %s = arith.addf %acc, %e2 : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  %pl = linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%l : tensor<?x?xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%v: f64, %acc: f64):
    %v2 = arith.mulf %v, %v : f64
    %s = arith.addf %acc, %v2 : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  %ps = linalg.generic {indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> ()>], iterator_types = ["reduction"]} ins(%sumq : tensor<?xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%v: f64, %acc: f64):
    %s = arith.addf %acc, %v : f64
    linalg.yield %s : f64
  } -> tensor<f64>

  %slse_v = tensor.extract %slse[] : tensor<f64>
  %amax_v = tensor.extract %ashift[] : tensor<f64>
  %asum_v = tensor.extract %asum[] : tensor<f64>
  %pq_v = tensor.extract %pq[] : tensor<f64>
  %pl_v = tensor.extract %pl[] : tensor<f64>
  %ps_v = tensor.extract %ps[] : tensor<f64>

  %ni = arith.index_cast %n : index to i64
  %nf = arith.sitofp %ni : i64 to f64
  %di = arith.index_cast %d : index to i64
  %df = arith.sitofp %di : i64 to f64
  // -N D / 2 log(2 pi)
  %log2pi = arith.constant 1.8378770664093453 : f64
  %nd = arith.mulf %nf, %df : f64
  %nd2 = arith.mulf %nd, %half : f64
  %cdata = arith.mulf %nd2, %log2pi : f64
  // N logsumexp(alpha)
  %alog = math.log %asum_v : f64
  %alse = arith.addf %alog, %amax_v : f64
  %nalse = arith.mulf %nf, %alse : f64
  // The prior's terms.
  %g2 = arith.mulf %gamma, %gamma : f64
  %g2h = arith.mulf %g2, %half : f64
  %frob = arith.addf %pq_v, %pl_v : f64
  %pfrob = arith.mulf %g2h, %frob : f64
  %pm = arith.mulf %m, %ps_v : f64
  %prior = arith.subf %pfrob, %pm : f64

  %r0 = arith.subf %slse_v, %cdata : f64
  %r1 = arith.subf %r0, %nalse : f64
  %r2 = arith.subf %r1, %prior : f64
  %r = arith.addf %r2, %norm : f64
  return %r : f64
}

func.func @jacobian(%alpha: tensor<?xf64>, %mu: tensor<?x?xf64>, %q: tensor<?x?xf64>, %l: tensor<?x?xf64>, %x: tensor<?x?xf64>, %gamma: f64, %m: f64, %norm: f64) -> (tensor<?xf64>, tensor<?x?xf64>, tensor<?x?xf64>, tensor<?x?xf64>) {
  %ga, %gmu, %gq, %gl = ad.grad @objective(%alpha, %mu, %q, %l, %x, %gamma, %m, %norm) {wrt = array<i64: 0, 1, 2, 3>} : (tensor<?xf64>, tensor<?x?xf64>, tensor<?x?xf64>, tensor<?x?xf64>, tensor<?x?xf64>, f64, f64, f64) -> (tensor<?xf64>, tensor<?x?xf64>, tensor<?x?xf64>, tensor<?x?xf64>)
  return %ga, %gmu, %gq, %gl : tensor<?xf64>, tensor<?x?xf64>, tensor<?x?xf64>, tensor<?x?xf64>
}
