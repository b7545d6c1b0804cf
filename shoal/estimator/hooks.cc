#include "shoal/estimator/hooks.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/estimator/estimator.h"

namespace shoal {
namespace {

// 1234567 -> "1,234,567".
std::string Thousands(int64_t value) {
  std::string digits = absl::StrCat(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

std::string Duration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

}  // namespace

absl::Status LoggingHook::AfterCreateSession(RunContext& context) {
  first_step_ = context.global_step;
  last_logged_step_ = context.global_step;
  last_logged_examples_ = 0;
  start_ = last_logged_ = absl::Now();
  return absl::OkStatus();
}

absl::Status LoggingHook::AfterRun(RunContext& context) {
  loss_sum_ += context.loss;
  ++loss_count_;
  const bool at_end = context.last_step > 0 && context.global_step >= context.last_step;
  if (context.global_step - last_logged_step_ < every_steps_ && !at_end) return absl::OkStatus();
  const absl::Time now = absl::Now();
  const double interval = std::max(1e-9, absl::ToDoubleSeconds(now - last_logged_));
  const double rate = static_cast<double>(context.examples - last_logged_examples_) / interval;
  std::string line = absl::StrFormat("step %d | loss %.4f | %s ex/s", context.global_step,
                                     loss_sum_ / static_cast<double>(loss_count_),
                                     Thousands(static_cast<int64_t>(rate)));
  if (context.last_step > first_step_) {
    const double done = static_cast<double>(context.global_step - first_step_) /
                        static_cast<double>(context.last_step - first_step_);
    const double elapsed = absl::ToDoubleSeconds(now - start_);
    absl::StrAppend(&line, absl::StrFormat(" | %.0f%%", 100.0 * done));
    if (done > 0 && done < 1) {
      absl::StrAppend(&line, " ETA ", Duration(elapsed * (1 - done) / done));
    }
  }
  LOG(INFO) << line;
  last_logged_step_ = context.global_step;
  last_logged_examples_ = context.examples;
  last_logged_ = now;
  loss_sum_ = 0;
  loss_count_ = 0;
  return absl::OkStatus();
}

absl::Status StopAtStepHook::AfterRun(RunContext& context) {
  if (context.global_step >= last_step_) {
    context.RequestStop(absl::StrCat("stop at step ", last_step_));
  }
  return absl::OkStatus();
}

absl::Status NanLossHook::AfterRun(RunContext& context) {
  if (!std::isfinite(context.loss)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the loss is ", context.loss, " at global step ", context.global_step,
        " (NaN loss during training): lower the learning rate or check the input for bad values"));
  }
  return absl::OkStatus();
}

absl::Status SummaryHook::AfterCreateSession(RunContext& context) {
  last_step_ = context.global_step;
  last_examples_ = context.examples;
  last_time_ = absl::Now();
  return absl::OkStatus();
}

absl::Status SummaryHook::AfterRun(RunContext& context) {
  loss_sum_ += context.loss;
  ++loss_count_;
  if (context.global_step - last_step_ < every_steps_) return absl::OkStatus();
  return Write(context);
}

absl::Status SummaryHook::Write(RunContext& context) {
  if (loss_count_ == 0) return absl::OkStatus();
  const absl::Time now = absl::Now();
  const double seconds = std::max(1e-9, absl::ToDoubleSeconds(now - last_time_));
  std::vector<std::string> tags;
  std::vector<ScalarValue> values;
  values.emplace_back("loss", loss_sum_ / static_cast<double>(loss_count_));
  values.emplace_back("global_step/sec",
                      static_cast<double>(context.global_step - last_step_) / seconds);
  values.emplace_back("examples/sec",
                      static_cast<double>(context.examples - last_examples_) / seconds);
  if (context.estimator != nullptr) {
    values.emplace_back("input/stall_fraction", context.estimator->InputStats().stall_fraction());
    const std::vector<ColumnMisses> misses = context.estimator->InputVocabularyMisses();
    ASSIGN_OR_RETURN(std::vector<TableStats> tables, context.estimator->GetTableStats());
    // With eviction on (run.evict_unseen_steps), also the rows evicted so far by this run.
    const bool evicting = context.estimator->config().run.evict_unseen_steps > 0;
    const std::map<std::string, int64_t>& evicted = context.estimator->rows_evicted();
    // ScalarValue keeps a view of its tag: the tags live in `tags` until AddScalars returns.
    tags.reserve(3 * tables.size() + misses.size());
    for (const ColumnMisses& m : misses) {
      tags.push_back(absl::StrCat("input/vocabulary_miss_rate/", m.column));
      values.emplace_back(tags.back(), m.rate());
    }
    for (const TableStats& table : tables) {
      tags.push_back(absl::StrCat("embedding/", table.name, "/rows"));
      values.emplace_back(tags.back(), table.rows);
      tags.push_back(absl::StrCat("embedding/", table.name, "/bytes"));
      values.emplace_back(tags.back(), table.memory_bytes);
      if (evicting) {
        auto it = evicted.find(table.name);
        tags.push_back(absl::StrCat("embedding/", table.name, "/rows_evicted"));
        values.emplace_back(tags.back(), it == evicted.end() ? 0 : it->second);
      }
    }
  }
  RETURN_IF_ERROR(writer_->AddScalars(context.global_step, values));
  RETURN_IF_ERROR(writer_->Flush());
  last_step_ = context.global_step;
  last_examples_ = context.examples;
  last_time_ = now;
  loss_sum_ = 0;
  loss_count_ = 0;
  return absl::OkStatus();
}

absl::Status SummaryHook::End(RunContext& context) {
  RETURN_IF_ERROR(Write(context));
  return writer_->Flush();
}

absl::Status CheckpointSaverHook::AfterCreateSession(RunContext& context) {
  last_saved_step_ = context.global_step;
  last_saved_ = absl::Now();
  return absl::OkStatus();
}

absl::Status CheckpointSaverHook::AfterRun(RunContext& context) {
  const bool by_steps = every_steps_ > 0 && context.global_step - last_saved_step_ >= every_steps_;
  const bool by_time = every_secs_ > 0 && absl::Now() - last_saved_ >= absl::Seconds(every_secs_);
  if (!by_steps && !by_time) return absl::OkStatus();
  if (context.estimator == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(context.estimator->SaveCheckpoint().status());
  last_saved_step_ = context.global_step;
  last_saved_ = absl::Now();
  return absl::OkStatus();
}

absl::Status EarlyStoppingHook::AfterRun(RunContext& context) {
  if (context.estimator == nullptr) return absl::OkStatus();
  const std::vector<EvalResult>& evals = context.estimator->evaluations();
  for (; seen_evals_ < evals.size(); ++seen_evals_) {
    auto it = evals[seen_evals_].metrics.find(metric_);
    if (it == evals[seen_evals_].metrics.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("early stopping: the evaluation has no metric '", metric_, "'"));
    }
    const double value = it->second;
    const bool better = !best_.has_value() || (lower_is_better_ ? value < *best_ : value > *best_);
    if (better) {
      best_ = value;
      without_improvement_ = 0;
    } else {
      ++without_improvement_;
    }
  }
  if (without_improvement_ >= patience_) {
    context.RequestStop(absl::StrCat("early stopping: ", metric_, " did not improve in ",
                                     without_improvement_, " evaluations (best ", *best_, ")"));
  }
  return absl::OkStatus();
}

}  // namespace shoal
