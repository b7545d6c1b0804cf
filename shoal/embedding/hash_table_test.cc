#include "shoal/embedding/hash_table.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Optimizer> MakeOptimizer(const std::string& name) {
  auto opt = CreateOptimizer({.name = name, .learning_rate = 0.1f, .l1 = 0.001f});
  EXPECT_TRUE(opt.ok()) << opt.status();
  return std::move(opt).value();
}

std::unique_ptr<HashEmbeddingTable> MakeTable(const EmbeddingTableOptions& options,
                                              const Optimizer& opt) {
  auto table = HashEmbeddingTable::Create(options, opt);
  EXPECT_TRUE(table.ok()) << table.status();
  return std::move(table).value();
}

std::vector<float> LookupAll(HashEmbeddingTable& table, const std::vector<uint64_t>& ids,
                             LookupMode mode, int64_t step) {
  std::vector<float> out(ids.size() * table.dim(), -7.0f);
  EXPECT_TRUE(table.Lookup(ids, absl::MakeSpan(out), mode, step).ok());
  return out;
}

struct RowCopy {
  std::vector<float> values, slots;
  int64_t last_seen, count;
};

std::map<uint64_t, RowCopy> Export(const HashEmbeddingTable& table) {
  std::map<uint64_t, RowCopy> rows;
  table.ForEachRow([&](const EmbeddingRow& r) {
    rows[r.id] = RowCopy{{r.values.begin(), r.values.end()},
                         {r.slots.begin(), r.slots.end()},
                         r.last_seen_step,
                         r.count};
  });
  return rows;
}

TEST(HashEmbeddingTableTest, InitialValuesDependOnlyOnSeedIdAndElement) {
  auto opt = MakeOptimizer("adagrad");
  auto a = MakeTable({.dim = 8, .num_shards = 1, .seed = 42}, *opt);
  auto b = MakeTable({.dim = 8, .num_shards = 64, .seed = 42}, *opt);
  auto c = MakeTable({.dim = 8, .num_shards = 64, .seed = 43}, *opt);
  std::vector<uint64_t> ids = {5, 1ull << 63, 0, 77, 123456789};
  std::vector<uint64_t> reversed(ids.rbegin(), ids.rend());
  const auto va = LookupAll(*a, ids, LookupMode::kTrain, 1);
  auto vb = LookupAll(*b, reversed, LookupMode::kTrain, 1);
  const auto vc = LookupAll(*c, ids, LookupMode::kTrain, 1);
  // Undo the reversal.
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int e = 0; e < 8; ++e) EXPECT_EQ(va[i * 8 + e], vb[(ids.size() - 1 - i) * 8 + e]);
  }
  EXPECT_NE(va, vc);
  // Truncated normal with stddev 1/sqrt(8): within 2 stddev, not all equal.
  for (float v : va) EXPECT_LE(std::fabs(v), 2.0f / std::sqrt(8.0f) + 1e-6f);
  RowInitializer init({}, 42, 8);
  std::vector<float> expect(8);
  init.Fill(77, expect.data());
  EXPECT_EQ(std::vector<float>(va.begin() + 24, va.begin() + 32), expect);
  // The stored row and the slots' initial values.
  auto rows = Export(*a);
  ASSERT_EQ(rows.size(), ids.size());
  EXPECT_EQ(rows[77].values, expect);
  EXPECT_EQ(rows[77].slots, std::vector<float>(8, 0.1f));
}

