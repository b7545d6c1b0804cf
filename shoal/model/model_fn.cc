#include "shoal/model/model_fn.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shoal/base/status.h"
#include "shoal/nn/ops.h"

namespace shoal {

absl::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kTrain:
      return "TRAIN";
    case Mode::kEval:
      return "EVAL";
    case Mode::kPredict:
      return "PREDICT";
  }
  return "?";
}

FeatureBatch EmptyExampleBatch(const FeatureLayout& layout) {
  FeatureBatch batch;
  batch.batch_size = 1;
  batch.dense = Tensor(Shape{1, layout.dense_width()});
  batch.dense_names = layout.dense_names;
  batch.dense_widths = layout.dense_widths;
  batch.sparse = layout.sparse;
  for (SparseFeature& f : batch.sparse) {
    f.ids.clear();
    f.weights.clear();
    f.offsets.assign(2, 0);
  }
  return batch;
}

absl::Status ValidateSpec(const EstimatorSpec& spec, Mode mode, int64_t batch_size) {
  const std::string where = absl::StrCat("model_fn in mode ", ModeName(mode), ": ");
  if (spec.mode != mode) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "returned an EstimatorSpec for mode ", ModeName(spec.mode)));
  }
  if (mode == Mode::kTrain || mode == Mode::kEval) {
    if (spec.loss == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(where, "the EstimatorSpec has no loss"));
    }
    if (spec.loss->value.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "the loss has ", spec.loss->value.size(), " elements; it must be a scalar"));
    }
  }
  if (mode == Mode::kTrain && !spec.loss->requires_grad) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "the loss does not depend on any trainable parameter"));
  }
  if (mode == Mode::kPredict && spec.predictions.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, "the EstimatorSpec has no predictions"));
  }
  for (const auto& [name, value] : spec.predictions) {
    if (value == nullptr || value->value.rank() < 1 || value->value.dim(0) != batch_size) {
      return absl::InvalidArgumentError(absl::StrCat(where, "prediction '", name,
                                                     "' must have the batch size ", batch_size,
                                                     " as its first dimension"));
    }
  }
  for (const MetricOp& metric : spec.metrics) {
    if (metric.name.empty() || !metric.make) {
      return absl::InvalidArgumentError(absl::StrCat(where, "a metric has no name or no factory"));
    }
    if (metric.name == "loss") {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "metric name 'loss' is reserved (the Estimator adds it)"));
    }
  }
  return absl::OkStatus();
}

int64_t FeatureLayout::dense_width() const {
  int64_t width = 0;
  for (int64_t w : dense_widths) width += w;
  return width;
}

DenseInitializer Zeros() { return DenseInitializer{}; }

absl::Span<const float> ModelContext::example_weights() const {
  if (batch_ == nullptr) return {};
  return batch_->weights;
}

DenseInitializer ConstantInit(float value) {
  DenseInitializer init;
  init.kind = DenseInitializer::Kind::kConstant;
  init.value = value;
  return init;
}

DenseInitializer GlorotUniformInit() {
  DenseInitializer init;
  init.kind = DenseInitializer::Kind::kGlorotUniform;
  return init;
}

ModelContext::ModelContext(FeatureLayout layout, std::vector<OptimizerGroupSpec> groups,
                           uint64_t seed)
    : layout_(std::move(layout)), groups_(std::move(groups)), seed_(seed) {}

void ModelContext::Fail(absl::Status status) {
  if (status_.ok() && !status.ok()) status_ = std::move(status);
}

nn::Var ModelContext::Placeholder(const Shape& shape) { return nn::Leaf(Tensor(shape)); }

bool ModelContext::KnownGroup(absl::string_view group) {
  for (const OptimizerGroupSpec& g : groups_) {
    if (g.name == group) return true;
  }
  std::vector<std::string> names;
  for (const OptimizerGroupSpec& g : groups_) names.push_back(g.name);
  Fail(absl::InvalidArgumentError(absl::StrCat("unknown optimizer group '", group,
                                               "' (groups: ", absl::StrJoin(names, ", "), ")")));
  return false;
}

