#include "shoal/serving/rest_api.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "shoal/base/json_depth.h"
#include "shoal/estimator/prediction_output.h"

namespace shoal {
namespace {

using nlohmann::json;

// The deepest JSON a request may nest: {"instances": [{"x": [[...]]}]} needs 4 or 5 levels, a
// b64 value one more.
constexpr size_t kMaxJsonDepth = 32;

// What a /v1/models/... path asks for.
struct Route {
  std::string model;
  int64_t version = -1;  // -1: the served one
  enum class Kind { kStatus, kMetadata, kPredict } kind = Kind::kStatus;
};

bool ParseRoute(absl::string_view path, Route* route) {
  if (!absl::ConsumePrefix(&path, "/v1/models/")) return false;
  if (absl::ConsumeSuffix(&path, ":predict")) {
    route->kind = Route::Kind::kPredict;
  } else if (absl::ConsumeSuffix(&path, "/metadata")) {
    route->kind = Route::Kind::kMetadata;
  }
  const size_t slash = path.find('/');
  route->model = std::string(path.substr(0, slash));
  if (route->model.empty() || absl::StrContains(route->model, ':')) return false;
  if (slash == absl::string_view::npos) return true;
  absl::string_view rest = path.substr(slash);
  if (!absl::ConsumePrefix(&rest, "/versions/")) return false;
  return absl::SimpleAtoi(rest, &route->version) && route->version >= 0;
}

int HttpStatusOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kResourceExhausted:
      return 413;
    default:
      return 500;
  }
}

std::string DTypeName(ValueType type) {
  switch (type) {
    case ValueType::kFloat:
      return "DT_FLOAT";
    case ValueType::kInt64:
      return "DT_INT64";
    case ValueType::kString:
      return "DT_STRING";
  }
  return "DT_INVALID";
}

json TensorInfo(const std::string& name, const std::string& dtype,
                const std::vector<int64_t>& shape) {
  json dims = json::array({{{"size", "-1"}, {"name", ""}}});
  for (int64_t d : shape) dims.push_back({{"size", absl::StrCat(d)}, {"name", ""}});
  return {{"name", name}, {"dtype", dtype}, {"tensor_shape", {{"dim", dims}}}};
}

// Row r of output i: its width floats.
json RowValues(const Predictions& p, size_t i, int64_t r) {
  const Tensor& t = p.values[i];
  const int64_t width = t.size() / p.rows;
  return std::vector<float>(t.data() + r * width, t.data() + (r + 1) * width);
}

// A row's class names, from its class_ids (output i).
json RowClasses(const Predictions& p, size_t i, int64_t r) {
  const Tensor& t = p.values[i];
  const int64_t width = t.size() / p.rows;
  std::vector<std::string> names;
  for (int64_t k = r * width; k < (r + 1) * width; ++k) names.push_back(ClassName(p.classes, t[k]));
  return names;
}

}  // namespace

HttpResponse ErrorResponse(int status, absl::string_view message) {
  // A message may quote the client's bytes, which need not be UTF-8: replaced (U+FFFD), since
  // dump() would throw on them and the client would get 500 for its own bad input.
  return {
      status,
      json{{"error", std::string(message)}}.dump(-1, ' ', false, json::error_handler_t::replace) +
          "\n",
      "application/json"};
}

HttpResponse RestApi::Handle(absl::string_view method, absl::string_view path,
                             absl::string_view content_type, absl::string_view body) const {
  Route route;
  if (!ParseRoute(path, &route)) {
    return ErrorResponse(404, absl::StrCat("unknown path '", path, "'; the API is /v1/models/",
                                           name_, "[:predict|/metadata]"));
  }
  if (route.model != name_) {
    return ErrorResponse(404, absl::StrCat("Servable not found for request: model '", route.model,
                                           "' (this server serves '", name_, "')"));
  }
  const bool post = route.kind == Route::Kind::kPredict;
  if (method != (post ? "POST" : "GET")) {
    return ErrorResponse(405,
                         absl::StrCat(path, " takes ", post ? "POST" : "GET", ", not ", method));
  }
  // One Predictor for the whole request, even if a new version is swapped in meanwhile.
  const std::shared_ptr<const Predictor> predictor = model_->Current();
  if (route.version >= 0 && route.version != predictor->version()) {
    if (route.kind == Route::Kind::kStatus) return StatusResponse(route.version);
    return ErrorResponse(
        404, absl::StrCat("Servable not found for request: version ", route.version, " of '", name_,
                          "' is not served (serving version ", predictor->version(), ")"));
  }
  switch (route.kind) {
    case Route::Kind::kPredict:
      return PredictResponse(*predictor, content_type, body);
    case Route::Kind::kMetadata:
      return MetadataResponse(*predictor);
    case Route::Kind::kStatus:
      return StatusResponse(route.version);
  }
  return ErrorResponse(500, "unhandled route");
}

