// GradBench eval "ba" (bundle adjustment): the reprojection error of each
// observation of a point by a camera, w * (project(cam, X) - feat), and the
// weight error 1 - w^2; the jacobian in GradBench's sparse form, each
// observation's two rows computed by one forward run of the residual and
// two applications of its pullback (ad.forward, ad.pullback).
//
// A camera is 11 parameters: Rodrigues rotation r (3), centre C (3), focal
// length f, principal point u (2), radial distortion k (2).

// The two residuals of one observation, from scalars (no buffers).
func.func private @reproj(%r0: f64, %r1: f64, %r2: f64, %c0: f64, %c1: f64, %c2: f64,
                          %f: f64, %u0: f64, %u1: f64, %k1: f64, %k2: f64,
                          %x0: f64, %x1: f64, %x2: f64, %w: f64,
                          %fx: f64, %fy: f64) -> (f64, f64) {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  // The point relative to the camera centre, rotated by r.
  %p0 = arith.subf %x0, %c0 : f64
  %p1 = arith.subf %x1, %c1 : f64
  %p2 = arith.subf %x2, %c2 : f64
  %s0 = arith.mulf %r0, %r0 : f64
  %s1 = arith.mulf %r1, %r1 : f64
  %s2 = arith.mulf %r2, %r2 : f64
  %s01 = arith.addf %s0, %s1 : f64
  %sq = arith.addf %s01, %s2 : f64
  %nonzero = arith.cmpf one, %sq, %zero : f64
  %q0, %q1, %q2 = scf.if %nonzero -> (f64, f64, f64) {
    %theta = math.sqrt %sq : f64
    %ct = math.cos %theta : f64
    %st = math.sin %theta : f64
    %inv = arith.divf %one, %theta : f64
    %w0 = arith.mulf %r0, %inv : f64
    %w1 = arith.mulf %r1, %inv : f64
    %w2 = arith.mulf %r2, %inv : f64
    // w x p
    %a12 = arith.mulf %w1, %p2 : f64
    %a21 = arith.mulf %w2, %p1 : f64
    %cr0 = arith.subf %a12, %a21 : f64
    %a20 = arith.mulf %w2, %p0 : f64
    %a02 = arith.mulf %w0, %p2 : f64
    %cr1 = arith.subf %a20, %a02 : f64
    %a01 = arith.mulf %w0, %p1 : f64
    %a10 = arith.mulf %w1, %p0 : f64
    %cr2 = arith.subf %a01, %a10 : f64
    // (w . p) (1 - cos theta)
    %d0 = arith.mulf %w0, %p0 : f64
    %d1 = arith.mulf %w1, %p1 : f64
    %d2 = arith.mulf %w2, %p2 : f64
    %d01 = arith.addf %d0, %d1 : f64
    %dot = arith.addf %d01, %d2 : f64
    %omc = arith.subf %one, %ct : f64
    %tmp = arith.mulf %dot, %omc : f64
    // p cos theta + (w x p) sin theta + w tmp
    %e0 = arith.mulf %p0, %ct : f64
    %g0 = arith.mulf %cr0, %st : f64
    %h0 = arith.mulf %w0, %tmp : f64
    %i0 = arith.addf %e0, %g0 : f64
    %v0 = arith.addf %i0, %h0 : f64
    %e1 = arith.mulf %p1, %ct : f64
    %g1 = arith.mulf %cr1, %st : f64
    %h1 = arith.mulf %w1, %tmp : f64
    %i1 = arith.addf %e1, %g1 : f64
    %v1 = arith.addf %i1, %h1 : f64
    %e2 = arith.mulf %p2, %ct : f64
    %g2 = arith.mulf %cr2, %st : f64
    %h2 = arith.mulf %w2, %tmp : f64
    %i2 = arith.addf %e2, %g2 : f64
    %v2 = arith.addf %i2, %h2 : f64
    scf.yield %v0, %v1, %v2 : f64, f64, f64
  } else {
    // p + r x p
    %a12 = arith.mulf %r1, %p2 : f64
    %a21 = arith.mulf %r2, %p1 : f64
    %cr0 = arith.subf %a12, %a21 : f64
    %a20 = arith.mulf %r2, %p0 : f64
    %a02 = arith.mulf %r0, %p2 : f64
    %cr1 = arith.subf %a20, %a02 : f64
    %a01 = arith.mulf %r0, %p1 : f64
    %a10 = arith.mulf %r1, %p0 : f64
    %cr2 = arith.subf %a01, %a10 : f64
    %v0 = arith.addf %p0, %cr0 : f64
    %v1 = arith.addf %p1, %cr1 : f64
    %v2 = arith.addf %p2, %cr2 : f64
    scf.yield %v0, %v1, %v2 : f64, f64, f64
  }
  // Perspective division, radial distortion, focal length, principal point.
  %px = arith.divf %q0, %q2 : f64
  %py = arith.divf %q1, %q2 : f64
  %pxx = arith.mulf %px, %px : f64
  %pyy = arith.mulf %py, %py : f64
  %rsq = arith.addf %pxx, %pyy : f64
  %t1 = arith.mulf %k1, %rsq : f64
  %rsq2 = arith.mulf %rsq, %rsq : f64
  %t2 = arith.mulf %k2, %rsq2 : f64
  %l1 = arith.addf %one, %t1 : f64
  %l = arith.addf %l1, %t2 : f64
  %dx = arith.mulf %px, %l : f64
  %dy = arith.mulf %py, %l : f64
  %fx1 = arith.mulf %dx, %f : f64
  %fy1 = arith.mulf %dy, %f : f64
  %projx = arith.addf %fx1, %u0 : f64
  %projy = arith.addf %fy1, %u1 : f64
  %ex = arith.subf %projx, %fx : f64
  %ey = arith.subf %projy, %fy : f64
  %errx = arith.mulf %w, %ex : f64
  %erry = arith.mulf %w, %ey : f64
  return %errx, %erry : f64, f64
}

