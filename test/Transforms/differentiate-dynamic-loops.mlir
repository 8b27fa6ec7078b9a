// RUN: ad-opt %s --split-input-file --ad-generate-derivatives | FileCheck %s

// A tensor of dynamic size read by the adjoint in every iteration is kept in
// a buffer of [iterations, size], the size computed before the loop from
// what the loop's init and body show it to be (here the argument's).
// CHECK-LABEL: func.func private @sines_ad_fwd_0
// CHECK-SAME: (%[[X:.*]]: tensor<?xf64>, %[[N:.*]]: index)
// CHECK: %[[SIZE:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?xf64>
// CHECK: %[[BUF:.*]] = memref.alloc(%{{.*}}, %[[SIZE]]) : memref<?x?xf64>
// CHECK: scf.for
// CHECK: %[[SLOT:.*]] = memref.subview %[[BUF]][%{{.*}}, 0] [1, %[[SIZE]]] [1, 1]
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[SLOT]]
// CHECK-LABEL: func.func private @sines_ad_pb_0
// CHECK-SAME: %[[PBUF:[^:]*]]: memref<?x?xf64>, %[[PSIZE:[^:]*]]: index
// CHECK: scf.for
// CHECK: memref.subview %[[PBUF]][%{{.*}}, 0] [1, %[[PSIZE]]] [1, 1]
// CHECK: math.cos
func.func @sines(%x: tensor<?xf64>, %n: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%y = %x) -> tensor<?xf64> {
    %len = tensor.dim %y, %c0 : tensor<?xf64>
    %e = tensor.empty(%len) : tensor<?xf64>
    %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
        ins(%y : tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %o: f64):
      %t = math.sin %a : f64
      linalg.yield %t : f64
    } -> tensor<?xf64>
    scf.yield %s : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}

func.func @caller(%x: tensor<?xf64>, %n: index, %dy: tensor<?xf64>) -> tensor<?xf64> {
  %y, %pb = ad.forward @sines(%x, %n) : (tensor<?xf64>, index) -> (tensor<?xf64>, !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>)
  %g = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>
  return %g : tensor<?xf64>
}

// -----

// A call in a loop. The callee's pullback reads its argument z only for its
// size (dz = 2 dy; with dz = dy it would pass dy on and read nothing): z is
// not kept, its size is (an index, computed once before the loop
// since it is the same in every iteration). Its other argument w is read,
// and is the caller's own: not kept per iteration either. Nothing is.
// CHECK-LABEL: func.func private @scale_ad_fwd_0_1
// CHECK-SAME: -> (tensor<?xf64>, tensor<?xf64>, index)
// CHECK-LABEL: func.func private @scale_ad_pb_0_1
// CHECK-SAME: (%{{.*}}: tensor<?xf64>, %{{.*}}: index, %{{.*}}: tensor<?xf64>)
// CHECK-LABEL: func.func private @steps_ad_fwd_0
// CHECK-SAME: (%[[W:.*]]: tensor<?xf64>, %{{.*}}: index)
// CHECK-NOT: memref.alloc
// CHECK: scf.for
// CHECK-NOT: memref.store
// CHECK: return
func.func private @scale(%z: tensor<?xf64>, %w: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %w, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%z, %w : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %t = math.tanh %b : f64
    %a2 = arith.addf %a, %a : f64
    %m = arith.addf %a2, %t : f64
    linalg.yield %m : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}

func.func @steps(%w: tensor<?xf64>, %n: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%y = %w) -> tensor<?xf64> {
    %s = func.call @scale(%y, %w) : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
    scf.yield %s : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}

func.func @caller(%w: tensor<?xf64>, %n: index, %dy: tensor<?xf64>) -> tensor<?xf64> {
  %y, %pb = ad.forward @steps(%w, %n) : (tensor<?xf64>, index) -> (tensor<?xf64>, !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>)
  %g = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf64>) -> tensor<?xf64>>
  return %g : tensor<?xf64>
}

// -----

