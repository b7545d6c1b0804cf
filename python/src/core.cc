// shoal._core: the Python package's bindings over the public C++ API (docs/python.md).
//
// Deliberately small: the Python side (shoal.estimator, shoal.feature_column) turns the TF1 API
// into a job config (the YAML schema of docs/config.md, written as JSON) and an input, and calls
// one of the functions below, which run exactly what the CLI runs:
//
//   train(job, input, steps, max_steps, hooks, listen)  Estimator::Train
//   evaluate(job, input, steps, hooks, name)            Estimator::Evaluate
//   predict(job, input, put, hooks)                     Estimator::Predict, batch by batch
//   export(job, layout, export_dir_base)                Estimator::Export
//   train_and_evaluate(job, train, eval, ...)           TrainAndEvaluate
//   run_member(job, tf_config, secret, job_id, ...,     RunClusterMember (`shoal run`); with
//              input)                                   a feed, this trainer trains its batches
//
// A Feed (feed_input.h) carries a session's batches, one per step: Input.of_feed(columns, feed)
// is an input whose every batch is one Feed.push(table), for train and run_member; the Python
// side (shoal.graph.session) pushes a feed_dict and waits for that step's after_run.
//
// A `job` is a Job (ParseJobConfig of the text); an input is a Table (numpy columns copied into
// one RawBatch) with batching options, or the name of one of the job's file inputs ("train",
// "eval"). Each call builds its own C++ Estimator, whose feature layout comes from that call's
// input, and restores the latest checkpoint of model_dir, as TF's Estimator does per call.
//
// Every long call releases the GIL. Python code runs only in hooks and in predict's `put`, with
// the GIL taken for that call. Ctrl-C: during train/evaluate/predict a hook checks Python's
// signals every 50 ms and requests a stop (train saves its checkpoint as at any stop), then
// KeyboardInterrupt is raised; run_member restores SIGINT's default action for its duration, so
// Ctrl-C ends the member as it ends `shoal run`.
//
// Errors: absl::Status becomes the exception of shoal.errors for its code (InvalidArgumentError
// is a ValueError, NotFoundError a FileNotFoundError), with the status message.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/config/job_config.h"
#include "shoal/data/raw_batch.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/feed_input.h"
#include "shoal/estimator/hooks.h"
#include "shoal/estimator/input.h"
#include "shoal/estimator/job.h"
#include "shoal/estimator/table_input.h"
#include "shoal/io/file_systems.h"
#include "shoal/launch/cluster_member.h"
#include "shoal/model/models.h"
#include "shoal/model/plugin.h"
#include "shoal/rpc/cluster_spec.h"

namespace py = pybind11;

