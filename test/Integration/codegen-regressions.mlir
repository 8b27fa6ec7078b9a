// Numbers the code generation (ad-fuse-elementwise, ad-vectorize) once got
// wrong, with fusion and vectorization on (the default) and off: each line
// is checked against values computed by hand.
// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s
// RUN: ad-opt %s --ad-lower-to-llvm=fuse=false | %run | FileCheck %s
// RUN: ad-opt %s --ad-lower-to-llvm="fuse=false vectorize=false" | %run | FileCheck %s

#id = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#all = affine_map<(i, j) -> ()>

func.func private @print(%t: tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %t, %c0 : tensor<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %v = tensor.extract %t[%i] : tensor<?xf64>
    vector.print %v : f64 punctuation <comma>
  }
  vector.print str "\n"
  return
}

// Reductions of a value that does not vary along the reduced loop: a count
// (acc + 1) and the square of cos(i) summed over 16 values of j. Upstream
// vectorization added such a value once per vector, not once per element.
// CHECK: 16, 16, 16,
// CHECK-NEXT: 16, 4.67{{[0-9]*}}, 2.77{{[0-9]*}},
func.func @uniform_reductions(%x: tensor<3x16xf64>) -> (tensor<3xf64>, tensor<3xf64>) {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %e = tensor.empty() : tensor<3xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<3xf64>) -> tensor<3xf64>
  %count = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x16xf64>) outs(%z : tensor<3xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %s = arith.addf %acc, %one : f64
    linalg.yield %s : f64
  } -> tensor<3xf64>
  %e2 = tensor.empty() : tensor<3x16xf64>
  %c = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<3x16xf64>) outs(%e2 : tensor<3x16xf64>) {
  ^bb0(%a: f64, %o: f64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %cos = math.cos %fi : f64
    linalg.yield %cos : f64
  } -> tensor<3x16xf64>
  %sq = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%c : tensor<3x16xf64>) outs(%z : tensor<3xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %p = arith.mulf %a, %a : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<3xf64>
  return %count, %sq : tensor<3xf64>, tensor<3xf64>
}

// The gradient of sum(tanh(x * w[j] + b)) with respect to w and b: the
// adjoint reduces dy * x over i into dw and dy over i and j into db, in one
// generic that vectorization made invalid.
// dw_j = sum_i x_ij (1 - tanh(x_ij w_j + b)^2), db = sum_ij (1 - tanh^2).
// CHECK-NEXT: 1.59423, 0.509545,
// CHECK-NEXT: 3.6406
func.func @dense(%x: tensor<2x2xf64>, %w: tensor<2xf64>, %b: f64) -> f64 {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<2x2xf64>
  %y = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %w : tensor<2x2xf64>, tensor<2xf64>) outs(%e : tensor<2x2xf64>) {
  ^bb0(%a: f64, %v: f64, %o: f64):
    %m = arith.mulf %a, %v : f64
    %s = arith.addf %m, %b : f64
    %t = math.tanh %s : f64
    linalg.yield %t : f64
  } -> tensor<2x2xf64>
  %se = tensor.empty() : tensor<f64>
  %z = linalg.fill ins(%zero : f64) outs(%se : tensor<f64>) -> tensor<f64>
  %sum = linalg.generic {indexing_maps = [#id2, #all], iterator_types = ["reduction", "reduction"]} ins(%y : tensor<2x2xf64>) outs(%z : tensor<f64>) {
  ^bb0(%a: f64, %acc: f64):
    %s = arith.addf %acc, %a : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  %r = tensor.extract %sum[] : tensor<f64>
  return %r : f64
}

// A memref.copy from a view onto an overlapping view (a shift by one) is
// left to the runtime's memrefCopy, which copies like memmove; a vector
// copy would read elements it has already written.
// CHECK-NEXT: 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
func.func @shift(%n: index) -> memref<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %buf = memref.alloc(%n) : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f64
    memref.store %f, %buf[%i] : memref<?xf64>
  }
  %m = arith.subi %n, %c1 : index
  %src = memref.subview %buf[0] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1]>>
  %dst = memref.subview %buf[1] [%m] [1] : memref<?xf64> to memref<?xf64, strided<[1], offset: 1>>
  memref.copy %src, %dst : memref<?xf64, strided<[1]>> to memref<?xf64, strided<[1], offset: 1>>
  return %buf : memref<?xf64>
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  %x = arith.constant dense<1.0> : tensor<3x16xf64>
  %r:2 = func.call @uniform_reductions(%x) : (tensor<3x16xf64>) -> (tensor<3xf64>, tensor<3xf64>)
  %r0 = tensor.cast %r#0 : tensor<3xf64> to tensor<?xf64>
  func.call @print(%r0) : (tensor<?xf64>) -> ()
  %r1 = tensor.cast %r#1 : tensor<3xf64> to tensor<?xf64>
  func.call @print(%r1) : (tensor<?xf64>) -> ()

  %dx = arith.constant dense<[[0.5, 1.0], [1.5, -0.5]]> : tensor<2x2xf64>
  %dw = arith.constant dense<[0.3, -0.2]> : tensor<2xf64>
  %db = arith.constant 0.1 : f64
  %g:2 = ad.grad @dense(%dx, %dw, %db) {wrt = array<i64: 1, 2>} : (tensor<2x2xf64>, tensor<2xf64>, f64) -> (tensor<2xf64>, f64)
  %gw = tensor.cast %g#0 : tensor<2xf64> to tensor<?xf64>
  func.call @print(%gw) : (tensor<?xf64>) -> ()
  vector.print %g#1 : f64

  %s = func.call @shift(%c20) : (index) -> memref<?xf64>
  scf.for %i = %c0 to %c20 step %c1 {
    %v = memref.load %s[%i] : memref<?xf64>
    vector.print %v : f64 punctuation <comma>
  }
  vector.print str "\n"
  return
}
