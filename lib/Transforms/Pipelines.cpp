//===- Pipelines.cpp - ad-differentiate and ad-lower-to-llvm ----*- C++ -*-===//
//
// The named pipelines users run: differentiation alone, and differentiation
// followed by the upstream lowering of tensors, math and control flow to the
// LLVM dialect, ready for mlir-runner or an ExecutionEngine.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::ad::buildDifferentiatePipeline(OpPassManager &pm) {
  pm.addPass(createADGenerateDerivativesPass());
  pm.addPass(createADLowerClosuresPass());
}

/// Tensors to buffers, in place where possible, with deallocation. Function
/// arguments stay read-only so callers' buffers survive the call.
static void addBufferization(OpPassManager &pm,
                             const ad::LowerToLLVMOptions &lowering) {
  pm.addPass(ad::createADLegalizeForBufferizationPass());
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  if (lowering.fuse)
    pm.addPass(ad::createADFuseElementwisePass());
  bufferization::OneShotBufferizePassOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // A loop may yield a tensor computed in its body (h = tanh(W h)); the
  // ownership-based deallocation below frees the previous iteration's.
  options.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(options));
  // Private functions (every function differentiation generates) pass the
  // ownership of the buffers they return as an extra i1 result instead of
  // returning a copy of any buffer they did not allocate: without it, a
  // recursion's forward function, which returns the growable tape it was
  // given, copied the whole tape at every invocation that did not grow it
  // (quadratic time).
  bufferization::BufferDeallocationPipelineOptions deallocation;
  deallocation.privateFunctionDynamicOwnership = true;
  bufferization::buildBufferDeallocationPipeline(pm, deallocation);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(ad::createADLegalizeViewsPass());
  // Before ad-vectorize: the loops here are the program's (tile loops that
  // ad-parallelize may run on threads come later and keep their buffers).
  pm.addPass(ad::createADHoistBuffersPass());
  if (lowering.vectorize) {
    ad::ADVectorizePassOptions vectorize;
    vectorize.vectorBits = lowering.vectorBits;
    vectorize.markParallel = lowering.parallel;
    pm.addNestedPass<func::FuncOp>(ad::createADVectorizePass(vectorize));
  }
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  if (lowering.vectorize && lowering.parallel) {
    ad::ADParallelizePassOptions parallelize;
    parallelize.minWork = lowering.parallelMinWork;
    pm.addNestedPass<func::FuncOp>(ad::createADParallelizePass(parallelize));
  }
}

