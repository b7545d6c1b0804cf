#include "shoal/data/example_parser.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "shoal/data/example.pb.h"
#include "shoal/data/example_codec.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

// --- Hand encoding of the wire format, for encodings the generated classes never produce. ---

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Tag(uint32_t field, int wire_type) { return Varint((field << 3) | wire_type); }
std::string Len(uint32_t field, const std::string& bytes) {
  return Tag(field, 2) + Varint(bytes.size()) + bytes;
}
std::string Fixed32(float f) {
  std::string out(4, '\0');
  std::memcpy(out.data(), &f, 4);
  return out;
}
// An Example holding the given map entries (each already encoded).
std::string ExampleOf(const std::vector<std::string>& entries) {
  std::string features;
  for (const std::string& e : entries) features += Len(1, e);
  return Len(1, features);
}
std::string Entry(const std::string& key, const std::string& feature) {
  return Len(1, key) + Len(2, feature);
}

Schema TestSchema() {
  Schema s;
  s.columns = {{"label", ValueType::kFloat},
               {"ids", ValueType::kInt64},
               {"tags", ValueType::kString},
               {"age", ValueType::kFloat, true, "-1.5"}};
  return s;
}

std::unique_ptr<ExampleParser> MakeParser(const Schema& schema = TestSchema()) {
  auto parser = ExampleParser::Create(schema);
  EXPECT_TRUE(parser.ok()) << parser.status();
  return std::move(parser).value();
}

std::vector<float> Floats(const RawBatch& b, int c, int64_t r) {
  auto all = b.column(c).floats();
  return {all.begin() + b.column(c).RowBegin(r), all.begin() + b.column(c).RowEnd(r)};
}
std::vector<int64_t> Ints(const RawBatch& b, int c, int64_t r) {
  auto all = b.column(c).int64s();
  return {all.begin() + b.column(c).RowBegin(r), all.begin() + b.column(c).RowEnd(r)};
}
std::vector<std::string> Strings(const RawBatch& b, int c, int64_t r) {
  std::vector<std::string> out;
  for (int64_t i = b.column(c).RowBegin(r); i < b.column(c).RowEnd(r); ++i) {
    out.emplace_back(b.column(c).StringAt(i));
  }
  return out;
}

TEST(ExampleParserTest, DecodesWhatTheGeneratedClassesWrite) {
  proto::Example ex;
  auto& f = *ex.mutable_features()->mutable_feature();
  f["label"].mutable_float_list()->add_value(1);
  for (int64_t v : {int64_t{7}, int64_t{-3}, INT64_MIN, INT64_MAX}) {
    f["ids"].mutable_int64_list()->add_value(v);
  }
  f["tags"].mutable_bytes_list()->add_value("a");
  f["tags"].mutable_bytes_list()->add_value(std::string("\0\xff", 2));
  f["age"].mutable_float_list()->add_value(33.25f);
  f["unused"].mutable_float_list()->add_value(9);

  auto parser = MakeParser();
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse(ex.SerializeAsString(), &batch).ok());
  ASSERT_EQ(batch.num_rows(), 1);
  EXPECT_EQ(Floats(batch, 0, 0), std::vector<float>{1});
  EXPECT_EQ(Ints(batch, 1, 0), (std::vector<int64_t>{7, -3, INT64_MIN, INT64_MAX}));
  EXPECT_EQ(Strings(batch, 2, 0), (std::vector<std::string>{"a", std::string("\0\xff", 2)}));
  EXPECT_EQ(Floats(batch, 3, 0), std::vector<float>{33.25f});
}

