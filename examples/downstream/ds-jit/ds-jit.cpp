//===- ds-jit.cpp - the MLIR-AD JIT runtime inside another compiler -------===//
//
// Embeds MLIR-AD's runtime with the ds dialect: its context also registers
// ds and its rules, and its pipeline lowers ds ops between differentiation
// and the rest. Compiles a function using ds.softplus and ds.cube, calls it
// and its gradient on a buffer, and prints the gradient next to the closed
// form and a central finite difference (run by test/jit.test).
//
//===----------------------------------------------------------------------===//

#include "ds/DSDialect.h"
#include "ds/DSPasses.h"
#include "ds/DSRules.h"

#include "ad/Runtime/Runtime.h"

#include "mlir/IR/DialectRegistry.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <vector>

using namespace mlir::ad::runtime;

static const char *kSource = R"mlir(
// sum_i softplus(w x_i) + cube(w)
func.func @model(%x: tensor<?xf64>, %w: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
    %xi = tensor.extract %x[%i] : tensor<?xf64>
    %u = arith.mulf %w, %xi : f64
    %s = ds.softplus %u : f64
    %next = arith.addf %acc, %s : f64
    scf.yield %next : f64
  }
  %c = ds.cube %w : f64
  %r = arith.addf %sum, %c : f64
  return %r : f64
}
)mlir";

/// Prints `error` and returns 1.
static int fail(llvm::Error error) {
  auto [kind, message] = takeError(std::move(error));
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

static double sigmoid(double u) { return 1.0 / (1.0 + std::exp(-u)); }

int main() {
  RuntimeOptions options;
  options.registerDialects = [](mlir::DialectRegistry &registry) {
    registry.insert<ds::DSDialect>();
    ds::registerDSReverseRules(registry);
  };
  options.buildPipeline = ds::buildDSLowerToLLVMPipeline;
  std::unique_ptr<Runtime> runtime = Runtime::create(std::move(options));

  llvm::Expected<std::shared_ptr<Program>> program =
      runtime->parse(kSource, "model.mlir");
  if (!program)
    return fail(program.takeError());
  llvm::Expected<std::shared_ptr<EntryPoint>> call =
      (*program)->getEntryPoint(EntryKind::Call, "model");
  llvm::Expected<std::shared_ptr<EntryPoint>> grad =
      (*program)->getEntryPoint(EntryKind::Grad, "model");
  if (!call)
    return fail(call.takeError());
  if (!grad)
    return fail(grad.takeError());

  std::vector<double> x = {0.5, -1.25, 2.0};
  double w = 0.75;
  auto model = [&](double weight) {
    std::vector<Result> results;
    llvm::cantFail((*call)->call(
        {Argument::ofBuffer(ElementKind::F64, x.data(), {3}),
         Argument::ofF64(weight)},
        results));
    return results[0].scalar.f64;
  };

  std::vector<Result> gradients;
  if (llvm::Error error = (*grad)->call(
          {Argument::ofBuffer(ElementKind::F64, x.data(), {3}),
           Argument::ofF64(w)},
          gradients))
    return fail(std::move(error));
  // Results own their buffers: gradients[0] frees its own.
  const double *dx = static_cast<const double *>(gradients[0].data);
  double dw = gradients[1].scalar.f64;

  double closedDw = 3 * w * w;
  for (double xi : x)
    closedDw += xi * sigmoid(w * xi);
  double h = 1e-6;
  double finiteDw = (model(w + h) - model(w - h)) / (2 * h);
  std::printf("model = %.6f\n", model(w));
  std::printf("d/dw = %.10f closed form %.10f finite difference %.10f\n", dw,
              closedDw, finiteDw);
  bool ok = std::fabs(dw - closedDw) < 1e-12 &&
            std::fabs(dw - finiteDw) < 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    double closed = w * sigmoid(w * x[i]);
    std::printf("d/dx[%zu] = %.10f closed form %.10f\n", i,
                dx[i * gradients[0].strides[0]], closed);
    ok &= std::fabs(dx[i * gradients[0].strides[0]] - closed) < 1e-12;
  }
  std::printf("%s\n", ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}
