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

// -----

// A recursion that only reads its tensor argument takes it as a buffer:
// one-shot bufferization would copy the tensor at every recursive call
// (it cannot analyze the callee first). The caller outside the recursion
// passes a read-only buffer of its tensor.
// CHECK-LABEL: func.func private @walk
// CHECK-SAME: (%[[A:.*]]: memref<?xf64>, %[[I:.*]]: index)
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[A]] restrict : memref<?xf64> to tensor<?xf64>
// CHECK: tensor.extract %[[T]]
// CHECK: call @walk(%[[A]],
// CHECK-LABEL: func.func @walk_from_outside
// CHECK: %[[B:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<?xf64> to memref<?xf64>
// CHECK: call @walk(%[[B]],
func.func private @walk(%a: tensor<?xf64>, %i: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = tensor.extract %a[%i] : tensor<?xf64>
  %done = arith.cmpi eq, %i, %c0 : index
  %r = scf.if %done -> f64 {
    scf.yield %x : f64
  } else {
    %j = arith.subi %i, %c1 : index
    %s = func.call @walk(%a, %j) : (tensor<?xf64>, index) -> f64
    %p = arith.mulf %s, %x : f64
    scf.yield %p : f64
  }
  return %r : f64
}
func.func @walk_from_outside(%a: tensor<?xf64>, %i: index) -> f64 {
  %r = func.call @walk(%a, %i) : (tensor<?xf64>, index) -> f64
  return %r : f64
}

// -----

// With a second tensor argument written in place, a call passes the read
// one's buffer only when the written one is made from fresh buffers (here
// a fill of tensor.empty) that are not the read one's; otherwise the
// written one could be the read one's buffer, and the call passes a copy.
// CHECK-LABEL: func.func private @accumulate
// CHECK-SAME: (%{{.*}}: memref<?xf64>, %{{.*}}: tensor<?xf64>, %{{.*}}: index) -> tensor<?xf64>
// CHECK-LABEL: func.func @accumulate_fresh
// CHECK-NOT: bufferization.alloc_tensor
// CHECK: %[[B:.*]] = bufferization.to_buffer %arg0 read_only
// CHECK: call @accumulate(%[[B]],
// CHECK-LABEL: func.func private @accumulate_aliased
// CHECK-SAME: (%{{.*}}: memref<?xf64>, %{{.*}}: tensor<?xf64>, %{{.*}}: index) -> tensor<?xf64>
// CHECK-LABEL: func.func @accumulate_into_itself
// CHECK: %[[C:.*]] = bufferization.alloc_tensor() copy(%arg0)
// CHECK: %[[B:.*]] = bufferization.to_buffer %[[C]] read_only
// CHECK: call @accumulate_aliased(%[[B]], %arg0,
func.func private @accumulate(%a: tensor<?xf64>, %acc: tensor<?xf64>, %i: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = tensor.extract %a[%i] : tensor<?xf64>
  %old = tensor.extract %acc[%c0] : tensor<?xf64>
  %new = arith.addf %old, %x : f64
  %acc1 = tensor.insert %new into %acc[%c0] : tensor<?xf64>
  %done = arith.cmpi eq, %i, %c0 : index
  %r = scf.if %done -> tensor<?xf64> {
    scf.yield %acc1 : tensor<?xf64>
  } else {
    %j = arith.subi %i, %c1 : index
    %s = func.call @accumulate(%a, %acc1, %j) : (tensor<?xf64>, tensor<?xf64>, index) -> tensor<?xf64>
    scf.yield %s : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}
func.func @accumulate_fresh(%a: tensor<?xf64>, %i: index) -> tensor<?xf64> {
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %e = tensor.empty(%c1) : tensor<?xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
  %r = func.call @accumulate(%a, %f, %i) : (tensor<?xf64>, tensor<?xf64>, index) -> tensor<?xf64>
  return %r : tensor<?xf64>
}
func.func private @accumulate_aliased(%a: tensor<?xf64>, %acc: tensor<?xf64>, %i: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = tensor.extract %a[%i] : tensor<?xf64>
  %old = tensor.extract %acc[%c0] : tensor<?xf64>
  %new = arith.addf %old, %x : f64
  %acc1 = tensor.insert %new into %acc[%c0] : tensor<?xf64>
  %done = arith.cmpi eq, %i, %c0 : index
  %r = scf.if %done -> tensor<?xf64> {
    scf.yield %acc1 : tensor<?xf64>
  } else {
    %j = arith.subi %i, %c1 : index
    %s = func.call @accumulate_aliased(%a, %acc1, %j) : (tensor<?xf64>, tensor<?xf64>, index) -> tensor<?xf64>
    scf.yield %s : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}
func.func @accumulate_into_itself(%a: tensor<?xf64>, %i: index) -> tensor<?xf64> {
  %r = func.call @accumulate_aliased(%a, %a, %i) : (tensor<?xf64>, tensor<?xf64>, index) -> tensor<?xf64>
  return %r : tensor<?xf64>
}

// -----

// An argument whose value may be returned (or is passed where the callee
// writes) stays a tensor.
// CHECK-LABEL: func.func private @returns_it
// CHECK-SAME: (%{{.*}}: tensor<?xf64>, %{{.*}}: index) -> tensor<?xf64>
// CHECK-NOT: bufferization.to_tensor
func.func private @returns_it(%a: tensor<?xf64>, %i: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %done = arith.cmpi eq, %i, %c0 : index
  %r = scf.if %done -> tensor<?xf64> {
    scf.yield %a : tensor<?xf64>
  } else {
    %j = arith.subi %i, %c1 : index
    %s = func.call @returns_it(%a, %j) : (tensor<?xf64>, index) -> tensor<?xf64>
    scf.yield %s : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}
func.func @returns_it_from_outside(%a: tensor<?xf64>, %i: index) -> tensor<?xf64> {
  %r = func.call @returns_it(%a, %i) : (tensor<?xf64>, index) -> tensor<?xf64>
  return %r : tensor<?xf64>
}

// -----

// A private function returning a dynamically shaped loop-carried tensor
// that may be its argument's (a branch yields the carried value): the copy
// takes its sizes from the copied tensor (an alloc_tensor with both sizes
// and a copy is invalid).
// CHECK-LABEL: func.func private @carried
// CHECK: %[[R:.*]] = scf.for
// CHECK: %[[C:.*]] = bufferization.alloc_tensor() copy(%[[R]]) : tensor<?xf64>
// CHECK: return %[[C]]
func.func private @carried(%x: tensor<?xf64>, %n: index, %flag: i1) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant dense<1.0> : tensor<4xf64>
  %k = tensor.cast %cst : tensor<4xf64> to tensor<?xf64>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %k) -> tensor<?xf64> {
    %s = scf.if %flag -> tensor<?xf64> {
      scf.yield %t : tensor<?xf64>
    } else {
      scf.yield %x : tensor<?xf64>
    }
    scf.yield %s : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}
