// WebHDFS error answers, retries, redirects and unreachable NameNodes, against answers faked by a
// local HTTP server (cpp-httplib). What a real NameNode does is tested against the Hadoop
// minicluster in webhdfs_file_system_test.cc; this covers what a healthy minicluster never says.
#include "shoal/io/hdfs/webhdfs_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "shoal/base/mutex.h"
#include "shoal/io/file_util.h"
#include "shoal/io/hdfs/webhdfs_file_system.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNotFound[] =
    R"({"RemoteException":{"exception":"FileNotFoundException","javaClassName":)"
    R"("java.io.FileNotFoundException","message":"File does not exist: /x"}})";

TEST(WebHdfsErrorToStatusTest, MapsRemoteExceptions) {
  absl::Status s = WebHdfsErrorToStatus(404, kNotFound, "GETFILESTATUS hdfs://nn:8020/x");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_EQ(s.message(),
            "GETFILESTATUS hdfs://nn:8020/x: FileNotFoundException: File does not exist: /x "
            "(HTTP 404)");

  struct Case {
    const char* exception;
    const char* message;
    absl::StatusCode code;
  };
  for (const Case& c : std::vector<Case>{
           {"AccessControlException", "Permission denied: user=bob, access=WRITE",
            absl::StatusCode::kPermissionDenied},
           {"AccessControlException", "/a/f (is not a directory)",
            absl::StatusCode::kFailedPrecondition},
           {"FileAlreadyExistsException", "/a already exists", absl::StatusCode::kAlreadyExists},
           {"PathIsNotEmptyDirectoryException", "`/a is non empty'",
            absl::StatusCode::kFailedPrecondition},
           {"ParentNotDirectoryException", "/a", absl::StatusCode::kFailedPrecondition},
           {"SafeModeException", "Name node is in safe mode", absl::StatusCode::kUnavailable},
           {"StandbyException", "Operation category READ is not supported in state standby",
            absl::StatusCode::kUnavailable},
           {"DSQuotaExceededException", "quota", absl::StatusCode::kResourceExhausted},
           {"IllegalArgumentException", "Invalid value", absl::StatusCode::kInvalidArgument},
           {"IOException", "Source /a and destination /b must both be directories",
            absl::StatusCode::kFailedPrecondition},
           {"IOException", "Offset=9 out of the range [0, 3)", absl::StatusCode::kOutOfRange},
           {"IOException", "something else", absl::StatusCode::kUnknown},
       }) {
    const std::string body = absl::StrCat(R"({"RemoteException":{"exception":")", c.exception,
                                          R"(","javaClassName":"x.y.)", c.exception,
                                          R"(","message":")", c.message, R"("}})");
    absl::Status status = WebHdfsErrorToStatus(403, body, "OP p");
    EXPECT_EQ(status.code(), c.code) << body << " -> " << status;
    EXPECT_THAT(status.message(), HasSubstr(c.exception));
  }
}

TEST(WebHdfsErrorToStatusTest, CutsStackTracesAndFallsBackToTheClassName) {
  absl::Status s = WebHdfsErrorToStatus(
      404,
      R"json({"RemoteException":{"javaClassName":"java.io.FileNotFoundException",)json"
      R"json("message":"Parent directory doesn't exist: /a\n\tat org.apache.Foo(Foo.java:1)"}})json",
      "CREATE hdfs://nn:8020/a/b");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("FileNotFoundException: Parent directory doesn't exist: /a"));
  EXPECT_THAT(s.message(), Not(HasSubstr("Foo.java")));
}

TEST(WebHdfsErrorToStatusTest, NonWebHdfsAnswers) {
  // A plain 404 must not pass for "no such file": FileExists would answer false.
  absl::Status s = WebHdfsErrorToStatus(404, "<html>Not Found</html>", "GETFILESTATUS p");
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("dfs.webhdfs.enabled"));
  EXPECT_TRUE(absl::IsUnavailable(WebHdfsErrorToStatus(503, "busy", "p")));
  EXPECT_TRUE(absl::IsUnavailable(WebHdfsErrorToStatus(500, "{}", "p")));
  EXPECT_TRUE(absl::IsPermissionDenied(WebHdfsErrorToStatus(403, "", "p")));
  EXPECT_TRUE(absl::IsUnknown(WebHdfsErrorToStatus(418, "{\"RemoteException\": 3}", "p")));
}

TEST(WebHdfsEncodeTest, KeepsUnreservedAndSlashes) {
  EXPECT_EQ(WebHdfsEncode("/a b/c%d?e#f&g=h/ü"), "/a%20b/c%25d%3Fe%23f%26g%3Dh/%C3%BC");
  EXPECT_EQ(WebHdfsEncode("Az09-._~"), "Az09-._~");
}

