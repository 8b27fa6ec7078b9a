/*===- ad-capi-test.c - the MLIR-AD C API from C ---------------------------===//
//
// Registers the ad dialect, rules and passes with upstream C API objects and
// differentiates a module with a textual pipeline; then JIT-compiles and
// calls a gradient through the runtime C API, checks it against finite
// differences, and exercises every error kind.
//
//===----------------------------------------------------------------------===*/

// RUN: ad-capi-test 2>&1 | FileCheck %s

#include "ad-c/Dialects.h"
#include "ad-c/Runtime.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kSource =
    "func.func @f(%x: tensor<?xf64>, %w: f64) -> f64 {\n"
    "  %c0 = arith.constant 0 : index\n"
    "  %c1 = arith.constant 1 : index\n"
    "  %zero = arith.constant 0.0 : f64\n"
    "  %n = tensor.dim %x, %c0 : tensor<?xf64>\n"
    "  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {\n"
    "    %xi = tensor.extract %x[%i] : tensor<?xf64>\n"
    "    %p = arith.mulf %xi, %w : f64\n"
    "    %t = math.sin %p : f64\n"
    "    %a = arith.addf %acc, %t : f64\n"
    "    scf.yield %a : f64\n"
    "  }\n"
    "  return %s : f64\n"
    "}\n";

