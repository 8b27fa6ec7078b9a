//===- DSDialect.h - the ds dialect -----------------------------*- C++ -*-===//
//
// The ops of the downstream example's dialect (see DSOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef DS_DSDIALECT_H
#define DS_DSDIALECT_H

// ReverseRuleOpInterface, which ds.cube implements.
#include "ad/IR/ADInterfaces.h"

#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ds/DSOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "ds/DSOps.h.inc"

#endif // DS_DSDIALECT_H
