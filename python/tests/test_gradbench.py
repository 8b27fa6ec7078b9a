"""The GradBench tool (python -m mlir_ad.gradbench) and its evals
(bench/gradbench/*.mlir), offline: each eval's derivative against central
differences of its own primal, its primal against a small numpy
implementation written here, and the protocol end to end, played the way
the eval's side plays it (../shared/GRADBENCH.md)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from mlir_ad import gradbench


def _rel_error(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want))))


def _central_differences(f, args, position, eps=1e-6):
    """d f / d args[position], one element at a time."""
    base = np.array(args[position], dtype=np.float64)
    out = np.zeros_like(base)
    for index in np.ndindex(base.shape):
        plus, minus = base.copy(), base.copy()
        plus[index] += eps
        minus[index] -= eps
        a = list(args)
        a[position] = plus
        b = list(args)
        b[position] = minus
        out[index] = (f(*a) - f(*b)) / (2 * eps)
    return out


def _call(eval_name, function, data):
    output, timings = gradbench.evaluate(eval_name, function, data)
    assert timings and all(t["name"] == "evaluate" and t["nanoseconds"] >= 0
                           for t in timings)
    return output


# --- inputs as the evals generate them (small sizes) --------------------------

def _lse_data(n, seed=31337):
    return {"x": np.random.default_rng(seed).uniform(0, 1, n).tolist()}


def _det_data(ell, seed=31337):
    return {"A": np.random.default_rng(seed).uniform(0, 1, ell * ell).tolist(),
            "ell": ell}


def _det_by_minors(a):
    """Expansion by minors along the first row, as the eval specifies."""
    if len(a) == 1:
        return a[0][0]
    return sum((-1) ** j * a[0][j] *
               _det_by_minors([row[:j] + row[j + 1:] for row in a[1:]])
               for j in range(len(a)))


def _llsq_data(n, m, seed=31337):
    return {"x": np.random.default_rng(seed).uniform(0, 1, m).tolist(), "n": n}


def _gmm_data(d, k, n, m=0, gamma=1.0, seed=31337):
    rng = np.random.default_rng(seed)
    return {"d": d, "k": k, "n": n, "m": m, "gamma": gamma,
            "alpha": rng.standard_normal(k).tolist(),
            "mu": rng.uniform(0, 1, (k, d)).tolist(),
            "q": rng.standard_normal((k, d)).tolist(),
            "l": rng.standard_normal((k, d * (d - 1) // 2)).tolist(),
            "x": rng.standard_normal((n, d)).tolist()}


# --- independent numpy implementations --------------------------------------

def _ode_data(n, s, seed=31337):
    return {"x": np.random.default_rng(seed).uniform(0, 1, n).tolist(), "s": s}


def _ode_numpy(x, s):
    """s steps of classic RK4 for y_0' = x_0, y_i' = x_i y_{i-1}, y(0) = 0,
    over [0, 2]."""
    x = np.asarray(x, np.float64)
    h = 2.0 / s
    y = np.zeros_like(x)

    def f(y):
        return x * np.concatenate(([1.0], y[:-1]))

    for _ in range(s):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def _lstm_data(layers, b, c, seed=31337):
    rng = np.random.default_rng(seed)
    return {"main_params": rng.uniform(0, 1, (2 * layers, 4 * b)).tolist(),
            "extra_params": rng.uniform(0, 1, (3, b)).tolist(),
            "state": rng.uniform(0, 1, (2 * layers, b)).tolist(),
            "sequence": (rng.uniform(0, 1, (c, b)) > 0.5).astype(float).tolist()}


def _lstm_numpy(main, extra, state, sequence):
    """GradBench's lstm objective with explicit loops over steps and layers,
    on the flat [2l][4b] / [2l][b] layouts of the eval."""
    main, extra = np.asarray(main), np.asarray(extra)
    state, sequence = np.array(state), np.asarray(sequence)
    layers, b = main.shape[0] // 2, main.shape[1] // 4
    sigmoid = lambda z: 1 / (1 + np.exp(-z))
    total = 0.0
    for t in range(len(sequence) - 1):
        x = sequence[t] * extra[0]
        for i in range(layers):
            w, bias = main[2 * i], main[2 * i + 1]
            gate = lambda g, v: v * w[g * b:(g + 1) * b] + bias[g * b:(g + 1) * b]
            hidden, cell = state[2 * i], state[2 * i + 1]
            forget, ingate = sigmoid(gate(0, x)), sigmoid(gate(1, hidden))
            outgate, change = sigmoid(gate(2, x)), np.tanh(gate(3, hidden))
            cell = cell * forget + ingate * change
            hidden = outgate * np.tanh(cell)
            state[2 * i], state[2 * i + 1] = hidden, cell
            x = hidden
        ypred = x * extra[1] + extra[2]
        lse = np.log(np.sum(np.exp(ypred)) + 2)
        total += np.sum(sequence[t + 1] * (ypred - lse))
    return -total / ((len(sequence) - 1) * b)


def _ba_data(n, m, p, seed=31337, rotation=True):
    rng = np.random.default_rng(seed)
    cam = rng.uniform(0, 1, 11)
    cam[0:3] = cam[0:3] * 0.5 if rotation else 0.0
    cam[6] = 500 + 100 * cam[6]
    cam[9:11] *= 1e-3
    return {"n": n, "m": m, "p": p, "cam": cam.tolist(),
            "x": [rng.uniform(-1, 1), rng.uniform(-1, 1), 10 + rng.uniform()],
            "w": float(rng.uniform(0.5, 1)), "feat": rng.uniform(0, 1, 2).tolist()}


def _ba_numpy(params, feat):
    """One observation's two reprojection errors from its 15 parameters
    (camera, point, weight), written from the eval's description."""
    cam, x, w = params[:11], params[11:14], params[14]
    rot, pt = cam[0:3], x - cam[3:6]
    theta2 = np.dot(rot, rot)
    if theta2 != 0:
        theta = np.sqrt(theta2)
        axis = rot / theta
        pt = (pt * np.cos(theta) + np.cross(axis, pt) * np.sin(theta)
              + axis * np.dot(axis, pt) * (1 - np.cos(theta)))
    else:
        pt = pt + np.cross(rot, pt)
    proj = pt[:2] / pt[2]
    r2 = np.dot(proj, proj)
    proj = proj * (1 + cam[9] * r2 + cam[10] * r2 * r2)
    return w * (proj * cam[6] + cam[7:9] - np.asarray(feat))


