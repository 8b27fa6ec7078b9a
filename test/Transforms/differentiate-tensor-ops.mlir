// RUN: ad-opt %s --split-input-file --ad-generate-derivatives | FileCheck %s

// The adjoint of each tensor and linalg op, one per split, through
// ad.forward and ad.pullback (so the cotangent is a tensor argument of the
// pullback). Named ops are generalized first, and the generated pullbacks
// are simplified (zero fills become plain writes where every element is
// written once; generics over the same loops merge). Convolution,
// broadcast and max reduction are checked in differentiate-linalg.mlir,
// tensors carried by loops in differentiate-scf.mlir and
// tensor-loop-bufferized.mlir.

// extract: the scalar's cotangent goes to its position in zeros.
// CHECK-LABEL: func.func private @extract_ad_pb_0
// CHECK-SAME: (%[[I:.*]]: index, %[[DX:.*]]: f64) -> tensor<4xf64>
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[R:.*]] = tensor.insert %[[DX]] into %[[Z]][%[[I]]]
// CHECK: return %[[R]]
func.func @extract(%t: tensor<4xf64>, %i: index) -> f64 {
  %x = tensor.extract %t[%i] : tensor<4xf64>
  return %x : f64
}
func.func @extract_vjp(%t: tensor<4xf64>, %i: index) -> tensor<4xf64> {
  %g = ad.grad @extract(%t, %i) : (tensor<4xf64>, index) -> tensor<4xf64>
  return %g : tensor<4xf64>
}

// -----

// insert: the scalar gets its element of the cotangent, the destination
// the cotangent with that element zeroed.
// CHECK-LABEL: func.func private @insert_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: tensor<4xf64>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[DX:.*]] = tensor.extract %[[DY]][%[[C1]]]
// CHECK: %[[DT:.*]] = tensor.insert %[[ZERO]] into %[[DY]][%[[C1]]]
// CHECK: return %[[DT]], %[[DX]]
func.func @insert(%t: tensor<4xf64>, %x: f64) -> tensor<4xf64> {
  %c1 = arith.constant 1 : index
  %r = tensor.insert %x into %t[%c1] : tensor<4xf64>
  return %r : tensor<4xf64>
}
func.func @insert_vjp(%t: tensor<4xf64>, %x: f64, %dy: tensor<4xf64>) -> (tensor<4xf64>, f64) {
  %y, %pb = ad.forward @insert(%t, %x) : (tensor<4xf64>, f64) -> (tensor<4xf64>, !ad.pullback<(tensor<4xf64>) -> (tensor<4xf64>, f64)>)
  %gt, %gx = ad.pullback %pb(%dy) : !ad.pullback<(tensor<4xf64>) -> (tensor<4xf64>, f64)>
  return %gt, %gx : tensor<4xf64>, f64
}

// -----

// extract_slice: the cotangent is inserted into zeros at the slice.
// CHECK-LABEL: func.func private @extract_slice_ad_pb_0
// CHECK-SAME: (%[[DY:.*]]: tensor<2x3xf64>) -> tensor<4x5xf64>
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[R:.*]] = tensor.insert_slice %[[DY]] into %[[Z]][1, 2] [2, 3] [1, 1]
// CHECK: return %[[R]]
func.func @extract_slice(%t: tensor<4x5xf64>) -> tensor<2x3xf64> {
  %r = tensor.extract_slice %t[1, 2] [2, 3] [1, 1] : tensor<4x5xf64> to tensor<2x3xf64>
  return %r : tensor<2x3xf64>
}
func.func @extract_slice_vjp(%t: tensor<4x5xf64>, %dy: tensor<2x3xf64>) -> (tensor<4x5xf64>) {
  %y, %pb = ad.forward @extract_slice(%t) : (tensor<4x5xf64>) -> (tensor<2x3xf64>, !ad.pullback<(tensor<2x3xf64>) -> (tensor<4x5xf64>)>)
  %g0 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf64>) -> (tensor<4x5xf64>)>
  return %g0 : tensor<4x5xf64>
}

// -----

// insert_slice: the source gets the slice of the cotangent, the
// destination the cotangent with the slice zeroed.
// CHECK-LABEL: func.func private @insert_slice_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: tensor<4x5xf64>)
// CHECK: %[[S:.*]] = tensor.extract_slice %[[DY]][1, 0] [2, 3] [1, 2]
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[D:.*]] = tensor.insert_slice %[[Z]] into %[[DY]][1, 0] [2, 3] [1, 2]
// CHECK: return %[[S]], %[[D]]
func.func @insert_slice(%s: tensor<2x3xf64>, %t: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %r = tensor.insert_slice %s into %t[1, 0] [2, 3] [1, 2] : tensor<2x3xf64> into tensor<4x5xf64>
  return %r : tensor<4x5xf64>
}
func.func @insert_slice_vjp(%s: tensor<2x3xf64>, %t: tensor<4x5xf64>, %dy: tensor<4x5xf64>) -> (tensor<2x3xf64>, tensor<4x5xf64>) {
  %y, %pb = ad.forward @insert_slice(%s, %t) : (tensor<2x3xf64>, tensor<4x5xf64>) -> (tensor<4x5xf64>, !ad.pullback<(tensor<4x5xf64>) -> (tensor<2x3xf64>, tensor<4x5xf64>)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<4x5xf64>) -> (tensor<2x3xf64>, tensor<4x5xf64>)>
  return %g0, %g1 : tensor<2x3xf64>, tensor<4x5xf64>
}

