"""Forward mode and second order, timed through the Python package.

Prints, each measured in this run (best of several repetitions):
- jvp/primal: the scalar loop of bench/scalar-loop.mlir (10^6 iterations,
  target <= 1.5) and the MLP of bench/mlp.mlir (batch 64, widths 256,
  tangents of the four weights and biases, target <= 2.5);
- hvp/gradient on the MLP and the scalar loop (target <= 3), and on a loop
  and a while loop whose gradients keep a tape per iteration (forward over
  reverse through the tape's buffers);
- the logsumexp and cross-entropy gradients over 10^6 logits (bench/*.mlir)
  with the max shift differentiated (as written there) and with it under
  ad.stop_gradient (the shift is mathematically gradient-free).
- the worst relative error of the dot-product test <ybar, jvp(t)> =
  <vjp(ybar), t> over the programs of python/tests (run by pytest).

Run: PYTHONPATH=build/python_packages /usr/bin/python3 bench/forward-mode.py
"""

import os
import sys
import time

import numpy as np

import mlir_ad

BENCH = os.path.dirname(os.path.abspath(__file__))


def best(fn, *args, repeat=7, min_time=0.2):
    fn(*args)
    times = []
    for _ in range(repeat):
        count, start = 0, time.perf_counter()
        while True:
            fn(*args)
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time / repeat:
                break
        times.append(elapsed / count)
    return min(times)


def line(label, seconds):
    print(f"  {label:<44} {seconds * 1e3:10.3f} ms")


def scalar_loop():
    print("scalar loop, 10^6 iterations (bench/scalar-loop.mlir)")
    m = mlir_ad.compile(os.path.join(BENCH, "scalar-loop.mlir"))
    x, n = 0.7, 1000000
    primal = best(m.primal, x, n)
    jvp = best(lambda: mlir_ad.jvp(m.primal, (x, n), (1.0,)))
    grad = best(mlir_ad.grad(m.primal), x, n)
    line("primal", primal)
    line("jvp", jvp)
    line("gradient", grad)
    print(f"  jvp/primal {jvp / primal:.2f} (target <= 1.5), "
          f"gradient/primal {grad / primal:.2f}")
    # The loop body's x^2 sin(x) is loop-invariant: ad-lower-to-llvm hoists
    # it before differentiating, so this gradient keeps no tape.
    hvp = best(lambda: mlir_ad.hvp(m.primal, (x, n), (1.0,)))
    line("hvp", hvp)
    print(f"  hvp/gradient {hvp / grad:.2f} (target <= 3)")


TAPED = """
func.func @for_loop(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> f64 {
    %s = math.sin %a : f64
    %m = arith.mulf %s, %x : f64
    %h = arith.constant 0.5 : f64
    %mh = arith.mulf %m, %h : f64
    %b = arith.addf %mh, %a : f64
    scf.yield %b : f64
  }
  return %r : f64
}
func.func @while_loop(%x: f64, %n: f64) -> f64 {
  %zero = arith.constant 0.0 : f64
  %r:2 = scf.while (%a = %x, %k = %zero) : (f64, f64) -> (f64, f64) {
    %go = arith.cmpf olt, %k, %n : f64
    scf.condition(%go) %a, %k : f64, f64
  } do {
  ^bb0(%a: f64, %k: f64):
    %s = math.sin %a : f64
    %m = arith.mulf %s, %x : f64
    %h = arith.constant 0.5 : f64
    %mh = arith.mulf %m, %h : f64
    %b = arith.addf %mh, %a : f64
    %one = arith.constant 1.0 : f64
    %k2 = arith.addf %k, %one : f64
    scf.yield %b, %k2 : f64, f64
  }
  return %r#0 : f64
}
"""


def taped_loops():
    print("loops whose gradient keeps a tape per iteration, 10^6 iterations")
    m = mlir_ad.compile(TAPED)
    for name, args in (("for_loop", (0.7, 1000000)),
                       ("while_loop", (0.7, 1000000.0))):
        fun = m[name]
        primal = best(fun, *args)
        grad = best(mlir_ad.grad(fun, wrt=0), *args)
        hvp = best(lambda: mlir_ad.hvp(fun, args, (1.0,), wrt=0))
        line(f"{name}: primal", primal)
        line(f"{name}: gradient", grad)
        line(f"{name}: hvp", hvp)
        print(f"  {name}: gradient/primal {grad / primal:.2f}, "
              f"hvp/gradient {hvp / grad:.2f} (target <= 3)")


