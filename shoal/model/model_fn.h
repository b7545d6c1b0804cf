// The model function contract: model_fn(features, labels, mode, params) -> EstimatorSpec.
//
// A model is a function that builds one step's graph (nn/autodiff.h) from a batch. It reads the
// batch and declares its parameters through a ModelContext -- the `features` argument:
//
//   absl::StatusOr<EstimatorSpec> MyModel(ModelContext& features, const Tensor& labels, Mode mode,
//                                         const ModelConfig& params) {
//     nn::Var x = features.DenseInput();                           // [B, dense width]
//     nn::Var e = features.Embedding("user_embedding");            // [B, dim], pooled
//     nn::Var h = nn::Concat({x, e});
//     nn::Var w = features.Variable("out/kernel", {width, 1}, GlorotUniform(), "deep");
//     nn::Var logits = nn::MatMul(h, w);
//     return BinaryHead().CreateSpec(features, logits, labels, mode);
//   }
//
// The Estimator calls the model once to *record* its parameters (the ModelSpec the parameter
// servers are initialised with), then once per batch with the parameters bound to the values
// pulled from the PS. Parameters are therefore declared by name, never created by the model
// itself; a name asked for with a different shape, table dim or group is an error.
//
// Errors: ModelContext calls do not return a Status (model code stays readable). The first
// misuse -- an unknown feature, a shape that disagrees, a variable not recorded -- is kept as
// the context's status, later calls return placeholders, and the Estimator reports the status
// (INVALID_ARGUMENT naming the feature or variable) once the model returns. ValidateSpec checks
// what each mode requires of the returned EstimatorSpec.
//
// Thread safety: a ModelContext belongs to one training thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/config/job_config.h"
#include "shoal/data/feature_column.h"
#include "shoal/nn/autodiff.h"
#include "shoal/nn/metrics.h"
#include "shoal/nn/ops_sparse.h"
#include "shoal/parameter_client/parameter_client.h"
#include "shoal/parameter_client/sparse_batch.h"
#include "shoal/rpc/parameter_service.h"
#include "shoal/tensor/random.h"

namespace shoal {

enum class Mode { kTrain, kEval, kPredict };
absl::string_view ModeName(Mode mode);  // "TRAIN", "EVAL", "PREDICT"

// One evaluation metric fed by a batch: the Estimator creates the metric with `make` at the start
// of an evaluation and calls Update(predictions, labels) for every batch.
struct MetricOp {
  std::string name;
  std::function<std::unique_ptr<nn::Metric>()> make;
  Tensor predictions;
  Tensor labels;
  std::vector<float> weights;  // per example; empty = 1 each
};

// What a model returns. Required per mode (ValidateSpec):
//   TRAIN:   loss (one element, depending on a parameter)
//   EVAL:    loss; metrics optional (the Estimator always adds the mean "loss")
//   PREDICT: predictions, each with the batch size as first dimension
struct EstimatorSpec {
  Mode mode = Mode::kTrain;
  nn::Var loss;
  // name -> value, e.g. "probabilities" [B,C], "class_ids" [B,1], "logits" [B,C].
  std::vector<std::pair<std::string, nn::Var>> predictions;
  std::vector<MetricOp> metrics;
};

// INVALID_ARGUMENT saying which requirement of `mode` the spec misses.
[[nodiscard]] absl::Status ValidateSpec(const EstimatorSpec& spec, Mode mode, int64_t batch_size);

// The shape of a model's input, known before any batch: what the recording pass runs on.
struct FeatureLayout {
  std::vector<std::string> dense_names;
  std::vector<int64_t> dense_widths;
  std::vector<SparseFeature> sparse;  // ids empty
  int64_t dense_width() const;
};

// One example of `layout` with zero dense values and no ids (and no labels): the batch a pass
// runs on to learn a model's variables or its outputs without data.
FeatureBatch EmptyExampleBatch(const FeatureLayout& layout);

// Initializer shortcuts for ModelContext::Variable.
DenseInitializer Zeros();
DenseInitializer ConstantInit(float value);
DenseInitializer GlorotUniformInit();

// One step's inputs gathered before the step runs: its ids grouped per table and the values
// pulled for them (ModelContext::Prepare). Training can prepare the next batch on another
// thread while the current one computes (run.pipeline_pull); the batch itself stays with the
// caller. Buffers are reused when a PreparedStep is prepared again.
struct PreparedStep {
  Mode mode = Mode::kTrain;
  int64_t step = 0;
  SparseBatch sparse;
  std::vector<std::string> table_names;  // the tables looked up, in client spec order
  std::vector<int> table_index;          // per looked-up table: its index in sparse.tables()
  std::vector<Tensor> table_values;      // per looked-up table: [unique ids, dim]
  std::vector<Tensor> dense_values;      // client->spec().dense order
};

class ModelContext {
 public:
  // `groups` are the optimizer groups parameters may name (e.g. "deep", "wide").
  ModelContext(FeatureLayout layout, std::vector<OptimizerGroupSpec> groups, uint64_t seed);

