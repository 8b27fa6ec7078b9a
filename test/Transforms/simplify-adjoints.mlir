// RUN: ad-opt %s --split-input-file --ad-simplify-adjoints | FileCheck %s

// The adjoint of trace(A B) with respect to A: a diagonal scatter of ds into
// zeros, read by a contraction. The contraction's j loop only reads zeros
// off the diagonal: it is eliminated, the scatter is fused, and the zero
// accumulator becomes an uninitialized tensor. What is left is ds * B^T.
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[S:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @trace_matmul_adjoint
// CHECK-SAME: (%[[DS:.*]]: tensor<f64>, %[[A:.*]]: tensor<30x30xf64>, %[[B:.*]]: tensor<30x30xf64>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<30x30xf64>
// CHECK-NOT: linalg.fill
// CHECK: %[[DA:.*]] = linalg.generic {indexing_maps = [#[[T]], #[[S]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[B]], %[[DS]] : tensor<30x30xf64>, tensor<f64>) outs(%[[E]] : tensor<30x30xf64>)
// CHECK-NEXT: ^bb0(%[[BIN:.*]]: f64, %[[DSIN:.*]]: f64, %{{.*}}: f64):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[DSIN]], %[[BIN]] : f64
// CHECK-NEXT: linalg.yield %[[P]] : f64
// CHECK-NOT: linalg.generic
// CHECK: return %[[DA]]
func.func @trace_matmul_adjoint(%ds: tensor<f64>, %a: tensor<30x30xf64>, %b: tensor<30x30xf64>) -> tensor<30x30xf64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<30x30xf64>
  %zeros = linalg.fill ins(%z : f64) outs(%e : tensor<30x30xf64>) -> tensor<30x30xf64>
  %dc = linalg.generic {indexing_maps = [affine_map<(i) -> ()>, affine_map<(i) -> (i, i)>], iterator_types = ["reduction"]} ins(%ds : tensor<f64>) outs(%zeros : tensor<30x30xf64>) {
  ^bb0(%s: f64, %out: f64):
    %r = arith.addf %out, %s : f64
    linalg.yield %r : f64
  } -> tensor<30x30xf64>
  // dA[i, k] = sum_j dC[i, j] B[k, j]; it also reads A, which it ignores.
  %da = linalg.generic {indexing_maps = [affine_map<(j, i, k) -> (i, k)>, affine_map<(j, i, k) -> (k, j)>, affine_map<(j, i, k) -> (i, j)>, affine_map<(j, i, k) -> (i, k)>], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a, %b, %dc : tensor<30x30xf64>, tensor<30x30xf64>, tensor<30x30xf64>) outs(%zeros : tensor<30x30xf64>) {
  ^bb0(%x: f64, %y: f64, %c: f64, %out: f64):
    %p = arith.mulf %c, %y : f64
    %r = arith.addf %out, %p : f64
    linalg.yield %r : f64
  } -> tensor<30x30xf64>
  return %da : tensor<30x30xf64>
}

// -----

// A scatter read on its own diagonal needs no elimination: it is fused, and
// the value it scatters (here computed from its input) is recomputed in the
// reader. Dynamic sizes work the same way.
// CHECK-LABEL: func.func @diagonal_read
// CHECK-SAME: (%[[V:.*]]: tensor<?xf64>, %[[M:.*]]: tensor<?x?xf64>)
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel"]}
// CHECK-SAME: ins(%[[M]], %[[V]] : tensor<?x?xf64>, tensor<?xf64>)
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @diagonal_read(%v: tensor<?xf64>, %m: tensor<?x?xf64>) -> tensor<?xf64> {
  %z = arith.constant 0.0 : f64
  %c0 = arith.constant 0 : index
  %n = tensor.dim %v, %c0 : tensor<?xf64>
  %e = tensor.empty(%n, %n) : tensor<?x?xf64>
  %zeros = linalg.fill ins(%z : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
  %d = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i, i)>], iterator_types = ["parallel"]} ins(%v : tensor<?xf64>) outs(%zeros : tensor<?x?xf64>) {
  ^bb0(%s: f64, %out: f64):
    %x = math.exp %s : f64
    linalg.yield %x : f64
  } -> tensor<?x?xf64>
  %ev = tensor.empty(%n) : tensor<?xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i, i)>, affine_map<(i) -> (i, i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%d, %m : tensor<?x?xf64>, tensor<?x?xf64>) outs(%ev : tensor<?xf64>) {
  ^bb0(%x: f64, %y: f64, %out: f64):
    %p = arith.mulf %x, %y : f64
    linalg.yield %p : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}

