// RUN: ad-opt %s --split-input-file --ad-fuse-elementwise | FileCheck %s

#id = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>

// A chain of elementwise ops read once: one generic, one pass.
// CHECK-LABEL: func.func @chain
// CHECK:       linalg.generic
// CHECK:         math.exp
// CHECK:         arith.mulf
// CHECK:         arith.addf
// CHECK-NOT:   linalg.generic
func.func @chain(%x: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = math.exp %v : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a, %x : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %w: f64, %o: f64):
    %r = arith.mulf %v, %w : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = arith.addf %v, %v : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  return %c : tensor<?xf64>
}

// -----

#id = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
// An elementwise op feeding a reduction over all its elements is computed
// in the reduction's loop.
// CHECK-LABEL: func.func @into_reduction
// CHECK:       linalg.generic
// CHECK-SAME:    iterator_types = ["parallel", "reduction"]
// CHECK:         math.exp
// CHECK:         arith.addf
// CHECK-NOT:   linalg.generic
func.func @into_reduction(%x: tensor<4x?xf64>, %acc: tensor<4xf64>) -> tensor<4xf64> {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c1 : tensor<4x?xf64>
  %e = tensor.empty(%n) : tensor<4x?xf64>
  %a = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x?xf64>) outs(%e : tensor<4x?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = math.exp %v : f64
    linalg.yield %r : f64
  } -> tensor<4x?xf64>
  %s = linalg.generic {indexing_maps = [#id2, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x?xf64>) outs(%acc : tensor<4xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = arith.addf %o, %v : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  return %s : tensor<4xf64>
}

// -----

#id = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>

// An op read by two consumers is computed once, in one generic with both.
// CHECK-LABEL: func.func @shared
// CHECK:       %[[R:.*]]:2 = linalg.generic
// CHECK-COUNT-1: math.exp
// CHECK-NOT:   math.exp
// CHECK:       linalg.yield
// CHECK-NOT:   linalg.generic
// CHECK:       return %[[R]]#0, %[[R]]#1
func.func @shared(%x: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = math.exp %v : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%p : tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = arith.addf %v, %v : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%p : tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = arith.mulf %v, %v : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  return %a, %b : tensor<?xf64>, tensor<?xf64>
}
// -----

#id = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>

// A producer also read before its consumer stays. The consumer computes it
// again only if that is cheap (x * y) and reads nothing new: the first
// consumer reads x and y anyway, the second would have to read y for it,
// and exp is never computed twice.
// CHECK-LABEL: func.func @read_before
// CHECK:       %[[P:.*]] = linalg.generic
// CHECK-SAME:    ins(%[[X:.*]], %[[Y:.*]] : tensor<?xf64>, tensor<?xf64>)
// CHECK:       %[[Q:.*]] = linalg.generic
// CHECK:         math.exp
// CHECK:       tensor.extract %[[P]]
// CHECK:       tensor.extract %[[Q]]
// CHECK:       linalg.generic
// CHECK-SAME:    ins(%[[X]], %[[Y]] : tensor<?xf64>, tensor<?xf64>)
// CHECK:         arith.mulf
// CHECK:         arith.subf
// CHECK:       linalg.generic
// CHECK-SAME:    ins(%[[P]], %[[X]] : tensor<?xf64>, tensor<?xf64>)
// CHECK-NOT:     arith.mulf
// CHECK:         arith.divf
// CHECK:       linalg.generic
// CHECK-SAME:    ins(%[[Q]] : tensor<?xf64>)
// CHECK-NOT:     math.exp
// CHECK:         arith.addf
func.func @read_before(%x: tensor<?xf64>, %y: tensor<?xf64>) -> (f64, f64, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x, %y : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %w: f64, %o: f64):
    %r = arith.mulf %v, %w : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = math.exp %v : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  %p0 = tensor.extract %p[%c0] : tensor<?xf64>
  %q0 = tensor.extract %q[%c0] : tensor<?xf64>
  %a = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]} ins(%p, %x, %y : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %w: f64, %z: f64, %o: f64):
    %r = arith.subf %v, %z : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%p, %x : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %w: f64, %o: f64):
    %r = arith.divf %v, %w : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%q : tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = arith.addf %v, %v : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  return %p0, %q0, %a, %b, %c : f64, f64, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>
}
// -----

