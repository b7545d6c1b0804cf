#include "shoal/model/plugin.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/base/test_dir.h"
#include "shoal/model/models.h"

// The fixture plugins' paths, from CMake (testdata/plugin_fixture_*.cc built as MODULE libraries).
#ifndef SHOAL_PLUGIN_FIXTURE_MODEL
#error "SHOAL_PLUGIN_FIXTURE_MODEL (and the other fixture paths) must be defined by CMake"
#endif

namespace shoal {
namespace {

using ::testing::HasSubstr;

TEST(LoadModelPluginTest, MissingFileIsNotFoundNamingIt) {
  ModelRegistry registry("model");
  const absl::Status status = LoadModelPlugin("/nonexistent/libnothing.so", &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("/nonexistent/libnothing.so"));
}

TEST(LoadModelPluginTest, FileTheLoaderRejectsIsInvalidArgumentWithItsError) {
  const std::string path = NewTestDir("plugin_test") + "/not_elf.so";
  std::ofstream(path) << std::string(256, 'x');  // long enough for dlopen to read a header
  ModelRegistry registry("model");
  const absl::Status status = LoadModelPlugin(path, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("cannot load model plugin " + path));
  EXPECT_THAT(std::string(status.message()), HasSubstr("ELF"));  // dlerror(): "invalid ELF header"
}

TEST(LoadModelPluginTest, UndefinedSymbolIsInvalidArgumentNamingIt) {
  ModelRegistry registry("model");
  const absl::Status status = LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_UNDEFINED, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("undefined symbol"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("ShoalFixtureFunctionNobodyDefines"));
}

TEST(LoadModelPluginTest, LibraryWithoutEntryPointIsNotAPlugin) {
  ModelRegistry registry("model");
  const absl::Status status = LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_NOT_A_PLUGIN, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr(SHOAL_PLUGIN_FIXTURE_NOT_A_PLUGIN));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("is not a shoal model plugin: no symbol shoal_register_models"));
}

TEST(LoadModelPluginTest, RegistersModelsThatRun) {
  ModelRegistry registry("model");
  ASSERT_TRUE(RegisterBuiltinModels(&registry).ok());
  const absl::Status status = LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_MODEL, &registry);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(registry.Contains("fixture_model"));
  EXPECT_TRUE(registry.Contains("linear"));

  absl::StatusOr<const ModelFn*> model = registry.Find("fixture_model");
  ASSERT_TRUE(model.ok()) << model.status();
  FeatureLayout layout;
  layout.dense_names = {"x"};
  layout.dense_widths = {3};
  ModelContext ctx(layout, {OptimizerGroupSpec{"deep", {}}}, /*seed=*/7);
  ctx.BeginRecording();
  absl::StatusOr<EstimatorSpec> spec =
      (**model)(ctx, Tensor(Shape{1, 1}), Mode::kTrain, ModelConfig{});
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(ctx.status().ok()) << ctx.status();
  EXPECT_NE(spec->loss, nullptr);  // (the recording pass binds no trainable values)
  const ModelSpec recorded = ctx.RecordedSpec();
  ASSERT_EQ(recorded.dense.size(), 2u);
  EXPECT_EQ(recorded.dense[0].name, "fixture/kernel");
  EXPECT_EQ(recorded.dense[0].shape, (Shape{3, 1}));
  EXPECT_EQ(recorded.dense[1].name, "fixture/bias");
}

TEST(LoadModelPluginTest, PlainFileNameIsTheFileInTheWorkingDirectory) {
  // dlopen would search the library path for "libx.so"; the user means ./libx.so.
  const std::filesystem::path fixture(SHOAL_PLUGIN_FIXTURE_MODEL);
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(fixture.parent_path());
  ModelRegistry registry("model");
  const absl::Status status = LoadModelPlugin(fixture.filename().string(), &registry);
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(registry.Contains("fixture_model"));
}

TEST(LoadModelPluginTest, ExistingNameIsAlreadyExistsNamingThePlugin) {
  ModelRegistry registry("model");
  ASSERT_TRUE(registry.Register("fixture_model", ModelFn()).ok());
  const absl::Status status = LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_MODEL, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("model plugin " SHOAL_PLUGIN_FIXTURE_MODEL ": "));
  EXPECT_THAT(std::string(status.message()), HasSubstr("'fixture_model' is already registered"));
}

TEST(LoadModelPluginTest, LoadingTwiceIsAlreadyExists) {
  ModelRegistry registry("model");
  ASSERT_TRUE(LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_MODEL, &registry).ok());
  EXPECT_EQ(LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_MODEL, &registry).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(LoadModelPluginTest, AbiVersionMismatchIsRefused) {
  ModelRegistry registry("model");
  const absl::Status status = LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_ABI_MISMATCH, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr(SHOAL_PLUGIN_FIXTURE_ABI_MISMATCH));
  EXPECT_THAT(
      std::string(status.message()),
      HasSubstr(absl::StrCat("built for shoal plugin ABI version ", kShoalPluginAbiVersion + 1,
                             ", but this shoal has version ", kShoalPluginAbiVersion)));
  EXPECT_THAT(std::string(status.message()), HasSubstr("rebuild"));
}

TEST(LoadModelPluginTest, LayoutMismatchIsRefused) {
  ModelRegistry registry("model");
  const absl::Status status = LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_LAYOUT_MISMATCH, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr(SHOAL_PLUGIN_FIXTURE_LAYOUT_MISMATCH));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("built against other shoal headers or compiler settings"));
}

TEST(LoadModelPluginTest, PluginErrorKeepsItsCodeAndText) {
  ModelRegistry registry("model");
  const absl::Status status = LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_FAILING, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(std::string(status.message()),
            absl::StrCat("model plugin ", SHOAL_PLUGIN_FIXTURE_FAILING,
                         ": fixture registration failed: license server unreachable"));
}

TEST(LoadModelPluginTest, ExceptionInRegistrationIsInternal) {
  ModelRegistry registry("model");
  const absl::Status status = LoadModelPlugin(SHOAL_PLUGIN_FIXTURE_THROWING, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(status.message()), HasSubstr("fixture registration threw"));
}

TEST(ReportRegistrationTest, TruncatesTheMessageToTheBuffer) {
  char error[8];
  EXPECT_EQ(
      plugin_internal::ReportRegistration(absl::NotFoundError("0123456789"), error, sizeof(error)),
      static_cast<int>(absl::StatusCode::kNotFound));
  EXPECT_STREQ(error, "0123456");
  EXPECT_EQ(plugin_internal::ReportRegistration(absl::OkStatus(), error, sizeof(error)), 0);
}

}  // namespace
}  // namespace shoal
