// GradBench eval "ode": the system y_0' = x_0, y_i' = x_i * y_{i-1} (i > 0)
// with y(0) = 0, solved over t in [0, 2] by s steps of classic RK4 with
// h = 2/s. primal(x, s) = y(2); gradient(x, s) = the gradient of the last
// component of y(2) with respect to x, requested with ad.grad. The step
// loop carries y (n elements) and the pullback reads each step's stages
// back from a buffer of s rows of n elements.

// z = f(x, y): z_0 = x_0 and z_i = x_i * y_{i-1}, as x * [1, y_0 .. y_{n-2}].
func.func private @ode_fun(%x: tensor<?xf64>, %y: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %m = arith.subi %n, %c1 : index
  %head = tensor.extract_slice %y[0] [%m] [1] : tensor<?xf64> to tensor<?xf64>
  %shifted = tensor.pad %head low[1] high[0] {
  ^bb0(%i: index):
    tensor.yield %one : f64
  } : tensor<?xf64> to tensor<?xf64>
  %init = tensor.empty(%n) : tensor<?xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %shifted : tensor<?xf64>, tensor<?xf64>) outs(%init : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %p = arith.mulf %a, %b : f64
    linalg.yield %p : f64
  } -> tensor<?xf64>
  return %z : tensor<?xf64>
}

// y + c * k, elementwise.
func.func private @axpy(%y: tensor<?xf64>, %c: f64, %k: tensor<?xf64>) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %y, %c0 : tensor<?xf64>
  %init = tensor.empty(%n) : tensor<?xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%y, %k : tensor<?xf64>, tensor<?xf64>) outs(%init : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %t = arith.mulf %c, %b : f64
    %s = arith.addf %a, %t : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}

func.func @primal(%x: tensor<?xf64>, %s: index) -> tensor<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %two = arith.constant 2.0 : f64
  %six = arith.constant 6.0 : f64
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %si = arith.index_cast %s : index to i64
  %sf = arith.sitofp %si : i64 to f64
  %h = arith.divf %two, %sf : f64
  %half = arith.divf %h, %two : f64
  %sixth = arith.divf %h, %six : f64
  %empty = tensor.empty(%n) : tensor<?xf64>
  %y0 = linalg.fill ins(%zero : f64) outs(%empty : tensor<?xf64>) -> tensor<?xf64>
  %yf = scf.for %step = %c0 to %s step %c1 iter_args(%y = %y0) -> tensor<?xf64> {
    %k1 = func.call @ode_fun(%x, %y) : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
    %t1 = func.call @axpy(%y, %half, %k1) : (tensor<?xf64>, f64, tensor<?xf64>) -> tensor<?xf64>
    %k2 = func.call @ode_fun(%x, %t1) : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
    %t2 = func.call @axpy(%y, %half, %k2) : (tensor<?xf64>, f64, tensor<?xf64>) -> tensor<?xf64>
    %k3 = func.call @ode_fun(%x, %t2) : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
    %t3 = func.call @axpy(%y, %h, %k3) : (tensor<?xf64>, f64, tensor<?xf64>) -> tensor<?xf64>
    %k4 = func.call @ode_fun(%x, %t3) : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
    // y + h/6 * (k1 + 2 k2 + 2 k3 + k4)
    %init = tensor.empty(%n) : tensor<?xf64>
    %next = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%y, %k1, %k2, %k3, %k4 : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) outs(%init : tensor<?xf64>) {
    ^bb0(%yi: f64, %a: f64, %b: f64, %c: f64, %d: f64, %out: f64):
      %b2 = arith.mulf %two, %b : f64
      %c2 = arith.mulf %two, %c : f64
      %s1 = arith.addf %a, %b2 : f64
      %s2 = arith.addf %s1, %c2 : f64
      %s3 = arith.addf %s2, %d : f64
      %w = arith.mulf %sixth, %s3 : f64
      %r = arith.addf %yi, %w : f64
      linalg.yield %r : f64
    } -> tensor<?xf64>
    scf.yield %next : tensor<?xf64>
  }
  return %yf : tensor<?xf64>
}

// The last component of y(2).
func.func private @last(%x: tensor<?xf64>, %s: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %y = func.call @primal(%x, %s) : (tensor<?xf64>, index) -> tensor<?xf64>
  %n = tensor.dim %y, %c0 : tensor<?xf64>
  %m = arith.subi %n, %c1 : index
  %v = tensor.extract %y[%m] : tensor<?xf64>
  return %v : f64
}

func.func @gradient(%x: tensor<?xf64>, %s: index) -> tensor<?xf64> {
  %g = ad.grad @last(%x, %s) : (tensor<?xf64>, index) -> tensor<?xf64>
  return %g : tensor<?xf64>
}
