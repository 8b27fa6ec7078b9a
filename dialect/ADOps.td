//===- ADOps.td - ops of the ad dialect -------------------*- tablegen -*-===//
//
// The user-facing derivative requests (`ad.grad`, `ad.value_and_grad`,
// `ad.forward`, `ad.pullback`) and the closure constructor the
// differentiation pass produces (`ad.make_pullback`).
//
//===----------------------------------------------------------------------===//

#ifndef AD_OPS_TD
#define AD_OPS_TD

include "ADDialect.td"
include "ADTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

class AD_Op<string mnemonic, list<Trait> traits = []>
    : Op<AD_Dialect, mnemonic, traits>;

// Shared by the three ops that name a callee and differentiate it.
class AD_DerivativeRequestOp<string mnemonic, list<Trait> traits = []>
    : AD_Op<mnemonic,
            traits # [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  code commonExtraClassDeclaration = [{
    /// The argument positions to differentiate with respect to: the `wrt`
    /// attribute when present, else every argument of differentiable type.
    ::llvm::SmallVector<int64_t> getWrtPositions();
  }];
  let extraClassDeclaration = commonExtraClassDeclaration;
}

def AD_GradOp : AD_DerivativeRequestOp<"grad"> {
  let summary = "Gradient of a scalar-valued function";
  let description = [{
    Calls `callee` on `operands` and returns the gradient of its single
    floating-point result with respect to each differentiable argument, in
    argument order. The callee must return exactly one value, a float scalar
    (`f16`, `bf16`, `f32`, `f64`) or a rank-0 tensor of one. Differentiable
    arguments are float scalars and ranked tensors of floats; integer and
    index arguments get no gradient. Each gradient has its argument's type.

    ```mlir
    %gx, %gw = ad.grad @f(%x, %w, %n) : (f64, tensor<4xf64>, index) -> (f64, tensor<4xf64>)
    %gw2 = ad.grad @f(%x, %w, %n) {wrt = array<i64: 1>}
        : (f64, tensor<4xf64>, index) -> tensor<4xf64>
    ```

    `wrt` lists the argument positions to differentiate, strictly increasing;
    every listed argument must be differentiable. It is equivalent to
    `ad.forward` followed by `ad.pullback` with a cotangent of one.
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$operands,
                       OptionalAttr<DenseI64ArrayAttr>:$wrt);
  let results = (outs Variadic<AnyType>:$gradients);
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict `:` functional-type($operands, results)
  }];
}

