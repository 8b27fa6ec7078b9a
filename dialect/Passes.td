//===- Passes.td - passes of MLIR-AD ----------------------*- tablegen -*-===//
//
// The differentiation transform, split into derivative generation and
// closure lowering. The `ad-differentiate` and `ad-lower-to-llvm` pipelines
// (lib/Transforms/Pipelines.cpp) bundle them with upstream passes.
//
//===----------------------------------------------------------------------===//

#ifndef AD_PASSES_TD
#define AD_PASSES_TD

include "mlir/Pass/PassBase.td"

def ADGenerateDerivativesPass
    : Pass<"ad-generate-derivatives", "::mlir::ModuleOp"> {
  let summary = "Generate forward and pullback functions for ad ops";
  let description = [{
    For every `(callee, wrt)` pair requested by `ad.grad`,
    `ad.value_and_grad` or `ad.forward` (and, transitively, by calls inside
    differentiated functions), emits two private functions next to the
    callee:

    - `@<callee>_ad_fwd_<wrt>`: the callee's arguments to its results followed
      by the tape, the values its adjoint reads;
    - `@<callee>_ad_pb_<wrt>`: the tape followed by one cotangent per float
      result to one gradient per differentiated argument.

    Each `ad.forward` becomes a call of the forward function and an
    `ad.make_pullback` capturing the tape; `ad.grad` and `ad.value_and_grad`
    become the same plus an `ad.pullback` seeded with one.

    ```mlir
    func.func @f(%x: f64) -> f64 {
      %y = math.sin %x : f64
      return %y : f64
    }
    %g = ad.grad @f(%x) : (f64) -> f64
    // becomes
    %y, %t = func.call @f_ad_fwd_0(%x) : (f64) -> (f64, f64)
    %pb = ad.make_pullback @f_ad_pb_0(%t) : (f64) -> !ad.pullback<(f64) -> f64>
    %one = arith.constant 1.0 : f64
    %g = ad.pullback %pb(%one) : !ad.pullback<(f64) -> f64>
    ```

    Only active values (those depending on a differentiated argument and
    reaching a float result) are differentiated. An active op without a
    `ReverseRuleOpInterface` model is an error at that op.

    Forward mode: for each `(callee, wrt)` requested by `ad.jvp` it emits
    `@<callee>_ad_jvp_<wrt>`, taking the callee's arguments followed by the
    tangents of the `wrt` arguments and returning the callee's results
    followed by one tangent per float result, computed alongside the primal
    by the `TangentRuleOpInterface` rules (no tape); `ad.jvp` becomes a call
    of it. `ad.hvp @f` becomes the jvp of a generated
    `@<f>_ad_gradient_<wrt>` whose body is `ad.grad @f` (forward over
    reverse). Derivative requests inside a function being differentiated
    are rewritten first, innermost first, and their closures lowered, so
    the outer derivative differentiates ordinary calls.

    The user's functions are never modified. The functions that get
    differentiated (the callees of the requests and every function they
    reach through calls) are copied, and the copies are brought into the
    form the rules are written for with semantics-preserving rewrites:
    unstructured control flow is lifted to `scf` (as `lift-cf-to-scf`
    does), named linalg ops become `linalg.generic` (as
    `linalg-generalize-named-ops` does), chains of `tensor.cast` are folded,
    a parallel generic that reads its outputs gets the inits as inputs, and
    a `linalg.generic` or `tensor.generate` whose body reads a tensor from
    outside (a gather), holds region ops (`scf.if`, `scf.for`) or calls, or
    that reduces with anything but a sum, max or min (a product) becomes the
    `scf.for` nest it denotes; calls made inside loops to non-recursive
    functions that run loops are inlined (their tapes would be buffers,
    which a loop cannot store per iteration). The derivative functions are
    generated from the copies, which are then discarded: calls the
    generated code makes name the user's functions, which are equivalent.
    A request that a generated function inherits (an inactive `ad.grad`
    inside a differentiated function) is rewritten too.
    Values that depend on a differentiated argument must not be written to
    memory: an op that may do so (a write, an op that declares no memory
    effects, a call of a function without a body, in nested regions and
    called functions too) is an error at that op.

    A tree recursion (a function that calls itself, directly or through
    others, from inside a loop: expansion by minors, a search over
    children) keeps a tape row per invocation, and a tree of a billion
    invocations needs gigabytes. Reverse mode from outside such a recursion
    therefore runs its first `checkpoint-levels` levels of invocations as
    copies of its functions (`@<f>_ad_level<i>`), whose calls to the next
    level are checkpointed: the forward sweep runs them as they are (the
    primal), keeping only their operands, and the pullback runs each again
    through its forward function just before its pullback. Only one
    subtree below the copied levels is ever taped, so the tape shrinks by
    the product of those levels' trip counts (GradBench's `det` at 11 x 11:
    from 5 GB to 5 MB, written again for each subtree while it is in the
    cache) for `checkpoint-levels` more runs of the primal (11 x 11: 18 s
    to 2 s). Recursions that might behave differently when run again (that
    touch memory, call functions without a body, or have a member with a
    user-written rule) and recursions entered from a loop or another
    recursion keep the whole tree's tape.
  }];
  let options = [
    Option<"checkpointLevels", "checkpoint-levels", "unsigned",
           /*default=*/"3",
           "Levels of a tree recursion recomputed in the pullback instead "
           "of taped (0: tape the whole tree)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::ub::UBDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
}

