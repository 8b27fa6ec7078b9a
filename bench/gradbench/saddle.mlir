// GradBench eval "saddle" (Pearlmutter and Siskind): the saddle point of
// f(x, y) = (x1^2 + y1^2) - (x2^2 + y2^2) as min over p1 = (x1, y1) of max
// over p = (x2, y2), both by gradient descent from the input start. The
// outer descent differentiates the inner one, a while loop whose steps
// differentiate f: nested AD, in four variants, the outer derivative
// forward (f) or reverse (r), then the inner's: ff, fr, rf, rr. The result
// is [argmin p1, argmax p at that p1]. Every derivative is an ad op.

func.func private @f(%x1: f64, %y1: f64, %x2: f64, %y2: f64) -> f64 {
  %a = arith.mulf %x1, %x1 : f64
  %b = arith.mulf %y1, %y1 : f64
  %c = arith.mulf %x2, %x2 : f64
  %d = arith.mulf %y2, %y2 : f64
  %s1 = arith.addf %a, %b : f64
  %s2 = arith.addf %c, %d : f64
  %r = arith.subf %s1, %s2 : f64
  return %r : f64
}

// The inner objective, minimized: -f(p1, p) as a function of p.
func.func private @inner(%x1: f64, %y1: f64, %x2: f64, %y2: f64) -> f64 {
  %v = func.call @f(%x1, %y1, %x2, %y2) : (f64, f64, f64, f64) -> f64
  %n = arith.negf %v : f64
  return %n : f64
}

// Its gradient with respect to p, in reverse mode and in forward mode.
func.func private @inner_grad_r(%x1: f64, %y1: f64, %x2: f64, %y2: f64) -> (f64, f64) {
  %g0, %g1 = ad.grad @inner(%x1, %y1, %x2, %y2) {wrt = array<i64: 2, 3>} : (f64, f64, f64, f64) -> (f64, f64)
  return %g0, %g1 : f64, f64
}

func.func private @inner_grad_f(%x1: f64, %y1: f64, %x2: f64, %y2: f64) -> (f64, f64) {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %v0, %g0 = ad.jvp @inner(%x1, %y1, %x2, %y2) tangents(%one, %zero) {wrt = array<i64: 2, 3>} : (f64, f64, f64, f64) -> (f64, f64)
  %v1, %g1 = ad.jvp @inner(%x1, %y1, %x2, %y2) tangents(%zero, %one) {wrt = array<i64: 2, 3>} : (f64, f64, f64, f64) -> (f64, f64)
  return %g0, %g1 : f64, f64
}

