// Feeds arbitrary bytes as a traced graph (ParseGraph: the JSON of `model.graph`, written by the
// Python tracer or by hand) and runs every mode an accepted graph has on a one-example batch of a
// fixed layout (dense inputs "x" [3] and "y" [1]) in the Estimator's recording pass, then back-
// propagates from a one-element loss. Asserts that a bad graph is INVALID_ARGUMENT and that
// running one never crashes: every shape an op cannot take must be a Status, not a CHECK.
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "fuzz/fuzz_util.h"
#include "shoal/model/graph_model.h"
#include "shoal/model/model_fn.h"
#include "shoal/nn/autodiff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  if (size > 65536) return 0;  // graphs worth fuzzing are small
  absl::StatusOr<std::shared_ptr<const Graph>> graph = ParseGraph(fuzz::AsView(data, size));
  if (!graph.ok()) {
    CHECK(absl::IsInvalidArgument(graph.status())) << graph.status();
    return 0;
  }
  // Small graphs only: large variables, constants or one_hot depths are legal but only slow the
  // search (and the engine bounds what an op may allocate, kMaxResultElements).
  for (const GraphVariable& v : (*graph)->variables) {
    if (NumElements(v.shape) > 4096) return 0;
  }
  for (const GraphMode& m : (*graph)->modes) {
    for (const GraphNode& n : m.nodes) {
      if (n.values.size() > 4096 || n.depth > 4096) return 0;
      if (n.op == "const" && NumElements(n.shape) > 4096) return 0;
    }
  }
  FeatureLayout layout;
  layout.dense_names = {"x", "y"};
  layout.dense_widths = {3, 1};
  for (Mode mode : {Mode::kTrain, Mode::kEval, Mode::kPredict}) {
    ModelContext ctx(layout,
                     {OptimizerGroupSpec{"deep", {}}, OptimizerGroupSpec{"moving_average", {}}},
                     /*seed=*/1);
    ctx.BeginRecording();
    absl::StatusOr<EstimatorSpec> spec = RunGraph(**graph, ctx, Tensor(Shape{1, 1}), mode);
    if (!spec.ok()) {
      CHECK(absl::IsInvalidArgument(spec.status())) << spec.status();
      continue;
    }
    if (spec->loss != nullptr && spec->loss->value.size() == 1) nn::Backward(spec->loss);
  }
  return 0;
}
