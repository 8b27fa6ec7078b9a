//===- Passes.h - MLIR-AD passes and pipelines ------------------*- C++ -*-===//
//
// The passes declared in dialect/Passes.td and the named pipelines
// `ad-differentiate` and `ad-lower-to-llvm`.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_PASSES_H
#define AD_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::ad {

#define GEN_PASS_DECL
#include "ad/IR/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ad/IR/Passes.h.inc"

/// Adds the structural simplifications of adjoint code (see
/// `ad-simplify-adjoints`) to `patterns`.
void populateAdjointSimplificationPatterns(RewritePatternSet &patterns);

/// Adds the removal of linalg.generic results nobody reads, with the body
/// ops only they need (upstream removes them only when the body does not
/// read their init), and the forwarding of a result that repeats another
/// result or copies an input to its readers, so that it is removed too.
void populateEraseDeadResultPatterns(RewritePatternSet &patterns);

/// Splits, within `root`, the elementwise generics reading tensors padded
/// along one dimension into generics over the unpadded parts and the
/// borders, which read the tensors before padding and the padding values
/// (part of `ad-fuse-elementwise`).
void splitPaddedInputs(Operation *root);

/// Rewrites `view` (a rank-reducing memref.subview) as the subview keeping
/// every dimension and a memref.collapse_shape dropping the unit ones when
/// upstream would misread which dimensions it drops (see
/// ad-legalize-views). Returns the value replacing it, or the view.
Value legalizeRankReducingView(RewriterBase &rewriter, Operation *view);

/// Applies the adjoint simplifications to `root` until nothing changes.
void simplifyAdjoints(Operation *root);

/// Replaces, within `root`, every application of a closure made by
/// ad.make_pullback in the same function by a call of its pullback function
/// and erases the closures. Fails with a diagnostic at a closure that
/// escapes its function (returned, passed to a call, carried by control
/// flow). `ad-lower-closures` applies it to a module.
LogicalResult lowerClosures(Operation *root);

/// Adds the passes that turn every ad op into upstream IR: derivative
/// generation, then closure lowering.
void buildDifferentiatePipeline(OpPassManager &pm);

/// Adds `ad-differentiate` followed by the upstream lowering to the LLVM
/// dialect (bufferization, math to LLVM/libm, control flow, func).
/// What ad-lower-to-llvm generates beyond plain loops.
struct LowerToLLVMOptions {
  /// Tile and vectorize linalg ops on buffers (ad-vectorize); plain scalar
  /// loops otherwise.
  bool vectorize = true;
  /// Fuse chains of elementwise linalg ops on tensors (ad-fuse-elementwise).
  bool fuse = true;
  /// Math on vectors through glibc's libmvec (ad-vector-math).
  bool vectorMath = true;
  /// Vector register width in bits for both (0: the host's). The code, and
  /// the libmvec functions it calls, need a CPU with such registers.
  unsigned vectorBits = 0;
  /// Run the tile loops of linalg ops over parallel dimensions on OpenMP
  /// threads (ad-parallelize; needs `vectorize`). The code then needs LLVM's
  /// OpenMP runtime, libomp.so, at run time.
  bool parallel = false;
  /// Iterations of a loop nest below which it runs on one thread.
  int64_t parallelMinWork = 4096;
};

void buildLowerToLLVMPipeline(OpPassManager &pm,
                              const LowerToLLVMOptions &options = {});

/// Registers `ad-differentiate` and `ad-lower-to-llvm` as named pipelines.
void registerADPipelines();

} // namespace mlir::ad

#endif // AD_TRANSFORMS_PASSES_H
