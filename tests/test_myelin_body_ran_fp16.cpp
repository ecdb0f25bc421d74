// myelin-body-ran-fp16: the weakly typed twin of fp32-graph-strongly-typed (rules/myelin_body_ran_fp16.cpp). A Myelin
// region that absorbed Q/DQ nodes and ran every kernel FP16 under --fp16 --int8 leads the root causes; the same engine
// with one INT8 kernel, strongly typed, or without --int8 does not trigger.
#include "graph_builder.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

using namespace qdq;
using namespace qdq::test;

namespace
{

constexpr const char* kRule = "myelin-body-ran-fp16";

//! A conv, then a Myelin region of three kernels that executes a Q/DQ pair and a MatMul (by Metadata).
EnginePlan engine(const std::string& gemmInput)
{
    std::vector<EngineLayer> layers;
    layers.push_back(layer("conv", "CaskConvolution", {{"x", "Half"}}, {{"c", "Half"}}));
    layers.push_back(layer("__myl_MulMinMaxRounCast_myl0_0", "kgen", {{"c", "Half"}}, {{"q", "Half"}}));
    layers.push_back(layer("/fc/MatMul_myl0_1", "gemm", {{"q", gemmInput}}, {{"m", "Half"}}));
    layers.push_back(layer("__myl_Add_myl0_2", "kgen", {{"m", "Half"}}, {{"y", "Half"}}));
    for (EngineLayer& each : layers)
    {
        for (auto* tensors : {&each.inputs, &each.outputs})
        {
            for (EngineTensor& tensor : *tensors)
            {
                tensor.dimensions = {1, 256, 768}; // the bytes moved time the saving
            }
        }
    }
    layers[1].hasMetadata = true;
    layers[1].metadata = "[ONNX Layer: /fc/input_quantizer/QuantizeLinear]\x1f"
                         "[ONNX Layer: /fc/input_quantizer/DequantizeLinear]";
    layers[2].hasMetadata = true;
    layers[2].metadata = "[ONNX Layer: /fc/MatMul]";
    layers[3].hasMetadata = true;
    layers[3].metadata = "[ONNX Layer: /fc/Add]";
    return planOf(std::move(layers), {"x", "y"});
}

Report diagnoseWith(const BuildModeRequest& request, const EnginePlan& plan, std::optional<Profile> profile = {})
{
    AnalysisOptions options;
    options.buildMode = request;
    return runDiagnose(std::nullopt, plan, profile, options);
}

const BuildModeRequest kWeakTen{"10.8", Typing::kWeak, ""};

} // namespace

TEST(RuleMyelinBodyRanFp16, WeakBuildWhoseQdqRegionRanFp16LeadsTheCauses)
{
    const EnginePlan plan = engine("Half");
    Profile profile = profileFor(plan, 0.01);
    profile.entries[0].averageMs = 0.001; // the conv is cheap: the region holds the time
    const Report report = diagnoseWith(kWeakTen, plan, profile);
    const auto found = findingsOf(report, kRule);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].engineLayers.size(), 3u);
    EXPECT_NE(found[0].message.find("ran every kernel in FP16"), std::string::npos) << found[0].message;
    EXPECT_NE(found[0].fix.find("--stronglyTyped"), std::string::npos);
    ASSERT_FALSE(report.causes.empty());
    EXPECT_EQ(report.findings[report.causes[0].findings.front()].rule, kRule);
    ASSERT_TRUE(found[0].savingMs.has_value());
    EXPECT_GT(*found[0].savingMs, 0.0);
}

TEST(RuleMyelinBodyRanFp16, SilentWhenAKernelRanInt8StronglyTypedOrWithoutInt8)
{
    EXPECT_TRUE(findingsOf(diagnoseWith(kWeakTen, engine("Int8")), kRule).empty()); // its Q/DQ were used
    EXPECT_TRUE(findingsOf(diagnoseWith(BuildModeRequest{"10.8", Typing::kStrong, ""}, engine("Half")), kRule).empty());
    EXPECT_TRUE(findingsOf(diagnoseWith(BuildModeRequest{"11", std::nullopt, ""}, engine("Half")), kRule).empty());
    EXPECT_FALSE(findingsOf(diagnoseWith(kWeakTen, engine("Half")), kRule).empty());
}