def AD_ValueAndGradOp : AD_DerivativeRequestOp<"value_and_grad"> {
  let summary = "Value and gradient of a scalar-valued function";
  let description = [{
    Like `ad.grad`, but returns the callee's result first, then the gradients.
    The callee runs once.

    ```mlir
    %y, %gx, %gw = ad.value_and_grad @f(%x, %w, %n)
        : (f64, tensor<4xf64>, index) -> (f64, f64, tensor<4xf64>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$operands,
                       OptionalAttr<DenseI64ArrayAttr>:$wrt);
  let results = (outs AnyType:$value, Variadic<AnyType>:$gradients);
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict `:` functional-type($operands, results)
  }];
}

def AD_ForwardOp : AD_DerivativeRequestOp<"forward"> {
  let summary = "Run a function and return its pullback closure";
  let description = [{
    Calls `callee` on `operands` and returns all of its results followed by a
    pullback closure. The closure type is
    `!ad.pullback<(C...) -> (G...)>` where `C` are the types of the callee's
    floating-point results (scalars and tensors of floats, in result order;
    integer results take no cotangent) and `G` the types of the
    differentiated arguments (all differentiable ones, or those in `wrt`).

    ```mlir
    %y, %pb = ad.forward @f(%x, %w, %n)
        : (f64, tensor<4xf64>, index) -> (f64, !ad.pullback<(f64) -> (f64, tensor<4xf64>)>)
    ```

    The callee's forward computation runs exactly once; the values its adjoint
    needs are kept by the closure until it is dead.
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$operands,
                       OptionalAttr<DenseI64ArrayAttr>:$wrt);
  let results = (outs Variadic<AnyType>:$results, AD_PullbackType:$pullback);
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict `:` functional-type($operands, results)
  }];
}

def AD_PullbackOp : AD_Op<"pullback", [
    RangedTypesMatchWith<"cotangent types match the pullback signature",
        "pullback", "cotangents",
        "::llvm::cast<::mlir::ad::PullbackType>($_self).getCotangentTypes()">,
    RangedTypesMatchWith<"gradient types match the pullback signature",
        "pullback", "gradients",
        "::llvm::cast<::mlir::ad::PullbackType>($_self).getGradientTypes()">]> {
  let summary = "Apply a pullback closure to cotangents";
  let description = [{
    Applies a closure produced by `ad.forward` to one cotangent per
    floating-point result of the differentiated call and returns one gradient
    per differentiated argument. Cotangent and gradient types come from the
    closure type.

    ```mlir
    %gx, %gw = ad.pullback %pb(%dy) : !ad.pullback<(f64) -> (f64, tensor<4xf64>)>
    ```

    Gradients are linear in the cotangents: applying a closure to `2 * dy`
    doubles every gradient. Applying a closure twice gives the same result.
  }];
  let arguments = (ins AD_PullbackType:$pullback, Variadic<AnyType>:$cotangents);
  let results = (outs Variadic<AnyType>:$gradients);
  let assemblyFormat = [{
    $pullback `(` $cotangents `)` attr-dict `:` qualified(type($pullback))
  }];
}

def AD_JvpOp : AD_DerivativeRequestOp<"jvp", [AttrSizedOperandSegments]> {
  let summary = "Forward mode: a function's results and their tangents";
  let description = [{
    Calls `callee` on `operands` and returns its results followed by their
    directional derivatives (Jacobian-vector product) along `tangents`.

    There is one tangent operand per differentiated argument (every float
    scalar and ranked tensor of floats, or the positions in `wrt`), of that
    argument's type, in argument order; integer and index arguments take
    none. The results are all of the callee's results, then one tangent per
    float result (float scalars and tensors of floats, in result order;
    integer results get none). The function type after the colon lists the
    callee's argument types only: the tangents' types follow from them.

    ```mlir
    %y, %ty = ad.jvp @f(%x, %w, %n) tangents(%tx, %tw)
        : (f64, tensor<4xf64>, index) -> (f64, f64)
    %y, %ty = ad.jvp @f(%x, %w, %n) tangents(%tw) {wrt = array<i64: 1>}
        : (f64, tensor<4xf64>, index) -> (f64, f64)
    ```

    No tape is kept: the tangent code runs alongside the primal code, so the
    cost is a small multiple of one call.
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args,
                       Variadic<AnyType>:$tangents,
                       OptionalAttr<DenseI64ArrayAttr>:$wrt);
  let results = (outs Variadic<AnyType>:$results);
  let hasCustomAssemblyFormat = 1;
}

def AD_HvpOp : AD_DerivativeRequestOp<"hvp", [AttrSizedOperandSegments]> {
  let summary = "Hessian-vector product of a scalar-valued function";
  let description = [{
    For a callee with exactly one float result (as for `ad.grad`), returns
    `H v`: the derivative of the gradient along the tangent `v`, one result
    per differentiated argument, of the gradient's types. Tangent operands
    are as for `ad.jvp`.

    ```mlir
    %hx, %hw = ad.hvp @f(%x, %w, %n) tangents(%vx, %vw)
        : (f64, tensor<4xf64>, index) -> (f64, tensor<4xf64>)
    ```

    It is computed forward-over-reverse: `ad.jvp` of a function returning
    `ad.grad @f`, which is what a user writing that function gets too. The
    gradient's tapes (loops, while loops, recursion) are buffers, which
    forward mode follows with shadow buffers, so every function `ad.grad`
    differentiates has an `ad.hvp`.
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args,
                       Variadic<AnyType>:$tangents,
                       OptionalAttr<DenseI64ArrayAttr>:$wrt);
  let results = (outs Variadic<AnyType>:$products);
  let hasCustomAssemblyFormat = 1;
}

def AD_StopGradientOp : AD_Op<"stop_gradient", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Identity whose derivative is zero";
  let description = [{
    Returns its operand. Differentiation treats the result as a constant:
    no derivative flows through it in reverse or forward mode, and whatever
    only feeds a stopped value is not differentiated at all. The operand is
    a float scalar or a ranked tensor of floats.

    ```mlir
    // log(sum(exp(x - m))) + m with the shift m = max(x) gradient-free
    %m = ad.stop_gradient %max : f64
    ```

    `ad-lower-closures` (and so `ad-differentiate`) replaces it by its
    operand once the derivatives are generated.
  }];
  let arguments = (ins AnyType:$input);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def AD_CustomVjpOp : AD_Op<"custom_vjp", [HasParent<"ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A user-written reverse-mode rule for a function";
  let description = [{
    Declares that reverse mode differentiates every call of `function` (a
    `func.func` of the module, with or without a body) with the
    user-written pair `forward`/`pullback` instead of differentiating its
    body: in direct requests (`ad.grad`, `ad.value_and_grad`, `ad.forward`,
    `ad.vjp` from Python), in calls from differentiated functions, inside
    loops and recursion. The function's own body is not differentiated, so
    an external declaration (a libm or BLAS routine) becomes differentiable
    this way.

    With `function : (A...) -> (R...)`, whose float arguments are `Af...` and
    float results `Rf...` (float scalars and ranked tensors of floats):

    - `forward : (A...) -> (R..., S...)` computes the results and any number
      of residuals `S...` (float, integer or index scalars, or ranked
      tensors) for the pullback. It runs in place of the call; when the call
      is in a loop or a recursion, the residuals are taped like any value
      the adjoint reads.
    - `pullback : (S..., Rf...) -> (Af...)` takes the residuals and one
      cotangent per float result and returns one gradient per float
      argument (of every float argument, whatever the request
      differentiates; unneeded ones are dropped).

    ```mlir
    func.func private @cbrt(f64) -> f64   // libm
    func.func private @cbrt_fwd(%x: f64) -> (f64, f64) {
      %y = func.call @cbrt(%x) : (f64) -> f64
      return %y, %y : f64, f64             // the residual: y itself
    }
    func.func private @cbrt_pb(%y: f64, %dy: f64) -> f64 {
      %y2 = arith.mulf %y, %y : f64
      %three = arith.constant 3.0 : f64
      %d = arith.mulf %three, %y2 : f64
      %dx = arith.divf %dy, %d : f64       // d cbrt(x) = dx / (3 cbrt(x)^2)
      return %dx : f64
    }
    ad.custom_vjp @cbrt forward @cbrt_fwd pullback @cbrt_pb
    ```

    Under differentiation the results come from `forward` (a plain call
    still runs the body). The rule carries the derivative of the results
    only: a body that writes a value depending on its float arguments to
    memory its caller can read (a buffer argument, a global), or that
    turns an integer argument into a float's bits (`arith.bitcast`), is an
    error; a declaration is trusted to do neither.

    The verifier checks both signatures against the function's and says
    which type is wrong; a function has at most one `ad.custom_vjp`.
    Forward mode uses `ad.custom_jvp` when the function has one and
    otherwise differentiates the body; forward over reverse (`ad.hvp`)
    differentiates `forward` and `pullback` like any function. Requests
    on a declaration (`ad.grad @cbrt`) need its rule. A function with a
    rule is never inlined into the loops that call it.
    `ad-lower-closures` (and so `ad-differentiate`) erases the op.
  }];
  let arguments = (ins FlatSymbolRefAttr:$function,
                       FlatSymbolRefAttr:$forward,
                       FlatSymbolRefAttr:$pullback);
  let assemblyFormat =
      "$function `forward` $forward `pullback` $pullback attr-dict";
}

def AD_CustomJvpOp : AD_Op<"custom_jvp", [HasParent<"ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A user-written forward-mode rule for a function";
  let description = [{
    Declares that forward mode (`ad.jvp`, `ad.hvp` and `ad.jvp` of
    functions calling `function`) differentiates every call of `function`
    with the user-written `tangent` function instead of its body, which is
    not differentiated (it may be an external declaration).

    With `function : (A...) -> (R...)`, float arguments `Af...` and float
    results `Rf...`, `tangent : (A..., Af...) -> (R..., Rf...)` takes the
    arguments and one tangent per float argument and returns the results
    and one tangent per float result. Arguments a request does not
    differentiate get zero tangents.

    ```mlir
    func.func private @cbrt_tangent(%x: f64, %dx: f64) -> (f64, f64) {
      %y = func.call @cbrt(%x) : (f64) -> f64
      %y2 = arith.mulf %y, %y : f64
      %three = arith.constant 3.0 : f64
      %d = arith.mulf %three, %y2 : f64
      %dy = arith.divf %dx, %d : f64
      return %y, %dy : f64, f64
    }
    ad.custom_jvp @cbrt tangent @cbrt_tangent
    ```

    Under forward mode the results come from `tangent`. As for
    `ad.custom_vjp`, writes to memory the caller reads and float bits
    through integer arguments are errors in a body; `ad.jvp` of a
    declaration needs its rule. A function with only an `ad.custom_jvp`
    called in a loop that reverse mode differentiates is inlined there
    (reverse mode needs that), and forward mode then differentiates its
    body at that call.

    The verifier checks the signature against the function's; a function
    has at most one `ad.custom_jvp`. `ad-lower-closures` erases the op.
  }];
  let arguments = (ins FlatSymbolRefAttr:$function,
                       FlatSymbolRefAttr:$tangent);
  let assemblyFormat = "$function `tangent` $tangent attr-dict";
}

def AD_MakePullbackOp : AD_Op<"make_pullback", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Build a pullback closure from a pullback function and its tape";
  let description = [{
    Produced by `ad-generate-derivatives` from `ad.forward`; users do not
    normally write it. The closure captures `captures` (the tape of one
    forward run). Applying it with `ad.pullback` calls `callee` with the
    captures followed by the cotangents, so the callee's type must be
    `(capture types..., cotangent types...) -> (gradient types...)`.

    ```mlir
    %pb = ad.make_pullback @f_ad_pb_0(%t0, %t1) : (f64, f64) -> !ad.pullback<(f64) -> f64>
    ```

    `ad-lower-closures` replaces every application with a `func.call` and
    removes the closure.
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$captures);
  let results = (outs AD_PullbackType:$closure);
  let assemblyFormat = [{
    $callee `(` $captures `)` attr-dict `:` functional-type($captures, $closure)
  }];
}

#endif // AD_OPS_TD
