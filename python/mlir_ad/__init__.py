"""MLIR-AD from Python: compile MLIR functions and differentiate them.

    import numpy as np
    import mlir_ad

    m = mlir_ad.compile('''
      func.func @f(%x: tensor<3xf64>, %w: f64) -> f64 { ... }
    ''')
    y = m.f(x, 2.0)                                  # call
    gx, gw = mlir_ad.grad(m.f)(x, 2.0)               # ad.grad
    y, (gx,) = mlir_ad.value_and_grad(m.f, wrt=0)(x, 2.0)
    y, pb = mlir_ad.vjp(m.f)(x, 2.0); gx, gw = pb(1.0)
    y, ty = mlir_ad.jvp(m.f, (x, 2.0), (tx, tw))    # ad.jvp, forward mode
    hx, hw = mlir_ad.hvp(m.f, (x, 2.0), (vx, vw))    # ad.hvp

Every entry point (a call, a gradient, ...) is compiled once per function
and set of differentiated arguments, with ``ad-lower-to-llvm`` and LLVM at
-O3, and cached; dynamic dimensions do not cause recompilation.
"""

import operator
import os

import numpy as np

from . import _mlir_ad
from ._mlir_ad import CompileError

__all__ = [
    "CompileError",
    "Function",
    "Module",
    "clear_cache",
    "compile",
    "grad",
    "hvp",
    "jvp",
    "num_compilations",
    "value_and_grad",
    "vjp",
]


def _unpack(results):
    """A function's results as Python returns them: None, one value, a tuple."""
    if len(results) == 0:
        return None
    if len(results) == 1:
        return results[0]
    return results


class Module:
    """A compiled MLIR module. Its functions are attributes: ``m.f``."""

    def __init__(self, program, name):
        self._program = program
        self._name = name
        self._entries = {}
        self._functions = {n: Function(self, n) for n in program.function_names}

    @property
    def functions(self):
        """Names of the functions with a body, in module order."""
        return list(self._functions)

    def __getitem__(self, name):
        try:
            return self._functions[name]
        except KeyError:
            raise KeyError(self._missing(name)) from None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._functions[name]
        except KeyError:
            raise AttributeError(self._missing(name)) from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._functions))

    def __repr__(self):
        return f"<mlir_ad.Module {self._name}: {', '.join(self._functions)}>"

    def _missing(self, name):
        return (f"{self._name} has no function @{name} "
                f"(it has {', '.join('@' + n for n in self._functions) or 'none'})")

    def _entry(self, kind, name, wrt):
        key = (kind, name, wrt)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._program.entry(kind, name, list(wrt))
            self._entries[key] = entry
        return entry


class Function:
    """One function of a Module; calling it runs the compiled code."""

    def __init__(self, module, name):
        self.module = module
        self.name = name
        self._call = None

    @property
    def signature(self):
        """((argument types), (result types)) as MLIR type strings."""
        inputs, results = self.module._program.signature(self.name)
        return (tuple(t[2] for t in inputs), tuple(t[2] for t in results))

    @property
    def differentiable_arguments(self):
        """Positions ``grad`` differentiates by default."""
        return tuple(self.module._program.differentiable_arguments(self.name))

    def __call__(self, *args):
        if self._call is None:
            self._call = self.module._entry("call", self.name, ())
        return _unpack(self._call(*args))

    def __repr__(self):
        try:
            inputs, results = self.signature
        except ValueError:  # a type the runtime cannot pass
            return f"<mlir_ad.Function @{self.name}>"
        return (f"<mlir_ad.Function @{self.name}: ({', '.join(inputs)}) -> "
                f"({', '.join(results)})>")


def compile(source, parallel=False):
    """Parses and verifies an MLIR module: its text, or a path to a file.

    With ``parallel=True``, the loops of its linalg ops over parallel
    dimensions run on OpenMP threads (all cores, or ``OMP_NUM_THREADS``)
    when they are large enough; that needs LLVM's OpenMP runtime
    (``libomp.so.5``, Debian's ``libomp-22-dev``).

    Raises CompileError with the MLIR diagnostics (and their locations) when
    the module does not parse or verify.
    """
    if not isinstance(parallel, (bool, np.bool_)):
        raise TypeError("compile()'s parallel is True or False, "
                        f"got {type(parallel).__name__}")
    parallel = bool(parallel)
    looks_like_path = (isinstance(source, str) and "\n" not in source and
                       "{" not in source and
                       (source.endswith(".mlir") or os.sep in source))
    if isinstance(source, os.PathLike) or looks_like_path:
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no MLIR file at {path}")
        with open(path) as f:
            text = f.read()
        return Module(_mlir_ad.parse(text, path, parallel), path)
    if not isinstance(source, str):
        raise TypeError("compile() takes MLIR source text or a file path, "
                        f"got {type(source).__name__}")
    return Module(_mlir_ad.parse(source, "<source>", parallel), "<source>")


