// GradBench eval "lstm": the loss of an l-layer LSTM with diagonal weights
// predicting each next character (b bits) of a sequence of c characters,
// and its gradient with respect to the main and extra parameters, requested
// with ad.grad.
//
// Layouts (the tool reshapes GradBench's row-major arrays, no copy):
//   %main  : [l][2][4][b]  layer i's weights (k = 0) and biases (k = 1) of
//                          the forget, input, output gates and the change;
//   %extra : [3][b]        input weight, output weight, output bias;
//   %state : [l][2][b]     layer i's hidden (0) and cell (1) state;
//   %seq   : [c][b]        the characters' bits.
// loss = -(sum over t < c-1 of sum_j seq[t+1][j] * (ypred_t[j] - lse_t))
//        / ((c-1) * b), with lse = log(sum_j exp(ypred_t[j]) + 2).

#v = affine_map<(j) -> (j)>
#s = affine_map<(j) -> ()>

// One layer, elementwise over the b cells: the new hidden and cell states
// from the gates' weights and biases, the hidden and cell states and the
// layer's input (every operand a vector of b, so that the adjoint is one
// generic computing every cotangent).
func.func private @layer(%wf: tensor<?xf64>, %wi: tensor<?xf64>, %wo: tensor<?xf64>, %wc: tensor<?xf64>,
                         %bf: tensor<?xf64>, %bi: tensor<?xf64>, %bo: tensor<?xf64>, %bc: tensor<?xf64>,
                         %hid: tensor<?xf64>, %cell: tensor<?xf64>, %input: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %input, %c0 : tensor<?xf64>
  %e = tensor.empty(%b) : tensor<?xf64>
  %h, %c = linalg.generic {indexing_maps = [#v, #v, #v, #v, #v, #v, #v, #v, #v, #v, #v, #v, #v],
      iterator_types = ["parallel"]}
      ins(%wf, %wi, %wo, %wc, %bf, %bi, %bo, %bc, %hid, %cell, %input
          : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>,
            tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>,
            tensor<?xf64>, tensor<?xf64>, tensor<?xf64>)
      outs(%e, %e : tensor<?xf64>, tensor<?xf64>) {
  ^bb0(%vwf: f64, %vwi: f64, %vwo: f64, %vwc: f64, %vbf: f64, %vbi: f64, %vbo: f64,
       %vbc: f64, %vh: f64, %vc: f64, %x: f64, %o1: f64, %o2: f64):
    %one = arith.constant 1.0 : f64
    // forget = sigmoid(x * wf + bf), ingate = sigmoid(hid * wi + bi),
    // outgate = sigmoid(x * wo + bo), change = tanh(hid * wc + bc)
    %af = arith.mulf %x, %vwf : f64
    %zf = arith.addf %af, %vbf : f64
    %nf = arith.negf %zf : f64
    %ef = math.exp %nf : f64
    %df = arith.addf %one, %ef : f64
    %forget = arith.divf %one, %df : f64
    %ai = arith.mulf %vh, %vwi : f64
    %zi = arith.addf %ai, %vbi : f64
    %ni = arith.negf %zi : f64
    %ei = math.exp %ni : f64
    %di = arith.addf %one, %ei : f64
    %ingate = arith.divf %one, %di : f64
    %ao = arith.mulf %x, %vwo : f64
    %zo = arith.addf %ao, %vbo : f64
    %no = arith.negf %zo : f64
    %eo = math.exp %no : f64
    %do = arith.addf %one, %eo : f64
    %outgate = arith.divf %one, %do : f64
    %ac = arith.mulf %vh, %vwc : f64
    %zc = arith.addf %ac, %vbc : f64
    %change = math.tanh %zc : f64
    %kept = arith.mulf %vc, %forget : f64
    %added = arith.mulf %ingate, %change : f64
    %newcell = arith.addf %kept, %added : f64
    %tc = math.tanh %newcell : f64
    %newhid = arith.mulf %outgate, %tc : f64
    linalg.yield %newhid, %newcell : f64, f64
  } -> (tensor<?xf64>, tensor<?xf64>)
  return %h, %c : tensor<?xf64>, tensor<?xf64>
}

func.func @objective(%main: tensor<?x2x4x?xf64>, %extra: tensor<3x?xf64>, %state0: tensor<?x2x?xf64>, %seq: tensor<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %two = arith.constant 2.0 : f64
  %l = tensor.dim %main, %c0 : tensor<?x2x4x?xf64>
  %c = tensor.dim %seq, %c0 : tensor<?x?xf64>
  %steps = arith.subi %c, %c1 : index
  %bb = tensor.dim %seq, %c1 : tensor<?x?xf64>
  %inw = tensor.extract_slice %extra[0, 0] [1, %bb] [1, 1] : tensor<3x?xf64> to tensor<?xf64>
  %outw = tensor.extract_slice %extra[1, 0] [1, %bb] [1, 1] : tensor<3x?xf64> to tensor<?xf64>
  %outb = tensor.extract_slice %extra[2, 0] [1, %bb] [1, 1] : tensor<3x?xf64> to tensor<?xf64>
  %scalar = tensor.empty() : tensor<f64>
  %zero0 = linalg.fill ins(%zero : f64) outs(%scalar : tensor<f64>) -> tensor<f64>
  %vec = tensor.empty(%bb) : tensor<?xf64>
  %final:2 = scf.for %t = %c0 to %steps step %c1 iter_args(%state = %state0, %total = %zero) -> (tensor<?x2x?xf64>, f64) {
    %xt = tensor.extract_slice %seq[%t, 0] [1, %bb] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
    %input = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
        ins(%xt, %inw : tensor<?xf64>, tensor<?xf64>) outs(%vec : tensor<?xf64>) {
    ^bb0(%a: f64, %w: f64, %o: f64):
      %m = arith.mulf %a, %w : f64
      linalg.yield %m : f64
    } -> tensor<?xf64>
    %layers:2 = scf.for %i = %c0 to %l step %c1 iter_args(%st = %state, %in = %input) -> (tensor<?x2x?xf64>, tensor<?xf64>) {
      %wf = tensor.extract_slice %main[%i, 0, 0, 0] [1, 1, 1, %bb] [1, 1, 1, 1] : tensor<?x2x4x?xf64> to tensor<?xf64>
      %wi = tensor.extract_slice %main[%i, 0, 1, 0] [1, 1, 1, %bb] [1, 1, 1, 1] : tensor<?x2x4x?xf64> to tensor<?xf64>
      %wo = tensor.extract_slice %main[%i, 0, 2, 0] [1, 1, 1, %bb] [1, 1, 1, 1] : tensor<?x2x4x?xf64> to tensor<?xf64>
      %wc = tensor.extract_slice %main[%i, 0, 3, 0] [1, 1, 1, %bb] [1, 1, 1, 1] : tensor<?x2x4x?xf64> to tensor<?xf64>
      %bf = tensor.extract_slice %main[%i, 1, 0, 0] [1, 1, 1, %bb] [1, 1, 1, 1] : tensor<?x2x4x?xf64> to tensor<?xf64>
      %bi = tensor.extract_slice %main[%i, 1, 1, 0] [1, 1, 1, %bb] [1, 1, 1, 1] : tensor<?x2x4x?xf64> to tensor<?xf64>
      %bo = tensor.extract_slice %main[%i, 1, 2, 0] [1, 1, 1, %bb] [1, 1, 1, 1] : tensor<?x2x4x?xf64> to tensor<?xf64>
      %bc = tensor.extract_slice %main[%i, 1, 3, 0] [1, 1, 1, %bb] [1, 1, 1, 1] : tensor<?x2x4x?xf64> to tensor<?xf64>
      %hid = tensor.extract_slice %st[%i, 0, 0] [1, 1, %bb] [1, 1, 1] : tensor<?x2x?xf64> to tensor<?xf64>
      %cel = tensor.extract_slice %st[%i, 1, 0] [1, 1, %bb] [1, 1, 1] : tensor<?x2x?xf64> to tensor<?xf64>
      %h, %cell = func.call @layer(%wf, %wi, %wo, %wc, %bf, %bi, %bo, %bc, %hid, %cel, %in) : (tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>)
      %s1 = tensor.insert_slice %h into %st[%i, 0, 0] [1, 1, %bb] [1, 1, 1] : tensor<?xf64> into tensor<?x2x?xf64>
      %s2 = tensor.insert_slice %cell into %s1[%i, 1, 0] [1, 1, %bb] [1, 1, 1] : tensor<?xf64> into tensor<?x2x?xf64>
      scf.yield %s2, %h : tensor<?x2x?xf64>, tensor<?xf64>
    }
    // ypred = hidden * out_weight + out_bias; the loss term
    // sum_j gold_j * (ypred_j - lse) = sum_j gold_j * ypred_j - lse * sum_j gold_j.
    %ypred = linalg.generic {indexing_maps = [#v, #v, #v, #v], iterator_types = ["parallel"]}
        ins(%layers#1, %outw, %outb : tensor<?xf64>, tensor<?xf64>, tensor<?xf64>) outs(%vec : tensor<?xf64>) {
    ^bb0(%h: f64, %w: f64, %bias: f64, %o: f64):
      %m = arith.mulf %h, %w : f64
      %a = arith.addf %m, %bias : f64
      linalg.yield %a : f64
    } -> tensor<?xf64>
    %sumexp = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
        ins(%ypred : tensor<?xf64>) outs(%zero0 : tensor<f64>) {
    ^bb0(%y: f64, %acc: f64):
      %e = math.exp %y : f64
      %a = arith.addf %acc, %e : f64
      linalg.yield %a : f64
    } -> tensor<f64>
    %next = arith.addi %t, %c1 : index
    %gold = tensor.extract_slice %seq[%next, 0] [1, %bb] [1, 1] : tensor<?x?xf64> to tensor<?xf64>
    %sums:2 = linalg.generic {indexing_maps = [#v, #v, #s, #s], iterator_types = ["reduction"]}
        ins(%gold, %ypred : tensor<?xf64>, tensor<?xf64>) outs(%zero0, %zero0 : tensor<f64>, tensor<f64>) {
    ^bb0(%g: f64, %y: f64, %acc: f64, %gacc: f64):
      %m = arith.mulf %g, %y : f64
      %a = arith.addf %acc, %m : f64
      %ga = arith.addf %gacc, %g : f64
      linalg.yield %a, %ga : f64, f64
    } -> (tensor<f64>, tensor<f64>)
    %se = tensor.extract %sumexp[] : tensor<f64>
    %se2 = arith.addf %se, %two : f64
    %lse = math.log %se2 : f64
    %dot = tensor.extract %sums#0[] : tensor<f64>
    %goldsum = tensor.extract %sums#1[] : tensor<f64>
    %shift = arith.mulf %lse, %goldsum : f64
    %term = arith.subf %dot, %shift : f64
    %newtotal = arith.addf %total, %term : f64
    scf.yield %layers#0, %newtotal : tensor<?x2x?xf64>, f64
  }
  %stepsi = arith.index_cast %steps : index to i64
  %bi = arith.index_cast %bb : index to i64
  %count = arith.muli %stepsi, %bi : i64
  %countf = arith.sitofp %count : i64 to f64
  %mean = arith.divf %final#1, %countf : f64
  %loss = arith.negf %mean : f64
  return %loss : f64
}

func.func @jacobian(%main: tensor<?x2x4x?xf64>, %extra: tensor<3x?xf64>, %state0: tensor<?x2x?xf64>, %seq: tensor<?x?xf64>) -> (tensor<?x2x4x?xf64>, tensor<3x?xf64>) {
  %gm, %ge = ad.grad @objective(%main, %extra, %state0, %seq) {wrt = array<i64: 0, 1>} : (tensor<?x2x4x?xf64>, tensor<3x?xf64>, tensor<?x2x?xf64>, tensor<?x?xf64>) -> (tensor<?x2x4x?xf64>, tensor<3x?xf64>)
  return %gm, %ge : tensor<?x2x4x?xf64>, tensor<3x?xf64>
}
