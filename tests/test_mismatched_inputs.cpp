// Inputs a user cannot reconcile: a model that is not the one the engine was built from is refused the way two
// engine files of different builds are (exit 2 naming both files and how few names matched), and trtexec's own GPU
// compute time (the --exportTimes JSON) is shown beside the per-layer profile sum, each number with its file.
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

using namespace qdq::test;
using Json = nlohmann::json;

namespace
{

std::string readText(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<std::string> a100Files(const std::string& set, bool withTiming)
{
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(realdata(set)))
    {
        const std::string path = entry.path().string();
        if (withTiming || path.find(".timing.json") == std::string::npos)
        {
            files.push_back(path);
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::string timeLine(const std::string& text)
{
    const auto at = text.find("\nTime:");
    if (at == std::string::npos)
    {
        return {};
    }
    // The Time: line and its continuation lines (indented), as one line.
    std::string lines;
    std::istringstream rest(text.substr(at + 1));
    for (std::string line; std::getline(rest, line);)
    {
        if (!lines.empty() && line.rfind("               ", 0) != 0)
        {
            break;
        }
        lines += line + "\n";
    }
    // The text report wraps long lines: compare with the wrapping undone.
    return std::regex_replace(lines, std::regex("\\s+"), " ");
}

} // namespace

// The same recipe exported again (another torch, other node names) beside the A100 -qat engine: before, exit 0 with
// "0 mapped ... 23 unattributed" and "0 of 21 quantized operations run in INT8".
TEST(RealDataMismatchedModel, ModelOfAnotherExportIsRefusedNamingBothFiles)
{
    REQUIRE_SHARED();
    std::vector<std::string> arguments = {"diagnose"};
    for (const auto& file : a100Files("trex-pt-resnet-a100-qat", true))
    {
        arguments.push_back(file);
    }
    const std::string model = sharedModel("resnet18-qat-convs.onnx").string();
    arguments.push_back(model);
    const CommandResult refused = runCli(arguments);
    EXPECT_EQ(refused.exitStatus, 2) << refused.out;
    EXPECT_NE(refused.err.find(model), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("resnet-qat.onnx.engine.graph.json"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("only 0 of the 23 engine layers"), std::string::npos) << refused.err;
    EXPECT_TRUE(refused.out.empty()) << refused.out;

    // The same engine files without the model: diagnosed as before.
    arguments.pop_back();
    const CommandResult alone = runCli(arguments);
    EXPECT_NE(alone.exitStatus, 2) << alone.err;
    EXPECT_NE(alone.out.find("23 mapped"), std::string::npos) << alone.out;
}

// The model the engine was built from matches every layer; renaming the nodes of one fused layer leaves most names
// matched: still diagnosed. Renaming every node (another export) is refused.
TEST(MismatchedModel, PartlyMatchingModelIsDiagnosedAnotherExportIsNot)
{
    const auto dir = tempDir("mismatched-model");
    const std::filesystem::path sampleDir = std::filesystem::path(QDQ_SOURCE_DIR) / "samples" / "c-resnet-conv-maxpool";
    const std::string model = (sampleDir / "model.onnx").string();
    const std::string layers = readText(sampleDir / "layers.json");

    const CommandResult same = runCli({"diagnose", model, (sampleDir / "layers.json").string()});
    EXPECT_NE(same.exitStatus, 2) << same.err;
    EXPECT_NE(same.out.find("4 mapped"), std::string::npos) << same.out;

    // One layer's nodes renamed: 3 of 4 layers still name nodes of the model.
    std::string partly = layers;
    for (const char* node : {"Conv_22", "BatchNormalization_23", "Relu_24"})
    {
        partly = std::regex_replace(partly, std::regex(node), std::string(node) + "0");
    }
    const auto partlyPath = writeFile(dir / "partly.json", partly);
    const CommandResult partlyResult = runCli({"diagnose", model, partlyPath.string()});
    EXPECT_NE(partlyResult.exitStatus, 2) << partlyResult.err;
    EXPECT_NE(partlyResult.out.find("Engine layers:"), std::string::npos);

    // No such note where most layers match.
    const Json partlyReport = Json::parse(runCli({"diagnose", "--format", "json", model, partlyPath.string()}).out);
    for (const auto& note : partlyReport["notes"])
    {
        EXPECT_EQ(note.get<std::string>().find("may not be the model"), std::string::npos) << note;
    }

    // Every node and tensor renumbered: only the layer named after the stem's weight (conv1.weight) still matches.
    // Diagnosed, with the partial match the first note.
    const std::string renumbered = std::regex_replace(layers, std::regex("_([0-9]+)"), "_9$1");
    const auto renumberedPath = writeFile(dir / "renumbered.json", renumbered);
    const CommandResult noted = runCli({"diagnose", "--format", "json", model, renumberedPath.string()});
    ASSERT_NE(noted.exitStatus, 2) << noted.err;
    const Json notedReport = Json::parse(noted.out);
    const int mapped = notedReport["accounting"]["layers"]["mapped"].get<int>();
    const int unattributed = notedReport["accounting"]["layers"]["unattributed"].get<int>();
    EXPECT_GT(mapped, 0);
    EXPECT_LT(2 * mapped, mapped + unattributed);
    ASSERT_FALSE(notedReport["notes"].empty());
    EXPECT_NE(notedReport["notes"][0].get<std::string>().find("may not be the model"), std::string::npos)
        << notedReport["notes"][0];

    // Every layer and tensor name prefixed as well: no layer executes a node of the model, another export. Refused.
    const std::string other = std::regex_replace(renumbered, std::regex("\"Name\": \""), "\"Name\": \"other/");
    const auto otherPath = writeFile(dir / "other.json", other);
    const CommandResult refused = runCli({"diagnose", model, otherPath.string()});
    EXPECT_EQ(refused.exitStatus, 2) << refused.out;
    EXPECT_NE(refused.err.find(model), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find(otherPath.string()), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("is not the model"), std::string::npos) << refused.err;
}

// Before: the Time: line and the JSON showed only the profile sum (1.096 ms), never trtexec's 0.882 ms.
TEST(RealDataTrtexecTime, ShownBesideTheProfileSumWithItsFile)
{
    REQUIRE_SHARED();
    std::vector<std::string> text = {"diagnose"};
    std::vector<std::string> json = {"diagnose", "--format", "json"};
    for (const auto& file : a100Files("trex-pt-resnet-a100-qat", true))
    {
        text.push_back(file);
        json.push_back(file);
    }
    const std::string line = timeLine(runCli(text).out);
    // The files are named as the report's header names them: by what follows their common start in the folder.
    EXPECT_NE(line.find("1.096 ms total (the per-layer profile's sum, profile.json; trtexec GPU compute 0.882 ms "
                        "mean, timing.json, 3614 runs)"),
              std::string::npos)
        << line;
    const Json report = Json::parse(runCli(json).out);
    const Json& trtexec = report["trtexec_time"];
    ASSERT_TRUE(trtexec.is_object()) << report.dump().substr(0, 400);
    EXPECT_NEAR(trtexec["mean_compute_ms"].get<double>(), 0.882262, 1e-6);
    EXPECT_NEAR(trtexec["median_compute_ms"].get<double>(), 0.882568, 1e-6);
    EXPECT_EQ(trtexec["records"], 3614);
    EXPECT_NE(trtexec["file"].get<std::string>().find("resnet-qat.onnx.engine.timing.json"), std::string::npos);
    EXPECT_NEAR(trtexec["profile_total_ms"].get<double>(), report["time_ms"]["total"].get<double>(), 1e-9);
    EXPECT_NE(trtexec["profile_file"].get<std::string>().find("resnet-qat.onnx.engine.profile.json"),
              std::string::npos);

    // The same engine files without the timing JSON: the profile sum alone, as before.
    std::vector<std::string> withoutTiming = {"diagnose", "--format", "json"};
    for (const auto& file : a100Files("trex-pt-resnet-a100-qat", false))
    {
        withoutTiming.push_back(file);
    }
    const Json plain = Json::parse(runCli(withoutTiming).out);
    EXPECT_TRUE(plain["trtexec_time"].is_null());
    EXPECT_NEAR(plain["time_ms"]["total"].get<double>(), 1.09568, 1e-6);
}

TEST(TrtexecTime, FixtureTimingBesideASampleProfile)
{
    const std::filesystem::path sampleDir = std::filesystem::path(QDQ_SOURCE_DIR) / "samples" / "c-resnet-conv-maxpool";
    const std::string layers = (sampleDir / "layers.json").string();
    const std::string profile = (sampleDir / "profile.json").string();
    const std::string timing = fixture("timing/small.json").string();
    const std::string with = timeLine(runCli({"diagnose", layers, profile, timing}).out);
    EXPECT_NE(with.find("(the per-layer profile's sum, profile.json; trtexec GPU compute 0.625 ms mean, small.json, 4 "
                        "runs)"),
              std::string::npos)
        << with;
    const std::string without = timeLine(runCli({"diagnose", layers, profile}).out);
    EXPECT_EQ(without.find("trtexec"), std::string::npos) << without;
    EXPECT_NE(without.find("(the per-layer profile's sum, profile.json)"), std::string::npos) << without;
}
