#!/usr/bin/python3
"""Tensor gradients of MLIR-AD against PyTorch eager and numpy (OpenBLAS),
measured in one run on the same inputs, single-threaded, in f64 and f32.

    bench/peers [--quick] [--only NAME ...] [--out docs/benchmarks]
                [--threads N]

(`bench/peers` installs the peers first: Debian's python3-torch,
libopenblas0-pthread and python3-matplotlib.) Every time is the best of
several calls from Python (each call converts its numpy arguments and
allocates its results, as a user's call does). It prints, per workload and
precision: MLIR-AD's primal and gradient, PyTorch's forward and
forward+backward, numpy's primal and, where it has one, a hand-written numpy
gradient; the gradient ratios ours / torch and gradient / primal, and the
machine bound of the gradient (its FLOPs at the OpenBLAS matmul rate
measured in the same run, or, for the programs bound by memory, the bytes
it must read and write at the bandwidth of a large numpy copy measured in
the same run). It writes peers.md (the table) and peers.png (the plot) to
--out.

With --threads N (N > 1), every tool gets N threads: MLIR-AD compiles with
parallel=True (OpenMP), torch and OpenBLAS use N threads; the table adds
MLIR-AD's single-threaded gradient and its speedup on N threads, and goes
to peers-Nthreads.md and .png.
"""

import argparse
import os
import sys
import time


def _threads_argument():
    """--threads N, read before numpy and torch load their BLAS."""
    for i, arg in enumerate(sys.argv):
        value = None
        if arg == "--threads" and i + 1 < len(sys.argv):
            value = sys.argv[i + 1]
        elif arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
        if value is not None:
            try:
                return max(1, int(value))
            except ValueError:
                raise SystemExit(f"--threads takes a number, got {value}")
    return 1


THREADS = _threads_argument()
PARALLEL = THREADS > 1
# The peers' threads (one unless --threads): set before numpy and torch load
# their BLAS. OMP_NUM_THREADS also sets MLIR-AD's OpenMP threads.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(THREADS)

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python_packages"))
import mlir_ad  # noqa: E402

try:
    import torch  # noqa: E402
    torch.set_num_threads(THREADS)
except ImportError:  # pragma: no cover - the wrapper installs it
    torch = None


def best_time(f, min_reps=5, min_seconds=0.3):
    f()  # warm up (and compile)
    best, total, reps = float("inf"), 0.0, 0
    while reps < min_reps or total < min_seconds:
        t0 = time.perf_counter()
        f()
        dt = time.perf_counter() - t0
        best, total, reps = min(best, dt), total + dt, reps + 1
    return best


# --- the workloads ----------------------------------------------------------
# Each builds: MLIR source (T = element type), the entry name, the argument
# positions to differentiate, numpy inputs, a torch loss, a numpy primal,
# optionally a hand-written numpy gradient, and the gradient's FLOPs.

def matmul_trace(n):
    src = f"""
func.func @f(%a: tensor<{n}x{n}xT>, %b: tensor<{n}x{n}xT>) -> T {{
  %z = arith.constant 0.0 : T
  %e = tensor.empty() : tensor<{n}x{n}xT>
  %f = linalg.fill ins(%z : T) outs(%e : tensor<{n}x{n}xT>) -> tensor<{n}x{n}xT>
  %c = linalg.matmul ins(%a, %b : tensor<{n}x{n}xT>, tensor<{n}x{n}xT>) outs(%f : tensor<{n}x{n}xT>) -> tensor<{n}x{n}xT>
  %s0 = tensor.empty() : tensor<T>
  %s1 = linalg.fill ins(%z : T) outs(%s0 : tensor<T>) -> tensor<T>
  %t = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0, d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}} ins(%c : tensor<{n}x{n}xT>) outs(%s1 : tensor<T>) {{
  ^bb0(%x: T, %acc: T):
    %y = arith.addf %acc, %x : T
    linalg.yield %y : T
  }} -> tensor<T>
  %v = tensor.extract %t[] : tensor<T>
  return %v : T
}}"""
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((n, n)), rng.standard_normal((n, n))]
    return dict(
        name=f"matmul+trace {n}", src=src, wrt=[0, 1], args=args,
        torch=lambda a, b: torch.trace(a @ b),
        numpy=lambda a, b: np.trace(a @ b),
        # d/dA tr(AB) = B^T, d/dB = A^T: no work but copies.
        numpy_grad=lambda a, b: (b.T.copy(), a.T.copy()),
        flops=2 * n ** 3)