// argmin over u of inner(q, u) from s, with the gradient from @inner_grad_f: stop when
// |g| <= 1e-5 or a step moves u by at most 1e-5; a step that does not
// decrease the objective halves eta, ten that do double it.
func.func private @inner_argmin_f(%q0: f64, %q1: f64, %s0: f64, %s1: f64) -> (f64, f64) {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @inner(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> f64
  %ga, %gb = func.call @inner_grad_f(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r:8 = scf.while (%x0 = %s0, %x1 = %s1, %fx = %f0, %g0 = %ga, %g1 = %gb, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x0, %x1, %fx, %g0, %g1, %eta, %i, %go : f64, f64, f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x0: f64, %x1: f64, %fx: f64, %g0: f64, %g1: f64, %eta: f64, %i: index, %go: i1):
    %g00 = arith.mulf %g0, %g0 : f64
    %g11 = arith.mulf %g1, %g1 : f64
    %gs = arith.addf %g00, %g11 : f64
    %gm = math.sqrt %gs : f64
    %small = arith.cmpf ole, %gm, %eps : f64
    %n:8 = scf.if %small -> (f64, f64, f64, f64, f64, f64, index, i1) {
      scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:8 = scf.if %ten -> (f64, f64, f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x0, %x1, %fx, %g0, %g1, %eta2, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
      } else {
        %st0 = arith.mulf %eta, %g0 : f64
        %st1 = arith.mulf %eta, %g1 : f64
        %y0 = arith.subf %x0, %st0 : f64
        %y1 = arith.subf %x1, %st1 : f64
        %d0 = arith.subf %x0, %y0 : f64
        %d1 = arith.subf %x1, %y1 : f64
        %d00 = arith.mulf %d0, %d0 : f64
        %d11 = arith.mulf %d1, %d1 : f64
        %ds = arith.addf %d00, %d11 : f64
        %dist = math.sqrt %ds : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:8 = scf.if %close -> (f64, f64, f64, f64, f64, f64, index, i1) {
          scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
        } else {
          %fy = func.call @inner(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> f64
          %better = arith.cmpf olt, %fy, %fx : f64
          %b:8 = scf.if %better -> (f64, f64, f64, f64, f64, f64, index, i1) {
            %h0, %h1 = func.call @inner_grad_f(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> (f64, f64)
            %i1 = arith.addi %i, %c1 : index
            scf.yield %y0, %y1, %fy, %h0, %h1, %eta, %i1, %true : f64, f64, f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x0, %x1, %fx, %g0, %g1, %half, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7 : f64, f64, f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5, %k#6, %k#7 : f64, f64, f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5, %m#6, %m#7 : f64, f64, f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5, %n#6, %n#7 : f64, f64, f64, f64, f64, f64, index, i1
  }
  return %r#0, %r#1 : f64, f64
}

// The outer objective with the inner descent's gradient in forward mode:
// max over p of f(p1, p), from the start s (q2, q3 unused by the outer
// gradient: the start is not differentiated).
func.func private @outer_cost_f(%s0: f64, %s1: f64, %x1: f64, %y1: f64) -> f64 {
  %p0, %p1 = func.call @inner_argmin_f(%x1, %y1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %v = func.call @f(%x1, %y1, %p0, %p1) : (f64, f64, f64, f64) -> f64
  return %v : f64
}

// argmin over u of inner(q, u) from s, with the gradient from @inner_grad_r: stop when
// |g| <= 1e-5 or a step moves u by at most 1e-5; a step that does not
// decrease the objective halves eta, ten that do double it.
func.func private @inner_argmin_r(%q0: f64, %q1: f64, %s0: f64, %s1: f64) -> (f64, f64) {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @inner(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> f64
  %ga, %gb = func.call @inner_grad_r(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r:8 = scf.while (%x0 = %s0, %x1 = %s1, %fx = %f0, %g0 = %ga, %g1 = %gb, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x0, %x1, %fx, %g0, %g1, %eta, %i, %go : f64, f64, f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x0: f64, %x1: f64, %fx: f64, %g0: f64, %g1: f64, %eta: f64, %i: index, %go: i1):
    %g00 = arith.mulf %g0, %g0 : f64
    %g11 = arith.mulf %g1, %g1 : f64
    %gs = arith.addf %g00, %g11 : f64
    %gm = math.sqrt %gs : f64
    %small = arith.cmpf ole, %gm, %eps : f64
    %n:8 = scf.if %small -> (f64, f64, f64, f64, f64, f64, index, i1) {
      scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:8 = scf.if %ten -> (f64, f64, f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x0, %x1, %fx, %g0, %g1, %eta2, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
      } else {
        %st0 = arith.mulf %eta, %g0 : f64
        %st1 = arith.mulf %eta, %g1 : f64
        %y0 = arith.subf %x0, %st0 : f64
        %y1 = arith.subf %x1, %st1 : f64
        %d0 = arith.subf %x0, %y0 : f64
        %d1 = arith.subf %x1, %y1 : f64
        %d00 = arith.mulf %d0, %d0 : f64
        %d11 = arith.mulf %d1, %d1 : f64
        %ds = arith.addf %d00, %d11 : f64
        %dist = math.sqrt %ds : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:8 = scf.if %close -> (f64, f64, f64, f64, f64, f64, index, i1) {
          scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
        } else {
          %fy = func.call @inner(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> f64
          %better = arith.cmpf olt, %fy, %fx : f64
          %b:8 = scf.if %better -> (f64, f64, f64, f64, f64, f64, index, i1) {
            %h0, %h1 = func.call @inner_grad_r(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> (f64, f64)
            %i1 = arith.addi %i, %c1 : index
            scf.yield %y0, %y1, %fy, %h0, %h1, %eta, %i1, %true : f64, f64, f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x0, %x1, %fx, %g0, %g1, %half, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7 : f64, f64, f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5, %k#6, %k#7 : f64, f64, f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5, %m#6, %m#7 : f64, f64, f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5, %n#6, %n#7 : f64, f64, f64, f64, f64, f64, index, i1
  }
  return %r#0, %r#1 : f64, f64
}

// The outer objective with the inner descent's gradient in reverse mode:
// max over p of f(p1, p), from the start s (q2, q3 unused by the outer
// gradient: the start is not differentiated).
func.func private @outer_cost_r(%s0: f64, %s1: f64, %x1: f64, %y1: f64) -> f64 {
  %p0, %p1 = func.call @inner_argmin_r(%x1, %y1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %v = func.call @f(%x1, %y1, %p0, %p1) : (f64, f64, f64, f64) -> f64
  return %v : f64
}

func.func private @outer_grad_f_f(%s0: f64, %s1: f64, %x1: f64, %y1: f64) -> (f64, f64) {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %v0, %g0 = ad.jvp @outer_cost_f(%s0, %s1, %x1, %y1) tangents(%one, %zero) {wrt = array<i64: 2, 3>} : (f64, f64, f64, f64) -> (f64, f64)
  %v1, %g1 = ad.jvp @outer_cost_f(%s0, %s1, %x1, %y1) tangents(%zero, %one) {wrt = array<i64: 2, 3>} : (f64, f64, f64, f64) -> (f64, f64)
  return %g0, %g1 : f64, f64
}

// argmin over u of outer_cost_f(q, u) from s, with the gradient from @outer_grad_f_f: stop when
// |g| <= 1e-5 or a step moves u by at most 1e-5; a step that does not
// decrease the objective halves eta, ten that do double it.
func.func private @outer_argmin_f_f(%q0: f64, %q1: f64, %s0: f64, %s1: f64) -> (f64, f64) {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @outer_cost_f(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> f64
  %ga, %gb = func.call @outer_grad_f_f(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r:8 = scf.while (%x0 = %s0, %x1 = %s1, %fx = %f0, %g0 = %ga, %g1 = %gb, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x0, %x1, %fx, %g0, %g1, %eta, %i, %go : f64, f64, f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x0: f64, %x1: f64, %fx: f64, %g0: f64, %g1: f64, %eta: f64, %i: index, %go: i1):
    %g00 = arith.mulf %g0, %g0 : f64
    %g11 = arith.mulf %g1, %g1 : f64
    %gs = arith.addf %g00, %g11 : f64
    %gm = math.sqrt %gs : f64
    %small = arith.cmpf ole, %gm, %eps : f64
    %n:8 = scf.if %small -> (f64, f64, f64, f64, f64, f64, index, i1) {
      scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:8 = scf.if %ten -> (f64, f64, f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x0, %x1, %fx, %g0, %g1, %eta2, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
      } else {
        %st0 = arith.mulf %eta, %g0 : f64
        %st1 = arith.mulf %eta, %g1 : f64
        %y0 = arith.subf %x0, %st0 : f64
        %y1 = arith.subf %x1, %st1 : f64
        %d0 = arith.subf %x0, %y0 : f64
        %d1 = arith.subf %x1, %y1 : f64
        %d00 = arith.mulf %d0, %d0 : f64
        %d11 = arith.mulf %d1, %d1 : f64
        %ds = arith.addf %d00, %d11 : f64
        %dist = math.sqrt %ds : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:8 = scf.if %close -> (f64, f64, f64, f64, f64, f64, index, i1) {
          scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
        } else {
          %fy = func.call @outer_cost_f(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> f64
          %better = arith.cmpf olt, %fy, %fx : f64
          %b:8 = scf.if %better -> (f64, f64, f64, f64, f64, f64, index, i1) {
            %h0, %h1 = func.call @outer_grad_f_f(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> (f64, f64)
            %i1 = arith.addi %i, %c1 : index
            scf.yield %y0, %y1, %fy, %h0, %h1, %eta, %i1, %true : f64, f64, f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x0, %x1, %fx, %g0, %g1, %half, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7 : f64, f64, f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5, %k#6, %k#7 : f64, f64, f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5, %m#6, %m#7 : f64, f64, f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5, %n#6, %n#7 : f64, f64, f64, f64, f64, f64, index, i1
  }
  return %r#0, %r#1 : f64, f64
}

// Variant ff: the outer descent's derivative in forward mode, the inner's
// in forward mode; the final argmax over p uses the outer descent's mode.
func.func @ff(%start: tensor<2xf64>) -> tensor<2x2xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s0 = tensor.extract %start[%c0] : tensor<2xf64>
  %s1 = tensor.extract %start[%c1] : tensor<2xf64>
  %a0, %a1 = func.call @outer_argmin_f_f(%s0, %s1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %b0, %b1 = func.call @inner_argmin_f(%a0, %a1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r = tensor.from_elements %a0, %a1, %b0, %b1 : tensor<2x2xf64>
  return %r : tensor<2x2xf64>
}

func.func private @outer_grad_f_r(%s0: f64, %s1: f64, %x1: f64, %y1: f64) -> (f64, f64) {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %v0, %g0 = ad.jvp @outer_cost_r(%s0, %s1, %x1, %y1) tangents(%one, %zero) {wrt = array<i64: 2, 3>} : (f64, f64, f64, f64) -> (f64, f64)
  %v1, %g1 = ad.jvp @outer_cost_r(%s0, %s1, %x1, %y1) tangents(%zero, %one) {wrt = array<i64: 2, 3>} : (f64, f64, f64, f64) -> (f64, f64)
  return %g0, %g1 : f64, f64
}

// argmin over u of outer_cost_r(q, u) from s, with the gradient from @outer_grad_f_r: stop when
// |g| <= 1e-5 or a step moves u by at most 1e-5; a step that does not
// decrease the objective halves eta, ten that do double it.
func.func private @outer_argmin_f_r(%q0: f64, %q1: f64, %s0: f64, %s1: f64) -> (f64, f64) {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @outer_cost_r(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> f64
  %ga, %gb = func.call @outer_grad_f_r(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r:8 = scf.while (%x0 = %s0, %x1 = %s1, %fx = %f0, %g0 = %ga, %g1 = %gb, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x0, %x1, %fx, %g0, %g1, %eta, %i, %go : f64, f64, f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x0: f64, %x1: f64, %fx: f64, %g0: f64, %g1: f64, %eta: f64, %i: index, %go: i1):
    %g00 = arith.mulf %g0, %g0 : f64
    %g11 = arith.mulf %g1, %g1 : f64
    %gs = arith.addf %g00, %g11 : f64
    %gm = math.sqrt %gs : f64
    %small = arith.cmpf ole, %gm, %eps : f64
    %n:8 = scf.if %small -> (f64, f64, f64, f64, f64, f64, index, i1) {
      scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:8 = scf.if %ten -> (f64, f64, f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x0, %x1, %fx, %g0, %g1, %eta2, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
      } else {
        %st0 = arith.mulf %eta, %g0 : f64
        %st1 = arith.mulf %eta, %g1 : f64
        %y0 = arith.subf %x0, %st0 : f64
        %y1 = arith.subf %x1, %st1 : f64
        %d0 = arith.subf %x0, %y0 : f64
        %d1 = arith.subf %x1, %y1 : f64
        %d00 = arith.mulf %d0, %d0 : f64
        %d11 = arith.mulf %d1, %d1 : f64
        %ds = arith.addf %d00, %d11 : f64
        %dist = math.sqrt %ds : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:8 = scf.if %close -> (f64, f64, f64, f64, f64, f64, index, i1) {
          scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
        } else {
          %fy = func.call @outer_cost_r(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> f64
          %better = arith.cmpf olt, %fy, %fx : f64
          %b:8 = scf.if %better -> (f64, f64, f64, f64, f64, f64, index, i1) {
            %h0, %h1 = func.call @outer_grad_f_r(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> (f64, f64)
            %i1 = arith.addi %i, %c1 : index
            scf.yield %y0, %y1, %fy, %h0, %h1, %eta, %i1, %true : f64, f64, f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x0, %x1, %fx, %g0, %g1, %half, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7 : f64, f64, f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5, %k#6, %k#7 : f64, f64, f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5, %m#6, %m#7 : f64, f64, f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5, %n#6, %n#7 : f64, f64, f64, f64, f64, f64, index, i1
  }
  return %r#0, %r#1 : f64, f64
}

// Variant fr: the outer descent's derivative in forward mode, the inner's
// in reverse mode; the final argmax over p uses the outer descent's mode.
func.func @fr(%start: tensor<2xf64>) -> tensor<2x2xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s0 = tensor.extract %start[%c0] : tensor<2xf64>
  %s1 = tensor.extract %start[%c1] : tensor<2xf64>
  %a0, %a1 = func.call @outer_argmin_f_r(%s0, %s1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %b0, %b1 = func.call @inner_argmin_f(%a0, %a1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r = tensor.from_elements %a0, %a1, %b0, %b1 : tensor<2x2xf64>
  return %r : tensor<2x2xf64>
}

func.func private @outer_grad_r_f(%s0: f64, %s1: f64, %x1: f64, %y1: f64) -> (f64, f64) {
  %g0, %g1 = ad.grad @outer_cost_f(%s0, %s1, %x1, %y1) {wrt = array<i64: 2, 3>} : (f64, f64, f64, f64) -> (f64, f64)
  return %g0, %g1 : f64, f64
}

// argmin over u of outer_cost_f(q, u) from s, with the gradient from @outer_grad_r_f: stop when
// |g| <= 1e-5 or a step moves u by at most 1e-5; a step that does not
// decrease the objective halves eta, ten that do double it.
func.func private @outer_argmin_r_f(%q0: f64, %q1: f64, %s0: f64, %s1: f64) -> (f64, f64) {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @outer_cost_f(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> f64
  %ga, %gb = func.call @outer_grad_r_f(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r:8 = scf.while (%x0 = %s0, %x1 = %s1, %fx = %f0, %g0 = %ga, %g1 = %gb, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x0, %x1, %fx, %g0, %g1, %eta, %i, %go : f64, f64, f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x0: f64, %x1: f64, %fx: f64, %g0: f64, %g1: f64, %eta: f64, %i: index, %go: i1):
    %g00 = arith.mulf %g0, %g0 : f64
    %g11 = arith.mulf %g1, %g1 : f64
    %gs = arith.addf %g00, %g11 : f64
    %gm = math.sqrt %gs : f64
    %small = arith.cmpf ole, %gm, %eps : f64
    %n:8 = scf.if %small -> (f64, f64, f64, f64, f64, f64, index, i1) {
      scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:8 = scf.if %ten -> (f64, f64, f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x0, %x1, %fx, %g0, %g1, %eta2, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
      } else {
        %st0 = arith.mulf %eta, %g0 : f64
        %st1 = arith.mulf %eta, %g1 : f64
        %y0 = arith.subf %x0, %st0 : f64
        %y1 = arith.subf %x1, %st1 : f64
        %d0 = arith.subf %x0, %y0 : f64
        %d1 = arith.subf %x1, %y1 : f64
        %d00 = arith.mulf %d0, %d0 : f64
        %d11 = arith.mulf %d1, %d1 : f64
        %ds = arith.addf %d00, %d11 : f64
        %dist = math.sqrt %ds : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:8 = scf.if %close -> (f64, f64, f64, f64, f64, f64, index, i1) {
          scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
        } else {
          %fy = func.call @outer_cost_f(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> f64
          %better = arith.cmpf olt, %fy, %fx : f64
          %b:8 = scf.if %better -> (f64, f64, f64, f64, f64, f64, index, i1) {
            %h0, %h1 = func.call @outer_grad_r_f(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> (f64, f64)
            %i1 = arith.addi %i, %c1 : index
            scf.yield %y0, %y1, %fy, %h0, %h1, %eta, %i1, %true : f64, f64, f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x0, %x1, %fx, %g0, %g1, %half, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7 : f64, f64, f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5, %k#6, %k#7 : f64, f64, f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5, %m#6, %m#7 : f64, f64, f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5, %n#6, %n#7 : f64, f64, f64, f64, f64, f64, index, i1
  }
  return %r#0, %r#1 : f64, f64
}

// Variant rf: the outer descent's derivative in reverse mode, the inner's
// in forward mode; the final argmax over p uses the outer descent's mode.
func.func @rf(%start: tensor<2xf64>) -> tensor<2x2xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s0 = tensor.extract %start[%c0] : tensor<2xf64>
  %s1 = tensor.extract %start[%c1] : tensor<2xf64>
  %a0, %a1 = func.call @outer_argmin_r_f(%s0, %s1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %b0, %b1 = func.call @inner_argmin_r(%a0, %a1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r = tensor.from_elements %a0, %a1, %b0, %b1 : tensor<2x2xf64>
  return %r : tensor<2x2xf64>
}

func.func private @outer_grad_r_r(%s0: f64, %s1: f64, %x1: f64, %y1: f64) -> (f64, f64) {
  %g0, %g1 = ad.grad @outer_cost_r(%s0, %s1, %x1, %y1) {wrt = array<i64: 2, 3>} : (f64, f64, f64, f64) -> (f64, f64)
  return %g0, %g1 : f64, f64
}

// argmin over u of outer_cost_r(q, u) from s, with the gradient from @outer_grad_r_r: stop when
// |g| <= 1e-5 or a step moves u by at most 1e-5; a step that does not
// decrease the objective halves eta, ten that do double it.
func.func private @outer_argmin_r_r(%q0: f64, %q1: f64, %s0: f64, %s1: f64) -> (f64, f64) {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @outer_cost_r(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> f64
  %ga, %gb = func.call @outer_grad_r_r(%q0, %q1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r:8 = scf.while (%x0 = %s0, %x1 = %s1, %fx = %f0, %g0 = %ga, %g1 = %gb, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x0, %x1, %fx, %g0, %g1, %eta, %i, %go : f64, f64, f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x0: f64, %x1: f64, %fx: f64, %g0: f64, %g1: f64, %eta: f64, %i: index, %go: i1):
    %g00 = arith.mulf %g0, %g0 : f64
    %g11 = arith.mulf %g1, %g1 : f64
    %gs = arith.addf %g00, %g11 : f64
    %gm = math.sqrt %gs : f64
    %small = arith.cmpf ole, %gm, %eps : f64
    %n:8 = scf.if %small -> (f64, f64, f64, f64, f64, f64, index, i1) {
      scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:8 = scf.if %ten -> (f64, f64, f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x0, %x1, %fx, %g0, %g1, %eta2, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
      } else {
        %st0 = arith.mulf %eta, %g0 : f64
        %st1 = arith.mulf %eta, %g1 : f64
        %y0 = arith.subf %x0, %st0 : f64
        %y1 = arith.subf %x1, %st1 : f64
        %d0 = arith.subf %x0, %y0 : f64
        %d1 = arith.subf %x1, %y1 : f64
        %d00 = arith.mulf %d0, %d0 : f64
        %d11 = arith.mulf %d1, %d1 : f64
        %ds = arith.addf %d00, %d11 : f64
        %dist = math.sqrt %ds : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:8 = scf.if %close -> (f64, f64, f64, f64, f64, f64, index, i1) {
          scf.yield %x0, %x1, %fx, %g0, %g1, %eta, %i, %false : f64, f64, f64, f64, f64, f64, index, i1
        } else {
          %fy = func.call @outer_cost_r(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> f64
          %better = arith.cmpf olt, %fy, %fx : f64
          %b:8 = scf.if %better -> (f64, f64, f64, f64, f64, f64, index, i1) {
            %h0, %h1 = func.call @outer_grad_r_r(%q0, %q1, %y0, %y1) : (f64, f64, f64, f64) -> (f64, f64)
            %i1 = arith.addi %i, %c1 : index
            scf.yield %y0, %y1, %fy, %h0, %h1, %eta, %i1, %true : f64, f64, f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x0, %x1, %fx, %g0, %g1, %half, %c0, %true : f64, f64, f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7 : f64, f64, f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5, %k#6, %k#7 : f64, f64, f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5, %m#6, %m#7 : f64, f64, f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5, %n#6, %n#7 : f64, f64, f64, f64, f64, f64, index, i1
  }
  return %r#0, %r#1 : f64, f64
}

// Variant rr: the outer descent's derivative in reverse mode, the inner's
// in reverse mode; the final argmax over p uses the outer descent's mode.
func.func @rr(%start: tensor<2xf64>) -> tensor<2x2xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s0 = tensor.extract %start[%c0] : tensor<2xf64>
  %s1 = tensor.extract %start[%c1] : tensor<2xf64>
  %a0, %a1 = func.call @outer_argmin_r_r(%s0, %s1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %b0, %b1 = func.call @inner_argmin_r(%a0, %a1, %s0, %s1) : (f64, f64, f64, f64) -> (f64, f64)
  %r = tensor.from_elements %a0, %a1, %b0, %b1 : tensor<2x2xf64>
  return %r : tensor<2x2xf64>
}
