// RestApi: TF-Serving's REST API over a ServedModel, independent of the HTTP library (the server
// in http_server.h calls it; tests call it directly). docs/serving.md shows every request.
//
//   POST /v1/models/NAME[/versions/V]:predict
//        JSON {"instances": [...]}  -> {"predictions": [{"<output>": [...], ...}, ...]}
//        JSON {"inputs": {...}}     -> {"outputs": {"<output>": [[...] per row], ...}}
//        text/csv (or text/plain): one row per line, in the training input's format
//                                   -> {"predictions": [...]}
//   GET  /v1/models/NAME[/versions/V]            -> {"model_version_status": [...]}
//   GET  /v1/models/NAME[/versions/V]/metadata   -> {"model_spec": ..., "metadata": ...}
//
// Outputs per row are lists of floats, as `shoal predict` prints them. Errors are
// {"error": "..."} with 400 for a bad request (malformed JSON, a bad row: the message names the
// row and column), 404 for an unknown model name, version or path, 405 for another method, 500
// for a failure of the server itself. (413 for bodies over the limit comes from the server.)
//
// Thread safety: immutable; Handle may run on many threads at once.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "shoal/serving/served_model.h"

namespace shoal {

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

class RestApi {
 public:
  // `model` must outlive the RestApi.
  RestApi(std::string model_name, const ServedModel* model)
      : name_(std::move(model_name)), model_(model) {}

  const std::string& model_name() const { return name_; }

  HttpResponse Handle(absl::string_view method, absl::string_view path,
                      absl::string_view content_type, absl::string_view body) const;

 private:
  HttpResponse PredictResponse(const Predictor& predictor, absl::string_view content_type,
                               absl::string_view body) const;
  HttpResponse StatusResponse(int64_t version) const;
  HttpResponse MetadataResponse(const Predictor& predictor) const;

  const std::string name_;
  const ServedModel* model_;
};

// {"error": message} with `status`.
HttpResponse ErrorResponse(int status, absl::string_view message);

}  // namespace shoal
