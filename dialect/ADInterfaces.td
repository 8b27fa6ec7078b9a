//===- ADInterfaces.td - differentiation interfaces -------*- tablegen -*-===//
//
// The two interfaces the differentiation transform is written against:
// derivative rules live on ops (ReverseRuleOpInterface) and cotangent
// arithmetic lives on types (CotangentTypeInterface). The transform never
// switches on op or type names.
//
//===----------------------------------------------------------------------===//

#ifndef AD_INTERFACES_TD
#define AD_INTERFACES_TD

include "mlir/IR/OpBase.td"

def AD_ReverseRuleOpInterface : OpInterface<"ReverseRuleOpInterface"> {
  let cppNamespace = "::mlir::ad";
  let description = [{
    The reverse-mode derivative rule of an op. Upstream ops get it as external
    models (one file per upstream dialect under `lib/Rules`).

    Differentiating a function happens in two sweeps. The forward sweep calls
    `emitForward` on every active op, in program order, to emit the op into the
    augmented forward function; the default clones it. An op whose adjoint
    needs values that are not among its operands or results (a call needs its
    callee's tape) emits them here and registers them as residuals.

    The reverse sweep calls `emitReverse` on every active op whose results
    received a cotangent, in reverse program order. The rule reads the
    cotangents of the op's results and the primal values it needs through the
    emitter (which stores exactly those values on the tape) and adds the
    cotangent contribution of each active operand. Operands that are not
    active may be skipped; adding to them is ignored.

    ```c++
    // d(a*b) = b*da + a*db
    LogicalResult emitReverse(Operation *op, ReverseEmitter &e) const {
      auto mul = cast<arith::MulFOp>(op);
      Value g = e.getCotangent(mul.getResult());
      RuleBuilder b(e.getBuilder(), op->getLoc());
      if (e.isActive(mul.getLhs()))
        e.addCotangent(mul.getLhs(), b.mul(g, e.getPrimal(mul.getRhs())));
      ...
    }
    ```
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Emits this op into the augmented forward function. The
        default clones it with mapped operands.}],
      /*retTy=*/"::llvm::LogicalResult",
      /*methodName=*/"emitForward",
      /*args=*/(ins "::mlir::ad::ForwardEmitter &":$emitter),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return emitter.cloneOp($_op.getOperation());
      }]>,
    InterfaceMethod<
      /*desc=*/[{Whether the forward version of this op writes a growable
        tape (a loop whose trip count is unknown at entry). Region ops that
        contain such an op carry the tape through with
        ForwardEmitter::getCarriedTapes.}],
      /*retTy=*/"bool",
      /*methodName=*/"usesGrowableTape",
      /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{ return false; }]>,
    InterfaceMethod<
      /*desc=*/[{Emits the adjoint of this op into the pullback function:
        reads the cotangents of its results and adds the contributions to the
        cotangents of its active operands. Emits a diagnostic and fails when
        the op cannot be differentiated in this form.}],
      /*retTy=*/"::llvm::LogicalResult",
      /*methodName=*/"emitReverse",
      /*args=*/(ins "::mlir::ad::ReverseEmitter &":$emitter)>,
  ];
}

def AD_TangentRuleOpInterface : OpInterface<"TangentRuleOpInterface"> {
  let cppNamespace = "::mlir::ad";
  let description = [{
    The forward-mode derivative rule of an op. Forward mode emits one
    function per differentiated `(callee, wrt)`, the tangent function, whose
    arguments are the callee's followed by the tangents of the differentiated
    arguments and whose results are the callee's followed by the tangents of
    its float results. Ops are visited in program order; an op none of whose
    results is active is cloned, and every active op calls `emitTangent`.

    The rule emits the op's primal computation (usually
    `emitter.cloneOp(op)`) and then, from the primal values
    (`emitter.lookup`) and the tangents of its operands
    (`emitter.getTangent`, a zero for an operand that is not active), the
    tangent of each active result (`emitter.setTangent`). Region ops rebuild
    themselves with the tangents carried alongside the primal values.

    ```c++
    // d(a*b) = b*da + a*db
    LogicalResult emitTangent(Operation *op, TangentEmitter &e) const {
      auto mul = cast<arith::MulFOp>(op);
      if (failed(e.cloneOp(op)))
        return failure();
      RuleBuilder b(e.getBuilder(), op->getLoc());
      Value da = e.getTangent(mul.getLhs()), db = e.getTangent(mul.getRhs());
      e.setTangent(mul.getResult(),
                   b.add(b.mul(da, e.lookup(mul.getRhs())),
                         b.mul(e.lookup(mul.getLhs()), db)));
      return success();
    }
    ```

    Elementwise ops attached with `attachElementwiseRule` get this rule from
    the same partial-derivative function as their reverse rule.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Emits this op and the tangents of its active results into
        the tangent function. Emits a diagnostic and fails when the op
        cannot be differentiated in this form.}],
      /*retTy=*/"::llvm::LogicalResult",
      /*methodName=*/"emitTangent",
      /*args=*/(ins "::mlir::ad::TangentEmitter &":$emitter)>,
  ];
}

def AD_CotangentTypeInterface : TypeInterface<"CotangentTypeInterface"> {
  let cppNamespace = "::mlir::ad";
  let description = [{
    The cotangent space of a type: whether values of the type carry
    gradients, how to make constants of the cotangent type (zero, the seed
    one) and how to add two cotangents when a value fans out. Builtin float
    types and ranked tensors get it as external models, so scalars and
    tensors go through the same differentiation code.
  }];
  let methods = [
    InterfaceMethod<
      "Whether values of this type carry a gradient (a tensor of integers "
      "does not).",
      "bool", "isDifferentiable", (ins)>,
    InterfaceMethod<
      "Materializes a value of this type whose every element is `value`, or "
      "returns null when the type has no static form to fill (dynamic shape).",
      "::mlir::Value", "createConstant",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "double":$value)>,
    InterfaceMethod<
      "Materializes a zero of this type shaped like `like` (a value of this "
      "type, read only for dynamic sizes).",
      "::mlir::Value", "createZerosLike",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::Value":$like)>,
    InterfaceMethod<
      "Adds two cotangents of this type.",
      "::mlir::Value", "createAdd",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::Value":$lhs, "::mlir::Value":$rhs)>,
  ];
}

#endif // AD_INTERFACES_TD
