#include "shoal/nn/ops_broadcast.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"

namespace shoal::nn {
namespace {

// The strides of `in` read as the (higher or equal rank) shape `out`: 0 along the dimensions it
// is broadcast over.
std::vector<int64_t> AlignedStrides(const Shape& in, const Shape& out) {
  const size_t r = out.size();
  const size_t ri = in.size();
  std::vector<int64_t> strides(r, 0);
  int64_t stride = 1;
  for (size_t i = ri; i-- > 0;) {
    const size_t o = i + (r - ri);
    strides[o] = (in[i] == 1 && out[o] != 1) ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

// Calls f(out_index, a_index, b_index) for every element of `out` in row-major order, with a's
// and b's flat indices advanced by their strides (AlignedStrides) plus the base offsets.
template <typename F>
void ForEachIndex(const Shape& out, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb,
                  F&& f, int64_t base_a = 0, int64_t base_b = 0) {
  const int64_t n = NumElements(out);
  if (n == 0) return;
  const size_t r = out.size();
  if (r == 0) {
    f(int64_t{0}, base_a, base_b);
    return;
  }
  std::vector<int64_t> index(r, 0);
  int64_t ia = base_a;
  int64_t ib = base_b;
  const int64_t inner = out[r - 1];
  const int64_t step_a = sa[r - 1];
  const int64_t step_b = sb[r - 1];
  for (int64_t o = 0; o < n; o += inner) {
    int64_t a = ia;
    int64_t b = ib;
    for (int64_t j = 0; j < inner; ++j, a += step_a, b += step_b) f(o + j, a, b);
    for (size_t d = r - 1; d-- > 0;) {
      ++index[d];
      ia += sa[d];
      ib += sb[d];
      if (index[d] < out[d]) break;
      ia -= sa[d] * out[d];
      ib -= sb[d] * out[d];
      index[d] = 0;
    }
  }
}

Shape MustBroadcast(const Var& a, const Var& b, const char* op) {
  absl::StatusOr<Shape> shape = BroadcastShape(a->value.shape(), b->value.shape());
  CHECK(shape.ok()) << op << ": " << shape.status().message();
  return *std::move(shape);
}

float ApplyBinary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kMaximum:
      return a >= b ? a : b;
    case BinaryOp::kMinimum:
      return a <= b ? a : b;
    case BinaryOp::kSquaredDifference:
      return (a - b) * (a - b);
  }
  return 0.0f;
}

// d(a op b)/da and /db at (a, b).
std::pair<float, float> BinaryPartials(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return {1.0f, 1.0f};
    case BinaryOp::kSub:
      return {1.0f, -1.0f};
    case BinaryOp::kMul:
      return {b, a};
    case BinaryOp::kDiv:
      return {1.0f / b, -a / (b * b)};
    case BinaryOp::kMaximum:
      return a >= b ? std::pair{1.0f, 0.0f} : std::pair{0.0f, 1.0f};
    case BinaryOp::kMinimum:
      return a <= b ? std::pair{1.0f, 0.0f} : std::pair{0.0f, 1.0f};
    case BinaryOp::kSquaredDifference:
      return {2.0f * (a - b), -2.0f * (a - b)};
  }
  return {0.0f, 0.0f};
}

// Calls f(std::integral_constant<BinaryOp, op>{}): the element loops below are then compiled
// once per op, with the op's switch folded away, instead of switching per element.
template <typename F>
void WithOp(BinaryOp op, F&& f) {
  switch (op) {
    case BinaryOp::kAdd:
      return f(std::integral_constant<BinaryOp, BinaryOp::kAdd>{});
    case BinaryOp::kSub:
      return f(std::integral_constant<BinaryOp, BinaryOp::kSub>{});
    case BinaryOp::kMul:
      return f(std::integral_constant<BinaryOp, BinaryOp::kMul>{});
    case BinaryOp::kDiv:
      return f(std::integral_constant<BinaryOp, BinaryOp::kDiv>{});
    case BinaryOp::kMaximum:
      return f(std::integral_constant<BinaryOp, BinaryOp::kMaximum>{});
    case BinaryOp::kMinimum:
      return f(std::integral_constant<BinaryOp, BinaryOp::kMinimum>{});
    case BinaryOp::kSquaredDifference:
      return f(std::integral_constant<BinaryOp, BinaryOp::kSquaredDifference>{});
  }
}

const char* BinaryName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "BroadcastAdd";
    case BinaryOp::kSub:
      return "BroadcastSub";
    case BinaryOp::kMul:
      return "BroadcastMul";
    case BinaryOp::kDiv:
      return "BroadcastDiv";
    case BinaryOp::kMaximum:
      return "Maximum";
    case BinaryOp::kMinimum:
      return "Minimum";
    case BinaryOp::kSquaredDifference:
      return "SquaredDifference";
  }
  return "Binary";
}

