// RUN: ad-opt %s --ad-vector-math=vector-bits=512 | FileCheck %s
// RUN: ad-opt %s --ad-vector-math=vector-bits=256 | FileCheck %s --check-prefix=AVX2

// Math on vectors calls libmvec one register at a time; the last, partial
// register is padded with zeros.
// CHECK-LABEL: func.func @tanh_f64
// CHECK:       vector.shape_cast %{{.*}} : vector<1x11xf64> to vector<11xf64>
// CHECK:       call @_ZGVeN8v_tanh(%{{.*}}) : (vector<8xf64>) -> vector<8xf64>
// CHECK:       vector.insert_strided_slice %{{.*}}, %{{.*}} {offsets = [0], strides = [1]} : vector<3xf64> into vector<8xf64>
// CHECK:       call @_ZGVeN8v_tanh(%{{.*}}) : (vector<8xf64>) -> vector<8xf64>
// CHECK:       vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [3], strides = [1]} : vector<8xf64> to vector<3xf64>
// CHECK-NOT:   math.tanh
// AVX2-LABEL:  func.func @tanh_f64
// AVX2-COUNT-3: call @_ZGVdN4v_tanh(%{{.*}}) : (vector<4xf64>) -> vector<4xf64>
func.func @tanh_f64(%x: vector<1x11xf64>) -> vector<1x11xf64> {
  %y = math.tanh %x : vector<1x11xf64>
  return %y : vector<1x11xf64>
}

// A small vector uses the narrowest register that holds it; f32 names end
// in f; binary functions take two vectors.
// CHECK-LABEL: func.func @small_and_f32
// CHECK:       call @_ZGVbN2v_exp(%{{.*}}) : (vector<2xf64>) -> vector<2xf64>
// CHECK:       call @_ZGVeN16v_logf(%{{.*}}) : (vector<16xf32>) -> vector<16xf32>
// CHECK:       call @_ZGVdN4vv_pow(%{{.*}}, %{{.*}}) : (vector<4xf64>, vector<4xf64>) -> vector<4xf64>
func.func @small_and_f32(%a: vector<2xf64>, %b: vector<16xf32>, %c: vector<3xf64>) -> (vector<2xf64>, vector<16xf32>, vector<3xf64>) {
  %x = math.exp %a : vector<2xf64>
  %y = math.log %b : vector<16xf32>
  %z = math.powf %c, %c : vector<3xf64>
  return %x, %y, %z : vector<2xf64>, vector<16xf32>, vector<3xf64>
}

// Scalars, one-element vectors and f16 are left to the LLVM lowering.
// CHECK-LABEL: func.func @untouched
// CHECK:       math.sin %{{.*}} : f64
// CHECK:       math.sin %{{.*}} : vector<1xf64>
// CHECK:       math.sin %{{.*}} : vector<8xf16>
func.func @untouched(%a: f64, %b: vector<1xf64>, %c: vector<8xf16>) -> (f64, vector<1xf64>, vector<8xf16>) {
  %x = math.sin %a : f64
  %y = math.sin %b : vector<1xf64>
  %z = math.sin %c : vector<8xf16>
  return %x, %y, %z : f64, vector<1xf64>, vector<8xf16>
}

// CHECK-DAG: func.func private @_ZGVeN8v_tanh(vector<8xf64>) -> vector<8xf64>
// CHECK-DAG: func.func private @_ZGVeN16v_logf(vector<16xf32>) -> vector<16xf32>
