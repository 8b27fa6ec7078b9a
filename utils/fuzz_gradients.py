#!/usr/bin/env python3
"""Random differentiable MLIR programs, their gradients checked against
finite differences.

Each program is a few functions written with func, scf, cf, arith, math,
tensor and linalg over the surface README "What is differentiated" claims,
built from a seeded random generator:

- every arith and math op with a rule, on scalars and on whole tensors,
  its arguments kept inside its domain by construction (log of x*x + c,
  asin of tanh(x) * 0.9, divisions by x*x + c, powf of a positive base,
  ...) and magnitudes kept bounded (every value carries an estimate of its
  bound, and a value about to grow too large is scaled down first);
- calls (one callee from several places, results unused), scf.if,
  scf.for (static and dynamic bounds, index/i32/i64 induction variables,
  nesting, float and integer iter_args), scf.while (counting to an index,
  or growing a value past a data-dependent limit with an iteration guard,
  work in the condition region), scf.index_switch, scf.execute_region,
  unstructured cf (block loops, diamonds, switches, early returns, with
  block arguments), recursion (self, tree and mutual, depth from an index
  argument or from the data);
- in some programs (CHAIN_RATE), a chain of 10 to 30 functions without
  loops, each calling the next (some from two sites, some inside an
  scf.if), with selects, index arithmetic passed down, f64 arguments in
  f32 programs and small tensors read at computed positions, called by
  @f directly, in a loop and in a branch: their tapes grow down the chain
  and are packed into records;
- in some programs (NEST_RATE), scf.if and scf.index_switch nested 3 to
  6 deep under the entry of @f or of a helper, each on a condition
  computed at its own level from an index argument %key, whose value at
  each point makes some points reach the innermost level and others
  leave early; floats, i1 and index values of the inner levels are read
  by the adjoint (from the branch tape);
- tensors: splat, from_elements, generate, fill, extract, insert,
  extract_slice (also rank-reducing), insert_slice, expand_shape,
  collapse_shape, reshape, cast, concat, pad (constant or computed per
  position); linalg.generic (elementwise with random bodies reading
  outside scalars, transposed and broadcast operands, reductions with sum,
  product, max and min combiners, gathers), and the named ops matmul,
  batch_matmul, matvec, vecmat, dot, transpose, broadcast, reduce, map,
  fill, copy, the elementwise named ops and linalg.elementwise; tensors
  carried through scf.for and scf.if; static shapes, and dynamic ones
  whose sizes come from an index argument of @f at run time;
- f64 and f32 programs.

The function @f of each program (a float or rank-0 tensor result, and
under ad.forward sometimes more float and i32 results) is differentiated
in a generated caller with ad.grad, ad.value_and_grad or ad.forward +
ad.pullback (the cotangents of the float results are fixed weights; the
pullback is sometimes applied twice), sometimes for a `wrt` subset. Every
number is printed as its bit pattern (an i64), so Python reads exact
values. The reference is a second module holding only the primal
functions (the f64 twin of an f32 program, in which its f32 -> f64 -> f32
conversions become identities), lowered by the same pipeline, which
without ad ops is upstream lowering alone; it evaluates the weighted sum
of @f's float results at the point and at x +- h v, x +- h/4 v for each
differentiated argument, with v = 1 for a scalar and a random direction
(entries +-1/2, +-1) for a tensor, h = 1e-5 * max(1, |x|). The calls go
through non-inlined wrappers, so nothing is folded at compile time.

For each point and differentiated argument:

- fd1, fd2 are the central differences at h and h/4. On a smooth function
  they agree to about h^2 |f'''| plus rounding noise eps64 |f| / h; where
  they differ by more than SKIP_TOLERANCE * max(|fd2|, FLOOR), a kink, a
  branch flip or a trip-count change lies within h of the point, and the
  point is skipped (counted, never a failure).
- The reference is Richardson's extrapolation fd2 + (fd2 - fd1) / 15; the
  derivative from AD along v (the gradient dotted with the exact step
  between the two evaluation points, divided by h/2) passes when it is
  within TOLERANCE[T] * max(|reference|, FLOOR) of it, the criterion of
  docs/Testing.md.
- A gradient that is NaN or infinite where the primal is finite fails; the
  primal results of ad.value_and_grad / ad.forward must equal the plain
  call (to PRIMAL_TOLERANCE[T], relative); the plain call of an f64
  program must equal the reference module's bit for bit; a pullback
  applied twice must give the same gradients bit for bit.
- An f32 point whose primal differs from the f64 twin's by more than
  F32_DIVERGENCE (relative) is skipped: the rounded constants made the f32
  program take another branch or trip count than its twin, so the twin's
  finite differences do not describe it.

Tolerances, and why they give no false positives on correct programs:
f64 1e-6, the contract of the existing execution tests. The reference is
accepted only when fd1 and fd2 agree to SKIP_TOLERANCE = 1e-7, so it is
good to about 1e-8 (Richardson removes the h^2 term), and AD in f64 is
exact to about 1e-12 here: over thousands of correct programs the largest
relative error accepted is 6e-8 (the summary prints it on every run),
more than 15x below the tolerance, while scaling the gradients by
1 + 1e-5 fails. f32 1e-2: the f32 gradient carries eps32 = 1.2e-7
amplified by the condition of tens of chained ops, loops and reductions
(up to 3e-5 over thousands of correct f32 points), and once 1.6e-3: a
rounded constant can put the f32 program on the other side of a kink
(max, min, abs, select) than its twin, where the primals agree and the
slopes do not, which no finite difference of the twin can see. The f32
programs are there for errors of f32 handling, which are gross; the same
constructs are checked to 1e-6 in f64 programs. F32_DIVERGENCE = 1e-4:
correct f32 primals stay within 2.3e-6 of their twins. FLOOR = 0.01 keeps
the bound meaningful for zero derivatives.

When ad-opt fails on a batch, each program is lowered alone to find the
culprits and the others run again together; when mlir-runner fails, the
programs that finished keep their results and the rest run again (the one
that was running alone). Outcomes per program: ok, skipped (no point could
be checked), WRONG GRADIENT, WRONG PRIMAL, ad-opt CRASH, ad-opt DIAGNOSTIC
(message recorded), INVALID IR (a verifier error after an ad pass), RUNNER
FAILURE (a crash or an error of the generated code), TIMEOUT (a tool ran
longer than TIMEOUT seconds), and REFERENCE FAILURE (the primal-only
module failed: an upstream crash or a generator bug).
Each --avoid names a known bug (KNOWN_BUGS) whose constructs are then not
generated; README limitations are never generated.

Usage:

    utils/fuzz_gradients.py --seed 1 --count 200 [--keep-dir DIR] [--jobs 2]
        [--avoid BUG]... [--ad-opt PATH] [--print N]

Program N of seed S depends only on (S, N, --avoid), whatever the batch
size and the number of jobs; --print N writes its gradient module (with
its points) for reading or reducing. Exits 1 when any program fails.
"""

import argparse
import concurrent.futures
import glob
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from fractions import Fraction

# Checking (see the module docstring for the reasons).
TOLERANCE = {"f64": 1e-6, "f32": 1e-2}
SKIP_TOLERANCE = 1e-7
PRIMAL_TOLERANCE = {"f64": 1e-12, "f32": 1e-5}
F32_DIVERGENCE = 1e-4
FLOOR = 0.01
STEP = 1e-5

# Outcomes, worst first.
WRONG_GRADIENT = "WRONG GRADIENT"
WRONG_PRIMAL = "WRONG PRIMAL"
CRASH = "ad-opt CRASH"
TIMED_OUT = "TIMEOUT"
DIAGNOSTIC = "ad-opt DIAGNOSTIC"
INVALID_IR = "INVALID IR"
RUNNER_FAILURE = "RUNNER FAILURE"
REFERENCE_FAILURE = "REFERENCE FAILURE"
SKIPPED = "skipped"
OK = "ok"
FAILURES = [WRONG_GRADIENT, WRONG_PRIMAL, CRASH, DIAGNOSTIC, INVALID_IR,
            RUNNER_FAILURE, TIMED_OUT, REFERENCE_FAILURE]

# Constructs that trigger known bugs, by the name --avoid takes (see
# Generator.blocked for what each one rules out).
KNOWN_BUGS = {
    "rank-reducing-unit-slice":
        "upstream crash in expand-strided-metadata (SubViewOp::"
        "getDroppedDims) on a rank-reducing extract_slice dropping one of "
        "several size-1 dimensions",
}

# Program shapes drawn from a generator of their own (seeded with the seed
# and the number), so that programs without them stay as they were: the
# rate of programs with a call chain (Generator.chain), and with branches
# nested 3 to 6 deep (Generator.nest).
CHAIN_RATE = 0.12
NEST_RATE = 0.12
# Scalars defined this many branch ops deep under a function's entry go to
# its branch tape (kBranchTapeDepth in DerivativeGenerator.cpp).
BRANCH_TAPE_DEPTH = 3