TEST(HashEmbeddingTableTest, UniformAndZerosInitializers) {
  auto opt = MakeOptimizer("sgd");
  auto u = MakeTable({.dim = 4,
                      .initializer = {.kind = RowInitializerOptions::Kind::kUniform,
                                      .minval = 1.0f,
                                      .maxval = 2.0f}},
                     *opt);
  auto z =
      MakeTable({.dim = 4, .initializer = {.kind = RowInitializerOptions::Kind::kZeros}}, *opt);
  for (float v : LookupAll(*u, {1, 2, 3}, LookupMode::kTrain, 1)) {
    EXPECT_GE(v, 1.0f);
    EXPECT_LT(v, 2.0f);
  }
  for (float v : LookupAll(*z, {1, 2, 3}, LookupMode::kTrain, 1)) EXPECT_EQ(v, 0.0f);
  // Normal rows (TF's random_normal_initializer): stddev as asked, draws beyond 2 stddev kept.
  auto n = MakeTable(
      {.dim = 4, .initializer = {.kind = RowInitializerOptions::Kind::kNormal, .stddev = 0.1f}},
      *opt);
  std::vector<uint64_t> many(2000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = i + 1;
  double sq = 0;
  float largest = 0;
  for (float v : LookupAll(*n, many, LookupMode::kTrain, 1)) {
    sq += static_cast<double>(v) * v;
    largest = std::max(largest, std::fabs(v));
  }
  EXPECT_NEAR(std::sqrt(sq / 8000), 0.1, 0.005);
  EXPECT_GT(largest, 0.2f);
  EXPECT_FALSE(RowInitializer::Validate({.kind = RowInitializerOptions::Kind::kNormal}).ok());
}

TEST(HashEmbeddingTableTest, InferenceMissesReadZerosAndCreateNothing) {
  auto opt = MakeOptimizer("adagrad");
  auto table = MakeTable({.dim = 4}, *opt);
  const auto trained = LookupAll(*table, {10}, LookupMode::kTrain, 3);
  const auto out = LookupAll(*table, {10, 11, 10}, LookupMode::kInference, 4);
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 4), trained);
  EXPECT_EQ(std::vector<float>(out.begin() + 4, out.begin() + 8), std::vector<float>(4, 0.0f));
  EXPECT_EQ(std::vector<float>(out.begin() + 8, out.end()), trained);
  EXPECT_EQ(table->num_rows(), 1);
  // Inference does not mark rows as seen.
  EXPECT_EQ(Export(*table)[10].last_seen, 3);
}

TEST(HashEmbeddingTableTest, AdmissionAfterMinCount) {
  auto opt = MakeOptimizer("adagrad");
  auto table = MakeTable({.dim = 4, .seed = 9, .min_count = 3}, *opt);
  const std::vector<float> grad(4, 1.0f);
  const auto first = LookupAll(*table, {99}, LookupMode::kTrain, 1);
  EXPECT_EQ(table->num_rows(), 0);
  ASSERT_TRUE(table->ApplyGradients({99}, grad, *opt, 1).ok());  // dropped
  const auto second = LookupAll(*table, {99}, LookupMode::kTrain, 2);
  EXPECT_EQ(second, first);  // the deterministic initial value, not stored
  EXPECT_EQ(table->num_rows(), 0);
  const auto third = LookupAll(*table, {99}, LookupMode::kTrain, 3);
  EXPECT_EQ(third, first);
  EXPECT_EQ(table->num_rows(), 1);
  ASSERT_TRUE(table->ApplyGradients({99}, grad, *opt, 3).ok());
  EXPECT_NE(LookupAll(*table, {99}, LookupMode::kInference, 3), first);
  const EmbeddingTableStats stats = table->Stats();
  EXPECT_EQ(stats.rows_created, 1);
  EXPECT_EQ(stats.admission_rejects, 2);
  EXPECT_EQ(stats.gradients_skipped, 1);
  EXPECT_EQ(Export(*table)[99].count, 3);
}

TEST(HashEmbeddingTableTest, EvictionRemovesOldRowsCompactsAndReusesMemory) {
  auto opt = MakeOptimizer("adagrad");
  auto table = MakeTable({.dim = 16, .num_shards = 4}, *opt);
  std::vector<uint64_t> old_ids(50000), new_ids(50000);
  std::iota(old_ids.begin(), old_ids.end(), 0);
  std::iota(new_ids.begin(), new_ids.end(), 1000000);
  LookupAll(*table, old_ids, LookupMode::kTrain, 1);
  const auto kept = LookupAll(*table, new_ids, LookupMode::kTrain, 5);
  const size_t full = table->MemoryBytes();
  EXPECT_EQ(table->Evict(5), 50000);
  EXPECT_EQ(table->num_rows(), 50000);
  EXPECT_EQ(table->Stats().rows_evicted, 50000);
  EXPECT_LT(table->MemoryBytes(), full * 0.6);
  // Survivors kept their values through compaction; evicted ids are gone.
  EXPECT_EQ(LookupAll(*table, new_ids, LookupMode::kInference, 5), kept);
  EXPECT_EQ(LookupAll(*table, {0, 1, 49999}, LookupMode::kInference, 5),
            std::vector<float>(48, 0.0f));
  // Re-creating as many rows does not need more memory than before.
  LookupAll(*table, old_ids, LookupMode::kTrain, 6);
  EXPECT_LE(table->MemoryBytes(), full);
  EXPECT_EQ(table->Evict(100), 100000);
  EXPECT_EQ(table->num_rows(), 0);
  EXPECT_LT(table->MemoryBytes(), 256u << 10);
}

