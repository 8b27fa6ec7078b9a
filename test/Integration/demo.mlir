// The README demo: each gradient must match its finite difference in all
// six printed digits.
// RUN: ad-opt %S/../../examples/damped-spring.mlir --ad-lower-to-llvm | %run | FileCheck %s

// CHECK: energy after 4 steps: 1.83029
// CHECK: dE/dx0 = [[G:-?[0-9.e+-]+]]   finite difference [[G]]{{$}}
// CHECK: dE/dv0 = [[G:-?[0-9.e+-]+]]   finite difference [[G]]{{$}}
// CHECK: dE/dk  = [[G:-?[0-9.e+-]+]]   finite difference [[G]]{{$}}
// CHECK: dE/dc  = [[G:-?[0-9.e+-]+]]   finite difference [[G]]{{$}}
