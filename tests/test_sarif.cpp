// SARIF 2.1.0 output (docs/sarif.md): the structure the SARIF 2.1.0 schema requires, on every sample, and where
// each result is located.
#include "test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

using namespace qdq::test;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace
{

fs::path sampleDir(const std::string& name)
{
    return fs::path(QDQ_SOURCE_DIR) / "samples" / name;
}

//! Checks what the SARIF 2.1.0 schema requires of the parts qdq-doctor writes (sarifLog: version, runs; run: tool;
//! toolComponent: name; reportingDescriptor: id; result: message with text; location, region and artifact types),
//! plus what code scanning needs of it: rules for every ruleId, a level, a physical location per result. Failures
//! are reported with the JSON path.
void expectValidSarif(const Json& log, const std::string& what)
{
    SCOPED_TRACE(what);
    ASSERT_TRUE(log.is_object());
    EXPECT_EQ(log.value("version", ""), "2.1.0");
    ASSERT_TRUE(log.contains("$schema") && log["$schema"].is_string());
    EXPECT_NE(log["$schema"].get<std::string>().find("sarif-schema-2.1.0.json"), std::string::npos);
    ASSERT_TRUE(log["runs"].is_array());
    ASSERT_EQ(log["runs"].size(), 1u);
    const Json& run = log["runs"][0];
    ASSERT_TRUE(run["tool"]["driver"].is_object());
    const Json& driver = run["tool"]["driver"];
    EXPECT_EQ(driver.value("name", ""), "qdq-doctor");
    ASSERT_TRUE(driver["rules"].is_array());
    std::set<std::string> ruleIds;
    for (std::size_t i = 0; i < driver["rules"].size(); ++i)
    {
        const Json& rule = driver["rules"][i];
        ASSERT_TRUE(rule["id"].is_string()) << "rules[" << i << "]";
        const std::string id = rule["id"];
        EXPECT_TRUE(ruleIds.insert(id).second) << "rule " << id << " twice";
        ASSERT_TRUE(rule["shortDescription"]["text"].is_string()) << id;
        EXPECT_FALSE(rule["shortDescription"]["text"].get<std::string>().empty()) << id;
        EXPECT_EQ(rule.value("helpUri", ""), "docs/rules/" + id + ".md");
        EXPECT_TRUE(fs::exists(fs::path(QDQ_SOURCE_DIR) / "docs" / "rules" / (id + ".md"))) << id;
        const std::string level = rule["defaultConfiguration"].value("level", "");
        EXPECT_TRUE(level == "error" || level == "warning" || level == "note") << id << ": " << level;
    }
    EXPECT_GE(ruleIds.size(), 20u);
    ASSERT_TRUE(run["artifacts"].is_array());
    for (const auto& artifact : run["artifacts"])
    {
        ASSERT_TRUE(artifact["location"]["uri"].is_string()) << artifact;
    }
    ASSERT_TRUE(run["results"].is_array());
    for (std::size_t i = 0; i < run["results"].size(); ++i)
    {
        const Json& result = run["results"][i];
        SCOPED_TRACE("results[" + std::to_string(i) + "]");
        ASSERT_TRUE(result["ruleId"].is_string());
        const std::string ruleId = result["ruleId"];
        EXPECT_EQ(ruleIds.count(ruleId), 1u) << ruleId;
        ASSERT_TRUE(result["ruleIndex"].is_number_unsigned());
        EXPECT_EQ(driver["rules"][result["ruleIndex"].get<std::size_t>()]["id"], ruleId);
        ASSERT_TRUE(result["message"]["text"].is_string());
        EXPECT_FALSE(result["message"]["text"].get<std::string>().empty());
        const std::string level = result.value("level", "");
        EXPECT_TRUE(level == "error" || level == "warning" || level == "note") << level;
        ASSERT_TRUE(result["locations"].is_array());
        ASSERT_FALSE(result["locations"].empty()) << ruleId;
        for (const auto& location : result["locations"])
        {
            const Json& physical = location["physicalLocation"];
            ASSERT_TRUE(physical["artifactLocation"]["uri"].is_string()) << location;
            if (physical["artifactLocation"].contains("index"))
            {
                std::size_t index = physical["artifactLocation"]["index"];
                ASSERT_LT(index, run["artifacts"].size());
                EXPECT_EQ(run["artifacts"][index]["location"]["uri"], physical["artifactLocation"]["uri"]);
            }
            if (physical.contains("region"))
            {
                ASSERT_TRUE(physical["region"]["startLine"].is_number_integer()) << location;
                EXPECT_GE(physical["region"]["startLine"].get<long long>(), 1);
            }
            if (location.contains("logicalLocations"))
            {
                for (const auto& logical : location["logicalLocations"])
                {
                    EXPECT_TRUE(logical["name"].is_string()) << logical;
                }
            }
            if (location.contains("message"))
            {
                EXPECT_TRUE(location["message"]["text"].is_string()) << location;
            }
        }
        EXPECT_TRUE(result["partialFingerprints"].is_object());
    }
}

std::vector<std::string> sampleArguments(const std::string& sample)
{
    if (sample == "e-explicit-slower-than-implicit")
    {
        return {(sampleDir(sample) / "explicit").string(), (sampleDir(sample) / "model.onnx").string()};
    }
    return {sampleDir(sample).string()};
}

} // namespace

