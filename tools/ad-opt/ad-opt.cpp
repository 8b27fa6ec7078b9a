//===- ad-opt.cpp - the MLIR-AD driver --------------------------*- C++ -*-===//
//
// mlir-opt with the ad dialect, its derivative rules, passes and pipelines.
//
//===----------------------------------------------------------------------===//

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

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::ad::ADDialect>();
  mlir::ad::registerReverseRules(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "MLIR-AD optimizer driver\n", registry));
}