// -----

// splat: the scalar gets the sum of the cotangent.
// CHECK-LABEL: func.func private @splat_ad_pb_0
// CHECK-SAME: (%[[DY:.*]]: tensor<2x3xf64>) -> f64
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[DY]] : tensor<2x3xf64>)
// CHECK: arith.addf
// CHECK: %[[E:.*]] = tensor.extract %[[S]][]
// CHECK: return %[[E]]
func.func @splat(%x: f64) -> tensor<2x3xf64> {
  %r = tensor.splat %x : tensor<2x3xf64>
  return %r : tensor<2x3xf64>
}
func.func @splat_vjp(%x: f64, %dy: tensor<2x3xf64>) -> (f64) {
  %y, %pb = ad.forward @splat(%x) : (f64) -> (tensor<2x3xf64>, !ad.pullback<(tensor<2x3xf64>) -> (f64)>)
  %g0 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf64>) -> (f64)>
  return %g0 : f64
}

// -----

// from_elements: each scalar gets its element of the cotangent.
// CHECK-LABEL: func.func private @from_elements_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: tensor<2xf64>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[X:.*]] = tensor.extract %[[DY]][%[[C0]]]
// CHECK: %[[Z:.*]] = tensor.extract %[[DY]][%[[C1]]]
// CHECK: return %[[X]], %[[Z]]
func.func @from_elements(%x: f64, %z: f64) -> tensor<2xf64> {
  %r = tensor.from_elements %x, %z : tensor<2xf64>
  return %r : tensor<2xf64>
}
func.func @from_elements_vjp(%x: f64, %z: f64, %dy: tensor<2xf64>) -> (f64, f64) {
  %y, %pb = ad.forward @from_elements(%x, %z) : (f64, f64) -> (tensor<2xf64>, !ad.pullback<(tensor<2xf64>) -> (f64, f64)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2xf64>) -> (f64, f64)>
  return %g0, %g1 : f64, f64
}

// -----

// generate: a scalar the body reads gets a reduction over the positions,
// recomputing the body from linalg.index.
// CHECK-LABEL: func.func private @generate_ad_pb_0
// CHECK-SAME: (%[[DY:.*]]: tensor<3xf64>) -> f64
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[DY]] : tensor<3xf64>)
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: arith.index_cast %[[I]]
// CHECK: arith.sitofp
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @generate(%x: f64) -> tensor<3xf64> {
  %r = tensor.generate {
  ^bb0(%i: index):
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f64
    %p = arith.mulf %f, %x : f64
    tensor.yield %p : f64
  } : tensor<3xf64>
  return %r : tensor<3xf64>
}
func.func @generate_vjp(%x: f64, %dy: tensor<3xf64>) -> (f64) {
  %y, %pb = ad.forward @generate(%x) : (f64) -> (tensor<3xf64>, !ad.pullback<(tensor<3xf64>) -> (f64)>)
  %g0 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3xf64>) -> (f64)>
  return %g0 : f64
}

// -----

// expand_shape and collapse_shape undo each other.
// CHECK-LABEL: func.func private @expand_shape_ad_pb_0
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x3xf64> into tensor<6xf64>
func.func @expand_shape(%t: tensor<6xf64>) -> tensor<2x3xf64> {
  %r = tensor.expand_shape %t [[0, 1]] output_shape [2, 3] : tensor<6xf64> into tensor<2x3xf64>
  return %r : tensor<2x3xf64>
}
func.func @expand_shape_vjp(%t: tensor<6xf64>, %dy: tensor<2x3xf64>) -> (tensor<6xf64>) {
  %y, %pb = ad.forward @expand_shape(%t) : (tensor<6xf64>) -> (tensor<2x3xf64>, !ad.pullback<(tensor<2x3xf64>) -> (tensor<6xf64>)>)
  %g0 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf64>) -> (tensor<6xf64>)>
  return %g0 : tensor<6xf64>
}

// -----

// CHECK-LABEL: func.func private @collapse_shape_ad_pb_0
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 3] : tensor<6xf64> into tensor<2x3xf64>
func.func @collapse_shape(%t: tensor<2x3xf64>) -> tensor<6xf64> {
  %r = tensor.collapse_shape %t [[0, 1]] : tensor<2x3xf64> into tensor<6xf64>
  return %r : tensor<6xf64>
}
func.func @collapse_shape_vjp(%t: tensor<2x3xf64>, %dy: tensor<6xf64>) -> (tensor<2x3xf64>) {
  %y, %pb = ad.forward @collapse_shape(%t) : (tensor<2x3xf64>) -> (tensor<6xf64>, !ad.pullback<(tensor<6xf64>) -> (tensor<2x3xf64>)>)
  %g0 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<6xf64>) -> (tensor<2x3xf64>)>
  return %g0 : tensor<2x3xf64>
}