def _kmeans_data(k, n, d, seed=31337):
    points = np.random.default_rng(seed).uniform(0, 1, (n, d))
    return {"points": points.tolist(), "centroids": points[-k:].tolist()}


def _argmin_numpy(f, grad, x):
    """GradBench's multivariate_argmin (gradient descent with a step size
    that doubles after ten improving steps and halves after a failing one)."""
    x = np.asarray(x, np.float64)
    fx, gx, eta, i = f(x), grad(x), 1e-5, 0
    while True:
        if np.sqrt(np.sum(gx * gx)) <= 1e-5:
            return x
        if i == 10:
            eta, i = 2 * eta, 0
            continue
        y = x - eta * gx
        if np.sqrt(np.sum((x - y) ** 2)) <= 1e-5:
            return x
        fy = f(y)
        if fy < fx:
            x, fx, gx, i = y, fy, grad(y), i + 1
        else:
            eta, i = eta / 2, 0


def _particle_numpy(w0):
    """The particle eval with the force written out by hand and the descent's
    derivative by central differences."""
    def euler(w):
        charges = [(10.0, 10.0 - w), (10.0, 0.0)]
        x, v = np.array([0.0, 8.0]), np.array([0.75, 0.0])
        while x[1] + 0.1 * v[1] > 0:
            force = sum((x - c) / np.sum((x - c) ** 2) ** 1.5 for c in
                        map(np.array, charges))  # -grad p
            x, v = x + 0.1 * v, v + 0.1 * force
        xf = x[0] - x[1] / v[1] * v[0]
        return xf * xf

    def slope(w, eps=1e-7):
        return np.array([(euler(w[0] + eps) - euler(w[0] - eps)) / (2 * eps)])

    return _argmin_numpy(lambda w: euler(w[0]), slope, [w0])[0]


def _saddle_numpy(start):
    f = lambda p1, p: np.sum(p1 ** 2 * [1, 1]) - np.sum(p ** 2)
    start = np.asarray(start, np.float64)
    inner = lambda p1: _argmin_numpy(lambda p: -f(p1, p), lambda p: 2 * p, start)
    r1 = _argmin_numpy(lambda p1: f(p1, inner(p1)), lambda p1: 2 * p1, start)
    r2 = _argmin_numpy(lambda p: -f(r1, p), lambda p: 2 * p, start)
    return np.concatenate((r1, r2))


# Parents of the 22 bones of GradBench's hand model (a wrist, then five
# fingers of four bones).
_HT_PARENTS = [-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0, 13, 14, 15, 0,
               17, 18, 19, 0]