def mlp(batch, width):
    w = width
    src = f"""
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @f(%x: tensor<{batch}x{w}xT>, %w1: tensor<{w}x{w}xT>, %b1: tensor<{w}xT>, %w2: tensor<{w}x{w}xT>, %b2: tensor<{w}xT>, %t: tensor<{batch}x{w}xT>) -> T {{
  %z = arith.constant 0.0 : T
  %half = arith.constant 0.5 : T
  %e = tensor.empty() : tensor<{batch}x{w}xT>
  %f0 = linalg.fill ins(%z : T) outs(%e : tensor<{batch}x{w}xT>) -> tensor<{batch}x{w}xT>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<{batch}x{w}xT>, tensor<{w}x{w}xT>) outs(%f0 : tensor<{batch}x{w}xT>) -> tensor<{batch}x{w}xT>
  %h = linalg.generic {{indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}} ins(%m1, %b1 : tensor<{batch}x{w}xT>, tensor<{w}xT>) outs(%e : tensor<{batch}x{w}xT>) {{
  ^bb0(%a: T, %b: T, %o: T):
    %s = arith.addf %a, %b : T
    %th = math.tanh %s : T
    linalg.yield %th : T
  }} -> tensor<{batch}x{w}xT>
  %m2 = linalg.matmul ins(%h, %w2 : tensor<{batch}x{w}xT>, tensor<{w}x{w}xT>) outs(%f0 : tensor<{batch}x{w}xT>) -> tensor<{batch}x{w}xT>
  %s0 = tensor.empty() : tensor<T>
  %s1 = linalg.fill ins(%z : T) outs(%s0 : tensor<T>) -> tensor<T>
  %l = linalg.generic {{indexing_maps = [#id, #row, #id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}} ins(%m2, %b2, %t : tensor<{batch}x{w}xT>, tensor<{w}xT>, tensor<{batch}x{w}xT>) outs(%s1 : tensor<T>) {{
  ^bb0(%y: T, %bb: T, %tt: T, %acc: T):
    %yb = arith.addf %y, %bb : T
    %d = arith.subf %yb, %tt : T
    %dd = arith.mulf %d, %d : T
    %hd = arith.mulf %dd, %half : T
    %n = arith.addf %acc, %hd : T
    linalg.yield %n : T
  }} -> tensor<T>
  %v = tensor.extract %l[] : tensor<T>
  return %v : T
}}"""
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((batch, w)) * 0.1,
            rng.standard_normal((w, w)) * 0.05, rng.standard_normal(w) * 0.1,
            rng.standard_normal((w, w)) * 0.05, rng.standard_normal(w) * 0.1,
            rng.standard_normal((batch, w))]

    def numpy_primal(x, w1, b1, w2, b2, t):
        h = np.tanh(x @ w1 + b1)
        return 0.5 * np.sum((h @ w2 + b2 - t) ** 2)

    def numpy_grad(x, w1, b1, w2, b2, t):
        h = np.tanh(x @ w1 + b1)
        d = h @ w2 + b2 - t
        dh = (d @ w2.T) * (1 - h * h)
        return x.T @ dh, dh.sum(0), h.T @ d, d.sum(0)

    return dict(
        name=f"MLP {batch}x{w}", src=src, wrt=[1, 2, 3, 4], args=args,
        torch=lambda x, w1, b1, w2, b2, t: 0.5 * torch.sum(
            (torch.tanh(x @ w1 + b1) @ w2 + b2 - t) ** 2),
        numpy=numpy_primal, numpy_grad=numpy_grad,
        flops=6 * 2 * batch * w * w)


