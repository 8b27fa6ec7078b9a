// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=256 mark-parallel}))" | FileCheck %s
// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=256}))" | FileCheck %s --check-prefix=OFF

// OFF-NOT: ad.parallel

// An elementwise op: its outermost tile loop (rows) writes disjoint rows.
// CHECK-LABEL: func.func @elementwise(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: } {ad.parallel}
func.func @elementwise(%a: memref<?x?xf64>, %b: memref<?x?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<?x?xf64>) outs(%b : memref<?x?xf64>) {
  ^bb0(%x: f64, %out: f64):
    %y = math.exp %x : f64
    linalg.yield %y : f64
  }
  return
}

// -----

// A matmul: the outermost tile loop runs over the output's columns.
// CHECK-LABEL: func.func @matmul(
// CHECK: scf.for
// CHECK: } {ad.parallel}
func.func @matmul(%a: memref<64x64xf64>, %b: memref<64x64xf64>, %c: memref<64x64xf64>) {
  linalg.matmul ins(%a, %b : memref<64x64xf64>, memref<64x64xf64>) outs(%c : memref<64x64xf64>)
  return
}

// -----

// A sum of a whole vector: its only loop is a reduction.
// CHECK-LABEL: func.func @total(
// CHECK-NOT: ad.parallel
// CHECK: return
func.func @total(%a: memref<?xf64>, %s: memref<f64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%a : memref<?xf64>) outs(%s : memref<f64>) {
  ^bb0(%x: f64, %acc: f64):
    %y = arith.addf %acc, %x : f64
    linalg.yield %y : f64
  }
  return
}

// -----

// A body with a call (which might write memory): not shared.
// CHECK-LABEL: func.func @calls(
// CHECK-NOT: ad.parallel
// CHECK: return
func.func private @effect(f64) -> f64
func.func @calls(%a: memref<?xf64>, %b: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%a : memref<?xf64>) outs(%b : memref<?xf64>) {
  ^bb0(%x: f64, %out: f64):
    %y = func.call @effect(%x) : (f64) -> f64
    linalg.yield %y : f64
  }
  return
}
