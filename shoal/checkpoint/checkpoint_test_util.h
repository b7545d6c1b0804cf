// Helpers shared by the checkpoint tests (not part of the library): filled embedding tables and
// dense variables with non-trivial slots, and row-by-row copies for comparison.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/io/file_system.h"
#include "shoal/io/file_util.h"
#include "shoal/optim/optimizer.h"
#include "shoal/tensor/tensor.h"

namespace shoal::checkpoint_test {

inline std::unique_ptr<Optimizer> MakeOptimizer(const std::string& name) {
  auto opt = CreateOptimizer({.name = name, .learning_rate = 0.1f});
  EXPECT_TRUE(opt.ok()) << opt.status();
  return std::move(opt).value();
}

inline std::unique_ptr<HashEmbeddingTable> EmptyTable(const Optimizer& opt, int64_t dim,
                                                      uint64_t seed = 1) {
  auto table = HashEmbeddingTable::Create({.dim = dim, .num_shards = 8, .seed = seed}, opt);
  EXPECT_TRUE(table.ok()) << table.status();
  return std::move(table).value();
}

// A table with `rows` rows whose values, slots, steps and counts all differ.
inline std::unique_ptr<HashEmbeddingTable> FilledTable(const Optimizer& opt, int64_t dim,
                                                       int64_t rows) {
  auto table = EmptyTable(opt, dim);
  std::vector<uint64_t> ids;
  for (int64_t i = 0; i < rows; ++i) ids.push_back(0x9e3779b97f4a7c15ull * (i + 1));
  std::vector<float> out(ids.size() * dim);
  EXPECT_TRUE(table->Lookup(ids, absl::MakeSpan(out), LookupMode::kTrain, 3).ok());
  // A second touch for every third id, so steps and counts vary.
  std::vector<uint64_t> some;
  for (size_t i = 0; i < ids.size(); i += 3) some.push_back(ids[i]);
  std::vector<float> grads(some.size() * dim);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.01f * static_cast<float>(i % 97) - 0.4f;
  out.resize(some.size() * dim);
  EXPECT_TRUE(table->Lookup(some, absl::MakeSpan(out), LookupMode::kTrain, 7).ok());
  EXPECT_TRUE(table->ApplyGradients(some, grads, opt, 7).ok());
  return table;
}

struct RowCopy {
  std::vector<float> values, slots;
  int64_t last_seen = 0, count = 0;
  bool operator==(const RowCopy&) const = default;
};

inline std::map<uint64_t, RowCopy> Rows(const HashEmbeddingTable& table) {
  std::map<uint64_t, RowCopy> rows;
  table.ForEachRow([&](const EmbeddingRow& r) {
    rows[r.id] = RowCopy{{r.values.begin(), r.values.end()},
                         {r.slots.begin(), r.slots.end()},
                         r.last_seen_step,
                         r.count};
  });
  return rows;
}

inline Tensor Ramp(Shape shape, float scale) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t[i] = scale * static_cast<float>(i % 1013) - 3.0f;
  return t;
}

inline bool SameTensor(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::equal(a.data(), a.data() + a.size(), b.data());
}

// Flips bit 7 of byte `offset` of `path` in place (same size).
inline void FlipByte(FileSystem& fs, const std::string& path, uint64_t offset) {
  std::string data = ReadFileToString(fs, path).value();
  ASSERT_LT(offset, data.size());
  data[offset] ^= 0x80;
  ASSERT_TRUE(WriteStringToFile(fs, path, data).ok());
}

}  // namespace shoal::checkpoint_test
