#include "shoal/spec/model_spec.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/spec/model_spec_test_util.h"

namespace shoal {
namespace {

using ps_test::WideDeepSpec;
using ::testing::HasSubstr;

TEST(TableSeedTest, DependsOnSpecSeedAndTableName) {
  const ModelSpec a = WideDeepSpec(1), b = WideDeepSpec(2);
  EXPECT_NE(TableSeed(a, "emb/C1"), TableSeed(a, "emb/C2"));
  EXPECT_NE(TableSeed(a, "emb/C1"), TableSeed(b, "emb/C1"));
  EXPECT_EQ(TableSeed(a, "emb/C1"), TableSeed(WideDeepSpec(1), "emb/C1"));
  // FNV-1a 64 test vectors: the hash is a fixed function of the bytes.
  EXPECT_EQ(StableNameHash(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(StableNameHash("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(StableNameHash("foobar"), 0x85944171f73967e8ULL);
}

TEST(DenseInitialValueTest, DependsOnSeedAndNameOnly) {
  const ModelSpec spec = WideDeepSpec(1);
  const DenseVariableSpec& kernel = spec.dense[0];
  const Tensor v = DenseInitialValue(spec, kernel);
  EXPECT_EQ(v.shape(), kernel.shape);
  EXPECT_TRUE(ps_test::SameTensor(v, DenseInitialValue(WideDeepSpec(1), kernel)));
  EXPECT_FALSE(ps_test::SameTensor(v, DenseInitialValue(WideDeepSpec(2), kernel)));
  DenseVariableSpec renamed = kernel;
  renamed.name = "other";
  EXPECT_FALSE(ps_test::SameTensor(v, DenseInitialValue(spec, renamed)));
  const Tensor c = DenseInitialValue(spec, spec.dense[4]);  // constant 0.5
  EXPECT_EQ(c[0], 0.5f);
}

TEST(ModelSpecTest, EqualityComparesEveryField) {
  ModelSpec a = WideDeepSpec(), b = WideDeepSpec();
  EXPECT_EQ(a, b);
  b.groups[0].options.l1 = 0.5f;
  EXPECT_NE(a, b);
  b = a;
  b.tables[2].initializer.maxval = 0.5f;
  EXPECT_NE(a, b);
  b = a;
  b.tables[1].min_count = 3;
  EXPECT_NE(a, b);
  b = a;
  b.dense[0].initializer.stddev = 1.0f;
  EXPECT_NE(a, b);
}

class ValidateModelSpecTest : public ::testing::Test {
 protected:
  // The error of validating spec_ after `edit`; expects INVALID_ARGUMENT.
  template <typename Edit>
  std::string Error(Edit edit) {
    ModelSpec spec = WideDeepSpec();
    edit(spec);
    absl::Status s = ValidateModelSpec(spec);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    return std::string(s.message());
  }
};

TEST_F(ValidateModelSpecTest, AcceptsTheTestSpec) {
  EXPECT_TRUE(ValidateModelSpec(WideDeepSpec()).ok());
  EXPECT_TRUE(ValidateModelSpec(ModelSpec{}).ok());  // an empty model is valid
}

TEST_F(ValidateModelSpecTest, ErrorsNameTheField) {
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups.push_back(s.groups[0]); }),
              HasSubstr("group name 'wide' is repeated"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups[1].name = ""; }), HasSubstr("groups[1].name"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[1].name = s.dense[0].name; }),
              HasSubstr("'dnn/hidden_0/kernel' is repeated"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[0].name = "dnn/hidden_0/bias"; }),
              HasSubstr("'dnn/hidden_0/bias' is repeated"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[1].name = "emb@part-00000-of-00001"; }),
              HasSubstr("reserved"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[0].name = "w@rows-0-4"; }),
              HasSubstr("reserved for checkpoint dense slices"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[2].group = "nope"; }),
              HasSubstr("dense variable 'dnn/logits/kernel' names unknown group 'nope'"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[1].group = "nope"; }),
              HasSubstr("table 'emb/C1' names unknown group 'nope'"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[1].dim = 0; }),
              HasSubstr("table 'emb/C1' dim must be in [1, 16384], got 0"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[1].min_count = 0; }),
              HasSubstr("table 'emb/C1' min_count"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[2].initializer.minval = 1.0f; }),
              HasSubstr("table 'emb/C2'"));
  EXPECT_THAT(Error([](ModelSpec& s) {
                s.dense[0].shape = {8, 0};
              }),
              HasSubstr("dense variable 'dnn/hidden_0/kernel': shape [8, 0]"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[2].initializer.stddev = 0; }),
              HasSubstr("dense variable 'dnn/logits/kernel': initializer.stddev"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[0].shape = {}; }), HasSubstr("glorot_uniform"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups[1].options.learning_rate = -1; }),
              HasSubstr("group 'deep' options"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups[1].options.learning_rate = -1; }),
              HasSubstr("learning_rate"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups[0].options.name = "rmsprop"; }),
              HasSubstr("group 'wide' options"));
}

}  // namespace
}  // namespace shoal
