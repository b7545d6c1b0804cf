// The Predictor against the Estimator: a model trained from a job config, exported, and loaded
// without training code predicts exactly what Estimator::Predict does on the same rows, in every
// request form; bad rows are named.
#include "shoal/serving/predictor.h"

#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/base/status.h"
#include "shoal/base/test_dir.h"
#include "shoal/data/csv_parser.h"
#include "shoal/data/example_encoder.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/job.h"
#include "shoal/export/export_dir.h"
#include "shoal/export/export_format.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/serving/exported_parameters.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

constexpr char kCtrConfig[] = R"(model_dir: MODEL_DIR
features:
  numeric:
    - {name: x1, default_value: 0.5}
    - {name: x2}
  vocabulary:
    - {name: color, vocabulary_file: colors.txt, num_oov_buckets: 1}
  hashed:
    - {name: city}
EMBEDDING
  wide:
    - {categorical: color}
    - {categorical: city}
  label: label
model: {type: MODEL_TYPE, hidden_units: [8]}
input:
  train:
    files: [train.csv]
    format: csv
    schema: [{name: x1}, {name: x2}, {name: color, type: string}, {name: city, type: string},
             {name: label, type: int64}]
    batch_size: 32
    num_epochs: 3
run: {save_checkpoints_steps: 0, log_step_count_steps: 1000}
)";

constexpr char kMlpConfig[] = R"(model_dir: MODEL_DIR
features:
  numeric: [{name: p0}, {name: p1}, {name: p2}, {name: p3}]
  label: label
model: {type: dnn, head: multiclass, num_classes: 3, hidden_units: [16, 8]}
input:
  train:
    files: [train.csv]
    format: csv
    header: false
    schema: [{name: label, type: int64}, {name: p0}, {name: p1}, {name: p2}, {name: p3}]
    batch_size: 16
run: {save_checkpoints_steps: 0, log_step_count_steps: 1000}
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

class PredictorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = NewTestDir("predictor_test");
    ASSERT_FALSE(dir_.empty());
  }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(JoinPath(dir_, name)) << text;
  }

  // CTR rows "x1,x2,color,city,label" (x1 sometimes missing), label learnable from x1 + color.
  std::vector<std::string> CtrRows(int n, uint64_t seed) {
    Rng rng(seed);
    const char* colors[] = {"red", "green", "blue", "mauve"};
    std::vector<std::string> rows;
    for (int i = 0; i < n; ++i) {
      const float x1 = rng.Uniform() * 2 - 1;
      const float x2 = rng.Uniform() * 2 - 1;
      const int color = static_cast<int>(rng.Uniform() * 4) % 4;
      const int city = static_cast<int>(rng.Uniform() * 20) % 20;
      const int label = x1 + (color == 0 ? 0.5f : -0.2f) > 0;
      rows.push_back(absl::StrCat(i % 7 == 3 ? "" : absl::StrCat(x1), ",", x2, ",", colors[color],
                                  ",c", city, ",", label));
    }
    return rows;
  }

  // Trains `config` (MODEL_DIR and MODEL_TYPE replaced) for its epochs and exports; returns the
  // export directory and keeps the estimator for comparisons.
  std::string TrainAndExport(const std::string& config_text, const std::string& model_type) {
    const std::string config_path = JoinPath(dir_, "config.yaml");
    // A linear model takes no embeddings.
    const std::string embedding =
        model_type == "linear" ? "" : "  embedding:\n    - {categorical: city, dimension: 4}";
    Write("config.yaml", Replace(Replace(Replace(config_text, "MODEL_DIR", JoinPath(dir_, "model")),
                                         "MODEL_TYPE", model_type),
                                 "EMBEDDING\n", embedding.empty() ? "" : embedding + "\n"));
    absl::StatusOr<JobConfig> job = LoadJobConfig(fs_, config_path, {});
    EXPECT_TRUE(job.ok()) << job.status();
    job_ = *job;
    absl::StatusOr<EstimatorConfig> config =
        EstimatorConfigFromJob(fs_, job_, GlobalModelRegistry());
    EXPECT_TRUE(config.ok()) << config.status();
    absl::StatusOr<std::unique_ptr<Estimator>> estimator =
        Estimator::Create(fs_, std::move(*config));
    EXPECT_TRUE(estimator.ok()) << estimator.status();
    estimator_ = std::move(*estimator);
    absl::StatusOr<TrainResult> trained =
        estimator_->Train(InputFromConfig(fs_, job_.features, job_.train_input, "input.train"), {});
    EXPECT_TRUE(trained.ok()) << trained.status();
    absl::StatusOr<std::string> exported = estimator_->Export(JoinPath(dir_, "export"));
    EXPECT_TRUE(exported.ok()) << exported.status();
    return *exported;
  }

  // Estimator::Predict over the CSV file `name` (the training input's format).
  Predictions EstimatorPredictions(const std::string& name) {
    InputConfig input = job_.train_input;
    input.files = {JoinPath(dir_, name)};
    input.num_epochs = 1;
    input.pipeline.shuffle_buffer = 0;
    input.pipeline.drop_remainder = false;
    FeatureInput::Options options;
    options.require_label = false;
    Predictions all;
    absl::Status status =
        estimator_->Predict(InputFromConfig(fs_, job_.features, input, "input.predict", options),
                            {}, [&](const PredictBatch& batch) -> absl::Status {
                              if (all.names.empty()) {
                                for (const auto& [n, v] : batch.outputs) {
                                  all.names.push_back(n);
                                  all.values.emplace_back();
                                }
                              }
                              for (size_t i = 0; i < batch.outputs.size(); ++i) {
                                const Tensor& t = *batch.outputs[i].second;
                                std::vector<float>& dst = flat_[i];
                                dst.insert(dst.end(), t.data(), t.data() + t.size());
                              }
                              all.rows += batch.batch_size;
                              return absl::OkStatus();
                            });
    EXPECT_TRUE(status.ok()) << status;
    return all;
  }

  // Every output of `got` equals the estimator's (flat_): bit for bit when `tolerance` is 0.
  // (Matrix products may round differently for another batch size, as in any BLAS.)
  void ExpectSame(const Predictions& expected, const absl::StatusOr<Predictions>& got,
                  float tolerance = 0) {
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->rows, expected.rows);
    ASSERT_EQ(got->names, expected.names);
    for (size_t i = 0; i < got->names.size(); ++i) {
      const Tensor& t = got->values[i];
      const std::vector<float> values(t.data(), t.data() + t.size());
      if (tolerance == 0) {
        EXPECT_EQ(values, flat_[i]) << got->names[i];
        continue;
      }
      ASSERT_EQ(values.size(), flat_[i].size());
      for (size_t k = 0; k < values.size(); ++k) {
        EXPECT_NEAR(values[k], flat_[i][k], tolerance) << got->names[i] << " " << k;
      }
    }
  }

  // PredictLines in batches of `batch` rows, joined: the Estimator's batching.
  absl::StatusOr<Predictions> PredictInBatches(const Predictor& predictor,
                                               const std::vector<absl::string_view>& lines,
                                               size_t batch) {
    Predictions all;
    for (size_t begin = 0; begin < lines.size(); begin += batch) {
      const size_t n = std::min(batch, lines.size() - begin);
      ASSIGN_OR_RETURN(Predictions part,
                       predictor.PredictLines(absl::MakeConstSpan(lines.data() + begin, n)));
      if (all.names.empty()) {
        all.names = part.names;
        all.values.resize(part.names.size());
      }
      for (size_t i = 0; i < part.values.size(); ++i) {
        const Tensor& t = part.values[i];
        const int64_t width = t.size() / part.rows;
        Tensor joined(Shape{all.rows + part.rows, width});
        if (all.rows > 0)
          std::copy(all.values[i].data(), all.values[i].data() + all.values[i].size(),
                    joined.data());
        std::copy(t.data(), t.data() + t.size(), joined.data() + all.rows * width);
        all.values[i] = std::move(joined);
      }
      all.rows += part.rows;
    }
    return all;
  }

  FileSystems& fs_ = DefaultFileSystems();
  std::string dir_;
  JobConfig job_;
  std::unique_ptr<Estimator> estimator_;
  std::map<size_t, std::vector<float>> flat_;
};

