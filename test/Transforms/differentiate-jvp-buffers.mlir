// RUN: ad-opt %s --split-input-file --ad-differentiate | FileCheck %s

// Forward mode through buffers: a buffer of floats that may hold a value
// depending on a differentiated argument gets a shadow buffer of its type,
// allocated and zeroed with it; loads, stores, copies and views do the same
// on the shadow.

// CHECK-LABEL: func.func private @scratch_ad_jvp_0(
// CHECK-SAME: %[[X:.*]]: f64, %[[TX:.*]]: f64) -> (f64, f64)
// CHECK: %[[M:.*]] = memref.alloca() : memref<2xf64>
// CHECK: %[[S:.*]] = memref.alloca() : memref<2xf64>
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%[[S]] : memref<2xf64>)
// CHECK: memref.store %{{.*}}, %[[M]][%{{.*}}]
// CHECK: memref.store %{{.*}}, %[[S]][%{{.*}}]
// The loop has no results: it is rebuilt because it writes a shadowed buffer.
// CHECK: scf.for
// CHECK: memref.load %[[M]]
// CHECK: memref.load %[[S]]
// CHECK: memref.store %{{.*}}, %[[M]]
// CHECK: memref.store %{{.*}}, %[[S]]
// CHECK: bufferization.to_tensor %[[M]]
// CHECK: bufferization.to_tensor %[[S]]
func.func @scratch(%x: f64) -> f64 {
  %m = memref.alloca() : memref<2xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %sq = arith.mulf %x, %x : f64
  memref.store %sq, %m[%c0] : memref<2xf64>
  scf.for %i = %c0 to %c1 step %c1 {
    %v = memref.load %m[%i] : memref<2xf64>
    %s = math.sin %v : f64
    %n = arith.addi %i, %c1 : index
    memref.store %s, %m[%n] : memref<2xf64>
  }
  %t = bufferization.to_tensor %m restrict : memref<2xf64> to tensor<2xf64>
  %r = tensor.extract %t[%c1] : tensor<2xf64>
  return %r : f64
}

func.func @jvp_scratch(%x: f64, %t: f64) -> f64 {
  %y, %ty = ad.jvp @scratch(%x) tangents(%t) : (f64) -> (f64, f64)
  return %ty : f64
}

// -----

// A reallocated buffer: the shadow is reallocated to the same size and the
// elements it gains are zeroed; a copy copies the shadow.
// CHECK-LABEL: func.func private @grow_ad_jvp_0(
// CHECK: %[[OLD:.*]] = memref.dim %[[SHADOW:.*]], %{{.*}} : memref<?xf64>
// CHECK: memref.realloc %{{.*}}(%{{.*}}) : memref<?xf64> to memref<?xf64>
// CHECK: %[[GROWN:.*]] = memref.realloc %[[SHADOW]](%{{.*}}) : memref<?xf64> to memref<?xf64>
// CHECK: %[[NEW:.*]] = memref.dim %[[GROWN]]
// CHECK: %[[KEPT:.*]] = arith.minui %[[OLD]], %[[NEW]]
// CHECK: %[[GAINED:.*]] = arith.subi %[[NEW]], %[[KEPT]]
// CHECK: %[[TAIL:.*]] = memref.subview %[[GROWN]][%[[KEPT]]] [%[[GAINED]]] [1]
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%[[TAIL]]
// CHECK: memref.copy %{{.*}}, %{{.*}}
// CHECK: memref.copy %[[GROWN]], %{{.*}}
func.func @grow(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %b = memref.alloc(%n) : memref<?xf64>
  memref.store %x, %b[%c0] : memref<?xf64>
  %n2 = arith.addi %n, %n : index
  %big = memref.realloc %b(%n2) : memref<?xf64> to memref<?xf64>
  %copy = memref.alloc(%n2) : memref<?xf64>
  memref.copy %big, %copy : memref<?xf64> to memref<?xf64>
  %v = memref.load %copy[%c0] : memref<?xf64>
  %r = arith.mulf %v, %v : f64
  return %r : f64
}

func.func @jvp_grow(%x: f64, %n: index, %t: f64) -> f64 {
  %y, %ty = ad.jvp @grow(%x, %n) tangents(%t) : (f64, index) -> (f64, f64)
  return %ty : f64
}

// -----

// Forward over reverse through a loop: the gradient's tape is a buffer,
// whose shadow the forward function fills and the pullback reads.
// CHECK-LABEL: func.func private @f_ad_fwd_0_ad_jvp_0(
// CHECK-SAME: -> (f64, index, memref<?xf64>, f64, memref<?xf64>)
// CHECK: %[[TAPE:.*]] = memref.alloc(%{{.*}}) : memref<?xf64>
// CHECK: %[[SHADOW:.*]] = memref.alloc(%{{.*}}) : memref<?xf64>
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%[[SHADOW]] : memref<?xf64>)
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[TAPE]]
// CHECK: memref.store %{{.*}}, %[[SHADOW]]
// CHECK-LABEL: func.func private @f_ad_pb_0_ad_jvp_0_1(
// CHECK-SAME: %{{[^:]*}}: index, %[[T:[^:]*]]: memref<?xf64>, %{{[^:]*}}: f64, %[[TS:[^:]*]]: memref<?xf64>)
// CHECK: memref.load %[[T]]
// CHECK: memref.load %[[TS]]
// CHECK-LABEL: func.func @hessian(
// CHECK: call @f_ad_gradient_0_ad_jvp_0(
func.func @f(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> f64 {
    %s = math.sin %a : f64
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @hessian(%x: f64, %n: index, %v: f64) -> f64 {
  %h = ad.hvp @f(%x, %n) tangents(%v) : (f64, index) -> f64
  return %h : f64
}

// -----

// A buffer returned by a call none of whose arguments varies still gets its
// shadow from the callee (a fresh buffer, a fresh zeroed shadow).
// CHECK-LABEL: func.func private @make_ad_jvp() -> (memref<2xf64>, memref<2xf64>)
// CHECK: memref.alloc() : memref<2xf64>
// CHECK: %[[S:.*]] = memref.alloc() : memref<2xf64>
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%[[S]] : memref<2xf64>)
// CHECK-LABEL: func.func private @uses_made_ad_jvp_0(
// CHECK: %[[M:.*]]:2 = call @make_ad_jvp()
// CHECK: memref.store %{{.*}}, %[[M]]#1
func.func private @make() -> memref<2xf64> {
  %m = memref.alloc() : memref<2xf64>
  return %m : memref<2xf64>
}

func.func @uses_made(%x: f64) -> f64 {
  %m = func.call @make() : () -> memref<2xf64>
  %c0 = arith.constant 0 : index
  memref.store %x, %m[%c0] : memref<2xf64>
  %l = memref.load %m[%c0] : memref<2xf64>
  %r = arith.mulf %l, %l : f64
  return %r : f64
}

func.func @jvp_uses_made(%x: f64, %t: f64) -> f64 {
  %y, %ty = ad.jvp @uses_made(%x) tangents(%t) : (f64) -> (f64, f64)
  return %ty : f64
}
