// Regressions of gradients that once came out silently wrong, each checked
// against a closed form (finite differences cannot see some of them: an
// underflowing product is 0 at every nearby point).
// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s

// scf.for unsigned over i8 from 0 to 200 step 50 (4 iterations; as a signed
// loop it would run none): x^5, derivative 5 x^4.
func.func @unsigned_loop(%x: f64) -> f64 {
  %lb = arith.constant 0 : i8
  %ub = arith.constant 200 : i8
  %st = arith.constant 50 : i8
  %r = scf.for unsigned %i = %lb to %ub step %st iter_args(%s = %x) -> (f64) : i8 {
    %m = arith.mulf %s, %x : f64
    scf.yield %m : f64
  }
  return %r : f64
}

// A signed i8 loop from -100 to 100 step 50 (4 iterations; ub - lb
// overflows i8), whose body reads the induction variable: the product of
// x + i/100 for i = -100, -50, 0, 50.
func.func @narrow_signed_loop(%x: f64) -> f64 {
  %lb = arith.constant -100 : i8
  %ub = arith.constant 100 : i8
  %st = arith.constant 50 : i8
  %one = arith.constant 1.0 : f64
  %hundred = arith.constant 100.0 : f64
  %r = scf.for %i = %lb to %ub step %st iter_args(%s = %one) -> (f64) : i8 {
    %f = arith.sitofp %i : i8 to f64
    %d = arith.divf %f, %hundred : f64
    %t = arith.addf %x, %d : f64
    %m = arith.mulf %s, %t : f64
    scf.yield %m : f64
  }
  return %r : f64
}

// A product that underflows: x * 1e-170 * 1e-170 * 1e200 is 0 in f64, but
// its derivative, 1e-140, is not (dividing the product by x gives 0).
func.func @underflowing_product(%x: f64) -> f64 {
  %a = arith.constant 1.0e-170 : f64
  %b = arith.constant 1.0e200 : f64
  %v = tensor.from_elements %x, %a, %a, %b : tensor<4xf64>
  %one = arith.constant 1.0 : f64
  %init = tensor.from_elements %one : tensor<f64>
  %p = linalg.reduce ins(%v : tensor<4xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%in: f64, %acc: f64) {
      %m = arith.mulf %in, %acc : f64
      linalg.yield %m : f64
    }
  %r = tensor.extract %p[] : tensor<f64>
  return %r : f64
}

// A ReLU-like body written with scf.if inside linalg.generic:
// sum over x > 0 of x^2, derivative 2x where x > 0, 0 elsewhere.
#id = affine_map<(d0) -> (d0)>
#sum = affine_map<(d0) -> ()>
func.func @generic_with_if(%x: tensor<4xf64>) -> f64 {
  %zero = arith.constant 0.0 : f64
  %init = tensor.from_elements %zero : tensor<f64>
  %r = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf64>) outs(%init : tensor<f64>) {
  ^bb0(%a: f64, %o: f64):
    %c = arith.cmpf ogt, %a, %zero : f64
    %v = scf.if %c -> f64 {
      %m = arith.mulf %a, %a : f64
      scf.yield %m : f64
    } else {
      scf.yield %zero : f64
    }
    %s = arith.addf %o, %v : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  %e = tensor.extract %r[] : tensor<f64>
  return %e : f64
}

// scf.for inside a generic body, and the loop index read from inside it:
// sum_i x_i^(i+1), derivative (i+1) x_i^i.
func.func @generic_with_loop(%x: tensor<3xf64>) -> f64 {
  %zero = arith.constant 0.0 : f64
  %init = tensor.from_elements %zero : tensor<f64>
  %r = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]}
      ins(%x : tensor<3xf64>) outs(%init : tensor<f64>) {
  ^bb0(%a: f64, %o: f64):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f64
    %i = linalg.index 0 : index
    %n = scf.for %k = %c0 to %c1 step %c1 iter_args(%u = %c0) -> (index) {
      %n1 = arith.addi %i, %c1 : index
      scf.yield %n1 : index
    }
    %p = scf.for %k = %c0 to %n step %c1 iter_args(%q = %one) -> (f64) {
      %m = arith.mulf %q, %a : f64
      scf.yield %m : f64
    }
    %s = arith.addf %o, %p : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  %e = tensor.extract %r[] : tensor<f64>
  return %e : f64
}

func.func @cube(%a: f64) -> f64 {
  %s = arith.mulf %a, %a : f64
  %c = arith.mulf %s, %a : f64
  return %c : f64
}

