// End to end through the input layer: generated CTR text -> byte-range tasks -> the parallel
// pipeline with the Criteo parser -> CTR feature columns, over two epochs.
#include <map>

#include "gtest/gtest.h"
#include "shoal/data/criteo_parser.h"
#include "shoal/data/ctr_features.h"
#include "shoal/data/ctr_generator.h"
#include "shoal/data/feature_set.h"
#include "shoal/data/pipeline.h"
#include "shoal/data/record_reader.h"
#include "shoal/data/task_source.h"

namespace shoal {
namespace {

TEST(CtrPipelineTest, EveryGeneratedRowTwiceOverTwoEpochsWithFeatures) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  CtrGeneratorOptions gen;
  gen.rows = 6000;
  gen.files = 3;
  gen.seed = 11;
  auto generated = GenerateCtrData(fs, "mem://ctr", gen);
  ASSERT_TRUE(generated.ok()) << generated.status();

  StaticTaskOptions tasks;
  tasks.patterns = {"mem://ctr/part-*"};
  tasks.num_epochs = 2;
  tasks.shuffle_files = true;
  tasks.split_bytes = 50000;  // byte-range tasks inside each file
  auto source = StaticTaskSource::Create(fs, tasks, RecordFormat::kText);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_GT((*source)->epoch_tasks().size(), 3u);

  std::shared_ptr<const RecordParser> parser = *CriteoParser::Create();
  PipelineOptions options;
  options.batch_size = 256;
  options.shuffle_buffer = 1000;
  options.num_parse_threads = 2;
  auto pipeline = Pipeline::Create(
      options, std::move(*source),
      [&fs](const DataTask& t) {
        return OpenRecordReader(fs, t, {RecordFormat::kText, {}});
      },
      parser);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();

  CtrFeatureOptions feature_options;
  feature_options.wide = true;
  feature_options.num_crosses = 2;
  auto features = FeatureSet::Create(CtrFeatureColumns(feature_options), parser->schema(), fs);
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_EQ(features->dense_width(), 13);

  // A row's identity: its label and all 39 feature values, as the parser read them.
  std::map<std::vector<double>, int> seen;
  double label_sum = 0;
  int64_t rows = 0;
  RawBatch batch;
  FeatureBatch feature_batch;
  absl::Status status;
  while ((status = (*pipeline)->Next(&batch)).ok()) {
    ASSERT_TRUE(features->TransformInto(batch, &feature_batch).ok());
    ASSERT_EQ(feature_batch.batch_size, batch.num_rows());
    // 26 embedding inputs + 26 wide + 2 crosses.
    ASSERT_EQ(feature_batch.sparse.size(), 54u);
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      std::vector<double> key;
      for (int c = 0; c < batch.num_columns(); ++c) {
        const RawColumn& col = batch.column(c);
        if (col.RowSize(r) == 0) {
          key.push_back(-1e300);
        } else if (col.type() == ValueType::kFloat) {
          key.push_back(col.floats()[col.RowBegin(r)]);
        } else {
          key.push_back(static_cast<double>(col.int64s()[col.RowBegin(r)]));
        }
      }
      seen[key]++;
      label_sum += feature_batch.labels[r];
    }
    rows += batch.num_rows();
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
  EXPECT_EQ(rows, 12000);
  // Generated rows are distinct (random ids and values), so each appears exactly twice.
  EXPECT_EQ(seen.size(), 6000u);
  for (const auto& [key, count] : seen) ASSERT_EQ(count, 2);
  EXPECT_NEAR(label_sum / rows, generated->positive_rate, 1e-9);
  PipelineStats stats = (*pipeline)->Stats();
  EXPECT_EQ(stats.records, 12000);
  EXPECT_GE(stats.stall_fraction(), 0.0);
  EXPECT_LE(stats.stall_fraction(), 1.0);
}

}  // namespace
}  // namespace shoal