// A WebHDFS endpoint whose answers the test scripts. Handlers run on the server's threads.
class FakeWebHdfs {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  FakeWebHdfs() {
    auto dispatch = [this](const httplib::Request& req, httplib::Response& res) {
      Handler handler;
      {
        MutexLock lock(&mu_);
        requests_.push_back(
            absl::StrCat(req.method, " ", req.path, " op=", req.get_param_value("op")));
        last_ = req;
        handler = handler_;
      }
      if (handler) handler(req, res);
    };
    server_.Get(".*", dispatch);
    server_.Put(".*", dispatch);
    server_.Post(".*", dispatch);
    server_.Delete(".*", dispatch);
    port_ = server_.bind_to_any_port("127.0.0.1");  // listening from here on
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeWebHdfs() {
    server_.stop();
    thread_.join();
  }

  void Answer(Handler handler) {
    MutexLock lock(&mu_);
    handler_ = std::move(handler);
  }
  std::vector<std::string> Requests() {
    MutexLock lock(&mu_);
    return requests_;
  }
  httplib::Request Last() {
    MutexLock lock(&mu_);
    return last_;
  }
  int port() const { return port_; }
  std::string Uri(absl::string_view path) const {
    return absl::StrCat("webhdfs://127.0.0.1:", port_, path);
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  Mutex mu_;
  Handler handler_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> requests_ ABSL_GUARDED_BY(mu_);
  httplib::Request last_ ABSL_GUARDED_BY(mu_);
};

WebHdfsOptions FastRetries() {
  WebHdfsOptions options;
  options.user = "tester";
  options.max_attempts = 4;
  options.retry_deadline = absl::Seconds(5);
  options.initial_backoff = absl::Milliseconds(5);
  options.max_backoff = absl::Milliseconds(20);
  options.connect_timeout = absl::Seconds(2);
  options.write_buffer_bytes = 64 << 10;
  return options;
}

std::unique_ptr<WebHdfsFileSystem> NewFs(const WebHdfsOptions& options = FastRetries()) {
  absl::StatusOr<std::unique_ptr<WebHdfsFileSystem>> fs = WebHdfsFileSystem::Create(options);
  EXPECT_TRUE(fs.ok()) << fs.status();
  return std::move(fs).value();
}

constexpr char kDirStatus[] =
    R"({"FileStatus":{"type":"DIRECTORY","length":0,"fileId":7,"owner":"o","group":"g",)"
    R"("permission":"755","pathSuffix":""}})";

TEST(WebHdfsClientTest, SendsUserAndRetriesTransientErrors) {
  FakeWebHdfs server;
  int calls = 0;
  server.Answer([&calls](const httplib::Request&, httplib::Response& res) {
    if (++calls < 3) {
      res.status = 503;
      res.set_content("overloaded", "text/plain");
      return;
    }
    res.set_content(kDirStatus, "application/json");
  });
  auto fs = NewFs();
  absl::StatusOr<bool> is_dir = fs->IsDirectory(server.Uri("/a dir"));
  ASSERT_TRUE(is_dir.ok()) << is_dir.status();
  EXPECT_TRUE(*is_dir);
  EXPECT_THAT(server.Requests(), ElementsAre("GET /webhdfs/v1/a dir op=GETFILESTATUS",
                                             "GET /webhdfs/v1/a dir op=GETFILESTATUS",
                                             "GET /webhdfs/v1/a dir op=GETFILESTATUS"));
  EXPECT_EQ(server.Last().get_param_value("user.name"), "tester");
}

TEST(WebHdfsClientTest, RetriesAreBounded) {
  FakeWebHdfs server;
  server.Answer([](const httplib::Request&, httplib::Response& res) {
    res.status = 403;
    res.set_content(R"({"RemoteException":{"exception":"SafeModeException","message":"safe"}})",
                    "application/json");
  });
  auto fs = NewFs();
  absl::Status status = fs->IsDirectory(server.Uri("/x")).status();
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("after 4 attempts"));
  EXPECT_THAT(status.message(), HasSubstr("SafeModeException: safe"));
  EXPECT_EQ(server.Requests().size(), 4u);
}

TEST(WebHdfsClientTest, DefiniteErrorsAreNotRetried) {
  FakeWebHdfs server;
  server.Answer([](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content(kNotFound, "application/json");
  });
  auto fs = NewFs();
  const std::string path = server.Uri("/missing");
  EXPECT_FALSE(*fs->FileExists(path));
  absl::Status status = fs->GetFileSize(path).status();
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("File does not exist"));
  EXPECT_EQ(server.Requests().size(), 2u);
}

TEST(WebHdfsClientTest, UnreachableNameNodeIsUnavailableNamingHostAndPort) {
  int port = 0;
  {  // a port nobody listens on
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port = ntohs(addr.sin_port);
    close(fd);
  }
  WebHdfsOptions options = FastRetries();
  options.http_ports[port] = port;
  auto fs = NewFs(options);
  const absl::Time start = absl::Now();
  const std::string path = absl::StrCat("hdfs://127.0.0.1:", port, "/data");
  absl::Status status = fs->FileExists(path).status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("127.0.0.1:", port)));
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("after 4 attempts"));
}

