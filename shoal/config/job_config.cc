#include "shoal/config/job_config.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"
#include "shoal/config/yaml_reader.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {

using yaml_internal::ForEach;
using yaml_internal::MapReader;
using yaml_internal::YamlSource;

namespace {

using Node = YAML::Node;

// Everything one parse needs: where errors point and where relative paths start.
struct Ctx {
  YamlSource src;
  std::string dir;  // the config file's directory
};

// A path from the file is relative to the file's directory; one from an override is kept.
std::string ResolvePath(const Ctx& ctx, const Node& node, std::string path) {
  if (ctx.dir.empty() || path.empty() || path.starts_with('/') || !UriScheme(path).empty() ||
      ctx.src.OverrideOf(node) != nullptr) {
    return path;
  }
  // Plain local paths lose their "dir/../" detours; URIs are left to their file system.
  if (UriScheme(ctx.dir).empty()) {
    return std::filesystem::path(JoinPath(ctx.dir, path)).lexically_normal().string();
  }
  return JoinPath(ctx.dir, path);
}

absl::Status RequireString(MapReader& r, absl::string_view key, std::string* out) {
  RETURN_IF_ERROR(r.Require(key).status());
  RETURN_IF_ERROR(r.Read(key, out));
  if (out->empty()) return r.ErrorAt(key, "must not be empty");
  return absl::OkStatus();
}

// Parses each element of list `key` with `parse` into `out`.
template <typename T, typename Parse>
absl::Status ReadList(const Ctx& ctx, MapReader& r, absl::string_view key, std::vector<T>* out,
                      Parse parse) {
  return ForEach(ctx.src, r.Get(key), r.PathOf(key), [&](const Node& n, const std::string& path) {
    ASSIGN_OR_RETURN(MapReader item, MapReader::Create(ctx.src, n, path));
    T value;
    RETURN_IF_ERROR(parse(item, &value));
    RETURN_IF_ERROR(item.Finish());
    out->push_back(std::move(value));
    return absl::OkStatus();
  });
}

absl::Status ParseNumeric(MapReader& r, NumericColumn* c) {
  RETURN_IF_ERROR(RequireString(r, "name", &c->name));
  RETURN_IF_ERROR(r.Read("source", &c->source));
  RETURN_IF_ERROR(r.Read("dimension", &c->dimension, 1));
  RETURN_IF_ERROR(r.Read("default_value", &c->default_value));
  std::string normalizer = "none";
  RETURN_IF_ERROR(r.ReadEnum("normalizer", &normalizer, {"none", "standardize", "log1p"}));
  c->normalizer = normalizer == "standardize" ? Normalizer::kStandardize
                  : normalizer == "log1p"     ? Normalizer::kLog1p
                                              : Normalizer::kNone;
  RETURN_IF_ERROR(r.Read("mean", &c->mean));
  RETURN_IF_ERROR(r.Read("stddev", &c->stddev));
  if (c->stddev <= 0) return r.ErrorAt("stddev", "must be > 0");
  if (c->normalizer != Normalizer::kStandardize) {
    for (absl::string_view key : {"mean", "stddev"}) {
      if (r.Has(key)) return r.ErrorAt(key, "only used with normalizer: standardize");
    }
  }
  return absl::OkStatus();
}

absl::Status ParseHashed(MapReader& r, HashedCategoricalColumn* c) {
  RETURN_IF_ERROR(RequireString(r, "name", &c->name));
  RETURN_IF_ERROR(r.Read("source", &c->source));
  RETURN_IF_ERROR(r.Read("seed", &c->seed));
  return r.Read("hash_bucket_size", &c->hash_bucket_size);
}

absl::Status ParseIdentity(MapReader& r, IdentityCategoricalColumn* c) {
  RETURN_IF_ERROR(RequireString(r, "name", &c->name));
  RETURN_IF_ERROR(r.Read("source", &c->source));
  RETURN_IF_ERROR(r.Read("num_buckets", &c->num_buckets));
  return r.Read("default_value", &c->default_value, -1);
}

absl::Status ParseBucketized(MapReader& r, BucketizedColumn* c) {
  RETURN_IF_ERROR(RequireString(r, "name", &c->name));
  RETURN_IF_ERROR(r.Read("source", &c->source));
  RETURN_IF_ERROR(r.Require("boundaries").status());
  RETURN_IF_ERROR(r.Read("boundaries", &c->boundaries));
  if (c->boundaries.empty()) return r.ErrorAt("boundaries", "must not be empty");
  for (size_t i = 1; i < c->boundaries.size(); ++i) {
    if (!(c->boundaries[i - 1] < c->boundaries[i])) {
      return r.ErrorAt("boundaries", "must be strictly increasing");
    }
  }
  return absl::OkStatus();
}

// A column's reference to a categorical column must name one defined above it.
absl::Status CheckCategorical(MapReader& r, absl::string_view key, const std::string& name,
                              const std::vector<std::string>& categoricals) {
  if (std::find(categoricals.begin(), categoricals.end(), name) != categoricals.end()) {
    return absl::OkStatus();
  }
  const std::string nearest = yaml_internal::Nearest(name, categoricals);
  return r.ErrorAt(
      key, absl::StrCat("'", name, "' is not a categorical column",
                        nearest.empty() ? "" : absl::StrCat(" (did you mean '", nearest, "'?)")));
}

absl::Status ParseFeatures(const Ctx& ctx, const Node& node, FeatureColumns* f) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Create(ctx.src, node, "features"));
  RETURN_IF_ERROR(ReadList(ctx, r, "numeric", &f->numeric, ParseNumeric));
  RETURN_IF_ERROR(ReadList(ctx, r, "hashed", &f->hashed, ParseHashed));
  RETURN_IF_ERROR(ReadList(
      ctx, r, "vocabulary", &f->vocabulary,
      [&](MapReader& c, VocabularyCategoricalColumn* v) -> absl::Status {
        RETURN_IF_ERROR(RequireString(c, "name", &v->name));
        RETURN_IF_ERROR(c.Read("source", &v->source));
        RETURN_IF_ERROR(c.Read("vocabulary", &v->vocabulary));
        RETURN_IF_ERROR(c.Read("vocabulary_file", &v->vocabulary_file));
        v->vocabulary_file = ResolvePath(ctx, c.Get("vocabulary_file"), v->vocabulary_file);
        if (v->vocabulary.empty() == v->vocabulary_file.empty()) {
          return c.ErrorAt("vocabulary", "set exactly one of vocabulary, vocabulary_file");
        }
        RETURN_IF_ERROR(c.Read("num_oov_buckets", &v->num_oov_buckets, 0));
        return c.Read("default_value", &v->default_value, -1);
      }));
  RETURN_IF_ERROR(ReadList(ctx, r, "identity", &f->identity, ParseIdentity));
  RETURN_IF_ERROR(ReadList(ctx, r, "bucketized", &f->bucketized, ParseBucketized));

  std::vector<std::string> categoricals;
  for (const auto& c : f->hashed) categoricals.push_back(c.name);
  for (const auto& c : f->vocabulary) categoricals.push_back(c.name);
  for (const auto& c : f->identity) categoricals.push_back(c.name);
  for (const auto& c : f->bucketized) categoricals.push_back(c.name);
  RETURN_IF_ERROR(
      ReadList(ctx, r, "crossed", &f->crossed, [&](MapReader& c, CrossedColumn* x) -> absl::Status {
        RETURN_IF_ERROR(RequireString(c, "name", &x->name));
        RETURN_IF_ERROR(c.Require("keys").status());
        RETURN_IF_ERROR(c.Read("keys", &x->keys));
        if (x->keys.size() < 2) {
          return c.ErrorAt("keys", "a cross needs at least 2 keys");
        }
        for (const std::string& key : x->keys) {
          RETURN_IF_ERROR(CheckCategorical(c, "keys", key, categoricals));
        }
        RETURN_IF_ERROR(c.Read("seed", &x->seed));
        return c.Read("hash_bucket_size", &x->hash_bucket_size);
      }));
  for (const auto& c : f->crossed) categoricals.push_back(c.name);
  RETURN_IF_ERROR(ReadList(ctx, r, "weighted", &f->weighted,
                           [&](MapReader& c, WeightedCategoricalColumn* w) -> absl::Status {
                             RETURN_IF_ERROR(RequireString(c, "categorical", &w->categorical));
                             RETURN_IF_ERROR(
                                 CheckCategorical(c, "categorical", w->categorical, categoricals));
                             RETURN_IF_ERROR(RequireString(c, "weight", &w->weight));
                             RETURN_IF_ERROR(c.Read("name", &w->name));
                             if (w->name.empty())
                               w->name = absl::StrCat(w->categorical, "_weighted_by_", w->weight);
                             return absl::OkStatus();
                           }));
  for (const auto& c : f->weighted) categoricals.push_back(c.name);

  RETURN_IF_ERROR(ReadList(
      ctx, r, "embedding", &f->embedding, [&](MapReader& c, EmbeddingColumn* e) -> absl::Status {
        RETURN_IF_ERROR(RequireString(c, "categorical", &e->categorical));
        RETURN_IF_ERROR(CheckCategorical(c, "categorical", e->categorical, categoricals));
        RETURN_IF_ERROR(c.Require("dimension").status());
        RETURN_IF_ERROR(c.Read("dimension", &e->dimension, 1));
        std::string pooling = "mean";
        RETURN_IF_ERROR(c.ReadEnum("pooling", &pooling, {"sum", "mean", "sqrtn"}));
        e->pooling = pooling == "sum"    ? Pooling::kSum
                     : pooling == "mean" ? Pooling::kMean
                                         : Pooling::kSqrtN;
        RETURN_IF_ERROR(c.Read("name", &e->name));
        return c.Read("table", &e->table);
      }));
  RETURN_IF_ERROR(ReadList(ctx, r, "wide", &f->wide, [&](MapReader& c, WideColumn* w) {
    RETURN_IF_ERROR(RequireString(c, "categorical", &w->categorical));
    RETURN_IF_ERROR(CheckCategorical(c, "categorical", w->categorical, categoricals));
    RETURN_IF_ERROR(c.Read("name", &w->name));
    return c.Read("table", &w->table);
  }));
  RETURN_IF_ERROR(
      ReadList(ctx, r, "indicator", &f->indicator, [&](MapReader& c, IndicatorColumn* i) {
        RETURN_IF_ERROR(RequireString(c, "categorical", &i->categorical));
        RETURN_IF_ERROR(CheckCategorical(c, "categorical", i->categorical, categoricals));
        return c.Read("name", &i->name);
      }));
  RETURN_IF_ERROR(r.Read("label", &f->label.source));
  RETURN_IF_ERROR(r.Read("label_vocabulary", &f->label.vocabulary));
  RETURN_IF_ERROR(r.Read("weight", &f->weight.source));
  if (!f->label.vocabulary.empty() && f->label.source.empty()) {
    return r.ErrorAt("label_vocabulary", "set label: COLUMN too (the column holding the classes)");
  }
  return r.Finish();
}