def _function(fun, what):
    if not isinstance(fun, Function):
        raise TypeError(f"{what}() takes a function of a compiled module "
                        f"(m.f), got {type(fun).__name__}")
    return fun


def _position(p):
    """An argument position: an int or a numpy integer, never a bool."""
    if isinstance(p, bool) or type(p).__name__ == "bool_":
        raise TypeError(f"wrt must hold ints, got {p!r}")
    try:
        return operator.index(p)
    except TypeError:
        raise TypeError(f"wrt must hold ints, got {p!r}") from None


def _normalize_wrt(fun, wrt):
    """(positions, single): sorted positions, and whether one was asked for."""
    if wrt is None:
        return tuple(), False
    if getattr(wrt, "ndim", None) == 0 or not hasattr(wrt, "__iter__"):
        return (_position(wrt),), True
    positions = tuple(_position(p) for p in wrt)
    if not positions:
        raise ValueError("wrt is empty: name at least one argument")
    return tuple(sorted(positions)), False


def grad(fun, wrt=None):
    """The gradient of ``fun`` (one float result) as a function.

    ``wrt``: the argument positions to differentiate (default: every float
    scalar and float tensor argument). The returned function takes the same
    arguments as ``fun`` and returns a tuple with one gradient per position,
    in argument order, or the gradient alone when ``wrt`` is an int.
    """
    fun = _function(fun, "grad")
    positions, single = _normalize_wrt(fun, wrt)
    entry = fun.module._entry("grad", fun.name, positions)

    def gradient(*args):
        grads = entry(*args)
        return grads[0] if single else grads

    gradient.__name__ = f"grad_{fun.name}"
    return gradient


def value_and_grad(fun, wrt=None):
    """Like grad, but the function returns ``(value, gradients)``; ``fun``
    runs once."""
    fun = _function(fun, "value_and_grad")
    positions, single = _normalize_wrt(fun, wrt)
    entry = fun.module._entry("value_and_grad", fun.name, positions)

    def value_and_gradient(*args):
        results = entry(*args)
        return results[0], (results[1] if single else results[1:])

    value_and_gradient.__name__ = f"value_and_grad_{fun.name}"
    return value_and_gradient


def vjp(fun, wrt=None):
    """Reverse mode in two halves, for functions with any results.

    ``vjp(m.f, wrt)(*args)`` returns ``(results, pullback)``: ``results`` as
    ``m.f(*args)`` returns them, and ``pullback(*cotangents)`` taking one
    cotangent per float result (shaped like it) and returning the gradients
    as ``grad`` does. The pullback may be called any number of times; each
    call runs the compiled forward and reverse sweep on the saved arguments.
    """
    fun = _function(fun, "vjp")
    positions, single = _normalize_wrt(fun, wrt)
    entry = fun.module._entry("vjp", fun.name, positions)
    call = fun.module._entry("call", fun.name, ())
    result_types = call.result_types
    # (element, shape, MLIR type, numpy dtype, differentiable) per result.
    float_results = [i for i, t in enumerate(result_types) if t[4]]

    input_types = call.input_types

    def forward(*args):
        results = call(*args)
        # The pullback differentiates at these arguments even if the caller
        # changes its arrays later (copied with the dtype the call used).
        saved = tuple(_snapshot(a, t) for a, t in zip(args, input_types))

        def pullback(*cotangents):
            if len(cotangents) != len(float_results):
                raise TypeError(
                    f"the pullback of @{fun.name} takes {len(float_results)} "
                    f"cotangents (one per float result), got {len(cotangents)}")
            for n, (i, ct) in enumerate(zip(float_results, cotangents)):
                _check_cotangent(fun.name, n, i, results[i], ct)
            grads = entry(*saved, *cotangents)
            return grads[0] if single else grads

        return _unpack(results), pullback

    forward.__name__ = f"vjp_{fun.name}"
    return forward