// -----

// Both indices of the diagonal are output dimensions of the reader: it
// writes every element, and those off the diagonal get the init plus a
// product with zero. Nothing can be eliminated, so nothing is fused.
// CHECK-LABEL: func.func @parallel_reader
// CHECK: %[[D:.*]] = linalg.generic
// CHECK: linalg.generic {{.*}} ins(%[[D]], %{{.*}} :
func.func @parallel_reader(%ds: tensor<f64>, %b: tensor<4x4xf64>, %acc: tensor<4x4xf64>) -> tensor<4x4xf64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x4xf64>
  %zeros = linalg.fill ins(%z : f64) outs(%e : tensor<4x4xf64>) -> tensor<4x4xf64>
  %d = linalg.generic {indexing_maps = [affine_map<(i) -> ()>, affine_map<(i) -> (i, i)>], iterator_types = ["parallel"]} ins(%ds : tensor<f64>) outs(%zeros : tensor<4x4xf64>) {
  ^bb0(%s: f64, %out: f64):
    linalg.yield %s : f64
  } -> tensor<4x4xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%d, %b : tensor<4x4xf64>, tensor<4x4xf64>) outs(%acc : tensor<4x4xf64>) {
  ^bb0(%x: f64, %y: f64, %out: f64):
    %p = arith.mulf %x, %y : f64
    %s = arith.addf %out, %p : f64
    linalg.yield %s : f64
  } -> tensor<4x4xf64>
  return %r : tensor<4x4xf64>
}

// -----

// A reduction over a term that does not vanish with the scattered tensor
// (dC + B) must keep every iteration: no fusion.
// CHECK-LABEL: func.func @sum_does_not_vanish
// CHECK: %[[D:.*]] = linalg.generic
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[D]], %{{.*}} :
func.func @sum_does_not_vanish(%ds: tensor<f64>, %b: tensor<4x4xf64>) -> tensor<4xf64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x4xf64>
  %zeros = linalg.fill ins(%z : f64) outs(%e : tensor<4x4xf64>) -> tensor<4x4xf64>
  %d = linalg.generic {indexing_maps = [affine_map<(i) -> ()>, affine_map<(i) -> (i, i)>], iterator_types = ["parallel"]} ins(%ds : tensor<f64>) outs(%zeros : tensor<4x4xf64>) {
  ^bb0(%s: f64, %out: f64):
    linalg.yield %s : f64
  } -> tensor<4x4xf64>
  %ev = tensor.empty() : tensor<4xf64>
  %zv = linalg.fill ins(%z : f64) outs(%ev : tensor<4xf64>) -> tensor<4xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%d, %b : tensor<4x4xf64>, tensor<4x4xf64>) outs(%zv : tensor<4xf64>) {
  ^bb0(%x: f64, %y: f64, %out: f64):
    %p = arith.addf %x, %y : f64
    %s = arith.addf %out, %p : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  return %r : tensor<4xf64>
}

// -----

