//===- Vectorize.cpp - tiled, vectorized linalg on buffers ------*- C++ -*-===//
//
// ad-vectorize: code generation for the linalg ops bufferization leaves,
// before the rest are lowered to scalar loops.
//
// Every linalg op on buffers is tiled with upstream `scf::tileUsingSCF`:
//  - a contraction (matmul, matvec-like adjoints with an m and an n
//    dimension, batch_matmul) into MR x NR tiles of its output, reduction
//    dimensions innermost with tile size 1, so that vectorizing a tile gives
//    one outer product per reduction step and the output tile stays in
//    registers across the reduction loop (hoisted out of it);
//  - any other op (elementwise, reductions, broadcasts) into tiles of one
//    vector along its innermost loop.
// The loops whose trip count the tile does not divide are peeled, so the
// main loops run whole tiles of static shape, vectorized without masks; the
// remainders are left as scalar loops. The vector ops are then lowered to
// 1-D loads, stores and FMAs for convert-vector-to-llvm.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "GenericParts.h"
#include "HostVectors.h"
#include "IndexingLoops.h"
#include "ViewRoots.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADVECTORIZEPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;
using mlir::ad::loopsOf;
using mlir::ad::rootBuffer;

namespace {

/// The widest element of the op's operands in bits, or nullopt when one is
/// not an integer or float scalar (complex, index, vectors) or its width is
/// not a power of two of at least 8 bits: a buffer pads each element to its
/// allocation size (a byte for i1, 4 for i24, 16 for f80) while a vector
/// packs them, so a vector load from such a buffer would read the wrong
/// bytes.
static std::optional<unsigned> widestElement(linalg::LinalgOp op) {
  unsigned widest = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    Type type = getElementTypeOrSelf(operand.get().getType());
    if (!isa<FloatType, IntegerType>(type))
      return std::nullopt;
    unsigned width = type.getIntOrFloatBitWidth();
    if (width < 8 || !llvm::isPowerOf2_32(width))
      return std::nullopt;
    widest = std::max(widest, type.getIntOrFloatBitWidth());
  }
  if (widest == 0)
    return std::nullopt;
  return widest;
}

/// The tile of one loop: `preferred`, or the loop's static size when that is
/// smaller (no remainder, and a vector no longer than the loop).
static int64_t clampTile(int64_t preferred, int64_t staticSize) {
  if (ShapedType::isDynamic(staticSize))
    return preferred;
  return std::max<int64_t>(1, std::min(preferred, staticSize));
}

/// The tile of a contraction's wide dimension: two vectors of `lanes`, or
/// the loop's static size when smaller. A static size whose remainder
/// after tiles of two vectors would be large (more than a sixteenth of it:
/// the remainder runs as a scalar loop, 10-20x slower; 24, 40 or 48 f32
/// columns with 16 lanes ran 10x slower than 32) takes instead the largest
/// divisor of at most one vector and at least half of one (12, 10, 16:
/// whole tiles, no remainder), or, between one and two vectors, a tile of
/// one vector (one and a half registers ran 20x slower).
static int64_t wideTile(int64_t lanes, int64_t staticSize) {
  if (ShapedType::isDynamic(staticSize) || staticSize <= lanes ||
      (staticSize % (2 * lanes)) * 16 <= staticSize)
    return clampTile(2 * lanes, staticSize);
  for (int64_t tile = lanes; tile >= std::max<int64_t>(lanes / 2, 2); --tile)
    if (staticSize % tile == 0)
      return tile;
  return staticSize < 2 * lanes ? lanes : 2 * lanes;
}

/// How one op is tiled: a tile size per loop (all nonzero) and the order of
/// the tile loops.
struct TilePlan {
  SmallVector<int64_t> sizes;
  SmallVector<int64_t> interchange;
  /// Tiled as a contraction: output tiles of MR x NR kept in registers
  /// across the reduction loops (a contraction, or a generic that combines
  /// an elementwise function of its inputs into the output the same way).
  bool contraction = false;
  /// A contraction proper: vectorized into vector.contract.
  bool named = false;
  /// A contraction's batch dimensions (first in `interchange`).
  unsigned numBatch = 0;
  /// The input to copy, transposed so that the wide tile dimension is its
  /// innermost.
  std::optional<unsigned> packOperand;
  /// The input of the narrow dimension to copy, transposed so that the
  /// reduction is its innermost (see narrowInputToPack).
  std::optional<unsigned> packNarrow;
};

/// The loops of a contraction planned by `plan`: its narrow and wide
/// dimensions and its first reduction, as the op numbers them (in the
/// order of `plan.interchange`, or, once the op has been interchanged into
/// that order, positions after the batch loops).
struct ContractionLoops {
  unsigned narrow, wide, reduction;
};
static ContractionLoops contractionLoops(const TilePlan &plan) {
  unsigned batch = plan.numBatch;
  if (plan.interchange.empty())
    return {batch, batch + 1, batch + 2};
  assert(plan.interchange.size() >= batch + 3 &&
         "a contraction plan orders batch, narrow, wide and reduction loops");
  return {static_cast<unsigned>(plan.interchange[batch]),
          static_cast<unsigned>(plan.interchange[batch + 1]),
          static_cast<unsigned>(plan.interchange[batch + 2])};
}

/// Makes input `number` of `generic` read `target` instead, which a
/// transpose by `permutation` fills from the input first (created at the
/// rewriter's insertion point): the input's map results are permuted the
/// same way. Returns the transpose.
static linalg::TransposeOp readTransposed(RewriterBase &rewriter,
                                          linalg::GenericOp generic,
                                          unsigned number,
                                          ArrayRef<int64_t> permutation,
                                          Value target) {
  OpOperand &operand = generic->getOpOperand(number);
  AffineMap map = generic.getMatchingIndexingMap(&operand);
  auto copy = linalg::TransposeOp::create(rewriter, generic.getLoc(),
                                          operand.get(), target, permutation);
  SmallVector<AffineExpr> results;
  for (int64_t i : permutation)
    results.push_back(map.getResult(i));
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  maps[number] = AffineMap::get(map.getNumDims(), map.getNumSymbols(),
                                results, rewriter.getContext());
  rewriter.modifyOpInPlace(generic, [&] {
    operand.set(target);
    generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
  return copy;
}

/// Replaces input `number` of the contraction `op` by a copy whose
/// dimensions are permuted so that the one indexed by loop `innerLoop` is
/// innermost, freed after the op. Returns the op (its generic form if it was
/// named); `copy` is the transpose that fills the copy.
static FailureOr<linalg::LinalgOp> packInput(RewriterBase &rewriter,
                                             linalg::LinalgOp op,
                                             unsigned number,
                                             unsigned innerLoop,
                                             linalg::TransposeOp &copy) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return failure();
    generic = *generalized;
  }
  OpOperand &operand = generic->getOpOperand(number);
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  AffineExpr inner = rewriter.getAffineDimExpr(innerLoop);
  AffineMap map = generic.getMatchingIndexingMap(&operand);
  std::optional<unsigned> position = map.getResultPosition(inner);
  if (!type || !position)
    return failure();
  SmallVector<int64_t> permutation;
  for (unsigned i = 0, e = map.getNumResults(); i < e; ++i)
    if (i != *position)
      permutation.push_back(i);
  permutation.push_back(*position);

  Location loc = generic.getLoc();
  rewriter.setInsertionPoint(generic);
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamicSizes;
  for (int64_t i : permutation) {
    shape.push_back(type.getDimSize(i));
    if (type.isDynamicDim(i))
      dynamicSizes.push_back(
          memref::DimOp::create(rewriter, loc, operand.get(), i));
  }
  auto packedType = MemRefType::get(shape, type.getElementType());
  Value packed = memref::AllocOp::create(rewriter, loc, packedType,
                                         dynamicSizes,
                                         rewriter.getI64IntegerAttr(64));
  copy = readTransposed(rewriter, generic, number, permutation, packed);
  rewriter.setInsertionPointAfter(generic);
  memref::DeallocOp::create(rewriter, loc, packed);
  return cast<linalg::LinalgOp>(generic.getOperation());
}

/// The loops a result of an indexing map reads when it is one loop or a sum
/// of distinct loops (a convolution's window, `oh + kh`), else nullopt.
static std::optional<SmallVector<unsigned>> sumOfLoops(AffineExpr expr) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return SmallVector<unsigned>{dim.getPosition()};
  auto sum = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!sum || sum.getKind() != AffineExprKind::Add)
    return std::nullopt;
  std::optional<SmallVector<unsigned>> lhs = sumOfLoops(sum.getLHS());
  std::optional<SmallVector<unsigned>> rhs = sumOfLoops(sum.getRHS());
  if (!lhs || !rhs)
    return std::nullopt;
  for (unsigned dim : *rhs) {
    if (llvm::is_contained(*lhs, dim))
      return std::nullopt;
    lhs->push_back(dim);
  }
  return lhs;
}

/// The rows of a contraction's register tile (its narrow dimension), each
/// two vectors of the wide one: 8 x 2 accumulators with 512-bit vectors
/// (AVX-512's 32 registers), 6 x 2 with narrower ones (AVX2's and SSE's 16:
/// 12 accumulators, two vectors of the wide input and a broadcast; 8 rows
/// spilled, a 256^3 f64 matmul ran at half the rate).
static int64_t registerRows(unsigned vectorBits) {
  return vectorBits >= 512 ? 8 : 6;
}

/// The tile of a contraction's narrow dimension: `maxRows`, or fewer (down
/// to 4) when they divide a static size `maxRows` does not, so that no rows
/// are left to the scalar remainder loop (a 30 x 30 convolution output: 5
/// tiles of 6 instead of 3 of 8 and 6 scalar rows).
static int64_t narrowTile(int64_t staticSize, int64_t maxRows) {
  if (!ShapedType::isDynamic(staticSize) && staticSize % maxRows != 0)
    for (int64_t rows = maxRows - 1; rows >= 4; --rows)
      if (staticSize % rows == 0)
        return rows;
  return clampTile(maxRows, staticSize);
}

