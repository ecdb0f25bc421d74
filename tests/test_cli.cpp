// The command line as users and scripts see it: kinds, JSON fields, exit statuses, output files.
#include "test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

using namespace qdq::test;
using Json = nlohmann::json;

namespace
{

std::string manifestKindToInspectKind(const std::string& kind)
{
    if (kind == "layerinfo-json")
    {
        return "layer-info";
    }
    if (kind == "profile-json")
    {
        return "profile";
    }
    if (kind == "timing-json")
    {
        return "timing";
    }
    if (kind == "metadata-json")
    {
        return "metadata";
    }
    if (kind == "onnx")
    {
        return "onnx";
    }
    return "build-log"; // verbose-log and excerpt
}

std::filesystem::path sampleDir(const std::string& name)
{
    return std::filesystem::path(QDQ_SOURCE_DIR) / "samples" / name;
}

} // namespace

TEST(RealDataCli, InspectReadsEveryManifestFileWithTheRightKind)
{
    REQUIRE_SHARED();
    std::size_t files = 0;
    for (const ManifestEntry& entry : manifestEntries())
    {
        std::string path = realdata(entry.path()).string();
        const std::string& kind = entry.kind;
        auto result = runCli({"inspect", "--format", "json", path});
        ASSERT_EQ(result.exitStatus, 0) << path << ": " << result.err;
        Json summary = Json::parse(result.out);
        ASSERT_EQ(summary.size(), 1u);
        EXPECT_EQ(summary[0]["kind"], manifestKindToInspectKind(kind)) << path;
        EXPECT_EQ(summary[0]["path"], path);
        for (const char* key : {"trt_version", "layers", "qdq_nodes", "time_ms", "warnings"})
        {
            EXPECT_TRUE(summary[0].contains(key)) << key;
        }
        ++files;
    }
    EXPECT_EQ(files, 94u); // ../shared/README.md: MANIFEST.tsv lists 94 files since 2026-12-02
}