// Axes sorted, unique, each checked in [0, rank); empty = all.
std::vector<int> NormalizeAxes(std::vector<int> axes, int rank, const char* op) {
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int a : axes) CHECK(a >= 0 && a < rank) << op << ": axis " << a << " of rank " << rank;
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

// x viewed as [rows, last dim] (a scalar as [1, 1]).
ConstMatrixMap LastAxisRows(const Tensor& x) {
  const int64_t cols = x.rank() == 0 ? 1 : x.dim(-1);
  return x.AsMatrix(cols == 0 ? 0 : x.size() / cols);
}

MatrixMap LastAxisRows(Tensor& x) {
  const int64_t cols = x.rank() == 0 ? 1 : x.dim(-1);
  return x.AsMatrix(cols == 0 ? 0 : x.size() / cols);
}

int64_t IdOf(float value) { return static_cast<int64_t>(std::llround(value)); }

}  // namespace

absl::StatusOr<Shape> BroadcastShape(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", ShapeToString(a), " and ",
                                                     ShapeToString(b), " do not broadcast"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Var Binary(BinaryOp op, const Var& a, const Var& b) {
  const Shape shape = MustBroadcast(a, b, BinaryName(op));
  Tensor out(shape);
  const std::vector<int64_t> sa = AlignedStrides(a->value.shape(), shape);
  const std::vector<int64_t> sb = AlignedStrides(b->value.shape(), shape);
  {
    const float* av = a->value.data();
    const float* bv = b->value.data();
    float* ov = out.data();
    WithOp(op, [&](auto k) {
      constexpr BinaryOp kOp = decltype(k)::value;
      ForEachIndex(shape, sa, sb, [&](int64_t o, int64_t i, int64_t j) {
        ov[o] = ApplyBinary(kOp, av[i], bv[j]);
      });
    });
  }
  return MakeOpNode(BinaryName(op), std::move(out), {a, b}, [op, sa, sb](Node& self) {
    Node& a = *self.inputs[0];
    Node& b = *self.inputs[1];
    const float* av = a.value.data();
    const float* bv = b.value.data();
    const float* g = self.grad.data();
    float* da = a.requires_grad ? GradBuffer(a).data() : nullptr;
    float* db = b.requires_grad ? GradBuffer(b).data() : nullptr;
    const Shape& shape = self.value.shape();
    WithOp(op, [&](auto k) {
      constexpr BinaryOp kOp = decltype(k)::value;
      if (da != nullptr && db != nullptr) {
        ForEachIndex(shape, sa, sb, [&](int64_t o, int64_t i, int64_t j) {
          const auto [pa, pb] = BinaryPartials(kOp, av[i], bv[j]);
          da[i] += g[o] * pa;
          db[j] += g[o] * pb;
        });
      } else if (da != nullptr) {
        ForEachIndex(shape, sa, sb, [&](int64_t o, int64_t i, int64_t j) {
          da[i] += g[o] * BinaryPartials(kOp, av[i], bv[j]).first;
        });
      } else if (db != nullptr) {
        ForEachIndex(shape, sa, sb, [&](int64_t o, int64_t i, int64_t j) {
          db[j] += g[o] * BinaryPartials(kOp, av[i], bv[j]).second;
        });
      }
    });
  });
}

Var Compare(CompareOp op, const Var& a, const Var& b) {
  const Shape shape = MustBroadcast(a, b, "Compare");
  Tensor out(shape);
  const float* av = a->value.data();
  const float* bv = b->value.data();
  float* ov = out.data();
  ForEachIndex(shape, AlignedStrides(a->value.shape(), shape),
               AlignedStrides(b->value.shape(), shape), [&](int64_t o, int64_t i, int64_t j) {
                 bool r = false;
                 switch (op) {
                   case CompareOp::kEqual:
                     r = av[i] == bv[j];
                     break;
                   case CompareOp::kNotEqual:
                     r = av[i] != bv[j];
                     break;
                   case CompareOp::kLess:
                     r = av[i] < bv[j];
                     break;
                   case CompareOp::kLessEqual:
                     r = av[i] <= bv[j];
                     break;
                   case CompareOp::kGreater:
                     r = av[i] > bv[j];
                     break;
                   case CompareOp::kGreaterEqual:
                     r = av[i] >= bv[j];
                     break;
                 }
                 ov[o] = r ? 1.0f : 0.0f;
               });
  return Leaf(std::move(out));
}

Var Unary(UnaryOp op, const Var& x) {
  Tensor out(x->value.shape());
  const auto in = x->value.array();
  auto y = out.array();
  switch (op) {
    case UnaryOp::kNeg:
      y = -in;
      break;
    case UnaryOp::kExp:
      y = in.exp();
      break;
    case UnaryOp::kLog:
      y = in.log();
      break;
    case UnaryOp::kLog1p:
      y = in.log1p();
      break;
    case UnaryOp::kSqrt:
      y = in.sqrt();
      break;
    case UnaryOp::kRsqrt:
      y = in.rsqrt();
      break;
    case UnaryOp::kSquare:
      y = in.square();
      break;
    case UnaryOp::kAbs:
      y = in.abs();
      break;
    case UnaryOp::kReciprocal:
      y = in.inverse();
      break;
    case UnaryOp::kSign:
      y = in.sign();
      return Leaf(std::move(out));
    case UnaryOp::kFloor:
      y = in.floor();
      return Leaf(std::move(out));
    case UnaryOp::kRound:
      for (int64_t i = 0; i < out.size(); ++i) out[i] = std::nearbyint(x->value[i]);
      return Leaf(std::move(out));
  }
  return MakeOpNode("Unary", std::move(out), {x}, [op](Node& self) {
    Node& x = *self.inputs[0];
    const auto g = self.grad.array();
    const auto v = x.value.array();
    const auto r = self.value.array();
    auto dx = GradBuffer(x).array();
    switch (op) {
      case UnaryOp::kNeg:
        dx -= g;
        break;
      case UnaryOp::kExp:
        dx += g * r;
        break;
      case UnaryOp::kLog:
        dx += g / v;
        break;
      case UnaryOp::kLog1p:
        dx += g / (1.0f + v);
        break;
      case UnaryOp::kSqrt:
        dx += g * 0.5f / r;
        break;
      case UnaryOp::kRsqrt:
        dx += g * -0.5f * r * r * r;
        break;
      case UnaryOp::kSquare:
        dx += g * 2.0f * v;
        break;
      case UnaryOp::kAbs:
        dx += g * v.sign();
        break;
      case UnaryOp::kReciprocal:
        dx -= g * r * r;
        break;
      case UnaryOp::kSign:
      case UnaryOp::kFloor:
      case UnaryOp::kRound:
        break;
    }
  });
}

Var StopGradient(const Var& x) { return Leaf(x->value); }

Var Reduce(ReduceOp op, const Var& x, std::vector<int> axes_in, bool keep_dims) {
  const Shape& in_shape = x->value.shape();
  const std::vector<int> axes = NormalizeAxes(std::move(axes_in), x->value.rank(), "Reduce");
  Shape kept = in_shape;
  int64_t count = 1;
  for (int a : axes) {
    count *= kept[a];
    kept[a] = 1;
  }
  Tensor out(kept);
  const std::vector<int64_t> identity = AlignedStrides(in_shape, in_shape);
  const std::vector<int64_t> to_out = AlignedStrides(kept, in_shape);
  const float* xv = x->value.data();
  float* ov = out.data();
  std::vector<int64_t> arg;  // kMax/kMin: the input index chosen per output element
  if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
    const float start = op == ReduceOp::kMax ? -std::numeric_limits<float>::infinity()
                                             : std::numeric_limits<float>::infinity();
    out.Fill(start);
    arg.assign(static_cast<size_t>(out.size()), -1);
    ForEachIndex(in_shape, identity, to_out, [&](int64_t, int64_t i, int64_t k) {
      const bool better = op == ReduceOp::kMax ? xv[i] > ov[k] : xv[i] < ov[k];
      if (arg[k] < 0 || better) {
        ov[k] = xv[i];
        arg[k] = i;
      }
    });
  } else {
    ForEachIndex(in_shape, identity, to_out,
                 [&](int64_t, int64_t i, int64_t k) { ov[k] += xv[i]; });
    if (op == ReduceOp::kMean && count > 0) out.array() /= static_cast<float>(count);
  }
  Shape final_shape;
  if (keep_dims) {
    final_shape = kept;
  } else {
    for (size_t d = 0; d < in_shape.size(); ++d) {
      if (!std::binary_search(axes.begin(), axes.end(), static_cast<int>(d))) {
        final_shape.push_back(in_shape[d]);
      }
    }
  }
  out = std::move(out).Reshaped(final_shape);
  const float scale = op == ReduceOp::kMean && count > 0 ? 1.0f / static_cast<float>(count) : 1.0f;
  return MakeOpNode("Reduce", std::move(out), {x},
                    [op, identity, to_out, scale, arg = std::move(arg)](Node& self) {
                      Node& x = *self.inputs[0];
                      const float* g = self.grad.data();
                      float* dx = GradBuffer(x).data();
                      if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
                        for (size_t k = 0; k < arg.size(); ++k) {
                          if (arg[k] >= 0) dx[arg[k]] += g[k];
                        }
                        return;
                      }
                      ForEachIndex(x.value.shape(), identity, to_out,
                                   [&](int64_t, int64_t i, int64_t k) { dx[i] += g[k] * scale; });
                    });
}