// -----

// reshape: back to the source's shape.
// CHECK-LABEL: func.func private @reshape_ad_pb_0
// CHECK: %[[S:.*]] = arith.constant dense<[2, 3]> : tensor<2xindex>
// CHECK: tensor.reshape %{{.*}}(%[[S]]) : (tensor<3x2xf64>, tensor<2xindex>) -> tensor<2x3xf64>
func.func @reshape(%t: tensor<2x3xf64>) -> tensor<3x2xf64> {
  %s = arith.constant dense<[3, 2]> : tensor<2xindex>
  %r = tensor.reshape %t(%s) : (tensor<2x3xf64>, tensor<2xindex>) -> tensor<3x2xf64>
  return %r : tensor<3x2xf64>
}
func.func @reshape_vjp(%t: tensor<2x3xf64>, %dy: tensor<3x2xf64>) -> (tensor<2x3xf64>) {
  %y, %pb = ad.forward @reshape(%t) : (tensor<2x3xf64>) -> (tensor<3x2xf64>, !ad.pullback<(tensor<3x2xf64>) -> (tensor<2x3xf64>)>)
  %g0 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3x2xf64>) -> (tensor<2x3xf64>)>
  return %g0 : tensor<2x3xf64>
}

// -----

// cast: back to the source's type.
// CHECK-LABEL: func.func private @cast_ad_pb_0
// CHECK: tensor.cast %{{.*}} : tensor<4xf64> to tensor<?xf64>
func.func @cast(%t: tensor<?xf64>) -> tensor<4xf64> {
  %r = tensor.cast %t : tensor<?xf64> to tensor<4xf64>
  return %r : tensor<4xf64>
}
func.func @cast_vjp(%t: tensor<?xf64>, %dy: tensor<4xf64>) -> (tensor<?xf64>) {
  %y, %pb = ad.forward @cast(%t) : (tensor<?xf64>) -> (tensor<4xf64>, !ad.pullback<(tensor<4xf64>) -> (tensor<?xf64>)>)
  %g0 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<4xf64>) -> (tensor<?xf64>)>
  return %g0 : tensor<?xf64>
}

// -----

// concat: each input gets its slice.
// CHECK-LABEL: func.func private @concat_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: tensor<3x3xf64>)
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[A:.*]] = tensor.extract_slice %[[DY]][0, 0] [2, 3] [1, 1]
// CHECK: %[[B:.*]] = tensor.extract_slice %[[DY]][%[[C2]], 0] [1, 3] [1, 1]
// CHECK: return %[[A]], %[[B]]
func.func @concat(%a: tensor<2x3xf64>, %b: tensor<1x3xf64>) -> tensor<3x3xf64> {
  %r = tensor.concat dim(0) %a, %b : (tensor<2x3xf64>, tensor<1x3xf64>) -> tensor<3x3xf64>
  return %r : tensor<3x3xf64>
}
func.func @concat_vjp(%a: tensor<2x3xf64>, %b: tensor<1x3xf64>, %dy: tensor<3x3xf64>) -> (tensor<2x3xf64>, tensor<1x3xf64>) {
  %y, %pb = ad.forward @concat(%a, %b) : (tensor<2x3xf64>, tensor<1x3xf64>) -> (tensor<3x3xf64>, !ad.pullback<(tensor<3x3xf64>) -> (tensor<2x3xf64>, tensor<1x3xf64>)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3x3xf64>) -> (tensor<2x3xf64>, tensor<1x3xf64>)>
  return %g0, %g1 : tensor<2x3xf64>, tensor<1x3xf64>
}

// -----

// pad: the source gets the interior; the padding value the sum of the
// cotangent over the padded positions only (a select, not a subtraction).
// CHECK-LABEL: func.func private @pad_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: tensor<4x4xf64>)
// CHECK: %[[IN:.*]] = tensor.extract_slice %[[DY]][1, 0] [2, 3] [1, 1]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[DY]] : tensor<4x4xf64>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: arith.cmpi ult
// CHECK: arith.cmpi uge
// CHECK: arith.ori
// CHECK: arith.ori
// CHECK: %[[PAD:.*]] = arith.ori
// CHECK-NEXT: arith.select %[[PAD]]
// CHECK: return %[[IN]], %{{.*}}
func.func @pad(%t: tensor<2x3xf64>, %v: f64) -> tensor<4x4xf64> {
  %r = tensor.pad %t low[1, 0] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %v : f64
  } : tensor<2x3xf64> to tensor<4x4xf64>
  return %r : tensor<4x4xf64>
}
func.func @pad_vjp(%t: tensor<2x3xf64>, %v: f64, %dy: tensor<4x4xf64>) -> (tensor<2x3xf64>, f64) {
  %y, %pb = ad.forward @pad(%t, %v) : (tensor<2x3xf64>, f64) -> (tensor<4x4xf64>, !ad.pullback<(tensor<4x4xf64>) -> (tensor<2x3xf64>, f64)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<4x4xf64>) -> (tensor<2x3xf64>, f64)>
  return %g0, %g1 : tensor<2x3xf64>, f64
}

