//===- SplitPads.cpp - read padded tensors in place -------------*- C++ -*-===//
//
// An elementwise generic reading a tensor padded along one dimension (a
// shifted vector: `[c, y_0 .. y_{n-2}]`) runs as a generic over the part
// that reads the unpadded tensor and one per border, which read the
// padding value instead: the padded tensor, a fill and a copy of the whole
// (two passes over memory), is never made. A one-dimensional tensor
// inserted into a fill is the same padded tensor.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace {

/// Whether `generic` is elementwise: every loop parallel, every operand
/// read and written at the loops' point, no `linalg.index`.
static bool isPlainElementwise(linalg::GenericOp generic) {
  return generic.hasPureTensorSemantics() && generic.getNumLoops() > 0 &&
         generic.getNumParallelLoops() == generic.getNumLoops() &&
         !generic.hasIndexSemantics() &&
         llvm::all_of(generic.getIndexingMapsArray(),
                      [](AffineMap map) { return map.isIdentity(); });
}

/// The one dimension `pad` pads, or -1 (none, or several).
static int64_t paddedDimension(tensor::PadOp pad) {
  int64_t dimension = -1;
  for (auto [index, low, high] :
       llvm::enumerate(pad.getMixedLowPad(), pad.getMixedHighPad())) {
    if (isZeroInteger(low) && isZeroInteger(high))
      continue;
    if (dimension >= 0)
      return -1;
    dimension = index;
  }
  return dimension;
}

/// a - b, folded when both are constants.
static OpFoldResult subtract(OpBuilder &builder, Location loc, OpFoldResult a,
                             OpFoldResult b) {
  std::optional<int64_t> left = getConstantIntValue(a);
  std::optional<int64_t> right = getConstantIntValue(b);
  if (left && right)
    return builder.getIndexAttr(*left - *right);
  if (right && *right == 0)
    return a;
  return builder.createOrFold<arith::SubIOp>(
      loc, getValueOrCreateConstantIndexOp(builder, loc, a),
      getValueOrCreateConstantIndexOp(builder, loc, b));
}

/// a + b, folded when both are constants.
static OpFoldResult add(OpBuilder &builder, Location loc, OpFoldResult a,
                        OpFoldResult b) {
  std::optional<int64_t> left = getConstantIntValue(a);
  std::optional<int64_t> right = getConstantIntValue(b);
  if (left && right)
    return builder.getIndexAttr(*left + *right);
  if (right && *right == 0)
    return a;
  if (left && *left == 0)
    return b;
  return builder.createOrFold<arith::AddIOp>(
      loc, getValueOrCreateConstantIndexOp(builder, loc, a),
      getValueOrCreateConstantIndexOp(builder, loc, b));
}

/// generic(..., pad(s, low l, high h, value c), ...) along dimension d of
/// size n: the part [l, n - h) reads s, the borders [0, l) and [n - h, n)
/// read c; each part computes its slice of the results, inserted into the
/// inits.
struct SplitPaddedInput : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!isPlainElementwise(generic) || generic.getNumDpsInits() == 0)
      return failure();
    for (OpOperand *input : generic.getDpsInputOperands()) {
      auto pad = input->get().getDefiningOp<tensor::PadOp>();
      if (!pad || pad.getNofold())
        continue;
      Value value = pad.getConstantPaddingValue();
      int64_t dimension = paddedDimension(pad);
      if (!value || dimension < 0)
        continue;
      split(generic, input->getOperandNumber(), pad, dimension, value,
            rewriter);
      return success();
    }
    return failure();
  }

