// The tensor example: each gradient entry must match its finite difference
// in all six printed digits.
// RUN: ad-opt %S/../../examples/char-rnn.mlir --ad-lower-to-llvm | %run | FileCheck %s
// The plain scalar loops (vectorize=false) give the same digits.
// RUN: ad-opt %S/../../examples/char-rnn.mlir --ad-lower-to-llvm=vectorize=false | %run | FileCheck %s

// CHECK: loss: 8.38096
// CHECK: dL/dE[2][1] = [[G:-?[0-9.e+-]+]]   finite difference [[G]]{{$}}
// CHECK: dL/dE[4][3] = [[G:-?[0-9.e+-]+]]   finite difference [[G]]{{$}}
// CHECK: dL/dE[5][0] = [[G:-?[0-9.e+-]+]]   finite difference [[G]]{{$}}
// CHECK: dL/dW[0][2] = [[G:-?[0-9.e+-]+]]   finite difference [[G]]{{$}}
// CHECK: dL/dW[3][1] = [[G:-?[0-9.e+-]+]]   finite difference [[G]]{{$}}