TEST_F(PredictorTest, WideDeepAndLinearMatchTheEstimatorInEveryForm) {
  for (const std::string model_type : {"wide_deep", "linear"}) {
    SCOPED_TRACE(model_type);
    SetUp();
    flat_.clear();
    Write("colors.txt", "red\ngreen\nblue\n");
    Write("train.csv", "x1,x2,color,city,label\n" + absl::StrJoin(CtrRows(300, 1), "\n") + "\n");
    // One batch of the training input's batch_size (32), as the Estimator reads it: bit-identical
    // predictions (another batch size may round matrix products differently).
    std::vector<std::string> rows = CtrRows(32, 2);
    Write("test.csv", "x1,x2,color,city,label\n" + absl::StrJoin(rows, "\n") + "\n");
    const std::string export_dir = TrainAndExport(kCtrConfig, model_type);
    const Predictions expected = EstimatorPredictions("test.csv");
    ASSERT_EQ(expected.rows, 32);

    // The export is self-contained: the vocabulary was copied, the training data is not needed.
    ASSERT_EQ(std::remove(JoinPath(dir_, "colors.txt").c_str()), 0);
    ASSERT_EQ(std::remove(JoinPath(dir_, "train.csv").c_str()), 0);
    absl::StatusOr<std::unique_ptr<Predictor>> loaded = Predictor::Load(fs_, export_dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const Predictor& predictor = **loaded;
    EXPECT_EQ(predictor.global_step(), estimator_->global_step());

    // CSV lines with the label, and without it.
    std::vector<absl::string_view> lines(rows.begin(), rows.end());
    ExpectSame(expected, predictor.PredictLines(lines));
    std::vector<std::string> unlabelled;
    for (const std::string& row : rows) unlabelled.push_back(row.substr(0, row.rfind(',')));
    const std::vector<absl::string_view> unlabelled_lines(unlabelled.begin(), unlabelled.end());
    ExpectSame(expected, predictor.PredictLines(unlabelled_lines));

    // JSON instances, columns and tf.Examples of the same rows.
    nlohmann::json instances = nlohmann::json::array();
    nlohmann::json columns = {{"x1", nlohmann::json::array()},
                              {"x2", nlohmann::json::array()},
                              {"color", nlohmann::json::array()},
                              {"city", nlohmann::json::array()}};
    CsvOptions csv;
    csv.schema = predictor.input_parser().schema();
    auto parser = CsvParser::Create(csv).value();
    RawBatch raw(csv.schema);
    std::vector<std::string> examples;
    for (const std::string& line : unlabelled) {
      std::vector<std::string> f = absl::StrSplit(line, ',');
      nlohmann::json instance = {{"x2", std::stod(f[1])}, {"color", f[2]}, {"city", f[3]}};
      if (!f[0].empty()) instance["x1"] = std::stod(f[0]);
      columns["x1"].push_back(f[0].empty() ? nlohmann::json() : nlohmann::json(std::stod(f[0])));
      columns["x2"].push_back(std::stod(f[1]));
      columns["color"].push_back(f[2]);
      columns["city"].push_back(f[3]);
      instances.push_back(instance);
      ASSERT_TRUE(parser->Parse(line, &raw).ok());
      std::string bytes;
      ASSERT_TRUE(RowExampleEncoder(csv.schema).Append(raw, raw.num_rows() - 1, &bytes).ok());
      examples.push_back(bytes);
    }
    ExpectSame(expected, predictor.PredictInstances(instances));
    ExpectSame(expected, predictor.PredictColumns(columns));
    ExpectSame(expected, predictor.PredictExamples(examples));
    nlohmann::json b64 = nlohmann::json::array();
    for (const std::string& e : examples) b64.push_back({{"b64", absl::Base64Escape(e)}});
    ExpectSame(expected, predictor.PredictInstances(b64));
  }
}

TEST_F(PredictorTest, MlpMatchesTheEstimatorAndServesConcurrently) {
  Rng rng(5);
  std::string train;
  for (int i = 0; i < 300; ++i) {
    float p[4];
    for (float& v : p) v = rng.Uniform();
    const int label = p[0] > p[1] ? (p[2] > 0.5f ? 2 : 1) : 0;
    absl::StrAppend(&train, label, ",", p[0], ",", p[1], ",", p[2], ",", p[3], "\n");
  }
  Write("train.csv", train);
  const std::string test = train.substr(0, train.find('\n', 1500) + 1);  // whole lines
  Write("test.csv", test);
  const std::string export_dir = TrainAndExport(kMlpConfig, "dnn");
  const Predictions expected = EstimatorPredictions("test.csv");
  ASSERT_GT(expected.rows, 10);
  absl::StatusOr<std::unique_ptr<Predictor>> loaded = Predictor::Load(fs_, export_dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Predictor& predictor = **loaded;
  EXPECT_EQ(predictor.meta().signature.outputs[1].name, "probabilities");
  EXPECT_EQ(predictor.meta().signature.outputs[1].shape, std::vector<int64_t>{3});
  std::vector<std::string> rows = absl::StrSplit(test, '\n', absl::SkipEmpty());
  std::vector<absl::string_view> lines(rows.begin(), rows.end());
  // Batches as the Estimator's (input batch_size 16): bit for bit; all rows at once: to rounding.
  ExpectSame(expected, PredictInBatches(predictor, lines, 16));
  ExpectSame(expected, predictor.PredictLines(lines), 1e-6f);

  // Many threads at once get the same answers.
  std::vector<std::thread> threads;
  std::vector<absl::StatusOr<Predictions>> results(8);
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = PredictInBatches(predictor, lines, 16); });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& result : results) ExpectSame(expected, result);
}