// A call inside a generic body: sum of x_i^3, derivative 3 x_i^2.
func.func @generic_with_call(%x: tensor<3xf64>) -> f64 {
  %zero = arith.constant 0.0 : f64
  %init = tensor.from_elements %zero : tensor<f64>
  %r = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]}
      ins(%x : tensor<3xf64>) outs(%init : tensor<f64>) {
  ^bb0(%a: f64, %o: f64):
    %c = func.call @cube(%a) : (f64) -> f64
    %s = arith.addf %o, %c : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  %e = tensor.extract %r[] : tensor<f64>
  return %e : f64
}

// A parallel generic that reads its output (out * x): y_i = w_i * x_i,
// loss sum y_i, derivative w.r.t. the init w_i is x_i.
func.func @generic_reads_output(%x: tensor<3xf64>, %w: tensor<3xf64>) -> f64 {
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<3xf64>) outs(%w : tensor<3xf64>) {
  ^bb0(%a: f64, %o: f64):
    %m = arith.mulf %o, %a : f64
    linalg.yield %m : f64
  } -> tensor<3xf64>
  %zero = arith.constant 0.0 : f64
  %init = tensor.from_elements %zero : tensor<f64>
  %s = linalg.reduce ins(%y : tensor<3xf64>) outs(%init : tensor<f64>) dimensions = [0]
    (%in: f64, %acc: f64) {
      %t = arith.addf %in, %acc : f64
      linalg.yield %t : f64
    }
  %e = tensor.extract %s[] : tensor<f64>
  return %e : f64
}

// ranked -> unranked -> ranked: the cotangent comes back through the casts.
func.func @unranked_cast_chain(%x: tensor<3xf64>) -> f64 {
  %u = tensor.cast %x : tensor<3xf64> to tensor<*xf64>
  %r = tensor.cast %u : tensor<*xf64> to tensor<3xf64>
  %c1 = arith.constant 1 : index
  %e = tensor.extract %r[%c1] : tensor<3xf64>
  %s = arith.mulf %e, %e : f64
  return %s : f64
}

// A function that differentiates another inside its body, inactively (the
// gradient is not used by the result), differentiated itself: the nested
// request is rewritten too, whichever function comes first.
func.func @uses_inner_grad(%x: f64) -> f64 {
  %g = ad.grad @inner_square(%x) : (f64) -> f64
  %y = arith.mulf %x, %x : f64
  return %y : f64
}
func.func @inner_square(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}

// A signed i64 loop whose ub - lb overflows (bounds 1.5 * 2^62 on either
// side of zero, step as large: two iterations): x^3, derivative 3 x^2.
// The bounds are arguments, so nothing folds them.
func.func @huge_signed_bounds(%x: f64, %lb: i64, %ub: i64, %st: i64) -> f64 {
  %r = scf.for %i = %lb to %ub step %st iter_args(%s = %x) -> (f64) : i64 {
    %m = arith.mulf %s, %x : f64
    scf.yield %m : f64
  }
  return %r : f64
}

// A generic labelled parallel whose output map drops a loop, summing into
// its output: a reduction in fact. out[0] = 1 + sin x + x^2, derivative
// cos x + 2x.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @mislabelled_parallel(%x: f64) -> f64 {
  %a = math.sin %x : f64
  %b = arith.mulf %x, %x : f64
  %m = tensor.from_elements %a, %b, %x, %a : tensor<2x2xf64>
  %one = arith.constant 1.0 : f64
  %i = tensor.splat %one : tensor<2xf64>
  %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<2x2xf64>) outs(%i : tensor<2xf64>) {
  ^bb0(%u: f64, %p: f64):
    %s = arith.addf %p, %u : f64
    linalg.yield %s : f64
  } -> tensor<2xf64>
  %c0 = arith.constant 0 : index
  %e = tensor.extract %r[%c0] : tensor<2xf64>
  return %e : f64
}

func.func private @printMemrefF64(tensor<*xf64>)

