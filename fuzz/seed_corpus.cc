// fuzz_seeds OUT_DIR: writes the binary seed inputs of the fuzz targets into OUT_DIR/<target>/,
// made with the product's own writers (TFRecordWriter, the Example codec, ShardWriter,
// CommitCheckpoint, the gRPC conversions), so the seeds follow the formats when they change.
// Text seeds (CSV, YAML, JSON) are files: the repository's test data and fuzz/seeds/.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fuzz/fuzz_util.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/shard_writer.h"
#include "shoal/data/example_codec.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/export/export_dir.h"
#include "shoal/io/tfrecord_reader.h"
#include "shoal/io/tfrecord_writer.h"
#include "shoal/optim/optimizer.h"
#include "shoal/rpc/grpc/proto_convert.h"

namespace shoal::fuzz {
namespace {

std::filesystem::path out_dir;

void Seed(const std::string& target, const std::string& name, absl::string_view bytes) {
  std::filesystem::create_directories(out_dir / target);
  std::ofstream(out_dir / target / name, std::ios::binary) << bytes;
}

std::string Example(float age, int64_t id, const std::string& tag) {
  proto::Example e;
  auto& f = *e.mutable_features()->mutable_feature();
  f["age"].mutable_float_list()->add_value(age);
  f["label"].mutable_float_list()->add_value(1);
  f["ids"].mutable_int64_list()->add_value(id);
  f["ids"].mutable_int64_list()->add_value(-id);
  f["C1"].mutable_int64_list();
  f["tag"].mutable_bytes_list()->add_value(tag);
  return SerializeExample(e);
}

void TFRecordAndExampleSeeds(MemFs& mem) {
  const std::vector<std::string> records = {Example(22, 7, "a"), Example(-1.5f, 1 << 20, "bc")};
  for (size_t i = 0; i < records.size(); ++i) Seed("example", absl::StrCat(i), records[i]);
  const CompressionType types[] = {CompressionType::kNone, CompressionType::kGzip,
                                   CompressionType::kZlib, CompressionType::kGzip};
  for (int mode = 0; mode < 4; ++mode) {
    auto writer = *TFRecordWriter::Create(*mem.mem, "mem://t", {.compression = types[mode]});
    for (const std::string& r : records) CHECK(writer->Write(r).ok());
    CHECK(writer->Close().ok());
    Seed("tfrecord", absl::StrCat("mode", mode),
         absl::StrCat(std::string(1, static_cast<char>(mode)),
                      *ReadFileToString(*mem.mem, "mem://t")));
  }
}

void IdxSeeds() {
  // Two 2x3 images and their labels: magic 0 0 8 rank, big-endian dims, then bytes.
  const std::string images = std::string("\0\0\x08\x03\0\0\0\x02\0\0\0\x02\0\0\0\x03", 16) +
                             std::string("\x00\x10\x20\xff\x80\x01\x02\x03\x04\x05\x06\x07", 12);
  const std::string labels = std::string("\0\0\x08\x01\0\0\0\x02", 8) + std::string("\x01\x09", 2);
  Seed("idx", "images_labels", absl::StrCat(images, kPartSeparator, labels));
}

// A checkpoint of one dense variable with an Adagrad slot and one table; returns its directory.
std::string WriteCheckpoint(FileSystem& fs, const std::string& model_dir) {
  const auto optimizer = *CreateOptimizer({.name = "adagrad"});
  auto table = *HashEmbeddingTable::Create({.dim = 2, .num_shards = 1}, *optimizer);
  std::vector<float> rows(3 * 2);
  CHECK(table
            ->Lookup(std::vector<uint64_t>{1, 5, 1u << 31}, absl::MakeSpan(rows),
                     LookupMode::kTrain, 1)
            .ok());
  const std::string dir = absl::StrCat(model_dir, "/ckpt-3");
  auto writer = *ShardWriter::Create(fs, dir, 0, 1);
  CHECK(writer
            ->AddDense("w", Tensor(Shape{2, 2}, 0.5f), {Tensor(Shape{2, 2}, 0.1f)},
                       optimizer->slot_names())
            .ok());
  CHECK(writer->AddTable("emb", *table, optimizer->slot_names()).ok());
  const ShardFileInfo info = *writer->Finish();
  return *CommitCheckpoint(fs, model_dir, 3, {info}, R"({"queue":{"epoch":1}})");
}

void CheckpointSeeds(MemFs& mem) {
  const std::string dir = WriteCheckpoint(*mem.mem, "mem://model");
  const std::string manifest = *ReadFileToString(*mem.mem, dir + "/MANIFEST.json");
  Seed("manifest", "manifest.json", manifest);
  // The checkpoint target's input: the manifest, then the shard file's records unframed.
  std::vector<std::string> parts = {manifest};
  auto reader = *TFRecordReader::Open(*mem.mem, dir + "/shard-00000-of-00001.data");
  std::string record;
  while (reader->ReadRecord(&record).ok()) parts.push_back(record);
  Seed("checkpoint", "ckpt", absl::StrJoin(parts, kPartSeparator));
}

void ExportSeeds(MemFs& mem) {
  const std::string dir = "mem://export/1";
  WriteCheckpoint(*mem.mem, dir + "/variables");
  CHECK(WriteStringToFile(*mem.mem, dir + "/config.yaml", "model: {type: linear}\n").ok());
  ExportMeta meta;
  meta.global_step = 3;
  meta.created_unix_secs = 1;
  meta.model_type = "linear";
  meta.head = "binary";
  meta.num_classes = 2;
  meta.config = "config.yaml";
  meta.signature = {.format = "csv",
                    .inputs = {{"x", ValueType::kFloat, true, "0", true},
                               {"y", ValueType::kInt64, false, "", true}},
                    .label = "y",
                    .outputs = {{"logistic", {1}}}};
  CHECK(CommitExport(*mem.mem, dir, meta).ok());
  const ExportMeta read = *ReadExport(*mem.mem, dir);
  std::vector<std::string> parts = {*ReadFileToString(*mem.mem, dir + "/export.json")};
  for (const ExportFile& f : read.files) {
    parts.push_back(absl::StrCat(f.path, "\n", *ReadFileToString(*mem.mem, dir + "/" + f.path)));
  }
  Seed("export", "export", absl::StrJoin(parts, kPartSeparator));
}

void GrpcSeeds() {
  using namespace rpc_internal;  // NOLINT(google-build-using-namespace): the conversions
  const auto seed = [](int which, const google::protobuf::Message& m) {
    Seed("grpc_convert", absl::StrCat("msg", which),
         absl::StrCat(std::string(1, static_cast<char>(which)), m.SerializeAsString()));
  };
  ModelSpec spec;
  spec.groups.push_back({.name = "g", .options = {.name = "adagrad"}});
  spec.dense.push_back({.name = "w", .shape = Shape{2, 3}, .group = "g"});
  spec.tables.push_back({.name = "emb", .dim = 4, .group = "g"});
  rpc::InitializeRequest init;
  ToProto(spec, init.mutable_spec());
  seed(0, init);
  rpc::PushDenseRequest push;
  push.add_names("w");
  ToProto(Tensor(Shape{2, 3}, 0.25f), push.add_grads());
  seed(1, push);
  rpc::SaveReply save;
  ShardFileInfo file{.name = "shard-00000-of-00001.data", .bytes = 10};
  file.entries.push_back({.name = "w", .shape = Shape{2}});
  ToProto(file, save.mutable_file());
  seed(2, save);
  rpc::EvictReply evict;
  ToProto(TableEviction{.name = "emb", .rows = 3}, evict.add_tables());
  seed(3, evict);
  rpc::RegisterRequest reg;
  ToProto(TaskId{.role = TaskRole::kPs, .index = 1}, reg.mutable_task());
  seed(4, reg);
  rpc::JobState state;
  ToProto(JobState{.global_step = 5, .checkpoint = "ckpt-5"}, &state);
  seed(5, state);
  rpc::LeaseTaskReply lease;
  ToProto(TaskLease{.kind = TaskLease::Kind::kTask, .task = {.path = "a.csv", .end = 9}}, &lease);
  seed(6, lease);
  rpc::LookupRequest lookup;
  lookup.set_table("emb");
  lookup.set_mode(ToProto(LookupMode::kTrain));
  seed(7, lookup);
}

}  // namespace
}  // namespace shoal::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  shoal::fuzz::out_dir = argv[1];
  shoal::fuzz::MemFs mem;
  shoal::fuzz::TFRecordAndExampleSeeds(mem);
  shoal::fuzz::IdxSeeds();
  shoal::fuzz::CheckpointSeeds(mem);
  shoal::fuzz::ExportSeeds(mem);
  shoal::fuzz::GrpcSeeds();
  return 0;
}
