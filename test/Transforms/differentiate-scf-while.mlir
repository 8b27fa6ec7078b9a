// RUN: ad-opt %s --split-input-file --ad-generate-derivatives | FileCheck %s

// scf.while: the forward loop carries a row counter and a growable tape,
// doubled (realloc) when the next row does not fit; rows hold what the
// adjoint reads, here s (one slot). The pullback runs a for loop over the
// rows, last first.
// CHECK-LABEL: func.func private @growth_ad_fwd_0_1
// CHECK: %[[W:.*]] = arith.constant 1 : index
// CHECK: %[[TAPE:.*]] = memref.alloc(%{{.*}}) : memref<?xf64>
// CHECK: %[[LOOP:.*]]:3 = scf.while (%[[S:.*]] = %{{.*}}, %[[ROW:.*]] = %{{.*}}, %[[BUF:.*]] = %[[TAPE]])
// CHECK: %[[FULL:.*]] = arith.cmpi ugt
// CHECK: %[[GROWN:.*]] = scf.if %[[FULL]] -> (memref<?xf64>) {
// CHECK: memref.realloc
// CHECK: scf.condition(%{{.*}}) %[[S]], %[[ROW]], %[[GROWN]]
// CHECK: } do {
// CHECK: ^bb0(%[[S2:.*]]: f64, %[[ROW2:.*]]: index, %[[BUF2:.*]]: memref<?xf64>):
// CHECK: memref.store %[[S2]], %[[BUF2]][%{{.*}}]
// CHECK: %[[NEXT:.*]] = arith.addi %[[ROW2]], %{{.*}} : index
// CHECK: scf.yield %{{.*}}, %[[NEXT]], %[[BUF2]]
// CHECK: return %[[LOOP]]#0, %[[LOOP]]#1, %{{.*}}, %[[LOOP]]#2 :
// CHECK-LABEL: func.func private @growth_ad_pb_0_1
// CHECK-SAME: (%[[LAST:.*]]: index, %{{.*}}: f64, %[[TB:.*]]: memref<?xf64>, %{{.*}}: f64)
// CHECK: scf.for
// CHECK: %[[R:.*]] = arith.subi %[[LAST]]
// CHECK: memref.load %[[TB]]
func.func @growth(%x: f64, %y: f64) -> f64 {
  %ten = arith.constant 10.0 : f64
  %r = scf.while (%s = %y) : (f64) -> f64 {
    %go = arith.cmpf olt, %s, %ten : f64
    scf.condition(%go) %s : f64
  } do {
  ^bb0(%s: f64):
    %m = arith.mulf %s, %x : f64
    scf.yield %m : f64
  }
  return %r : f64
}

func.func @caller(%x: f64, %y: f64) -> (f64, f64) {
  %gx, %gy = ad.grad @growth(%x, %y) : (f64, f64) -> (f64, f64)
  return %gx, %gy : f64, f64
}

// -----

// scf.index_switch replays the recorded case; scf.execute_region is inlined.
// CHECK-LABEL: func.func private @switch_ad_fwd_0
// CHECK-NOT: scf.execute_region
// CHECK: scf.index_switch
// CHECK-LABEL: func.func private @switch_ad_pb_0
// CHECK-SAME: (%[[K:.*]]: index,
// CHECK: scf.index_switch %[[K]] -> f64
// CHECK: case 0 {
// CHECK: math.cos
// CHECK: default {
func.func @switch(%x: f64, %k: index) -> f64 {
  %r = scf.index_switch %k -> f64
  case 0 {
    %s = math.sin %x : f64
    scf.yield %s : f64
  }
  default {
    %e = scf.execute_region -> f64 {
      %m = arith.mulf %x, %x : f64
      scf.yield %m : f64
    }
    scf.yield %e : f64
  }
  return %r : f64
}

func.func @caller(%x: f64, %k: index) -> f64 {
  %g = ad.grad @switch(%x, %k) : (f64, index) -> f64
  return %g : f64
}