def logsumexp(n):
    src = f"""
func.func @f(%x: tensor<{n}xT>) -> T {{
  %low = arith.constant -1.0e30 : T
  %z = arith.constant 0.0 : T
  %s0 = tensor.empty() : tensor<T>
  %m0 = linalg.fill ins(%low : T) outs(%s0 : tensor<T>) -> tensor<T>
  %mt = linalg.reduce ins(%x : tensor<{n}xT>) outs(%m0 : tensor<T>) dimensions = [0]
    (%in: T, %acc: T) {{
      %mx = arith.maximumf %in, %acc : T
      linalg.yield %mx : T
    }}
  %m = tensor.extract %mt[] : tensor<T>
  %z0 = linalg.fill ins(%z : T) outs(%s0 : tensor<T>) -> tensor<T>
  %st = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}} ins(%x, %mt : tensor<{n}xT>, tensor<T>) outs(%z0 : tensor<T>) {{
  ^bb0(%in: T, %mm: T, %acc: T):
    %d = arith.subf %in, %mm : T
    %e = math.exp %d : T
    %s = arith.addf %acc, %e : T
    linalg.yield %s : T
  }} -> tensor<T>
  %s = tensor.extract %st[] : tensor<T>
  %ls = math.log %s : T
  %r = arith.addf %ls, %m : T
  return %r : T
}}"""
    rng = np.random.default_rng(2)

    def numpy_primal(x):
        m = x.max()
        return m + np.log(np.sum(np.exp(x - m)))

    def numpy_grad(x):
        e = np.exp(x - x.max())
        return (e / e.sum(),)

    return dict(name=f"logsumexp {n:.0e}".replace("+0", ""), src=src, wrt=[0],
                args=[rng.standard_normal(n)],
                torch=lambda x: torch.logsumexp(x, 0), numpy=numpy_primal,
                numpy_grad=numpy_grad, flops=None, bytes=2 * 8 * n)


def cross_entropy(rows, cols):
    src = f"""
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
func.func @f(%x: tensor<{rows}x{cols}xT>, %y: tensor<{rows}x{cols}xT>) -> T {{
  %low = arith.constant -1.0e30 : T
  %z = arith.constant 0.0 : T
  %e = tensor.empty() : tensor<{rows}xT>
  %m0 = linalg.fill ins(%low : T) outs(%e : tensor<{rows}xT>) -> tensor<{rows}xT>
  %m = linalg.reduce ins(%x : tensor<{rows}x{cols}xT>) outs(%m0 : tensor<{rows}xT>) dimensions = [1]
    (%in: T, %acc: T) {{
      %mx = arith.maximumf %in, %acc : T
      linalg.yield %mx : T
    }}
  %z0 = linalg.fill ins(%z : T) outs(%e : tensor<{rows}xT>) -> tensor<{rows}xT>
  %s = linalg.generic {{indexing_maps = [#id, #col, #col], iterator_types = ["parallel", "reduction"]}} ins(%x, %m : tensor<{rows}x{cols}xT>, tensor<{rows}xT>) outs(%z0 : tensor<{rows}xT>) {{
  ^bb0(%in: T, %mm: T, %acc: T):
    %d = arith.subf %in, %mm : T
    %ex = math.exp %d : T
    %a = arith.addf %acc, %ex : T
    linalg.yield %a : T
  }} -> tensor<{rows}xT>
  %lse = linalg.generic {{indexing_maps = [#vec, #vec, #vec], iterator_types = ["parallel"]}} ins(%s, %m : tensor<{rows}xT>, tensor<{rows}xT>) outs(%e : tensor<{rows}xT>) {{
  ^bb0(%ss: T, %mm: T, %o: T):
    %ls = math.log %ss : T
    %r = arith.addf %ls, %mm : T
    linalg.yield %r : T
  }} -> tensor<{rows}xT>
  %t0 = tensor.empty() : tensor<T>
  %t1 = linalg.fill ins(%z : T) outs(%t0 : tensor<T>) -> tensor<T>
  %l = linalg.generic {{indexing_maps = [#id, #id, #col, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}} ins(%x, %y, %lse : tensor<{rows}x{cols}xT>, tensor<{rows}x{cols}xT>, tensor<{rows}xT>) outs(%t1 : tensor<T>) {{
  ^bb0(%in: T, %lab: T, %l0: T, %acc: T):
    %d = arith.subf %l0, %in : T
    %w = arith.mulf %lab, %d : T
    %a = arith.addf %acc, %w : T
    linalg.yield %a : T
  }} -> tensor<T>
  %v = tensor.extract %l[] : tensor<T>
  return %v : T
}}"""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, cols, rows)
    onehot = np.zeros((rows, cols))
    onehot[np.arange(rows), labels] = 1

    def numpy_primal(x, y):
        m = x.max(1, keepdims=True)
        lse = m + np.log(np.exp(x - m).sum(1, keepdims=True))
        return np.sum(y * (lse - x))

    def numpy_grad(x, y):
        e = np.exp(x - x.max(1, keepdims=True))
        p = e / e.sum(1, keepdims=True)
        return (p * y.sum(1, keepdims=True) - y,)

    return dict(
        name=f"cross-entropy {rows}x{cols}", src=src, wrt=[0],
        args=[rng.standard_normal((rows, cols)), onehot],
        torch=lambda x, y: torch.sum(
            y * (torch.logsumexp(x, 1, keepdim=True) - x)),
        numpy=numpy_primal, numpy_grad=numpy_grad, flops=None,
        bytes=3 * 8 * rows * cols)


