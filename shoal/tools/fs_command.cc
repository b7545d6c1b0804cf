#include "shoal/tools/fs_command.h"

#include <functional>
#include <string>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

// `path` without trailing slashes, keeping a root ("/", "mem://") whole.
absl::string_view StripTrailingSlashes(absl::string_view path) {
  const SplitUri split = SplitUriPrefix(path);
  absl::string_view rest = split.rest;
  while (rest.size() > 1 && rest.back() == '/') rest.remove_suffix(1);
  return path.substr(0, split.prefix.size() + rest.size());
}

// Whether `path` names the root of its file system ("/", "file:///", "mem://"). A remote root
// ("hdfs://nn:8020/") is refused by its file system itself.
bool IsRoot(absl::string_view path) {
  absl::string_view rest = SplitUriPrefix(path).rest;
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  return rest.empty();
}

// Whether `path` is an existing directory: false when nothing is there.
absl::StatusOr<bool> IsExistingDirectory(FileSystem& fs, absl::string_view path) {
  absl::StatusOr<bool> is_dir = fs.IsDirectory(path);
  if (absl::IsNotFound(is_dir.status())) return false;
  return is_dir;
}

// Runs `operation` on each operand, printing each failure; 1 when any failed.
int ForEach(const std::vector<std::string>& operands,
            const std::function<absl::Status(const std::string&)>& operation, std::ostream& err) {
  int exit_code = 0;
  for (const std::string& operand : operands) {
    if (absl::Status status = operation(operand); !status.ok()) {
      err << "error: " << status.message() << "\n";
      exit_code = 1;
    }
  }
  return exit_code;
}

// `dir/<src's name>`.
absl::StatusOr<std::string> PathInDirectory(absl::string_view src, absl::string_view dir) {
  const absl::string_view name = Basename(StripTrailingSlashes(src));
  if (name.empty() || name == "." || name == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat(src, " has no name to give it in the directory ", dir));
  }
  return JoinPath(dir, name);
}

// The path `src` goes to for cp and mv: `dst`, or `dst/<src's name>` when `dst` is a directory.
absl::StatusOr<std::string> TargetPath(FileSystem& dst_fs, absl::string_view src,
                                       absl::string_view dst) {
  ASSIGN_OR_RETURN(const bool into, IsExistingDirectory(dst_fs, dst));
  if (into) return PathInDirectory(src, dst);
  if (absl::EndsWith(dst, "/")) {
    return absl::NotFoundError(absl::StrCat(dst, ": no such directory"));
  }
  return std::string(dst);
}

// The file system of both paths; INVALID_ARGUMENT when they are on different ones.
absl::StatusOr<FileSystem*> CommonFileSystem(FileSystems& file_systems, absl::string_view src,
                                             absl::string_view dst) {
  ASSIGN_OR_RETURN(FileSystem * src_fs, file_systems.For(src));
  ASSIGN_OR_RETURN(FileSystem * dst_fs, file_systems.For(dst));
  if (src_fs != dst_fs) {
    return absl::InvalidArgumentError(
        absl::StrCat("mv ", src, " ", dst,
                     ": the paths are on different file systems; copy (shoal fs cp), then "
                     "remove (shoal fs rm)"));
  }
  return src_fs;
}

// mv SRC... DIR: each source into the directory, which is checked once.
int MoveIntoDirectory(FileSystems& file_systems, const std::vector<std::string>& sources,
                      absl::string_view dir, std::ostream& err) {
  absl::Status checked = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(FileSystem * fs, file_systems.For(dir));
    ASSIGN_OR_RETURN(const bool is_dir, IsExistingDirectory(*fs, dir), "mv");
    if (!is_dir) {
      return absl::FailedPreconditionError(absl::StrCat("mv: cannot move ", sources.size(),
                                                        " paths into ", dir, ": not a directory"));
    }
    return absl::OkStatus();
  }();
  if (!checked.ok()) {
    err << "error: " << checked.message() << "\n";
    return 1;
  }
  return ForEach(
      sources,
      [&](const std::string& source) -> absl::Status {
        ASSIGN_OR_RETURN(FileSystem * fs, CommonFileSystem(file_systems, source, dir));
        ASSIGN_OR_RETURN(const std::string target, PathInDirectory(source, dir), "mv");
        return fs->RenameFile(source, target);
      },
      err);
}

}  // namespace

absl::Status CopyPath(FileSystems& file_systems, absl::string_view src, absl::string_view dst) {
  ASSIGN_OR_RETURN(FileSystem * src_fs, file_systems.For(src));
  ASSIGN_OR_RETURN(FileSystem * dst_fs, file_systems.For(dst));
  ASSIGN_OR_RETURN(const bool src_is_dir, src_fs->IsDirectory(src), "cp ", src);
  if (src_is_dir) {
    return absl::FailedPreconditionError(
        absl::StrCat("cp ", src, ": is a directory (cp copies one file)"));
  }
  ASSIGN_OR_RETURN(const std::string target, TargetPath(*dst_fs, src, dst), "cp ", src, " ", dst);
  return CopyFileAtomically(*src_fs, src, *dst_fs, target);
}

absl::Status MovePath(FileSystems& file_systems, absl::string_view src, absl::string_view dst) {
  ASSIGN_OR_RETURN(FileSystem * fs, CommonFileSystem(file_systems, src, dst));
  ASSIGN_OR_RETURN(const std::string target, TargetPath(*fs, src, dst), "mv ", src, " ", dst);
  return fs->RenameFile(src, target);
}

