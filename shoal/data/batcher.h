// Batcher: the shuffle-buffer and batching stage of the input pipeline.
//
// Chunks of parsed records go in; batches of exactly `batch_size` records come out through the
// emit callback (the last one may be smaller, see FlushPartial). With shuffle_buffer > 1, records
// pass through a buffer of that many records and each output record is drawn uniformly from the
// buffer (TF's `shuffle(buffer_size, seed)`), using a seeded generator, so the output order is a
// pure function of the input order and the seed. Without shuffling, records keep their order and
// are copied a range at a time.
//
// Not thread-safe: owned by the pipeline's assembler thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "shoal/data/raw_batch.h"
#include "shoal/tensor/random.h"

namespace shoal {

class Batcher {
 public:
  // Receives each finished batch; returns false when the consumer is gone (stop early).
  using EmitFn = std::function<bool(RawBatch batch)>;
  // Receives each chunk whose records have all left, for reuse (its memory is warm and sized);
  // unset: chunks are freed.
  using RecycleFn = std::function<void(std::unique_ptr<RawBatch> chunk)>;

  Batcher(const Schema& schema, int64_t batch_size, int64_t shuffle_buffer, uint64_t seed,
          EmitFn emit, RecycleFn recycle = nullptr);

  // Adds a chunk's records. Returns false if an emit returned false.
  bool Add(std::unique_ptr<RawBatch> chunk);
  // Emits every record still in the shuffle buffer (at an epoch's end); the partial batch stays.
  bool DrainBuffer();
  // Emits the partial batch, if it holds any record.
  bool FlushPartial();

  int64_t buffered_records() const { return static_cast<int64_t>(refs_.size()); }

 private:
  bool EmitRandomRecord();
  bool AppendToBatch(const RawBatch& chunk, int64_t begin, int64_t end);
  void Release(uint32_t chunk_index);

  const Schema schema_;
  const int64_t batch_size_;
  const int64_t shuffle_buffer_;
  const EmitFn emit_;
  const RecycleFn recycle_;
  Rng rng_;
  RawBatch current_;
  // Shuffle buffer: records are (chunk index, row) references into chunks_ kept alive until
  // their last record leaves; freed chunk indices are reused.
  std::vector<std::unique_ptr<RawBatch>> chunks_;
  std::vector<int64_t> remaining_;
  std::vector<uint32_t> free_chunks_;
  std::vector<std::pair<uint32_t, uint32_t>> refs_;
};

}  // namespace shoal
