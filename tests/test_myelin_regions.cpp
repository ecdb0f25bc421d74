// Myelin regions (include/qdq/myelin_regions.h) and the myelin-gemm-ran-float rule: on the real TensorRT 10 Myelin
// engine of ivit-simple-mlp-qdq-trt10-myelin (its layer names, kernel kinds and GEMM precisions were read off the
// file by hand), on every real engine with Myelin layers, and on hand-built layer lists that differ from a
// triggering one in one fact.
#include "graph_builder.h"
#include "qdq/analysis.h"
#include "qdq/load_inputs.h"
#include "qdq/myelin_regions.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <deque>
#include <set>

using namespace qdq;
using namespace qdq::test;

namespace
{

EngineLayer withMetadata(EngineLayer record, const std::vector<std::string>& nodes, const std::string& tactic = "")
{
    record.hasMetadata = true;
    record.metadata.clear();
    for (std::size_t i = 0; i < nodes.size(); ++i)
    {
        record.metadata += (i == 0 ? "" : "\x1f") + std::string("[ONNX Layer: ") + nodes[i] + "]";
    }
    record.tacticName = tactic;
    return record;
}

//! A Myelin graph of two GEMM kernels, the second with quantized weights; its input type is the parameter.
EnginePlan mlpKernels(const std::string& secondGemmInput, const std::string& secondTactic)
{
    EnginePlan plan;
    plan.sourcePath = "mlp/layers.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(withMetadata(
        layer("__myl_MulMinMaxRounCast_myl0_1", "kgen", {{"x", "Float"}}, {{"q", "Int8"}}), {"/q_in/QuantizeLinear"}));
    plan.layers.push_back(withMetadata(layer("/fc1/Gemm_myl0_2", "gemm", {{"q", "Int8"}}, {{"h", "Int8"}}),
                                       {"/fc1/Gemm", "/q_in/DequantizeLinear", "/fc1/DequantizeLinear"},
                                       "sm80_xmma_gemm_i8i8_i8i32_f32_tn_n"));
    plan.layers.push_back(withMetadata(layer("/fc2/Gemm_myl0_3", "gemm", {{"h", secondGemmInput}}, {{"y", "Float"}}),
                                       {"/fc2/Gemm", "/fc2/DequantizeLinear", "/fc2/QuantizeLinear"}, secondTactic));
    return plan;
}

} // namespace

TEST(MyelinRegions, GraphNumberFromKernelNames)
{
    EXPECT_EQ(myelinGraphOf("__myl_MulMinMaxRounCast_myl0_1"), "myl0");
    EXPECT_EQ(myelinGraphOf("__myln_k_arg__bb1_5_myl0"), "myl0");
    EXPECT_EQ(myelinGraphOf("/fc2/Gemm_myl12_4"), "myl12");
    EXPECT_EQ(myelinGraphOf("node_linear [profile 1]_myl15_1"), "myl15");
    EXPECT_EQ(myelinGraphOf("/conv1/Conv_1"), "");
    EXPECT_EQ(myelinGraphOf("myl0_1"), "");
    EXPECT_EQ(myelinGraphOf("{ForeignNode[a...b]}"), "");
}

TEST(MyelinRegions, KernelsGroupByGraphAndGemmsTellThePrecision)
{
    const Report report = runDiagnose(std::nullopt, mlpKernels("Float", "sm86_xmma_gemm_f32f32_tf32f32_f32_nn_n"));
    static const EnginePlan plan = mlpKernels("Float", "sm86_xmma_gemm_f32f32_tf32f32_f32_nn_n");
    const auto regions = findMyelinRegions(plan, report.correlation);
    ASSERT_EQ(regions.size(), 1u);
    EXPECT_EQ(regions[0].id, "myl0");
    EXPECT_TRUE(regions[0].kernelsListed);
    EXPECT_EQ(regions[0].layers.size(), 3u);
    ASSERT_EQ(regions[0].gemms.size(), 2u);
    EXPECT_EQ(regions[0].gemms[0].precision, Precision::kINT8);
    EXPECT_EQ(regions[0].gemms[1].precision, Precision::kFP32);
    EXPECT_EQ(regions[0].precision, "FP32 and INT8 (2 GEMMs)");
}

TEST(RuleMyelinGemmRanFloat, QuantizedGemmWithFloatInputIsReported)
{
    const Report report = runDiagnose(std::nullopt, mlpKernels("Float", "sm86_xmma_gemm_f32f32_tf32f32_f32_nn_n"));
    const auto found = findingsOf(report, "myelin-gemm-ran-float");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].engineLayers, std::vector<std::string>{"/fc2/Gemm_myl0_3"});
    EXPECT_NE(found[0].message.find("ran FP32"), std::string::npos) << found[0].message;
    EXPECT_NE(found[0].message.find("/fc2/DequantizeLinear"), std::string::npos) << found[0].message;
}

TEST(RuleMyelinGemmRanFloat, QuantizedGemmThatRanInt8IsSilent)
{
    const Report report = runDiagnose(std::nullopt, mlpKernels("Int8", "sm80_xmma_gemm_i8i8_i8i32_f32_nn_n"));
    EXPECT_TRUE(findingsOf(report, "myelin-gemm-ran-float").empty());
}

