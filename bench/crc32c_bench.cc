// CRC32C and TFRecord throughput. Run: build/bench/crc32c_bench (or scripts/bench.sh).
//   BM_Crc32cHardware / BM_Crc32cPortable   bytes/s of each implementation at 4 KiB, 64 KiB, 1 MiB
//   BM_TFRecordWriteRead                    bytes/s of writing then reading 1 KiB records, mem://
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/mem_file_system.h"
#include "shoal/io/tfrecord_reader.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal {
namespace {

std::string RandomBytes(size_t n) {
  std::string data(n, '\0');
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (char& c : data) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return data;
}

void RunCrc(benchmark::State& state, uint32_t (*extend)(uint32_t, const char*, size_t)) {
  const std::string data = RandomBytes(static_cast<size_t>(state.range(0)));
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = extend(crc, data.data(), data.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_Crc32cHardware(benchmark::State& state) {
  if (!crc32c_internal::HardwareAvailable()) {
    state.SkipWithError("no SSE4.2 on this CPU");
    return;
  }
  RunCrc(state, crc32c_internal::ExtendHardware);
}
BENCHMARK(BM_Crc32cHardware)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);

void BM_Crc32cPortable(benchmark::State& state) { RunCrc(state, crc32c_internal::ExtendPortable); }
BENCHMARK(BM_Crc32cPortable)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);

// Writes state.range(0) records of 1 KiB to a fresh mem:// file, then reads them all back.
void BM_TFRecordWriteRead(benchmark::State& state) {
  const std::string record = RandomBytes(1024);
  const int64_t num_records = state.range(0);
  std::string read_back;
  for (auto _ : state) {
    MemFileSystem fs;
    auto writer = TFRecordWriter::Create(fs, "mem://bench.tfrecord");
    if (!writer.ok()) return state.SkipWithError("create failed");
    for (int64_t i = 0; i < num_records; ++i) {
      if (!(*writer)->Write(record).ok()) return state.SkipWithError("write failed");
    }
    if (!(*writer)->Close().ok()) return state.SkipWithError("close failed");
    auto reader = TFRecordReader::Open(fs, "mem://bench.tfrecord");
    if (!reader.ok()) return state.SkipWithError("open failed");
    int64_t read = 0;
    while ((*reader)->ReadRecord(&read_back).ok()) ++read;
    if (read != num_records) return state.SkipWithError("short read");
  }
  // Record bytes written plus read.
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * num_records * 1024 * 2);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * num_records);
}
BENCHMARK(BM_TFRecordWriteRead)->Arg(10000);

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
