// The REST API over a served export base: request forms, status and metadata shapes, errors, a
// newer version swapped in and a broken one skipped; and the HTTP server's own answers (413, a
// real client over loopback).
#include "shoal/serving/rest_api.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "shoal/base/test_dir.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/job.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/serving/http_server.h"
#include "shoal/serving/served_model.h"

namespace shoal {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kConfig[] = R"(model_dir: DIR/model
features:
  numeric: [{name: x}]
  hashed: [{name: tag}]
  wide: [{categorical: tag}]
  label: y
model: {type: linear}
input:
  train:
    files: [train.csv]
    format: csv
    schema: [{name: x}, {name: tag, type: string}, {name: y, type: int64}]
    batch_size: 8
run: {save_checkpoints_steps: 0, log_step_count_steps: 1000}
)";

class RestApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = NewTestDir("rest_api_test");
    ASSERT_FALSE(dir_.empty());
    std::string config = kConfig;
    config.replace(config.find("DIR"), 3, dir_);
    std::ofstream(JoinPath(dir_, "config.yaml")) << config;
    std::ofstream train(JoinPath(dir_, "train.csv"));
    train << "x,tag,y\n";
    for (int i = 0; i < 64; ++i)
      train << (i % 8) * 0.25 - 1 << ",t" << i % 3 << "," << (i % 8 > 3) << "\n";
    train.close();
    job_ = LoadJobConfig(fs_, JoinPath(dir_, "config.yaml"), {}).value();
    estimator_ =
        Estimator::Create(fs_, EstimatorConfigFromJob(fs_, job_, GlobalModelRegistry()).value())
            .value();
    base_ = JoinPath(dir_, "export");
  }

  // Trains one more epoch and exports a new version.
  std::string TrainAndExport() {
    EXPECT_TRUE(
        estimator_->Train(InputFromConfig(fs_, job_.features, job_.train_input, "input.train"), {})
            .ok());
    absl::StatusOr<std::string> exported = estimator_->Export(base_);
    EXPECT_TRUE(exported.ok()) << exported.status();
    return *exported;
  }

  FileSystems& fs_ = DefaultFileSystems();
  std::string dir_;
  std::string base_;
  JobConfig job_;
  std::unique_ptr<Estimator> estimator_;
};

TEST_F(RestApiTest, PredictStatusMetadataAndErrors) {
  const std::string first = TrainAndExport();
  auto model = ServedModel::Start(fs_, base_, {.poll_interval = absl::ZeroDuration()}).value();
  EXPECT_TRUE(model->watching());
  RestApi api("ctr", model.get());
  const std::string version = std::string(Basename(first));

  HttpResponse rows = api.Handle("POST", "/v1/models/ctr:predict", "application/json",
                                 R"({"instances": [{"x": 0.5, "tag": "t1"}, {"x": -1}]})");
  ASSERT_EQ(rows.status, 200) << rows.body;
  json predictions = json::parse(rows.body)["predictions"];
  ASSERT_EQ(predictions.size(), 2u);
  EXPECT_EQ(predictions[0]["logistic"].size(), 1u);
  EXPECT_EQ(predictions[0]["class_ids"].size(), 1u);

  // The same rows as CSV lines (one with the label) and as columns give the same numbers.
  HttpResponse csv = api.Handle("POST", "/v1/models/ctr/versions/" + version + ":predict",
                                "text/csv; charset=utf-8", "0.5,t1,1\r\n\n-1,\n");
  ASSERT_EQ(csv.status, 200) << csv.body;
  EXPECT_EQ(json::parse(csv.body)["predictions"], predictions);
  HttpResponse columns = api.Handle("POST", "/v1/models/ctr:predict", "application/json",
                                    R"({"inputs": {"x": [0.5, -1], "tag": ["t1", null]}})");
  ASSERT_EQ(columns.status, 200) << columns.body;
  json outputs = json::parse(columns.body)["outputs"];
  EXPECT_EQ(outputs["logistic"][1], predictions[1]["logistic"]);

  HttpResponse status = api.Handle("GET", "/v1/models/ctr", "", "");
  ASSERT_EQ(status.status, 200);
  EXPECT_EQ(json::parse(status.body)["model_version_status"],
            json::parse(absl::StrCat(R"([{"version": ")", version,
                                     R"(", "state": "AVAILABLE", "status": {"error_code": "OK",)",
                                     R"( "error_message": ""}}])")));
  HttpResponse metadata = api.Handle("GET", "/v1/models/ctr/metadata", "", "");
  ASSERT_EQ(metadata.status, 200);
  json signature =
      json::parse(metadata.body)["metadata"]["signature_def"]["signature_def"]["serving_default"];
  EXPECT_EQ(signature["inputs"]["x"]["dtype"], "DT_FLOAT");
  EXPECT_EQ(signature["inputs"]["tag"]["dtype"], "DT_STRING");
  EXPECT_FALSE(signature["inputs"].contains("y"));
  EXPECT_EQ(signature["outputs"]["logistic"]["tensor_shape"]["dim"][1]["size"], "1");

  const auto error = [](const HttpResponse& r) {
    return json::parse(r.body)["error"].get<std::string>();
  };
  HttpResponse bad = api.Handle("POST", "/v1/models/ctr:predict", "application/json",
                                R"({"instances": [{"x": 1}, {"x": "high"}]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(error(bad), HasSubstr("row 1: column 'x': expected a number"));
  bad = api.Handle("POST", "/v1/models/ctr:predict", "application/json", "{\"instances\": [");
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(error(bad), HasSubstr("not valid JSON"));
  bad = api.Handle("POST", "/v1/models/ctr:predict", "application/json", R"({"rows": []})");
  EXPECT_EQ(bad.status, 400);
  bad = api.Handle("POST", "/v1/models/ctr:predict", "text/csv", "1,t1,0,extra,fields\n");
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(error(bad), HasSubstr("row 0:"));
  EXPECT_EQ(api.Handle("POST", "/v1/models/other:predict", "application/json", "{}").status, 404);
  EXPECT_EQ(api.Handle("POST", "/v1/models/ctr/versions/7:predict", "text/csv", "1,t\n").status,
            404);
  EXPECT_EQ(api.Handle("GET", "/v1/models/ctr/versions/7", "", "").status, 404);
  EXPECT_EQ(api.Handle("GET", "/v2/whatever", "", "").status, 404);
  EXPECT_EQ(api.Handle("GET", "/v1/models/ctr:predict", "", "").status, 405);
}