#id = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
// Never fused: an operand read through a broadcast (a matmul's: it would be
// computed for every column), and a producer outside the loop of its
// consumer (it would be computed at every iteration).
// CHECK-LABEL: func.func @not_fused
// CHECK:       math.exp
// CHECK:       linalg.matmul
// CHECK:       math.sin
// CHECK:       scf.for
// CHECK-NOT:     math.sin
// CHECK:         arith.mulf
func.func @not_fused(%a: tensor<8x8xf64>, %b: tensor<8x8xf64>, %x: tensor<8xf64>, %n: index) -> (tensor<8x8xf64>, tensor<8xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<8x8xf64>
  %ea = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x8xf64>) outs(%e : tensor<8x8xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = math.exp %v : f64
    linalg.yield %r : f64
  } -> tensor<8x8xf64>
  %m = linalg.matmul ins(%ea, %b : tensor<8x8xf64>, tensor<8x8xf64>) outs(%b : tensor<8x8xf64>) -> tensor<8x8xf64>
  %e1 = tensor.empty() : tensor<8xf64>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf64>) outs(%e1 : tensor<8xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = math.sin %v : f64
    linalg.yield %r : f64
  } -> tensor<8xf64>
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%t = %x) -> tensor<8xf64> {
    %u = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%s, %t : tensor<8xf64>, tensor<8xf64>) outs(%e1 : tensor<8xf64>) {
    ^bb0(%v: f64, %w: f64, %o: f64):
      %r = arith.mulf %v, %w : f64
      linalg.yield %r : f64
    } -> tensor<8xf64>
    scf.yield %u : tensor<8xf64>
  }
  return %m, %l : tensor<8x8xf64>, tensor<8xf64>
}

// -----

#id = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
// A zero tensor made outside a loop and written into inside it is filled
// again in the loop: bufferization then fills a fresh buffer instead of
// copying the zeros every iteration.
// CHECK-LABEL: func.func @refill
// CHECK:       scf.for
// CHECK:         %[[Z:.*]] = linalg.fill
// CHECK:         tensor.insert_slice %{{.*}} into %[[Z]]
func.func @refill(%x: tensor<4xf64>, %n: index) -> tensor<8xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<8xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<8xf64>) -> tensor<8xf64>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> tensor<8xf64> {
    %ins = tensor.insert_slice %x into %z[2] [4] [1] : tensor<4xf64> into tensor<8xf64>
    // (A body reading its index: the insert is not read in place.)
    %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%acc, %ins : tensor<8xf64>, tensor<8xf64>) outs(%e : tensor<8xf64>) {
    ^bb0(%v: f64, %w: f64, %o: f64):
      %j = linalg.index 0 : index
      %j64 = arith.index_cast %j : index to i64
      %jf = arith.sitofp %j64 : i64 to f64
      %a = arith.addf %v, %w : f64
      %b = arith.mulf %a, %jf : f64
      linalg.yield %b : f64
    } -> tensor<8xf64>
    scf.yield %s : tensor<8xf64>
  }
  return %r : tensor<8xf64>
}

// -----

#id = affine_map<(i) -> (i)>

// An accumulation into a slice keeps writing into the slice it reads (the
// body does not read its `outs`, but replacing them by a tensor.empty would
// make bufferization copy the sum back into the accumulator).
// CHECK-LABEL: func.func @accumulate_into_slice
// CHECK:       %[[S:.*]] = tensor.extract_slice %[[ACC:.*]][2] [4] [1]
// CHECK:       %[[SUM:.*]] = linalg.generic
// CHECK-SAME:    outs(%[[S]] : tensor<4xf64>)
// CHECK:       tensor.insert_slice %[[SUM]] into %[[ACC]][2] [4] [1]
func.func @accumulate_into_slice(%acc: tensor<8xf64>, %d: tensor<4xf64>) -> tensor<8xf64> {
  %s = tensor.extract_slice %acc[2] [4] [1] : tensor<8xf64> to tensor<4xf64>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%s, %d : tensor<4xf64>, tensor<4xf64>) outs(%s : tensor<4xf64>) {
  ^bb0(%v: f64, %w: f64, %o: f64):
    %r = arith.addf %v, %w : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %r = tensor.insert_slice %sum into %acc[2] [4] [1] : tensor<4xf64> into tensor<8xf64>
  return %r : tensor<8xf64>
}