// -----

// matmul: dA = dC B^T and dB = A^T dC, each a contraction whose
// accumulator is written contiguously (the reduction loop outermost); the
// init gets dC.
// CHECK-LABEL: func.func private @matmul_ad_pb_0_1_2
// CHECK-SAME: (%[[A:.*]]: tensor<3x4xf64>, %[[B:.*]]: tensor<4x5xf64>, %[[DC:.*]]: tensor<3x5xf64>)
// CHECK: %[[DA:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[B]], %[[DC]] : {{.*}}) outs(%{{.*}} : tensor<3x4xf64>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[DB:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[A]], %[[DC]] : {{.*}}) outs(%{{.*}} : tensor<4x5xf64>)
// CHECK: return %[[DA]], %[[DB]], %[[DC]]
func.func @matmul(%a: tensor<3x4xf64>, %b: tensor<4x5xf64>, %c: tensor<3x5xf64>) -> tensor<3x5xf64> {
  %r = linalg.matmul ins(%a, %b : tensor<3x4xf64>, tensor<4x5xf64>) outs(%c : tensor<3x5xf64>) -> tensor<3x5xf64>
  return %r : tensor<3x5xf64>
}
func.func @matmul_vjp(%a: tensor<3x4xf64>, %b: tensor<4x5xf64>, %c: tensor<3x5xf64>, %dy: tensor<3x5xf64>) -> (tensor<3x4xf64>, tensor<4x5xf64>, tensor<3x5xf64>) {
  %y, %pb = ad.forward @matmul(%a, %b, %c) : (tensor<3x4xf64>, tensor<4x5xf64>, tensor<3x5xf64>) -> (tensor<3x5xf64>, !ad.pullback<(tensor<3x5xf64>) -> (tensor<3x4xf64>, tensor<4x5xf64>, tensor<3x5xf64>)>)
  %g0, %g1, %g2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3x5xf64>) -> (tensor<3x4xf64>, tensor<4x5xf64>, tensor<3x5xf64>)>
  return %g0, %g1, %g2 : tensor<3x4xf64>, tensor<4x5xf64>, tensor<3x5xf64>
}

// -----

// CHECK-LABEL: func.func private @batch_matmul_ad_pb_0_1_2
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x4xf64>, %[[B:.*]]: tensor<2x4x5xf64>, %[[DC:.*]]: tensor<2x3x5xf64>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel", "parallel"]} ins(%[[B]], %[[DC]] : {{.*}}) outs(%{{.*}} : tensor<2x3x4xf64>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel", "parallel"]} ins(%[[A]], %[[DC]] : {{.*}}) outs(%{{.*}} : tensor<2x4x5xf64>)
func.func @batch_matmul(%a: tensor<2x3x4xf64>, %b: tensor<2x4x5xf64>, %c: tensor<2x3x5xf64>) -> tensor<2x3x5xf64> {
  %r = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf64>, tensor<2x4x5xf64>) outs(%c : tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  return %r : tensor<2x3x5xf64>
}
func.func @batch_matmul_vjp(%a: tensor<2x3x4xf64>, %b: tensor<2x4x5xf64>, %c: tensor<2x3x5xf64>, %dy: tensor<2x3x5xf64>) -> (tensor<2x3x4xf64>, tensor<2x4x5xf64>, tensor<2x3x5xf64>) {
  %y, %pb = ad.forward @batch_matmul(%a, %b, %c) : (tensor<2x3x4xf64>, tensor<2x4x5xf64>, tensor<2x3x5xf64>) -> (tensor<2x3x5xf64>, !ad.pullback<(tensor<2x3x5xf64>) -> (tensor<2x3x4xf64>, tensor<2x4x5xf64>, tensor<2x3x5xf64>)>)
  %g0, %g1, %g2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3x5xf64>) -> (tensor<2x3x4xf64>, tensor<2x4x5xf64>, tensor<2x3x5xf64>)>
  return %g0, %g1, %g2 : tensor<2x3x4xf64>, tensor<2x4x5xf64>, tensor<2x3x5xf64>
}

// -----

