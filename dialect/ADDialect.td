//===- ADDialect.td - the automatic differentiation dialect -*- tablegen -*-===//
//
// Declares the `ad` dialect: ops that request derivatives of `func.func`
// symbols and the closure type that carries a pullback between them.
//
//===----------------------------------------------------------------------===//

#ifndef AD_DIALECT_TD
#define AD_DIALECT_TD

include "mlir/IR/OpBase.td"

def AD_Dialect : Dialect {
  let name = "ad";
  let cppNamespace = "::mlir::ad";
  let summary = "Source-to-source reverse-mode automatic differentiation";
  let description = [{
    The `ad` dialect asks for derivatives of functions written with the
    upstream `func`, `arith` and `math` dialects (control flow and tensors
    follow). Its ops name a `func.func` callee by symbol:

    ```mlir
    %gx, %gw = ad.grad @f(%x, %w, %n) : (f64, f64, index) -> (f64, f64)
    %y, %pb = ad.forward @f(%x, %w, %n)
        : (f64, f64, index) -> (f64, !ad.pullback<(f64) -> (f64, f64)>)
    %gx2, %gw2 = ad.pullback %pb(%dy) : !ad.pullback<(f64) -> (f64, f64)>
    ```

    The `ad-differentiate` pipeline rewrites every such op into ordinary
    upstream IR: an augmented forward function that returns the callee's
    results plus the values its adjoint needs (the tape), and a pullback
    function that maps the tape and the result cotangents to gradients.
  }];
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

#endif // AD_DIALECT_TD
