// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-parallelize{min-work=1000}))" | FileCheck %s

// A marked loop with a dynamic trip count: a worksharing loop when the
// nest has enough iterations (n * 8 >= 1000 and n >= 2), else the loop as
// it was.
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME: %[[A:.*]]: memref<?x8xf64>, %[[N:.*]]: index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[WORK:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[ENOUGH:.*]] = arith.cmpi sge, %[[WORK]], %{{.*}} : index
// CHECK: %[[TWO:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK: %[[BOTH:.*]] = arith.andi %[[ENOUGH]], %[[TWO]] : i1
// CHECK: scf.if %[[BOTH]] {
// CHECK-NEXT: omp.parallel {
// CHECK-NEXT: omp.wsloop schedule(static) {
// CHECK-NEXT: omp.loop_nest (%[[I:.*]]) : index = (%[[C0]]) to (%[[N]]) step (%[[C1]]) {
// CHECK-NEXT: scf.for %[[J:.*]] = %[[C0]] to %[[C8]] step %[[C1]] {
// CHECK: memref.store %{{.*}}, %[[A]][%[[I]], %[[J]]]
// CHECK: omp.yield
// CHECK: omp.terminator
// CHECK: } else {
// CHECK-NEXT: scf.for %{{.*}} = %[[C0]] to %[[N]] step %[[C1]] {
// CHECK-NOT: ad.parallel
// CHECK: return
func.func @dynamic(%a: memref<?x8xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %a[%i, %j] : memref<?x8xf64>
      %w = arith.mulf %v, %v : f64
      memref.store %w, %a[%i, %j] : memref<?x8xf64>
    }
  } {ad.parallel}
  return
}

// -----

// Static sizes: decided at compile time, without a branch.
// CHECK-LABEL: func.func @large(
// CHECK-NOT: scf.if
// CHECK: omp.parallel {
// CHECK: omp.loop_nest
// CHECK-LABEL: func.func @small(
// CHECK-NOT: omp.
// CHECK: scf.for
// CHECK-NOT: ad.parallel
// CHECK-NOT: omp.
// CHECK: return
func.func @large(%a: memref<4096xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  scf.for %i = %c0 to %c4096 step %c1 {
    %v = memref.load %a[%i] : memref<4096xf64>
    %w = arith.addf %v, %v : f64
    memref.store %w, %a[%i] : memref<4096xf64>
  } {ad.parallel}
  return
}

func.func @small(%a: memref<64xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %a[%i] : memref<64xf64>
    %w = arith.addf %v, %v : f64
    memref.store %w, %a[%i] : memref<64xf64>
  } {ad.parallel}
  return
}

// -----

// Loops inside the marked one count only when their bounds are known
// before it: here the inner trip count depends on the outer index, and the
// estimate is the outer trip count alone (2000 >= 1000).
// CHECK-LABEL: func.func @triangular(
// CHECK-NOT: scf.if
// CHECK: omp.parallel
// CHECK: omp.loop_nest (%[[I:.*]]) : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[I]]
func.func @triangular(%a: memref<2000x2000xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2000 = arith.constant 2000 : index
  %zero = arith.constant 0.0 : f64
  scf.for %i = %c0 to %c2000 step %c1 {
    scf.for %j = %c0 to %i step %c1 {
      memref.store %zero, %a[%i, %j] : memref<2000x2000xf64>
    }
  } {ad.parallel}
  return
}

// -----

// A loop with results, and one whose body uses a stack buffer allocated
// before it (the threads would share it), stay sequential; a stack buffer
// allocated in the body is released at the end of each iteration.
// CHECK-LABEL: func.func @carried(
// CHECK-NOT: omp.
// CHECK: scf.for {{.*}} iter_args
// CHECK-NOT: omp.
// CHECK-LABEL: func.func @shared_scratch(
// CHECK-NOT: omp.
// CHECK: scf.for
// CHECK-NOT: omp.
// CHECK-LABEL: func.func @shared_scratch_view(
// CHECK-NOT: omp.
// CHECK: scf.for
// CHECK-NOT: omp.
// CHECK-LABEL: func.func @own_scratch(
// CHECK: omp.loop_nest
// CHECK-NEXT: memref.alloca_scope {
// CHECK-NEXT: memref.alloca() : memref<4xf64>
// CHECK: }
// CHECK-NEXT: omp.yield
func.func @carried(%a: memref<8192xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 8192 : index
  %zero = arith.constant 0.0 : f64
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
    %v = memref.load %a[%i] : memref<8192xf64>
    %t = arith.addf %acc, %v : f64
    scf.yield %t : f64
  } {ad.parallel}
  return %s : f64
}

func.func @shared_scratch(%a: memref<8192xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 8192 : index
  %scratch = memref.alloca() : memref<f64>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %a[%i] : memref<8192xf64>
    memref.store %v, %scratch[] : memref<f64>
    %w = memref.load %scratch[] : memref<f64>
    memref.store %w, %a[%i] : memref<8192xf64>
  } {ad.parallel}
  return
}

func.func @shared_scratch_view(%a: memref<8192xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 8192 : index
  %scratch = memref.alloca() : memref<4xf64>
  %view = memref.subview %scratch[1] [2] [1] : memref<4xf64> to memref<2xf64, strided<[1], offset: 1>>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %a[%i] : memref<8192xf64>
    memref.store %v, %view[%c0] : memref<2xf64, strided<[1], offset: 1>>
    %w = memref.load %view[%c0] : memref<2xf64, strided<[1], offset: 1>>
    memref.store %w, %a[%i] : memref<8192xf64>
  } {ad.parallel}
  return
}

func.func @own_scratch(%a: memref<8192xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 8192 : index
  scf.for %i = %c0 to %n step %c1 {
    %scratch = memref.alloca() : memref<4xf64>
    %v = memref.load %a[%i] : memref<8192xf64>
    memref.store %v, %scratch[%c0] : memref<4xf64>
    %w = memref.load %scratch[%c0] : memref<4xf64>
    memref.store %w, %a[%i] : memref<8192xf64>
  } {ad.parallel}
  return
}

// -----

// Unmarked loops are left alone.
// CHECK-LABEL: func.func @unmarked(
// CHECK-NOT: omp.
// CHECK: scf.for
func.func @unmarked(%a: memref<8192xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 8192 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %a[%i] : memref<8192xf64>
    memref.store %v, %a[%i] : memref<8192xf64>
  }
  return
}