// -----

#id = affine_map<(i) -> (i)>

// A consumer reading the producer through two operands, and another reader
// after it: one generic computes all of it (the fused op never reads its
// own results), and computes exp once.
// CHECK-LABEL: func.func @read_twice
// CHECK:       %[[R:.*]]:2 = linalg.generic
// CHECK-SAME:    ins(%{{.*}} : tensor<?xf64>)
// CHECK:         math.exp
// CHECK-NOT:     math.exp
// CHECK:         arith.mulf
// CHECK-NOT:   linalg.generic
// CHECK:       return %[[R]]
func.func @read_twice(%x: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %r = math.exp %v : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%p, %p : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %w: f64, %o: f64):
    %r = arith.mulf %v, %w : f64
    linalg.yield %r : f64
  } -> tensor<?xf64>
  return %a, %p : tensor<?xf64>, tensor<?xf64>
}

// -----

#id = affine_map<(i) -> (i)>
#red = affine_map<(i) -> ()>

// A generic that writes an element per iteration and reduces (an adjoint's
// `dp * t` and `sum(dp)`) is split in an elementwise generic and a
// reduction, which can keep its partial sums in registers. Not when the
// reduction needs an expensive value of the body (exp).
// CHECK-LABEL: func.func @split_mixed
// CHECK:       linalg.generic
// CHECK-SAME:    iterator_types = ["parallel"]
// CHECK-SAME:    outs(%{{.*}} : tensor<?xf64>)
// CHECK:         arith.mulf
// CHECK-NOT:     arith.addf
// CHECK:       linalg.generic
// CHECK-SAME:    iterator_types = ["reduction"]
// CHECK-SAME:    outs(%{{.*}} : tensor<f64>)
// CHECK-NOT:     arith.mulf
// CHECK:         arith.addf
// CHECK:       linalg.generic
// CHECK-SAME:    iterator_types = ["reduction"]
// CHECK-SAME:    outs(%{{.*}}, %{{.*}} : tensor<?xf64>, tensor<f64>)
// CHECK:         math.exp
func.func @split_mixed(%dp: tensor<?xf64>, %t: tensor<?xf64>, %s: tensor<f64>) -> (tensor<?xf64>, tensor<f64>, tensor<?xf64>, tensor<f64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %dp, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #red], iterator_types = ["reduction"]} ins(%dp, %t : tensor<?xf64>, tensor<?xf64>) outs(%e, %s : tensor<?xf64>, tensor<f64>) {
  ^bb0(%d: f64, %v: f64, %o: f64, %acc: f64):
    %m = arith.mulf %d, %v : f64
    %a = arith.addf %acc, %d : f64
    linalg.yield %m, %a : f64, f64
  } -> (tensor<?xf64>, tensor<f64>)
  %q:2 = linalg.generic {indexing_maps = [#id, #id, #red], iterator_types = ["reduction"]} ins(%dp : tensor<?xf64>) outs(%e, %s : tensor<?xf64>, tensor<f64>) {
  ^bb0(%d: f64, %o: f64, %acc: f64):
    %x = math.exp %d : f64
    %a = arith.addf %acc, %x : f64
    linalg.yield %x, %a : f64, f64
  } -> (tensor<?xf64>, tensor<f64>)
  return %r#0, %r#1, %q#0, %q#1 : tensor<?xf64>, tensor<f64>, tensor<?xf64>, tensor<f64>
}

// -----

#id2 = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
#all = affine_map<(i, j) -> ()>

