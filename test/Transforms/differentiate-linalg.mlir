// RUN: ad-opt %s --split-input-file --ad-differentiate | FileCheck %s

// broadcast: the adjoint generic has the input's map on its output; the
// broadcast dimension becomes a reduction (and the loops are ordered so
// the accumulator is written contiguously).
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func private @bcast_ad_pb_0
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [{{.*}}, #[[ROW]]], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: outs(%{{.*}} : tensor<4xf64>)
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
func.func @bcast(%a: tensor<4xf64>) -> tensor<f64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<3x4xf64>
  %b = linalg.broadcast ins(%a : tensor<4xf64>) outs(%e : tensor<3x4xf64>) dimensions = [0]
  %s0 = tensor.empty() : tensor<f64>
  %s1 = linalg.fill ins(%z : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %r = linalg.reduce ins(%b : tensor<3x4xf64>) outs(%s1 : tensor<f64>) dimensions = [0, 1]
    (%in: f64, %acc: f64) {
      %q = math.sin %in : f64
      %w = arith.addf %acc, %q : f64
      linalg.yield %w : f64
    }
  return %r : tensor<f64>
}

func.func @caller(%a: tensor<4xf64>) -> tensor<4xf64> {
  %g = ad.grad @bcast(%a) : (tensor<4xf64>) -> tensor<4xf64>
  return %g : tensor<4xf64>
}

// -----

// Convolution: the input's map (d1 + d4) is not a projected permutation,
// so its adjoint writes through that map with every loop a reduction; the
// filter's adjoint is an ordinary contraction.
// CHECK-DAG: #[[SHIFTED:.*]] = affine_map<({{.*}}) -> (d{{[0-9]}}, d{{[0-9]}} + d{{[0-9]}}, d{{[0-9]}} + d{{[0-9]}}, d{{[0-9]}})>
// CHECK-LABEL: func.func private @conv_ad_pb_0_1
// CHECK: linalg.generic {{{.*}}#[[SHIFTED]]], iterator_types = ["reduction", "reduction", "reduction", "reduction", "reduction", "reduction", "reduction"]}
// CHECK-SAME: outs(%{{.*}} : tensor<1x5x5x2xf64>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<3x3x2x2xf64>)
func.func @conv(%i: tensor<1x5x5x2xf64>, %f: tensor<3x3x2x2xf64>) -> tensor<f64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<1x3x3x2xf64>
  %o = linalg.fill ins(%z : f64) outs(%e : tensor<1x3x3x2xf64>) -> tensor<1x3x3x2xf64>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%i, %f : tensor<1x5x5x2xf64>, tensor<3x3x2x2xf64>) outs(%o : tensor<1x3x3x2xf64>) -> tensor<1x3x3x2xf64>
  %s0 = tensor.empty() : tensor<f64>
  %s1 = linalg.fill ins(%z : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %r = linalg.reduce ins(%c : tensor<1x3x3x2xf64>) outs(%s1 : tensor<f64>) dimensions = [0, 1, 2, 3]
    (%in: f64, %acc: f64) {
      %q = arith.mulf %in, %in : f64
      %w = arith.addf %acc, %q : f64
      linalg.yield %w : f64
    }
  return %r : tensor<f64>
}

func.func @caller(%i: tensor<1x5x5x2xf64>, %f: tensor<3x3x2x2xf64>) -> (tensor<1x5x5x2xf64>, tensor<3x3x2x2xf64>) {
  %gi, %gf = ad.grad @conv(%i, %f) : (tensor<1x5x5x2xf64>, tensor<3x3x2x2xf64>) -> (tensor<1x5x5x2xf64>, tensor<3x3x2x2xf64>)
  return %gi, %gf : tensor<1x5x5x2xf64>, tensor<3x3x2x2xf64>
}

// -----

