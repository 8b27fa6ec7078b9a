// Example: gradients of a tiny character-level recurrent network.
//
// Vocabulary of 6 characters, state of width 4. Each step looks up the
// embedding row of the current character (a slice of the table at a
// run-time index), updates the state h = tanh(W h + e[c]), scores the next
// character with the same table (logits = E h) and adds its negative log
// likelihood (logsumexp(logits) - logits[next]). ad.value_and_grad gives
// the loss and its gradients with respect to the embedding table E and the
// recurrent matrix W in one forward and one reverse run: the reverse loop
// reads each step's state, stored per iteration, and scatters into the rows
// of dE that the steps read. main prints a few entries next to central
// finite differences of the same program.
//
// Run: ad-opt examples/char-rnn.mlir --ad-lower-to-llvm | mlir-runner \
//        -e main -entry-point-result=void -shared-libs=...   (see README)

// The negative log likelihood of "cafbd" (characters 2 0 5 1 3), one
// prediction per step.
func.func @loss(%emb: tensor<6x4xf64>, %w: tensor<4x4xf64>) -> f64 {
  %text = arith.constant dense<[2, 0, 5, 1, 3]> : tensor<5xindex>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %steps = arith.constant 4 : index
  %zero = arith.constant 0.0 : f64
  %e4 = tensor.empty() : tensor<4xf64>
  %h0 = linalg.fill ins(%zero : f64) outs(%e4 : tensor<4xf64>) -> tensor<4xf64>
  %h, %nll = scf.for %t = %c0 to %steps step %c1
      iter_args(%state = %h0, %total = %zero) -> (tensor<4xf64>, f64) {
    %char = tensor.extract %text[%t] : tensor<5xindex>
    %row = tensor.extract_slice %emb[%char, 0] [1, 4] [1, 1]
        : tensor<6x4xf64> to tensor<4xf64>
    %z4 = linalg.fill ins(%zero : f64) outs(%e4 : tensor<4xf64>) -> tensor<4xf64>
    %wh = linalg.matvec ins(%w, %state : tensor<4x4xf64>, tensor<4xf64>)
        outs(%z4 : tensor<4xf64>) -> tensor<4xf64>
    %pre = arith.addf %wh, %row : tensor<4xf64>
    %next_state = math.tanh %pre : tensor<4xf64>
    %e6 = tensor.empty() : tensor<6xf64>
    %z6 = linalg.fill ins(%zero : f64) outs(%e6 : tensor<6xf64>) -> tensor<6xf64>
    %logits = linalg.matvec ins(%emb, %next_state : tensor<6x4xf64>, tensor<4xf64>)
        outs(%z6 : tensor<6xf64>) -> tensor<6xf64>
    %exp = math.exp %logits : tensor<6xf64>
    %es = tensor.empty() : tensor<f64>
    %zs = linalg.fill ins(%zero : f64) outs(%es : tensor<f64>) -> tensor<f64>
    %sum = linalg.reduce ins(%exp : tensor<6xf64>) outs(%zs : tensor<f64>) dimensions = [0]
      (%in: f64, %acc: f64) {
        %s = arith.addf %in, %acc : f64
        linalg.yield %s : f64
      }
    %sv = tensor.extract %sum[] : tensor<f64>
    %lse = math.log %sv : f64
    %t1 = arith.addi %t, %c1 : index
    %target = tensor.extract %text[%t1] : tensor<5xindex>
    %score = tensor.extract %logits[%target] : tensor<6xf64>
    %step_nll = arith.subf %lse, %score : f64
    %new_total = arith.addf %total, %step_nll : f64
    scf.yield %next_state, %new_total : tensor<4xf64>, f64
  }
  return %nll : f64
}

