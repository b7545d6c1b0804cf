// Feeds arbitrary bytes as a YAML job config (ParseJobConfig), with the input's lines that start
// with "#set " also applied as `--set key=value` overrides (a YAML comment, so the same text still
// parses as the file). Asserts that errors are INVALID_ARGUMENT and that an accepted config is a
// fixed point of JobConfigToYaml: parsing the written YAML gives a config that writes the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "fuzz/fuzz_util.h"
#include "shoal/config/job_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  // Configs are small; larger inputs only slow the search. (Nesting is bounded by yaml-cpp's own
  // depth limit: 8,000 levels were tried by hand and are refused cleanly.)
  if (size > 16384) return 0;
  const absl::string_view text = fuzz::AsView(data, size);
  std::vector<std::string> overrides;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, "#set ")) overrides.emplace_back(line);
  }
  // An absolute URI, so relative paths resolve the same way on the second parse.
  constexpr absl::string_view kPath = "mem://jobs/job.yaml";
  absl::StatusOr<JobConfig> config = ParseJobConfig(text, kPath, overrides);
  if (!config.ok()) {
    CHECK(absl::IsInvalidArgument(config.status())) << config.status();
    return 0;
  }
  const std::string yaml = JobConfigToYaml(*config);
  absl::StatusOr<JobConfig> again = ParseJobConfig(yaml, kPath, {});
  CHECK(again.ok()) << "JobConfigToYaml wrote a config ParseJobConfig rejects: " << again.status()
                    << "\n"
                    << yaml;
  CHECK_EQ(JobConfigToYaml(*again), yaml);
  return 0;
}