// A slice of an argument taken in each iteration is taken again in the
// pullback from the argument, at the offset the reverse iteration rebuilds
// from its induction variable: nothing is kept per iteration.
// CHECK-LABEL: func.func private @rows_ad_fwd_0
// CHECK-NOT: memref.alloc
// CHECK: return
// CHECK-LABEL: func.func private @rows_ad_pb_0
// CHECK-SAME: (%{{.*}}: index, %[[A:[^:]*]]: tensor<?x?xf64>
// CHECK: scf.for %[[I:[^ ]*]] =
// CHECK: tensor.extract_slice %[[A]][%{{.*}}, 0] [1, %{{.*}}] [1, 1]
// CHECK: math.cos
func.func @rows(%a: tensor<?x?xf64>, %acc0: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf64>
  %n = tensor.dim %a, %c1 : tensor<?x?xf64>
  %r = scf.for %i = %c0 to %m step %c1 iter_args(%acc = %acc0) -> tensor<?xf64> {
    %row = tensor.extract_slice %a[%i, 0] [1, %n] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
    %s = linalg.generic {indexing_maps = [affine_map<(j) -> (j)>, affine_map<(j) -> (j)>], iterator_types = ["parallel"]}
        ins(%row : tensor<?xf64>) outs(%acc : tensor<?xf64>) {
    ^bb0(%v: f64, %o: f64):
      %t = math.sin %v : f64
      %u = arith.addf %o, %t : f64
      linalg.yield %u : f64
    } -> tensor<?xf64>
    scf.yield %s : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}

func.func @caller(%a: tensor<?x?xf64>, %acc: tensor<?xf64>, %dy: tensor<?xf64>) -> tensor<?x?xf64> {
  %y, %pb = ad.forward @rows(%a, %acc) : (tensor<?x?xf64>, tensor<?xf64>) -> (tensor<?xf64>, !ad.pullback<(tensor<?xf64>) -> (tensor<?x?xf64>, tensor<?xf64>)>)
  %g:2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf64>) -> (tensor<?x?xf64>, tensor<?xf64>)>
  return %g#0 : tensor<?x?xf64>
}

// -----

// The state starts with h0's size and the body sizes it by W's rows:
// equal sizes are what keeping it per iteration needs, and they cannot be
// proven, so the buffer takes h0's size and each store checks the state's
// size in the iterations that run.
// CHECK-LABEL: func.func private @rnn_ad_fwd_0
// CHECK-SAME: (%{{[^:]*}}: tensor<?x?xf64>, %[[H:[^:]*]]: tensor<?xf64>
// CHECK: %[[SIZE:.*]] = tensor.dim %[[H]], %c0
// CHECK-NOT: cf.assert
// CHECK: %[[BUF:.*]] = memref.alloc(%{{.*}}, %[[SIZE]]) : memref<?x?xf64>
// CHECK: scf.for {{.*}} iter_args(%[[STATE:[^ ]*]] =
// CHECK: %[[ACTUAL:.*]] = tensor.dim %[[STATE]], %{{.*}}
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[ACTUAL]], %[[SIZE]] : index
// CHECK: cf.assert %[[SAME]], "the derivative keeps this tensor in every iteration of its loop nest, in a buffer sized before the nest, and its size changed from one iteration to another"
// CHECK: memref.subview %[[BUF]]
func.func @rnn(%w: tensor<?x?xf64>, %h0: tensor<?xf64>, %n: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %rows = tensor.dim %w, %c0 : tensor<?x?xf64>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%h = %h0) -> tensor<?xf64> {
    %e = tensor.empty(%rows) : tensor<?xf64>
    %z = linalg.fill ins(%zero : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
    %u = linalg.matvec ins(%w, %h : tensor<?x?xf64>, tensor<?xf64>) outs(%z : tensor<?xf64>) -> tensor<?xf64>
    %t = math.tanh %u : tensor<?xf64>
    scf.yield %t : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}

func.func @caller(%w: tensor<?x?xf64>, %h: tensor<?xf64>, %n: index, %dy: tensor<?xf64>) -> tensor<?x?xf64> {
  %y, %pb = ad.forward @rnn(%w, %h, %n) : (tensor<?x?xf64>, tensor<?xf64>, index) -> (tensor<?xf64>, !ad.pullback<(tensor<?xf64>) -> (tensor<?x?xf64>, tensor<?xf64>)>)
  %g:2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf64>) -> (tensor<?x?xf64>, tensor<?xf64>)>
  return %g#0 : tensor<?x?xf64>
}

// -----

