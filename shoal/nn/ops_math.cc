#include "shoal/nn/ops_math.h"

#include <algorithm>
#include <utility>

#include "shoal/base/logging.h"
#include "shoal/nn/gemm.h"
#include "shoal/nn/row_copy.h"

namespace shoal::nn {
namespace {

void CheckSameShape(const Var& a, const Var& b, const char* op) {
  CHECK(a->value.SameShape(b->value)) << op << ": shapes " << ShapeToString(a->value.shape())
                                      << " and " << ShapeToString(b->value.shape()) << " differ";
}

void CheckRank2(const Var& x, const char* op) {
  CHECK_EQ(x->value.rank(), 2) << op << ": needs rank 2, got " << ShapeToString(x->value.shape());
}

}  // namespace

Var MatMul(const Var& a, const Var& b, bool transpose_a, bool transpose_b) {
  CheckRank2(a, "MatMul");
  CheckRank2(b, "MatMul");
  const int64_t m = a->value.dim(transpose_a ? 1 : 0);
  const int64_t k = a->value.dim(transpose_a ? 0 : 1);
  const int64_t kb = b->value.dim(transpose_b ? 1 : 0);
  const int64_t n = b->value.dim(transpose_b ? 0 : 1);
  CHECK_EQ(k, kb) << "MatMul: inner dimensions of " << ShapeToString(a->value.shape())
                  << (transpose_a ? "^T" : "") << " and " << ShapeToString(b->value.shape())
                  << (transpose_b ? "^T" : "");
  Tensor out = Tensor::Uninitialized(Shape{m, n});  // Gemm overwrites it
  Gemm(a->value, transpose_a, b->value, transpose_b, &out, /*accumulate=*/false);
  return MakeOpNode("MatMul", std::move(out), {a, b}, [transpose_a, transpose_b](Node& self) {
    Node& a = *self.inputs[0];
    Node& b = *self.inputs[1];
    const Tensor& dC = self.grad;
    bool fresh = false;
    if (a.requires_grad) {
      // dA += dC op(B)^T, laid out as a is (written, not added, into a new buffer).
      Tensor& dA = GradBufferToWrite(a, &fresh);
      if (!transpose_a) {
        Gemm(dC, false, b.value, !transpose_b, &dA, !fresh);
      } else {
        Gemm(b.value, transpose_b, dC, true, &dA, !fresh);
      }
    }
    if (b.requires_grad) {
      // dB += op(A)^T dC, laid out as b is.
      Tensor& dB = GradBufferToWrite(b, &fresh);
      if (!transpose_b) {
        Gemm(a.value, !transpose_a, dC, false, &dB, !fresh);
      } else {
        Gemm(dC, true, a.value, transpose_a, &dB, !fresh);
      }
    }
  });
}

Var Add(const Var& a, const Var& b) {
  CheckSameShape(a, b, "Add");
  Tensor out(a->value.shape());
  out.array() = a->value.array() + b->value.array();
  return MakeOpNode("Add", std::move(out), {a, b}, [](Node& self) {
    for (auto& input : self.inputs) {
      if (input->requires_grad) GradBuffer(*input).array() += self.grad.array();
    }
  });
}

Var Sub(const Var& a, const Var& b) {
  CheckSameShape(a, b, "Sub");
  Tensor out(a->value.shape());
  out.array() = a->value.array() - b->value.array();
  return MakeOpNode("Sub", std::move(out), {a, b}, [](Node& self) {
    if (self.inputs[0]->requires_grad) GradBuffer(*self.inputs[0]).array() += self.grad.array();
    if (self.inputs[1]->requires_grad) GradBuffer(*self.inputs[1]).array() -= self.grad.array();
  });
}

Var Mul(const Var& a, const Var& b) {
  CheckSameShape(a, b, "Mul");
  Tensor out(a->value.shape());
  out.array() = a->value.array() * b->value.array();
  return MakeOpNode("Mul", std::move(out), {a, b}, [](Node& self) {
    Node& a = *self.inputs[0];
    Node& b = *self.inputs[1];
    if (a.requires_grad) GradBuffer(a).array() += self.grad.array() * b.value.array();
    if (b.requires_grad) GradBuffer(b).array() += self.grad.array() * a.value.array();
  });
}

Var Scale(const Var& x, float s) {
  Tensor out(x->value.shape());
  out.array() = x->value.array() * s;
  return MakeOpNode("Scale", std::move(out), {x}, [s](Node& self) {
    GradBuffer(*self.inputs[0]).array() += self.grad.array() * s;
  });
}

Var BiasAdd(const Var& x, const Var& b) {
  CheckRank2(x, "BiasAdd");
  const int64_t n = x->value.dim(1);
  CHECK(b->value.shape() == Shape{n} || b->value.shape() == (Shape{1, n}))
      << "BiasAdd: bias " << ShapeToString(b->value.shape()) << " for input "
      << ShapeToString(x->value.shape());
  Tensor out = x->value;
  out.matrix().rowwise() += b->value.AsMatrix(1).row(0);
  return MakeOpNode("BiasAdd", std::move(out), {x, b}, [](Node& self) {
    Node& x = *self.inputs[0];
    Node& b = *self.inputs[1];
    if (x.requires_grad) GradBuffer(x).array() += self.grad.array();
    if (b.requires_grad) {
      GradBuffer(b).AsMatrix(1).row(0) += std::as_const(self.grad).matrix().colwise().sum();
    }
  });
}

Var Concat(const std::vector<Var>& xs, int axis) {
  CHECK(!xs.empty()) << "Concat of nothing";
  CHECK(axis == 0 || axis == 1) << "Concat: axis " << axis << " (rank-2 inputs only)";
  const int other = 1 - axis;
  const int64_t common = xs[0]->value.dim(other);
  int64_t total = 0;
  for (const Var& x : xs) {
    CheckRank2(x, "Concat");
    CHECK_EQ(x->value.dim(other), common)
        << "Concat: " << ShapeToString(x->value.shape()) << " vs "
        << ShapeToString(xs[0]->value.shape()) << " along axis " << axis;
    total += x->value.dim(axis);
  }
  // Every element is written below.
  Tensor out = Tensor::Uninitialized(axis == 1 ? Shape{common, total} : Shape{total, common});
  // Row-major: along axis 1 each input fills a column band of every row, along axis 0 a run of
  // whole rows. Plain row loops: Eigen's block assignments of narrow bands (an embedding's 16
  // columns of a wide & deep input) ran at a third of memcpy's speed.
  const int64_t rows = out.dim(0);
  const int64_t cols = out.dim(1);
  int64_t start = 0;
  for (const Var& x : xs) {
    const int64_t width = x->value.dim(axis);
    const float* in = x->value.data();
    if (axis == 1) {
      for (int64_t r = 0; r < rows; ++r)
        CopyFloats(out.data() + r * cols + start, in + r * width, width);
    } else {
      std::copy_n(in, width * cols, out.data() + start * cols);
    }
    start += width;
  }
  return MakeOpNode("Concat", std::move(out), xs, [axis, rows, cols](Node& self) {
    const float* g = self.grad.data();
    int64_t start = 0;
    for (auto& input : self.inputs) {
      const int64_t width = input->value.dim(axis);
      if (input->requires_grad) {
        // An input seen for the first time gets its band copied, not added to zeros (an
        // embedding's gradient usually comes from this Concat alone).
        bool fresh = false;
        float* dx = GradBufferToWrite(*input, &fresh).data();
        const int64_t n = axis == 1 ? width : width * cols;
        for (int64_t r = 0; r < (axis == 1 ? rows : 1); ++r) {
          const float* from = axis == 1 ? g + r * cols + start : g + start * cols;
          float* to = dx + r * n;
          if (fresh) {
            CopyFloats(to, from, n);
          } else {
            AddFloats(to, from, n);
          }
        }
      }
      start += width;
    }
  });
}

Var Reshape(const Var& x, Shape shape) {
  Tensor out = x->value.Reshaped(std::move(shape));
  return MakeOpNode("Reshape", std::move(out), {x},
                    [](Node& self) { GradBuffer(*self.inputs[0]).array() += self.grad.array(); });
}

Var ReduceSum(const Var& x) {
  Tensor out = Tensor::Scalar(x->value.array().sum());
  return MakeOpNode("ReduceSum", std::move(out), {x},
                    [](Node& self) { GradBuffer(*self.inputs[0]).array() += self.grad[0]; });
}

Var ReduceMean(const Var& x) {
  const int64_t n = x->value.size();
  CHECK_GT(n, 0) << "ReduceMean of an empty tensor";
  Tensor out = Tensor::Scalar(x->value.array().sum() / static_cast<float>(n));
  return MakeOpNode("ReduceMean", std::move(out), {x}, [n](Node& self) {
    GradBuffer(*self.inputs[0]).array() += self.grad[0] / static_cast<float>(n);
  });
}

namespace {

// Shared by ReduceSum/ReduceMean along an axis: sum times `scale`.
Var ReduceAxis(const char* op, const Var& x, int axis, bool keep_dims, bool mean) {
  CheckRank2(x, op);
  CHECK(axis == 0 || axis == 1 || axis == -1) << op << ": axis " << axis << " of a rank-2 input";
  if (axis == -1) axis = 1;
  const int64_t rows = x->value.dim(0);
  const int64_t cols = x->value.dim(1);
  const int64_t reduced = axis == 1 ? cols : rows;
  const float scale = mean ? (reduced > 0 ? 1.0f / static_cast<float>(reduced) : 0.0f) : 1.0f;
  const int64_t kept = axis == 1 ? rows : cols;
  Shape shape = keep_dims ? (axis == 1 ? Shape{rows, 1} : Shape{1, cols}) : Shape{kept};
  Tensor out(shape);
  if (axis == 1) {
    out.AsMatrix(rows).col(0) = x->value.matrix().rowwise().sum() * scale;
  } else {
    out.AsMatrix(1).row(0) = x->value.matrix().colwise().sum() * scale;
  }
  return MakeOpNode(op, std::move(out), {x}, [axis, scale, rows](Node& self) {
    auto dX = GradBuffer(*self.inputs[0]).matrix();
    if (axis == 1) {
      dX.colwise() += std::as_const(self.grad).AsMatrix(rows).col(0) * scale;
    } else {
      dX.rowwise() += std::as_const(self.grad).AsMatrix(1).row(0) * scale;
    }
  });
}

}  // namespace

Var ReduceSum(const Var& x, int axis, bool keep_dims) {
  return ReduceAxis("ReduceSum", x, axis, keep_dims, /*mean=*/false);
}

Var ReduceMean(const Var& x, int axis, bool keep_dims) {
  return ReduceAxis("ReduceMean", x, axis, keep_dims, /*mean=*/true);
}

}  // namespace shoal::nn
