// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=256 mark-parallel}))" | FileCheck %s
// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=256}))" | FileCheck %s --check-prefix=OFF

// OFF-NOT: ad.parallel

// An elementwise op into a new buffer: its outermost tile loop (rows)
// writes disjoint rows.
// CHECK-LABEL: func.func @elementwise(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: } {ad.parallel}
func.func @elementwise(%a: memref<?x?xf64>) -> memref<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %a, %c0 : memref<?x?xf64>
  %n = memref.dim %a, %c1 : memref<?x?xf64>
  %b = memref.alloc(%m, %n) : memref<?x?xf64>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<?x?xf64>) outs(%b : memref<?x?xf64>) {
  ^bb0(%x: f64, %out: f64):
    %y = math.exp %x : f64
    linalg.yield %y : f64
  }
  return %b : memref<?x?xf64>
}

// -----

// In place (the input is the output, read where it is written): marked.
// CHECK-LABEL: func.func @in_place(
// CHECK: } {ad.parallel}
func.func @in_place(%a: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%a : memref<?xf64>) outs(%a : memref<?xf64>) {
  ^bb0(%x: f64, %out: f64):
    %y = math.exp %x : f64
    linalg.yield %y : f64
  }
  return
}

// -----

// A shift in place through two views of one buffer (right one iteration
// after the other, a race on threads), and an input and an output that are
// two arguments (possibly the same buffer): not marked.
// CHECK-LABEL: func.func @shift_in_place(
// CHECK-NOT: ad.parallel
// CHECK-LABEL: func.func @two_arguments(
// CHECK-NOT: ad.parallel
// CHECK: return
func.func @shift_in_place(%a: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf64>
  %m = arith.subi %n, %c1 : index
  %src = memref.subview %a[1] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1], offset: 1>>
  %dst = memref.subview %a[0] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1]>>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%src : memref<?xf64, strided<[1], offset: 1>>) outs(%dst : memref<?xf64, strided<[1]>>) {
  ^bb0(%x: f64, %o: f64):
    linalg.yield %x : f64
  }
  return
}

func.func @two_arguments(%a: memref<?xf64>, %b: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%a : memref<?xf64>) outs(%b : memref<?xf64>) {
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
func.func @matmul(%a: memref<64x64xf64>, %b: memref<64x64xf64>) -> memref<64x64xf64> {
  %c = memref.alloc() : memref<64x64xf64>
  linalg.matmul ins(%a, %b : memref<64x64xf64>, memref<64x64xf64>) outs(%c : memref<64x64xf64>)
  return %c : memref<64x64xf64>
}

// -----

// A large matmul whose tiles may be shared out: blocked along its reduction
// only (a loop over blocks of rows would be the one shared, with a few
// iterations: one for a batch of 64), the loop over tiles of columns inside
// each block shared (one fork and join per block of 256 steps), and so is
// its peeled remainder.
// CHECK-LABEL: func.func @blocked_matmul(
// CHECK-NOT: step %c96
// CHECK: scf.for {{.*}} step %c256
// CHECK-NEXT: affine.min
// CHECK-NEXT: affine.apply
// CHECK-NEXT: scf.for {{.*}} step %c8
// CHECK: } {ad.parallel}
// CHECK: } {ad.parallel}
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @blocked_matmul(%a: memref<?x?xf64>, %b: memref<?x?xf64>) -> memref<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %a, %c0 : memref<?x?xf64>
  %n = memref.dim %b, %c1 : memref<?x?xf64>
  %c = memref.alloc(%m, %n) : memref<?x?xf64>
  linalg.matmul ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%c : memref<?x?xf64>)
  return %c : memref<?x?xf64>
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
func.func @calls(%a: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?xf64>
  %b = memref.alloc(%n) : memref<?xf64>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%a : memref<?xf64>) outs(%b : memref<?xf64>) {
  ^bb0(%x: f64, %out: f64):
    %y = func.call @effect(%x) : (f64) -> f64
    linalg.yield %y : f64
  }
  return
}

// -----

// Strips of a contraction whose tiles may be shared among threads are not
// copied to the function's one buffer (threads would share it).
// CHECK-LABEL: func.func @unpacked_when_shared(
// CHECK-NOT: memref<256x8xf64>
// CHECK: } {ad.parallel}
// OFF-LABEL: func.func @unpacked_when_shared(
// OFF: memref.alloc() {alignment = 64 : i64} : memref<256x8xf64>
func.func @unpacked_when_shared(%a: memref<64x?xf64>, %b: memref<?x1024xf64>) -> memref<64x1024xf64> {
  %c = memref.alloc() : memref<64x1024xf64>
  linalg.matmul ins(%a, %b : memref<64x?xf64>, memref<?x1024xf64>) outs(%c : memref<64x1024xf64>)
  return %c : memref<64x1024xf64>
}