absl::StatusOr<int> ModelContext::FindFeature(absl::string_view feature) const {
  for (size_t i = 0; i < layout_.sparse.size(); ++i) {
    if (layout_.sparse[i].name == feature) return static_cast<int>(i);
  }
  std::vector<std::string> names;
  for (const SparseFeature& f : layout_.sparse) names.push_back(f.name);
  return absl::InvalidArgumentError(absl::StrCat(
      "model asks for sparse feature '", feature,
      "', which the features do not produce (have: ", absl::StrJoin(names, ", "), ")"));
}

void ModelContext::BeginRecording() {
  recording_ = true;
  mode_ = Mode::kTrain;
  status_ = absl::OkStatus();
  dense_specs_.clear();
  table_specs_.clear();
  dense_index_.clear();
  table_index_.clear();
  recording_batch_ = EmptyExampleBatch(layout_);
  recording_batch_.labels = Tensor(Shape{1, 1});
  batch_ = &recording_batch_;
  batch_size_ = 1;
  rng_ = Rng(seed_);
  dense_input_ = nullptr;
  tables_.clear();
}

ModelSpec ModelContext::RecordedSpec() const {
  ModelSpec spec;
  spec.seed = seed_;
  spec.groups = groups_;
  spec.dense = dense_specs_;
  spec.tables = table_specs_;
  return spec;
}

absl::Status ModelContext::BeginStep(const FeatureBatch& batch, Mode mode, int64_t step,
                                     ParameterClient* client) {
  recording_ = false;
  tables_.clear();
  batch_ = nullptr;
  RETURN_IF_ERROR(Prepare(batch, mode, step, client, &prepared_));
  BeginPreparedStep(batch, client, &prepared_);
  return absl::OkStatus();
}

absl::Status ModelContext::Prepare(const FeatureBatch& batch, Mode mode, int64_t step,
                                   ParameterClient* client, PreparedStep* prepared) const {
  if (batch.dense.rank() != 2 || batch.dense.dim(0) != batch.batch_size ||
      batch.dense.dim(1) != layout_.dense_width()) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch dense features have shape ", ShapeToString(batch.dense.shape()),
                     "; the model expects [", batch.batch_size, ", ", layout_.dense_width(), "]"));
  }
  if (batch.sparse.size() != layout_.sparse.size()) {
    return absl::InvalidArgumentError(absl::StrCat("batch has ", batch.sparse.size(),
                                                   " sparse features; the model expects ",
                                                   layout_.sparse.size()));
  }
  prepared->mode = mode;
  prepared->step = step;
  RETURN_IF_ERROR(prepared->sparse.Build(batch));
  // Every table of the spec that the batch has: the model of a recorded spec asks for all of
  // them, and one call per shard is much cheaper than one per table (docs/benchmarks.md).
  const ModelSpec& spec = client->spec();
  prepared->table_names.clear();
  prepared->table_index.clear();
  prepared->table_values.clear();
  std::vector<TableLookup> lookups;
  lookups.reserve(spec.tables.size());
  for (const TableSpec& t : spec.tables) {
    const int index = prepared->sparse.FindTable(t.name);
    if (index < 0) continue;
    const std::vector<uint64_t>& ids = prepared->sparse.tables()[index].ids;
    prepared->table_names.push_back(t.name);
    prepared->table_index.push_back(index);
    // The lookup writes every row (an inference miss as zeros), so nothing is zero-filled first.
    Tensor& values = prepared->table_values.emplace_back(
        Tensor::Uninitialized(Shape{static_cast<int64_t>(ids.size()), t.dim}));
    lookups.push_back(
        {t.name, ids, absl::MakeSpan(values.data(), static_cast<size_t>(values.size()))});
  }
  return client->LookupMany(lookups,
                            mode == Mode::kTrain ? LookupMode::kTrain : LookupMode::kInference,
                            step, &prepared->dense_values);
}