// The worked example of docs/formats.md, "tf.train.Example" (TensorFlow writes the same bytes).
TEST(ExampleParserTest, WorkedExampleFromTheFormatDoc) {
  const unsigned char kAge[] = {0x0a, 0x11, 0x0a, 0x0f, 0x0a, 0x03, 0x61, 0x67, 0x65, 0x12,
                                0x08, 0x12, 0x06, 0x0a, 0x04, 0x00, 0x00, 0x20, 0x40};
  const std::string bytes(reinterpret_cast<const char*>(kAge), sizeof(kAge));
  proto::Example ex;
  (*ex.mutable_features()->mutable_feature())["age"].mutable_float_list()->add_value(2.5f);
  EXPECT_EQ(SerializeExample(ex), bytes);
  auto parser = MakeParser();
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse(bytes, &batch).ok());
  EXPECT_EQ(Floats(batch, 3, 0), std::vector<float>{2.5f});
}

TEST(ExampleParserTest, MissingFeatureGetsDefaultOrEmptyRow) {
  auto parser = MakeParser();
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse("", &batch).ok());  // the empty Example
  // Present but empty lists count as missing too.
  proto::Example ex;
  auto& f = *ex.mutable_features()->mutable_feature();
  f["age"].mutable_float_list();
  f["ids"];  // kind not set
  ASSERT_TRUE(parser->Parse(ex.SerializeAsString(), &batch).ok());
  ASSERT_EQ(batch.num_rows(), 2);
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_EQ(batch.column(0).RowSize(r), 0);
    EXPECT_EQ(batch.column(1).RowSize(r), 0);
    EXPECT_EQ(batch.column(2).RowSize(r), 0);
    EXPECT_EQ(Floats(batch, 3, r), std::vector<float>{-1.5f});
  }
}

TEST(ExampleParserTest, AcceptsUnpackedAndPackedEncodings) {
  const std::string unpacked_floats =
      Len(2, Tag(1, 5) + Fixed32(0.5f) + Tag(1, 5) + Fixed32(-2.0f));
  const std::string mixed_ints =  // unpacked, then a packed run, then unpacked again
      Len(3,
          Tag(1, 0) + Varint(5) + Len(1, Varint(6) + Varint(uint64_t(-7))) + Tag(1, 0) + Varint(8));
  auto parser = MakeParser();
  RawBatch batch(parser->schema());
  ASSERT_TRUE(
      parser->Parse(ExampleOf({Entry("label", unpacked_floats), Entry("ids", mixed_ints)}), &batch)
          .ok());
  EXPECT_EQ(Floats(batch, 0, 0), (std::vector<float>{0.5f, -2.0f}));
  EXPECT_EQ(Ints(batch, 1, 0), (std::vector<int64_t>{5, 6, -7, 8}));
}

TEST(ExampleParserTest, WireOrderingAndRepetitionFollowProtobuf) {
  const std::string one = Len(3, Len(1, Varint(1)));
  const std::string two = Len(3, Len(1, Varint(2)));
  const std::string records[] = {
      // value before key, unknown fields everywhere (varint, fixed64, group, fixed32)
      Tag(9, 0) + Varint(1) +
          Len(1, Len(1, Len(2, one) + Tag(7, 1) + std::string(8, 'x') + Len(1, "ids")) + Tag(5, 3) +
                     Tag(6, 0) + Varint(3) + Tag(5, 4)) +
          Tag(4, 5) + "abcd",
      // a repeated key: the last entry wins
      ExampleOf({Entry("ids", two), Entry("ids", one)}),
      // two Features messages merge
      ExampleOf({Entry("ids", two)}) + ExampleOf({Entry("ids", one)}),
  };
  auto parser = MakeParser();
  for (const std::string& record : records) {
    RawBatch batch(parser->schema());
    ASSERT_TRUE(parser->Parse(record, &batch).ok());
    EXPECT_EQ(Ints(batch, 1, 0), std::vector<int64_t>{1});
    // The generated classes agree.
    proto::Example ex;
    ASSERT_TRUE(ex.ParseFromString(record));
    EXPECT_EQ(ex.features().feature().at("ids").int64_list().value(0), 1);
  }
  // A value repeated in one entry merges: lists concatenate.
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse(ExampleOf({Len(1, "ids") + Len(2, one) + Len(2, two)}), &batch).ok());
  EXPECT_EQ(Ints(batch, 1, 0), (std::vector<int64_t>{1, 2}));
}