def conv_net(size, cin, cout):
    h = size
    o = h - 2
    src = f"""
func.func @f(%x: tensor<1x{h}x{h}x{cin}xT>, %k: tensor<3x3x{cin}x{cout}xT>) -> T {{
  %z = arith.constant 0.0 : T
  %e = tensor.empty() : tensor<1x{o}x{o}x{cout}xT>
  %f = linalg.fill ins(%z : T) outs(%e : tensor<1x{o}x{o}x{cout}xT>) -> tensor<1x{o}x{o}x{cout}xT>
  %c = linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}} ins(%x, %k : tensor<1x{h}x{h}x{cin}xT>, tensor<3x3x{cin}x{cout}xT>) outs(%f : tensor<1x{o}x{o}x{cout}xT>) -> tensor<1x{o}x{o}x{cout}xT>
  %s0 = tensor.empty() : tensor<T>
  %s1 = linalg.fill ins(%z : T) outs(%s0 : tensor<T>) -> tensor<T>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> ()>], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}} ins(%c : tensor<1x{o}x{o}x{cout}xT>) outs(%s1 : tensor<T>) {{
  ^bb0(%a: T, %acc: T):
    %p = arith.maximumf %a, %z : T
    %s = arith.addf %acc, %p : T
    linalg.yield %s : T
  }} -> tensor<T>
  %v = tensor.extract %r[] : tensor<T>
  return %v : T
}}"""
    rng = np.random.default_rng(4)

    def torch_loss(x, k):
        y = torch.nn.functional.conv2d(x.permute(0, 3, 1, 2),
                                       k.permute(3, 2, 0, 1))
        return torch.relu(y).sum()

    def numpy_primal(x, k):
        from numpy.lib.stride_tricks import sliding_window_view
        win = sliding_window_view(x[0], (3, 3), axis=(0, 1))  # o,o,cin,3,3
        y = np.einsum("ijcab,abcf->ijf", win, k, optimize=True)
        return np.maximum(y, 0).sum()

    return dict(
        name=f"conv3x3+relu {h}x{h}x{cin}->{cout}", src=src, wrt=[0, 1],
        args=[rng.standard_normal((1, h, h, cin)),
              rng.standard_normal((3, 3, cin, cout)) * 0.2],
        torch=torch_loss, numpy=numpy_primal, numpy_grad=None,
        flops=3 * 2 * o * o * cout * 9 * cin)