  // ---- For model functions ----
  Mode mode() const { return mode_; }
  bool training() const { return mode_ == Mode::kTrain; }
  int64_t batch_size() const { return batch_size_; }
  // The batch's example weights (features.weight); empty when every example weighs 1.
  absl::Span<const float> example_weights() const;
  const FeatureLayout& layout() const { return layout_; }

  // The batch's dense features [B, dense width] (a constant).
  nn::Var DenseInput();
  // Sparse feature `feature` (an EmbeddingColumn output) looked up in its table and pooled with
  // its pooling: [B, dim]. Trains in optimizer group `group`.
  nn::Var Embedding(absl::string_view feature, absl::string_view group = "deep");
  // The batch's dense features (when `with_dense_input` and the layout has any) and the pooled
  // embeddings of `features`, concatenated along axis 1 in that order: what
  // Concat({DenseInput(), Embedding(f, group)...}, 1) gives, bit for bit, in one op
  // (nn::ConcatPooled) that writes each pooled row once. [B, dense width + sum of dims].
  nn::Var EmbeddingsConcat(absl::Span<const std::string> features, absl::string_view group,
                           bool with_dense_input);
  // Sparse feature `feature` (a WideColumn output, or any sparse feature) as a linear term: the
  // sum of per-id weight rows of width `units` from its table: [B, units]. Tables shared by
  // several features are one weight table.
  nn::Var Linear(absl::string_view feature, int64_t units, absl::string_view group = "wide");
  // start [B, units] plus the linear term of each of `features`, added in that order: what
  // Add(...Add(start, Linear(f1, units, group))..., Linear(fn, units, group)) gives, bit for bit,
  // in one op (nn::AddPooled) without a [B, units] tensor per feature.
  nn::Var LinearSum(const nn::Var& start, absl::Span<const std::string> features, int64_t units,
                    absl::string_view group = "wide");
  // A dense parameter. `shape` and `group` must agree on every call with the same name.
  nn::Var Variable(absl::string_view name, const Shape& shape, const DenseInitializer& init,
                   absl::string_view group = "deep");
  // Dropout randomness, seeded by (seed, global step): reproducible runs.
  Rng& rng() { return rng_; }
  // A TensorBoard histogram of `value`'s values (a layer's activations, say) for this step, taken
  // only in the steps the Estimator asks for them (run.save_histograms_steps); free otherwise.
  void Histogram(absl::string_view name, const nn::Var& value);
  // The initializer of table `table` when the recording pass declares it (default: TF's
  // embedding_column's, a truncated normal of stddev 1/sqrt(dim)). Call before the Embedding or
  // Linear call that first uses the table; it matters only while recording.
  void SetTableInitializer(absl::string_view table, const RowInitializerOptions& initializer);
  // Records the first error; the Estimator reports it when the model returns.
  void Fail(absl::Status status);
  const absl::Status& status() const { return status_; }

  // ---- For the Estimator ----

  // Starts the recording pass (mode TRAIN, a one-example empty batch, zero values).
  void BeginRecording();
  // The spec recorded since BeginRecording (groups, variables, tables in first-use order).
  ModelSpec RecordedSpec() const;

