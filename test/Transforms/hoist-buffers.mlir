// RUN: ad-opt %s --ad-hoist-buffers --split-input-file --allow-unregistered-dialect | FileCheck %s

// A temporary of every iteration, with a size from outside the loop: one
// allocation before the loop, clamped at zero (the loop may not run), one
// free after it.
// CHECK-LABEL: func @temporary
// CHECK-SAME: (%[[N:.*]]: index, %[[S:.*]]: index, %[[OUT:.*]]: memref<?xf64>)
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[SIZE:.*]] = arith.maxsi %[[N]], %[[ZERO]]
// CHECK: %[[BUF:.*]] = memref.alloc(%[[SIZE]]) {alignment = 64 : i64}
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
// CHECK: linalg.fill {{.*}} outs(%[[BUF]]
// CHECK: memref.copy %[[BUF]], %[[OUT]]
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[BUF]]
// CHECK-NEXT: return
func.func @temporary(%n: index, %s: index, %out: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  scf.for %i = %c0 to %s step %c1 {
    %buf = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf64>
    linalg.fill ins(%one : f64) outs(%buf : memref<?xf64>)
    memref.copy %buf, %out : memref<?xf64> to memref<?xf64>
    memref.dealloc %buf : memref<?xf64>
  }
  return
}

// -----

// Out of both loops of a nest (static shape, a dim size needs no clamp),
// and out of a while loop's body.
// CHECK-LABEL: func @nest
// CHECK-DAG: memref.alloc() : memref<2xindex>
// CHECK-DAG: %[[D:.*]] = memref.dim
// CHECK-DAG: memref.alloc(%[[D]]) : memref<?xf64>
// CHECK-NOT: arith.maxsi
// CHECK: scf.for
// CHECK-NOT: memref.alloc
// CHECK: scf.while
// CHECK-NOT: memref.alloc
// CHECK-COUNT-2: memref.dealloc
// CHECK-NEXT: return
func.func @nest(%a: memref<?xf64>, %s: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf64>
  scf.for %i = %c0 to %s step %c1 {
    scf.for %j = %c0 to %s step %c1 {
      %small = memref.alloc() : memref<2xindex>
      memref.store %j, %small[%c0] : memref<2xindex>
      memref.dealloc %small : memref<2xindex>
    }
    %w = scf.while (%k = %c0) : (index) -> index {
      %more = arith.cmpi slt, %k, %s : index
      scf.condition(%more) %k : index
    } do {
    ^bb0(%k: index):
      %tmp = memref.alloc(%n) : memref<?xf64>
      memref.copy %a, %tmp : memref<?xf64> to memref<?xf64>
      memref.dealloc %tmp : memref<?xf64>
      %next = arith.addi %k, %c1 : index
      scf.yield %next : index
    }
  }
  return
}

// -----

// Stays: a size computed in the loop; a buffer the loop yields (freed
// conditionally by the next iteration); a buffer freed inside an scf.if; a
// buffer never freed in the loop (it escapes).
// CHECK-LABEL: func @stays
// CHECK: scf.for
// CHECK: memref.alloc(%{{.*}}) : memref<?xf64>
// CHECK: memref.dealloc
// CHECK: scf.for
// CHECK: memref.alloc
// CHECK: scf.if
// CHECK: memref.dealloc
// CHECK: scf.for
// CHECK: memref.alloc
// CHECK: scf.if
// CHECK-NEXT: memref.dealloc
// CHECK: scf.for
// CHECK: memref.alloc
// CHECK: memref.store
func.func @stays(%a: memref<?xf64>, %s: index, %c: i1, %keep: memref<1xmemref<?xf64>>) -> memref<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf64>
  scf.for %i = %c0 to %s step %c1 {
    %m = arith.addi %n, %i : index
    %tmp = memref.alloc(%m) : memref<?xf64>
    memref.dealloc %tmp : memref<?xf64>
  }
  %r:2 = scf.for %i = %c0 to %s step %c1 iter_args(%prev = %a, %owned = %c) -> (memref<?xf64>, i1) {
    %next = memref.alloc(%n) : memref<?xf64>
    memref.copy %prev, %next : memref<?xf64> to memref<?xf64>
    scf.if %owned {
      memref.dealloc %prev : memref<?xf64>
    }
    %true = arith.constant true
    scf.yield %next, %true : memref<?xf64>, i1
  }
  scf.for %i = %c0 to %s step %c1 {
    %tmp = memref.alloc(%n) : memref<?xf64>
    scf.if %c {
      memref.dealloc %tmp : memref<?xf64>
    }
  }
  scf.for %i = %c0 to %s step %c1 {
    %tmp = memref.alloc(%n) : memref<?xf64>
    memref.store %tmp, %keep[%c0] : memref<1xmemref<?xf64>>
  }
  return %r#0 : memref<?xf64>
}

// -----

// A size from an argument, out of two loops: clamped once, before the
// outer loop.
// CHECK-LABEL: func @nested_clamped
// CHECK-SAME: (%[[N:[^:]*]]: index,
// CHECK: %[[SIZE:.*]] = arith.maxsi %[[N]]
// CHECK-NEXT: %[[BUF:.*]] = memref.alloc(%[[SIZE]])
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NOT: arith.maxsi
// CHECK-NOT: memref.alloc
// CHECK: memref.dealloc %[[BUF]]
// CHECK-NEXT: return
func.func @nested_clamped(%n: index, %s: index, %out: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %s step %c1 {
    scf.for %j = %c0 to %s step %c1 {
      %buf = memref.alloc(%n) : memref<?xf64>
      memref.copy %buf, %out : memref<?xf64> to memref<?xf64>
      memref.dealloc %buf : memref<?xf64>
    }
  }
  return
}

// -----

// An op of an unregistered dialect may free or keep the buffer: it stays.
// CHECK-LABEL: func @unknown_user
// CHECK: scf.for
// CHECK-NEXT: memref.alloc
func.func @unknown_user(%n: index, %s: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %s step %c1 {
    %buf = memref.alloc(%n) : memref<?xf64>
    "test.use"(%buf) : (memref<?xf64>) -> ()
    memref.dealloc %buf : memref<?xf64>
  }
  return
}
