// RUN: ad-opt %s --split-input-file --ad-generate-derivatives | FileCheck %s

// scf.for: the forward loop stores, per iteration, the values its adjoint
// reads into buffers allocated once with the trip count; the loop-invariant
// cos(x) is taped once. The derivative of sin(m), cos(m), is computed right
// after m (LLVM makes one sincos call of it and sin(m)) and stored in place
// of m.
// The reverse loop counts down over the same iterations, carrying the
// cotangent of the iter_arg and of x.
// CHECK-LABEL: func.func private @loop_ad_fwd_0
// CHECK-SAME: -> (f64, index, memref<?xf64>, f64, memref<?xf64>, f64)
// CHECK: %[[COS:.*]] = math.cos
// CHECK: %[[TRIPS:.*]] = arith.select
// CHECK: %[[M:.*]] = memref.alloc(%[[TRIPS]]) : memref<?xf64>
// CHECK: %[[S:.*]] = memref.alloc(%[[TRIPS]]) : memref<?xf64>
// CHECK-NOT: memref.alloc
// CHECK: scf.for %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f64) {
// CHECK: %[[IT:.*]] = arith.divui
// CHECK: memref.store %[[ACC]], %[[S]][%[[IT]]]
// CHECK: %[[MUL:.*]] = arith.mulf %[[ACC]], %[[COS]]
// CHECK: %[[DSIN:.*]] = math.cos %[[MUL]]
// CHECK: memref.store %[[DSIN]], %[[M]][%[[IT]]]
// CHECK: math.sin %[[MUL]]
// CHECK: return %{{.*}}, %[[TRIPS]], %[[M]], %[[COS]], %[[S]], %{{.*}} :
// CHECK-LABEL: func.func private @loop_ad_pb_0
// CHECK-SAME: (%[[T:.*]]: index, %[[MB:.*]]: memref<?xf64>, %[[C:.*]]: f64, %[[SB:.*]]: memref<?xf64>, %{{.*}}: f64, %[[DY:.*]]: f64)
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[T]] step %{{.*}} iter_args(%[[DS:.*]] = %[[DY]], %[[DC:.*]] = %{{.*}}) -> (f64, f64) {
// CHECK: %[[LAST:.*]] = arith.subi %[[T]], %{{.*}} : index
// CHECK: %[[I:.*]] = arith.subi %[[LAST]], %[[J]] : index
// CHECK-DAG: memref.load %[[SB]][%[[I]]]
// CHECK-DAG: memref.load %[[MB]][%[[I]]]
// CHECK: scf.yield
// CHECK: return
func.func @loop(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cx = math.cos %x : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> (f64) {
    %m = arith.mulf %s, %cx : f64
    %e = math.sin %m : f64
    scf.yield %e : f64
  }
  return %r : f64
}

func.func @caller(%x: f64, %n: index) -> f64 {
  %g = ad.grad @loop(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// scf.if: the forward if also yields the values its branches compute that
// the adjoint reads (sin(x) from the then branch; zero from the else
// branch, which the replayed condition never reads), and nothing else; the
// reverse if replays the condition and yields the cotangents of the outer
// values.
// CHECK-LABEL: func.func private @branch_ad_fwd_0_1
// CHECK: %[[C:.*]] = arith.cmpf ogt
// CHECK: %[[IF:.*]]:2 = scf.if %[[C]] -> (f64, f64) {
// CHECK: %[[SIN:.*]] = math.sin
// CHECK: %[[P:.*]] = arith.mulf %[[SIN]]
// CHECK: scf.yield %[[P]], %[[SIN]] : f64, f64
// CHECK: } else {
// CHECK: %[[D:.*]] = arith.subf
// CHECK: %[[ZERO:.*]] = arith.constant 0.0
// CHECK: scf.yield %[[D]], %[[ZERO]] : f64, f64
// CHECK: return %[[IF]]#0, %[[C]], %{{.*}}, %[[IF]]#1,
// CHECK-LABEL: func.func private @branch_ad_pb_0_1
// CHECK-SAME: (%[[COND:.*]]: i1,
// CHECK: %[[R:.*]]:2 = scf.if %[[COND]] -> (f64, f64) {
// CHECK: math.cos
// CHECK: } else {
// CHECK: }
// CHECK: return %[[R]]#0, %[[R]]#1 : f64, f64
func.func @branch(%x: f64, %y: f64) -> f64 {
  %gt = arith.cmpf ogt, %x, %y : f64
  %r = scf.if %gt -> (f64) {
    %s = math.sin %x : f64
    %p = arith.mulf %s, %y : f64
    scf.yield %p : f64
  } else {
    %d = arith.subf %x, %y : f64
    scf.yield %d : f64
  }
  return %r : f64
}

func.func @caller(%x: f64, %y: f64) -> (f64, f64) {
  %gx, %gy = ad.grad @branch(%x, %y) : (f64, f64) -> (f64, f64)
  return %gx, %gy : f64, f64
}
