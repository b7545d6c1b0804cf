// Test-only helper for tensorboard_compat_test.py (not installed): writes event files with
// EventWriter and reads them with ReadEvents, so Python can compare them with TensorBoard.
//
//   event_tool write LOG_DIR [SUFFIX]  writes sample scalars (float32 edge values, several tags per
//                                      step, a step beyond 2^32) to a new event file in LOG_DIR;
//                                      prints the file's path, then one JSON line per value written
//                                      (without wall_time), with the double value passed in
//   event_tool live LOG_DIR            writes steps 1-3 of "loss", flushes, prints "flushed", waits
//                                      for a line on stdin, writes steps 4-5, closes, prints
//                                      "closed": TensorBoard must see data while a writer runs
//   event_tool read FILE               prints the file's scalars as JSON lines
//
// JSON lines are {"step": S, "wall_time": W, "tag": T, "value": V}; numbers print with 17
// significant digits (exact for doubles), NaN/Infinity as Python's json reads them. Exit 1 with the
// status on stderr on any error.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "shoal/base/status.h"
#include "shoal/io/file_systems.h"
#include "shoal/summary/event_reader.h"
#include "shoal/summary/event_writer.h"

namespace shoal {
namespace {

std::string NumberJson(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0 && std::signbit(v)) return "-0.0";
  return absl::StrFormat("%.17g", v);
}

std::string StringJson(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(c);  // UTF-8 passes through
    }
  }
  return out + "\"";
}

// One JSON line; wall_time is left out when negative.
void PrintScalar(int64_t step, double wall_time, absl::string_view tag, double value) {
  std::string line = absl::StrFormat(R"({"step": %d, )", step);
  if (wall_time >= 0) absl::StrAppendFormat(&line, R"("wall_time": %.17g, )", wall_time);
  absl::StrAppendFormat(&line, R"("tag": %s, "value": %s})", StringJson(tag), NumberJson(value));
  std::cout << line << "\n";
}

struct Sample {
  int64_t step;
  std::vector<std::pair<std::string, double>> values;
};

// Values a training run writes, plus float32 edge cases.
std::vector<Sample> Samples() {
  return {
      {0, {{"loss", 0.6931471805599453}, {"eval/auc", 0.5}}},
      {1, {{"loss", 0.1}, {"examples_per_sec", 123456.789}, {"input/stall_fraction", 1.0 / 3}}},
      {2, {{"loss", 0.05}, {"embedding/user_id/rows", 123456789}}},
      {10, {{"edge/tiny", 1e-45}, {"edge/max", 3.4028234663852886e38}, {"edge/negzero", -0.0}}},
      {11, {{"edge/nan", std::nan("")}, {"edge/inf", INFINITY}, {"edge/rounds_to_inf", 1e300}}},
      {int64_t{1} << 40, {{"loss", -2.5}, {"caf\xc3\xa9/\xce\xbb", 7}}},
  };
}

absl::Status Write(FileSystems& fs, absl::string_view log_dir, absl::string_view suffix) {
  ASSIGN_OR_RETURN(auto writer, EventWriter::Create(fs, log_dir, suffix));
  std::cout << writer->path() << "\n";
  for (const Sample& sample : Samples()) {
    std::vector<ScalarValue> values;
    for (const auto& [tag, value] : sample.values) values.push_back({tag, value});
    RETURN_IF_ERROR(writer->AddScalars(sample.step, values));
    for (const auto& [tag, value] : sample.values) {
      PrintScalar(sample.step, -1, tag, value);
    }
  }
  return writer->Close();
}

absl::Status Live(FileSystems& fs, absl::string_view log_dir) {
  ASSIGN_OR_RETURN(auto writer, EventWriter::Create(fs, log_dir));
  for (int step = 1; step <= 3; ++step)
    RETURN_IF_ERROR(writer->AddScalar("loss", 1.0 / step, step));
  RETURN_IF_ERROR(writer->Flush());
  std::cout << "flushed" << std::endl;
  std::string line;
  std::getline(std::cin, line);
  for (int step = 4; step <= 5; ++step)
    RETURN_IF_ERROR(writer->AddScalar("loss", 1.0 / step, step));
  RETURN_IF_ERROR(writer->Close());
  std::cout << "closed" << std::endl;
  return absl::OkStatus();
}

absl::Status Read(FileSystems& fs, absl::string_view path) {
  ASSIGN_OR_RETURN(std::vector<ScalarEvent> events, ReadEvents(fs, path));
  for (const ScalarEvent& e : events) PrintScalar(e.step, e.wall_time, e.tag, e.value);
  return absl::OkStatus();
}

absl::Status Run(const std::vector<std::string>& args) {
  FileSystems fs;
  RETURN_IF_ERROR(RegisterBuiltinFileSystems(fs));
  if (args.size() >= 2 && args.size() <= 3 && args[0] == "write") {
    return Write(fs, args[1], args.size() == 3 ? args[2] : "");
  }
  if (args.size() == 2 && args[0] == "live") return Live(fs, args[1]);
  if (args.size() == 2 && args[0] == "read") return Read(fs, args[1]);
  return absl::InvalidArgumentError(
      "usage: event_tool write LOG_DIR [SUFFIX] | live LOG_DIR | read FILE");
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) {
  absl::Status status = shoal::Run(std::vector<std::string>(argv + 1, argv + argc));
  if (!status.ok()) {
    std::cerr << status << "\n";
    return 1;
  }
  return 0;
}