TEST(ExampleParserTest, WrongKindNamesTheFeature) {
  proto::Example ex;
  (*ex.mutable_features()->mutable_feature())["ids"].mutable_float_list()->add_value(1);
  auto parser = MakeParser();
  RawBatch batch(parser->schema());
  absl::Status s = parser->Parse(ex.SerializeAsString(), &batch);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("feature 'ids': expected int64_list for int64 column, "
                                     "found float_list"));
  EXPECT_EQ(batch.num_rows(), 0);
}

// Found by fuzz/example_fuzzer.cc: a wrong-kind list that a later list of the right kind replaces
// (a repeated key, or the Feature oneof switching case) was rejected, while protobuf -- and so
// TensorFlow -- reads the last one.
TEST(ExampleParserTest, ALaterListOfTheRightKindReplacesAWrongOne) {
  const std::string ints_1 = Len(3, Len(1, Varint(1)));
  const std::string ints_2 = Len(3, Len(1, Varint(2)));
  const std::string floats = Len(2, Len(1, Fixed32(0.5f)));
  struct Case {
    std::string record;
    bool ok;
    std::vector<int64_t> ids;
  };
  const Case cases[] = {
      {ExampleOf({Entry("ids", floats), Entry("ids", ints_1)}), true, {1}},
      {ExampleOf({Entry("ids", floats + ints_1)}), true, {1}},
      {ExampleOf({Entry("ids", ints_1 + floats + ints_2)}), true, {2}},
      {ExampleOf({Entry("ids", ints_1 + floats)}), false, {}},
      {ExampleOf({Entry("ids", ints_1), Entry("ids", floats)}), false, {}},
  };
  auto parser = MakeParser();
  for (const Case& c : cases) {
    RawBatch batch(parser->schema());
    const absl::Status s = parser->Parse(c.record, &batch);
    proto::Example ex;
    ASSERT_TRUE(ex.ParseFromString(c.record));
    const proto::Feature& feature = ex.features().feature().at("ids");
    if (c.ok) {
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(Ints(batch, 1, 0), c.ids);
      ASSERT_TRUE(feature.has_int64_list());  // the generated classes agree
      EXPECT_EQ(std::vector<int64_t>(feature.int64_list().value().begin(),
                                     feature.int64_list().value().end()),
                c.ids);
    } else {
      EXPECT_THAT(s.message(), HasSubstr("feature 'ids': expected int64_list for int64 column, "
                                         "found float_list"));
      EXPECT_EQ(batch.num_rows(), 0);
      EXPECT_TRUE(feature.has_float_list());
    }
  }
}

// Found by fuzz/example_fuzzer.cc: a 5-byte tag with bits beyond the 32nd was "tag out of range",
// while protobuf drops those bits (and refuses only tags longer than 5 bytes).
TEST(ExampleParserTest, TagsAreReadAsProtobufReadsThem) {
  const std::string one = Len(3, Len(1, Varint(1)));
  const std::string five_byte_tag = Varint((uint64_t{100} << 3) | (uint64_t{1} << 33));
  ASSERT_EQ(five_byte_tag.size(), 5u);
  const std::string record = Len(1, five_byte_tag + Varint(7) + Len(1, Entry("ids", one)));
  proto::Example ex;
  ASSERT_TRUE(ex.ParseFromString(record));
  auto parser = MakeParser();
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse(record, &batch).ok());
  EXPECT_EQ(Ints(batch, 1, 0), std::vector<int64_t>{1});

  const std::string six_byte_tag = Varint((uint64_t{100} << 3) | (uint64_t{1} << 35));
  ASSERT_EQ(six_byte_tag.size(), 6u);
  const std::string bad = Len(1, six_byte_tag + Varint(7) + Len(1, Entry("ids", one)));
  EXPECT_FALSE(ex.ParseFromString(bad));
  const absl::Status s = parser->Parse(bad, &batch);
  EXPECT_THAT(s.message(), HasSubstr("tag longer than 5 bytes"));
}