// Reductions over different loops (an adjoint's dw = sum_i x dy and
// db = sum_ij dy) become one generic each, with the loops of each output
// parallel.
// CHECK-LABEL: func.func @split_reductions
// CHECK:       linalg.generic
// CHECK-SAME:    iterator_types = ["reduction", "parallel"]
// CHECK-SAME:    outs(%{{.*}} : tensor<5xf64>)
// CHECK:         arith.mulf
// CHECK:       linalg.generic
// CHECK-SAME:    iterator_types = ["reduction", "reduction"]
// CHECK-SAME:    ins(%{{.*}} : tensor<3x5xf64>) outs(%{{.*}} : tensor<f64>)
// CHECK-NOT:     arith.mulf
func.func @split_reductions(%dy: tensor<3x5xf64>, %x: tensor<3x5xf64>, %dw: tensor<5xf64>, %db: tensor<f64>) -> (tensor<5xf64>, tensor<f64>) {
  %r:2 = linalg.generic {indexing_maps = [#id2, #id2, #col, #all], iterator_types = ["reduction", "reduction"]} ins(%dy, %x : tensor<3x5xf64>, tensor<3x5xf64>) outs(%dw, %db : tensor<5xf64>, tensor<f64>) {
  ^bb0(%d: f64, %v: f64, %o: f64, %p: f64):
    %t = arith.mulf %d, %v : f64
    %u = arith.addf %o, %t : f64
    %w = arith.addf %p, %d : f64
    linalg.yield %u, %w : f64, f64
  } -> (tensor<5xf64>, tensor<f64>)
  return %r#0, %r#1 : tensor<5xf64>, tensor<f64>
}

// -----

#id = affine_map<(i) -> (i)>
#red = affine_map<(i) -> ()>

// Not split: a body with a region (its values would not be followed), and
// a reduction whose part would not know the loop's size (only the
// elementwise output gives it: the body reads linalg.index, not an input).
// CHECK-LABEL: func.func @not_split
// CHECK-COUNT-2: -> (tensor<?xf64>, tensor<f64>)
func.func @not_split(%x: tensor<?xf64>, %s: tensor<f64>, %c: i1) -> (tensor<?xf64>, tensor<f64>, tensor<?xf64>, tensor<f64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #red], iterator_types = ["reduction"]} ins(%x : tensor<?xf64>) outs(%e, %s : tensor<?xf64>, tensor<f64>) {
  ^bb0(%v: f64, %o: f64, %acc: f64):
    %w = scf.if %c -> f64 {
      %d = arith.addf %v, %v : f64
      scf.yield %d : f64
    } else {
      scf.yield %v : f64
    }
    %a = arith.addf %acc, %w : f64
    linalg.yield %w, %a : f64, f64
  } -> (tensor<?xf64>, tensor<f64>)
  %q:2 = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["reduction"]} outs(%e, %s : tensor<?xf64>, tensor<f64>) {
  ^bb0(%o: f64, %acc: f64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f64
    %a = arith.addf %acc, %f : f64
    linalg.yield %f, %a : f64, f64
  } -> (tensor<?xf64>, tensor<f64>)
  return %r#0, %r#1, %q#0, %q#1 : tensor<?xf64>, tensor<f64>, tensor<?xf64>, tensor<f64>
}

// -----

#id = affine_map<(i) -> (i)>

// A cheap producer read before its consumer is not computed again when it
// reads its own outputs (acc + x): the fused op would write the
// accumulator too.
// CHECK-LABEL: func.func @recompute_reads_outs
// CHECK:       %[[P:.*]] = linalg.generic
// CHECK:       tensor.extract %[[P]]
// CHECK:       linalg.generic
// CHECK-SAME:    ins(%[[P]], %{{.*}} : tensor<?xf64>, tensor<?xf64>)
func.func @recompute_reads_outs(%x: tensor<?xf64>, %acc: tensor<?xf64>) -> (f64, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<?xf64>) outs(%acc : tensor<?xf64>) {
  ^bb0(%v: f64, %o: f64):
    %s = arith.addf %o, %v : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>
  %p0 = tensor.extract %p[%c0] : tensor<?xf64>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%p, %x : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%v: f64, %w: f64, %o: f64):
    %m = arith.mulf %v, %w : f64
    linalg.yield %m : f64
  } -> tensor<?xf64>
  return %p0, %c : f64, tensor<?xf64>
}

