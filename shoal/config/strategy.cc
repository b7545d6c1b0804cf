#include "shoal/config/strategy.h"

#include "absl/strings/str_cat.h"

namespace shoal {

absl::StatusOr<Strategy> Strategy::Parse(absl::string_view name) {
  for (Kind kind : {Kind::kParameterServer, Kind::kAllReduce, Kind::kHybrid}) {
    if (Strategy(kind).name() == name) return Strategy(kind);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "run.strategy is '", name, "'; it must be parameter_server, all_reduce or hybrid"));
}

absl::string_view Strategy::name() const {
  switch (kind_) {
    case Kind::kParameterServer:
      return "parameter_server";
    case Kind::kAllReduce:
      return "all_reduce";
    case Kind::kHybrid:
      return "hybrid";
  }
  return "unknown";
}

}  // namespace shoal
