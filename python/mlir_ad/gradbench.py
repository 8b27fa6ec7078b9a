"""MLIR-AD as a GradBench tool: ``python3 -m mlir_ad.gradbench``.

Speaks GradBench's protocol (one JSON object per line on stdin/stdout):

- ``start``    -> ``{"id", "tool": "mlir-ad"}``
- ``define``   -> success for the evals implemented here (compiles the eval's
  MLIR module; the compilation time goes in a "compile" timing)
- ``evaluate`` -> parses the input into numpy arrays, runs the compiled
  function at least ``min_runs`` times and until ``min_seconds`` have
  passed, and answers the output with one "evaluate" timing per run (JSON
  work and compilation excluded)
- anything else (``analysis``) -> ``{"id"}``

Each eval is an MLIR module under bench/gradbench (shipped in this package
as ``gradbench_evals/``), plain func/scf/arith/math/tensor/linalg with the
derivative requested by ``ad`` ops; this file only moves data in and out.
Modules are compiled once per eval (their shapes are dynamic) and cached.
"""

import json
import math
import os
import sys
import time

import numpy as np

import mlir_ad

EVALS_DIR = os.environ.get(
    "MLIR_AD_GRADBENCH_EVALS",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "gradbench_evals"))


def _floats(value):
    return np.ascontiguousarray(np.asarray(value, dtype=np.float64))


def _scalar(value):
    return float(value)


def _list(array):
    return np.asarray(array, dtype=np.float64).tolist()


# --- per-eval data in and out ------------------------------------------------

def _hello_input(x):
    return (float(x),)


def _lse_input(data):
    return (_floats(data["x"]),)


def _llsq_input(data):
    return (_floats(data["x"]), int(data["n"]))


def _ode_input(data):
    return (_floats(data["x"]), int(data["s"]))


def _det_input(data):
    ell, a = data["ell"], _floats(data["A"])
    # The minors are column bit masks in an i64 (and expansion by minors of
    # a 63 x 63 matrix would take 63! steps anyway).
    if (isinstance(ell, bool) or not isinstance(ell, int) or
            not 1 <= ell <= 63 or a.shape != (ell * ell,)):
        raise ValueError(
            "det needs an integer ell with 1 <= ell <= 63 and A as a flat "
            f"row-major list of ell * ell numbers, got ell = {ell!r} and A "
            f"of shape {a.shape}")
    return (a, ell)


def _lstm_input(data):
    main = _floats(data["main_params"])
    layers, b = main.shape[0] // 2, main.shape[1] // 4
    return (main.reshape(layers, 2, 4, b), _floats(data["extra_params"]),
            _floats(data["state"]).reshape(layers, 2, b),
            _floats(data["sequence"]))


def _lstm_jacobian(output):
    main, extra = output
    return _list(np.concatenate((np.ravel(main), np.ravel(extra))))


def _kmeans_input(data):
    return (_floats(data["points"]), _floats(data["centroids"]))


def _particle_input(data):
    return (float(data["w"]),)


def _saddle_input(data):
    return (_floats(data["start"]),)


def _flat_list(array):
    return _list(np.ravel(array))


def _ht_input(data):
    """(variant, arguments): the simple variant (no us) passes the model and
    the points; the complicated one also us and the triangles."""
    model = data["data"]["model"]
    common = (_floats(model["base_relatives"]),
              _floats(model["inverse_base_absolutes"]),
              np.asarray(model["parents"], dtype=np.int64),
              _floats(model["base_positions"]), _floats(model["weights"]),
              -1.0 if model["is_mirrored"] else 1.0,
              np.asarray(data["data"]["correspondences"], dtype=np.int64),
              _floats(data["data"]["points"]))
    theta = _floats(data["theta"])
    if len(data["us"]) == 0:
        return 0, (theta,) + common
    triangles = np.asarray(model["triangles"], dtype=np.int64)
    return 1, (theta, _floats(data["us"])) + common + (triangles,)


def _ht_jacobian(output):
    c, _, columns = output.shape
    return _list(np.reshape(output, (3 * c, columns)))