Var ArgMax(const Var& x) {
  CHECK_GE(x->value.rank(), 1) << "ArgMax: needs rank >= 1";
  Shape shape(x->value.shape().begin(), x->value.shape().end() - 1);
  Tensor out(shape);
  const ConstMatrixMap rows = LastAxisRows(std::as_const(x->value));
  for (int64_t r = 0; r < rows.rows(); ++r) {
    Eigen::Index best = 0;
    if (rows.cols() > 0) rows.row(r).maxCoeff(&best);
    out[r] = static_cast<float>(best);
  }
  return Leaf(std::move(out));
}

Var SigmoidCrossEntropyTerms(const Var& labels, const Var& logits) {
  CHECK(labels->value.SameShape(logits->value))
      << "SigmoidCrossEntropyTerms: labels " << ShapeToString(labels->value.shape())
      << " and logits " << ShapeToString(logits->value.shape()) << " differ";
  Tensor out(logits->value.shape());
  const auto x = logits->value.array();
  const auto z = labels->value.array();
  out.array() = x.max(0.0f) - x * z + (-x.abs()).exp().log1p();
  return MakeOpNode("SigmoidCrossEntropyTerms", std::move(out), {labels, logits}, [](Node& self) {
    Node& z = *self.inputs[0];
    Node& x = *self.inputs[1];
    if (!x.requires_grad) return;
    const auto sig = 1.0f / (1.0f + (-x.value.array()).exp());
    GradBuffer(x).array() += self.grad.array() * (sig - z.value.array());
  });
}

