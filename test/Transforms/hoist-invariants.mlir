// RUN: ad-opt %s --ad-hoist-invariants --split-input-file | FileCheck %s

// A loop of n iterations whose body slices n - 1 elements and adds them:
// the slice, the sum (and the check guarding them) leave the loop only into
// a branch taken when the loop runs; scalar arithmetic leaves it unguarded.
// CHECK-LABEL: func @guarded
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?xf64>, %[[N:[^:]*]]: index)
// CHECK: %[[M:.*]] = arith.subi %[[N]]
// CHECK: %[[OK:.*]] = arith.cmpi sge, %[[M]]
// CHECK: %[[RUNS:.*]] = arith.cmpi slt, %{{.*}}, %[[N]]
// CHECK: %[[R:.*]] = scf.if %[[RUNS]] -> (f64) {
// CHECK-NEXT: cf.assert %[[OK]]
// CHECK-NEXT: %[[S:.*]] = tensor.extract_slice %[[X]][0] [%[[M]]] [1]
// CHECK-NEXT: arith.addf %[[S]], %[[S]] : tensor<?xf64>
// CHECK: %[[L:.*]] = scf.for
// CHECK-NOT: tensor.extract_slice
// CHECK: scf.yield %[[L]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %{{.*}} : f64
// CHECK: return %[[R]]
func.func @guarded(%x: tensor<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f64) {
    %m = arith.subi %n, %c1 : index
    %ok = arith.cmpi sge, %m, %c0 : index
    cf.assert %ok, "size must not be negative"
    %s = tensor.extract_slice %x[0] [%m] [1] : tensor<?xf64> to tensor<?xf64>
    %d = arith.addf %s, %s : tensor<?xf64>
    %v = tensor.extract %d[%c0] : tensor<?xf64>
    %a = arith.addf %acc, %v : f64
    scf.yield %a : f64
  }
  return %r : f64
}

// -----

// Only a check, a slice and a size would leave the loop: not worth a branch
// around it (a taped choice in the adjoint, copies of its tensor results);
// they stay, in order, and the size of an existing dimension leaves.
// CHECK-LABEL: func @not_worth_a_guard
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?xf64>
// CHECK-NOT: scf.if
// CHECK-DAG: arith.subi
// CHECK-DAG: arith.cmpi
// CHECK-DAG: tensor.dim %[[X]], %c0
// CHECK: scf.for
// CHECK-NEXT: cf.assert
// CHECK-NEXT: %[[S:.*]] = tensor.extract_slice
// CHECK-NEXT: tensor.dim %[[S]]
// CHECK-NOT: tensor.dim
// CHECK: scf.yield
func.func @not_worth_a_guard(%x: tensor<?xf64>, %n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
    %m = arith.subi %n, %c1 : index
    %ok = arith.cmpi sge, %m, %c0 : index
    cf.assert %ok, "size must not be negative"
    %s = tensor.extract_slice %x[0] [%m] [1] : tensor<?xf64> to tensor<?xf64>
    %d = tensor.dim %s, %c0 : tensor<?xf64>
    %k = tensor.dim %x, %c0 : tensor<?xf64>
    %a = arith.addi %acc, %d : index
    %b = arith.addi %a, %k : index
    scf.yield %b : index
  }
  return %r : index
}

// -----

// Constant bounds with at least one iteration: no guard.
// CHECK-LABEL: func @runs
// CHECK-NOT: scf.if
// CHECK: tensor.extract_slice
// CHECK: scf.for
func.func @runs(%x: tensor<?xf64>, %m: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f64) {
    %s = tensor.extract_slice %x[0] [%m] [1] : tensor<?xf64> to tensor<?xf64>
    %v = tensor.extract %s[%c0] : tensor<?xf64>
    %a = arith.addf %acc, %v : f64
    scf.yield %a : f64
  }
  return %r : f64
}

// -----

// Only scalar invariants: hoisted, and no guard is left behind. A while
// loop's body keeps its tensor op (it may run no iteration); its
// condition region's invariants leave.
// CHECK-LABEL: func @no_guard_needed
// CHECK-NOT: scf.if
// CHECK: arith.mulf
// CHECK: scf.for
// CHECK: %[[T:.*]] = tensor.empty
// CHECK: scf.while
// CHECK: } do {
// CHECK: tensor.extract_slice
func.func @no_guard_needed(%x: tensor<?xf64>, %y: f64, %n: index, %m: index) -> (f64, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %y) -> (f64) {
    %sq = arith.mulf %y, %y : f64
    %a = arith.addf %acc, %sq : f64
    scf.yield %a : f64
  }
  %w = scf.while (%k = %c0) : (index) -> index {
    %t = tensor.empty(%m) : tensor<?xf64>
    %d = tensor.dim %t, %c0 : tensor<?xf64>
    %more = arith.cmpi slt, %k, %d : index
    scf.condition(%more) %k : index
  } do {
  ^bb0(%k: index):
    %s = tensor.extract_slice %x[0] [%m] [1] : tensor<?xf64> to tensor<?xf64>
    %d = tensor.dim %s, %c0 : tensor<?xf64>
    %next = arith.addi %k, %d : index
    scf.yield %next : index
  }
  return %r, %w : f64, index
}

// -----

// A loop inside a loop of unknown trip count does not leave it unguarded,
// even with a scalar body: taken out of a loop that runs no iteration
// (n = 0), an unsigned loop to n - 1 ran 2^64 - 1 times.
// CHECK-LABEL: func @inner_loop_stays
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args
// CHECK: scf.for unsigned
func.func @inner_loop_stays(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = arith.subi %n, %c1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (f64) {
    %s = scf.for unsigned %j = %c0 to %m step %c1 iter_args(%t = %x) -> (f64) {
      %u = arith.mulf %t, %x : f64
      scf.yield %u : f64
    }
    %a = arith.addf %acc, %s : f64
    scf.yield %a : f64
  }
  return %r : f64
}