/// The plan of a contraction for a generic that is not one but has its
/// shape: each reduction step combines a function of the inputs into every
/// output element, as `(c_j - p_i)^2` summed over l into a distance matrix,
/// or `M[k,j,i] (x[n,i] - mu[k,i])` summed over i, or a convolution
/// (`x[n, oh + kh, ow + kw, c] K[kh, kw, c, f]` summed over kh, kw and c)
/// and the adjoints of one, which read or write the window. Tiled like a
/// contraction, MR x NR output tiles stay in registers across the reduction
/// loops, and each step is elementwise on the tile: a broadcast of the
/// narrow dimension's inputs against vectors of the wide one's. The order
/// of each element's reduction is the scalar loop's, so the results are
/// the same bits, except for an output written through a sum (the image's
/// adjoint of a convolution), whose terms are added in another order.
///
/// Every result of every map is a loop or a sum of loops. The wide
/// dimension is the output's innermost, a loop of its own that no sum
/// reads; the narrow one, another loop the output reads (alone or in a
/// sum) that no input read along the wide one depends on (so that a vector
/// of the wide input serves MR rows), the innermost of them in the output
/// when there are several. The other loops the output reads are batch
/// loops, outermost; those it does not read are the reductions, innermost.
static std::optional<TilePlan>
planOuterTiles(linalg::LinalgOp generic, int64_t lanes, int64_t rows,
               ArrayRef<int64_t> ranges) {
  if (generic.getNumDpsInits() != 1 ||
      !generic.getBlock()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  unsigned numLoops = generic.getNumLoops();
  // The loops each result reads; the loops some sum reads.
  llvm::SmallBitVector inSums(numLoops);
  for (AffineMap map : generic.getIndexingMapsArray()) {
    if (map.getNumSymbols() != 0)
      return std::nullopt;
    // No loop twice in one map (a diagonal).
    llvm::SmallBitVector read(numLoops);
    for (AffineExpr expr : map.getResults()) {
      std::optional<SmallVector<unsigned>> loops = sumOfLoops(expr);
      if (!loops)
        return std::nullopt;
      for (unsigned dim : *loops) {
        if (read.test(dim))
          return std::nullopt;
        read.set(dim);
        if (loops->size() > 1)
          inSums.set(dim);
      }
    }
  }
  AffineMap outputMap =
      generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
  if (outputMap.getNumResults() < 2)
    return std::nullopt;
  // An output element written through a sum (the adjoint of a convolution
  // scatters into the window) is updated by several iterations, which the
  // tile loops reorder: only an accumulation `out + t` is the same sum in
  // another order (an overwrite, or `2 out + t`, is not).
  if (llvm::any_of(outputMap.getResults(), [](AffineExpr expr) {
        return !isa<AffineDimExpr>(expr);
      })) {
    Block *body = generic.getBlock();
    BlockArgument out = body->getArguments().back();
    Operation *add = body->getTerminator()->getOperand(0).getDefiningOp();
    if (!add || !isa<arith::AddFOp, arith::AddIOp>(add) ||
        add->getBlock() != body || !out.hasOneUse() ||
        out.getUses().begin()->getOwner() != add ||
        add->getOperand(0) == add->getOperand(1))
      return std::nullopt;
  }
  SmallVector<utils::IteratorType> iterators =
      generic.getIteratorTypesArray();
  auto innermost = dyn_cast<AffineDimExpr>(outputMap.getResults().back());
  if (!innermost)
    return std::nullopt;
  unsigned wide = innermost.getPosition();
  if (iterators[wide] != utils::IteratorType::parallel || inSums.test(wide))
    return std::nullopt;
  SmallVector<unsigned> reductions;
  for (unsigned dim = 0; dim < numLoops; ++dim)
    if (!outputMap.isFunctionOfDim(dim))
      reductions.push_back(dim);
  if (reductions.empty())
    return std::nullopt;
  // The inputs read along the wide dimension; at most one may need a
  // transposed copy to be read contiguously along it (a projected
  // permutation, which the copy permutes).
  std::optional<unsigned> packOperand;
  llvm::SmallBitVector wideInputDims(numLoops);
  for (OpOperand *input : generic.getDpsInputOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(input);
    if (!isa<ShapedType>(input->get().getType()) || !map.isFunctionOfDim(wide))
      continue;
    for (unsigned dim = 0; dim < numLoops; ++dim)
      if (map.isFunctionOfDim(dim))
        wideInputDims.set(dim);
    if (map.getResults().back() != innermost) {
      if (packOperand || !map.isProjectedPermutation())
        return std::nullopt;
      packOperand = input->getOperandNumber();
    }
  }
  std::optional<unsigned> narrow;
  SmallVector<unsigned> outputLoops;
  for (AffineExpr expr : outputMap.getResults().drop_back()) {
    SmallVector<unsigned> loops = *sumOfLoops(expr);
    for (unsigned dim : loops) {
      outputLoops.push_back(dim);
      if (!wideInputDims.test(dim))
        narrow = dim;
    }
  }
  if (!narrow)
    return std::nullopt;
  // Worth it only for whole vectors along the wide dimension (or a static
  // one of a power of two from 4 lanes, a narrower vector: 8 channels of
  // f32 with 16 lanes, where the convolution's adjoint of its image ran 3x
  // slower than in f64, gathering the kernel element by element), and,
  // when an input must be copied transposed (a pass over all of it), when
  // each copied element is read many times: by the iterations of the loops
  // the input does not depend on (a batch of 8 x 16 distance blocks ran 2x
  // slower with the copy than as vectors along the reduction; a
  // convolution's kernel serves every output pixel).
  auto atLeast = [&](unsigned dim, int64_t size) {
    return ShapedType::isDynamic(ranges[dim]) || ranges[dim] >= size;
  };
  if (!atLeast(wide, lanes) &&
      (ranges[wide] < 4 || !llvm::isPowerOf2_64(ranges[wide])))
    return std::nullopt;
  if (packOperand) {
    AffineMap map = generic.getMatchingIndexingMap(
        &generic->getOpOperand(*packOperand));
    int64_t reuse = 1;
    for (unsigned dim = 0; dim < numLoops && reuse < 32; ++dim)
      if (!map.isFunctionOfDim(dim))
        reuse = ShapedType::isDynamic(ranges[dim]) ? 32 : reuse * ranges[dim];
    if (reuse < 32)
      return std::nullopt;
  }
  TilePlan plan;
  plan.sizes.assign(numLoops, 1);
  plan.sizes[*narrow] = narrowTile(ranges[*narrow], rows);
  plan.sizes[wide] = wideTile(lanes, ranges[wide]);
  for (unsigned dim : outputLoops)
    if (dim != *narrow)
      plan.interchange.push_back(dim);
  plan.numBatch = plan.interchange.size();
  plan.interchange.push_back(*narrow);
  plan.interchange.push_back(wide);
  llvm::append_range(plan.interchange, reductions);
  plan.contraction = true;
  plan.packOperand = packOperand;
  return plan;
}

/// The input of a contraction's narrow dimension to copy transposed, its
/// one reduction innermost, or nullopt. Read in place along a reduction that
/// is not its innermost dimension, each step of a register tile loads the
/// tile's rows from another line, at the stride of the input's rows: the
/// adjoint of a weight matrix, `H^T D` summed over the batch, reads
/// H[b, i..i+8] for b = 0..63. Where that stride is a multiple of 4 KB, all
/// those lines fall in one set of an L1 cache of 32 KB or more (8-way or
/// more: 64 sets of 64-byte lines), evicting each other (64 x 1024 by
/// 64 x 1024 f64 ran at 47 GFLOP/s, and at 86 with H^T given). Only then:
/// at other strides the copy (a malloc and a pass over the input) cost
/// 10-40% more than it saved (256 x 784 by 256 x 128 f64, whose rows are
/// 6272 bytes apart), and only where it serves four strips of the wide
/// dimension or more and eight reduction steps.
static std::optional<unsigned> narrowInputToPack(linalg::LinalgOp op,
                                                 const TilePlan &plan,
                                                 ArrayRef<int64_t> ranges) {
  if (!plan.contraction || plan.interchange.size() != plan.numBatch + 3)
    return std::nullopt;
  auto [narrow, wide, reduction] = contractionLoops(plan);
  auto atLeast = [&](unsigned dim, int64_t size) {
    return ShapedType::isDynamic(ranges[dim]) || ranges[dim] >= size;
  };
  if (!atLeast(wide, 4 * plan.sizes[wide]) || !atLeast(reduction, 8))
    return std::nullopt;
  AffineExpr reductionExpr = getAffineDimExpr(reduction, op.getContext());
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto type = dyn_cast<MemRefType>(input->get().getType());
    std::optional<unsigned> position = map.getResultPosition(reductionExpr);
    if (input->getOperandNumber() == plan.packOperand || !type ||
        !type.getElementType().isIntOrFloat() ||
        !map.isProjectedPermutation() || map.isFunctionOfDim(wide) ||
        !map.isFunctionOfDim(narrow) || !position ||
        map.getResults().back() == reductionExpr)
      continue;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        ShapedType::isDynamic(strides[*position]))
      continue;
    int64_t bytes = strides[*position] *
                    llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    if (bytes % 4096 != 0)
      continue;
    return input->getOperandNumber();
  }
  return std::nullopt;
}

static std::optional<TilePlan> planTiles(linalg::LinalgOp op,
                                         unsigned vectorBits) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() == 0)
    return std::nullopt;
  std::optional<unsigned> bits = widestElement(op);
  if (!bits)
    return std::nullopt;
  int64_t lanes = std::max<unsigned>(1, vectorBits / *bits);
  int64_t rows = registerRows(vectorBits);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned numLoops = op.getNumLoops();
  TilePlan plan;
  plan.sizes.assign(numLoops, 1);

  if (linalg::isaContractionOpInterface(op) && op.getNumDpsInits() == 1) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    AffineDimExpr innerExpr(nullptr);
    if (outputMap.getNumResults() != 0)
      innerExpr = dyn_cast<AffineDimExpr>(outputMap.getResults().back());
    if (succeeded(dims) && dims->m.size() == 1 && dims->n.size() == 1 &&
        !dims->k.empty() && innerExpr &&
        (innerExpr.getPosition() == dims->m.front() ||
         innerExpr.getPosition() == dims->n.front())) {
      // The output's innermost dimension (contiguous in memory) is the wide
      // one: NR = two vectors of it by MR = registerRows of the other, 8 x 16
      // f64 in 16 of AVX-512's 32 registers, 6 x 8 in 12 of AVX2's 16.
      unsigned wide = innerExpr.getPosition();
      unsigned narrow = wide == dims->n.front() ? dims->m.front()
                                                : dims->n.front();
      plan.sizes[narrow] = narrowTile(ranges[narrow], rows);
      plan.sizes[wide] = wideTile(lanes, ranges[wide]);
      for (unsigned b : dims->batch)
        plan.interchange.push_back(b);
      plan.numBatch = dims->batch.size();
      plan.interchange.push_back(narrow);
      plan.interchange.push_back(wide);
      for (unsigned k : dims->k)
        plan.interchange.push_back(k);
      plan.contraction = true;
      plan.named = true;
      // The input indexed by the wide dimension is read a vector at a time
      // along it: when that is not its innermost dimension (A B^T), a
      // transposed copy makes the reads contiguous.
      for (OpOperand *input : op.getDpsInputOperands()) {
        AffineMap map = op.getMatchingIndexingMap(input);
        if (!map.getResultPosition(innerExpr))
          continue;
        if (map.getResults().back() != innerExpr)
          plan.packOperand = input->getOperandNumber();
      }
      plan.packNarrow = narrowInputToPack(op, plan, ranges);
      return plan;
    }
  }
  if (std::optional<TilePlan> outer =
          planOuterTiles(op, lanes, rows, ranges)) {
    outer->packNarrow = narrowInputToPack(op, *outer, ranges);
    return outer;
  }
  plan.sizes.back() = clampTile(lanes, ranges.back());
  // Vectors along a parallel innermost loop: the reduction loops run inside
  // the parallel tile loops, so that a vector of the output stays in a
  // register across them instead of being read and written back at every
  // step (`out[k, i] += M[k, j, i] d[n, k, j]` over n and j went through
  // all of M once per n).
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.back() == utils::IteratorType::parallel &&
      llvm::is_contained(iterators, utils::IteratorType::reduction)) {
    for (unsigned dim = 0; dim < numLoops; ++dim)
      if (iterators[dim] == utils::IteratorType::parallel)
        plan.interchange.push_back(dim);
    for (unsigned dim = 0; dim < numLoops; ++dim)
      if (iterators[dim] == utils::IteratorType::reduction)
        plan.interchange.push_back(dim);
  }
  return plan;
}

/// The tile `generic` (static shapes; every map result a loop or a sum of
/// loops, see planOuterTiles) without its loops of one iteration that are
/// reductions or read in a sum (a convolution's window: `oh + kh` with one
/// kh is oh), when every loop left indexes every output: operands indexed
/// by the dropped loops alone are rank-reduced views, and the tile is
/// elementwise.
static FailureOr<linalg::GenericOp>
dropUnitReductions(RewriterBase &rewriter, linalg::GenericOp generic) {
  MLIRContext *context = generic.getContext();
  Location loc = generic.getLoc();
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators =
      generic.getIteratorTypesArray();
  unsigned numLoops = iterators.size();
  // linalg.index would name loops by their old positions.
  if (!generic.getBody()->getOps<linalg::IndexOp>().empty())
    return failure();
  llvm::SmallBitVector inSums(numLoops);
  for (AffineMap map : generic.getIndexingMapsArray())
    for (AffineExpr expr : map.getResults()) {
      std::optional<SmallVector<unsigned>> loops = sumOfLoops(expr);
      if (!loops || map.getNumSymbols() != 0)
        return failure();
      if (loops->size() > 1)
        for (unsigned dim : *loops)
          inSums.set(dim);
    }
  SmallVector<int64_t> newIndex(numLoops, -1);
  unsigned numNew = 0;
  SmallVector<AffineExpr> replacements;
  for (auto [dim, iterator] : llvm::enumerate(iterators)) {
    if (ranges[dim] == 1 &&
        (iterator == utils::IteratorType::reduction || inSums.test(dim))) {
      replacements.push_back(getAffineConstantExpr(0, context));
      continue;
    }
    newIndex[dim] = numNew;
    replacements.push_back(getAffineDimExpr(numNew++, context));
  }
  if (numNew == numLoops)
    return failure();
  // Each map with the dropped loops at 0: every result a loop (kept) or 0
  // (a dimension of one element, rank-reduced).
  SmallVector<AffineMap> newMaps;
  for (AffineMap map : generic.getIndexingMapsArray()) {
    AffineMap replaced = map.replaceDimsAndSymbols(replacements, {}, numNew, 0);
    for (AffineExpr expr : replaced.getResults()) {
      auto constant = dyn_cast<AffineConstantExpr>(expr);
      if (!isa<AffineDimExpr>(expr) && !(constant && constant.getValue() == 0))
        return failure();
    }
    newMaps.push_back(replaced);
  }
  // Only when every loop left indexes every output: the tile is then
  // elementwise.
  SmallVector<AffineMap> outputMaps;
  for (OpOperand &init : generic.getDpsInitsMutable())
    outputMaps.push_back(newMaps[init.getOperandNumber()]);
  SmallVector<utils::IteratorType> newIterators =
      ad::iteratorTypesOfOutputs(numNew, outputMaps);
  if (llvm::is_contained(newIterators, utils::IteratorType::reduction))
    return failure();
  // No loop twice in one map (upstream's isProjectedPermutation takes no
  // more zeros than the map has loops).
  for (AffineMap map : newMaps) {
    llvm::SmallBitVector read(numNew);
    for (AffineExpr expr : map.getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim)
        continue;
      if (read.test(dim.getPosition()))
        return failure();
      read.set(dim.getPosition());
    }
  }
  // Buffers of static shape, none of rank 0 before or after (upstream
  // vectorization of LLVM 22 crashes on some generics reading a rank-0
  // buffer through a broadcast); a dimension read at 0 has one element.
  for (OpOperand &operand : generic->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    AffineMap map = newMaps[operand.getOperandNumber()];
    if (!type) {
      if (map.getNumResults() != 0)
        return failure();
      continue;
    }
    if (!type.hasStaticShape() ||
        llvm::none_of(map.getResults(),
                      [](AffineExpr expr) { return isa<AffineDimExpr>(expr); }))
      return failure();
    for (auto [position, expr] : llvm::enumerate(map.getResults()))
      if (!isa<AffineDimExpr>(expr) && type.getDimSize(position) != 1)
        return failure();
  }
  rewriter.setInsertionPoint(generic);
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  for (OpOperand &operand : generic->getOpOperands()) {
    AffineMap map = newMaps[operand.getOperandNumber()];
    Value value = operand.get();
    SmallVector<AffineExpr> results;
    SmallVector<int64_t> shape;
    SmallVector<OpFoldResult> offsets, sizes, strides;
    auto type = dyn_cast<MemRefType>(value.getType());
    for (auto [position, expr] : llvm::enumerate(map.getResults())) {
      offsets.push_back(rewriter.getIndexAttr(0));
      strides.push_back(rewriter.getIndexAttr(1));
      int64_t size = type.getDimSize(position);
      sizes.push_back(rewriter.getIndexAttr(size));
      if (!isa<AffineDimExpr>(expr))
        continue;
      shape.push_back(size);
      results.push_back(expr);
    }
    if (type && shape.size() != static_cast<size_t>(type.getRank())) {
      MemRefType viewType = memref::SubViewOp::inferRankReducedResultType(
          shape, type, offsets, sizes, strides);
      value = memref::SubViewOp::create(rewriter, loc, viewType, value,
                                        offsets, sizes, strides);
      // Dynamic strides do not tell which unit dimensions a view drops.
      value = ad::legalizeRankReducingView(rewriter, value.getDefiningOp());
      rewriter.setInsertionPoint(generic);
    }
    operands.push_back(value);
    maps.push_back(AffineMap::get(numNew, 0, results, context));
  }
  unsigned numInputs = generic.getNumDpsInputs();
  Block *body = generic.getBody();
  auto dropped = linalg::GenericOp::create(
      rewriter, loc, TypeRange(), ArrayRef(operands).take_front(numInputs),
      ArrayRef(operands).drop_front(numInputs), maps, newIterators,
      [&](OpBuilder &b, Location, ValueRange arguments) {
        IRMapping mapping;
        mapping.map(body->getArguments(), arguments);
        for (Operation &op : *body)
          b.clone(op, mapping);
      });
  rewriter.eraseOp(generic);
  return dropped;
}

