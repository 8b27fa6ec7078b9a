"""Python call overhead and compile time of mlir_ad gradients.

Prints, for a compiled gradient called from Python, the time per call on
scalars and on arrays (8, 1,000 and 10^6 elements), next to the cost of a
numpy ufunc call on the same arrays (np.add), and the time to compile a
gradient (grad() of a function not compiled before: ad-lower-to-llvm plus
LLVM -O3). Run it with MLIR_AD_KEEP_MALLOC_SETTINGS=1 to see the cost of
glibc's default malloc settings on large arrays.

Run: PYTHONPATH=build/python_packages /usr/bin/python3 bench/python-overhead.py
"""

import time

import numpy as np

import mlir_ad

SOURCE = r"""
func.func @scalar(%x: f64, %y: f64) -> f64 {
  %p = arith.mulf %x, %y : f64
  %s = math.sin %p : f64
  return %s : f64
}
func.func @dot(%x: tensor<?xf64>, %y: tensor<?xf64>) -> f64 {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<f64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<f64>) -> tensor<f64>
  %d = linalg.dot ins(%x, %y : tensor<?xf64>, tensor<?xf64>) outs(%z : tensor<f64>) -> tensor<f64>
  %v = tensor.extract %d[] : tensor<f64>
  return %v : f64
}
"""


def per_call(fn, *args, repeat=5, number=20000):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        best = min(best, (time.perf_counter() - start) / number)
    return best


def main():
    start = time.perf_counter()
    m = mlir_ad.compile(SOURCE)
    parse = time.perf_counter() - start

    start = time.perf_counter()
    g_scalar = mlir_ad.grad(m.scalar)
    compile_scalar = time.perf_counter() - start
    start = time.perf_counter()
    g_dot = mlir_ad.grad(m.dot)
    compile_dot = time.perf_counter() - start

    print(f"parse + verify:                     {parse * 1e3:8.2f} ms")
    print(f"compile grad of @scalar:            {compile_scalar * 1e3:8.2f} ms")
    print(f"compile grad of @dot:               {compile_dot * 1e3:8.2f} ms")

    noop = per_call(lambda a, b: None, 1.0, 2.0)
    t_scalar = per_call(g_scalar, 0.5, 1.5)
    print(f"python lambda call (baseline):      {noop * 1e6:8.3f} us")
    print(f"grad(@scalar)(x, y):                {t_scalar * 1e6:8.3f} us")
    for n in (8, 1000, 10**6):
        x = np.random.default_rng(0).standard_normal(n)
        y = np.random.default_rng(1).standard_normal(n)
        number = 20000 if n < 10**5 else 50
        t_dot = per_call(g_dot, x, y, number=number)
        t_add = per_call(np.add, x, y, number=number)
        print(f"grad(@dot) n={n:7d}:               {t_dot * 1e6:8.3f} us"
              f"   np.add: {t_add * 1e6:8.3f} us   ratio {t_dot / t_add:5.2f}x")


if __name__ == "__main__":
    main()
