// GradBench eval "ht" (hand tracking): a skinned hand model (22 bones, each
// posed by Euler angles from theta, chained through its parents, blended
// into every vertex by skinning weights, then globally rotated and
// translated) against observed points; objective = the 3 residuals per
// point, jacobian = [3c][26] by forward mode, one ad.jvp per column of
// theta, in the complicated variant with 2 more columns: the derivatives
// with respect to each point's own barycentric coordinates us[i], two
// ad.jvp along all the points' first (second) coordinates at once, since
// each residual depends on its own point's coordinates only.
//
// Layouts (the tool converts GradBench's JSON): base_relatives and
// inverse_base_absolutes [22][4][4] (row-major matrices); parents [22]
// (-1: root); base_positions [V][4]; weights [V][22]; correspondences [c];
// points [c][3]; triangles [T][3]; us [c][2]; mirror = -1 when the model is
// mirrored, else 1.

// The pose parameters [25 columns][3], from theta (GradBench's
// to_pose_params): global rotation, scale 1, translation, then per finger
// three joints (the first with two angles) and a fixed one.
func.func private @pose(%theta: tensor<26xf64>) -> tensor<25x3xf64> {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %k0 = arith.constant 0 : index
  %k1 = arith.constant 1 : index
  %k2 = arith.constant 2 : index
  %k3 = arith.constant 3 : index
  %k4 = arith.constant 4 : index
  %k5 = arith.constant 5 : index
  %k6 = arith.constant 6 : index
  %k7 = arith.constant 7 : index
  %k8 = arith.constant 8 : index
  %k9 = arith.constant 9 : index
  %k10 = arith.constant 10 : index
  %k11 = arith.constant 11 : index
  %k12 = arith.constant 12 : index
  %k13 = arith.constant 13 : index
  %k14 = arith.constant 14 : index
  %k15 = arith.constant 15 : index
  %k16 = arith.constant 16 : index
  %k17 = arith.constant 17 : index
  %k18 = arith.constant 18 : index
  %k19 = arith.constant 19 : index
  %k20 = arith.constant 20 : index
  %k21 = arith.constant 21 : index
  %k22 = arith.constant 22 : index
  %k23 = arith.constant 23 : index
  %k24 = arith.constant 24 : index
  %k25 = arith.constant 25 : index
  %th0 = tensor.extract %theta[%k0] : tensor<26xf64>
  %th1 = tensor.extract %theta[%k1] : tensor<26xf64>
  %th2 = tensor.extract %theta[%k2] : tensor<26xf64>
  %th3 = tensor.extract %theta[%k3] : tensor<26xf64>
  %th4 = tensor.extract %theta[%k4] : tensor<26xf64>
  %th5 = tensor.extract %theta[%k5] : tensor<26xf64>
  %th6 = tensor.extract %theta[%k6] : tensor<26xf64>
  %th7 = tensor.extract %theta[%k7] : tensor<26xf64>
  %th8 = tensor.extract %theta[%k8] : tensor<26xf64>
  %th9 = tensor.extract %theta[%k9] : tensor<26xf64>
  %th10 = tensor.extract %theta[%k10] : tensor<26xf64>
  %th11 = tensor.extract %theta[%k11] : tensor<26xf64>
  %th12 = tensor.extract %theta[%k12] : tensor<26xf64>
  %th13 = tensor.extract %theta[%k13] : tensor<26xf64>
  %th14 = tensor.extract %theta[%k14] : tensor<26xf64>
  %th15 = tensor.extract %theta[%k15] : tensor<26xf64>
  %th16 = tensor.extract %theta[%k16] : tensor<26xf64>
  %th17 = tensor.extract %theta[%k17] : tensor<26xf64>
  %th18 = tensor.extract %theta[%k18] : tensor<26xf64>
  %th19 = tensor.extract %theta[%k19] : tensor<26xf64>
  %th20 = tensor.extract %theta[%k20] : tensor<26xf64>
  %th21 = tensor.extract %theta[%k21] : tensor<26xf64>
  %th22 = tensor.extract %theta[%k22] : tensor<26xf64>
  %th23 = tensor.extract %theta[%k23] : tensor<26xf64>
  %th24 = tensor.extract %theta[%k24] : tensor<26xf64>
  %th25 = tensor.extract %theta[%k25] : tensor<26xf64>
  %pose = tensor.from_elements %th0, %th1, %th2, %one, %one, %one, %th3, %th4, %th5, %zero, %zero, %zero, %zero, %zero, %zero, %th6, %th7, %zero, %th8, %zero, %zero, %th9, %zero, %zero, %zero, %zero, %zero, %th10, %th11, %zero, %th12, %zero, %zero, %th13, %zero, %zero, %zero, %zero, %zero, %th14, %th15, %zero, %th16, %zero, %zero, %th17, %zero, %zero, %zero, %zero, %zero, %th18, %th19, %zero, %th20, %zero, %zero, %th21, %zero, %zero, %zero, %zero, %zero, %th22, %th23, %zero, %th24, %zero, %zero, %th25, %zero, %zero, %zero, %zero, %zero : tensor<25x3xf64>
  return %pose : tensor<25x3xf64>
}

