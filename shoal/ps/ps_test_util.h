// Helpers for the parameter-server tests (not part of the library): N in-process shards over one
// mem:// namespace, with the routing of worker/ParameterClient spelled out again in a few lines
// (ps/ may not include worker/), so multi-shard behaviour is testable here.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/io/file_systems.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/rpc/parameter_service_test_util.h"

namespace shoal::ps_test {

class Shards {
 public:
  Shards(FileSystems& fs, int n) {
    for (int k = 0; k < n; ++k) servers_.push_back(std::make_unique<ParameterServer>(fs, k, n));
  }
  int size() const { return static_cast<int>(servers_.size()); }
  ParameterServer& operator[](int k) { return *servers_[k]; }

  absl::Status Initialize(const ModelSpec& spec) {
    spec_ = spec;
    for (auto& s : servers_) RETURN_IF_ERROR(s->Initialize(spec));
    return absl::OkStatus();
  }
  absl::Status Restore(const ModelSpec& spec, const std::string& dir) {
    spec_ = spec;
    for (auto& s : servers_) RETURN_IF_ERROR(s->Restore(spec, dir));
    return absl::OkStatus();
  }

  int64_t Dim(absl::string_view table) const {
    for (const TableSpec& t : spec_.tables) {
      if (t.name == table) return t.dim;
    }
    ADD_FAILURE() << "no table " << table;
    return 0;
  }

  // Every dense variable by name.
  std::map<std::string, Tensor> PullAll() {
    std::map<std::string, Tensor> out;
    const std::vector<int> placement = DensePlacement(spec_, size());
    for (size_t i = 0; i < spec_.dense.size(); ++i) {
      std::vector<Tensor> values;
      const std::string& name = spec_.dense[i].name;
      EXPECT_TRUE(servers_[placement[i]]->PullDense({&name, 1}, &values).ok());
      if (values.size() == 1) out[name] = values[0];
    }
    return out;
  }

  absl::Status PushAll(int64_t step) {
    const std::vector<int> placement = DensePlacement(spec_, size());
    for (size_t i = 0; i < spec_.dense.size(); ++i) {
      const Tensor grad = SomeGradTensor(spec_.dense[i].shape, step + static_cast<int64_t>(i));
      RETURN_IF_ERROR(
          servers_[placement[i]]->PushDense({&spec_.dense[i].name, 1}, {&grad, 1}, step));
    }
    return absl::OkStatus();
  }

  // Rows of `ids` (any shard), one Lookup per id so routing stays trivial.
  absl::StatusOr<std::vector<float>> Lookup(absl::string_view table,
                                            const std::vector<uint64_t>& ids, LookupMode mode,
                                            int64_t step) {
    const int64_t dim = Dim(table);
    std::vector<float> out(ids.size() * dim);
    for (size_t i = 0; i < ids.size(); ++i) {
      RETURN_IF_ERROR(servers_[RowShard(ids[i], size())]->Lookup(
          table, {&ids[i], 1}, mode, step, absl::MakeSpan(out).subspan(i * dim, dim)));
    }
    return out;
  }

  absl::Status PushSparse(absl::string_view table, const std::vector<uint64_t>& ids,
                          const std::vector<float>& grads, int64_t step) {
    const int64_t dim = Dim(table);
    for (size_t i = 0; i < ids.size(); ++i) {
      RETURN_IF_ERROR(servers_[RowShard(ids[i], size())]->PushSparse(
          table, {&ids[i], 1}, absl::MakeConstSpan(grads).subspan(i * dim, dim), step));
    }
    return absl::OkStatus();
  }

  // PrepareCheckpointDir, every shard's Save, CommitCheckpoint: what ParameterClient::Save does.
  absl::StatusOr<std::string> Save(FileSystem& fs, const std::string& model_dir, int64_t step) {
    ASSIGN_OR_RETURN(std::string dir, PrepareCheckpointDir(fs, model_dir, step));
    std::vector<ShardFileInfo> infos;
    for (auto& s : servers_) {
      ASSIGN_OR_RETURN(ShardFileInfo info, s->Save(dir));
      infos.push_back(std::move(info));
    }
    return CommitCheckpoint(fs, model_dir, step, infos);
  }

 private:
  ModelSpec spec_;
  std::vector<std::unique_ptr<ParameterServer>> servers_;
};

}  // namespace shoal::ps_test