def ADLowerClosuresPass : Pass<"ad-lower-closures", "::mlir::ModuleOp"> {
  let summary = "Replace pullback closures by calls with captured values";
  let description = [{
    Rewrites every `ad.pullback %pb(%dy...)` whose closure comes from
    `ad.make_pullback @pb(%tape...)` into `func.call @pb(%tape..., %dy...)`
    and erases the closures, and replaces every `ad.stop_gradient` by its
    operand, leaving only upstream dialects. A closure that
    escapes its function (returned, passed to a call, carried by control
    flow) is reported as an error at the escaping use.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def ADSimplifyAdjointsPass : Pass<"ad-simplify-adjoints"> {
  let summary = "Exploit the structure of adjoint code (sparse cotangents, "
                "zero accumulators)";
  let description = [{
    `ad-generate-derivatives` applies these rewrites to every pullback it
    generates; this pass exposes them for adjoint code built by other means
    (for instance, pullbacks inlined into their callers).

    - A `linalg.generic` that writes each element of a zero tensor at most
      once (like the adjoint of a trace, which writes a diagonal) is fused
      into the generics that read that tensor, which then never exists.
      When a reader sums terms that vanish with the tensor (`out + dC * B`),
      reduction loops that would only read its zeros are eliminated: the
      adjoint of `trace(A B)` with respect to `A` becomes the O(n^2)
      transpose `B^T` instead of an O(n^3) product with a diagonal matrix.
    - A generic adding `out + t` into a zero tensor, writing each element
      exactly once, yields `t` into an uninitialized tensor (no zero fill).
    - A sum over loops that only some inputs read, whose term is linear in
      a value computed from those inputs alone (`-p`, `c * p`, `p / c`), sums
      that value over those loops first, when some other loop is read by
      neither: GMM's mean adjoint `sum_{n,j} -dQx[n,k,j] Q[k,j,i]` becomes
      `sum_j -Q[k,j,i] (sum_n dQx[n,k,j])`, O(n k d + k d^2) instead of
      O(n k d^2). The partial sum has the layout of the input it sums
      (`s[k,j]` for `dQx[n,k,j]`), its innermost loop contiguous there.
      The sum is rounded in another order.
    - Generic operands the body does not read are dropped (upstream's
      `deduplicateOperandsAndRemoveDeadResults`), so primal values the
      adjoint does not need are neither kept alive nor taped.

    Eliminated terms are products with a structural zero. Dropping them
    assumes the other factors are finite (`0 * inf` would be NaN), which is
    the right reading for derivatives but not for arbitrary code: this pass
    is meant for adjoint code.

    ```mlir
    // dC = zeros with ds on the diagonal; dA[i, k] = sum_j dC[i, j] B[k, j]
    %dc = linalg.generic {indexing_maps = [(i) -> (), (i) -> (i, i)], ...}
            ins(%ds : tensor<f64>) outs(%zeros : tensor<30x30xf64>)
    %da = linalg.generic {indexing_maps = [(j, i, k) -> (i, j),
                                           (j, i, k) -> (k, j),
                                           (j, i, k) -> (i, k)], ...}
            ins(%dc, %b : ...) outs(%zeros : ...)   // out + dc * b
    // becomes
    %da = linalg.generic {indexing_maps = [(i, k) -> (k, i), (i, k) -> (),
                                           (i, k) -> (i, k)],
                          iterator_types = ["parallel", "parallel"]}
            ins(%b, %ds : ...) outs(%empty : ...)   // ds * b
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ADInlinePass : Pass<"ad-inline", "::mlir::ModuleOp"> {
  let summary = "Inline calls with a cost that grows linearly with the module";
  let description = [{
    The inlining `ad-lower-to-llvm` runs after differentiation, in two
    steps:

    1. Every private function with a body, called from exactly one
       `func.call` and not part of a recursion, is moved into its caller
       (never cloned), outermost callers first. The forward and pullback
       functions of each `ad` op are such functions, so canonicalization
       afterwards sees the whole forward computation next to its use and
       drops the work nobody reads (the value behind an `ad.grad`), however
       long the chain of calls below it.
    2. Upstream's inliner, followed by canonicalization, then inlines every
       other call whose callee has at most `max-callee-ops` operations.

    Upstream's inliner alone inlines every call bottom-up: along a chain of
    N functions each callee has grown by everything below it, so the work
    and the output grow as N^2 (a chain of 1,000 differentiated calls took
    84 s to lower). Both steps here do work proportional to the module.
  }];
  let options = [
    Option<"maxCalleeOps", "max-callee-ops", "unsigned", /*default=*/"256",
           "Largest callee (in operations) step 2 inlines at a call">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def ADLegalizeLoopsPass : Pass<"ad-legalize-loops"> {
  let summary = "Work around upstream miscompiles of narrow scf.for loops";
  let description = [{
    Rewrites every `scf.for` whose induction variable is an integer
    narrower than 64 bits into the same loop over `i64`: the bounds and
    step are sign-extended (zero-extended for `scf.for unsigned`) and the
    body reads the induction variable truncated back to its type. Upstream
    `scf.for` canonicalization (LLVM 22) computes a constant trip count as
    `ub - lb` in the narrow type, where it overflows: a signed `i8` loop
    from -100 to 100 folds to zero iterations. `ad-lower-to-llvm` runs this
    pass before anything else.
    ```mlir
    %r = scf.for %i = %lb to %ub step %s iter_args(%a = %x) -> (f64) : i8 {...}
    // becomes
    %r = scf.for %j = %lb64 to %ub64 step %s64 iter_args(%a = %x) -> (f64) : i64 {
      %i = arith.trunci %j : i64 to i8
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def ADLegalizeForBufferizationPass : Pass<"ad-legalize-for-bufferization"> {
  let summary = "Work around gaps in the upstream lowering of tensor ops";
  let description = [{
    Rewrites a `tensor.expand_shape` with two or more dynamic sizes in one
    reassociation group into the equivalent `tensor.reshape` (its shape
    built from the `output_shape` operands). Upstream
    `expand-strided-metadata` (LLVM 22) crashes on the `memref.expand_shape`
    such an op bufferizes to (llvm/llvm-project#186830, fixed in LLVM 23).
    Rewrites an `scf.index_switch` with tensor results into a chain of
    `scf.if` (one per case, the default last): upstream one-shot
    bufferization (LLVM 22) lets a later op write into a buffer such a
    switch yields while it is still read (the same code with `scf.if` is
    bufferized correctly), which made gradients through an
    `scf.index_switch` wrong.
    Rewrites a strided `tensor.extract_slice` that drops unit dimensions
    into the slice that keeps them followed by a `tensor.collapse_shape`:
    `expand-strided-metadata` (LLVM 22) crashes on the rank-reducing
    strided subview it bufferizes to.
    Passes the tensor arguments of a recursion (its functions private and
    only called) that it only reads (elements, sizes, linalg inputs,
    passed on to the same kind of argument) as identity-layout memrefs,
    read in the body through a restrict `bufferization.to_tensor`, with a
    read-only `bufferization.to_buffer` at the calls from outside: one-shot
    bufferization (LLVM 22) cannot analyze a call within a recursion
    before its callee, assumes the callee writes every tensor operand, and
    copies each operand still read after the call at every call. A call
    that passes anything but the caller's own such argument passes a copy
    unless its other tensor operands, which the callee may write in place,
    are made from fresh buffers that are not the operand's.
    Copies (`bufferization.alloc_tensor ... copy`) each tensor a private
    function returns that may be a constant (through branches, loops that
    may not run and views): the pipeline's buffer deallocation passes the
    ownership of buffers out of private functions instead of cloning the
    ones they do not own, and one-shot bufferization takes a call's result
    to be a fresh buffer unless it may alias an operand, so a caller would
    write into the constant's read-only global.
    Run before bufferization.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ADLegalizeViewsPass : Pass<"ad-legalize-views"> {
  let summary = "Rewrite rank-reducing subviews upstream misreads";
  let description = [{
    A `memref.subview` that drops unit dimensions does not say which ones:
    upstream passes (`fold-memref-alias-ops`, `expand-strided-metadata`,
    LLVM 22) infer them from the strides, and with dynamic strides they may
    pick a dimension of size 1 for one the view keeps (a load of element i
    of a column read element i of the dimension after it: a wrong
    convolution gradient in a loop), or crash on a view with a stride
    other than one. Each rank-reducing subview that has a stride other
    than one, or whose inferred dropped dimensions do not match its sizes,
    becomes the subview keeping every dimension followed by a
    `memref.collapse_shape` that drops the unit ones (and a `memref.cast`
    to the original type when the layouts differ). Run after
    bufferization, before anything folds views.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ADHoistInvariantsPass : Pass<"ad-hoist-invariants"> {
  let summary = "Loop-invariant code motion that keeps faulting work guarded";
  let description = [{
    Upstream `loop-invariant-code-motion`, except for ops that may fault
    when their operands are not what the loop computes them from (run-time
    checks `cf.assert`, ops on tensors other than the size of an existing
    dimension, loops, ops with regions holding such ops): those leave a
    loop only when it runs whenever it is entered (an `scf.for` with
    constant bounds lb < ub, the condition region of an `scf.while`), or
    into an `scf.if (lb < ub)` the pass wraps around an `scf.for` whose
    trip count is not known (its inits as results otherwise), made only
    when something computing a tensor would leave (a dry run decides:
    checks, views and sizes alone are not worth a taped branch and copies).
    Checks leave with the ops they guard, in order. Upstream hoisted a slice of `n - 1` elements out of a loop of
    `n` iterations for n = 0 (a slice of -1 elements corrupted the heap),
    and moved checked ops above their checks.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def ADHoistBuffersPass : Pass<"ad-hoist-buffers"> {
  let summary = "Allocate a loop body's temporary buffers once per loop";
  let description = [{
    A `memref.alloc` in the body of an `scf.for` or `scf.while` whose sizes
    are defined outside the loop, and whose only deallocation is a
    `memref.dealloc` later in the same block, is moved before the loop and
    its dealloc after it: each iteration's buffer is freed before the next
    one is allocated, so the iterations can share one. Repeated out of
    every enclosing loop the sizes do not depend on. A dynamic size that
    may be negative is clamped at zero (the loop may run no iteration).
    Buffers a loop yields, or frees conditionally (what ownership-based
    deallocation makes of a loop-carried tensor), stay where they are.
    Bufferization allocates every tensor a loop body computes in every
    iteration: GradBench's LSTM gradient made a dozen malloc/free pairs per
    step for vectors of 14 elements. Peak memory may grow: buffers whose
    lifetimes did not overlap within an iteration are now all live during
    the loop. Run after buffer deallocation, on memrefs.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ADLegalizeForLLVMPass : Pass<"ad-legalize-for-llvm"> {
  let summary = "Work around gaps in the upstream arith-to-LLVM lowering";
  let description = [{
    Drops the `fastmath` flags of `arith.extf` and `arith.truncf`. Upstream
    `convert-arith-to-llvm` (LLVM 22) copies them onto `llvm.fpext` and
    `llvm.fptrunc` as a raw `#arith.fastmath` attribute, which makes the
    printed LLVM dialect unreadable for `mlir-runner`. The flags mean
    nothing for a conversion; `math-extend-to-supported-types` adds them
    when it computes f16/bf16 math in f32. Gives private functions with a
    body internal linkage (`llvm.linkage`, which `convert-func-to-llvm`
    honors; it ignores the symbol visibility), so that LLVM may drop their
    unused arguments and results and inline them. Run before
    `convert-arith-to-llvm` and `convert-func-to-llvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ADFuseElementwisePass : Pass<"ad-fuse-elementwise"> {
  let summary = "Fuse chains of elementwise linalg ops on tensors";
  let description = [{
    Computes an elementwise `linalg.generic` on tensors inside the generic
    that reads its result (upstream `linalg::fuseElementwiseOps`), so that
    a chain of elementwise ops, in the primal or in the adjoint, or an
    elementwise op feeding a reduction, is one loop nest and one pass over
    memory. Nothing expensive is computed twice: the consumer must read the
    producer through a permutation of all its loops (never a broadcast, so
    a contraction's operands stay loops of their own and the contraction
    stays the multiply-add `ad-vectorize` register-tiles), and producer and
    consumer must be in the same block (nothing moves into a loop). The
    producer's results that other ops read after the consumer become
    results of the fused op; if an op reads them before the consumer, the
    producer stays and the fused op computes it again, which is allowed
    only for at most 8 additions, multiplications, comparisons, selects or
    other arith ops without a float division (`isCheapBody`, shared with
    the reverse sweep's recomputation)
    of tensors the consumer reads anyway. Every element is computed by the
    same operations in the same order: results are bit-identical. Unlike
    upstream's `linalg-fuse-elementwise-ops`, a generic's `outs` that its
    body does not read are kept (replacing them by `tensor.empty` turns the
    in-place accumulations of adjoints into a new buffer and a copy).
    A `tensor.insert_slice` or linalg op writing into a `linalg.fill` that
    other ops read too, or that was made in another block (hoisted out of a
    loop), gets a fill of its own: bufferization then fills a fresh buffer
    instead of copying the filled one; a `tensor.empty` shared or hoisted
    the same way (LICM, CSE) is repeated at each use, so a loop yielding
    the result no longer copies it at every iteration. A generic that both
    reduces and writes an element per iteration (an adjoint's `d * t` and
    `sum(d)`) is split into an elementwise generic and a reduction, so the
    reduction keeps its partial sums in registers, when the reduction needs
    only cheap operations of the body (no math function, float division or
    division by a variable).
    An input that a `linalg.fill` produces is read as the fill's value
    (a zero tangent or an all-ones direction is not read in every
    iteration). An elementwise generic (identity maps, no `linalg.index`)
    reading a tensor padded along one dimension by a value from outside
    (a vector shifted by one, `c, y_0, ..., y_(n-2)`, or a one-dimensional
    slice inserted into a fill) runs as one generic per border, reading
    the padding value, and one over the rest, reading the tensor before
    padding, each writing its slice of the results: the padded tensor (a
    fill and a copy of the whole) is never made. The size of a padded
    tensor read only for its size is computed from the unpadded one's.
    Several tensors padded along the same dimension by constant amounts
    (a stencil `y[i-1] + y[i] + y[i+1]`, RK4's shifted stages) split the
    generic at all their borders at once; when the size is not static, the
    split runs under a run-time check that the dimension is at least as
    long as the largest low plus the largest high padding, with the
    original generic (and its pads) in the other branch. A
    one-dimensional `tensor.insert_slice` into a fill is read as a pad (its
    amounts constant when value bounds prove them so, `n - (n - 1)`). A
    generic's result that repeats another
    result or copies an input is replaced by it (when every loop its map
    does not read is known to run); an unused result whose
    initial value the body reads becomes an input.
    Unused operands and results of generics are dropped. Run before
    bufferization.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def ADVectorizePass : Pass<"ad-vectorize", "::mlir::func::FuncOp"> {
  let summary = "Tile and vectorize linalg ops on buffers for the CPU";
  let description = [{
    Tiles every linalg op on buffers (after bufferization) with upstream
    `scf::tileUsingSCF` and vectorizes the tiles with `linalg::vectorize`.
    A contraction with one m and one n dimension (matmul, the adjoints of
    matmul and matvec, batch_matmul) is tiled into output tiles of 2
    vectors (a static width whose remainder after such tiles would be more
    than a sixteenth of it: its largest divisor between half a vector and
    one, or one vector and a remainder; a scalar remainder, or a vector of
    one and a half registers, ran 10-20x slower) by 8 rows (512-bit vectors: 32 registers) or 6 rows (narrower
    vectors: 16 registers) with its reduction dimensions innermost and tile
    size 1, so each reduction step is one outer product and the output tile
    stays in registers across the reduction loop; the wide tile loop runs
    outside the narrow one, so the wide operand's strip stays in cache. A
    contraction with one reduction dimension larger than a cache block runs
    in blocks of 16 register tiles of rows by 256 reduction steps, row
    blocks outermost (each output element still adds its terms in order;
    a fill of its output (`linalg.fill`, or a generic writing one scalar
    to every element), an allocation nothing touches between
    the two, is done block by block inside the loop over row blocks, so
    the register tiles read the filled rows from cache: the whole output
    was written out and read back, GradBench's kmeans's 80 MB distance
    matrix), and the strip of its wide input one column of register tiles reads is
    copied to a buffer first (one per function and type, on the heap;
    contiguous: read in place at the stride of a power-of-two row length,
    its lines fell in one L1 set), when the copy serves 32 rows or more,
    the op's loops are not shared among threads and its output cannot be
    that input; a generic's wide input read across its rows (`dY W^T`, the
    adjoint of a product's input) has each strip (the last, partial one
    too) copied transposed there, instead of all of it into a transposed
    copy first, when the rows are one cache block (static, at most 16
    register tiles: each block of rows would transpose the strips again).
    The input of the narrow dimension, when it is read along the one
    reduction across its rows at a static stride that is a multiple of
    4 KB (`H^T dY` summed over a batch of 1024-column rows, the adjoint of
    a weight matrix: one line per step, all in one L1 set), is copied
    transposed first, the reduction innermost, when the copy serves four
    strips of the wide dimension or more and the reduction has 8 steps or
    more (at other strides the copy cost more than it saved). A
    convolution is tiled the same way: an input map's result may be a sum
    of loops (`oh + kh`, a window read), the wide loop is the output's
    innermost loop that no sum uses (output channels), the narrow one
    another output loop (its tile a divisor of the width between 4 and the
    register rows when there is one), and window loops of size 1 are dropped from the
    tile, and an output written through a sum (the image's adjoint) only
    when the body adds to it (the tile loops change the order of the
    terms); named convolutions (`conv_2d_nhwc_hwcf`, `conv_1d_nwc_wcf`, ...)
    are generalized first when they fit, and so are the adjoints of
    convolutions, which are generics of the same form (their wide
    dimension whole vectors, or a static power of two from 4 lanes, a
    narrower vector: 8 channels of f32 at 512 bits). An input
    read across the output's innermost dimension (A B^T) is first copied
    transposed (in 8 x 8 tiles transposed in registers). A generic with
    several outputs whose each output is a contraction of the inputs alone
    (forward mode over a product: `W T` and `W dT` in one loop nest) is
    planned as one contraction per output, and an output that adds two to
    four distinct terms (`dA B + A dB`, the tangent of a product of two
    active operands; not under `reassociate=false`) as one contraction per
    term, each adding to what the previous wrote; only when every part is
    then a contraction whose operands index every loop, and no output may
    overlap another output or an input a later part reads (no plan took
    these ops: they ran as scalar loops, or as elementwise tiles 1.8x
    slower than the parts). Every other op is
    tiled by one vector along its innermost loop (`linalg.map`,
    `linalg.reduce` and `linalg.broadcast` too: the casts canonicalization
    leaves on their peeled main tiles are folded into them when every
    operand is then static); a reduction keeps its
    partial results in registers across its loop (with `reassociate`, a
    vector of them reduced once after the loop). Tile loops whose trip
    count the tile may not divide are peeled: the main loops run whole
    tiles of static shape, vectorized without masks. The partial tile of a
    vector loop along a parallel innermost dimension runs as a tile of half
    the width, a quarter, ... two elements, each when that many are left
    (an `scf.if` per width, vectorized), and a last tile of at most one
    element; other partial tiles are left to `convert-linalg-to-loops`. A
    one-loop parallel op whose first output starts between two registers'
    addresses (a view from element 1: a stencil's stage, RK4's shifted
    products) first computes its elements up to the next register boundary
    apart (fewer than a register's lanes, in the same half-width tiles), so
    that its vector loop stores aligned vectors (an unaligned 512-bit store
    of f64 crosses a cache line); the split point is known at compile time
    for an aligned allocation viewed at a static offset, else computed from
    the address (`memref.extract_aligned_pointer_as_index`); loops of a
    static length under 4 vectors are not split. Elements whose width is not a power of
    two of at least 8 bits are never vectorized, nor tiles whose body reads
    `linalg.index` of several loops (upstream vectorizes those wrongly);
    the function is verified after vectorization. Upstream vectorization
    (LLVM 22) gets some reductions wrong, which stay scalar loops: a value
    that does not vary along the loop it is summed over (a count, `acc +
    1`: it was added once per vector), and outputs reduced over different
    loops (invalid IR); a generic's iterator types are first corrected
    (a loop indexing every output is parallel, the others reductions:
    only metadata, which upstream otherwise turns into invalid IR). A
    `memref.copy` from or to a strided view, between buffers known not to
    overlap, becomes a `linalg.copy` first and is vectorized like the rest
    (the LLVM lowering would call the runtime's `memrefCopy`, which copies
    one element at a time); a loop's iter_arg is known by the buffers it
    starts with and yields, which also lets reductions over it keep their
    accumulator in registers. Vector ops are then
    lowered to 1-D loads, stores and FMAs for `convert-vector-to-llvm`.
    Run after bufferization, before `convert-linalg-to-loops`.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"0",
           "Width of a vector register in bits (0: the host's: 512 with "
           "AVX-512, 256 with AVX2, 128 otherwise)">,
    Option<"contractions", "contractions", "bool", /*default=*/"true",
           "Tile and vectorize contractions">,
    Option<"elementwise", "elementwise", "bool", /*default=*/"true",
           "Tile and vectorize the other linalg ops (elementwise, "
           "reductions, broadcasts)">,
    Option<"reassociate", "reassociate", "bool", /*default=*/"true",
           "Reduce a vector of partial results once after a reduction loop "
           "instead of each vector in turn (float sums and products are "
           "then rounded in a different order)">,
    Option<"markParallel", "mark-parallel", "bool", /*default=*/"false",
           "Mark each op's outermost tile loop that runs over a parallel "
           "dimension with `ad.parallel`, for ad-parallelize, when its "
           "outputs cannot overlap each other or its inputs">,
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def ADParallelizePass : Pass<"ad-parallelize", "::mlir::func::FuncOp"> {
  let summary = "Run the tile loops ad-vectorize marked on OpenMP threads";
  let description = [{
    Rewrites each `scf.for` marked `ad.parallel` (by `ad-vectorize
    mark-parallel`: the outermost tile loop of a linalg op, over one of its
    parallel dimensions, whose iterations write disjoint tiles of the
    op's outputs and read nothing another iteration writes: outputs that
    cannot overlap each other or the inputs) into an OpenMP worksharing
    loop:
    `omp.parallel { omp.wsloop { omp.loop_nest ... } }`, statically
    scheduled. It runs when an estimate of the loop nest's iterations (the
    loop's trip count times the trip counts of the loops inside it whose
    bounds are known before it) reaches `min-work` and the loop has two
    iterations or more: decided at compile time for static sizes, else by
    an `scf.if` whose other branch is the loop as it was (a parallel region
    with a false `if` clause would still cost the runtime a serialized
    region, as much as a small op's work). A marked loop nested in another
    parallel region, one with results, and one whose body uses a stack
    buffer allocated outside it (which every thread would share) stay
    sequential. The number of threads is the OpenMP runtime's (all cores,
    or `OMP_NUM_THREADS`). The code then needs LLVM's OpenMP runtime
    (`libomp.so`) at run time; `convert-openmp-to-llvm` and the OpenMP
    translation to LLVM IR lower it.
    Run after `ad-vectorize` and `convert-linalg-to-loops`.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"4096",
           "Iterations of a loop nest below which it runs on one thread">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::omp::OpenMPDialect",
                           "::mlir::scf::SCFDialect"];
}

def ADVectorMathPass : Pass<"ad-vector-math", "::mlir::ModuleOp"> {
  let summary = "Compute math ops on vectors with glibc's libmvec";
  let description = [{
    Replaces each `math` op on a vector of f32 or f64 (exp, exp2, expm1,
    log, log2, log10, log1p, sin, cos, tan, sinh, cosh, tanh, asin, acos,
    atan, asinh, acosh, atanh, erf, erfc, cbrt, atan2, powf) by calls of
    the function of glibc's vector math library (libmvec, part of libc6)
    that computes it on one vector register at a time, for example
    `_ZGVeN8v_tanh` on 8 f64 with AVX-512. Without it the LLVM backend
    computes such an op with one scalar libm call per element. libmvec's
    documented maximum error is 4 ulp. The program then needs
    `libmvec.so.1` at run time (`-shared-libs=` of mlir-runner, `-lmvec`
    when linking); the mlir_ad runtime loads it.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"0",
           "Widest vector ABI to call in bits: 512 (AVX-512), 256 (AVX2), "
           "128 (SSE4); 0: the host's">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::vector::VectorDialect"];
}

def ADLegalizeMathPass : Pass<"ad-legalize-math"> {
  let summary = "Rewrite math ops the upstream LLVM lowering gets wrong";
  let description = [{
    Rewrites each `math.expm1` on floats (scalars or vectors; those
    `ad-vector-math` did not already turn into libmvec calls) into Kahan's
    formula `u = exp(x); u == 1 ? x : u - 1 == -1 ? -1 : u == inf ? inf :
    (u - 1) * x / log(u)`, accurate to a few ulp. Upstream
    `convert-math-to-llvm` (LLVM 22) computes `exp(x) - 1`, which loses all
    digits for |x| below 2^-53 (expm1(1e-20) = 0). Run before
    `convert-math-to-llvm`. (`math.log1p` is left to libm's `log1p` by
    `convert-math-to-llvm{approximate-log1p=false}`.) Also computes
    `math.fpowi` on vectors one element at a time: the LLVM intrinsic it
    lowers to takes one exponent for the whole vector.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // AD_PASSES_TD