// Observation i's camera, point, weight and feature.
func.func private @observation(%cams: tensor<?x11xf64>, %xs: tensor<?x3xf64>, %ws: tensor<?xf64>,
                               %obs: tensor<?x2xindex>, %feats: tensor<?x2xf64>, %i: index)
    -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %cam = tensor.extract %obs[%i, %c0] : tensor<?x2xindex>
  %pt = tensor.extract %obs[%i, %c1] : tensor<?x2xindex>
  %a0 = tensor.extract %cams[%cam, %c0] : tensor<?x11xf64>
  %a1 = tensor.extract %cams[%cam, %c1] : tensor<?x11xf64>
  %a2 = tensor.extract %cams[%cam, %c2] : tensor<?x11xf64>
  %a3 = tensor.extract %cams[%cam, %c3] : tensor<?x11xf64>
  %a4 = tensor.extract %cams[%cam, %c4] : tensor<?x11xf64>
  %a5 = tensor.extract %cams[%cam, %c5] : tensor<?x11xf64>
  %a6 = tensor.extract %cams[%cam, %c6] : tensor<?x11xf64>
  %a7 = tensor.extract %cams[%cam, %c7] : tensor<?x11xf64>
  %a8 = tensor.extract %cams[%cam, %c8] : tensor<?x11xf64>
  %a9 = tensor.extract %cams[%cam, %c9] : tensor<?x11xf64>
  %a10 = tensor.extract %cams[%cam, %c10] : tensor<?x11xf64>
  %x0 = tensor.extract %xs[%pt, %c0] : tensor<?x3xf64>
  %x1 = tensor.extract %xs[%pt, %c1] : tensor<?x3xf64>
  %x2 = tensor.extract %xs[%pt, %c2] : tensor<?x3xf64>
  %w = tensor.extract %ws[%i] : tensor<?xf64>
  %fx = tensor.extract %feats[%i, %c0] : tensor<?x2xf64>
  %fy = tensor.extract %feats[%i, %c1] : tensor<?x2xf64>
  return %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7, %a8, %a9, %a10, %x0, %x1, %x2, %w, %fx, %fy
      : f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64
}

// Every residual: the reprojection errors [p][2] and the weight errors [p].
func.func @objective(%cams: tensor<?x11xf64>, %xs: tensor<?x3xf64>, %ws: tensor<?xf64>,
                     %obs: tensor<?x2xindex>, %feats: tensor<?x2xf64>) -> (tensor<?x2xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %p = tensor.dim %ws, %c0 : tensor<?xf64>
  %re0 = tensor.empty(%p) : tensor<?x2xf64>
  %we0 = tensor.empty(%p) : tensor<?xf64>
  %re, %we = scf.for %i = %c0 to %p step %c1 iter_args(%re1 = %re0, %we1 = %we0) -> (tensor<?x2xf64>, tensor<?xf64>) {
    %a:17 = func.call @observation(%cams, %xs, %ws, %obs, %feats, %i)
        : (tensor<?x11xf64>, tensor<?x3xf64>, tensor<?xf64>, tensor<?x2xindex>, tensor<?x2xf64>, index)
        -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)
    %ex, %ey = func.call @reproj(%a#0, %a#1, %a#2, %a#3, %a#4, %a#5, %a#6, %a#7, %a#8, %a#9, %a#10, %a#11, %a#12, %a#13, %a#14, %a#15, %a#16)
        : (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64) -> (f64, f64)
    %ww = arith.mulf %a#14, %a#14 : f64
    %werr = arith.subf %one, %ww : f64
    %r1 = tensor.insert %ex into %re1[%i, %c0] : tensor<?x2xf64>
    %r2 = tensor.insert %ey into %r1[%i, %c1] : tensor<?x2xf64>
    %w2 = tensor.insert %werr into %we1[%i] : tensor<?xf64>
    scf.yield %r2, %w2 : tensor<?x2xf64>, tensor<?xf64>
  }
  return %re, %we : tensor<?x2xf64>, tensor<?xf64>
}