// A scatter into a tensor that is not zero (an accumulated cotangent) is not
// fused, and a sum into a nonzero init keeps its addition.
// CHECK-LABEL: func.func @nonzero_init
// CHECK: %[[D:.*]] = linalg.generic
// CHECK: linalg.generic {{.*}} ins(%[[D]], %{{.*}} :
// CHECK: arith.addf
func.func @nonzero_init(%ds: tensor<f64>, %b: tensor<4x4xf64>, %acc: tensor<4x4xf64>) -> tensor<4x4xf64> {
  %d = linalg.generic {indexing_maps = [affine_map<(i) -> ()>, affine_map<(i) -> (i, i)>], iterator_types = ["parallel"]} ins(%ds : tensor<f64>) outs(%acc : tensor<4x4xf64>) {
  ^bb0(%s: f64, %out: f64):
    %r = arith.addf %out, %s : f64
    linalg.yield %r : f64
  } -> tensor<4x4xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(j, i, k) -> (i, j)>, affine_map<(j, i, k) -> (k, j)>, affine_map<(j, i, k) -> (i, k)>], iterator_types = ["reduction", "parallel", "parallel"]} ins(%d, %b : tensor<4x4xf64>, tensor<4x4xf64>) outs(%acc : tensor<4x4xf64>) {
  ^bb0(%x: f64, %y: f64, %out: f64):
    %p = arith.mulf %x, %y : f64
    %s = arith.addf %out, %p : f64
    linalg.yield %s : f64
  } -> tensor<4x4xf64>
  return %r : tensor<4x4xf64>
}

// -----

// A sum into zeros where each element is written once becomes a plain
// write into the fill's destination (the fill is then dead); with a
// reduction it stays a sum.
// CHECK-LABEL: func.func @sum_into_zeros
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x4xf64>
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<4x4xf64>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: math.sin
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4xf64>)
// CHECK: arith.addf
func.func @sum_into_zeros(%b: tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xf64>) {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x4xf64>
  %zeros = linalg.fill ins(%z : f64) outs(%e : tensor<4x4xf64>) -> tensor<4x4xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x4xf64>) outs(%zeros : tensor<4x4xf64>) {
  ^bb0(%y: f64, %out: f64):
    %p = math.sin %y : f64
    %s = arith.addf %out, %p : f64
    linalg.yield %s : f64
  } -> tensor<4x4xf64>
  %ev = tensor.empty() : tensor<4xf64>
  %zv = linalg.fill ins(%z : f64) outs(%ev : tensor<4xf64>) -> tensor<4xf64>
  %q = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%b : tensor<4x4xf64>) outs(%zv : tensor<4xf64>) {
  ^bb0(%y: f64, %out: f64):
    %s = arith.addf %out, %y : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  return %r, %q : tensor<4x4xf64>, tensor<4xf64>
}

// -----

// Two generics over the same loops (they read %x through the same
// permutation) merge into one with both outputs, once nothing between them
// uses the first. The loop is parallel in one and a reduction in the other:
// merged, it is a reduction. The parallel output's sum into zeros is then a
// plain write, the reduction keeps its addition.
// CHECK-LABEL: func.func @siblings
// CHECK-SAME: (%[[X:.*]]: tensor<8xf64>, %[[S:.*]]: tensor<f64>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8xf64>
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[X]], %[[S]] : tensor<8xf64>, tensor<f64>) outs(%[[E]], %{{.*}} : tensor<8xf64>, tensor<f64>)
// CHECK: math.exp
// CHECK: math.exp
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @siblings(%x: tensor<8xf64>, %s: tensor<f64>) -> (tensor<8xf64>, tensor<f64>) {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<8xf64>
  %zeros = linalg.fill ins(%z : f64) outs(%e : tensor<8xf64>) -> tensor<8xf64>
  %dx = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %s : tensor<8xf64>, tensor<f64>) outs(%zeros : tensor<8xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %d = arith.subf %a, %b : f64
    %p = math.exp %d : f64
    %r = arith.addf %out, %p : f64
    linalg.yield %r : f64
  } -> tensor<8xf64>
  %es = tensor.empty() : tensor<f64>
  %zs = linalg.fill ins(%z : f64) outs(%es : tensor<f64>) -> tensor<f64>
  %ds = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x, %s : tensor<8xf64>, tensor<f64>) outs(%zs : tensor<f64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %d = arith.subf %a, %b : f64
    %p = math.exp %d : f64
    %n = arith.negf %p : f64
    %r = arith.addf %out, %n : f64
    linalg.yield %r : f64
  } -> tensor<f64>
  return %dx, %ds : tensor<8xf64>, tensor<f64>
}

