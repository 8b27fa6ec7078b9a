// RUN: ad-opt %s --split-input-file --ad-generate-derivatives | FileCheck %s
// RUN: ad-opt %s --split-input-file --ad-generate-derivatives="checkpoint-levels=0" | FileCheck %s --check-prefix=NONE
// RUN: ad-opt %s --split-input-file --ad-generate-derivatives="checkpoint-levels=1" | FileCheck %s --check-prefix=ONE

// A tree recursion (it calls itself from a loop), differentiated from
// outside: its first three levels are copies whose calls to the next level
// are checkpointed; the last copy's calls to the recursion itself are
// checkpointed too, so a tape holds at most one subtree below level 3.
// tree(x, n) = x for n = 0, else sum over j < n of sin(x * tree(x, n - 1)).

// The user's function is unchanged.
// CHECK-LABEL: func.func private @tree(
// CHECK: call @tree(
// CHECK-NOT: ad.checkpoint
// CHECK: return

// CHECK-LABEL: func.func private @tree_ad_level2(
// CHECK: scf.for
// CHECK: call @tree({{.*}}) {ad.checkpoint}
// CHECK: return

// Level 2's pullback runs the recursion's forward function (a fresh tape for
// the subtree) and then its pullback.
// CHECK-LABEL: func.func private @tree_ad_level2_ad_fwd_0(
// CHECK: scf.for
// CHECK: call @tree(
// CHECK-LABEL: func.func private @tree_ad_level2_ad_pb_0(
// CHECK: scf.for
// CHECK: %[[SUB:.*]]:4 = func.call @tree_ad_fwd_0(
// CHECK: func.call @tree_ad_pb_0(%[[SUB]]#1, %[[SUB]]#2, %[[SUB]]#3

// CHECK-LABEL: func.func private @tree_ad_level1(
// CHECK: scf.for
// CHECK: call @tree_ad_level2({{.*}}) {ad.checkpoint}

// CHECK-LABEL: func.func private @tree_ad_level0(
// CHECK: scf.for
// CHECK: call @tree_ad_level1({{.*}}) {ad.checkpoint}

// The forward function of level 0 runs level 1 as it is (the primal);
// its pullback runs level 1's forward function again and then level 1's
// pullback, on the fresh tape.
// CHECK-LABEL: func.func private @tree_ad_level0_ad_fwd_0(
// CHECK: scf.for
// CHECK: call @tree_ad_level1(
// CHECK-LABEL: func.func private @tree_ad_level0_ad_pb_0(
// CHECK: scf.for
// CHECK: %[[FWD:.*]]:{{[0-9]+}} = func.call @tree_ad_level1_ad_fwd_0(
// CHECK: func.call @tree_ad_level1_ad_pb_0(%[[FWD]]#1

// The caller's derivative enters the recursion at level 0.
// CHECK-LABEL: func.func private @f_ad_fwd_0(
// CHECK: call @tree_ad_level0_ad_fwd_0(
// CHECK-LABEL: func.func private @f_ad_pb_0(
// CHECK: call @tree_ad_level0_ad_pb_0(

// Without levels, the caller enters the recursion's own entry points.
// NONE-NOT: _ad_level
// NONE-LABEL: func.func private @f_ad_fwd_0(
// NONE: call @tree_ad_fwd_0(
// NONE-NOT: _ad_level

// One level: level 0 calls the recursion itself, checkpointed.
// ONE-NOT: _ad_level1
// ONE-LABEL: func.func private @tree_ad_level0(
// ONE: call @tree({{.*}}) {ad.checkpoint}
// ONE-NOT: _ad_level1
func.func private @tree(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %sub = func.call @tree(%x, %m) : (f64, index) -> f64
      %p = arith.mulf %x, %sub : f64
      %t = math.sin %p : f64
      %a = arith.addf %acc, %t : f64
      scf.yield %a : f64
    }
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @f(%x: f64, %n: index) -> f64 {
  %y = func.call @tree(%x, %n) : (f64, index) -> f64
  return %y : f64
}

