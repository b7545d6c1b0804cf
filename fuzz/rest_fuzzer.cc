// Feeds arbitrary bytes as the body of a REST request to a served model (RestApi::Handle, what
// `shoal serve` runs for each HTTP request): JSON with "instances" (objects, b64 Examples) or
// "inputs", and CSV bodies; the first byte picks the content type and the path. The model, a tiny
// linear one over a CSV schema of every type, is trained and exported to mem:// once at start-up.
// Asserts that every answer is 200, 400 or 404 (never 500: bad input is the client's error) and
// that its body is valid JSON.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "nlohmann/json.hpp"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/input.h"
#include "shoal/estimator/job.h"
#include "shoal/serving/rest_api.h"
#include "shoal/serving/served_model.h"

namespace shoal::fuzz {
namespace {

constexpr char kConfig[] = R"(model_dir: mem://rest/model
features:
  numeric: [{name: x}, {name: n}]
  hashed: [{name: tag}]
  wide: [{categorical: tag}]
  label: y
model: {type: linear}
input:
  train:
    files: [mem://rest/train.csv]
    format: csv
    schema: [{name: x}, {name: tag, type: string}, {name: n, type: int64, default: 3},
             {name: y, type: int64}]
    batch_size: 8
run: {save_checkpoints_steps: 0, log_step_count_steps: 1000}
)";

// Trains one epoch, exports, and serves the export base. Called once.
std::unique_ptr<ServedModel> StartModel() {
  QuietLogs();
  FileSystems& fs = DefaultFileSystems();
  FileSystem* mem = *fs.For("mem://");
  CHECK(mem->RecursivelyCreateDir("mem://rest").ok());
  std::string train = "x,tag,n,y\n";
  for (int i = 0; i < 64; ++i)
    absl::StrAppend(&train, i % 8, ",t", i % 3, ",", i, ",", i % 2, "\n");
  CHECK(WriteStringToFile(*mem, "mem://rest/train.csv", train).ok());
  JobConfig job = *ParseJobConfig(kConfig, "mem://rest/config.yaml", {});
  auto estimator = *Estimator::Create(fs, *EstimatorConfigFromJob(fs, job, GlobalModelRegistry()));
  CHECK(
      estimator->Train(InputFromConfig(fs, job.features, job.train_input, "input.train"), {}).ok());
  CHECK(estimator->Export("mem://rest/export").ok());
  auto model = ServedModel::Start(fs, "mem://rest/export", {.poll_interval = absl::ZeroDuration()});
  CHECK(model.ok()) << model.status();
  return *std::move(model);
}

}  // namespace
}  // namespace shoal::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  static const ServedModel* model = fuzz::StartModel().release();
  static const RestApi api("m", model);
  if (size == 0) return 0;
  static constexpr absl::string_view kTypes[] = {"application/json", "text/csv", "text/plain", ""};
  static constexpr absl::string_view kPaths[] = {"/v1/models/m:predict",
                                                 "/v1/models/m/versions/1:predict"};
  const absl::string_view type = kTypes[data[0] & 3];
  const absl::string_view path = kPaths[(data[0] >> 2) & 1];
  const HttpResponse response = api.Handle("POST", path, type, fuzz::AsView(data + 1, size - 1));
  CHECK(response.status == 200 || response.status == 400 || response.status == 404)
      << response.status << " " << response.body;
  CHECK(nlohmann::json::accept(response.body)) << response.body;
  return 0;
}