// The rotation of Euler angles (x, z, y) = (tx, tz, ty): Rz Ry Rx.
func.func private @euler(%tx: f64, %ty: f64, %tz: f64) -> tensor<4x4xf64> {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %cx = math.cos %tx : f64
  %sx = math.sin %tx : f64
  %cy = math.cos %ty : f64
  %sy = math.sin %ty : f64
  %cz = math.cos %tz : f64
  %sz = math.sin %tz : f64
  // A = Rz Ry
  %a00 = arith.mulf %cz, %cy : f64
  %a01 = arith.negf %sz : f64
  %a02 = arith.mulf %cz, %sy : f64
  %a10 = arith.mulf %sz, %cy : f64
  %a12 = arith.mulf %sz, %sy : f64
  %a20 = arith.negf %sy : f64
  // R = A Rx: column 1 = A1 cx + A2 sx, column 2 = A2 cx - A1 sx
  %p01 = arith.mulf %a01, %cx : f64
  %q01 = arith.mulf %a02, %sx : f64
  %r01 = arith.addf %p01, %q01 : f64
  %p02 = arith.mulf %a02, %cx : f64
  %q02 = arith.mulf %a01, %sx : f64
  %r02 = arith.subf %p02, %q02 : f64
  %p11 = arith.mulf %cz, %cx : f64
  %q11 = arith.mulf %a12, %sx : f64
  %r11 = arith.addf %p11, %q11 : f64
  %p12 = arith.mulf %a12, %cx : f64
  %q12 = arith.mulf %cz, %sx : f64
  %r12 = arith.subf %p12, %q12 : f64
  %r21 = arith.mulf %cy, %sx : f64
  %r22 = arith.mulf %cy, %cx : f64
  %m = tensor.from_elements %a00, %r01, %r02, %zero,
                            %a10, %r11, %r12, %zero,
                            %a20, %r21, %r22, %zero,
                            %zero, %zero, %zero, %one : tensor<4x4xf64>
  return %m : tensor<4x4xf64>
}

func.func private @matmul4(%a: tensor<4x4xf64>, %b: tensor<4x4xf64>) -> tensor<4x4xf64> {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x4xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<4x4xf64>) -> tensor<4x4xf64>
  %p = linalg.matmul ins(%a, %b : tensor<4x4xf64>, tensor<4x4xf64>) outs(%z : tensor<4x4xf64>) -> tensor<4x4xf64>
  return %p : tensor<4x4xf64>
}