// -----

// An input a linalg.fill produces is read as the fill's value: the input
// goes, and the body folds (x * 1 is x; x + 0 is not -0 + 0, so it stays).
// CHECK-LABEL: func.func @fill_inputs
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?xf64>
// CHECK: %[[ZERO:.*]] = arith.constant 0.0
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<?xf64>)
// CHECK-NEXT: ^bb0(%[[V:[^:]*]]: f64, %{{[^:]*}}: f64):
// CHECK-NEXT: %[[E:.*]] = math.exp %[[V]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[E]], %[[ZERO]]
// CHECK-NEXT: linalg.yield %[[S]]
func.func @fill_inputs(%x: tensor<?xf64>, %n: index) -> tensor<?xf64> {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %e = tensor.empty(%n) : tensor<?xf64>
  %zeros = linalg.fill ins(%zero : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
  %ones = linalg.fill ins(%one : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
  %out = tensor.empty(%n) : tensor<?xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x, %zeros, %ones : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) outs(%out : tensor<?xf64>) {
  ^bb0(%a: f64, %z: f64, %o: f64, %w: f64):
    %t = math.exp %a : f64
    %m = arith.mulf %t, %o : f64
    %s = arith.addf %m, %z : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}

// -----

// A result nobody reads goes with the body ops only it needs, although the
// body reads its init (a tangent computed next to its value): the n x k x d
// loop computes the distances alone.
#pl = affine_map<(i, j, l) -> (i, l)>
#cl = affine_map<(i, j, l) -> (j, l)>
#ij = affine_map<(i, j, l) -> (i, j)>
// CHECK-LABEL: func.func @dead_tangent
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<4x3xf64>)
// CHECK: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
// CHECK-NOT: linalg.generic
func.func @dead_tangent(%p: tensor<4x2xf64>, %c: tensor<3x2xf64>, %z: tensor<4x3xf64>) -> tensor<4x3xf64> {
  %r:2 = linalg.generic {indexing_maps = [#pl, #cl, #ij, #ij], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %c : tensor<4x2xf64>, tensor<3x2xf64>) outs(%z, %z : tensor<4x3xf64>, tensor<4x3xf64>) {
  ^bb0(%pv: f64, %cv: f64, %acc: f64, %tacc: f64):
    %d = arith.subf %cv, %pv : f64
    %sq = arith.mulf %d, %d : f64
    %t = arith.addf %d, %d : f64
    %s = arith.addf %acc, %sq : f64
    %ts = arith.addf %tacc, %t : f64
    linalg.yield %s, %ts : f64, f64
  } -> (tensor<4x3xf64>, tensor<4x3xf64>)
  return %r#0 : tensor<4x3xf64>
}

// -----

// An unused result whose init a kept result reads stays.
#id1 = affine_map<(i) -> (i)>
#sc = affine_map<(i) -> ()>
// CHECK-LABEL: func.func @init_read_by_kept
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<f64>, tensor<f64>)
func.func @init_read_by_kept(%x: tensor<5xf64>, %a: tensor<f64>, %b: tensor<f64>) -> tensor<f64> {
  %r:2 = linalg.generic {indexing_maps = [#id1, #sc, #sc], iterator_types = ["reduction"]}
      ins(%x : tensor<5xf64>) outs(%a, %b : tensor<f64>, tensor<f64>) {
  ^bb0(%xv: f64, %s: f64, %m: f64):
    %n = arith.maximumf %m, %xv : f64
    %t = arith.addf %s, %m : f64
    linalg.yield %t, %n : f64, f64
  } -> (tensor<f64>, tensor<f64>)
  return %r#0 : tensor<f64>
}

// -----

// An unused result that alone gives a loop its range stays (review
// finding: dropping it made an invalid generic): as an input, since its
// init is read (each element once) and nothing reads what it would write.
#dx = affine_map<(i, j) -> (i)>
#dij = affine_map<(i, j) -> (i, j)>
// CHECK-LABEL: func.func @only_range_of_a_loop
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<4xf64>, tensor<4x3xf64>) outs(%{{.*}} : tensor<4xf64>)
// CHECK-NOT: arith.mulf
func.func @only_range_of_a_loop(%x: tensor<4xf64>, %a: tensor<4xf64>, %b: tensor<4x3xf64>) -> tensor<4xf64> {
  %r:2 = linalg.generic {indexing_maps = [#dx, #dx, #dij], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4xf64>) outs(%a, %b : tensor<4xf64>, tensor<4x3xf64>) {
  ^bb0(%xv: f64, %acc: f64, %o: f64):
    %s = arith.addf %acc, %xv : f64
    %t = arith.mulf %xv, %o : f64
    linalg.yield %s, %t : f64, f64
  } -> (tensor<4xf64>, tensor<4x3xf64>)
  return %r#0 : tensor<4xf64>
}

// -----

// Of three results, the first is read and reads the second's init, the
// third is read by nobody: the second stays with the ops computing it (it
// is not read, but its init is), the third goes.
#kx = affine_map<(i) -> (i)>
#ks = affine_map<(i) -> ()>
// CHECK-LABEL: func.func @kept_for_its_init
// CHECK: %[[R:.*]]:2 = linalg.generic
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<f64>, tensor<f64>)
// CHECK: ^bb0(%[[X:.*]]: f64, %[[S:.*]]: f64, %[[M:.*]]: f64):
// CHECK-DAG: %[[N:.*]] = arith.maximumf %[[M]], %[[X]]
// CHECK-DAG: %[[T:.*]] = arith.addf %[[S]], %[[M]]
// CHECK-NOT: arith.mulf
// CHECK: linalg.yield %[[T]], %[[N]]
func.func @kept_for_its_init(%x: tensor<5xf64>, %a: tensor<f64>, %b: tensor<f64>, %c: tensor<f64>) -> tensor<f64> {
  %r:3 = linalg.generic {indexing_maps = [#kx, #ks, #ks, #ks], iterator_types = ["reduction"]}
      ins(%x : tensor<5xf64>) outs(%a, %b, %c : tensor<f64>, tensor<f64>, tensor<f64>) {
  ^bb0(%xv: f64, %s: f64, %m: f64, %p: f64):
    %n = arith.maximumf %m, %xv : f64
    %t = arith.addf %s, %m : f64
    %q = arith.mulf %p, %xv : f64
    linalg.yield %t, %n, %q : f64, f64, f64
  } -> (tensor<f64>, tensor<f64>, tensor<f64>)
  return %r#0 : tensor<f64>
}

// -----

// A vector shifted by one ([1, y_0 .. y_{n-2}], RK4's right-hand side)
// read elementwise: the generic runs over the border (reading the padding
// value) and over the rest (reading y in place); no padded tensor is made.
// CHECK-LABEL: func.func @shifted
// CHECK-NOT: tensor.pad
// CHECK: %[[HEAD:.*]] = tensor.extract_slice %{{.*}}[0] [%{{.*}}] [1]
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1xf64>)
// CHECK-NEXT: ^bb0(%[[X0:.*]]: f64, %{{.*}}: f64):
// CHECK-NEXT: linalg.yield %[[X0]]
// CHECK: tensor.insert_slice
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[HEAD]] : tensor<?xf64>, tensor<?xf64>)
// CHECK: tensor.insert_slice
// CHECK-NOT: tensor.pad
func.func @shifted(%x: tensor<?xf64>, %y: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %m = arith.subi %n, %c1 : index
  %head = tensor.extract_slice %y[0] [%m] [1] : tensor<?xf64> to tensor<?xf64>
  %shifted = tensor.pad %head low[1] high[0] {
  ^bb0(%i: index):
    tensor.yield %one : f64
  } : tensor<?xf64> to tensor<?xf64>
  %init = tensor.empty(%n) : tensor<?xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %shifted : tensor<?xf64>, tensor<?xf64>) outs(%init : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %p = arith.mulf %a, %b : f64
    linalg.yield %p : f64
  } -> tensor<?xf64>
  return %z : tensor<?xf64>
}

