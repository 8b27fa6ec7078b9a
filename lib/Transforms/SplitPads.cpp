//===- SplitPads.cpp - read padded tensors in place -------------*- C++ -*-===//
//
// An elementwise generic reading a tensor padded along one dimension (a
// shifted vector: `[c, y_0 .. y_{n-2}]`) runs as a generic over the part
// that reads the unpadded tensor and one per border, which read the
// padding value instead: the padded tensor, a fill and a copy of the whole
// (two passes over memory), is never made. A one-dimensional tensor
// inserted into a fill is the same padded tensor.
//
// A generic reading several tensors padded along the same dimension by
// constant amounts (the shifted state of an ODE step and the cotangent its
// adjoint shifts back, padded at the other end) is split at every border of
// every pad at once; splitting at one pad's borders would leave slices of
// the others, which are then made whole. The parts are ordered as they are
// only when the dimension is at least the largest low padding plus the
// largest high padding long: a smaller size (known only at run time) runs
// the generic as it was, on the padded tensors.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace {

/// Marks the copy of a generic kept, reading its padded inputs, for sizes
/// too small to split it at several pads' borders.
constexpr llvm::StringLiteral kKeepPadded = "__ad_keep_padded__";

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

/// A part of an elementwise generic with body `body`: a generic over
/// `inputs` and `outputs` (identity maps, every loop parallel) computing
/// the body, each argument read as `constantFor(number)` when that is not
/// null (the padding value; no operand then) and as the next operand
/// otherwise.
static linalg::GenericOp
elementwisePart(OpBuilder &builder, Location loc, Block *body,
                ValueRange inputs, ValueRange outputs,
                llvm::function_ref<Value(unsigned)> constantFor) {
  unsigned rank = cast<ShapedType>(outputs.front().getType()).getRank();
  SmallVector<AffineMap> maps(inputs.size() + outputs.size(),
                              builder.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
      builder, loc, TypeRange(outputs), inputs, outputs, maps, iterators,
      [&](OpBuilder &b, Location bodyLoc, ValueRange arguments) {
        IRMapping mapping;
        unsigned next = 0;
        for (BlockArgument argument : body->getArguments()) {
          if (Value constant = constantFor(argument.getArgNumber()))
            mapping.map(argument, constant);
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
}

/// generic(..., pad(s, low l, high h, value c), ...) along dimension d of
/// size n: the part [l, n - h) reads s, the borders [0, l) and [n - h, n)
/// read c; each part computes its slice of the results, inserted into the
/// inits.
struct SplitPaddedInput : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const override {
    if (!isPlainElementwise(generic) || generic.getNumDpsInits() == 0 ||
        generic->hasAttr(kKeepPadded))
      return failure();
    if (succeeded(splitSeveral(generic, rewriter)))
      return success();
    for (OpOperand *input : generic.getDpsInputOperands()) {
      std::optional<SplittablePad> found = splittablePad(input);
      if (!found)
        continue;
      split(generic, input->getOperandNumber(), found->pad, found->dimension,
            found->value, rewriter);
      return success();
    }
    return failure();
  }

private:
  /// A pad of one dimension by a value from outside, which a generic can
  /// read in place.
  struct SplittablePad {
    tensor::PadOp pad;
    Value value;
    int64_t dimension;
  };

  static std::optional<SplittablePad> splittablePad(OpOperand *input) {
    auto pad = input->get().getDefiningOp<tensor::PadOp>();
    if (!pad || pad.getNofold())
      return std::nullopt;
    Value value = pad.getConstantPaddingValue();
    int64_t dimension = paddedDimension(pad);
    if (!value || dimension < 0)
      return std::nullopt;
    return SplittablePad{pad, value, dimension};
  }

  /// A padded input: its operand number, pad, constant amounts and value.
  struct PaddedInput {
    unsigned number;
    tensor::PadOp pad;
    int64_t low, high;
    Value value;
  };

  /// The split at the borders of every pad along one dimension, when the
  /// generic reads at least two tensors padded along it by constant
  /// amounts (see the file comment).
  static LogicalResult splitSeveral(linalg::GenericOp generic,
                                    PatternRewriter &rewriter) {
    SmallVector<PaddedInput> padded;
    int64_t dimension = -1;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      std::optional<SplittablePad> found = splittablePad(input);
      if (!found)
        continue;
      tensor::PadOp pad = found->pad;
      Value value = found->value;
      int64_t padDimension = found->dimension;
      std::optional<int64_t> low =
          getConstantIntValue(pad.getMixedLowPad()[padDimension]);
      std::optional<int64_t> high =
          getConstantIntValue(pad.getMixedHighPad()[padDimension]);
      if (!low || !high)
        continue;
      if (dimension < 0)
        dimension = padDimension;
      if (padDimension == dimension)
        padded.push_back({input->getOperandNumber(), pad, *low, *high, value});
    }
    if (padded.size() < 2)
      return failure();

    Location loc = generic.getLoc();
    unsigned rank = generic.getNumLoops();
    Value like = generic.getDpsInits()[0];
    SmallVector<OpFoldResult> sizes;
    for (unsigned d = 0; d < rank; ++d)
      sizes.push_back(tensor::getMixedSize(rewriter, loc, like, d));
    OpFoldResult size = sizes[dimension];
    // The borders: low amounts from the start, high ones from the end.
    SmallVector<int64_t> lows{0}, highs{0};
    for (const PaddedInput &input : padded) {
      lows.push_back(input.low);
      highs.push_back(input.high);
    }
    llvm::sort(lows);
    lows.erase(llvm::unique(lows), lows.end());
    llvm::sort(highs);
    highs.erase(llvm::unique(highs), highs.end());
    int64_t least = lows.back() + highs.back();
    std::optional<int64_t> staticSize = getConstantIntValue(size);
    if (staticSize && *staticSize < least)
      return failure();

    // Each part: its offset and size along the dimension, and for each
    // padded input the offset in its source it reads from, or none (the
    // part lies in that input's padding).
    struct Part {
      OpFoldResult offset, size;
      SmallVector<std::optional<OpFoldResult>> sources;
    };
    SmallVector<Part> parts;
    auto sourceOffset = [&](OpFoldResult offset, int64_t low) {
      return subtract(rewriter, loc, offset, rewriter.getIndexAttr(low));
    };
    for (unsigned i = 0; i + 1 < lows.size(); ++i) {
      Part part{rewriter.getIndexAttr(lows[i]),
                rewriter.getIndexAttr(lows[i + 1] - lows[i]), {}};
      for (const PaddedInput &input : padded)
        part.sources.push_back(
            lows[i] >= input.low
                ? std::optional(sourceOffset(part.offset, input.low))
                : std::nullopt);
      parts.push_back(part);
    }
    OpFoldResult middleEnd =
        subtract(rewriter, loc, size, rewriter.getIndexAttr(highs.back()));
    Part middle{rewriter.getIndexAttr(lows.back()),
                subtract(rewriter, loc, middleEnd,
                         rewriter.getIndexAttr(lows.back())),
                {}};
    for (const PaddedInput &input : padded)
      middle.sources.push_back(sourceOffset(middle.offset, input.low));
    parts.push_back(middle);
    for (unsigned j = highs.size() - 1; j > 0; --j) {
      // [size - highs[j], size - highs[j - 1])
      OpFoldResult offset =
          subtract(rewriter, loc, size, rewriter.getIndexAttr(highs[j]));
      Part part{offset, rewriter.getIndexAttr(highs[j] - highs[j - 1]), {}};
      for (const PaddedInput &input : padded)
        part.sources.push_back(
            highs[j - 1] >= input.high
                ? std::optional(sourceOffset(offset, input.low))
                : std::nullopt);
      parts.push_back(part);
    }

    // Only at run time is a dynamic size known to order the parts so: the
    // generic as it was otherwise.
    Operation *guard = nullptr;
    if (!staticSize) {
      Value long_ = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::sge,
          getValueOrCreateConstantIndexOp(rewriter, loc, size),
          arith::ConstantIndexOp::create(rewriter, loc, least));
      auto branch = scf::IfOp::create(rewriter, loc, generic->getResultTypes(),
                                      long_, /*withElseRegion=*/true);
      rewriter.setInsertionPointToStart(&branch.getElseRegion().front());
      // The padded tensors are made there only (the then branch reads
      // their sources).
      IRMapping inElse;
      for (PaddedInput &input : padded)
        if (!inElse.contains(input.pad.getResult()))
          rewriter.clone(*input.pad, inElse);
      Operation *original = rewriter.clone(*generic, inElse);
      original->setAttr(kKeepPadded, rewriter.getUnitAttr());
      scf::YieldOp::create(rewriter, loc, original->getResults());
      rewriter.setInsertionPointToStart(&branch.getThenRegion().front());
      guard = branch;
    }

    SmallVector<Value> results(generic.getDpsInits());
    Block *body = generic.getBody();
    for (const Part &part : parts) {
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> partSizes(sizes);
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      offsets[dimension] = part.offset;
      partSizes[dimension] = part.size;
      SmallVector<Value> inputs, outputs;
      // The block argument of each padded input read as its value here.
      DenseMap<unsigned, Value> constants;
      for (OpOperand *input : generic.getDpsInputOperands()) {
        PaddedInput *pad = llvm::find_if(padded, [&](const PaddedInput &p) {
          return p.number == input->getOperandNumber();
        });
        if (pad == padded.end()) {
          inputs.push_back(tensor::ExtractSliceOp::create(
              rewriter, loc, input->get(), offsets, partSizes, strides));
          continue;
        }
        const std::optional<OpFoldResult> &source =
            part.sources[pad - padded.begin()];
        if (!source) {
          constants[input->getOperandNumber()] = pad->value;
          continue;
        }
        SmallVector<OpFoldResult> sourceOffsets(offsets);
        sourceOffsets[dimension] = *source;
        inputs.push_back(tensor::ExtractSliceOp::create(
            rewriter, loc, pad->pad.getSource(), sourceOffsets, partSizes,
            strides));
      }
      for (Value result : results)
        outputs.push_back(tensor::ExtractSliceOp::create(
            rewriter, loc, result, offsets, partSizes, strides));
      linalg::GenericOp piece = elementwisePart(
          rewriter, loc, body, inputs, outputs, [&](unsigned number) {
            auto constant = constants.find(number);
            return constant != constants.end() ? constant->second : Value();
          });
      for (auto [result, computed] : llvm::zip(results, piece.getResults()))
        result = tensor::InsertSliceOp::create(rewriter, loc, computed, result,
                                               offsets, partSizes, strides);
    }
    if (guard) {
      scf::YieldOp::create(rewriter, loc, results);
      rewriter.replaceOp(generic, guard->getResults());
    } else {
      rewriter.replaceOp(generic, results);
    }
    return success();
  }

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
      linalg::GenericOp piece = elementwisePart(
          rewriter, loc, body, inputs, outputs, [&](unsigned number) {
            return number == padded && !part.readsSource ? value : Value();
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
    Value into = fill.getDpsInits()[0];
    OpFoldResult offset = insert.getMixedOffsets()[0];
    OpFoldResult length = insert.getMixedSizes()[0];
    // Constant amounts when the sizes say so (n - (n - 1) is 1), which a
    // generic reading several pads needs to be split at all of them.
    using Variable = ValueBoundsConstraintSet::Variable;
    MLIRContext *context = rewriter.getContext();
    if (FailureOr<int64_t> known = ValueBoundsConstraintSet::computeConstantBound(
            presburger::BoundType::EQ, Variable(offset));
        succeeded(known))
      offset = rewriter.getIndexAttr(*known);
    AffineExpr d0, d1, d2;
    bindDims(context, d0, d1, d2);
    OpFoldResult high;
    if (FailureOr<int64_t> known = ValueBoundsConstraintSet::computeConstantBound(
            presburger::BoundType::EQ,
            Variable(AffineMap::get(3, 0, d0 - d1 - d2),
                     {Variable(into, 0), Variable(offset), Variable(length)}));
        succeeded(known))
      high = rewriter.getIndexAttr(*known);
    else
      high = subtract(rewriter, loc,
                      subtract(rewriter, loc,
                               tensor::getMixedSize(rewriter, loc, into, 0),
                               offset),
                      length);
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

void mlir::ad::splitPaddedInputs(Operation *root) {
  MLIRContext *context = root->getContext();
  // Fills with a tensor inserted become pads first, while the generics
  // reading them are whole (InsertIntoFillAsPad needs generics as users):
  // a generic reading two of them is then split at both at once.
  RewritePatternSet asPads(context);
  asPads.add<InsertIntoFillAsPad>(context);
  (void)applyPatternsGreedily(root, std::move(asPads));
  RewritePatternSet patterns(context);
  patterns.add<SplitPaddedInput, InsertIntoFillAsPad, SizeOfPad>(context);
  (void)applyPatternsGreedily(root, std::move(patterns));
  root->walk([](linalg::GenericOp generic) {
    generic->removeAttr(kKeepPadded);
  });
}