// Central difference of @loss along E[i][j] (which = 0) or W[i][j] (1).
func.func @finite_difference(%emb: tensor<6x4xf64>, %w: tensor<4x4xf64>,
                             %which: index, %i: index, %j: index) -> f64 {
  %h = arith.constant 1.0e-6 : f64
  %c0 = arith.constant 0 : index
  %two_h = arith.addf %h, %h : f64
  %is_emb = arith.cmpi eq, %which, %c0 : index
  %diff = scf.if %is_emb -> (f64) {
    %v = tensor.extract %emb[%i, %j] : tensor<6x4xf64>
    %up = arith.addf %v, %h : f64
    %down = arith.subf %v, %h : f64
    %eu = tensor.insert %up into %emb[%i, %j] : tensor<6x4xf64>
    %ed = tensor.insert %down into %emb[%i, %j] : tensor<6x4xf64>
    %lu = func.call @loss(%eu, %w) : (tensor<6x4xf64>, tensor<4x4xf64>) -> f64
    %ld = func.call @loss(%ed, %w) : (tensor<6x4xf64>, tensor<4x4xf64>) -> f64
    %d = arith.subf %lu, %ld : f64
    scf.yield %d : f64
  } else {
    %v = tensor.extract %w[%i, %j] : tensor<4x4xf64>
    %up = arith.addf %v, %h : f64
    %down = arith.subf %v, %h : f64
    %wu = tensor.insert %up into %w[%i, %j] : tensor<4x4xf64>
    %wd = tensor.insert %down into %w[%i, %j] : tensor<4x4xf64>
    %lu = func.call @loss(%emb, %wu) : (tensor<6x4xf64>, tensor<4x4xf64>) -> f64
    %ld = func.call @loss(%emb, %wd) : (tensor<6x4xf64>, tensor<4x4xf64>) -> f64
    %d = arith.subf %lu, %ld : f64
    scf.yield %d : f64
  }
  %fd = arith.divf %diff, %two_h : f64
  return %fd : f64
}

func.func @print_entry(%g: tensor<?x4xf64>, %emb: tensor<6x4xf64>,
                       %w: tensor<4x4xf64>, %which: index, %i: index,
                       %j: index) {
  %v = tensor.extract %g[%i, %j] : tensor<?x4xf64>
  %fd = func.call @finite_difference(%emb, %w, %which, %i, %j)
      : (tensor<6x4xf64>, tensor<4x4xf64>, index, index, index) -> f64
  vector.print %v : f64 punctuation <no_punctuation>
  vector.print str "   finite difference "
  vector.print %fd : f64
  return
}

func.func @main() {
  %emb = arith.constant dense<[[ 0.3, -0.2,  0.5,  0.1],
                               [-0.4,  0.6,  0.0,  0.2],
                               [ 0.1,  0.1, -0.3,  0.7],
                               [ 0.5, -0.5,  0.2, -0.1],
                               [-0.2,  0.3,  0.4, -0.6],
                               [ 0.0,  0.2, -0.7,  0.3]]> : tensor<6x4xf64>
  %w = arith.constant dense<[[ 0.5, -0.1,  0.2,  0.0],
                             [ 0.3,  0.4, -0.2,  0.1],
                             [-0.1,  0.2,  0.6, -0.3],
                             [ 0.2,  0.0, -0.4,  0.5]]> : tensor<4x4xf64>
  %l, %ge, %gw = ad.value_and_grad @loss(%emb, %w)
      : (tensor<6x4xf64>, tensor<4x4xf64>) -> (f64, tensor<6x4xf64>, tensor<4x4xf64>)
  %ged = tensor.cast %ge : tensor<6x4xf64> to tensor<?x4xf64>
  %gwd = tensor.cast %gw : tensor<4x4xf64> to tensor<?x4xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  vector.print str "loss: "
  vector.print %l : f64
  // Every row enters every step's softmax. Row 2 ("c") is also the input
  // of step 0; row 4 ("e") is nothing else; row 5 ("f") is the target of
  // step 1 and the input of step 2.
  vector.print str "dL/dE[2][1] = "
  func.call @print_entry(%ged, %emb, %w, %c0, %c2, %c1) : (tensor<?x4xf64>, tensor<6x4xf64>, tensor<4x4xf64>, index, index, index) -> ()
  vector.print str "dL/dE[4][3] = "
  func.call @print_entry(%ged, %emb, %w, %c0, %c4, %c3) : (tensor<?x4xf64>, tensor<6x4xf64>, tensor<4x4xf64>, index, index, index) -> ()
  vector.print str "dL/dE[5][0] = "
  func.call @print_entry(%ged, %emb, %w, %c0, %c5, %c0) : (tensor<?x4xf64>, tensor<6x4xf64>, tensor<4x4xf64>, index, index, index) -> ()
  vector.print str "dL/dW[0][2] = "
  func.call @print_entry(%gwd, %emb, %w, %c1, %c0, %c2) : (tensor<?x4xf64>, tensor<6x4xf64>, tensor<4x4xf64>, index, index, index) -> ()
  vector.print str "dL/dW[3][1] = "
  func.call @print_entry(%gwd, %emb, %w, %c1, %c3, %c1) : (tensor<?x4xf64>, tensor<6x4xf64>, tensor<4x4xf64>, index, index, index) -> ()
  return
}