TEST(RuleMyelinGemmRanFloat, FloatGemmWithoutQdqIsSilent)
{
    EnginePlan plan = mlpKernels("Float", "sm86_xmma_gemm_f32f32_tf32f32_f32_nn_n");
    plan.layers[2] = withMetadata(plan.layers[2], {"/fc2/Gemm"}, "sm86_xmma_gemm_f32f32_tf32f32_f32_nn_n");
    const Report report = runDiagnose(std::nullopt, plan);
    EXPECT_TRUE(findingsOf(report, "myelin-gemm-ran-float").empty());
}

TEST(RuleMyelinGemmRanFloat, ImplicitInt8OnEightReportsTheMatMulRegion)
{
    const auto dir = tempDir("myelin-implicit-int8");
    const auto write = [&](const std::string& flags, const std::string& version)
    {
        return writeFile(dir / ("build-" + version + flags + ".log"),
                         "&&&& RUNNING TensorRT.trtexec [TensorRT v" + version + "] # trtexec --onnx=vit.onnx " +
                             flags +
                             "\n"
                             "[08/04/2023-10:00:00] [V] [TRT] Engine Layer Information:\n"
                             "Layer(CaskConvolution): /patch/Conv, Tactic: 0x0000000000000001, input (Float[1,3,224,"
                             "224]) -> p (Int8[1,64,56,56])\n"
                             "Layer(Myelin): {ForeignNode[/blocks/attn/MatMul.../blocks/mlp/Add]}, Tactic: "
                             "0x0000000000000000, p (Int8[1,64,56,56]) -> y (Half[1,3136,64])\n");
    };
    const auto reported = [](const std::filesystem::path& log)
    {
        static std::deque<Inputs> kept; // the report holds views into its inputs
        Inputs& inputs = kept.emplace_back(loadFiles({log}));
        return findingsOf(diagnose(inputs), "myelin-gemm-ran-float");
    };
    const auto int8OnEight = reported(write("--int8 --fp16", "8601"));
    ASSERT_EQ(int8OnEight.size(), 1u);
    EXPECT_EQ(int8OnEight[0].engineLayers,
              std::vector<std::string>{"{ForeignNode[/blocks/attn/MatMul.../blocks/mlp/Add]}"});
    EXPECT_NE(int8OnEight[0].message.find("INT8 PTQ"), std::string::npos) << int8OnEight[0].message;
    // Near-identical: the same engine built without --int8, or by TensorRT 10.
    EXPECT_TRUE(reported(write("--fp16", "8601")).empty());
    EXPECT_TRUE(reported(write("--int8 --fp16", "100100")).empty());
}

TEST(RealDataMyelin, IvitTenEngineRegionAndItsFloatGemm)
{
    REQUIRE_SHARED();
    const Inputs inputs = loadFiles({realdata("ivit-simple-mlp-qdq-trt10-myelin/layer_info.json")});
    const Report report = diagnose(inputs);
    const auto regions = findMyelinRegions(*inputs.engine(), report.correlation);
    ASSERT_EQ(regions.size(), 1u);
    EXPECT_EQ(regions[0].id, "myl0");
    EXPECT_EQ(regions[0].layers.size(), 6u);
    EXPECT_EQ(regions[0].kernelKinds.at("gemm"), 2u);
    EXPECT_EQ(regions[0].kernelKinds.at("kgen"), 3u);
    EXPECT_EQ(regions[0].qdqNodes.size(), 10u);
    EXPECT_EQ(regions[0].gemmsByPrecision.at(Precision::kINT8), 1u);
    EXPECT_EQ(regions[0].gemmsByPrecision.at(Precision::kFP32), 1u);
    const auto found = findingsOf(report, "myelin-gemm-ran-float");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].engineLayers, std::vector<std::string>{"/fc2/Gemm_myl0_4"});
}

TEST(RealDataMyelin, EveryMyelinKernelIsMappedAndEveryRegionHasAPrecision)
{
    REQUIRE_SHARED();
    std::set<std::string> folders;
    for (const auto& entry : manifestEntries())
    {
        folders.insert(entry.folder);
    }
    std::size_t enginesWithMyelin = 0;
    for (const auto& folder : folders)
    {
        const auto result = runCli({"diagnose", "--format", "json", realdata(folder).string()});
        if (result.exitStatus != 0)
        {
            continue; // folders without an engine or with inputs diagnose refuses are tested elsewhere
        }
        const auto report = nlohmann::json::parse(result.out);
        if (report["myelin_regions"].empty())
        {
            continue;
        }
        ++enginesWithMyelin;
        std::set<std::string> myelinLayers;
        for (const auto& region : report["myelin_regions"])
        {
            EXPECT_FALSE(region["precision"].get<std::string>().empty()) << folder;
            for (const auto& name : region["layers"])
            {
                myelinLayers.insert(name.get<std::string>());
            }
        }
        for (const auto& layer : report["layers"])
        {
            if (myelinLayers.count(layer["name"].get<std::string>()) != 0)
            {
                EXPECT_NE(layer["state"], "unattributed") << folder << ": " << layer["name"];
            }
        }
    }
    // ivit, dmt, as, profilingverbosity, fuzzylabs x2, detr, yolo, blogdoc yolov8: counted by hand from the files.
    EXPECT_GE(enginesWithMyelin, 8u);
}
