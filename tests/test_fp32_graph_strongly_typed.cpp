// fp32-graph-strongly-typed: a strongly typed engine whose time goes to FP32 layers because the graph is FP32. On the
// real TensorRT 11.1 H100 build of cookbook111-mnist-fp32-trtexec-h100 (log and layer JSON), and on hand-built engines
// that differ from a triggering one in one fact (FP16 layers taking most of the time, weak typing, a Q/DQ layer).
#include "graph_builder.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <regex>

using namespace qdq;
using namespace qdq::test;

namespace
{

constexpr const char* kRule = "fp32-graph-strongly-typed";

EngineLayer computeLayer(const std::string& name, const std::string& type, const std::string& precision)
{
    return layer(name, type, {{name + "_in", precision}}, {{name + "_out", precision}});
}

//! Three convolutions and a gemm: the first `fp32` of them FP32, the rest FP16.
EnginePlan cnn(std::size_t fp32)
{
    std::vector<EngineLayer> layers;
    const std::vector<std::pair<std::string, std::string>> kinds = {{"conv1", "CaskConvolution"},
                                                                    {"conv2", "CaskConvolution"},
                                                                    {"conv3", "CaskConvolution"},
                                                                    {"fc_myl0_0", "gemm"}};
    for (std::size_t i = 0; i < kinds.size(); ++i)
    {
        layers.push_back(computeLayer(kinds[i].first, kinds[i].second, i < fp32 ? "Float" : "Half"));
    }
    return planOf(std::move(layers), {"conv1_in", "fc_myl0_0_out"});
}

Report diagnoseWith(const BuildModeRequest& request, const EnginePlan& plan, const std::optional<Profile>& profile = {})
{
    AnalysisOptions options;
    options.buildMode = request;
    return runDiagnose(std::nullopt, plan, profile, options);
}

const BuildModeRequest kEleven{"11", std::nullopt, ""};

} // namespace

TEST(RuleFp32GraphStronglyTyped, FloatEngineOfElevenLeadsWithTheGraphFix)
{
    const Report report = diagnoseWith(kEleven, cnn(4));
    const auto found = findingsOf(report, kRule);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].engineLayers.size(), 4u);
    EXPECT_NE(found[0].message.find("4 of its 4 float compute layers run FP32"), std::string::npos) << found[0].message;
    EXPECT_NE(found[0].fix.find("FP16"), std::string::npos);
    // No precision flag: TensorRT 11 has none.
    const std::regex flag("--(fp16|int8|best|bf16|stronglyTyped)\\b");
    EXPECT_FALSE(std::regex_search(found[0].message + found[0].fix, flag)) << found[0].fix;
    ASSERT_FALSE(report.causes.empty());
    EXPECT_EQ(report.findings[report.causes[0].findings.front()].rule, kRule);
}

TEST(RuleFp32GraphStronglyTyped, ByTimeWithAProfile)
{
    // Three FP32 layers, one FP16 gemm: by count FP32 leads; the profile says the FP16 gemm takes most of the time.
    const EnginePlan plan = cnn(3);
    Profile profile = profileFor(plan, 0.001);
    profile.entries.back().averageMs = 0.05;
    EXPECT_TRUE(findingsOf(diagnoseWith(kEleven, plan, profile), kRule).empty());
    const auto found = findingsOf(diagnoseWith(kEleven, plan), kRule);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_NE(found[0].message.find("no profile: counted by layers"), std::string::npos) << found[0].message;
}

TEST(RuleFp32GraphStronglyTyped, SilentWhenFp16LeadsWeaklyTypedOrQuantized)
{
    EXPECT_TRUE(findingsOf(diagnoseWith(kEleven, cnn(1)), kRule).empty()); // FP16 layers are the most
    EXPECT_TRUE(findingsOf(diagnoseWith(BuildModeRequest{"10.8", Typing::kWeak, ""}, cnn(4)), kRule).empty());
    EnginePlan quantized = cnn(4);
    quantized.layers[1] = layer("conv2", "CaskConvolution", {{"conv2_in", "Int8"}}, {{"conv2_out", "Float"}});
    EXPECT_TRUE(findingsOf(diagnoseWith(kEleven, quantized), kRule).empty()); // fp32-island's case
}

TEST(RealDataFp32Graph, ElevenOneH100LogAndLayersLeadWithTheFp32GraphCause)
{
    REQUIRE_SHARED();
    const auto dir = realdata("cookbook111-mnist-fp32-trtexec-h100");
    const auto result =
        runCli({"diagnose", (dir / "result-04.log").string(), (dir / "model-trained-exportLayerInfo.log").string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    const std::string& text = result.out;
    // The first finding is the first root cause's (a "Root causes" summary precedes it when there are several).
    const auto causes = text.find("Root causes");
    const auto first = text.find("1. [", causes == std::string::npos ? 0 : causes);
    ASSERT_NE(first, std::string::npos) << text;
    const auto firstLine = text.substr(first, text.find('\n', first) - first);
    EXPECT_NE(firstLine.find(kRule), std::string::npos) << firstLine;
    EXPECT_NE(text.find("make the graph FP16"), std::string::npos);
    // TensorRT 11 has no --fp16/--int8/--best, and the log's command line shows no --stronglyTyped nor --noTF32
    // (../shared/realdata/cookbook111-mnist-fp32-trtexec-h100/result-04.log:1).
    const std::regex flag("--(fp16|int8|best|bf16|stronglyTyped|noTF32)\\b");
    std::smatch match;
    EXPECT_FALSE(std::regex_search(text, match, flag)) << match.str() << " in\n" << text;
    const auto json = runCli({"diagnose", "--format", "json", (dir / "result-04.log").string(),
                              (dir / "model-trained-exportLayerInfo.log").string()});
    ASSERT_EQ(json.exitStatus, 0) << json.err;
    EXPECT_FALSE(std::regex_search(json.out, match, flag)) << match.str(); // the fixes of every finding included
}