// -----

// The second generic reads the first's result: they stay apart. So do
// generics whose shared input is read through different maps.
// CHECK-LABEL: func.func @dependent_siblings
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[A]] :
// CHECK: linalg.generic
// CHECK: linalg.generic
func.func @dependent_siblings(%x: tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4x4xf64>) {
  %e = tensor.empty() : tensor<4x4xf64>
  %a = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x4xf64>) outs(%e : tensor<4x4xf64>) {
  ^bb0(%v: f64, %out: f64):
    %p = math.sin %v : f64
    linalg.yield %p : f64
  } -> tensor<4x4xf64>
  %b = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %a : tensor<4x4xf64>, tensor<4x4xf64>) outs(%e : tensor<4x4xf64>) {
  ^bb0(%v: f64, %w: f64, %out: f64):
    %p = arith.mulf %v, %w : f64
    linalg.yield %p : f64
  } -> tensor<4x4xf64>
  %c = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x4xf64>) outs(%e : tensor<4x4xf64>) {
  ^bb0(%v: f64, %out: f64):
    %p = math.cos %v : f64
    linalg.yield %p : f64
  } -> tensor<4x4xf64>
  %d = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x4xf64>) outs(%e : tensor<4x4xf64>) {
  ^bb0(%v: f64, %out: f64):
    %p = math.exp %v : f64
    linalg.yield %p : f64
  } -> tensor<4x4xf64>
  return %c, %d : tensor<4x4xf64>, tensor<4x4xf64>
}

// -----

// The cotangent of a slice, inserted into zeros and added to the whole
// value's, is added to that slice only (in either operand order).
// CHECK-LABEL: func.func @add_slice
// CHECK-SAME: (%[[ACC:.*]]: tensor<?x8xf64>, %[[D:.*]]: tensor<8xf64>, %[[I:.*]]: index)
// CHECK-NOT: linalg.fill
// CHECK: %[[PART:.*]] = tensor.extract_slice %[[ACC]][%[[I]], 0] [1, 8] [1, 1] : tensor<?x8xf64> to tensor<8xf64>
// CHECK: %[[SUM:.*]] = arith.addf %[[PART]], %[[D]] : tensor<8xf64>
// CHECK: %[[R:.*]] = tensor.insert_slice %[[SUM]] into %[[ACC]][%[[I]], 0] [1, 8] [1, 1]
// CHECK: return %[[R]]
func.func @add_slice(%acc: tensor<?x8xf64>, %d: tensor<8xf64>, %i: index) -> tensor<?x8xf64> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f64
  %n = tensor.dim %acc, %c0 : tensor<?x8xf64>
  %e = tensor.empty(%n) : tensor<?x8xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<?x8xf64>) -> tensor<?x8xf64>
  %ins = tensor.insert_slice %d into %z[%i, 0] [1, 8] [1, 1] : tensor<8xf64> into tensor<?x8xf64>
  %r = arith.addf %ins, %acc : tensor<?x8xf64>
  return %r : tensor<?x8xf64>
}

// -----

// Not into zeros: unchanged.
// CHECK-LABEL: func.func @add_slice_into_values
// CHECK: tensor.insert_slice
// CHECK: arith.addf %{{.*}}, %{{.*}} : tensor<4xf64>
func.func @add_slice_into_values(%acc: tensor<4xf64>, %base: tensor<4xf64>, %d: tensor<2xf64>) -> tensor<4xf64> {
  %ins = tensor.insert_slice %d into %base[1] [2] [1] : tensor<2xf64> into tensor<4xf64>
  %r = arith.addf %acc, %ins : tensor<4xf64>
  return %r : tensor<4xf64>
}

// -----

