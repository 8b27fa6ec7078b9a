//===- Rules.h - registration of derivative rules ---------------*- C++ -*-===//
//
// Derivative rules of upstream ops are external models of
// ReverseRuleOpInterface and TangentRuleOpInterface; these functions add
// them to a registry.
//
//===----------------------------------------------------------------------===//

#ifndef AD_RULES_RULES_H
#define AD_RULES_RULES_H

namespace mlir {
class DialectRegistry;
namespace ad {

/// Rules for the floating-point ops of the arith dialect.
void registerArithReverseRules(DialectRegistry &registry);
/// Rules for the floating-point ops of the math dialect.
void registerMathReverseRules(DialectRegistry &registry);
/// The rule for func.call (nested forward and pullback functions).
void registerFuncReverseRules(DialectRegistry &registry);
/// Rules for scf.for and scf.if (loops reversed over a per-iteration tape,
/// branches replaying the recorded condition).
void registerSCFReverseRules(DialectRegistry &registry);
/// Rules for linalg.generic (named linalg ops are generalized to it first).
void registerLinalgReverseRules(DialectRegistry &registry);
/// Both modes' rules of the tensor ops (extract/insert and their slice
/// forms, splat, from_elements, generate, pad, reshapes, cast, concat,
/// empty).
void registerTensorRules(DialectRegistry &registry);
/// Forward-mode rules of scf.for, scf.while, scf.if, scf.index_switch and
/// scf.execute_region (the tangents carried next to the primal values).
void registerSCFTangentRules(DialectRegistry &registry);
/// Forward-mode rule of linalg.generic.
void registerLinalgTangentRules(DialectRegistry &registry);
/// Forward-mode rules of memref and bufferization ops (shadow buffers) and
/// of the bitcast that fills a tape slot.
void registerMemRefTangentRules(DialectRegistry &registry);
/// Every rule above, reverse and forward. (The arith, math and func
/// functions register both modes' rules of their ops.)
void registerReverseRules(DialectRegistry &registry);

} // namespace ad
} // namespace mlir

#endif // AD_RULES_RULES_H
