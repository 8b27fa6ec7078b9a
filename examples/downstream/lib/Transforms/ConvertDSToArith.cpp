//===- ConvertDSToArith.cpp - ds ops to arith and math ----------*- C++ -*-===//
//
// The convert-ds-to-arith pass: each ds op becomes the arith/math ops it
// denotes, on scalars and tensors alike (arith and math are elementwise on
// tensors; constants take their shape from the operand).
//
//===----------------------------------------------------------------------===//

#include "ds/DSDialect.h"
#include "ds/DSPasses.h"

#include "ad/IR/ADInterfaces.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace ds {
#define GEN_PASS_DEF_CONVERTDSTOARITHPASS
#include "ds/DSPasses.h.inc"
} // namespace ds

using namespace mlir;
using namespace ds;

namespace {

/// softplus(x) = max(x, 0) + log1p(exp(-|x|)): exp never overflows.
struct LowerSoftplus : OpRewritePattern<SoftplusOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftplusOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    Value zero = ad::createFilledLike(rewriter, loc, x, 0.0);
    Value minusAbs = arith::NegFOp::create(
        rewriter, loc, math::AbsFOp::create(rewriter, loc, x));
    Value tail = math::Log1pOp::create(
        rewriter, loc, math::ExpOp::create(rewriter, loc, minusAbs));
    Value head = arith::MaximumFOp::create(rewriter, loc, x, zero);
    rewriter.replaceOpWithNewOp<arith::AddFOp>(op, head, tail);
    return success();
  }
};

struct LowerCube : OpRewritePattern<CubeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CubeOp op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getInput();
    Value square = arith::MulFOp::create(rewriter, op.getLoc(), x, x);
    rewriter.replaceOpWithNewOp<arith::MulFOp>(op, square, x);
    return success();
  }
};

struct LowerQuantize : OpRewritePattern<QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value ratio =
        arith::DivFOp::create(rewriter, loc, op.getInput(), op.getStep());
    Value rounded = math::RoundOp::create(rewriter, loc, ratio);
    rewriter.replaceOpWithNewOp<arith::MulFOp>(op, rounded, op.getStep());
    return success();
  }
};

struct ConvertDSToArithPass
    : ds::impl::ConvertDSToArithPassBase<ConvertDSToArithPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDSToArithPatterns(patterns);
    // The walk driver rewrites each ds op once and leaves everything else
    // alone (the greedy driver would also erase unrelated dead ops).
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void ds::populateDSToArithPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerSoftplus, LowerCube, LowerQuantize>(patterns.getContext());
}
