// Differentiable linear-algebra, elementwise and shape ops on Vars.
//
// Every function builds one op node (see autodiff.h) and returns it. Shape mismatches are
// programmer bugs and CHECK-fail with both shapes in the message. Stateless and thread-compatible:
// ops may run concurrently on disjoint graphs.
#pragma once

#include <vector>

#include "shoal/nn/autodiff.h"

namespace shoal::nn {

// op(a) * op(b) for rank-2 a and b, where op transposes when the flag is set.
// [M,K] x [K,N] -> [M,N].
Var MatMul(const Var& a, const Var& b, bool transpose_a = false, bool transpose_b = false);

// Elementwise, same shapes.
Var Add(const Var& a, const Var& b);
Var Sub(const Var& a, const Var& b);
Var Mul(const Var& a, const Var& b);
// x * s for a constant s.
Var Scale(const Var& x, float s);

// x[B,N] + b[N] broadcast over rows (b may also be [1,N]).
Var BiasAdd(const Var& x, const Var& b);

// Concatenates rank-2 Vars along `axis` (1: columns, the usual feature concat; 0: rows). All other
// dimensions must agree.
Var Concat(const std::vector<Var>& xs, int axis = 1);

// Same data under a new shape with the same number of elements.
Var Reshape(const Var& x, Shape shape);

// Sum / mean of all elements -> scalar (shape []).
Var ReduceSum(const Var& x);
Var ReduceMean(const Var& x);
// Sum / mean of a rank-2 x along `axis` (1: per row -> [B]; 0: per column -> [N]). With
// keep_dims the result is [B,1] / [1,N].
Var ReduceSum(const Var& x, int axis, bool keep_dims = false);
Var ReduceMean(const Var& x, int axis, bool keep_dims = false);

}  // namespace shoal::nn
