#include "shoal/launch/local_launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/launch/cluster_member.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawn

namespace shoal {
namespace {

std::atomic<int> g_signal{0};

void OnSignal(int signal) { g_signal.store(signal); }

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

struct Child {
  std::string name;  // "worker:1"
  pid_t pid = -1;
  int out_fd = -1;      // stdout and stderr, merged
  std::string pending;  // a partial line
  bool exited = false;
  int exit_code = 0;
  std::vector<std::string> args;  // to start it again
  std::vector<std::string> env;
  int restarts = 0;
};

// Copies complete lines from the child's pipe to stdout with its prefix; false at EOF.
bool Pump(Child& child) {
  char buffer[65536];
  const ssize_t n = read(child.out_fd, buffer, sizeof(buffer));
  if (n <= 0) {
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (!child.pending.empty()) {
      std::printf("[%s] %s\n", child.name.c_str(), child.pending.c_str());
      child.pending.clear();
    }
    close(child.out_fd);
    child.out_fd = -1;
    return false;
  }
  child.pending.append(buffer, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl = child.pending.find('\n'); nl != std::string::npos;
       nl = child.pending.find('\n', start)) {
    std::printf("[%s] %.*s\n", child.name.c_str(), static_cast<int>(nl - start),
                child.pending.data() + start);
    start = nl + 1;
  }
  child.pending.erase(0, start);
  std::fflush(stdout);
  return true;
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

absl::StatusOr<Child> Spawn(const std::string& name, const std::string& binary,
                            const std::vector<std::string>& args,
                            const std::vector<std::string>& extra_env) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<std::string> argv_strings = {binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    if (absl::StartsWith(entry, "TF_CONFIG=") || absl::StartsWith(entry, "SHOAL_JOB_SECRET=") ||
        absl::StartsWith(entry, "SHOAL_JOB_ID=")) {
      continue;
    }
    env_strings.emplace_back(entry);
  }
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  // A program without '/' (the --python interpreter) is looked up on PATH.
  const int rc =
      binary.find('/') == std::string::npos
          ? posix_spawnp(&pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data())
          : posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return absl::InternalError(
        absl::StrCat("cannot start ", name, " (", binary, "): ", std::strerror(rc)));
  }
  Child child;
  child.name = name;
  child.pid = pid;
  child.out_fd = fds[0];
  return child;
}

}  // namespace

absl::StatusOr<std::vector<int>> PickFreePorts(const std::string& host, int count) {
  std::vector<int> sockets;
  std::vector<int> ports;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = Errno("socket");
      break;
    }
    sockets.push_back(fd);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = 0;
    if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
      status = absl::InvalidArgumentError(absl::StrCat("not an IPv4 address: ", host));
      break;
    }
    socklen_t length = sizeof(address);
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      status = Errno(absl::StrCat("picking a free port on ", host));
      break;
    }
    ports.push_back(ntohs(address.sin_port));
  }
  for (int fd : sockets) close(fd);
  if (!status.ok()) return status;
  return ports;
}

absl::StatusOr<std::string> NewJobSecret() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("getrandom");
    }
    got += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

