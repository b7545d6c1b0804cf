// Helpers for the parameter-server tests (not part of the library): N in-process shards over one
// mem:// namespace, with the routing of parameter_client/ParameterClient spelled out again in a few
// lines (ps/ may not include worker/), so multi-shard behaviour is testable here.
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/io/file_systems.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/spec/model_spec_test_util.h"

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
  absl::Status WarmStart(const ModelSpec& spec, const std::string& dir,
                         const std::vector<std::string>& patterns) {
    spec_ = spec;
    for (auto& s : servers_) RETURN_IF_ERROR(s->WarmStart(spec, dir, patterns));
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

  // Every dense variable by name (the slices of a split one joined).
  std::map<std::string, Tensor> PullAll() {
    std::map<std::string, Tensor> out;
    const auto placement = DenseSlices(spec_, size());
    for (size_t i = 0; i < spec_.dense.size(); ++i) {
      const std::string& name = spec_.dense[i].name;
      Tensor whole(spec_.dense[i].shape);
      for (const DenseSlice& slice : placement[i]) {
        std::vector<Tensor> values;
        EXPECT_TRUE(servers_[slice.shard]->PullDense({&name, 1}, &values).ok());
        if (values.size() != 1) return {};
        if (placement[i].size() == 1) {
          whole = values[0];
        } else {
          CopyRowsInto(values[0], slice.begin, &whole);
        }
      }
      out[name] = std::move(whole);
    }
    return out;
  }

  absl::Status PushAll(int64_t step) {
    const auto placement = DenseSlices(spec_, size());
    for (size_t i = 0; i < spec_.dense.size(); ++i) {
      const Tensor grad = SomeGradTensor(spec_.dense[i].shape, step + static_cast<int64_t>(i));
      for (const DenseSlice& slice : placement[i]) {
        const Tensor part = placement[i].size() == 1 ? grad : RowsOf(grad, slice.begin, slice.end);
        RETURN_IF_ERROR(
            servers_[slice.shard]->PushDense({&spec_.dense[i].name, 1}, {&part, 1}, step));
      }
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

  // Sync training calls on every shard.
  absl::Status SetSyncReplicas(int replicas) {
    for (auto& s : servers_) RETURN_IF_ERROR(s->SetSyncReplicas(replicas));
    return absl::OkStatus();
  }
  absl::Status CommitStep(int64_t step) {
    for (auto& s : servers_) RETURN_IF_ERROR(s->CommitStep(step));
    return absl::OkStatus();
  }
  // The lowest version once every shard has reached `version`.
  absl::StatusOr<int64_t> WaitForVersion(int64_t version, absl::Duration timeout) {
    int64_t lowest = std::numeric_limits<int64_t>::max();
    for (auto& s : servers_) {
      ASSIGN_OR_RETURN(const int64_t v, s->WaitForVersion(version, timeout));
      lowest = std::min(lowest, v);
    }
    return lowest;
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

// One trainer's gradients of one step: every dense variable of the spec and rows of every table
// (8 ids all trainers share, 4 of its own), with a -0 among the values.
struct StepGradients {
  std::vector<Tensor> dense;                         // spec.dense order
  std::map<std::string, std::vector<uint64_t>> ids;  // by table
  std::map<std::string, std::vector<float>> rows;    // by table: ids.size() x dim
};

inline StepGradients TrainerGradients(const ModelSpec& spec, int trainer, int64_t step) {
  StepGradients g;
  const int64_t seed = step * 7 + trainer * 3;
  for (size_t i = 0; i < spec.dense.size(); ++i) {
    g.dense.push_back(SomeGradTensor(spec.dense[i].shape, seed + static_cast<int64_t>(i)));
  }
  g.dense[0][0] = -0.0f;
  for (const TableSpec& t : spec.tables) {
    std::vector<uint64_t> ids = SomeIds(8, 0);
    const std::vector<uint64_t> own = SomeIds(4, 100 + static_cast<uint64_t>(trainer));
    ids.insert(ids.end(), own.begin(), own.end());
    g.rows[t.name] = SomeGrads(ids.size() * static_cast<size_t>(t.dim), seed);
    g.ids[t.name] = std::move(ids);
  }
  return g;
}

// What a sync shard applies for `trainers`' commits: the sums in the given order divided by the
// number of trainers (a row a trainer did not push counts as zeros). Rows in order of first
// appearance.
inline StepGradients MeanGradients(const ModelSpec& spec,
                                   const std::vector<StepGradients>& trainers) {
  StepGradients mean;
  const float n = static_cast<float>(trainers.size());
  for (size_t i = 0; i < spec.dense.size(); ++i) {
    Tensor sum = trainers[0].dense[i];
    for (size_t r = 1; r < trainers.size(); ++r) {
      for (int64_t e = 0; e < sum.size(); ++e) sum[e] += trainers[r].dense[i][e];
    }
    if (trainers.size() > 1) {
      for (int64_t e = 0; e < sum.size(); ++e) sum[e] /= n;
    }
    mean.dense.push_back(std::move(sum));
  }
  for (const TableSpec& t : spec.tables) {
    const size_t dim = static_cast<size_t>(t.dim);
    std::vector<uint64_t>& ids = mean.ids[t.name];
    std::vector<float>& rows = mean.rows[t.name];
    std::map<uint64_t, size_t> index;
    for (const StepGradients& g : trainers) {
      const std::vector<uint64_t>& gids = g.ids.at(t.name);
      const std::vector<float>& grows = g.rows.at(t.name);
      for (size_t i = 0; i < gids.size(); ++i) {
        auto [it, inserted] = index.try_emplace(gids[i], ids.size());
        if (inserted) {
          ids.push_back(gids[i]);
          rows.insert(rows.end(), grows.begin() + i * dim, grows.begin() + (i + 1) * dim);
        } else {
          for (size_t e = 0; e < dim; ++e) rows[it->second * dim + e] += grows[i * dim + e];
        }
      }
    }
    if (trainers.size() > 1) {
      for (float& v : rows) v /= n;
    }
  }
  return mean;
}

// Looks up (kTrain, at step - 1) and pushes `g` at `step` on `shards`, as a trainer does.
inline absl::Status LookupAndPush(Shards& shards, const ModelSpec& spec, const StepGradients& g,
                                  int64_t step) {
  for (const TableSpec& t : spec.tables) {
    RETURN_IF_ERROR(shards.Lookup(t.name, g.ids.at(t.name), LookupMode::kTrain, step - 1).status());
    RETURN_IF_ERROR(shards.PushSparse(t.name, g.ids.at(t.name), g.rows.at(t.name), step));
  }
  const std::vector<int> placement = DensePlacement(spec, shards.size());
  for (size_t i = 0; i < spec.dense.size(); ++i) {
    RETURN_IF_ERROR(
        shards[placement[i]].PushDense({&spec.dense[i].name, 1}, {&g.dense[i], 1}, step));
  }
  return absl::OkStatus();
}

// Bit for bit (== on floats would call -0 and +0 equal).
inline bool SameBits(absl::Span<const float> a, absl::Span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every dense variable and every row `g` names, bit for bit the same on `a` and `b`.
inline void ExpectSameModel(Shards& a, Shards& b, const ModelSpec& spec, const StepGradients& g) {
  std::map<std::string, Tensor> va = a.PullAll(), vb = b.PullAll();
  ASSERT_EQ(va.size(), spec.dense.size());
  for (const auto& [name, value] : va) {
    EXPECT_TRUE(value.shape() == vb[name].shape() && SameBits(value.span(), vb[name].span()))
        << name;
  }
  for (const TableSpec& t : spec.tables) {
    const std::vector<uint64_t>& ids = g.ids.at(t.name);
    absl::StatusOr<std::vector<float>> ra = a.Lookup(t.name, ids, LookupMode::kInference, 0);
    absl::StatusOr<std::vector<float>> rb = b.Lookup(t.name, ids, LookupMode::kInference, 0);
    ASSERT_TRUE(ra.ok() && rb.ok());
    EXPECT_TRUE(SameBits(*ra, *rb)) << t.name;
  }
}

}  // namespace shoal::ps_test
