"""Shared helpers of the mlir_ad test suite.

Run with ``PYTHONPATH=<build>/python_packages /usr/bin/python3 -m pytest -q
python/tests``. When PYTHONPATH is not set, the package of ``build/`` next to
this checkout is used.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

try:
    import mlir_ad  # noqa: F401
except ImportError:  # pragma: no cover - convenience for a bare pytest run
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "build" /
                           "python_packages"))
    import mlir_ad  # noqa: F401


def numerical_grad(f, args, wrt, eps=1e-6):
    """Central finite differences of the scalar function ``f`` at ``args``
    with respect to the positions ``wrt``, computed in float64 (a float
    argument or an array of floats at each position)."""
    grads = []
    for p in wrt:
        a = args[p]
        if np.ndim(a) == 0 and not isinstance(a, np.ndarray):
            plus, minus = list(args), list(args)
            plus[p] = float(a) + eps
            minus[p] = float(a) - eps
            grads.append((float(f(*plus)) - float(f(*minus))) / (2 * eps))
            continue
        base = np.array(a, dtype=np.float64)
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            plus, minus = list(args), list(args)
            xp, xm = base.copy(), base.copy()
            xp[idx] += eps
            xm[idx] -= eps
            plus[p], minus[p] = xp, xm
            g[idx] = (float(f(*plus)) - float(f(*minus))) / (2 * eps)
        grads.append(g)
    return grads


def assert_grads_close(actual, expected, rtol=1e-6, atol=1e-8):
    """Every gradient of ``actual`` (a tuple) close to ``expected``, with the
    same shapes."""
    assert len(actual) == len(expected), (actual, expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert np.shape(a) == np.shape(e), (i, np.shape(a), np.shape(e))
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64),
                                   np.asarray(e, dtype=np.float64),
                                   rtol=rtol, atol=atol,
                                   err_msg=f"gradient {i}")


def run_isolated(code, timeout=120):
    """Runs ``code`` in a fresh interpreter (same PYTHONPATH and sys.path),
    for behaviour that may crash the process. Returns the CompletedProcess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout,
                          env=env)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
