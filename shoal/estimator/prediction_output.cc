#include "shoal/estimator/prediction_output.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

constexpr char kSuccessFile[] = "_SUCCESS";
constexpr absl::Duration kProgressInterval = absl::Seconds(30);
constexpr char kPartPrefix[] = "part-";
constexpr char kPartSuffix[] = ".jsonl";

// Row `row` of a pass-through column as JSON: its value, null when missing, an array when it
// has several.
nlohmann::json PassthroughValue(const RawColumn& column, int64_t row) {
  const auto value = [&column](int64_t i) -> nlohmann::json {
    switch (column.type()) {
      case ValueType::kFloat:
        return column.floats()[static_cast<size_t>(i)];
      case ValueType::kInt64:
        return column.int64s()[static_cast<size_t>(i)];
      case ValueType::kString:
        return std::string(column.StringAt(i));
    }
    return nullptr;
  };
  const int64_t begin = column.RowBegin(row);
  const int64_t end = column.RowEnd(row);
  if (end - begin == 0) return nullptr;
  if (end - begin == 1) return value(begin);
  nlohmann::json all = nlohmann::json::array();
  for (int64_t i = begin; i < end; ++i) all.push_back(value(i));
  return all;
}

// The task id of a part file's name, or -1 when `name` is not one.
int64_t PartTask(const std::string& name) {
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, kPartPrefix) || !absl::ConsumeSuffix(&rest, kPartSuffix)) {
    return -1;
  }
  int64_t task = -1;
  return absl::SimpleAtoi(rest, &task) && task >= 0 ? task : -1;
}

}  // namespace

std::string ClassName(const std::vector<std::string>& classes, float id) {
  if (!(id >= 0.0f) || id >= static_cast<float>(classes.size())) return "";
  return classes[static_cast<size_t>(id)];
}

std::string PredictionLines(const PredictBatch& batch, int64_t begin, int64_t end) {
  std::string lines;
  for (int64_t row = begin; row < end; ++row) {
    nlohmann::json line = nlohmann::json::object();
    if (batch.features != nullptr) {
      for (const auto& [name, column] : batch.features->passthrough) {
        line[name] = PassthroughValue(column, row);
      }
    }
    for (const auto& [name, value] : batch.outputs) {
      const int64_t width = value->size() / batch.batch_size;
      line[name] =
          std::vector<float>(value->data() + row * width, value->data() + (row + 1) * width);
      if (name == "class_ids" && batch.classes != nullptr) {
        std::vector<std::string> classes;
        for (int64_t i = row * width; i < (row + 1) * width; ++i) {
          classes.push_back(ClassName(*batch.classes, (*value)[i]));
        }
        line["classes"] = std::move(classes);
      }
    }
    lines += line.dump();
    lines += '\n';
  }
  return lines;
}

std::string PredictionFileName(int64_t task) {
  return absl::StrFormat("%s%05d%s", kPartPrefix, task, kPartSuffix);
}

absl::Status PreparePredictionOutput(FileSystem& fs, const std::string& dir) {
  RETURN_IF_ERROR_CTX(fs.RecursivelyCreateDir(dir), "creating the output directory ", dir);
  ASSIGN_OR_RETURN(const bool finished, fs.FileExists(JoinPath(dir, kSuccessFile)),
                   "checking the output directory ", dir);
  if (finished) {
    return absl::FailedPreconditionError(
        absl::StrCat("the output directory ", dir,
                     " holds a finished prediction (_SUCCESS): choose another one or delete it"));
  }
  return absl::OkStatus();
}

PredictionOutput::PredictionOutput(FileSystem& fs, std::string dir, std::string writer)
    : fs_(fs), dir_(std::move(dir)), writer_(std::move(writer)) {}

PredictionOutput::~PredictionOutput() {
  MutexLock lock(&mu_);
  for (auto& [task, file] : open_) {
    if (file != nullptr) file->Close().IgnoreError();
    fs_.DeleteFile(TempPath(task)).IgnoreError();
  }
}

std::string PredictionOutput::TempPath(int64_t task) const {
  return JoinPath(dir_, absl::StrCat(".", PredictionFileName(task), ".", writer_, ".tmp"));
}

