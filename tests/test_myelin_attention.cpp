// Fused attention in Myelin regions, told from kernel names (include/qdq/myelin_kernels.h): on the real TensorRT 10
// engines whose layer lists hold `_gemm_mha_v2` kernels (repo-isaacpruett-rtdetr-r50-myelin-trt10, names only;
// lix-engine-analysis-dmt-fp16, detailed), and on hand-built regions that differ from a fused one in one fact.
#include "attention_builder.h"
#include "graph_builder.h"
#include "qdq/load_inputs.h"
#include "qdq/myelin_kernels.h"
#include "qdq/myelin_regions.h"
#include "test_support.h"

#include <gtest/gtest.h>

using namespace qdq;
using namespace qdq::test;

namespace
{

EngineLayer kernel(const std::string& name, const std::string& type, const std::string& tactic,
                   const std::vector<std::string>& nodes)
{
    EngineLayer record = layer(name, type, {{name + "_in", "Half"}}, {{name + "_out", "Half"}});
    record.tacticName = tactic;
    record.hasMetadata = !nodes.empty();
    for (std::size_t i = 0; i < nodes.size(); ++i)
    {
        record.metadata += (i == 0 ? "" : "\x1f") + std::string("[ONNX Layer: ") + nodes[i] + "]";
    }
    return record;
}

EngineLayer namedOnly(const std::string& name)
{
    EngineLayer record;
    record.setName(name);
    return record;
}

//! The Myelin graph of one attention (/attn/MatMul -> /attn/Softmax -> /attn/MatMul_1): one fused kernel, or the
//! same nodes as two GEMM kernels and a Softmax kernel.
EnginePlan attentionKernels(bool fused)
{
    std::vector<EngineLayer> layers;
    layers.push_back(kernel("__myl_MulTra_myl0_0", "kgen", "__myl_MulTra", {"/attn/scale_q", "/attn/k_transpose"}));
    if (fused)
    {
        layers.push_back(kernel("_gemm_mha_v2_myl0_1", "kgen", "_gemm_mha_v2_0x0f9cc5454dc7a7d5d62f1c1f117fc060",
                                {"/attn/MatMul", "/attn/Softmax", "/attn/MatMul_1"}));
    }
    else
    {
        layers.push_back(
            kernel("/attn/MatMul_myl0_1", "gemm", "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n", {"/attn/MatMul"}));
        layers.push_back(kernel("__myl_MaxSubExpSumDiv_myl0_2", "kgen", "__myl_MaxSubExpSumDiv", {"/attn/Softmax"}));
        layers.push_back(
            kernel("/attn/MatMul_1_myl0_3", "gemm", "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n", {"/attn/MatMul_1"}));
    }
    return planOf(std::move(layers), {"/attn_q", "/attn_k", "/attn_v"});
}

OnnxGraph attentionGraph()
{
    GraphBuilder g;
    AttentionShape shape;
    shape.quantized = false;
    shape.softmaxOutputQuantized = false;
    addAttention(g, "/attn", shape);
    return g.build();
}

} // namespace

TEST(MyelinKernels, StemAndAttentionMarkers)
{
    EXPECT_EQ(myelinKernelStem("_gemm_mha_v2_myl56_8"), "_gemm_mha_v2");
    EXPECT_EQ(myelinKernelStem("dummy_shape_call__mye5965_0_myl56_0"), "dummy_shape_call__mye5965_0");
    EXPECT_EQ(myelinKernelStem("/conv1/Conv"), "/conv1/Conv");
    EXPECT_TRUE(isFusedAttentionKernel(namedOnly("_gemm_mha_v2_myl109_47")));
    EXPECT_TRUE(isFusedAttentionKernel(namedOnly("__mye8037_gemm_mha_v2")));
    EXPECT_TRUE(isFusedAttentionKernel(
        kernel("__mye12_myl0_4", "kgen", "fmha_v2_flash_attention_fp16_64_32_S_qkv_64_sm80", {})));
    // A kernel named after the user's nodes is not a fused kernel, whatever the nodes are called.
    EXPECT_FALSE(isFusedAttentionKernel(namedOnly("/blocks/self_mha/MatMul_myl0_3")));
    EXPECT_FALSE(isFusedAttentionKernel(namedOnly("__myl_ResMaxSubExpSumDiv_myl109_54")));
    EXPECT_FALSE(isFusedAttentionKernel(namedOnly("/attn/Softmax")));
}

TEST(MyelinKernels, GemmKernelsByTypeAndByName)
{
    EXPECT_TRUE(isMyelinGemmKernel(kernel("__mye6723_unroll0_myl0_3", "gemm", "", {})));
    EXPECT_TRUE(isMyelinGemmKernel(kernel("__myl_Fc_myl0_7", "kgen", "__myl_Fc", {})));
    EXPECT_TRUE(isMyelinGemmKernel(namedOnly("_gemm_mha_v2_myl56_8")));
    EXPECT_TRUE(isMyelinGemmKernel(namedOnly("/model/encoder/encoder_0/layers_0/self_attn/MatMul_2_myl56_4")));
    EXPECT_TRUE(isMyelinGemmKernel(namedOnly("/a/MatMul_1+/a/MatMul_myl56_6")));
    EXPECT_TRUE(isMyelinGemmKernel(namedOnly("/model/encoder/encoder_0/layers_0/self_attn/Gemm_myl56_10")));
    // Near-identical: a names-only kernel named after a MatMul and another node; a typed kgen named after a MatMul.
    EXPECT_FALSE(isMyelinGemmKernel(namedOnly("/a/MatMul+/a/Add_myl56_6")));
    EXPECT_FALSE(isMyelinGemmKernel(kernel("/a/MatMul_myl0_2", "kgen", "__myl_Tra", {})));
    EXPECT_FALSE(isMyelinGemmKernel(namedOnly("__myl_TraMov_myl109_20")));
    EXPECT_FALSE(isMyelinGemmKernel(namedOnly("__mye5907_myl56_2")));
}