static bool disjointBuffers(Value a, Value b);

/// Whether `a` and `b` are the same elements: one value, or subviews of
/// the same elements with the same offsets, sizes and strides (the views
/// tiling makes of one operand read and written in place).
static bool sameView(Value a, Value b) {
  if (a == b)
    return true;
  auto viewA = a.getDefiningOp<memref::SubViewOp>();
  auto viewB = b.getDefiningOp<memref::SubViewOp>();
  return viewA && viewB && viewA.getType() == viewB.getType() &&
         sameView(viewA.getSource(), viewB.getSource()) &&
         viewA.getMixedOffsets() == viewB.getMixedOffsets() &&
         viewA.getMixedSizes() == viewB.getMixedSizes() &&
         viewA.getMixedStrides() == viewB.getMixedStrides();
}

/// Whether the iterations of `op` along loop `dim` write disjoint parts of
/// its outputs and nothing else, and read nothing another iteration
/// writes: every output is indexed by `dim` through a projected permutation
/// (distinct values of `dim`, distinct elements); the outputs cannot
/// overlap each other, and each input cannot overlap an output or is that
/// output read where it is written (an in-place elementwise op); the body
/// has no memory effects. (A shift in place, `a[i] = f(a[i + 1])` through
/// two views of one buffer, is right one iteration after the other and
/// wrong on two threads.)
static bool writesDisjointSlices(linalg::LinalgOp op, int64_t dim) {
  if (op.getNumDpsInits() == 0)
    return false;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (!map.isProjectedPermutation() ||
        !map.getResultPosition(getAffineDimExpr(dim, op.getContext())))
      return false;
    for (OpOperand &other : op.getDpsInitsMutable())
      if (other.getOperandNumber() < init.getOperandNumber() &&
          !disjointBuffers(other.get(), init.get()))
        return false;
    for (OpOperand *input : op.getDpsInputOperands()) {
      if (!isa<BaseMemRefType>(input->get().getType()))
        continue;
      bool inPlace = sameView(input->get(), init.get()) &&
                     op.getMatchingIndexingMap(input) == map;
      if (!inPlace && !disjointBuffers(input->get(), init.get()))
        return false;
    }
  }
  return llvm::all_of(op.getBlock()->without_terminator(), [](Operation &op) {
    return isMemoryEffectFree(&op) || isa<linalg::IndexOp>(op);
  });
}

static bool reductionsVectorizable(linalg::LinalgOp op);

/// Computes `remainder`, the tile of fewer than `width` elements along its
/// innermost loop that peeling left, as tiles of width / 2, width / 4, ...
/// 2 elements (each marked with `marker`: static shapes, vectorized) when
/// that many are left, and a last tile of the rest (at most one element
/// when `width` is a power of two). A remainder of static length takes its
/// tiles without branches (a branch never taken would hold a view past its
/// end, which the verifier rejects), the last one vectorized too.
static void splitRemainder(RewriterBase &rewriter, linalg::LinalgOp remainder,
                           int64_t width, StringAttr marker) {
  // Tiles that would stay scalar (see the vectorization below) are not
  // split: that would only copy the scalar loop.
  if ((remainder.getNumLoops() > 1 &&
       !remainder.getBlock()->getOps<linalg::IndexOp>().empty()) ||
      !reductionsVectorizable(remainder))
    return;
  auto tiling = cast<TilingInterface>(remainder.getOperation());
  Location loc = remainder.getLoc();
  rewriter.setInsertionPoint(remainder);
  SmallVector<Range> domain = tiling.getIterationDomain(rewriter);
  unsigned last = domain.size() - 1;
  SmallVector<OpFoldResult> offsets, sizes;
  for (const Range &range : domain) {
    offsets.push_back(range.offset);
    sizes.push_back(range.size);
  }
  Value start =
      getValueOrCreateConstantIndexOp(rewriter, loc, domain[last].offset);
  Value total =
      getValueOrCreateConstantIndexOp(rewriter, loc, domain[last].size);
  // Elements computed so far.
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value done = zero;
  auto tileAt = [&](Value at, OpFoldResult size) {
    offsets[last] = arith::AddIOp::create(rewriter, loc, start, at).getResult();
    sizes[last] = size;
    FailureOr<TilingResult> tile =
        tiling.getTiledImplementation(rewriter, offsets, sizes);
    return tile;
  };
  if (std::optional<int64_t> length = getConstantIntValue(domain[last].size)) {
    int64_t at = 0;
    SmallVector<Operation *> tiles;
    bool tiled = true;
    for (int64_t lanes = width / 2; lanes >= 1; lanes /= 2) {
      int64_t size = lanes >= 2 ? lanes : *length - at;
      if (size <= 0 || (lanes >= 2 && *length - at < lanes))
        continue;
      FailureOr<TilingResult> tile = tileAt(
          arith::ConstantIndexOp::create(rewriter, loc, at).getResult(),
          rewriter.getIndexAttr(size));
      tiled &= succeeded(tile);
      if (succeeded(tile))
        for (Operation *op : tile->tiledOps) {
          op->setAttr(marker, rewriter.getBoolAttr(false));
          tiles.push_back(op);
        }
      at += size;
    }
    for (Operation *op : tiled ? ArrayRef<Operation *>() : tiles)
      rewriter.eraseOp(op);
    if (tiled)
      rewriter.eraseOp(remainder);
    return;
  }
  SmallVector<scf::IfOp> branches;
  bool tiled = true;
  for (int64_t lanes = width / 2; lanes >= 2; lanes /= 2) {
    Value left = arith::SubIOp::create(rewriter, loc, total, done);
    Value fits = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::sge, left,
        arith::ConstantIndexOp::create(rewriter, loc, lanes));
    auto branch = scf::IfOp::create(rewriter, loc, rewriter.getIndexType(),
                                    fits, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(branch.thenBlock());
      FailureOr<TilingResult> tile =
          tileAt(done, rewriter.getIndexAttr(lanes));
      tiled &= succeeded(tile);
      if (succeeded(tile))
        for (Operation *op : tile->tiledOps)
          op->setAttr(marker, rewriter.getBoolAttr(false));
      Value next = arith::AddIOp::create(
          rewriter, loc, done,
          arith::ConstantIndexOp::create(rewriter, loc, lanes));
      scf::YieldOp::create(rewriter, loc, next);
      rewriter.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(rewriter, loc, done);
    }
    done = branch.getResult(0);
    branches.push_back(branch);
  }
  Value rest = arith::SubIOp::create(rewriter, loc, total, done);
  if (tiled && succeeded(tileAt(done, rest))) {
    rewriter.eraseOp(remainder);
    return;
  }
  // Every element is computed once: by the tiles, or by the remainder as
  // it was.
  for (scf::IfOp branch : llvm::reverse(branches)) {
    rewriter.replaceAllUsesWith(branch.getResult(0), zero);
    rewriter.eraseOp(branch);
  }
}

/// Tiles `op` into scf.for loops (`sizes` per loop, 0: no loop; the loops
/// in the order `interchange`, when given) and erases it: the loops compute
/// it now (left in place, it would run twice, accumulating into its output
/// twice). Fails, changing nothing, when upstream tiling does.
static FailureOr<scf::SCFTilingResult>
tileInLoops(RewriterBase &rewriter, linalg::LinalgOp op,
            ArrayRef<int64_t> sizes, ArrayRef<int64_t> interchange = {}) {
  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  if (!interchange.empty())
    options.setInterchange(interchange);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (succeeded(tiled))
    rewriter.eraseOp(op);
  return tiled;
}

/// Cache blocks of a contraction tiled into registers: the rows of its
/// narrow dimension a block runs (`kBlockRows` register tiles) and the steps
/// of its reduction, so that the block of the narrow input (96 x 256 f64,
/// 192 KB) stays in L2 and the strip of the wide input one register tile
/// reads (256 x 8 f64, 16 KB) in L1 while the register tiles run over them.
constexpr int64_t kBlockRows = 16;
constexpr int64_t kBlockSteps = 256;

/// A fill of `op`'s output (one buffer, an allocation of the function) just
/// before it in its block (`linalg.fill`, or a generic that only writes a
/// scalar input to every element), and the value it writes: nothing between
/// them reads or writes a buffer that may overlap it (ops free of memory
/// effects, views, pass), and no input of `op` may overlap it. Null when
/// there is none.
struct Fill {
  Operation *op = nullptr;
  Value value;
};
static Fill precedingFill(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1 || !op.hasPureBufferSemantics())
    return {};
  Value output = op.getDpsInits()[0];
  Value root = rootBuffer(output);
  if (!isa_and_nonnull<memref::AllocOp, memref::AllocaOp>(root.getDefiningOp()))
    return {};
  auto overlaps = [&](Value value) {
    return isa<BaseMemRefType>(value.getType()) &&
           !disjointBuffers(root, rootBuffer(value));
  };
  if (llvm::any_of(op.getDpsInputs(), overlaps))
    return {};
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(prev);
        fill && fill.hasPureBufferSemantics() &&
        fill.getDpsInits()[0] == output)
      return {fill, fill.getInputs()[0]};
    // (A generic writing every element: upstream's isaFillOpInterface looks
    // at the body, not at the output's map, which may write a diagonal.)
    if (auto generic = dyn_cast<linalg::GenericOp>(prev);
        generic && generic.hasPureBufferSemantics() &&
        generic.getNumDpsInits() == 1 && generic.getDpsInits()[0] == output &&
        generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
            .isPermutation())
      if (std::optional<Value> value = linalg::isaFillOpInterface(generic))
        return {generic, *value};
    if (isMemoryEffectFree(prev))
      continue;
    bool touches = prev->walk([&](Operation *nested) {
                          return llvm::any_of(nested->getOperands(), overlaps)
                                     ? WalkResult::interrupt()
                                     : WalkResult::advance();
                        })
                       .wasInterrupted();
    if (touches)
      return {};
  }
  return {};
}

