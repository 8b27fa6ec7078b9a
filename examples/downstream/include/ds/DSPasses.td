//===- DSPasses.td - passes of the downstream example ------*- tablegen -*-===//

#ifndef DS_PASSES_TD
#define DS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertDSToArithPass : Pass<"convert-ds-to-arith"> {
  let summary = "Lower ds ops to arith and math";
  let description = [{
    Rewrites every ds op into arith and math ops on the same types:

    - `ds.softplus`: `max(x, 0) + log1p(exp(-|x|))`,
    - `ds.cube`: `x * x * x`,
    - `ds.quantize`: `step * round(x / step)`.

    Run it after `ad-differentiate` (the rules of the ds ops need the ops)
    and before `ad-lower-to-llvm`; `ds-lower-to-llvm` runs the three.
  }];
  // ad::createFilledLike builds the constants, with tensor and linalg ops
  // for dynamically shaped tensors.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // DS_PASSES_TD
