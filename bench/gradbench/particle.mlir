// GradBench eval "particle" (Pearlmutter and Siskind): a charged particle
// starts at (0, 8) with velocity (0.75, 0) in the field of two unit charges
// at (10, 10 - w) and (10, 0); naive Euler steps (dt = 0.1) follow it until
// it would cross the x axis, where linear interpolation gives x0(t_f); the
// control w minimizing x0(t_f)^2 is found by gradient descent from the
// input w. The force is the gradient of the potential, so the descent
// differentiates a program that itself differentiates: nested AD, in four
// variants, the descent's derivative forward (f) or reverse (r), then the
// force's: ff, fr, rf, rr. Every derivative is an ad op.

// The potential at (x0, x1): 1/|x - (10, 10 - w)| + 1/|x - (10, 0)|.
func.func private @potential(%x0: f64, %x1: f64, %w: f64) -> f64 {
  %one = arith.constant 1.0 : f64
  %ten = arith.constant 10.0 : f64
  %zero = arith.constant 0.0 : f64
  %cy = arith.subf %ten, %w : f64
  %a0 = arith.subf %x0, %ten : f64
  %a1 = arith.subf %x1, %cy : f64
  %a00 = arith.mulf %a0, %a0 : f64
  %a11 = arith.mulf %a1, %a1 : f64
  %as = arith.addf %a00, %a11 : f64
  %ad = math.sqrt %as : f64
  %ai = arith.divf %one, %ad : f64
  %b1 = arith.subf %x1, %zero : f64
  %b11 = arith.mulf %b1, %b1 : f64
  %bs = arith.addf %a00, %b11 : f64
  %bd = math.sqrt %bs : f64
  %bi = arith.divf %one, %bd : f64
  %p = arith.addf %ai, %bi : f64
  return %p : f64
}

// The force's two components as a gradient in reverse mode ...
func.func private @grad_r(%x0: f64, %x1: f64, %w: f64) -> (f64, f64) {
  %g0, %g1 = ad.grad @potential(%x0, %x1, %w) {wrt = array<i64: 0, 1>} : (f64, f64, f64) -> (f64, f64)
  return %g0, %g1 : f64, f64
}

// ... and in forward mode, one derivative per direction.
func.func private @grad_f(%x0: f64, %x1: f64, %w: f64) -> (f64, f64) {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %p0, %g0 = ad.jvp @potential(%x0, %x1, %w) tangents(%one, %zero) {wrt = array<i64: 0, 1>} : (f64, f64, f64) -> (f64, f64)
  %p1, %g1 = ad.jvp @potential(%x0, %x1, %w) tangents(%zero, %one) {wrt = array<i64: 0, 1>} : (f64, f64, f64) -> (f64, f64)
  return %g0, %g1 : f64, f64
}

// x0(t_f)^2 for control w, with the force from @grad_r.
func.func private @euler_r(%w: f64) -> f64 {
  %zero = arith.constant 0.0 : f64
  %dt = arith.constant 0.1 : f64
  %x00 = arith.constant 0.0 : f64
  %x10 = arith.constant 8.0 : f64
  %v00 = arith.constant 0.75 : f64
  %v10 = arith.constant 0.0 : f64
  %x:4 = scf.while (%x0 = %x00, %x1 = %x10, %v0 = %v00, %v1 = %v10) : (f64, f64, f64, f64) -> (f64, f64, f64, f64) {
    %s1 = arith.mulf %dt, %v1 : f64
    %n1 = arith.addf %x1, %s1 : f64
    %above = arith.cmpf ogt, %n1, %zero : f64
    scf.condition(%above) %x0, %x1, %v0, %v1 : f64, f64, f64, f64
  } do {
  ^bb0(%x0: f64, %x1: f64, %v0: f64, %v1: f64):
    %g0, %g1 = func.call @grad_r(%x0, %x1, %w) : (f64, f64, f64) -> (f64, f64)
    %s0 = arith.mulf %dt, %v0 : f64
    %s1 = arith.mulf %dt, %v1 : f64
    %n0 = arith.addf %x0, %s0 : f64
    %n1 = arith.addf %x1, %s1 : f64
    // xdot + dt * xddot, with xddot = -grad p
    %d0 = arith.mulf %dt, %g0 : f64
    %d1 = arith.mulf %dt, %g1 : f64
    %u0 = arith.subf %v0, %d0 : f64
    %u1 = arith.subf %v1, %d1 : f64
    scf.yield %n0, %n1, %u0, %u1 : f64, f64, f64, f64
  }
  %nx1 = arith.negf %x#1 : f64
  %dtf = arith.divf %nx1, %x#3 : f64
  %m = arith.mulf %dtf, %x#2 : f64
  %xf = arith.addf %x#0, %m : f64
  %sq = arith.mulf %xf, %xf : f64
  return %sq : f64
}