/// Moves `fill`, which writes the whole output of the contraction `block`
/// just before the loop `rows` over its blocks of rows was made, into that
/// loop: each block of rows is filled right before its first reduction
/// block adds to it, so it is still in cache when the register tiles first
/// read it, instead of the whole output written out to memory and read
/// back (GradBench's kmeans: an 80 MB distance matrix). Every row block is
/// filled whatever the reduction's length (none: the output is the fill).
/// Returns the fill of a row block (null, `fill` left, when the block's
/// output view cannot be taken there).
static linalg::FillOp fillRowBlocks(RewriterBase &rewriter, Fill fill,
                                    scf::ForOp rows, linalg::LinalgOp block) {
  Block *body = rows.getBody();
  Operation *anchor = body->findAncestorOpInBlock(*block);
  auto view = block.getDpsInits()[0].getDefiningOp<memref::SubViewOp>();
  if (!anchor || !view)
    return nullptr;
  // The view's offsets and sizes are those of the row block (the output
  // does not depend on the reduction loop), computed by pure ops (the
  // block's affine.min, which tiling puts inside the reduction loop) from
  // values defined before `anchor`: those ops are computed again there.
  DominanceInfo dominance(rows->getParentOfType<FunctionOpInterface>());
  IRMapping mapping;
  SmallVector<Operation *> recompute;
  std::function<bool(Value)> available = [&](Value value) {
    if (dominance.properlyDominates(value, anchor))
      return true;
    Operation *def = value.getDefiningOp();
    if (!def || def->getNumRegions() != 0 || !isPure(def) ||
        !llvm::all_of(def->getOperands(), available))
      return false;
    if (!llvm::is_contained(recompute, def))
      recompute.push_back(def);
    return true;
  };
  if (!llvm::all_of(view->getOperands(), available))
    return nullptr;
  rewriter.setInsertionPoint(anchor);
  for (Operation *op : recompute)
    rewriter.clone(*op, mapping);
  Operation *rowView = rewriter.clone(*view, mapping);
  auto rowFill = linalg::FillOp::create(rewriter, fill.op->getLoc(),
                                        fill.value, rowView->getResults());
  rewriter.eraseOp(fill.op);
  return rowFill;
}

/// Tiles a contraction `op` planned by `plan` (its dimensions in the order
/// of the tile loops) into cache blocks when it is larger than one: a loop
/// over blocks of rows of the narrow dimension around a loop over blocks of
/// its one reduction. Returns the op of one block (`op` when it fits).
/// Each output element still adds its terms in the order of the reduction
/// (a block reads the output tile its previous block wrote), so the results
/// are the same bits (null: the blocks' ops are not one op, left to the
/// scalar lowering). With `parallelMarker` (tiles shared out among
/// threads), only the reduction is blocked, and the register tiles' own
/// outermost loop inside it is shared (one fork and join per block).
static linalg::LinalgOp blockForCache(RewriterBase &rewriter,
                                      linalg::LinalgOp op,
                                      const TilePlan &plan,
                                      bool parallelMarker,
                                      DenseSet<Operation *> &movedFills,
                                      linalg::FillOp &rowFill) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> reductions;
  for (auto [dim, iterator] : llvm::enumerate(iterators))
    if (iterator == utils::IteratorType::reduction)
      reductions.push_back(dim);
  if (reductions.size() != 1 || op.getNumLoops() < plan.numBatch + 3)
    return op;
  unsigned narrow = contractionLoops(plan).narrow;
  unsigned reduction = reductions.front();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto largerThan = [&](unsigned dim, int64_t size) {
    return ShapedType::isDynamic(ranges[dim]) || ranges[dim] > size;
  };
  int64_t rows = plan.sizes[narrow] * kBlockRows;
  SmallVector<int64_t> sizes(op.getNumLoops(), 0);
  // Not the rows of a contraction whose tiles may be shared out: the loop
  // over row blocks would then be the one shared, with a few iterations (a
  // batch of 64 rows: one, no threads), where the loop over tiles of the
  // wide dimension has many.
  if (largerThan(narrow, rows) && !parallelMarker)
    sizes[narrow] = rows;
  if (largerThan(reduction, kBlockSteps))
    sizes[reduction] = kBlockSteps;
  if (llvm::all_of(sizes, [](int64_t size) { return size == 0; }))
    return op;
  SmallVector<int64_t> order = {narrow, reduction};
  for (unsigned dim = 0; dim < op.getNumLoops(); ++dim)
    if (dim != narrow && dim != reduction)
      order.push_back(dim);
  Fill fill = sizes[narrow] ? precedingFill(op) : Fill();
  FailureOr<scf::SCFTilingResult> tiled =
      tileInLoops(rewriter, op, sizes, order);
  if (failed(tiled))
    return op;
  if (tiled->tiledOps.size() != 1)
    return nullptr;
  auto block = cast<linalg::LinalgOp>(tiled->tiledOps.front());
  // The outermost loop is the one over row blocks.
  if (fill.op && !tiled->loops.empty())
    if (auto rows = dyn_cast<scf::ForOp>(tiled->loops.front().getOperation()))
      if ((rowFill = fillRowBlocks(rewriter, fill, rows, block)))
        movedFills.insert(fill.op);
  return block;
}

/// Whether `value`, of `body`, is or depends on the block argument `arg`.
static bool readsArgument(Block *body, Value value, BlockArgument arg) {
  if (value == arg)
    return true;
  for (Operation *op : ad::bodySlice(body, {value})) {
    WalkResult reads = op->walk([&](Operation *nested) {
      return llvm::is_contained(nested->getOperands(), Value(arg))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (reads.wasInterrupted())
      return true;
  }
  return false;
}

/// A sum of more terms is not split into a contraction per term.
constexpr size_t kMaxTerms = 4;

/// The terms of `value`, a sum (`arith.addf` tree) that adds `acc` once:
/// the summands other than `acc`. None when `acc` is not one of them, or
/// another summand reads it.
static std::optional<SmallVector<Value>> termsBesides(Block *body,
                                                      Value value,
                                                      BlockArgument acc) {
  SmallVector<Value> terms;
  unsigned accs = 0;
  SmallVector<Value> worklist = {value};
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (next == acc) {
      ++accs;
      continue;
    }
    auto add = next.getDefiningOp<arith::AddFOp>();
    if (add && add->getBlock() == body) {
      worklist.push_back(add.getRhs());
      worklist.push_back(add.getLhs());
      continue;
    }
    if (readsArgument(body, next, acc))
      return std::nullopt;
    terms.push_back(next);
  }
  // A term added twice (`p + p`) would be computed once per occurrence,
  // a doubling chain 2^depth times: such sums, and sums of more than
  // kMaxTerms terms, stay whole.
  llvm::SmallPtrSet<void *, 8> distinct;
  for (Value term : terms)
    distinct.insert(term.getAsOpaquePointer());
  if (accs != 1 || distinct.size() != terms.size() ||
      terms.size() > kMaxTerms)
    return std::nullopt;
  return terms;
}

/// Splits a generic that reduces into contractions, when it is made of
/// them: one generic per output when each output's value depends on the
/// inputs alone (forward mode makes a product and its tangent, `W T` and
/// `W dT`, one loop nest with two outputs), and, when an output adds
/// two to kMaxTerms distinct terms, one generic per term, each adding its
/// own to the output in turn (the tangent of a product of two active
/// operands, `dW T + W dT`, and the adjoints of forward mode's products in
/// an hvp). No plan takes an op with several outputs, and a sum of products
/// ran as an elementwise tile (1.8x slower than its contractions) or scalar
/// loops (an hvp through a 64 x 256 x 256 product: 34x its gradient). Each
/// part is built by buildGenericPart from the body ops its value needs, its
/// unused inputs dropped (upstream keeps those that give a loop its range:
/// such a part is no contraction); a term's part reads the output its
/// previous term wrote, so float sums are rounded in another order (not
/// under `reassociate=false`). Nothing is split unless every part is then
/// planned as a contraction, the body has no memory effects, and no output
/// may overlap another output or an input a part other than its own first
/// reads. Returns the new ops (empty: `op` unchanged).
static SmallVector<linalg::LinalgOp>
splitContractions(RewriterBase &rewriter, linalg::GenericOp op,
                  unsigned vectorBits, bool reassociate) {
  if (!op.hasPureBufferSemantics() || op.getNumReductionLoops() == 0 ||
      !llvm::all_of(op.getBlock()->without_terminator(), [](Operation &inner) {
        return isMemoryEffectFree(&inner) && inner.getNumRegions() == 0;
      }))
    return {};
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  // A part: an output and the value it takes, or the term it adds.
  struct Part {
    OpOperand *output;
    Value value;
    bool addsTerm;
  };
  SmallVector<Part> parts;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    Value value = yield.getOperand(init.getOperandNumber() -
                                   op.getNumDpsInputs());
    for (OpOperand &other : op.getDpsInitsMutable())
      if (&other != &init &&
          readsArgument(body, value, op.getMatchingBlockArgument(&other)))
        return {};
    std::optional<SmallVector<Value>> terms;
    if (reassociate)
      terms = termsBesides(body, value, op.getMatchingBlockArgument(&init));
    if (terms && terms->size() >= 2) {
      for (Value term : *terms)
        parts.push_back({&init, term, true});
      continue;
    }
    parts.push_back({&init, value, false});
  }
  if (parts.size() < 2)
    return {};
  SmallVector<linalg::GenericOp> split;
  auto undo = [&]() {
    for (linalg::GenericOp part : split)
      rewriter.eraseOp(part);
    return SmallVector<linalg::LinalgOp>();
  };
  rewriter.setInsertionPoint(op);
  for (const Part &part : parts) {
    linalg::GenericOp generic = ad::buildGenericPart(
        rewriter, op, {part.output}, op.getIteratorTypesArray(),
        ad::bodySlice(body, {part.value}), {part.value});
    if (part.addsTerm) {
      auto partYield =
          cast<linalg::YieldOp>(generic.getBlock()->getTerminator());
      rewriter.setInsertionPoint(partYield);
      Value sum = arith::AddFOp::create(rewriter, op.getLoc(),
                                        generic.getBlock()->getArguments().back(),
                                        partYield.getOperand(0));
      partYield->setOperand(0, sum);
    }
    // (Upstream builds the pruned op where the rewriter points.)
    rewriter.setInsertionPoint(generic);
    FailureOr<linalg::GenericOp> pruned =
        linalg::deduplicateOperandsAndRemoveDeadResults(rewriter, generic,
                                                        /*removeOutputs=*/false);
    split.push_back(succeeded(pruned) ? *pruned : generic);
    rewriter.setInsertionPoint(op);
  }
  // An output may not overlap another output, nor an input that a part
  // other than the output's first reads (the parts run one after another).
  for (auto [p, part] : llvm::enumerate(split)) {
    Value out = part.getDpsInitOperand(0)->get();
    bool first = p == 0 || parts[p - 1].output != parts[p].output;
    for (auto [q, other] : llvm::enumerate(split)) {
      if (parts[q].output != parts[p].output &&
          !disjointBuffers(out, other.getDpsInitOperand(0)->get()))
        return undo();
      if (q == p && first)
        continue;
      for (Value input : other.getDpsInputs())
        if (isa<BaseMemRefType>(input.getType()) &&
            !disjointBuffers(out, input))
          return undo();
    }
  }
  for (linalg::GenericOp part : split) {
    std::optional<TilePlan> plan =
        planTiles(cast<linalg::LinalgOp>(part.getOperation()), vectorBits);
    if (!plan || !plan->contraction)
      return undo();
  }
  rewriter.eraseOp(op);
  return llvm::map_to_vector(split, [](linalg::GenericOp part) {
    return cast<linalg::LinalgOp>(part.getOperation());
  });
}

/// Loops below this many vectors are not split for alignment: the head's
/// branches would cost more than the split stores save.
constexpr int64_t kMinAlignedVectors = 4;

