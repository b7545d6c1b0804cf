#include "shoal/estimator/table_input.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/data/feature_set.h"
#include "shoal/estimator/input.h"

namespace shoal {
namespace {

class TableSource final : public BatchSource {
 public:
  TableSource(FeatureSet features, std::shared_ptr<const RawBatch> table,
              const TableInputOptions& options, std::string name)
      : features_(std::move(features)),
        table_(std::move(table)),
        options_(options),
        name_(std::move(name)),
        order_(static_cast<size_t>(table_->num_rows())),
        raw_(features_.schema()) {
    std::iota(order_.begin(), order_.end(), 0);
    StartEpoch();
  }

  std::vector<ColumnMisses> VocabularyMisses() const override {
    return features_.VocabularyMisses();
  }
  int64_t batch_size() const override { return options_.batch_size; }

  absl::Status Next(FeatureBatch* batch) override {
    const int64_t rows = table_->num_rows();
    const int64_t size = options_.batch_size;
    raw_.Clear();
    const int64_t first_epoch = epoch_, first_row = position_;
    while (raw_.num_rows() < size) {
      if (Done()) break;
      const int64_t left = rows - position_;
      // A batch stays inside one epoch unless batches_span_epochs; the last short one of an
      // epoch is dropped with drop_remainder.
      const bool skip_rest = !options_.batches_span_epochs && options_.drop_remainder &&
                             raw_.num_rows() == 0 && left < size;
      if (left == 0 || skip_rest) {
        ++epoch_;
        position_ = 0;
        if (rows == 0) break;
        StartEpoch();
        if (!options_.batches_span_epochs && raw_.num_rows() > 0) break;
        continue;
      }
      const int64_t take = std::min(left, size - raw_.num_rows());
      Append(position_, position_ + take);
      position_ += take;
      if (!options_.batches_span_epochs) break;
    }
    if (raw_.num_rows() == 0 || (options_.drop_remainder && raw_.num_rows() < size)) {
      return absl::OutOfRangeError(
          absl::StrCat(name_, rows == 0 ? ": the table has no rows" : ": end of input"));
    }
    absl::Status status = features_.TransformInto(raw_, batch);
    if (!status.ok()) {
      return AnnotateCat(status, name_, ": a batch from row ", first_row, " of epoch ",
                         first_epoch + 1, options_.shuffle ? " (shuffled order)" : "");
    }
    return absl::OkStatus();
  }

  int64_t epochs_completed() const override {
    return epoch_ + (position_ == table_->num_rows() && table_->num_rows() > 0 ? 1 : 0);
  }

 private:
  bool Done() const { return options_.num_epochs > 0 && epoch_ >= options_.num_epochs; }

  // Appends positions [begin, end) of the current epoch's order to raw_.
  void Append(int64_t begin, int64_t end) {
    if (!options_.shuffle) {
      raw_.AppendRows(*table_, begin, end);
      return;
    }
    for (int64_t i = begin; i < end; ++i) {
      const int64_t row = order_[static_cast<size_t>(i)];
      raw_.AppendRows(*table_, row, row + 1);
    }
  }

  void StartEpoch() {
    position_ = 0;
    if (!options_.shuffle) return;
    std::mt19937_64 rng(options_.seed * 1000003 + static_cast<uint64_t>(epoch_));
    std::shuffle(order_.begin(), order_.end(), rng);
  }

  const FeatureSet features_;
  const std::shared_ptr<const RawBatch> table_;
  const TableInputOptions options_;
  const std::string name_;
  std::vector<int64_t> order_;
  RawBatch raw_;
  int64_t epoch_ = 0;
  int64_t position_ = 0;
};

}  // namespace

absl::Status CheckTable(const Schema& schema, const RawBatch& table,
                        const TableInputOptions& options) {
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size must be >= 1, got ", options.batch_size));
  }
  if (options.num_epochs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_epochs must be >= 0 (0 = repeat), got ", options.num_epochs));
  }
  if (static_cast<size_t>(table.num_columns()) != schema.columns.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the table has ", table.num_columns(),
                                                   " columns, its schema ", schema.columns.size()));
  }
  for (int i = 0; i < table.num_columns(); ++i) {
    const RawColumn& column = table.column(i);
    const ColumnSpec& spec = schema.columns[static_cast<size_t>(i)];
    if (column.type() != spec.type) {
      return absl::InvalidArgumentError(
          absl::StrCat("column '", spec.name, "' holds ", ValueTypeName(column.type()),
                       " values, its schema says ", ValueTypeName(spec.type)));
    }
    if (column.num_rows() != table.num_rows()) {
      return absl::InvalidArgumentError(absl::StrCat("column '", spec.name, "' has ",
                                                     column.num_rows(), " rows, the table ",
                                                     table.num_rows()));
    }
  }
  return absl::OkStatus();
}

InputFn TableInputFn(FileSystems& fs, const FeatureColumns& columns, const Schema& schema,
                     std::shared_ptr<const RawBatch> table, const TableInputOptions& options,
                     std::string name) {
  return [&fs, columns, schema, table = std::move(table), options,
          name = std::move(name)]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
    RETURN_IF_ERROR_CTX(CheckTable(schema, *table, options), name);
    ASSIGN_OR_RETURN(
        FeatureSet features,
        FeatureSet::Create(ColumnsAsRead(columns, schema, options.require_label), schema, fs),
        name);
    return std::make_unique<TableSource>(std::move(features), table, options, name);
  };
}

}  // namespace shoal