// matvec: dA = dy v^T is an outer product written once per element (no
// zero fill); dv = A^T dy is a reduction.
// CHECK-LABEL: func.func private @matvec_ad_pb_0_1_2
// CHECK-SAME: (%[[A:.*]]: tensor<3x4xf64>, %[[V:.*]]: tensor<4xf64>, %[[DY:.*]]: tensor<3xf64>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3x4xf64>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[V]], %[[DY]] : {{.*}}) outs(%[[E]] : tensor<3x4xf64>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[A]], %[[DY]] : {{.*}}) outs(%{{.*}} : tensor<4xf64>)
func.func @matvec(%a: tensor<3x4xf64>, %v: tensor<4xf64>, %c: tensor<3xf64>) -> tensor<3xf64> {
  %r = linalg.matvec ins(%a, %v : tensor<3x4xf64>, tensor<4xf64>) outs(%c : tensor<3xf64>) -> tensor<3xf64>
  return %r : tensor<3xf64>
}
func.func @matvec_vjp(%a: tensor<3x4xf64>, %v: tensor<4xf64>, %c: tensor<3xf64>, %dy: tensor<3xf64>) -> (tensor<3x4xf64>, tensor<4xf64>, tensor<3xf64>) {
  %y, %pb = ad.forward @matvec(%a, %v, %c) : (tensor<3x4xf64>, tensor<4xf64>, tensor<3xf64>) -> (tensor<3xf64>, !ad.pullback<(tensor<3xf64>) -> (tensor<3x4xf64>, tensor<4xf64>, tensor<3xf64>)>)
  %g0, %g1, %g2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3xf64>) -> (tensor<3x4xf64>, tensor<4xf64>, tensor<3xf64>)>
  return %g0, %g1, %g2 : tensor<3x4xf64>, tensor<4xf64>, tensor<3xf64>
}

// -----

// CHECK-LABEL: func.func private @vecmat_ad_pb_0_1_2
// CHECK-SAME: (%[[V:.*]]: tensor<3xf64>, %[[A:.*]]: tensor<3x4xf64>, %[[DY:.*]]: tensor<4xf64>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[A]], %[[DY]] : {{.*}}) outs(%{{.*}} : tensor<3xf64>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[V]], %[[DY]] : {{.*}}) outs(%{{.*}} : tensor<3x4xf64>)
func.func @vecmat(%v: tensor<3xf64>, %a: tensor<3x4xf64>, %c: tensor<4xf64>) -> tensor<4xf64> {
  %r = linalg.vecmat ins(%v, %a : tensor<3xf64>, tensor<3x4xf64>) outs(%c : tensor<4xf64>) -> tensor<4xf64>
  return %r : tensor<4xf64>
}
func.func @vecmat_vjp(%v: tensor<3xf64>, %a: tensor<3x4xf64>, %c: tensor<4xf64>, %dy: tensor<4xf64>) -> (tensor<3xf64>, tensor<3x4xf64>, tensor<4xf64>) {
  %y, %pb = ad.forward @vecmat(%v, %a, %c) : (tensor<3xf64>, tensor<3x4xf64>, tensor<4xf64>) -> (tensor<4xf64>, !ad.pullback<(tensor<4xf64>) -> (tensor<3xf64>, tensor<3x4xf64>, tensor<4xf64>)>)
  %g0, %g1, %g2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<4xf64>) -> (tensor<3xf64>, tensor<3x4xf64>, tensor<4xf64>)>
  return %g0, %g1, %g2 : tensor<3xf64>, tensor<3x4xf64>, tensor<4xf64>
}

// -----

// dot: each vector gets the other scaled by the cotangent.
// CHECK-LABEL: func.func private @dot_ad_pb_0_1_2
// CHECK-SAME: (%[[U:.*]]: tensor<5xf64>, %[[V:.*]]: tensor<5xf64>, %[[DY:.*]]: tensor<f64>)
// CHECK: %[[DU:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[V]], %[[DY]] : tensor<5xf64>, tensor<f64>)
// CHECK: %[[DV:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[U]], %[[DY]] : tensor<5xf64>, tensor<f64>)
// CHECK: return %[[DU]], %[[DV]], %[[DY]]
func.func @dot(%u: tensor<5xf64>, %v: tensor<5xf64>, %c: tensor<f64>) -> tensor<f64> {
  %r = linalg.dot ins(%u, %v : tensor<5xf64>, tensor<5xf64>) outs(%c : tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}
func.func @dot_vjp(%u: tensor<5xf64>, %v: tensor<5xf64>, %c: tensor<f64>, %dy: tensor<f64>) -> (tensor<5xf64>, tensor<5xf64>, tensor<f64>) {
  %y, %pb = ad.forward @dot(%u, %v, %c) : (tensor<5xf64>, tensor<5xf64>, tensor<f64>) -> (tensor<f64>, !ad.pullback<(tensor<f64>) -> (tensor<5xf64>, tensor<5xf64>, tensor<f64>)>)
  %g0, %g1, %g2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<f64>) -> (tensor<5xf64>, tensor<5xf64>, tensor<f64>)>
  return %g0, %g1, %g2 : tensor<5xf64>, tensor<5xf64>, tensor<f64>
}

// -----