// Slices: the cotangent of an extract_slice is inserted back into zeros at
// the same offsets; an insert_slice gives its source the matching slice.
// CHECK-LABEL: func.func private @slices_ad_pb_0
// CHECK: tensor.extract_slice %{{.*}}[2, 0] [2, 3] [1, 2] : tensor<4x5xf64> to tensor<2x3xf64>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[1, 1] [2, 3] [1, 1] : tensor<2x3xf64> into tensor<4x5xf64>
func.func @slices(%a: tensor<4x5xf64>) -> tensor<f64> {
  %z = arith.constant 0.0 : f64
  %s = tensor.extract_slice %a[1, 1] [2, 3] [1, 1] : tensor<4x5xf64> to tensor<2x3xf64>
  %m = math.exp %s : tensor<2x3xf64>
  %c = tensor.insert_slice %m into %a[2, 0] [2, 3] [1, 2] : tensor<2x3xf64> into tensor<4x5xf64>
  %s0 = tensor.empty() : tensor<f64>
  %s1 = linalg.fill ins(%z : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %r = linalg.reduce ins(%c : tensor<4x5xf64>) outs(%s1 : tensor<f64>) dimensions = [0, 1]
    (%in: f64, %acc: f64) {
      %q = arith.mulf %in, %in : f64
      %w = arith.addf %acc, %q : f64
      linalg.yield %w : f64
    }
  return %r : tensor<f64>
}

func.func @caller(%a: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %g = ad.grad @slices(%a) : (tensor<4x5xf64>) -> tensor<4x5xf64>
  return %g : tensor<4x5xf64>
}

// -----

// A max reduction counts the winners (ties share the cotangent) and sends
// the cotangent where the value equals the result.
// CHECK-LABEL: func.func private @maxred_ad_pb_0
// CHECK: linalg.generic
// CHECK: arith.cmpf oeq
// CHECK: arith.select
// CHECK: arith.divf
// CHECK: linalg.generic
// CHECK: arith.cmpf oeq
// CHECK: arith.select
func.func @maxred(%a: tensor<8xf64>) -> tensor<f64> {
  %low = arith.constant -1.0e30 : f64
  %s0 = tensor.empty() : tensor<f64>
  %s1 = linalg.fill ins(%low : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %r = linalg.reduce ins(%a : tensor<8xf64>) outs(%s1 : tensor<f64>) dimensions = [0]
    (%in: f64, %acc: f64) {
      %m = arith.maximumf %in, %acc : f64
      linalg.yield %m : f64
    }
  return %r : tensor<f64>
}

func.func @caller(%a: tensor<8xf64>) -> tensor<8xf64> {
  %g = ad.grad @maxred(%a) : (tensor<8xf64>) -> tensor<8xf64>
  return %g : tensor<8xf64>
}

// -----

// The values a max reduction compares are computed by a math function
// (atan), whose scalar and vector implementations may differ in the last
// bit: the pullback computes them once into a tensor over the iteration
// space, selects the result again from them, and every pass compares those
// (recomputing them in each pass could find no winner in one pass and one
// in the other: an infinite gradient).
// CHECK-LABEL: func.func private @maxatan_ad_pb_0
// CHECK-SAME: (%[[A:[^:]*]]: tensor<3x5xf64>, %[[INIT:[^:]*]]: tensor<3xf64>,
// CHECK: %[[MAPPED:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[A]] : tensor<3x5xf64>) outs(%{{.*}} : tensor<3x5xf64>)
// CHECK: math.atan
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[MAPPED]] : tensor<3x5xf64>) outs(%[[INIT]] : tensor<3xf64>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: f64, %[[ACC:.*]]: f64):
// CHECK-NEXT: arith.maximumf %[[V]], %[[ACC]]
// CHECK: arith.cmpf oeq, %[[INIT]], %[[MAX]]
// CHECK: linalg.generic {{.*}} ins(%[[MAPPED]], %[[MAX]] : tensor<3x5xf64>, tensor<3xf64>)
// CHECK-NOT: math.atan
// CHECK: arith.divf
// CHECK: linalg.generic {{.*}} ins(%[[A]], %{{.*}}, %[[MAX]], %[[MAPPED]] : tensor<3x5xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3x5xf64>)
// CHECK-NEXT: ^bb0(%{{[^:]*}}: f64, %{{[^:]*}}: f64, %[[M:[^:]*]]: f64, %[[V2:[^:]*]]: f64, %{{[^:]*}}: f64):
// CHECK-NEXT: arith.cmpf oeq, %[[V2]], %[[M]]
// CHECK-NOT: math.atan
// CHECK: return
func.func @maxatan(%a: tensor<3x5xf64>, %init: tensor<3xf64>) -> f64 {
  %r = linalg.reduce ins(%a : tensor<3x5xf64>) outs(%init : tensor<3xf64>) dimensions = [1]
    (%in: f64, %acc: f64) {
      %t = math.atan %in : f64
      %m = arith.maximumf %t, %acc : f64
      linalg.yield %m : f64
    }
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<f64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<f64>) -> tensor<f64>
  %s = linalg.reduce ins(%r : tensor<3xf64>) outs(%z : tensor<f64>) dimensions = [0]
    (%in: f64, %acc: f64) {
      %p = arith.addf %in, %acc : f64
      linalg.yield %p : f64
    }
  %v = tensor.extract %s[] : tensor<f64>
  return %v : f64
}

