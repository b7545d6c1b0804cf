// JobConfigToYaml (declared in job_config.h): the effective config, every key written out except
// empty optional strings and keys that parsing rejects for the chosen options (e.g. `mean` without
// normalizer: standardize), so that the output parses back to the same JobConfig.

#include <charconv>

#include "nlohmann/json.hpp"
#include "shoal/config/job_config.h"
#include "yaml-cpp/yaml.h"

namespace shoal {
namespace {

std::string FloatText(float v) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), v);
  return std::string(buffer, result.ptr);
}

class Writer {
 public:
  Writer() { out_ << YAML::BeginMap; }
  std::string Finish() {
    out_ << YAML::EndMap;
    return std::string(out_.c_str()) + "\n";
  }

  void Key(absl::string_view key) { out_ << YAML::Key << std::string(key) << YAML::Value; }
  void BeginMap(absl::string_view key) {
    Key(key);
    out_ << YAML::BeginMap;
  }
  void BeginFlowMap() { out_ << YAML::Flow << YAML::BeginMap; }
  void EndMap() { out_ << YAML::EndMap; }
  void BeginList(absl::string_view key) {
    Key(key);
    out_ << YAML::BeginSeq;
  }
  void EndList() { out_ << YAML::EndSeq; }

  void Str(const std::string& s) {
    // An empty or null-looking plain scalar would read back as null.
    if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
      out_ << YAML::DoubleQuoted << s;
    } else {
      out_ << s;
    }
  }
  void Str(absl::string_view key, const std::string& s) {
    Key(key);
    Str(s);
  }
  void OptionalStr(absl::string_view key, const std::string& s) {
    if (!s.empty()) Str(key, s);
  }
  template <typename T>
  void Int(absl::string_view key, T v) {
    Key(key);
    out_ << v;
  }
  void Bool(absl::string_view key, bool v) {
    Key(key);
    out_ << (v ? "true" : "false");
  }
  void Float(absl::string_view key, float v) {
    Key(key);
    out_ << FloatText(v);
  }
  void StrList(absl::string_view key, const std::vector<std::string>& values) {
    Key(key);
    out_ << YAML::Flow << YAML::BeginSeq;
    for (const std::string& v : values) Str(v);
    out_ << YAML::EndSeq;
  }
  // A JSON value as a YAML flow node: strings double-quoted (ParseJobConfig reads a quoted
  // scalar as a string, a plain one as a number or bool), numbers in JSON's round-trip form.
  void Json(absl::string_view key, const nlohmann::json& value) {
    Key(key);
    out_ << YAML::Flow;
    JsonValue(value);
  }
  template <typename T, typename Format>
  void List(absl::string_view key, const std::vector<T>& values, Format format) {
    Key(key);
    out_ << YAML::Flow << YAML::BeginSeq;
    for (const T& v : values) out_ << format(v);
    out_ << YAML::EndSeq;
  }

 private:
  void JsonValue(const nlohmann::json& value) {
    if (value.is_object()) {
      out_ << YAML::BeginMap;
      for (const auto& [k, v] : value.items()) {
        out_ << YAML::Key << YAML::DoubleQuoted << k << YAML::Value;
        JsonValue(v);
      }
      out_ << YAML::EndMap;
    } else if (value.is_array()) {
      out_ << YAML::BeginSeq;
      for (const nlohmann::json& v : value) JsonValue(v);
      out_ << YAML::EndSeq;
    } else if (value.is_string()) {
      out_ << YAML::DoubleQuoted << value.get<std::string>();
    } else if (value.is_null()) {
      out_ << "~";
    } else {
      out_ << value.dump();  // numbers and booleans
    }
  }

  YAML::Emitter out_;
};

absl::string_view NormalizerText(Normalizer n) {
  switch (n) {
    case Normalizer::kStandardize:
      return "standardize";
    case Normalizer::kLog1p:
      return "log1p";
    default:
      return "none";
  }
}