def mlp():
    print("MLP, batch 64, widths 256, tanh, squared loss (bench/mlp.mlir)")
    m = mlir_ad.compile(os.path.join(BENCH, "mlp.mlir"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)) * 0.1
    w1 = rng.standard_normal((256, 256)) * 0.05
    b1 = rng.standard_normal(256) * 0.1
    w2 = rng.standard_normal((256, 256)) * 0.05
    b2 = rng.standard_normal(256) * 0.1
    t = rng.standard_normal((64, 256))
    args = (x, w1, b1, w2, b2, t)
    wrt = (1, 2, 3, 4)
    tangents = tuple(rng.standard_normal(np.shape(args[p])) for p in wrt)
    primal = best(m.mlp_loss, *args)
    jvp = best(lambda: mlir_ad.jvp(m.mlp_loss, args, tangents, wrt=wrt))
    g = mlir_ad.grad(m.mlp_loss, wrt=wrt)
    grad = best(g, *args)
    hvp = best(lambda: mlir_ad.hvp(m.mlp_loss, args, tangents, wrt=wrt))
    line("primal", primal)
    line("jvp (4 weight/bias tangents)", jvp)
    line("gradient", grad)
    line("hvp", hvp)
    print(f"  jvp/primal {jvp / primal:.2f} (target <= 2.5), "
          f"hvp/gradient {hvp / grad:.2f} (target <= 3)")
    # The numbers agree with the gradient: <grad, t> = jvp.
    _, tl = mlir_ad.jvp(m.mlp_loss, args, tangents, wrt=wrt)
    gs = g(*args)
    dot = sum(float(np.sum(a * b)) for a, b in zip(gs, tangents))
    print(f"  check: |jvp - <grad, t>| / |jvp| = {abs(tl - dot) / abs(tl):.1e}")


def shift(path, function, extra_args):
    text = open(path).read()
    stopped = text.replace(
        "  %m = tensor.extract %mt[] : tensor<f64>\n",
        "  %mts = ad.stop_gradient %mt : tensor<f64>\n"
        "  %m = tensor.extract %mts[] : tensor<f64>\n").replace(
        "ins(%x, %mt : tensor<1000000xf64>, tensor<f64>)",
        "ins(%x, %mts : tensor<1000000xf64>, tensor<f64>)")
    assert stopped != text
    plain, stop = mlir_ad.compile(text), mlir_ad.compile(stopped)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(1000000)
    g_plain = mlir_ad.grad(plain[function], wrt=0)
    g_stop = mlir_ad.grad(stop[function], wrt=0)
    np.testing.assert_allclose(g_plain(x, *extra_args), g_stop(x, *extra_args),
                               rtol=1e-9, atol=1e-15)
    primal = best(plain[function], x, *extra_args)
    a = best(g_plain, x, *extra_args)
    b = best(g_stop, x, *extra_args)
    line("primal", primal)
    line("gradient, shift differentiated", a)
    line("gradient, shift under ad.stop_gradient", b)
    print(f"  gradient/primal {a / primal:.2f} -> {b / primal:.2f} "
          f"(stop_gradient saves {100 * (1 - b / a):.0f}%)")


def main():
    scalar_loop()
    taped_loops()
    mlp()
    print("logsumexp over 10^6 (bench/logsumexp.mlir)")
    shift(os.path.join(BENCH, "logsumexp.mlir"), "logsumexp", ())
    print("softmax cross-entropy over 10^6 (bench/cross-entropy.mlir)")
    shift(os.path.join(BENCH, "cross-entropy.mlir"), "cross_entropy", (17,))
    sys.path.insert(0, os.path.join(BENCH, "..", "python", "tests"))
    import pytest
    import test_forward_mode
    pytest.main(["-q", "-p", "no:cacheprovider", "-k", "dot_product",
                 os.path.join(BENCH, "..", "python", "tests",
                              "test_forward_mode.py")])
    errors = test_forward_mode.DOT_PRODUCT_ERRORS
    if errors:
        name, worst = max(errors.items(), key=lambda kv: kv[1])
        print(f"dot-product test: {len(errors)} functions, worst relative "
              f"error {worst:.1e} ({name})")


if __name__ == "__main__":
    main()