private:
  static void split(linalg::GenericOp generic, unsigned padded,
                    tensor::PadOp pad, int64_t dimension, Value value,
                    PatternRewriter &rewriter) {
    Location loc = generic.getLoc();
    unsigned rank = generic.getNumLoops();
    Value like = generic.getDpsInits()[0];
    SmallVector<OpFoldResult> sizes;
    for (unsigned d = 0; d < rank; ++d)
      sizes.push_back(tensor::getMixedSize(rewriter, loc, like, d));
    OpFoldResult low = pad.getMixedLowPad()[dimension];
    OpFoldResult high = pad.getMixedHighPad()[dimension];
    OpFoldResult size = sizes[dimension];
    // With arith, not affine.apply: tiling composes an affine.apply into
    // its tile sizes, and min(n - 1 - i, 8) in a loop up to
    // (n - 1) floordiv 8 * 8 is not recognized as 8, which left every
    // tile unvectorized.
    OpFoldResult highStart = subtract(rewriter, loc, size, high);
    OpFoldResult interior = subtract(rewriter, loc, highStart, low);
    struct Part {
      OpFoldResult offset, size;
      bool readsSource;
    };
    SmallVector<Part> parts;
    if (!isZeroInteger(low))
      parts.push_back({rewriter.getIndexAttr(0), low, false});
    parts.push_back({low, interior, true});
    if (!isZeroInteger(high))
      parts.push_back({highStart, high, false});

    SmallVector<Value> results(generic.getDpsInits());
    Block *body = generic.getBody();
    for (const Part &part : parts) {
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> partSizes(sizes);
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      offsets[dimension] = part.offset;
      partSizes[dimension] = part.size;
      auto slice = [&](Value tensor) -> Value {
        return tensor::ExtractSliceOp::create(rewriter, loc, tensor, offsets,
                                              partSizes, strides);
      };
      SmallVector<Value> inputs, outputs;
      for (OpOperand *input : generic.getDpsInputOperands()) {
        if (input->getOperandNumber() != padded)
          inputs.push_back(slice(input->get()));
        else if (part.readsSource)
          inputs.push_back(pad.getSource());
      }
      for (Value result : results)
        outputs.push_back(slice(result));
      unsigned numOperands = inputs.size() + outputs.size();
      SmallVector<AffineMap> maps(
          numOperands, rewriter.getMultiDimIdentityMap(rank));
      SmallVector<utils::IteratorType> iterators(
          rank, utils::IteratorType::parallel);
      auto piece = linalg::GenericOp::create(
          rewriter, loc, TypeRange(ValueRange(outputs)), inputs, outputs,
          maps, iterators,
          [&](OpBuilder &b, Location bodyLoc, ValueRange arguments) {
            IRMapping mapping;
            unsigned next = 0;
            for (BlockArgument argument : body->getArguments()) {
              if (argument.getArgNumber() == padded && !part.readsSource)
                mapping.map(argument, value);
              else
                mapping.map(argument, arguments[next++]);
            }
            for (Operation &op : body->without_terminator())
              b.clone(op, mapping);
            SmallVector<Value> yielded;
            for (Value operand : body->getTerminator()->getOperands())
              yielded.push_back(mapping.lookupOrDefault(operand));
            linalg::YieldOp::create(b, bodyLoc, yielded);
          });
      for (auto [result, computed] :
           llvm::zip(results, piece.getResults()))
        result = tensor::InsertSliceOp::create(rewriter, loc, computed,
                                               result, offsets, partSizes,
                                               strides);
    }
    rewriter.replaceOp(generic, results);
  }
};

/// insert_slice(s into fill(c)) of one dimension, with unit stride: the
/// pad of s by c (low the offset, high the rest), which SplitPaddedInput
/// reads in place.
struct InsertIntoFillAsPad : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::InsertSliceOp insert,
                                PatternRewriter &rewriter) const override {
    auto fill = insert.getDest().getDefiningOp<linalg::FillOp>();
    if (!fill || !fill.hasPureTensorSemantics() ||
        insert.getType().getRank() != 1 ||
        insert.getSourceType().getRank() != 1 ||
        !isOneInteger(insert.getMixedStrides()[0]) ||
        !llvm::all_of(insert->getUsers(), [](Operation *user) {
          auto generic = dyn_cast<linalg::GenericOp>(user);
          return generic && isPlainElementwise(generic);
        }))
      return failure();
    Location loc = insert.getLoc();
    OpFoldResult size =
        tensor::getMixedSize(rewriter, loc, fill.getDpsInits()[0], 0);
    OpFoldResult offset = insert.getMixedOffsets()[0];
    OpFoldResult length = insert.getMixedSizes()[0];
    OpFoldResult high = subtract(
        rewriter, loc, subtract(rewriter, loc, size, offset), length);
    auto pad = tensor::PadOp::create(
        rewriter, loc, insert.getType(), insert.getSource(),
        ArrayRef<OpFoldResult>{offset}, ArrayRef<OpFoldResult>{high},
        fill.getInputs()[0]);
    rewriter.replaceOp(insert, pad.getResult());
    return success();
  }
};

/// The size of a padded tensor read only for its size (the adjoint of a
/// split generic sizes its cotangents by it): the source's size plus the
/// padding, so that the padded tensor is not made for its size alone.
struct SizeOfPad : OpRewritePattern<tensor::DimOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::DimOp dim,
                                PatternRewriter &rewriter) const override {
    auto pad = dim.getSource().getDefiningOp<tensor::PadOp>();
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!pad || !index)
      return failure();
    Location loc = dim.getLoc();
    OpFoldResult size =
        tensor::getMixedSize(rewriter, loc, pad.getSource(), *index);
    OpFoldResult total =
        add(rewriter, loc, add(rewriter, loc, size, pad.getMixedLowPad()[*index]),
            pad.getMixedHighPad()[*index]);
    rewriter.replaceOp(dim,
                       getValueOrCreateConstantIndexOp(rewriter, loc, total));
    return success();
  }
};

} // namespace

void mlir::ad::populateSplitPadPatterns(RewritePatternSet &patterns) {
  patterns.add<SplitPaddedInput, InsertIntoFillAsPad, SizeOfPad>(
      patterns.getContext());
}