TEST(Sarif, EverySampleGivesValidSarif)
{
    for (const char* sample : {"a-plugin-between-dq-and-q", "b-yolov8-split-concat-silu", "c-resnet-conv-maxpool",
                               "d-residual-add-concat-fp32", "e-explicit-slower-than-implicit"})
    {
        std::vector<std::string> arguments = {"diagnose", "--format", "sarif"};
        for (const auto& argument : sampleArguments(sample))
        {
            arguments.push_back(argument);
        }
        auto result = runCli(arguments);
        ASSERT_EQ(result.exitStatus, 0) << sample << ": " << result.err;
        Json log = Json::parse(result.out);
        expectValidSarif(log, sample);
        std::vector<std::string> jsonArguments = {"diagnose", "--format", "json"};
        for (const auto& argument : sampleArguments(sample))
        {
            jsonArguments.push_back(argument);
        }
        auto json = runCli(jsonArguments);
        EXPECT_EQ(log["runs"][0]["results"].size(), Json::parse(json.out)["findings"].size()) << sample;
        EXPECT_EQ(runCli(arguments).out, result.out) << sample << ": not deterministic";
    }
}

TEST(Sarif, ResultsAreLocatedInTheModelAndTheLayerList)
{
    fs::path dir = sampleDir("c-resnet-conv-maxpool");
    auto result = runCli({"diagnose", "--format", "sarif", (dir / "model.onnx").string(),
                          (dir / "layers.json").string(), (dir / "profile.json").string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    Json run = Json::parse(result.out)["runs"][0];
    const Json* blocked = nullptr;
    for (const auto& item : run["results"])
    {
        if (item["ruleId"] == "conv-act-pool-blocked")
        {
            blocked = &item;
        }
    }
    ASSERT_NE(blocked, nullptr);
    EXPECT_EQ((*blocked)["level"], "warning");
    EXPECT_NE((*blocked)["message"]["text"].get<std::string>().find("\nFix: add a Q/DQ pair on onnx::MaxPool_136"),
              std::string::npos);
    const Json& locations = (*blocked)["locations"];
    ASSERT_GE(locations.size(), 2u);
    // The model, with the user's nodes as logical locations.
    // Absolute paths are file:// URIs (the test's paths have no byte to escape).
    EXPECT_EQ(locations[0]["physicalLocation"]["artifactLocation"]["uri"], "file://" + (dir / "model.onnx").string());
    std::set<std::string> nodes;
    for (const auto& logical : locations[0]["logicalLocations"])
    {
        EXPECT_EQ(logical["kind"], "onnxNode");
        nodes.insert(logical["name"].get<std::string>());
    }
    EXPECT_EQ(nodes, (std::set<std::string>{"Conv_9", "MaxPool_12", "Relu_11"}));
    // The layer-info JSON at the line of the evidence (README: layers.json:52), with the layer it names.
    EXPECT_EQ(locations[1]["physicalLocation"]["artifactLocation"]["uri"], "file://" + (dir / "layers.json").string());
    EXPECT_EQ(locations[1]["physicalLocation"]["region"]["startLine"], 52);
    EXPECT_EQ(locations[1]["logicalLocations"][0]["name"], "MaxPool_12");
    EXPECT_EQ(locations[1]["logicalLocations"][0]["kind"], "engineLayer");
    // Input files are the analysis targets; the rule of every slug is listed, once.
    ASSERT_EQ(run["artifacts"].size(), 3u);
    EXPECT_EQ(run["artifacts"][0]["roles"], Json::array({"analysisTarget"}));
    EXPECT_EQ(run["tool"]["driver"]["rules"][(*blocked)["ruleIndex"].get<std::size_t>()]["helpUri"],
              "docs/rules/conv-act-pool-blocked.md");
}

// Without a model (engine files only) results are located in the layer list and the log; with a build log the
// evidence lines are regions of the log.
TEST(RealDataSarif, EngineOnlyAndLogInputsAreLocatedInTheirFiles)
{
    REQUIRE_SHARED();
    auto result = runCli({"diagnose", "--format", "sarif",
                          realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.graph.json").string(),
                          realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.json").string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    Json log = Json::parse(result.out);
    expectValidSarif(log, "trex-pt-resnet-a100-qat");
    ASSERT_FALSE(log["runs"][0]["results"].empty());

    result = runCli({"diagnose", "--format", "sarif", realdata("trex-notebooks-yolo-orin-trt852/trt.out").string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    log = Json::parse(result.out);
    expectValidSarif(log, "trex-notebooks-yolo-orin-trt852");
    bool lineInLog = false;
    for (const auto& item : log["runs"][0]["results"])
    {
        for (const auto& location : item["locations"])
        {
            lineInLog = lineInLog || (location["physicalLocation"]["artifactLocation"]["uri"].get<std::string>().find(
                                          "trt.out") != std::string::npos &&
                                      location["physicalLocation"].contains("region"));
        }
    }
    EXPECT_TRUE(lineInLog);
}

TEST(Sarif, OutputFolderHoldsReportSarif)
{
    fs::path dir = sampleDir("c-resnet-conv-maxpool");
    fs::path out = tempDir("sarif-out") / "report";
    auto written = runCli({"diagnose", "-o", out.string(), dir.string()});
    ASSERT_EQ(written.exitStatus, 0) << written.err;
    ASSERT_TRUE(fs::exists(out / "report.sarif"));
    EXPECT_EQ(readFile(out / "report.sarif"), runCli({"diagnose", "--format", "sarif", dir.string()}).out);
    expectValidSarif(Json::parse(readFile(out / "report.sarif")), "report.sarif");
}

TEST(Sarif, PathsBecomeUriReferences)
{
    fs::path dir = tempDir("sarif uri");
    fs::copy_file(sampleDir("c-resnet-conv-maxpool") / "model.onnx", dir / "my model#1.onnx");
    auto result = runCli({"diagnose", "--format", "sarif", (dir / "my model#1.onnx").string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    Json log = Json::parse(result.out);
    const std::string uri = log["runs"][0]["artifacts"][0]["location"]["uri"];
    EXPECT_EQ(uri.rfind("file:///", 0), 0u) << uri;
    EXPECT_NE(uri.find("sarif%20uri"), std::string::npos) << uri;
    EXPECT_NE(uri.find("my%20model%231.onnx"), std::string::npos) << uri;
}