// Data as users have it: ", " separated lines, a token list and string labels. The export keeps
// skip_initial_space and list_separator, so CSV requests read like the training file, and the
// responses name each row's class beside its class id.
TEST_F(RestApiTest, MessyCsvLinesAndClassNames) {
  std::ofstream(JoinPath(dir_, "messy.yaml")) << "model_dir: " << dir_ << R"(/messy
features:
  hashed: [{name: words}]
  wide: [{categorical: words}]
  label: answer
  label_vocabulary: ["no", "yes"]
model: {type: linear}
wide_optimizer: {name: ftrl, learning_rate: 0.5}
input:
  train:
    files: [messy.csv]
    format: csv
    header: false
    skip_initial_space: true
    schema: [{name: words, type: string, list_separator: " "}, {name: answer, type: string}]
    batch_size: 8
    num_epochs: 20
run: {save_checkpoints_steps: 0, log_step_count_steps: 1000}
)";
  {
    std::ofstream train(JoinPath(dir_, "messy.csv"));
    for (int i = 0; i < 16; ++i) train << "good fine, yes\nbad  awful, no\nfine, yes\nawful, no\n";
  }
  const JobConfig job = LoadJobConfig(fs_, JoinPath(dir_, "messy.yaml"), {}).value();
  auto estimator =
      Estimator::Create(fs_, EstimatorConfigFromJob(fs_, job, GlobalModelRegistry()).value())
          .value();
  ASSERT_TRUE(
      estimator->Train(InputFromConfig(fs_, job.features, job.train_input, "input.train"), {})
          .ok());
  const std::string base = JoinPath(dir_, "messy_export");
  const absl::StatusOr<std::string> exported = estimator->Export(base);
  ASSERT_TRUE(exported.ok()) << exported.status();
  std::ifstream export_json(JoinPath(*exported, "export.json"));
  const json signature = json::parse(export_json)["signature"];
  EXPECT_EQ(signature["skip_initial_space"], true);
  EXPECT_EQ(signature["inputs"][0]["list_separator"], " ");
  auto model = ServedModel::Start(fs_, base, {.poll_interval = absl::ZeroDuration()}).value();
  RestApi api("m", model.get());

  // With the label (2 fields) and without (1 field); spaces after the comma and runs of spaces
  // between words as in training.
  HttpResponse csv = api.Handle("POST", "/v1/models/m:predict", "text/csv",
                                "good  fine, no\nbad, yes\nfine\nawful, \"no, really\"\n");
  ASSERT_EQ(csv.status, 200) << csv.body;
  const json rows = json::parse(csv.body)["predictions"];
  ASSERT_EQ(rows.size(), 4u);
  // (The last line's label is quoted after the space: 2 fields, not 3.)
  EXPECT_EQ(rows[3]["classes"], json::parse(R"(["no"])"));
  EXPECT_EQ(rows[0]["classes"], json::parse(R"(["yes"])"));
  EXPECT_EQ(rows[0]["class_ids"], json::parse("[1.0]"));
  EXPECT_EQ(rows[1]["classes"], json::parse(R"(["no"])"));
  EXPECT_EQ(rows[2]["classes"], json::parse(R"(["yes"])"));
  HttpResponse columns = api.Handle("POST", "/v1/models/m:predict", "application/json",
                                    R"({"inputs": {"words": [["good", "fine"], "awful"]}})");
  ASSERT_EQ(columns.status, 200) << columns.body;
  EXPECT_EQ(json::parse(columns.body)["outputs"]["classes"], json::parse(R"([["yes"], ["no"]])"));
}

