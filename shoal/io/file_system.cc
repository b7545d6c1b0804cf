#include "shoal/io/file_system.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "shoal/base/status.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

// Appends to `out` the paths below `dir` matching components[i..]. Directories that vanish or turn
// out to be files while we walk simply contribute no matches.
absl::Status ExpandGlob(FileSystem& fs, const std::string& dir,
                        const std::vector<std::string>& components, size_t i,
                        std::vector<std::string>* out) {
  const std::string& component = components[i];
  const bool last = i + 1 == components.size();
  std::vector<std::string> candidates;
  if (HasGlobChars(component)) {
    absl::StatusOr<std::vector<std::string>> children = fs.GetChildren(dir.empty() ? "." : dir);
    if (absl::IsNotFound(children.status()) || absl::IsFailedPrecondition(children.status())) {
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(children.status());
    for (const std::string& child : *children) {
      if (GlobMatch(component, child)) candidates.push_back(JoinPath(dir, child));
    }
  } else {
    std::string candidate = JoinPath(dir, component);
    ASSIGN_OR_RETURN(const bool exists, fs.FileExists(candidate));
    if (exists) candidates.push_back(std::move(candidate));
  }
  for (std::string& candidate : candidates) {
    if (last) {
      out->push_back(std::move(candidate));
      continue;
    }
    absl::StatusOr<bool> is_dir = fs.IsDirectory(candidate);
    if (absl::IsNotFound(is_dir.status())) continue;
    RETURN_IF_ERROR(is_dir.status());
    if (*is_dir) RETURN_IF_ERROR(ExpandGlob(fs, candidate, components, i + 1, out));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> FileSystem::GetMatchingPaths(absl::string_view pattern) {
  std::vector<std::string> matches;
  const SplitUri uri = SplitUriPrefix(pattern);
  const size_t first_wildcard = uri.rest.find_first_of("*?[");
  if (first_wildcard == absl::string_view::npos) {
    ASSIGN_OR_RETURN(const bool exists, FileExists(pattern), "matching ", pattern);
    if (exists) matches.emplace_back(pattern);
    return matches;
  }
  // The fixed directory before the first wildcard component, and the components after it.
  const size_t slash = uri.rest.rfind('/', first_wildcard);
  std::string base(uri.prefix);
  absl::string_view tail = uri.rest;
  if (slash != absl::string_view::npos) {
    absl::StrAppend(&base, uri.rest.substr(0, slash == 0 ? 1 : slash));
    tail = uri.rest.substr(slash + 1);
  }
  const std::vector<std::string> components = absl::StrSplit(tail, '/', absl::SkipEmpty());
  RETURN_IF_ERROR_CTX(ExpandGlob(*this, base, components, 0, &matches), "matching ", pattern);
  std::sort(matches.begin(), matches.end());
  return matches;
}

}  // namespace shoal