namespace shoal {
namespace {

// ---- errors ----

// Raises the shoal.errors exception of `status`'s code (the GIL must be held).
[[noreturn]] void Raise(const absl::Status& status) {
  const py::object cls =
      py::module_::import("shoal.errors").attr("exception_class")(static_cast<int>(status.code()));
  PyErr_SetString(cls.ptr(), std::string(status.message()).c_str());
  throw py::error_already_set();
}

void Check(const absl::Status& status) {
  if (!status.ok()) Raise(status);
}

template <typename T>
T Value(absl::StatusOr<T> value) {
  if (!value.ok()) Raise(value.status());
  return *std::move(value);
}

// ---- the job ----

struct PyJob {
  JobConfig config;
};

PyJob ParseJob(const std::string& text, const std::string& path,
               const std::vector<std::string>& overrides) {
  return PyJob{Value(ParseJobConfig(text, path, overrides))};
}

// ---- tables (numpy columns) ----

struct PyTable {
  Schema schema;
  std::shared_ptr<RawBatch> rows;
};

// A value of an object column: str, bytes, None/NaN (missing), or a number for a numeric column.
enum class Missing { kNo, kYes };

Missing AddObject(RawColumn& column, PyObject* item, const std::string& name, int64_t row) {
  if (item == Py_None) return Missing::kYes;
  if (PyFloat_Check(item) && std::isnan(PyFloat_AsDouble(item))) return Missing::kYes;
  switch (column.type()) {
    case ValueType::kString: {
      Py_ssize_t size = 0;
      if (PyUnicode_Check(item)) {
        const char* data = PyUnicode_AsUTF8AndSize(item, &size);
        if (data == nullptr) throw py::error_already_set();
        column.AddString(absl::string_view(data, static_cast<size_t>(size)));
        return Missing::kNo;
      }
      if (PyBytes_Check(item)) {
        column.AddString(absl::string_view(PyBytes_AS_STRING(item),
                                           static_cast<size_t>(PyBytes_GET_SIZE(item))));
        return Missing::kNo;
      }
      break;
    }
    case ValueType::kInt64:
      if (PyLong_Check(item)) {
        const long long v = PyLong_AsLongLong(item);
        if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
        column.AddInt64(v);
        return Missing::kNo;
      }
      break;
    case ValueType::kFloat:
      if (PyFloat_Check(item) || PyLong_Check(item)) {
        column.AddFloat(static_cast<float>(PyFloat_AsDouble(item)));
        return Missing::kNo;
      }
      break;
  }
  throw py::value_error(absl::StrCat("column '", name, "', row ", row, ": a ",
                                     Py_TYPE(item)->tp_name, " in a column of ",
                                     ValueTypeName(column.type()), " values"));
}

// One column from a numpy array: float32 [N] or [N, d], int64 [N] or [N, d], or object [N]
// (str/bytes; None and NaN are missing values; so is a NaN in a float32 [N] column). The Python
// side converts other dtypes first.
RawColumn ColumnFromArray(const std::string& name, const std::string& type, const py::array& array,
                          int64_t rows) {
  if (array.ndim() < 1 || array.ndim() > 2 || array.shape(0) != rows) {
    throw py::value_error(absl::StrCat("column '", name, "': expected ", rows,
                                       " rows (shape [rows] or [rows, width]), got ndim ",
                                       array.ndim()));
  }
  const int64_t width = array.ndim() == 2 ? array.shape(1) : 1;
  if (type == "float") {
    const auto values =
        py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
    if (!values) throw py::value_error(absl::StrCat("column '", name, "': not float values"));
    RawColumn column(ValueType::kFloat);
    const float* data = values.data();
    for (int64_t r = 0; r < rows; ++r) {
      // A NaN scalar is a missing value (pandas' NA), as an empty CSV field: the feature
      // column's default_value replaces it. Within a vector it stays NaN (slots keep places).
      if (width == 1 && std::isnan(data[r])) {
        column.EndRow();
        continue;
      }
      for (int64_t i = 0; i < width; ++i) column.AddFloat(data[r * width + i]);
      column.EndRow();
    }
    return column;
  }
  if (type == "int64") {
    const auto values =
        py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
    if (!values) throw py::value_error(absl::StrCat("column '", name, "': not integer values"));
    RawColumn column(ValueType::kInt64);
    const int64_t* data = values.data();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < width; ++i) column.AddInt64(data[r * width + i]);
      column.EndRow();
    }
    return column;
  }
  if (type == "string") {
    if (array.dtype().kind() != 'O' || array.ndim() != 1) {
      throw py::value_error(
          absl::StrCat("column '", name, "': string values must come as a 1-D object array"));
    }
    RawColumn column(ValueType::kString);
    const auto* items = static_cast<PyObject* const*>(array.data());
    const py::ssize_t stride = array.strides(0) / static_cast<py::ssize_t>(sizeof(PyObject*));
    for (int64_t r = 0; r < rows; ++r) {
      AddObject(column, items[r * stride], name, r);
      column.EndRow();
    }
    return column;
  }
  throw py::value_error(absl::StrCat("column '", name, "': unknown type '", type, "'"));
}

// columns: [(name, type, array)], type float | int64 | string.
PyTable MakeTable(const std::vector<std::tuple<std::string, std::string, py::array>>& columns) {
  PyTable table;
  if (columns.empty()) throw py::value_error("a table needs at least one column");
  const int64_t rows = std::get<2>(columns[0]).ndim() >= 1 ? std::get<2>(columns[0]).shape(0) : 0;
  std::vector<RawColumn> built;
  for (const auto& [name, type, array] : columns) {
    built.push_back(ColumnFromArray(name, type, array, rows));
    table.schema.columns.push_back({.name = name, .type = built.back().type()});
  }
  table.rows = std::make_shared<RawBatch>(table.schema);
  for (size_t i = 0; i < built.size(); ++i) {
    table.rows->column(static_cast<int>(i)) = std::move(built[i]);
  }
  for (int64_t r = 0; r < rows; ++r) table.rows->EndRecord();
  return table;
}