void WriteFeatures(Writer& w, const FeatureColumns& f) {
  w.BeginMap("features");
  w.BeginList("numeric");
  for (const NumericColumn& c : f.numeric) {
    w.BeginFlowMap();
    w.Str("name", c.name);
    w.OptionalStr("source", c.source);
    w.Int("dimension", c.dimension);
    w.Float("default_value", c.default_value);
    w.Str("normalizer", std::string(NormalizerText(c.normalizer)));
    if (c.normalizer == Normalizer::kStandardize) {
      w.Float("mean", c.mean);
      w.Float("stddev", c.stddev);
    }
    w.EndMap();
  }
  w.EndList();
  w.BeginList("hashed");
  for (const HashedCategoricalColumn& c : f.hashed) {
    w.BeginFlowMap();
    w.Str("name", c.name);
    w.OptionalStr("source", c.source);
    w.Int("seed", c.seed);
    w.Int("hash_bucket_size", c.hash_bucket_size);
    w.EndMap();
  }
  w.EndList();
  w.BeginList("vocabulary");
  for (const VocabularyCategoricalColumn& c : f.vocabulary) {
    w.BeginFlowMap();
    w.Str("name", c.name);
    w.OptionalStr("source", c.source);
    if (!c.vocabulary.empty()) w.StrList("vocabulary", c.vocabulary);
    w.OptionalStr("vocabulary_file", c.vocabulary_file);
    w.Int("num_oov_buckets", c.num_oov_buckets);
    w.Int("default_value", c.default_value);
    w.EndMap();
  }
  w.EndList();
  w.BeginList("identity");
  for (const IdentityCategoricalColumn& c : f.identity) {
    w.BeginFlowMap();
    w.Str("name", c.name);
    w.OptionalStr("source", c.source);
    w.Int("num_buckets", c.num_buckets);
    w.Int("default_value", c.default_value);
    w.EndMap();
  }
  w.EndList();
  w.BeginList("bucketized");
  for (const BucketizedColumn& c : f.bucketized) {
    w.BeginFlowMap();
    w.Str("name", c.name);
    w.OptionalStr("source", c.source);
    w.List("boundaries", c.boundaries, FloatText);
    w.EndMap();
  }
  w.EndList();
  w.BeginList("crossed");
  for (const CrossedColumn& c : f.crossed) {
    w.BeginFlowMap();
    w.Str("name", c.name);
    w.StrList("keys", c.keys);
    w.Int("seed", c.seed);
    w.Int("hash_bucket_size", c.hash_bucket_size);
    w.EndMap();
  }
  w.EndList();
  w.BeginList("weighted");
  for (const WeightedCategoricalColumn& c : f.weighted) {
    w.BeginFlowMap();
    w.Str("name", c.name);
    w.Str("categorical", c.categorical);
    w.Str("weight", c.weight);
    w.EndMap();
  }
  w.EndList();
  w.BeginList("embedding");
  for (const EmbeddingColumn& c : f.embedding) {
    w.BeginFlowMap();
    w.Str("categorical", c.categorical);
    w.Int("dimension", c.dimension);
    w.Str("pooling", std::string(PoolingName(c.pooling)));
    w.OptionalStr("name", c.name);
    w.OptionalStr("table", c.table);
    w.EndMap();
  }
  w.EndList();
  w.BeginList("wide");
  for (const WideColumn& c : f.wide) {
    w.BeginFlowMap();
    w.Str("categorical", c.categorical);
    w.OptionalStr("name", c.name);
    w.Str("table", c.table);
    w.EndMap();
  }
  w.EndList();
  w.BeginList("indicator");
  for (const IndicatorColumn& c : f.indicator) {
    w.BeginFlowMap();
    w.Str("categorical", c.categorical);
    w.OptionalStr("name", c.name);
    w.EndMap();
  }
  w.EndList();
  w.OptionalStr("label", f.label.source);
  if (!f.label.vocabulary.empty()) w.StrList("label_vocabulary", f.label.vocabulary);
  w.OptionalStr("weight", f.weight.source);
  w.EndMap();
}

void WriteOptimizer(Writer& w, absl::string_view key, const OptimizerOptions& o) {
  w.BeginMap(key);
  w.Str("name", o.name);
  w.Float("learning_rate", o.learning_rate);
  w.Float("momentum", o.momentum);
  w.Bool("use_nesterov", o.use_nesterov);
  w.Float("initial_accumulator_value", o.initial_accumulator_value);
  w.Float("beta1", o.beta1);
  w.Float("beta2", o.beta2);
  w.Float("epsilon", o.epsilon);
  w.Float("learning_rate_power", o.learning_rate_power);
  w.Float("l1", o.l1);
  w.Float("l2", o.l2);
  w.Float("l2_shrinkage", o.l2_shrinkage);
  w.EndMap();
}

absl::string_view ValueTypeText(ValueType type) {
  switch (type) {
    case ValueType::kInt64:
      return "int64";
    case ValueType::kString:
      return "string";
    default:
      return "float";
  }
}