TEST(RealDataCli, InspectFactsOfNamedFiles)
{
    REQUIRE_SHARED();
    auto result = runCli({"inspect", "--format", "json",
                          realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.graph.json").string(),
                          realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.json").string(),
                          realdata("trex-notebooks-yolo-orin-trt852/trt.out").string(),
                          sharedModel("resnet18-qat-convs.onnx").string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    Json summary = Json::parse(result.out);
    ASSERT_EQ(summary.size(), 4u);
    EXPECT_EQ(summary[0]["layers"], 37);
    EXPECT_EQ(summary[0]["qdq_origin_layers"], 10);
    EXPECT_EQ(summary[1]["layers"], 37);
    // Sum of averageMs of the 37 entries, computed from the file by hand.
    EXPECT_NEAR(summary[1]["time_ms"].get<double>(), 1.09568, 1e-6);
    EXPECT_EQ(summary[2]["trt_version"], "8.5.2");
    EXPECT_EQ(summary[2]["layers"], 86);
    // MODELS.json: 42 QuantizeLinear + 42 DequantizeLinear.
    EXPECT_EQ(summary[3]["qdq_nodes"], 84);
    EXPECT_TRUE(summary[3]["trt_version"].is_null());
}

TEST(Cli, BadInputExitsTwoWithFileAndPlace)
{
    auto dir = tempDir("cli-bad");
    auto empty = writeFile(dir / "empty.json", "");
    auto garbage = writeFile(dir / "garbage.bin", std::string("\x00\x01\xfe\xff\x10\x20", 6));
    auto truncated = writeFile(dir / "layers.json", "{\"Layers\": [{\n  \"Name\": \"a\",\n  \"LayerType\": ");
    for (const auto& path : {empty, garbage, truncated})
    {
        auto result = runCli({"inspect", path.string()});
        EXPECT_EQ(result.exitStatus, 2) << path;
        EXPECT_NE(result.err.find(path.string()), std::string::npos) << result.err;
        EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    }
    auto truncatedResult = runCli({"diagnose", truncated.string()});
    EXPECT_EQ(truncatedResult.exitStatus, 2);
    EXPECT_NE(truncatedResult.err.find("layers.json:3"), std::string::npos) << truncatedResult.err;
    auto missing = runCli({"diagnose", (dir / "nope.onnx").string()});
    EXPECT_EQ(missing.exitStatus, 2);
    EXPECT_EQ(runCli({"diagnose"}).exitStatus, 2);
    EXPECT_EQ(runCli({"frobnicate"}).exitStatus, 2);
}

TEST(Cli, DiagnoseJsonIsDeterministic)
{
    auto dir = sampleDir("c-resnet-conv-maxpool");
    std::vector<std::string> args = {"diagnose",
                                     "--format",
                                     "json",
                                     (dir / "model.onnx").string(),
                                     (dir / "layers.json").string(),
                                     (dir / "profile.json").string()};
    auto first = runCli(args);
    auto second = runCli(args);
    ASSERT_EQ(first.exitStatus, 0) << first.err;
    EXPECT_EQ(first.out, second.out);
    Json report = Json::parse(first.out);
    EXPECT_EQ(report["schema"], "qdq-doctor.report.v1");
    for (const char* key : {"inputs", "accounting", "layers", "findings", "time_ms"})
    {
        EXPECT_TRUE(report.contains(key)) << key;
    }
    for (const auto& finding : report["findings"])
    {
        for (const char* key :
             {"rule", "severity", "message", "onnx_nodes", "engine_layers", "evidence", "fix", "cost_ms"})
        {
            EXPECT_TRUE(finding.contains(key)) << key;
        }
    }
}

TEST(Cli, OutputDirectoryNeverOverwritesWithoutForce)
{
    auto dir = sampleDir("c-resnet-conv-maxpool");
    auto out = tempDir("cli-out") / "report";
    std::vector<std::string> args = {"diagnose", "-o", out.string(), (dir / "model.onnx").string(),
                                     (dir / "layers.json").string()};
    ASSERT_EQ(runCli(args).exitStatus, 0);
    ASSERT_TRUE(std::filesystem::exists(out / "report.json"));
    ASSERT_TRUE(std::filesystem::exists(out / "report.txt"));
    writeFile(out / "report.json", "user's own file");
    auto again = runCli(args);
    EXPECT_EQ(again.exitStatus, 2);
    EXPECT_NE(again.err.find("--force"), std::string::npos);
    EXPECT_EQ(readFile(out / "report.json"), "user's own file");
    args.push_back("--force");
    EXPECT_EQ(runCli(args).exitStatus, 0);
    EXPECT_NE(readFile(out / "report.json").find("qdq-doctor.report.v1"), std::string::npos);
}

// Reports are written next to their name and renamed onto it; with --force that replaced a pipe or device (a
// report.json linked to /dev/null) by a file. Refused now, force or not; a file named report.json.tmp is not touched.
TEST(Cli, ReportOntoAPipeIsRefusedEvenWithForce)
{
    auto dir = sampleDir("c-resnet-conv-maxpool");
    auto out = tempDir("cli-pipe") / "report";
    std::filesystem::create_directories(out);
    ASSERT_EQ(::mkfifo((out / "report.json").c_str(), 0600), 0);
    writeFile(out / "report.json.tmp", "user's own file");
    auto refused = runCli({"diagnose", "-o", out.string(), "--force", (dir / "model.onnx").string()});
    EXPECT_EQ(refused.exitStatus, 2);
    EXPECT_NE(refused.err.find("report.json: error: is not a regular file"), std::string::npos) << refused.err;
    EXPECT_TRUE(std::filesystem::is_fifo(std::filesystem::symlink_status(out / "report.json")));
    EXPECT_EQ(readFile(out / "report.json.tmp"), "user's own file");

    auto picture = tempDir("cli-pipe-graph") / "graph.svg";
    ASSERT_EQ(::mkfifo(picture.c_str(), 0600), 0);
    auto graph = runCli({"graph", (dir / "model.onnx").string(), "-o", picture.string(), "--force"});
    EXPECT_EQ(graph.exitStatus, 2) << graph.out;
    EXPECT_TRUE(std::filesystem::is_fifo(std::filesystem::symlink_status(picture)));
}

TEST(Cli, OutputFolderThatIsAFileIsAnErrorNamingIt)
{
    auto dir = sampleDir("c-resnet-conv-maxpool");
    auto file = writeFile(tempDir("cli-out-file") / "notes.txt", "user's own file");
    auto refused = runCli({"diagnose", "-o", file.string(), (dir / "model.onnx").string()});
    EXPECT_EQ(refused.exitStatus, 2);
    EXPECT_NE(refused.err.find(file.string() + ": error: is not a folder"), std::string::npos) << refused.err;
    EXPECT_EQ(readFile(file), "user's own file");
    auto below = runCli({"diagnose", "-o", (file / "sub").string(), (dir / "model.onnx").string()});
    EXPECT_EQ(below.exitStatus, 2);
    EXPECT_NE(below.err.find("sub: error: cannot create the folder"), std::string::npos) << below.err;
}

TEST(Cli, FailOnSetsExitStatus)
{
    auto dir = sampleDir("c-resnet-conv-maxpool");
    std::string model = (dir / "model.onnx").string();
    EXPECT_EQ(runCli({"diagnose", "--fail-on", "warning", model}).exitStatus, 1);
    EXPECT_EQ(runCli({"diagnose", "--fail-on", "error", model}).exitStatus, 0);
    EXPECT_EQ(runCli({"diagnose", model}).exitStatus, 0);
}

TEST(Cli, TwoLayerListsNeedRoles)
{
    auto dir = sampleDir("e-explicit-slower-than-implicit");
    auto result =
        runCli({"diagnose", (dir / "implicit" / "layers.json").string(), (dir / "explicit" / "layers.json").string()});
    EXPECT_EQ(result.exitStatus, 2);
    EXPECT_NE(result.err.find("--layers"), std::string::npos) << result.err;
}