// A YAML node as JSON: a quoted scalar is a string; a plain one a bool, an integer, a number,
// null or else a string.
nlohmann::json YamlToJson(const Node& node) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& kv : node) out[kv.first.as<std::string>()] = YamlToJson(kv.second);
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(YamlToJson(item));
    return out;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;
  if (text == "true") return true;
  if (text == "false") return false;
  if (text == "~" || text == "null") return nullptr;
  int64_t i = 0;
  if (absl::SimpleAtoi(text, &i)) return i;
  double d = 0;
  if (absl::SimpleAtod(text, &d)) return d;
  return text;
}

// model.graph: an inline mapping (kept as JSON text) or the path of a JSON file (read by
// LoadJobConfig). The graph itself is validated when the model runs (GraphModel).
absl::Status ParseGraphKey(const Ctx& ctx, MapReader& r, ModelConfig* m) {
  if (!r.Has("graph")) {
    if (m->type == "graph") return r.ErrorAt("type", "a graph model needs model.graph");
    return absl::OkStatus();
  }
  if (m->type != "graph") return r.ErrorAt("graph", "only a model of type graph has a graph");
  const Node node = r.Get("graph");
  if (node.IsMap()) {
    m->graph = YamlToJson(node).dump();
    if (m->graph.size() > (size_t{64} << 20)) return r.ErrorAt("graph", "above 64 MiB");
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(r.Read("graph", &m->graph_file));
  if (m->graph_file.empty()) return r.ErrorAt("graph", "must not be empty");
  m->graph_file = ResolvePath(ctx, node, m->graph_file);
  return absl::OkStatus();
}

absl::Status ParseModel(const Ctx& ctx, MapReader& r, ModelConfig* m) {
  RETURN_IF_ERROR(r.Require("type").status());
  // Any name: plugins register more models than the built-in linear, dnn, wide_deep and deepfm.
  // An unknown one is reported when the model is looked up (EstimatorConfigFromJob, job.h).
  RETURN_IF_ERROR(r.Read("type", &m->type));
  RETURN_IF_ERROR(r.ReadEnum("head", &m->head, {"binary", "multiclass", "regression"}));
  RETURN_IF_ERROR(r.Read("num_classes", &m->num_classes, 2));
  if (m->head == "binary" && m->num_classes != 2) {
    return r.ErrorAt("num_classes", "a binary head has 2 classes (use head: multiclass)");
  }
  RETURN_IF_ERROR(r.Read("hidden_units", &m->hidden_units, 1));
  if (m->type != "linear" && m->type != "graph" && m->hidden_units.empty()) {
    return r.ErrorAt("hidden_units", absl::StrCat("a ", m->type, " model needs hidden layers"));
  }
  RETURN_IF_ERROR(r.ReadEnum("activation", &m->activation, {"relu", "tanh", "sigmoid"}));
  RETURN_IF_ERROR(r.Read("dropout", &m->dropout));
  if (m->dropout < 0 || m->dropout >= 1) return r.ErrorAt("dropout", "must be in [0, 1)");
  RETURN_IF_ERROR(r.Read("batch_norm", &m->batch_norm));
  RETURN_IF_ERROR(ParseGraphKey(ctx, r, m));
  return r.Finish();
}

absl::Status ParseOptimizer(const Ctx& ctx, const Node& node, const std::string& path,
                            OptimizerOptions* o) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Create(ctx.src, node, path));
  RETURN_IF_ERROR(r.ReadEnum("name", &o->name, {"sgd", "momentum", "adagrad", "adam", "ftrl"}));
  RETURN_IF_ERROR(r.Read("learning_rate", &o->learning_rate));
  if (o->learning_rate <= 0) return r.ErrorAt("learning_rate", "must be > 0");
  RETURN_IF_ERROR(r.Read("momentum", &o->momentum));
  RETURN_IF_ERROR(r.Read("use_nesterov", &o->use_nesterov));
  RETURN_IF_ERROR(r.Read("initial_accumulator_value", &o->initial_accumulator_value));
  RETURN_IF_ERROR(r.Read("beta1", &o->beta1));
  RETURN_IF_ERROR(r.Read("beta2", &o->beta2));
  RETURN_IF_ERROR(r.Read("epsilon", &o->epsilon));
  RETURN_IF_ERROR(r.Read("learning_rate_power", &o->learning_rate_power));
  RETURN_IF_ERROR(r.Read("l1", &o->l1));
  RETURN_IF_ERROR(r.Read("l2", &o->l2));
  RETURN_IF_ERROR(r.Read("l2_shrinkage", &o->l2_shrinkage));
  return r.Finish();
}