/// Everything to the LLVM dialect. Math ops with an LLVM intrinsic use it;
/// the rest (erf, cbrt, atan2, ...) become libm calls. f16/bf16 math is
/// computed in f32.
static void addLLVMConversion(OpPassManager &pm,
                              const ad::LowerToLLVMOptions &options) {
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // math.ipowi has no LLVM intrinsic: a generated function computes it.
  // math.fpowi keeps the intrinsic (__powidf2).
  ConvertMathToFuncsOptions mathToFuncs;
  mathToFuncs.minWidthOfFPowIExponent = 65;
  pm.addPass(createConvertMathToFuncs(mathToFuncs));
  math::MathExtendToSupportedTypesOptions extend;
  extend.extraTypeStrs = {"f32"};
  pm.addNestedPass<func::FuncOp>(math::createMathExtendToSupportedTypes(extend));
  if (options.vectorize && options.vectorMath) {
    ad::ADVectorMathPassOptions vectorMath;
    vectorMath.vectorBits = options.vectorBits;
    pm.addPass(ad::createADVectorMathPass(vectorMath));
  }
  // expm1 and log1p must not lose digits: Kahan's expm1, libm's log1p.
  pm.addPass(ad::createADLegalizeMathPass());
  ConvertMathToLLVMPassOptions mathToLLVM;
  mathToLLVM.approximateLog1p = false;
  pm.addPass(createConvertMathToLLVMPass(mathToLLVM));
  pm.addPass(createConvertMathToLibmPass());
  pm.addNestedPass<func::FuncOp>(arith::createArithExpandOpsPass());
  pm.addPass(ad::createADLegalizeForLLVMPass());
  pm.addPass(createConvertVectorToLLVMPass());
  // Run-time shape checks (the JIT runtime adds them) use the index dialect.
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  // Parallel regions (ad-parallelize's, or the user's own): their operands
  // and regions in LLVM types; the OpenMP translation to LLVM IR outlines
  // them into calls of libomp.
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::ad::buildLowerToLLVMPipeline(OpPassManager &pm,
                                        const LowerToLLVMOptions &options) {
  // Before canonicalization, which miscompiles loops over narrow integers.
  pm.addPass(ad::createADLegalizeLoopsPass());
  // Buffer deallocation needs structured loops everywhere, not only in the
  // functions ad-differentiate structures.
  pm.addPass(createLiftControlFlowToSCFPass());
  // Hoisting loop-invariant work first means the adjoint tapes it once
  // instead of per iteration (not out of loops that may not run, nor above
  // the run-time checks guarding it).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(ad::createADHoistInvariantsPass());
  buildDifferentiatePipeline(pm);
  // Inlining the forward and pullback functions into their callers lets
  // canonicalization drop forward work nobody reads (the value for ad.grad).
  pm.addPass(ad::createADInlinePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  addBufferization(pm, options);
  addLLVMConversion(pm, options);
}

namespace {
/// ad-differentiate takes no options; declaring the (empty) set makes an
/// unknown one an error that names it instead of a silent failure.
struct NoPipelineOptions : public PassPipelineOptions<NoPipelineOptions> {};

struct LowerToLLVMPipelineOptions
    : public PassPipelineOptions<LowerToLLVMPipelineOptions> {
  Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Tile and vectorize linalg ops (ad-vectorize); "
                     "false: plain scalar loops"),
      llvm::cl::init(true)};
  Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Fuse chains of elementwise linalg ops on tensors "
                     "(ad-fuse-elementwise)"),
      llvm::cl::init(true)};
  Option<bool> vectorMath{
      *this, "vector-math",
      llvm::cl::desc("Math on vectors through glibc's libmvec "
                     "(ad-vector-math; the program then needs "
                     "libmvec.so.1 at run time)"),
      llvm::cl::init(true)};
  Option<unsigned> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("Vector register width in bits for ad-vectorize and "
                     "ad-vector-math (0: the host's; 128 runs on any x86-64, "
                     "256 needs AVX2, 512 AVX-512)"),
      llvm::cl::init(0)};
  Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run the tile loops of linalg ops over parallel "
                     "dimensions on OpenMP threads (ad-parallelize; needs "
                     "vectorize; the program then needs libomp.so at run "
                     "time)"),
      llvm::cl::init(false)};
  Option<int64_t> parallelMinWork{
      *this, "parallel-min-work",
      llvm::cl::desc("Iterations of a loop nest below which it runs on one "
                     "thread (ad-parallelize min-work)"),
      llvm::cl::init(4096)};
};
} // namespace

void mlir::ad::registerADPipelines() {
  PassPipelineRegistration<NoPipelineOptions>(
      "ad-differentiate",
      "Differentiate every ad op, leaving only upstream dialects",
      [](OpPassManager &pm, const NoPipelineOptions &) {
        buildDifferentiatePipeline(pm);
      });
  PassPipelineRegistration<LowerToLLVMPipelineOptions>(
      "ad-lower-to-llvm",
      "Differentiate, bufferize, vectorize and lower a module to the LLVM "
      "dialect",
      [](OpPassManager &pm, const LowerToLLVMPipelineOptions &pipeline) {
        LowerToLLVMOptions options;
        options.vectorize = pipeline.vectorize;
        options.fuse = pipeline.fuse;
        options.vectorMath = pipeline.vectorMath;
        options.vectorBits = pipeline.vectorBits;
        options.parallel = pipeline.parallel;
        options.parallelMinWork = pipeline.parallelMinWork;
        buildLowerToLLVMPipeline(pm, options);
      });
}