Var SoftmaxLastAxis(const Var& x) {
  Tensor out = x->value;
  MatrixMap y = LastAxisRows(out);
  for (int64_t r = 0; r < y.rows(); ++r) {
    auto row = y.row(r).array();
    row = (row - row.maxCoeff()).exp();
    row /= row.sum();
  }
  return MakeOpNode("SoftmaxLastAxis", std::move(out), {x}, [](Node& self) {
    const ConstMatrixMap y = LastAxisRows(std::as_const(self.value));
    const ConstMatrixMap dy = LastAxisRows(std::as_const(self.grad));
    MatrixMap dx = LastAxisRows(GradBuffer(*self.inputs[0]));
    const Eigen::VectorXf dots = (y.array() * dy.array()).rowwise().sum();
    dx.array() += y.array() * (dy.colwise() - dots).array();
  });
}

Var LogSoftmaxLastAxis(const Var& x) {
  Tensor out = x->value;
  MatrixMap y = LastAxisRows(out);
  for (int64_t r = 0; r < y.rows(); ++r) {
    auto row = y.row(r).array();
    const float max = row.maxCoeff();
    row -= max + std::log((row - max).exp().sum());
  }
  return MakeOpNode("LogSoftmaxLastAxis", std::move(out), {x}, [](Node& self) {
    // dx = dy - softmax * sum(dy) per row.
    const ConstMatrixMap y = LastAxisRows(std::as_const(self.value));
    const ConstMatrixMap dy = LastAxisRows(std::as_const(self.grad));
    MatrixMap dx = LastAxisRows(GradBuffer(*self.inputs[0]));
    const Eigen::VectorXf sums = dy.rowwise().sum();
    dx.array() += dy.array() - (y.array().exp().colwise() * sums.array());
  });
}

