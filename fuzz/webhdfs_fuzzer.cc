// Feeds arbitrary bytes as the NameNode's answers to the WebHDFS file system: a fake NameNode
// (cpp-httplib on loopback, started once) answers every request with the HTTP status picked by
// the first byte and the rest as the body, while the target runs the file-system calls that parse
// JSON answers (GETFILESTATUS, LISTSTATUS, MKDIRS, RENAME, DELETE, OPEN). The same bytes also go to
// WebHdfsErrorToStatus. Asserts that an error answer never becomes OK and that a listing of an
// accepted answer holds plain child names.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "httplib.h"
#include "shoal/io/hdfs/webhdfs_client.h"
#include "shoal/io/hdfs/webhdfs_file_system.h"

namespace shoal::fuzz {
namespace {

constexpr int kStatuses[] = {200, 200, 200, 200, 400, 401, 403, 404, 409, 500, 503};

// The fake NameNode: answers with whatever the current input says. Never stopped (lives as long as
// the fuzzing process).
class FakeNameNode {
 public:
  FakeNameNode() {
    server_.set_keep_alive_max_count(1 << 30);
    server_.set_tcp_nodelay(true);  // else Nagle and delayed ACKs cost 40 ms per answer
    const auto answer = [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      res.status = status_;
      res.set_content(body_, "application/json");
    };
    server_.Get(".*", answer);
    server_.Put(".*", answer);
    server_.Post(".*", answer);
    server_.Delete(".*", answer);
    port_ = server_.bind_to_any_port("127.0.0.1");
    CHECK_GT(port_, 0);
    std::thread([this] { server_.listen_after_bind(); }).detach();
  }
  void Set(int status, absl::string_view body) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    body_ = std::string(body);
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::mutex mu_;
  int status_ = 200;
  std::string body_;
};

std::unique_ptr<WebHdfsFileSystem> MakeFileSystem() {
  QuietLogs();
  WebHdfsOptions options;
  options.max_attempts = 1;  // every answer is final: the fuzzer varies it, not a retry
  options.connect_timeout = absl::Seconds(2);
  options.stall_timeout = absl::Seconds(2);
  auto fs = WebHdfsFileSystem::Create(options);
  CHECK(fs.ok()) << fs.status();
  return *std::move(fs);
}

void RunCalls(WebHdfsFileSystem& fs, const std::string& root, bool ok_answer) {
  const std::string file = root + "/dir/file";
  (void)fs.GetFileSize(file);
  (void)fs.FileExists(file);
  (void)fs.IsDirectory(file);
  auto children = fs.GetChildren(root + "/dir");
  if (children.ok()) {
    CHECK(ok_answer);
    for (const std::string& child : *children) {
      CHECK(!child.empty() && child.find('/') == std::string::npos) << child;
    }
  }
  (void)fs.CreateDir(root + "/new");
  (void)fs.RenameFile(file, root + "/dir/renamed");
  (void)fs.DeleteFile(file);
  auto reader = fs.NewRandomAccessFile(file);
  if (reader.ok()) {
    char scratch[64];
    (void)(*reader)->Read(0, sizeof(scratch), scratch);
  }
}

}  // namespace
}  // namespace shoal::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  using namespace shoal::fuzz;
  static FakeNameNode* namenode = new FakeNameNode();
  static WebHdfsFileSystem* fs = MakeFileSystem().release();
  static const std::string root = absl::StrCat("webhdfs://127.0.0.1:", namenode->port(), "/f");
  if (size == 0) return 0;
  const int status = kStatuses[data[0] % std::size(kStatuses)];
  const absl::string_view body = AsView(data + 1, size - 1);

  if (status >= 400) CHECK(!WebHdfsErrorToStatus(status, body, "fuzz").ok());
  namenode->Set(status, body);
  RunCalls(*fs, root, status < 400);
  return 0;
}