/// Splits a one-loop elementwise `op` (tiled in `width` lanes; registers of
/// `vectorBits`) before its first `p` elements, `p` the number that brings
/// its first output to a register-aligned address, so that the vector loop
/// over the rest stores whole aligned vectors: a store that crosses a cache
/// line (every AVX-512 store of f64 at an odd element) costs two, and a
/// stage of a stencil, `k[i] = x[i] * t[i-1]` written from element 1,
/// would cross one with every vector (RK4 over 10^4 f64: 2x slower). The
/// head, fewer than a register's lanes, runs in the remainder's tiles
/// (marked with `marker`). Returns the op of the rest (`op` when nothing is
/// split: the output is aligned already, not contiguous, or the loop is
/// short). Any split point computes the same elements.
static linalg::LinalgOp alignOutput(RewriterBase &rewriter,
                                    linalg::LinalgOp op, const TilePlan &plan,
                                    unsigned vectorBits, StringAttr marker) {
  if (plan.contraction || op.getNumLoops() != 1 ||
      op.getNumDpsInits() == 0 ||
      op.getIteratorTypesArray().front() != utils::IteratorType::parallel)
    return op;
  int64_t width = plan.sizes.front();
  OpOperand *output = op.getDpsInitOperand(0);
  auto type = dyn_cast<MemRefType>(output->get().getType());
  if (width < 4 || !type || type.getRank() != 1 ||
      !op.getMatchingIndexingMap(output).isIdentity())
    return op;
  unsigned elementBits = type.getElementTypeBitWidth();
  int64_t registerBytes = vectorBits / 8;
  if (elementBits % 8 != 0 || elementBits == 0 ||
      registerBytes % (elementBits / 8) != 0 ||
      registerBytes / (elementBits / 8) < 2)
    return op;
  int64_t bytes = elementBits / 8;
  int64_t lanes = registerBytes / bytes;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides[0] != 1)
    return op;
  // (The head is counted in the output's elements, which may be narrower
  // than the widest operand's that set the tile: i8 from f64 has a head of
  // up to 63 at 512 bits.)
  int64_t shortest = std::max(kMinAlignedVectors * width, 2 * lanes);
  int64_t size = op.getStaticLoopRanges().front();
  if (!ShapedType::isDynamic(size) && size < shortest)
    return op;
  // An aligned allocation viewed at a static offset: the split is known
  // (and static when the loop's length is, which is then longer).
  std::optional<int64_t> knownHead, staticHead;
  Value root = ad::rootBuffer(output->get());
  if (auto alloc = root.getDefiningOp<memref::AllocOp>();
      alloc && alloc.getAlignment() &&
      *alloc.getAlignment() % registerBytes == 0 &&
      !ShapedType::isDynamic(offset)) {
    knownHead = (lanes - offset % lanes) % lanes;
    if (*knownHead == 0)
      return op;
    if (!ShapedType::isDynamic(size) && *knownHead < size)
      staticHead = knownHead;
  }
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto tiling = cast<TilingInterface>(op.getOperation());
  SmallVector<Range> domain = tiling.getIterationDomain(rewriter);
  Value start = getValueOrCreateConstantIndexOp(rewriter, loc,
                                                domain.front().offset);
  Value total = getValueOrCreateConstantIndexOp(rewriter, loc,
                                                domain.front().size);
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, value);
  };
  Value head;
  if (knownHead) {
    head = constant(*knownHead);
  } else {
    // (registerBytes - address % registerBytes) % registerBytes / bytes,
    // the address that of the output's first element.
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(
        rewriter, loc, output->get());
    auto metadata = memref::ExtractStridedMetadataOp::create(
        rewriter, loc, output->get());
    Value address = arith::AddIOp::create(
        rewriter, loc, base,
        arith::MulIOp::create(rewriter, loc, metadata.getOffset(),
                              constant(bytes)));
    Value reg = constant(registerBytes);
    Value past = arith::RemUIOp::create(rewriter, loc, address, reg);
    Value gap = arith::RemUIOp::create(
        rewriter, loc, arith::SubIOp::create(rewriter, loc, reg, past), reg);
    head = arith::DivUIOp::create(rewriter, loc, gap, constant(bytes));
  }
  // (A static head is shorter than the loop: its tiles are static.)
  if (!staticHead)
    head = arith::MinUIOp::create(rewriter, loc, head, total);
  // A short loop of dynamic length is not split: the head's branches
  // would cost more than its aligned stores save (9-33 f64: 20-25%).
  if (ShapedType::isDynamic(size)) {
    Value longEnough = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::sge, total, constant(shortest));
    head = arith::SelectOp::create(rewriter, loc, longEnough, head,
                                   constant(0));
  }
  OpFoldResult headSize = head;
  if (staticHead)
    headSize = rewriter.getIndexAttr(*staticHead);
  FailureOr<TilingResult> first = tiling.getTiledImplementation(
      rewriter, {OpFoldResult(start)}, {headSize});
  if (failed(first) || first->tiledOps.size() != 1)
    return op;
  FailureOr<TilingResult> rest = tiling.getTiledImplementation(
      rewriter,
      {OpFoldResult(arith::AddIOp::create(rewriter, loc, start, head))},
      {OpFoldResult(arith::SubIOp::create(rewriter, loc, total, head))});
  if (failed(rest) || rest->tiledOps.size() != 1) {
    rewriter.eraseOp(first->tiledOps.front());
    return op;
  }
  rewriter.eraseOp(op);
  splitRemainder(rewriter, cast<linalg::LinalgOp>(first->tiledOps.front()),
                 lanes, marker);
  return cast<linalg::LinalgOp>(rest->tiledOps.front());
}

/// Tiles `op` as `plan` says and peels the tile loops whose trip count the
/// tile may not divide. Returns the tiled op of the main (unpeeled) loops.
/// With `parallelMarker`, the outermost tile loop is marked with it when its
/// iterations write disjoint tiles (see writesDisjointSlices).
static FailureOr<linalg::LinalgOp> tileAndPeel(RewriterBase &rewriter,
                                               linalg::LinalgOp op,
                                               const TilePlan &plan,
                                               StringAttr marker,
                                               StringAttr reductionMarker,
                                               StringAttr parallelMarker) {
  // The tile loops: a contraction's in the order (batch, wide, narrow,
  // reduction), so that the strip of the wide operand a wide tile reads
  // stays in cache while the narrow tiles run over it (a 1024 x 16 f64
  // strip is 128 KB); the op's own dimensions stay (batch, narrow, wide,
  // reduction), the form of the outer-product lowering.
  SmallVector<int64_t> order = plan.interchange;
  if (order.empty())
    order = llvm::to_vector(llvm::seq<int64_t>(0, op.getNumLoops()));
  if (plan.contraction && order.size() >= plan.numBatch + 2)
    std::swap(order[plan.numBatch], order[plan.numBatch + 1]);
  // Only dimensions with a tile size have a loop.
  auto outermost =
      llvm::find_if(order, [&](int64_t dim) { return plan.sizes[dim] != 0; });
  bool shareable = parallelMarker && outermost != order.end() &&
                   writesDisjointSlices(op, *outermost);
  FailureOr<scf::SCFTilingResult> tiled =
      tileInLoops(rewriter, op, plan.sizes, order);
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return failure();
  // The tile has the op's loops and body.
  auto tile = cast<linalg::LinalgOp>(tiled->tiledOps.front());
  // Peeling clones the tile into the remainder loops: all copies are marked
  // (true for a contraction proper, which vectorizes into vector.contract).
  tiled->tiledOps.front()->setAttr(marker, rewriter.getBoolAttr(plan.named));
  // The innermost tile loops over reduction dimensions carry the output
  // tile (a contraction's accumulators, a reduction's partial result).
  SmallVector<utils::IteratorType> iterators = tile.getIteratorTypesArray();
  if (tiled->loops.size() == order.size()) {
    for (int64_t i = order.size() - 1;
         i >= 0 && iterators[order[i]] == utils::IteratorType::reduction; --i)
      tiled->loops[i]->setAttr(reductionMarker, rewriter.getUnitAttr());
  }
  // The outermost tile loop, when it runs over a parallel dimension, writes
  // disjoint tiles of the outputs in its iterations: ad-parallelize may
  // share them among threads. (Only dimensions with a tile size have a
  // loop.)
  if (shareable && isa<scf::ForOp>(tiled->loops.front().getOperation()))
    tiled->loops.front()->setAttr(parallelMarker, rewriter.getUnitAttr());
  // The remainder of a vector loop along a parallel innermost dimension
  // runs in vectors of half the width, and so on down to two lanes: a
  // vector of 14 f64 with 4 lanes takes 3 vectors of 4 and one of 2, not
  // two scalar elements (each a libm call when the body computes tanh).
  unsigned numLoops = tile.getNumLoops();
  unsigned last = numLoops - 1;
  int64_t width = plan.sizes[last];
  std::optional<unsigned> vectorLoop;
  if (!plan.contraction && width >= 4 && width % 2 == 0 &&
      iterators[last] == utils::IteratorType::parallel) {
    unsigned position = 0;
    for (int64_t dim : order) {
      if (plan.sizes[dim] == 0)
        continue;
      if (dim == last)
        vectorLoop = position;
      ++position;
    }
  }
  for (auto [position, loop] : llvm::enumerate(tiled->loops)) {
    auto forOp = dyn_cast<scf::ForOp>(loop.getOperation());
    if (!forOp)
      continue;
    scf::ForOp partial;
    if (failed(scf::peelForLoopAndSimplifyBounds(rewriter, forOp, partial)) ||
        !partial || vectorLoop != position)
      continue;
    SmallVector<linalg::LinalgOp> remainders;
    partial->walk([&](linalg::LinalgOp remainder) {
      if (remainder->hasAttr(marker))
        remainders.push_back(remainder);
    });
    for (linalg::LinalgOp remainder : remainders)
      splitRemainder(rewriter, remainder, width, marker);
  }
  return cast<linalg::LinalgOp>(tiled->tiledOps.front());
}

/// Tiles the transposed copy of a packed input in 8 x 8 tiles: read as
/// rows, transposed in registers, written as rows.
static void tileTransposedCopy(RewriterBase &rewriter, linalg::TransposeOp copy,
                               unsigned vectorBits, StringAttr marker,
                               StringAttr reductionMarker) {
  std::optional<TilePlan> plan = planTiles(copy, vectorBits);
  unsigned n = copy.getNumLoops();
  if (!plan || n < 2)
    return;
  SmallVector<int64_t> ranges = copy.getStaticLoopRanges();
  plan->sizes[n - 2] = clampTile(8, ranges[n - 2]);
  plan->sizes[n - 1] = clampTile(8, ranges[n - 1]);
  (void)tileAndPeel(rewriter, copy, *plan, marker, reductionMarker,
                    /*parallelMarker=*/{});
}

static bool disjointRoots(Value a, Value b);

/// The buffers the strips of packed contractions are copied to: one per
/// function and buffer type, on the heap (a buffer on the stack per frame
/// made recursive functions overflow it at a tenth of the depth).
using StripBuffers = llvm::DenseMap<std::pair<Operation *, Type>, Value>;

/// The wide input of a contraction whose strips packWideStrips copies, and
/// whether it is read transposed.
struct StripInput {
  unsigned number;
  bool transposed;
};

/// The wide input of `op` (planned by `plan`) whose strips packWideStrips
/// may copy, before or after blockForCache (the bound on the reduction's
/// steps is packWideStrips's own), or nullopt: a contraction with one
/// reduction, no batch, at least 32 rows and 16 steps; its wide input a
/// plain memref read as (reduction, wide), or, by a generic, as (wide,
/// reduction) (`dY W^T`, the adjoint of a product's input: each strip is
/// copied transposed instead of all of W once, which was written to a
/// buffer of its own and read back) when its rows are one cache block
/// (static, at most kBlockRows register tiles: each block of rows copies
/// the strips again, a transpose per block, where a whole transposed copy
/// is made once and its strips copied as they are); not where the output may be that
/// input (a copy taken before the op writes its output would read stale
/// values), nor where threads could share the buffer (a loop of this op
/// that ad-parallelize shares out, a parallel region of the user's around
/// it).
static std::optional<StripInput> stripInput(linalg::LinalgOp op,
                                            const TilePlan &plan,
                                            StringAttr parallelMarker) {
  if (plan.numBatch != 0 || op.getNumDpsInits() != 1 ||
      op.getNumLoops() != 3)
    return std::nullopt;
  auto [narrow, wide, reduction] = contractionLoops(plan);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators[reduction] != utils::IteratorType::reduction ||
      iterators[narrow] != utils::IteratorType::parallel ||
      iterators[wide] != utils::IteratorType::parallel)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto atLeast = [&](unsigned dim, int64_t size) {
    return ShapedType::isDynamic(ranges[dim]) || ranges[dim] >= size;
  };
  if (!atLeast(narrow, 32) || !atLeast(reduction, 16) ||
      !atLeast(wide, plan.sizes[wide]))
    return std::nullopt;
  MLIRContext *context = op.getContext();
  AffineExpr reductionExpr = getAffineDimExpr(reduction, context);
  AffineExpr wideExpr = getAffineDimExpr(wide, context);
  std::optional<StripInput> found;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map.getNumResults() != 2 || !isa<MemRefType>(input->get().getType()))
      continue;
    if (map.getResult(0) == reductionExpr && map.getResult(1) == wideExpr)
      found = StripInput{input->getOperandNumber(), false};
    else if (map.getResult(0) == wideExpr &&
             map.getResult(1) == reductionExpr &&
             isa<linalg::GenericOp>(op.getOperation()) && !found &&
             !ShapedType::isDynamic(ranges[narrow]) &&
             ranges[narrow] <= kBlockRows * plan.sizes[narrow])
      found = StripInput{input->getOperandNumber(), true};
  }
  if (!found)
    return std::nullopt;
  Value input = op->getOperand(found->number);
  if (!cast<MemRefType>(input.getType()).getElementType().isIntOrFloat() ||
      !disjointRoots(rootBuffer(input),
                     rootBuffer(op.getDpsInitOperand(0)->get())) ||
      (parallelMarker && writesDisjointSlices(op, wide)))
    return std::nullopt;
  auto function = op->getParentOfType<func::FuncOp>();
  for (Operation *parent = op->getParentOp(); parent != function;
       parent = parent->getParentOp())
    if (!parent || !isa<scf::ForOp, scf::IfOp, scf::WhileOp>(parent))
      return std::nullopt;
  return found;
}