// fill: the scalar gets the sum of the cotangent; the overwritten init
// gets zero.
// CHECK-LABEL: func.func private @fill_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: tensor<2x3xf64>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[DY]] : tensor<2x3xf64>)
// CHECK: %[[S:.*]] = tensor.extract
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: return %[[S]], %[[Z]]
func.func @fill(%x: f64, %c: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %r = linalg.fill ins(%x : f64) outs(%c : tensor<2x3xf64>) -> tensor<2x3xf64>
  return %r : tensor<2x3xf64>
}
func.func @fill_vjp(%x: f64, %c: tensor<2x3xf64>, %dy: tensor<2x3xf64>) -> (f64, tensor<2x3xf64>) {
  %y, %pb = ad.forward @fill(%x, %c) : (f64, tensor<2x3xf64>) -> (tensor<2x3xf64>, !ad.pullback<(tensor<2x3xf64>) -> (f64, tensor<2x3xf64>)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf64>) -> (f64, tensor<2x3xf64>)>
  return %g0, %g1 : f64, tensor<2x3xf64>
}

// -----

// copy: the source gets the cotangent (itself: the copy of it the adjoint
// generic would make is forwarded), the overwritten init zero.
// CHECK-LABEL: func.func private @copy_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: tensor<2x3xf64>)
// CHECK-NOT: linalg.generic
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: return %[[DY]], %[[Z]]
func.func @copy(%a: tensor<2x3xf64>, %c: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %r = linalg.copy ins(%a : tensor<2x3xf64>) outs(%c : tensor<2x3xf64>) -> tensor<2x3xf64>
  return %r : tensor<2x3xf64>
}
func.func @copy_vjp(%a: tensor<2x3xf64>, %c: tensor<2x3xf64>, %dy: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
  %y, %pb = ad.forward @copy(%a, %c) : (tensor<2x3xf64>, tensor<2x3xf64>) -> (tensor<2x3xf64>, !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>)>
  return %g0, %g1 : tensor<2x3xf64>, tensor<2x3xf64>
}

// -----

// transpose: the cotangent transposed back (a copy with the maps of the
// transpose, into an uninitialized tensor); the overwritten init gets zero.
// CHECK-LABEL: func.func private @transpose_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: tensor<3x2xf64>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3xf64>
// CHECK: %[[D:.*]] = linalg.generic {indexing_maps = [#[[M0:.*]], #[[M1:.*]]], iterator_types = ["parallel", "parallel"]} ins(%[[DY]] : tensor<3x2xf64>) outs(%[[E]] : tensor<2x3xf64>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f64, %{{.*}}: f64):
// CHECK-NEXT: linalg.yield %[[IN]]
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: return %[[D]], %[[Z]]
func.func @transpose(%a: tensor<2x3xf64>, %c: tensor<3x2xf64>) -> tensor<3x2xf64> {
  %r = linalg.transpose ins(%a : tensor<2x3xf64>) outs(%c : tensor<3x2xf64>) permutation = [1, 0]
  return %r : tensor<3x2xf64>
}
func.func @transpose_vjp(%a: tensor<2x3xf64>, %c: tensor<3x2xf64>, %dy: tensor<3x2xf64>) -> (tensor<2x3xf64>, tensor<3x2xf64>) {
  %y, %pb = ad.forward @transpose(%a, %c) : (tensor<2x3xf64>, tensor<3x2xf64>) -> (tensor<3x2xf64>, !ad.pullback<(tensor<3x2xf64>) -> (tensor<2x3xf64>, tensor<3x2xf64>)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3x2xf64>) -> (tensor<2x3xf64>, tensor<3x2xf64>)>
  return %g0, %g1 : tensor<2x3xf64>, tensor<3x2xf64>
}

// -----

// reduce (sum): the cotangent broadcast back along the reduced dimension;
// the init gets the cotangent.
// CHECK-LABEL: func.func private @reduce_sum_ad_pb_0_1
// CHECK-SAME: (%[[DY:.*]]: tensor<3xf64>)
// CHECK: %[[B:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[DY]] : tensor<3xf64>) outs(%{{.*}} : tensor<3x4xf64>)
// CHECK: return %[[B]], %[[DY]]
func.func @reduce_sum(%a: tensor<3x4xf64>, %c: tensor<3xf64>) -> tensor<3xf64> {
  %r = linalg.reduce ins(%a : tensor<3x4xf64>) outs(%c : tensor<3xf64>) dimensions = [1]
    (%in: f64, %acc: f64) {
      %s = arith.addf %in, %acc : f64
      linalg.yield %s : f64
    }
  return %r : tensor<3xf64>
}
func.func @reduce_sum_vjp(%a: tensor<3x4xf64>, %c: tensor<3xf64>, %dy: tensor<3xf64>) -> (tensor<3x4xf64>, tensor<3xf64>) {
  %y, %pb = ad.forward @reduce_sum(%a, %c) : (tensor<3x4xf64>, tensor<3xf64>) -> (tensor<3xf64>, !ad.pullback<(tensor<3xf64>) -> (tensor<3x4xf64>, tensor<3xf64>)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3xf64>) -> (tensor<3x4xf64>, tensor<3xf64>)>
  return %g0, %g1 : tensor<3x4xf64>, tensor<3xf64>
}

