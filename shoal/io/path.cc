#include "shoal/io/path.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace shoal {

absl::string_view UriScheme(absl::string_view path) {
  const size_t sep = path.find("://");
  if (sep == absl::string_view::npos || sep == 0 || !absl::ascii_isalpha(path[0])) return "";
  for (size_t i = 1; i < sep; ++i) {
    const char c = path[i];
    if (!absl::ascii_isalnum(c) && c != '+' && c != '-' && c != '.') return "";
  }
  return path.substr(0, sep);
}

SplitUri SplitUriPrefix(absl::string_view path) {
  const absl::string_view scheme = UriScheme(path);
  if (scheme.empty()) return {"", path};
  const size_t prefix_len = scheme.size() + 3;
  return {path.substr(0, prefix_len), path.substr(prefix_len)};
}

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  if (dir.empty()) return std::string(name);
  if (name.empty()) return std::string(dir);
  const bool dir_slash = dir.back() == '/';
  const bool name_slash = name.front() == '/';
  if (dir_slash && name_slash) return absl::StrCat(dir, name.substr(1));
  if (dir_slash || name_slash) return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

absl::string_view Dirname(absl::string_view path) {
  const SplitUri uri = SplitUriPrefix(path);
  const size_t slash = uri.rest.rfind('/');
  if (slash == absl::string_view::npos) return uri.prefix;
  // Keep the root slash of "/a" and of "file:///a".
  const size_t keep = slash == 0 ? 1 : slash;
  return path.substr(0, uri.prefix.size() + keep);
}

absl::string_view Basename(absl::string_view path) {
  const SplitUri uri = SplitUriPrefix(path);
  const size_t slash = uri.rest.rfind('/');
  return slash == absl::string_view::npos ? uri.rest : uri.rest.substr(slash + 1);
}

bool HasGlobChars(absl::string_view s) { return s.find_first_of("*?[") != absl::string_view::npos; }

namespace {

// Matches a "[...]" set at pattern[0] against c. Returns the set's length in the pattern, or 0 if
// the set is malformed (then '[' is an ordinary character).
size_t MatchSet(absl::string_view pattern, char c, bool* matched) {
  size_t i = 1;
  bool negate = false;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    negate = true;
    ++i;
  }
  bool hit = false;
  bool first = true;
  while (i < pattern.size() && (pattern[i] != ']' || first)) {
    first = false;
    char lo = pattern[i];
    if (lo == '\\' && i + 1 < pattern.size()) lo = pattern[++i];
    char hi = lo;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      hi = pattern[i + 2];
      i += 2;
    }
    if (lo <= c && c <= hi) hit = true;
    ++i;
  }
  if (i >= pattern.size()) return 0;
  *matched = hit != negate;
  return i + 1;
}

}  // namespace

bool GlobMatch(absl::string_view pattern, absl::string_view name) {
  // Iterative matcher with single-star backtracking: on a mismatch, let the last '*' absorb one
  // more character. Linear in practice, no recursion.
  size_t p = 0, n = 0;
  size_t star_p = absl::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        star_p = p++;
        star_n = n;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++n;
        continue;
      }
      if (pc == '[') {
        bool matched = false;
        const size_t len = MatchSet(pattern.substr(p), name[n], &matched);
        if (len > 0) {
          if (matched) {
            p += len;
            ++n;
            continue;
          }
        } else if (name[n] == '[') {
          ++p;
          ++n;
          continue;
        }
      } else {
        char literal = pc;
        size_t width = 1;
        if (pc == '\\' && p + 1 < pattern.size()) {
          literal = pattern[p + 1];
          width = 2;
        }
        if (literal == name[n]) {
          p += width;
          ++n;
          continue;
        }
      }
    }
    if (star_p == absl::string_view::npos) return false;
    p = star_p + 1;
    n = ++star_n;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace shoal