/// Tiles a contraction (one reduction dimension, no batch, at most
/// kBlockSteps reduction steps: blocked first) by strips of its wide
/// dimension, each as wide as a register tile, and gives each strip a
/// contiguous copy of the wide input's part (steps x width; see
/// stripInput): read at the stride of its rows, a strip of a matrix whose
/// rows are a power-of-two length maps every line onto one L1 set (a
/// 1024^3 f64 matmul ran at 24 GFLOP/s, 34 at 1000 or 1032). Only where
/// the copy serves enough register tiles (32 rows or more) and steps (16 or
/// more). The copy goes to the function's buffer of its type (`buffers`:
/// the strips, and the packed ops, run one after the other), allocated when
/// the function starts and freed where it returns. Tiles and peels the
/// strips' ops with `plan`; returns false (nothing changed) when it does
/// not apply.
static bool packWideStrips(RewriterBase &rewriter, linalg::LinalgOp op,
                           const TilePlan &plan, unsigned vectorBits,
                           StringAttr marker, StringAttr reductionMarker,
                           StringAttr parallelMarker, StripBuffers &buffers) {
  std::optional<StripInput> stripped = stripInput(op, plan, parallelMarker);
  if (!stripped)
    return false;
  ContractionLoops loops = contractionLoops(plan);
  unsigned wide = loops.wide;
  int64_t steps = op.getStaticLoopRanges()[loops.reduction];
  if (!ShapedType::isDynamic(steps) && steps > kBlockSteps)
    return false;
  int64_t width = plan.sizes[wide];
  unsigned wideInput = stripped->number;
  auto inputType = cast<MemRefType>(op->getOperand(wideInput).getType());
  auto function = op->getParentOfType<func::FuncOp>();

  // Strips of the wide dimension.
  SmallVector<int64_t> sizes(3, 0);
  sizes[wide] = width;
  FailureOr<scf::SCFTilingResult> tiled = tileInLoops(rewriter, op, sizes);
  if (failed(tiled))
    return false;
  // In a form other than one loop around one op, the loops stay scalar.
  if (tiled->tiledOps.size() != 1 || tiled->loops.size() != 1 ||
      !isa<scf::ForOp>(tiled->loops.front().getOperation()))
    return true;
  auto strips = cast<scf::ForOp>(tiled->loops.front().getOperation());
  auto strip = cast<linalg::LinalgOp>(tiled->tiledOps.front());
  strip->setAttr("__ad_vectorize_strip__", rewriter.getUnitAttr());
  scf::ForOp partial;
  (void)scf::peelForLoopAndSimplifyBounds(rewriter, strips, partial);

  // The whole strip's op (in `strips`) reads a copy; a partial strip
  // (narrower than a tile) reads the input where it is.
  SmallVector<linalg::LinalgOp> tiles;
  for (scf::ForOp loop : {strips, partial}) {
    if (!loop)
      continue;
    loop->walk([&](linalg::LinalgOp tile) {
      if (tile->hasAttr("__ad_vectorize_strip__"))
        tiles.push_back(tile);
    });
  }
  for (linalg::LinalgOp tile : tiles) {
    tile->removeAttr("__ad_vectorize_strip__");
    // A partial strip of a plain input is read where it is, rows of
    // contiguous elements; of a transposed one, it is copied too (read in
    // place it is a scalar loop across the rows of W, which ran 2-5x slower
    // than the whole transposed copy it replaces where the wide dimension
    // is less than a strip or not a multiple of one).
    bool whole = tile->getParentOp() == strips.getOperation();
    if (!whole && !stripped->transposed) {
      (void)tileAndPeel(rewriter, tile, plan, marker, reductionMarker,
                        /*parallelMarker=*/{});
      continue;
    }
    Location loc = tile.getLoc();
    Value source = tile->getOperand(wideInput);
    auto bufferType =
        MemRefType::get({kBlockSteps, width}, inputType.getElementType());
    Value &buffer = buffers[{function.getOperation(), bufferType}];
    if (!buffer) {
      rewriter.setInsertionPointToStart(&function.getBody().front());
      buffer = memref::AllocOp::create(rewriter, loc, bufferType,
                                       rewriter.getI64IntegerAttr(64));
      function.walk([&](func::ReturnOp ret) {
        rewriter.setInsertionPoint(ret);
        memref::DeallocOp::create(rewriter, loc, buffer);
      });
    }
    rewriter.setInsertionPoint(tile);
    Value steps = memref::DimOp::create(rewriter, loc, source,
                                        stripped->transposed ? 1 : 0);
    SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
    OpFoldResult columns = rewriter.getIndexAttr(width);
    if (!whole)
      columns = memref::DimOp::create(rewriter, loc, source, 0).getResult();
    SmallVector<OpFoldResult> viewSizes = {steps, columns};
    SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
    Value view = memref::SubViewOp::create(rewriter, loc, buffer, offsets,
                                           viewSizes, strides);
    if (stripped->transposed) {
      // The strip read as (reduction, wide) from its transposed copy.
      linalg::TransposeOp copy = readTransposed(
          rewriter, cast<linalg::GenericOp>(tile.getOperation()), wideInput,
          {1, 0}, view);
      tileTransposedCopy(rewriter, copy, vectorBits, marker, reductionMarker);
    } else {
      auto copy = linalg::CopyOp::create(rewriter, loc, source, view);
      tile->setOperand(wideInput, view);
      if (std::optional<TilePlan> copyPlan = planTiles(copy, vectorBits))
        (void)tileAndPeel(rewriter, copy, *copyPlan, marker, reductionMarker,
                          /*parallelMarker=*/{});
    }
    (void)tileAndPeel(rewriter, tile, plan, marker, reductionMarker,
                      /*parallelMarker=*/{});
  }
  return true;
}

/// Whether two root buffers cannot overlap. Only what is known is
/// disjoint: a fresh allocation and another allocation, a function
/// argument or a global; two different globals. Anything else (two function
/// arguments, which may be the same buffer; a buffer chosen by a select, a
/// branch or a call) may be any buffer.
static bool disjointRoots(Value a, Value b) {
  enum class Kind { Allocation, Argument, Global, Unknown };
  auto kind = [](Value v) {
    Operation *def = v.getDefiningOp();
    if (isa_and_nonnull<memref::AllocOp, memref::AllocaOp>(def))
      return Kind::Allocation;
    if (isa_and_nonnull<memref::GetGlobalOp>(def))
      return Kind::Global;
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getOwner()->isEntryBlock() &&
        isa<FunctionOpInterface>(arg.getOwner()->getParentOp()))
      return Kind::Argument;
    return Kind::Unknown;
  };
  if (a == b)
    return false;
  Kind ka = kind(a), kb = kind(b);
  if (ka == Kind::Unknown || kb == Kind::Unknown)
    return false;
  if (ka == Kind::Allocation || kb == Kind::Allocation)
    return true;
  if (ka == Kind::Global && kb == Kind::Global)
    return a.getDefiningOp<memref::GetGlobalOp>().getName() !=
           b.getDefiningOp<memref::GetGlobalOp>().getName();
  return false;
}

/// The root buffers `value` may be: a loop's iter_arg (or result) is its
/// initial value or any value the loop yields, followed through views and
/// further loops. Another block argument is itself.
static void possibleRoots(Value value, llvm::SetVector<Value> &roots,
                          llvm::DenseSet<Value> &visited) {
  value = rootBuffer(value);
  if (!visited.insert(value).second)
    return;
  scf::ForOp loop;
  unsigned position = 0;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    if (loop && arg.getArgNumber() >= loop.getNumInductionVars())
      position = arg.getArgNumber() - loop.getNumInductionVars();
    else
      loop = nullptr;
  } else if ((loop = value.getDefiningOp<scf::ForOp>())) {
    position = cast<OpResult>(value).getResultNumber();
  }
  if (!loop) {
    roots.insert(value);
    return;
  }
  possibleRoots(loop.getInitArgs()[position], roots, visited);
  possibleRoots(loop.getYieldedValues()[position], roots, visited);
}

/// Whether two buffers cannot overlap: none of the root buffers one may be
/// can overlap any of those the other may be.
static bool disjointBuffers(Value a, Value b) {
  llvm::SetVector<Value> rootsA, rootsB;
  llvm::DenseSet<Value> visitedA, visitedB;
  possibleRoots(a, rootsA, visitedA);
  possibleRoots(b, rootsB, visitedB);
  for (Value x : rootsA)
    for (Value y : rootsB)
      if (!disjointRoots(x, y))
        return false;
  return true;
}

/// Keeps the output tile of a vectorized contraction in registers across
/// the reduction loop `loop`: a transfer_read and a transfer_write of the
/// same indices of a buffer that nothing else in the loop touches, and that
/// no other buffer the loop reads can overlap, become a read before the
/// loop, a value carried by the loop and a write after it. (Upstream
/// `hoistRedundantVectorTransfers` refuses any buffer that has a subview
/// anywhere, which the peeled remainder tiles always have.)
static FailureOr<scf::ForOp> hoistOutputTile(RewriterBase &rewriter,
                                             scf::ForOp loop) {
  moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
  Block *body = loop.getBody();
  for (auto write : body->getOps<vector::TransferWriteOp>()) {
    Value base = write.getBase();
    if (!isa<MemRefType>(base.getType()) || !loop.isDefinedOutsideOfLoop(base))
      continue;
    vector::TransferReadOp read;
    for (auto candidate : body->getOps<vector::TransferReadOp>()) {
      if (candidate.getBase() == base &&
          candidate.getIndices() == write.getIndices() &&
          candidate.getVectorType() == write.getVectorType() &&
          candidate.getPermutationMap() == write.getPermutationMap() &&
          !candidate.getMask() && !write.getMask() &&
          candidate->isBeforeInBlock(write))
        read = candidate;
    }
    if (!read || !llvm::all_of(read->getOperands(), [&](Value v) {
          return loop.isDefinedOutsideOfLoop(v);
        }))
      continue;
    // Nothing else in the loop touches the tile's buffer, and no buffer
    // the loop reads or writes may overlap it.
    Value root = rootBuffer(base);
    bool safe = true;
    loop.getBody()->walk([&](Operation *op) {
      if (op == read || op == write)
        return;
      for (Value operand : op->getOperands())
        if (isa<BaseMemRefType>(operand.getType()) &&
            !disjointBuffers(root, rootBuffer(operand)))
          safe = false;
    });
    if (!safe)
      continue;
    rewriter.moveOpBefore(read, loop);
    rewriter.moveOpAfter(write, loop);
    NewYieldValuesFn yield = [&](OpBuilder &, Location,
                                 ArrayRef<BlockArgument>) {
      return SmallVector<Value>{write.getVector()};
    };
    FailureOr<LoopLikeOpInterface> newLoop =
        cast<LoopLikeOpInterface>(loop.getOperation())
            .replaceWithAdditionalYields(rewriter, read.getVector(),
                                         /*replaceInitOperandUsesInLoop=*/true,
                                         yield);
    if (failed(newLoop))
      return failure();
    rewriter.modifyOpInPlace(write, [&] {
      write.getValueToStoreMutable().assign(
          newLoop->getOperation()->getResults().back());
    });
    return cast<scf::ForOp>(newLoop->getOperation());
  }
  return failure();
}

/// The value that leaves any element unchanged when combined with it by
/// `kind` (NaN for maxnumf/minnumf, which ignore NaN; -0.0 for a float sum,
/// which keeps the sign of a sum of -0.0), or null for kinds not handled.
static TypedAttr neutralElement(vector::CombiningKind kind, Type type) {
  using vector::CombiningKind;
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    auto attr = [&](const APFloat &value) {
      return FloatAttr::get(floatType, value);
    };
    switch (kind) {
    case CombiningKind::ADD:
      return attr(APFloat::getZero(sem, /*Negative=*/true));
    case CombiningKind::MUL:
      return attr(APFloat::getOne(sem));
    case CombiningKind::MAXIMUMF:
      return attr(APFloat::getInf(sem, /*Negative=*/true));
    case CombiningKind::MINIMUMF:
      return attr(APFloat::getInf(sem, /*Negative=*/false));
    case CombiningKind::MAXNUMF:
    case CombiningKind::MINNUMF:
      return attr(APFloat::getQNaN(sem));
    default:
      return nullptr;
    }
  }
  if (isa<IntegerType>(type)) {
    if (kind == CombiningKind::ADD)
      return IntegerAttr::get(type, 0);
    if (kind == CombiningKind::MUL)
      return IntegerAttr::get(type, 1);
  }
  return nullptr;
}

/// Whether `op` only changes the shape of one vector (or takes the element
/// of a 0-d vector, or makes one): what vectorization puts between a
/// carried accumulator and the reduction that reads and updates it.
static bool isShapeAdaptor(Operation *op) {
  if (isa<vector::ShapeCastOp>(op))
    return true;
  if (auto extract = dyn_cast<vector::ExtractOp>(op))
    return extract.getSourceVectorType().getNumElements() == 1 &&
           extract.getDynamicPosition().empty();
  if (auto broadcast = dyn_cast<vector::BroadcastOp>(op))
    return cast<VectorType>(broadcast.getType()).getNumElements() == 1;
  return false;
}

