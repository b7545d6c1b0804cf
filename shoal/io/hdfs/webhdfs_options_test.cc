// URI parsing, RPC -> HTTP port mapping and options from the environment. No HDFS needed.
#include "shoal/io/hdfs/webhdfs_options.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

WebHdfsLocation Parse(absl::string_view uri, const WebHdfsOptions& options = {}) {
  absl::StatusOr<WebHdfsLocation> location = ParseWebHdfsUri(uri, options);
  EXPECT_TRUE(location.ok()) << uri << ": " << location.status();
  return location.value_or(WebHdfsLocation{});
}

absl::Status ParseError(absl::string_view uri, const WebHdfsOptions& options = {}) {
  return ParseWebHdfsUri(uri, options).status();
}

TEST(WebHdfsUriTest, HdfsUriMapsTheRpcPortToTheHttpPort) {
  const WebHdfsLocation l = Parse("hdfs://namenode:8020/data//x/");
  EXPECT_EQ(l.host, "namenode");
  EXPECT_EQ(l.http_port, 9870);
  EXPECT_EQ(l.path, "/data/x");
  EXPECT_EQ(l.display, "hdfs://namenode:8020/data/x");
  EXPECT_EQ(l.Authority(), "namenode:9870");
  EXPECT_EQ(Parse("hdfs://nn:9000/a").http_port, 9870);
  EXPECT_EQ(Parse("hdfs://nn/a").http_port, 9870);  // no port: the default HTTP port
}

TEST(WebHdfsUriTest, WebHdfsUriCarriesTheHttpPort) {
  const WebHdfsLocation l = Parse("webhdfs://10.1.2.3:50070/a b");
  EXPECT_EQ(l.host, "10.1.2.3");
  EXPECT_EQ(l.http_port, 50070);
  EXPECT_EQ(l.path, "/a b");
  EXPECT_EQ(Parse("webhdfs://nn/x").http_port, 9870);
  EXPECT_EQ(Parse("webhdfs://[::1]:9871/x").host, "[::1]");
  EXPECT_EQ(Parse("webhdfs://[::1]:9871/x").http_port, 9871);
}

TEST(WebHdfsUriTest, RootAndEmptyPaths) {
  EXPECT_EQ(Parse("hdfs://nn:8020").path, "/");
  EXPECT_EQ(Parse("hdfs://nn:8020/").path, "/");
  EXPECT_EQ(Parse("hdfs://nn:8020").display, "hdfs://nn:8020/");
}

TEST(WebHdfsUriTest, PortMappingOverrideAndErrors) {
  WebHdfsOptions options;
  options.http_ports[41000] = 41001;
  EXPECT_EQ(Parse("hdfs://nn:41000/x", options).http_port, 41001);
  absl::Status unknown = ParseError("hdfs://nn:12345/x");
  EXPECT_TRUE(absl::IsInvalidArgument(unknown)) << unknown;
  EXPECT_THAT(unknown.message(), HasSubstr("RPC port 12345"));
  EXPECT_THAT(unknown.message(), HasSubstr("SHOAL_HDFS_HTTP_PORTS=12345:"));
  EXPECT_THAT(unknown.message(), HasSubstr("webhdfs://nn:"));
  options.http_port_override = 7777;
  EXPECT_EQ(Parse("hdfs://nn:12345/x", options).http_port, 7777);
  EXPECT_EQ(Parse("hdfs://nn:8020/x", options).http_port, 7777);
  EXPECT_EQ(Parse("webhdfs://nn:8888/x", options).http_port, 8888);  // HTTP port given
}

