#include "shoal/data/libsvm_parser.h"

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/data/number_parse.h"

namespace shoal {
namespace {

constexpr int kLabel = 0;
constexpr int kIds = 1;
constexpr int kValues = 2;

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Splits a record into blank-separated tokens, stopping at a '#' comment.
class Tokenizer {
 public:
  explicit Tokenizer(absl::string_view text) : text_(text) {}

  bool Next(absl::string_view* token) {
    while (pos_ < text_.size() && IsBlank(text_[pos_])) ++pos_;
    if (pos_ == text_.size() || text_[pos_] == '#') return false;
    const size_t begin = pos_;
    while (pos_ < text_.size() && !IsBlank(text_[pos_])) ++pos_;
    *token = text_.substr(begin, pos_ - begin);
    return true;
  }

 private:
  const absl::string_view text_;
  size_t pos_ = 0;
};

absl::Status PairError(int pair, absl::string_view token, absl::string_view reason) {
  return absl::InvalidArgumentError(
      absl::StrCat("pair ", pair, " ", QuoteForError(token), ": ", reason));
}

absl::Status ParsePairs(Tokenizer& tokens, RawBatch* batch) {
  RawColumn& ids = batch->column(kIds);
  RawColumn& values = batch->column(kValues);
  absl::string_view token;
  for (int pair = 1; tokens.Next(&token); ++pair) {
    const size_t colon = token.find(':');
    if (colon == absl::string_view::npos || colon == 0 || colon + 1 == token.size()) {
      return PairError(pair, token, "expected id:value");
    }
    const absl::string_view id_text = token.substr(0, colon);
    const absl::string_view value_text = token.substr(colon + 1);
    if (id_text == "qid") {
      int64_t qid;
      if (!ParseInt64Text(value_text, &qid)) {
        return PairError(pair, token,
                         absl::StrCat("qid ", QuoteForError(value_text), " is not an integer"));
      }
      continue;
    }
    int64_t id;
    if (!ParseInt64Text(id_text, &id) || id < 0 || id_text[0] == '+') {
      return PairError(
          pair, token,
          absl::StrCat("id ", QuoteForError(id_text), " is not a non-negative integer"));
    }
    float value;
    if (!ParseFloatText(value_text, &value)) {
      return PairError(pair, token,
                       absl::StrCat("value ", QuoteForError(value_text), " is not a number"));
    }
    ids.AddInt64(id);
    values.AddFloat(value);
  }
  return absl::OkStatus();
}

}  // namespace

Schema LibsvmSchema() {
  Schema schema;
  schema.columns = {{"label", ValueType::kFloat, false, ""},
                    {"ids", ValueType::kInt64, false, ""},
                    {"values", ValueType::kFloat, false, ""}};
  return schema;
}

absl::Status LibsvmParser::Parse(absl::string_view record, RawBatch* batch) const {
  CHECK_EQ(batch->num_columns(), 3) << "batch built for another schema";
  Tokenizer tokens(record);
  absl::string_view label_text;
  absl::Status error;
  float label;
  if (!tokens.Next(&label_text)) {
    error = absl::InvalidArgumentError("missing label");
  } else if (!ParseFloatText(label_text, &label)) {
    error = absl::InvalidArgumentError(
        absl::StrCat("label ", QuoteForError(label_text), " is not a number"));
  } else {
    batch->column(kLabel).AddFloat(label);
    error = ParsePairs(tokens, batch);
  }
  if (!error.ok()) {
    batch->Rollback();
    return error;
  }
  for (int c = 0; c < 3; ++c) batch->column(c).EndRow();
  batch->EndRecord();
  return absl::OkStatus();
}

}  // namespace shoal