// The weights of an export never change: every call that would change them is refused, and the
// rows are still there after the refusals.
TEST_F(PredictorTest, ExportedParametersAreReadOnly) {
  Write("colors.txt", "red\ngreen\nblue\n");
  Write("train.csv", "x1,x2,color,city,label\n" + absl::StrJoin(CtrRows(100, 1), "\n") + "\n");
  const std::string export_dir = TrainAndExport(kCtrConfig, "wide_deep");
  absl::StatusOr<std::unique_ptr<ExportedParameters>> params = ExportedParameters::Load(
      **fs_.For(export_dir), JoinPath(export_dir, export_format::kVariablesDir),
      estimator_->model_spec());
  ASSERT_TRUE(params.ok()) << params.status();
  const int64_t rows = (*params)->num_rows();
  ASSERT_GT(rows, 0);
  const uint64_t id = 1;
  std::vector<float> row(1);
  const std::vector<absl::Status> refused = {
      (*params)->Evict(1000000).status(),
      (*params)->Snapshot(export_dir),
      (*params)->WriteSnapshot(export_dir).status(),
      (*params)->PushSparse("wide", {&id, 1}, row, 1),
      (*params)->Lookup("wide", {&id, 1}, LookupMode::kTrain, 1, absl::MakeSpan(row)),
      (*params)->SetSyncReplicas(2),
  };
  for (const absl::Status& status : refused) {
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(status.message(), HasSubstr("read-only")) << status;
  }
  EXPECT_EQ((*params)->num_rows(), rows);
}

TEST_F(PredictorTest, BadRowsAndBrokenExportsAreNamed) {
  Write("colors.txt", "red\ngreen\nblue\n");
  Write("train.csv", "x1,x2,color,city,label\n" + absl::StrJoin(CtrRows(100, 1), "\n") + "\n");
  const std::string export_dir = TrainAndExport(kCtrConfig, "wide_deep");
  auto predictor = Predictor::Load(fs_, export_dir).value();

  const std::vector<absl::string_view> lines = {"0.1,0.2,red,c1", "abc,0.2,red,c1"};
  absl::Status status = predictor->PredictLines(lines).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("row 1: column 'x1'"));
  status = predictor->PredictLines({"0.1,0.2"}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("row 0: expected 4 fields, found 2"));

  nlohmann::json instances = nlohmann::json::parse(
      R"([{"x1": 1, "x2": 2, "color": "red", "city": "c1"}, {"x1": 1, "x2": "two"}])");
  status = predictor->PredictInstances(instances).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("row 1: column 'x2': expected a number, got \"two\""));
  status = predictor->PredictInstances(nlohmann::json::parse(R"([{"x3": 1}])")).status();
  EXPECT_THAT(status.message(),
              HasSubstr("row 0: unknown input 'x3' (inputs: x1, x2, color, city)"));
  status = predictor->PredictInstances(nlohmann::json::parse(R"([{"b64": "!!!"}])")).status();
  EXPECT_THAT(status.message(), HasSubstr("row 0: \"b64\" is not valid base64"));
  status =
      predictor->PredictColumns(nlohmann::json::parse(R"({"x1": [1, 2], "x2": [1]})")).status();
  EXPECT_THAT(status.message(), HasSubstr("column 'x2' has 1 values, column 'x1' has 2"));
  EXPECT_EQ(predictor->PredictInstances(nlohmann::json::array()).status().code(),
            absl::StatusCode::kInvalidArgument);
  // The label is accepted and ignored; a missing x1 takes its default like an empty CSV field.
  absl::StatusOr<Predictions> with_label = predictor->PredictInstances(
      nlohmann::json::parse(R"([{"x2": 2, "color": "red", "city": "c1", "label": 1}])"));
  absl::StatusOr<Predictions> from_csv = predictor->PredictLines({",2,red,c1"});
  ASSERT_TRUE(with_label.ok()) << with_label.status();
  ASSERT_TRUE(from_csv.ok()) << from_csv.status();
  EXPECT_EQ(with_label->values[1][0], from_csv->values[1][0]);

  // A corrupted weight file is refused at load, naming the file.
  auto meta = ReadExport(**fs_.For(export_dir), export_dir).value();
  std::string data_file;
  for (const ExportFile& f : meta.files) {
    if (absl::EndsWith(f.path, ".data")) data_file = JoinPath(export_dir, f.path);
  }
  FileSystem& fs = **fs_.For(export_dir);
  std::string bytes = ReadFileToString(fs, data_file).value();
  bytes[bytes.size() / 2] ^= 1;
  ASSERT_TRUE(WriteStringToFile(fs, data_file, bytes).ok());
  status = Predictor::Load(fs_, export_dir).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat(data_file, ": checksum mismatch")));
  EXPECT_EQ(Predictor::Load(fs_, dir_).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shoal
