#include "shoal/data/example_encoder.h"

#include "gtest/gtest.h"
#include "shoal/data/example_codec.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

// Random rows of every type, with empty, single and multi-valued rows, negative and large ints.
RawBatch RandomBatch(const Schema& schema, int rows, Rng& rng) {
  RawBatch batch(schema);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < batch.num_columns(); ++c) {
      RawColumn& col = batch.column(c);
      const int n = static_cast<int>(rng.Below(4));  // 0..3 values
      for (int i = 0; i < n; ++i) {
        switch (col.type()) {
          case ValueType::kFloat:
            col.AddFloat(rng.Normal() * 1000);
            break;
          case ValueType::kInt64:
            col.AddInt64(static_cast<int64_t>(rng.Next()) >> rng.Below(64));
            break;
          case ValueType::kString:
            col.AddString(std::string(rng.Below(300), static_cast<char>('a' + rng.Below(26))));
            break;
        }
      }
      col.EndRow();
    }
    batch.EndRecord();
  }
  return batch;
}

TEST(RowExampleEncoderTest, BytesEqualDeterministicProtobuf) {
  Schema schema;
  schema.columns = {{"zeta", ValueType::kFloat},
                    {"alpha", ValueType::kInt64},
                    {"mid", ValueType::kString},
                    {"beta", ValueType::kFloat},
                    {"a_long_feature_name_" + std::string(150, 'x'), ValueType::kInt64}};
  Rng rng(3);
  RawBatch batch = RandomBatch(schema, 500, rng);
  RowExampleEncoder encoder(schema);
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    std::string fast;
    ASSERT_TRUE(encoder.Append(batch, r, &fast).ok());
    auto reference = SerializeRowAsExample(schema, batch, r);
    ASSERT_TRUE(reference.ok());
    ASSERT_EQ(fast, *reference) << "row " << r;
  }
}

TEST(RowExampleEncoderTest, AppendsAndValidates) {
  Schema schema;
  schema.columns = {{"x", ValueType::kFloat}};
  RawBatch batch(schema);
  batch.column(0).EndRow();  // an empty row: an Example with no features
  batch.EndRecord();
  RowExampleEncoder encoder(schema);
  std::string out = "prefix";
  ASSERT_TRUE(encoder.Append(batch, 0, &out).ok());
  EXPECT_EQ(out, std::string("prefix\x0a\x00", 8));
  EXPECT_EQ(encoder.Append(batch, 1, &out).code(), absl::StatusCode::kInvalidArgument);
  Schema other;
  other.columns = {{"x", ValueType::kInt64}};
  EXPECT_EQ(RowExampleEncoder(other).Append(batch, 0, &out).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