void ModelContext::BeginPreparedStep(const FeatureBatch& batch, ParameterClient* client,
                                     PreparedStep* prepared) {
  recording_ = false;
  status_ = absl::OkStatus();
  mode_ = prepared->mode;
  batch_ = &batch;
  batch_size_ = batch.batch_size;
  step_ = prepared->step;
  client_ = client;
  rng_ = Rng(Mix64(seed_ ^ Mix64(static_cast<uint64_t>(step_))));
  dense_input_ = nullptr;
  if (prepared != &prepared_) std::swap(prepared_, *prepared);
  const ModelSpec& spec = client->spec();
  if (bound_index_.size() != spec.dense.size()) {
    bound_index_.clear();
    for (size_t i = 0; i < spec.dense.size(); ++i) {
      bound_index_[spec.dense[i].name] = static_cast<int>(i);
    }
  }
  tables_.clear();
  for (size_t i = 0; i < prepared_.table_names.size(); ++i) {
    TableState& state = tables_[prepared_.table_names[i]];
    state.sparse_table = prepared_.table_index[i];
    state.values = std::move(prepared_.table_values[i]);
  }
  dense_leaves_.assign(prepared_.dense_values.size(), nullptr);
}

nn::Var ModelContext::DenseInput() {
  if (dense_input_ == nullptr) dense_input_ = nn::Leaf(batch_->dense);
  return dense_input_;
}

nn::Var ModelContext::Variable(absl::string_view name, const Shape& shape,
                               const DenseInitializer& init, absl::string_view group) {
  if (!status_.ok()) return Placeholder(shape);
  if (!KnownGroup(group)) return Placeholder(shape);
  const std::string key(name);
  if (recording_) {
    auto it = dense_index_.find(key);
    if (it == dense_index_.end()) {
      dense_index_[key] = static_cast<int>(dense_specs_.size());
      dense_specs_.push_back(DenseVariableSpec{key, shape, init, std::string(group)});
    } else {
      const DenseVariableSpec& known = dense_specs_[it->second];
      if (known.shape != shape || known.group != group) {
        Fail(absl::InvalidArgumentError(absl::StrCat(
            "variable '", name,
            "' declared twice with different shape or group: ", ShapeToString(known.shape), " in '",
            known.group, "' and ", ShapeToString(shape), " in '", group, "'")));
      }
    }
    return Placeholder(shape);
  }
  auto it = bound_index_.find(key);
  if (it == bound_index_.end()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("variable '", name, "' was not declared when the model was first built (",
                     ModeName(Mode::kTrain), "); declare every variable in every mode")));
    return Placeholder(shape);
  }
  const int index = it->second;
  if (client_->spec().dense[index].shape != shape) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("variable '", name, "' asked for with shape ", ShapeToString(shape),
                     " but it has ", ShapeToString(client_->spec().dense[index].shape))));
    return Placeholder(shape);
  }
  if (dense_leaves_[index] == nullptr) {
    dense_leaves_[index] = nn::Leaf(std::move(prepared_.dense_values[index]), training());
  }
  return dense_leaves_[index];
}

void ModelContext::SetTableInitializer(absl::string_view table,
                                       const RowInitializerOptions& initializer) {
  if (recording_) table_initializers_[std::string(table)] = initializer;
}

nn::Var ModelContext::TableRows(const std::string& table, int64_t dim, absl::string_view group) {
  if (recording_) {
    auto it = table_index_.find(table);
    if (it == table_index_.end()) {
      table_index_[table] = static_cast<int>(table_specs_.size());
      TableSpec spec;
      spec.name = table;
      spec.dim = dim;
      if (auto init = table_initializers_.find(table); init != table_initializers_.end()) {
        spec.initializer = init->second;
      }
      spec.group = std::string(group);
      table_specs_.push_back(std::move(spec));
    } else if (table_specs_[it->second].dim != dim || table_specs_[it->second].group != group) {
      Fail(absl::InvalidArgumentError(absl::StrCat(
          "table '", table, "' used with different width or group: ", table_specs_[it->second].dim,
          " in '", table_specs_[it->second].group, "' and ", dim, " in '", group, "'")));
    }
    return Placeholder(Shape{0, dim});
  }
  absl::StatusOr<int64_t> known_dim = client_->TableDim(table);
  if (!known_dim.ok() || *known_dim != dim) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("table '", table, "' was not declared with width ", dim,
                     " when the model was first built; declare every table in every mode")));
    return Placeholder(Shape{0, dim});
  }
  auto found = tables_.find(table);
  if (found == tables_.end()) {
    Fail(absl::InternalError(absl::StrCat("table '", table, "' missing from the batch")));
    return Placeholder(Shape{0, dim});
  }
  TableState& state = found->second;
  if (state.rows == nullptr) state.rows = nn::Leaf(std::move(state.values), training());
  return state.rows;
}