// Every row as ForEachRow (or ForEachSnapshotRow) visits it, in order, with its bytes.
struct VisitedRow {
  uint64_t id;
  std::vector<float> values, slots;
  int64_t last_seen, count;
  bool operator==(const VisitedRow&) const = default;
};

std::vector<VisitedRow> Visited(
    const std::function<void(std::function<void(const EmbeddingRow&)>)>& for_each) {
  std::vector<VisitedRow> rows;
  for_each([&](const EmbeddingRow& r) {
    rows.push_back({r.id,
                    {r.values.begin(), r.values.end()},
                    {r.slots.begin(), r.slots.end()},
                    r.last_seen_step,
                    r.count});
  });
  return rows;
}

// A snapshot reads the rows as they were at BeginSnapshot, in ForEachRow's order, whatever
// happens to them meanwhile: training lookups (last-seen step, count), gradients, imports over
// them, new rows, and an eviction that moves rows (which copies the cut out first).
TEST(HashEmbeddingTableTest, SnapshotReadsTheRowsAsTheyWereAtTheCut) {
  for (const bool evict : {false, true}) {
    SCOPED_TRACE(evict ? "with an eviction during the snapshot" : "without eviction");
    auto opt = MakeOptimizer("adagrad");
    auto table = MakeTable({.dim = 4, .num_shards = 8, .seed = 3}, *opt);
    std::vector<uint64_t> ids(3000);
    std::iota(ids.begin(), ids.end(), 1);
    LookupAll(*table, ids, LookupMode::kTrain, 1);
    std::vector<uint64_t> half(ids.begin(), ids.begin() + 1500);
    std::vector<float> grads(half.size() * 4, 0.25f);
    ASSERT_TRUE(table->ApplyGradients(half, grads, *opt, 2).ok());
    const auto at_cut = Visited([&](auto visit) { table->ForEachRow(visit); });

    ASSERT_TRUE(table->BeginSnapshot().ok());
    EXPECT_EQ(table->BeginSnapshot().code(), absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(table->ApplyGradients(half, grads, *opt, 3).ok());
    LookupAll(*table, std::vector<uint64_t>(ids.begin() + 1000, ids.begin() + 2000),
              LookupMode::kTrain, 4);
    std::vector<uint64_t> fresh(500);
    std::iota(fresh.begin(), fresh.end(), 100000);
    LookupAll(*table, fresh, LookupMode::kTrain, 5);
    const std::vector<float> values(4, 9.0f), slots(4, 1.0f);
    ASSERT_TRUE(table->ImportRow({.id = 7, .values = values, .slots = slots}).ok());
    ASSERT_TRUE(table->ImportRow({.id = 200000, .values = values, .slots = slots}).ok());
    if (evict) {
      EXPECT_GT(table->Evict(4), 0);  // rows 2001.. and below 1000 were last seen < 4
    }
    const auto now = Visited([&](auto visit) { table->ForEachRow(visit); });
    ASSERT_NE(now, at_cut);

    absl::StatusOr<int64_t> copied;
    const auto snapshot = Visited([&](auto visit) { copied = table->ForEachSnapshotRow(visit); });
    ASSERT_TRUE(copied.ok()) << copied.status();
    EXPECT_EQ(snapshot, at_cut);
    if (!evict) {
      EXPECT_EQ(*copied, 2000);  // rows 1..2000 changed, each copied once
    }
    // The snapshot ended with the read; the table is as it is now.
    EXPECT_EQ(Visited([&](auto visit) { table->ForEachRow(visit); }), now);
    EXPECT_EQ(table->ForEachSnapshotRow([](const EmbeddingRow&) {}).status().code(),
              absl::StatusCode::kFailedPrecondition);
    // EndSnapshot abandons one; a new one can begin.
    ASSERT_TRUE(table->BeginSnapshot().ok());
    table->EndSnapshot();
    table->EndSnapshot();
    ASSERT_TRUE(table->BeginSnapshot().ok());
    EXPECT_EQ(Visited([&](auto visit) { ASSERT_TRUE(table->ForEachSnapshotRow(visit).ok()); }),
              now);
  }
}

TEST(HashEmbeddingTableTest, SnapshotOfAnEmptyTableIsEmpty) {
  auto opt = MakeOptimizer("sgd");
  auto table = MakeTable({.dim = 2, .num_shards = 4}, *opt);
  ASSERT_TRUE(table->BeginSnapshot().ok());
  LookupAll(*table, {1, 2, 3}, LookupMode::kTrain, 1);
  EXPECT_TRUE(
      Visited([&](auto visit) { ASSERT_TRUE(table->ForEachSnapshotRow(visit).ok()); }).empty());
  EXPECT_EQ(table->num_rows(), 3);
}

class GradientTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GradientTest, EqualsOptimizerApplyOnTheSameRow) {
  auto opt = MakeOptimizer(GetParam());
  const int64_t dim = 24;  // not a multiple of 16: the vector remainder runs too
  auto table = MakeTable({.dim = dim, .num_shards = 8, .seed = 3}, *opt);
  const std::vector<uint64_t> ids = {4, 8, 15, 16, 23, 42};
  LookupAll(*table, ids, LookupMode::kTrain, 1);
  auto expected = Export(*table);
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<float> grads(ids.size() * dim);
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = NormalFloat(11, step, i);
    ASSERT_TRUE(table->ApplyGradients(ids, grads, *opt, step).ok());
    for (size_t k = 0; k < ids.size(); ++k) {
      RowCopy& row = expected[ids[k]];
      opt->Apply(absl::MakeSpan(row.values), absl::MakeConstSpan(grads.data() + k * dim, dim),
                 absl::MakeSpan(row.slots), step);
    }
  }
  auto actual = Export(*table);
  for (uint64_t id : ids) {
    EXPECT_EQ(actual[id].values, expected[id].values) << id;
    EXPECT_EQ(actual[id].slots, expected[id].slots) << id;
    EXPECT_EQ(actual[id].last_seen, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(All, GradientTest,
                         ::testing::Values("sgd", "momentum", "adagrad", "adam", "ftrl"));

TEST(HashEmbeddingTableTest, ExportImportRoundTripAcrossShardCounts) {
  auto opt = MakeOptimizer("ftrl");
  auto a = MakeTable({.dim = 8, .num_shards = 16, .seed = 5}, *opt);
  std::vector<uint64_t> ids(1000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = Mix64(i);
  LookupAll(*a, ids, LookupMode::kTrain, 7);
  std::vector<float> grads(ids.size() * 8, 0.25f);
  ASSERT_TRUE(a->ApplyGradients(ids, grads, *opt, 8).ok());
  auto b = MakeTable({.dim = 8, .num_shards = 2, .seed = 999}, *opt);
  a->ForEachRow([&](const EmbeddingRow& row) { ASSERT_TRUE(b->ImportRow(row).ok()); });
  auto ra = Export(*a), rb = Export(*b);
  ASSERT_EQ(ra.size(), rb.size());
  for (const auto& [id, row] : ra) {
    EXPECT_EQ(rb[id].values, row.values);
    EXPECT_EQ(rb[id].slots, row.slots);
    EXPECT_EQ(rb[id].last_seen, 8);
    EXPECT_EQ(rb[id].count, row.count);
  }
  EXPECT_EQ(LookupAll(*b, ids, LookupMode::kInference, 9),
            LookupAll(*a, ids, LookupMode::kInference, 9));
  // Import overwrites an existing row.
  std::vector<float> values(8, 1.5f), slots(16, 0.5f);
  ASSERT_TRUE(b->ImportRow({.id = ids[0], .values = values, .slots = slots}).ok());
  EXPECT_EQ(LookupAll(*b, {ids[0]}, LookupMode::kInference, 9), values);
  EXPECT_EQ(b->num_rows(), 1000);
}

// A restore sizes the index for its rows first: importing them then maps rows only, and the
// table holds what it would without the reservation.
TEST(HashEmbeddingTableTest, ReserveSizesTheIndexOnceForAnImport) {
  auto opt = MakeOptimizer("adagrad");
  auto reserved = MakeTable({.dim = 4, .num_shards = 8, .seed = 1}, *opt);
  auto grown = MakeTable({.dim = 4, .num_shards = 8, .seed = 1}, *opt);
  constexpr int64_t kRows = 100000;
  const size_t empty = reserved->MemoryBytes();
  ASSERT_TRUE(reserved->Reserve(kRows).ok());
  const size_t before = reserved->MemoryBytes();
  EXPECT_GE(before - empty, static_cast<size_t>(kRows) * 8 * 10 / 8);  // 8-byte slots, load 0.8
  std::vector<float> values(4), slots(4);
  for (int64_t i = 0; i < kRows; ++i) {
    values[0] = static_cast<float>(i);
    const EmbeddingRow row{
        .id = Mix64(static_cast<uint64_t>(i) + 3), .values = values, .slots = slots};
    ASSERT_TRUE(reserved->ImportRow(row).ok());
    ASSERT_TRUE(grown->ImportRow(row).ok());
  }
  // The import mapped the rows (48 bytes each, with the arena's block slack), not a bigger
  // index: growing one for these rows would map about 1 MB more.
  ASSERT_EQ(reserved->row_bytes(), 48u);
  EXPECT_LE(reserved->MemoryBytes() - before, static_cast<size_t>(kRows * 48 * 1.15));
  EXPECT_GE(grown->MemoryBytes() - empty, static_cast<size_t>(kRows * 48 * 1.15));
  EXPECT_EQ(reserved->num_rows(), kRows);
  auto a = Export(*reserved), b = Export(*grown);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [id, row] : a) EXPECT_EQ(b[id].values, row.values) << id;
  // Reserving less than the table holds changes nothing.
  const size_t full = reserved->MemoryBytes();
  ASSERT_TRUE(reserved->Reserve(10).ok());
  EXPECT_EQ(reserved->MemoryBytes(), full);
}

TEST(HashEmbeddingTableTest, GrowsAndStaysCompact) {
  auto opt = MakeOptimizer("adagrad");
  auto table = MakeTable({.dim = 16, .num_shards = 8, .seed = 1}, *opt);
  std::vector<uint64_t> ids(1 << 18);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = Mix64(i + 17);
  const auto first = LookupAll(*table, ids, LookupMode::kTrain, 1);
  EXPECT_EQ(table->num_rows(), static_cast<int64_t>(ids.size()));
  EXPECT_EQ(LookupAll(*table, ids, LookupMode::kInference, 1), first);
  // values + slots = 128 B per row; all-in at most 1.3x.
  const double per_row = static_cast<double>(table->MemoryBytes()) / table->num_rows();
  EXPECT_LE(per_row, 1.3 * 128) << per_row;
}

TEST(HashEmbeddingTableTest, RejectsBadInput) {
  auto opt = MakeOptimizer("adagrad");
  auto sgd = MakeOptimizer("sgd");
  for (const EmbeddingTableOptions& o :
       {EmbeddingTableOptions{.dim = 0}, EmbeddingTableOptions{.dim = 1 << 20},
        EmbeddingTableOptions{.num_shards = 3}, EmbeddingTableOptions{.num_shards = 0},
        EmbeddingTableOptions{.min_count = 0}, EmbeddingTableOptions{.min_count = 256},
        EmbeddingTableOptions{.initializer = {.kind = RowInitializerOptions::Kind::kUniform,
                                             .minval = 1.0f,
                                             .maxval = 0.0f}}}) {
    auto table = HashEmbeddingTable::Create(o, *opt);
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument) << o.dim;
  }
  auto table = MakeTable({.dim = 4}, *opt);
  const std::vector<uint64_t> ids = {1, 2};
  std::vector<float> out(8), grads(8);
  auto code = [](const absl::Status& s) { return s.code(); };
  EXPECT_EQ(code(table->Lookup(ids, absl::MakeSpan(out).subspan(1), LookupMode::kTrain, 1)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(table->Lookup(ids, absl::Span<float>(nullptr, 8), LookupMode::kTrain, 1)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(table->Lookup(ids, absl::MakeSpan(out), LookupMode::kTrain, -1)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(table->ApplyGradients(ids, absl::MakeConstSpan(grads).subspan(2), *opt, 1)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(table->ApplyGradients(ids, grads, *sgd, 1)), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(table->Lookup(ids, absl::MakeSpan(out), LookupMode::kTrain, 1).ok());
  const std::vector<uint64_t> repeated = {1, 2, 1};
  std::vector<float> grads3(12, 1.0f);
  const absl::Status s = table->ApplyGradients(repeated, grads3, *opt, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unique"));
  // Nothing was applied.
  std::vector<float> after(8);
  ASSERT_TRUE(table->Lookup(ids, absl::MakeSpan(after), LookupMode::kInference, 2).ok());
  EXPECT_EQ(after, out);
  std::vector<float> few(3);
  EXPECT_EQ(code(table->ImportRow({.id = 1, .values = few})), absl::StatusCode::kInvalidArgument);
  // Empty batches are fine.
  EXPECT_TRUE(table->Lookup({}, {}, LookupMode::kTrain, 1).ok());
  EXPECT_TRUE(table->ApplyGradients({}, {}, *opt, 1).ok());
}

}  // namespace
}  // namespace shoal