// The rotation of angle-axis (x, y, z), the identity below norm 1e-4.
func.func private @angle_axis(%x: f64, %y: f64, %z: f64) -> tensor<3x3xf64> {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %small = arith.constant 1.0e-4 : f64
  %xx = arith.mulf %x, %x : f64
  %yy = arith.mulf %y, %y : f64
  %zz = arith.mulf %z, %z : f64
  %s1 = arith.addf %xx, %yy : f64
  %sq = arith.addf %s1, %zz : f64
  %norm = math.sqrt %sq : f64
  %tiny = arith.cmpf olt, %norm, %small : f64
  %r = scf.if %tiny -> tensor<3x3xf64> {
    %i = tensor.from_elements %one, %zero, %zero, %zero, %one, %zero, %zero, %zero, %one : tensor<3x3xf64>
    scf.yield %i : tensor<3x3xf64>
  } else {
    %u = arith.divf %x, %norm : f64
    %v = arith.divf %y, %norm : f64
    %w = arith.divf %z, %norm : f64
    %s = math.sin %norm : f64
    %c = math.cos %norm : f64
    %omc = arith.subf %one, %c : f64
    %uu = arith.mulf %u, %u : f64
    %vv = arith.mulf %v, %v : f64
    %ww = arith.mulf %w, %w : f64
    %uv = arith.mulf %u, %v : f64
    %uw = arith.mulf %u, %w : f64
    %vw = arith.mulf %v, %w : f64
    %uvc = arith.mulf %uv, %omc : f64
    %uwc = arith.mulf %uw, %omc : f64
    %vwc = arith.mulf %vw, %omc : f64
    %us_ = arith.mulf %u, %s : f64
    %vs = arith.mulf %v, %s : f64
    %ws = arith.mulf %w, %s : f64
    %muu = arith.subf %one, %uu : f64
    %mvv = arith.subf %one, %vv : f64
    %mww = arith.subf %one, %ww : f64
    %d0 = arith.mulf %muu, %c : f64
    %d1 = arith.mulf %mvv, %c : f64
    %d2 = arith.mulf %mww, %c : f64
    %r00 = arith.addf %uu, %d0 : f64
    %r01 = arith.subf %uvc, %ws : f64
    %r02 = arith.addf %uwc, %vs : f64
    %r10 = arith.addf %uvc, %ws : f64
    %r11 = arith.addf %vv, %d1 : f64
    %r12 = arith.subf %vwc, %us_ : f64
    %r20 = arith.subf %uwc, %vs : f64
    %r21 = arith.addf %vwc, %us_ : f64
    %r22 = arith.addf %ww, %d2 : f64
    %m = tensor.from_elements %r00, %r01, %r02, %r10, %r11, %r12, %r20, %r21, %r22 : tensor<3x3xf64>
    scf.yield %m : tensor<3x3xf64>
  }
  return %r : tensor<3x3xf64>
}