TEST(ExampleParserTest, FailureLeavesTheBatchAsItWas) {
  auto parser = MakeParser();
  RawBatch batch(parser->schema());
  proto::Example good;
  (*good.mutable_features()->mutable_feature())["label"].mutable_float_list()->add_value(4);
  ASSERT_TRUE(parser->Parse(good.SerializeAsString(), &batch).ok());
  // label decodes (a value is appended), then tags is of the wrong kind.
  const std::string bad = ExampleOf(
      {Entry("label", Len(2, Len(1, Fixed32(9)))), Entry("tags", Len(3, Len(1, Varint(1))))});
  EXPECT_FALSE(parser->Parse(bad, &batch).ok());
  EXPECT_EQ(batch.num_rows(), 1);
  EXPECT_EQ(batch.column(0).floats().size(), 1u);
  ASSERT_TRUE(parser->Parse(good.SerializeAsString(), &batch).ok());
  EXPECT_EQ(Floats(batch, 0, 1), std::vector<float>{4});
}

TEST(ExampleParserTest, MalformedBytesAreInvalidArgument) {
  const std::string ok_entry = Entry("label", Len(2, Len(1, Fixed32(1))));
  const std::string cases[] = {
      std::string("\x0a", 1),                                 // truncated length
      std::string("\x0a\x05\x0a\x03", 4),                     // length past the end
      std::string(11, '\xff'),                                // varint longer than 10 bytes
      std::string("\x00\x00", 2),                             // field number 0
      std::string("\x0f", 1),                                 // invalid wire type 7
      std::string("\x0c", 1),                                 // end group with no start
      Tag(9, 3) + Tag(9, 0) + Varint(1),                      // unterminated group
      ExampleOf({Entry("label", Len(2, Len(1, "abc")))}),     // packed floats not a multiple of 4
      ExampleOf({Entry("label", Len(2, Tag(1, 5) + "ab"))}),  // truncated fixed32
      ExampleOf({Entry("ids", Len(3, Len(1, "\x80")))}),      // truncated packed varint
      ok_entry,                                               // an entry outside any Example
  };
  auto parser = MakeParser();
  for (const std::string& record : cases) {
    RawBatch batch(parser->schema());
    absl::Status s = parser->Parse(record, &batch);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr("malformed"));
    EXPECT_EQ(batch.num_rows(), 0);
  }
}

TEST(ExampleParserTest, CreateRejectsBadSchemas) {
  Schema dup;
  dup.columns = {{"a", ValueType::kFloat}, {"a", ValueType::kInt64}};
  EXPECT_THAT(ExampleParser::Create(dup).status().message(), HasSubstr("'a' appears twice"));
  Schema bad_default;
  bad_default.columns = {{"n", ValueType::kInt64, true, "x1"}};
  EXPECT_THAT(ExampleParser::Create(bad_default).status().message(),
              HasSubstr("default 'x1' is not a valid int64"));
  Schema unnamed;
  unnamed.columns = {{"", ValueType::kFloat}};
  EXPECT_FALSE(ExampleParser::Create(unnamed).ok());
}

// --- Fuzzing: random and mutated records must never crash, and whenever both the generated
// classes and the parser accept a record, they must agree on every value. ---

// The row the generated classes see: the reference for the fast decoder.
struct RefRow {
  bool ok = true;
  std::vector<std::vector<uint32_t>> floats;  // bit patterns, so NaNs compare
  std::vector<std::vector<int64_t>> ints;
  std::vector<std::vector<std::string>> strings;
};

