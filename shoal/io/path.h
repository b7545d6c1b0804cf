// Path and URI helpers shared by the file systems. Paths are strings: either plain local paths
// ("/data/x", "rel/x") or URIs "scheme://rest" ("file:///data/x", "mem://tmp/x",
// "hdfs://namenode:8020/x"). Helpers work on the text only; they never touch a file system.
// Pure functions, thread-safe.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace shoal {

// The scheme of `path` ("mem" for "mem://a"), or "" for a plain path. A scheme is a letter
// followed by letters, digits, '+', '-' or '.', and must be followed by "://".
absl::string_view UriScheme(absl::string_view path);

// `path` split into its "scheme://" prefix (empty for plain paths) and the rest.
struct SplitUri {
  absl::string_view prefix;  // e.g. "mem://", "hdfs://", ""
  absl::string_view rest;    // e.g. "a/b", "namenode:8020/x", "/data/x"
};
SplitUri SplitUriPrefix(absl::string_view path);

// Joins with exactly one '/' between parts: JoinPath("/a", "b") == "/a/b",
// JoinPath("mem://", "b") == "mem://b", JoinPath("", "b") == "b".
std::string JoinPath(absl::string_view dir, absl::string_view name);

// The part before the last '/' (keeping a root such as "/" or "mem://"), and the part after it.
// Dirname("/a/b") == "/a", Dirname("/a") == "/", Dirname("mem://a") == "mem://", Dirname("a") ==
// "".
absl::string_view Dirname(absl::string_view path);
absl::string_view Basename(absl::string_view path);

// True if `s` contains a glob metacharacter: '*', '?' or '['.
bool HasGlobChars(absl::string_view s);

// Shell-style match of one path component: '*' any run, '?' one character, "[a-z]", "[!abc]" or
// "[^abc]" a set, '\' escapes the next character. A malformed set ("[ab") matches '[' literally.
bool GlobMatch(absl::string_view pattern, absl::string_view name);

}  // namespace shoal