// The posed vertices [V][3].
func.func private @vertices(%theta: tensor<26xf64>, %base_rel: tensor<22x4x4xf64>, %inv_base_abs: tensor<22x4x4xf64>,
                            %parents: tensor<22xi64>, %base_pos: tensor<?x4xf64>, %weights: tensor<?x22xf64>,
                            %mirror: f64) -> tensor<?x3xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c22 = arith.constant 22 : index
  %zero = arith.constant 0.0 : f64
  %zi = arith.constant 0 : i64
  %pose = func.call @pose(%theta) : (tensor<26xf64>) -> tensor<25x3xf64>
  // Bone b: relative = base_relative_b [R_b 0; 0 1], absolute = the
  // parent's absolute times it, transform = absolute inverse_base_absolute_b.
  %e22 = tensor.empty() : tensor<22x4x4xf64>
  %abs, %transforms = scf.for %b = %c0 to %c22 step %c1 iter_args(%ab = %e22, %tf = %e22) -> (tensor<22x4x4xf64>, tensor<22x4x4xf64>) {
    %col = arith.addi %b, %c3 : index
    %tx = tensor.extract %pose[%col, %c0] : tensor<25x3xf64>
    %tz = tensor.extract %pose[%col, %c1] : tensor<25x3xf64>
    %ty = tensor.extract %pose[%col, %c2] : tensor<25x3xf64>
    %rot = func.call @euler(%tx, %ty, %tz) : (f64, f64, f64) -> tensor<4x4xf64>
    %base = tensor.extract_slice %base_rel[%b, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<22x4x4xf64> to tensor<4x4xf64>
    %rel = func.call @matmul4(%base, %rot) : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
    %parent = tensor.extract %parents[%b] : tensor<22xi64>
    %root = arith.cmpi slt, %parent, %zi : i64
    %absb = scf.if %root -> tensor<4x4xf64> {
      scf.yield %rel : tensor<4x4xf64>
    } else {
      %pi = arith.index_cast %parent : i64 to index
      %pa = tensor.extract_slice %ab[%pi, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<22x4x4xf64> to tensor<4x4xf64>
      %m = func.call @matmul4(%pa, %rel) : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
      scf.yield %m : tensor<4x4xf64>
    }
    %inv = tensor.extract_slice %inv_base_abs[%b, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<22x4x4xf64> to tensor<4x4xf64>
    %t = func.call @matmul4(%absb, %inv) : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
    %ab1 = tensor.insert_slice %absb into %ab[%b, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<4x4xf64> into tensor<22x4x4xf64>
    %tf1 = tensor.insert_slice %t into %tf[%b, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<4x4xf64> into tensor<22x4x4xf64>
    scf.yield %ab1, %tf1 : tensor<22x4x4xf64>, tensor<22x4x4xf64>
  }
  // Skinning: position[v][j] = sum over bones b and k of
  // weights[v][b] transforms[b][j][k] base_positions[v][k], for j < 3: the
  // blended transforms M[v] = sum over b of weights[v][b] transforms[b]
  // ([V][22] x [22][12], a matrix product), each applied to its vertex.
  %nv = tensor.dim %base_pos, %c0 : tensor<?x4xf64>
  %t3 = tensor.extract_slice %transforms[0, 0, 0] [22, 3, 4] [1, 1, 1] : tensor<22x4x4xf64> to tensor<22x3x4xf64>
  %t12 = tensor.collapse_shape %t3 [[0], [1, 2]] : tensor<22x3x4xf64> into tensor<22x12xf64>
  %me = tensor.empty(%nv) : tensor<?x12xf64>
  %mz = linalg.fill ins(%zero : f64) outs(%me : tensor<?x12xf64>) -> tensor<?x12xf64>
  %blend = linalg.matmul ins(%weights, %t12 : tensor<?x22xf64>, tensor<22x12xf64>) outs(%mz : tensor<?x12xf64>) -> tensor<?x12xf64>
  %blend3 = tensor.expand_shape %blend [[0], [1, 2]] output_shape [%nv, 3, 4] : tensor<?x12xf64> into tensor<?x3x4xf64>
  %pe = tensor.empty(%nv) : tensor<?x3xf64>
  %pz = linalg.fill ins(%zero : f64) outs(%pe : tensor<?x3xf64>) -> tensor<?x3xf64>
  %skinned = linalg.generic {indexing_maps = [affine_map<(v, j, k) -> (v, j, k)>, affine_map<(v, j, k) -> (v, k)>, affine_map<(v, j, k) -> (v, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%blend3, %base_pos : tensor<?x3x4xf64>, tensor<?x4xf64>) outs(%pz : tensor<?x3xf64>) {
  ^bb0(%m: f64, %p: f64, %acc: f64):
    %mp = arith.mulf %m, %p : f64
    %s = arith.addf %acc, %mp : f64
    linalg.yield %s : f64
  } -> tensor<?x3xf64>
  // Mirroring (x negated), then the global rotation and translation.
  %gx = tensor.extract %pose[%c0, %c0] : tensor<25x3xf64>
  %gy = tensor.extract %pose[%c0, %c1] : tensor<25x3xf64>
  %gz = tensor.extract %pose[%c0, %c2] : tensor<25x3xf64>
  %rg = func.call @angle_axis(%gx, %gy, %gz) : (f64, f64, f64) -> tensor<3x3xf64>
  %trans = tensor.extract_slice %pose[2, 0] [1, 3] [1, 1] : tensor<25x3xf64> to tensor<3xf64>
  %te = tensor.empty(%nv) : tensor<?x3xf64>
  %tb = linalg.generic {indexing_maps = [affine_map<(v, i) -> (i)>, affine_map<(v, i) -> (v, i)>], iterator_types = ["parallel", "parallel"]}
      ins(%trans : tensor<3xf64>) outs(%te : tensor<?x3xf64>) {
  ^bb0(%t: f64, %o: f64):
    linalg.yield %t : f64
  } -> tensor<?x3xf64>
  %posed = linalg.generic {indexing_maps = [affine_map<(v, i, j) -> (v, j)>, affine_map<(v, i, j) -> (i, j)>, affine_map<(v, i, j) -> (v, i)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%skinned, %rg : tensor<?x3xf64>, tensor<3x3xf64>) outs(%tb : tensor<?x3xf64>) {
  ^bb0(%p: f64, %r: f64, %acc: f64):
    %j = linalg.index 2 : index
    %first = arith.cmpi eq, %j, %c0 : index
    %mp = arith.mulf %p, %mirror : f64
    %q = arith.select %first, %mp, %p : f64
    %rq = arith.mulf %r, %q : f64
    %s = arith.addf %acc, %rq : f64
    linalg.yield %s : f64
  } -> tensor<?x3xf64>
  return %posed : tensor<?x3xf64>
}

// The rows idx of the model's data (never differentiated).
func.func private @rows22(%src: tensor<?x22xf64>, %idx: tensor<?xindex>) -> tensor<?x22xf64> {
  %c0 = arith.constant 0 : index
  %r = tensor.dim %idx, %c0 : tensor<?xindex>
  %e = tensor.empty(%r) : tensor<?x22xf64>
  %g = linalg.generic {indexing_maps = [affine_map<(r, b) -> (r)>, affine_map<(r, b) -> (r, b)>], iterator_types = ["parallel", "parallel"]}
      ins(%idx : tensor<?xindex>) outs(%e : tensor<?x22xf64>) {
  ^bb0(%v: index, %o: f64):
    %b = linalg.index 1 : index
    %x = tensor.extract %src[%v, %b] : tensor<?x22xf64>
    linalg.yield %x : f64
  } -> tensor<?x22xf64>
  return %g : tensor<?x22xf64>
}

func.func private @rows4(%src: tensor<?x4xf64>, %idx: tensor<?xindex>) -> tensor<?x4xf64> {
  %c0 = arith.constant 0 : index
  %r = tensor.dim %idx, %c0 : tensor<?xindex>
  %e = tensor.empty(%r) : tensor<?x4xf64>
  %g = linalg.generic {indexing_maps = [affine_map<(r, b) -> (r)>, affine_map<(r, b) -> (r, b)>], iterator_types = ["parallel", "parallel"]}
      ins(%idx : tensor<?xindex>) outs(%e : tensor<?x4xf64>) {
  ^bb0(%v: index, %o: f64):
    %b = linalg.index 1 : index
    %x = tensor.extract %src[%v, %b] : tensor<?x4xf64>
    linalg.yield %x : f64
  } -> tensor<?x4xf64>
  return %g : tensor<?x4xf64>
}

// The posed positions of the vertices idx[r], and the row of each r in
// them. Fewer than half the model's vertices are posed alone (their weights
// and base positions gathered first, row r: the Jacobian's 26-28 forward
// passes then skin 3c vertices, not all V; gathering costs about as much as
// skinning a row); otherwise every vertex is posed (row idx[r]).
func.func private @positions(%theta: tensor<26xf64>, %base_rel: tensor<22x4x4xf64>, %inv_base_abs: tensor<22x4x4xf64>,
                             %parents: tensor<22xi64>, %base_pos: tensor<?x4xf64>, %weights: tensor<?x22xf64>,
                             %mirror: f64, %idx: tensor<?xindex>) -> (tensor<?x3xf64>, tensor<?xindex>) {
  %c0 = arith.constant 0 : index
  %nv = tensor.dim %base_pos, %c0 : tensor<?x4xf64>
  %r = tensor.dim %idx, %c0 : tensor<?xindex>
  %c2 = arith.constant 2 : index
  %r2 = arith.muli %r, %c2 : index
  %few = arith.cmpi ult, %r2, %nv : index
  %q, %rows = scf.if %few -> (tensor<?x3xf64>, tensor<?xindex>) {
    %w = func.call @rows22(%weights, %idx) : (tensor<?x22xf64>, tensor<?xindex>) -> tensor<?x22xf64>
    %p = func.call @rows4(%base_pos, %idx) : (tensor<?x4xf64>, tensor<?xindex>) -> tensor<?x4xf64>
    %v = func.call @vertices(%theta, %base_rel, %inv_base_abs, %parents, %p, %w, %mirror)
        : (tensor<26xf64>, tensor<22x4x4xf64>, tensor<22x4x4xf64>, tensor<22xi64>, tensor<?x4xf64>, tensor<?x22xf64>, f64) -> tensor<?x3xf64>
    %e = tensor.empty(%r) : tensor<?xindex>
    %iota = linalg.generic {indexing_maps = [affine_map<(r) -> (r)>], iterator_types = ["parallel"]} outs(%e : tensor<?xindex>) {
    ^bb0(%o: index):
      %i = linalg.index 0 : index
      linalg.yield %i : index
    } -> tensor<?xindex>
    scf.yield %v, %iota : tensor<?x3xf64>, tensor<?xindex>
  } else {
    %all = func.call @vertices(%theta, %base_rel, %inv_base_abs, %parents, %base_pos, %weights, %mirror)
        : (tensor<26xf64>, tensor<22x4x4xf64>, tensor<22x4x4xf64>, tensor<22xi64>, tensor<?x4xf64>, tensor<?x22xf64>, f64) -> tensor<?x3xf64>
    scf.yield %all, %idx : tensor<?x3xf64>, tensor<?xindex>
  }
  return %q, %rows : tensor<?x3xf64>, tensor<?xindex>
}

// Simple variant: correspondences index vertices.
func.func @objective_simple(%theta: tensor<26xf64>, %base_rel: tensor<22x4x4xf64>, %inv_base_abs: tensor<22x4x4xf64>,
                            %parents: tensor<22xi64>, %base_pos: tensor<?x4xf64>, %weights: tensor<?x22xf64>,
                            %mirror: f64, %corr: tensor<?xindex>, %points: tensor<?x3xf64>) -> tensor<?x3xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %pos, %rows = func.call @positions(%theta, %base_rel, %inv_base_abs, %parents, %base_pos, %weights, %mirror, %corr)
      : (tensor<26xf64>, tensor<22x4x4xf64>, tensor<22x4x4xf64>, tensor<22xi64>, tensor<?x4xf64>, tensor<?x22xf64>, f64, tensor<?xindex>) -> (tensor<?x3xf64>, tensor<?xindex>)
  %c = tensor.dim %points, %c0 : tensor<?x3xf64>
  %e = tensor.empty(%c) : tensor<?x3xf64>
  %err = scf.for %i = %c0 to %c step %c1 iter_args(%acc = %e) -> tensor<?x3xf64> {
    %v = tensor.extract %rows[%i] : tensor<?xindex>
    %r = scf.for %j = %c0 to %c3 step %c1 iter_args(%a = %acc) -> tensor<?x3xf64> {
      %p = tensor.extract %points[%i, %j] : tensor<?x3xf64>
      %q = tensor.extract %pos[%v, %j] : tensor<?x3xf64>
      %d = arith.subf %p, %q : f64
      %a1 = tensor.insert %d into %a[%i, %j] : tensor<?x3xf64>
      scf.yield %a1 : tensor<?x3xf64>
    }
    scf.yield %r : tensor<?x3xf64>
  }
  return %err : tensor<?x3xf64>
}

// Complicated variant: correspondences index triangles, and each point is
// the barycentric combination us[i] of its triangle's vertices.
func.func @objective_complicated(%theta: tensor<26xf64>, %us: tensor<?x2xf64>, %base_rel: tensor<22x4x4xf64>,
                                 %inv_base_abs: tensor<22x4x4xf64>, %parents: tensor<22xi64>, %base_pos: tensor<?x4xf64>,
                                 %weights: tensor<?x22xf64>, %mirror: f64, %corr: tensor<?xindex>,
                                 %points: tensor<?x3xf64>, %triangles: tensor<?x3xindex>) -> tensor<?x3xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1.0 : f64
  %c = tensor.dim %points, %c0 : tensor<?x3xf64>
  // Vertex k of point i's triangle, at 3i + k.
  %ie = tensor.empty(%c) : tensor<?x3xindex>
  %tri = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%corr : tensor<?xindex>) outs(%ie : tensor<?x3xindex>) {
  ^bb0(%t: index, %o: index):
    %k = linalg.index 1 : index
    %v = tensor.extract %triangles[%t, %k] : tensor<?x3xindex>
    linalg.yield %v : index
  } -> tensor<?x3xindex>
  %idx = tensor.collapse_shape %tri [[0, 1]] : tensor<?x3xindex> into tensor<?xindex>
  %pos, %rows = func.call @positions(%theta, %base_rel, %inv_base_abs, %parents, %base_pos, %weights, %mirror, %idx)
      : (tensor<26xf64>, tensor<22x4x4xf64>, tensor<22x4x4xf64>, tensor<22xi64>, tensor<?x4xf64>, tensor<?x22xf64>, f64, tensor<?xindex>) -> (tensor<?x3xf64>, tensor<?xindex>)
  %e = tensor.empty(%c) : tensor<?x3xf64>
  %err = scf.for %i = %c0 to %c step %c1 iter_args(%acc = %e) -> tensor<?x3xf64> {
    %i3 = arith.muli %i, %c3 : index
    %i31 = arith.addi %i3, %c1 : index
    %i32 = arith.addi %i3, %c2 : index
    %v0 = tensor.extract %rows[%i3] : tensor<?xindex>
    %v1 = tensor.extract %rows[%i31] : tensor<?xindex>
    %v2 = tensor.extract %rows[%i32] : tensor<?xindex>
    %u0 = tensor.extract %us[%i, %c0] : tensor<?x2xf64>
    %u1 = tensor.extract %us[%i, %c1] : tensor<?x2xf64>
    %u01 = arith.addf %u0, %u1 : f64
    %u2 = arith.subf %one, %u01 : f64
    %r = scf.for %j = %c0 to %c3 step %c1 iter_args(%a = %acc) -> tensor<?x3xf64> {
      %p = tensor.extract %points[%i, %j] : tensor<?x3xf64>
      %q0 = tensor.extract %pos[%v0, %j] : tensor<?x3xf64>
      %q1 = tensor.extract %pos[%v1, %j] : tensor<?x3xf64>
      %q2 = tensor.extract %pos[%v2, %j] : tensor<?x3xf64>
      %w0 = arith.mulf %u0, %q0 : f64
      %w1 = arith.mulf %u1, %q1 : f64
      %w2 = arith.mulf %u2, %q2 : f64
      %s01 = arith.addf %w0, %w1 : f64
      %h = arith.addf %s01, %w2 : f64
      %d = arith.subf %p, %h : f64
      %a1 = tensor.insert %d into %a[%i, %j] : tensor<?x3xf64>
      scf.yield %a1 : tensor<?x3xf64>
    }
    scf.yield %r : tensor<?x3xf64>
  }
  return %err : tensor<?x3xf64>
}

// The unit vector along theta's coordinate k.
func.func private @unit(%k: index) -> tensor<26xf64> {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %e = tensor.empty() : tensor<26xf64>
  %u = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%e : tensor<26xf64>) {
  ^bb0(%o: f64):
    %i = linalg.index 0 : index
    %hit = arith.cmpi eq, %i, %k : index
    %v = arith.select %hit, %one, %zero : f64
    linalg.yield %v : f64
  } -> tensor<26xf64>
  return %u : tensor<26xf64>
}

// [c][3][26]: column k is the derivative along theta's coordinate k.
func.func @jacobian_simple(%theta: tensor<26xf64>, %base_rel: tensor<22x4x4xf64>, %inv_base_abs: tensor<22x4x4xf64>,
                           %parents: tensor<22xi64>, %base_pos: tensor<?x4xf64>, %weights: tensor<?x22xf64>,
                           %mirror: f64, %corr: tensor<?xindex>, %points: tensor<?x3xf64>) -> tensor<?x3x26xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c26 = arith.constant 26 : index
  %c = tensor.dim %points, %c0 : tensor<?x3xf64>
  %j0 = tensor.empty(%c) : tensor<?x3x26xf64>
  %jac = scf.for %k = %c0 to %c26 step %c1 iter_args(%jk = %j0) -> tensor<?x3x26xf64> {
    %dir = func.call @unit(%k) : (index) -> tensor<26xf64>
    %r, %col = ad.jvp @objective_simple(%theta, %base_rel, %inv_base_abs, %parents, %base_pos, %weights, %mirror, %corr, %points) tangents(%dir) {wrt = array<i64: 0>}
        : (tensor<26xf64>, tensor<22x4x4xf64>, tensor<22x4x4xf64>, tensor<22xi64>, tensor<?x4xf64>, tensor<?x22xf64>, f64, tensor<?xindex>, tensor<?x3xf64>) -> (tensor<?x3xf64>, tensor<?x3xf64>)
    %j1 = tensor.insert_slice %col into %jk[0, 0, %k] [%c, 3, 1] [1, 1, 1] : tensor<?x3xf64> into tensor<?x3x26xf64>
    scf.yield %j1 : tensor<?x3x26xf64>
  }
  return %jac : tensor<?x3x26xf64>
}

// [c][3][28]: columns 0 and 1 are the derivatives along every point's
// first and second barycentric coordinate (each residual depends on its
// own point's only), columns 2.. along theta's coordinates.
func.func @jacobian_complicated(%theta: tensor<26xf64>, %us: tensor<?x2xf64>, %base_rel: tensor<22x4x4xf64>,
                                %inv_base_abs: tensor<22x4x4xf64>, %parents: tensor<22xi64>, %base_pos: tensor<?x4xf64>,
                                %weights: tensor<?x22xf64>, %mirror: f64, %corr: tensor<?xindex>,
                                %points: tensor<?x3xf64>, %triangles: tensor<?x3xindex>) -> tensor<?x3x28xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c28 = arith.constant 28 : index
  %c26 = arith.constant 26 : index
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %c = tensor.dim %points, %c0 : tensor<?x3xf64>
  %j0 = tensor.empty(%c) : tensor<?x3x28xf64>
  %ue = tensor.empty(%c) : tensor<?x2xf64>
  %jac = scf.for %k = %c0 to %c28 step %c1 iter_args(%jk = %j0) -> tensor<?x3x28xf64> {
    %isu = arith.cmpi ult, %k, %c2 : index
    %kt = arith.subi %k, %c2 : index
    %kth = arith.select %isu, %c26, %kt : index
    %dtheta = func.call @unit(%kth) : (index) -> tensor<26xf64>
    %dus = linalg.generic {indexing_maps = [affine_map<(i, l) -> (i, l)>], iterator_types = ["parallel", "parallel"]} outs(%ue : tensor<?x2xf64>) {
    ^bb0(%o: f64):
      %l = linalg.index 1 : index
      %hit = arith.cmpi eq, %l, %k : index
      %v = arith.select %hit, %one, %zero : f64
      linalg.yield %v : f64
    } -> tensor<?x2xf64>
    %r, %col = ad.jvp @objective_complicated(%theta, %us, %base_rel, %inv_base_abs, %parents, %base_pos, %weights, %mirror, %corr, %points, %triangles) tangents(%dtheta, %dus) {wrt = array<i64: 0, 1>}
        : (tensor<26xf64>, tensor<?x2xf64>, tensor<22x4x4xf64>, tensor<22x4x4xf64>, tensor<22xi64>, tensor<?x4xf64>, tensor<?x22xf64>, f64, tensor<?xindex>, tensor<?x3xf64>, tensor<?x3xindex>) -> (tensor<?x3xf64>, tensor<?x3xf64>)
    %j1 = tensor.insert_slice %col into %jk[0, 0, %k] [%c, 3, 1] [1, 1, 1] : tensor<?x3xf64> into tensor<?x3x28xf64>
    scf.yield %j1 : tensor<?x3x28xf64>
  }
  return %jac : tensor<?x3x28xf64>
}
