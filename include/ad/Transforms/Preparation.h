//===- Preparation.h - bring functions into differentiable form -*- C++ -*-===//
//
// Semantics-preserving rewrites that bring a function into the form the
// derivative rules are written for. ad-generate-derivatives applies them to
// private copies of the functions it differentiates, never to the user's.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_PREPARATION_H
#define AD_TRANSFORMS_PREPARATION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::ad {

class DerivativeGenerator;

/// Rewrites `function` in place: unstructured control flow lifted to scf,
/// named linalg ops generalized, chains of tensor.cast folded, parallel
/// generics that read their outputs given the init as an input, and
/// generics or tensor.generate ops the rules do not cover written as the
/// scf.for nests they denote (see `needsLoopNest`). Fails with a diagnostic
/// when the control flow cannot be structured.
LogicalResult prepareForDifferentiation(func::FuncOp function);

/// Inlines, into `function`, the calls made inside its loops and branches
/// (anywhere in it, when it is recursive) to non-recursive functions that
/// run loops or call recursive functions, themselves or through their
/// callees: their tapes would hold buffers, which neither a loop iteration
/// nor a row of a recursion's tape can keep. Also the calls made inside
/// scf.for loops to short functions of cheap ops only (isCheapToRecompute):
/// the reverse sweep can then compute their values again from what the
/// loop carries instead of keeping them. `generator` answers which
/// functions are recursive.
LogicalResult inlineLoopCallsWithLoops(func::FuncOp function,
                                       DerivativeGenerator &generator);

/// Whether `op`, a scalar op or an op of a linalg body, is cheap to compute
/// twice: a pure arith op other than a float division or remainder (an
/// integer division or remainder only by a nonzero constant), linalg.index,
/// or a terminator. No math function, call or region.
bool isCheapScalarOp(Operation *op);

/// Whether `body` (of a linalg.generic) is at most 8 cheap scalar ops: a
/// consumer may compute it again (ad-fuse-elementwise), and so may the
/// reverse sweep.
bool isCheapBody(Block &body);

/// Whether `op` is cheap to compute again: a pure scalar arith op (no
/// division), or a tensor op that computes each element with a few such ops
/// (an elementwise linalg.generic or linalg.fill), moves elements (a pad
/// with a value from outside, a slice) or only describes a shape
/// (tensor.empty, tensor.dim). The reverse sweep computes values built by
/// such ops again instead of keeping them per iteration.
bool isCheapToRecompute(Operation *op);

/// Whether the reverse rule of `generic` cannot handle it and it must be
/// differentiated as its loop nest: its body reads a tensor from outside (a
/// gather), contains region ops, calls or nested loop indices, or it
/// reduces with a combiner other than a sum, max or min (a product, whose
/// exact adjoint needs the exclusive products of the other factors).
bool needsLoopNest(linalg::GenericOp generic);

/// Rewrites `generic` (on tensors) as one scf.for per loop, in order,
/// carrying the outputs: each iteration extracts the elements its maps
/// select, runs the body and inserts the results.
void rewriteAsLoopNest(linalg::GenericOp generic);

/// Rewrites `generate` as a loop nest inserting each element.
void rewriteAsLoopNest(tensor::GenerateOp generate);

} // namespace mlir::ad

#endif // AD_TRANSFORMS_PREPARATION_H
