//===- Preparation.cpp - bring functions into differentiable form -*- C++ -*-=//
//
// Upstream semantics-preserving transformations (CFG lifting, named-op
// generalization, cast folding, inlining) and a few of our own (generics as
// the loop nests they denote), applied to the private copies of the
// functions ad-generate-derivatives differentiates.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Preparation.h"
#include "ad/Transforms/DerivativeGenerator.h"

#include "mlir/Conversion/ControlFlowToSCF/ControlFlowToSCF.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/CFGToSCF.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::ad;

/// Whether `region` reads a tensor defined outside it (a gather:
/// `tensor.extract %table[%id]`).
static bool readsOuterTensor(Region &region) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(region, captured);
  return llvm::any_of(captured, [](Value value) {
    return isa<RankedTensorType>(value.getType());
  });
}

/// Whether `block` holds an op with regions or a call: the reverse sweep
/// over a generic's scalar body handles neither.
static bool hasRegionOpsOrCalls(Block &block) {
  return llvm::any_of(block.without_terminator(), [](Operation &op) {
    return op.getNumRegions() > 0 || isa<CallOpInterface>(op);
  });
}

/// Whether output `index` of `generic` is combined with its value so far by
/// a sum, max or min, the only reductions the generic rule reverses.
static bool combinesBySumOrSelect(linalg::GenericOp generic, unsigned index) {
  BlockArgument output = generic.getRegionOutputArgs()[index];
  if (!output.hasOneUse())
    return false;
  Operation *combine = *output.user_begin();
  return combine->hasOneUse() && combine->getNumOperands() == 2 &&
         generic.getBody()->getTerminator()->getOperand(index) ==
             combine->getResult(0) &&
         isa<arith::AddFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp>(combine);
}

bool mlir::ad::needsLoopNest(linalg::GenericOp generic) {
  if (!generic.hasPureTensorSemantics())
    return false;
  if (readsOuterTensor(generic.getRegion()) ||
      hasRegionOpsOrCalls(*generic.getBody()))
    return true;
  bool reduces = llvm::any_of(generic.getIteratorTypesArray(), [](auto type) {
    return type == utils::IteratorType::reduction;
  });
  if (!reduces) {
    // A "parallel" generic whose output map drops a loop writes an element
    // from several iterations: it is a reduction in fact, run in order.
    return llvm::any_of(generic.getDpsInitsMutable(), [&](OpOperand &init) {
      return !generic.getMatchingIndexingMap(&init).isPermutation();
    });
  }
  for (unsigned index = 0; index < generic.getNumDpsInits(); ++index)
    if (!combinesBySumOrSelect(generic, index))
      return true;
  return false;
}

/// Clones the ops of `body` but its terminator at `b`, replacing its loop
/// indices (linalg.index) by `ivs`; afterwards `mapping` maps the
/// terminator's operands.
static void cloneBodyWithIndices(OpBuilder &b, Block &body, IRMapping &mapping,
                                 ValueRange ivs) {
  SmallVector<Operation *> clones;
  for (Operation &op : body.without_terminator())
    clones.push_back(b.clone(op, mapping));
  // Indices of generics nested in the body keep referring to those.
  SmallVector<linalg::IndexOp> indices;
  for (Operation *clone : clones)
    clone->walk([&](linalg::IndexOp index) {
      if (!isa<linalg::LinalgOp>(index->getParentOp()))
        indices.push_back(index);
    });
  DenseMap<Value, Value> replaced;
  for (linalg::IndexOp index : indices) {
    Value iv = ivs[index.getDim()];
    index.getResult().replaceAllUsesWith(iv);
    replaced[index.getResult()] = iv;
    index.erase();
  }
  for (Value yielded : body.getTerminator()->getOperands())
    if (Value iv = replaced.lookup(mapping.lookupOrDefault(yielded)))
      mapping.map(yielded, iv);
}

