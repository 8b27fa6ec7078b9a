// Orders and trip counts the code generation once got wrong (a review of
// ad-vectorize's convolution tiling and ad-fuse-elementwise's forwarded
// results), with fusion and vectorization on and off.
// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s
// RUN: ad-opt %s --ad-lower-to-llvm=fuse=false | %run | FileCheck %s
// RUN: ad-opt %s --ad-lower-to-llvm="fuse=false vectorize=false" | %run | FileCheck %s

func.func private @printMemrefF64(tensor<*xf64>)

// An output written through a sum (out[kw + ow, c]) by a body that
// overwrites it: the last write, in loop order, is from the largest kw.
// ad-vectorize's convolution tiles ran ow outside kw.
func.func @overwrite(%a: tensor<2x1xf64>, %b: tensor<4x1x8xf64>, %o: tensor<5x8xf64>) -> tensor<5x8xf64> {
  %r = linalg.generic {indexing_maps = [affine_map<(kw, ow, c, f) -> (kw, f)>, affine_map<(kw, ow, c, f) -> (ow, f, c)>, affine_map<(kw, ow, c, f) -> (kw + ow, c)>], iterator_types = ["reduction", "reduction", "parallel", "reduction"]} ins(%a, %b : tensor<2x1xf64>, tensor<4x1x8xf64>) outs(%o : tensor<5x8xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %m = arith.mulf %x, %y : f64
    linalg.yield %m : f64
  } -> tensor<5x8xf64>
  return %r : tensor<5x8xf64>
}

// A result yielding an input, over a loop its map does not read that runs
// no iterations: the result is its init (7), not the input.
func.func @copy_over_empty_loop(%a: tensor<?xf64>, %b: tensor<?x?xf64>, %x: tensor<?xf64>) -> tensor<?xf64> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a, %b : tensor<?xf64>, tensor<?x?xf64>) outs(%x : tensor<?xf64>) {
  ^bb0(%va: f64, %vb: f64, %o: f64):
    linalg.yield %va : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}

func.func @main() {
  // CHECK: [1, 1, 1, 1, 1, 1, 1, 1],
  // CHECK-NEXT: [2, 2, 2, 2, 2, 2, 2, 2],
  // CHECK-NEXT: [2, 2, 2, 2, 2, 2, 2, 2],
  // CHECK-NEXT: [2, 2, 2, 2, 2, 2, 2, 2],
  // CHECK-NEXT: [2, 2, 2, 2, 2, 2, 2, 2]]
  %a = arith.constant dense<[[1.0], [2.0]]> : tensor<2x1xf64>
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  %seven = arith.constant 7.0 : f64
  %eb = tensor.empty() : tensor<4x1x8xf64>
  %b = linalg.fill ins(%one : f64) outs(%eb : tensor<4x1x8xf64>) -> tensor<4x1x8xf64>
  %eo = tensor.empty() : tensor<5x8xf64>
  %o = linalg.fill ins(%zero : f64) outs(%eo : tensor<5x8xf64>) -> tensor<5x8xf64>
  %r = func.call @overwrite(%a, %b, %o) : (tensor<2x1xf64>, tensor<4x1x8xf64>, tensor<5x8xf64>) -> tensor<5x8xf64>
  %u = tensor.cast %r : tensor<5x8xf64> to tensor<*xf64>
  func.call @printMemrefF64(%u) : (tensor<*xf64>) -> ()

  // CHECK: [7, 7, 7]
  // Sizes loaded from memory stay dynamic.
  %m = memref.alloca() : memref<2xindex>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  memref.store %c3, %m[%c0] : memref<2xindex>
  memref.store %c0, %m[%c1] : memref<2xindex>
  %n = memref.load %m[%c0] : memref<2xindex>
  %k = memref.load %m[%c1] : memref<2xindex>
  %ea = tensor.empty(%n) : tensor<?xf64>
  %va = linalg.fill ins(%one : f64) outs(%ea : tensor<?xf64>) -> tensor<?xf64>
  %ebb = tensor.empty(%n, %k) : tensor<?x?xf64>
  %vb = linalg.fill ins(%one : f64) outs(%ebb : tensor<?x?xf64>) -> tensor<?x?xf64>
  %ex = tensor.empty(%n) : tensor<?xf64>
  %vx = linalg.fill ins(%seven : f64) outs(%ex : tensor<?xf64>) -> tensor<?xf64>
  %rc = func.call @copy_over_empty_loop(%va, %vb, %vx) : (tensor<?xf64>, tensor<?x?xf64>, tensor<?xf64>) -> tensor<?xf64>
  %uc = tensor.cast %rc : tensor<?xf64> to tensor<*xf64>
  func.call @printMemrefF64(%uc) : (tensor<*xf64>) -> ()
  return
}
