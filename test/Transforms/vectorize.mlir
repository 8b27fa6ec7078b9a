// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=512}))" | FileCheck %s
// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=512 contractions=false elementwise=false}))" | FileCheck %s --check-prefix=OFF
// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=512 reassociate=false}))" | FileCheck %s --check-prefix=NOREASSOC

// A matmul on buffers: 8 x 16 f64 output tiles kept in registers across
// the reduction loop (read before it, carried, written after it), one
// outer product of FMAs per step; the wide (16-column) tile loop outside,
// so its strip of B stays in cache across the 8-row tiles.
// CHECK-LABEL: func.func @matmul
// CHECK:       scf.for {{.*}} step %c16
// CHECK:         scf.for {{.*}} step %c8
// CHECK-COUNT-8:   vector.load %{{.*}} : memref<16x32xf64>, vector<16xf64>
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf64>)
// CHECK-COUNT-8:     vector.fma {{.*}} : vector<16xf64>
// CHECK:             scf.yield
// CHECK-COUNT-8:   vector.store %{{.*}} : memref<16x32xf64>, vector<16xf64>
// CHECK-NOT:   linalg.
// OFF-LABEL:   func.func @matmul
// OFF:         linalg.matmul
func.func @matmul(%a: memref<16x8xf64>, %b: memref<8x32xf64>) -> memref<16x32xf64> {
  %c = memref.alloc() : memref<16x32xf64>
  linalg.matmul ins(%a, %b : memref<16x8xf64>, memref<8x32xf64>) outs(%c : memref<16x32xf64>)
  return %c : memref<16x32xf64>
}

// -----

// The output may be the same buffer as an input: its tile is read and
// written at every reduction step, never carried in registers.
// CHECK-LABEL: func.func @output_may_alias_input
// CHECK-NOT:   iter_args
// CHECK:       vector.fma
// CHECK-NOT:   iter_args
func.func @output_may_alias_input(%a: memref<16x16xf64>, %b: memref<16x16xf64>, %c: memref<16x16xf64>) {
  linalg.matmul ins(%a, %b : memref<16x16xf64>, memref<16x16xf64>) outs(%c : memref<16x16xf64>)
  return
}

// -----

// C = A B^T: B is read across its rows, so a transposed copy is made first
// (in 8 x 8 tiles transposed in registers; freed after the product) and the
// product reads it row by row.
// CHECK-LABEL: func.func @a_bt
// CHECK:       %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x32xf64>
// CHECK:       vector.shuffle
// CHECK:       vector.store %{{.*}}, %[[T]]
// CHECK:       scf.for
// CHECK:       iter_args
// CHECK:       vector.load %[[T]]
// CHECK:       memref.dealloc %[[T]]
#abt = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
func.func @a_bt(%a: memref<16x8xf64>, %b: memref<32x8xf64>) -> memref<16x32xf64> {
  %c = memref.alloc() : memref<16x32xf64>
  linalg.generic {indexing_maps = #abt, iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<16x8xf64>, memref<32x8xf64>) outs(%c : memref<16x32xf64>) {
  ^bb0(%x: f64, %y: f64, %o: f64):
    %m = arith.mulf %x, %y : f64
    %s = arith.addf %o, %m : f64
    linalg.yield %s : f64
  }
  return %c : memref<16x32xf64>
}

// -----

// Elementwise over 20 columns: whole vectors of 8 in the main loop, the
// remaining 4 columns left to scalar loops.
// CHECK-LABEL: func.func @elementwise_remainder
// CHECK:       scf.for {{.*}} = %c0 to %c16 step %c8
// CHECK:         math.tanh {{.*}} : vector<1x8xf64>
// CHECK:       scf.for {{.*}} = %c16 to %c20 step %c8
// CHECK:         linalg.generic
// CHECK:           math.tanh {{.*}} : f64
func.func @elementwise_remainder(%x: memref<3x20xf64>, %y: memref<3x20xf64>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<3x20xf64>) outs(%y : memref<3x20xf64>) {
  ^bb0(%a: f64, %o: f64):
    %t = math.tanh %a : f64
    linalg.yield %t : f64
  }
  return
}

// -----

// Elements whose width is not a power of two are padded in a buffer (i24 to
// 4 bytes, f80 to 16) and packed in a vector: never vectorized.
// CHECK-LABEL: func.func @odd_widths
// CHECK-NOT:   vector.
// CHECK:       linalg.generic
// CHECK:       linalg.generic
func.func @odd_widths(%a: memref<32xi24>, %b: memref<32xi24>, %x: memref<32xf80>, %y: memref<32xf80>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : memref<32xi24>) outs(%b : memref<32xi24>) {
  ^bb0(%v: i24, %o: i24):
    %s = arith.addi %v, %v : i24
    linalg.yield %s : i24
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<32xf80>) outs(%y : memref<32xf80>) {
  ^bb0(%v: f80, %o: f80):
    %s = arith.addf %v, %v : f80
    linalg.yield %s : f80
  }
  return
}

// -----

// A buffer chosen at run time may be the output itself: the output tile of
// the reduction is not carried in registers.
// CHECK-LABEL: func.func @selected_input_may_be_output
// CHECK-NOT:   iter_args
func.func @selected_input_may_be_output(%x: memref<1x16xf64>, %cond: i1, %other: memref<1xf64>) -> memref<1xf64> {
  %out = memref.alloc() : memref<1xf64>
  %y = arith.select %cond, %out, %other : memref<1xf64>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %y : memref<1x16xf64>, memref<1xf64>) outs(%out : memref<1xf64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %p = arith.mulf %a, %b : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  }
  return %out : memref<1xf64>
}

// -----