// x0(t_f)^2 for control w, with the force from @grad_f.
func.func private @euler_f(%w: f64) -> f64 {
  %zero = arith.constant 0.0 : f64
  %dt = arith.constant 0.1 : f64
  %x00 = arith.constant 0.0 : f64
  %x10 = arith.constant 8.0 : f64
  %v00 = arith.constant 0.75 : f64
  %v10 = arith.constant 0.0 : f64
  %x:4 = scf.while (%x0 = %x00, %x1 = %x10, %v0 = %v00, %v1 = %v10) : (f64, f64, f64, f64) -> (f64, f64, f64, f64) {
    %s1 = arith.mulf %dt, %v1 : f64
    %n1 = arith.addf %x1, %s1 : f64
    %above = arith.cmpf ogt, %n1, %zero : f64
    scf.condition(%above) %x0, %x1, %v0, %v1 : f64, f64, f64, f64
  } do {
  ^bb0(%x0: f64, %x1: f64, %v0: f64, %v1: f64):
    %g0, %g1 = func.call @grad_f(%x0, %x1, %w) : (f64, f64, f64) -> (f64, f64)
    %s0 = arith.mulf %dt, %v0 : f64
    %s1 = arith.mulf %dt, %v1 : f64
    %n0 = arith.addf %x0, %s0 : f64
    %n1 = arith.addf %x1, %s1 : f64
    // xdot + dt * xddot, with xddot = -grad p
    %d0 = arith.mulf %dt, %g0 : f64
    %d1 = arith.mulf %dt, %g1 : f64
    %u0 = arith.subf %v0, %d0 : f64
    %u1 = arith.subf %v1, %d1 : f64
    scf.yield %n0, %n1, %u0, %u1 : f64, f64, f64, f64
  }
  %nx1 = arith.negf %x#1 : f64
  %dtf = arith.divf %nx1, %x#3 : f64
  %m = arith.mulf %dtf, %x#2 : f64
  %xf = arith.addf %x#0, %m : f64
  %sq = arith.mulf %xf, %xf : f64
  return %sq : f64
}

// The derivative of @euler_f by forward mode.
func.func private @slope_f_f(%w: f64) -> f64 {
  %one = arith.constant 1.0 : f64
    %fx_unused, %gx = ad.jvp @euler_f(%w) tangents(%one) : (f64) -> (f64, f64)
  return %gx : f64
}