namespace {

nn::Combiner CombinerOf(Pooling pooling) {
  switch (pooling) {
    case Pooling::kSum:
      return nn::Combiner::kSum;
    case Pooling::kMean:
      return nn::Combiner::kMean;
    case Pooling::kSqrtN:
      return nn::Combiner::kSqrtN;
  }
  return nn::Combiner::kSum;
}

}  // namespace

bool ModelContext::BindEmbedding(absl::string_view feature, absl::string_view group,
                                 nn::PoolInput* pool, int64_t* dim) {
  absl::StatusOr<int> index = FindFeature(feature);
  *dim = index.ok() ? std::max<int64_t>(layout_.sparse[*index].dim, 1) : 1;
  if (!index.ok()) {
    Fail(index.status());
    return false;
  }
  const SparseFeature& spec = layout_.sparse[*index];
  if (spec.dim <= 0) {
    Fail(absl::InvalidArgumentError(absl::StrCat(
        "feature '", feature, "' has no embedding dimension (a wide column): use Linear()")));
    return false;
  }
  if (!status_.ok() || !KnownGroup(group)) return false;
  nn::Var rows = TableRows(spec.table, spec.dim, group);
  if (recording_ || !status_.ok()) return false;
  *pool = nn::PoolInput{std::move(rows), &prepared_.sparse.features()[*index].ids,
                        CombinerOf(spec.pooling)};
  return true;
}

nn::Var ModelContext::Embedding(absl::string_view feature, absl::string_view group) {
  nn::PoolInput pool;
  int64_t dim = 1;
  if (!BindEmbedding(feature, group, &pool, &dim)) return Placeholder(Shape{batch_size_, dim});
  return nn::EmbeddingPool(pool.rows, *pool.ids, pool.combiner);
}

nn::Var ModelContext::EmbeddingsConcat(absl::Span<const std::string> features,
                                       absl::string_view group, bool with_dense_input) {
  std::vector<nn::Var> dense;
  int64_t width = 0;
  if (with_dense_input && layout_.dense_width() > 0) {
    dense.push_back(DenseInput());
    width += layout_.dense_width();
  }
  std::vector<nn::PoolInput> pools(features.size());
  bool bound = true;
  for (size_t i = 0; i < features.size(); ++i) {
    int64_t dim = 1;
    bound = BindEmbedding(features[i], group, &pools[i], &dim) && bound;
    width += dim;
  }
  if (dense.empty() && features.empty()) {
    Fail(absl::InvalidArgumentError("EmbeddingsConcat: no dense input and no features"));
    return Placeholder(Shape{batch_size_, 0});
  }
  if (!bound) return Placeholder(Shape{batch_size_, width});
  if (features.empty()) return dense[0];
  return nn::ConcatPooled(dense, pools);
}

bool ModelContext::BindLinear(absl::string_view feature, int64_t units, absl::string_view group,
                              nn::PoolInput* pool) {
  absl::StatusOr<int> index = FindFeature(feature);
  if (!index.ok()) {
    Fail(index.status());
    return false;
  }
  if (units < 1) {
    Fail(absl::InvalidArgumentError(absl::StrCat("Linear('", feature, "'): units must be >= 1")));
    return false;
  }
  if (!status_.ok() || !KnownGroup(group)) return false;
  const SparseFeature& spec = layout_.sparse[*index];
  nn::Var rows = TableRows(spec.table, units, group);
  if (recording_ || !status_.ok()) return false;
  // Linear terms sum the weights of an example's ids (with their weights), whatever the
  // feature's pooling for embeddings: TF's linear model does the same.
  *pool =
      nn::PoolInput{std::move(rows), &prepared_.sparse.features()[*index].ids, nn::Combiner::kSum};
  return true;
}

nn::Var ModelContext::Linear(absl::string_view feature, int64_t units, absl::string_view group) {
  nn::PoolInput pool;
  if (!BindLinear(feature, units, group, &pool)) {
    return Placeholder(Shape{batch_size_, std::max<int64_t>(units, 1)});
  }
  return nn::EmbeddingPool(pool.rows, *pool.ids, pool.combiner);
}