// A buffer of i1 holds a byte per element; a vector of i1 would be bits.
// CHECK-LABEL: func.func @booleans_stay_scalar
// CHECK-NOT:   vector.
// CHECK:       linalg.generic
func.func @booleans_stay_scalar(%m: memref<64xi1>, %x: memref<64xf64>, %y: memref<64xf64>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%m, %x : memref<64xi1>, memref<64xf64>) outs(%y : memref<64xf64>) {
  ^bb0(%b: i1, %a: f64, %o: f64):
    %s = arith.select %b, %a, %o : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// math.fpowi is vectorized like any elementwise op (ad-legalize-math later
// computes it one element at a time: test/Transforms/legalize-math.mlir).
// CHECK-LABEL: func.func @fpowi
// CHECK:       math.fpowi {{.*}} : vector<8xf64>, vector<8xi32>
func.func @fpowi(%x: memref<8xf64>, %n: memref<8xi32>, %y: memref<8xf64>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x, %n : memref<8xf64>, memref<8xi32>) outs(%y : memref<8xf64>) {
  ^bb0(%a: f64, %e: i32, %o: f64):
    %p = math.fpowi %a, %e : f64, i32
    linalg.yield %p : f64
  }
  return
}

// -----

// A copy from or to a strided view is vectorized like any linalg op (the
// LLVM lowering would call the runtime's memrefCopy, one element at a
// time) when the two buffers cannot overlap; a copy between buffers that
// may be the same (two arguments) stays a memref.copy, and so does one
// between whole buffers (a memcpy).
// CHECK-LABEL: func.func @strided_copies
// CHECK-SAME:  (%[[A:.*]]: memref<?xf64>, %[[B:.*]]: memref<?xf64>, %[[C:.*]]: memref<4x?xf64>)
// CHECK:       %[[T:.*]] = memref.alloc
// CHECK:       vector.load {{.*}} vector<8xf64>
// CHECK:       vector.store {{.*}} vector<8xf64>
// CHECK:       memref.copy %{{.*}}, %{{.*}} : memref<?xf64> to memref<?xf64, strided<[1], offset: ?>>
// CHECK:       memref.copy %[[A]], %[[B]] : memref<?xf64> to memref<?xf64>
// CHECK-NOT:   memref.copy
// OFF-LABEL:   func.func @strided_copies
// OFF-COUNT-3: memref.copy
func.func @strided_copies(%a: memref<?xf64>, %b: memref<?xf64>, %c: memref<4x?xf64>) -> memref<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf64>
  %m = arith.subi %n, %c1 : index
  %t = memref.alloc(%n) : memref<?xf64>
  %src = memref.subview %a[1] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1], offset: 1>>
  %dst = memref.subview %t[0] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1]>>
  memref.copy %src, %dst : memref<?xf64, strided<[1], offset: 1>> to memref<?xf64, strided<[1]>>
  %row = memref.subview %c[2, 0] [1, %n] [1, 1] : memref<4x?xf64> to memref<?xf64, strided<[1], offset: ?>>
  memref.copy %a, %row : memref<?xf64> to memref<?xf64, strided<[1], offset: ?>>
  memref.copy %a, %b : memref<?xf64> to memref<?xf64>
  return %t : memref<?xf64>
}

// -----

// A loop's iter_arg may only be its initial buffer or one it yields, here
// all fresh allocations: it cannot be the accumulator, which is carried in
// registers across the reduction loop. If the loop may yield the
// accumulator itself, it is not.
// CHECK-LABEL: func.func @iter_arg_is_not_the_accumulator
// CHECK:       scf.for
// CHECK:         scf.for {{.*}} -> (vector<f64>, vector<8xf64>)
// CHECK-LABEL: func.func @iter_arg_may_be_the_accumulator
// CHECK-NOT:   -> (vector
func.func @iter_arg_is_not_the_accumulator(%n: index, %x: memref<64xf64>) -> memref<f64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = memref.alloc() : memref<f64>
  %first = memref.alloc() : memref<64xf64>
  memref.copy %x, %first : memref<64xf64> to memref<64xf64>
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%buf = %first) -> memref<64xf64> {
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
        ins(%buf : memref<64xf64>) outs(%acc : memref<f64>) {
    ^bb0(%a: f64, %s: f64):
      %t = arith.addf %s, %a : f64
      linalg.yield %t : f64
    }
    %next = memref.alloc() : memref<64xf64>
    memref.copy %buf, %next : memref<64xf64> to memref<64xf64>
    scf.yield %next : memref<64xf64>
  }
  return %acc : memref<f64>
}

func.func @iter_arg_may_be_the_accumulator(%n: index, %x: memref<64xf64>) -> memref<64xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = memref.alloc() : memref<64xf64>
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%buf = %x) -> memref<64xf64> {
    %view = memref.subview %acc[0] [1] [1] : memref<64xf64> to memref<1xf64, strided<[1]>>
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>], iterator_types = ["reduction"]}
        ins(%buf : memref<64xf64>) outs(%view : memref<1xf64, strided<[1]>>) {
    ^bb0(%a: f64, %s: f64):
      %t = arith.addf %s, %a : f64
      linalg.yield %t : f64
    }
    scf.yield %acc : memref<64xf64>
  }
  return %last : memref<64xf64>
}

// -----

// Left to scalar loops, which upstream vectorization gets wrong: a
// reduction of a value that does not vary along the reduced loop (a count;
// it was added once per vector), and outputs reduced over different loops
// (invalid vector.multi_reduction).
// CHECK-LABEL: func.func @reductions_left_scalar
// CHECK-NOT:   vector.
// CHECK:       linalg.generic
// CHECK-SAME:    outs(%{{.*}} : memref<1xf64, strided<[1], offset: ?>>)
// CHECK-NOT:   vector.
// CHECK:       linalg.generic
// CHECK-SAME:    outs(%{{.*}}, %{{.*}} : memref<5xf64, strided<[1], offset: ?>>, memref<f64>)
// CHECK-NOT:   vector.
func.func @reductions_left_scalar(%x: memref<3x16xf64>, %count: memref<3xf64>, %dy: memref<3x5xf64>, %dw: memref<5xf64>, %db: memref<f64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x16xf64>) outs(%count : memref<3xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %one = arith.constant 1.0 : f64
    %s = arith.addf %acc, %one : f64
    linalg.yield %s : f64
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<3x5xf64>) outs(%dw, %db : memref<5xf64>, memref<f64>) {
  ^bb0(%d: f64, %o: f64, %p: f64):
    %u = arith.addf %o, %d : f64
    %w = arith.addf %p, %d : f64
    linalg.yield %u, %w : f64, f64
  }
  return
}