// -----

// A cotangent shifted back (the adjoint of a slice: zeros with the slice
// inserted) added elementwise: the same split, reading the zero as a
// constant; the padded tensor's size alone is computed from the slice's.
// CHECK-LABEL: func.func @inserted_into_zeros
// CHECK-NOT: linalg.fill
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: tensor.pad
// CHECK: return
func.func @inserted_into_zeros(%acc: tensor<?xf64>, %d: tensor<?xf64>) -> (tensor<?xf64>, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %n = tensor.dim %acc, %c0 : tensor<?xf64>
  %m = tensor.dim %d, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
  %ins = tensor.insert_slice %d into %z[0] [%m] [1] : tensor<?xf64> into tensor<?xf64>
  %sum = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%acc, %ins : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %s = arith.addf %a, %b : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>
  %pad = tensor.pad %d low[2] high[%c1] {
  ^bb0(%i: index):
    tensor.yield %zero : f64
  } : tensor<?xf64> to tensor<?xf64>
  %size = tensor.dim %pad, %c0 : tensor<?xf64>
  return %sum, %size : tensor<?xf64>, index
}

// -----

// Not split: padding along two dimensions, and a body reading its indices.
// CHECK-LABEL: func.func @two_dims
// CHECK: tensor.pad
// CHECK: linalg.generic
// CHECK-LABEL: func.func @reads_indices
// CHECK: tensor.pad
// CHECK: linalg.generic
func.func @two_dims(%y: tensor<3x3xf64>) -> tensor<4x4xf64> {
  %one = arith.constant 1.0 : f64
  %p = tensor.pad %y low[1, 1] high[0, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %one : f64
  } : tensor<3x3xf64> to tensor<4x4xf64>
  %init = tensor.empty() : tensor<4x4xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x4xf64>) outs(%init : tensor<4x4xf64>) {
  ^bb0(%a: f64, %out: f64):
    %s = math.sin %a : f64
    linalg.yield %s : f64
  } -> tensor<4x4xf64>
  return %z : tensor<4x4xf64>
}

