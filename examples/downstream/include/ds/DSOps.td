//===- DSOps.td - the ds dialect of the downstream example -*- tablegen -*-===//
//
// A small dialect of a project that uses MLIR-AD from its installed
// package. Three elementwise float ops: one whose derivative rule is an
// external model registered by the project (softplus), one that implements
// ReverseRuleOpInterface in ODS (cube), and one with no rule (quantize).
//
//===----------------------------------------------------------------------===//

#ifndef DS_OPS_TD
#define DS_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
// Installed by MLIR-AD (<prefix>/include/ad/IR/ADInterfaces.td).
include "ad/IR/ADInterfaces.td"

def DS_Dialect : Dialect {
  let name = "ds";
  let cppNamespace = "::ds";
  let summary = "The downstream example's dialect";
  let description = [{
    Elementwise float ops of a project built against MLIR-AD. They apply to
    a float scalar or, elementwise, to a ranked tensor of floats, and lower
    to arith and math with `convert-ds-to-arith`.
  }];
}

class DS_Op<string mnemonic, list<Trait> traits = []>
    : Op<DS_Dialect, mnemonic, traits>;

def DS_FloatLike : AnyTypeOf<[AnyFloat, RankedTensorOf<[AnyFloat]>]>;

def DS_SoftplusOp : DS_Op<"softplus", [Pure, SameOperandsAndResultType]> {
  let summary = "log(1 + exp(x)), elementwise";
  let description = [{
    The smooth rectifier `log(1 + exp(x))`, computed without overflow for
    large `x`:

    ```mlir
    %y = ds.softplus %x : f64
    %v = ds.softplus %t : tensor<?xf32>
    ```

    Its derivative is the logistic sigmoid `1 / (1 + exp(-x))`. The reverse
    rule is not part of the op: the project registers it as an external
    model of `ReverseRuleOpInterface` (`ds::registerDSReverseRules`).
  }];
  let arguments = (ins DS_FloatLike:$input);
  let results = (outs DS_FloatLike:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def DS_CubeOp : DS_Op<"cube", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<AD_ReverseRuleOpInterface>]> {
  let summary = "x * x * x, elementwise";
  let description = [{
    The cube of its operand:

    ```mlir
    %y = ds.cube %x : f64
    ```

    The op implements `ReverseRuleOpInterface` itself (declared here in
    ODS, `emitReverse` defined with the op): the cotangent of `x` is
    `3 x^2` times the result's.
  }];
  let arguments = (ins DS_FloatLike:$input);
  let results = (outs DS_FloatLike:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def DS_QuantizeOp : DS_Op<"quantize", [Pure, SameOperandsAndResultType]> {
  let summary = "Rounds to the nearest multiple of a step, elementwise";
  let description = [{
    `step * round(x / step)` (halfway cases away from zero):

    ```mlir
    %q = ds.quantize %x, %step : f64
    ```

    Deliberately without a reverse rule: its derivative is zero almost
    everywhere, which is rarely the gradient a user wants through it (a
    straight-through estimator passes the cotangent on unchanged), so a
    differentiated value flowing through it is an error that names it.
    Quantizing values that do not depend on a differentiated argument is
    fine.
  }];
  let arguments = (ins DS_FloatLike:$input, DS_FloatLike:$step);
  let results = (outs DS_FloatLike:$result);
  let assemblyFormat = "$input `,` $step attr-dict `:` type($result)";
}

#endif // DS_OPS_TD