// -----

// Recursion: the recursive versions share one tape; the callees take their
// rows first, then the invocation takes the next free row and stores its
// values there (rows in post-order). The entry points for outside callers
// start a fresh tape, sized by the most rows an earlier call needed (an i64
// global read and raised atomically), at row 0, and the pullback starts at
// the first invocation's row: the last one.
// A recursion that only computes is restartable: the recursive forward
// takes the tape but returns only the next free row; a row past the tape's
// end is stored in its last row (the store's offset is clamped), and the
// entry point, when the rows did not fit, reallocates the tape and runs the
// recursion again.
// CHECK-LABEL: memref.global "private" @power_ad_fwd_0_tape_rows : memref<i64> = dense<0>
// CHECK-LABEL: func.func private @power_ad_fwd_0
// CHECK: %[[HINT:.*]] = memref.get_global @power_ad_fwd_0_tape_rows
// CHECK: memref.atomic_rmw maxu %{{.*}}, %[[HINT]][]
// CHECK: %[[T0:.*]] = memref.alloc
// CHECK: %[[R:.*]]:2 = call @power_ad_fwdrec_0(%[[X:.*]], %[[N:.*]], %[[T0]], %[[ZERO:.*]]) : (f64, i32, memref<?xf64>, index) -> (f64, index)
// CHECK: %[[USED:.*]] = arith.addi %[[R]]#1, %{{.*}} : index
// CHECK: %[[NEEDED:.*]] = arith.muli %[[USED]], %{{.*}} : index
// CHECK: %[[CAP:.*]] = memref.dim %[[T0]]
// CHECK: %[[OVER:.*]] = arith.cmpi ugt, %[[NEEDED]], %[[CAP]]
// CHECK: %[[T1:.*]] = scf.if %[[OVER]] -> (memref<?xf64>) {
// CHECK: %[[LARGER:.*]] = memref.realloc %[[T0]]
// CHECK: func.call @power_ad_fwdrec_0(%[[X]], %[[N]], %[[LARGER]], %[[ZERO]])
// CHECK: scf.yield %[[LARGER]]
// CHECK: } else {
// CHECK: scf.yield %[[T0]]
// CHECK: memref.dim %[[T1]]
// CHECK: memref.atomic_rmw maxu
// CHECK: %[[LAST:.*]] = arith.subi %[[R]]#1, %{{.*}} : index
// CHECK: return %[[R]]#0, %[[T1]], %[[LAST]], %[[X]] : f64, memref<?xf64>, index, f64
// CHECK-LABEL: func.func private @power_ad_pb_0
// CHECK-SAME: (%[[ETAPE:.*]]: memref<?xf64>, %[[EROW:.*]]: index, %[[EX:.*]]: f64, %[[SEED:.*]]: f64)
// CHECK: call @power_ad_pbrec_0(%[[ETAPE]], %[[EROW]], %[[EX]], %[[SEED]])
// CHECK-LABEL: func.func private @power_ad_fwdrec_0
// CHECK-SAME: (%{{.*}}: f64, %{{.*}}: i32, %[[TAPE:.*]]: memref<?xf64>, %[[FIRST:.*]]: index) -> (f64, index)
// CHECK-NOT: memref.store
// CHECK: scf.yield {{.*}}%[[FIRST]]
// CHECK: } else {
// CHECK: %[[C:.*]]:2 = func.call @power_ad_fwdrec_0(%{{.*}}, %{{.*}}, %[[TAPE]], %[[FIRST]]) :
// CHECK: %[[CROW:.*]] = arith.subi %[[C]]#1, %{{.*}} : index
// CHECK: scf.yield {{.*}}%[[C]]#1, %[[C]]#0, %[[CROW]]
// CHECK-NOT: memref.realloc
// CHECK: %[[BASE:.*]] = arith.muli %[[ROW:.*]], %[[WIDTH:.*]] : index
// CHECK: %[[END:.*]] = memref.dim %[[BUF:[^,]*]],
// CHECK: %[[LASTROW:.*]] = arith.subi %[[END]], %[[WIDTH]]
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[BASE]], %[[LASTROW]]
// CHECK: %[[SLOT:.*]] = arith.addi %[[CLAMPED]], %{{.*}}
// CHECK: memref.store %{{.*}}, %[[BUF]][%[[SLOT]]]
// CHECK-NOT: func.call
// CHECK-NOT: memref.realloc
// CHECK: %[[AFTER:.*]] = arith.addi %[[ROW]], %c1
// CHECK: return %{{.*}}, %[[AFTER]] : f64, index
// x, which every call passes on unchanged, is not kept in the rows: the
// pullback takes it after the tape and the row, and passes it on.
// CHECK-LABEL: func.func private @power_ad_pbrec_0
// CHECK-SAME: (%[[PTAPE:.*]]: memref<?xf64>, %{{.*}}: index, %[[PX:.*]]: f64, %{{.*}}: f64) -> f64
// CHECK: func.call @power_ad_pbrec_0(%[[PTAPE]], %{{.*}}, %[[PX]],
func.func @power(%x: f64, %n: i32) -> f64 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %one = arith.constant 1.0 : f64
  %done = arith.cmpi sle, %n, %c0 : i32
  %r = scf.if %done -> f64 {
    scf.yield %one : f64
  } else {
    %m = arith.subi %n, %c1 : i32
    %p = func.call @power(%x, %m) : (f64, i32) -> f64
    %q = arith.mulf %p, %x : f64
    scf.yield %q : f64
  }
  return %r : f64
}

