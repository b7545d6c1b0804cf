#include "shoal/data/feature_column.h"

#include "shoal/data/murmur3.h"

namespace shoal {

absl::string_view PoolingName(Pooling pooling) {
  switch (pooling) {
    case Pooling::kSum:
      return "sum";
    case Pooling::kMean:
      return "mean";
    case Pooling::kSqrtN:
      return "sqrtn";
  }
  return "?";
}

uint32_t WideColumnSeed(absl::string_view categorical_name) {
  return static_cast<uint32_t>(MurmurHash64(categorical_name, 0));
}

}  // namespace shoal
