// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=256}))" | FileCheck %s

// With 256-bit vectors (AVX2: 16 vector registers) a contraction's register
// tile is 6 rows of two vectors: 12 accumulators, the two vectors of B and
// a broadcast fit. (8 rows of two vectors, AVX-512's tile, spilled: a
// 256^3 f64 matmul ran at half the rate.)
// CHECK-LABEL: func.func @matmul
// CHECK:       scf.for {{.*}} step %c8
// CHECK:         scf.for {{.*}} step %c6
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<6x8xf64>)
// CHECK-COUNT-6:     vector.fma {{.*}} : vector<8xf64>
// CHECK-NOT:         vector.fma
// CHECK:             scf.yield
// CHECK-NOT:   linalg.
func.func @matmul(%a: memref<24x8xf64>, %b: memref<8x32xf64>) -> memref<24x32xf64> {
  %c = memref.alloc() : memref<24x32xf64>
  linalg.matmul ins(%a, %b : memref<24x8xf64>, memref<8x32xf64>) outs(%c : memref<24x32xf64>)
  return %c : memref<24x32xf64>
}

// -----

// f32: 6 rows of two vectors of 8.
// CHECK-LABEL: func.func @matmul_f32
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<6x16xf32>)
func.func @matmul_f32(%a: memref<12x8xf32>, %b: memref<8x32xf32>) -> memref<12x32xf32> {
  %c = memref.alloc() : memref<12x32xf32>
  linalg.matmul ins(%a, %b : memref<12x8xf32>, memref<8x32xf32>) outs(%c : memref<12x32xf32>)
  return %c : memref<12x32xf32>
}

// -----

// A generic shaped like a contraction (squared distances) over 32 rows,
// which 6 does not divide: tiles of 4 rows, none left to a scalar loop.
// CHECK-LABEL: func.func @distances
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4x8xf64>)
// CHECK:             arith.subf %{{.*}} : vector<4x8xf64>
// CHECK-NOT:   vector<8x8xf64>
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

// A contraction larger than a cache block runs in blocks of 16 register
// tiles of rows (96) and 256 reduction steps, the row blocks outermost:
// the block of A (96 x 256) stays in L2 and the strip of B a register tile
// reads (256 x 8) in L1. Each output element adds its terms in the same
// order (its tile is stored after a block of steps and loaded by the next).
// CHECK-LABEL: func.func @blocked
// CHECK:       scf.for %[[I:.*]] = %c0 to %c384 step %c96
// CHECK:         scf.for %[[K:.*]] = %c0 to %c1024 step %c256
// CHECK:           scf.for {{.*}} step %c8
// CHECK:             scf.for {{.*}} step %c6
// CHECK:               scf.for {{.*}} = %c0 to %c256 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<6x8xf64>)
func.func @blocked(%a: memref<384x1024xf64>, %b: memref<1024x64xf64>) -> memref<384x64xf64> {
  %c = memref.alloc() : memref<384x64xf64>
  linalg.matmul ins(%a, %b : memref<384x1024xf64>, memref<1024x64xf64>) outs(%c : memref<384x64xf64>)
  return %c : memref<384x64xf64>
}

// -----

// Dynamic sizes: blocked too (the last blocks smaller), register tiles of
// whole rows in each block, the rest of a block's rows and columns peeled.
// CHECK-LABEL: func.func @blocked_dynamic
// CHECK:       scf.for {{.*}} step %c96
// CHECK:         scf.for {{.*}} step %c256
// CHECK:           %[[ROWS:.*]] = affine.min
// CHECK:           %[[STEPS:.*]] = affine.min
// CHECK:             scf.for {{.*}} step %c8
// CHECK:               scf.for {{.*}} step %c6
// CHECK:                 scf.for {{.*}} = %c0 to %[[STEPS]] step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<6x8xf64>)
// CHECK:               scf.for {{.*}} to %[[ROWS]] step %c6
func.func @blocked_dynamic(%a: memref<?x?xf64>, %b: memref<?x?xf64>) -> memref<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %a, %c0 : memref<?x?xf64>
  %n = memref.dim %b, %c1 : memref<?x?xf64>
  %c = memref.alloc(%m, %n) : memref<?x?xf64>
  linalg.matmul ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?xf64>)
  return %c : memref<?x?xf64>
}

// -----