absl::Status ParseBadRecords(MapReader& r, BadRecordPolicy* policy) {
  std::string text;
  RETURN_IF_ERROR(r.Read("bad_records", &text));
  if (!r.Has("bad_records") || text == "fail") return absl::OkStatus();
  policy->action = BadRecordPolicy::Action::kSkip;
  if (text == "skip") return absl::OkStatus();
  int64_t max_skipped = 0;
  if (text.starts_with("skip:") && absl::SimpleAtoi(text.substr(5), &max_skipped) &&
      max_skipped >= 0) {
    policy->max_skipped = max_skipped;
    return absl::OkStatus();
  }
  return r.ErrorAt("bad_records",
                   absl::StrCat("expected fail, skip or skip:N (N >= 0), got '", text, "'"));
}

absl::Status ParseHoldout(MapReader& r, InputConfig* in) {
  RETURN_IF_ERROR(r.Read("holdout_fraction", &in->holdout_fraction));
  if (!(in->holdout_fraction >= 0 && in->holdout_fraction < 1)) {
    return r.ErrorAt("holdout_fraction", "must be in [0, 1)");
  }
  RETURN_IF_ERROR(r.Read("holdout_seed", &in->holdout_seed));
  RETURN_IF_ERROR(r.Read("holdout", &in->holdout));
  if (in->holdout_fraction == 0) {
    for (absl::string_view key : {"holdout", "holdout_seed"}) {
      if (r.Has(key)) return r.ErrorAt(key, "only used with holdout_fraction > 0");
    }
  }
  return absl::OkStatus();
}