func.func @caller(%x: f64, %n: i32) -> f64 {
  %g = ad.grad @power(%x, %n) : (f64, i32) -> f64
  return %g : f64
}

// -----

// A recursion that may do something else than compute (here, call a
// function without a body) cannot be run again: its recursive forward
// threads the tape through its result, growing it when a row does not fit.
// CHECK-LABEL: func.func private @traced_ad_fwd_0
// CHECK: %[[T0:.*]] = memref.alloc
// CHECK: %[[R:.*]]:3 = call @traced_ad_fwdrec_0(%[[X:.*]], %{{.*}}, %[[T0]], %{{.*}}) : (f64, i32, memref<?xf64>, index) -> (f64, memref<?xf64>, index)
// CHECK-NOT: call @traced_ad_fwdrec_0
// CHECK: memref.dim %[[R]]#1
// CHECK: memref.atomic_rmw maxu
// CHECK: %[[LAST:.*]] = arith.subi %[[R]]#2, %{{.*}} : index
// CHECK: return %[[R]]#0, %[[R]]#1, %[[LAST]], %[[X]] : f64, memref<?xf64>, index, f64
// CHECK-LABEL: func.func private @traced_ad_fwdrec_0
// CHECK-SAME: (%{{.*}}: f64, %{{.*}}: i32, %[[TAPE:.*]]: memref<?xf64>, %[[FIRST:.*]]: index) -> (f64, memref<?xf64>, index)
// CHECK-NOT: memref.store
// CHECK: scf.yield {{.*}}%[[TAPE]], %[[FIRST]]
// CHECK: } else {
// CHECK: func.call @trace
// CHECK: %[[C:.*]]:3 = func.call @traced_ad_fwdrec_0(%{{.*}}, %{{.*}}, %[[TAPE]], %[[FIRST]]) :
// CHECK: %[[CROW:.*]] = arith.subi %[[C]]#2, %{{.*}} : index
// CHECK: scf.yield {{.*}}%[[C]]#1, %[[C]]#2, %[[C]]#0, %[[CROW]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[ROW:.*]], %c1
// CHECK: %[[GROWN:.*]] = scf.if
// CHECK: memref.realloc
// CHECK-NOT: arith.minui
// CHECK: memref.store %{{.*}}, %[[GROWN]]
// CHECK-NOT: func.call
// CHECK: %[[AFTER:.*]] = arith.addi %[[ROW]], %c1
// CHECK: return %{{.*}}, %[[GROWN]], %[[AFTER]] : f64, memref<?xf64>, index
func.func private @trace(i32)
func.func @traced(%x: f64, %n: i32) -> f64 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %one = arith.constant 1.0 : f64
  %done = arith.cmpi sle, %n, %c0 : i32
  %r = scf.if %done -> f64 {
    scf.yield %one : f64
  } else {
    func.call @trace(%n) : (i32) -> ()
    %m = arith.subi %n, %c1 : i32
    %p = func.call @traced(%x, %m) : (f64, i32) -> f64
    %q = arith.mulf %p, %x : f64
    scf.yield %q : f64
  }
  return %r : f64
}