/// Reassociates the reductions carried by `loop`: a value the loop carries
/// only into a `vector.multi_reduction` (through at most one shape adaptor)
/// whose result it carries on becomes, instead, a whole vector of partial
/// results combined elementwise in each iteration and reduced once after
/// the loop. Without this, each iteration reduces its vector across lanes,
/// one iteration after the other. Float sums and products are then computed
/// in a different order (max and min are not changed).
static void accumulateInVectors(RewriterBase &rewriter, scf::ForOp loop) {
  for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i) {
    BlockArgument carried = loop.getRegionIterArgs()[i];
    if (!carried.hasOneUse())
      continue;
    Operation *accIn = *carried.getUsers().begin();
    Value acc = carried;
    if (isShapeAdaptor(accIn) && accIn->getResult(0).hasOneUse()) {
      acc = accIn->getResult(0);
    } else {
      accIn = nullptr;
    }
    auto reduction =
        dyn_cast<vector::MultiDimReductionOp>(*acc.getUsers().begin());
    if (!reduction || reduction.getAcc() != acc ||
        reduction->getParentOp() != loop.getOperation() ||
        !reduction.getResult().hasOneUse())
      continue;
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    Operation *accOut = *reduction.getResult().getUsers().begin();
    if (accOut == yield.getOperation()) {
      accOut = nullptr;
      if (yield.getOperand(i) != reduction.getResult())
        continue;
    } else if (!isShapeAdaptor(accOut) ||
               !accOut->getResult(0).hasOneUse() ||
               yield.getOperand(i) != accOut->getResult(0)) {
      continue;
    }
    VectorType sourceType = reduction.getSourceVectorType();
    TypedAttr neutral =
        neutralElement(reduction.getKind(), sourceType.getElementType());
    if (!neutral || sourceType.isScalable())
      continue;

    rewriter.setInsertionPoint(loop);
    Value init = arith::ConstantOp::create(
        rewriter, loop.getLoc(), sourceType,
        DenseElementsAttr::get(sourceType, neutral));
    Value source = reduction.getSource();
    vector::CombiningKind kind = reduction.getKind();
    SmallVector<bool> reducedDims = reduction.getReductionMask();
    NewYieldValuesFn combine = [&](OpBuilder &b, Location loc,
                                   ArrayRef<BlockArgument> partial) {
      return SmallVector<Value>{
          vector::makeArithReduction(b, loc, kind, partial[0], source)};
    };
    FailureOr<LoopLikeOpInterface> grown =
        cast<LoopLikeOpInterface>(loop.getOperation())
            .replaceWithAdditionalYields(
                rewriter, init, /*replaceInitOperandUsesInLoop=*/false,
                combine);
    if (failed(grown))
      return;
    auto newLoop = cast<scf::ForOp>(grown->getOperation());
    // The carried value passes through the loop unchanged ...
    auto newYield = cast<scf::YieldOp>(newLoop.getBody()->getTerminator());
    rewriter.modifyOpInPlace(newYield, [&] {
      newYield->setOperand(i, newLoop.getRegionIterArgs()[i]);
    });
    // ... and the partial results are reduced into it once, after.
    rewriter.setInsertionPointAfter(newLoop);
    Value result = newLoop.getResult(i);
    Value total = result;
    Operation *first = nullptr;
    if (accIn) {
      first = rewriter.clone(*accIn);
      first->setOperand(0, total);
      total = first->getResult(0);
    }
    auto reduce = vector::MultiDimReductionOp::create(
        rewriter, newLoop.getLoc(), newLoop.getResults().back(), total,
        reducedDims, kind);
    if (!first)
      first = reduce;
    total = reduce.getResult();
    if (accOut) {
      Operation *out = rewriter.clone(*accOut);
      out->setOperand(0, total);
      total = out->getResult(0);
    }
    rewriter.replaceAllUsesExcept(result, total, first);
    if (accOut)
      rewriter.eraseOp(accOut);
    rewriter.eraseOp(reduction);
    if (accIn)
      rewriter.eraseOp(accIn);
    loop = newLoop;
  }
}

/// Whether every operand of `op` has a static shape.
static bool hasStaticShapes(linalg::LinalgOp op) {
  return llvm::all_of(op->getOperandTypes(), [](Type type) {
    auto shaped = dyn_cast<ShapedType>(type);
    return !shaped || shaped.hasStaticShape();
  });
}

/// Whether upstream vectorization (LLVM 22) computes `op`'s reductions
/// right. It does not when
///  - a reduced value does not vary along the loops it is reduced over
///    (`acc + 1.0`, counting; a value of the parallel loops only): it is
///    combined once per vector instead of once per element;
///  - two outputs are reduced over different loops (`sum_i` and
///    `sum_ij` of one body): it makes an invalid vector.multi_reduction.
/// Such ops stay scalar loops.
static bool reductionsVectorizable(linalg::LinalgOp op) {
  if (op.getNumReductionLoops() == 0)
    return true;
  Block *body = op.getBlock();
  std::optional<llvm::SmallBitVector> reducedLoops;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    llvm::SmallBitVector reduced = loopsOf(op.getMatchingIndexingMap(&init));
    reduced.flip();
    if (reduced.none())
      continue;
    if (reducedLoops && *reducedLoops != reduced)
      return false;
    reducedLoops = reduced;
    // The reduced value must depend on an input read along a reduced loop,
    // or on the index of one.
    Value yielded = body->getTerminator()->getOperand(
        init.getOperandNumber() - op.getNumDpsInputs());
    SmallVector<Value> worklist{yielded};
    llvm::DenseSet<Value> seen;
    bool varies = false;
    while (!worklist.empty() && !varies) {
      Value value = worklist.pop_back_val();
      if (!seen.insert(value).second)
        continue;
      if (auto arg = dyn_cast<BlockArgument>(value)) {
        if (arg.getOwner() != body)
          continue;
        OpOperand *operand = op.getMatchingOpOperand(arg);
        varies = op.isDpsInput(operand) &&
                 (loopsOf(op.getMatchingIndexingMap(operand)) & reduced).any();
        continue;
      }
      Operation *def = value.getDefiningOp();
      if (!def || def->getBlock() != body)
        continue;
      if (auto index = dyn_cast<linalg::IndexOp>(def)) {
        varies = reduced.test(index.getDim());
        continue;
      }
      for (Value operand : def->getOperands())
        worklist.push_back(operand);
      def->walk([&](Operation *nested) {
        llvm::append_range(worklist, nested->getOperands());
      });
    }
    if (!varies)
      return false;
  }
  return true;
}

/// Marks the loops of `op` that index every output parallel and the others
/// reductions. What the iterator types say is only metadata (the op is the
/// loop nest of its body either way), and upstream vectorization (LLVM 22)
/// makes invalid IR from a loop that indexes every output but is marked a
/// reduction (as a user or an adjoint may write).
static void correctIteratorTypes(RewriterBase &rewriter, linalg::GenericOp op) {
  if (op.getNumDpsInits() == 0)
    return;
  SmallVector<AffineMap> outputMaps;
  for (OpOperand &init : op.getDpsInitsMutable())
    outputMaps.push_back(op.getMatchingIndexingMap(&init));
  SmallVector<Attribute> iterators;
  for (utils::IteratorType type :
       ad::iteratorTypesOfOutputs(op.getNumLoops(), outputMaps))
    iterators.push_back(linalg::IteratorTypeAttr::get(op.getContext(), type));
  ArrayAttr corrected = rewriter.getArrayAttr(iterators);
  if (corrected != op.getIteratorTypes())
    rewriter.modifyOpInPlace(op, [&] { op.setIteratorTypesAttr(corrected); });
}

/// Folds into the tile `op` the memref.casts that make its static views
/// dynamic, when every operand is then static. Canonicalization gives a
/// peeled main tile its static views behind such casts (to the tile's
/// dynamic type), which linalg ops with a folder fold away; linalg.map,
/// linalg.reduce and linalg.broadcast have none (they need their operands'
/// shapes to be equal, which a fold of some of them breaks), and their tiles
/// stayed dynamic, so scalar: an f32 row maximum over 1000 columns (tiles of
/// 16, a remainder of 8) ran one element at a time.
static void foldStaticViewCasts(linalg::LinalgOp op) {
  SmallVector<std::pair<OpOperand *, Value>> sources;
  for (OpOperand &operand : op->getOpOperands()) {
    auto cast = operand.get().getDefiningOp<memref::CastOp>();
    if (cast && memref::CastOp::canFoldIntoConsumerOp(cast))
      sources.push_back({&operand, cast.getSource()});
  }
  if (sources.empty())
    return;
  auto isStatic = [](Value value) {
    auto type = dyn_cast<ShapedType>(value.getType());
    return !type || type.hasStaticShape();
  };
  for (OpOperand &operand : op->getOpOperands()) {
    auto it = llvm::find_if(sources, [&](auto &source) {
      return source.first == &operand;
    });
    if (!isStatic(it != sources.end() ? it->second : operand.get()))
      return;
  }
  for (auto [operand, source] : sources)
    operand->set(source);
}

/// Applies `populate`'s patterns to `root` until nothing changes.
static void applyPatterns(Operation *root,
                          function_ref<void(RewritePatternSet &)> populate) {
  RewritePatternSet patterns(root->getContext());
  populate(patterns);
  (void)applyPatternsGreedily(root, std::move(patterns));
}

/// Puts the operand of a `vector.contract` indexed by the output's outer
/// dimension first, which the outer-product lowering needs to keep the
/// output tile's rows as they are (else it transposes the tile at every
/// step). The product commutes, so the result is the same.
struct ContractNarrowOperandFirst : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getKind() != vector::CombiningKind::ADD ||
        isa<vector::MaskOp>(op->getParentOp()))
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    AffineMap output = maps[2];
    if (output.getNumResults() < 2)
      return failure();
    AffineExpr outer = output.getResult(output.getNumResults() - 2);
    if (maps[0].getResultPosition(outer) || !maps[1].getResultPosition(outer))
      return failure();
    std::swap(maps[0], maps[1]);
    rewriter.replaceOpWithNewOp<vector::ContractionOp>(
        op, op.getRhs(), op.getLhs(), op.getAcc(),
        rewriter.getAffineMapArrayAttr(maps), op.getIteratorTypes(),
        op.getKind());
    return success();
  }
};

/// A 2-D read that broadcasts along its minor dimension, as the narrow
/// dimension's input of an outer-product tile is read (`p[i + r, l]` for
/// every element of row r): one scalar load and splat per row. Upstream
/// lowers a minor broadcast element by element.
struct MinorBroadcastRead : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    VectorType type = read.getVectorType();
    AffineMap map = read.getPermutationMap();
    unsigned rank = type.getRank();
    auto memrefType = dyn_cast<MemRefType>(read.getBase().getType());
    if (rank < 2 || type.isScalable() || read.getMask() || !memrefType ||
        memrefType.getElementType() != type.getElementType() ||
        !llvm::all_of(read.getInBoundsValues(), [](bool b) { return b; }) ||
        map.getNumResults() != rank)
      return failure();
    // Leading unit dimensions (a batch dimension of the tile) are allowed.
    for (unsigned i = 0; i + 2 < rank; ++i)
      if (type.getDimSize(i) != 1)
        return failure();
    auto row = dyn_cast<AffineDimExpr>(map.getResult(rank - 2));
    auto minor = dyn_cast<AffineConstantExpr>(map.getResult(rank - 1));
    if (!row || !minor || minor.getValue() != 0)
      return failure();
    Location loc = read.getLoc();
    int64_t rows = type.getDimSize(rank - 2);
    auto rowType =
        VectorType::get({type.getDimSize(rank - 1)}, type.getElementType());
    auto tileType = VectorType::get({rows, type.getDimSize(rank - 1)},
                                    type.getElementType());
    Value result = ub::PoisonOp::create(rewriter, loc, tileType);
    SmallVector<Value> indices(read.getIndices());
    Value first = indices[row.getPosition()];
    for (int64_t r = 0; r < rows; ++r) {
      Value offset = arith::ConstantIndexOp::create(rewriter, loc, r);
      indices[row.getPosition()] =
          arith::AddIOp::create(rewriter, loc, first, offset);
      Value scalar =
          memref::LoadOp::create(rewriter, loc, read.getBase(), indices);
      Value splat = vector::BroadcastOp::create(rewriter, loc, rowType, scalar);
      result = vector::InsertOp::create(rewriter, loc, splat, result,
                                        ArrayRef<int64_t>{r});
    }
    if (rank > 2)
      result = vector::ShapeCastOp::create(rewriter, loc, type, result);
    rewriter.replaceOp(read, result);
    return success();
  }
};

