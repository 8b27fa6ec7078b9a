//===- ADDialect.h - the ad dialect, its types and ops ----------*- C++ -*-===//
//
// Public header of the `ad` dialect: include this to build or match ad ops.
//
//===----------------------------------------------------------------------===//

#ifndef AD_IR_ADDIALECT_H
#define AD_IR_ADDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ad/IR/ADOpsDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "ad/IR/ADOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "ad/IR/ADOps.h.inc"

namespace mlir::ad {
/// The closure type of `ad.forward` on `callee` with respect to the argument
/// positions `wrt`: cotangents of the callee's float results to gradients of
/// those arguments.
PullbackType getPullbackTypeOf(func::FuncOp callee, ArrayRef<int64_t> wrt);

/// The user-written rules (ad.custom_vjp, ad.custom_jvp) of the functions
/// of a module, indexed on first use (one scan of the module's top-level
/// ops; again when asked about a function of another module).
class CustomRuleIndex {
public:
  /// The rule for `function`, or null.
  CustomVjpOp getVjp(func::FuncOp function);
  CustomJvpOp getJvp(func::FuncOp function);
  /// Whether `function` has a rule of either kind.
  bool hasRule(func::FuncOp function) {
    return getVjp(function) || getJvp(function);
  }

private:
  void indexModuleOf(func::FuncOp function);
  Operation *indexed = nullptr;
  DenseMap<StringAttr, CustomVjpOp> vjps;
  DenseMap<StringAttr, CustomJvpOp> jvps;
};

/// The positions among `positions` whose argument of `callee` has a
/// differentiable type: a generated function's differentiated arguments.
/// The others are integers that vary in a caller: they may hold a float's
/// bits (arith.bitcast), so the callee's activity starts from them too.
SmallVector<int64_t> getDifferentiablePositions(func::FuncOp callee,
                                                ArrayRef<int64_t> positions);

/// The positions among `positions` whose argument of `callee` has a
/// tangent in forward mode (hasTangentType: differentiable types and
/// buffers of floats, which get shadow buffers).
SmallVector<int64_t> getTangentPositions(func::FuncOp callee,
                                         ArrayRef<int64_t> positions);
} // namespace mlir::ad

#endif // AD_IR_ADDIALECT_H