func.func @caller(%x: f64, %n: i32) -> f64 {
  %g = ad.grad @traced(%x, %n) : (f64, i32) -> f64
  return %g : f64
}

// -----

// A loop calling a restartable recursion shares one tape with all such
// calls of its function: before each call the tape grows so that the
// call's first row fits (the rows that do not fit go to the tape's last
// row, which must be one the call fills), and after it, if its rows did
// not fit, the tape is reallocated and the call made again.
// CHECK-LABEL: func.func private @sum_ad_fwd_0
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[TAPE:.*]] = %{{.*}}, %[[ROW:.*]] = %{{.*}}) -> (f64, memref<?xf64>, index)
// CHECK: %[[FITS:.*]] = scf.if
// CHECK: memref.realloc %[[TAPE]]
// CHECK: %[[R:.*]]:2 = func.call @pow_ad_fwdrec_0(%[[X:[^,]*]], %[[N:[^,]*]], %[[FITS]], %[[ROW]])
// CHECK: %[[AGAIN:.*]] = scf.if
// CHECK: %[[LARGER:.*]] = memref.realloc %[[FITS]]
// CHECK: func.call @pow_ad_fwdrec_0(%[[X]], %[[N]], %[[LARGER]], %[[ROW]])
// CHECK: scf.yield %[[LARGER]]
// CHECK: scf.yield %[[FITS]]
// CHECK: scf.yield {{.*}}%[[AGAIN]], %[[R]]#1
func.func @pow(%x: f64, %n: i32) -> f64 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %one = arith.constant 1.0 : f64
  %done = arith.cmpi sle, %n, %c0 : i32
  %r = scf.if %done -> f64 {
    scf.yield %one : f64
  } else {
    %m = arith.subi %n, %c1 : i32
    %p = func.call @pow(%x, %m) : (f64, i32) -> f64
    %q = arith.mulf %p, %x : f64
    scf.yield %q : f64
  }
  return %r : f64
}

func.func @sum(%x: f64, %k: index, %n: i32) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %k step %c1 iter_args(%s = %x) -> f64 {
    %p = func.call @pow(%s, %n) : (f64, i32) -> f64
    %t = arith.addf %p, %x : f64
    scf.yield %t : f64
  }
  return %r : f64
}

func.func @caller(%x: f64, %k: index, %n: i32) -> f64 {
  %g = ad.grad @sum(%x, %k, %n) {wrt = array<i64: 0>} : (f64, index, i32) -> f64
  return %g : f64
}

// -----

// A triangular nest: the inner trip count depends on the outer induction
// variable, so the inner loop fills rows of a growable tape (carried through
// the outer loop) instead of a buffer sized at entry. Each run of the inner
// loop takes its trip count of rows at its entry (growing the tape once).
// CHECK-LABEL: func.func private @triangle_ad_fwd_0
// CHECK: %[[TAPE:.*]] = memref.alloc({{.*}}) : memref<?xf64>
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[OUTER_TAPE:.*]] = %[[TAPE]], %{{.*}} = %{{.*}}) -> (f64, memref<?xf64>, index)
// CHECK: memref.realloc
// CHECK: scf.for {{.*}} -> (f64, memref<?xf64>, index)
// CHECK-NOT: memref.realloc
// CHECK: memref.store
// CHECK-LABEL: func.func private @triangle_ad_pb_0
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load
func.func @triangle(%x: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %x) -> (f64) {
    %t = scf.for %j = %c0 to %i step %c1 iter_args(%u = %s) -> (f64) {
      %m = arith.mulf %u, %x : f64
      %n = math.sin %m : f64
      scf.yield %n : f64
    }
    scf.yield %t : f64
  }
  return %r : f64
}