// ---- inputs ----

// Batches handed over one per step (a session's feed_dict): push blocks, with the GIL released,
// until the previous batch was taken; push after the run ended raises FailedPreconditionError.
struct PyFeed {
  std::shared_ptr<FeedQueue> queue = std::make_shared<FeedQueue>();
};

// An input of one call: a table with batching options, one of the job's inputs by name, or a feed
// (then `table` holds no rows: only the feed's columns).
struct PyInput {
  std::optional<PyTable> table;
  TableInputOptions options;
  std::string name;  // the table's name in errors (e.g. "numpy_input_fn"), or "train" / "eval"
  std::shared_ptr<FeedQueue> feed;
};

const InputConfig& ConfigInput(const PyJob& job, const std::string& name) {
  if (name == "train" && !job.config.train_input.files.empty()) return job.config.train_input;
  if (name == "eval" && !job.config.eval_input.files.empty()) return job.config.eval_input;
  throw py::value_error(absl::StrCat("the job has no input.", name));
}

// The Estimator of one call, its layout from `input` (prediction: the label may be missing).
std::unique_ptr<Estimator> MakeEstimator(const PyJob& job, const PyInput& input,
                                         bool require_label) {
  FileSystems& fs = DefaultFileSystems();
  absl::StatusOr<EstimatorConfig> config;
  {
    py::gil_scoped_release release;
    if (input.table.has_value()) {
      config = EstimatorConfigFromSchema(fs, job.config, GlobalModelRegistry(),
                                         {.schema = input.table->schema,
                                          .format = "csv",
                                          .name = input.name,
                                          .require_label = require_label && !input.feed});
    } else {
      config = EstimatorConfigFromJob(fs, job.config, GlobalModelRegistry(),
                                      LayoutInput{.input = ConfigInput(job, input.name),
                                                  .name = "input." + input.name,
                                                  .require_label = require_label});
    }
  }
  EstimatorConfig value = Value(std::move(config));
  absl::StatusOr<std::unique_ptr<Estimator>> estimator;
  {
    py::gil_scoped_release release;
    estimator = Estimator::Create(fs, std::move(value));
  }
  return Value(std::move(estimator));
}

InputFn InputFnOf(const PyJob& job, const PyInput& input, bool predicting) {
  FileSystems& fs = DefaultFileSystems();
  if (input.feed != nullptr) {
    return FeedInputFn(fs, job.config.features, input.table->schema, input.feed,
                       {.require_label = false}, input.name);
  }
  if (input.table.has_value()) {
    TableInputOptions options = input.options;
    options.require_label = !predicting;
    return TableInputFn(fs, job.config.features, input.table->schema, input.table->rows, options,
                        input.name);
  }
  InputConfig config = ConfigInput(job, input.name);
  if (predicting) config = Value(PredictionInputFromJob(job.config, {}));
  FeatureInput::Options options;
  options.require_label = !predicting;
  return InputFromConfig(fs, job.config.features, config, "input." + input.name, options);
}

// ---- hooks: Python's, and Ctrl-C ----

// A Python exception raised inside a C++ run (by a hook, a listener or Ctrl-C), kept until the
// run has returned and raised then (with the GIL).
class PendingPythonError {
 public:
  ~PendingPythonError() {
    if (error_.has_value()) {
      py::gil_scoped_acquire gil;
      error_.reset();
    }
  }
  void Keep(py::error_already_set&& error) { error_.emplace(std::move(error)); }
  void KeepCurrent() { error_.emplace(); }  // takes the raised exception (GIL held)
  bool has_value() const { return error_.has_value(); }
  // Raises the kept exception, if any.
  void Rethrow() {
    if (error_.has_value()) {
      py::error_already_set error = std::move(*error_);
      error_.reset();
      throw error;
    }
  }

 private:
  std::optional<py::error_already_set> error_;
};

// Calls the Python dispatcher (shoal.estimator's hook runner) around every step and checks for
// Ctrl-C. A Python exception stops the run; Rethrow() raises it once the run has returned.
class PythonHooks final : public SessionRunHook {
 public:
  explicit PythonHooks(py::object dispatch) : dispatch_(std::move(dispatch)) {}
  ~PythonHooks() override {
    py::gil_scoped_acquire gil;
    dispatch_ = py::object();
  }