namespace {

// Row-wise softmax of [B,C] logits into probabilities and the log-sum-exp per row.
void RowSoftmax(const Tensor& logits, Eigen::MatrixXf* probabilities, Eigen::VectorXf* lse) {
  const ConstMatrixMap x = logits.matrix();
  probabilities->resize(x.rows(), x.cols());
  lse->resize(x.rows());
  for (int64_t r = 0; r < x.rows(); ++r) {
    const float max = x.row(r).maxCoeff();
    const Eigen::ArrayXf e = (x.row(r).array() - max).exp();
    const float sum = e.sum();
    probabilities->row(r) = e / sum;
    (*lse)(r) = max + std::log(sum);
  }
}

}  // namespace

Var SoftmaxCrossEntropyRows(const Var& labels, const Var& logits) {
  CHECK_EQ(logits->value.rank(), 2) << "SoftmaxCrossEntropyRows: logits must be [B, C], got "
                                    << ShapeToString(logits->value.shape());
  CHECK(labels->value.SameShape(logits->value))
      << "SoftmaxCrossEntropyRows: labels " << ShapeToString(labels->value.shape())
      << " and logits " << ShapeToString(logits->value.shape()) << " differ";
  Eigen::MatrixXf p;
  Eigen::VectorXf lse;
  RowSoftmax(logits->value, &p, &lse);
  const ConstMatrixMap x = std::as_const(logits->value).matrix();
  const ConstMatrixMap z = std::as_const(labels->value).matrix();
  Tensor out(Shape{logits->value.dim(0)});
  for (int64_t r = 0; r < x.rows(); ++r) {
    out[r] = (z.row(r).array() * (lse(r) - x.row(r).array())).sum();
  }
  return MakeOpNode(
      "SoftmaxCrossEntropyRows", std::move(out), {labels, logits}, [p = std::move(p)](Node& self) {
        Node& z = *self.inputs[0];
        Node& x = *self.inputs[1];
        if (!x.requires_grad) return;
        const ConstMatrixMap zm = std::as_const(z.value).matrix();
        MatrixMap dx = GradBuffer(x).matrix();
        for (int64_t r = 0; r < dx.rows(); ++r) {
          const float g = self.grad[r];
          dx.row(r).array() += g * (p.row(r).array() * zm.row(r).sum() - zm.row(r).array());
        }
      });
}