def _ba_input(data):
    """GradBench's ba data, replicated the way the eval describes (n copies
    of the camera, m of the point, p of the weight and the feature; the
    observations i -> (i mod n, i mod m)), as separate arrays that the
    compiled code reads as such."""
    n, m, p = int(data["n"]), int(data["m"]), int(data["p"])
    cams = np.ascontiguousarray(np.tile(_floats(data["cam"]), (n, 1)))
    points = np.ascontiguousarray(np.tile(_floats(data["x"]), (m, 1)))
    weights = np.full(p, float(data["w"]))
    feats = np.ascontiguousarray(np.tile(_floats(data["feat"]), (p, 1)))
    obs = np.stack((np.arange(p) % n, np.arange(p) % m), axis=1).astype(np.int64)
    return (cams, points, weights, obs, feats)


def _ba_objective(output):
    reproj, werr = output
    p = len(werr)
    return {"reproj_error": {"elements": _list(reproj[0]), "repeated": p},
            "w_err": {"element": float(werr[0]), "repeated": p}}


def _ba_jacobian(output):
    """The truncated CSR GradBench compares: the first 30 and the last entry
    of the row pointers, the columns and the values."""
    vals, cols, wvals = output
    p = len(wvals)
    # Row pointers: 15 nonzeros in each of the 2p reprojection rows, then one
    # in each of the p weight rows; the weight columns follow the cameras'
    # and points' (cols[-1, 14] is observation p-1's).
    rows = [15 * k if k <= 2 * p else 30 * p + (k - 2 * p)
            for k in range(min(30, 3 * p + 1))] + [31 * p]
    last_col = int(cols[-1, 14]) if p else 0
    return {"rows": rows,
            "cols": [int(c) for c in np.ravel(cols)[:30]] + [last_col],
            "vals": [float(v) for v in np.ravel(vals)[:30]]
                    + [float(wvals[-1])] if p else []}


def _gmm_constant(d, k, m, gamma):
    """The part of the log-posterior that depends on none of the parameters
    (GradBench's gmm: the normalization of the data term and K times the
    Wishart prior's normalization C)."""
    n_prime = d + m + 1
    log_gamma_d = 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        math.lgamma(0.5 * n_prime - 0.5 * j) for j in range(d))
    c = n_prime * d * (math.log(gamma) - 0.5 * math.log(2.0)) - log_gamma_d
    return k * c