  absl::Status Begin(RunContext& c) override { return Call("begin", c); }
  absl::Status AfterCreateSession(RunContext& c) override {
    return Call("after_create_session", c);
  }
  absl::Status BeforeRun(RunContext& c) override { return Call("before_run", c); }
  absl::Status AfterRun(RunContext& c) override {
    RETURN_IF_ERROR(Call("after_run", c));
    CheckSignals(c);
    return absl::OkStatus();
  }
  absl::Status End(RunContext& c) override { return Call("end", c); }

  // With the GIL: raises what a hook raised, or KeyboardInterrupt after Ctrl-C (the run has
  // stopped after a step and saved its checkpoint then).
  void Rethrow() { error_.Rethrow(); }

  static constexpr absl::string_view kStopped = "stopped by a Python hook's exception";

 private:
  absl::Status Call(const char* event, RunContext& c) {
    if (dispatch_.is_none() || error_.has_value()) return absl::OkStatus();
    py::gil_scoped_acquire gil;
    try {
      py::dict info;
      info["global_step"] = c.global_step;
      info["loss"] = c.loss;
      info["examples"] = c.examples;
      info["batch_size"] = c.batch_size;
      info["mode"] = c.mode == Mode::kTrain ? "train" : c.mode == Mode::kEval ? "eval" : "infer";
      const py::object stop = dispatch_(event, info);
      if (!stop.is_none()) c.RequestStop(stop.cast<std::string>());
    } catch (py::error_already_set& e) {
      const bool interrupt = e.matches(PyExc_KeyboardInterrupt);
      error_.Keep(std::move(e));
      if (interrupt) {  // Ctrl-C while Python code ran: stop as after a step, then raise it
        interrupted_ = true;
        c.RequestStop("interrupted (KeyboardInterrupt)");
        return absl::OkStatus();
      }
      return absl::CancelledError(kStopped);
    }
    return absl::OkStatus();
  }

  // Every 50 ms at most: Python's signal handlers (SIGINT raises KeyboardInterrupt).
  void CheckSignals(RunContext& c) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check_ < std::chrono::milliseconds(50) || interrupted_) return;
    last_check_ = now;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      error_.KeepCurrent();  // the raised KeyboardInterrupt (or a signal handler's exception)
      interrupted_ = true;
      c.RequestStop("interrupted (KeyboardInterrupt)");
    }
  }

  py::object dispatch_;
  PendingPythonError error_;
  bool interrupted_ = false;
  std::chrono::steady_clock::time_point last_check_{};
};

// After a run: the hooks' Python error first (the status is then only its echo), else the status.
template <typename T>
T Finish(PythonHooks& hooks, absl::StatusOr<T> result) {
  hooks.Rethrow();
  return Value(std::move(result));
}

// TF's CheckpointSaverListener objects, through shoal.estimator's dispatcher:
// listen(event, global_step) for "before_save" and "after_save". A Python exception fails the
// save (and the run); Rethrow raises it once the run has returned.
class PythonListeners final : public CheckpointSaverListener {
 public:
  explicit PythonListeners(py::object listen) : listen_(std::move(listen)) {}
  ~PythonListeners() override {
    py::gil_scoped_acquire gil;
    listen_ = py::object();
  }
  absl::Status BeforeSave(int64_t step) override { return Call("before_save", step); }
  absl::Status AfterSave(int64_t step, const std::string& /*checkpoint*/) override {
    return Call("after_save", step);
  }
  bool active() const { return !listen_.is_none(); }
  void Rethrow() { error_.Rethrow(); }

 private:
  absl::Status Call(const char* event, int64_t step) {
    py::gil_scoped_acquire gil;
    try {
      listen_(event, step);
    } catch (py::error_already_set& e) {
      error_.Keep(std::move(e));
      return absl::CancelledError("stopped by a Python saving listener's exception");
    }
    return absl::OkStatus();
  }
  py::object listen_;
  PendingPythonError error_;
};

py::dict TrainResultDict(const TrainResult& r) {
  py::dict d;
  d["global_step"] = r.global_step;
  d["steps"] = r.steps;
  d["examples"] = r.examples;
  d["epochs_completed"] = r.epochs_completed;
  d["stop_reason"] = r.stop_reason;
  d["seconds"] = r.seconds;
  d["last_loss"] = r.last_loss;
  d["checkpoint"] = r.checkpoint;
  return d;
}