// `repeat_limit` is the step limit that ends an input with num_epochs 0 (0 = none).
absl::Status ParseInput(const Ctx& ctx, const Node& node, const std::string& path,
                        absl::string_view repeat_limit, int64_t limit, InputConfig* in) {
  ASSIGN_OR_RETURN(MapReader r, MapReader::Create(ctx.src, node, path));
  RETURN_IF_ERROR(r.Require("files").status());
  RETURN_IF_ERROR(r.Read("files", &in->files));
  if (in->files.empty()) return r.ErrorAt("files", "must not be empty");
  const Node files = r.Get("files");
  for (size_t i = 0; i < in->files.size(); ++i) {
    in->files[i] = ResolvePath(ctx, files[i], in->files[i]);
  }
  RETURN_IF_ERROR(r.Require("format").status());
  RETURN_IF_ERROR(r.ReadEnum("format", &in->format,
                             {"csv", "tsv", "criteo", "libsvm", "tfrecord", "fashion_mnist"}));
  RETURN_IF_ERROR(r.Read("header", &in->header));
  if (r.Has("header") && in->format != "csv" && in->format != "tsv") {
    return r.ErrorAt("header", "only for format csv or tsv");
  }
  RETURN_IF_ERROR(r.Read("skip_initial_space", &in->skip_initial_space));
  if (r.Has("skip_initial_space") && in->format != "csv" && in->format != "tsv") {
    return r.ErrorAt("skip_initial_space", "only for format csv or tsv");
  }
  const bool text = in->format == "csv" || in->format == "tsv";
  if (r.Has("schema") && in->format != "csv" && in->format != "tsv" && in->format != "tfrecord") {
    return r.ErrorAt("schema", absl::StrCat("only for format csv, tsv or tfrecord (", in->format,
                                            " has its own columns)"));
  }
  RETURN_IF_ERROR(ReadList(
      ctx, r, "schema", &in->schema.columns, [&](MapReader& c, ColumnSpec* spec) -> absl::Status {
        RETURN_IF_ERROR(RequireString(c, "name", &spec->name));
        std::string type = "float";
        RETURN_IF_ERROR(c.ReadEnum("type", &type, {"float", "int64", "string"}));
        spec->type = type == "int64"    ? ValueType::kInt64
                     : type == "string" ? ValueType::kString
                                        : ValueType::kFloat;
        spec->has_default = c.Has("default");
        RETURN_IF_ERROR(c.Read("default", &spec->default_value));
        std::string separator;
        RETURN_IF_ERROR(c.Read("list_separator", &separator));
        if (c.Has("list_separator")) {
          if (!text) {
            return c.ErrorAt("list_separator",
                             "only for format csv or tsv (tfrecord features hold lists already)");
          }
          if (separator.size() != 1) {
            return c.ErrorAt("list_separator", "must be one character, e.g. ' ' or ';'");
          }
          spec->list_separator = separator[0];
        }
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(r.Read("num_epochs", &in->num_epochs, 0));
  if (in->num_epochs == 0 && limit == 0) {
    return r.ErrorAt("num_epochs",
                     absl::StrCat("0 repeats the input forever and needs ", repeat_limit, " > 0"));
  }
  RETURN_IF_ERROR(r.Read("shuffle_files", &in->shuffle_files));
  RETURN_IF_ERROR(r.Read("split_bytes", &in->split_bytes));
  RETURN_IF_ERROR(ParseHoldout(r, in));
  PipelineOptions& p = in->pipeline;
  RETURN_IF_ERROR(r.Read("batch_size", &p.batch_size, 1));
  RETURN_IF_ERROR(r.Read("drop_remainder", &p.drop_remainder));
  RETURN_IF_ERROR(r.Read("shuffle_buffer", &p.shuffle_buffer, 0));
  RETURN_IF_ERROR(r.Read("seed", &p.seed));
  RETURN_IF_ERROR(r.Read("parse_threads", &p.num_parse_threads, 1));
  RETURN_IF_ERROR(r.Read("prefetch_batches", &p.prefetch_batches, 1));
  RETURN_IF_ERROR(ParseBadRecords(r, &p.bad_records));
  return r.Finish();
}

absl::Status ParseWarmStart(const Ctx& ctx, MapReader& r, WarmStartConfig* warm) {
  RETURN_IF_ERROR(RequireString(r, "from", &warm->from));
  warm->from = ResolvePath(ctx, r.Get("from"), warm->from);
  if (r.Has("patterns")) {
    warm->patterns.clear();
    RETURN_IF_ERROR(r.Read("patterns", &warm->patterns));
    if (warm->patterns.empty()) {
      return r.ErrorAt("patterns", "must name at least one pattern (\"*\" for everything)");
    }
    for (const std::string& p : warm->patterns) {
      if (p.empty()) return r.ErrorAt("patterns", "a pattern is empty");
    }
  }
  return r.Finish();
}

absl::Status ParseRun(const Ctx& ctx, MapReader& r, RunConfig* run) {
  if (r.Has("model_dir")) {
    return r.ErrorAt("model_dir", "model_dir is a top-level key (or --set model_dir=DIR)");
  }
  RETURN_IF_ERROR(r.Read("max_steps", &run->max_steps, 0));
  RETURN_IF_ERROR(r.Read("save_checkpoints_steps", &run->save_checkpoints_steps, 0));
  RETURN_IF_ERROR(r.Read("save_checkpoints_secs", &run->save_checkpoints_secs, 0));
  RETURN_IF_ERROR(r.Read("keep_checkpoint_max", &run->keep_checkpoint_max, 0));
  RETURN_IF_ERROR(r.Read("log_step_count_steps", &run->log_step_count_steps, 1));
  RETURN_IF_ERROR(r.Read("save_histograms_steps", &run->save_histograms_steps, 0));
  RETURN_IF_ERROR(r.Read("seed", &run->seed));
  RETURN_IF_ERROR(r.Read("sync_replicas", &run->sync_replicas, 0));
  std::string strategy(run->strategy.name());
  RETURN_IF_ERROR(r.ReadEnum("strategy", &strategy, {"parameter_server", "all_reduce", "hybrid"}));
  ASSIGN_OR_RETURN(run->strategy, Strategy::Parse(strategy));
  RETURN_IF_ERROR(r.Read("collective_timeout_secs", &run->collective_timeout_secs, 1));
  RETURN_IF_ERROR(r.ReadEnum("pipeline_pull", &run->pipeline_pull, {"auto", "on", "off"}));
  RETURN_IF_ERROR(r.Read("train_threads", &run->train_threads, 1));
  RETURN_IF_ERROR(r.Read("heartbeat_timeout_secs", &run->heartbeat_timeout_secs, 2));
  RETURN_IF_ERROR(r.Read("completion_timeout_secs", &run->completion_timeout_secs, 1));
  RETURN_IF_ERROR(r.Read("evict_unseen_steps", &run->evict_unseen_steps, 0));
  RETURN_IF_ERROR(r.Read("checkpoint_hold_timeout_secs", &run->checkpoint_hold_timeout_secs, 0));
  if (r.Has("warm_start")) {
    ASSIGN_OR_RETURN(MapReader warm,
                     MapReader::Create(r.src(), r.Get("warm_start"), r.PathOf("warm_start")));
    RETURN_IF_ERROR(ParseWarmStart(ctx, warm, &run->warm_start));
  }
  if (run->train_threads > 1 && run->sync_replicas > 0) {
    return r.ErrorAt("train_threads",
                     "more than 1 needs asynchronous training (sync_replicas 0); synchronous "
                     "training is for clusters, whose trainers are processes");
  }
  if (run->strategy.trains_in_ring()) {
    // The ring keeps its trainers in lockstep: one step, one exchange, the same on every replica.
    if (run->sync_replicas > 0) {
      return r.ErrorAt("sync_replicas",
                       absl::StrCat("must be 0 with strategy ", run->strategy.name(),
                                    ", which is synchronous by itself"));
    }
    if (run->train_threads > 1) {
      return r.ErrorAt("train_threads",
                       absl::StrCat("must be 1 with strategy ", run->strategy.name(),
                                    ": start more workers instead"));
    }
    if (run->pipeline_pull == "on") {
      return r.ErrorAt("pipeline_pull", absl::StrCat("'on' needs asynchronous training; strategy ",
                                                     run->strategy.name(), " steps in lockstep"));
    }
    if (run->evict_unseen_steps > 0) {
      return r.ErrorAt(
          "evict_unseen_steps",
          absl::StrCat("eviction is not supported with strategy ", run->strategy.name(),
                       " (the chief alone would evict while the other trainers "
                       "step with it)"));
    }
  }

  if (run->pipeline_pull == "on" && run->sync_replicas > 0) {
    return r.ErrorAt("pipeline_pull",
                     "'on' needs asynchronous training (sync_replicas 0): a synchronous step must "
                     "pull the version it waited for");
  }
  return r.Finish();
}

absl::Status ParseEval(const Ctx& ctx, MapReader& r, EvalConfig* eval) {
  RETURN_IF_ERROR(r.Read("steps", &eval->steps, 0));
  RETURN_IF_ERROR(r.Read("start_delay_secs", &eval->start_delay_secs, 0));
  RETURN_IF_ERROR(r.Read("throttle_secs", &eval->throttle_secs, 0));
  std::vector<std::string> names;
  RETURN_IF_ERROR(ReadList(
      ctx, r, "exporters", &eval->exporters, [&](MapReader& c, ExporterConfig* e) -> absl::Status {
        RETURN_IF_ERROR(RequireString(c, "name", &e->name));
        if (std::find(names.begin(), names.end(), e->name) != names.end()) {
          return c.ErrorAt("name", "another exporter has this name");
        }
        names.push_back(e->name);
        RETURN_IF_ERROR(c.ReadEnum("type", &e->type, {"latest", "best", "final"}));
        RETURN_IF_ERROR(c.Read("metric", &e->metric));
        if (c.Has("metric") && e->type != "best") {
          return c.ErrorAt("metric", "only used by type: best");
        }
        return c.Read("keep", &e->keep, 0);
      }));
  return r.Finish();
}

// The model's inputs fit its type; errors point at model.type.
absl::Status CheckModelInputs(MapReader& model, MapReader& root, const JobConfig& c) {
  const FeatureColumns& f = c.features;
  const size_t dense = f.numeric.size() + f.indicator.size();
  const size_t deep = dense + f.embedding.size();
  const std::string& type = c.model.type;
  if (type == "linear" && (f.wide.empty() && dense == 0)) {
    return model.ErrorAt("type", "a linear model needs a wide, numeric or indicator column");
  }
  if (type == "linear" && !f.embedding.empty()) {
    return model.ErrorAt("type", "a linear model uses no embedding columns (try wide_deep)");
  }
  if (type == "dnn" && deep == 0) {
    return model.ErrorAt("type", "a dnn model needs a numeric, indicator or embedding column");
  }
  if (type == "dnn" && !f.wide.empty()) {
    return model.ErrorAt("type", "a dnn model uses no wide columns (try wide_deep)");
  }
  if (type == "wide_deep" && (f.wide.empty() || deep == 0)) {
    return model.ErrorAt("type",
                         "wide_deep needs a wide column and a numeric, indicator or embedding one");
  }
  if (type == "deepfm" && f.embedding.empty()) {
    return model.ErrorAt("type", "deepfm needs embedding columns");
  }
  if (type == "linear" && root.Has("optimizer")) {
    return root.ErrorAt("optimizer", "a linear model trains with wide_optimizer only");
  }
  if (type == "dnn" && root.Has("wide_optimizer")) {
    return root.ErrorAt("wide_optimizer", "a dnn model trains with optimizer only");
  }
  return absl::OkStatus();
}

absl::StatusOr<JobConfig> Convert(Ctx& ctx, const Node& root) {
  JobConfig config;
  ASSIGN_OR_RETURN(MapReader r, MapReader::Create(ctx.src, root, ""));
  RETURN_IF_ERROR(r.Read("model_dir", &config.run.model_dir));
  {
    ASSIGN_OR_RETURN(MapReader run, MapReader::Create(ctx.src, r.Get("run"), "run"));
    RETURN_IF_ERROR(ParseRun(ctx, run, &config.run));
  }
  {
    ASSIGN_OR_RETURN(MapReader eval, MapReader::Create(ctx.src, r.Get("eval"), "eval"));
    RETURN_IF_ERROR(ParseEval(ctx, eval, &config.eval));
  }
  ASSIGN_OR_RETURN(const Node features, r.Require("features"));
  RETURN_IF_ERROR(ParseFeatures(ctx, features, &config.features));
  ASSIGN_OR_RETURN(const Node model_node, r.Require("model"));
  ASSIGN_OR_RETURN(MapReader model, MapReader::Create(ctx.src, model_node, "model"));
  RETURN_IF_ERROR(ParseModel(ctx, model, &config.model));
  RETURN_IF_ERROR(ParseOptimizer(ctx, r.Get("optimizer"), "optimizer", &config.optimizer));
  RETURN_IF_ERROR(
      ParseOptimizer(ctx, r.Get("wide_optimizer"), "wide_optimizer", &config.wide_optimizer));
  {
    ASSIGN_OR_RETURN(MapReader input, MapReader::Create(ctx.src, r.Get("input"), "input"));
    if (input.Has("train")) {
      RETURN_IF_ERROR(ParseInput(ctx, input.Get("train"), "input.train", "run.max_steps",
                                 config.run.max_steps, &config.train_input));
    }
    if (input.Has("eval")) {
      RETURN_IF_ERROR(ParseInput(ctx, input.Get("eval"), "input.eval", "eval.steps",
                                 config.eval.steps, &config.eval_input));
    }
    RETURN_IF_ERROR(input.Finish());
  }
  RETURN_IF_ERROR(CheckModelInputs(model, r, config));
  RETURN_IF_ERROR(r.Finish());
  return config;
}

}  // namespace

StaticTaskOptions InputConfig::TaskOptions() const {
  StaticTaskOptions options;
  options.patterns = files;
  options.num_epochs = num_epochs;
  options.shuffle_files = shuffle_files;
  options.seed = pipeline.seed;
  options.split_bytes = split_bytes;
  return options;
}

HoldoutOptions InputConfig::Holdout() const {
  return HoldoutOptions{holdout_fraction, holdout_seed, holdout};
}

OptimizerOptions DefaultDeepOptimizer() {
  OptimizerOptions o;
  o.name = "adagrad";
  o.learning_rate = 0.05f;
  return o;
}

OptimizerOptions DefaultWideOptimizer() {
  OptimizerOptions o;
  o.name = "ftrl";
  o.learning_rate = 0.2f;
  return o;
}

absl::StatusOr<JobConfig> ParseJobConfig(absl::string_view yaml_text, absl::string_view path,
                                         absl::Span<const std::string> overrides) {
  Ctx ctx{YamlSource(std::string(path)), std::string(Dirname(path))};
  try {
    Node root;
    try {
      root = YAML::Load(std::string(yaml_text));
    } catch (const YAML::ParserException& e) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ":",
                                                     e.mark.column + 1, ": invalid YAML: ", e.msg));
    }
    if (!root.IsDefined() || root.IsNull()) root = Node(YAML::NodeType::Map);
    if (!root.IsMap()) {
      return ctx.src.Error(root, "(top level)",
                           absl::StrCat("expected a map, got ", yaml_internal::Describe(root)));
    }
    for (const std::string& text : overrides) {
      RETURN_IF_ERROR(ctx.src.ApplyOverride(root, text));
    }
    ASSIGN_OR_RETURN(JobConfig config, Convert(ctx, root));
    config.path = std::string(path);
    return config;
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws only on misuse of a node; report it rather than crash on user input.
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
}

absl::StatusOr<JobConfig> LoadJobConfig(FileSystems& fs, absl::string_view path,
                                        absl::Span<const std::string> overrides) {
  std::string full(path);
  if (UriScheme(full).empty() && !full.starts_with('/')) {
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(full, error);
    if (!error) full = absolute.lexically_normal().string();
  }
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(full));
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(*file_system, full),
                   "reading config file ", full);
  ASSIGN_OR_RETURN(JobConfig config, ParseJobConfig(text, full, overrides));
  if (!config.model.graph_file.empty()) {
    const std::string& file = config.model.graph_file;
    ASSIGN_OR_RETURN(FileSystem * graph_fs, fs.For(file));
    ASSIGN_OR_RETURN(config.model.graph, ReadFileToString(*graph_fs, file), "reading model.graph ",
                     file);
  }
  return config;
}

}  // namespace shoal
