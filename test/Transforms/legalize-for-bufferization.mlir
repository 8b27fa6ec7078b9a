// RUN: ad-opt %s --split-input-file --ad-legalize-for-bufferization | FileCheck %s

// Two dynamic sizes in one group: a tensor.reshape with the output shape.
// CHECK-LABEL: func.func @two_dynamic
// CHECK-SAME: (%[[T:.*]]: tensor<?x?xf64>, %[[A:.*]]: index, %[[B:.*]]: index, %[[C:.*]]: index)
// CHECK: %[[S:.*]] = tensor.from_elements %[[A]], %[[B]], %[[C]] : tensor<3xindex>
// CHECK: %[[R:.*]] = tensor.reshape %[[T]](%[[S]]) : (tensor<?x?xf64>, tensor<3xindex>) -> tensor<?x?x?xf64>
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[R]]
func.func @two_dynamic(%t: tensor<?x?xf64>, %a: index, %b: index, %c: index) -> tensor<?x?x?xf64> {
  %e = tensor.expand_shape %t [[0], [1, 2]] output_shape [%a, %b, %c] : tensor<?x?xf64> into tensor<?x?x?xf64>
  return %e : tensor<?x?x?xf64>
}

// -----

// One dynamic size per group lowers upstream: left alone.
// CHECK-LABEL: func.func @one_dynamic
// CHECK: tensor.expand_shape
// CHECK-NOT: tensor.reshape
func.func @one_dynamic(%t: tensor<?x?xf64>, %a: index, %b: index) -> tensor<?x?x2xf64> {
  %e = tensor.expand_shape %t [[0], [1, 2]] output_shape [%a, %b, 2] : tensor<?x?xf64> into tensor<?x?x2xf64>
  return %e : tensor<?x?x2xf64>
}

// -----

// An scf.index_switch with tensor results becomes a chain of scf.if, one per
// case, the default last (one-shot bufferization of LLVM 22 mishandles the
// switch's yielded buffers).
// CHECK-LABEL: func.func @switch
// CHECK-SAME: (%[[N:.*]]: index, %[[A:.*]]: tensor<2xf64>, %[[B:.*]]: tensor<2xf64>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[IS0:.*]] = arith.cmpi eq, %[[N]], %[[C0]] : index
// CHECK: %[[R:.*]] = scf.if %[[IS0]] -> (tensor<2xf64>) {
// CHECK: scf.yield %[[A]]
// CHECK: } else {
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[IS3:.*]] = arith.cmpi eq, %[[N]], %[[C3]] : index
// CHECK: %[[INNER:.*]] = scf.if %[[IS3]] -> (tensor<2xf64>) {
// CHECK: scf.yield %[[B]]
// CHECK: } else {
// CHECK: tensor.empty
// CHECK: }
// CHECK: scf.yield %[[INNER]]
// CHECK: }
// CHECK-NOT: scf.index_switch
// CHECK: return %[[R]]
func.func @switch(%n: index, %a: tensor<2xf64>, %b: tensor<2xf64>) -> tensor<2xf64> {
  %r = scf.index_switch %n -> tensor<2xf64>
  case 0 {
    scf.yield %a : tensor<2xf64>
  }
  case 3 {
    scf.yield %b : tensor<2xf64>
  }
  default {
    %e = tensor.empty() : tensor<2xf64>
    scf.yield %e : tensor<2xf64>
  }
  return %r : tensor<2xf64>
}

// -----

// A switch of scalars bufferizes correctly: left alone.
// CHECK-LABEL: func.func @scalar_switch
// CHECK: scf.index_switch
func.func @scalar_switch(%n: index, %a: f64) -> f64 {
  %r = scf.index_switch %n -> f64
  case 1 {
    scf.yield %a : f64
  }
  default {
    %z = arith.constant 0.0 : f64
    scf.yield %z : f64
  }
  return %r : f64
}

// -----

// A strided slice that drops unit dimensions: the slice keeping them, then
// a collapse_shape (expand-strided-metadata of LLVM 22 crashes on the
// rank-reducing strided subview).
// CHECK-LABEL: func.func @strided_rank_reducing
// CHECK: %[[FULL:.*]] = tensor.extract_slice %{{.*}}[1, 0, 0] [1, 2, 1] [1, 2, 1] : tensor<2x3x1xf64> to tensor<1x2x1xf64>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[FULL]] {{\[}}[0, 1, 2]] : tensor<1x2x1xf64> into tensor<2xf64>
// CHECK: return %[[C]]
func.func @strided_rank_reducing(%t: tensor<2x3x1xf64>) -> tensor<2xf64> {
  %s = tensor.extract_slice %t[1, 0, 0] [1, 2, 1] [1, 2, 1] : tensor<2x3x1xf64> to tensor<2xf64>
  return %s : tensor<2xf64>
}

// -----

// A private function returns its buffers' ownership instead of a clone
// (buffer deallocation with private-function-dynamic-ownership), so a
// returned tensor that may be a constant (here through a branch and a
// loop that may not run) is copied: a caller writing into the result in
// place would write into the constant's read-only global.
// CHECK-LABEL: func.func private @maybe_constant
// CHECK: %[[R:.*]] = scf.if
// CHECK: %[[L:.*]] = scf.for
// CHECK: %[[C1:.*]] = bufferization.alloc_tensor() copy(%[[R]])
// CHECK: %[[C2:.*]] = bufferization.alloc_tensor() copy(%[[L]])
// CHECK: return %[[C1]], %[[C2]]
func.func private @maybe_constant(%x: tensor<3xf64>, %p: i1, %n: index) -> (tensor<3xf64>, tensor<3xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %k = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf64>
  %r = scf.if %p -> tensor<3xf64> {
    scf.yield %k : tensor<3xf64>
  } else {
    %s = math.sin %x : tensor<3xf64>
    scf.yield %s : tensor<3xf64>
  }
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%t = %k) -> tensor<3xf64> {
    %e = math.exp %t : tensor<3xf64>
    scf.yield %e : tensor<3xf64>
  }
  return %r, %l : tensor<3xf64>, tensor<3xf64>
}

// Fresh results, arguments and public functions are returned as they are.
// CHECK-LABEL: func.func private @fresh_or_argument
// CHECK-NOT: bufferization.alloc_tensor
// CHECK: return
func.func private @fresh_or_argument(%x: tensor<3xf64>, %p: i1) -> (tensor<3xf64>, tensor<3xf64>) {
  %k = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf64>
  %s = arith.addf %x, %k : tensor<3xf64>
  %r = scf.if %p -> tensor<3xf64> {
    scf.yield %x : tensor<3xf64>
  } else {
    %e = tensor.empty() : tensor<3xf64>
    %f = linalg.copy ins(%k : tensor<3xf64>) outs(%e : tensor<3xf64>) -> tensor<3xf64>
    scf.yield %f : tensor<3xf64>
  }
  return %s, %r : tensor<3xf64>, tensor<3xf64>
}

// CHECK-LABEL: func.func @public_constant
// CHECK-NOT: bufferization.alloc_tensor
// CHECK: return
func.func @public_constant() -> tensor<3xf64> {
  %k = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf64>
  return %k : tensor<3xf64>
}