py::dict EvalResultDict(const EvalResult& r) {
  py::dict d;
  py::dict metrics;
  for (const auto& [name, value] : r.metrics) metrics[py::str(name)] = value;
  d["metrics"] = metrics;
  d["global_step"] = r.global_step;
  d["examples"] = r.examples;
  d["checkpoint"] = r.checkpoint;
  d["seconds"] = r.seconds;
  return d;
}

// ---- the calls ----

py::dict Train(const PyJob& job, const PyInput& input, int64_t steps, int64_t max_steps,
               const py::object& dispatch, const py::object& listen) {
  std::unique_ptr<Estimator> estimator = MakeEstimator(job, input, true);
  PythonHooks hooks(dispatch);
  PythonListeners listeners(listen);
  TrainOptions options{.steps = steps, .max_steps = max_steps, .hooks = {&hooks}};
  if (listeners.active()) options.saving_listeners = {&listeners};
  absl::StatusOr<TrainResult> result;
  {
    py::gil_scoped_release release;
    result = estimator->Train(InputFnOf(job, input, false), options);
  }
  listeners.Rethrow();
  return TrainResultDict(Finish(hooks, std::move(result)));
}

py::dict Evaluate(const PyJob& job, const PyInput& input, int64_t steps,
                  const py::object& dispatch) {
  std::unique_ptr<Estimator> estimator = MakeEstimator(job, input, true);
  PythonHooks hooks(dispatch);
  absl::StatusOr<EvalResult> result;
  {
    py::gil_scoped_release release;
    result = estimator->Evaluate(InputFnOf(job, input, false), {.steps = steps, .hooks = {&hooks}});
  }
  return EvalResultDict(Finish(hooks, std::move(result)));
}

// Calls put(dict name -> numpy array [B, ...]) per batch; put returning False stops the run.
void Predict(const PyJob& job, const PyInput& input, const py::object& put,
             const py::object& dispatch) {
  std::unique_ptr<Estimator> estimator = MakeEstimator(job, input, false);
  PythonHooks hooks{dispatch};
  bool stopped = false;
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = estimator->Predict(
        InputFnOf(job, input, true), {.hooks = {&hooks}},
        [&](const PredictBatch& batch) -> absl::Status {
          py::gil_scoped_acquire gil;
          py::dict values;
          for (const auto& [name, tensor] : batch.outputs) {
            std::vector<py::ssize_t> shape(tensor->shape().begin(), tensor->shape().end());
            py::array_t<float> array(shape);
            std::copy(tensor->data(), tensor->data() + tensor->size(), array.mutable_data());
            values[py::str(name)] = std::move(array);
          }
          if (!put(values).cast<bool>()) {
            stopped = true;
            return absl::CancelledError("the prediction's consumer stopped");
          }
          return absl::OkStatus();
        });
  }
  if (stopped) return;
  hooks.Rethrow();
  Check(status);
}

std::string Export(const PyJob& job, const PyInput& layout, const std::string& export_dir_base) {
  std::unique_ptr<Estimator> estimator = MakeEstimator(job, layout, false);
  absl::StatusOr<std::string> path;
  {
    py::gil_scoped_release release;
    path = estimator->Export(export_dir_base);
  }
  return Value(std::move(path));
}

