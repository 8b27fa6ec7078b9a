// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=512}))" | FileCheck %s
// RUN: ad-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(ad-vectorize{vector-bits=512 contractions=false}))" | FileCheck %s --check-prefix=OFF

// A convolution is tiled like a contraction: 8 output pixels of a row (the
// narrow dimension, read by the image through ow + kw) by 16 output
// channels (the wide one, the kernel's innermost), kept in registers across
// the kh, kw and c loops; each step broadcasts 8 image values against one
// vector of the kernel.
// CHECK-LABEL: func.func @conv
// CHECK-NOT:   linalg.conv
// CHECK:       scf.for {{.*}} step %c16
// CHECK:         scf.for {{.*}} step %c8
// CHECK-COUNT-8:   vector.load %{{.*}} : memref<1x6x8x16xf64>, vector<16xf64>
// CHECK:           scf.for {{.*}} iter_args({{.*}}) -> (vector<1x8x16xf64>)
// CHECK:             scf.for {{.*}} iter_args({{.*}}) -> (vector<1x8x16xf64>)
// CHECK:               scf.for {{.*}} iter_args({{.*}}) -> (vector<1x8x16xf64>)
// CHECK-COUNT-8:         memref.load %{{.*}} : memref<1x8x10x4xf64>
// CHECK:                 vector.load %{{.*}} : memref<3x3x4x16xf64>, vector<16xf64>
// CHECK:                 arith.mulf {{.*}} : vector<1x8x16xf64>
// CHECK:                 arith.addf {{.*}} : vector<1x8x16xf64>
// CHECK-COUNT-8:   vector.store %{{.*}} : memref<1x6x8x16xf64>, vector<16xf64>
// CHECK-NOT:   linalg.
// OFF-LABEL:   func.func @conv
// OFF:         linalg.conv_2d_nhwc_hwcf
func.func @conv(%x: memref<1x8x10x4xf64>, %k: memref<3x3x4x16xf64>) -> memref<1x6x8x16xf64> {
  %o = memref.alloc() : memref<1x6x8x16xf64>
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %k : memref<1x8x10x4xf64>, memref<3x3x4x16xf64>) outs(%o : memref<1x6x8x16xf64>)
  return %o : memref<1x6x8x16xf64>
}

// -----

// The image's adjoint scatters into the window (dx[n, oh + kh, ow + kw, c]):
// 6 pixels (6 divides the width 30, 8 does not) by 8 channels in registers
// across the output-channel loop, with the kernel copied transposed so that
// its channels are contiguous.
// CHECK-LABEL: func.func @conv_input_adjoint
// CHECK:       memref.alloc() {{.*}} : memref<3x3x16x8xf64>
// CHECK:       vector.shuffle
// CHECK:       scf.for {{.*}} step %c6
// CHECK-COUNT-6: vector.load %{{.*}} : memref<1x8x32x8xf64>, vector<8xf64>
// CHECK:         scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args({{.*}}) -> (vector<1x6x8xf64>)
// CHECK:           vector.load %{{.*}} : memref<3x3x16x8xf64>, vector<8xf64>
// CHECK-COUNT-6: vector.store %{{.*}} : memref<1x8x32x8xf64>, vector<8xf64>
// CHECK:       memref.dealloc %{{.*}} : memref<3x3x16x8xf64>
func.func @conv_input_adjoint(%k: memref<3x3x8x16xf64>, %dy: memref<1x6x30x16xf64>) -> memref<1x8x32x8xf64> {
  %dx = memref.alloc() : memref<1x8x32x8xf64>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d6)>], iterator_types = ["reduction", "reduction", "reduction", "reduction", "reduction", "reduction", "reduction"]} ins(%k, %dy : memref<3x3x8x16xf64>, memref<1x6x30x16xf64>) outs(%dx : memref<1x8x32x8xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %0 = arith.mulf %b, %a : f64
    %1 = arith.addf %out, %0 : f64
    linalg.yield %1 : f64
  }
  return %dx : memref<1x8x32x8xf64>
}

// -----

// The kernel's adjoint sums over the output pixels: 8 input channels by 16
// output channels in registers across the n, oh and ow loops.
// CHECK-LABEL: func.func @conv_kernel_adjoint
// CHECK:       scf.for {{.*}} step %c16
// CHECK:         scf.for {{.*}} step %c8
// CHECK-COUNT-8:   vector.load %{{.*}} : memref<3x3x8x16xf64>, vector<16xf64>
// CHECK:           scf.for {{.*}} -> (vector<8x16xf64>)
// CHECK:             scf.for {{.*}} -> (vector<8x16xf64>)
// CHECK:               scf.for %{{.*}} = %c0 to %c30 step %c1 iter_args({{.*}}) -> (vector<8x16xf64>)
// CHECK:                 vector.load %{{.*}} : memref<1x6x30x16xf64>, vector<16xf64>
// CHECK-COUNT-8:   vector.store %{{.*}} : memref<3x3x8x16xf64>, vector<16xf64>
func.func @conv_kernel_adjoint(%x: memref<1x8x32x8xf64>, %dy: memref<1x6x30x16xf64>) -> memref<3x3x8x16xf64> {
  %dk = memref.alloc() : memref<3x3x8x16xf64>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d3, d2 + d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3, d4, d5, d6)>], iterator_types = ["reduction", "reduction", "reduction", "parallel", "parallel", "parallel", "parallel"]} ins(%x, %dy : memref<1x8x32x8xf64>, memref<1x6x30x16xf64>) outs(%dk : memref<3x3x8x16xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %0 = arith.mulf %b, %a : f64
    %1 = arith.addf %out, %0 : f64
    linalg.yield %1 : f64
  }
  return %dk : memref<3x3x8x16xf64>
}

// -----

// A strided convolution (oh * 2 + kh) is not tiled like a contraction: it
// stays a named op.
// CHECK-LABEL: func.func @strided
// CHECK:       linalg.conv_2d_nhwc_hwcf
func.func @strided(%x: memref<1x9x9x4xf64>, %k: memref<3x3x4x16xf64>) -> memref<1x4x4x16xf64> {
  %o = memref.alloc() : memref<1x4x4x16xf64>
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %k : memref<1x9x9x4xf64>, memref<3x3x4x16xf64>) outs(%o : memref<1x4x4x16xf64>)
  return %o : memref<1x4x4x16xf64>
}