TEST(WebHdfsUriTest, MalformedUrisAreInvalidArguments) {
  for (const char* uri :
       {"hdfs:///data/x", "hdfs://:8020/x", "hdfs://nn:0/x", "hdfs://nn:99999/x", "hdfs://nn:x/x",
        "hdfs://nn:/x", "hdfs://user@nn:8020/x", "hdfs://n n:8020/x", "hdfs://nn:8020/a/../b",
        "hdfs://nn:8020/./b", "webhdfs://[::1/x", "webhdfs://[zz]:1/x", "file:///tmp/x",
        "/plain/path"}) {
    absl::Status status = ParseError(uri);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << uri << ": " << status;
  }
  absl::Status no_host = ParseError("hdfs:///data/x");
  EXPECT_THAT(no_host.message(), HasSubstr("hdfs:///data/x"));
  EXPECT_THAT(no_host.message(), HasSubstr("no NameNode host"));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseError(std::string("hdfs://nn:8020/a\nb"))));
}

TEST(WebHdfsOptionsTest, ParsesPortMaps) {
  EXPECT_EQ(*ParseHttpPortMap("8020:9870, 9000:50070 ,"),
            (std::map<int, int>{{8020, 9870}, {9000, 50070}}));
  EXPECT_TRUE(ParseHttpPortMap("")->empty());
  for (const char* bad : {"8020", "8020:", "a:b", "1:2:3", "8020:70000", "-1:5"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseHttpPortMap(bad).status())) << bad;
  }
}

TEST(WebHdfsOptionsTest, FromEnvironment) {
  std::map<std::string, std::string> env = {{"HADOOP_USER_NAME", "alice"},
                                            {"SHOAL_HDFS_HTTP_PORTS", "41000:41001,8020:50070"},
                                            {"SHOAL_HDFS_RETRY_SECONDS", "2.5"}};
  auto getenv = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  absl::StatusOr<WebHdfsOptions> options = WebHdfsOptionsFromEnvironment(getenv);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->user, "alice");
  EXPECT_EQ(options->http_ports.at(41000), 41001);
  EXPECT_EQ(options->http_ports.at(8020), 50070);  // overrides the default
  EXPECT_EQ(options->http_ports.at(9000), 9870);   // defaults kept
  EXPECT_EQ(options->http_port_override, 0);
  EXPECT_EQ(options->retry_deadline, absl::Milliseconds(2500));

  env["SHOAL_WEBHDFS_PORT"] = "50070";
  EXPECT_EQ(WebHdfsOptionsFromEnvironment(getenv)->http_port_override, 50070);

  env.erase("HADOOP_USER_NAME");
  EXPECT_EQ(WebHdfsOptionsFromEnvironment(getenv)->user, OsUserName());
  EXPECT_FALSE(OsUserName().empty());

  env["SHOAL_WEBHDFS_PORT"] = "http";
  absl::Status bad = WebHdfsOptionsFromEnvironment(getenv).status();
  EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
  EXPECT_THAT(bad.message(), HasSubstr("SHOAL_WEBHDFS_PORT"));
  env.erase("SHOAL_WEBHDFS_PORT");
  env["SHOAL_HDFS_HTTP_PORTS"] = "8020=9870";
  bad = WebHdfsOptionsFromEnvironment(getenv).status();
  EXPECT_THAT(bad.message(), HasSubstr("SHOAL_HDFS_HTTP_PORTS"));
  env.erase("SHOAL_HDFS_HTTP_PORTS");
  env["SHOAL_HDFS_RETRY_SECONDS"] = "-1";
  EXPECT_TRUE(absl::IsInvalidArgument(WebHdfsOptionsFromEnvironment(getenv).status()));
}

TEST(WebHdfsOptionsTest, Validation) {
  EXPECT_TRUE(ValidateWebHdfsOptions({}).ok());
  WebHdfsOptions o;
  o.write_buffer_bytes = 10;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateWebHdfsOptions(o)));
  o = {};
  o.max_attempts = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateWebHdfsOptions(o)));
  o = {};
  o.user = "a b";
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateWebHdfsOptions(o)));
  o = {};
  o.http_ports[1] = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateWebHdfsOptions(o)));
}

}  // namespace
}  // namespace shoal