// The adjoint of row minima fused into the adjoint of the distances: a sum
// over (i, j, l) whose terms vanish unless dist[i, j] == mins[i]. The
// comparison runs once per (i, j); the loop over l only where it holds.
// CHECK-LABEL: func.func @guarded_by_equality
// CHECK:       scf.for %[[I:.*]] = %c0 to %{{.*}} step %c1 iter_args(
// CHECK:         scf.for %[[J:.*]] = %c0 to %{{.*}} step %c1 iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK-DAG:       %[[M:.*]] = tensor.extract %{{.*}}[%[[I]]] : tensor<?xf64>
// CHECK-DAG:       %[[D:.*]] = tensor.extract %{{.*}}[%[[I]], %[[J]]] : tensor<?x?xf64>
// CHECK:           %[[EQ:.*]] = arith.cmpf oeq, %[[D]], %[[M]]
// CHECK:           scf.if %[[EQ]]
// CHECK:             %[[ROW:.*]] = tensor.extract_slice %[[ACC]][%[[J]], 0] [1, %{{.*}}] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
// CHECK:             linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK-SAME:          outs(%[[ROW]] : tensor<?xf64>)
// CHECK:             tensor.insert_slice %{{.*}} into %[[ACC]][%[[J]], 0]
// CHECK:           } else {
// CHECK-NEXT:        scf.yield %[[ACC]]
#gpl = affine_map<(i, j, l) -> (i, l)>
#gcl = affine_map<(i, j, l) -> (j, l)>
#gi = affine_map<(i, j, l) -> (i)>
#gij = affine_map<(i, j, l) -> (i, j)>
func.func @guarded_by_equality(%p: tensor<?x?xf64>, %c: tensor<?x?xf64>, %share: tensor<?xf64>, %mins: tensor<?xf64>, %dist: tensor<?x?xf64>, %init: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %zero = arith.constant 0.0 : f64
  %r = linalg.generic {indexing_maps = [#gpl, #gcl, #gi, #gi, #gij, #gcl], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%p, %c, %share, %mins, %dist : tensor<?x?xf64>, tensor<?x?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?x?xf64>) outs(%init : tensor<?x?xf64>) {
  ^bb0(%pv: f64, %cv: f64, %s: f64, %m: f64, %dv: f64, %out: f64):
    %e = arith.cmpf oeq, %dv, %m : f64
    %sel = arith.select %e, %s, %zero : f64
    %diff = arith.subf %cv, %pv : f64
    %t = arith.mulf %sel, %diff : f64
    %o = arith.addf %out, %t : f64
    linalg.yield %o : f64
  } -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}

// -----

// A guard that may hold almost everywhere (a ReLU's x > 0) stays a dense
// loop nest.
// CHECK-LABEL: func.func @not_guarded_by_order
// CHECK-NOT:   scf.for
// CHECK:       linalg.generic
#gpl = affine_map<(i, j, l) -> (i, l)>
#gcl = affine_map<(i, j, l) -> (j, l)>
#gi = affine_map<(i, j, l) -> (i)>
#gij = affine_map<(i, j, l) -> (i, j)>
func.func @not_guarded_by_order(%p: tensor<?x?xf64>, %c: tensor<?x?xf64>, %share: tensor<?xf64>, %dist: tensor<?x?xf64>, %init: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %zero = arith.constant 0.0 : f64
  %r = linalg.generic {indexing_maps = [#gpl, #gcl, #gi, #gij, #gcl], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%p, %c, %share, %dist : tensor<?x?xf64>, tensor<?x?xf64>, tensor<?xf64>, tensor<?x?xf64>) outs(%init : tensor<?x?xf64>) {
  ^bb0(%pv: f64, %cv: f64, %s: f64, %dv: f64, %out: f64):
    %e = arith.cmpf ogt, %dv, %zero : f64
    %sel = arith.select %e, %s, %zero : f64
    %diff = arith.subf %cv, %pv : f64
    %t = arith.mulf %sel, %diff : f64
    %o = arith.addf %out, %t : f64
    linalg.yield %o : f64
  } -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}

// -----

// GMM's mean adjoint: sum over n and j of -(d[n,k,j] M[k,j,i]). Only d reads
// n, and the term is linear in it: d is summed over n first, and the sum
// over j reads that (O(n k d + k d^2), not O(n k d^2)). The sum s[k, j]
// has d's layout, its loops in d's order (j innermost, contiguous in d).
// CHECK-DAG: #[[NKJ:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[JK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @sum_factor_first
// CHECK-SAME: (%[[M:.*]]: tensor<?x?x?xf64>, %[[D:.*]]: tensor<?x?x?xf64>, %[[INIT:.*]]: tensor<?x?xf64>)
// CHECK: %[[NEG:.*]] = arith.constant -0.000000e+00 : f64
// CHECK: %[[Z:.*]] = linalg.fill ins(%[[NEG]] : f64)
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[NKJ]], #[[JK]]], iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[D]] : tensor<?x?x?xf64>) outs(%[[Z]] : tensor<?x?xf64>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: f64, %[[ACC:.*]]: f64):
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[ACC]], %[[V]] : f64
// CHECK-NEXT: linalg.yield %[[SUM]]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[M]], %[[S]] : tensor<?x?x?xf64>, tensor<?x?xf64>) outs(%[[INIT]] : tensor<?x?xf64>)
// CHECK-NEXT: ^bb0(%[[MV:.*]]: f64, %[[SV:.*]]: f64, %[[OUT:.*]]: f64):
// CHECK-NEXT: arith.mulf %[[SV]], %[[MV]] : f64
// CHECK-NEXT: arith.negf
// CHECK-NEXT: arith.addf %[[OUT]]
func.func @sum_factor_first(%m: tensor<?x?x?xf64>, %d: tensor<?x?x?xf64>, %init: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %r = linalg.generic {indexing_maps = [affine_map<(n, j, k, i) -> (k, j, i)>, affine_map<(n, j, k, i) -> (n, k, j)>, affine_map<(n, j, k, i) -> (k, i)>], iterator_types = ["reduction", "reduction", "parallel", "parallel"]} ins(%m, %d : tensor<?x?x?xf64>, tensor<?x?x?xf64>) outs(%init : tensor<?x?xf64>) {
  ^bb0(%mv: f64, %dv: f64, %out: f64):
    %p = arith.mulf %dv, %mv : f64
    %q = arith.negf %p : f64
    %s = arith.addf %out, %q : f64
    linalg.yield %s : f64
  } -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}