TEST(MyelinAttention, FusedKernelIsTheEvidenceWithOrWithoutTheModel)
{
    const EnginePlan plan = attentionKernels(true);
    for (const bool withModel : {false, true})
    {
        const Report report = withModel ? runDiagnose(attentionGraph(), plan) : runDiagnose(std::nullopt, plan);
        ASSERT_EQ(report.correlation.myelinRegions.size(), 1u);
        const MyelinRegion& region = report.correlation.myelinRegions[0];
        ASSERT_TRUE(region.attentionFused.has_value()) << withModel;
        EXPECT_TRUE(*region.attentionFused);
        ASSERT_EQ(region.attentionKernels.size(), 1u);
        EXPECT_EQ(region.attentionKernels[0], 1u);
        EXPECT_NE(region.attention.find("_gemm_mha_v2_myl0_1"), std::string::npos) << region.attention;
        EXPECT_NE(region.attention.find("/attn/Softmax"), std::string::npos) << region.attention;
        EXPECT_NE(region.precision, "no GEMM");
    }
}

TEST(MyelinAttention, SeparateGemmAndSoftmaxKernelsAreNotFused)
{
    const EnginePlan plan = attentionKernels(false);
    const Report withModel = runDiagnose(attentionGraph(), plan);
    ASSERT_EQ(withModel.correlation.myelinRegions.size(), 1u);
    const MyelinRegion& region = withModel.correlation.myelinRegions[0];
    ASSERT_TRUE(region.attentionFused.has_value());
    EXPECT_FALSE(*region.attentionFused);
    EXPECT_TRUE(region.attentionKernels.empty());
    EXPECT_NE(region.attention.find("/attn/Softmax"), std::string::npos) << region.attention;
    EXPECT_EQ(region.gemms.size(), 2u);
    // Without the model nothing says the region holds an attention: no claim either way.
    const Report alone = runDiagnose(std::nullopt, plan);
    ASSERT_EQ(alone.correlation.myelinRegions.size(), 1u);
    EXPECT_FALSE(alone.correlation.myelinRegions[0].attentionFused.has_value());
    EXPECT_TRUE(alone.correlation.myelinRegions[0].attention.empty());
}

TEST(RealDataMyelinAttention, RtdetrRegionsWithMhaKernelsReportFusedAttention)
{
    REQUIRE_SHARED();
    const Inputs inputs = loadFiles({realdata("repo-isaacpruett-rtdetr-r50-myelin-trt10/rtdetr.layer_info.json")});
    const Report report = diagnose(inputs);
    const EnginePlan& plan = *inputs.engine();
    const auto& regions = report.correlation.myelinRegions;
    // Read off the file by hand: 8 Myelin graphs (myl56, myl109, myl128 ... myl138), one `_gemm_mha_v2` kernel in
    // each but the last (myl138, the final decoder head).
    ASSERT_EQ(regions.size(), 8u);
    std::size_t fused = 0;
    for (const MyelinRegion& region : regions)
    {
        std::vector<std::size_t> mhaLayers;
        for (std::size_t layer : region.layers)
        {
            if (plan.layers[layer].name.starts_with("_gemm_mha_v2_"))
            {
                mhaLayers.push_back(layer);
            }
        }
        EXPECT_NE(region.precision, "no GEMM") << region.id;
        EXPECT_FALSE(region.gemms.empty()) << region.id;
        if (mhaLayers.empty())
        {
            EXPECT_FALSE(region.attentionFused.value_or(false)) << region.id;
            EXPECT_EQ(region.attention.find("fused ("), std::string::npos) << region.id << ": " << region.attention;
            continue;
        }
        ++fused;
        ASSERT_TRUE(region.attentionFused.has_value()) << region.id;
        EXPECT_TRUE(*region.attentionFused) << region.id;
        EXPECT_EQ(region.attentionKernels, mhaLayers) << region.id;
        EXPECT_NE(region.attention.find(plan.layers[mhaLayers[0]].name), std::string::npos) << region.attention;
    }
    EXPECT_EQ(fused, 7u);
    EXPECT_EQ(regions.back().id, "myl138");
    EXPECT_FALSE(regions.back().attentionFused.has_value());
}

TEST(RealDataMyelinAttention, DetailedTenEngineNamesTheNodesItsMhaKernelExecutes)
{
    REQUIRE_SHARED();
    const Inputs inputs = loadFiles({realdata("lix-engine-analysis-dmt-fp16/layers_tofp16.json")});
    const Report report = diagnose(inputs);
    const EnginePlan& plan = *inputs.engine();
    std::size_t kernels = 0;
    for (const MyelinRegion& region : report.correlation.myelinRegions)
    {
        for (std::size_t layer : region.attentionKernels)
        {
            ++kernels;
            EXPECT_EQ(plan.layers[layer].type, "kgen");
            EXPECT_TRUE(plan.layers[layer].tacticName.starts_with("_gemm_mha_v2_0x")) << plan.layers[layer].name;
        }
        if (!region.attentionKernels.empty())
        {
            EXPECT_TRUE(region.attentionFused.value_or(false)) << region.id;
            EXPECT_NE(region.attention.find("Softmax"), std::string::npos) << region.attention;
        }
    }
    // 34 layers named `_gemm_mha_v2_myl8_*` in the file (counted with grep).
    EXPECT_EQ(kernels, 34u);
}