void mlir::ad::rewriteAsLoopNest(tensor::GenerateOp generate) {
  OpBuilder b(generate);
  Location loc = generate.getLoc();
  RankedTensorType type = generate.getType();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> lbs, ubs, steps;
  auto dynamicSize = generate.getDynamicExtents().begin();
  for (int64_t size : type.getShape()) {
    lbs.push_back(zero);
    steps.push_back(one);
    ubs.push_back(ShapedType::isDynamic(size)
                      ? *dynamicSize++
                      : arith::ConstantIndexOp::create(b, loc, size));
  }
  Value empty = tensor::EmptyOp::create(b, loc, type,
                                        generate.getDynamicExtents());
  Block *body = &generate.getBody().front();
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{empty},
      [&](OpBuilder &nested, Location nestedLoc, ValueRange ivs,
          ValueRange tensors) -> scf::ValueVector {
        IRMapping mapping;
        mapping.map(body->getArguments(), ivs);
        cloneBodyWithIndices(nested, *body, mapping, ivs);
        Value element =
            mapping.lookupOrDefault(body->getTerminator()->getOperand(0));
        return {tensor::InsertOp::create(nested, nestedLoc, element,
                                         tensors[0], ivs)};
      });
  generate->replaceAllUsesWith(nest.results);
  generate->erase();
}

/// The indices `map` selects at loop position `ivs`.
static SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                                    ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults())
    indices.push_back(affine::expandAffineExpr(b, loc, expr, ivs, {}));
  return indices;
}

void mlir::ad::rewriteAsLoopNest(linalg::GenericOp generic) {
  OpBuilder b(generic);
  Location loc = generic.getLoc();
  SmallVector<Value> lbs, ubs, steps;
  for (Range range : cast<linalg::LinalgOp>(generic.getOperation())
                         .createLoopRanges(b, loc)) {
    lbs.push_back(getValueOrCreateConstantIndexOp(b, loc, range.offset));
    ubs.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    steps.push_back(getValueOrCreateConstantIndexOp(b, loc, range.stride));
  }
  Block *body = generic.getBody();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  unsigned numInputs = generic.getNumDpsInputs();
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, generic.getDpsInits(),
      [&](OpBuilder &nested, Location nestedLoc, ValueRange ivs,
          ValueRange outputs) -> scf::ValueVector {
        IRMapping mapping;
        for (auto [index, input] : llvm::enumerate(generic.getDpsInputs()))
          mapping.map(body->getArgument(index),
                      isa<RankedTensorType>(input.getType())
                          ? tensor::ExtractOp::create(
                                nested, nestedLoc, input,
                                indicesAt(nested, nestedLoc, maps[index], ivs))
                                .getResult()
                          : input);
        for (auto [index, output] : llvm::enumerate(outputs))
          mapping.map(body->getArgument(numInputs + index),
                      tensor::ExtractOp::create(
                          nested, nestedLoc, output,
                          indicesAt(nested, nestedLoc,
                                    maps[numInputs + index], ivs)));
        cloneBodyWithIndices(nested, *body, mapping, ivs);
        scf::ValueVector results;
        for (auto [index, yielded] :
             llvm::enumerate(body->getTerminator()->getOperands()))
          results.push_back(tensor::InsertOp::create(
              nested, nestedLoc, mapping.lookupOrDefault(yielded),
              outputs[index],
              indicesAt(nested, nestedLoc, maps[numInputs + index], ivs)));
        return results;
      });
  generic->replaceAllUsesWith(nest.results);
  generic->erase();
}

/// A generic without reductions that reads its outputs (`out * x`) reads
/// each init element once, before overwriting it: the same generic with
/// the inits also passed as inputs, through the outputs' maps, and outputs
/// that are only written. The generic rule then sees plain elementwise code.
static void readInitsAsInputs(linalg::GenericOp generic) {
  Block *body = generic.getBody();
  unsigned numInputs = generic.getNumDpsInputs();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  SmallVector<Value> inputs(generic.getDpsInputs());
  SmallVector<AffineMap> newMaps(maps.begin(), maps.begin() + numInputs);
  SmallVector<unsigned> readOutputs;
  for (auto [index, output] : llvm::enumerate(generic.getRegionOutputArgs())) {
    if (output.use_empty())
      continue;
    readOutputs.push_back(index);
    inputs.push_back(generic.getDpsInits()[index]);
    newMaps.push_back(maps[numInputs + index]);
  }
  newMaps.append(maps.begin() + numInputs, maps.end());
  OpBuilder b(generic);
  auto rewritten = linalg::GenericOp::create(
      b, generic.getLoc(), generic.getResultTypes(), inputs,
      generic.getDpsInits(), newMaps, generic.getIteratorTypesArray(),
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        IRMapping mapping;
        for (unsigned index = 0; index < numInputs; ++index)
          mapping.map(body->getArgument(index), args[index]);
        for (auto [position, index] : llvm::enumerate(readOutputs))
          mapping.map(generic.getRegionOutputArgs()[index],
                      args[numInputs + position]);
        for (Operation &op : *body)
          nested.clone(op, mapping);
      });
  rewritten->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
  generic->replaceAllUsesWith(rewritten.getResults());
  generic->erase();
}