// -----

// A copy between views that may overlap stays a memref.copy (the runtime
// copies like memmove; a vector copy would not).
// CHECK-LABEL: func.func @overlapping_copy
// CHECK:       memref.copy
func.func @overlapping_copy(%a: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf64>
  %m = arith.subi %n, %c1 : index
  %src = memref.subview %a[0] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1]>>
  %dst = memref.subview %a[1] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1], offset: 1>>
  memref.copy %src, %dst : memref<?xf64, strided<[1]>> to memref<?xf64, strided<[1], offset: 1>>
  return
}

// -----

// Iterator types are only metadata: a loop that indexes every output is
// parallel and the others are reductions, whatever the op says (upstream
// vectorization made invalid IR from this column sum marked as reducing
// over both loops).
// CHECK-LABEL: func.func @mislabeled_iterators
// CHECK:       vector.load
// CHECK-NOT:   linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
func.func @mislabeled_iterators(%y: memref<6x16xf64>, %a: memref<16xf64>, %b: memref<16xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "reduction"]}
      ins(%y : memref<6x16xf64>) outs(%a, %b : memref<16xf64>, memref<16xf64>) {
  ^bb0(%v: f64, %o: f64, %p: f64):
    %s = arith.addf %o, %v : f64
    %m = arith.mulf %v, %v : f64
    %t = arith.addf %p, %m : f64
    linalg.yield %s, %t : f64, f64
  }
  return
}

// -----

