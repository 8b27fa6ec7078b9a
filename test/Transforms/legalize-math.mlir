// RUN: ad-opt %s --ad-legalize-math | FileCheck %s

// expm1 by Kahan's formula: exp(x) - 1 would lose every digit for tiny x.
// CHECK-LABEL: func.func @expm1
// CHECK:       %[[U:.*]] = math.exp %[[X:.*]] : f64
// CHECK:       %[[UM1:.*]] = arith.subf %[[U]], %{{.*}} : f64
// CHECK:       %[[L:.*]] = math.log %[[U]] : f64
// CHECK:       arith.mulf %[[UM1]], %[[X]] : f64
// CHECK:       arith.divf %{{.*}}, %[[L]] : f64
// CHECK:       %[[INF:.*]] = arith.cmpf oeq, %[[U]], %{{.*}} : f64
// CHECK:       arith.select %[[INF]]
// CHECK:       %[[MINUS1:.*]] = arith.cmpf oeq, %[[UM1]], %{{.*}} : f64
// CHECK:       arith.select %[[MINUS1]]
// CHECK:       %[[ONE:.*]] = arith.cmpf oeq, %[[U]], %{{.*}} : f64
// CHECK:       arith.select %[[ONE]], %[[X]], %{{.*}} : f64
// CHECK-NOT:   math.expm1
func.func @expm1(%x: f64) -> f64 {
  %y = math.expm1 %x : f64
  return %y : f64
}

// The same on vectors (what ad-vector-math left).
// CHECK-LABEL: func.func @expm1_vector
// CHECK:       math.exp %{{.*}} : vector<3xf32>
// CHECK-NOT:   math.expm1
func.func @expm1_vector(%x: vector<3xf32>) -> vector<3xf32> {
  %y = math.expm1 %x : vector<3xf32>
  return %y : vector<3xf32>
}

// math.fpowi on vectors is computed one element at a time (the LLVM
// intrinsic takes one exponent); on scalars it stays.
// CHECK-LABEL: func.func @fpowi
// CHECK-COUNT-8: math.fpowi {{.*}} : f64, i32
// CHECK:       vector.from_elements {{.*}} : vector<1x8xf64>
// CHECK:       math.fpowi {{.*}} : f64, i32
// CHECK-NOT:   math.fpowi
func.func @fpowi(%x: vector<1x8xf64>, %n: vector<1x8xi32>, %s: f64, %m: i32) -> (vector<1x8xf64>, f64) {
  %p = math.fpowi %x, %n : vector<1x8xf64>, vector<1x8xi32>
  %q = math.fpowi %s, %m : f64, i32
  return %p, %q : vector<1x8xf64>, f64
}