static void printToStdout(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

static void printError(const char *what, MlirADError error) {
  MlirStringRef message = mlirADErrorGetMessage(error);
  printf("%s: kind %d: %.*s\n", what, (int)mlirADErrorGetKind(error),
         (int)message.length, message.data);
  mlirADErrorDestroy(error);
}

/* The ad dialect and pipelines through upstream C API objects. */
static int testDialectRegistration(void) {
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirADRegisterAllDialectsAndRules(registry);
  MlirContext context = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirADRegisterPasses();

  const char *text =
      "func.func @sq(%x: f64) -> f64 {\n"
      "  %y = arith.mulf %x, %x : f64\n"
      "  return %y : f64\n"
      "}\n"
      "func.func @dsq(%x: f64) -> f64 {\n"
      "  %g = ad.grad @sq(%x) : (f64) -> f64\n"
      "  return %g : f64\n"
      "}\n";
  MlirModule module =
      mlirModuleCreateParse(context, mlirStringRefCreateFromCString(text));
  if (mlirModuleIsNull(module))
    return 1;
  MlirPassManager pm = mlirPassManagerCreate(context);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  /* By name, through the registered pipeline. */
  MlirLogicalResult added = mlirOpPassManagerAddPipeline(
      opm, mlirStringRefCreateFromCString("ad-differentiate"), printToStdout,
      NULL);
  if (mlirLogicalResultIsFailure(added))
    return 1;
  MlirLogicalResult ran =
      mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  printf("differentiated: %s\n",
         mlirLogicalResultIsSuccess(ran) ? "success" : "failure");
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");
  // CHECK-LABEL: differentiated: success
  // CHECK: func.func @dsq
  // CHECK-NOT: ad.grad
  // CHECK: return
  mlirPassManagerDestroy(pm);

  /* A module of this context goes to the runtime by copy. */
  MlirModule plain =
      mlirModuleCreateParse(context, mlirStringRefCreateFromCString(text));
  MlirADRuntime runtime = mlirADRuntimeCreate();
  MlirADError error = {NULL};
  MlirADProgram program = mlirADRuntimeFromModule(runtime, plain, &error);
  if (!program.ptr) {
    printError("fromModule", error);
    return 1;
  }
  MlirADEntryPoint entry = mlirADProgramGetEntryPoint(
      program, MlirADEntryCall, mlirStringRefCreateFromCString("dsq"), NULL, 0,
      &error);
  if (!entry.ptr) {
    printError("entry", error);
    return 1;
  }
  MlirADValue x;
  memset(&x, 0, sizeof(x));
  x.element = MlirADElementF64;
  x.rank = -1;
  x.scalar.f64 = 1.5;
  MlirADResults results = mlirADEntryPointCall(entry, &x, 1, &error);
  if (!results.ptr) {
    printError("call", error);
    return 1;
  }
  printf("dsq(1.5) = %g\n", mlirADResultsGet(results, 0).scalar.f64);
  // CHECK: dsq(1.5) = 3
  mlirADResultsDestroy(results);
  mlirADEntryPointDestroy(entry);
  mlirADProgramDestroy(program);
  mlirADRuntimeDestroy(runtime);
  mlirModuleDestroy(plain);
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return 0;
}

static MlirADValue scalarF64(double value) {
  MlirADValue v;
  memset(&v, 0, sizeof(v));
  v.element = MlirADElementF64;
  v.rank = -1;
  v.scalar.f64 = value;
  return v;
}

static MlirADValue bufferF64(double *data, const int64_t *sizes, int64_t rank) {
  MlirADValue v;
  memset(&v, 0, sizeof(v));
  v.element = MlirADElementF64;
  v.rank = rank;
  v.data = data;
  v.sizes = sizes;
  return v;
}

static double callF(MlirADEntryPoint call, double *x, const int64_t *n,
                    double w) {
  MlirADValue args[2] = {bufferF64(x, n, 1), scalarF64(w)};
  MlirADResults results = mlirADEntryPointCall(call, args, 2, NULL);
  double value = mlirADResultsGet(results, 0).scalar.f64;
  mlirADResultsDestroy(results);
  return value;
}

/* Gradients through the runtime, checked against central differences. */
static int testRuntime(void) {
  MlirADRuntime runtime = mlirADRuntimeCreate();
  MlirADError error = {NULL};
  MlirADProgram program = mlirADRuntimeParse(
      runtime, mlirStringRefCreateFromCString(kSource),
      mlirStringRefCreateFromCString("capi.mlir"), &error);
  if (!program.ptr) {
    printError("parse", error);
    return 1;
  }
  printf("functions: %d %.*s\n", (int)mlirADProgramGetNumFunctions(program),
         (int)mlirADProgramGetFunctionName(program, 0).length,
         mlirADProgramGetFunctionName(program, 0).data);
  // CHECK: functions: 1 f
  MlirStringRef f = mlirStringRefCreateFromCString("f");
  MlirADEntryPoint call =
      mlirADProgramGetEntryPoint(program, MlirADEntryCall, f, NULL, 0, &error);
  MlirADEntryPoint grad =
      mlirADProgramGetEntryPoint(program, MlirADEntryGrad, f, NULL, 0, &error);
  if (!call.ptr || !grad.ptr) {
    printError("entry", error);
    return 1;
  }
  printf("grad: %d inputs, %d results\n",
         (int)mlirADEntryPointGetNumInputs(grad),
         (int)mlirADEntryPointGetNumResults(grad));
  // CHECK: grad: 2 inputs, 2 results

  double x[5] = {0.1, -0.4, 0.9, 1.3, 2.0};
  int64_t n[1] = {5};
  double w = 0.7;
  MlirADValue args[2] = {bufferF64(x, n, 1), scalarF64(w)};
  MlirADResults results = mlirADEntryPointCall(grad, args, 2, &error);
  if (!results.ptr) {
    printError("grad", error);
    return 1;
  }
  MlirADValue gx = mlirADResultsGet(results, 0);
  MlirADValue gw = mlirADResultsGet(results, 1);
  printf("gx rank %d size %d, gw rank %d\n", (int)gx.rank, (int)gx.sizes[0],
         (int)gw.rank);
  // CHECK: gx rank 1 size 5, gw rank -1
  double worst = 0, h = 1e-6;
  for (int i = 0; i < 5; ++i) {
    double saved = x[i];
    x[i] = saved + h;
    double up = callF(call, x, n, w);
    x[i] = saved - h;
    double down = callF(call, x, n, w);
    x[i] = saved;
    double fd = (up - down) / (2 * h);
    double exact = ((double *)gx.data)[i * gx.strides[0]];
    worst = fmax(worst, fabs(fd - exact));
  }
  double fdw = (callF(call, x, n, w + h) - callF(call, x, n, w - h)) / (2 * h);
  worst = fmax(worst, fabs(fdw - gw.scalar.f64));
  printf("largest difference to finite differences below 1e-7: %s\n",
         worst < 1e-7 ? "yes" : "no");
  // CHECK: largest difference to finite differences below 1e-7: yes
  void *taken = mlirADResultsTakeBuffer(results, 0);
  printf("took buffer: %s, again: %s\n", taken ? "yes" : "no",
         mlirADResultsTakeBuffer(results, 0) ? "yes" : "no");
  // CHECK: took buffer: yes, again: no
  free(taken);
  mlirADResultsDestroy(results);

  /* The cache: asking again compiles nothing. */
  intptr_t before = mlirADRuntimeGetNumCompilations(runtime);
  MlirADEntryPoint again =
      mlirADProgramGetEntryPoint(program, MlirADEntryGrad, f, NULL, 0, &error);
  printf("compilations: %d, after asking again: %d\n", (int)before,
         (int)mlirADRuntimeGetNumCompilations(runtime));
  // CHECK: compilations: 2, after asking again: 2
  mlirADEntryPointDestroy(again);

  /* Errors: a wrong element type, a wrong shape, a wrong count. */
  float single[5] = {0};
  MlirADValue wrongType[2] = {bufferF64((double *)single, n, 1), scalarF64(w)};
  wrongType[0].element = MlirADElementF32;
  if (!mlirADEntryPointCall(grad, wrongType, 2, &error).ptr)
    printError("wrong type", error);
  // CHECK: wrong type: kind 1: argument 0: expected tensor<?xf64>, got a buffer of shape (5) and element type f32
  int64_t matrix[2] = {5, 1};
  MlirADValue wrongRank[2] = {bufferF64(x, matrix, 2), scalarF64(w)};
  if (!mlirADEntryPointCall(grad, wrongRank, 2, &error).ptr)
    printError("wrong rank", error);
  // CHECK: wrong rank: kind 2: argument 0: expected tensor<?xf64> (rank 1)
  if (!mlirADEntryPointCall(grad, args, 1, &error).ptr)
    printError("wrong count", error);
  // CHECK: wrong count: kind 1: expected 2 arguments, got 1
  int64_t wrt[1] = {2};
  if (!mlirADProgramGetEntryPoint(program, MlirADEntryGrad, f, wrt, 1, &error)
           .ptr)
    printError("wrong wrt", error);
  // CHECK: wrong wrt: kind 2: grad of @f: wrt names argument 2 but the function has 2 arguments
  mlirADEntryPointDestroy(call);
  mlirADEntryPointDestroy(grad);
  mlirADProgramDestroy(program);

  /* Errors with MLIR diagnostics and their locations. */
  MlirADProgram broken = mlirADRuntimeParse(
      runtime,
      mlirStringRefCreateFromCString("func.func @g(%x: f64) -> f64 {\n"
                                     "  return %y : f64\n}\n"),
      mlirStringRefCreateFromCString("broken.mlir"), &error);
  if (!broken.ptr)
    printError("parse error", error);
  // CHECK: parse error: kind 0: cannot parse broken.mlir:
  // CHECK-NEXT: broken.mlir:2:10: error: use of undeclared SSA value name
  MlirADProgram noRule = mlirADRuntimeParse(
      runtime,
      mlirStringRefCreateFromCString(
          "func.func @h(%x: f64) -> f64 {\n"
          "  %b = arith.bitcast %x : f64 to i64\n"
          "  %one = arith.constant 1 : i64\n"
          "  %n = arith.addi %b, %one : i64\n"
          "  %c = arith.bitcast %n : i64 to f64\n"
          "  return %c : f64\n}\n"),
      mlirStringRefCreateFromCString("norule.mlir"), &error);
  MlirADEntryPoint failed = mlirADProgramGetEntryPoint(
      noRule, MlirADEntryGrad, mlirStringRefCreateFromCString("h"), NULL, 0,
      &error);
  if (!failed.ptr)
    printError("differentiation error", error);
  // CHECK: differentiation error: kind 0: cannot compile grad of @h:
  // CHECK: norule.mlir:5:8: error: no derivative rule for 'arith.bitcast'
  mlirADProgramDestroy(noRule);

  // A vjp checks each cotangent's dynamic sizes against its result's.
  MlirADProgram sines = mlirADRuntimeParse(
      runtime,
      mlirStringRefCreateFromCString(
          "func.func @s(%x: tensor<?xf64>) -> tensor<?xf64> {\n"
          "  %y = math.sin %x : tensor<?xf64>\n"
          "  return %y : tensor<?xf64>\n}\n"),
      mlirStringRefCreateFromCString("sines.mlir"), &error);
  // The runtime handle may go first: the program keeps what it needs.
  mlirADRuntimeDestroy(runtime);
  MlirADEntryPoint vjp = mlirADProgramGetEntryPoint(
      sines, MlirADEntryVjp, mlirStringRefCreateFromCString("s"), NULL, 0,
      &error);
  mlirADProgramDestroy(sines);
  if (!vjp.ptr) {
    printError("vjp", error);
    return 1;
  }
  double ones[3] = {1, 1, 1};
  int64_t three[1] = {3}, two[1] = {2};
  MlirADValue shortCotangent[2] = {bufferF64(x, three, 1),
                                   bufferF64(ones, two, 1)};
  if (!mlirADEntryPointCall(vjp, shortCotangent, 2, &error).ptr)
    printError("short cotangent", error);
  // CHECK: short cotangent: kind 2: a run-time check of the compiled code failed
  // CHECK-NEXT: cotangent 0 differs from result 0 in dimension 0
  MlirADValue goodCotangent[2] = {bufferF64(x, three, 1),
                                  bufferF64(ones, three, 1)};
  results = mlirADEntryPointCall(vjp, goodCotangent, 2, &error);
  if (!results.ptr) {
    printError("vjp call", error);
    return 1;
  }
  MlirADValue cosines = mlirADResultsGet(results, 0);
  printf("vjp = cos(x): %s\n",
         fabs(((double *)cosines.data)[2] - cos(x[2])) < 1e-15 ? "yes" : "no");
  // CHECK: vjp = cos(x): yes
  mlirADResultsDestroy(results);

  // Malformed values are errors, not crashes.
  MlirADValue bad[2] = {bufferF64(x, three, 1), bufferF64(ones, three, 1)};
  bad[1].element = (MlirADElementKind)42;
  if (!mlirADEntryPointCall(vjp, bad, 2, &error).ptr)
    printError("bad element", error);
  // CHECK: bad element: kind 1: argument 1 has an unknown element kind 42
  bad[1] = bufferF64(ones, NULL, 1);
  if (!mlirADEntryPointCall(vjp, bad, 2, &error).ptr)
    printError("no sizes", error);
  // CHECK: no sizes: kind 2: argument 1 has a rank but no sizes
  mlirADEntryPointDestroy(vjp);
  return 0;
}

int main(void) {
  if (testDialectRegistration())
    return 1;
  if (testRuntime())
    return 1;
  printf("done\n");
  // CHECK: done
  return 0;
}
