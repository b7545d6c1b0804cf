#include "shoal/data/number_parse.h"

#include <array>
#include <charconv>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace shoal {
namespace {

// Strips whitespace and one leading '+' (std::from_chars rejects '+'; users write "+1").
absl::string_view Prepare(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  return text;
}

}  // namespace

bool ParseFloatText(absl::string_view text, float* value) {
  text = Prepare(text);
  if (text.empty()) return false;
  // Fast path: up to 18 decimal digits cannot overflow int64, and int64 -> float rounds once,
  // exactly as from_chars would. Criteo's integer columns all take this path.
  const bool negative = text[0] == '-';
  const size_t first = negative ? 1 : 0;
  const size_t digits = text.size() - first;
  if (digits >= 1 && digits <= 18) {
    int64_t n = 0;
    size_t i = first;
    for (; i < text.size(); ++i) {
      const unsigned d = static_cast<unsigned char>(text[i]) - '0';
      if (d > 9) break;
      n = n * 10 + d;
    }
    if (i == text.size()) {
      if (negative) {
        *value = n == 0 ? -0.0f : static_cast<float>(-n);
      } else {
        *value = static_cast<float>(n);
      }
      return true;
    }
  }
  float parsed;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
  if (ec != std::errc() || ptr != end) return false;
  *value = parsed;
  return true;
}

bool ParseInt64Text(absl::string_view text, int64_t* value) {
  text = Prepare(text);
  if (text.empty()) return false;
  int64_t parsed;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
  if (ec != std::errc() || ptr != end) return false;
  *value = parsed;
  return true;
}

bool ParseHexInt64Text(absl::string_view text, int64_t* value) {
  if (text.empty() || text.size() > 16) return false;
  uint64_t n = 0;
  for (char c : text) {
    const int8_t d = kHexDigitValue[static_cast<unsigned char>(c)];
    if (d < 0) return false;
    n = (n << 4) | static_cast<uint64_t>(d);
  }
  *value = static_cast<int64_t>(n);
  return true;
}

std::string QuoteForError(absl::string_view text) {
  constexpr size_t kLimit = 40;
  if (text.size() <= kLimit) return absl::StrCat("'", text, "'");
  return absl::StrCat("'", text.substr(0, kLimit), "...'");
}

}  // namespace shoal
