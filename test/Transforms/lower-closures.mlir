// RUN: ad-opt %s --split-input-file --ad-lower-closures | FileCheck %s

func.func private @pb(%t0: f64, %t1: i32, %dy: f64) -> f64

// Applying a closure calls its pullback with the captures first.
// CHECK-LABEL: func.func @apply_twice
// CHECK-SAME: (%[[T0:.*]]: f64, %[[T1:.*]]: i32, %[[D0:.*]]: f64, %[[D1:.*]]: f64)
// CHECK-NOT: ad.
// CHECK: %[[A:.*]] = call @pb(%[[T0]], %[[T1]], %[[D0]]) : (f64, i32, f64) -> f64
// CHECK: %[[B:.*]] = call @pb(%[[T0]], %[[T1]], %[[D1]]) : (f64, i32, f64) -> f64
// CHECK: return %[[A]], %[[B]]
func.func @apply_twice(%t0: f64, %t1: i32, %d0: f64, %d1: f64) -> (f64, f64) {
  %c = ad.make_pullback @pb(%t0, %t1) : (f64, i32) -> !ad.pullback<(f64) -> f64>
  %a = ad.pullback %c(%d0) : !ad.pullback<(f64) -> f64>
  %b = ad.pullback %c(%d1) : !ad.pullback<(f64) -> f64>
  return %a, %b : f64, f64
}

// -----

func.func private @pb(%t0: f64, %dy: f64) -> f64

// A closure never applied disappears.
// CHECK-LABEL: func.func @unused
// CHECK-NEXT: return
func.func @unused(%t0: f64) {
  %c = ad.make_pullback @pb(%t0) : (f64) -> !ad.pullback<(f64) -> f64>
  return
}

// -----

func.func private @pb(%t0: f64, %dy: f64) -> f64

// Applications inside nested regions call with the captured values.
// CHECK-LABEL: func.func @nested
// CHECK: scf.if
// CHECK: call @pb(%{{.*}}, %{{.*}}) : (f64, f64) -> f64
func.func @nested(%t0: f64, %dy: f64, %cond: i1) -> f64 {
  %c = ad.make_pullback @pb(%t0) : (f64) -> !ad.pullback<(f64) -> f64>
  %r = scf.if %cond -> f64 {
    %g = ad.pullback %c(%dy) : !ad.pullback<(f64) -> f64>
    scf.yield %g : f64
  } else {
    scf.yield %dy : f64
  }
  return %r : f64
}