func.func @main() {
  %x = arith.constant 1.1 : f64

  // CHECK: unsigned 1.61051 1.61051 7.3205
  %u, %gu = ad.value_and_grad @unsigned_loop(%x) : (f64) -> (f64, f64)
  %pu = func.call @unsigned_loop(%x) : (f64) -> f64
  vector.print str "unsigned "
  vector.print %u : f64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %pu : f64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %gu : f64

  // (x-1)(x-0.5)x(x+0.5) at 1.1: 0.1*0.6*1.1*1.6 = 0.1056; derivative
  // 0.6*1.1*1.6 + 0.1*1.1*1.6 + 0.1*0.6*1.6 + 0.1*0.6*1.1 = 1.394.
  // CHECK: narrow 0.1056 1.394
  %n, %gn = ad.value_and_grad @narrow_signed_loop(%x) : (f64) -> (f64, f64)
  vector.print str "narrow "
  vector.print %n : f64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %gn : f64

  // CHECK: underflow 0 1e-140
  %p, %gp = ad.value_and_grad @underflowing_product(%x) : (f64) -> (f64, f64)
  vector.print str "underflow "
  vector.print %p : f64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %gp : f64

  %v4 = arith.constant dense<[1.5, -2.0, 0.5, -0.25]> : tensor<4xf64>
  // CHECK: [3,  0,  1,  0]
  %gi = ad.grad @generic_with_if(%v4) : (tensor<4xf64>) -> tensor<4xf64>
  %gic = tensor.cast %gi : tensor<4xf64> to tensor<*xf64>
  func.call @printMemrefF64(%gic) : (tensor<*xf64>) -> ()

  %v3 = arith.constant dense<[1.5, 2.0, 0.5]> : tensor<3xf64>
  // 1, 2 * 2, 3 * 0.25
  // CHECK: [1,  4,  0.75]
  %gl = ad.grad @generic_with_loop(%v3) : (tensor<3xf64>) -> tensor<3xf64>
  %glc = tensor.cast %gl : tensor<3xf64> to tensor<*xf64>
  func.call @printMemrefF64(%glc) : (tensor<*xf64>) -> ()

  // CHECK: [6.75,  12,  0.75]
  %gc = ad.grad @generic_with_call(%v3) : (tensor<3xf64>) -> tensor<3xf64>
  %gcc = tensor.cast %gc : tensor<3xf64> to tensor<*xf64>
  func.call @printMemrefF64(%gcc) : (tensor<*xf64>) -> ()

  %w3 = arith.constant dense<[2.0, -1.0, 3.0]> : tensor<3xf64>
  // CHECK: [2,  -1,  3]
  // CHECK: [1.5,  2,  0.5]
  %gx, %gw = ad.grad @generic_reads_output(%v3, %w3) : (tensor<3xf64>, tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>)
  %gxc = tensor.cast %gx : tensor<3xf64> to tensor<*xf64>
  func.call @printMemrefF64(%gxc) : (tensor<*xf64>) -> ()
  %gwc = tensor.cast %gw : tensor<3xf64> to tensor<*xf64>
  func.call @printMemrefF64(%gwc) : (tensor<*xf64>) -> ()

  // CHECK: [0,  4,  0]
  %gk = ad.grad @unranked_cast_chain(%v3) : (tensor<3xf64>) -> tensor<3xf64>
  %gkc = tensor.cast %gk : tensor<3xf64> to tensor<*xf64>
  func.call @printMemrefF64(%gkc) : (tensor<*xf64>) -> ()

  // CHECK: nested 2.2
  %gg = ad.grad @uses_inner_grad(%x) : (f64) -> f64
  vector.print str "nested "
  vector.print %gg : f64

  // 1.1^3 = 1.331, 3 * 1.1^2 = 3.63.
  // CHECK: huge bounds 1.331 3.63
  %lb = arith.constant -6917529027641081856 : i64
  %ub = arith.constant 6917529027641081856 : i64
  %h, %gh = func.call @huge_bounds_grad(%x, %lb, %ub, %ub) : (f64, i64, i64, i64) -> (f64, f64)
  vector.print str "huge bounds "
  vector.print %h : f64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %gh : f64

  // 1 + sin 1.1 + 1.21 = 3.10120736, cos 1.1 + 2.2 = 2.65359612.
  // CHECK: mislabelled 3.10121 2.6536
  %ml, %gml = ad.value_and_grad @mislabelled_parallel(%x) : (f64) -> (f64, f64)
  vector.print str "mislabelled "
  vector.print %ml : f64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %gml : f64
  return
}

// Not inlined into @main, where the bounds would become constants.
func.func @huge_bounds_grad(%x: f64, %lb: i64, %ub: i64, %st: i64) -> (f64, f64) attributes {no_inline} {
  %v, %g = ad.value_and_grad @huge_signed_bounds(%x, %lb, %ub, %st) : (f64, i64, i64, i64) -> (f64, f64)
  return %v, %g : f64, f64
}