// Values an iteration computes from the tensor the loop carries by cheap
// elementwise ops (here t = y + k1 / 2 with k1 = x y, through calls of a
// short function of such ops, which are inlined) are computed again in the
// reverse iteration: the tape keeps y once per iteration, not y and t.
// CHECK-LABEL: func.func private @stages_ad_fwd_0
// CHECK: memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xf64>
// CHECK-NOT: memref.alloc
// CHECK: scf.for {{.*}} iter_args(%[[Y:[^ ]*]] =
// CHECK: bufferization.materialize_in_destination %[[Y]]
// CHECK-NOT: bufferization.materialize_in_destination
// CHECK-NOT: call
// CHECK: return
// CHECK-LABEL: func.func private @stages_ad_pb_0
// CHECK-SAME: (%{{[^:]*}}: index, %[[X:[^:]*]]: tensor<?xf64>, %[[TAPE:[^:]*]]: memref<?x?xf64>
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = memref.subview %[[TAPE]]
// CHECK: %[[YI:.*]] = bufferization.to_tensor %[[ROW]]
// CHECK: %[[K1:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[YI]] : tensor<?xf64>, tensor<?xf64>)
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[YI]], %[[K1]] : tensor<?xf64>, tensor<?xf64>)
// CHECK: linalg.generic {{.*}} ins(%[[T]],
// CHECK-NOT: call
// CHECK: return
func.func private @mul(%x: tensor<?xf64>, %y: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x, %y : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %m = arith.mulf %a, %b : f64
    linalg.yield %m : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}

func.func @stages(%x: tensor<?xf64>, %y0: tensor<?xf64>, %n: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%y = %y0) -> tensor<?xf64> {
    %k1 = func.call @mul(%x, %y) : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
    %m = tensor.dim %y, %c0 : tensor<?xf64>
    %e = tensor.empty(%m) : tensor<?xf64>
    %t = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
        ins(%y, %k1 : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %b: f64, %o: f64):
      %hb = arith.mulf %half, %b : f64
      %s = arith.addf %a, %hb : f64
      linalg.yield %s : f64
    } -> tensor<?xf64>
    %k2 = func.call @mul(%x, %t) : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
    %next = arith.addf %y, %k2 : tensor<?xf64>
    scf.yield %next : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}

func.func @caller_stages(%x: tensor<?xf64>, %y0: tensor<?xf64>, %n: index, %dy: tensor<?xf64>) -> tensor<?xf64> {
  %y, %pb = ad.forward @stages(%x, %y0, %n) : (tensor<?xf64>, tensor<?xf64>, index) -> (tensor<?xf64>, !ad.pullback<(tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>)>)
  %g:2 = ad.pullback %pb(%dy) : !ad.pullback<(tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>)>
  return %g#0 : tensor<?xf64>
}

// -----

// A row of the carried matrix is not computed again from the matrix: that
// would keep the whole matrix per iteration (review finding); the row is
// kept.
// CHECK-LABEL: func.func private @rowsq_ad_fwd_0
// CHECK: memref.alloc(%{{.*}}) : memref<?x256xf64>
// CHECK-NOT: memref.alloc
// CHECK: return
#id = affine_map<(i) -> (i)>
func.func @rowsq(%x: tensor<64x256xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %r = scf.for %i = %c0 to %c64 step %c1 iter_args(%a = %x) -> tensor<64x256xf64> {
    %row = tensor.extract_slice %a[%i, 0] [1, 256] [1, 1] : tensor<64x256xf64> to tensor<256xf64>
    %e = tensor.empty() : tensor<256xf64>
    %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%row : tensor<256xf64>) outs(%e : tensor<256xf64>) {
    ^bb0(%v: f64, %o: f64):
      %m = arith.mulf %v, %v : f64
      linalg.yield %m : f64
    } -> tensor<256xf64>
    %n = tensor.insert_slice %sq into %a[%i, 0] [1, 256] [1, 1] : tensor<256xf64> into tensor<64x256xf64>
    scf.yield %n : tensor<64x256xf64>
  }
  %zero = arith.constant 0.0 : f64
  %e0 = tensor.empty() : tensor<f64>
  %z = linalg.fill ins(%zero : f64) outs(%e0 : tensor<f64>) -> tensor<f64>
  %s = linalg.reduce ins(%r : tensor<64x256xf64>) outs(%z : tensor<f64>) dimensions = [0, 1]
    (%v: f64, %acc: f64) {
      %p = arith.addf %v, %acc : f64
      linalg.yield %p : f64
    }
  %v = tensor.extract %s[] : tensor<f64>
  return %v : f64
}
func.func @caller_rowsq(%x: tensor<64x256xf64>) -> tensor<64x256xf64> {
  %g = ad.grad @rowsq(%x) {wrt = array<i64: 0>} : (tensor<64x256xf64>) -> tensor<64x256xf64>
  return %g : tensor<64x256xf64>
}