def gmm(d, k, n):
    """GradBench's gmm (the ADBench formulation with the Wishart prior), its
    objective and gradient from bench/gradbench/gmm.mlir; f64 only (the
    eval's type)."""
    from mlir_ad import gradbench
    rng = np.random.default_rng(31337)
    data = {"d": d, "k": k, "n": n, "m": 0, "gamma": 1.0,
            "alpha": rng.standard_normal(k), "mu": rng.uniform(0, 1, (k, d)),
            "q": rng.standard_normal((k, d)),
            "l": rng.standard_normal((k, d * (d - 1) // 2)),
            "x": rng.standard_normal((n, d))}
    args = list(gradbench._gmm_input(data))
    # Q_k's strictly lower triangle, column by column (GradBench's order).
    rows, cols = zip(*[(j, i) for i in range(d) for j in range(i + 1, d)])
    rows, cols = list(rows), list(cols)

    def lower(q, l, lib):
        if lib is np:
            big_q = np.zeros((k, d, d))
            big_q[:, rows, cols] = l
            return big_q + np.stack([np.diag(v) for v in np.exp(q)])
        big_q = torch.zeros((k, d, d), dtype=q.dtype)
        big_q[:, rows, cols] = l
        return big_q + torch.diag_embed(torch.exp(q))

    def objective(lib, lse, alpha, mu, q, l, x, gamma, m, norm):
        big_q = lower(q, l, lib)
        diff = x[:, None, :] - mu[None, :, :]                  # n, k, d
        qd = lib.einsum("kab,nkb->nka", big_q, diff)
        beta = alpha[None, :] + q.sum(1)[None, :] - 0.5 * (qd ** 2).sum(2)
        prior = (-0.5 * gamma ** 2 * ((lib.exp(q) ** 2).sum() + (l ** 2).sum())
                 + m * q.sum())
        return (-n * d * 0.5 * np.log(2 * np.pi) + lse(beta, 1).sum()
                - n * lse(alpha, 0) + prior + norm)

    def np_lse(v, axis):
        top = v.max(axis, keepdims=True)
        return (top + np.log(np.exp(v - top).sum(axis, keepdims=True))).squeeze(axis)

    return dict(
        name=f"GMM d={d} K={k} n={n}", types=("f64",), wrt=[0, 1, 2, 3],
        args=args, eval="gmm",
        primal="objective", gradient="jacobian",
        torch=lambda *a: objective(torch, torch.logsumexp, *a),
        numpy=lambda *a: objective(np, np_lse, *a), flops=None)


def lstm(layers, b, c):
    """GradBench's lstm (diagonal-weight cells over a sequence of c
    characters of b bits), from bench/gradbench/lstm.mlir; f64 only."""
    from mlir_ad import gradbench
    rng = np.random.default_rng(31337)
    data = {"main_params": rng.uniform(0, 1, (2 * layers, 4 * b)),
            "extra_params": rng.uniform(0, 1, (3, b)),
            "state": rng.uniform(0, 1, (2 * layers, b)),
            "sequence": (rng.uniform(0, 1, (c, b)) > 0.5).astype(float)}
    args = list(gradbench._lstm_input(data))

    def objective(lib, main, extra, state, seq):
        # main [l][2][4][b], extra [3][b], state [l][2][b], seq [c][b].
        sigmoid = (lambda z: 1 / (1 + np.exp(-z))) if lib is np else torch.sigmoid
        hidden = [state[i, 0] for i in range(layers)]
        cell = [state[i, 1] for i in range(layers)]
        total = 0.0
        for t in range(c - 1):
            x = seq[t] * extra[0]
            for i in range(layers):
                w, bias = main[i, 0], main[i, 1]
                forget = sigmoid(x * w[0] + bias[0])
                ingate = sigmoid(hidden[i] * w[1] + bias[1])
                outgate = sigmoid(x * w[2] + bias[2])
                change = lib.tanh(hidden[i] * w[3] + bias[3])
                cell[i] = cell[i] * forget + ingate * change
                hidden[i] = outgate * lib.tanh(cell[i])
                x = hidden[i]
            ypred = x * extra[1] + extra[2]
            lse = lib.log(lib.exp(ypred).sum() + 2)
            total = total + (seq[t + 1] * (ypred - lse)).sum()
        return -total / ((c - 1) * b)

    return dict(
        name=f"LSTM l={layers} b={b} c={c}", types=("f64",), wrt=[0, 1],
        args=args, eval="lstm",
        primal="objective", gradient="jacobian",
        torch=lambda *a: objective(torch, *a),
        numpy=lambda *a: objective(np, *a), flops=None)


def scalar_loop(n):
    """A scalar recurrence whose adjoint reads every state: s <- s + h
    sin(x s), s_0 = 1, n steps; the loss is s_n."""
    src = f"""
func.func @f(%x: T, %n: index) -> T {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : T
  %h = arith.constant 1.0e-3 : T
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %one) -> (T) {{
    %xs = arith.mulf %x, %s : T
    %sn = math.sin %xs : T
    %d = arith.mulf %h, %sn : T
    %s2 = arith.addf %s, %d : T
    scf.yield %s2 : T
  }}
  return %r : T
}}"""
    h = 1e-3

    def torch_loss(x, steps):
        s = torch.ones((), dtype=x.dtype)
        for _ in range(steps):
            s = s + h * torch.sin(x * s)
        return s

    def numpy_primal(x, steps):
        s = 1.0
        for _ in range(steps):
            s = s + h * np.sin(x * s)
        return s

    def numpy_grad(x, steps):
        # The adjoint by hand, over the states kept by the forward loop.
        states = [1.0]
        for _ in range(steps):
            states.append(states[-1] + h * np.sin(x * states[-1]))
        ds, dx = 1.0, 0.0
        for s in reversed(states[:-1]):
            c = h * np.cos(x * s)
            dx += ds * c * s
            ds = ds * (1 + c * x)
        return (dx,)

    return dict(name=f"scalar loop {n:.0e}".replace("+0", ""), src=src,
                wrt=[0], args=[np.float64(0.7), n], torch=torch_loss,
                numpy=numpy_primal, numpy_grad=numpy_grad, flops=None)


def recursion(depth):
    """A tree recursion, g(n, x) = g(n-1, x) x + sin(g(n-2, x)), g(n<2) = x:
    fib(depth) invocations, each of which the pullback reverses."""
    src = """
func.func @f(%x: T, %n: index) -> T {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %small = arith.cmpi ult, %n, %c2 : index
  %r = scf.if %small -> T {
    scf.yield %x : T
  } else {
    %n1 = arith.subi %n, %c1 : index
    %n2 = arith.subi %n, %c2 : index
    %a = func.call @f(%x, %n1) : (T, index) -> T
    %b = func.call @f(%x, %n2) : (T, index) -> T
    %ax = arith.mulf %a, %x : T
    %sb = math.sin %b : T
    %s = arith.addf %ax, %sb : T
    scf.yield %s : T
  }
  return %r : T
}"""

    def torch_loss(x, n):
        if n < 2:
            return x
        return torch_loss(x, n - 1) * x + torch.sin(torch_loss(x, n - 2))

    def numpy_primal(x, n):
        if n < 2:
            return x
        return numpy_primal(x, n - 1) * x + np.sin(numpy_primal(x, n - 2))

    def numpy_grad(x, n):
        # Value and derivative together (forward mode by hand).
        def both(n):
            if n < 2:
                return x, 1.0
            a, da = both(n - 1)
            b, db = both(n - 2)
            return a * x + np.sin(b), da * x + a + np.cos(b) * db
        return (both(n)[1],)

    return dict(name=f"recursion fib({depth})", src=src, wrt=[0],
                args=[np.float64(0.3), depth], torch=torch_loss,
                numpy=numpy_primal, numpy_grad=numpy_grad, flops=None)


def workloads(quick):
    w = [matmul_trace(256), mlp(64, 256), logsumexp(10 ** 6),
         cross_entropy(1000, 1000), conv_net(32, 8, 16),
         lstm(2, 14, 1024 if not quick else 64),
         gmm(64, 100, 1000) if not quick else gmm(10, 25, 1000),
         scalar_loop(10 ** 4), recursion(18)]
    if not quick:
        w.insert(2, mlp(64, 1024))
    return w


def memory_bandwidth():
    """Bytes/s of a copy of 128 MB with numpy (bytes read plus written)."""
    a = np.ones(16 * 2 ** 20)
    b = np.empty_like(a)
    t = best_time(lambda: np.copyto(b, a), min_reps=10)
    return 2 * a.nbytes / t


def blas_rate(dtype):
    """GFLOP/s of a 256^3 matmul in OpenBLAS (on the run's threads)."""
    a = np.random.rand(256, 256).astype(dtype)
    t = best_time(lambda: a @ a, min_reps=20)
    return 2 * 256 ** 3 / t / 1e9


def measure(w, t, dtype):
    def cast(a):
        # Index arguments (Python ints) stay as they are.
        return a.astype(dtype) if isinstance(a, (np.ndarray, np.floating)) else a

    args = [cast(a) for a in w["args"]]
    def compiled(parallel):
        if "eval" in w:
            # An eval's module of bench/gradbench, compiled by the GradBench
            # tool (the same file and entry points GradBench runs).
            from mlir_ad import gradbench
            module, _ = gradbench.load(w["eval"], parallel=parallel)
            return module[w["primal"]], module[w["gradient"]]
        # T is the element type's placeholder (no other capital T in sources).
        f = mlir_ad.compile(w["src"].replace("T", t), parallel=parallel).f
        return f, mlir_ad.grad(f, wrt=w["wrt"])

    f, g = compiled(PARALLEL)
    # Check the gradient against torch's before timing it.
    row = {"ours primal": best_time(lambda: f(*args)),
           "ours grad": best_time(lambda: g(*args))}
    ours = g(*args)
    if PARALLEL:
        f1, g1 = compiled(False)
        row["ours grad 1t"] = best_time(lambda: g1(*args))
        # Threads share out iterations that write disjoint elements, each
        # computed as on one thread: the same bits.
        for mine, single in zip(ours, g1(*args)):
            if not np.array_equal(np.asarray(mine), np.asarray(single)):
                raise SystemExit(f"{w['name']} {t}: the gradient on "
                                 f"{THREADS} threads differs from one "
                                 "thread's")
    if torch is not None:
        targs = [torch.from_numpy(np.array(a)) if not isinstance(a, int)
                 else a for a in args]
        for i in w["wrt"]:
            targs[i].requires_grad_(True)

        def torch_grad():
            for i in w["wrt"]:
                targs[i].grad = None
            w["torch"](*targs).backward()

        with torch.no_grad():
            row["torch primal"] = best_time(lambda: w["torch"](*targs))
        row["torch grad"] = best_time(torch_grad)
        torch_grad()
        tol = 1e-7 if dtype == np.float64 else 2e-3
        for mine, i in zip(ours, w["wrt"]):
            ref = targs[i].grad.numpy()
            scale = max(1.0, float(np.abs(ref).max()))
            err = float(np.abs(np.asarray(mine) - ref).max()) / scale
            if err > tol:
                raise SystemExit(f"{w['name']} {t}: gradient {i} differs "
                                 f"from torch's by {err:.2e}")
    row["numpy primal"] = best_time(lambda: w["numpy"](*args))
    if w.get("numpy_grad"):
        row["numpy grad"] = best_time(lambda: w["numpy_grad"](*args))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="skip the large MLP")
    parser.add_argument("--only", nargs="*", help="workload name prefixes")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs",
                                                      "benchmarks"))
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for every tool (read at start-up)")
    opts = parser.parse_args()
    rates = {t: blas_rate(d) for t, d in (("f64", np.float64),
                                          ("f32", np.float32))}
    bandwidth = memory_bandwidth()
    rates["bandwidth"] = bandwidth
    print(f"OpenBLAS 256^3 matmul, {THREADS} thread(s): "
          f"{rates['f64']:.1f} GFLOP/s f64, "
          f"{rates['f32']:.1f} GFLOP/s f32; copy bandwidth "
          f"{bandwidth / 1e9:.1f} GB/s; torch "
          f"{torch.__version__ if torch else 'missing'}")
    rows = []
    for w in workloads(opts.quick):
        if opts.only and not any(w["name"].startswith(p) for p in opts.only):
            continue
        for t, dtype in (("f64", np.float64), ("f32", np.float32)):
            if t not in w.get("types", ("f64", "f32")):
                continue
            r = measure(w, t, dtype)
            r["name"], r["type"] = w["name"], t
            bound = None
            if w.get("flops"):
                bound = w["flops"] / (rates[t] * 1e9)
            if w.get("bytes"):
                # The workload's bytes are counted in f64 elements.
                moved = w["bytes"] * np.dtype(dtype).itemsize / 8 / bandwidth
                bound = max(bound or 0.0, moved)
            r["bound"] = bound
            rows.append(r)
            print(format_row(r), flush=True)
    write_outputs(rows, rates, opts.out)


