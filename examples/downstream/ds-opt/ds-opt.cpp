//===- ds-opt.cpp - the downstream example's driver -------------*- C++ -*-===//
//
// mlir-opt with upstream's dialects and passes, MLIR-AD (the ad dialect,
// its passes and pipelines, the rules of upstream ops) and the ds dialect
// with its rules, pass and pipeline.
//
//===----------------------------------------------------------------------===//

#include "ds/DSDialect.h"
#include "ds/DSPasses.h"
#include "ds/DSRules.h"

#include "ad/IR/ADDialect.h"
#include "ad/Rules/Rules.h"
#include "ad/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::ad::registerADPasses();
  mlir::ad::registerADPipelines();
  ds::registerDSPasses();
  ds::registerDSPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::ad::ADDialect, ds::DSDialect>();
  mlir::ad::registerReverseRules(registry);
  ds::registerDSReverseRules(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "MLIR-AD downstream example driver\n", registry));
}