Var SparseSoftmaxCrossEntropyRows(const Var& ids, const Var& logits) {
  CHECK_EQ(logits->value.rank(), 2) << "SparseSoftmaxCrossEntropyRows: logits must be [B, C], got "
                                    << ShapeToString(logits->value.shape());
  const int64_t rows = logits->value.dim(0);
  const int64_t classes = logits->value.dim(1);
  CHECK_EQ(ids->value.size(), rows) << "SparseSoftmaxCrossEntropyRows: " << ids->value.size()
                                    << " labels for " << rows << " rows";
  Eigen::MatrixXf p;
  Eigen::VectorXf lse;
  RowSoftmax(logits->value, &p, &lse);
  std::vector<int64_t> label(static_cast<size_t>(rows));
  Tensor out(Shape{rows});
  for (int64_t r = 0; r < rows; ++r) {
    label[r] = IdOf(ids->value[r]);
    CHECK(label[r] >= 0 && label[r] < classes)
        << "SparseSoftmaxCrossEntropyRows: label " << label[r] << " not in [0, " << classes << ")";
    out[r] = lse(r) - logits->value.at(r, label[r]);
  }
  return MakeOpNode("SparseSoftmaxCrossEntropyRows", std::move(out), {logits},
                    [p = std::move(p), label = std::move(label)](Node& self) {
                      MatrixMap dx = GradBuffer(*self.inputs[0]).matrix();
                      for (int64_t r = 0; r < dx.rows(); ++r) {
                        const float g = self.grad[r];
                        dx.row(r) += g * p.row(r);
                        dx(r, label[r]) -= g;
                      }
                    });
}

Var OneHot(const Var& ids, int64_t depth, float on_value, float off_value) {
  CHECK_GE(depth, 0);
  Shape shape = ids->value.shape();
  shape.push_back(depth);
  Tensor out(shape, off_value);
  for (int64_t i = 0; i < ids->value.size(); ++i) {
    const int64_t id = IdOf(ids->value[i]);
    if (id >= 0 && id < depth) out[i * depth + id] = on_value;
  }
  return Leaf(std::move(out));
}

Var ConcatAxis(const std::vector<Var>& xs, int axis) {
  CHECK(!xs.empty()) << "ConcatAxis: nothing to concatenate";
  const Shape& first = xs[0]->value.shape();
  const int rank = static_cast<int>(first.size());
  CHECK(axis >= 0 && axis < rank) << "ConcatAxis: axis " << axis << " of rank " << rank;
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= first[d];
  Shape shape = first;
  shape[axis] = 0;
  std::vector<int64_t> chunks;  // per input: elements per outer index
  for (const Var& x : xs) {
    const Shape& s = x->value.shape();
    CHECK_EQ(static_cast<int>(s.size()), rank) << "ConcatAxis: ranks differ";
    for (int d = 0; d < rank; ++d) {
      CHECK(d == axis || s[d] == first[d])
          << "ConcatAxis: shapes " << ShapeToString(first) << " and " << ShapeToString(s);
    }
    shape[axis] += s[axis];
    chunks.push_back(outer == 0 ? 0 : x->value.size() / outer);
  }
  Tensor out(shape);
  int64_t row = 0;
  for (int64_t c : chunks) row += c;
  int64_t offset = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    for (int64_t o = 0; o < outer; ++o) {
      std::copy_n(xs[i]->value.data() + o * chunks[i], chunks[i], out.data() + o * row + offset);
    }
    offset += chunks[i];
  }
  return MakeOpNode("ConcatAxis", std::move(out), xs, [chunks, outer, row](Node& self) {
    int64_t offset = 0;
    for (size_t i = 0; i < self.inputs.size(); ++i) {
      Node& x = *self.inputs[i];
      if (x.requires_grad) {
        float* dx = GradBuffer(x).data();
        for (int64_t o = 0; o < outer; ++o) {
          const float* g = self.grad.data() + o * row + offset;
          for (int64_t j = 0; j < chunks[i]; ++j) dx[o * chunks[i] + j] += g[j];
        }
      }
      offset += chunks[i];
    }
  });
}