func.func @grad_f(%x: f64, %n: index) -> f64 {
  %g = ad.grad @f(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// A binary recursion without a loop (fib-like): two calls per invocation
// halve nothing worth recomputing; no levels.
// CHECK-LABEL: func.func private @fib(
// CHECK-NOT: _ad_level
// CHECK-LABEL: func.func @grad_fib
func.func private @fib(%x: f64, %n: index) -> f64 {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %small = arith.cmpi ult, %n, %c2 : index
  %r = scf.if %small -> f64 {
    scf.yield %x : f64
  } else {
    %n1 = arith.subi %n, %c1 : index
    %n2 = arith.subi %n, %c2 : index
    %a = func.call @fib(%x, %n1) : (f64, index) -> f64
    %b = func.call @fib(%x, %n2) : (f64, index) -> f64
    %ax = arith.mulf %a, %x : f64
    %sb = math.sin %b : f64
    %s = arith.addf %ax, %sb : f64
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @grad_fib(%x: f64, %n: index) -> f64 {
  %g = ad.grad @fib(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// A tree recursion that counts its invocations in a buffer: running it
// again would count twice, so it is not recomputed.
// CHECK-LABEL: func.func private @counted(
// CHECK-NOT: _ad_level
// CHECK-LABEL: func.func @grad_counted
func.func private @counted(%x: f64, %n: index, %count: memref<index>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %old = memref.load %count[] : memref<index>
  %new = arith.addi %old, %c1 : index
  memref.store %new, %count[] : memref<index>
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %sub = func.call @counted(%x, %m, %count) : (f64, index, memref<index>) -> f64
      %p = arith.mulf %x, %sub : f64
      %a = arith.addf %acc, %p : f64
      scf.yield %a : f64
    }
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @grad_counted(%x: f64, %n: index, %count: memref<index>) -> f64 {
  %g = ad.grad @counted(%x, %n, %count) {wrt = array<i64: 0>}
      : (f64, index, memref<index>) -> f64
  return %g : f64
}

// -----

// A tree recursion entered from a loop: its tape is the loop's, shared by
// every call, and the recursion keeps it whole.
// CHECK-LABEL: func.func private @branchy(
// CHECK-NOT: _ad_level
// CHECK-LABEL: func.func @grad_looped
func.func private @branchy(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %sub = func.call @branchy(%x, %m) : (f64, index) -> f64
      %t = math.sin %sub : f64
      %a = arith.addf %acc, %t : f64
      scf.yield %a : f64
    }
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @looped(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
    %y = func.call @branchy(%x, %i) : (f64, index) -> f64
    %a = arith.addf %acc, %y : f64
    scf.yield %a : f64
  }
  return %s : f64
}

func.func @grad_looped(%x: f64, %n: index) -> f64 {
  %g = ad.grad @looped(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// The marker means nothing on a user's call: the callee's forward function
// runs in the forward sweep, as for any call.
// CHECK-LABEL: func.func private @square_ad_fwd_0(
// CHECK-LABEL: func.func @user_marked
// CHECK-LABEL: func.func private @user_marked_ad_fwd_0(
// CHECK: call @square_ad_fwd_0(
// CHECK-LABEL: func.func private @user_marked_ad_pb_0(
// CHECK-NOT: call @square_ad_fwd_0(
// CHECK: call @square_ad_pb_0(
// CHECK: return
func.func private @square(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}

func.func @user_marked(%x: f64) -> f64 {
  %y = func.call @square(%x) {ad.checkpoint} : (f64) -> f64
  %z = math.sin %y : f64
  return %z : f64
}

func.func @grad_user_marked(%x: f64) -> f64 {
  %g = ad.grad @user_marked(%x) : (f64) -> f64
  return %g : f64
}

// -----

// A tree recursion that calls a function without a body (libc's rand):
// running it again would draw other numbers, so it is not recomputed.
// CHECK-LABEL: func.func private @random_leaves(
// CHECK-NOT: _ad_level
// CHECK-LABEL: func.func @grad_random_leaves
func.func private @rand() -> i32
func.func private @random_leaves(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    %k = func.call @rand() : () -> i32
    %kf = arith.uitofp %k : i32 to f64
    %p = arith.mulf %kf, %x : f64
    scf.yield %p : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %sub = func.call @random_leaves(%x, %m) : (f64, index) -> f64
      %a = arith.addf %acc, %sub : f64
      scf.yield %a : f64
    }
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @grad_random_leaves(%x: f64, %n: index) -> f64 {
  %g = ad.grad @random_leaves(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// A tree recursion with a user's forward-mode rule: a copy would lose the
// rule, so there are no levels (reverse mode differentiates the body).
// CHECK-LABEL: func.func private @ruled(
// CHECK-NOT: _ad_level
// CHECK-LABEL: func.func @grad_ruled
func.func private @ruled(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %sub = func.call @ruled(%x, %m) : (f64, index) -> f64
      %p = arith.mulf %x, %sub : f64
      %t = math.sin %p : f64
      %a = arith.addf %acc, %t : f64
      scf.yield %a : f64
    }
    scf.yield %s : f64
  }
  return %r : f64
}

func.func private @ruled_tangent(%x: f64, %n: index, %tx: f64) -> (f64, f64) {
  %y = func.call @ruled(%x, %n) : (f64, index) -> f64
  return %y, %tx : f64, f64
}

ad.custom_jvp @ruled tangent @ruled_tangent

func.func @grad_ruled(%x: f64, %n: index) -> f64 {
  %g = ad.grad @ruled(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// A user's marker on a call inside the recursion is not copied into the
// levels: only the generator's calls to the next level are checkpointed.
// CHECK-LABEL: func.func private @marked_tree(
// CHECK: call @marked_tree(
// CHECK: call @sq({{.*}}) {ad.checkpoint}
// CHECK-LABEL: func.func private @marked_tree_ad_level2(
// CHECK: call @marked_tree({{.*}}) {ad.checkpoint}
// CHECK-NOT: ad.checkpoint
// CHECK: return
func.func private @sq(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}

func.func private @marked_tree(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    scf.yield %x : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %sub = func.call @marked_tree(%x, %m) : (f64, index) -> f64
      %p = arith.mulf %x, %sub : f64
      %t = func.call @sq(%p) {ad.checkpoint} : (f64) -> f64
      %a = arith.addf %acc, %t : f64
      scf.yield %a : f64
    }
    scf.yield %s : f64
  }
  return %r : f64
}

func.func @grad_marked_tree(%x: f64, %n: index) -> f64 {
  %g = ad.grad @marked_tree(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// A recursion of two functions, entered at @g: one set of levels, which
// alternates between the two (g, f, g), and whose last level calls @f.
// CHECK-LABEL: func.func private @f(
// CHECK-NOT: @f_ad_level0
// CHECK-NOT: @f_ad_level2
// CHECK-LABEL: func.func private @f_ad_level1(
// CHECK: call @g_ad_level2({{.*}}) {ad.checkpoint}
// CHECK-NOT: @f_ad_level0
// CHECK-NOT: @f_ad_level2
// CHECK-LABEL: func.func private @g(
// CHECK-NOT: @g_ad_level1
// CHECK-LABEL: func.func private @g_ad_level2(
// CHECK: call @f({{.*}}) {ad.checkpoint}
// CHECK-LABEL: func.func private @g_ad_level0(
// CHECK: call @f_ad_level1({{.*}}) {ad.checkpoint}
// CHECK-NOT: @g_ad_level1
// CHECK-NOT: @f_ad_level0
// CHECK-LABEL: func.func @grad_top
func.func private @f(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    %c = math.cos %x : f64
    scf.yield %c : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %sub = func.call @g(%x, %m) : (f64, index) -> f64
      %a = arith.addf %acc, %sub : f64
      scf.yield %a : f64
    }
    %p = arith.mulf %x, %s : f64
    scf.yield %p : f64
  }
  return %r : f64
}

func.func private @g(%x: f64, %n: index) -> f64 {
  %v = func.call @f(%x, %n) : (f64, index) -> f64
  %s = math.sin %v : f64
  return %s : f64
}

func.func @top(%x: f64, %n: index) -> f64 {
  %y = func.call @g(%x, %n) : (f64, index) -> f64
  return %y : f64
}

func.func @grad_top(%x: f64, %n: index) -> f64 {
  %g = ad.grad @top(%x, %n) : (f64, index) -> f64
  return %g : f64
}

// -----

// A member of a recursion with a user-written reverse rule whose function
// calls back into the recursion: the memory-write check of the rule's
// function followed the recursion for ever (a crash). The rule is used,
// and the recursion keeps its whole tape (no levels).
// CHECK-LABEL: func.func private @outer(
// CHECK-NOT: _ad_level
// CHECK-LABEL: func.func private @outer_ad_fwd_0(
// CHECK: call @outer_ad_fwdrec_0(
// CHECK-LABEL: func.func private @outer_ad_fwdrec_0(
// CHECK: call @inner_fwd(
// CHECK-LABEL: func.func @grad_ruled_member
func.func private @outer(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %leaf = arith.cmpi eq, %n, %c0 : index
  %r = scf.if %leaf -> f64 {
    %c = math.cos %x : f64
    scf.yield %c : f64
  } else {
    %m = arith.subi %n, %c1 : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> f64 {
      %sub = func.call @inner(%x, %m) : (f64, index) -> f64
      %a = arith.addf %acc, %sub : f64
      scf.yield %a : f64
    }
    %p = arith.mulf %x, %s : f64
    scf.yield %p : f64
  }
  return %r : f64
}

func.func private @inner(%x: f64, %n: index) -> f64 {
  %v = func.call @outer(%x, %n) : (f64, index) -> f64
  %s = math.sin %v : f64
  return %s : f64
}

func.func private @inner_fwd(%x: f64, %n: index) -> (f64, f64) {
  %v = func.call @outer(%x, %n) : (f64, index) -> f64
  %s = math.sin %v : f64
  %c = math.cos %v : f64
  return %s, %c : f64, f64
}

func.func private @inner_pb(%c: f64, %dy: f64) -> f64 {
  %d = arith.mulf %c, %dy : f64
  return %d : f64
}

ad.custom_vjp @inner forward @inner_fwd pullback @inner_pb

func.func @grad_ruled_member(%x: f64, %n: index) -> f64 {
  %g = ad.grad @outer(%x, %n) : (f64, index) -> f64
  return %g : f64
}
