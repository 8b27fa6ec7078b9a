//===- ADTypes.td - types of the ad dialect ---------------*- tablegen -*-===//
//
// The pullback closure type returned by `ad.forward`.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TYPES_TD
#define AD_TYPES_TD

include "ADDialect.td"
include "mlir/IR/AttrTypeBase.td"

def AD_PullbackType : TypeDef<AD_Dialect, "Pullback"> {
  let mnemonic = "pullback";
  let summary = "A pullback closure: cotangents of results to gradients";
  let description = [{
    A value of type `!ad.pullback<(C1, ..., Cn) -> (G1, ..., Gm)>` is the
    reverse half of a differentiated call, produced by `ad.forward`. It
    captures whatever the adjoint needs from the forward run (its tape).
    Applying it with `ad.pullback` to one cotangent per floating-point result
    of the callee (`C1..Cn`, in result order) yields one gradient per
    differentiated argument (`G1..Gm`, in argument order).

    ```mlir
    !ad.pullback<(f64) -> (f64, tensor<4xf64>)>
    ```

    Every `Ci` and `Gj` must be a differentiable type: a floating-point scalar
    or a ranked tensor of floating-point elements. A pullback is a value:
    applying it several times gives the same gradients, and not applying it
    at all is allowed.
  }];
  let parameters = (ins "::mlir::FunctionType":$signature);
  let assemblyFormat = "`<` $signature `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Types of the cotangents the pullback takes.
    ::llvm::ArrayRef<::mlir::Type> getCotangentTypes() const {
      return getSignature().getInputs();
    }
    /// Types of the gradients the pullback returns.
    ::llvm::ArrayRef<::mlir::Type> getGradientTypes() const {
      return getSignature().getResults();
    }
  }];
}

#endif // AD_TYPES_TD