func.func @caller(%x: f64) -> f64 {
  %g = ad.grad @triangle(%x) : (f64) -> f64
  return %g : f64
}

// -----

// A tensor of static shape read by the adjoint in every iteration takes
// one slot per element of the row (6 here): the forward widens it to f64
// and writes it in place into a view of its slots, the pullback reads the
// same view back and narrows it.
// CHECK-LABEL: func.func private @tensor_rows_ad_fwd_0
// CHECK: %[[W:.*]] = arith.constant 6 : index
// CHECK: scf.while
// CHECK: %[[WIDE:.*]] = arith.extf %{{.*}} : tensor<2x3xf32> to tensor<2x3xf64>
// CHECK: %[[SLOTS:.*]] = memref.subview %{{.*}}[%{{.*}}] [6] [1] : memref<?xf64> to memref<6xf64, strided<[1], offset: ?>>
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[SLOTS]] {{\[\[}}0, 1]] output_shape [2, 3]
// CHECK: bufferization.materialize_in_destination %[[WIDE]] in restrict writable %[[VIEW]]
// CHECK-LABEL: func.func private @tensor_rows_ad_pb_0
// CHECK: %[[RS:.*]] = memref.subview %{{.*}}[%{{.*}}] [6] [1]
// CHECK: %[[RV:.*]] = memref.expand_shape %[[RS]]
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[RV]] restrict
// CHECK: arith.truncf %[[T]] : tensor<2x3xf64> to tensor<2x3xf32>
func.func @tensor_rows(%t: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %one = arith.constant 1.0 : f32
  %r:2 = scf.while (%v = %t, %s = %one) : (tensor<2x3xf32>, f32) -> (tensor<2x3xf32>, f32) {
    %ten = arith.constant 10.0 : f32
    %go = arith.cmpf olt, %s, %ten : f32
    scf.condition(%go) %v, %s : tensor<2x3xf32>, f32
  } do {
  ^bb0(%v: tensor<2x3xf32>, %s: f32):
    %w = math.sin %v : tensor<2x3xf32>
    %two = arith.constant 2.0 : f32
    %s2 = arith.mulf %s, %two : f32
    scf.yield %w, %s2 : tensor<2x3xf32>, f32
  }
  return %r#0 : tensor<2x3xf32>
}

func.func @tensor_rows_vjp(%t: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y, %pb = ad.forward @tensor_rows(%t) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, !ad.pullback<(tensor<2x3xf32>) -> tensor<2x3xf32>>)
  %g = ad.pullback %pb(%dy) : !ad.pullback<(tensor<2x3xf32>) -> tensor<2x3xf32>>
  return %g : tensor<2x3xf32>
}

// -----

