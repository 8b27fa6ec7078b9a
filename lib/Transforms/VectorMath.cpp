//===- VectorMath.cpp - math on vectors through glibc's libmvec -*- C++ -*-===//
//
// ad-vector-math: a `math` op on a vector of f32 or f64 (what ad-vectorize
// makes of an elementwise tanh, exp, log, ...) becomes calls of glibc's
// vector math library, libmvec (`_ZGVeN8v_tanh` computes tanh on 8 f64 in
// one AVX-512 register), instead of the LLVM intrinsic, which the backend
// scalarizes into one libm call per element. libmvec ships with glibc
// (Debian's libc6) and documents a maximum error of 4 ulp.
//
//===----------------------------------------------------------------------===//

#include "ad/Transforms/Passes.h"

#include "HostVectors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

namespace mlir::ad {
#define GEN_PASS_DEF_ADVECTORMATHPASS
#include "ad/IR/Passes.h.inc"
} // namespace mlir::ad

using namespace mlir;

namespace {
/// The libmvec function computing `op`'s math function, without the
/// vector-ABI prefix and the f32 suffix, and its number of vector operands.
static std::optional<std::pair<StringRef, unsigned>>
libmvecFunction(Operation *op) {
  return llvm::TypeSwitch<Operation *,
                          std::optional<std::pair<StringRef, unsigned>>>(op)
      .Case([](math::ExpOp) { return std::pair{StringRef("exp"), 1u}; })
      .Case([](math::Exp2Op) { return std::pair{StringRef("exp2"), 1u}; })
      .Case([](math::ExpM1Op) { return std::pair{StringRef("expm1"), 1u}; })
      .Case([](math::LogOp) { return std::pair{StringRef("log"), 1u}; })
      .Case([](math::Log2Op) { return std::pair{StringRef("log2"), 1u}; })
      .Case([](math::Log10Op) { return std::pair{StringRef("log10"), 1u}; })
      .Case([](math::Log1pOp) { return std::pair{StringRef("log1p"), 1u}; })
      .Case([](math::SinOp) { return std::pair{StringRef("sin"), 1u}; })
      .Case([](math::CosOp) { return std::pair{StringRef("cos"), 1u}; })
      .Case([](math::TanOp) { return std::pair{StringRef("tan"), 1u}; })
      .Case([](math::SinhOp) { return std::pair{StringRef("sinh"), 1u}; })
      .Case([](math::CoshOp) { return std::pair{StringRef("cosh"), 1u}; })
      .Case([](math::TanhOp) { return std::pair{StringRef("tanh"), 1u}; })
      .Case([](math::AsinOp) { return std::pair{StringRef("asin"), 1u}; })
      .Case([](math::AcosOp) { return std::pair{StringRef("acos"), 1u}; })
      .Case([](math::AtanOp) { return std::pair{StringRef("atan"), 1u}; })
      .Case([](math::AsinhOp) { return std::pair{StringRef("asinh"), 1u}; })
      .Case([](math::AcoshOp) { return std::pair{StringRef("acosh"), 1u}; })
      .Case([](math::AtanhOp) { return std::pair{StringRef("atanh"), 1u}; })
      .Case([](math::ErfOp) { return std::pair{StringRef("erf"), 1u}; })
      .Case([](math::ErfcOp) { return std::pair{StringRef("erfc"), 1u}; })
      .Case([](math::CbrtOp) { return std::pair{StringRef("cbrt"), 1u}; })
      .Case([](math::Atan2Op) { return std::pair{StringRef("atan2"), 2u}; })
      .Case([](math::PowFOp) { return std::pair{StringRef("pow"), 2u}; })
      .Default([](Operation *) { return std::nullopt; });
}


static char isaLetter(unsigned bits) {
  return bits >= 512 ? 'e' : bits >= 256 ? 'd' : 'b';
}

struct ADVectorMathPass
    : mlir::ad::impl::ADVectorMathPassBase<ADVectorMathPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The vector-ABI names are x86-64's: on another host, only an explicit
    // vector-bits asks for them.
    if (!vectorBits && !llvm::Triple(llvm::sys::getProcessTriple()).isX86())
      return;
    unsigned bits = vectorBits ? unsigned(vectorBits) : ad::hostVectorBits();
    if (bits < 128)
      return;
    bits = bits >= 512 ? 512 : bits >= 256 ? 256 : 128;
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (op->getNumResults() != 1 || !libmvecFunction(op))
        return;
      auto type = dyn_cast<VectorType>(op->getResult(0).getType());
      if (type && !type.isScalable() && type.getNumElements() > 1 &&
          (type.getElementType().isF32() || type.getElementType().isF64()))
        ops.push_back(op);
    });
    OpBuilder declarations(module.getBodyRegion());
    declarations.setInsertionPointToEnd(module.getBody());
    for (Operation *op : ops)
      rewrite(op, bits, declarations);
  }

  /// Replaces `op` by calls of the libmvec function on one register's worth
  /// of elements at a time (the last one padded with zeros).
  void rewrite(Operation *op, unsigned bits, OpBuilder &declarations) {
    auto [name, arity] = *libmvecFunction(op);
    auto type = cast<VectorType>(op->getResult(0).getType());
    Type element = type.getElementType();
    unsigned elementBits = element.getIntOrFloatBitWidth();
    int64_t count = type.getNumElements();
    // The narrowest ABI holding all elements, at most the host's.
    while (bits > 128 && int64_t(bits / 2 / elementBits) >= count)
      bits /= 2;
    int64_t lanes = bits / elementBits;
    auto chunkType = VectorType::get({lanes}, element);
    std::string symbol = ("_ZGV" + Twine(isaLetter(bits)) + "N" +
                          Twine(lanes) + (arity == 2 ? "vv_" : "v_") + name +
                          (element.isF32() ? "f" : ""))
                             .str();
    ModuleOp module = getOperation();
    if (!module.lookupSymbol<func::FuncOp>(symbol)) {
      SmallVector<Type> inputs(arity, chunkType);
      auto decl = func::FuncOp::create(
          declarations, op->getLoc(), symbol,
          FunctionType::get(op->getContext(), inputs, {chunkType}));
      decl.setPrivate();
    }

    OpBuilder b(op);
    Location loc = op->getLoc();
    auto flatType = VectorType::get({count}, element);
    SmallVector<Value> flatOperands;
    for (Value operand : op->getOperands())
      flatOperands.push_back(
          vector::ShapeCastOp::create(b, loc, flatType, operand));
    Value zeros = arith::ConstantOp::create(
        b, loc, chunkType, DenseElementsAttr::get(chunkType,
                                                  b.getZeroAttr(element)));
    Value result = arith::ConstantOp::create(
        b, loc, flatType,
        DenseElementsAttr::get(flatType, b.getZeroAttr(element)));
    for (int64_t offset = 0; offset < count; offset += lanes) {
      int64_t size = std::min(lanes, count - offset);
      SmallVector<Value> arguments;
      for (Value flat : flatOperands) {
        Value piece = flat;
        if (size != count || size != lanes)
          piece = vector::ExtractStridedSliceOp::create(b, loc, flat, offset,
                                                        size, 1);
        if (size < lanes)
          piece = vector::InsertStridedSliceOp::create(b, loc, piece, zeros,
                                                       0, 1);
        arguments.push_back(piece);
      }
      Value chunk =
          func::CallOp::create(b, loc, symbol, chunkType, arguments)
              .getResult(0);
      if (size < lanes)
        chunk = vector::ExtractStridedSliceOp::create(b, loc, chunk, 0, size,
                                                      1);
      if (size == count && size == lanes) {
        result = chunk;
        continue;
      }
      result = vector::InsertStridedSliceOp::create(b, loc, chunk, result,
                                                    offset, 1);
    }
    op->getResult(0).replaceAllUsesWith(
        vector::ShapeCastOp::create(b, loc, type, result));
    op->erase();
  }
};
} // namespace