absl::Status PredictionOutput::Append(const PredictBatch& batch) {
  if (batch.features == nullptr ||
      batch.features->origins.size() != static_cast<size_t>(batch.batch_size)) {
    return absl::InvalidArgumentError("prediction output: the batch's rows carry no data task");
  }
  const std::vector<int64_t>& origins = batch.features->origins;
  int64_t row = 0;
  while (row < batch.batch_size) {
    const int64_t task = origins[static_cast<size_t>(row)];
    if (task < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("prediction output: row ", row, " of a batch carries no data task"));
    }
    const int64_t begin = row;
    while (row < batch.batch_size && origins[static_cast<size_t>(row)] == task) ++row;
    const std::string lines = PredictionLines(batch, begin, row);
    MutexLock lock(&mu_);
    std::unique_ptr<WritableFile>& file = open_[task];
    if (file == nullptr) {
      ASSIGN_OR_RETURN(file, fs_.NewWritableFile(TempPath(task)), "prediction output of task ",
                       task);
    }
    RETURN_IF_ERROR_CTX(file->Append(lines), "writing ", TempPath(task));
  }
  MutexLock lock(&mu_);
  rows_ += batch.batch_size;
  const absl::Time now = absl::Now();
  if (now - last_log_ >= kProgressInterval) {
    last_log_ = now;
    LOG(INFO) << "prediction into " << dir_ << ": " << rows_ << " rows, " << committed_
              << " data tasks done, "
              << absl::StrFormat("%.0f",
                                 static_cast<double>(rows_) / absl::ToDoubleSeconds(now - start_))
              << " rows/s";
  }
  return absl::OkStatus();
}

absl::Status PredictionOutput::Commit(int64_t task) {
  std::unique_ptr<WritableFile> file;
  {
    MutexLock lock(&mu_);
    if (auto it = open_.find(task); it != open_.end()) {
      file = std::move(it->second);
      open_.erase(it);
    }
  }
  const std::string temp = TempPath(task);
  if (file == nullptr) {  // a task without rows
    ASSIGN_OR_RETURN(file, fs_.NewWritableFile(temp), "prediction output of task ", task);
  }
  RETURN_IF_ERROR_CTX(file->Close(), "writing ", temp);
  const std::string path = JoinPath(dir_, PredictionFileName(task));
  RETURN_IF_ERROR_CTX(fs_.RenameFile(temp, path), "moving ", temp, " to ", path);
  MutexLock lock(&mu_);
  ++committed_;
  return absl::OkStatus();
}

int64_t PredictionOutput::rows() const {
  MutexLock lock(&mu_);
  return rows_;
}

int64_t PredictionOutput::tasks_committed() const {
  MutexLock lock(&mu_);
  return committed_;
}

absl::StatusOr<std::vector<std::string>> FinishPredictionOutput(FileSystem& fs,
                                                                const std::string& dir,
                                                                int64_t tasks,
                                                                const PredictionSummary& summary) {
  ASSIGN_OR_RETURN(const std::vector<std::string> children, fs.GetChildren(dir), "listing ", dir);
  std::vector<bool> present(static_cast<size_t>(tasks), false);
  std::vector<std::string> stray;
  for (const std::string& name : children) {
    const int64_t task = PartTask(name);
    if (task >= 0 && task < tasks) {
      present[static_cast<size_t>(task)] = true;
    } else if (task >= 0 || (absl::StartsWith(name, ".part-") && absl::EndsWith(name, ".tmp"))) {
      // A part of an earlier run with more tasks, or a temporary file of an attempt that died.
      stray.push_back(name);
    }
  }
  std::vector<std::string> files;
  for (int64_t task = 0; task < tasks; ++task) {
    const std::string path = JoinPath(dir, PredictionFileName(task));
    if (!present[static_cast<size_t>(task)]) {
      return absl::DataLossError(
          absl::StrCat("the prediction of data task ", task, " is missing: no ", path));
    }
    files.push_back(path);
  }
  for (const std::string& name : stray) {
    RETURN_IF_ERROR_CTX(fs.DeleteFile(JoinPath(dir, name)), "cleaning up ", dir);
  }
  nlohmann::json j = {{"rows", summary.rows},
                      {"tasks", tasks},
                      {"global_step", summary.global_step},
                      {"checkpoint", summary.checkpoint},
                      {"files", files}};
  RETURN_IF_ERROR(WriteFileAtomically(fs, JoinPath(dir, kSuccessFile), j.dump(2) + "\n"));
  return files;
}

}  // namespace shoal