// Small contractions (the MLP's 64 x 256 layers) are not blocked; their 64
// rows run as tiles of 4 (a divisor: 6 would leave 4 rows to scalar loops).
// CHECK-LABEL: func.func @small
// CHECK-NOT:   step %c96
// CHECK-NOT:   step %c256
// CHECK:       vector<4x8xf64>
func.func @small(%a: memref<64x256xf64>, %b: memref<256x256xf64>) -> memref<64x256xf64> {
  %c = memref.alloc() : memref<64x256xf64>
  linalg.matmul ins(%a, %b : memref<64x256xf64>, memref<256x256xf64>) outs(%c : memref<64x256xf64>)
  return %c : memref<64x256xf64>
}

// -----

// The strip of B one column of register tiles reads (its 256 steps by 8
// columns) is copied to a buffer first: read in place, at the stride of B's
// rows (1024 f64, a power of two), every line of the strip falls in one L1
// set (a 1024^3 matmul ran at 24 GFLOP/s, 34 at 1000 columns). The copy is
// vectorized; the register tiles (4 rows: 64 has no scalar rows left) read
// the buffer. One buffer per function and type, on the heap (one on the
// stack per frame overflowed it in recursions), freed where it returns:
// the second matmul reuses it.
// CHECK-LABEL: func.func @packed_strips
// CHECK:       %[[BUF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<256x8xf64>
// CHECK:       scf.for {{.*}} step %c256
// CHECK:         scf.for %[[J:.*]] = %c0 to %c1024 step %c8
// CHECK:           scf.for
// CHECK:             vector.load %{{.*}} : memref<?x1024xf64>, vector<4xf64>
// CHECK:             vector.store %{{.*}}, %[[BUF]]
// CHECK:           scf.for {{.*}} step %c4
// CHECK:             scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4x8xf64>)
// CHECK:               vector.load %[[BUF]]
// CHECK-NOT:   memref.alloc() {alignment = 64 : i64} : memref<256x8xf64>
// CHECK:       vector.store %{{.*}}, %[[BUF]]
// CHECK:       memref.dealloc %[[BUF]]
// CHECK-NEXT:  return
func.func @packed_strips(%a: memref<64x?xf64>, %b: memref<?x1024xf64>) -> (memref<64x1024xf64>, memref<64x1024xf64>) {
  %c = memref.alloc() : memref<64x1024xf64>
  linalg.matmul ins(%a, %b : memref<64x?xf64>, memref<?x1024xf64>) outs(%c : memref<64x1024xf64>)
  %d = memref.alloc() : memref<64x1024xf64>
  linalg.matmul ins(%a, %b : memref<64x?xf64>, memref<?x1024xf64>) outs(%d : memref<64x1024xf64>)
  return %c, %d : memref<64x1024xf64>, memref<64x1024xf64>
}

// -----

// An output that may be the packed input (two arguments of the caller's):
// a copy taken before the op writes would read stale values; B is read in
// place.
// CHECK-LABEL: func.func @output_may_be_the_input
// CHECK-NOT:   memref<256x8xf64>
func.func @output_may_be_the_input(%a: memref<64x?xf64>, %b: memref<?x1024xf64>, %c: memref<64x1024xf64>) {
  linalg.matmul ins(%a, %b : memref<64x?xf64>, memref<?x1024xf64>) outs(%c : memref<64x1024xf64>)
  return
}

// -----

// Few rows (a copy would serve fewer than 32 of them) or few steps: B is
// read in place.
// CHECK-LABEL: func.func @not_packed
// CHECK-NOT:   memref<256x8xf64>
// CHECK:       vector<6x8xf64>
// CHECK-NOT:   memref<256x8xf64>
func.func @not_packed(%a: memref<24x512xf64>, %b: memref<512x64xf64>, %p: memref<64x8xf64>, %q: memref<8x64xf64>) -> (memref<24x64xf64>, memref<64x64xf64>) {
  %c = memref.alloc() : memref<24x64xf64>
  linalg.matmul ins(%a, %b : memref<24x512xf64>, memref<512x64xf64>) outs(%c : memref<24x64xf64>)
  %d = memref.alloc() : memref<64x64xf64>
  linalg.matmul ins(%p, %q : memref<64x8xf64>, memref<8x64xf64>) outs(%d : memref<64x64xf64>)
  return %c, %d : memref<24x64xf64>, memref<64x64xf64>
}
