#include "shoal/tensor/tensor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shoal/base/logging.h"

namespace shoal {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    CHECK_GE(d, 0) << "negative dimension in " << ShapeToString(shape);
    n *= d;
  }
  return n;
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

Tensor::Tensor(Shape shape) : shape_(std::move(shape)) {
  data_.assign(static_cast<size_t>(NumElements(shape_)), 0.0f);
}

Tensor::Tensor(Shape shape, float fill) : shape_(std::move(shape)) {
  data_.assign(static_cast<size_t>(NumElements(shape_)), fill);
}

Tensor::Tensor(Shape shape, std::initializer_list<float> values) : shape_(std::move(shape)) {
  CHECK_EQ(static_cast<int64_t>(values.size()), NumElements(shape_))
      << "values do not fill shape " << ShapeToString(shape_);
  data_.assign(values.begin(), values.end());
}

Tensor Tensor::FromVector(Shape shape, const std::vector<float>& values) {
  CHECK_EQ(static_cast<int64_t>(values.size()), NumElements(shape))
      << "values do not fill shape " << ShapeToString(shape);
  Tensor t;
  t.shape_ = std::move(shape);
  t.data_.assign(values.begin(), values.end());
  return t;
}

Tensor Tensor::Uninitialized(Shape shape) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.data_.resize(static_cast<size_t>(NumElements(t.shape_)));  // default-initialized: no fill
  return t;
}

int64_t Tensor::dim(int i) const {
  if (i < 0) i += rank();
  CHECK(i >= 0 && i < rank()) << "dim " << i << " of shape " << ShapeToString(shape_);
  return shape_[static_cast<size_t>(i)];
}

MatrixMap Tensor::matrix() {
  CHECK_EQ(rank(), 2) << "matrix() of shape " << ShapeToString(shape_);
  return MatrixMap(data_.data(), shape_[0], shape_[1]);
}

ConstMatrixMap Tensor::matrix() const {
  CHECK_EQ(rank(), 2) << "matrix() of shape " << ShapeToString(shape_);
  return ConstMatrixMap(data_.data(), shape_[0], shape_[1]);
}

MatrixMap Tensor::AsMatrix(int64_t rows) {
  CHECK(rows > 0 ? size() % rows == 0 : size() == 0)
      << "cannot view " << ShapeToString(shape_) << " as " << rows << " rows";
  return MatrixMap(data_.data(), rows, rows > 0 ? size() / rows : 0);
}

ConstMatrixMap Tensor::AsMatrix(int64_t rows) const {
  CHECK(rows > 0 ? size() % rows == 0 : size() == 0)
      << "cannot view " << ShapeToString(shape_) << " as " << rows << " rows";
  return ConstMatrixMap(data_.data(), rows, rows > 0 ? size() / rows : 0);
}

Tensor Tensor::Reshaped(Shape shape) const& {
  Tensor copy = *this;
  return std::move(copy).Reshaped(std::move(shape));
}

Tensor RowsOf(const Tensor& t, int64_t begin, int64_t end) {
  CHECK_GE(t.rank(), 1);
  CHECK(0 <= begin && begin <= end && end <= t.dim(0))
      << "rows [" << begin << ", " << end << ") of " << ShapeToString(t.shape());
  Shape shape = t.shape();
  shape[0] = end - begin;
  const int64_t row = t.dim(0) == 0 ? 0 : t.size() / t.dim(0);
  Tensor out(std::move(shape));
  std::copy_n(t.data() + begin * row, (end - begin) * row, out.data());
  return out;
}

void CopyRowsInto(const Tensor& src, int64_t dst_row, Tensor* dst) {
  CHECK_GE(src.rank(), 1);
  CHECK_GE(dst->rank(), 1);
  const int64_t row = dst->dim(0) == 0 ? 0 : dst->size() / dst->dim(0);
  CHECK_EQ(src.size(), src.dim(0) * row) << "row sizes differ";
  CHECK(0 <= dst_row && dst_row + src.dim(0) <= dst->dim(0))
      << ShapeToString(src.shape()) << " at row " << dst_row << " of "
      << ShapeToString(dst->shape());
  std::copy_n(src.data(), src.size(), dst->data() + dst_row * row);
}

Tensor Tensor::Reshaped(Shape shape) && {
  CHECK_EQ(NumElements(shape), size())
      << "cannot reshape " << ShapeToString(shape_) << " to " << ShapeToString(shape);
  Tensor out;
  out.shape_ = std::move(shape);
  out.data_ = std::move(data_);
  shape_ = Shape{0};
  data_.clear();
  return out;
}

void Tensor::Fill(float value) { std::fill(data_.begin(), data_.end(), value); }

std::string Tensor::DebugString(int max_values) const {
  std::string out = absl::StrCat("Tensor", ShapeToString(shape_), " {");
  const int64_t n = std::min<int64_t>(size(), max_values);
  for (int64_t i = 0; i < n; ++i) absl::StrAppend(&out, i ? ", " : "", data_[i]);
  if (n < size()) absl::StrAppend(&out, ", ...");
  absl::StrAppend(&out, "}");
  return out;
}

}  // namespace shoal