def ms(x):
    return "-" if x is None else f"{x * 1e3:.3g}"


HEADER = ("| workload | type | ours primal ms | ours grad ms | torch fwd ms | "
          "torch fwd+bwd ms | numpy primal ms | numpy hand grad ms | "
          "ours / torch (grad) | grad / primal | grad / bound |")


if PARALLEL:
    HEADER += (f" ours grad 1 thread ms | ours speedup on {THREADS} "
               "threads |")


def format_row(r):
    torch_grad = r.get("torch grad")
    vs = f"{r['ours grad'] / torch_grad:.3g}" if torch_grad else "-"
    bound = f"{r['ours grad'] / r['bound']:.1f}" if r["bound"] else "-"
    row = (f"| {r['name']} | {r['type']} | {ms(r['ours primal'])} | "
           f"{ms(r['ours grad'])} | {ms(r.get('torch primal'))} | "
           f"{ms(torch_grad)} | {ms(r['numpy primal'])} | "
           f"{ms(r.get('numpy grad'))} | {vs} | "
           f"{r['ours grad'] / r['ours primal']:.2f} | {bound} |")
    if PARALLEL:
        row += (f" {ms(r['ours grad 1t'])} | "
                f"{r['ours grad 1t'] / r['ours grad']:.2f} |")
    return row