func.func @caller2(%a: tensor<3x5xf64>, %init: tensor<3xf64>) -> tensor<3x5xf64> {
  %g = ad.grad @maxatan(%a, %init) {wrt = array<i64: 0>} : (tensor<3x5xf64>, tensor<3xf64>) -> tensor<3x5xf64>
  return %g : tensor<3x5xf64>
}

// -----

// trace(A B): the pullback is two scaled transposes (the trace's diagonal
// cotangent is fused into the matmul adjoints, which lose their reduction),
// and the tape holds A and B but not the product.
// CHECK-DAG: #[[TR:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func private @mul_tr_ad_fwd_0_1
// CHECK: return %{{.*}}, %arg0, %arg1 : tensor<f64>, tensor<30x30xf64>, tensor<30x30xf64>
// CHECK-LABEL: func.func private @mul_tr_ad_pb_0_1
// CHECK-SAME: (%[[A:.*]]: tensor<30x30xf64>, %[[B:.*]]: tensor<30x30xf64>, %[[DS:.*]]: tensor<f64>)
// CHECK-NOT: linalg.fill
// CHECK: %[[DA:.*]] = linalg.generic {indexing_maps = [#[[TR]], {{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[B]], %[[DS]] :
// CHECK: %[[DB:.*]] = linalg.generic {indexing_maps = [#[[TR]], {{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[A]], %[[DS]] :
// CHECK-NOT: linalg.generic
// CHECK: return %[[DA]], %[[DB]]
func.func @mul_tr(%a: tensor<30x30xf64>, %b: tensor<30x30xf64>) -> tensor<f64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<30x30xf64>
  %c0 = linalg.fill ins(%z : f64) outs(%e : tensor<30x30xf64>) -> tensor<30x30xf64>
  %c = linalg.matmul ins(%a, %b : tensor<30x30xf64>, tensor<30x30xf64>) outs(%c0 : tensor<30x30xf64>) -> tensor<30x30xf64>
  %s = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%z : f64) outs(%s : tensor<f64>) -> tensor<f64>
  %t = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0, d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%c : tensor<30x30xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%x: f64, %acc: f64):
    %y = arith.addf %acc, %x : f64
    linalg.yield %y : f64
  } -> tensor<f64>
  return %t : tensor<f64>
}

func.func @mul_tr_grad(%a: tensor<30x30xf64>, %b: tensor<30x30xf64>) -> (tensor<30x30xf64>, tensor<30x30xf64>) {
  %ga, %gb = ad.grad @mul_tr(%a, %b) : (tensor<30x30xf64>, tensor<30x30xf64>) -> (tensor<30x30xf64>, tensor<30x30xf64>)
  return %ga, %gb : tensor<30x30xf64>, tensor<30x30xf64>
}

// -----

// A tensor.empty sized by tensor.dim of an active tensor depends on it, but
// carries nothing back (without canonicalization first, the sizes stay).
// CHECK-LABEL: func.func private @dyn_ad_pb_0
// CHECK: linalg.generic
func.func @dyn(%a: tensor<?xf64>) -> tensor<f64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %m = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%x: f64, %o: f64):
    %y = math.sin %x : f64
    linalg.yield %y : f64
  } -> tensor<?xf64>
  %z = arith.constant 0.0 : f64
  %s = tensor.empty() : tensor<f64>
  %s0 = linalg.fill ins(%z : f64) outs(%s : tensor<f64>) -> tensor<f64>
  %t = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%m : tensor<?xf64>) outs(%s0 : tensor<f64>) {
  ^bb0(%x: f64, %acc: f64):
    %y = arith.addf %acc, %x : f64
    linalg.yield %y : f64
  } -> tensor<f64>
  return %t : tensor<f64>
}

func.func @dyn_grad(%a: tensor<?xf64>) -> tensor<?xf64> {
  %g = ad.grad @dyn(%a) : (tensor<?xf64>) -> tensor<?xf64>
  return %g : tensor<?xf64>
}

// -----