RefRow Reference(const Schema& schema, const std::string& record) {
  RefRow row;
  proto::Example ex;
  google::protobuf::LogSilencer quiet;  // mutated keys are often invalid UTF-8, which it logs
  if (!ex.ParseFromString(record)) return {false};
  const auto& map = ex.features().feature();
  for (const ColumnSpec& spec : schema.columns) {
    row.floats.emplace_back();
    row.ints.emplace_back();
    row.strings.emplace_back();
    auto it = map.find(spec.name);
    if (it == map.end()) continue;
    const proto::Feature& f = it->second;
    if (spec.type == ValueType::kFloat && f.has_float_list()) {
      for (float v : f.float_list().value())
        row.floats.back().push_back(std::bit_cast<uint32_t>(v));
    } else if (spec.type == ValueType::kInt64 && f.has_int64_list()) {
      for (int64_t v : f.int64_list().value()) row.ints.back().push_back(v);
    } else if (spec.type == ValueType::kString && f.has_bytes_list()) {
      for (const std::string& v : f.bytes_list().value()) row.strings.back().push_back(v);
    } else if (f.kind_case() != proto::Feature::KIND_NOT_SET) {
      return {false};  // wrong kind
    }
  }
  return row;
}

TEST(ExampleParserTest, FuzzRandomAndMutatedRecords) {
  Schema schema;  // no defaults, so rows show exactly what was decoded
  schema.columns = {
      {"label", ValueType::kFloat}, {"ids", ValueType::kInt64}, {"tags", ValueType::kString}};
  auto parser = MakeParser(schema);
  std::mt19937 rng(12345);
  auto byte = [&] { return static_cast<char>(rng() & 0xff); };

  proto::Example seed_example;
  auto& f = *seed_example.mutable_features()->mutable_feature();
  for (int i = 0; i < 3; ++i) f["label"].mutable_float_list()->add_value(0.5f * i);
  for (int i = 0; i < 4; ++i) f["ids"].mutable_int64_list()->add_value(int64_t{1} << (i * 15));
  f["tags"].mutable_bytes_list()->add_value("hello");
  f["other"].mutable_int64_list()->add_value(3);
  const std::vector<std::string> seeds = {
      seed_example.SerializeAsString(),
      ExampleOf({Entry("ids", Len(3, Tag(1, 0) + Varint(300) + Tag(1, 0) + Varint(2))),
                 Entry("label", Len(2, Tag(1, 5) + Fixed32(1)))})};

  int both_ok = 0, parse_ok = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string record;
    if (iter % 4 == 0) {
      record.resize(rng() % 64);
      for (char& c : record) c = byte();
    } else {
      record = seeds[rng() % seeds.size()];
      const int mutations = 1 + static_cast<int>(rng() % 4);
      for (int m = 0; m < mutations && !record.empty(); ++m) {
        const size_t at = rng() % record.size();
        switch (rng() % 4) {
          case 0:
            record[at] = byte();
            break;
          case 1:
            record.erase(at, 1 + rng() % 3);
            break;
          case 2:
            record.insert(at, 1, byte());
            break;
          case 3:
            record.resize(at);
            break;
        }
      }
    }
    RawBatch batch(schema);
    const absl::Status s = parser->Parse(record, &batch);
    if (!s.ok()) {
      ASSERT_TRUE(absl::IsInvalidArgument(s)) << s;
      ASSERT_EQ(batch.num_rows(), 0);
      for (int c = 0; c < batch.num_columns(); ++c) ASSERT_EQ(batch.column(c).num_values(), 0);
      continue;
    }
    ++parse_ok;
    ASSERT_EQ(batch.num_rows(), 1);
    const RefRow ref = Reference(schema, record);
    if (!ref.ok) continue;  // e.g. corrupt bytes under a feature outside the schema
    ++both_ok;
    std::vector<uint32_t> floats;
    for (float v : Floats(batch, 0, 0)) floats.push_back(std::bit_cast<uint32_t>(v));
    ASSERT_EQ(floats, ref.floats[0]);
    ASSERT_EQ(Ints(batch, 1, 0), ref.ints[1]);
    ASSERT_EQ(Strings(batch, 2, 0), ref.strings[2]);
  }
  // The mutations must exercise both outcomes, or the test proves little.
  EXPECT_GT(both_ok, 500);
  EXPECT_LT(parse_ok, 15000);
}

}  // namespace
}  // namespace shoal