def _ht_data(c, vertices=30, triangles=20, complicated=True, mirrored=False,
             seed=31337):
    """A synthetic hand model in GradBench's ht layout (22 bones; random
    rigid-ish base transforms, skinning weights summing to 1) and c
    correspondences, in the variant asked for."""
    rng = np.random.default_rng(seed)
    def rigid():
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        m = np.eye(4)
        m[:3, :3] = q
        m[:3, 3] = rng.normal(size=3)
        return m
    weights = rng.uniform(0, 1, (vertices, 22))
    weights /= weights.sum(axis=1, keepdims=True)
    positions = np.concatenate((rng.normal(size=(vertices, 3)),
                                np.ones((vertices, 1))), axis=1)
    model = {"bone_count": 22, "bone_names": [f"b{i}" for i in range(22)],
             "parents": _HT_PARENTS,
             "base_relatives": [rigid().tolist() for _ in range(22)],
             "inverse_base_absolutes": [rigid().tolist() for _ in range(22)],
             "base_positions": positions.tolist(), "weights": weights.tolist(),
             "triangles": rng.integers(0, vertices, (triangles, 3)).tolist(),
             "is_mirrored": mirrored}
    return {"theta": rng.uniform(-0.5, 0.5, 26).tolist(),
            "data": {"model": model,
                     "correspondences": rng.integers(
                         0, triangles if complicated else vertices, c).tolist(),
                     "points": rng.normal(size=(c, 3)).tolist()},
            "us": rng.uniform(0, 0.5, (c, 2)).tolist() if complicated else []}