// A recurrence on tensors: each iteration's input and tanh result go to a
// buffer with one row per iteration (allocated once, with the trip count),
// written in place with materialize_in_destination and read back in the
// reverse loop through a subview.
// CHECK-LABEL: func.func private @rnn_ad_fwd_0_1
// CHECK: %[[BUF:.*]] = memref.alloc(%{{.*}}) : memref<?x3xf64>
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = memref.subview %[[BUF]][%{{.*}}, 0] [1, 3] [1, 1] : memref<?x3xf64> to memref<3xf64, strided<[1], offset: ?>>
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[ROW]]
// CHECK-LABEL: func.func private @rnn_ad_pb_0_1
// CHECK: scf.for
// CHECK: %[[READ:.*]] = memref.subview %{{.*}}[%{{.*}}, 0] [1, 3] [1, 1]
// CHECK: bufferization.to_tensor %[[READ]] restrict : memref<3xf64, strided<[1], offset: ?>> to tensor<3xf64>
func.func @rnn(%w: tensor<3x3xf64>, %h0: tensor<3xf64>) -> tensor<3xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f64
  %h = scf.for %i = %c0 to %c4 step %c1 iter_args(%hi = %h0) -> (tensor<3xf64>) {
    %e = tensor.empty() : tensor<3xf64>
    %f = linalg.fill ins(%z : f64) outs(%e : tensor<3xf64>) -> tensor<3xf64>
    %m = linalg.matvec ins(%w, %hi : tensor<3x3xf64>, tensor<3xf64>) outs(%f : tensor<3xf64>) -> tensor<3xf64>
    %t = math.tanh %m : tensor<3xf64>
    scf.yield %t : tensor<3xf64>
  }
  return %h : tensor<3xf64>
}

func.func @rnn_vjp(%w: tensor<3x3xf64>, %h0: tensor<3xf64>, %dy: tensor<3xf64>) -> (tensor<3x3xf64>, tensor<3xf64>) {
  %y, %pb = ad.forward @rnn(%w, %h0) : (tensor<3x3xf64>, tensor<3xf64>) -> (tensor<3xf64>, !ad.pullback<(tensor<3xf64>) -> (tensor<3x3xf64>, tensor<3xf64>)>)
  %gw, %gh = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3xf64>) -> (tensor<3x3xf64>, tensor<3xf64>)>
  return %gw, %gh : tensor<3x3xf64>, tensor<3xf64>
}

// -----

// A gather: the generic's body reads rows of an active table by index. It
// is written as its loop nest before differentiation, so the adjoint is a
// scatter-add into the table's cotangent in the reverse loops (repeated
// indices accumulate).
// CHECK-LABEL: func.func private @embed_ad_fwd_0
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[ID:.*]] = tensor.extract %{{.*}}[%{{.*}}] : tensor<3xindex>
// CHECK: tensor.extract %arg0[%[[ID]], %{{.*}}] : tensor<5x2xf64>
// CHECK-LABEL: func.func private @embed_ad_pb_0
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<5x2xf64>
// CHECK: scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %[[Z]])
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[DT:.*]] = %{{.*}})
// CHECK: %[[I:.*]] = memref.load %{{.*}} : memref<?xindex>
// CHECK: %[[OLD:.*]] = tensor.extract %[[DT]][%[[I]], %{{.*}}] : tensor<5x2xf64>
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}} : f64
// CHECK: tensor.insert %[[NEW]] into %[[DT]][%[[I]], %{{.*}}] : tensor<5x2xf64>
func.func @embed(%table: tensor<5x2xf64>, %ids: tensor<3xindex>) -> tensor<3x2xf64> {
  %e = tensor.empty() : tensor<3x2xf64>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<3xindex>) outs(%e : tensor<3x2xf64>) {
  ^bb0(%id: index, %out: f64):
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%id, %j] : tensor<5x2xf64>
    %s = math.sin %v : f64
    linalg.yield %s : f64
  } -> tensor<3x2xf64>
  return %g : tensor<3x2xf64>
}

func.func @embed_vjp(%t: tensor<5x2xf64>, %ids: tensor<3xindex>, %dy: tensor<3x2xf64>) -> tensor<5x2xf64> {
  %y, %pb = ad.forward @embed(%t, %ids) : (tensor<5x2xf64>, tensor<3xindex>) -> (tensor<3x2xf64>, !ad.pullback<(tensor<3x2xf64>) -> tensor<5x2xf64>>)
  %g = ad.pullback %pb(%dy) : !ad.pullback<(tensor<3x2xf64>) -> tensor<5x2xf64>>
  return %g : tensor<5x2xf64>
}