TEST(WebHdfsClientTest, WritesFollowTheRedirectOfAnOldNameNodeByHand) {
  FakeWebHdfs server;
  Mutex mu;
  std::map<std::string, std::string> files;  // DataNode side: path -> contents
  server.Answer([&](const httplib::Request& req, httplib::Response& res) {
    const std::string op = req.get_param_value("op");
    if (req.path.rfind("/dn", 0) == 0) {  // the "DataNode"
      MutexLock lock(&mu);
      if (op == "CREATE") files[req.path] = req.body;
      if (op == "APPEND") files[req.path] += req.body;
      res.status = op == "CREATE" ? 201 : 200;
      return;
    }
    if (op == "CREATE" || op == "APPEND") {
      // Ignores noredirect, as NameNodes before Hadoop 2.8 do.
      res.status = 307;
      res.set_header("Location", absl::StrCat("http://127.0.0.1:", server.port(), "/dn",
                                              req.path.substr(11), "?op=", op));
      return;
    }
    res.status = 404;
    res.set_content(kNotFound, "application/json");
  });
  auto fs = NewFs();
  std::string big(200 << 10, 'x');  // three requests at a 64 KiB buffer
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  absl::Status written = WriteStringToFile(*fs, server.Uri("/f"), big);
  ASSERT_TRUE(written.ok()) << written;
  MutexLock lock(&mu);
  EXPECT_EQ(files["/dn/f"], big);
}

TEST(WebHdfsClientTest, AnAppendWhoseAnswerWasLostIsNotRepeated) {
  FakeWebHdfs server;
  Mutex mu;
  std::string contents;
  int appends = 0;
  server.Answer([&](const httplib::Request& req, httplib::Response& res) {
    const std::string op = req.get_param_value("op");
    MutexLock lock(&mu);
    if (op == "GETFILESTATUS") {
      res.set_content(absl::StrCat(R"({"FileStatus":{"type":"FILE","length":)", contents.size(),
                                   R"(,"fileId":9}})"),
                      "application/json");
    } else if (req.path.rfind("/dn", 0) == 0) {
      ++appends;
      contents += req.body;
      res.status = 500;  // the data went in, but the answer says otherwise
      res.set_content("proxy error", "text/plain");
    } else {
      res.set_content(
          absl::StrCat(R"({"Location":"http://127.0.0.1:)", server.port(), R"(/dn/f?op=APPEND"})"),
          "application/json");
    }
  });
  auto fs = NewFs();
  absl::StatusOr<std::unique_ptr<WritableFile>> file = fs->NewAppendableFile(server.Uri("/f"));
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("hello").ok());
  absl::Status closed = (*file)->Close();
  EXPECT_TRUE(closed.ok()) << closed;
  MutexLock lock(&mu);
  EXPECT_EQ(contents, "hello");
  EXPECT_EQ(appends, 1);
}

TEST(WebHdfsClientTest, ReadsFollowRedirectsWithOffsetAndLength) {
  FakeWebHdfs server;
  const std::string data = "0123456789";
  server.Answer([&](const httplib::Request& req, httplib::Response& res) {
    const std::string op = req.get_param_value("op");
    if (op == "GETFILESTATUS") {
      res.set_content(R"({"FileStatus":{"type":"FILE","length":10,"fileId":42}})",
                      "application/json");
    } else if (req.path.rfind("/dn", 0) == 0) {
      const size_t offset = std::stoul(req.get_param_value("offset"));
      const size_t length = std::stoul(req.get_param_value("length"));
      res.set_content(data.substr(offset, length), "application/octet-stream");
    } else {
      res.status = 307;
      res.set_header("Location", absl::StrCat("http://127.0.0.1:", server.port(), "/dn?op=OPEN",
                                              "&offset=", req.get_param_value("offset"),
                                              "&length=", req.get_param_value("length")));
    }
  });
  auto fs = NewFs();
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file =
      fs->NewRandomAccessFile(server.Uri("/f"));
  ASSERT_TRUE(file.ok()) << file.status();
  char scratch[16];
  EXPECT_EQ(*(*file)->Read(3, 4, scratch), "3456");
  // Reads go by inode, so a rename of the file cannot switch them to another file.
  EXPECT_EQ(server.Requests().back(), "GET /dn op=OPEN");
  EXPECT_THAT(server.Requests()[1], HasSubstr("/.reserved/.inodes/42 op=OPEN"));
  EXPECT_EQ(*(*file)->Read(8, 10, scratch), "89");
  EXPECT_EQ(*(*file)->Read(10, 4, scratch), "");
}

}  // namespace
}  // namespace shoal