/// Whether `generic` has no reductions but reads an output.
static bool isParallelReadingOutputs(linalg::GenericOp generic) {
  return generic.hasPureTensorSemantics() &&
         llvm::all_of(generic.getIteratorTypesArray(),
                      [](auto type) {
                        return type == utils::IteratorType::parallel;
                      }) &&
         llvm::any_of(generic.getRegionOutputArgs(),
                      [](BlockArgument output) { return !output.use_empty(); });
}

/// Rewrites the generics and tensor.generate ops of `function` the rules do
/// not cover directly, innermost first (a rewritten body may hold more).
static void rewriteUncoveredElementOps(func::FuncOp function) {
  SmallVector<Operation *> ops;
  function.walk([&](Operation *op) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (needsLoopNest(generic) || isParallelReadingOutputs(generic))
        ops.push_back(op);
    } else if (auto generate = dyn_cast<tensor::GenerateOp>(op)) {
      if (readsOuterTensor(generate.getBody()) ||
          hasRegionOpsOrCalls(generate.getBody().front()))
        ops.push_back(op);
    }
  });
  for (Operation *op : ops) {
    if (auto generate = dyn_cast<tensor::GenerateOp>(op))
      rewriteAsLoopNest(generate);
    else if (needsLoopNest(cast<linalg::GenericOp>(op)))
      rewriteAsLoopNest(cast<linalg::GenericOp>(op));
    else
      readInitsAsInputs(cast<linalg::GenericOp>(op));
  }
}

LogicalResult mlir::ad::prepareForDifferentiation(func::FuncOp function) {
  if (!function.getBody().hasOneBlock()) {
    ControlFlowToSCFTransformation transformation;
    DominanceInfo dominance(function);
    if (failed(transformCFGToSCF(function.getBody(), transformation,
                                 dominance)))
      return function.emitError()
             << "cannot differentiate '" << function.getSymName()
             << "': its control flow could not be structured";
  }
  MLIRContext *context = function.getContext();
  RewritePatternSet patterns(context);
  linalg::populateLinalgNamedOpsGeneralizationPatterns(patterns);
  // ranked -> unranked -> ranked casts: the unranked tensor in the middle
  // cannot carry a cotangent.
  tensor::CastOp::getCanonicalizationPatterns(patterns, context);
  walkAndApplyPatterns(function, std::move(patterns));
  rewriteUncoveredElementOps(function);
  return success();
}

/// Whether the tape of `function` holds a buffer: it runs a loop or calls a
/// recursive function, itself or through the functions it calls (a loop's
/// per-iteration buffers or rows, a recursive callee's fresh tape). `seen`
/// guards against cycles.
static bool keepsBuffers(func::FuncOp function, DerivativeGenerator &generator,
                         llvm::SmallPtrSetImpl<Operation *> &seen) {
  if (function.isExternal() || !seen.insert(function).second)
    return false;
  // A user-written rule's tape is its residuals.
  if (generator.getCustomRules().getVjp(function))
    return false;
  return function
      .walk([&](Operation *op) {
        if (isa<LoopLikeOpInterface>(op))
          return WalkResult::interrupt();
        if (auto call = dyn_cast<func::CallOp>(op)) {
          func::FuncOp callee = generator.lookupFunction(call.getCalleeAttr());
          if (callee && (generator.inSameRecursion(callee, callee) ||
                         keepsBuffers(callee, generator, seen)))
            return WalkResult::interrupt();
        }
        return WalkResult::advance();
      })
      .wasInterrupted();
}

bool mlir::ad::isCheapScalarOp(Operation *op) {
  if (isa<linalg::IndexOp, linalg::YieldOp, tensor::YieldOp>(op))
    return true;
  if (!isa<arith::ArithDialect>(op->getDialect()) || op->getNumRegions() != 0)
    return false;
  // An integer division or remainder by a nonzero constant (a parity) is
  // as cheap as the rest; a float one is not.
  if (isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
          arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(op)) {
    APInt divisor;
    return matchPattern(op->getOperand(1), m_ConstantInt(&divisor)) &&
           !divisor.isZero();
  }
  return isPure(op) && !isa<arith::DivFOp, arith::RemFOp>(op);
}

/// Most ops in the body of a generic computed again.
constexpr unsigned kMaxCheapBodyOps = 8;

