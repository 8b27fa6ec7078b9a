// GradBench eval "hello": square(x) = x * x, and double(x) = d square / dx,
// requested with ad.grad.
func.func @square(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}

func.func @double(%x: f64) -> f64 {
  %g = ad.grad @square(%x) : (f64) -> f64
  return %g : f64
}