func.func @reads_indices(%y: tensor<3xf64>) -> tensor<4xf64> {
  %one = arith.constant 1.0 : f64
  %p = tensor.pad %y low[1] high[0] {
  ^bb0(%i: index):
    tensor.yield %one : f64
  } : tensor<3xf64> to tensor<4xf64>
  %init = tensor.empty() : tensor<4xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%p : tensor<4xf64>) outs(%init : tensor<4xf64>) {
  ^bb0(%a: f64, %out: f64):
    %i = linalg.index 0 : index
    %i64 = arith.index_cast %i : index to i64
    %f = arith.sitofp %i64 : i64 to f64
    %s = arith.mulf %a, %f : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  return %z : tensor<4xf64>
}

// -----

// Two vectors padded along one dimension at opposite ends (the state an
// RK4 stage shifts, and the cotangent its adjoint shifts back: zeros with
// a slice inserted, whose padding n - (n - 1) is found to be 1): split at
// both borders at once (three parts, each reading y and d in place) when
// the size is at least 2; a smaller size runs the generic on the padded
// tensors, which are made in that branch only.
// CHECK-LABEL: func.func @two_pads
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.fill
// CHECK: %[[LONG:.*]] = arith.cmpi sge, %{{.*}}, %c2
// CHECK: scf.if %[[LONG]]
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: } else {
// CHECK: tensor.pad %{{.*}} low[1] high[0]
// CHECK: tensor.pad %{{.*}} low[0] high[1]
// CHECK: linalg.generic
// CHECK: }
// CHECK-NOT: tensor.pad
// CHECK: return
func.func @two_pads(%x: tensor<?xf64>, %y: tensor<?xf64>, %d: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %m = arith.subi %n, %c1 : index
  %head = tensor.extract_slice %y[0] [%m] [1] : tensor<?xf64> to tensor<?xf64>
  %shifted = tensor.pad %head low[1] high[0] {
  ^bb0(%i: index):
    tensor.yield %one : f64
  } : tensor<?xf64> to tensor<?xf64>
  %tail = tensor.extract_slice %d[1] [%m] [1] : tensor<?xf64> to tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %zeros = linalg.fill ins(%zero : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
  %back = tensor.insert_slice %tail into %zeros[0] [%m] [1] : tensor<?xf64> into tensor<?xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %shifted, %back : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64, %out: f64):
    %p = arith.mulf %a, %b : f64
    %s = arith.addf %p, %c : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>
  return %z : tensor<?xf64>
}

// -----

// With a static size the parts are known: no branch. Too short a size (3
// elements padded by 2 at one end and 2 at the other) is not split at both.
// CHECK-LABEL: func.func @two_pads_static
// CHECK-NOT: scf.if
// CHECK-NOT: tensor.pad
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @two_pads_too_short
// CHECK-NOT: scf.if
// CHECK: tensor.pad
func.func @two_pads_static(%y: tensor<7xf64>, %d: tensor<7xf64>) -> tensor<8xf64> {
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  %p = tensor.pad %y low[1] high[0] {
  ^bb0(%i: index):
    tensor.yield %one : f64
  } : tensor<7xf64> to tensor<8xf64>
  %q = tensor.pad %d low[0] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f64
  } : tensor<7xf64> to tensor<8xf64>
  %e = tensor.empty() : tensor<8xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%p, %q : tensor<8xf64>, tensor<8xf64>) outs(%e : tensor<8xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %s = arith.subf %a, %b : f64
    linalg.yield %s : f64
  } -> tensor<8xf64>
  return %z : tensor<8xf64>
}