LLVM_BIN = "/usr/lib/llvm-22/bin"
RUNTIME_LIBS = ",".join(
    [f"/usr/lib/llvm-22/lib/{lib}" for lib in
     ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so")] +
    # Vectorized math calls glibc's libmvec (ad-vector-math).
    sorted(glob.glob("/usr/lib/*-linux-gnu/libmvec.so.1"))[:1])
TIMEOUT = 600


# ---------------------------------------------------------------------------
# Values and regions
# ---------------------------------------------------------------------------

@dataclass
class Value:
    """An SSA value of the program being generated. `bound` estimates the
    largest magnitude it takes for arguments of magnitude <= 2; a tensor
    has the sizes `shape` (known to the generator) and a '?' in its type
    where `dynamic` says so."""
    name: str
    bound: float
    shape: tuple = None
    dynamic: tuple = ()
    elem: str = "$T"

    @property
    def type(self):
        return value_type(self.shape, self.dynamic, self.elem)

    def like(self, name, bound, elem=None):
        """A value of the same shape named `name`."""
        return Value(name, bound, self.shape, self.dynamic,
                     elem or self.elem)

    def matches(self, other):
        """Same type and same sizes (a '?' in a type hides the size)."""
        return self.type == other.type and self.shape == other.shape


def value_type(shape, dynamic, elem):
    """The MLIR type of a scalar (shape None) or a tensor."""
    if shape is None:
        return elem
    dims = "".join(("?" if d else str(s)) + "x"
                   for s, d in zip(shape, dynamic))
    return f"tensor<{dims}{elem}>"


class Region:
    """The lines of a region (or a straight run of blocks) being written
    and the values visible in it: float values (scalars and tensors),
    index values; `depth`, the nesting of control flow, and `context`,
    what encloses it ("loop", and "recursion" in a recursive function);
    `branch`, how many branch ops (scf.if, scf.index_switch, or cf
    branches that lifting makes into them) enclose it with no loop between
    them and the function's entry (negative under a loop)."""

    def __init__(self, indent, floats=(), indices=(), depth=0,
                 context=frozenset(), branch=0):
        self.indent = indent
        self.lines = []
        self.floats = list(floats)
        self.indices = list(indices)
        self.depth = depth
        self.context = context
        self.branch = branch

    def nested_branch(self, kinds):
        """The branch depth of a region nested here as `kinds` say."""
        if "loop" in kinds:
            return -1000
        return self.branch + ("branch" in kinds)

    def child(self, *kinds):
        """A nested region (of a loop or a branch op when `kinds` say so):
        it sees everything visible here."""
        return Region(self.indent + 1, self.floats, self.indices,
                      self.depth + 1, self.context | (set(kinds) - {"branch"}),
                      self.nested_branch(kinds))

    def sibling(self, *kinds):
        """A block at the same level (a successor in a CFG, which lifting
        puts in a loop or a branch when `kinds` say so): it sees what is
        visible here, and what it defines is not visible after it."""
        return Region(self.indent, self.floats, self.indices, self.depth,
                      self.context | (set(kinds) - {"branch"}),
                      self.nested_branch(kinds))

    def emit(self, line):
        self.lines.append("  " * self.indent + line)

    def label(self, line):
        self.lines.append("  " * (self.indent - 1) + line)


def affine(rank, exprs):
    """affine_map<(d0, ..) -> (d_e, ..)>."""
    dims = ", ".join(f"d{k}" for k in range(rank))
    return f"affine_map<({dims}) -> ({', '.join(f'd{e}' for e in exprs)})>"


def iterators(rank, reductions):
    return ", ".join('"reduction"' if k in reductions else '"parallel"'
                     for k in range(rank))


def ints(values):
    return ", ".join(str(v) for v in values)


def factorizations(n):
    """Shapes (tuples of sizes >= 1, rank <= 3) with n elements."""
    out = [(n,)]
    for a in range(1, n + 1):
        if n % a == 0:
            out.append((a, n // a))
            for b in range(1, n // a + 1):
                if (n // a) % b == 0:
                    out.append((a, b, n // a // b))
    return out


def nested(values, shape):
    """A dense literal of `values` (row-major) with `shape`."""
    if not shape:
        return flit(values[0])
    step = len(values) // shape[0]
    return "[" + ", ".join(nested(values[k * step:(k + 1) * step], shape[1:])
                           for k in range(shape[0])) + "]"


def flit(value):
    """A float literal MLIR parses back to exactly `value`."""
    text = repr(float(value))
    if "e" in text and "." not in text:
        text = f"{value:.17e}"
    return text


@dataclass
class Callee:
    """A generated function others may call: its argument types in order
    ('$T' and '$W' arguments are bounded by 2, 'index' ones by 5), float
    results with their bounds; whether it runs a loop, a recursion, a loop
    nest (a loop in a loop, a product reduction, a gather), itself or
    through its callees; whether its tape holds a branch tape (branches
    nested BRANCH_TAPE_DEPTH deep under its entry, or a callee's; noted
    when it is called in a loop or a recursion); the position of its
    argument %key (see Generator.nest), if any."""
    name: str
    types: list
    bounds: list
    loops: bool = False
    recursive: bool = False
    nests: bool = False
    buffer: bool = False
    key: int = None


# ---------------------------------------------------------------------------
# Scalar and elementwise ops, their arguments kept in their domains
# ---------------------------------------------------------------------------

def op_negf(g, r, x):
    return g.un(r, "arith.negf", x, x.bound)


def op_exp(g, r, x):
    op = g.pick(["math.exp", "math.exp2", "math.expm1"])
    return g.un(r, op, g.limit(r, x, 2.0), 7.5)


def op_log(g, r, x):
    op = g.pick(["math.log", "math.log2", "math.log10"])
    p = g.positive(r, x, g.pick([0.5, 1.0, 2.0]))
    return g.un(r, op, p, abs(math.log(0.5)) + math.log2(1 + p.bound))


def op_log1p(g, r, x):
    if g.chance(0.5):
        return g.un(r, "math.log1p", g.positive(r, x, 0.0),
                    math.log1p(min(x.bound, 8.0) ** 2))
    return g.un(r, "math.log1p", g.unit(r, x, 0.9), 2.31)


def op_sqrt(g, r, x):
    op = g.pick(["math.sqrt", "math.rsqrt"])
    p = g.positive(r, x, 0.5)
    return g.un(r, op, p, max(1.5, math.sqrt(p.bound)))


def op_cbrt(g, r, x):
    p = g.positive(r, x, 0.5)
    if g.chance(0.5):
        p = g.un(r, "arith.negf", p, p.bound)
    return g.un(r, "math.cbrt", p, max(1.0, p.bound ** (1 / 3)))


def op_trig(g, r, x):
    op = g.pick(["math.sin", "math.cos"])
    return g.un(r, op, g.limit(r, x, 6.0), 1.0)


def op_tan(g, r, x):
    return g.un(r, "math.tan", g.unit(r, x, 1.2), 2.6)


def op_arc(g, r, x):
    op = g.pick(["math.asin", "math.acos", "math.atanh"])
    return g.un(r, op, g.unit(r, x, 0.9), 3.2)


def op_saturating(g, r, x):
    op = g.pick(["math.atan", "math.tanh", "math.erf", "math.erfc"])
    return g.un(r, op, g.limit(r, x, 4.0), 2.0)


def op_asinh(g, r, x):
    return g.un(r, "math.asinh", x, 1 + math.log1p(x.bound))


def op_acosh(g, r, x):
    p = g.positive(r, x, 1.5)
    return g.un(r, "math.acosh", p, 1 + math.log1p(p.bound))


def op_hyperbolic(g, r, x):
    op = g.pick(["math.sinh", "math.cosh"])
    return g.un(r, op, g.limit(r, x, 2.0), 3.8)


def op_absf(g, r, x):
    return g.un(r, "math.absf", x, x.bound)


def op_rounding(g, r, x):
    """x * round(y): the rounding op has a zero derivative, the product
    makes it matter."""
    op = g.pick(["math.floor", "math.ceil", "math.round", "math.roundeven",
                 "math.trunc"])
    y = g.limit(r, g.other(r, x), 4.0)
    q = g.un(r, op, y, y.bound + 1)
    return g.bin(r, "arith.mulf", g.limit(r, x, 3.0), q, 3.0 * q.bound)


def op_fpowi(g, r, x):
    if g.chance(0.5):
        k = g.pick([2, 3])
        base = g.limit(r, x, 1.5)
    else:
        k = g.pick([-1, -2])
        base = g.positive(r, g.limit(r, x, 2.0), 0.5)
    n = g.int_const(r, k, "i32", base)
    bound = max(abs(base.bound) ** k, 2.0 ** (-k)) if k > 0 else 2.0 ** -k
    return g.emit_value(r, base.like(None, bound),
                        f"math.fpowi {base.name}, {n} : {base.type}, "
                        f"{value_type(base.shape, base.dynamic, 'i32')}")


def op_through_int(g, r, x):
    """x * sitofp(fptosi(y)) (or the unsigned pair on a positive y): a
    path through an integer that carries no derivative."""
    y = g.limit(r, g.other(r, x), 4.0)
    signed = g.chance(0.5)
    if not signed:
        y = g.positive(r, g.limit(r, y, 2.0), 0.0)
    it = g.pick(["i32", "i64"])
    ity = value_type(y.shape, y.dynamic, it)
    i = g.fresh()
    r.emit(f"{i} = arith.{'fptosi' if signed else 'fptoui'} {y.name} : "
           f"{y.type} to {ity}")
    f = g.emit_value(r, y.like(None, y.bound + 1),
                     f"arith.{'sitofp' if signed else 'uitofp'} {i} : "
                     f"{ity} to {y.type}")
    return g.bin(r, "arith.mulf", g.limit(r, x, 3.0), f, 3.0 * f.bound)


def op_widen(g, r, x):
    """extf to f64, an op there, truncf back (f32 programs only; in the f64
    twin the conversions are identities)."""
    w = g.emit_value(r, x.like(None, x.bound, "$W"),
                     f"arith.extf {x.name} : {x.type} to "
                     f"{value_type(x.shape, x.dynamic, '$W')}")
    y = g.un(r, g.pick(["math.sin", "math.tanh", "math.atan"]),
             g.limit(r, w, 4.0), 1.6)
    return g.emit_value(r, x.like(None, y.bound),
                        f"arith.truncf {y.name} : {y.type} to {x.type}")


def op_index_float(g, r, x):
    """x * float(n) for an index n in scope (a loop counter, a size)."""
    n = g.pick(r.indices)
    i = g.fresh()
    r.emit(f"{i} = arith.index_cast {n} : index to i64")
    f = g.fresh()
    op = g.pick(["arith.sitofp", "arith.uitofp"])
    r.emit(f"{f} = {op} {i} : i64 to $T")
    fv = Value(f, 8.0)
    if x.shape is not None:
        fv = g.splat(r, fv, x)
    return g.bin(r, "arith.mulf", g.limit(r, x, 1.0), fv, 8.0)


def op_addsub(g, r, x):
    y = g.other(r, x)
    return g.bin(r, g.pick(["arith.addf", "arith.subf"]), x, y,
                 x.bound + y.bound)


def op_mulf(g, r, x):
    a, b = g.limit(r, x, 3.0), g.limit(r, g.other(r, x), 3.0)
    return g.bin(r, "arith.mulf", a, b, a.bound * b.bound)


def op_divf(g, r, x):
    c = g.pick([0.5, 1.0, 2.0])
    d = g.positive(r, g.other(r, x), c)
    return g.bin(r, "arith.divf", x, d, x.bound / c)


def op_remf(g, r, x):
    d = g.positive(r, g.limit(r, g.other(r, x), 2.0), 0.5)
    return g.bin(r, "arith.remf", x, d, d.bound)


def op_minmax(g, r, x):
    y = g.other(r, x)
    op = g.pick(["arith.maximumf", "arith.minimumf", "arith.maxnumf",
                 "arith.minnumf"])
    return g.bin(r, op, x, y, max(x.bound, y.bound))


def op_select(g, r, x):
    y = g.other(r, x)
    a, b = g.pick_two(r, x)
    cond = g.compare(r, a, b)
    ctype = value_type(x.shape, x.dynamic, "i1")
    types = f"{ctype}, {x.type}" if x.shape is not None else x.type
    return g.emit_value(r, x.like(None, max(x.bound, y.bound)),
                        f"arith.select {cond}, {x.name}, {y.name} : {types}")


def op_atan2(g, r, x):
    d = g.positive(r, g.limit(r, g.other(r, x), 3.0), 0.3)
    return g.bin(r, "math.atan2", x, d, 1.6)


def op_powf(g, r, x):
    base = g.positive(r, g.limit(r, x, 1.5), 0.5)
    e = g.limit(r, g.other(r, x), 2.0)
    return g.bin(r, "math.powf", base, e, base.bound ** 2 + 4.0)


def op_copysign(g, r, x):
    y = g.other(r, x)
    return g.bin(r, "math.copysign", x, y, x.bound)


def op_fma(g, r, x):
    a, b = g.limit(r, x, 3.0), g.limit(r, g.other(r, x), 3.0)
    c = g.other(r, x)
    return g.emit_value(r, x.like(None, a.bound * b.bound + c.bound),
                        f"math.fma {a.name}, {b.name}, {c.name} : {x.type}")


# name -> (weight, op); every op takes the value it mainly transforms and
# may pick others of the same type from the region.
ELEMENTWISE_OPS = {
    "negf": (1, op_negf),
    "exp": (2, op_exp),
    "log": (2, op_log),
    "log1p": (1, op_log1p),
    "sqrt": (2, op_sqrt),
    "cbrt": (1, op_cbrt),
    "sin_cos": (3, op_trig),
    "tan": (1, op_tan),
    "asin_acos_atanh": (2, op_arc),
    "atan_tanh_erf": (3, op_saturating),
    "asinh": (1, op_asinh),
    "acosh": (1, op_acosh),
    "sinh_cosh": (1, op_hyperbolic),
    "absf": (1, op_absf),
    "rounding": (1, op_rounding),
    "fpowi": (1, op_fpowi),
    "through_int": (1, op_through_int),
    "widen": (1, op_widen),
    "index_float": (1, op_index_float),
    "addf_subf": (4, op_addsub),
    "mulf": (4, op_mulf),
    "divf": (2, op_divf),
    "remf": (1, op_remf),
    "min_max": (2, op_minmax),
    "select": (2, op_select),
    "atan2": (1, op_atan2),
    "powf": (1, op_powf),
    "copysign": (1, op_copysign),
    "fma": (1, op_fma),
}


# ---------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------

class Generator:
    """Writes the functions of one random program: helpers (straight-line
    with structured control flow, unstructured, recursive) and the
    differentiated @f. Text uses `$T` for the float type, `$W` for f64
    (the wide type of an f32 program), `@$P` for the program's prefix."""

    def __init__(self, rng, elem, avoid):
        self.rng = rng
        self.elem = elem
        self.avoid = avoid
        self.counter = 0
        self.functions = []
        self.callees = []
        self.features = set()
        self.budget = 0
        self.rank0 = False
        self.extra = []
        self.runs_loop = False
        self.runs_recursion = False
        self.runs_nest = False
        self.tensor_rate = 0
        self.size_arg = None
        self.size_values = set()
        self.runs_buffer = False
        self.loop_free = False
        self.chain = []
        self.stops = None
        self.arguments = []
        self.terms = []

    # -- randomness ---------------------------------------------------------

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, items):
        return self.rng.choice(list(items))

    def weighted(self, table):
        """A key of `table` (name -> (weight, ...)) chosen by weight."""
        names = list(table)
        return self.rng.choices(names, [table[n][0] for n in names])[0]

    def fresh(self, prefix="%v"):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def note(self, feature):
        self.features.add(feature)

    def blocked(self, r, construct, callee=None):
        """Whether `construct` is ruled out in region r: by a known bug
        named in self.avoid, or any loop in the links of a call chain
        (self.loop_free). (Recursive callees in loops and loop nests in
        recursions are generated: the shared tapes link their rows.)
        Constructs: "call" of `callee`; "loop"; "nest": a product
        reduction or a gather over a rank >= 2 tensor, which become loop
        nests; "unit_slice": a rank-reducing slice with several sizes 1."""
        return any([
            "rank-reducing-unit-slice" in self.avoid and
            construct == "unit_slice",
            self.loop_free and construct in ("loop", "nest"),
        ])

    def allows(self, r, callee):
        """Whether `callee` may be called in r."""
        return not self.blocked(r, "call", callee)

    # -- emitting ops -------------------------------------------------------

    def emit_value(self, r, value, text):
        """Emits `%name = text` for `value` (its name is made here), makes
        it visible and returns it."""
        value.name = self.fresh()
        r.emit(f"{value.name} = {text}")
        r.floats.append(value)
        return value

    def un(self, r, op, x, bound):
        return self.emit_value(r, x.like(None, bound),
                               f"{op} {x.name} : {x.type}")

    def bin(self, r, op, x, y, bound):
        return self.emit_value(r, x.like(None, bound),
                               f"{op} {x.name}, {y.name} : {x.type}")

    def const(self, r, value, like):
        """A constant of like's type (a splat for tensors)."""
        name = self.fresh()
        if like.shape is None:
            r.emit(f"{name} = arith.constant {flit(value)} : {like.elem}")
            return Value(name, abs(value), elem=like.elem)
        if not any(like.dynamic):
            r.emit(f"{name} = arith.constant dense<{flit(value)}> : "
                   f"{like.type}")
            return like.like(name, abs(value))
        scalar = self.const(r, value, Value("", 0, elem=like.elem))
        return self.splat(r, scalar, like)

    def int_const(self, r, value, itype, like):
        """An integer constant of itype, shaped like `like`."""
        name = self.fresh()
        if like.shape is None:
            r.emit(f"{name} = arith.constant {value} : {itype}")
        elif not any(like.dynamic):
            r.emit(f"{name} = arith.constant dense<{value}> : "
                   f"{value_type(like.shape, like.dynamic, itype)}")
        else:
            scalar = self.int_const(r, value, itype, Value("", 0))
            name = self.fresh()
            r.emit(f"{name} = tensor.splat {scalar}[{self.dims(r, like)}] : "
                   f"{value_type(like.shape, like.dynamic, itype)}")
        return name

    def index(self, r, value):
        name = self.fresh("%c")
        r.emit(f"{name} = arith.constant {value} : index")
        return name

    def splat(self, r, scalar, like):
        """tensor.splat of a scalar to like's type."""
        name = self.fresh()
        dims = self.dims(r, like)
        sizes = f"[{dims}]" if dims else ""
        r.emit(f"{name} = tensor.splat {scalar.name}{sizes} : {like.type}")
        return like.like(name, scalar.bound, scalar.elem)

    def dims(self, r, t):
        """The dynamic sizes of tensor t, read with tensor.dim."""
        names = []
        for i, dyn in enumerate(t.dynamic):
            if dyn:
                d = self.fresh()
                r.emit(f"{d} = tensor.dim {t.name}, {self.index(r, i)} : "
                       f"{t.type}")
                names.append(d)
        return ", ".join(names)

    # -- keeping values in range --------------------------------------------

    def limit(self, r, x, bound):
        """x scaled (or squashed) so that its bound is at most `bound`."""
        if x.bound <= bound:
            return x
        if self.chance(0.7):
            c = self.const(r, bound / x.bound, x)
            return self.bin(r, "arith.mulf", x, c, bound)
        s = self.un(r, self.pick(["math.tanh", "math.sin", "math.atan"]),
                    x, 1.6)
        return self.limit(r, s, bound)

    def positive(self, r, x, c):
        """x * x + c (at least c)."""
        x = self.limit(r, x, 3.0)
        sq = self.bin(r, "arith.mulf", x, x, x.bound ** 2)
        if c == 0.0:
            return sq
        return self.bin(r, "arith.addf", sq, self.const(r, c, x),
                        sq.bound + c)

    def unit(self, r, x, k):
        """tanh(x) * k, inside (-k, k)."""
        t = self.un(r, "math.tanh", x, 1.0)
        return self.bin(r, "arith.mulf", t, self.const(r, k, x), k)

    def squash(self, r, x):
        """A bounded smooth function of x (|result| <= 1.6)."""
        if self.chance(0.3):
            d = self.positive(r, x, 1.0)
            return self.bin(r, "arith.divf", self.limit(r, x, 3.0), d, 1.6)
        return self.un(r, self.pick(["math.tanh", "math.sin", "math.atan"]),
                       self.limit(r, x, 5.0), 1.6)

    # -- choosing operands --------------------------------------------------

    def operand(self, r, like=None):
        """A float value in scope of like's type and sizes (a $T scalar by
        default), recent ones preferred."""
        like = like or Value("", 0)
        pool = [v for v in r.floats if v.matches(like)]
        if self.chance(0.6):
            return pool[-1] if self.chance(0.4) else self.pick(pool[-4:])
        return self.pick(pool)

    def other(self, r, x):
        """A second operand of x's type (sometimes a constant)."""
        if self.chance(0.15):
            return self.const(r, self.pick([-1.5, -0.5, 0.25, 0.75, 2.0]), x)
        return self.operand(r, x)

    def pick_two(self, r, x):
        return self.operand(r, x), self.other(r, x)

    def compare(self, r, a, b):
        """An i1 (or tensor of i1) comparing a and b (a and a constant when
        b is a: a value compared with itself folds to a constant, and an
        scf.if on it to one of its branches)."""
        if b.name == a.name:
            b = self.const(r, 0.3, a)
        name = self.fresh()
        pred = self.pick(["olt", "ogt", "ole", "oge", "ult", "ugt"])
        r.emit(f"{name} = arith.cmpf {pred}, {a.name}, {b.name} : {a.type}")
        return name

    def condition(self, r):
        """A scalar i1 from the data or from an index in scope."""
        if r.indices and self.chance(0.3):
            n = self.pick(r.indices)
            c = self.index(r, self.pick([0, 1, 2, 3]))
            name = self.fresh()
            pred = self.pick(["slt", "sgt", "eq", "ne", "ule"])
            r.emit(f"{name} = arith.cmpi {pred}, {n}, {c} : index")
            return name
        a = self.operand(r)
        return self.compare(r, a, self.other(r, a))

    # -- statements ---------------------------------------------------------

    def elementwise(self, r, x=None):
        """One random op of ELEMENTWISE_OPS on x (or a value in scope)."""
        x = x or self.operand(r)
        while True:
            name = self.weighted(ELEMENTWISE_OPS)
            if name == "widen" and self.elem != "f32":
                continue
            if name == "index_float" and not r.indices:
                continue
            break
        self.note(name)
        return ELEMENTWISE_OPS[name][1](self, r, x)

    def statements(self, r, count):
        """`count` random statements: ops, calls and control flow."""
        for _ in range(count):
            self.statement(r)

    def statement(self, r):
        """One statement: mostly an op, else (within the nesting depth and
        the function's budget) a call, control flow or tensor work."""
        weights = {"elementwise": 10}
        if r.depth < 3 and self.budget > 0:
            loops = 0 if self.blocked(r, "loop") else 1
            weights.update({
                "call": 2 if any(self.allows(r, c) for c in self.callees)
                else 0,
                "scf_if": 1, "scf_for": loops, "scf_while": loops,
                "index_switch": 1,
                "tensor_work": 3 * self.tensor_rate,
                "tensor_loop": loops * self.tensor_rate,
                "tensor_if": self.tensor_rate})
        kind = self.weighted({k: (w,) for k, w in weights.items()})
        if kind != "elementwise":
            self.budget -= 1
        getattr(self, kind)(r)

    def call(self, r, callee=None, results_used=True, first=None):
        """func.call of a generated function with operands from scope (the
        value `first` for its first '$T' argument, when given; this
        function's %key for the callee's); returns its results."""
        callee = callee or self.pick(c for c in self.callees
                                     if self.allows(r, c))
        self.runs_recursion |= callee.recursive
        self.runs_loop |= callee.loops
        self.runs_nest |= callee.nests or (
            "loop" in r.context and (callee.loops or callee.recursive))
        self.runs_buffer |= callee.buffer
        if callee.buffer and ("loop" in r.context or
                              "recursion" in r.context):
            self.note("branch_tape_callee_in_loop")
        args = []
        for k, t in enumerate(callee.types):
            if t == "$T" and first is not None:
                args.append(first.name)
                first = None
            elif t == "$T":
                args.append(self.limit(r, self.operand(r), 2.0).name)
            elif t == "$W":
                args.append(self.widen(r, self.limit(r, self.operand(r),
                                                     2.0)).name)
            elif k == callee.key and "%key" in r.indices:
                args.append("%key")
            else:
                args.append(self.small_index(r))
        names = [self.fresh() for _ in callee.bounds]
        rtypes = ", ".join(["$T"] * len(callee.bounds))
        r.emit(f"{', '.join(names)} = func.call {callee.name}("
               f"{', '.join(args)}) : ({', '.join(callee.types)}) -> "
               f"({rtypes})")
        self.note("call")
        results = [Value(n, b) for n, b in zip(names, callee.bounds)]
        if results_used:
            r.floats += results
        else:
            self.note("call_unused")
        return results

    def widen(self, r, x):
        """arith.extf of a $T scalar to $W (an f64 of an f32 program)."""
        w = Value(self.fresh(), x.bound, elem="$W")
        r.emit(f"{w.name} = arith.extf {x.name} : $T to $W")
        return w

    def branch(self, r, sibling=False):
        """A region of a branch op nested in r (a block of a CFG branch
        next to r when `sibling`); notes when its scalars go to the
        function's branch tape (self.runs_buffer)."""
        b = r.sibling("branch") if sibling else r.child("branch")
        self.deepen(b)
        return b

    def deepen(self, r):
        """Notes when the scalars of region r go to the branch tape."""
        if r.branch >= BRANCH_TAPE_DEPTH and "recursion" not in r.context:
            self.runs_buffer = True

    def small_index(self, r):
        """An index in [0, 5] from scope, or a constant."""
        if r.indices and self.chance(0.8):
            return self.pick(r.indices)
        return self.index(r, self.pick([0, 1, 2, 3]))

    def yields(self, r, count):
        """`count` scalar values to yield from a region: computed there,
        from outside, or constants."""
        scalars = [v for v in r.floats if v.type == "$T"]
        out = []
        for _ in range(count):
            if self.chance(0.1):
                out.append(self.const(r, self.pick([0.5, -1.0]),
                                      Value("", 0)))
            else:
                out.append(self.pick(scalars[-3:] if self.chance(0.7)
                                     else scalars))
        return out

    def scf_if(self, r):
        self.note("scf.if")
        cond = self.condition(r)
        count = self.pick([1, 1, 2])
        types = ", ".join(["$T"] * count)
        branches = []
        for _ in range(2):
            b = self.branch(r)
            self.statements(b, self.rng.randint(0, 3))
            ys = self.yields(b, count)
            b.emit(f"scf.yield {', '.join(y.name for y in ys)} : {types}")
            branches.append((b, ys))
        names = [self.fresh() for _ in range(count)]
        r.emit(f"{', '.join(names)} = scf.if {cond} -> ({types}) {{")
        r.lines += branches[0][0].lines
        r.emit("} else {")
        r.lines += branches[1][0].lines
        r.emit("}")
        for i, name in enumerate(names):
            bound = max(branches[0][1][i].bound, branches[1][1][i].bound)
            r.floats.append(Value(name, bound))

    def loop_bounds(self, r):
        """(lower, upper, step) of a loop: static or from an index."""
        lower = self.index(r, self.pick([0, 0, 1]))
        if r.indices and self.chance(0.6):
            upper = self.pick(r.indices)
            self.note("scf.for_dynamic")
        else:
            upper = self.index(r, self.pick([0, 1, 3, 4]))
        step = self.index(r, self.pick([1, 1, 2]))
        return lower, upper, step

    def update(self, r, s):
        """The next value of a loop-carried scalar s, bounded whatever the
        trip count: a contraction towards a bounded expression."""
        e = self.squash(r, self.operand(r))
        form = self.pick(["mix", "squash", "scale"])
        if form == "squash":
            t = self.bin(r, "arith.addf", e, self.limit(r, s, 2.0),
                         e.bound + 2.0)
            return self.squash(r, t)
        if form == "scale":
            return self.bin(r, "arith.mulf", s, self.unit(r, e, 0.9),
                            s.bound)
        a = self.pick([0.5, -0.6, 0.75])
        half = self.bin(r, "arith.mulf", s, self.const(r, a, s),
                        s.bound * abs(a))
        bound = max(s.bound, e.bound / (1 - abs(a)))
        return self.bin(r, "arith.addf", half, e, bound)

    def enter_loop(self, r):
        """Records that the function runs a loop (a nest when r is already
        in one)."""
        self.runs_loop = True
        self.runs_nest |= "loop" in r.context

    def scf_for(self, r):
        self.note("scf.for")
        self.enter_loop(r)
        lower, upper, step = self.loop_bounds(r)
        inits = [self.limit(r, self.operand(r), 2.0)
                 for _ in range(self.pick([1, 1, 2, 3]))]
        counter = self.chance(0.2)
        iv_type = self.pick(["index"] * 4 + ["i32", "i64"])
        if iv_type != "index":
            self.note("scf.for_" + iv_type)
            lower, upper, step = (self.cast_index(r, v, iv_type)
                                  for v in (lower, upper, step))
        body = r.child("loop")
        iv = self.fresh("%i")
        if iv_type == "index":
            body.indices.append(iv)
        carried = [Value(self.fresh("%s"), 2.0) for _ in inits]
        body.floats += carried
        k = self.fresh("%k") if counter else None
        self.statements(body, self.rng.randint(1, 4))
        nexts = [self.update(body, s) for s in carried]
        bounds = [max(s.bound, n.bound) for s, n in zip(inits, nexts)]
        yielded = [n.name for n in nexts]
        types = ["$T"] * len(inits)
        init_names = [v.name for v in inits]
        arg_names = [v.name for v in carried]
        if counter:
            self.note("scf.for_int_iter_arg")
            k0 = self.fresh()
            r.emit(f"{k0} = arith.constant 0 : i32")
            yielded.append(self.count_up(body, k, carried[0]))
            types.append("i32")
            init_names.append(k0)
            arg_names.append(k)
        names = [self.fresh() for _ in types]
        body.emit(f"scf.yield {', '.join(yielded)} : {', '.join(types)}")
        ivt = f" : {iv_type}" if iv_type != "index" else ""
        iters = ", ".join(f"{a} = {i}" for a, i in zip(arg_names, init_names))
        r.emit(f"{', '.join(names)} = scf.for {iv} = {lower} to {upper} step "
               f"{step} iter_args({iters}) -> ({', '.join(types)}){ivt} {{")
        r.lines += body.lines
        r.emit("}")
        r.floats += [Value(n, b) for n, b in zip(names, bounds)]
        if counter:
            f = self.fresh()
            r.emit(f"{f} = arith.sitofp {names[-1]} : i32 to $T")
            r.floats.append(Value(f, 6.0))

    def cast_index(self, r, value, itype):
        name = self.fresh()
        r.emit(f"{name} = arith.index_cast {value} : index to {itype}")
        return name

    def count_up(self, r, k, s):
        """k + (1 if s > 0 else 0): an integer iter_arg driven by data."""
        zero = self.const(r, 0.0, s)
        cond = self.compare(r, s, zero)
        one, none = self.fresh(), self.fresh()
        r.emit(f"{one} = arith.constant 1 : i32")
        r.emit(f"{none} = arith.constant 0 : i32")
        inc, k2 = self.fresh(), self.fresh()
        r.emit(f"{inc} = arith.select {cond}, {one}, {none} : i32")
        r.emit(f"{k2} = arith.addi {k}, {inc} : i32")
        return k2

    def scf_while(self, r):
        """A while loop counting to an index, or growing a value past a
        limit that depends on the data (at most 12 iterations)."""
        self.note("scf.while")
        self.enter_loop(r)
        counting = bool(r.indices) and self.chance(0.4)
        carried = [self.limit(r, self.operand(r), 2.0)
                   for _ in range(self.pick([1, 2]))]
        guard0 = self.fresh()
        r.emit(f"{guard0} = arith.constant 0 : i32")
        if counting:
            limit_name = self.pick(r.indices)
            self.note("scf.while_counter")
        else:
            self.note("scf.while_data")
            lim = self.bin(r, "arith.addf",
                           self.squash(r, self.operand(r)),
                           self.const(r, 2.5, Value("", 0)), 4.1)
        before = r.child("loop")
        after = r.child("loop")
        g_b, g_a = self.fresh("%m"), self.fresh("%m")
        s_b = [Value(self.fresh("%s"), 2.0) for _ in carried]
        s_a = [Value(self.fresh("%s"), 2.0) for _ in carried]
        max_trips = self.fresh()
        before.emit(f"{max_trips} = arith.constant 12 : i32")
        go = self.fresh()
        if counting:
            ix = self.fresh()
            before.emit(f"{ix} = arith.index_cast {limit_name} : index to i32")
            before.emit(f"{go} = arith.cmpi slt, {g_b}, {ix} : i32")
        else:
            before.floats += s_b
            below = self.fresh()
            before.emit(f"{below} = arith.cmpf olt, {s_b[0].name}, "
                        f"{lim.name} : $T")
            ok = self.fresh()
            before.emit(f"{ok} = arith.cmpi slt, {g_b}, {max_trips} : i32")
            before.emit(f"{go} = arith.andi {below}, {ok} : i1")
        passed = [s.name for s in s_b]
        if len(carried) > 1 and self.chance(0.5):
            self.note("scf.while_condition_work")
            before.floats = before.floats[:len(r.floats)] + s_b
            passed[1] = self.squash(before, s_b[1]).name
        types = ", ".join(["i32"] + ["$T"] * len(carried))
        before.emit(f"scf.condition({go}) {', '.join([g_b] + passed)} : "
                    f"{types}")
        after.floats += s_a
        self.statements(after, self.rng.randint(1, 3))
        nexts = []
        if counting:
            nexts = [self.update(after, s) for s in s_a]
        else:
            step = self.squash(after, self.operand(after))
            inc = self.bin(after, "arith.mulf", step,
                           self.const(after, 0.12, step), 0.2)
            inc = self.bin(after, "arith.addf", inc,
                           self.const(after, 0.3, inc), 0.5)
            nexts.append(self.bin(after, "arith.addf", s_a[0], inc, 0))
            nexts += [self.update(after, s) for s in s_a[1:]]
        one, g2 = self.fresh(), self.fresh()
        after.emit(f"{one} = arith.constant 1 : i32")
        after.emit(f"{g2} = arith.addi {g_a}, {one} : i32")
        after.emit(f"scf.yield {', '.join([g2] + [n.name for n in nexts])} : "
                   f"{types}")
        names = [self.fresh() for _ in range(len(carried) + 1)]
        inits = ", ".join(f"{a} = {i}" for a, i in
                          zip([g_b] + [s.name for s in s_b],
                              [guard0] + [c.name for c in carried]))
        params = ", ".join(f"{a}: {t}" for a, t in
                           zip([g_a] + [s.name for s in s_a],
                               types.split(", ")))
        r.emit(f"{', '.join(names)} = scf.while ({inits}) : ({types}) -> "
               f"({types}) {{")
        r.lines += before.lines
        r.emit("} do {")
        r.emit(f"^bb0({params}):")
        r.lines += after.lines
        r.emit("}")
        bounds = [max(c.bound, 2.0) for c in carried]
        if not counting:
            bounds[0] = 4.1 + 0.5 * 13
        r.floats += [Value(n, b) for n, b in zip(names[1:], bounds)]

    def index_switch(self, r):
        self.note("scf.index_switch")
        if r.indices and self.chance(0.7):
            selector = self.pick(r.indices)
        else:
            scalar = self.limit(r, self.operand(r), 2.0)
            p = self.positive(r, scalar, 0.0)
            i = self.fresh()
            r.emit(f"{i} = arith.fptosi {p.name} : $T to i64")
            selector = self.fresh()
            r.emit(f"{selector} = arith.index_cast {i} : i64 to index")
        cases = sorted(self.rng.sample([0, 1, 2, 3], self.pick([1, 2, 3])))
        count = self.pick([1, 1, 2])
        names = [self.fresh() for _ in range(count)]
        types = ", ".join(["$T"] * count)
        r.emit(f"{', '.join(names)} = scf.index_switch {selector} -> {types}")
        bounds = [0.0] * count
        for case in cases + ["default"]:
            r.emit(f"case {case} {{" if case != "default" else "default {")
            b = self.branch(r)
            if self.chance(0.3):
                ys = self.execute_region(b, count)
            else:
                self.statements(b, self.rng.randint(0, 3))
                ys = self.yields(b, count)
            b.emit(f"scf.yield {', '.join(y.name for y in ys)} : {types}")
            r.lines += b.lines
            r.emit("}")
            bounds = [max(x, y.bound) for x, y in zip(bounds, ys)]
        r.floats += [Value(n, b) for n, b in zip(names, bounds)]

    def execute_region(self, r, count):
        self.note("scf.execute_region")
        b = r.child()
        self.statements(b, self.rng.randint(1, 3))
        ys = self.yields(b, count)
        types = ", ".join(["$T"] * count)
        names = [self.fresh() for _ in range(count)]
        r.emit(f"{', '.join(names)} = scf.execute_region -> ({types}) {{")
        b.emit(f"scf.yield {', '.join(y.name for y in ys)} : {types}")
        r.lines += b.lines
        r.emit("}")
        return [Value(n, y.bound) for n, y in zip(names, ys)]

    # -- tensors: shapes and sizes ------------------------------------------

    def size(self, value):
        """An index SSA name equal to `value` at run time that no folding
        can see: computed from @f's size argument (see sized_entry)."""
        self.size_values.add(value)
        return f"%sz{value}"

    def sized_entry(self):
        """Definitions of the sizes used, for the top of @f's body:
        %sz<v> = %d0 + (v - d0's value)."""
        lines = []
        for v in sorted(self.size_values):
            lines.append(f"  %szc{v} = arith.constant {v - self.size_arg} "
                         f": index")
            lines.append(f"  %sz{v} = arith.addi %d0, %szc{v} : index")
        return lines

    def dynamic_ok(self, r):
        """Dynamic shapes are made only in @f (whose size argument gives the
        sizes) and outside loops (the README: a dynamically shaped tensor
        read per iteration cannot be stored yet)."""
        return self.size_arg is not None and "loop" not in r.context

    def random_shape(self, r, rank=None):
        rank = rank or self.pick([1, 1, 2, 2, 3])
        shape = tuple(self.pick([1, 2, 3, 4] if rank < 3 else [1, 2, 3])
                      for _ in range(rank))
        return shape, self.random_dynamic(r, rank)

    def random_dynamic(self, r, rank):
        dyn = self.dynamic_ok(r) and self.chance(0.4)
        return tuple(dyn and self.chance(0.6) for _ in range(rank))

    def sizes_of(self, shape, dynamic):
        """The operands of tensor.empty / tensor.splat for a shape."""
        return ", ".join(self.size(s) for s, d in zip(shape, dynamic) if d)

    def empty(self, r, shape, dynamic):
        name = self.fresh()
        r.emit(f"{name} = tensor.empty({self.sizes_of(shape, dynamic)}) : "
               f"{value_type(shape, dynamic, '$T')}")
        return Value(name, 0.0, tuple(shape), tuple(dynamic))

    def filled(self, r, shape, dynamic, value):
        """linalg.fill of a constant (or of a scalar Value) on tensor.empty."""
        e = self.empty(r, shape, dynamic)
        if not isinstance(value, Value):
            value = self.const(r, value, Value("", 0))
        name = self.fresh()
        r.emit(f"{name} = linalg.fill ins({value.name} : $T) outs({e.name} : "
               f"{e.type}) -> {e.type}")
        return e.like(name, value.bound)

    def tensors(self, r, test=lambda t: True):
        """Tensors of rank >= 1 in scope passing `test` (dynamic ones only
        where allowed)."""
        return [v for v in r.floats if v.shape and v.elem == "$T"
                and (self.dynamic_ok(r) or not any(v.dynamic)) and test(v)]

    def tensor_operand(self, r, test=lambda t: True):
        """A tensor in scope (recent preferred), or None."""
        pool = self.tensors(r, test)
        if not pool:
            return None
        return pool[-1] if self.chance(0.5) else self.pick(pool)

    # -- tensors: bodies of linalg ops and tensor.generate ------------------

    def body(self, r, args, indices=(), count=None):
        """The region of a linalg op or tensor.generate: block arguments
        `args` (Values), index values `indices`, random elementwise ops
        (no control flow, no calls) reading the arguments and scalars from
        outside. Returns (region, result)."""
        b = r.child()
        b.floats = [v for v in r.floats if v.type == "$T"] + list(args)
        b.indices = list(r.indices) + list(indices)
        first = len(b.floats) - len(args)
        for _ in range(count if count is not None else self.rng.randint(1, 3)):
            self.elementwise(b, self.pick(b.floats[first:]) if self.chance(0.6)
                             else None)
        return b, self.result_of(b, first)

    def positional(self, r, indices):
        """In a body: a phase c0 + sum c_k * float(i_k) of the indices."""
        p = self.const(r, self.pick([0.25, 0.5, 1.25]), Value("", 0))
        for k, i in enumerate(indices):
            n, f = self.fresh(), self.fresh()
            r.emit(f"{n} = arith.index_cast {i} : index to i64")
            r.emit(f"{f} = arith.sitofp {n} : i64 to $T")
            c = self.const(r, 1.3 + 0.6 * k, Value("", 0))
            m = self.bin(r, "arith.mulf", Value(f, 4.0), c, 4.0 * c.bound)
            p = self.bin(r, "arith.addf", p, m, p.bound + m.bound)
        return p

    def block_header(self, r, params):
        r.label(f"  ^bb0({', '.join(f'{n}: {t}' for n, t in params)}):")

    # -- tensors: sources ---------------------------------------------------

    def source(self, r, shape, dynamic):
        """A new tensor of the given shape built from scalars in scope."""
        size = math.prod(shape)
        kinds = ["splat", "generate", "build", "fill"]
        if not any(dynamic):
            kinds += ["offsets"] + (["from_elements"] if size <= 6 else [])
        kind = self.pick(kinds)
        self.note("tensor." + kind if kind in ("splat", "generate",
                                               "from_elements") else kind)
        return getattr(self, "source_" + kind)(r, shape, dynamic)

    def source_fill(self, r, shape, dynamic):
        """linalg.fill of a scalar in scope."""
        t = self.filled(r, shape, dynamic, self.limit(r, self.operand(r), 2.0))
        self.note("linalg.fill")
        r.floats.append(t)
        return t

    def source_splat(self, r, shape, dynamic):
        s = self.limit(r, self.operand(r), 2.0)
        like = Value("", 0, tuple(shape), tuple(dynamic))
        name = self.fresh()
        sizes = self.sizes_of(shape, dynamic)
        r.emit(f"{name} = tensor.splat {s.name}{f'[{sizes}]' if sizes else ''}"
               f" : {like.type}")
        t = like.like(name, s.bound)
        r.floats.append(t)
        return t

    def source_from_elements(self, r, shape, dynamic):
        items = [self.limit(r, self.operand(r), 2.0).name
                 for _ in range(math.prod(shape))]
        t = Value(self.fresh(), 2.0, tuple(shape), tuple(dynamic))
        r.emit(f"{t.name} = tensor.from_elements {', '.join(items)} : "
               f"{t.type}")
        r.floats.append(t)
        return t

    def source_offsets(self, r, shape, dynamic):
        """splat(s) + a constant with distinct entries."""
        s = self.source_splat(r, shape, dynamic)
        values = [round(0.1 * ((7 * k) % 11) - 0.5, 2)
                  for k in range(math.prod(shape))]
        c = self.fresh()
        r.emit(f"{c} = arith.constant dense<{nested(values, shape)}> : "
               f"{s.type}")
        return self.bin(r, "arith.addf", s, s.like(c, 0.5), s.bound + 0.5)

    def source_generate(self, r, shape, dynamic):
        """tensor.generate: x sin(phase) + y cos(phase) and more ops."""
        like = Value("", 0, tuple(shape), tuple(dynamic))
        idx = [self.fresh("%i") for _ in shape]
        b, out = self.smooth_body(r, idx)
        name = self.fresh()
        r.emit(f"{name} = tensor.generate {self.sizes_of(shape, dynamic)} {{")
        self.block_header(r, [(i, "index") for i in idx])
        r.lines += b.lines
        r.emit(f"  tensor.yield {out.name} : $T")
        r.emit(f"}} : {like.type}")
        t = like.like(name, out.bound)
        r.floats.append(t)
        return t

    def smooth_body(self, r, idx, args=()):
        """A body computing a smooth function of the position `idx` and of
        two scalars (block arguments `args`, or captured from outside)."""
        b = r.child()
        b.floats = [v for v in r.floats if v.type == "$T"] + list(args)
        b.indices = list(r.indices) + list(idx)
        x, y = (list(args) + [self.limit(b, self.operand(b), 2.0)
                              for _ in range(2)])[:2]
        p = self.positional(b, idx)
        u = self.bin(b, "arith.mulf", x, self.un(b, "math.sin", p, 1.0),
                     x.bound)
        v = self.bin(b, "arith.mulf", y, self.un(b, "math.cos", p, 1.0),
                     y.bound)
        out = self.bin(b, "arith.addf", u, v, u.bound + v.bound)
        if self.chance(0.5):
            out = self.elementwise(b, out)
        return b, out

    def source_build(self, r, shape, dynamic):
        """A linalg.generic from two scalar inputs (broadcast to the shape)."""
        e = self.empty(r, shape, dynamic)
        x, y = (self.limit(r, self.operand(r), 2.0) for _ in range(2))
        bx, by, bo = (self.fresh("%a") for _ in range(3))
        idx = []
        rank = len(shape)
        pre = []
        for k in range(rank):
            idx.append(self.fresh("%i"))
            pre.append(f"{idx[-1]} = linalg.index {k} : index")
        b, out = self.smooth_body(r, idx, [Value(bx, x.bound),
                                           Value(by, y.bound)])
        b.lines[:0] = ["  " * b.indent + line for line in pre]
        name = self.fresh()
        maps = [affine(rank, []), affine(rank, []),
                affine(rank, range(rank))]
        r.emit(f"{name} = linalg.generic {{indexing_maps = [{', '.join(maps)}"
               f"], iterator_types = [{iterators(rank, ())}]}} ins({x.name}, "
               f"{y.name} : $T, $T) outs({e.name} : {e.type}) {{")
        self.block_header(r, [(bx, "$T"), (by, "$T"), (bo, "$T")])
        r.lines += b.lines
        r.emit(f"  linalg.yield {out.name} : $T")
        r.emit(f"}} -> {e.type}")
        self.note("linalg.generic")
        t = e.like(name, out.bound)
        r.floats.append(t)
        return t

    def like_source(self, r, t):
        """Another tensor of t's type, from the scope or new."""
        same = self.tensors(r, lambda v: v.matches(t) and v.name != t.name)
        if same and self.chance(0.5):
            return self.pick(same)
        return self.source(r, t.shape, t.dynamic)

    # -- tensors: ops -------------------------------------------------------

    def t_elementwise(self, r, t):
        """arith/math on the whole tensor (the scalar op table)."""
        self.note("elementwise_on_tensors")
        return self.elementwise(r, t)

    def outputs(self, r, t, shape=None, dynamic=None):
        return self.empty(r, shape or t.shape,
                          t.dynamic if dynamic is None else dynamic)

    def named(self, r, op, ins, out, bound, kind=""):
        """linalg.<op> ins(...) outs(out) -> out's type."""
        name = self.fresh()
        operands = ", ".join(v.name for v in ins)
        r.emit(f"{name} = linalg.{op}{kind} ins({operands}"
               f" : {', '.join(v.type for v in ins)}) outs({out.name} : "
               f"{out.type}) -> {out.type}")
        self.note("linalg." + op)
        v = out.like(name, bound)
        r.floats.append(v)
        return v

    def t_named_unary(self, r, t):
        op = self.pick(["exp", "log", "sqrt", "rsqrt", "reciprocal", "square",
                        "tanh", "erf", "negf", "abs", "floor", "ceil",
                        "round"])
        if op == "exp":
            x, bound = self.limit(r, t, 2.0), 7.5
        elif op in ("log", "sqrt", "rsqrt", "reciprocal"):
            x = self.positive(r, t, 0.5)
            bound = max(2.0, math.sqrt(x.bound), abs(math.log(x.bound)) + 1)
        elif op == "square":
            x = self.limit(r, t, 3.0)
            bound = x.bound ** 2
        else:
            x, bound = t, t.bound + 1
        return self.named(r, op, [x], self.outputs(r, x), bound)

    def t_named_binary(self, r, t):
        op = self.pick(["add", "sub", "mul", "div", "max", "min", "powf"])
        y = self.like_source(r, t)
        if op == "div":
            y = self.positive(r, y, 0.5)
            return self.named(r, op, [t, y], self.outputs(r, t), 2 * t.bound)
        if op == "powf":
            base = self.positive(r, self.limit(r, t, 1.5), 0.5)
            e = self.limit(r, y, 2.0)
            return self.named(r, op, [base, e], self.outputs(r, t),
                              base.bound ** 2 + 4)
        if op == "mul":
            t, y = self.limit(r, t, 3.0), self.limit(r, y, 3.0)
            return self.named(r, op, [t, y], self.outputs(r, t),
                              t.bound * y.bound)
        return self.named(r, op, [t, y], self.outputs(r, t),
                          t.bound + y.bound)

    def t_named_select(self, r, t):
        y = self.like_source(r, t)
        cond = self.compare(r, t, y)
        c = t.like(cond, 0, "i1")
        name = self.fresh()
        out = self.outputs(r, t)
        r.emit(f"{name} = linalg.select ins({cond}, {t.name}, {y.name} : "
               f"{c.type}, {t.type}, {y.type}) outs({out.name} : {out.type})"
               f" -> {out.type}")
        self.note("linalg.select")
        v = t.like(name, max(t.bound, y.bound))
        r.floats.append(v)
        return v

    def t_elementwise_kind(self, r, t):
        kind = self.pick(["exp", "log", "abs", "negf", "tanh", "square", "erf",
                          "add", "sub", "mul"])
        if kind in ("add", "sub", "mul"):
            x, y = self.limit(r, t, 3.0), self.limit(r, self.like_source(r, t),
                                                      3.0)
            ins, bound = [x, y], x.bound * y.bound + x.bound + y.bound
        elif kind == "exp":
            ins, bound = [self.limit(r, t, 2.0)], 7.5
        elif kind == "log":
            p = self.positive(r, t, 0.5)
            ins, bound = [p], abs(math.log(0.5)) + math.log1p(p.bound)
        elif kind == "square":
            x = self.limit(r, t, 3.0)
            ins, bound = [x], x.bound ** 2
        else:
            ins, bound = [t], t.bound + 1
        self.note("linalg.elementwise")
        return self.named(r, "elementwise", ins, self.outputs(r, t), bound,
                          f" kind=#linalg.elementwise_kind<{kind}>")

    def t_map(self, r, t):
        ins = [t] + ([self.like_source(r, t)] if self.chance(0.5) else [])
        args = [Value(self.fresh("%a"), v.bound) for v in ins]
        b, out = self.body(r, args)
        o = self.outputs(r, t)
        name = self.fresh()
        r.emit(f"{name} = linalg.map ins({', '.join(v.name for v in ins)} : "
               f"{', '.join(v.type for v in ins)}) outs({o.name} : {o.type})")
        r.emit(f"  ({', '.join(f'{a.name}: $T' for a in args)}, "
               f"{self.fresh('%a')}: $T) {{")
        r.lines += ["  " + line for line in b.lines]
        r.emit(f"    linalg.yield {out.name} : $T")
        r.emit("  }")
        self.note("linalg.map")
        v = t.like(name, out.bound)
        r.floats.append(v)
        return v

    def t_generic(self, r, t):
        """An elementwise linalg.generic over t's shape: inputs t, maybe a
        tensor of the same shape read transposed, maybe one broadcast
        along a dimension; a random body."""
        rank = len(t.shape)
        ins, maps = [t], [affine(rank, range(rank))]
        if rank >= 2 and self.chance(0.4) and t.shape[0] == t.shape[1]:
            perm = [1, 0] + list(range(2, rank))
            u = self.like_source(r, t)
            ins.append(u)
            maps.append(affine(rank, perm))
            self.note("generic_transpose")
        if rank >= 2 and self.chance(0.4):
            drop = self.rng.randrange(rank)
            kept = [k for k in range(rank) if k != drop]
            shape = tuple(t.shape[k] for k in kept)
            dynamic = tuple(t.dynamic[k] for k in kept)
            u = self.broadcastable(r, shape, dynamic)
            ins.append(u)
            maps.append(affine(rank, kept))
            self.note("generic_broadcast")
        args = [Value(self.fresh("%a"), v.bound) for v in ins]
        b, out = self.body(r, args)
        o = self.outputs(r, t)
        maps.append(affine(rank, range(rank)))
        return self.generic(r, ins, maps, o, iterators(rank, ()), args, b,
                            out, out.bound)

    def broadcastable(self, r, shape, dynamic):
        same = self.tensors(r, lambda v: v.shape == shape and
                            v.dynamic == dynamic)
        if same and self.chance(0.5):
            return self.pick(same)
        return self.source(r, shape, dynamic)

    def generic(self, r, ins, maps, out, iters, args, b, result, bound,
                combine=None):
        """Writes a linalg.generic; `combine` (an op name) folds the body's
        result into the output block argument (a reduction)."""
        name = self.fresh()
        o = self.fresh("%o")
        if combine:
            folded = self.fresh()
            b.emit(f"{folded} = {combine} {o}, {result.name} : $T")
            result = Value(folded, bound)
        r.emit(f"{name} = linalg.generic {{indexing_maps = [{', '.join(maps)}"
               f"], iterator_types = [{iters}]}} ins("
               f"{', '.join(v.name for v in ins)} : "
               f"{', '.join(v.type for v in ins)}) outs({out.name} : "
               f"{out.type}) {{")
        self.block_header(r, [(a.name, "$T") for a in args] + [(o, "$T")])
        r.lines += b.lines
        r.emit(f"  linalg.yield {result.name} : $T")
        r.emit(f"}} -> {out.type}")
        self.note("linalg.generic")
        v = out.like(name, bound)
        r.floats.append(v)
        return v

    def t_copy(self, r, t):
        return self.named(r, "copy", [t], self.outputs(r, t), t.bound)

    def t_gather(self, r, t):
        """A linalg.generic (or tensor.generate) whose body reads t at
        positions computed from its indices (a permuted gather with
        repeats), times an input of t's shape: written as a loop nest
        before differentiation, so its adjoint is a scatter-add."""
        rank = len(t.shape)
        if self.blocked(r, "nest" if rank > 1 else "loop"):
            return None
        self.enter_loop(r)
        self.runs_nest |= rank > 1
        idx = [self.fresh("%i") for _ in range(rank)]
        b = r.child()
        b.floats = [v for v in r.floats if v.type == "$T"]
        b.indices = list(r.indices) + idx
        generate = self.chance(0.4)
        if not generate:
            for k, i in enumerate(idx):
                b.emit(f"{i} = linalg.index {k} : index")
        moved = []
        for i, n in zip(idx, t.shape):
            m, j = self.fresh(), self.fresh()
            b.emit(f"{m} = arith.muli {i}, {self.index(b, self.pick([2, 3]))}"
                   f" : index")
            b.emit(f"{j} = arith.remui {m}, {self.dim_size(b, t, len(moved))}"
                   f" : index")
            moved.append(j)
        g = Value(self.fresh(), t.bound)
        b.emit(f"{g.name} = tensor.extract {t.name}[{', '.join(moved)}] : "
               f"{t.type}")
        b.floats.append(g)
        self.note("gather_generate" if generate else "gather_generic")
        if generate:
            out = self.elementwise(b, g)
            name = self.fresh()
            r.emit(f"{name} = tensor.generate "
                   f"{self.sizes_of(t.shape, t.dynamic)} {{")
            self.block_header(r, [(i, "index") for i in idx])
            r.lines += b.lines
            r.emit(f"  tensor.yield {out.name} : $T")
            r.emit(f"}} : {t.type}")
            v = t.like(name, out.bound)
            r.floats.append(v)
            return v
        u = self.like_source(r, t)
        a = Value(self.fresh("%a"), u.bound)
        b.floats.append(a)
        out = self.bin(b, "arith.mulf", self.limit(b, g, 2.0),
                       self.limit(b, a, 2.0), 4.0)
        maps = [affine(rank, range(rank))] * 2
        return self.generic(r, [u], maps, self.outputs(r, t),
                            iterators(rank, ()), [a], b, out, out.bound)

    def dim_size(self, r, t, k):
        """Size k of tensor t as an index in region r."""
        if t.dynamic[k]:
            d = self.fresh()
            r.emit(f"{d} = tensor.dim {t.name}, {self.index(r, k)} : {t.type}")
            return d
        return self.index(r, t.shape[k])

    def t_transpose(self, r, t):
        rank = len(t.shape)
        if rank < 2:
            return None
        perm = list(range(rank))
        while perm == sorted(perm):
            self.rng.shuffle(perm)
        shape = tuple(t.shape[p] for p in perm)
        dynamic = tuple(t.dynamic[p] for p in perm)
        o = self.empty(r, shape, dynamic)
        if self.chance(0.5):
            name = self.fresh()
            r.emit(f"{name} = linalg.transpose ins({t.name} : {t.type}) outs("
                   f"{o.name} : {o.type}) permutation = "
                   f"[{', '.join(map(str, perm))}]")
            self.note("linalg.transpose")
            v = o.like(name, t.bound)
            r.floats.append(v)
            return v
        # As a generic: the output is indexed by the permutation.
        args = [Value(self.fresh("%a"), t.bound)]
        b, out = self.body(r, args, count=self.pick([0, 1]))
        return self.generic(r, [t], [affine(rank, range(rank)),
                                     affine(rank, perm)], o,
                            iterators(rank, ()), args, b, out, out.bound)

    def t_broadcast(self, r, t):
        rank = len(t.shape)
        if rank > 2:
            return None
        k = self.rng.randint(0, rank)
        n = self.pick([2, 3])
        shape = t.shape[:k] + (n,) + t.shape[k:]
        dynamic = t.dynamic[:k] + (self.dynamic_ok(r) and self.chance(0.3),) \
            + t.dynamic[k:]
        o = self.empty(r, shape, dynamic)
        name = self.fresh()
        r.emit(f"{name} = linalg.broadcast ins({t.name} : {t.type}) outs("
               f"{o.name} : {o.type}) dimensions = [{k}]")
        self.note("linalg.broadcast")
        v = o.like(name, t.bound)
        r.floats.append(v)
        return v

    def t_extract_slice(self, r, t):
        offsets, sizes, strides = [], [], []
        for n in t.shape:
            stride = self.pick([1, 1, 2]) if n >= 3 else 1
            size = self.rng.randint(1, (n - 1) // stride + 1)
            offset = self.rng.randint(0, n - 1 - (size - 1) * stride)
            offsets.append(offset), sizes.append(size), strides.append(stride)
        shape = tuple(sizes)
        drop = [k for k, s in enumerate(shape) if s == 1]
        if len(drop) > 1 and self.blocked(r, "unit_slice"):
            drop = []
        if drop and len(shape) > 1 and self.chance(0.5):
            self.note("rank_reducing_slice")
            shape = tuple(s for k, s in enumerate(shape) if k != drop[0])
        v = Value(self.fresh(), t.bound, shape, (False,) * len(shape))
        r.emit(f"{v.name} = tensor.extract_slice {t.name}[{ints(offsets)}] "
               f"[{ints(sizes)}] [{ints(strides)}] : {t.type} to {v.type}")
        self.note("tensor.extract_slice")
        r.floats.append(v)
        return v

    def t_insert_slice(self, r, t):
        offsets, sizes, strides = [], [], []
        for n in t.shape:
            stride = self.pick([1, 1, 2]) if n >= 3 else 1
            size = self.rng.randint(1, (n - 1) // stride + 1)
            offset = self.rng.randint(0, n - 1 - (size - 1) * stride)
            offsets.append(offset), sizes.append(size), strides.append(stride)
        src = self.source(r, tuple(sizes), (False,) * len(sizes))
        name = self.fresh()
        r.emit(f"{name} = tensor.insert_slice {src.name} into {t.name}"
               f"[{ints(offsets)}] [{ints(sizes)}] [{ints(strides)}] : "
               f"{src.type} into {t.type}")
        self.note("tensor.insert_slice")
        v = t.like(name, max(t.bound, src.bound))
        r.floats.append(v)
        return v

    def position(self, r, t):
        """Index operands of an element of t: constants, or an index in
        scope reduced modulo the size."""
        out = []
        for n in t.shape:
            if r.indices and self.chance(0.3):
                m = self.fresh()
                r.emit(f"{m} = arith.remui {self.pick(r.indices)}, "
                       f"{self.index(r, n)} : index")
                out.append(m)
            else:
                out.append(self.index(r, self.rng.randrange(n)))
        return ", ".join(out)

    def t_insert(self, r, t):
        s = self.limit(r, self.operand(r), t.bound)
        name = self.fresh()
        r.emit(f"{name} = tensor.insert {s.name} into {t.name}"
               f"[{self.position(r, t)}] : {t.type}")
        self.note("tensor.insert")
        v = t.like(name, max(t.bound, s.bound))
        r.floats.append(v)
        return v

    def t_expand_shape(self, r, t):
        """Splits a static dimension (4 -> 2x2, n -> 1xn or nx1)."""
        choices = [k for k, (n, d) in enumerate(zip(t.shape, t.dynamic))
                   if not d]
        if not choices or len(t.shape) > 2:
            return None
        k = self.pick(choices)
        n = t.shape[k]
        parts = (2, 2) if n == 4 and self.chance(0.5) else \
            self.pick([(1, n), (n, 1)])
        shape = t.shape[:k] + parts + t.shape[k + 1:]
        dynamic = t.dynamic[:k] + (False, False) + t.dynamic[k + 1:]
        groups, j = [], 0
        for i in range(len(t.shape)):
            width = 2 if i == k else 1
            groups.append(list(range(j, j + width)))
            j += width
        out_shape = ", ".join(self.size(s) if d else str(s)
                              for s, d in zip(shape, dynamic))
        v = Value(self.fresh(), t.bound, shape, dynamic)
        r.emit(f"{v.name} = tensor.expand_shape {t.name} {groups} "
               f"output_shape [{out_shape}] : {t.type} into {v.type}")
        self.note("tensor.expand_shape")
        r.floats.append(v)
        return v

    def t_collapse_shape(self, r, t):
        rank = len(t.shape)
        if rank < 2:
            return None
        k = self.rng.randrange(rank - 1)
        shape = t.shape[:k] + (t.shape[k] * t.shape[k + 1],) + t.shape[k + 2:]
        dynamic = t.dynamic[:k] + (t.dynamic[k] or t.dynamic[k + 1],) + \
            t.dynamic[k + 2:]
        groups = [[i] for i in range(k)] + [[k, k + 1]] + \
            [[i] for i in range(k + 2, rank)]
        v = Value(self.fresh(), t.bound, shape, dynamic)
        r.emit(f"{v.name} = tensor.collapse_shape {t.name} {groups} : "
               f"{t.type} into {v.type}")
        self.note("tensor.collapse_shape")
        r.floats.append(v)
        return v

    def t_reshape(self, r, t):
        n = math.prod(t.shape)
        shapes = [s for s in factorizations(n) if s != t.shape and len(s) <= 3]
        if not shapes:
            return None
        shape = self.pick(shapes)
        dynamic = self.random_dynamic(r, len(shape))
        v = Value(self.fresh(), t.bound, shape, dynamic)
        spec = self.fresh()
        if any(dynamic):
            sizes = [self.size(s) if d else self.index(r, s)
                     for s, d in zip(shape, dynamic)]
            r.emit(f"{spec} = tensor.from_elements {', '.join(sizes)} : "
                   f"tensor<{len(shape)}xindex>")
        else:
            r.emit(f"{spec} = arith.constant dense<[{ints(shape)}]> : "
                   f"tensor<{len(shape)}xindex>")
        r.emit(f"{v.name} = tensor.reshape {t.name}({spec}) : ({t.type}, "
               f"tensor<{len(shape)}xindex>) -> {v.type}")
        self.note("tensor.reshape")
        r.floats.append(v)
        return v

    def t_cast(self, r, t):
        if any(t.dynamic):
            dynamic = tuple(False for _ in t.shape)
        elif self.dynamic_ok(r):
            dynamic = tuple(self.chance(0.6) for _ in t.shape)
        else:
            return None
        v = t.like(self.fresh(), t.bound)
        v.dynamic = dynamic
        r.emit(f"{v.name} = tensor.cast {t.name} : {t.type} to {v.type}")
        self.note("tensor.cast")
        r.floats.append(v)
        return v

    def t_concat(self, r, t):
        k = self.rng.randrange(len(t.shape))
        n = self.pick([1, 2])
        shape = t.shape[:k] + (n,) + t.shape[k + 1:]
        dynamic = t.dynamic[:k] + (False,) + t.dynamic[k + 1:]
        u = self.source(r, shape, dynamic)
        first = self.chance(0.5)
        a, b = (t, u) if first else (u, t)
        rshape = t.shape[:k] + (t.shape[k] + n,) + t.shape[k + 1:]
        rdyn = t.dynamic
        v = Value(self.fresh(), max(t.bound, u.bound), rshape, rdyn)
        r.emit(f"{v.name} = tensor.concat dim({k}) {a.name}, {b.name} : "
               f"({a.type}, {b.type}) -> {v.type}")
        self.note("tensor.concat")
        r.floats.append(v)
        return v

    def t_pad(self, r, t):
        rank = len(t.shape)
        low = [self.pick([0, 0, 1, 2]) for _ in range(rank)]
        high = [self.pick([0, 1]) for _ in range(rank)]
        dyn_low = self.dynamic_ok(r) and self.chance(0.3)
        lows = [self.size(l) if dyn_low and l and k == 0 else str(l)
                for k, l in enumerate(low)]
        shape = tuple(n + l + h for n, l, h in zip(t.shape, low, high))
        dynamic = tuple(d or (dyn_low and k == 0 and low[0] > 0)
                        for k, d in enumerate(t.dynamic))
        idx = [self.fresh("%i") for _ in range(rank)]
        if self.chance(0.5):
            s = self.limit(r, self.operand(r), 2.0)
            b = r.child()
            out = s
            self.note("tensor.pad_constant")
        else:
            b, out = self.smooth_body(r, idx)
            self.note("tensor.pad_computed")
        v = Value(self.fresh(), max(t.bound, out.bound), shape, dynamic)
        r.emit(f"{v.name} = tensor.pad {t.name} low[{', '.join(lows)}] "
               f"high[{ints(high)}] {{")
        self.block_header(r, [(i, "index") for i in idx])
        r.lines += b.lines
        r.emit(f"  tensor.yield {out.name} : $T")
        r.emit(f"}} : {t.type} to {v.type}")
        self.note("tensor.pad")
        r.floats.append(v)
        return v

    def combiner(self, r, rank):
        """(name, op, init value) of a reduction of a rank `rank` tensor (a
        product becomes a loop nest before differentiation)."""
        construct = "nest" if rank > 1 else "loop"
        kind = self.pick(["sum", "sum", "max", "min"] +
                         ([] if self.blocked(r, construct) else ["product"]))
        op = {"sum": "arith.addf", "product": "arith.mulf",
              "max": self.pick(["arith.maximumf", "arith.maxnumf"]),
              "min": self.pick(["arith.minimumf", "arith.minnumf"])}[kind]
        init = {"sum": 0.0, "product": 1.0, "max": -1.0e30,
                "min": 1.0e30}[kind]
        self.note("reduction_" + kind)
        if kind == "product":
            self.enter_loop(r)
            self.runs_nest |= rank > 1
        return kind, op, init

    def reduction_init(self, r, kind, init, shape, dynamic):
        """The initial output of a reduction: the neutral element, or
        (sum and max/min) an active tensor that takes part."""
        if kind != "product" and self.chance(0.3):
            self.note("reduction_active_init")
            if not shape:
                s = self.limit(r, self.operand(r), 2.0)
                name = self.fresh()
                r.emit(f"{name} = tensor.from_elements {s.name} : tensor<$T>")
                return Value(name, s.bound, (), ())
            return self.source(r, shape, dynamic)
        return self.filled(r, shape, dynamic, init)

    def t_reduce(self, r, t, dims=None):
        """linalg.reduce or a reducing linalg.generic over `dims` (some
        dimensions by default), with a sum, product, max or min combiner
        and an elementwise expression of the input in the body."""
        rank = len(t.shape)
        if dims is None:
            dims = sorted(self.rng.sample(range(rank),
                                          self.rng.randint(1, rank)))
        kept = [k for k in range(rank) if k not in dims]
        shape = tuple(t.shape[k] for k in kept)
        dynamic = tuple(t.dynamic[k] for k in kept)
        kind, op, init = self.combiner(r, rank)
        out = self.reduction_init(r, kind, init, shape, dynamic)
        a = Value(self.fresh("%a"), t.bound)
        if kind == "product":
            b = r.child()
            b.floats = [a]
            e = self.bin(b, "arith.mulf", self.un(b, "math.tanh", a, 1.0),
                         self.const(b, 0.3, a), 0.3)
            e = self.bin(b, "arith.addf", e, self.const(b, 1.0, a), 1.3)
        else:
            b, e = self.body(r, [a], count=self.pick([0, 1, 2]))
        n = math.prod(t.shape[k] for k in dims)
        bound = {"sum": n * e.bound + out.bound, "product": 1.3 ** n}.get(
            kind, max(e.bound, out.bound if out.bound < 1e29 else 0))
        if self.chance(0.5):
            name = self.fresh()
            acc = self.fresh("%a")
            folded = self.fresh()
            b.emit(f"{folded} = {op} {e.name}, {acc} : $T")
            r.emit(f"{name} = linalg.reduce ins({t.name} : {t.type}) outs("
                   f"{out.name} : {out.type}) dimensions = [{ints(dims)}]")
            r.emit(f"  ({a.name}: $T, {acc}: $T) {{")
            r.lines += ["  " + line for line in b.lines]
            r.emit(f"    linalg.yield {folded} : $T")
            r.emit("  }")
            self.note("linalg.reduce")
            v = out.like(name, bound)
            r.floats.append(v)
            return v
        maps = [affine(rank, range(rank)), affine(rank, kept)]
        return self.generic(r, [t], maps, out, iterators(rank, dims), [a], b,
                            e, bound, combine=op)

    def t_contract(self, r, t):
        """matmul, matvec, vecmat, dot or batch_matmul with t as one
        operand, into zeros or into an active tensor."""
        rank = len(t.shape)
        if rank == 1:
            op = self.pick(["dot", "vecmat", "matvec"])
        elif rank == 2:
            op = self.pick(["matmul", "matvec", "vecmat"])
        else:
            op = "batch_matmul"
        x = self.limit(r, t, 2.0)
        m = self.pick([1, 2, 3])
        if op == "dot":
            other, shape = (t.shape, t.dynamic), ()
            ins = [x, None]
        elif op == "matmul":
            other = ((t.shape[1], m), (t.dynamic[1], False))
            shape = (t.shape[0], m)
            ins = [x, None]
        elif op == "matvec" and rank == 2:
            other, shape = ((t.shape[1],), (t.dynamic[1],)), (t.shape[0],)
            ins = [x, None]
        elif op == "matvec":
            other, shape = ((m, t.shape[0]), (False, t.dynamic[0])), (m,)
            ins = [None, x]
        elif op == "vecmat" and rank == 2:
            other, shape = ((t.shape[0],), (t.dynamic[0],)), (t.shape[1],)
            ins = [None, x]
        elif op == "vecmat":
            other, shape = ((t.shape[0], m), (t.dynamic[0], False)), (m,)
            ins = [x, None]
        else:
            other = ((t.shape[0], t.shape[2], m),
                     (t.dynamic[0], t.dynamic[2], False))
            shape = (t.shape[0], t.shape[1], m)
            ins = [x, None]
        y = self.limit(r, self.source(r, *other), 2.0)
        ins = [v if v is not None else y for v in ins]
        dynamic = self.contract_dynamic(op, ins)
        out = self.reduction_init(r, "sum", 0.0, shape, dynamic)
        k = t.shape[-1] if op != "vecmat" or rank == 2 else t.shape[0]
        return self.named(r, op, ins, out, 4.0 * max(k, 4) + out.bound)

    @staticmethod
    def contract_dynamic(op, ins):
        """The dynamic pattern of a contraction's result."""
        a, b = ins
        if op == "dot":
            return ()
        if op == "matmul":
            return (a.dynamic[0], b.dynamic[1])
        if op == "matvec":
            return (a.dynamic[0],)
        if op == "vecmat":
            return (b.dynamic[1],)
        return (a.dynamic[0], a.dynamic[1], b.dynamic[2])

    # name -> (weight, method name); a method returns the new tensor, or
    # None when it does not apply to t.
    TENSOR_OPS = {
        "elementwise": (5, "t_elementwise"),
        "named_unary": (2, "t_named_unary"),
        "named_binary": (2, "t_named_binary"),
        "named_select": (1, "t_named_select"),
        "elementwise_kind": (1, "t_elementwise_kind"),
        "map": (1, "t_map"),
        "copy": (1, "t_copy"),
        "gather": (1, "t_gather"),
        "generic": (2, "t_generic"),
        "transpose": (1, "t_transpose"),
        "broadcast": (1, "t_broadcast"),
        "extract_slice": (1, "t_extract_slice"),
        "insert_slice": (1, "t_insert_slice"),
        "insert": (1, "t_insert"),
        "expand_shape": (1, "t_expand_shape"),
        "collapse_shape": (1, "t_collapse_shape"),
        "reshape": (1, "t_reshape"),
        "cast": (1, "t_cast"),
        "concat": (1, "t_concat"),
        "pad": (1, "t_pad"),
        "reduce": (2, "t_reduce"),
        "contract": (2, "t_contract"),
    }

    def tensor_op(self, r, t):
        """One random op of TENSOR_OPS applied to t (a tensor of rank >= 1);
        returns the new tensor, of bounded size and rank >= 1 (rank-0
        results are read back as scalars)."""
        while True:
            name = self.weighted(self.TENSOR_OPS)
            v = getattr(self, self.TENSOR_OPS[name][1])(r, t)
            if v is None:
                continue
            v = self.limit(r, v, 8.0)
            if not v.shape:
                self.extract(r, v)
                return t
            if math.prod(v.shape) > 32:
                return self.t_reduce(r, v, [0]) if len(v.shape) > 1 else t
            return v

    def extract(self, r, t):
        """A scalar element of t (at a constant or computed position)."""
        name = self.fresh()
        r.emit(f"{name} = tensor.extract {t.name}[{self.position(r, t)}] : "
               f"{t.type}")
        self.note("tensor.extract")
        v = Value(name, t.bound)
        r.floats.append(v)
        return v

    def tensor_work(self, r):
        """A tensor computation: a tensor in scope (or a new one from
        scalars) through a few tensor ops, read back as a scalar (a full
        reduction or an element)."""
        t = self.tensor_operand(r)
        if t is None or self.chance(0.3):
            t = self.source(r, *self.random_shape(r))
        for _ in range(self.rng.randint(1, 3)):
            t = self.tensor_op(r, t)
        if self.chance(0.6):
            s = self.t_reduce(r, t, list(range(len(t.shape))))
            s = self.limit(r, s, 8.0)
            self.extract(r, s)
        else:
            self.extract(r, t)

    def tensor_loop(self, r):
        """An scf.for carrying a statically shaped tensor: a contraction of
        the tensor (elementwise or through a matvec), or one element
        written per iteration."""
        shape = self.random_shape(r, self.pick([1, 1, 2]))[0]
        t = self.limit(r, self.source(r, shape, (False,) * len(shape)), 2.0)
        form = self.pick(["contract", "insert"] +
                         (["matvec"] if len(shape) == 1 else []))
        self.note("tensor_loop_" + form)
        self.enter_loop(r)
        lower = self.index(r, 0)
        if form == "insert":
            upper = self.index(r, shape[0])
        else:
            upper = self.small_index(r) if self.chance(0.5) else \
                self.index(r, self.pick([2, 3]))
        step = self.index(r, 1)
        body = r.child("loop")
        iv = self.fresh("%i")
        body.indices.append(iv)
        carried = t.like(self.fresh("%s"), 2.0)
        body.floats.append(carried)
        if form == "insert":
            self.statements(body, self.rng.randint(1, 2))
            s = self.limit(body, self.operand(body), 2.0)
            rest = [self.index(body, 0)] if len(shape) > 1 else []
            idx = ", ".join([iv] + rest)
            nxt = carried.like(self.fresh(), 2.0)
            body.emit(f"{nxt.name} = tensor.insert {s.name} into "
                      f"{carried.name}[{idx}] : {carried.type}")
        elif form == "matvec":
            n = shape[0]
            w = self.limit(body, self.source(body, (n, n), (False, False)),
                           0.5)
            z = self.filled(body, shape, (False,), 0.0)
            m = self.named(body, "matvec", [w, carried], z, 2.0 * n)
            nxt = self.un(body, "math.tanh", m, 1.0)
        else:
            e = self.elementwise(body, carried)
            half = self.bin(body, "arith.mulf", carried,
                            self.const(body, 0.5, carried), 1.0)
            nxt = self.bin(body, "arith.addf", half, self.squash(body, e),
                           2.6)
        name = self.fresh()
        r.emit(f"{name} = scf.for {iv} = {lower} to {upper} step {step} "
               f"iter_args({carried.name} = {t.name}) -> ({t.type}) {{")
        r.lines += body.lines
        r.emit(f"  scf.yield {nxt.name} : {t.type}")
        r.emit("}")
        v = t.like(name, max(2.6, nxt.bound))
        r.floats.append(v)
        self.extract(r, v)

    def emit_if(self, r, cond, sides, type_):
        """Emits into r an scf.if on `cond` with one result of `type_`:
        `sides` are (branch region, value it yields), then and else.
        Returns the result's name."""
        name = self.fresh()
        r.emit(f"{name} = scf.if {cond} -> ({type_}) {{")
        for k, (b, y) in enumerate(sides):
            if k:
                r.emit("} else {")
            r.lines += b.lines
            r.emit(f"  scf.yield {y.name} : {type_}")
        r.emit("}")
        return name

    def tensor_if(self, r):
        """An scf.if yielding a tensor computed differently in each branch."""
        t = self.tensor_operand(r) or self.source(r, *self.random_shape(r))
        cond = self.condition(r)
        branches = []
        for _ in range(2):
            b = self.branch(r)
            y = t
            for _ in range(self.rng.randint(0, 2)):
                y = self.elementwise(b, y)
            branches.append((b, y))
        name = self.emit_if(r, cond, branches, t.type)
        self.note("tensor_if")
        v = t.like(name, max(y.bound for _, y in branches))
        r.floats.append(v)
        self.extract(r, v)

    # -- results ------------------------------------------------------------

    def combine(self, r, values, bound=8.0):
        """A bounded sum of `values` (each limited), the region's result."""
        total = self.limit(r, values[0], bound)
        for v in values[1:]:
            v = self.limit(r, v, bound)
            total = self.bin(r, "arith.addf", total, v, total.bound + v.bound)
        return self.limit(r, total, bound)

    def result_of(self, r, first):
        """The values of r defined since index `first` that nothing used,
        summed: every computed value reaches the result."""
        used = set()
        for line in r.lines:
            operands = re.sub(r"^\s*%[\w, %]+ = ", "", line)
            used.update(re.findall(r"%\w+", operands))
        fresh = [v for v in r.floats[first:]
                 if v.name not in used and v.type == "$T"]
        return self.combine(r, fresh or [self.operand(r)])

    # -- functions ----------------------------------------------------------

    def signature(self, floats, indices, extra=()):
        """Argument names and types (and `extra` ones), in a shuffled
        order."""
        args = ([("%x" + str(i), "$T") for i in range(floats)] +
                [("%n" + str(i), "index") for i in range(indices)] +
                list(extra))
        self.rng.shuffle(args)
        return args

    def function_region(self, args, shapes=None):
        """The body of a function with `args`; tensor arguments have the
        shapes `shapes` (name -> Value); size arguments (%d...) are not
        loop bounds."""
        r = Region(1)
        shapes = shapes or {}
        r.floats = [shapes[n] if n in shapes else
                    Value(n, 2.0, elem="$W" if t == "$W" else "$T")
                    for n, t in args if t != "index"]
        r.indices = [n for n, t in args
                     if t == "index" and not n.startswith("%d")]
        return r

    def ret(self, r, values):
        """Returns `values`; from @f, the first as a rank-0 tensor when
        self.rank0, then the extra results self.extra ('$T' or 'i32',
        made from values in scope)."""
        names = [v.name for v in values]
        types = ["$T"] * len(values)
        if self.rank0:
            t = self.fresh()
            r.emit(f"{t} = tensor.from_elements {names[0]} : tensor<$T>")
            names, types = [t], ["tensor<$T>"]
        for t in self.extra:
            v = self.combine(r, [self.operand(r)], 4.0)
            if t == "i32":
                i = self.fresh()
                r.emit(f"{i} = arith.fptosi {v.name} : $T to i32")
                v = Value(i, 4.0, elem="i32")
            names.append(v.name)
            types.append(t)
        r.emit(f"return {', '.join(names)} : {', '.join(types)}")

    def write_function(self, name, args, results, r):
        header = ", ".join(f"{n}: {t}" for n, t in args)
        rtypes = ", ".join(results)
        rtext = f"({rtypes})" if len(results) != 1 else rtypes
        self.functions.append("\n".join(
            [f"func.func {name}({header}) -> {rtext} {{"] + r.lines + ["}"]))

    def helper(self, number):
        """A callable function: straight-line with structured control flow,
        unstructured (cf), recursive, or (in a program with deep branches)
        holding them."""
        kind = self.pick(["straight", "straight", "cf", "recursive"] +
                         (["nest"] * 2 if self.stops else []))
        name = f"@$Ph{number}"
        self.runs_loop = self.runs_recursion = self.runs_nest = False
        self.runs_buffer = False
        if kind == "recursive":
            return self.recursive(name)
        extra = [("%key", "index")] if kind == "nest" else []
        args = self.signature(self.rng.randint(1, 3), self.pick([0, 0, 1]),
                              extra)
        r = self.function_region(args)
        self.budget = 4
        results = []
        if kind == "nest":
            self.statements(r, self.rng.randint(1, 2))
            main = self.nest(r, self.rng.randint(3, 6))
            self.statements(r, self.rng.randint(0, 2))
            rest = self.limit(r, self.result_of(r, 0), 1.0)
            results = [self.bin(r, "arith.addf", main, rest,
                                main.bound + 1.0)]
        elif kind == "cf":
            self.note("cf")
            self.cf_body(r, self.rng.randint(1, 3))
            results = [self.result_of(r, 0)]
        else:
            for _ in range(self.pick([1, 1, 2])):
                first = len(r.floats)
                self.statements(r, self.rng.randint(2, 5))
                results.append(self.result_of(r, first))
        self.ret(r, results)
        self.write_function(name, args, ["$T"] * len(results), r)
        types = [t for _, t in args]
        return Callee(name, types, [v.bound for v in results],
                      self.runs_loop, self.runs_recursion, self.runs_nest,
                      self.runs_buffer,
                      [n for n, _ in args].index("%key") if extra else None)

    def recursive(self, name):
        """x -> base(x) at depth 0, else combine(x, self(step(x), n - 1));
        sometimes through a second function (mutual recursion), sometimes
        calling itself twice (a tree), sometimes with the depth decided by
        the data (a value halved until below 1)."""
        kind = self.pick(["self", "tree", "mutual", "data"])
        self.note("recursion_" + kind)
        floats = self.rng.randint(1, 2)
        if kind == "data":
            return self.data_recursion(name, floats)
        partner = name + "m" if kind == "mutual" else name
        calls = 2 if kind == "tree" else 1
        self.recursion_step(name, partner, floats, calls, decrement=True)
        if kind == "mutual":
            self.recursion_step(partner, name, floats, 1, decrement=False)
        return Callee(name, ["$T"] * floats + ["index"], [3.0],
                      self.runs_loop, True, self.runs_nest, self.runs_buffer)

    def recursion_step(self, name, target, floats, calls, decrement):
        """One function of a recursion over %n: the base case when n == 0
        (when `decrement`), else calls of `target` on transformed
        arguments, combined with the arguments into a result bounded by 3."""
        args = [(f"%x{i}", "$T") for i in range(floats)] + [("%n", "index")]
        r = self.function_region(args)
        r.context = frozenset({"recursion"})
        self.budget = 1
        zero = self.index(r, 0)
        one = self.index(r, 1)
        body = r
        if decrement:
            done = self.fresh()
            r.emit(f"{done} = arith.cmpi eq, %n, {zero} : index")
            base = r.child()
            self.statements(base, self.rng.randint(1, 3))
            b = self.combine(base, [base.floats[-1]], 3.0)
            res = self.fresh()
            r.emit(f"{res} = scf.if {done} -> ($T) {{")
            r.lines += base.lines
            r.emit(f"  scf.yield {b.name} : $T")
            r.emit("} else {")
            body = r.child()
        depth = "%n"
        if decrement:
            depth = self.fresh()
            body.emit(f"{depth} = arith.subi %n, {one} : index")
        first = len(body.floats)
        for _ in range(calls):
            self.statements(body, self.rng.randint(1, 2))
            actual = [self.limit(body, self.squash(body, self.operand(body)),
                                 2.0) for _ in range(floats)]
            rec = self.fresh()
            types = ", ".join(["$T"] * floats + ["index"])
            body.emit(f"{rec} = func.call {target}("
                      f"{', '.join([a.name for a in actual] + [depth])}) : "
                      f"({types}) -> $T")
            body.floats.append(Value(rec, 3.0))
        self.statements(body, self.rng.randint(0, 2))
        out = self.result_of(body, first)
        out = self.limit(body, out, 3.0)
        if decrement:
            body.emit(f"scf.yield {out.name} : $T")
            r.lines += body.lines
            r.emit("}")
            r.emit(f"return {res} : $T")
        else:
            r.emit(f"return {out.name} : $T")
        self.write_function(name, args, ["$T"], r)

    def data_recursion(self, name, floats):
        """f(x, y) = base(x) if y < 1 else combine(x, f(step(x), y/2 + c)),
        c < 1/4: the depth is log2 of the first y (the caller passes a
        positive value at most 10)."""
        args = [(f"%x{i}", "$T") for i in range(floats)] + [("%y", "$T")]
        r = Region(1, context=frozenset({"recursion"}))
        r.floats = [Value(n, 2.0) for n, _ in args[:-1]]
        self.budget = 1
        one = self.const(r, 1.0, Value("", 0))
        low = self.fresh()
        r.emit(f"{low} = arith.cmpf olt, %y, {one.name} : $T")
        base = r.child()
        base.floats.append(Value("%y", 1.0))
        self.statements(base, self.rng.randint(1, 2))
        b = self.combine(base, [base.floats[-1]], 3.0)
        res = self.fresh()
        r.emit(f"{res} = scf.if {low} -> ($T) {{")
        r.lines += base.lines
        r.emit(f"  scf.yield {b.name} : $T")
        r.emit("} else {")
        body = r.child()
        first = len(body.floats)
        self.statements(body, self.rng.randint(1, 2))
        actual = [self.limit(body, self.squash(body, self.operand(body)), 2.0)
                  for _ in range(floats)]
        half = self.bin(body, "arith.mulf", Value("%y", 10.0),
                        self.const(body, 0.5, Value("", 0)), 5.0)
        nudge = self.unit(body, self.operand(body), 0.2)
        y2 = self.bin(body, "arith.addf", half, nudge, 5.2)
        rec = self.fresh()
        types = ", ".join(["$T"] * (floats + 1))
        body.emit(f"{rec} = func.call {name}("
                  f"{', '.join([a.name for a in actual] + [y2.name])}) : "
                  f"({types}) -> $T")
        body.floats.append(Value(rec, 3.0))
        self.statements(body, self.rng.randint(0, 2))
        out = self.limit(body, self.result_of(body, first), 3.0)
        body.emit(f"scf.yield {out.name} : $T")
        r.lines += body.lines
        r.emit("}")
        r.emit(f"return {res} : $T")
        self.write_function(name, args, ["$T"], r)
        # Callers pass floats; the wrapper makes y = 1 + 4.5 sin(x0)^2.
        wrapper = name + "w"
        fargs = ", ".join(f"%a{i}: $T" for i in range(floats))
        self.functions.append("\n".join([
            f"func.func {wrapper}({fargs}) -> $T {{",
            "  %s = math.sin %a0 : $T",
            "  %q = arith.mulf %s, %s : $T",
            "  %c = arith.constant 4.5 : $T",
            "  %one = arith.constant 1.0 : $T",
            "  %p = arith.mulf %q, %c : $T",
            "  %y = arith.addf %p, %one : $T",
            f"  %r = func.call {name}("
            f"{', '.join([f'%a{i}' for i in range(floats)] + ['%y'])}) : "
            f"({types}) -> $T",
            "  return %r : $T",
            "}"]))
        return Callee(wrapper, ["$T"] * floats, [3.0], self.runs_loop, True,
                      self.runs_nest, self.runs_buffer)

    # -- call chains ----------------------------------------------------------

    def make_chain(self):
        """A chain of 10 to 30 functions @$Pc<k> without loops, each calling
        the next (sometimes from two sites, sometimes inside an scf.if):
        scalars, a select on an i1 condition, index arithmetic passed down
        the chain, an f64 argument in f32 programs (extf/truncf), sometimes
        a small static tensor read at a computed index. Each link keeps a
        few scalars for its adjoint and passes on its callee's tape, so a
        few links up the tapes exceed 16 scalars and are packed into
        records (DerivativeGenerator::packTape), which the links above pass
        on in turn. The value passed down has a slope of 1 or 0.8 in the
        link's first argument and the callee's result enters the link's
        with a weight of 0.3 to 0.9, so deep links still weigh in the
        gradient. What is not packed is passed on
        as it is by every link above: tensors on a tape, and the tapes of
        calls inside an scf.if (carried out of it), which a link calling
        from two sites doubles. So only one link in a program with tensors
        does tensor work, few links make the adjoint read a tensor, at most
        one link calls inside an scf.if and at most two from two sites.
        Returns the links, head first."""
        self.note("call_chain")
        callees, self.callees = self.callees, []
        tensor_rate, self.tensor_rate = self.tensor_rate, 0
        self.loop_free = True
        length = self.rng.randint(10, 30)
        tensor_link = self.rng.randrange(length) if tensor_rate else None
        branch_link = self.rng.randrange(length) if self.chance(0.5) \
            else None
        two_sites = self.rng.sample(range(length), self.pick([0, 1, 2]))
        links, below = [], None
        for k in reversed(range(length)):
            below = self.link(k, below, k == tensor_link, k == branch_link,
                              k in two_sites)
            links.append(below)
        self.loop_free = False
        self.callees = callees
        self.tensor_rate = tensor_rate
        return links[::-1]

    def link(self, k, below, tensors, in_branch, two_sites):
        """Link k of a chain, calling `below` (the last link calls none):
        with tensor work when `tensors`, inside an scf.if when `in_branch`,
        from two sites when `two_sites`."""
        name = f"@$Pc{k}"
        self.runs_loop = self.runs_recursion = self.runs_nest = False
        self.runs_buffer = False
        wide = self.elem == "f32" and self.chance(0.4)
        args = self.signature(self.rng.randint(1, 2), self.pick([0, 1, 1]),
                              [("%w0", "$W")] if wide else [])
        r = self.function_region(args)
        carrier = next(v for v in r.floats if v.type == "$T")
        self.budget = self.pick([0, 0, 0, 1])
        if wide:
            self.note("chain_f64_argument")
            w = self.un(r, self.pick(["math.sin", "math.tanh", "math.atan"]),
                        Value("%w0", 2.0, elem="$W"), 1.6)
            self.emit_value(r, Value(None, 1.6),
                            f"arith.truncf {w.name} : $W to $T")
        self.statements(r, self.rng.randint(1, 2))
        if tensors:
            self.tensor_work(r)
        idx = self.index_arithmetic(r)
        if self.chance(0.5):
            self.read_at(r, idx, whole=0.1)
        # Down the chain: the carrier, or on one side of a select -carrier
        # or 0.8 carrier + 0.2 squash(v): a slope of 1 or 0.8 either way, a
        # value of at most 2.
        cond = self.condition(r)
        if self.chance(0.5):
            other = self.un(r, "arith.negf", carrier, carrier.bound)
        else:
            a = self.bin(r, "arith.mulf", carrier,
                         self.const(r, 0.8, carrier), 1.6)
            v = self.squash(r, self.operand(r))
            b = self.bin(r, "arith.mulf", v, self.const(r, 0.2, v), 0.32)
            other = self.bin(r, "arith.addf", a, b, 1.92)
        down = self.emit_value(r, Value(None, 2.0),
                               f"arith.select {cond}, {carrier.name}, "
                               f"{other.name} : $T")
        self.note("select")
        out = self.limit(r, self.result_of(r, 0), 1.0)
        if below is not None:
            weights = [self.pick([0.9, -0.9, 0.75])]
            if two_sites:
                self.note("chain_two_sites")
                weights = [0.6, -0.3]
            for site, weight in enumerate(weights):
                first = down if site == 0 else \
                    self.limit(r, self.operand(r), 2.0)
                res = self.link_call(r, below, first, in_branch and site == 0)
                if self.chance(0.3):
                    # A weight computed here, between 0.3 and |weight|: the
                    # adjoint reads res.
                    t = self.unit(r, self.operand(r), 0.3)
                    c = self.bin(r, "arith.addf", t,
                                 self.const(r, abs(weight) - 0.3, t),
                                 abs(weight))
                else:
                    c = self.const(r, weight, res)
                term = self.bin(r, "arith.mulf", res, c,
                                res.bound * abs(weight))
                out = self.bin(r, "arith.addf", out, term,
                               out.bound + term.bound)
        self.ret(r, [out])
        self.write_function(name, args, ["$T"], r)
        return Callee(name, [t for _, t in args], [out.bound],
                      buffer=self.runs_buffer)

    def link_call(self, r, callee, first, in_branch):
        """A call of the next link with `first` as its first float,
        directly or (`in_branch`) in both branches of an scf.if (with
        -first in the else branch, so that the chain goes on whichever
        branch is taken)."""
        if not in_branch:
            return self.call(r, callee, first=first)[0]
        self.note("chain_call_in_branch")
        cond = self.condition(r)
        sides = []
        for side in range(2):
            b = self.branch(r)
            arg = first if side == 0 else \
                self.un(b, "arith.negf", first, first.bound)
            sides.append((b, self.call(b, callee, first=arg)[0]))
        name = self.emit_if(r, cond, sides, "$T")
        return Value(name, callee.bounds[0])

    def index_arithmetic(self, r):
        """An index in [0, 4], (n * a + b) mod 5 of an index n in scope (or
        from the data), made visible in r."""
        if r.indices and self.chance(0.8):
            n = self.pick(r.indices)
        else:
            p = self.positive(r, self.limit(r, self.operand(r), 2.0), 0.0)
            i, n = self.fresh(), self.fresh()
            r.emit(f"{i} = arith.fptosi {p.name} : $T to i64")
            r.emit(f"{n} = arith.index_cast {i} : i64 to index")
        a, b = self.pick([1, 2, 3]), self.pick([1, 2, 3])
        if a > 1:
            m = self.fresh()
            r.emit(f"{m} = arith.muli {n}, {self.index(r, a)} : index")
            n = m
        m, out = self.fresh(), self.fresh()
        r.emit(f"{m} = arith.addi {n}, {self.index(r, b)} : index")
        r.emit(f"{out} = arith.remui {m}, {self.index(r, 5)} : index")
        r.indices.append(out)
        self.note("index_arithmetic")
        return out

    def read_at(self, r, idx, whole=0.6):
        """Makes the adjoint read an index computed here from idx: the
        position of an element of a small static tensor (with probability
        `whole` through an op on the whole tensor, whose adjoint may read
        the tensor), or float(position) times a value. Returns the
        float."""
        n = self.pick([2, 3, 4])
        pos = self.fresh()
        r.emit(f"{pos} = arith.remui {idx}, {self.index(r, n)} : index")
        self.note("read_at_index")
        if self.chance(0.3):
            i, f = self.fresh(), self.fresh()
            r.emit(f"{i} = arith.index_cast {pos} : index to i64")
            r.emit(f"{f} = arith.sitofp {i} : i64 to $T")
            x = self.limit(r, self.operand(r), 1.0)
            return self.bin(r, "arith.mulf", x, Value(f, n - 1), n - 1)
        t = self.source_from_elements(r, (n,), (False,))
        if self.chance(whole):
            t = self.elementwise(r, t)
        v = Value(self.fresh(), t.bound)
        r.emit(f"{v.name} = tensor.extract {t.name}[{pos}] : {t.type}")
        r.floats.append(v)
        return v

    def chain_calls(self, r):
        """Calls of the chain's head in @f: directly (on an argument of
        @f), in a loop, in a branch (one to three of these), and sometimes
        of a link further down (which is then called from two sites). Their
        results are added to @f's result (self.terms), so that the chain
        weighs in its gradient."""
        head = self.chain[0]
        ways = self.rng.sample(["direct", "loop", "branch"],
                               self.rng.randint(1, 3))
        for way in ways:
            if way == "loop" and not self.allows(r.child("loop"), head):
                way = "direct"
            self.note("chain_" + way)
            if way == "direct":
                x = self.pick(self.arguments) if self.arguments else None
                self.call(r, head, first=x)
            elif way == "loop":
                self.call_in_loop(r, head)
            else:
                self.call_in_branch(r, head)
            self.terms.append(r.floats[-1])
        if self.chance(0.3):
            self.note("chain_second_site")
            self.call(r, self.pick(self.chain[1:]))

    def call_in_loop(self, r, callee):
        """An scf.for whose body calls `callee` (a link of a chain, a
        function with deep branches) and carries a value updated from its
        result."""
        self.enter_loop(r)
        lower, upper, step = self.loop_bounds(r)
        init = self.limit(r, self.operand(r), 2.0)
        body = r.child("loop")
        iv = self.fresh("%i")
        body.indices.append(iv)
        s = Value(self.fresh("%s"), 2.0)
        body.floats.append(s)
        self.statements(body, self.rng.randint(0, 2))
        res = self.call(body, callee, first=s if self.chance(0.5) else None)
        e = self.squash(body, res[0])
        half = self.bin(body, "arith.mulf", s, self.const(body, 0.5, s), 1.0)
        e = self.bin(body, "arith.mulf", e, self.const(body, 0.5, e), 0.8)
        nxt = self.bin(body, "arith.addf", half, e, 1.8)
        body.emit(f"scf.yield {nxt.name} : $T")
        name = self.fresh()
        r.emit(f"{name} = scf.for {iv} = {lower} to {upper} step {step} "
               f"iter_args({s.name} = {init.name}) -> ($T) {{")
        r.lines += body.lines
        r.emit("}")
        r.floats.append(Value(name, 2.0))

    def call_in_branch(self, r, callee):
        """An scf.if calling `callee` on one side."""
        cond = self.condition(r)
        sides = []
        calling = self.rng.randrange(2)
        for side in range(2):
            b = self.branch(r)
            self.statements(b, self.rng.randint(0, 2))
            if side == calling:
                y = self.call(b, callee)[0]
            else:
                y = self.yields(b, 1)[0]
            sides.append((b, y))
        name = self.emit_if(r, cond, sides, "$T")
        r.floats.append(Value(name, max(y.bound for _, y in sides)))

    # -- deeply nested branches -----------------------------------------------

    def nest(self, r, depth):
        """Branch ops (scf.if, scf.index_switch) nested `depth` deep in r
        (at a function's entry), each in one region of the one before, on
        a condition computed at its own level (canonicalization folds an
        inner scf.if on an outer one's condition): the index argument %key
        transformed at each level, compared with a threshold (sometimes
        or-ed or and-ed with a comparison of floats), or a selector
        computed from it. Point j passes %key = self.stops[j], and the
        thresholds are chosen from the values %key takes at each level so
        that point j goes down to level stops[j] at least (a comparison of
        floats can only take it further): some points reach the innermost
        level, others leave early. Each level computes floats, an i1 (a
        select's condition) and an index (a read position) that the
        adjoint reads, from the branch tape from BRANCH_TAPE_DEPTH on, and
        sometimes yields an i1 or an index the level above reads."""
        self.note("deep_branches")
        self.note(f"deep_branches_{depth}")
        return self.nest_op(r, 1, depth, "%key", dict(enumerate(self.stops)))

    def nest_op(self, r, level, depth, key, values):
        """The branch op of `level` in r, on a condition computed from the
        index `key` (whose value at each point known to reach r is in
        `values`); returns its main float result."""
        op, c = self.pick([("addi", 1), ("addi", 2), ("muli", 2),
                           ("muli", 3)])
        k = self.fresh()
        r.emit(f"{k} = arith.{op} {key}, {self.index(r, c)} : index")
        values = {j: v + c if op == "addi" else v * c
                  for j, v in values.items()}
        down = {j: v for j, v in values.items() if self.stops[j] >= level}
        stay = [v for j, v in values.items() if self.stops[j] < level]
        # Points going down have keys >= threshold, the others below it.
        if down:
            threshold = min(down.values())
        elif stay:
            threshold = max(stay) + 1
        else:
            threshold = self.rng.randint(1, 6)
        count = self.pick([1, 1, 2])
        extra = self.pick([None, None, "i1", "index"])
        types = ["$T"] * count + ([extra] if extra else [])
        if self.chance(0.5):
            self.note("deep_if")
            deep_then = self.chance(0.5)
            if deep_then:
                pred, bound = self.pick([("sge", threshold),
                                         ("sgt", threshold - 1),
                                         ("uge", threshold),
                                         ("ugt", threshold - 1)])
            else:
                pred, bound = self.pick([("slt", threshold),
                                         ("sle", threshold - 1),
                                         ("ult", threshold),
                                         ("ule", threshold - 1)])
            cond = self.fresh()
            r.emit(f"{cond} = arith.cmpi {pred}, {k}, "
                   f"{self.index(r, bound)} : index")
            if self.chance(0.4):
                # Points going down keep going down.
                self.note("deep_if_float_condition")
                a = self.operand(r)
                f = self.compare(r, a, self.other(r, a))
                both = self.fresh()
                r.emit(f"{both} = arith.{'ori' if deep_then else 'andi'} "
                       f"{cond}, {f} : i1")
                cond = both
            keys = ["then", "else"]
            deep = 0 if deep_then else 1
        else:
            self.note("deep_switch")
            low = max(stay) if stay else threshold - 1
            d, sel = self.fresh(), self.fresh()
            r.emit(f"{d} = arith.subi {k}, {self.index(r, low)} : index")
            r.emit(f"{sel} = arith.minui {d}, {self.index(r, 1)} : index")
            shift = self.pick([0, 0, 1, 2])
            if shift:
                shifted = self.fresh()
                r.emit(f"{shifted} = arith.addi {sel}, "
                       f"{self.index(r, shift)} : index")
                sel = shifted
            here, deeper = shift, shift + 1
            others = {v for v in range(5)
                      if v not in (here, deeper) and self.chance(0.25)}
            if self.chance(0.6):
                cases = {deeper} | others | (
                    {here} if self.chance(0.5) else set())
                deep_key = deeper
            else:
                cases = {here} | others
                deep_key = "default"
            keys = sorted(cases) + ["default"]
            deep = keys.index(deep_key)
        regions, bounds = [], [0.0] * count
        for i in range(len(keys)):
            b = self.branch(r)
            if i == deep:
                ys = self.nest_level(b, level, depth, k, down, count, extra)
            else:
                ys = self.shallow(b, count, extra)
            b.emit(f"scf.yield {', '.join(y.name for y in ys)} : "
                   f"{', '.join(types)}")
            regions.append(b)
            bounds = [max(x, y.bound) for x, y in zip(bounds, ys)]
        names = [self.fresh() for _ in types]
        if keys[0] == "then":
            r.emit(f"{', '.join(names)} = scf.if {cond} -> "
                   f"({', '.join(types)}) {{")
            r.lines += regions[0].lines
            r.emit("} else {")
            r.lines += regions[1].lines
            r.emit("}")
        else:
            r.emit(f"{', '.join(names)} = scf.index_switch {sel} -> "
                   f"{', '.join(types)}")
            for case, b in zip(keys, regions):
                r.emit(f"case {case} {{" if case != "default" else
                       "default {")
                r.lines += b.lines
                r.emit("}")
        results = [Value(n, bound) for n, bound in zip(names, bounds)]
        r.floats += results
        main = results[0]
        if extra == "i1":
            self.note("deep_i1_result")
            # -main/2 on the other side: the level below keeps its weight.
            other = self.bin(r, "arith.mulf", main,
                             self.const(r, -0.5, main), main.bound / 2)
            main = self.emit_value(r, main.like(None, main.bound),
                                   f"arith.select {names[-1]}, {main.name}, "
                                   f"{other.name} : $T")
        elif extra == "index":
            self.note("deep_index_result")
            self.read_at(r, names[-1])
        return main

    def nest_level(self, b, level, depth, key, values, count, extra):
        """The contents of the region of level `level` that goes deeper:
        floats, a select, a read at a position computed here, the next
        level's op and its result times a weight between 0.1 and 0.9
        computed from a float of this level, plus the rest (at most 1), so
        that the inner levels weigh in the gradient; returns the values to
        yield."""
        first = len(b.floats)
        for _ in range(self.rng.randint(1, 2)):
            self.elementwise(b)
        if self.chance(0.6):
            self.note("select")
            op_select(self, b, self.operand(b))
        if self.chance(0.5):
            self.read_at(b, key)
        if level < depth:
            inner = self.nest_op(b, level + 1, depth, key, values)
            here = [v for v in b.floats[first:]
                    if v.type == "$T" and v is not inner]
            p = self.pick(here) if here else self.operand(b)
            rest = self.limit(b, self.result_of(b, first), 1.0)
            t = self.unit(b, p, 0.4)
            w = self.bin(b, "arith.addf", t, self.const(b, 0.5, t), 0.9)
            y = self.bin(b, "arith.mulf", inner, w, inner.bound * 0.9)
            main = self.bin(b, "arith.addf", y, rest, y.bound + 1.0)
        else:
            main = self.result_of(b, first)
        ys = [main] + self.yields(b, count - 1)
        return ys + self.extra_yield(b, extra, key)

    def shallow(self, b, count, extra):
        """The contents of a region that goes no deeper."""
        self.statements(b, self.rng.randint(0, 1))
        return self.yields(b, count) + self.extra_yield(b, extra, None)

    def extra_yield(self, b, extra, key):
        """The i1 or index a region of the nest yields besides its floats:
        a comparison made here; a position computed here from `key`, or a
        constant."""
        if extra == "i1":
            a = self.operand(b)
            return [Value(self.compare(b, a, self.other(b, a)), 0.0)]
        if extra == "index":
            if key is None:
                return [Value(self.index(b, self.pick([0, 1, 2, 3])), 0.0)]
            name = self.fresh()
            b.emit(f"{name} = arith.remui {key}, {self.index(b, 4)} : index")
            return [Value(name, 0.0)]
        return []

    # -- unstructured control flow ------------------------------------------

    def cf_body(self, r, segments):
        """A CFG: straight code, then `segments` of diamonds, block loops,
        switches and early returns, each joining through block arguments."""
        self.statements(r, self.rng.randint(1, 2))
        for _ in range(segments):
            kind = self.pick(["diamond", "return", "switch"] +
                             ([] if self.blocked(r, "loop") else ["loop"]))
            self.note("cf_" + kind)
            getattr(self, "cf_" + kind)(r)

    def block(self, r, label, params=()):
        """Starts block `label` with parameters [(Value, type)]."""
        if params:
            args = ", ".join(f"{v.name}: {t}" for v, t in params)
            r.label(f"{label}({args}):")
        else:
            r.label(f"{label}:")

    def branch_args(self, values):
        if not values:
            return ""
        return (f"({', '.join(v.name for v in values)} : "
                f"{', '.join(['$T'] * len(values))})")

    def cf_diamond(self, r):
        cond = self.condition(r)
        left, right, join = (self.fresh("^bb") for _ in range(3))
        count = self.pick([1, 2])
        r.emit(f"cf.cond_br {cond}, {left}, {right}")
        arms = []
        for label in (left, right):
            arm = self.branch(r, sibling=True)
            self.block(arm, label)
            self.statements(arm, self.rng.randint(1, 3))
            ys = self.yields(arm, count)
            arm.emit(f"cf.br {join}{self.branch_args(ys)}")
            r.lines += arm.lines
            arms.append(ys)
        joined = [Value(self.fresh(), max(a.bound, b.bound))
                  for a, b in zip(*arms)]
        self.block(r, join, [(v, "$T") for v in joined])
        r.floats += joined

    def cf_loop(self, r):
        """A block loop over i < upper (and, sometimes, while the first
        carried value stays below a limit)."""
        self.enter_loop(r)
        carried = [self.limit(r, self.operand(r), 2.0)
                   for _ in range(self.pick([1, 2]))]
        zero, one = self.index(r, 0), self.index(r, 1)
        upper = self.small_index(r)
        head, body_label, out = (self.fresh("^bb") for _ in range(3))
        i = self.fresh("%i")
        params = [Value(self.fresh("%s"), 2.0) for _ in carried]
        r.emit(f"cf.br {head}({zero}, "
               f"{', '.join(c.name for c in carried)} : index, "
               f"{', '.join(['$T'] * len(carried))})")
        hd = r.sibling("loop")
        hd.label(f"{head}({i}: index, "
                 f"{', '.join(f'{p.name}: $T' for p in params)}):")
        stop = self.fresh()
        hd.emit(f"{stop} = arith.cmpi sge, {i}, {upper} : index")
        if self.chance(0.4):
            self.note("cf_loop_data_exit")
            lim = self.const(hd, 1.5, Value("", 0))
            high, either = self.fresh(), self.fresh()
            hd.emit(f"{high} = arith.cmpf ogt, {params[0].name}, "
                    f"{lim.name} : $T")
            hd.emit(f"{either} = arith.ori {stop}, {high} : i1")
            stop = either
        hd.emit(f"cf.cond_br {stop}, {out}{self.branch_args(params)}, "
                f"{body_label}")
        r.lines += hd.lines
        body = r.sibling("loop")
        body.floats += params
        body.indices.append(i)
        self.block(body, body_label)
        self.statements(body, self.rng.randint(1, 3))
        nexts = [self.update(body, p) for p in params]
        i1 = self.fresh()
        body.emit(f"{i1} = arith.addi {i}, {one} : index")
        body.emit(f"cf.br {head}({i1}, {', '.join(n.name for n in nexts)} : "
                  f"index, {', '.join(['$T'] * len(nexts))})")
        r.lines += body.lines
        results = [Value(self.fresh(), max(c.bound, n.bound))
                   for c, n in zip(carried, nexts)]
        self.block(r, out, [(v, "$T") for v in results])
        r.floats += results

    def cf_switch(self, r):
        if r.indices and self.chance(0.6):
            sel = self.fresh()
            r.emit(f"{sel} = arith.index_cast {self.pick(r.indices)} : "
                   f"index to i32")
        else:
            x = self.limit(r, self.operand(r), 2.0)
            fl = self.un(r, "math.floor", x, 2.0)
            sel = self.fresh()
            r.emit(f"{sel} = arith.fptosi {fl.name} : $T to i32")
        cases = sorted(self.rng.sample([-1, 0, 1, 2], self.pick([1, 2, 3])))
        labels = [self.fresh("^bb") for _ in range(len(cases) + 1)]
        join = self.fresh("^bb")
        targets = [f"  default: {labels[0]}"] + [
            f"  {c}: {lab}" for c, lab in zip(cases, labels[1:])]
        r.emit(f"cf.switch {sel} : i32, [")
        for k, t in enumerate(targets):
            r.emit(t + ("," if k < len(targets) - 1 else ""))
        r.emit("]")
        arms = []
        for label in labels:
            arm = self.branch(r, sibling=True)
            self.block(arm, label)
            self.statements(arm, self.rng.randint(1, 2))
            ys = self.yields(arm, 1)
            arm.emit(f"cf.br {join}{self.branch_args(ys)}")
            r.lines += arm.lines
            arms.append(ys[0])
        joined = Value(self.fresh(), max(a.bound for a in arms))
        self.block(r, join, [(joined, "$T")])
        r.floats.append(joined)

    def cf_return(self, r):
        """An early return on one side of a branch."""
        cond = self.condition(r)
        early, rest = self.fresh("^bb"), self.fresh("^bb")
        r.emit(f"cf.cond_br {cond}, {early}, {rest}")
        arm = self.branch(r, sibling=True)
        self.block(arm, early)
        self.statements(arm, self.rng.randint(1, 2))
        self.ret(arm, [self.combine(arm, [self.operand(arm)])])
        r.lines += arm.lines
        self.block(r, rest)
        # Lifted to scf, what follows is the other side of a branch.
        r.branch += 1
        self.deepen(r)

    # -- the differentiated function ----------------------------------------

    def top(self, floats, indices, tensors, extra):
        """@f: calls (one callee from several places, an unused call),
        control flow, possibly unstructured, tensor arguments and tensor
        work (dynamic sizes from a size argument %d0, fixed per program);
        a scalar or rank-0 result. Returns (arguments, tensor argument
        shapes, fixed argument values)."""
        fixed = {}
        if self.tensor_rate and self.chance(0.6):
            self.size_arg = self.pick([2, 3])
            fixed["%d0"] = self.size_arg
            self.note("dynamic_sizes")
        shapes = {}
        region = Region(1)
        for k in range(tensors):
            shape, dynamic = self.random_shape(region)
            shapes[f"%t{k}"] = Value(f"%t{k}", 1.5, shape, dynamic)
            self.note("tensor_argument")
        args = self.signature(floats, indices,
                              [(n, v.type) for n, v in shapes.items()] +
                              [(n, "index") for n in fixed] +
                              ([("%key", "index")] if self.stops else []))
        r = self.function_region(args, shapes)
        self.arguments = [v for v in r.floats if v.shape is None]
        self.budget = 6
        self.rank0 = self.chance(0.3)
        self.extra = extra
        if self.rank0:
            self.note("rank0_result")
        if extra:
            self.note("extra_results")
        if self.callees and self.chance(0.5):
            self.note("call_unused")
            self.call(r, results_used=False)
        if self.stops and (self.chance(0.6) or not any(
                c.key is not None for c in self.callees)):
            self.terms.append(self.nest(r, self.rng.randint(3, 6)))
        if self.chance(0.25):
            self.note("cf")
            self.cf_body(r, self.rng.randint(1, 3))
        else:
            self.statements(r, self.rng.randint(3, 8))
        for callee in self.callees:
            if not self.allows(r, callee):
                continue
            if callee.recursive or self.chance(0.5):
                for _ in range(self.pick([1, 2])):
                    self.call(r, callee)
        for callee in self.callees:
            if callee.key is not None and self.chance(0.5) and \
                    self.allows(r.child("loop"), callee):
                self.note("deep_branches_in_loop")
                self.call_in_loop(r, callee)
        if self.chain:
            self.chain_calls(r)
        for t in shapes.values():
            if not any(t.dynamic) or self.dynamic_ok(r):
                s = self.limit(r, self.t_reduce(r, t, list(range(
                    len(t.shape)))), 8.0)
                self.extract(r, s)
        result = self.result_of(r, 0)
        for term in self.terms:
            term = self.limit(r, term, 4.0)
            result = self.bin(r, "arith.addf", result, term,
                              result.bound + term.bound)
        self.ret(r, [result])
        r.lines[:0] = self.sized_entry()
        self.write_function("@$Pf", args,
                            ["tensor<$T>" if self.rank0 else "$T"] + extra, r)
        return args, shapes, fixed


# ---------------------------------------------------------------------------
# Programs and their points
# ---------------------------------------------------------------------------

@dataclass
class Program:
    """One generated program: its functions (placeholders unrendered), the
    signature of @f, how its gradient is asked for, and its points (per
    argument: a float, an int, or a tensor's elements in row-major
    order)."""
    seed: int
    number: int
    elem: str
    functions: list
    args: list            # [(name, type)] of @f ('$T', 'index', tensors)
    shapes: dict          # tensor argument name -> Value (its shape)
    rank0: bool
    extra: list           # types of @f's results after the first
    cotangents: list      # the cotangent of each float result (forward)
    mode: str             # grad | value_and_grad | forward
    wrt: list             # positions of the differentiated arguments
    twice: bool           # forward mode: apply the pullback twice
    points: list          # [[value per argument]]
    avoid: frozenset      # the --avoid flags it was generated with
    features: set = field(default_factory=set)

    @property
    def float_positions(self):
        return [i for i, (_, t) in enumerate(self.args) if t != "index"]

    def arg_type(self, i, elem):
        return self.args[i][1].replace("$T", elem)

    def text(self, elem, prefix):
        """The program's functions with the placeholders filled in: `elem`
        for $T (f64 for the reference twin), prefix for @$P."""
        text = "\n\n".join(self.functions)
        text = text.replace("@$P", "@" + prefix).replace("$W", "f64")
        text = text.replace("$T", elem)
        # In the f64 twin of an f32 program, f64 -> f64 conversions are
        # identities.
        return re.sub(r"arith\.(?:extf|truncf) (%\w+) : (\S+) to \2$",
                      r"arith.maximumf \1, \1 : \2", text, flags=re.M)


def generate(seed, number, avoid):
    """Program `number` of `seed`: the same whatever else is generated."""
    shape = random.Random(f"{seed}:{number}:shape")
    chain, nest = shape.random() < CHAIN_RATE, shape.random() < NEST_RATE
    rng = random.Random(f"{seed}:{number}")
    elem = rng.choice(["f64", "f64", "f32"])
    g = Generator(rng, elem, avoid)
    g.tensor_rate = rng.choice([0, 1])
    per_point = {}
    if nest:
        # How deep each point goes at least (the value of %key there):
        # to the innermost level, somewhere, early, anywhere.
        g.stops = [6, rng.randint(2, 5), rng.randint(0, 2), rng.randint(0, 6)]
        per_point["%key"] = g.stops
    if chain:
        g.chain = g.make_chain()
        g.callees.append(g.chain[0])
    for k in range(rng.choice([0, 1, 1, 2, 3])):
        g.callees.append(g.helper(k))
    floats, indices = rng.randint(1, 3), rng.choice([0, 1, 1, 2])
    tensors = rng.choice([0, 0, 1, 2]) if g.tensor_rate else 0
    mode = rng.choice(["grad", "grad", "value_and_grad", "forward"])
    extra = []
    if mode == "forward":
        extra = rng.choice([[], [], ["$T"], ["i32"], ["$T", "i32"],
                            ["$T", "$T"]])
    args, shapes, fixed = g.top(floats, indices, tensors, extra)
    positions = [i for i, (_, t) in enumerate(args) if t != "index"]
    wrt = positions
    if len(positions) > 1 and rng.random() < 0.25:
        wrt = sorted(rng.sample(positions, rng.randint(1, len(positions) - 1)))
    cotangents = [1.0]
    if mode == "forward":
        cotangents = [2.0] + [rng.choice([0.5, -1.0, 0.0]) for t in extra
                              if t == "$T"]
    points = [[per_point[name][j] if name in per_point else
               argument_value(rng, name, t, shapes, fixed, elem)
               for name, t in args] for j in range(4 if nest else 2)]
    features = set(g.features) | {mode, elem}
    if wrt != positions:
        features.add("wrt")
    return Program(seed, number, elem, g.functions, args, shapes, g.rank0,
                   extra, cotangents, mode, wrt,
                   mode == "forward" and rng.random() < 0.5, points,
                   frozenset(avoid), features)


def argument_value(rng, name, t, shapes, fixed, elem):
    """A random value of one argument of @f at a point."""
    if name in fixed:
        return fixed[name]
    if t == "index":
        return rng.randint(0, 4)
    if name in shapes:
        return [representable(rng.uniform(-1.5, 1.5), elem)
                for _ in range(math.prod(shapes[name].shape))]
    return representable(rng.uniform(-1.8, 1.8), elem)


def representable(x, elem):
    """x rounded to elem (f32 or f64), as a Python float."""
    if elem == "f32":
        return struct.unpack("f", struct.pack("f", x))[0]
    return x


# ---------------------------------------------------------------------------
# Modules: the AD module (gradients) and the reference module (primal only)
# ---------------------------------------------------------------------------

def print_bits(lines, tag, value, elem):
    """Lines printing `tag <bits>` for a scalar of type elem."""
    wide = value
    if elem != "f64":
        wide = value + "_w"
        lines.append(f"  {wide} = arith.extf {value} : {elem} to f64")
    lines += [f"  {value}_b = arith.bitcast {wide} : f64 to i64",
              f'  vector.print str "{tag} "',
              f"  vector.print {value}_b : i64"]


def print_gradient(lines, tag, value, p, i):
    """Prints the gradient of argument i (each element of a tensor, tagged
    <tag>.<element>)."""
    name = p.args[i][0]
    if name not in p.shapes:
        print_bits(lines, tag, value, p.elem)
        return
    for position in positions(p.shapes[name].shape):
        element = f"{value}_{'_'.join(map(str, position))}"
        index = ", ".join(f"%c{x}" for x in position)
        lines.append(f"  {element} = tensor.extract {value}[{index}] : "
                     f"{p.arg_type(i, p.elem)}")
        print_bits(lines, f"{tag}.{'.'.join(map(str, position))}", element,
                   p.elem)


def print_result(lines, tag, value, rank0, elem):
    """Prints a result of @f (a scalar or a rank-0 tensor)."""
    if rank0:
        lines.append(f"  {value}_e = tensor.extract {value}[] : "
                     f"tensor<{elem}>")
        value += "_e"
    print_bits(lines, tag, value, elem)


def result_names(prefix, p):
    """SSA names of @f's results: the first, then the extra ones."""
    return [prefix] + [f"{prefix}{k + 1}" for k in range(len(p.extra))]


def print_results(lines, tag, names, p, elem):
    """Prints @f's float results (the first may be a rank-0 tensor)."""
    print_result(lines, tag, names[0], p.rank0, elem)
    for k, (name, t) in enumerate(zip(names[1:], p.extra)):
        if t == "$T":
            print_bits(lines, f"{tag}{k + 1}", name, elem)


def result_types(p, elem):
    first = f"tensor<{elem}>" if p.rank0 else elem
    return [first] + [t.replace("$T", elem) for t in p.extra]


def ad_function(p, prefix):
    """@<prefix>run(args): prints the plain call, then the gradients (and
    primal, for value_and_grad and forward) of @f."""
    e = p.elem
    args = [(n, t.replace("$T", e)) for n, t in p.args]
    header = ", ".join(f"{n}: {t}" for n, t in args)
    names = ", ".join(n for n, _ in args)
    types = ", ".join(t for _, t in args)
    rtypes = result_types(p, e)
    rtype = ", ".join(rtypes)
    gtypes = ", ".join(args[i][1] for i in p.wrt)
    grads = [f"%g{i}" for i in p.wrt]
    wrt = ""
    if p.wrt != p.float_positions:
        wrt = f" {{wrt = array<i64: {', '.join(map(str, p.wrt))}>}}"
    f = f"@{prefix}f"
    largest = max([max(v.shape, default=1) for v in p.shapes.values()] + [1])
    lines = [f"func.func @{prefix}run({header}) {{"]
    lines += [f"  %c{k} = arith.constant {k} : index" for k in range(largest)]
    lines += [f"  {', '.join(result_names('%v', p))} = func.call {f}({names})"
              f" : ({types}) -> ({rtype})"]
    print_results(lines, "v", result_names("%v", p), p, e)
    if p.mode == "grad":
        lines.append(f"  {', '.join(grads)} = ad.grad {f}({names}){wrt} : "
                     f"({types}) -> ({gtypes})")
    elif p.mode == "value_and_grad":
        lines.append(f"  %y, {', '.join(grads)} = ad.value_and_grad "
                     f"{f}({names}){wrt} : ({types}) -> ({rtype}, {gtypes})")
        print_results(lines, "y", ["%y"], p, e)
    else:
        floats = [t for t in rtypes if t != "i32"]
        pb = f"!ad.pullback<({', '.join(floats)}) -> ({gtypes})>"
        lines.append(f"  {', '.join(result_names('%y', p))}, %pb = ad.forward "
                     f"{f}({names}){wrt} : ({types}) -> ({rtype}, {pb})")
        print_results(lines, "y", result_names("%y", p), p, e)
        dys = []
        for k, (c, t) in enumerate(zip(p.cotangents, floats)):
            lines.append(f"  %dy{k}s = arith.constant {flit(c)} : {e}")
            dys.append(f"%dy{k}s")
            if t != e:
                lines.append(f"  %dy{k} = tensor.from_elements %dy{k}s : {t}")
                dys[-1] = f"%dy{k}"
        lines.append(f"  {', '.join(grads)} = ad.pullback %pb("
                     f"{', '.join(dys)}) : {pb}")
        if p.twice:
            again = [f"%q{i}" for i in p.wrt]
            lines.append(f"  {', '.join(again)} = ad.pullback %pb("
                         f"{', '.join(dys)}) : {pb}")
            for i in p.wrt:
                print_gradient(lines, f"q{i}", f"%q{i}", p, i)
    for i in p.wrt:
        print_gradient(lines, f"g{i}", f"%g{i}", p, i)
    lines += ["  return", "}"]
    return "\n".join(lines)


def constants(lines, name, point, p, elem):
    """Constants for one call of a wrapper (a tensor argument is a dense
    constant, cast to its dynamic type); returns their names."""
    names = []
    for k, ((arg, t), x) in enumerate(zip(p.args, point)):
        c = f"%{name}_{k}"
        if t == "index":
            lines.append(f"  {c} = arith.constant {x} : index")
        elif arg in p.shapes:
            shape = p.shapes[arg].shape
            static = value_type(shape, (False,) * len(shape), elem)
            lines.append(f"  {c}s = arith.constant dense<{nested(x, shape)}>"
                         f" : {static}")
            lines.append(f"  {c} = tensor.cast {c}s : {static} to "
                         f"{t.replace('$T', elem)}")
        else:
            lines.append(f"  {c} = arith.constant {flit(x)} : {elem}")
        names.append(c)
    return names


def ad_module(programs):
    """The module computing every program's gradients at its points."""
    parts, main = [], ["func.func @main() {"]
    for p in programs:
        prefix = f"p{p.number}_"
        parts += [p.text(p.elem, prefix), ad_function(p, prefix)]
        types = ", ".join(t.replace("$T", p.elem) for _, t in p.args)
        for j, point in enumerate(p.points):
            names = constants(main, f"a{p.number}_{j}", point, p, p.elem)
            main += [f'  vector.print str "B {p.number} {j}\\n"',
                     f"  func.call @{prefix}run({', '.join(names)}) "
                     f"{{no_inline}} : ({types}) -> ()",
                     f'  vector.print str "E {p.number} {j}\\n"']
    main += ["  return", "}"]
    return "\n\n".join(parts + ["\n".join(main)]) + "\n"


def perturbations(p, j):
    """The evaluation points of the reference for point j: the point
    itself, then for each differentiated argument x + h v, x - h v,
    x + h/4 v, x - h/4 v, with h = STEP * max(1, |x|) and v = 1 for a
    scalar, a random direction for a tensor."""
    point = p.points[j]
    out = [list(point)]
    for i in p.wrt:
        x = point[i] if isinstance(point[i], list) else [point[i]]
        v = direction(p, j, i, len(x))
        h = STEP * max([1.0] + [abs(e) for e in x])
        for delta in (h, -h, h / 4, -h / 4):
            q = list(point)
            moved = [e + delta * d for e, d in zip(x, v)]
            q[i] = moved if isinstance(point[i], list) else moved[0]
            out.append(q)
    return out


def direction(p, j, i, size):
    """The direction of the finite differences for argument i at point j:
    1 for a scalar, entries in {+-0.5, +-1} for a tensor."""
    if size == 1 and p.args[i][0] not in p.shapes:
        return [1.0]
    rng = random.Random(f"{p.seed}:{p.number}:{j}:{i}")
    return [rng.choice([-1.0, -0.5, 0.5, 1.0]) for _ in range(size)]


def reference_module(programs):
    """The module evaluating each program's f64 twin at the points the
    finite differences need (no ad op: upstream lowering only). It prints
    the sum of @f's float results weighted by their cotangents."""
    parts, main = [], ["func.func @main() {"]
    for p in programs:
        prefix = f"p{p.number}_"
        parts += [p.text("f64", prefix), evaluation_function(p, prefix)]
        types = ", ".join(t.replace("$T", "f64") for _, t in p.args)
        for j in range(len(p.points)):
            for m, q in enumerate(perturbations(p, j)):
                cn = constants(main, f"r{p.number}_{j}_{m}", q, p, "f64")
                main += [f'  vector.print str "{p.number} {j} {m} "',
                         f"  func.call @{prefix}eval({', '.join(cn)}) "
                         f"{{no_inline}} : ({types}) -> ()"]
    main += ["  return", "}"]
    return "\n\n".join(parts + ["\n".join(main)]) + "\n"


def evaluation_function(p, prefix):
    """@<prefix>eval(args) of the reference: prints sum_k c_k f_k(args)."""
    args = [(n, t.replace("$T", "f64")) for n, t in p.args]
    header = ", ".join(f"{n}: {t}" for n, t in args)
    names = ", ".join(n for n, _ in args)
    types = ", ".join(t for _, t in args)
    results = result_names("%v", p)
    lines = [f"func.func @{prefix}eval({header}) {{",
             f"  {', '.join(results)} = func.call @{prefix}f({names}) : "
             f"({types}) -> ({', '.join(result_types(p, 'f64'))})"]
    first = results[0]
    if p.rank0:
        lines.append(f"  {first}e = tensor.extract {first}[] : tensor<f64>")
        first += "e"
    floats = [first] + [v for v, t in zip(results[1:], p.extra) if t == "$T"]
    total = None
    for k, (v, c) in enumerate(zip(floats, p.cotangents)):
        lines += [f"  %c{k} = arith.constant {flit(c)} : f64",
                  f"  %w{k} = arith.mulf %c{k}, {v} : f64"]
        if total is not None:
            lines.append(f"  %s{k} = arith.addf {total}, %w{k} : f64")
            total = f"%s{k}"
        else:
            total = f"%w{k}"
    print_bits(lines, "=", total, "f64")
    lines += ["  return", "}"]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

@dataclass
class Run:
    """The result of lowering a module with ad-opt and running it."""
    stage: str            # "ad-opt" or "runner" when it failed, else "ok"
    returncode: int
    stdout: str
    stderr: str


def run_module(text, ad_opt, workdir):
    """Lowers `text` with ad-opt --ad-lower-to-llvm and runs main."""
    lowered = lower(text, ad_opt, workdir)
    if lowered.returncode != 0:
        return Run("ad-opt", lowered.returncode, lowered.stdout,
                   lowered.stderr)
    ran = run_tool([os.path.join(LLVM_BIN, "mlir-runner"), "-e", "main",
                    "-entry-point-result=void",
                    "-shared-libs=" + RUNTIME_LIBS], lowered.stdout)
    return Run("ok" if ran.returncode == 0 else "runner", ran.returncode,
               ran.stdout, ran.stderr)


def lower(text, ad_opt, workdir):
    """ad-opt --ad-lower-to-llvm on `text` (a completed process)."""
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", dir=workdir,
                                     delete=False) as f:
        f.write(text)
    try:
        return run_tool([ad_opt, f.name, "--ad-lower-to-llvm"], None)
    finally:
        os.unlink(f.name)


def run_tool(command, stdin):
    """Runs a tool; a timeout is reported as return code -1000. Retries
    for a while if the tool is missing (build/ is being rebuilt)."""
    for attempt in range(60):
        if os.path.exists(command[0]):
            break
        time.sleep(5)
    try:
        return subprocess.run(command, input=stdin, capture_output=True,
                              text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(command, -1000, e.stdout or "",
                                           "timeout")


def classify_ad_opt(run):
    """The outcome of an ad-opt failure and its message."""
    message = first_error(run.stderr)
    if run.returncode == -1000:
        return TIMED_OUT, f"ad-opt took more than {TIMEOUT} s"
    if run.returncode < 0 or re.search(
            r"Assertion|Stack dump|PLEASE submit|Segmentation|LLVM ERROR",
            run.stderr):
        return CRASH, message
    if re.search(r"failed to verify|verification failed|does not dominate"
                 r"|operand #\d+ does not", run.stderr):
        return INVALID_IR, message
    return DIAGNOSTIC, message


def first_error(stderr):
    """The first error line of a tool's stderr (for the summary)."""
    for line in stderr.splitlines():
        if "error" in line.lower() or "Assertion" in line:
            return line.strip()[:300]
    return stderr.strip().splitlines()[0][:300] if stderr.strip() else ""


def bits_to_float(text):
    return struct.unpack("<d", struct.pack("<q", int(text)))[0]


def parse_ad_output(stdout):
    """{(program, point): {tag: value}}; points that began but did not end
    are absent. Also returns the (program, point) that began last without
    ending, if any."""
    results, current, values = {}, None, {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "B":
            current, values = (int(parts[1]), int(parts[2])), {}
        elif len(parts) == 3 and parts[0] == "E":
            results[current] = values
            current = None
        elif len(parts) == 2 and current is not None:
            values[parts[0]] = bits_to_float(parts[1])
    return results, current


def parse_reference_output(stdout):
    """{(program, point, evaluation): value}."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[3] == "=":
            out[(int(parts[0]), int(parts[1]), int(parts[2]))] = \
                bits_to_float(parts[4])
    return out


# ---------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------

@dataclass
class Outcome:
    """What happened to one program: its class, the points checked and
    skipped, and details for the report."""
    program: Program
    kind: str = OK
    checked: int = 0
    skipped: int = 0
    largest: float = 0.0  # largest |gradient - reference| / scale checked
    details: list = field(default_factory=list)

    def fail(self, kind, detail):
        """Records a failure; the worst one names the outcome."""
        if self.kind not in FAILURES or \
                FAILURES.index(kind) < FAILURES.index(self.kind):
            self.kind = kind
        self.details.append(detail)


def close(a, b, tol):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1.0)


def check(p, ad, ref):
    """Compares one program's AD output with its reference evaluations."""
    out = Outcome(p)
    for j in range(len(p.points)):
        values = ad.get((p.number, j))
        center = ref.get((p.number, j, 0))
        if values is None or center is None:
            out.fail(RUNNER_FAILURE, f"point {j}: no output")
            continue
        primal = [values[t] for t in float_tags("v", p)]
        v = weighted(primal, p.cotangents)
        if not math.isfinite(center) or not math.isfinite(v):
            out.skipped += len(p.wrt)
            continue
        if p.elem == "f64" and v != center:
            out.fail(WRONG_PRIMAL, f"point {j}: plain call {primal} in the "
                     f"AD module, {center!r} in the reference module")
        if p.elem == "f32" and \
                abs(v - center) > F32_DIVERGENCE * max(abs(center), 1.0):
            out.skipped += len(p.wrt)
            continue
        for tag, x in zip(float_tags("y", p), primal):
            if tag in values and not close(values[tag], x,
                                           PRIMAL_TOLERANCE[p.elem]):
                out.fail(WRONG_PRIMAL, f"point {j}: {p.mode} primal "
                         f"{values[tag]!r}, plain call {x!r}")
        for k, i in enumerate(p.wrt):
            check_argument(out, p, j, k, i, values, ref)
    if out.kind == OK and out.checked == 0:
        out.kind = SKIPPED
    return out


def check_argument(out, p, j, k, i, values, ref):
    """Checks the gradient of argument i (the k-th differentiated one) at
    point j: the directional derivative along the finite differences'
    step against them."""
    name = f"point {j} ({format_point(p, p.points[j])}) d{p.args[i][0]}"
    g = gradient_of(values, f"g{i}", p, i)
    if p.twice and gradient_of(values, f"q{i}", p, i) != \
            gradient_of(values, f"g{i}", p, i):
        out.fail(WRONG_GRADIENT, f"{name}: the pullback applied twice gives "
                 f"different gradients")
    fs = [ref.get((p.number, j, 1 + 4 * k + m)) for m in range(4)]
    if any(f is None or not math.isfinite(f) for f in fs):
        out.skipped += 1
        return
    if not all(math.isfinite(x) for x in g):
        out.fail(WRONG_GRADIENT, f"{name}: gradient {g} where the function "
                 f"is finite")
        return
    steps = perturbations(p, j)[1 + 4 * k:5 + 4 * k]
    x = flat(p.points[j][i])
    h = STEP * max([1.0] + [abs(e) for e in x])
    fd1 = (fs[0] - fs[1]) / (2 * h)
    fd2 = (fs[2] - fs[3]) / (h / 2)
    ad_derivative = sum(
        gi * float(Fraction(a) - Fraction(b))
        for gi, a, b in zip(g, flat(steps[2][i]), flat(steps[3][i]))) / (h / 2)
    verdict, error = compare_gradient(ad_derivative, fd1, fd2,
                                      TOLERANCE[p.elem])
    if verdict is None:
        out.skipped += 1
    elif verdict:
        what = "directional derivative" if p.args[i][0] in p.shapes else \
            "derivative"
        out.fail(WRONG_GRADIENT, f"{name}: {what} {verdict}")
    else:
        out.checked += 1
        out.largest = max(out.largest, error)


def float_tags(tag, p):
    """The tags under which @f's float results are printed."""
    return [tag] + [f"{tag}{k + 1}" for k, t in enumerate(p.extra)
                    if t == "$T"]


def weighted(values, weights):
    """sum_k w_k v_k, in the order (and rounding) of evaluation_function."""
    total = None
    for v, w in zip(values, weights):
        total = w * v if total is None else total + w * v
    return total


def flat(x):
    return x if isinstance(x, list) else [x]


def gradient_of(values, tag, p, i):
    """The gradient of argument i printed under `tag` (a tensor's elements
    in row-major order)."""
    name = p.args[i][0]
    if name not in p.shapes:
        return [values[tag]]
    return [values[f"{tag}.{'.'.join(map(str, q))}"]
            for q in positions(p.shapes[name].shape)]


def positions(shape):
    """The multi-indices of a shape in row-major order."""
    out = [()]
    for n in shape:
        out = [q + (k,) for q in out for k in range(n)]
    return out


def compare_gradient(derivative, fd1, fd2, tol):
    """(verdict, relative error): verdict None to skip (fd1 and fd2, at
    steps h and h/4, disagree), '' when the derivative from AD matches
    Richardson's extrapolation of the two, else what was expected."""
    scale = max(abs(fd2), FLOOR)
    if abs(fd1 - fd2) > SKIP_TOLERANCE * scale:
        return None, 0.0
    reference = fd2 + (fd2 - fd1) / 15
    error = abs(derivative - reference) / max(abs(reference), FLOOR)
    if error <= tol:
        return "", error
    return (f"expected {reference!r} (finite differences), got "
            f"{derivative!r}"), error


def format_point(p, point):
    return ", ".join(f"{n} = {x!r}" for (n, _), x in zip(p.args, point))


# ---------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------

class Runner:
    """Runs batches of programs, isolating failures."""

    def __init__(self, ad_opt, workdir):
        self.ad_opt = ad_opt
        self.workdir = workdir

    def batch(self, programs):
        """Outcomes of `programs`, one per program."""
        ref = run_module(reference_module(programs), self.ad_opt,
                         self.workdir)
        if ref.stage == "ok":
            return self.gradients(programs,
                                  parse_reference_output(ref.stdout))
        if len(programs) == 1:
            o = Outcome(programs[0])
            o.fail(REFERENCE_FAILURE,
                   f"{ref.stage}: {first_error(ref.stderr)}")
            return [o]
        return [o for p in programs for o in self.batch([p])]

    def gradients(self, programs, reference):
        """Runs the AD module of `programs` and checks it against the
        reference evaluations."""
        ad = run_module(ad_module(programs), self.ad_opt, self.workdir)
        if ad.stage == "ad-opt":
            return self.after_ad_opt_failure(programs, ad, reference)
        results, unfinished = parse_ad_output(ad.stdout)
        if ad.stage == "runner":
            return self.after_runner_failure(programs, ad, results,
                                             unfinished, reference)
        return [check(p, results, reference) for p in programs]

    def after_ad_opt_failure(self, programs, ad, reference):
        """Alone, the program failed; in a batch, each program is lowered
        alone and those that lower run again together."""
        if len(programs) == 1:
            o = Outcome(programs[0])
            o.fail(*classify_ad_opt(ad))
            return [o]
        outcomes, good = [], []
        for p in programs:
            alone = lower(ad_module([p]), self.ad_opt, self.workdir)
            if alone.returncode == 0:
                good.append(p)
            else:
                o = Outcome(p)
                o.fail(*classify_ad_opt(alone))
                outcomes.append(o)
        if len(good) == len(programs):
            return [o for p in programs
                    for o in self.gradients([p], reference)]
        return outcomes + (self.gradients(good, reference) if good else [])

    def after_runner_failure(self, programs, ad, results, unfinished,
                             reference):
        """Programs that finished are checked. Alone, a program that did
        not finish failed; in a batch, the one running when the runner died
        runs again alone, and so do the others (as a batch when the culprit
        is known, one by one when it is not)."""
        if len(programs) == 1:
            o = Outcome(programs[0])
            if ad.returncode == -1000:
                o.fail(TIMED_OUT, f"mlir-runner took more than {TIMEOUT} s")
            else:
                o.fail(RUNNER_FAILURE, f"exit {ad.returncode}: "
                       f"{first_error(ad.stderr)}")
            return [o]
        outcomes, rest = [], []
        for p in programs:
            if all((p.number, j) in results for j in range(len(p.points))):
                outcomes.append(check(p, results, reference))
            elif unfinished and p.number == unfinished[0]:
                outcomes += self.gradients([p], reference)
            else:
                rest.append(p)
        if rest and unfinished:
            outcomes += self.gradients(rest, reference)
        else:
            outcomes += [o for p in rest
                         for o in self.gradients([p], reference)]
        return outcomes


# ---------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------

def keep(outcome, directory):
    """Writes a failing program, with what went wrong, to `directory`."""
    p = outcome.program
    name = f"seed{p.seed}-{p.number}-{outcome.kind.split()[-1].lower()}.mlir"
    flags = "".join(f" --avoid {a}" for a in sorted(p.avoid))
    header = [f"// Program {p.number} ({p.elem}, {p.mode}) of seed {p.seed}: "
              f"{outcome.kind}",
              f"// Again: utils/fuzz_gradients.py --seed {p.seed} --print "
              f"{p.number}{flags}",
              "// features: " + ", ".join(sorted(p.features))]
    header += ["// " + line for d in outcome.details
               for line in d.splitlines()]
    header += ["// points: " + "; ".join(format_point(p, pt)
                                         for pt in p.points),
               "// RUN: ad-opt %s --ad-lower-to-llvm | %run", ""]
    with open(os.path.join(directory, name), "w") as f:
        f.write("\n".join(header) + ad_module([p]))


def summarize(outcomes, elapsed):
    """The summary text; returns (text, number of failures)."""
    counts = {}
    for o in outcomes:
        counts[o.kind] = counts.get(o.kind, 0) + 1
    checked = sum(o.checked for o in outcomes)
    skipped = sum(o.skipped for o in outcomes)
    failures = sum(counts.get(k, 0) for k in FAILURES)
    largest = {e: max([(o.largest, o.program.number) for o in outcomes
                       if o.program.elem == e], default=(0.0, None))
               for e in TOLERANCE}
    lines = [f"programs: {len(outcomes)} in {elapsed:.0f} s",
             f"points checked: {checked} (gradients compared), skipped: "
             f"{skipped}",
             "largest relative error accepted: " + ", ".join(
                 f"{e} {largest[e][0]:.1e} (program {largest[e][1]}, "
                 f"tolerance {TOLERANCE[e]:g})" for e in TOLERANCE),
             f"ok: {counts.get(OK, 0)}, all points skipped: "
             f"{counts.get(SKIPPED, 0)}"]
    for kind in FAILURES:
        if counts.get(kind):
            lines.append(f"{kind}: {counts[kind]}")
    for o in outcomes:
        if o.kind in FAILURES:
            lines.append(f"  program {o.program.number} ({o.program.elem}, "
                         f"{o.program.mode}): {o.kind}: {o.details[0]}")
    return "\n".join(lines), failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--first", type=int, default=0,
                        help="number of the first program")
    parser.add_argument("--batch", type=int, default=20,
                        help="programs per module")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--keep-dir")
    parser.add_argument("--ad-opt", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "build", "bin", "ad-opt"), help="the ad-opt to test "
        "(default: build/bin/ad-opt of this checkout)")
    parser.add_argument("--avoid", action="append", default=[],
                        choices=sorted(KNOWN_BUGS),
                        help="do not generate constructs that trigger this "
                        "known bug")
    parser.add_argument("--print", type=int, metavar="N",
                        help="print program N's AD module and exit")
    args = parser.parse_args()
    avoid = set(args.avoid)
    if args.print is not None:
        sys.stdout.write(ad_module([generate(args.seed, args.print, avoid)]))
        return 0
    start = time.time()
    ad_opt = os.path.abspath(shutil.which(args.ad_opt) or args.ad_opt)
    numbers = range(args.first, args.first + args.count)
    programs = [generate(args.seed, n, avoid) for n in numbers]
    batches = [programs[k:k + args.batch]
               for k in range(0, len(programs), args.batch)]
    with tempfile.TemporaryDirectory() as workdir:
        runner = Runner(ad_opt, workdir)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            outcomes = [o for result in pool.map(runner.batch, batches)
                        for o in result]
    outcomes.sort(key=lambda o: o.program.number)
    if args.keep_dir:
        os.makedirs(args.keep_dir, exist_ok=True)
        for o in outcomes:
            if o.kind in FAILURES:
                keep(o, args.keep_dir)
    text, failures = summarize(outcomes, time.time() - start)
    print(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
