// GradBench eval "det": primal(A, ell) = det(A) for the ell x ell matrix A
// (row-major, ell*ell elements), by recursive expansion by minors along the
// first row (cmpad's det_by_minor); gradient(A, ell) = its gradient with
// respect to A, requested with ad.grad.
//
// A minor is given by its first row and the set of columns already removed
// (a bit mask; ell is at most 63): it is the matrix of rows row..ell-1 and
// the columns not in the mask. Its determinant is the alternating sum over
// its columns j of M[0, j] times the determinant of the minor without row 0
// and column j. The recursion passes A through unchanged; its pullback
// adds each invocation's few elements to one cotangent of A that it
// threads through the recursion.

// The position of the lowest set bit of `bits`.
func.func private @lowest_bit(%bits: i64) -> index {
  %count = math.cttz %bits : i64
  %position = arith.index_cast %count : i64 to index
  return %position : index
}

func.func private @det_of_minor(%a: tensor<?xf64>, %ell: index, %row: index,
                                %removed: i64) -> f64 {
  %c1 = arith.constant 1 : index
  %i0 = arith.constant 0 : i64
  %i1 = arith.constant 1 : i64
  %all = arith.constant -1 : i64
  %zero = arith.constant 0.0 : f64
  // The minor's columns, as bits: those below ell that are not removed.
  %ell64 = arith.index_cast %ell : index to i64
  %above = arith.shli %all, %ell64 : i64
  %outside = arith.ori %removed, %above : i64
  %columns = arith.xori %outside, %all : i64
  %base = arith.muli %row, %ell : index
  %last = arith.subi %ell, %c1 : index
  %is_last = arith.cmpi eq, %row, %last : index
  %det = scf.if %is_last -> f64 {
    // A 1 x 1 minor: its one element.
    %column = func.call @lowest_bit(%columns) : (i64) -> index
    %k = arith.addi %base, %column : index
    %element = tensor.extract %a[%k] : tensor<?xf64>
    scf.yield %element : f64
  } else {
    %next = arith.addi %row, %c1 : index
    %size = arith.subi %ell, %row : index
    %c0 = arith.constant 0 : index
    %sum:2 = scf.for %j = %c0 to %size step %c1
        iter_args(%acc = %zero, %left = %columns) -> (f64, i64) {
      // Column j of the minor is the lowest column left.
      %column = func.call @lowest_bit(%left) : (i64) -> index
      %column64 = arith.index_cast %column : index to i64
      %bit = arith.shli %i1, %column64 : i64
      %rest = arith.xori %left, %bit : i64
      %k = arith.addi %base, %column : index
      %element = tensor.extract %a[%k] : tensor<?xf64>
      %sub_removed = arith.ori %removed, %bit : i64
      %sub = func.call @det_of_minor(%a, %ell, %next, %sub_removed)
          : (tensor<?xf64>, index, index, i64) -> f64
      %term = arith.mulf %element, %sub : f64
      // + for even j, - for odd j.
      %j64 = arith.index_cast %j : index to i64
      %parity = arith.andi %j64, %i1 : i64
      %odd = arith.cmpi ne, %parity, %i0 : i64
      %plus = arith.addf %acc, %term : f64
      %minus = arith.subf %acc, %term : f64
      %new = arith.select %odd, %minus, %plus : f64
      scf.yield %new, %rest : f64, i64
    }
    scf.yield %sum#0 : f64
  }
  return %det : f64
}

func.func @primal(%a: tensor<?xf64>, %ell: index) -> f64 {
  %c0 = arith.constant 0 : index
  %none = arith.constant 0 : i64
  %det = func.call @det_of_minor(%a, %ell, %c0, %none)
      : (tensor<?xf64>, index, index, i64) -> f64
  return %det : f64
}

func.func @gradient(%a: tensor<?xf64>, %ell: index) -> tensor<?xf64> {
  %g = ad.grad @primal(%a, %ell) {wrt = array<i64: 0>}
      : (tensor<?xf64>, index) -> tensor<?xf64>
  return %g : tensor<?xf64>
}