HttpResponse RestApi::PredictResponse(const Predictor& predictor, absl::string_view content_type,
                                      absl::string_view body) const {
  const absl::string_view type = absl::StripAsciiWhitespace(
      content_type.substr(0, std::min(content_type.find(';'), content_type.size())));
  absl::StatusOr<Predictions> predictions;
  bool columnar = false;
  if (type == "text/csv" || type == "text/plain") {
    std::vector<absl::string_view> lines;
    for (absl::string_view line : absl::StrSplit(body, '\n')) {
      absl::ConsumeSuffix(&line, "\r");
      if (!absl::StripAsciiWhitespace(line).empty()) lines.push_back(line);
    }
    predictions = predictor.PredictLines(lines);
  } else {
    // Walking a parsed value recurses per level: refuse deep nesting before parsing.
    if (JsonNestingDepth(body, kMaxJsonDepth) > kMaxJsonDepth) {
      return ErrorResponse(400, absl::StrCat("the body nests JSON deeper than ", kMaxJsonDepth,
                                             " levels; a request needs a few"));
    }
    const json request = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (request.is_discarded()) {
      return ErrorResponse(400,
                           "the body is not valid JSON (send {\"instances\": [...]} or "
                           "{\"inputs\": {...}}, or CSV lines as text/csv)");
    }
    if (!request.is_object()) return ErrorResponse(400, "the body must be a JSON object");
    for (const auto& [key, value] : request.items()) {
      if (key == "signature_name") {
        if (!value.is_string() ||
            (value.get<std::string>() != "serving_default" && !value.get<std::string>().empty())) {
          return ErrorResponse(400, "signature_name: the only signature is 'serving_default'");
        }
      } else if (key != "instances" && key != "inputs") {
        return ErrorResponse(400, absl::StrCat("unknown key '", key,
                                               "' (a request has \"instances\" or \"inputs\")"));
      }
    }
    const bool has_instances = request.contains("instances");
    if (has_instances == request.contains("inputs")) {
      return ErrorResponse(400, "a request has exactly one of \"instances\" and \"inputs\"");
    }
    columnar = !has_instances;
    predictions = has_instances ? predictor.PredictInstances(request["instances"])
                                : predictor.PredictColumns(request["inputs"]);
  }
  if (!predictions.ok()) {
    return ErrorResponse(HttpStatusOf(predictions.status()), predictions.status().message());
  }
  const Predictions& p = *predictions;
  json out;
  // TF Serving's rule: a model with one output answers its values without the output's name.
  const bool single = p.names.size() == 1 && p.classes.empty();
  if (single) {
    json rows = json::array();
    for (int64_t r = 0; r < p.rows; ++r) rows.push_back(RowValues(p, 0, r));
    out = {{columnar ? "outputs" : "predictions", std::move(rows)}};
  } else if (columnar) {
    json outputs = json::object();
    for (size_t i = 0; i < p.names.size(); ++i) {
      json rows = json::array();
      for (int64_t r = 0; r < p.rows; ++r) rows.push_back(RowValues(p, i, r));
      outputs[p.names[i]] = std::move(rows);
      if (p.names[i] == "class_ids" && !p.classes.empty()) {
        json classes = json::array();
        for (int64_t r = 0; r < p.rows; ++r) classes.push_back(RowClasses(p, i, r));
        outputs["classes"] = std::move(classes);
      }
    }
    out = {{"outputs", std::move(outputs)}};
  } else {
    json rows = json::array();
    for (int64_t r = 0; r < p.rows; ++r) {
      json row = json::object();
      for (size_t i = 0; i < p.names.size(); ++i) {
        row[p.names[i]] = RowValues(p, i, r);
        if (p.names[i] == "class_ids" && !p.classes.empty()) row["classes"] = RowClasses(p, i, r);
      }
      rows.push_back(std::move(row));
    }
    out = {{"predictions", std::move(rows)}};
  }
  return {200, out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", "application/json"};
}

HttpResponse RestApi::StatusResponse(int64_t version) const {
  json statuses = json::array();
  for (const VersionStatus& v : model_->Versions()) {
    if (version >= 0 && v.version != version) continue;
    statuses.push_back(
        {{"version", absl::StrCat(v.version)},
         {"state", v.state},
         {"status",
          {{"error_code", v.error.empty() ? "OK" : "UNKNOWN"}, {"error_message", v.error}}}});
  }
  if (statuses.empty()) {
    return ErrorResponse(404, absl::StrCat("Servable not found for request: version ", version,
                                           " of '", name_, "'"));
  }
  return {200, json{{"model_version_status", std::move(statuses)}}.dump(2) + "\n",
          "application/json"};
}

HttpResponse RestApi::MetadataResponse(const Predictor& predictor) const {
  const ExportMeta& meta = predictor.meta();
  json inputs = json::object();
  for (const SignatureInput& in : meta.signature.inputs) {
    if (in.name == meta.signature.label) continue;
    inputs[in.name] = TensorInfo(in.name, DTypeName(in.type), {});
  }
  json outputs = json::object();
  for (const SignatureOutput& out : meta.signature.outputs) {
    outputs[out.name] = TensorInfo(out.name, "DT_FLOAT", out.shape);
  }
  json signature = {{"inputs", std::move(inputs)},
                    {"outputs", std::move(outputs)},
                    {"method_name", "tensorflow/serving/predict"}};
  json shoal = {{"global_step", meta.global_step},
                {"model_type", meta.model_type},
                {"head", meta.head},
                {"format", meta.signature.format},
                {"label", meta.signature.label},
                {"accepts_text_lines", predictor.input_parser().accepts_lines()},
                {"export_dir", predictor.dir()}};
  json body = {
      {"model_spec",
       {{"name", name_}, {"signature_name", ""}, {"version", absl::StrCat(predictor.version())}}},
      {"metadata",
       {{"signature_def", {{"signature_def", {{"serving_default", std::move(signature)}}}}},
        {"shoal", std::move(shoal)}}}};
  return {200, body.dump(2) + "\n", "application/json"};
}

}  // namespace shoal