nn::Var ModelContext::LinearSum(const nn::Var& start, absl::Span<const std::string> features,
                                int64_t units, absl::string_view group) {
  std::vector<nn::PoolInput> pools(features.size());
  bool bound = true;
  for (size_t i = 0; i < features.size(); ++i) {
    // Every feature is bound, even after a failure: recording registers each one's table.
    bound = BindLinear(features[i], units, group, &pools[i]) && bound;
  }
  if (!bound) return Placeholder(Shape{batch_size_, std::max<int64_t>(units, 1)});
  if (start == nullptr || start->value.shape() != Shape{batch_size_, units}) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("LinearSum: start must be [", batch_size_, ", ", units, "], got ",
                     start == nullptr ? "none" : ShapeToString(start->value.shape()))));
    return Placeholder(Shape{batch_size_, units});
  }
  if (pools.empty()) return start;
  return nn::AddPooled(start, pools);
}

absl::Status ModelContext::PushGradients(int64_t step) {
  std::vector<TablePush> pushes;
  pushes.reserve(tables_.size());
  for (const auto& [name, state] : tables_) {
    const nn::Var& rows = state.rows;
    if (rows == nullptr || rows->grad.empty() || rows->value.dim(0) == 0) continue;
    pushes.push_back(
        {name, prepared_.sparse.tables()[state.sparse_table].ids,
         absl::MakeConstSpan(rows->grad.data(), static_cast<size_t>(rows->grad.size()))});
  }
  std::vector<Tensor> grads(dense_leaves_.size());
  bool any = false;
  for (size_t i = 0; i < dense_leaves_.size(); ++i) {
    if (dense_leaves_[i] == nullptr || dense_leaves_[i]->grad.empty()) continue;
    grads[i] = std::move(dense_leaves_[i]->grad);
    any = true;
  }
  if (!any && pushes.empty()) return absl::OkStatus();
  RETURN_IF_ERROR_CTX(
      client_->PushMany(any ? absl::MakeConstSpan(grads) : absl::Span<const Tensor>(), pushes,
                        step),
      "pushing the gradients of step ", step);
  return absl::OkStatus();
}

void ModelContext::Histogram(absl::string_view name, const nn::Var& value) {
  if (!histograms_wanted_ || recording_ || value == nullptr) return;
  histograms_.emplace_back(
      std::string(name),
      std::vector<float>(value->value.data(), value->value.data() + value->value.size()));
}

std::vector<std::pair<std::string, std::vector<float>>> ModelContext::TakeHistograms() {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  if (!histograms_wanted_ || client_ == nullptr) return out;
  out = std::move(histograms_);
  histograms_.clear();
  const ModelSpec& spec = client_->spec();
  for (size_t i = 0; i < spec.dense.size() && i < dense_leaves_.size(); ++i) {
    const Tensor& t =
        dense_leaves_[i] != nullptr ? dense_leaves_[i]->value : prepared_.dense_values[i];
    out.emplace_back(spec.dense[i].name, std::vector<float>(t.data(), t.data() + t.size()));
  }
  for (const auto& [table, state] : tables_) {
    const Tensor& rows = state.rows != nullptr ? state.rows->value : state.values;
    if (rows.shape().size() != 2 || rows.shape()[0] == 0) continue;
    const int64_t n = rows.shape()[0];
    const int64_t dim = rows.shape()[1];
    std::vector<float> norms(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      double sum = 0;
      for (int64_t k = 0; k < dim; ++k) sum += double{rows[r * dim + k]} * rows[r * dim + k];
      norms[static_cast<size_t>(r)] = static_cast<float>(std::sqrt(sum));
    }
    out.emplace_back(absl::StrCat("embedding/", table, "/row_norm"), std::move(norms));
  }
  return out;
}

void ModelContext::EndStep() {
  histograms_.clear();
  histograms_wanted_ = false;
  tables_.clear();
  dense_leaves_.clear();
  dense_input_ = nullptr;
  batch_ = nullptr;
}

}  // namespace shoal
