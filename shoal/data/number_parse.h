// Number parsing for the text parsers (CSV/TSV, Criteo, libsvm): strict, locale-free, allocation-
// free. Each function accepts the whole of `text` or nothing: "12abc" is not a number, and no
// partial value is stored on failure.
//
// Surrounding ASCII whitespace (space, tab, \r, \v, \f) is tolerated and ignored; a leading '+'
// is accepted. Floats use std::from_chars (round-to-nearest, "nan"/"inf" accepted); pure decimal
// integers take a faster path that yields the same value. Thread-safe (pure functions).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace shoal {

namespace internal {
constexpr std::array<int8_t, 256> MakeHexDigitTable() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int c = '0'; c <= '9'; ++c) table[static_cast<size_t>(c)] = static_cast<int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c)
    table[static_cast<size_t>(c)] = static_cast<int8_t>(c - 'a' + 10);
  for (int c = 'A'; c <= 'F'; ++c)
    table[static_cast<size_t>(c)] = static_cast<int8_t>(c - 'A' + 10);
  return table;
}
}  // namespace internal

// Value of a hex digit by byte, or -1: for parsers that convert while scanning.
inline constexpr std::array<int8_t, 256> kHexDigitValue = internal::MakeHexDigitTable();

// Decimal or scientific float ("3", "-0.5", "1e-3", " 7.25 "). Out-of-range values fail.
bool ParseFloatText(absl::string_view text, float* value);

// Decimal integer ("42", "-7"). Overflow fails.
bool ParseInt64Text(absl::string_view text, int64_t* value);

// 1 to 16 hex digits, either case, no "0x" prefix, no whitespace ("68fd1e64", "FFFFFFFFFFFFFFFF").
// The 64 bits are returned as int64 (so 16 digits may give a negative value): ids, not quantities.
bool ParseHexInt64Text(absl::string_view text, int64_t* value);

// `text` in single quotes for an error message, cut to 40 characters plus "..." so that quoting
// user input never floods a log with a 64 MiB line.
std::string QuoteForError(absl::string_view text);

}  // namespace shoal