Var Slice(const Var& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  const Shape& in = x->value.shape();
  CHECK_EQ(begin.size(), in.size()) << "Slice: begin has " << begin.size() << " entries";
  CHECK_EQ(size.size(), in.size()) << "Slice: size has " << size.size() << " entries";
  Shape shape(in.size());
  const std::vector<int64_t> strides = AlignedStrides(in, in);
  int64_t base = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    shape[d] = size[d] < 0 ? in[d] - begin[d] : size[d];
    CHECK(begin[d] >= 0 && shape[d] >= 0 && begin[d] + shape[d] <= in[d])
        << "Slice: [" << begin[d] << ", +" << shape[d] << ") out of dimension " << in[d];
    base += begin[d] * strides[d];
  }
  Tensor out(shape);
  const float* xv = x->value.data();
  float* ov = out.data();
  ForEachIndex(
      shape, strides, strides, [&](int64_t o, int64_t i, int64_t) { ov[o] = xv[i]; }, base);
  return MakeOpNode("Slice", std::move(out), {x}, [strides, base](Node& self) {
    float* dx = GradBuffer(*self.inputs[0]).data();
    const float* g = self.grad.data();
    ForEachIndex(
        self.value.shape(), strides, strides, [&](int64_t o, int64_t i, int64_t) { dx[i] += g[o]; },
        base);
  });
}

Var Transpose(const Var& x, const std::vector<int>& perm) {
  const Shape& in = x->value.shape();
  CHECK_EQ(perm.size(), in.size()) << "Transpose: perm has " << perm.size() << " entries";
  const std::vector<int64_t> in_strides = AlignedStrides(in, in);
  Shape shape(in.size());
  std::vector<int64_t> strides(in.size());
  std::vector<bool> seen(in.size(), false);
  for (size_t d = 0; d < perm.size(); ++d) {
    CHECK(perm[d] >= 0 && perm[d] < static_cast<int>(in.size()) && !seen[perm[d]])
        << "Transpose: bad permutation";
    seen[perm[d]] = true;
    shape[d] = in[perm[d]];
    strides[d] = in_strides[perm[d]];
  }
  Tensor out(shape);
  const float* xv = x->value.data();
  float* ov = out.data();
  ForEachIndex(shape, strides, strides, [&](int64_t o, int64_t i, int64_t) { ov[o] = xv[i]; });
  return MakeOpNode("Transpose", std::move(out), {x}, [strides](Node& self) {
    float* dx = GradBuffer(*self.inputs[0]).data();
    const float* g = self.grad.data();
    ForEachIndex(self.value.shape(), strides, strides,
                 [&](int64_t o, int64_t i, int64_t) { dx[i] += g[o]; });
  });
}

Var Gather(const Var& params, const Var& ids) {
  CHECK_GE(params->value.rank(), 1) << "Gather: params must have rank >= 1";
  const int64_t vocab = params->value.dim(0);
  const int64_t width = vocab == 0 ? 0 : params->value.size() / vocab;
  Shape shape = ids->value.shape();
  shape.insert(shape.end(), params->value.shape().begin() + 1, params->value.shape().end());
  std::vector<int64_t> rows(static_cast<size_t>(ids->value.size()));
  Tensor out(shape);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i] = IdOf(ids->value[static_cast<int64_t>(i)]);
    CHECK(rows[i] >= 0 && rows[i] < vocab)
        << "Gather: id " << rows[i] << " not in [0, " << vocab << ")";
    std::copy_n(params->value.data() + rows[i] * width, width,
                out.data() + static_cast<int64_t>(i) * width);
  }
  return MakeOpNode("Gather", std::move(out), {params},
                    [rows = std::move(rows), width](Node& self) {
                      float* dp = GradBuffer(*self.inputs[0]).data();
                      const float* g = self.grad.data();
                      for (size_t i = 0; i < rows.size(); ++i) {
                        for (int64_t j = 0; j < width; ++j) {
                          dp[rows[i] * width + j] += g[static_cast<int64_t>(i) * width + j];
                        }
                      }
                    });
}

}  // namespace shoal::nn
