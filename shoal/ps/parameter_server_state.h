// ParameterServer's state, shared by the files that implement it (parameter_server.cc: the
// model, pulls, pushes and checkpoints; parameter_server_sync.cc: synchronous training). Not part
// of the layer's API: only those two include it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "shoal/base/mutex.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

struct ParameterServer::DenseVar {
  const DenseVariableSpec* spec = nullptr;  // into State::spec
  const Optimizer* optimizer = nullptr;     // of its group, owned by State
  int64_t begin = 0;                        // the rows [begin, end) of the variable held here
  int64_t end = 0;
  Shape shape;         // of those rows (the variable's unless it is split)
  bool split = false;  // another shard holds other rows
  mutable Mutex mu;
  Tensor value ABSL_GUARDED_BY(mu);
  std::vector<float> slots ABSL_GUARDED_BY(mu);  // [slot][value.size()]
};

struct ParameterServer::Table {
  const TableSpec* spec = nullptr;
  const Optimizer* optimizer = nullptr;
  std::unique_ptr<HashEmbeddingTable> table;
};

struct ParameterServer::State {
  ModelSpec spec;
  absl::flat_hash_map<std::string, std::unique_ptr<Optimizer>> optimizers;  // by group
  // Every dense variable of the spec: where its rows are.
  absl::flat_hash_map<std::string, std::vector<DenseSlice>> dense_slices;
  std::vector<std::unique_ptr<DenseVar>> dense;  // the owned ones, in spec order
  absl::flat_hash_map<std::string, DenseVar*> dense_by_name;
  std::vector<Table> tables;  // spec order
  absl::flat_hash_map<std::string, size_t> table_index;
};

struct ParameterServer::PendingUpdate {
  // One table's rows pushed for the pending version: ids in order of first arrival.
  struct Rows {
    absl::flat_hash_map<uint64_t, size_t> index;  // id -> its row in ids / grads
    std::vector<uint64_t> ids;
    std::vector<float> grads;  // ids.size() x dim, the sums
  };
  absl::flat_hash_map<DenseVar*, Tensor> dense;  // gradient sums by variable
  absl::flat_hash_map<Table*, Rows> sparse;
  int64_t pushes = 0;  // push calls accumulated
};

}  // namespace shoal