void WriteInput(Writer& w, absl::string_view key, const InputConfig& in) {
  w.BeginMap(key);
  w.StrList("files", in.files);
  w.Str("format", in.format);
  if (in.format == "csv" || in.format == "tsv") {
    w.Bool("header", in.header);
    w.Bool("skip_initial_space", in.skip_initial_space);
  }
  if (!in.schema.columns.empty()) {
    w.BeginList("schema");
    for (const ColumnSpec& c : in.schema.columns) {
      w.BeginFlowMap();
      w.Str("name", c.name);
      w.Str("type", std::string(ValueTypeText(c.type)));
      if (c.has_default) w.Str("default", c.default_value);
      if (c.list_separator != '\0') w.Str("list_separator", std::string(1, c.list_separator));
      w.EndMap();
    }
    w.EndList();
  }
  w.Int("num_epochs", in.num_epochs);
  w.Bool("shuffle_files", in.shuffle_files);
  w.Int("split_bytes", in.split_bytes);
  if (in.holdout_fraction > 0) {
    w.Float("holdout_fraction", in.holdout_fraction);
    w.Int("holdout_seed", in.holdout_seed);
    w.Bool("holdout", in.holdout);
  }
  const PipelineOptions& p = in.pipeline;
  w.Int("batch_size", p.batch_size);
  w.Bool("drop_remainder", p.drop_remainder);
  w.Int("shuffle_buffer", p.shuffle_buffer);
  w.Int("seed", p.seed);
  w.Int("parse_threads", p.num_parse_threads);
  w.Int("prefetch_batches", p.prefetch_batches);
  w.Str("bad_records", p.bad_records.action == BadRecordPolicy::Action::kFail
                           ? std::string("fail")
                           : "skip:" + std::to_string(p.bad_records.max_skipped));
  w.EndMap();
}

}  // namespace

std::string JobConfigToYaml(const JobConfig& c) {
  Writer w;
  w.Str("model_dir", c.run.model_dir);
  WriteFeatures(w, c.features);

  const ModelConfig& m = c.model;
  w.BeginMap("model");
  w.Str("type", m.type);
  w.Str("head", m.head);
  w.Int("num_classes", m.num_classes);
  w.List("hidden_units", m.hidden_units, [](int64_t v) { return v; });
  w.Str("activation", m.activation);
  w.Float("dropout", m.dropout);
  w.Bool("batch_norm", m.batch_norm);
  if (!m.graph.empty()) {
    // The graph was validated JSON when it was read; written inline whatever its source.
    w.Json("graph", nlohmann::json::parse(m.graph, nullptr, /*allow_exceptions=*/false));
  }
  w.EndMap();

  if (m.type != "linear") WriteOptimizer(w, "optimizer", c.optimizer);
  if (m.type != "dnn") WriteOptimizer(w, "wide_optimizer", c.wide_optimizer);

  if (!c.train_input.files.empty() || !c.eval_input.files.empty()) {
    w.BeginMap("input");
    if (!c.train_input.files.empty()) WriteInput(w, "train", c.train_input);
    if (!c.eval_input.files.empty()) WriteInput(w, "eval", c.eval_input);
    w.EndMap();
  }

  const RunConfig& r = c.run;
  w.BeginMap("run");
  w.Int("max_steps", r.max_steps);
  w.Int("save_checkpoints_steps", r.save_checkpoints_steps);
  w.Int("save_checkpoints_secs", r.save_checkpoints_secs);
  w.Int("keep_checkpoint_max", r.keep_checkpoint_max);
  w.Int("log_step_count_steps", r.log_step_count_steps);
  w.Int("save_histograms_steps", r.save_histograms_steps);
  w.Int("seed", r.seed);
  w.Int("sync_replicas", r.sync_replicas);
  w.Str("strategy", std::string(r.strategy.name()));
  w.Int("collective_timeout_secs", r.collective_timeout_secs);
  w.Str("pipeline_pull", r.pipeline_pull);
  w.Int("train_threads", r.train_threads);
  w.Int("heartbeat_timeout_secs", r.heartbeat_timeout_secs);
  w.Int("completion_timeout_secs", r.completion_timeout_secs);
  w.Int("evict_unseen_steps", r.evict_unseen_steps);
  w.Int("checkpoint_hold_timeout_secs", r.checkpoint_hold_timeout_secs);
  if (!r.warm_start.from.empty()) {
    w.BeginMap("warm_start");
    w.Str("from", r.warm_start.from);
    w.StrList("patterns", r.warm_start.patterns);
    w.EndMap();
  }
  w.EndMap();

  const EvalConfig& e = c.eval;
  w.BeginMap("eval");
  w.Int("steps", e.steps);
  w.Int("start_delay_secs", e.start_delay_secs);
  w.Int("throttle_secs", e.throttle_secs);
  w.BeginList("exporters");
  for (const ExporterConfig& x : e.exporters) {
    w.BeginFlowMap();
    w.Str("name", x.name);
    w.Str("type", x.type);
    if (x.type == "best") w.Str("metric", x.metric);
    w.Int("keep", x.keep);
    w.EndMap();
  }
  w.EndList();
  w.EndMap();
  return w.Finish();
}

}  // namespace shoal