// The Jacobian's nonzeros: vals[i][0:15] and vals[i][15:30] are the rows
// of observation i's two reprojection errors (11 camera columns, 3 point
// columns, the weight column), wvals[i] = d(1 - w_i^2)/dw_i. cols holds the
// column of each of vals' entries (i32, as GradBench's own tools), for a Jacobian whose columns are the n
// cameras' 11 parameters, the m points' 3 coordinates, then the p weights.
func.func @jacobian(%cams: tensor<?x11xf64>, %xs: tensor<?x3xf64>, %ws: tensor<?xf64>,
                    %obs: tensor<?x2xindex>, %feats: tensor<?x2xf64>)
    -> (tensor<?x30xf64>, tensor<?x30xi32>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c11 = arith.constant 11 : index
  %c14 = arith.constant 14 : index
  %c15 = arith.constant 15 : index
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %mtwo = arith.constant -2.0 : f64
  %p = tensor.dim %ws, %c0 : tensor<?xf64>
  %n = tensor.dim %cams, %c0 : tensor<?x11xf64>
  %m = tensor.dim %xs, %c0 : tensor<?x3xf64>
  %camcols = arith.muli %n, %c11 : index
  %ptcols = arith.muli %m, %c3 : index
  %wcol0 = arith.addi %camcols, %ptcols : index
  %vals0 = tensor.empty(%p) : tensor<?x30xf64>
  %cols0 = tensor.empty(%p) : tensor<?x30xi32>
  %wv0 = tensor.empty(%p) : tensor<?xf64>
  %vals, %cols, %wv = scf.for %i = %c0 to %p step %c1 iter_args(%v = %vals0, %cl = %cols0, %wvv = %wv0)
      -> (tensor<?x30xf64>, tensor<?x30xi32>, tensor<?xf64>) {
    %a:17 = func.call @observation(%cams, %xs, %ws, %obs, %feats, %i)
        : (tensor<?x11xf64>, tensor<?x3xf64>, tensor<?xf64>, tensor<?x2xindex>, tensor<?x2xf64>, index)
        -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)
    %ex, %ey, %pb = ad.forward @reproj(%a#0, %a#1, %a#2, %a#3, %a#4, %a#5, %a#6, %a#7, %a#8, %a#9, %a#10, %a#11, %a#12, %a#13, %a#14, %a#15, %a#16) {wrt = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14>}
        : (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)
        -> (f64, f64, !ad.pullback<(f64, f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)>)
    %gx:15 = ad.pullback %pb(%one, %zero) : !ad.pullback<(f64, f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)>
    %gy:15 = ad.pullback %pb(%zero, %one) : !ad.pullback<(f64, f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)>
    %gxt = tensor.from_elements %gx#0, %gx#1, %gx#2, %gx#3, %gx#4, %gx#5, %gx#6, %gx#7, %gx#8, %gx#9, %gx#10, %gx#11, %gx#12, %gx#13, %gx#14,
                                %gy#0, %gy#1, %gy#2, %gy#3, %gy#4, %gy#5, %gy#6, %gy#7, %gy#8, %gy#9, %gy#10, %gy#11, %gy#12, %gy#13, %gy#14 : tensor<1x30xf64>
    %v1 = tensor.insert_slice %gxt into %v[%i, 0] [1, 30] [1, 1] : tensor<1x30xf64> into tensor<?x30xf64>
    // Columns: the camera's 11, the point's 3, the weight's.
    %cam = tensor.extract %obs[%i, %c0] : tensor<?x2xindex>
    %pt = tensor.extract %obs[%i, %c1] : tensor<?x2xindex>
    %camcol = arith.muli %cam, %c11 : index
    %pt3 = arith.muli %pt, %c3 : index
    %ptcol = arith.addi %camcols, %pt3 : index
    %wcol = arith.addi %wcol0, %i : index
    %cl1 = scf.for %k = %c0 to %c15 step %c1 iter_args(%row = %cl) -> tensor<?x30xi32> {
      %iscam = arith.cmpi ult, %k, %c11 : index
      %ispt = arith.cmpi ult, %k, %c14 : index
      %kc = arith.addi %camcol, %k : index
      %kp0 = arith.subi %k, %c11 : index
      %kp = arith.addi %ptcol, %kp0 : index
      %notw = arith.select %ispt, %kp, %wcol : index
      %coli = arith.select %iscam, %kc, %notw : index
      %col = arith.index_cast %coli : index to i32
      %k2 = arith.addi %k, %c15 : index
      %r1 = tensor.insert %col into %row[%i, %k] : tensor<?x30xi32>
      %r2 = tensor.insert %col into %r1[%i, %k2] : tensor<?x30xi32>
      scf.yield %r2 : tensor<?x30xi32>
    }
    %dw = arith.mulf %mtwo, %a#14 : f64
    %wv1 = tensor.insert %dw into %wvv[%i] : tensor<?xf64>
    scf.yield %v1, %cl1, %wv1 : tensor<?x30xf64>, tensor<?x30xi32>, tensor<?xf64>
  }
  return %vals, %cols, %wv : tensor<?x30xf64>, tensor<?x30xi32>, tensor<?xf64>
}