func.func @two_pads_too_short(%y: tensor<1xf64>, %d: tensor<1xf64>) -> tensor<3xf64> {
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  %p = tensor.pad %y low[2] high[0] {
  ^bb0(%i: index):
    tensor.yield %one : f64
  } : tensor<1xf64> to tensor<3xf64>
  %q = tensor.pad %d low[0] high[2] {
  ^bb0(%i: index):
    tensor.yield %zero : f64
  } : tensor<1xf64> to tensor<3xf64>
  %e = tensor.empty() : tensor<3xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%p, %q : tensor<3xf64>, tensor<3xf64>) outs(%e : tensor<3xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %s = arith.subf %a, %b : f64
    linalg.yield %s : f64
  } -> tensor<3xf64>
  return %z : tensor<3xf64>
}

// -----

// A result repeating another (the same value through the same map) and one
// copying an input are replaced by that result and that input; an unused
// result whose init is read (each element once) becomes an input.
// CHECK-LABEL: func.func @repeated_results
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[ACC:.*]] : tensor<4xf64>, tensor<4xf64>) outs(%{{.*}} : tensor<4xf64>)
// CHECK: return %[[R]], %[[R]], %{{.*}} :
func.func @repeated_results(%x: tensor<4xf64>, %acc: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) {
  %e = tensor.empty() : tensor<4xf64>
  %r:4 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf64>) outs(%e, %e, %e, %acc : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) {
  ^bb0(%a: f64, %o0: f64, %o1: f64, %o2: f64, %o3: f64):
    %t = arith.mulf %a, %o3 : f64
    linalg.yield %t, %t, %a, %t : f64, f64, f64, f64
  } -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>)
  return %r#0, %r#1, %r#2 : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}

// -----

// A reduction's unused accumulator read by another output stays an output:
// its init is read once per reduction step, the value so far.
// CHECK-LABEL: func.func @accumulator_read
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<f64>, tensor<f64>)
func.func @accumulator_read(%x: tensor<5xf64>, %a: tensor<f64>, %b: tensor<f64>) -> tensor<f64> {
  %r:2 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<5xf64>) outs(%a, %b : tensor<f64>, tensor<f64>) {
  ^bb0(%xv: f64, %s: f64, %m: f64):
    %t = arith.addf %s, %xv : f64
    %u = arith.addf %m, %s : f64
    linalg.yield %t, %u : f64, f64
  } -> (tensor<f64>, tensor<f64>)
  return %r#1 : tensor<f64>
}
