#include "shoal/tools/serve_command.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/file_systems.h"
#include "shoal/model/models.h"
#include "shoal/model/plugin.h"
#include "shoal/serving/http_server.h"
#include "shoal/serving/rest_api.h"
#include "shoal/serving/served_model.h"

namespace shoal {

absl::Status RunServeCommand(const ServeCommandOptions& options, std::ostream& out) {
  if (options.name.empty() || options.name.find_first_of("/:") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--name '", options.name, "' must be non-empty without '/' or ':'"));
  }
  if (!(options.poll_secs > 0)) return absl::InvalidArgumentError("--poll-secs must be > 0");
  // SIGINT and SIGTERM are waited for by a thread (sigwait), not handled asynchronously: blocked
  // here, before any thread starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  for (const std::string& plugin : options.plugins) {
    RETURN_IF_ERROR(LoadModelPlugin(plugin, &GlobalModelRegistry()));
  }
  ServedModelOptions model_options;
  model_options.poll_interval = absl::Seconds(options.poll_secs);
  ASSIGN_OR_RETURN(std::unique_ptr<ServedModel> model,
                   ServedModel::Start(DefaultFileSystems(), options.path, model_options));
  RestApi api(options.name, model.get());
  HttpServerOptions http;
  http.host = options.host;
  http.port = options.port;
  http.threads = options.threads;
  http.max_request_bytes = options.max_request_bytes;
  http.idle_timeout = absl::Seconds(options.idle_timeout_secs);
  ASSIGN_OR_RETURN(std::unique_ptr<HttpServer> server, HttpServer::Bind(&api, http));

  const std::shared_ptr<const Predictor> first = model->Current();
  out << "serving model " << options.name << " version " << first->version() << " (global step "
      << first->global_step() << ") from " << first->dir() << " on http://" << options.host << ":"
      << server->port() << std::endl;
  LOG(INFO) << "Serving " << first->dir() << " as '" << options.name << "' on port "
            << server->port() << " with " << options.threads << " threads"
            << (model->watching() ? absl::StrCat("; watching ", options.path, " for new versions")
                                  : std::string());

  // Waits for SIGINT/SIGTERM in slices, so that it also ends when the server fails by itself.
  std::atomic<bool> done{false};
  std::thread stopper([&server, &done, signals] {
    const timespec slice = {0, 200'000'000};
    while (!done.load()) {
      const int signal = sigtimedwait(&signals, nullptr, &slice);
      if (signal > 0) {
        LOG(INFO) << "Signal " << signal << ": stopping the server";
        server->Stop();
        return;
      }
    }
  });
  absl::Status served = server->Serve();
  done.store(true);
  stopper.join();
  LOG(INFO) << "Server stopped";
  return served;
}

}  // namespace shoal