py::dict TrainAndEvaluateCall(const PyJob& job, const PyInput& train, int64_t max_steps,
                              const std::optional<PyInput>& eval, const py::object& train_dispatch,
                              const py::object& eval_dispatch, const py::object& listen) {
  std::unique_ptr<Estimator> estimator = MakeEstimator(job, train, true);
  PythonHooks train_hooks(train_dispatch);
  PythonHooks eval_hooks(eval_dispatch);
  PythonListeners listeners(listen);
  TrainSpec train_spec{
      .input = InputFnOf(job, train, false), .max_steps = max_steps, .hooks = {&train_hooks}};
  if (listeners.active()) train_spec.saving_listeners = {&listeners};
  EvalSpec eval_spec;
  if (eval.has_value()) eval_spec.input = InputFnOf(job, *eval, false);
  eval_spec.steps = job.config.eval.steps;
  eval_spec.start_delay_secs = job.config.eval.start_delay_secs;
  eval_spec.throttle_secs = job.config.eval.throttle_secs;
  eval_spec.exporters = job.config.eval.exporters;
  eval_spec.hooks = {&eval_hooks};
  absl::StatusOr<TrainAndEvaluateResult> result;
  {
    py::gil_scoped_release release;
    result = TrainAndEvaluate(*estimator, train_spec, eval_spec);
  }
  listeners.Rethrow();
  eval_hooks.Rethrow();
  const TrainAndEvaluateResult r = Finish(train_hooks, std::move(result));
  py::dict d;
  d["train"] = TrainResultDict(r.train);
  d["final_eval"] =
      r.final_eval.has_value() ? py::object(EvalResultDict(*r.final_eval)) : py::object(py::none());
  d["exports"] = r.exports;
  d["wall_seconds"] = r.wall_seconds;
  return d;
}

// One member of a TF_CONFIG cluster, as `shoal run`. Ctrl-C keeps its default action meanwhile.
void RunMember(const PyJob& job, const std::string& tf_config, const std::string& secret,
               const std::string& job_id, const py::object& dispatch, const py::object& listen,
               const std::optional<PyInput>& input) {
  PythonHooks hooks(dispatch);
  PythonListeners listeners(listen);
  MemberOptions member;
  if (input.has_value()) {
    if (input->feed == nullptr) throw py::value_error("run_member's input must be a feed");
    member.train_input = InputFnOf(job, *input, false);
    member.train_schema = input->table->schema;
  }
  if (!dispatch.is_none()) member.train_hooks = {&hooks};
  if (listeners.active()) member.saving_listeners = {&listeners};
  member.cluster = Value(ParseClusterSpec(tf_config, "TF_CONFIG"));
  member.secret = secret;
  member.job_id = job_id;
  member.job = job.config;
  member.heartbeat_timeout = absl::Seconds(job.config.run.heartbeat_timeout_secs);
  member.completion_timeout = absl::Seconds(job.config.run.completion_timeout_secs);
  absl::Status status;
  {
    py::gil_scoped_release release;
    auto* previous = std::signal(SIGINT, SIG_DFL);
    status = RunClusterMember(member, std::cout);
    std::cout.flush();
    std::signal(SIGINT, previous);
  }
  listeners.Rethrow();
  hooks.Rethrow();
  Check(status);
}

// ---- checkpoints ----

std::string LatestCheckpointOf(const std::string& model_dir) {
  FileSystems& fs = DefaultFileSystems();
  FileSystem* file_system = Value(fs.For(model_dir));
  absl::StatusOr<std::string> latest = LatestCheckpoint(*file_system, model_dir);
  if (absl::IsNotFound(latest.status())) return "";
  return Value(std::move(latest));
}

std::vector<std::string> VariableNames(const std::string& checkpoint) {
  FileSystems& fs = DefaultFileSystems();
  FileSystem* file_system = Value(fs.For(checkpoint));
  auto reader = Value(CheckpointReader::Open(*file_system, checkpoint));
  std::vector<std::string> names;
  for (const EntryInfo& entry : reader->ListEntries()) names.push_back(entry.name);
  return names;
}

py::array VariableValue(const std::string& checkpoint, const std::string& name) {
  FileSystems& fs = DefaultFileSystems();
  FileSystem* file_system = Value(fs.For(checkpoint));
  auto reader = Value(CheckpointReader::Open(*file_system, checkpoint));
  const EntryInfo entry = Value(reader->FindEntry(name));
  if (entry.kind != EntryKind::kDense) {
    Raise(absl::InvalidArgumentError(
        absl::StrCat("'", name,
                     "' is an embedding table (rows keyed by id), not a dense variable: read it "
                     "with `shoal inspect`")));
  }
  const DenseVariable variable = Value(reader->ReadDense(name));
  std::vector<py::ssize_t> shape(variable.value.shape().begin(), variable.value.shape().end());
  py::array_t<float> array(shape);
  std::copy(variable.value.data(), variable.value.data() + variable.value.size(),
            array.mutable_data());
  return std::move(array);
}

}  // namespace
}  // namespace shoal