absl::StatusOr<std::vector<std::string>> ListPath(FileSystems& file_systems,
                                                  absl::string_view path) {
  ASSIGN_OR_RETURN(FileSystem * fs, file_systems.For(path));
  ASSIGN_OR_RETURN(const bool is_dir, fs->IsDirectory(path), "ls ", path);
  if (!is_dir) return std::vector<std::string>{std::string(path)};
  return fs->GetChildren(path);
}

absl::Status RemovePath(FileSystems& file_systems, absl::string_view path,
                        const RemoveOptions& options) {
  ASSIGN_OR_RETURN(FileSystem * fs, file_systems.For(path));
  if (IsRoot(path)) {
    return absl::InvalidArgumentError(absl::StrCat("rm ", path, ": refusing to delete a root"));
  }
  absl::Status status = options.recursive ? fs->DeleteRecursively(path) : fs->DeleteFile(path);
  if (options.force && absl::IsNotFound(status)) return absl::OkStatus();
  if (absl::IsFailedPrecondition(status) && !options.recursive) {
    absl::StatusOr<bool> is_dir = fs->IsDirectory(path);
    if (is_dir.ok() && *is_dir) {
      return absl::FailedPreconditionError(
          absl::StrCat("rm ", path, ": is a directory (rm -r deletes it with everything in it)"));
    }
  }
  return status;
}

absl::Status MakeDirectory(FileSystems& file_systems, absl::string_view dir, bool parents) {
  ASSIGN_OR_RETURN(FileSystem * fs, file_systems.For(dir));
  return parents ? fs->RecursivelyCreateDir(dir) : fs->CreateDir(dir);
}

void AddFsCommand(CLI::App& app, FsCommandFlags& flags, FileSystems& file_systems,
                  std::ostream& out, std::ostream& err, int& exit_code) {
  CLI::App* fs = app.add_subcommand(
      "fs",
      "File operations on any path shoal reads and writes (local, hdfs://, webhdfs://): cp, mv, "
      "ls, rm, mkdir (docs/hdfs.md)");
  fs->require_subcommand(1);
  auto done = [&err, &exit_code](const absl::Status& status) {
    if (status.ok()) return;
    err << "error: " << status.message() << "\n";
    exit_code = 1;
  };

  CLI::App* cp = fs->add_subcommand(
      "cp",
      "Copy a file between any two paths (e.g. local to hdfs://). It is written to a temporary "
      "file beside the target, then renamed into place: readers never see part of it. The "
      "target's directory must exist; an existing file is replaced; a DST that is a directory "
      "receives SRC under its own name");
  cp->add_option("SRC", flags.source, "The file to copy")->required();
  cp->add_option("DST", flags.target, "Where to: a file's path, or a directory")->required();
  cp->callback(
      [&flags, &file_systems, done] { done(CopyPath(file_systems, flags.source, flags.target)); });

  CLI::App* mv = fs->add_subcommand(
      "mv",
      "Rename SRC to DST, atomically, replacing an existing file; or move each SRC into the "
      "directory DST (the last operand). Both on one file system");
  // One positional: CLI11 2.1 gives a vector positional every argument, leaving none to a DST
  // declared after it.
  mv->add_option("PATH", flags.operands,
                 "SRC... DST: what to move, then its new name or the directory to move into")
      ->required()
      ->expected(2, CLI::detail::expected_max_vector_size);
  mv->callback([&flags, &file_systems, &err, &exit_code, done] {
    const std::vector<std::string> sources(flags.operands.begin(), flags.operands.end() - 1);
    const std::string& target = flags.operands.back();
    if (sources.size() == 1) {
      done(MovePath(file_systems, sources[0], target));
    } else {
      exit_code = MoveIntoDirectory(file_systems, sources, target, err);
    }
  });

  CLI::App* ls = fs->add_subcommand(
      "ls", "Print the names of a directory's entries, one per line, sorted; for a file, its path");
  ls->add_option("PATH", flags.target, "A directory or a file")->required();
  ls->callback([&flags, &file_systems, &out, done] {
    absl::StatusOr<std::vector<std::string>> names = ListPath(file_systems, flags.target);
    if (!names.ok()) {
      done(names.status());
      return;
    }
    for (const std::string& name : *names) out << name << "\n";
    out.flush();
  });

  CLI::App* rm = fs->add_subcommand("rm", "Delete files (and directories with -r)");
  rm->add_option("PATH", flags.operands, "What to delete")->required();
  rm->add_flag("-r,--recursive", flags.remove.recursive,
               "Delete directories too, with everything below them");
  rm->add_flag("-f,--force", flags.remove.force, "A path that does not exist is not an error");
  rm->callback([&flags, &file_systems, &err, &exit_code] {
    exit_code = ForEach(
        flags.operands,
        [&](const std::string& path) { return RemovePath(file_systems, path, flags.remove); }, err);
  });

  CLI::App* mkdir = fs->add_subcommand("mkdir", "Create directories");
  mkdir->add_option("DIR", flags.operands, "The directories to create")->required();
  mkdir->add_flag("-p,--parents", flags.parents,
                  "Create missing parents too; a directory that exists is not an error");
  mkdir->callback([&flags, &file_systems, &err, &exit_code] {
    exit_code = ForEach(
        flags.operands,
        [&](const std::string& dir) { return MakeDirectory(file_systems, dir, flags.parents); },
        err);
  });
}

}  // namespace shoal