// Gradient descent (GradBench's multivariate_argmin, in one dimension):
// stop when |g| <= 1e-5 or the step moves w by at most 1e-5; a step that
// does not decrease the objective halves eta, ten that do double it.
func.func @ff(%w0: f64) -> f64 {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @euler_f(%w0) : (f64) -> f64
  %g0 = func.call @slope_f_f(%w0) : (f64) -> f64
  %r:6 = scf.while (%x = %w0, %fx = %f0, %gx = %g0, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x, %fx, %gx, %eta, %i, %go : f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x: f64, %fx: f64, %gx: f64, %eta: f64, %i: index, %go: i1):
    %ag = math.absf %gx : f64
    %small = arith.cmpf ole, %ag, %eps : f64
    %n:6 = scf.if %small -> (f64, f64, f64, f64, index, i1) {
      scf.yield %x, %fx, %gx, %eta, %i, %false : f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:6 = scf.if %ten -> (f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x, %fx, %gx, %eta2, %c0, %true : f64, f64, f64, f64, index, i1
      } else {
        %step = arith.mulf %eta, %gx : f64
        %xp = arith.subf %x, %step : f64
        %dx = arith.subf %x, %xp : f64
        %dist = math.absf %dx : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:6 = scf.if %close -> (f64, f64, f64, f64, index, i1) {
          scf.yield %x, %fx, %gx, %eta, %i, %false : f64, f64, f64, f64, index, i1
        } else {
          %fxp = func.call @euler_f(%xp) : (f64) -> f64
          %better = arith.cmpf olt, %fxp, %fx : f64
          %b:6 = scf.if %better -> (f64, f64, f64, f64, index, i1) {
            %gxp = func.call @slope_f_f(%xp) : (f64) -> f64
            %i1 = arith.addi %i, %c1 : index
            scf.yield %xp, %fxp, %gxp, %eta, %i1, %true : f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x, %fx, %gx, %half, %c0, %true : f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5 : f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5 : f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5 : f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5 : f64, f64, f64, f64, index, i1
  }
  return %r#0 : f64
}

// The derivative of @euler_r by forward mode.
func.func private @slope_f_r(%w: f64) -> f64 {
  %one = arith.constant 1.0 : f64
    %fx_unused, %gx = ad.jvp @euler_r(%w) tangents(%one) : (f64) -> (f64, f64)
  return %gx : f64
}

// Gradient descent (GradBench's multivariate_argmin, in one dimension):
// stop when |g| <= 1e-5 or the step moves w by at most 1e-5; a step that
// does not decrease the objective halves eta, ten that do double it.
func.func @fr(%w0: f64) -> f64 {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @euler_r(%w0) : (f64) -> f64
  %g0 = func.call @slope_f_r(%w0) : (f64) -> f64
  %r:6 = scf.while (%x = %w0, %fx = %f0, %gx = %g0, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x, %fx, %gx, %eta, %i, %go : f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x: f64, %fx: f64, %gx: f64, %eta: f64, %i: index, %go: i1):
    %ag = math.absf %gx : f64
    %small = arith.cmpf ole, %ag, %eps : f64
    %n:6 = scf.if %small -> (f64, f64, f64, f64, index, i1) {
      scf.yield %x, %fx, %gx, %eta, %i, %false : f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:6 = scf.if %ten -> (f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x, %fx, %gx, %eta2, %c0, %true : f64, f64, f64, f64, index, i1
      } else {
        %step = arith.mulf %eta, %gx : f64
        %xp = arith.subf %x, %step : f64
        %dx = arith.subf %x, %xp : f64
        %dist = math.absf %dx : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:6 = scf.if %close -> (f64, f64, f64, f64, index, i1) {
          scf.yield %x, %fx, %gx, %eta, %i, %false : f64, f64, f64, f64, index, i1
        } else {
          %fxp = func.call @euler_r(%xp) : (f64) -> f64
          %better = arith.cmpf olt, %fxp, %fx : f64
          %b:6 = scf.if %better -> (f64, f64, f64, f64, index, i1) {
            %gxp = func.call @slope_f_r(%xp) : (f64) -> f64
            %i1 = arith.addi %i, %c1 : index
            scf.yield %xp, %fxp, %gxp, %eta, %i1, %true : f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x, %fx, %gx, %half, %c0, %true : f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5 : f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5 : f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5 : f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5 : f64, f64, f64, f64, index, i1
  }
  return %r#0 : f64
}

// The derivative of @euler_f by reverse mode.
func.func private @slope_r_f(%w: f64) -> f64 {
  %one = arith.constant 1.0 : f64
    %gx = ad.grad @euler_f(%w) : (f64) -> f64
  return %gx : f64
}

// Gradient descent (GradBench's multivariate_argmin, in one dimension):
// stop when |g| <= 1e-5 or the step moves w by at most 1e-5; a step that
// does not decrease the objective halves eta, ten that do double it.
func.func @rf(%w0: f64) -> f64 {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @euler_f(%w0) : (f64) -> f64
  %g0 = func.call @slope_r_f(%w0) : (f64) -> f64
  %r:6 = scf.while (%x = %w0, %fx = %f0, %gx = %g0, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x, %fx, %gx, %eta, %i, %go : f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x: f64, %fx: f64, %gx: f64, %eta: f64, %i: index, %go: i1):
    %ag = math.absf %gx : f64
    %small = arith.cmpf ole, %ag, %eps : f64
    %n:6 = scf.if %small -> (f64, f64, f64, f64, index, i1) {
      scf.yield %x, %fx, %gx, %eta, %i, %false : f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:6 = scf.if %ten -> (f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x, %fx, %gx, %eta2, %c0, %true : f64, f64, f64, f64, index, i1
      } else {
        %step = arith.mulf %eta, %gx : f64
        %xp = arith.subf %x, %step : f64
        %dx = arith.subf %x, %xp : f64
        %dist = math.absf %dx : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:6 = scf.if %close -> (f64, f64, f64, f64, index, i1) {
          scf.yield %x, %fx, %gx, %eta, %i, %false : f64, f64, f64, f64, index, i1
        } else {
          %fxp = func.call @euler_f(%xp) : (f64) -> f64
          %better = arith.cmpf olt, %fxp, %fx : f64
          %b:6 = scf.if %better -> (f64, f64, f64, f64, index, i1) {
            %gxp = func.call @slope_r_f(%xp) : (f64) -> f64
            %i1 = arith.addi %i, %c1 : index
            scf.yield %xp, %fxp, %gxp, %eta, %i1, %true : f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x, %fx, %gx, %half, %c0, %true : f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5 : f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5 : f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5 : f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5 : f64, f64, f64, f64, index, i1
  }
  return %r#0 : f64
}

// The derivative of @euler_r by reverse mode.
func.func private @slope_r_r(%w: f64) -> f64 {
  %one = arith.constant 1.0 : f64
    %gx = ad.grad @euler_r(%w) : (f64) -> f64
  return %gx : f64
}

// Gradient descent (GradBench's multivariate_argmin, in one dimension):
// stop when |g| <= 1e-5 or the step moves w by at most 1e-5; a step that
// does not decrease the objective halves eta, ten that do double it.
func.func @rr(%w0: f64) -> f64 {
  %eps = arith.constant 1.0e-5 : f64
  %eta0 = arith.constant 1.0e-5 : f64
  %two = arith.constant 2.0 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %true = arith.constant true
  %false = arith.constant false
  %f0 = func.call @euler_r(%w0) : (f64) -> f64
  %g0 = func.call @slope_r_r(%w0) : (f64) -> f64
  %r:6 = scf.while (%x = %w0, %fx = %f0, %gx = %g0, %eta = %eta0, %i = %c0, %go = %true) : (f64, f64, f64, f64, index, i1) -> (f64, f64, f64, f64, index, i1) {
    scf.condition(%go) %x, %fx, %gx, %eta, %i, %go : f64, f64, f64, f64, index, i1
  } do {
  ^bb0(%x: f64, %fx: f64, %gx: f64, %eta: f64, %i: index, %go: i1):
    %ag = math.absf %gx : f64
    %small = arith.cmpf ole, %ag, %eps : f64
    %n:6 = scf.if %small -> (f64, f64, f64, f64, index, i1) {
      scf.yield %x, %fx, %gx, %eta, %i, %false : f64, f64, f64, f64, index, i1
    } else {
      %ten = arith.cmpi eq, %i, %c10 : index
      %m:6 = scf.if %ten -> (f64, f64, f64, f64, index, i1) {
        %eta2 = arith.mulf %two, %eta : f64
        scf.yield %x, %fx, %gx, %eta2, %c0, %true : f64, f64, f64, f64, index, i1
      } else {
        %step = arith.mulf %eta, %gx : f64
        %xp = arith.subf %x, %step : f64
        %dx = arith.subf %x, %xp : f64
        %dist = math.absf %dx : f64
        %close = arith.cmpf ole, %dist, %eps : f64
        %k:6 = scf.if %close -> (f64, f64, f64, f64, index, i1) {
          scf.yield %x, %fx, %gx, %eta, %i, %false : f64, f64, f64, f64, index, i1
        } else {
          %fxp = func.call @euler_r(%xp) : (f64) -> f64
          %better = arith.cmpf olt, %fxp, %fx : f64
          %b:6 = scf.if %better -> (f64, f64, f64, f64, index, i1) {
            %gxp = func.call @slope_r_r(%xp) : (f64) -> f64
            %i1 = arith.addi %i, %c1 : index
            scf.yield %xp, %fxp, %gxp, %eta, %i1, %true : f64, f64, f64, f64, index, i1
          } else {
            %half = arith.divf %eta, %two : f64
            scf.yield %x, %fx, %gx, %half, %c0, %true : f64, f64, f64, f64, index, i1
          }
          scf.yield %b#0, %b#1, %b#2, %b#3, %b#4, %b#5 : f64, f64, f64, f64, index, i1
        }
        scf.yield %k#0, %k#1, %k#2, %k#3, %k#4, %k#5 : f64, f64, f64, f64, index, i1
      }
      scf.yield %m#0, %m#1, %m#2, %m#3, %m#4, %m#5 : f64, f64, f64, f64, index, i1
    }
    scf.yield %n#0, %n#1, %n#2, %n#3, %n#4, %n#5 : f64, f64, f64, f64, index, i1
  }
  return %r#0 : f64
}