def _primals_and_tangents(what, fun, primals, tangents, wrt):
    fun = _function(fun, what)
    if wrt is not None and hasattr(wrt, "__iter__") and \
            getattr(wrt, "ndim", None) != 0:
        wrt = tuple(wrt)  # read an iterator once
    positions, single = _normalize_wrt(fun, wrt)
    if not isinstance(primals, (tuple, list)):
        raise TypeError(f"{what}() takes the arguments of @{fun.name} as a "
                        f"tuple, got {type(primals).__name__}")
    if single and not isinstance(tangents, (tuple, list)):
        tangents = (tangents,)
    if not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{what}() takes the tangents as a tuple (one per "
                        f"differentiated argument), got "
                        f"{type(tangents).__name__}")
    tangents = tuple(tangents)
    if wrt is not None and not single:
        # Tangents come in the order wrt lists the positions; the compiled
        # entry takes them in argument order.
        given = [_position(p) for p in wrt]
        if len(given) != len(tangents):
            raise TypeError(f"{what} of @{fun.name} takes {len(given)} "
                            f"tangents (one per position of wrt), got "
                            f"{len(tangents)}")
        order = sorted(range(len(given)), key=lambda i: given[i])
        tangents = tuple(tangents[i] for i in order)
    return fun, positions, single, tuple(primals), tangents


def _check_tangents(what, fun, entry, primals, tangents):
    """One tangent per differentiated argument, shaped like it."""
    import numpy as np

    n_args = len(fun.module._entry("call", fun.name, ()).input_types)
    expected = len(entry.input_types) - n_args
    if len(tangents) != expected:
        raise TypeError(f"{what} of @{fun.name} takes {expected} tangents "
                        f"(one per differentiated argument), got "
                        f"{len(tangents)}")
    if len(primals) != n_args:
        raise TypeError(f"{what} of @{fun.name} takes {n_args} arguments, "
                        f"got {len(primals)}")
    for n, (t, ty) in enumerate(zip(tangents, entry.input_types[n_args:])):
        shape = ty[1]
        if shape is None:
            if np.ndim(t) != 0:
                raise ValueError(f"tangent {n} of {what} of @{fun.name} must "
                                 f"be a number like its argument, got shape "
                                 f"{np.shape(t)}")


def jvp(fun, primals, tangents, wrt=None):
    """Forward mode: ``(results, result_tangents)`` of ``fun`` at
    ``primals`` along ``tangents``.

    ``primals``: a tuple of ``fun``'s arguments. ``tangents``: one per
    differentiated argument (every float scalar and float tensor argument,
    or the positions in ``wrt``, in the order ``wrt`` lists them), shaped
    like it. ``results`` are as
    ``fun(*primals)`` returns them; ``result_tangents`` has one tangent per
    float result (the tangent alone when ``fun`` has one float result).
    Computed by ``ad.jvp``: no tape, about the cost of two calls.
    """
    fun, positions, _, primals, tangents = _primals_and_tangents(
        "jvp", fun, primals, tangents, wrt)
    entry = fun.module._entry("jvp", fun.name, positions)
    _check_tangents("jvp", fun, entry, primals, tangents)
    outputs = entry(*primals, *tangents)
    call = fun.module._entry("call", fun.name, ())
    n_results = len(call.result_types)
    results, result_tangents = outputs[:n_results], outputs[n_results:]
    return _unpack(results), _unpack(result_tangents)


def hvp(fun, primals, tangents, wrt=None):
    """The Hessian-vector product of ``fun`` (one float result) at
    ``primals`` along ``tangents``, one per differentiated argument (as
    ``grad`` returns gradients; alone when ``wrt`` is an int).

    Computed by ``ad.hvp``, forward mode over reverse mode.
    """
    fun, positions, single, primals, tangents = _primals_and_tangents(
        "hvp", fun, primals, tangents, wrt)
    entry = fun.module._entry("hvp", fun.name, positions)
    _check_tangents("hvp", fun, entry, primals, tangents)
    products = entry(*primals, *tangents)
    return products[0] if single else products


def _snapshot(value, input_type):
    """A private copy of a tensor argument (arrays, lists) in the dtype the
    call converted it to; scalars as they are."""
    import numpy as np

    _, shape, _, dtype, _ = input_type
    if shape is None or dtype is None:
        return value
    return np.array(value, dtype=dtype, copy=True)


def _check_cotangent(name, n, i, result, cotangent):
    """A cotangent must have its result's shape (numbers for scalars)."""
    import numpy as np

    shape = getattr(result, "shape", None)
    if shape is None:
        if np.ndim(cotangent) != 0:
            raise ValueError(f"cotangent {n} of @{name} must be a number like "
                             f"result {i}, got shape {np.shape(cotangent)}")
        return
    if np.shape(cotangent) != shape:
        raise ValueError(f"cotangent {n} of @{name} must have shape {shape} "
                         f"like result {i}, got {np.shape(cotangent)}")


def num_compilations():
    """How many entry points were compiled in this process (cache misses)."""
    return _mlir_ad.num_compilations()


def clear_cache():
    """Forgets compiled entry points that no Module or gradient still uses."""
    _mlir_ad.clear_cache()
