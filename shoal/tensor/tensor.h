// Dense float tensors, row-major, on Eigen.
//
// A Tensor owns its buffer and has value semantics: copying copies the data, moving is free. That
// keeps autograd and optimizer code free of aliasing surprises; hot paths pass `const Tensor&` and
// move tensors they hand over. Storage is 64-byte aligned so Eigen can vectorise loads.
//
// Shapes are small vectors of non-negative int64 dimensions; rank 0 is a scalar with one element.
// Shape mismatches between tensors are programmer bugs inside the numeric core (CHECK); user data
// is validated before it becomes a Tensor (see data/). Not thread-safe for concurrent mutation;
// concurrent const access is fine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/types/span.h"

namespace shoal {

using Shape = std::vector<int64_t>;

// Number of elements of `shape` (1 for a scalar).
int64_t NumElements(const Shape& shape);
std::string ShapeToString(const Shape& shape);

// Row-major matrix and vector views used by kernels.
using MatrixMap = Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                             Eigen::Aligned64>;
using ConstMatrixMap =
    Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
               Eigen::Aligned64>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf, Eigen::Aligned64>;

// Bytes every tensor's storage is aligned to: a cache line, and what the Aligned64 maps above
// promise Eigen, whatever vector width the build targets (Eigen's own aligned_allocator aligns
// only to the widest packet of the build: 32 bytes without AVX-512).
inline constexpr size_t kTensorAlignment = 64;

// A 64-byte-aligned allocator whose growing a vector leaves the new floats uninitialized
// (Tensor::Uninitialized); a value given explicitly (assign, resize with a value) is written.
template <typename T>
class DefaultInitAllocator {
 public:
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>& /*other*/) noexcept {}  // NOLINT: rebinding
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kTensorAlignment}));
  }
  // Unsized: clang before 19 does not declare the sized aligned delete by default.
  void deallocate(T* p, size_t /*n*/) noexcept {
    ::operator delete (p, std::align_val_t{kTensorAlignment});
  }
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const DefaultInitAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

class Tensor {
 public:
  Tensor() = default;            // an empty rank-1 tensor of size 0
  explicit Tensor(Shape shape);  // zero-filled
  Tensor(Shape shape, float fill);
  // CHECKs that values.size() == NumElements(shape).
  Tensor(Shape shape, std::initializer_list<float> values);
  static Tensor FromVector(Shape shape, const std::vector<float>& values);
  // A tensor whose values are left as the allocator found them: for an op's output that it
  // overwrites whole, which saves the zero-filling pass of Tensor(Shape).
  static Tensor Uninitialized(Shape shape);
  static Tensor Scalar(float value) { return Tensor(Shape{}, value); }

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;  // negative i counts from the end
  int64_t size() const { return static_cast<int64_t>(data_.size()); }
  bool empty() const { return data_.empty(); }

  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  absl::Span<float> span() { return absl::MakeSpan(data_); }
  absl::Span<const float> span() const { return absl::MakeConstSpan(data_); }
  float& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }
  float operator[](int64_t i) const { return data_[static_cast<size_t>(i)]; }
  // Element of a rank-2 tensor.
  float& at(int64_t row, int64_t col) { return data_[static_cast<size_t>(row * shape_[1] + col)]; }
  float at(int64_t row, int64_t col) const {
    return data_[static_cast<size_t>(row * shape_[1] + col)];
  }

  // Views. matrix() requires rank 2; a rank-1 tensor is viewed as one row by matrix_1xn().
  MatrixMap matrix();
  ConstMatrixMap matrix() const;
  ArrayMap array() { return ArrayMap(data_.data(), size()); }
  ConstArrayMap array() const { return ConstArrayMap(data_.data(), size()); }
  // The tensor viewed as [rows, size/rows]; CHECKs divisibility.
  MatrixMap AsMatrix(int64_t rows);
  ConstMatrixMap AsMatrix(int64_t rows) const;

  // Same data under a new shape with the same number of elements (CHECKed).
  Tensor Reshaped(Shape shape) const&;
  Tensor Reshaped(Shape shape) &&;
  void Fill(float value);
  void SetZero() { Fill(0.0f); }

  bool SameShape(const Tensor& other) const { return shape_ == other.shape_; }
  std::string DebugString(int max_values = 8) const;

 private:
  Shape shape_{0};
  std::vector<float, DefaultInitAllocator<float>> data_;
};

// Rows [begin, end) of `t` (rank >= 1; a row is everything below the first dimension), copied:
// shape [end - begin, t.shape()[1:]...]. CHECKs 0 <= begin <= end <= t.dim(0).
Tensor RowsOf(const Tensor& t, int64_t begin, int64_t end);
// Copies every row of `src` into `dst` from row `dst_row` on; the rows must have equal sizes and
// fit (CHECKed).
void CopyRowsInto(const Tensor& src, int64_t dst_row, Tensor* dst);

}  // namespace shoal
