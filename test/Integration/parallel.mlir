// Code whose linalg tile loops run on OpenMP threads (ad-parallelize)
// prints the same numbers as the sequential code: f(A, B) = sum(tanh(A B))
// and its gradient, with A, B 200 x 200 (dynamic shapes: the threads are
// chosen at run time), values from numpy.
// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s
// RUN: ad-opt %s --ad-lower-to-llvm="parallel=true" | %run | FileCheck %s
// RUN: ad-opt %s --ad-lower-to-llvm="parallel=true parallel-min-work=1" | %run | FileCheck %s
// RUN: ad-opt %s --ad-lower-to-llvm="parallel=true" | FileCheck %s --check-prefix=IR

// The LLVM dialect module holds the parallel regions (the OpenMP
// translation to LLVM IR outlines them into calls of libomp).
// IR: omp.parallel {
// IR-NEXT: omp.wsloop schedule(static) {
// IR-NEXT: omp.loop_nest (%{{.*}}) : i64

#id = affine_map<(i, j) -> (i, j)>
#all = affine_map<(i, j) -> ()>

func.func @f(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf64>
  %n = tensor.dim %b, %c1 : tensor<?x?xf64>
  %z = arith.constant 0.0 : f64
  %e = tensor.empty(%m, %n) : tensor<?x?xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<?x?xf64>) -> tensor<?x?xf64>
  %p = linalg.matmul ins(%a, %b : tensor<?x?xf64>, tensor<?x?xf64>)
                     outs(%f : tensor<?x?xf64>) -> tensor<?x?xf64>
  %s0 = tensor.empty() : tensor<f64>
  %s1 = linalg.fill ins(%z : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
  %s = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%p : tensor<?x?xf64>) outs(%s1 : tensor<f64>) {
  ^bb0(%x: f64, %acc: f64):
    %t = math.tanh %x : f64
    %r = arith.addf %acc, %t : f64
    linalg.yield %r : f64
  } -> tensor<f64>
  %v = tensor.extract %s[] : tensor<f64>
  return %v : f64
}

// A[i, j] = sin(i + 2 j) / 10, B[i, j] = cos(3 i - j) / 10.
func.func @matrix(%n: index, %u: f64, %w: f64, %cosine: i1) -> tensor<?x?xf64> {
  %e = tensor.empty(%n, %n) : tensor<?x?xf64>
  %tenth = arith.constant 0.1 : f64
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<?x?xf64>) {
  ^bb0(%out: f64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %fj = arith.sitofp %jj : i64 to f64
    %a = arith.mulf %u, %fi : f64
    %b = arith.mulf %w, %fj : f64
    %x = arith.addf %a, %b : f64
    %sx = math.sin %x : f64
    %cx = math.cos %x : f64
    %y = arith.select %cosine, %cx, %sx : f64
    %v = arith.mulf %y, %tenth : f64
    linalg.yield %v : f64
  } -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}

func.func @main() {
  %n = arith.constant 200 : index
  %one = arith.constant 1.0 : f64
  %two = arith.constant 2.0 : f64
  %three = arith.constant 3.0 : f64
  %minus = arith.constant -1.0 : f64
  %false = arith.constant false
  %true = arith.constant true
  %a = func.call @matrix(%n, %one, %two, %false) : (index, f64, f64, i1) -> tensor<?x?xf64>
  %b = func.call @matrix(%n, %three, %minus, %true) : (index, f64, f64, i1) -> tensor<?x?xf64>
  %v = func.call @f(%a, %b) : (tensor<?x?xf64>, tensor<?x?xf64>) -> f64
  %ga, %gb = ad.grad @f(%a, %b) : (tensor<?x?xf64>, tensor<?x?xf64>) -> (tensor<?x?xf64>, tensor<?x?xf64>)
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  %c199 = arith.constant 199 : index
  %ga00 = tensor.extract %ga[%c0, %c0] : tensor<?x?xf64>
  %ga7 = tensor.extract %ga[%c7, %c199] : tensor<?x?xf64>
  %gb7 = tensor.extract %gb[%c199, %c7] : tensor<?x?xf64>
  // CHECK: 0.00111357
  // CHECK-NEXT: -0.0542867
  // CHECK-NEXT: -0.045219
  // CHECK-NEXT: -0.0954491
  vector.print %v : f64
  vector.print %ga00 : f64
  vector.print %ga7 : f64
  vector.print %gb7 : f64
  return
}