def _gmm_input(data):
    d, k = int(data["d"]), int(data["k"])
    m, gamma = int(data["m"]), float(data["gamma"])
    x = _floats(data["x"]).reshape(-1, d)
    l = _floats(data["l"]).reshape(k, d * (d - 1) // 2)
    return (_floats(data["alpha"]), _floats(data["mu"]).reshape(k, d),
            _floats(data["q"]).reshape(k, d), l, x, float(gamma), float(m),
            _gmm_constant(d, k, m, gamma))


def _gmm_jacobian(output):
    alpha, mu, q, l = output
    return {"alpha": _list(alpha), "mu": _list(mu), "q": _list(q),
            "l": _list(l)}


# eval -> (MLIR file, {function: (MLIR function, input, output)})
EVALS = {
    "hello": ("hello.mlir", {
        "square": ("square", _hello_input, _scalar),
        "double": ("double", _hello_input, _scalar),
    }),
    "lse": ("lse.mlir", {
        "primal": ("primal", _lse_input, _scalar),
        "gradient": ("gradient", _lse_input, _list),
    }),
    "llsq": ("llsq.mlir", {
        "primal": ("primal", _llsq_input, _scalar),
        "gradient": ("gradient", _llsq_input, _list),
    }),
    "det": ("det.mlir", {
        "primal": ("primal", _det_input, _scalar),
        "gradient": ("gradient", _det_input, _list),
    }),
    "ode": ("ode.mlir", {
        "primal": ("primal", _ode_input, _list),
        "gradient": ("gradient", _ode_input, _list),
    }),
    "lstm": ("lstm.mlir", {
        "objective": ("objective", _lstm_input, _scalar),
        "jacobian": ("jacobian", _lstm_input, _lstm_jacobian),
    }),
    "kmeans": ("kmeans.mlir", {
        "cost": ("cost", _kmeans_input, _scalar),
        "dir": ("dir", _kmeans_input, _list),
    }),
    "particle": ("particle.mlir", {
        variant: (variant, _particle_input, _scalar)
        for variant in ("ff", "fr", "rf", "rr")
    }),
    "saddle": ("saddle.mlir", {
        variant: (variant, _saddle_input, _flat_list)
        for variant in ("ff", "fr", "rf", "rr")
    }),
    "ht": ("ht.mlir", {
        "objective": (("objective_simple", "objective_complicated"),
                      _ht_input, _flat_list),
        "jacobian": (("jacobian_simple", "jacobian_complicated"), _ht_input,
                     _ht_jacobian),
    }),
    "ba": ("ba.mlir", {
        "objective": ("objective", _ba_input, _ba_objective),
        "jacobian": ("jacobian", _ba_input, _ba_jacobian),
    }),
    "gmm": ("gmm.mlir", {
        "objective": ("objective", _gmm_input, _scalar),
        "jacobian": ("jacobian", _gmm_input, _gmm_jacobian),
    }),
}

_modules = {}


def _names(functions):
    return functions if isinstance(functions, tuple) else (functions,)


def load(eval_name, parallel=False):
    """The compiled module of an eval (cached) and its compile time in ns;
    with parallel=True, its linalg loops run on OpenMP threads."""
    key = (eval_name, parallel)
    if key not in _modules:
        start = time.perf_counter_ns()
        module = mlir_ad.compile(os.path.join(EVALS_DIR, EVALS[eval_name][0]),
                                 parallel=parallel)
        # Compile every entry now, so that no run pays for it.
        for functions, _, _ in EVALS[eval_name][1].values():
            for function in _names(functions):
                module[function]._call = module._entry("call", function, ())
        _modules[key] = (module, time.perf_counter_ns() - start)
    return _modules[key]


def evaluate(eval_name, function, data, parallel=False):
    """(output, timings) of one evaluate message's function on its input."""
    module, _ = load(eval_name, parallel)
    names, read, write = EVALS[eval_name][1][function]
    args = read(data)
    if isinstance(names, tuple):
        # The input chooses among variants: read gave (variant, args).
        variant, args = args
        names = names[variant]
    fun = module[names]
    min_runs, min_seconds = 1, 0.0
    if isinstance(data, dict):
        min_runs = int(data.get("min_runs", 1))
        min_seconds = float(data.get("min_seconds", 0.0))
    timings = []
    elapsed = 0
    result = None
    while len(timings) < min_runs or elapsed < min_seconds * 1e9:
        start = time.perf_counter_ns()
        result = fun(*args)
        duration = time.perf_counter_ns() - start
        timings.append({"name": "evaluate", "nanoseconds": duration})
        elapsed += duration
    output = write(result)
    return output, timings


def _finite(value):
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def respond(message):
    """The answer to one message of the protocol."""
    response = {"id": message["id"]}
    kind = message.get("kind")
    if kind == "start":
        response["tool"] = "mlir-ad"
    elif kind == "define":
        module = message.get("module")
        if module not in EVALS:
            response["success"] = False
            response["error"] = (f"mlir-ad does not implement the {module} "
                                 "eval yet")
        else:
            try:
                _, compile_ns = load(module)
                response["success"] = True
                response["timings"] = [{"name": "compile",
                                        "nanoseconds": compile_ns}]
            except Exception as error:  # a broken eval file: say so
                response["success"] = False
                response["error"] = f"{type(error).__name__}: {error}"
    elif kind == "evaluate":
        module, function = message.get("module"), message.get("function")
        if module not in EVALS or function not in EVALS[module][1]:
            response["success"] = False
            response["error"] = f"unknown function {module}::{function}"
        else:
            try:
                output, timings = evaluate(module, function,
                                           message.get("input"))
                if not _finite(output):
                    raise ValueError("the output holds NaN or infinity")
                response.update(success=True, output=output, timings=timings)
            except Exception as error:
                response["success"] = False
                response["error"] = f"{type(error).__name__}: {error}"
    return response


def main(stdin=sys.stdin, stdout=sys.stdout):
    for line in stdin:
        if not line.strip():
            continue
        stdout.write(json.dumps(respond(json.loads(line))) + "\n")
        stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