  // Starts a step on `batch` in `mode`: pulls the dense variables and looks up the rows of every
  // table of the client's spec that the batch has ids for, all in one ParameterClient::LookupMany
  // (one call per shard; `step` is the global step for lookups, kTrain rows only in mode TRAIN).
  // The model's Embedding/Linear calls then bind the prefetched rows.
  [[nodiscard]] absl::Status BeginStep(const FeatureBatch& batch, Mode mode, int64_t step,
                                       ParameterClient* client);
  // The two halves of BeginStep. Prepare checks `batch` against the layout, groups its ids and
  // makes the LookupMany into *prepared; it reads nothing of the context but the layout, so it may
  // run on another thread while the context computes a step (never two Prepares into one
  // PreparedStep at once). BeginPreparedStep starts the step on `batch` with those values
  // (swapping buffers with *prepared); `batch` must be the one prepared and outlive the step.
  [[nodiscard]] absl::Status Prepare(const FeatureBatch& batch, Mode mode, int64_t step,
                                     ParameterClient* client, PreparedStep* prepared) const;
  void BeginPreparedStep(const FeatureBatch& batch, ParameterClient* client,
                         PreparedStep* prepared);
  // After Backward(loss): pushes the dense and sparse gradients as update `step` (>= 1), all in
  // one ParameterClient::PushMany.
  [[nodiscard]] absl::Status PushGradients(int64_t step);
  // Drops the step's graph and bound values (keeps buffers).
  void EndStep();
  // Histograms for the step about to start: the model's (Histogram) and, at TakeHistograms, every
  // dense variable's values and each looked-up table's row norms.
  void WantHistograms(bool want) { histograms_wanted_ = want; }
  // The step's histograms by tag, before EndStep: "<variable>", "embedding/<table>/row_norm" and
  // the model's; empty unless WantHistograms(true) was set for the step.
  std::vector<std::pair<std::string, std::vector<float>>> TakeHistograms();

 private:
  struct TableState {
    int sparse_table = -1;  // index into sparse_.tables()
    Tensor values;          // [U, dim] as looked up, until the model asks for the table
    nn::Var rows;           // [U, dim] leaf once the model asked for it, else null
  };
  nn::Var Placeholder(const Shape& shape);
  absl::StatusOr<int> FindFeature(absl::string_view feature) const;
  nn::Var TableRows(const std::string& table, int64_t dim, absl::string_view group);
  // Embedding's checks and binding: fills *pool and returns true when the step can pool
  // `feature`; false when recording or on an error (recorded with Fail). *dim is the width of its
  // output either way.
  bool BindEmbedding(absl::string_view feature, absl::string_view group, nn::PoolInput* pool,
                     int64_t* dim);
  // Linear's checks and table for `feature`, with the sum combiner; as BindEmbedding, false
  // when recording or on an error.
  bool BindLinear(absl::string_view feature, int64_t units, absl::string_view group,
                  nn::PoolInput* pool);
  bool KnownGroup(absl::string_view group);

  FeatureLayout layout_;
  std::vector<OptimizerGroupSpec> groups_;
  uint64_t seed_;
  Mode mode_ = Mode::kTrain;
  bool recording_ = false;
  absl::Status status_;
  Rng rng_{0};

  // Recorded spec.
  std::vector<DenseVariableSpec> dense_specs_;
  std::vector<TableSpec> table_specs_;
  absl::flat_hash_map<std::string, int> dense_index_;  // name -> index in dense_specs_
  absl::flat_hash_map<std::string, int> table_index_;  // name -> index in table_specs_
  absl::flat_hash_map<std::string, RowInitializerOptions> table_initializers_;

  // The current step.
  const FeatureBatch* batch_ = nullptr;
  FeatureBatch recording_batch_;
  int64_t batch_size_ = 0;
  int64_t step_ = 0;
  ParameterClient* client_ = nullptr;
  std::vector<nn::Var> dense_leaves_;                  // bound this step, or null
  absl::flat_hash_map<std::string, int> bound_index_;  // name -> index in client spec
  PreparedStep prepared_;  // BeginStep's; its sparse batch is the step's
  absl::flat_hash_map<std::string, TableState> tables_;  // looked up at BeginStep
  nn::Var dense_input_;
  bool histograms_wanted_ = false;
  std::vector<std::pair<std::string, std::vector<float>>> histograms_;  // the model's, this step
};

using ModelFn = std::function<absl::StatusOr<EstimatorSpec>(
    ModelContext& features, const Tensor& labels, Mode mode, const ModelConfig& params)>;

}  // namespace shoal
