// FeatureInput: one configured input (an InputConfig, docs/config.md "input.train, input.eval")
// read as FeatureBatches -- the files expanded into tasks (StaticTaskSource), read and parsed in
// the input's format by the parallel pipeline, optionally narrowed to one side of a holdout split
// (data/split_reader.h), and transformed by the feature columns (FeatureSet).
//
//   ASSIGN_OR_RETURN(auto input, FeatureInput::Create(fs, config.features, config.train_input,
//                                                     "input.train", {}));
//   FeatureBatch batch;
//   while ((status = input->Next(&batch)).ok()) Train(batch);   // OUT_OF_RANGE at the end
//
// Formats (docs/input_formats.md): the reader and parser each uses, and the schema it produces --
//   csv, tsv       lines, CsvParser. With `header`, the columns named on line 1 (every file must
//                  have the same header), typed by the declared schema, the rest strings; without,
//                  the declared schema.
//   criteo         lines, CriteoParser: label, I1..I13, C1..C26.
//   libsvm         lines, LibsvmParser: label, ids, values.
//   tfrecord       TFRecords of tf.train.Example, ExampleParser: the declared schema (required).
//   fashion_mnist  IDX images files (data/idx_source.h): image (rows*cols floats), label.
//
// Errors from Create start with `name` ("input.train: ..."): NOT_FOUND naming a pattern that
// matches no file (or a missing file), INVALID_ARGUMENT for a bad input configuration, a feature
// column that does not fit the data (FeatureSet::Create's message) or a missing label, and the
// file system's codes for unreadable headers or vocabulary files. Errors from Next start with
// `name` too, then name the record (file:line) when the pipeline knows it.
//
// Thread safety: Next() and Stats() from one consumer thread at a time (the pipeline's own threads
// run inside); feature_set() is immutable. `fs` must outlive the FeatureInput.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/config/job_config.h"
#include "shoal/coordinator/leased_task_source.h"
#include "shoal/data/feature_column.h"
#include "shoal/data/feature_set.h"
#include "shoal/data/pipeline.h"
#include "shoal/data/raw_batch.h"
#include "shoal/io/file_systems.h"

namespace shoal {

// The schema the input's parser produces (the table above), without starting a pipeline: expands
// the globs and reads what the format needs (a CSV header of every file, the first IDX header),
// so it fails as FeatureInput::Create would on the data side.
absl::StatusOr<Schema> InputSchema(FileSystems& fs, const InputConfig& input);

// `input` as FeatureInput::Create reads it: without `require_label` (prediction), the `label`
// column is dropped from a declared schema when the CSV/TSV header does not name it.
absl::StatusOr<InputConfig> InputAsRead(FileSystems& fs, const std::string& label,
                                        const InputConfig& input, bool require_label);

// `columns` as FeatureInput::Create applies them to `schema`: without `require_label`, a label
// the schema lacks is not read (batches have empty labels).
FeatureColumns ColumnsAsRead(const FeatureColumns& columns, const Schema& schema,
                             bool require_label);

class FeatureInput {
 public:
  struct Options {
    int64_t num_epochs_override = -1;  // >= 0 replaces the config's num_epochs (0 = repeat)
    // true: the feature columns must have a label, and the data its column. false (prediction):
    // a label the data lacks is dropped, and batches have empty labels.
    bool require_label = true;
    int shard_num = 1;    // static sharding over files (StaticTaskOptions), e.g. one per worker
    int shard_index = 0;  // in [0, shard_num)
    // Tasks leased from the coordinator instead of the static task list (cluster trainers):
    // the pipeline reads the tasks it hands out and reports each task read to it.
    std::shared_ptr<LeasedTaskSource> leased;
    // Raw columns of the input to carry into FeatureBatch::passthrough (they must be in the
    // input's schema; INVALID_ARGUMENT naming the column and the schema otherwise).
    std::vector<std::string> passthrough;
    // Called from a parse thread when a task has been read to its end (with static tasks too;
    // PipelineOptions::on_task_read), e.g. to track which tasks a consumer has finished.
    std::function<void(const DataTask& task, int64_t records)> on_task_read;
  };

  // `name` ("input.train") prefixes every error.
  static absl::StatusOr<std::unique_ptr<FeatureInput>> Create(FileSystems& fs,
                                                              const FeatureColumns& columns,
                                                              const InputConfig& input,
                                                              absl::string_view name,
                                                              const Options& options);
  ~FeatureInput();
  FeatureInput(const FeatureInput&) = delete;
  FeatureInput& operator=(const FeatureInput&) = delete;

  // The next batch, into `*batch` (reusing its buffers: FeatureSet::TransformInto). OUT_OF_RANGE
  // when the input is exhausted; a pipeline error ends the input and is returned again.
  absl::Status Next(FeatureBatch* batch);

  PipelineStats Stats() const;
  // Records handed out in batches so far (all epochs).
  int64_t records() const { return Stats().records; }
  // The output layout (dense_width, sparse_specs, has_label), known before any batch.
  const FeatureSet& feature_set() const { return features_; }
  const std::string& name() const { return name_; }

 private:
  FeatureInput(std::string name, FeatureSet features, std::unique_ptr<Pipeline> pipeline);

  const std::string name_;
  const FeatureSet features_;
  const std::unique_ptr<Pipeline> pipeline_;
  RawBatch raw_;
  std::vector<std::pair<std::string, int>> passthrough_;  // name, schema index
};

}  // namespace shoal