bool mlir::ad::isCheapBody(Block &body) {
  return std::distance(body.begin(), body.end()) <= kMaxCheapBodyOps + 1 &&
         llvm::all_of(body, [](Operation &op) { return isCheapScalarOp(&op); });
}

bool mlir::ad::isCheapToRecompute(Operation *op) {
  if (isa<tensor::EmptyOp, tensor::DimOp, tensor::ExtractSliceOp,
          linalg::FillOp>(op))
    return true;
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    Block &body = pad.getRegion().front();
    return llvm::hasSingleElement(body) &&
           !pad.getRegion().isAncestor(
               body.getTerminator()->getOperand(0).getParentRegion());
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    return generic.hasPureTensorSemantics() &&
           llvm::all_of(generic.getIteratorTypesArray(),
                        [](utils::IteratorType type) {
                          return type == utils::IteratorType::parallel;
                        }) &&
           llvm::all_of(generic.getIndexingMapsArray(),
                        [](AffineMap map) {
                          return map.isProjectedPermutation();
                        }) &&
           isCheapBody(*generic.getBody());
  }
  return !isa<linalg::IndexOp, linalg::YieldOp, tensor::YieldOp>(op) &&
         isCheapScalarOp(op);
}

/// Most ops computing floats or tensors in a function whose calls in loops
/// are inlined because all its ops are cheap.
constexpr unsigned kMaxInlinedCheapOps = 32;

/// Whether `op` checks or computes sizes and indices only: an assertion, a
/// pure op of integer results, or an scf.if of integer results made of
/// such ops (the JIT runtime's shape checks).
static bool isIndexArithmeticOrCheck(Operation &op) {
  if (isa<cf::AssertOp>(op))
    return true;
  if (!llvm::all_of(op.getResultTypes(),
                    llvm::IsaPred<IntegerType, IndexType>))
    return false;
  if (op.getNumRegions() == 0)
    return isPure(&op);
  if (!isa<scf::IfOp>(op))
    return false;
  for (Region &region : op.getRegions())
    for (Block &block : region)
      for (Operation &inner : block.without_terminator())
        if (!isIndexArithmeticOrCheck(inner))
          return false;
  return true;
}

/// Whether `callee` is a short function of cheap ops only (with any
/// integer arithmetic and assertions around them).
static bool isShortAndCheap(func::FuncOp callee) {
  unsigned computing = 0;
  for (Operation &op : callee.getBody().front().without_terminator()) {
    if (isIndexArithmeticOrCheck(op))
      continue;
    if (!isCheapToRecompute(&op) || ++computing > kMaxInlinedCheapOps)
      return false;
  }
  return true;
}

LogicalResult
mlir::ad::inlineLoopCallsWithLoops(func::FuncOp function,
                                   DerivativeGenerator &generator) {
  InlinerInterface interface(function.getContext());
  InlinerConfig config;
  // Every invocation of a recursive function stores its tape in one row,
  // where a buffer does not fit either: all its calls qualify.
  bool recursive = generator.inSameRecursion(function, function);
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<func::CallOp> calls;
    function.walk([&](func::CallOp call) {
      if (recursive || call->getParentOp() != function)
        calls.push_back(call);
    });
    for (func::CallOp call : calls) {
      func::FuncOp callee = generator.lookupFunction(call.getCalleeAttr());
      llvm::SmallPtrSet<Operation *, 8> seen;
      // A function with a reverse-mode rule is differentiated by the rule,
      // never inlined. (One with a forward-mode rule only is inlined like
      // any other: reverse mode needs it, and forward mode then
      // differentiates its body at that call.)
      if (!callee || callee.isExternal() ||
          generator.getCustomRules().getVjp(callee) ||
          generator.inSameRecursion(callee, callee) ||
          !callee.getBody().hasOneBlock())
        continue;
      bool inFor = call->getParentOfType<scf::ForOp>() &&
                   function->isProperAncestor(
                       call->getParentOfType<scf::ForOp>());
      // A short cheap function is inlined only when no user-written rule
      // (here, a forward-mode one) says how to differentiate it.
      if (!keepsBuffers(callee, generator, seen) &&
          !(inFor && isShortAndCheap(callee) &&
            !generator.getCustomRules().getJvp(callee)))
        continue;
      if (failed(inlineCall(interface, config.getCloneCallback(), call,
                            callee, &callee.getBody())))
        return call.emitError() << "cannot inline " << call.getCalleeAttr()
                                << " into the loop that calls it";
      call.erase();
      changed = true;
      break;
    }
  }
  return success();
}
