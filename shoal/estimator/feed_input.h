// FeedInput: an Estimator input whose batches a caller hands over one at a time -- the Python
// package's `Session.run(train_op, feed_dict=...)`, where each run is exactly one step on exactly
// the rows fed.
//
//   auto feed = std::make_shared<FeedQueue>();
//   InputFn input = FeedInputFn(fs, columns, schema, feed, {.require_label = false}, "feed_dict");
//   std::thread trainer([&] { result = estimator.Train(input, {}); });
//   RETURN_IF_ERROR(feed->Push(batch));   // one step
//   ...
//   feed->Close();                        // end of input: Train returns after the last batch
//
// Push blocks while a batch is still waiting to be taken (the queue holds one), so the producer
// never runs ahead of the steps. Each pushed batch is one FeatureBatch, whatever its row count;
// an empty batch is refused. Close ends the input once the batches pushed before it are taken;
// Push after Close is FAILED_PRECONDITION, and so is a Push while nobody will take it any more
// (the consumer's source was destroyed: the run ended).
//
// Errors: Next fails with the transform's error for bad values (naming `name` and the batch's
// number) and with INVALID_ARGUMENT when the columns do not fit the schema.
//
// Thread safety: FeedQueue is safe for one producer and one consumer thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shoal/data/feature_column.h"
#include "shoal/data/raw_batch.h"
#include "shoal/estimator/estimator.h"
#include "shoal/io/file_systems.h"

namespace shoal {

class FeedQueue {
 public:
  // Hands `batch` to the consumer; waits while the previous batch is not taken yet.
  [[nodiscard]] absl::Status Push(std::shared_ptr<const RawBatch> batch);
  // No batch after those already pushed.
  void Close();
  // The consumer: the next batch, waiting for it; nullptr at the end (closed and drained).
  std::shared_ptr<const RawBatch> Pop();
  // The consumer is gone (its run ended): a waiting or later Push fails.
  void Detach();
  // Batches taken so far.
  int64_t taken() const;
  // Whether the consumer is gone: a batch pushed and not taken by then was never trained.
  bool detached() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const RawBatch> pending_;
  bool closed_ = false;
  bool detached_ = false;
  int64_t taken_ = 0;
};

struct FeedInputOptions {
  // false: a label the schema lacks is not read (a session's graph computes its own loss).
  bool require_label = false;
};

// The input over `queue`, each Next one pushed batch; `name` prefixes its errors. One source at a
// time: a second call of the InputFn while the first source lives shares the queue.
InputFn FeedInputFn(FileSystems& fs, const FeatureColumns& columns, const Schema& schema,
                    std::shared_ptr<FeedQueue> queue, const FeedInputOptions& options,
                    std::string name);

}  // namespace shoal