// -----

// map: the two adjoint generics (one per input) run the same loops and
// are merged into one with two outputs.
// CHECK-LABEL: func.func private @map_ad_pb_0_1_2
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]}
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f64, f64
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @map(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>, %c: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %r = linalg.map ins(%a, %b : tensor<2x3xf64>, tensor<2x3xf64>) outs(%c : tensor<2x3xf64>)
    (%x: f64, %y: f64, %o: f64) {
      %p = arith.mulf %x, %y : f64
      linalg.yield %p : f64
    }
  return %r : tensor<2x3xf64>
}
func.func @map_vjp(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>, %c: tensor<2x3xf64>, %dy: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>) {
  %y, %pb = ad.forward @map(%a, %b, %c) : (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>) -> (tensor<2x3xf64>, !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>)>)
  %g0, %g1, %g2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>)>
  return %g0, %g1, %g2 : tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>
}

// -----

// add: both inputs get the cotangent itself (no copies), the init zero.
// CHECK-LABEL: func.func private @add_ad_pb_0_1_2
// CHECK-SAME: (%[[DY:.*]]: tensor<2x3xf64>)
// CHECK-NOT: linalg.generic
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: return %[[DY]], %[[DY]], %[[Z]]
func.func @add(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>, %c: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %r = linalg.add ins(%a, %b : tensor<2x3xf64>, tensor<2x3xf64>) outs(%c : tensor<2x3xf64>) -> tensor<2x3xf64>
  return %r : tensor<2x3xf64>
}
func.func @add_vjp(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>, %c: tensor<2x3xf64>, %dy: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>) {
  %y, %pb = ad.forward @add(%a, %b, %c) : (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>) -> (tensor<2x3xf64>, !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>)>)
  %g0, %g1, %g2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>)>
  return %g0, %g1, %g2 : tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>
}

// -----

// exp: the cotangent times exp(x), recomputed in the adjoint body.
// CHECK-LABEL: func.func private @exp_ad_pb_0_1
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf64>, %[[DY:.*]]: tensor<2x3xf64>)
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[DY]] :
// CHECK-NEXT: ^bb0(%[[XI:.*]]: f64, %[[DI:.*]]: f64, %{{.*}}: f64):
// CHECK-NEXT: %[[E:.*]] = math.exp %[[XI]]
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[DI]], %[[E]]
// CHECK-NEXT: linalg.yield %[[P]]
func.func @exp(%a: tensor<2x3xf64>, %c: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %r = linalg.exp ins(%a : tensor<2x3xf64>) outs(%c : tensor<2x3xf64>) -> tensor<2x3xf64>
  return %r : tensor<2x3xf64>
}
func.func @exp_vjp(%a: tensor<2x3xf64>, %c: tensor<2x3xf64>, %dy: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
  %y, %pb = ad.forward @exp(%a, %c) : (tensor<2x3xf64>, tensor<2x3xf64>) -> (tensor<2x3xf64>, !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>)>
  return %g0, %g1 : tensor<2x3xf64>, tensor<2x3xf64>
}

// -----

// pooling_nhwc_sum: the input's map (h + kh) is not a permutation, so its
// adjoint accumulates with every loop a reduction; the window, read only
// for its shape, gets no pass at all.
// CHECK-LABEL: func.func private @pooling_sum_ad_pb_0_1_2
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "reduction", "reduction", "reduction", "reduction"]} {{.*}} outs(%{{.*}} : tensor<1x4x4x1xf64>)
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @pooling_sum(%i: tensor<1x4x4x1xf64>, %w: tensor<2x2xf64>, %c: tensor<1x3x3x1xf64>) -> tensor<1x3x3x1xf64> {
  %r = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%i, %w : tensor<1x4x4x1xf64>, tensor<2x2xf64>) outs(%c : tensor<1x3x3x1xf64>) -> tensor<1x3x3x1xf64>
  return %r : tensor<1x3x3x1xf64>
}
func.func @pooling_sum_vjp(%i: tensor<1x4x4x1xf64>, %w: tensor<2x2xf64>, %c: tensor<1x3x3x1xf64>, %dy: tensor<1x3x3x1xf64>) -> (tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>) {
  %y, %pb = ad.forward @pooling_sum(%i, %w, %c) : (tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>) -> (tensor<1x3x3x1xf64>, !ad.pullback<(tensor<1x3x3x1xf64>) -> (tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>)>)
  %g0, %g1, %g2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<1x3x3x1xf64>) -> (tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>)>
  return %g0, %g1, %g2 : tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>
}

// -----

