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