// Squared distances: a generic shaped like a contraction (p's rows against
// c's rows, summed over l) but not one. It is tiled like one: 8 x 16 output
// tiles carried in registers across l, c read through a transposed copy
// along the wide dimension, one scalar of p splatted per row, and the body
// elementwise on the tile (no vector.contract, no reduction of a unit
// dimension). (With fewer than 32 rows the transposed copy would cost more
// than it saves: then vectors along l.)
// CHECK-LABEL: func.func @distances
// CHECK:       vector.shuffle
// CHECK:       scf.for {{.*}} step %c16
// CHECK:         scf.for {{.*}} step %c8
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf64>)
// CHECK-COUNT-8:     vector.broadcast %{{.*}} : f64 to vector<16xf64>
// CHECK:             arith.subf %{{.*}} : vector<8x16xf64>
// CHECK-NEXT:        arith.mulf %{{.*}} : vector<8x16xf64>
// CHECK-NEXT:        arith.addf %{{.*}} : vector<8x16xf64>
// CHECK-NOT:   vector.contract
// CHECK-NOT:   vector.multi_reduction
// OFF-LABEL:   func.func @distances
// OFF:         linalg.generic
#dp = affine_map<(i, j, l) -> (i, l)>
#dc = affine_map<(i, j, l) -> (j, l)>
#dout = affine_map<(i, j, l) -> (i, j)>
func.func @distances(%p: memref<32x8xf64>, %c: memref<32x8xf64>) -> memref<32x32xf64> {
  %o = memref.alloc() : memref<32x32xf64>
  linalg.generic {indexing_maps = [#dp, #dc, #dout], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %c : memref<32x8xf64>, memref<32x8xf64>) outs(%o : memref<32x32xf64>) {
  ^bb0(%pv: f64, %cv: f64, %acc: f64):
    %d = arith.subf %cv, %pv : f64
    %sq = arith.mulf %d, %d : f64
    %s = arith.addf %acc, %sq : f64
    linalg.yield %s : f64
  }
  return %o : memref<32x32xf64>
}

// -----

// The same shape with 16 rows: the copy of c would be read by two row
// tiles only, so the generic runs as vectors along its innermost loop.
// CHECK-LABEL: func.func @few_rows
// CHECK-NOT:   vector<8x16xf64>
// CHECK:       vector.reduction
#fp = affine_map<(i, j, l) -> (i, l)>
#fc = affine_map<(i, j, l) -> (j, l)>
#fout = affine_map<(i, j, l) -> (i, j)>
func.func @few_rows(%p: memref<16x8xf64>, %c: memref<32x8xf64>) -> memref<16x32xf64> {
  %o = memref.alloc() : memref<16x32xf64>
  linalg.generic {indexing_maps = [#fp, #fc, #fout], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %c : memref<16x8xf64>, memref<32x8xf64>) outs(%o : memref<16x32xf64>) {
  ^bb0(%pv: f64, %cv: f64, %acc: f64):
    %d = arith.subf %cv, %pv : f64
    %sq = arith.mulf %d, %d : f64
    %s = arith.addf %acc, %sq : f64
    linalg.yield %s : f64
  }
  return %o : memref<16x32xf64>
}

// -----

// Vectors along a parallel innermost loop (i) with reductions over outer
// loops (n, j): the reduction loops run inside the parallel tile loops and
// carry the output vector in a register, instead of reading and writing it
// at every step.
// CHECK-LABEL: func.func @reductions_inside
// CHECK:       scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK:         scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK:           scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<1x8xf64>)
// CHECK:             scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<1x8xf64>)
#rm = affine_map<(n, k, j, i) -> (k, j, i)>
#rd = affine_map<(n, k, j, i) -> (n, k, j)>
#ro = affine_map<(n, k, j, i) -> (k, i)>
func.func @reductions_inside(%m: memref<4x5x16xf64>, %d: memref<7x4x5xf64>) -> memref<4x16xf64> {
  %o = memref.alloc() : memref<4x16xf64>
  linalg.generic {indexing_maps = [#rm, #rd, #ro], iterator_types = ["reduction", "parallel", "reduction", "parallel"]}
      ins(%m, %d : memref<4x5x16xf64>, memref<7x4x5xf64>) outs(%o : memref<4x16xf64>) {
  ^bb0(%mv: f64, %dv: f64, %acc: f64):
    %p = arith.mulf %mv, %dv : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  }
  return %o : memref<4x16xf64>
}

// -----

// The remainder of a vector loop (fewer than 8 elements with 512 bits)
// runs as a vector of 4 and one of 2 when that many are left, then at most
// one scalar element: 14 elements take one vector of 8, one of 4 and one
// of 2, not 6 libm calls.
// CHECK-LABEL: func.func @remainder
// CHECK:       %[[MAIN:.*]] = affine.apply
// CHECK:       scf.for %{{.*}} = %c0 to %[[MAIN]] step %c8
// CHECK:         math.exp %{{.*}} : vector<8xf64>
// CHECK:       scf.for %[[I:.*]] = %[[MAIN]] to %{{.*}} step %c8
// CHECK:         %[[LEFT:.*]] = affine.apply
// CHECK:         %[[FOUR:.*]] = arith.cmpi sge, %[[LEFT]], %c4
// CHECK:         %[[DONE4:.*]] = scf.if %[[FOUR]] -> (index)
// CHECK:           math.exp %{{.*}} : vector<4xf64>
// CHECK:           scf.yield %c4
// CHECK:         } else {
// CHECK:           scf.yield %c0
// CHECK:         %[[LEFT2:.*]] = arith.subi %[[LEFT]], %[[DONE4]]
// CHECK:         %[[TWO:.*]] = arith.cmpi sge, %[[LEFT2]], %c2
// CHECK:         %[[DONE2:.*]] = scf.if %[[TWO]] -> (index)
// CHECK:           math.exp %{{.*}} : vector<2xf64>
// CHECK:         %[[REST:.*]] = arith.subi %[[LEFT]], %[[DONE2]]
// CHECK:         memref.subview %{{.*}}[%{{.*}}] [%[[REST]]] [1]
// CHECK:         linalg.generic
// CHECK:           math.exp %{{.*}} : f64
// OFF-LABEL:   func.func @remainder
// OFF-NOT:     vector
func.func @remainder(%a: memref<?xf64>, %b: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : memref<?xf64>) outs(%b : memref<?xf64>) {
  ^bb0(%x: f64, %o: f64):
    %e = math.exp %x : f64
    %s = arith.addf %o, %e : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// A remainder along the parallel innermost loop of a reduction over an
// outer loop: within each step of the reduction, a vector of 2, then the
// rest (each element still summed in the order of k).
// CHECK-LABEL: func.func @remainder_of_column_sums
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:           arith.addf %{{.*}} : vector<8xf64>
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:           scf.if
// CHECK:             arith.addf %{{.*}} : vector<4xf64>
// CHECK:           scf.if
// CHECK:             arith.addf %{{.*}} : vector<2xf64>
// CHECK:           linalg.generic
func.func @remainder_of_column_sums(%a: memref<?x?xf64>, %b: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(k, i) -> (k, i)>, affine_map<(k, i) -> (i)>], iterator_types = ["reduction", "parallel"]} ins(%a : memref<?x?xf64>) outs(%b : memref<?xf64>) {
  ^bb0(%x: f64, %o: f64):
    %s = arith.addf %o, %x : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// A tile whose body reads linalg.index of several loops stays scalar, and
// so does its remainder: not split into copies of the scalar loop.
// CHECK-LABEL: func.func @remainder_stays_scalar
// CHECK-NOT:   scf.if
// CHECK-NOT:   vector.
// CHECK:       return
func.func @remainder_stays_scalar(%b: memref<?x?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%b : memref<?x?xf64>) {
  ^bb0(%o: f64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %s = arith.addi %i, %j : index
    %k = arith.index_cast %s : index to i64
    %f = arith.sitofp %k : i64 to f64
    linalg.yield %f : f64
  }
  return
}

// -----

// The adjoint of a weight matrix, H^T D summed over the batch: H, the input
// of the narrow (row) dimension, is read along the reduction across its
// rows, one line per step at the stride of a row: 4 KB, so all in one L1
// set. A transposed copy with the reduction innermost is made first (8 x 8
// tiles transposed in registers) and read by every strip of D's columns;
// it is freed after the product.
// CHECK-LABEL: func.func @narrow_input_packed
// CHECK:       %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<512x16xf64>
// CHECK:       vector.shuffle
// CHECK:       vector.store %{{.*}}, %[[T]]
// CHECK:       scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf64>)
// CHECK:         vector.load %[[T]]
// CHECK:       memref.dealloc %[[T]]
// OFF-LABEL:   func.func @narrow_input_packed
// OFF-NOT:     memref.alloc() {alignment = 64 : i64}
#htd = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, j)>, affine_map<(b, i, j) -> (i, j)>]
func.func @narrow_input_packed(%h: memref<16x512xf64>, %d: memref<16x64xf64>) -> memref<512x64xf64> {
  %o = memref.alloc() : memref<512x64xf64>
  linalg.generic {indexing_maps = #htd, iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%h, %d : memref<16x512xf64>, memref<16x64xf64>) outs(%o : memref<512x64xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %y, %x : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  return %o : memref<512x64xf64>
}

// -----

// No copy of the narrow input where it would serve fewer than four strips
// of the wide dimension (48 columns: three of 16), or fewer than 8
// reduction steps, or where its rows are not a multiple of 4 KB apart
// (2 KB: the copy cost more than it saved), or of a dynamic stride.
// (The transposed copies are the only shuffles.)
// CHECK-LABEL: func.func @narrow_input_not_packed
// CHECK-NOT:   vector.shuffle
// CHECK:       vector<8x16xf64>
// CHECK-NOT:   vector.shuffle
// CHECK:       return
#htd = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, j)>, affine_map<(b, i, j) -> (i, j)>]
func.func @narrow_input_not_packed(%h: memref<16x512xf64>, %d: memref<16x48xf64>, %h4: memref<4x512xf64>, %d4: memref<4x64xf64>, %h2k: memref<16x256xf64>, %d2k: memref<16x64xf64>, %hd: memref<16x?xf64>) -> (memref<512x48xf64>, memref<512x64xf64>, memref<256x64xf64>, memref<?x64xf64>) {
  %o = memref.alloc() : memref<512x48xf64>
  linalg.generic {indexing_maps = #htd, iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%h, %d : memref<16x512xf64>, memref<16x48xf64>) outs(%o : memref<512x48xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %y, %x : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  %o2 = memref.alloc() : memref<512x64xf64>
  linalg.generic {indexing_maps = #htd, iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%h4, %d4 : memref<4x512xf64>, memref<4x64xf64>) outs(%o2 : memref<512x64xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %y, %x : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  %o3 = memref.alloc() : memref<256x64xf64>
  linalg.generic {indexing_maps = #htd, iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%h2k, %d2k : memref<16x256xf64>, memref<16x64xf64>) outs(%o3 : memref<256x64xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %y, %x : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  %c1 = arith.constant 1 : index
  %n = memref.dim %hd, %c1 : memref<16x?xf64>
  %o4 = memref.alloc(%n) : memref<?x64xf64>
  linalg.generic {indexing_maps = #htd, iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%hd, %d2k : memref<16x?xf64>, memref<16x64xf64>) outs(%o4 : memref<?x64xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %y, %x : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  return %o, %o2, %o3, %o4 : memref<512x48xf64>, memref<512x64xf64>, memref<256x64xf64>, memref<?x64xf64>
}

// -----

// dY W^T, the adjoint of a product's input: W, the wide input, is read
// across its rows. With rows and steps enough for its strips to be copied
// (32 and 16), each strip (steps x 16 columns of W^T) is copied transposed
// into the function's strip buffer, in 8 x 8 tiles, instead of all of W
// into a transposed copy of its own first.
// CHECK-LABEL: func.func @wide_strips_transposed
// CHECK:       %[[BUF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<256x16xf64>
// CHECK-NOT:   memref.alloc() {alignment = 64 : i64}
// CHECK:       scf.for {{.*}} step %c16
// CHECK:         vector.load %{{.*}} : memref<128x64xf64>, vector<8xf64>
// CHECK:         vector.shuffle
// CHECK:         vector.store %{{.*}}, %[[BUF]]
// CHECK:       scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf64>)
// CHECK:         vector.load %[[BUF]]
// CHECK:       memref.dealloc %[[BUF]]
// CHECK-NEXT:  return
#dwt = [affine_map<(j, b, i) -> (b, j)>, affine_map<(j, b, i) -> (i, j)>, affine_map<(j, b, i) -> (b, i)>]
func.func @wide_strips_transposed(%d: memref<32x64xf64>, %w: memref<128x64xf64>) -> memref<32x128xf64> {
  %o = memref.alloc() : memref<32x128xf64>
  linalg.generic {indexing_maps = #dwt, iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%d, %w : memref<32x64xf64>, memref<128x64xf64>) outs(%o : memref<32x128xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  return %o : memref<32x128xf64>
}

// -----

// linalg.reduce, linalg.map and linalg.broadcast over 40 f32 columns: the
// main tiles (16 lanes) are vectorized like generics. Canonicalization
// leaves their static views behind memref.casts to the tile's dynamic
// type, which these ops have no folder to remove: folded here (they stayed
// scalar, an f32 row maximum over 1000 columns ran 2x slower than f64's).
// CHECK-LABEL: func.func @named_elementwise_remainders
// CHECK:       scf.for {{.*}} = %c0 to %c32 step %c16
// CHECK-NEXT:    vector.load %{{.*}} : memref<3x40xf32>, vector<16xf32>
// CHECK:         arith.maximumf
// CHECK:       scf.for {{.*}} = %c32 to %c40 step %c16
// CHECK:       scf.for {{.*}} = %c0 to %c32 step %c16
// CHECK:         math.exp {{.*}} : vector<1x16xf32>
// CHECK:       scf.for {{.*}} = %c0 to %c32 step %c16
// CHECK-NEXT:    vector.load %{{.*}} : memref<40xf32>, vector<16xf32>
// CHECK-NEXT:    vector.store %{{.*}} : memref<3x40xf32>, vector<16xf32>
func.func @named_elementwise_remainders(%x: memref<3x40xf32>, %m: memref<3xf32>, %y: memref<3x40xf32>, %v: memref<40xf32>, %b: memref<3x40xf32>) {
  linalg.reduce ins(%x : memref<3x40xf32>) outs(%m : memref<3xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.map ins(%x : memref<3x40xf32>) outs(%y : memref<3x40xf32>)
    (%in: f32, %o: f32) {
      %r = math.exp %in : f32
      linalg.yield %r : f32
    }
  linalg.broadcast ins(%v : memref<40xf32>) outs(%b : memref<3x40xf32>) dimensions = [0]
  return
}

// -----

// The adjoint of a convolution's image over 8 channels of f32 (16 lanes at
// 512 bits): tiled as a contraction with vectors of 8 channels (a static
// power of two), the kernel copied transposed, not left to vectors that
// gather the kernel element by element (3x slower than f64).
// CHECK-LABEL: func.func @conv_image_adjoint_f32
// CHECK:       vector.shuffle
// CHECK:       scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<{{.*}}x8xf32>)
#conv_dx = [affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>,
            affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>,
            affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh + kh, ow + kw, c)>]
func.func @conv_image_adjoint_f32(%dy: memref<1x30x30x16xf32>, %k: memref<3x3x8x16xf32>) -> memref<1x32x32x8xf32> {
  %dx = memref.alloc() : memref<1x32x32x8xf32>
  linalg.generic {indexing_maps = #conv_dx, iterator_types = ["reduction", "reduction", "reduction", "reduction", "reduction", "reduction", "parallel"]}
      ins(%dy, %k : memref<1x30x30x16xf32>, memref<3x3x8x16xf32>) outs(%dx : memref<1x32x32x8xf32>) {
  ^bb0(%a: f32, %w: f32, %o: f32):
    %m = arith.mulf %a, %w : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  return %dx : memref<1x32x32x8xf32>
}

// -----

// Casts of an op's operands that are not the views of a tile stay (i1 and
// index elements are not tiled): folding only some operands of linalg.map,
// linalg.transpose, linalg.reduce or linalg.broadcast would give them
// shapes that disagree, which their verifiers reject.
// CHECK-LABEL: func.func @casts_of_untiled_ops
// CHECK:       memref.cast
// CHECK:       linalg.map { arith.xori } ins(%{{.*}}, %{{.*}} : memref<?xi1>, memref<?xi1>)
// CHECK:       linalg.transpose ins(%{{.*}} : memref<?x?xindex>)
// CHECK:       linalg.reduce { arith.xori } ins(%{{.*}} : memref<?x?xi1>)
// CHECK:       linalg.broadcast ins(%{{.*}} : memref<?xi1>)
func.func @casts_of_untiled_ops(%a: memref<16xi1>, %b: memref<?xi1>, %i: memref<16x8xindex>, %t: memref<?x?xindex>, %m: memref<16x8xi1>, %r: memref<?xi1>, %bb: memref<?x?xi1>) {
  %c = memref.cast %a : memref<16xi1> to memref<?xi1>
  linalg.map { arith.xori } ins(%c, %c : memref<?xi1>, memref<?xi1>) outs(%b : memref<?xi1>)
  %ci = memref.cast %i : memref<16x8xindex> to memref<?x?xindex>
  linalg.transpose ins(%ci : memref<?x?xindex>) outs(%t : memref<?x?xindex>) permutation = [1, 0]
  %cm = memref.cast %m : memref<16x8xi1> to memref<?x?xi1>
  linalg.reduce { arith.xori } ins(%cm : memref<?x?xi1>) outs(%r : memref<?xi1>) dimensions = [1]
  linalg.broadcast ins(%c : memref<?xi1>) outs(%bb : memref<?x?xi1>) dimensions = [1]
  return
}

// -----

// dY W^T with 34 columns: two whole strips of 16 and a partial one of 2,
// copied transposed too (read in place, it is a scalar loop across W's
// rows).
// CHECK-LABEL: func.func @partial_strip_transposed
// CHECK:       %[[BUF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<256x16xf64>
// CHECK-NOT:   memref.alloc() {alignment = 64 : i64}
// CHECK:       scf.for {{.*}} = %c0 to %c32 step %c16
// CHECK:         vector.shuffle
// CHECK:         vector.store %{{.*}}, %[[BUF]]
// CHECK:       scf.for {{.*}} = %c32 to %c34 step %c16
// CHECK:         memref.subview %[[BUF]]
// CHECK:         linalg.transpose ins(%{{.*}} : memref<?x8xf64, {{.*}}>) outs(%{{.*}} : memref<8x?xf64, strided<[16, 1], offset: ?>>)
#dwt = [affine_map<(j, b, i) -> (b, j)>, affine_map<(j, b, i) -> (i, j)>, affine_map<(j, b, i) -> (b, i)>]
func.func @partial_strip_transposed(%d: memref<32x64xf64>, %w: memref<34x64xf64>) -> memref<32x34xf64> {
  %o = memref.alloc() : memref<32x34xf64>
  linalg.generic {indexing_maps = #dwt, iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%d, %w : memref<32x64xf64>, memref<34x64xf64>) outs(%o : memref<32x34xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  return %o : memref<32x34xf64>
}

// -----

// dY W^T over more rows than one cache block (16 register tiles of 8):
// each block of rows would transpose the strips again, so all of W is
// copied transposed once and its strips copied as they are.
// CHECK-LABEL: func.func @rows_of_several_blocks
// CHECK:       memref.alloc() {alignment = 64 : i64} : memref<256x16xf64>
// CHECK:       %[[WT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x32xf64>
// CHECK:       vector.shuffle
// CHECK:       vector.store %{{.*}}, %[[WT]]
// CHECK:       memref.dealloc %[[WT]]
#dwt = [affine_map<(j, b, i) -> (b, j)>, affine_map<(j, b, i) -> (i, j)>, affine_map<(j, b, i) -> (b, i)>]
func.func @rows_of_several_blocks(%d: memref<136x64xf64>, %w: memref<32x64xf64>) -> memref<136x32xf64> {
  %o = memref.alloc() : memref<136x32xf64>
  linalg.generic {indexing_maps = #dwt, iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%d, %w : memref<136x64xf64>, memref<32x64xf64>) outs(%o : memref<136x32xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  }
  return %o : memref<136x32xf64>
}

// -----

// Static widths whose remainder after tiles of two vectors would be large
// (f32, 16 lanes): 24 columns take tiles of 12 (a divisor of at most one
// vector and at least half of one), 23 tiles of one vector and a
// remainder; not tiles of 24 (one and a half registers) or 16 and a
// scalar remainder of 8 (24 or 40 columns ran 10-20x slower than 32).
// CHECK-LABEL: func.func @wide_remainders
// CHECK:       scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x12xf32>)
// CHECK:       scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf32>)
// CHECK-NOT:   vector<8x24xf32>
func.func @wide_remainders(%a: memref<64x32xf32>, %b: memref<32x24xf32>, %b23: memref<32x23xf32>) -> (memref<64x24xf32>, memref<64x23xf32>) {
  %c = memref.alloc() : memref<64x24xf32>
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x24xf32>) outs(%c : memref<64x24xf32>)
  %d = memref.alloc() : memref<64x23xf32>
  linalg.matmul ins(%a, %b23 : memref<64x32xf32>, memref<32x23xf32>) outs(%d : memref<64x23xf32>)
  return %c, %d : memref<64x24xf32>, memref<64x23xf32>
}

// -----

// A one-loop elementwise op writing from element 1 of an aligned buffer (a
// stencil's stage): its first 7 f64 (or fewer, when the loop is shorter)
// run apart, in vectors of 4 and 2 and a last element, so that its vector
// loop stores whole 64-byte lines from element 8. With static shapes, the
// head's tiles are static.
// CHECK-LABEL: func.func @aligned_head_known(
// CHECK-NOT: extract_aligned_pointer
// CHECK: arith.minui %{{.*}}, %c7
// CHECK: vector.store %{{.*}}, %{{.*}}[%c1] : memref<?xf64>, vector<4xf64>
// CHECK: scf.for
// CHECK: vector.store %{{.*}} : memref<?xf64>, vector<8xf64>
// CHECK-LABEL: func.func @aligned_head_static(
// CHECK: vector.store %{{.*}}, %{{.*}}[%c1] : memref<101xf64>, vector<4xf64>
// CHECK: vector.store %{{.*}}, %{{.*}}[%c5] : memref<101xf64>, vector<2xf64>
// CHECK: vector.store %{{.*}}, %{{.*}}[%c7] : memref<101xf64>, vector<1xf64>
// CHECK: scf.for
// CHECK: vector.store %{{.*}} : memref<101xf64>, vector<8xf64>
func.func @aligned_head_known(%x: memref<?xf64>) -> memref<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf64>
  %m = arith.subi %n, %c1 : index
  %out = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf64>
  %src = memref.subview %x[0] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1]>>
  %dst = memref.subview %out[1] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1], offset: 1>>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%src : memref<?xf64, strided<[1]>>) outs(%dst : memref<?xf64, strided<[1], offset: 1>>) {
  ^bb0(%a: f64, %o: f64):
    %y = arith.mulf %a, %a : f64
    linalg.yield %y : f64
  }
  return %out : memref<?xf64>
}
func.func @aligned_head_static(%x: memref<100xf64>) -> memref<101xf64> {
  %out = memref.alloc() {alignment = 128 : i64} : memref<101xf64>
  %dst = memref.subview %out[1] [100] [1] : memref<101xf64> to memref<100xf64, strided<[1], offset: 1>>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<100xf64>) outs(%dst : memref<100xf64, strided<[1], offset: 1>>) {
  ^bb0(%a: f64, %o: f64):
    %y = arith.mulf %a, %a : f64
    linalg.yield %y : f64
  }
  return %out : memref<101xf64>
}

// -----

// An output of unknown alignment (an argument's view): the head's length
// comes from its address.
// CHECK-LABEL: func.func @aligned_head_dynamic(
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: arith.remui
// CHECK: arith.minui
// CHECK: scf.for
// CHECK: vector.store %{{.*}} : memref<?xf64>, vector<8xf64>
// OFF-LABEL: func.func @aligned_head_dynamic(
// OFF-NOT: memref.extract_aligned_pointer_as_index
func.func @aligned_head_dynamic(%x: memref<?xf64>, %out: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<?xf64>) outs(%out : memref<?xf64>) {
  ^bb0(%a: f64, %o: f64):
    %y = arith.addf %a, %o : f64
    linalg.yield %y : f64
  }
  return
}

// -----

// Aligned already (an aligned buffer from element 0) or short (static, 12
// elements): not split.
// CHECK-LABEL: func.func @aligned_head_none(
// CHECK-NOT: extract_aligned_pointer
// CHECK-NOT: vector<1xf64>
// CHECK: return
func.func @aligned_head_none(%x: memref<?xf64>, %z: memref<12xf64>) -> (memref<?xf64>, memref<12xf64>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf64>
  %out = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf64>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<?xf64>) outs(%out : memref<?xf64>) {
  ^bb0(%a: f64, %o: f64):
    %y = arith.mulf %a, %a : f64
    linalg.yield %y : f64
  }
  %small = memref.alloc() {alignment = 128 : i64} : memref<12xf64>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%z : memref<12xf64>) outs(%small : memref<12xf64>) {
  ^bb0(%a: f64, %o: f64):
    %y2 = arith.mulf %a, %a : f64
    linalg.yield %y2 : f64
  }
  return %out, %small : memref<?xf64>, memref<12xf64>
}

// -----

// A product and its tangent in one loop nest (forward mode over a matmul):
// planned as two contractions, each vectorized into register tiles.
// CHECK-LABEL: func.func @two_contractions(
// CHECK-NOT: outs(%{{[a-z0-9_]+}}, %
// CHECK-COUNT-16: vector.fma {{.*}} : vector<6xf64>
// CHECK-NOT: outs(%{{[a-z0-9_]+}}, %
// CHECK: return
func.func @two_contractions(%a: memref<?x22xf64>, %b: memref<22x12xf64>, %db: memref<22x12xf64>) -> (memref<?x12xf64>, memref<?x12xf64>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x22xf64>
  %c = memref.alloc(%n) : memref<?x12xf64>
  %dc = memref.alloc(%n) : memref<?x12xf64>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b, %db : memref<?x22xf64>, memref<22x12xf64>, memref<22x12xf64>) outs(%c, %dc : memref<?x12xf64>, memref<?x12xf64>) {
  ^bb0(%x: f64, %y: f64, %dy: f64, %o: f64, %do: f64):
    %p = arith.mulf %x, %y : f64
    %dp = arith.mulf %dy, %x : f64
    %s = arith.addf %o, %p : f64
    %ds = arith.addf %do, %dp : f64
    linalg.yield %s, %ds : f64, f64
  }
  return %c, %dc : memref<?x12xf64>, memref<?x12xf64>
}

// -----

// Not split: the second output reads the first's (one loop nest computes
// them together), or the outputs may be one buffer (two arguments).
// CHECK-LABEL: func.func @dependent_outputs(
// CHECK: linalg.generic {{.*}} outs(%{{[a-z0-9_]+}}, %
// CHECK-LABEL: func.func @aliased_outputs(
// CHECK: linalg.generic {{.*}} outs(%{{[a-z0-9_]+}}, %
func.func @dependent_outputs(%a: memref<?x22xf64>, %b: memref<22x12xf64>, %c: memref<?x12xf64>, %dc: memref<?x12xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x22xf64>, memref<22x12xf64>) outs(%c, %dc : memref<?x12xf64>, memref<?x12xf64>) {
  ^bb0(%x: f64, %y: f64, %o: f64, %do: f64):
    %p = arith.mulf %x, %y : f64
    %s = arith.addf %o, %p : f64
    %ds = arith.addf %do, %s : f64
    linalg.yield %s, %ds : f64, f64
  }
  return
}
func.func @aliased_outputs(%a: memref<?x22xf64>, %b: memref<22x12xf64>, %db: memref<22x12xf64>, %c: memref<?x12xf64>, %dc: memref<?x12xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b, %db : memref<?x22xf64>, memref<22x12xf64>, memref<22x12xf64>) outs(%c, %dc : memref<?x12xf64>, memref<?x12xf64>) {
  ^bb0(%x: f64, %y: f64, %dy: f64, %o: f64, %do: f64):
    %p = arith.mulf %x, %y : f64
    %dp = arith.mulf %dy, %x : f64
    %s = arith.addf %o, %p : f64
    %ds = arith.addf %do, %dp : f64
    linalg.yield %s, %ds : f64, f64
  }
  return
}

// -----

// A product and the tangent of a product of two active operands, C = A B
// and dC = dA B + A dB, in one loop nest: one contraction for C and one per
// term of dC, the second adding to what the first wrote. Under
// reassociate=false dC's sum keeps its order: one op (its tile's body
// elementwise on the 8 x 6 output tile).
// CHECK-LABEL: func.func @two_terms(
// CHECK-NOT: arith.mulf {{.*}} : vector<8x6xf64>
// CHECK-COUNT-24: vector.fma {{.*}} : vector<6xf64>
// CHECK-NOT: arith.mulf {{.*}} : vector<8x6xf64>
// CHECK: return
// NOREASSOC-LABEL: func.func @two_terms(
// NOREASSOC: arith.mulf {{.*}} : vector<8x6xf64>
// NOREASSOC: return
func.func @two_terms(%a: memref<?x22xf64>, %da: memref<?x22xf64>, %b: memref<22x12xf64>, %db: memref<22x12xf64>) -> (memref<?x12xf64>, memref<?x12xf64>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x22xf64>
  %c = memref.alloc(%n) : memref<?x12xf64>
  %dc = memref.alloc(%n) : memref<?x12xf64>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %da, %b, %db : memref<?x22xf64>, memref<?x22xf64>, memref<22x12xf64>, memref<22x12xf64>) outs(%c, %dc : memref<?x12xf64>, memref<?x12xf64>) {
  ^bb0(%x: f64, %dx: f64, %y: f64, %dy: f64, %o: f64, %do: f64):
    %m = arith.mulf %x, %y : f64
    %n1 = arith.addf %o, %m : f64
    %p = arith.mulf %dx, %y : f64
    %q = arith.mulf %x, %dy : f64
    %s = arith.addf %p, %q : f64
    %r = arith.addf %do, %s : f64
    linalg.yield %n1, %r : f64, f64
  }
  return %c, %dc : memref<?x12xf64>, memref<?x12xf64>
}

// -----

// A contraction whose output (an allocation) was just filled, in blocks of
// rows: each row block is filled inside the loop over row blocks, right
// before the loop over reduction blocks, not the whole output first.
// CHECK-LABEL: func.func @fill_row_blocks
// CHECK: %[[C:.*]] = memref.alloc
// CHECK-NOT: vector.store
// CHECK: scf.for %{{.*}} step %c128
// CHECK: vector.store %{{.*}}, %[[C]]
// CHECK: scf.for %{{.*}} step %c256
// CHECK: return %[[C]]
// OFF-LABEL: func.func @fill_row_blocks
// OFF: linalg.fill
// OFF-NEXT: linalg.matmul
func.func @fill_row_blocks(%a: memref<?x?xf64>, %b: memref<?x?xf64>) -> memref<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %m = memref.dim %a, %c0 : memref<?x?xf64>
  %n = memref.dim %b, %c1 : memref<?x?xf64>
  %c = memref.alloc(%m, %n) : memref<?x?xf64>
  linalg.fill ins(%zero : f64) outs(%c : memref<?x?xf64>)
  linalg.matmul ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?xf64>)
  return %c : memref<?x?xf64>
}

// -----

// The same, with the output read between the fill and the contraction:
// the fill stays whole, before the read.
// CHECK-LABEL: func.func @fill_read_first
// CHECK: %[[C:.*]] = memref.alloc
// CHECK: vector.store %{{.*}}, %[[C]]
// CHECK: memref.copy %[[C]]
// CHECK: scf.for %{{.*}} step %c128
// CHECK-NOT: vector.store %cst{{.*}}, %[[C]]
// CHECK: return %[[C]]
func.func @fill_read_first(%a: memref<?x?xf64>, %b: memref<?x?xf64>, %d: memref<?x?xf64>) -> memref<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %m = memref.dim %a, %c0 : memref<?x?xf64>
  %n = memref.dim %b, %c1 : memref<?x?xf64>
  %c = memref.alloc(%m, %n) : memref<?x?xf64>
  linalg.fill ins(%zero : f64) outs(%c : memref<?x?xf64>)
  memref.copy %c, %d : memref<?x?xf64> to memref<?x?xf64>
  linalg.matmul ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?xf64>)
  return %c : memref<?x?xf64>
}
