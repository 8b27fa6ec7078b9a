//===- ADInterfaces.h - rule and cotangent interfaces -----------*- C++ -*-===//
//
// The interfaces derivative rules are written against: the emitters through
// which a rule reads primal values and cotangents, the generated
// ReverseRuleOpInterface and CotangentTypeInterface, and helpers over them.
//
//===----------------------------------------------------------------------===//

#ifndef AD_IR_ADINTERFACES_H
#define AD_IR_ADINTERFACES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Types.h"

namespace mlir::ad {

/// The pair of functions generated for one differentiated (callee, wrt).
struct DerivativeFunctions {
  /// Callee arguments -> (callee results..., tape values...).
  func::FuncOp forward;
  /// (tape values..., one cotangent per float result) -> gradients.
  func::FuncOp pullback;
  /// Differentiated argument positions, strictly increasing.
  SmallVector<int64_t> wrt;
  /// Number of tape values the forward function returns after the results.
  unsigned numTapeValues = 0;
};

/// What both sweeps offer a rule.
class DifferentiationEmitter {
public:
  virtual ~DifferentiationEmitter() = default;
  /// The builder positioned where the rule emits code.
  virtual OpBuilder &getBuilder() = 0;
  /// Whether `original` (a value of the function being differentiated)
  /// depends on a differentiated argument and reaches a float result.
  virtual bool isActive(Value original) const = 0;
  /// The derivative functions of `callee` with respect to `wrt`, generated
  /// on first request. Emits a diagnostic at `requester` and fails when the
  /// callee cannot be differentiated.
  virtual FailureOr<DerivativeFunctions>
  getDerivativeFunctions(func::FuncOp callee, ArrayRef<int64_t> wrt,
                         Operation *requester) = 0;
};

/// The forward sweep: emits the augmented forward function.
class ForwardEmitter : public DifferentiationEmitter {
public:
  /// The forward-function value standing for `original`.
  virtual Value lookup(Value original) = 0;
  /// Clones `original` with mapped operands and maps its results.
  virtual LogicalResult cloneOp(Operation *original) = 0;
  /// Records that `forwardValues` stand for the results of `original`.
  virtual void mapResults(Operation *original, ValueRange forwardValues) = 0;
  /// Records forward-function values the reverse rule of `original` reads
  /// through ReverseEmitter::getResiduals.
  virtual void setResiduals(Operation *original, ValueRange forwardValues) = 0;
};

/// The reverse sweep: emits the pullback function.
class ReverseEmitter : public DifferentiationEmitter {
public:
  /// The value of `original` from the forward run, usable in the pullback.
  /// Reading a value is what puts it on the tape (constants are rebuilt).
  virtual Value getPrimal(Value original) = 0;
  /// The residuals the forward sweep registered for `original`, usable in
  /// the pullback.
  virtual SmallVector<Value> getResiduals(Operation *original) = 0;
  /// The cotangent accumulated so far for a result of the op being reversed,
  /// or a zero of its type.
  virtual Value getCotangent(Value originalResult) = 0;
  /// Adds `contribution` to the cotangent of `originalOperand`; ignored when
  /// the operand is not active.
  virtual void addCotangent(Value originalOperand, Value contribution) = 0;
};

/// Whether values of `type` carry gradients (float scalars, ranked tensors
/// of floats).
bool isDifferentiableType(Type type);

/// A constant of differentiable `type` filled with `value`; null when the
/// type cannot be filled without shape operands.
Value createFilledConstant(OpBuilder &builder, Location loc, Type type,
                           double value);

/// `lhs + rhs` for cotangents of differentiable type.
Value createCotangentAdd(OpBuilder &builder, Location loc, Value lhs,
                         Value rhs);

} // namespace mlir::ad

#include "ad/IR/ADOpInterfaces.h.inc"
#include "ad/IR/ADTypeInterfaces.h.inc"

#endif // AD_IR_ADINTERFACES_H
