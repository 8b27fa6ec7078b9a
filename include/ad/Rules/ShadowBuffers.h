//===- ShadowBuffers.h - tangents of buffers --------------------*- C++ -*-===//
//
// In forward mode a buffer of floats that holds differentiable values has a
// shadow buffer of the same type holding their tangents; every op on the
// buffer does the same on the shadow (lib/Rules/MemRefTangentRules.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef AD_RULES_SHADOWBUFFERS_H
#define AD_RULES_SHADOWBUFFERS_H

#include "mlir/IR/Builders.h"

namespace mlir::ad {

/// Whether createZeroShadow can make a buffer of `type`: an identity
/// layout, or one a memref.cast reaches from it (dynamic strides).
bool canCreateZeroShadow(MemRefType type);

/// A new buffer of `buffer`'s type (sized like it) filled with zeros: the
/// shadow of a buffer nothing differentiable was written to.
/// canCreateZeroShadow(type) must hold.
Value createZeroShadow(OpBuilder &builder, Location loc, Value buffer);

} // namespace mlir::ad

#endif // AD_RULES_SHADOWBUFFERS_H
