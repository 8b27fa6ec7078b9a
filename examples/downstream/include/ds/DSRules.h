//===- DSRules.h - derivative rules of ds ops -------------------*- C++ -*-===//
//
// The reverse rules of ds ops that are not part of the ops themselves.
//
//===----------------------------------------------------------------------===//

#ifndef DS_DSRULES_H
#define DS_DSRULES_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace ds {

/// Adds the reverse rule of ds.softplus (an external model of
/// ReverseRuleOpInterface) to `registry`; it is attached when the ds
/// dialect is loaded. ds.cube implements the interface itself; ds.quantize
/// has no rule.
void registerDSReverseRules(mlir::DialectRegistry &registry);

} // namespace ds

#endif // DS_DSRULES_H