PYBIND11_MODULE(_core, m) {
  using namespace shoal;  // NOLINT(google-build-using-namespace): module definition only
  m.doc() = "shoal's C++ engine (internal: use shoal.estimator and shoal.feature_column)";

  py::class_<PyJob>(m, "Job")
      .def(py::init(&ParseJob), py::arg("text"), py::arg("path"),
           py::arg("overrides") = std::vector<std::string>{})
      .def("yaml", [](const PyJob& job) { return JobConfigToYaml(job.config); })
      .def_property_readonly("model_dir",
                             [](const PyJob& job) { return job.config.run.model_dir; });

  py::class_<PyTable>(m, "Table")
      .def(py::init(&MakeTable), py::arg("columns"))
      .def_property_readonly("num_rows", [](const PyTable& t) { return t.rows->num_rows(); })
      .def_property_readonly("columns", [](const PyTable& t) {
        std::vector<std::pair<std::string, std::string>> columns;
        for (const ColumnSpec& c : t.schema.columns) {
          columns.emplace_back(c.name, std::string(ValueTypeName(c.type)));
        }
        return columns;
      });

  py::class_<PyInput>(m, "Input")
      .def(py::init([](const PyTable& table, int64_t batch_size, int64_t num_epochs, bool shuffle,
                       uint64_t seed, bool drop_remainder, bool batches_span_epochs,
                       const std::string& name) {
             PyInput input{.table = table,
                           .options = {.batch_size = batch_size,
                                       .num_epochs = num_epochs,
                                       .shuffle = shuffle,
                                       .seed = seed,
                                       .drop_remainder = drop_remainder,
                                       .batches_span_epochs = batches_span_epochs},
                           .name = name};
             Check(CheckTable(table.schema, *table.rows, input.options));
             return input;
           }),
           py::arg("table"), py::arg("batch_size"), py::arg("num_epochs"), py::arg("shuffle"),
           py::arg("seed"), py::arg("drop_remainder"), py::arg("batches_span_epochs"),
           py::arg("name"))
      .def_static("of_job", [](const std::string& name) { return PyInput{.name = name}; })
      .def_static(
          "of_feed",
          [](const PyTable& columns, const PyFeed& feed, const std::string& name) {
            return PyInput{.table = columns, .name = name, .feed = feed.queue};
          },
          py::arg("columns"), py::arg("feed"), py::arg("name"));

  py::class_<PyFeed>(m, "Feed")
      .def(py::init<>())
      .def(
          "push",
          [](const PyFeed& feed, const PyTable& batch) {
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = feed.queue->Push(batch.rows);
            }
            Check(status);
          },
          py::arg("batch"))
      .def("close", [](const PyFeed& feed) { feed.queue->Close(); })
      .def_property_readonly("taken", [](const PyFeed& feed) { return feed.queue->taken(); })
      .def_property_readonly("detached", [](const PyFeed& feed) { return feed.queue->detached(); });

  m.def("train", &Train, py::arg("job"), py::arg("input"), py::arg("steps"), py::arg("max_steps"),
        py::arg("dispatch"), py::arg("listen") = py::none());
  m.def("evaluate", &Evaluate, py::arg("job"), py::arg("input"), py::arg("steps"),
        py::arg("dispatch"));
  m.def("predict", &Predict, py::arg("job"), py::arg("input"), py::arg("put"),
        py::arg("dispatch") = py::none());
  m.def("export", &Export, py::arg("job"), py::arg("layout"), py::arg("export_dir_base"));
  m.def("train_and_evaluate", &TrainAndEvaluateCall, py::arg("job"), py::arg("train"),
        py::arg("max_steps"), py::arg("eval"), py::arg("train_dispatch"), py::arg("eval_dispatch"),
        py::arg("listen") = py::none());
  m.def("run_member", &RunMember, py::arg("job"), py::arg("tf_config"), py::arg("secret"),
        py::arg("job_id"), py::arg("dispatch") = py::none(), py::arg("listen") = py::none(),
        py::arg("input") = py::none());
  m.def("latest_checkpoint", &LatestCheckpointOf, py::arg("model_dir"));
  m.def("variable_names", &VariableNames, py::arg("checkpoint"));
  m.def("variable_value", &VariableValue, py::arg("checkpoint"), py::arg("name"));
  m.def("load_plugin",
        [](const std::string& path) { Check(LoadModelPlugin(path, &GlobalModelRegistry())); });
}