// The adjoints of the extract and of the pad need only the padded tensor's
// size, which changes from row to row: the forward keeps the size (one
// slot), not the tensor, and the pullback reads it back for the shape of
// the cotangent it scatters the element into.
// CHECK-LABEL: func.func private @pad_rows_ad_fwd_0
// CHECK: scf.while
// CHECK: %[[P:.*]] = tensor.pad
// CHECK: %[[D:.*]] = tensor.dim %[[P]], %{{.*}} : tensor<?xf64>
// CHECK: %[[I:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK: %[[B:.*]] = arith.bitcast %[[I]] {ad.tape_slot} : i64 to f64
// CHECK: memref.store %[[B]]
// CHECK-LABEL: func.func private @pad_rows_ad_pb_0
// CHECK: scf.for
// CHECK: memref.load
// CHECK: tensor.empty(%{{[0-9]+}}) : tensor<?xf64>
// CHECK-NOT: tensor.pad
// CHECK-LABEL: func.func @pad_rows_grad
func.func @pad_rows(%x: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %r:2 = scf.while (%i = %c0, %acc = %zero) : (index, f64) -> (index, f64) {
    %go = arith.cmpi slt, %i, %c3 : index
    scf.condition(%go) %i, %acc : index, f64
  } do {
  ^bb0(%i: index, %acc: f64):
    %m = arith.subi %n, %i : index
    %s = tensor.extract_slice %x[%i] [%m] [1] : tensor<?xf64> to tensor<?xf64>
    %p = tensor.pad %s low[%i] high[0] {
    ^bb0(%j: index):
      tensor.yield %zero : f64
    } : tensor<?xf64> to tensor<?xf64>
    %v = tensor.extract %p[%c1] : tensor<?xf64>
    %w = arith.mulf %v, %v : f64
    %a = arith.addf %acc, %w : f64
    %i1 = arith.addi %i, %c1 : index
    scf.yield %i1, %a : index, f64
  }
  return %r#1 : f64
}

func.func @pad_rows_grad(%x: tensor<?xf64>) -> tensor<?xf64> {
  %g = ad.grad @pad_rows(%x) : (tensor<?xf64>) -> tensor<?xf64>
  return %g : tensor<?xf64>
}

// -----

// A sum of the carried tensor, which shrinks by one element per row: the
// tape cannot keep the tensor, and the sum's adjoint reads no element of
// it (the cotangent broadcast over its shape): the row keeps its size.
// CHECK-LABEL: func.func private @sum_rows_ad_fwd_0
// CHECK: scf.while
// CHECK: tensor.dim
// CHECK: {ad.tape_slot}
// CHECK-LABEL: func.func private @sum_rows_ad_pb_0
// CHECK: scf.for
// CHECK: %[[SHAPE:.*]] = tensor.empty(%{{[0-9]+}}) : tensor<?xf64>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?xf64>)
// CHECK-LABEL: func.func @sum_rows_grad
func.func @sum_rows(%x: tensor<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %r:2 = scf.while (%t = %x, %acc = %zero) : (tensor<?xf64>, f64) -> (tensor<?xf64>, f64) {
    %k = tensor.dim %t, %c0 : tensor<?xf64>
    %go = arith.cmpi sgt, %k, %c0 : index
    scf.condition(%go) %t, %acc : tensor<?xf64>, f64
  } do {
  ^bb0(%t: tensor<?xf64>, %acc: f64):
    %e = tensor.empty() : tensor<f64>
    %z = linalg.fill ins(%zero : f64) outs(%e : tensor<f64>) -> tensor<f64>
    %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
        ins(%t : tensor<?xf64>) outs(%z : tensor<f64>) {
    ^bb0(%a: f64, %o: f64):
      %q = arith.addf %o, %a : f64
      linalg.yield %q : f64
    } -> tensor<f64>
    %sv = tensor.extract %s[] : tensor<f64>
    %ss = arith.mulf %sv, %sv : f64
    %acc2 = arith.addf %acc, %ss : f64
    %k = tensor.dim %t, %c0 : tensor<?xf64>
    %km1 = arith.subi %k, %c1 : index
    %u = tensor.extract_slice %t[1] [%km1] [1] : tensor<?xf64> to tensor<?xf64>
    scf.yield %u, %acc2 : tensor<?xf64>, f64
  }
  return %r#1 : f64
}

func.func @sum_rows_grad(%x: tensor<?xf64>) -> tensor<?xf64> {
  %g = ad.grad @sum_rows(%x) : (tensor<?xf64>) -> tensor<?xf64>
  return %g : tensor<?xf64>
}
