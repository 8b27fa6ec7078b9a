"""Fit a damped spring's stiffness and damping to observed positions.

The simulation is MLIR (an scf.for loop over the observations, semi-implicit
Euler steps); mlir_ad compiles it and its gradient with respect to the two
parameters, and numpy runs gradient descent on noisy data. The loss printed
every few steps goes down, and the fitted parameters approach the true ones.

Run: PYTHONPATH=build/python_packages /usr/bin/python3 examples/python/fit_spring.py
"""

import numpy as np

import mlir_ad

SIMULATION = r"""
// Squared distance between the simulated positions and the observations,
// for a unit mass starting at x = 1, v = 0, time step dt.
func.func @loss(%k: f64, %c: f64, %observed: tensor<?xf64>, %dt: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %n = tensor.dim %observed, %c0 : tensor<?xf64>
  %x, %v, %sum = scf.for %t = %c0 to %n step %c1
      iter_args(%x = %one, %v = %zero, %sum = %zero) -> (f64, f64, f64) {
    %kx = arith.mulf %k, %x : f64
    %cv = arith.mulf %c, %v : f64
    %f = arith.addf %kx, %cv : f64
    %fdt = arith.mulf %f, %dt : f64
    %v1 = arith.subf %v, %fdt : f64
    %dx = arith.mulf %v1, %dt : f64
    %x1 = arith.addf %x, %dx : f64
    %obs = tensor.extract %observed[%t] : tensor<?xf64>
    %d = arith.subf %x1, %obs : f64
    %dd = arith.mulf %d, %d : f64
    %s1 = arith.addf %sum, %dd : f64
    scf.yield %x1, %v1, %s1 : f64, f64, f64
  }
  return %sum : f64
}
"""


def simulate(k, c, steps, dt):
    """The same trajectory in numpy, to make the data."""
    x, v, xs = 1.0, 0.0, []
    for _ in range(steps):
        v -= (k * x + c * v) * dt
        x += v * dt
        xs.append(x)
    return np.array(xs)


def main():
    rng = np.random.default_rng(0)
    dt, steps = 0.05, 200
    true_k, true_c = 4.0, 0.5
    observed = simulate(true_k, true_c, steps, dt) + 0.01 * rng.standard_normal(steps)

    m = mlir_ad.compile(SIMULATION)
    loss_and_grad = mlir_ad.value_and_grad(m.loss, wrt=(0, 1))

    k, c = 2.0, 1.5
    rate = 0.004
    losses = []
    for step in range(101):
        loss, (dk, dc) = loss_and_grad(k, c, observed, dt)
        losses.append(loss)
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss:10.6f}  k {k:.4f}  c {c:.4f}")
        k -= rate * dk
        c -= rate * dc
    print(f"fitted k = {k:.3f} (true {true_k}), c = {c:.3f} (true {true_c})")
    assert losses[-1] < 0.1 * losses[0], "the loss did not decrease"


if __name__ == "__main__":
    main()