TEST_F(RestApiTest, NewerVersionsAreSwappedInAndBrokenOnesSkipped) {
  const std::string first = TrainAndExport();
  auto model = ServedModel::Start(fs_, base_, {.poll_interval = absl::ZeroDuration()}).value();
  EXPECT_EQ(model->Current()->dir(), first);
  EXPECT_FALSE(model->Poll().value());

  const std::string second = TrainAndExport();
  std::shared_ptr<const Predictor> old = model->Current();
  EXPECT_TRUE(model->Poll().value());
  EXPECT_EQ(model->Current()->dir(), second);
  EXPECT_GT(model->Current()->global_step(), old->global_step());
  EXPECT_EQ(old->dir(), first);  // still usable by requests that hold it

  // A newer version with a corrupt file: logged, reported, not served.
  const std::string third = TrainAndExport();
  ASSERT_TRUE(WriteStringToFile(**fs_.For(third), JoinPath(third, "config.yaml"), "junk").ok());
  EXPECT_FALSE(model->Poll().value());
  EXPECT_EQ(model->Current()->dir(), second);
  std::vector<VersionStatus> versions = model->Versions();
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0].version, std::stoll(std::string(Basename(third))));
  EXPECT_EQ(versions[0].state, "END");
  EXPECT_THAT(versions[0].error, HasSubstr("config.yaml"));
  EXPECT_EQ(versions[1].state, "AVAILABLE");
  EXPECT_FALSE(model->Poll().value());  // not retried

  // A good version copied under a newer number is served once, under that number (no reload loop).
  const int64_t copied = std::stoll(std::string(Basename(third))) + 50;
  std::filesystem::copy(second, JoinPath(base_, absl::StrCat(copied)),
                        std::filesystem::copy_options::recursive);
  EXPECT_TRUE(model->Poll().value());
  EXPECT_EQ(model->Current()->version(), copied);
  EXPECT_FALSE(model->Poll().value());

  // Starting on the base now skips the broken newest version.
  std::filesystem::remove_all(JoinPath(base_, absl::StrCat(copied)));
  auto restarted = ServedModel::Start(fs_, base_, {.poll_interval = absl::ZeroDuration()}).value();
  EXPECT_EQ(restarted->Current()->dir(), second);
  EXPECT_EQ(ServedModel::Start(fs_, dir_).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RestApiTest, HttpServerAnswersOverLoopbackAndRefusesLargeBodies) {
  TrainAndExport();
  auto model = ServedModel::Start(fs_, base_, {.poll_interval = absl::ZeroDuration()}).value();
  RestApi api("ctr", model.get());
  auto server = HttpServer::Bind(&api, {.port = 0, .threads = 2, .max_request_bytes = 200}).value();
  ASSERT_GT(server->port(), 0);
  std::thread serving([&] { EXPECT_TRUE(server->Serve().ok()); });
  httplib::Client client("127.0.0.1", server->port());
  httplib::Result ok =
      client.Post("/v1/models/ctr:predict", R"({"instances": [{"x": 1}]})", "application/json");
  for (int i = 0; i < 100 && !ok; ++i) {  // the listener may not be up yet
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ok = client.Post("/v1/models/ctr:predict", R"({"instances": [{"x": 1}]})", "application/json");
  }
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(json::parse(ok->body)["predictions"].size(), 1u);
  httplib::Result large =
      client.Post("/v1/models/ctr:predict", std::string(1000, ' '), "application/json");
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 413);
  EXPECT_THAT(json::parse(large->body)["error"].get<std::string>(), HasSubstr("200 bytes"));
  server->Stop();
  serving.join();
}

}  // namespace
}  // namespace shoal
