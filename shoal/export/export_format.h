// The export directory format (prose: docs/formats.md, "Export"): names, version and the plain
// structs export.json describes. When one changes, change both, and bump kFormatVersion if old
// readers would misread the new directories.
//
//   EXPORT_BASE/<version>/          version = unix seconds of the export (the next free second)
//     variables/                    a model directory holding one checkpoint: values only
//       checkpoint                  (no optimizer slots), one shard file, whole entries
//       ckpt-<step>/...
//     assets/...                    files the feature columns read (vocabularies), if any
//     config.yaml                   the effective job config (features, model, ...)
//     export.json                   written last: metadata, signature, checksums of every file
//
// Plain structs; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/data/raw_batch.h"

namespace shoal {
namespace export_format {

inline constexpr char kFormat[] = "shoal-export";
inline constexpr int kFormatVersion = 2;
inline constexpr char kMetaName[] = "export.json";
inline constexpr char kConfigName[] = "config.yaml";
inline constexpr char kVariablesDir[] = "variables";
inline constexpr char kAssetsDir[] = "assets";
// Readers reject an export.json larger than this before parsing it.
inline constexpr uint64_t kMaxMetaBytes = uint64_t{64} << 20;

}  // namespace export_format

// One raw input column of the model: a column of the training input's schema.
struct SignatureInput {
  std::string name;
  ValueType type = ValueType::kFloat;
  bool has_default = false;    // a missing value becomes default_value at parse time
  std::string default_value;   // text, parsed with `type`
  bool used = false;           // a feature column (or the label) reads it
  char list_separator = '\0';  // csv/tsv: the field is a list split here (ColumnSpec)
};

// One model output, per example: e.g. "logistic" [1], "probabilities" [num_classes].
struct SignatureOutput {
  std::string name;
  std::vector<int64_t> shape;  // without the batch dimension
};

// What a served model takes and gives. Inputs follow the training input's schema, in its field
// order (a CSV line's fields); the label column is among them (named by `label`) and optional in
// requests.
struct Signature {
  std::string format;    // the training input's format: csv, tsv, criteo, libsvm, tfrecord, ...
  char delimiter = ',';  // csv ',' / tsv '\t'
  bool skip_initial_space = false;  // csv/tsv: spaces after a delimiter are dropped (CsvOptions)
  std::vector<SignatureInput> inputs;
  std::string label;  // "" = none
  std::vector<SignatureOutput> outputs;
};

// One file of an export (every file but export.json), by its path relative to the export.
struct ExportFile {
  std::string path;  // '/'-separated, e.g. "variables/ckpt-80/shard-00000-of-00001.data"
  uint64_t bytes = 0;
  uint32_t crc32c = 0;  // CRC32C of the whole content (unmasked)
  bool operator==(const ExportFile&) const = default;
};

// The content of export.json.
struct ExportMeta {
  int format_version = export_format::kFormatVersion;
  int64_t global_step = 0;
  int64_t created_unix_secs = 0;  // the directory's version number
  std::string model_type;
  std::string head;
  int num_classes = 0;
  std::string variables = export_format::kVariablesDir;
  std::string config;  // export_format::kConfigName, or "" without a config
  Signature signature;
  std::vector<ExportFile> files;  // sorted by path
};

}  // namespace shoal