def write_outputs(rows, rates, out):
    os.makedirs(out, exist_ok=True)
    stem = f"peers-{THREADS}threads" if PARALLEL else "peers"
    cores = (f"{THREADS} threads for every tool (MLIR-AD: parallel=True)"
             if PARALLEL else "one core")
    with open(os.path.join(out, stem + ".md"), "w") as f:
        f.write(f"Measured by `bench/peers` in one run: {cores}, best of "
                "several calls from Python.\n"
                f"OpenBLAS 256^3 matmul: {rates['f64']:.1f} GFLOP/s f64, "
                f"{rates['f32']:.1f} GFLOP/s f32; numpy copy of 128 MB: "
                f"{rates['bandwidth'] / 1e9:.1f} GB/s. The bound is the "
                "gradient's FLOPs at that rate, or, for logsumexp and "
                "cross-entropy, the bytes it must read and write (its "
                "inputs and the gradient, once each) at that bandwidth.\n\n")
        f.write(HEADER + "\n|" + "---|" * HEADER.count(" |") + "\n")
        for r in rows:
            f.write(format_row(r) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    labels = [f"{r['name']}\n{r['type']}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.9), 4.5))
    width = 0.27
    ax.bar(x - width, [r["ours grad"] * 1e3 for r in rows], width,
           label="MLIR-AD gradient")
    ax.bar(x, [(r.get("torch grad") or np.nan) * 1e3 for r in rows], width,
           label="PyTorch eager forward+backward")
    ax.bar(x + width, [(r.get("numpy grad") or np.nan) * 1e3 for r in rows],
           width, label="numpy hand-written gradient")
    ax.set_yscale("log")
    ax.set_ylabel("gradient time [ms], log scale")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7)
    ax.legend(fontsize=8)
    ax.set_title(f"Gradients on {cores} (bench/peers)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, stem + ".png"), dpi=110)
    print(f"wrote {out}/{stem}.md and {stem}.png")


if __name__ == "__main__":
    main()
