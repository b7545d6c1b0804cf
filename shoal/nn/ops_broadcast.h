// NumPy-style broadcasting ops on Vars of any rank, as TensorFlow's tensor arithmetic has them:
// binary arithmetic and comparisons, elementwise math, reductions over chosen axes, and the
// per-element / per-row cross-entropy terms the TF1 losses are made of. They are what a traced
// Python model_fn (docs/python.md, "Porting a TF1 program") runs on; the fixed-shape ops of
// ops_math.h stay the fast path of the pre-made models.
//
// Broadcasting: shapes are aligned at their last dimension; two dimensions agree when equal or
// when one of them is 1 (a missing leading dimension counts as 1). The gradient of a broadcast
// input is the output gradient summed over the dimensions it was stretched along.
//
// Shape errors are programmer bugs here (CHECK): the caller checks user shapes first with
// BroadcastShape. Thread-compatible: ops may run concurrently on disjoint graphs.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "shoal/nn/autodiff.h"

namespace shoal::nn {

// The broadcast shape of `a` and `b`, or INVALID_ARGUMENT naming both shapes.
absl::StatusOr<Shape> BroadcastShape(const Shape& a, const Shape& b);

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMaximum,            // the gradient goes to a where a >= b, else to b
  kMinimum,            // the gradient goes to a where a <= b, else to b
  kSquaredDifference,  // (a - b)^2
};
Var Binary(BinaryOp op, const Var& a, const Var& b);

// 1.0 where the comparison holds, else 0.0; no gradient flows through a comparison.
enum class CompareOp { kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual };
Var Compare(CompareOp op, const Var& a, const Var& b);

enum class UnaryOp {
  kNeg,
  kExp,
  kLog,  // of x <= 0: -inf / NaN, as TF
  kLog1p,
  kSqrt,
  kRsqrt,
  kSquare,
  kAbs,
  kReciprocal,
  kSign,   // no gradient
  kFloor,  // no gradient
  kRound,  // half to even, as TF; no gradient
};
Var Unary(UnaryOp op, const Var& x);

// x with no gradient flowing back (tf.stop_gradient).
Var StopGradient(const Var& x);

// Sum, mean or max over `axes` (each in [0, rank), any order, repeats ignored; empty = every
// axis). With keep_dims the reduced axes stay as 1s. The max's gradient goes to the first maximal
// element of each group.
enum class ReduceOp { kSum, kMean, kMax, kMin };
Var Reduce(ReduceOp op, const Var& x, std::vector<int> axes, bool keep_dims);

// The index of the largest element along the last axis of a rank >= 1 x (the first on ties), as
// floats: shape x.shape() without its last dimension. No gradient.
Var ArgMax(const Var& x);

// max(x,0) - x*z + log(1 + exp(-|x|)) per element of logits x and labels z of the same shape
// (tf.nn.sigmoid_cross_entropy_with_logits). The gradient flows to the logits only.
Var SigmoidCrossEntropyTerms(const Var& labels, const Var& logits);

// Per row of rank-2 logits [B,C]: -sum_c p_c log softmax(x)_c against label rows p [B,C]
// (tf.nn.softmax_cross_entropy_with_logits): [B]. The gradient flows to the logits only.
Var SoftmaxCrossEntropyRows(const Var& labels, const Var& logits);

// Per row of logits [B,C]: -log softmax(x)_{y_b} for class ids y [B] stored as floats
// (tf.nn.sparse_softmax_cross_entropy_with_logits): [B]. CHECKs ids in [0, C).
Var SparseSoftmaxCrossEntropyRows(const Var& ids, const Var& logits);

// Softmax / log-softmax along the last axis of a rank >= 1 x.
Var SoftmaxLastAxis(const Var& x);
Var LogSoftmaxLastAxis(const Var& x);

// one_hot(ids, depth): ids of any shape (floats holding integers) -> shape + [depth], on_value at
// the id and off_value elsewhere; ids outside [0, depth) give a row of off_value, as TF. No
// gradient.
Var OneHot(const Var& ids, int64_t depth, float on_value = 1.0f, float off_value = 0.0f);

// Concatenation of tensors of one rank along `axis`; every other dimension must agree.
Var ConcatAxis(const std::vector<Var>& xs, int axis);

// x[begin : begin + size] per dimension (size -1: to the end), as tf.slice.
Var Slice(const Var& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size);

// Permutes the dimensions: output dimension i is input dimension perm[i] (tf.transpose).
Var Transpose(const Var& x, const std::vector<int>& perm);

// Rows of params [V, ...] at integer ids of any shape (floats holding integers):
// shape ids.shape + params.shape[1:] (tf.gather on axis 0). CHECKs ids in [0, V). The gradient
// scatters back into params.
Var Gather(const Var& params, const Var& ids);

}  // namespace shoal::nn