/// Lowers the vector ops vectorization produced to what
/// convert-vector-to-llvm takes: contractions to FMAs of outer products,
/// n-D transfers to unrolled 1-D loads and stores.
static void lowerVectorOps(Operation *root, bool reassociate) {
  // A contraction vectorized from a generic op is a product of broadcasts
  // (reads with broadcasting maps) reduced along k: folded back into one
  // vector.contract.
  applyPatterns(root, [](RewritePatternSet &patterns) {
    patterns.add<MinorBroadcastRead>(patterns.getContext(), /*benefit=*/2);
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  });
  applyPatterns(root, [](RewritePatternSet &patterns) {
    vector::populateVectorReductionToContractPatterns(patterns);
    patterns.add<ContractNarrowOperandFirst>(patterns.getContext());
  });
  // What is left of vector.multi_reduction are reductions of other ops.
  if (reassociate) {
    IRRewriter rewriter(root->getContext());
    SmallVector<scf::ForOp> loops;
    root->walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      accumulateInVectors(rewriter, loop);
  }
  applyPatterns(root, [](RewritePatternSet &patterns) {
    vector::populateVectorContractLoweringPatterns(
        patterns, vector::VectorContractLowering::OuterProduct);
    vector::populateVectorOuterProductLoweringPatterns(patterns);
  });
  applyPatterns(root, [](RewritePatternSet &patterns) {
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  });
  applyPatterns(root, [](RewritePatternSet &patterns) {
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerParallel);
  });
  applyPatterns(root, [](RewritePatternSet &patterns) {
    VectorTransferToSCFOptions options;
    options.enableFullUnroll();
    populateVectorToSCFConversionPatterns(patterns, options);
  });
  applyPatterns(root, [](RewritePatternSet &patterns) {
    vector::populateVectorTransferLoweringPatterns(patterns,
                                                   /*maxTransferRank=*/1);
    vector::populateVectorShapeCastLoweringPatterns(patterns);
    vector::populateVectorTransposeLoweringPatterns(
        patterns, vector::VectorTransposeLowering::Shuffle1D);
    vector::populateVectorBroadcastLoweringPatterns(patterns);
    vector::populateVectorMaskOpLoweringPatterns(patterns);
  });
}

/// Rewrites each `memref.copy` between buffers of which one is a strided
/// view (an insert_slice, a pad or a clone of a slice after bufferization)
/// into a `linalg.copy`, vectorized with the other ops. The LLVM lowering
/// turns such a copy into a call of the runtime's generic `memrefCopy`,
/// which copies one element at a time; a copy between identity-layout
/// buffers stays a `memcpy`. Only between buffers known not to overlap: a
/// vector copy of a view onto an overlapping one (a shift by one element)
/// would read elements it has already written, one vector at a time.
static void copiesToLinalg(RewriterBase &rewriter, func::FuncOp func) {
  SmallVector<memref::CopyOp> copies;
  func.walk([&](memref::CopyOp copy) {
    auto source = dyn_cast<MemRefType>(copy.getSource().getType());
    auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
    if (source && target && source.getRank() > 0 &&
        (!source.getLayout().isIdentity() ||
         !target.getLayout().isIdentity()) &&
        disjointBuffers(copy.getSource(), copy.getTarget()))
      copies.push_back(copy);
  });
  for (memref::CopyOp copy : copies) {
    rewriter.setInsertionPoint(copy);
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
  }
}

struct ADVectorizePass
    : mlir::ad::impl::ADVectorizePassBase<ADVectorizePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    unsigned bits = vectorBits ? unsigned(vectorBits) : ad::hostVectorBits();
    IRRewriter rewriter(func.getContext());

    if (elementwise)
      copiesToLinalg(rewriter, func);
    func.walk([&](linalg::GenericOp op) { correctIteratorTypes(rewriter, op); });

    // Tile first, then vectorize: peeling leaves constant tile sizes that
    // canonicalization turns into static subview types.
    SmallVector<linalg::LinalgOp> ops;
    func.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    // Named contractions whose operands are extended other than as upstream
    // vectorization of a named op extends them (an unsigned cast: its
    // vector.contract sign-extends, which gave -13 for 255 * 13 in u8; mixed
    // element types of a batch_matmul: a vector.contract nothing lowers)
    // are vectorized from their generic form, whose body says how.
    auto generalize = [&](linalg::LinalgOp &op) {
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> generic =
          linalg::generalizeNamedOp(rewriter, op);
      if (succeeded(generic))
        op = cast<linalg::LinalgOp>(generic->getOperation());
    };
    for (linalg::LinalgOp &op : ops) {
      // Convolutions tiled like contractions are tiled from their generic
      // form (upstream vectorizes only 1-D convolutions).
      if (isa<linalg::ConvolutionOpInterface>(op.getOperation())) {
        std::optional<TilePlan> plan = planTiles(op, bits);
        if (!contractions || !plan || !plan->contraction)
          continue;
        generalize(op);
        continue;
      }
      if (isa<linalg::GenericOp>(op.getOperation()) ||
          !linalg::isaContractionOpInterface(op))
        continue;
      auto castAttr = op->getAttrOfType<linalg::TypeFnAttr>("cast");
      Type element = getElementTypeOrSelf(op->getOperand(0).getType());
      bool mixed = llvm::any_of(op->getOperandTypes(), [&](Type type) {
        return getElementTypeOrSelf(type) != element;
      });
      if (!mixed && (!castAttr ||
                     castAttr.getValue() != linalg::TypeFn::cast_unsigned))
        continue;
      generalize(op);
    }
    StringAttr marker = rewriter.getStringAttr("__ad_vectorize__");
    StringAttr reductionMarker =
        rewriter.getStringAttr("__ad_vectorize_reduction__");
    StringAttr parallelMarker =
        markParallel ? rewriter.getStringAttr("ad.parallel") : StringAttr();
    StripBuffers stripBuffers;
    // A multi-output generic of contractions is planned as its parts.
    SmallVector<linalg::LinalgOp> planned;
    for (linalg::LinalgOp op : ops) {
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      SmallVector<linalg::LinalgOp> parts;
      if (generic && contractions)
        parts = splitContractions(rewriter, generic, bits, reassociate);
      if (parts.empty())
        planned.push_back(op);
      else
        llvm::append_range(planned, parts);
    }
    // A fill of a contraction's output just before it waits for the
    // contraction, which may move it into its blocks of rows; what is left
    // of such fills is tiled after the other ops.
    DenseSet<Operation *> waitingFills, movedFills;
    if (contractions)
      for (linalg::LinalgOp op : planned)
        if (std::optional<TilePlan> plan = planTiles(op, bits);
            plan && plan->contraction)
          if (Fill fill = precedingFill(op); fill.op)
            waitingFills.insert(fill.op);
    auto waiting = [&](linalg::LinalgOp op) {
      return waitingFills.contains(op);
    };
    SmallVector<linalg::LinalgOp> order;
    llvm::copy_if(planned, std::back_inserter(order), std::not_fn(waiting));
    llvm::copy_if(planned, std::back_inserter(order), waiting);
    for (linalg::LinalgOp op : order) {
      if (movedFills.contains(op))
        continue;
      std::optional<TilePlan> plan = planTiles(op, bits);
      if (!plan || (plan->contraction && !contractions) ||
          (!plan->contraction && !elementwise))
        continue;
      // The wide input with the wide dimension innermost, the narrow one
      // with the reduction innermost (whole copies, taken before the op).
      auto pack = [&](std::optional<unsigned> number, unsigned innerLoop) {
        if (!number)
          return;
        linalg::TransposeOp copy;
        FailureOr<linalg::LinalgOp> packed =
            packInput(rewriter, op, *number, innerLoop, copy);
        if (succeeded(packed)) {
          op = *packed;
          tileTransposedCopy(rewriter, copy, bits, marker, reductionMarker);
        }
      };
      if (plan->contraction) {
        ContractionLoops loops = contractionLoops(*plan);
        // A wide input whose strips are copied transposed one at a time is
        // not copied whole first.
        std::optional<StripInput> stripped =
            stripInput(op, *plan, parallelMarker);
        if (!stripped || !stripped->transposed)
          pack(plan->packOperand, loops.wide);
        pack(plan->packNarrow, loops.reduction);
      }
      // A generic contraction's loops in the order of the tile loops
      // (batch, narrow, wide, reduction): its vectorized tile then folds
      // into a vector.contract the outer-product lowering takes.
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
          generic && plan->contraction) {
        SmallVector<unsigned> order(plan->interchange.begin(),
                                    plan->interchange.end());
        FailureOr<linalg::GenericOp> interchanged =
            linalg::interchangeGenericOp(rewriter, generic, order);
        if (succeeded(interchanged)) {
          op = *interchanged;
          plan->sizes = applyPermutation(plan->sizes, plan->interchange);
          plan->interchange.clear();
        }
      }
      if (plan->contraction) {
        linalg::FillOp rowFill;
        op = blockForCache(rewriter, op, *plan, bool(parallelMarker),
                           movedFills, rowFill);
        if (rowFill && elementwise)
          if (std::optional<TilePlan> fillPlan = planTiles(rowFill, bits))
            (void)tileAndPeel(rewriter,
                              alignOutput(rewriter, rowFill, *fillPlan, bits,
                                          marker),
                              *fillPlan, marker, reductionMarker,
                              parallelMarker);
        if (!op)
          continue;
        if (packWideStrips(rewriter, op, *plan, bits, marker,
                           reductionMarker, parallelMarker, stripBuffers))
          continue;
      }
      if (!plan->contraction)
        op = alignOutput(rewriter, op, *plan, bits, marker);
      (void)tileAndPeel(rewriter, op, *plan, marker, reductionMarker,
                        parallelMarker);
    }
    applyPatterns(func, [&](RewritePatternSet &patterns) {
      MLIRContext *ctx = func.getContext();
      memref::SubViewOp::getCanonicalizationPatterns(patterns, ctx);
      affine::AffineMinOp::getCanonicalizationPatterns(patterns, ctx);
      affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
      memref::CastOp::getCanonicalizationPatterns(patterns, ctx);
      for (RegisteredOperationName name : ctx->getRegisteredOperations())
        if (name.getDialectNamespace() == "linalg")
          name.getCanonicalizationPatterns(patterns, ctx);
    });
    // Whole tiles of static shape are vectorized; partial tiles (dynamic
    // sizes bounded by the tile) stay scalar loops.
    SmallVector<std::pair<linalg::LinalgOp, bool>> tiles;
    func.walk([&](linalg::LinalgOp op) {
      if (auto contraction = op->getAttrOfType<BoolAttr>(marker)) {
        op->removeAttr(marker);
        foldStaticViewCasts(op);
        tiles.push_back({op, contraction.getValue()});
      }
    });
    for (auto [op, contraction] : tiles) {
      if (!hasStaticShapes(op))
        continue;
      // A tile of a generic tiled as a contraction runs one step of its
      // reductions: without those unit loops, its body is elementwise on
      // the output tile, which vectorizes into broadcasts of the narrow
      // dimension's inputs against vectors of the wide one's (a unit
      // dimension innermost in every vector would be lowered element by
      // element). So does a tile of vectors along a parallel loop with
      // reductions around it (a multiply-add would become a contraction
      // of unit reductions, lowered one element at a time).
      if (!contraction)
        if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
          if (FailureOr<linalg::GenericOp> dropped =
                  dropUnitReductions(rewriter, generic);
              succeeded(dropped))
            op = cast<linalg::LinalgOp>(dropped->getOperation());
      // Upstream vectorization (LLVM 22) makes `linalg.index` of the
      // innermost loop a 1-D vector even when the tile has leading unit
      // loops, and then reduces or combines it with the 2-D output into
      // invalid IR that later folds into wrong code.
      if (op.getNumLoops() > 1 && !op.getBlock()->getOps<linalg::IndexOp>().empty())
        continue;
      if (!reductionsVectorizable(op) ||
          failed(linalg::vectorizeOpPrecondition(op)))
        continue;
      rewriter.setInsertionPoint(op);
      // Contractions become vector.contract (lowered to outer products),
      // not a broadcast product followed by a reduction.
      FailureOr<linalg::VectorizationResult> result = linalg::vectorize(
          rewriter, op, /*inputVectorSizes=*/{}, /*inputScalableVecDims=*/{},
          /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
          /*assumeDynamicDimsMatchVecSizes=*/false,
          /*createNamedContraction=*/contraction);
      if (failed(result))
        continue;
      rewriter.replaceOp(op, result->replacements);
    }

    // What upstream vectorization made must be valid before anything
    // rewrites it further (a pattern would fold invalid IR into wrong code).
    if (failed(verify(func))) {
      func.emitError("internal error: vectorizing the linalg ops of this "
                     "function made invalid IR; compile with "
                     "--ad-lower-to-llvm=vectorize=false and report it");
      return signalPassFailure();
    }

    // The output tile of a contraction stays in registers across the
    // reduction loops: its read and write are hoisted out of them once they
    // address the buffer itself, not a subview, with the same index values
    // (constants deduplicated, CSE).
    applyPatterns(func, [](RewritePatternSet &patterns) {
      memref::populateFoldMemRefAliasOpPatterns(patterns);
    });
    DominanceInfo dominance(func);
    eliminateCommonSubExpressions(rewriter, dominance, func);
    SmallVector<scf::ForOp> reductionLoops;
    func.walk([&](scf::ForOp loop) { // innermost first
      if (loop->removeAttr(reductionMarker))
        reductionLoops.push_back(loop);
    });
    for (scf::ForOp loop : reductionLoops) {
      // A hoist replaces the loop (an op with several outputs hoists each
      // one); the hoisted pair may go on outward through the enclosing
      // reduction loop.
      for (FailureOr<scf::ForOp> hoisted = hoistOutputTile(rewriter, loop);
           succeeded(hoisted); hoisted = hoistOutputTile(rewriter, *hoisted))
        ;
    }

    lowerVectorOps(func, reassociate);
  }
};
} // namespace