absl::StatusOr<int> LaunchLocalCluster(const LaunchOptions& options) {
  // --ps 0: a cluster without parameter servers (run.strategy all_reduce; the members check the
  // strategy against the cluster).
  if (options.num_ps < 0 || options.num_workers < 0) {
    return absl::InvalidArgumentError("launch: --ps and --workers must be >= 0");
  }
  std::string binary = options.binary;
  if (binary.empty()) {
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) return Errno("readlink /proc/self/exe");
    binary.assign(path, static_cast<size_t>(n));
  }
  const int num_tasks = 1 + options.num_workers + options.num_ps;
  ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(options.host, num_tasks));
  auto address = [&](int i) { return absl::StrCat(options.host, ":", ports[i]); };
  nlohmann::json cluster = {{"chief", {address(0)}},
                            {"worker", nlohmann::json::array()},
                            {"ps", nlohmann::json::array()}};
  for (int i = 0; i < options.num_workers; ++i) cluster["worker"].push_back(address(1 + i));
  for (int i = 0; i < options.num_ps; ++i) {
    cluster["ps"].push_back(address(1 + options.num_workers + i));
  }
  ASSIGN_OR_RETURN(const std::string secret, NewJobSecret());
  // Not a secret (the chief writes it into model_dir): random, so that no two jobs share it.
  ASSIGN_OR_RETURN(std::string job_id, NewJobSecret());
  job_id.resize(32);

  struct Task {
    std::string type;
    int index;
  };
  std::vector<Task> tasks;
  tasks.reserve(static_cast<size_t>(num_tasks) + 1);
  // PS first: the others connect to them (any order works; this one starts fewer retries).
  for (int i = 0; i < options.num_ps; ++i) tasks.push_back({"ps", i});
  tasks.push_back({"chief", 0});
  for (int i = 0; i < options.num_workers; ++i) tasks.push_back({"worker", i});
  if (options.evaluator) tasks.push_back({"evaluator", 0});

  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {};
  struct sigaction old_term {};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  LOG(INFO) << "launching " << options.num_ps << " ps, 1 chief, " << options.num_workers
            << " workers" << (options.evaluator ? ", 1 evaluator" : "") << " on " << options.host
            << " (cluster: " << cluster.dump() << ")";
  std::vector<Child> children;
  absl::Status start_status;
  for (const Task& task : tasks) {
    const nlohmann::json tf_config = {{"cluster", cluster},
                                      {"task", {{"type", task.type}, {"index", task.index}}}};
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), options.run_args.begin(), options.run_args.end());
    if (!options.command.empty()) {
      args.assign(options.command.begin() + 1, options.command.end());
    }
    std::vector<std::string> env = {"TF_CONFIG=" + tf_config.dump(), "SHOAL_JOB_SECRET=" + secret,
                                    "SHOAL_JOB_ID=" + job_id};
    absl::StatusOr<Child> child =
        Spawn(absl::StrCat(task.type, ":", task.index),
              options.command.empty() ? binary : options.command.front(), args, env);
    if (!child.ok()) {
      start_status = child.status();
      break;
    }
    child->args = std::move(args);
    child->env = std::move(env);
    children.push_back(std::move(*child));
  }

  size_t chief = children.size();
  for (size_t i = 0; i < children.size(); ++i) {
    if (children[i].name == "chief:0") chief = i;
  }
  absl::Time chief_exit = absl::InfiniteFuture();
  absl::Time term_sent = absl::InfiniteFuture();
  bool killed = false;
  auto signal_all = [&](int sig) {
    for (Child& c : children) {
      if (!c.exited) kill(c.pid, sig);
    }
  };
  if (!start_status.ok()) {
    signal_all(SIGTERM);
    term_sent = absl::Now();
  }
  while (true) {
    // Reap exits.
    bool all_exited = true;
    std::vector<size_t> restart;
    for (size_t i = 0; i < children.size(); ++i) {
      Child& c = children[i];
      if (c.exited) continue;
      int status = 0;
      const pid_t r = waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid) {
        c.exited = true;
        c.exit_code = ExitCodeOf(status);
        if (c.exit_code != 0 || i == chief) {
          LOG(INFO) << c.name << " exited with code " << c.exit_code;
        }
        // A worker is restarted after any failure; the chief, a PS and the evaluator only when a
        // signal killed them (an exit code is their verdict on the job, e.g. a config error).
        const bool worker = absl::StartsWith(c.name, "worker:");
        const bool killed_by_signal = WIFSIGNALED(status);
        // A worker exiting with kJobFailedExitCode saw the chief fail the job: no restart.
        const bool may_restart =
            worker ? c.exit_code != 0 && c.exit_code != kJobFailedExitCode : killed_by_signal;
        if (i == chief && !(may_restart && c.restarts < options.max_restarts &&
                            term_sent == absl::InfiniteFuture())) {
          chief_exit = absl::Now();
        }
        if (may_restart && chief_exit == absl::InfiniteFuture() &&
            term_sent == absl::InfiniteFuture()) {
          if (c.restarts < options.max_restarts) {
            restart.push_back(i);
          } else {
            LOG(WARNING) << c.name << " died " << c.restarts + 1
                         << " times; not restarting it again (--max-restarts "
                         << options.max_restarts << ")";
          }
        }
      } else {
        all_exited = false;
      }
    }
    for (size_t i : restart) {
      const Child& dead = children[i];
      LOG(WARNING) << "restarting " << dead.name << " (restart " << dead.restarts + 1 << " of "
                   << options.max_restarts << ")";
      absl::StatusOr<Child> again =
          Spawn(dead.name, options.command.empty() ? binary : options.command.front(), dead.args,
                dead.env);
      if (!again.ok()) {
        LOG(WARNING) << "restarting " << dead.name << " failed: " << again.status();
        continue;
      }
      again->args = dead.args;
      again->env = dead.env;
      again->restarts = dead.restarts + 1;
      children.push_back(std::move(*again));  // the old entry drains its pipe to EOF
      if (i == chief) chief = children.size() - 1;
      all_exited = false;
    }
    bool pipes_open = false;
    for (const Child& c : children) pipes_open = pipes_open || c.out_fd >= 0;
    if (all_exited && !pipes_open) break;

    const int sig = g_signal.exchange(0);
    if (sig != 0 && term_sent == absl::InfiniteFuture()) {
      LOG(WARNING) << "signal " << sig << ": stopping every process of the job";
      signal_all(SIGTERM);
      term_sent = absl::Now();
    }
    const absl::Time now = absl::Now();
    if (term_sent == absl::InfiniteFuture() && now - chief_exit > options.exit_grace) {
      LOG(WARNING) << "the chief exited " << absl::FormatDuration(options.exit_grace)
                   << " ago; stopping the processes still running";
      signal_all(SIGTERM);
      term_sent = now;
    }
    if (!killed && now - term_sent > options.kill_grace) {
      signal_all(SIGKILL);
      killed = true;
    }

    std::vector<pollfd> fds;
    std::vector<size_t> owners;
    for (size_t i = 0; i < children.size(); ++i) {
      if (children[i].out_fd < 0) continue;
      fds.push_back(pollfd{children[i].out_fd, POLLIN, 0});
      owners.push_back(i);
    }
    const int ready = fds.empty() ? 0 : poll(fds.data(), fds.size(), 100);
    if (fds.empty()) usleep(100 * 1000);
    if (ready > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) Pump(children[owners[i]]);
      }
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  RETURN_IF_ERROR(start_status);
  if (chief == children.size()) return absl::InternalError("launch: the chief did not start");
  return children[chief].exit_code;
}

}  // namespace shoal