// -----

// Not linear in what n reads (d d M), or every loop read through what is
// summed (s would be as large as the sum): unchanged.
// CHECK-LABEL: func.func @sum_factor_first_not
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
func.func @sum_factor_first_not(%m: tensor<?x?x?xf64>, %d: tensor<?x?x?xf64>, %init: tensor<?x?xf64>, %a: tensor<?x?xf64>, %v: tensor<?xf64>) -> (tensor<?x?xf64>, tensor<?xf64>) {
  %r = linalg.generic {indexing_maps = [affine_map<(n, j, k, i) -> (k, j, i)>, affine_map<(n, j, k, i) -> (n, k, j)>, affine_map<(n, j, k, i) -> (k, i)>], iterator_types = ["reduction", "reduction", "parallel", "parallel"]} ins(%m, %d : tensor<?x?x?xf64>, tensor<?x?x?xf64>) outs(%init : tensor<?x?xf64>) {
  ^bb0(%mv: f64, %dv: f64, %out: f64):
    %p = arith.mulf %dv, %mv : f64
    %e = math.exp %p : f64
    %s = arith.addf %out, %e : f64
    linalg.yield %s : f64
  } -> tensor<?x?xf64>
  %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<?x?xf64>) outs(%v : tensor<?xf64>) {
  ^bb0(%x: f64, %out: f64):
    %s = arith.addf %out, %x : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>
  return %r, %t : tensor<?x?xf64>, tensor<?xf64>
}
