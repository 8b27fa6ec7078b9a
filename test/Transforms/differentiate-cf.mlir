// RUN: ad-opt %s --ad-differentiate | FileCheck %s

// A loop made of blocks with block arguments, two exits: ad-differentiate
// structures it (lift-cf-to-scf) and reverses the resulting scf.while and
// scf.if; no unstructured control flow is left in the derivatives.
// CHECK-LABEL: func.func private @block_loop_ad_fwd_0
// CHECK-NOT: {{[^s]cf\.}}
// CHECK: scf.while
// CHECK-LABEL: func.func private @block_loop_ad_pb_0
// CHECK-NOT: {{[^s]cf\.}}
// CHECK-DAG: scf.for
// CHECK-DAG: scf.if
// CHECK-LABEL: func.func @caller
// Functions that are not differentiated keep their form.
// CHECK-LABEL: func.func @untouched
// CHECK: cf.cond_br
// CHECK: linalg.matmul
func.func @block_loop(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  cf.br ^loop(%c0, %one : index, f64)
^loop(%i: index, %p: f64):
  %stop = arith.cmpi sge, %i, %n : index
  cf.cond_br %stop, ^exit(%p : f64), ^body
^body:
  %q = arith.mulf %p, %x : f64
  %i1 = arith.addi %i, %c1 : index
  cf.br ^loop(%i1, %q : index, f64)
^exit(%e: f64):
  %small = arith.cmpf olt, %e, %one : f64
  cf.cond_br %small, ^shrink, ^done
^shrink:
  %s = math.sin %e : f64
  return %s : f64
^done:
  return %e : f64
}

func.func @caller(%x: f64, %n: index) -> f64 {
  %g = ad.grad @block_loop(%x, %n) : (f64, index) -> f64
  return %g : f64
}

func.func @untouched(%c: i1, %a: tensor<2x2xf64>, %b: tensor<2x2xf64>) -> tensor<2x2xf64> {
  cf.cond_br %c, ^mul, ^done
^mul:
  %m = linalg.matmul ins(%a, %b : tensor<2x2xf64>, tensor<2x2xf64>) outs(%a : tensor<2x2xf64>) -> tensor<2x2xf64>
  return %m : tensor<2x2xf64>
^done:
  return %a : tensor<2x2xf64>
}
