//===- HostVectors.h - the host's vector registers --------------*- C++ -*-===//
//
// The width of the widest vector registers the host CPU has, which both
// ad-vectorize (tile widths) and ad-vector-math (the libmvec vector ABI)
// target when no width is given.
//
//===----------------------------------------------------------------------===//

#ifndef AD_TRANSFORMS_HOSTVECTORS_H
#define AD_TRANSFORMS_HOSTVECTORS_H

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

namespace mlir::ad {
/// 512 bits with AVX-512, 256 with AVX2, 128 otherwise.
inline unsigned hostVectorBits() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (features.lookup("avx512f"))
    return 512;
  if (features.lookup("avx2"))
    return 256;
  return 128;
}
} // namespace mlir::ad

#endif // AD_TRANSFORMS_HOSTVECTORS_H