// pooling_nhwc_max: ties are counted first (the winners share the
// cotangent), then the input's adjoint sends each share to where the
// maximum was reached.
// CHECK-LABEL: func.func private @pooling_max_ad_pb_0_1_2
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x3x3x1xf64>)
// CHECK: arith.cmpf oeq
// CHECK: arith.select
// CHECK: %[[SHARE:.*]] = arith.divf
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[SHARE]], %{{.*}} : {{.*}}) outs(%{{.*}} : tensor<1x4x4x1xf64>)
// CHECK: arith.cmpf oeq
// CHECK: arith.select
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @pooling_max(%i: tensor<1x4x4x1xf64>, %w: tensor<2x2xf64>, %c: tensor<1x3x3x1xf64>) -> tensor<1x3x3x1xf64> {
  %r = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%i, %w : tensor<1x4x4x1xf64>, tensor<2x2xf64>) outs(%c : tensor<1x3x3x1xf64>) -> tensor<1x3x3x1xf64>
  return %r : tensor<1x3x3x1xf64>
}
func.func @pooling_max_vjp(%i: tensor<1x4x4x1xf64>, %w: tensor<2x2xf64>, %c: tensor<1x3x3x1xf64>, %dy: tensor<1x3x3x1xf64>) -> (tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>) {
  %y, %pb = ad.forward @pooling_max(%i, %w, %c) : (tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>) -> (tensor<1x3x3x1xf64>, !ad.pullback<(tensor<1x3x3x1xf64>) -> (tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>)>)
  %g0, %g1, %g2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<1x3x3x1xf64>) -> (tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>)>
  return %g0, %g1, %g2 : tensor<1x4x4x1xf64>, tensor<2x2xf64>, tensor<1x3x3x1xf64>
}

// -----

// arith and math on whole tensors use the scalar rules elementwise. The
// tape is (a b, b, a): the cotangent of a needs b first.
// CHECK-LABEL: func.func private @elementwise_ad_fwd_0_1
// CHECK-SAME: (%[[FA:.*]]: tensor<2x3xf64>, %[[FB:.*]]: tensor<2x3xf64>)
// CHECK: %[[FP:.*]] = arith.mulf %[[FA]], %[[FB]]
// CHECK: return %{{.*}}, %[[FP]], %[[FB]], %[[FA]]
// CHECK-LABEL: func.func private @elementwise_ad_pb_0_1
// CHECK-SAME: (%[[P:.*]]: tensor<2x3xf64>, %[[B:.*]]: tensor<2x3xf64>, %[[A:.*]]: tensor<2x3xf64>, %[[DY:.*]]: tensor<2x3xf64>)
// CHECK: %[[C:.*]] = math.cos %[[P]] : tensor<2x3xf64>
// CHECK: %[[DP:.*]] = arith.mulf %[[DY]], %[[C]] : tensor<2x3xf64>
// CHECK: %[[DA:.*]] = arith.mulf %[[DP]], %[[B]] : tensor<2x3xf64>
// CHECK: %[[DB:.*]] = arith.mulf %[[DP]], %[[A]] : tensor<2x3xf64>
// CHECK: return %[[DA]], %[[DB]]
func.func @elementwise(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %p = arith.mulf %a, %b : tensor<2x3xf64>
  %r = math.sin %p : tensor<2x3xf64>
  return %r : tensor<2x3xf64>
}
func.func @elementwise_vjp(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>, %dy: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
  %y, %pb = ad.forward @elementwise(%a, %b) : (tensor<2x3xf64>, tensor<2x3xf64>) -> (tensor<2x3xf64>, !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>)>
  return %g0, %g1 : tensor<2x3xf64>, tensor<2x3xf64>
}

// -----

// reduce (product): written as its loop nest before differentiation. The
// adjoint of a factor is the product of the others, which dividing the
// result by the factor gets wrong when the product underflows to zero; the
// reverse nest multiplies the running cotangent by the taped partial
// products instead (no division anywhere).
// CHECK-LABEL: func.func private @reduce_prod_ad_pb_0_1
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load
// CHECK: memref.load
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK-NOT: arith.divf
// CHECK: return
func.func @reduce_prod(%a: tensor<3x4xf64>, %c: tensor<3xf64>) -> tensor<3xf64> {
  %r = linalg.reduce ins(%a : tensor<3x4xf64>) outs(%c : tensor<3xf64>) dimensions = [1]
    (%in: f64, %acc: f64) {
      %m = arith.mulf %in, %acc : f64
      linalg.yield %m : f64
    }
  return %r : tensor<3xf64>
}
func.func @reduce_prod_vjp(%a: tensor<3x4xf64>, %c: tensor<3xf64>, %dy: tensor<3xf64>) -> (tensor<3x4xf64>, tensor<3xf64>) {
  %y, %pb = ad.forward @reduce_prod(%a, %c) : (tensor<3x4xf64>, tensor<3xf64>) -> (tensor<3xf64>, !ad.pullback<(tensor<3xf64>) -> (tensor<3x4xf64>, tensor<3xf64>)>)
  %g0, %g1 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3xf64>) -> (tensor<3x4xf64>, tensor<3xf64>)>
  return %g0, %g1 : tensor<3x4xf64>, tensor<3xf64>
}
