// RUN: ad-opt %s --ad-legalize-views --split-input-file | FileCheck %s
// RUN: ad-opt %s --ad-legalize-views --fold-memref-alias-ops --split-input-file | FileCheck %s --check-prefix=FOLD

// Dynamic strides: upstream infers that this view keeps dimensions 2 and 3
// (loading element i of dimension 3, of size 1); it keeps 0 and 2. The view
// keeping every dimension, collapsed, says which.
// CHECK-LABEL: func.func @dynamic_strides
// CHECK: %[[FULL:.*]] = memref.subview %{{.*}}[0, 0, 0, 0] [1, 1, 8, 1] [1, 1, 1, 1] : memref<1x1x8x1xf64, strided<[?, ?, ?, ?], offset: ?>> to memref<1x1x8x1xf64, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: memref.collapse_shape %[[FULL]] {{\[}}[0, 1], [2, 3]]
// FOLD-LABEL: func.func @dynamic_strides
// FOLD: %[[D:.*]]:2 = affine.delinearize_index %arg1 into (8, 1)
// FOLD: memref.load %arg0[%{{.*}}, %{{.*}}, %[[D]]#0, %[[D]]#1] : memref<1x1x8x1xf64
func.func @dynamic_strides(%m: memref<1x1x8x1xf64, strided<[?, ?, ?, ?], offset: ?>>, %i: index) -> f64 {
  %c0 = arith.constant 0 : index
  %sv = memref.subview %m[0, 0, 0, 0] [1, 1, 8, 1] [1, 1, 1, 1] : memref<1x1x8x1xf64, strided<[?, ?, ?, ?], offset: ?>> to memref<1x8xf64, strided<[?, ?], offset: ?>>
  %v = memref.load %sv[%c0, %i] : memref<1x8xf64, strided<[?, ?], offset: ?>>
  return %v : f64
}

// -----

// A stride other than one (expand-strided-metadata crashed on it).
// CHECK-LABEL: func.func @strided
// CHECK: %[[FULL:.*]] = memref.subview %{{.*}}[0, 0, 0] [1, 3, 1] [1, 2, 1] : memref<1x5x1xf64> to memref<1x3x1xf64, strided<[5, 2, 1]>>
// CHECK: memref.collapse_shape %[[FULL]] {{\[}}[0, 1], [2]] : memref<1x3x1xf64, strided<[5, 2, 1]>> into memref<3x1xf64, strided<[2, 1]>>
func.func @strided(%a: memref<3x1xf64>, %b: memref<1x5x1xf64>) {
  %sv = memref.subview %b[0, 0, 0] [1, 3, 1] [1, 2, 1] : memref<1x5x1xf64> to memref<3x1xf64, strided<[2, 1]>>
  memref.copy %a, %sv : memref<3x1xf64> to memref<3x1xf64, strided<[2, 1]>>
  return
}

// -----

// Views upstream reads right stay.
// CHECK-LABEL: func.func @unambiguous
// CHECK-NOT: collapse_shape
// CHECK: memref.subview %{{.*}}[0, %{{.*}}] [1, 8] [1, 1] : memref<4x8xf64> to memref<8xf64, strided<[1], offset: ?>>
func.func @unambiguous(%m: memref<4x8xf64>, %i: index) -> memref<8xf64, strided<[1], offset: ?>> {
  %sv = memref.subview %m[0, %i] [1, 8] [1, 1] : memref<4x8xf64> to memref<8xf64, strided<[1], offset: ?>>
  return %sv : memref<8xf64, strided<[1], offset: ?>>
}

// -----

// A canonicalized view may keep a unit dimension other than the first (the
// one whose stride its layout names): the kept dimensions follow the
// strides, and a view no collapse can type stays as it is.
// CHECK-LABEL: func.func @kept_by_stride
// CHECK-NOT: memref.cast
// CHECK: return
func.func @kept_by_stride(%m: memref<1x1x8xf64, strided<[100, 10, 1]>>) -> memref<1x4xf64, strided<[10, 2]>> {
  %sv = memref.subview %m[0, 0, 0] [1, 1, 4] [1, 1, 2] : memref<1x1x8xf64, strided<[100, 10, 1]>> to memref<1x4xf64, strided<[10, 2]>>
  return %sv : memref<1x4xf64, strided<[10, 2]>>
}