def _ht_numpy(theta, us, data):
    """The residuals [3c] of GradBench's ht, written from ht.hpp's algorithm
    (pose parameters, Euler angles, bone chain, skinning, mirroring, global
    angle-axis rotation and translation)."""
    model = data["model"]
    pose = np.zeros((25, 3))
    pose[0], pose[1], pose[2] = theta[0:3], 1.0, theta[3:6]
    k, col = 6, 5
    for _ in range(5):
        for joint in range(3):
            pose[col, 0] = theta[k]
            k += 1
            if joint == 0:
                pose[col, 1] = theta[k]
                k += 1
            col += 1
        col += 1
    def euler(tx, ty, tz):
        rx = np.array([[1, 0, 0], [0, np.cos(tx), -np.sin(tx)], [0, np.sin(tx), np.cos(tx)]])
        ry = np.array([[np.cos(ty), 0, np.sin(ty)], [0, 1, 0], [-np.sin(ty), 0, np.cos(ty)]])
        rz = np.array([[np.cos(tz), -np.sin(tz), 0], [np.sin(tz), np.cos(tz), 0], [0, 0, 1]])
        return rz @ ry @ rx
    absolutes, transforms = [], []
    for b in range(22):
        tr = np.eye(4)
        tr[:3, :3] = euler(pose[b + 3, 0], pose[b + 3, 2], pose[b + 3, 1])
        relative = np.asarray(model["base_relatives"][b]) @ tr
        parent = model["parents"][b]
        absolutes.append(relative if parent < 0 else absolutes[parent] @ relative)
        transforms.append(absolutes[b] @ np.asarray(model["inverse_base_absolutes"][b]))
    base = np.asarray(model["base_positions"])
    weights = np.asarray(model["weights"])
    positions = sum(weights[:, b:b + 1] * (base @ transforms[b].T)[:, :3]
                    for b in range(22))
    if model["is_mirrored"]:
        positions[:, 0] *= -1
    axis = np.asarray(theta[0:3])
    norm = np.linalg.norm(axis)
    rotation = np.eye(3)
    if norm >= 1e-4:
        x, y, z = axis / norm
        s, c = np.sin(norm), np.cos(norm)
        rotation = np.array([
            [x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
            [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
            [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])
    positions = positions @ rotation.T + np.asarray(theta[3:6])
    points = np.asarray(data["points"])
    corr = np.asarray(data["correspondences"])
    if len(us) == 0:
        model_points = positions[corr]
    else:
        tri = np.asarray(model["triangles"])[corr]
        u = np.asarray(us)
        model_points = (u[:, 0:1] * positions[tri[:, 0]] + u[:, 1:2] * positions[tri[:, 1]]
                        + (1 - u[:, 0:1] - u[:, 1:2]) * positions[tri[:, 2]])
    return np.ravel(points - model_points)


def _lse_numpy(x):
    x = np.asarray(x)
    return float(np.log(np.sum(np.exp(x - x.max()))) + x.max())


def _llsq_numpy(x, n):
    x = np.asarray(x)
    t = -1 + 2 * np.arange(n) / (n - 1)
    powers = t[:, None] ** np.arange(len(x))[None, :]
    return 0.5 * float(np.sum((np.sign(t) - powers @ x) ** 2))


def _gmm_numpy(data):
    d, k, n = data["d"], data["k"], data["n"]
    m, gamma = data["m"], data["gamma"]
    alpha = np.asarray(data["alpha"])
    mu, q = np.asarray(data["mu"]), np.asarray(data["q"])
    l, x = np.asarray(data["l"]), np.asarray(data["x"])
    total = 0.0
    qs = []
    for kk in range(k):
        big_q = np.diag(np.exp(q[kk]))
        index = 0
        for i in range(d):
            for j in range(i + 1, d):
                big_q[j, i] = l[kk, index]
                index += 1
        qs.append(big_q)
    for i in range(n):
        beta = np.array([alpha[kk] + q[kk].sum()
                         - 0.5 * np.sum((qs[kk] @ (x[i] - mu[kk])) ** 2)
                         for kk in range(k)])
        total += _lse_numpy(beta)
    n_prime = d + m + 1
    log_gamma_d = 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        math.lgamma(0.5 * n_prime + 0.5 * (1 - j)) for j in range(1, d + 1))
    c = n_prime * d * (math.log(gamma) - 0.5 * math.log(2)) - log_gamma_d
    prior = sum(-0.5 * gamma ** 2 * (np.sum(np.exp(q[kk]) ** 2)
                                     + np.sum(l[kk] ** 2))
                + m * q[kk].sum() for kk in range(k)) + k * c
    return (-n * d * 0.5 * math.log(2 * math.pi) + total - n * _lse_numpy(alpha)
            + prior)


# --- the evals ---------------------------------------------------------------

def test_hello():
    assert _call("hello", "square", 3.0) == 9.0
    assert _call("hello", "double", 3.0) == 6.0
    assert _call("hello", "double", -1.5) == -3.0


@pytest.mark.parametrize("n", [1, 2, 7, 2500])
def test_lse(n):
    data = _lse_data(n)
    primal = _call("lse", "primal", data)
    assert abs(primal - _lse_numpy(data["x"])) <= 1e-12 * max(1, abs(primal))
    gradient = _call("lse", "gradient", data)
    assert len(gradient) == n
    module, _ = gradbench.load("lse")
    x = np.asarray(data["x"])
    if n <= 7:
        fd = _central_differences(module.primal, [x], 0)
        assert _rel_error(gradient, fd) <= 1e-6
    softmax = np.exp(x - x.max()) / np.sum(np.exp(x - x.max()))
    assert _rel_error(gradient, softmax) <= 1e-12


def test_lse_large_values_do_not_overflow():
    data = {"x": [1000.0, 1001.0, 999.5]}
    assert abs(_call("lse", "primal", data) - _lse_numpy(data["x"])) < 1e-12
    assert all(math.isfinite(v) for v in _call("lse", "gradient", data))


@pytest.mark.parametrize("n, m", [(16, 1), (16, 8), (33, 5), (64, 128)])
def test_llsq(n, m):
    data = _llsq_data(n, m)
    primal = _call("llsq", "primal", data)
    want = _llsq_numpy(data["x"], n)
    assert abs(primal - want) <= 1e-9 * max(1, abs(want))
    gradient = _call("llsq", "gradient", data)
    assert len(gradient) == m
    module, _ = gradbench.load("llsq")
    fd = _central_differences(lambda x: module.primal(x, n),
                              [np.asarray(data["x"])], 0)
    assert _rel_error(gradient, fd) <= 1e-6


@pytest.mark.parametrize("ell", [1, 2, 3, 4, 6, 8])
def test_det(ell):
    data = _det_data(ell)
    a = np.asarray(data["A"]).reshape(ell, ell)
    primal = _call("det", "primal", data)
    want = _det_by_minors(a.tolist())
    assert abs(primal - want) <= 1e-12 * max(1, abs(want))
    assert abs(primal - np.linalg.det(a)) <= 1e-9 * max(1, abs(want))
    gradient = _call("det", "gradient", data)
    assert len(gradient) == ell * ell
    # The cofactors: d det / d A = det(A) inv(A)^T (A is invertible here).
    cofactors = np.linalg.det(a) * np.linalg.inv(a).T
    assert _rel_error(gradient, cofactors.ravel()) <= 1e-9
    if ell <= 4:
        module, _ = gradbench.load("det")
        fd = _central_differences(lambda x: module.primal(x, ell),
                                  [np.asarray(data["A"])], 0)
        assert _rel_error(gradient, fd) <= 1e-6


def test_det_singular_and_repeated_rows():
    # Rows repeated: det 0, but the gradient (the cofactors) is not.
    a = [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [0.5, -1.0, 4.0]]
    data = {"A": sum(a, []), "ell": 3}
    assert _call("det", "primal", data) == 0.0
    module, _ = gradbench.load("det")
    fd = _central_differences(lambda x: module.primal(x, 3),
                              [np.asarray(data["A"])], 0)
    assert _rel_error(_call("det", "gradient", data), fd) <= 1e-6


@pytest.mark.parametrize("data", [{"A": [], "ell": 0},
                                  {"A": [1.0] * 4, "ell": 3},
                                  {"A": [1.0] * 64 * 64, "ell": 64},
                                  {"A": [1.0], "ell": 1.5},
                                  {"A": [[1.0, 2.0], [3.0, 4.0]], "ell": 2}])
def test_det_rejects_bad_sizes(data):
    answer = gradbench.respond({"id": 3, "kind": "evaluate", "module": "det",
                                "function": "gradient", "input": data})
    assert answer["success"] is False
    assert "1 <= ell <= 63" in answer["error"]


@pytest.mark.parametrize("d, k, n, m, gamma",
                         [(2, 5, 10, 0, 1.0), (3, 2, 6, 2, 0.7),
                          (5, 3, 4, 1, 1.3), (1, 1, 3, 0, 1.0)])
def test_gmm(d, k, n, m, gamma):
    data = _gmm_data(d, k, n, m, gamma)
    objective = _call("gmm", "objective", data)
    want = _gmm_numpy(data)
    assert abs(objective - want) <= 1e-10 * max(1, abs(want))
    jacobian = _call("gmm", "jacobian", data)
    assert set(jacobian) == {"alpha", "mu", "q", "l"}
    assert np.shape(jacobian["alpha"]) == (k,)
    assert np.shape(jacobian["mu"]) == (k, d)
    assert np.shape(jacobian["q"]) == (k, d)
    assert len(jacobian["l"]) == k and all(
        len(row) == d * (d - 1) // 2 for row in jacobian["l"])
    module, _ = gradbench.load("gmm")
    args = list(gradbench._gmm_input(data))
    for position, key in enumerate(["alpha", "mu", "q", "l"]):
        if np.size(args[position]) == 0:
            continue
        fd = _central_differences(module.objective, args, position)
        assert _rel_error(jacobian[key], fd) <= 1e-6, key


@pytest.mark.parametrize("n, s", [(1, 1), (2, 3), (5, 1), (8, 3), (20, 10),
                                  (1000, 4)])
def test_ode(n, s):
    data = _ode_data(n, s)
    primal = _call("ode", "primal", data)
    want = _ode_numpy(data["x"], s)
    assert len(primal) == n
    assert _rel_error(primal, want) <= 1e-12
    gradient = _call("ode", "gradient", data)
    assert len(gradient) == n
    # The gradient of the last component, against central differences of
    # the eval's own primal, relative to the gradient's largest entry (its
    # entries span many orders of magnitude: y_{n-1} is a product of n
    # factors).
    module, _ = gradbench.load("ode")
    x = np.asarray(data["x"])
    if n > 40:
        # Check a sample of the entries (each one costs two primals).
        picks = [0, 1, n // 2, n - 2, n - 1]
    else:
        picks = range(n)
    eps = 1e-6
    scale = max(np.max(np.abs(gradient)), 1e-300)
    for i in picks:
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        fd = (module.primal(plus, s)[-1] - module.primal(minus, s)[-1]) / (2 * eps)
        assert abs(gradient[i] - fd) <= 1e-6 * scale, (i, gradient[i], fd)
    assert np.max(np.abs(gradient)) > 0 or n > 4 * s


@pytest.mark.parametrize("layers, b, c", [(1, 1, 2), (1, 3, 4), (2, 4, 5),
                                          (3, 14, 6)])
def test_lstm(layers, b, c):
    data = _lstm_data(layers, b, c)
    objective = _call("lstm", "objective", data)
    want = _lstm_numpy(data["main_params"], data["extra_params"],
                       data["state"], data["sequence"])
    assert abs(objective - want) <= 1e-12 * max(1, abs(want))
    jacobian = _call("lstm", "jacobian", data)
    assert len(jacobian) == 8 * layers * b + 3 * b
    module, _ = gradbench.load("lstm")
    args = list(gradbench._lstm_input(data))
    fd = np.concatenate([
        np.ravel(_central_differences(module.objective, args, position))
        for position in (0, 1)])
    assert _rel_error(jacobian, fd) <= 1e-6


@pytest.mark.parametrize("n, m, p, rotation", [(3, 5, 17, True),
                                                (2, 2, 16, False),
                                                (5, 4, 40, True)])
def test_ba(n, m, p, rotation):
    data = _ba_data(n, m, p, rotation=rotation)
    params = np.concatenate((data["cam"], data["x"], [data["w"]]))
    objective = _call("ba", "objective", data)
    want = _ba_numpy(params, data["feat"])
    assert objective["reproj_error"]["repeated"] == p
    assert _rel_error(objective["reproj_error"]["elements"], want) <= 1e-12
    assert objective["w_err"] == {"element": pytest.approx(1 - data["w"] ** 2,
                                                            rel=1e-14),
                                  "repeated": p}
    jacobian = _call("ba", "jacobian", data)
    # The truncated CSR: 15 nonzeros per reprojection row, one per weight
    # row; observation 0 sees camera 0 and point 0.
    assert jacobian["rows"] == [15 * k for k in range(30)] + [31 * p]
    assert jacobian["cols"] == (list(range(11)) + [11 * n, 11 * n + 1, 11 * n + 2,
                                11 * n + 3 * m]) * 2 + [11 * n + 3 * m + p - 1]
    assert jacobian["vals"][-1] == pytest.approx(-2 * data["w"], rel=1e-14)
    # Observation 0's two rows against central differences of the residual
    # written here and of the eval's own objective.
    fd = np.zeros((2, 15))
    for k in range(15):
        step = 1e-6 * max(1.0, abs(params[k]))
        plus, minus = params.copy(), params.copy()
        plus[k] += step
        minus[k] -= step
        fd[:, k] = (_ba_numpy(plus, data["feat"])
                    - _ba_numpy(minus, data["feat"])) / (2 * step)
    got = np.asarray(jacobian["vals"][:30]).reshape(2, 15)
    assert np.max(np.abs(got - fd) / np.maximum(1, np.abs(fd))) <= 1e-6
    module, _ = gradbench.load("ba")
    cams, points, weights, obs, feats = gradbench._ba_input(data)
    step = 1e-6
    shifted = cams.copy()
    shifted[0, 6] += step
    plus = module.objective(shifted, points, weights, obs, feats)[0][0]
    shifted[0, 6] -= 2 * step
    minus = module.objective(shifted, points, weights, obs, feats)[0][0]
    assert np.max(np.abs((plus - minus) / (2 * step) - got[:, 6])) <= 1e-6 * max(
        1, np.max(np.abs(got[:, 6])))


@pytest.mark.parametrize("k, n, d", [(1, 5, 1), (3, 20, 2), (10, 200, 8),
                                     (7, 50, 16)])
def test_kmeans(k, n, d):
    data = _kmeans_data(k, n, d)
    points, centroids = np.asarray(data["points"]), np.asarray(data["centroids"])
    dist = ((centroids[None, :, :] - points[:, None, :]) ** 2).sum(axis=2)
    cost = _call("kmeans", "cost", data)
    assert abs(cost - dist.min(axis=1).sum()) <= 1e-12 * max(1, cost)
    direction = np.asarray(_call("kmeans", "dir", data))
    # J / diag(H), each from its definition: J = 2 sum (C_j - P_i) over the
    # points nearest to C_j, and H's diagonal from central differences of
    # the eval's own cost (second differences along each coordinate).
    nearest = dist.argmin(axis=1)
    want = np.array([centroids[j] - points[nearest == j].mean(axis=0)
                     for j in range(k)])
    assert _rel_error(direction, want) <= 1e-12
    module, _ = gradbench.load("kmeans")
    step = 1e-3
    j, l = k // 2, d - 1
    plus, minus = centroids.copy(), centroids.copy()
    plus[j, l] += step
    minus[j, l] -= step
    f0 = module.cost(points, centroids)
    grad = (module.cost(points, plus) - module.cost(points, minus)) / (2 * step)
    hess = (module.cost(points, plus) - 2 * f0 + module.cost(points, minus)) / step ** 2
    assert abs(direction[j, l] - grad / hess) <= 1e-6 * max(1, abs(grad / hess))


def test_kmeans_ties_and_points_on_centroids():
    # Centroids 0 and 2 are the same point, and some points are exactly
    # nearest to both: the gradient's share of such a point is split
    # equally between them (the min adjoint's convention), in the gradient
    # and in its derivative. Points on a centroid contribute zero. The
    # pullback runs its loop over coordinates only for the nearest
    # centroids (GuardSelectedSum): the other terms are exactly zero.
    module, _ = gradbench.load("kmeans")
    rng = np.random.default_rng(5)
    centroids = rng.uniform(-1, 1, (5, 3))
    centroids[2] = centroids[0]
    points = np.concatenate([rng.uniform(-1, 1, (40, 3)), centroids[:3],
                             centroids[[0, 0, 4]] + 0.01])
    dist = ((centroids[None, :, :] - points[:, None, :]) ** 2).sum(axis=2)
    nearest = dist == dist.min(axis=1, keepdims=True)
    share = nearest / nearest.sum(axis=1, keepdims=True)
    want_j = 2 * np.einsum("ij,ijl->jl", share,
                           centroids[None, :, :] - points[:, None, :])
    want_h = 2 * share.sum(axis=0)[:, None] * np.ones_like(centroids)
    assert nearest[:, 0].sum() > 1 and np.array_equal(nearest[:, 0],
                                                      nearest[:, 2])
    direction = module.dir(points, centroids)
    np.testing.assert_allclose(direction, want_j / want_h, rtol=1e-12,
                               atol=1e-15)


@pytest.mark.parametrize("variant", ["ff", "fr", "rf", "rr"])
def test_particle(variant):
    # GradBench validates against this constant (w = 0).
    w = _call("particle", variant, {"w": 0.0})
    assert w == pytest.approx(0.2071918746486116, rel=1e-12)
    assert w == pytest.approx(_particle_numpy(0.0), rel=1e-6)
    w = _call("particle", variant, {"w": 0.1})
    assert w == pytest.approx(_particle_numpy(0.1), rel=1e-6)


@pytest.mark.parametrize("variant", ["ff", "fr", "rf", "rr"])
def test_saddle(variant):
    result = _call("saddle", variant, {"start": [1.0, 1.0]})
    assert result == pytest.approx([8.246324826140356e-06] * 4, rel=1e-12)
    for start in ([1.0, 1.0], [0.5, -2.0]):
        result = _call("saddle", variant, {"start": start})
        np.testing.assert_allclose(result, _saddle_numpy(start), rtol=1e-9,
                                   atol=1e-15)


# The model has 30 vertices: fewer than 15 needed vertices (c simple, 3c
# complicated) are posed alone, more take the path that poses all of them.
@pytest.mark.parametrize("c, complicated, mirrored",
                         [(1, False, False), (7, False, True), (40, False, False),
                          (4, True, False), (12, True, True)])
def test_ht(c, complicated, mirrored):
    data = _ht_data(c, complicated=complicated, mirrored=mirrored)
    theta, us = np.asarray(data["theta"]), np.asarray(data["us"])
    objective = _call("ht", "objective", data)
    want = _ht_numpy(theta, us, data["data"])
    assert len(objective) == 3 * c
    assert _rel_error(objective, want) <= 1e-12
    jacobian = np.asarray(_call("ht", "jacobian", data))
    columns = 28 if complicated else 26
    assert jacobian.shape == (3 * c, columns)
    # Central differences of the eval's own objective: along each theta
    # coordinate, and (complicated) along each point's own us.
    module, _ = gradbench.load("ht")
    variant, args = gradbench._ht_input(data)
    name = ("objective_simple", "objective_complicated")[variant]
    primal = lambda *a: np.ravel(module[name](*a))
    eps = 1e-6
    fd = np.zeros((3 * c, columns))
    offset = columns - 26
    for k in range(26):
        plus, minus = list(args), list(args)
        plus[0] = args[0] + eps * np.eye(26)[k]
        minus[0] = args[0] - eps * np.eye(26)[k]
        fd[:, offset + k] = (primal(*plus) - primal(*minus)) / (2 * eps)
    for k in range(offset):
        direction = np.zeros_like(args[1])
        direction[:, k] = eps
        plus, minus = list(args), list(args)
        plus[1] = args[1] + direction
        minus[1] = args[1] - direction
        fd[:, k] = (primal(*plus) - primal(*minus)) / (2 * eps)
    assert _rel_error(jacobian, fd) <= 1e-6


def test_ht_small_rotation_is_the_identity():
    # Below an angle of 1e-4 the global rotation is the identity (ht.hpp).
    data = _ht_data(3, complicated=False)
    data["theta"][0:3] = [1e-5, -2e-5, 3e-5]
    want = _ht_numpy(np.asarray(data["theta"]), np.asarray([]), data["data"])
    assert _rel_error(_call("ht", "objective", data), want) <= 1e-12


# --- the protocol -------------------------------------------------------------

def _run_tool(messages):
    """Plays the eval's side: sends each message, reads one answer each."""
    env = dict(os.environ)
    process = subprocess.run(
        [sys.executable, "-m", "mlir_ad.gradbench"],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True, text=True, env=env, timeout=600)
    assert process.returncode == 0, process.stderr
    answers = [json.loads(line) for line in process.stdout.splitlines()]
    assert [a["id"] for a in answers] == [m["id"] for m in messages]
    return answers


def _runs(data, min_runs=3, min_seconds=0.0):
    return dict(data, min_runs=min_runs, min_seconds=min_seconds)


def test_protocol_hello():
    messages = [{"id": 0, "kind": "start", "eval": "hello"},
                {"id": 1, "kind": "define", "module": "hello"}]
    x, next_id = 1.0, 2
    for _ in range(4):
        for function in ("square", "double"):
            messages.append({"id": next_id, "kind": "evaluate",
                             "module": "hello", "function": function,
                             "input": x, "description": None})
            messages.append({"id": next_id + 1, "kind": "analysis",
                             "of": next_id, "valid": True})
            next_id += 2
            x = x * x if function == "square" else 2 * x
    answers = _run_tool(messages)
    assert answers[0] == {"id": 0, "tool": "mlir-ad"}
    assert answers[1]["success"] is True
    outputs = [a["output"] for a in answers[2:] if "output" in a]
    assert outputs == [1.0, 2.0, 4.0, 8.0, 64.0, 128.0, 16384.0, 32768.0]
    for answer in answers[2::2]:
        assert answer["success"] is True
        assert [t["name"] for t in answer["timings"]] == ["evaluate"]
    for answer in answers[3::2]:
        assert answer == {"id": answer["id"]}


@pytest.mark.parametrize("eval_name, functions, data", [
    ("lse", ("primal", "gradient"), _lse_data(100)),
    ("llsq", ("primal", "gradient"), _llsq_data(16, 8)),
    ("det", ("primal", "gradient"), _det_data(4)),
    ("gmm", ("objective", "jacobian"), _gmm_data(2, 3, 5)),
    ("ode", ("primal", "gradient"), _ode_data(10, 3)),
    ("lstm", ("objective", "jacobian"), _lstm_data(2, 3, 4)),
    ("ba", ("objective", "jacobian"), _ba_data(2, 3, 20)),
    ("kmeans", ("cost", "dir"), _kmeans_data(3, 20, 2)),
    ("particle", ("rr", "ff"), {"w": 0.0}),
    ("ht", ("objective", "jacobian"), _ht_data(4)),
    ("saddle", ("fr", "rf"), {"start": [1.0, 1.0]}),
])
def test_protocol_eval(eval_name, functions, data):
    config = {"min_runs": 3, "min_seconds": 0.0}
    messages = [{"id": 0, "kind": "start", "eval": eval_name,
                 "config": config},
                {"id": 1, "kind": "define", "module": eval_name}]
    next_id = 2
    for function in functions:
        messages.append({"id": next_id, "kind": "evaluate",
                         "module": eval_name, "function": function,
                         "input": _runs(data), "description": "small"})
        messages.append({"id": next_id + 1, "kind": "analysis",
                         "of": next_id, "valid": True, "error": None})
        next_id += 2
    answers = _run_tool(messages)
    assert answers[1]["success"] is True
    assert [t["name"] for t in answers[1]["timings"]] == ["compile"]
    primal, derivative = answers[2], answers[4]
    for answer in (primal, derivative):
        assert answer["success"] is True, answer
        assert len(answer["timings"]) >= 3
        assert all(t["name"] == "evaluate" and isinstance(t["nanoseconds"], int)
                   for t in answer["timings"])
    assert isinstance(primal["output"], {"ode": list, "ba": dict, "ht": list,
                                         "saddle": list}.get(eval_name, float))
    want, _ = gradbench.evaluate(eval_name, functions[1], data)
    assert derivative["output"] == want


def test_protocol_min_seconds_and_unknown_evals():
    messages = [{"id": 0, "kind": "start", "eval": "lse"},
                {"id": 1, "kind": "define", "module": "lse"},
                {"id": 2, "kind": "evaluate", "module": "lse",
                 "function": "primal",
                 "input": _runs(_lse_data(50), min_runs=1, min_seconds=0.05)},
                {"id": 3, "kind": "evaluate", "module": "lse",
                 "function": "hessian", "input": _runs(_lse_data(5))},
                {"id": 4, "kind": "define", "module": "not-an-eval"}]
    answers = _run_tool(messages)
    timings = answers[2]["timings"]
    assert sum(t["nanoseconds"] for t in timings) >= 0.05e9
    assert answers[3]["success"] is False and "lse::hessian" in answers[3]["error"]
    assert answers[4]["success"] is False
    assert "not-an-eval" in answers[4]["error"]


def test_non_finite_output_is_a_failure():
    answer = gradbench.respond({"id": 7, "kind": "evaluate", "module": "lse",
                                "function": "primal",
                                "input": {"x": [float("inf"), 1.0]}})
    assert answer["success"] is False
    assert "NaN or infinity" in answer["error"]
