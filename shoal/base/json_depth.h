// Nesting depth of JSON text, measured without parsing it.
//
// nlohmann::json parses iteratively, but copying, dumping and walking a parsed value recurse once
// per level: a body of 100,000 '[' (200 KB) overflowed the stack of `shoal serve`. Every parser
// of outside JSON (REST bodies, TF_CONFIG, manifests, WebHDFS replies) checks the depth first and
// refuses text nested deeper than its format can need. Thread-safe (a pure function).
#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"

namespace shoal {

// The deepest nesting of arrays and objects in `text` ("1" is 0, "[[1]]" is 2), counting only
// brackets outside strings (escapes inside strings are honoured). Stops counting once the depth
// passes `limit` and returns limit + 1, so hostile input costs one pass at most. Not a validator:
// malformed text gets some depth, and the parser reports what is wrong with it.
inline size_t JsonNestingDepth(absl::string_view text, size_t limit) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return limit + 1;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace shoal
