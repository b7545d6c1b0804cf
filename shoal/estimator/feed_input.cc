#include "shoal/estimator/feed_input.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/data/feature_set.h"
#include "shoal/estimator/input.h"

namespace shoal {

absl::Status FeedQueue::Push(std::shared_ptr<const RawBatch> batch) {
  if (batch == nullptr || batch->num_rows() == 0) {
    return absl::InvalidArgumentError("a fed batch needs at least one row");
  }
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return pending_ == nullptr || closed_ || detached_; });
  if (closed_) return absl::FailedPreconditionError("the feed is closed: no batch after Close");
  if (detached_) {
    return absl::FailedPreconditionError("the run that took the fed batches has ended");
  }
  pending_ = std::move(batch);
  cv_.notify_all();
  return absl::OkStatus();
}

void FeedQueue::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

std::shared_ptr<const RawBatch> FeedQueue::Pop() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return pending_ != nullptr || closed_; });
  std::shared_ptr<const RawBatch> batch = std::move(pending_);
  pending_ = nullptr;
  if (batch != nullptr) ++taken_;
  cv_.notify_all();
  return batch;
}

void FeedQueue::Detach() {
  std::lock_guard lock(mu_);
  detached_ = true;
  pending_ = nullptr;
  cv_.notify_all();
}

bool FeedQueue::detached() const {
  std::lock_guard lock(mu_);
  return detached_;
}

int64_t FeedQueue::taken() const {
  std::lock_guard lock(mu_);
  return taken_;
}

namespace {

class FeedSource final : public BatchSource {
 public:
  FeedSource(FeatureSet features, std::shared_ptr<FeedQueue> queue, std::string name)
      : features_(std::move(features)), queue_(std::move(queue)), name_(std::move(name)) {}
  ~FeedSource() override { queue_->Detach(); }
  FeedSource(const FeedSource&) = delete;
  FeedSource& operator=(const FeedSource&) = delete;

  std::vector<ColumnMisses> VocabularyMisses() const override {
    return features_.VocabularyMisses();
  }

  absl::Status Next(FeatureBatch* batch) override {
    const std::shared_ptr<const RawBatch> raw = queue_->Pop();
    if (raw == nullptr) return absl::OutOfRangeError(absl::StrCat(name_, ": end of input"));
    ++batches_;
    if (raw->num_columns() != static_cast<int>(features_.schema().columns.size())) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": fed batch ", batches_, " has ",
                                                     raw->num_columns(), " columns, the feed ",
                                                     features_.schema().columns.size()));
    }
    absl::Status status = features_.TransformInto(*raw, batch);
    if (!status.ok()) return AnnotateCat(status, name_, ": fed batch ", batches_);
    return absl::OkStatus();
  }

 private:
  const FeatureSet features_;
  const std::shared_ptr<FeedQueue> queue_;
  const std::string name_;
  int64_t batches_ = 0;
};

}  // namespace

InputFn FeedInputFn(FileSystems& fs, const FeatureColumns& columns, const Schema& schema,
                    std::shared_ptr<FeedQueue> queue, const FeedInputOptions& options,
                    std::string name) {
  return [&fs, columns, schema, queue = std::move(queue), options,
          name = std::move(name)]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
    ASSIGN_OR_RETURN(
        FeatureSet features,
        FeatureSet::Create(ColumnsAsRead(columns, schema, options.require_label), schema, fs),
        name);
    return std::make_unique<FeedSource>(std::move(features), queue, name);
  };
}

}  // namespace shoal
