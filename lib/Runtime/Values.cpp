//===- Values.cpp - errors, types and values at the runtime boundary ------===//
//
// The plain data the runtime exchanges with its callers: error payloads,
// element kinds, value types, borrowed arguments and owned results.
//
//===----------------------------------------------------------------------===//

#include "ad/Runtime/Runtime.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace mlir::ad::runtime;

char RuntimeError::ID = 0;

llvm::Error RuntimeError::make(ErrorKind kind, const llvm::Twine &message) {
  return llvm::make_error<RuntimeError>(kind, message.str());
}

void RuntimeError::log(llvm::raw_ostream &os) const { os << message; }

std::error_code RuntimeError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

std::pair<ErrorKind, std::string>
mlir::ad::runtime::takeError(llvm::Error error) {
  std::pair<ErrorKind, std::string> result{ErrorKind::Compile, ""};
  llvm::handleAllErrors(
      std::move(error),
      [&](const RuntimeError &e) {
        result = {e.getKind(), e.getMessage()};
      },
      [&](const llvm::ErrorInfoBase &e) {
        result = {ErrorKind::Compile, e.message()};
      });
  return result;
}

size_t mlir::ad::runtime::getByteWidth(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16:
  case ElementKind::I16:
    return 2;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F64:
  case ElementKind::I64:
  case ElementKind::Index:
    return 8;
  case ElementKind::I1:
  case ElementKind::I8:
    return 1;
  }
  llvm_unreachable("unknown element kind");
}

llvm::StringRef mlir::ad::runtime::getName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
    return "f16";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::F32:
    return "f32";
  case ElementKind::F64:
    return "f64";
  case ElementKind::I1:
    return "i1";
  case ElementKind::I8:
    return "i8";
  case ElementKind::I16:
    return "i16";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I64:
    return "i64";
  case ElementKind::Index:
    return "index";
  }
  llvm_unreachable("unknown element kind");
}

bool mlir::ad::runtime::isFloat(ElementKind kind) {
  return kind == ElementKind::F16 || kind == ElementKind::BF16 ||
         kind == ElementKind::F32 || kind == ElementKind::F64;
}

std::string ValueType::str() const {
  if (!shaped)
    return getName(element).str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << (tensor ? "tensor<" : "memref<");
  for (int64_t size : shape) {
    if (size == kDynamic)
      os << "?";
    else
      os << size;
    os << "x";
  }
  os << getName(element) << ">";
  return text;
}

bool ValueType::operator==(const ValueType &other) const {
  return element == other.element && shaped == other.shaped &&
         tensor == other.tensor && shape == other.shape;
}

Argument Argument::ofF64(double value) {
  Argument arg;
  arg.element = ElementKind::F64;
  arg.scalar.f64 = value;
  return arg;
}

Argument Argument::ofF32(float value) {
  Argument arg;
  arg.element = ElementKind::F32;
  arg.scalar.f32 = value;
  return arg;
}

Argument Argument::ofI64(int64_t value, ElementKind kind) {
  Argument arg;
  arg.element = kind;
  switch (kind) {
  case ElementKind::I1:
    arg.scalar.i8 = value != 0;
    break;
  case ElementKind::I8:
    arg.scalar.i8 = (int8_t)value;
    break;
  case ElementKind::I16:
    arg.scalar.i16 = (int16_t)value;
    break;
  case ElementKind::I32:
    arg.scalar.i32 = (int32_t)value;
    break;
  default:
    arg.scalar.i64 = value;
  }
  return arg;
}

Argument Argument::ofBuffer(ElementKind kind, void *data,
                            llvm::ArrayRef<int64_t> sizes) {
  Argument arg;
  arg.element = kind;
  arg.shaped = true;
  arg.data = data;
  arg.sizes.assign(sizes.begin(), sizes.end());
  return arg;
}

Result::Result(Result &&other) noexcept { *this = std::move(other); }

Result &Result::operator=(Result &&other) noexcept {
  if (this == &other)
    return *this;
  reset();
  element = other.element;
  shaped = other.shaped;
  scalar = other.scalar;
  allocated = other.allocated;
  data = other.data;
  sizes = std::move(other.sizes);
  strides = std::move(other.strides);
  other.allocated = nullptr;
  other.data = nullptr;
  return *this;
}

Result::~Result() { reset(); }

void Result::reset() {
  std::free(allocated);
  allocated = nullptr;
  data = nullptr;
}

void *Result::release() {
  void *owned = allocated;
  allocated = nullptr;
  return owned;
}

/// An f16 or bf16 scalar, from its bits.
static double halfToDouble(uint16_t bits, const llvm::fltSemantics &semantics) {
  return llvm::APFloat(semantics, llvm::APInt(16, bits)).convertToDouble();
}

double Result::getScalarAsDouble() const {
  switch (element) {
  case ElementKind::F64:
    return scalar.f64;
  case ElementKind::F32:
    return scalar.f32;
  case ElementKind::F16:
    return halfToDouble(scalar.bits16, llvm::APFloat::IEEEhalf());
  case ElementKind::BF16:
    return halfToDouble(scalar.bits16, llvm::APFloat::BFloat());
  case ElementKind::I1:
    return scalar.i8 & 1;
  case ElementKind::I8:
    return scalar.i8;
  case ElementKind::I16:
    return scalar.i16;
  case ElementKind::I32:
    return scalar.i32;
  case ElementKind::I64:
  case ElementKind::Index:
    return (double)scalar.i64;
  }
  llvm_unreachable("unknown element kind");
}
