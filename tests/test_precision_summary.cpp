// The precision summary (precision_summary.h): kernel classification, layer kinds and precision labels on hand-made
// layers; on the real engines, groupings that add up to the profile total, and the figures of the TREx ResNet18 A100
// QAT engine read off its files by hand.
#include "qdq/analysis.h"
#include "qdq/load_inputs.h"
#include "qdq/precision_summary.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace qdq;
using namespace qdq::test;

namespace
{

const PrecisionSummary::Group* group(const std::vector<PrecisionSummary::Group>& groups, const std::string& name)
{
    for (const auto& g : groups)
    {
        if (g.name == name)
        {
            return &g;
        }
    }
    return nullptr;
}

//! The engine files of MANIFEST.tsv (layer lists, profiles, logs), and the TREx pairs of layer list and profile.
std::vector<std::vector<std::filesystem::path>> realEngines()
{
    std::vector<std::vector<std::filesystem::path>> sets;
    for (const ManifestEntry& entry : manifestEntries())
    {
        if (entry.kind != "timing-json" && entry.kind != "metadata-json" && entry.kind != "onnx")
        {
            sets.push_back({realdata(entry.path())});
        }
    }
    for (const char* set :
         {"trex-pt-resnet-a100-fp32/resnet", "trex-pt-resnet-a100-fp16/resnet", "trex-pt-resnet-a100-qat/resnet-qat",
          "trex-pt-resnet-a100-qat-residual/resnet-qat-residual",
          "trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap", "trex-tests-mobilenet-qat/mobilenet.qat",
          "trex-tests-mobilenet-qat-2022-04/mobilenet.qat"})
    {
        std::string base = std::string(set) + ".onnx.engine.";
        sets.push_back({realdata(base + "graph.json"), realdata(base + "profile.json")});
    }
    sets.push_back(
        {realdata("lix-engine-analysis-as-fp16/layers_.json"), realdata("lix-engine-analysis-as-fp16/profile_.json")});
    sets.push_back({realdata("trex-notebooks-yolo-orin-trt852/layer_info.json"),
                    realdata("trex-notebooks-yolo-orin-trt852/profile.json")});
    return sets;
}

} // namespace

TEST(PrecisionSummary, KernelNamesTellTensorCores)
{
    // Names from the real layer lists (../shared/realdata), one per family.
    EXPECT_EQ(
        classifyKernel("sm80_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_"
                       "vect_c_32_tilesize96x64x64_stage3_warpsize2x2x1_g1_tensor16x8x32_t1r3s3")
            .use,
        TensorCoreUse::kYes);
    EXPECT_EQ(classifyKernel("cutlass3x_sm100_tensorop_s128x128x16gemm_f16_f16_f32_f16_f16_128x128x64_0_nnn_align8_1sm_"
                             "bias_f16_relu")
                  .marker,
              "tensorop");
    EXPECT_EQ(classifyKernel("turing_fp16_i8816cudnn_int8_128x128_ldg16_relu_small_nt_v1").use, TensorCoreUse::kYes);
    EXPECT_EQ(classifyKernel("ampere_h16816cudnn_256x64_ldg8_relu_exp_stages_64x3_small_nhwc_tn_v1").use,
              TensorCoreUse::kYes);
    EXPECT_EQ(classifyKernel("trt_turing_cutlass_image_network_first_layer_hmma_fprop_f16f16f32_nhwc_nhwc_k64r7s7c4_"
                             "stride2x2")
                  .use,
              TensorCoreUse::kYes);
    const KernelClass dp4a = classifyKernel("ampere_fp32_icudnn_int8x4_128x64_relu_medium_nn_v1");
    EXPECT_EQ(dp4a.use, TensorCoreUse::kNo);
    EXPECT_EQ(dp4a.marker, "int8x4");
    EXPECT_EQ(classifyKernel("sm70_xmma_fprop_conv1x1_i8f32_f32_f32_nchw_vect_c_4kcrs_vect_c_4_nchw_simt_small_batch_"
                             "bias_relu")
                  .use,
              TensorCoreUse::kNo);
    EXPECT_EQ(classifyKernel("ampere_scudnn_128x64_relu_xregs_large_nn_v1").use, TensorCoreUse::kNo);
    EXPECT_EQ(classifyKernel("sm50_xmma_cublas_gemvx_f16f16_f32_f32_tn_n_int32_unit_n_launch_param4x32x32_strided_"
                             "unit_stride")
                  .marker,
              "gemv");
    EXPECT_EQ(classifyKernel("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8_stage3_"
                             "warpsize1x2x1_g1_ffma_t1r5s5_aligna4_alignc4")
                  .use,
              TensorCoreUse::kNo);
    // Myelin's generated kernels and reformats say neither.
    EXPECT_EQ(classifyKernel("__myl_CastMeanSubMulMeanAddSqrtDivMulCastMulAdd_0x8e68f17d535dbd1b96a53e1c67667168").use,
              TensorCoreUse::kUnknown);
    EXPECT_EQ(classifyKernel("").use, TensorCoreUse::kUnknown);
}

TEST(PrecisionSummary, LayerKindsAndPrecisionLabels)
{
    EngineLayer conv;
    conv.name = "conv1.weight + QuantizeLinear_7 + Conv_9";
    conv.type = "CaskConvolution";
    conv.weightsPrecision = Precision::kINT8;
    EXPECT_EQ(layerKind(conv, LayerState::kMapped), "convolution");
    EXPECT_EQ(layerPrecisionLabel(conv, LayerState::kMapped), "INT8");
    EngineLayer deconv;
    deconv.type = "GemmDeconvolution";
    EXPECT_EQ(layerKind(deconv, LayerState::kMapped), "deconvolution");
    EngineLayer gemm;
    gemm.type = "gemm";
    EXPECT_EQ(layerKind(gemm, LayerState::kMapped), "gemm");
    EXPECT_TRUE(isMatrixKind(layerKind(gemm, LayerState::kMapped)));

    EngineLayer quantize;
    quantize.name = "QuantizeLinear_2";
    quantize.type = "Reformat";
    EngineTensor in;
    in.precision = Precision::kFP32;
    EngineTensor out;
    out.precision = Precision::kINT8;
    quantize.inputs = {in};
    quantize.outputs = {out};
    EXPECT_EQ(layerKind(quantize, LayerState::kInsertedQdq), "quantize/dequantize");
    EXPECT_EQ(layerPrecisionLabel(quantize, LayerState::kInsertedQdq), "FP32->INT8");
    // A float layer fed INT8 computes from INT8 data.
    EXPECT_EQ(layerPrecisionLabel(quantize, LayerState::kMapped), "FP32");
    EngineLayer copy;
    copy.name = "/neck/Concat_/neck/Resize_output_0_clone_0 copy";
    copy.type = "Reformat";
    EXPECT_EQ(layerKind(copy, LayerState::kInsertedReformat), "copy");
    EngineLayer namesOnly;
    namesOnly.name = "Conv_9";
    EXPECT_EQ(layerKind(namesOnly, LayerState::kMapped), "unknown");
    EXPECT_EQ(layerPrecisionLabel(namesOnly, LayerState::kMapped), "unknown");
}

TEST(RealDataPrecisionSummary, AddsUpToTheProfileOnEveryRealEngine)
{
    REQUIRE_SHARED();
    std::size_t timed = 0;
    for (const auto& files : realEngines())
    {
        SCOPED_TRACE(files.front().string());
        Inputs inputs = loadFiles(files);
        Report report = diagnose(inputs);
        PrecisionSummary summary = summarizePrecision(report, inputs);
        const EnginePlan* plan = inputs.engine();
        const std::size_t layers = plan == nullptr ? 0 : plan->layers.size();
        EXPECT_EQ(summary.layers, layers);
        for (const auto* grouping : {&summary.byPrecision, &summary.byKind})
        {
            std::size_t count = 0;
            double ms = 0.0;
            for (const auto& g : *grouping)
            {
                count += g.layers;
                ms += g.ms;
            }
            EXPECT_EQ(count, layers);
            if (inputs.timings() != nullptr)
            {
                EXPECT_NEAR(ms, inputs.timings()->totalAverageMs(), 1e-9 * (1.0 + ms));
            }
        }
        const auto& cores = summary.tensorCores;
        EXPECT_EQ(cores.yesLayers + cores.noLayers + cores.unknownLayers, layers);
        if (inputs.timings() == nullptr)
        {
            EXPECT_FALSE(summary.hasTimings);
            continue;
        }
        ++timed;
        EXPECT_TRUE(summary.hasTimings);
        EXPECT_NEAR(summary.totalMs, inputs.timings()->totalAverageMs(), 1e-12);
        EXPECT_NEAR(cores.yesMs + cores.noMs + cores.unknownMs, summary.totalMs, 1e-9 * (1.0 + summary.totalMs));
        const auto& int8 = summary.int8;
        EXPECT_EQ(int8.int8 + int8.notInt8 + int8.unknown, int8.quantized);
    }
    EXPECT_GE(timed, 15u);
}

TEST(RealDataPrecisionSummary, TrexQatFigures)
{
    REQUIRE_SHARED();
    Inputs inputs = loadFiles({realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.graph.json"),
                               realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.json")});
    Report report = diagnose(inputs);
    PrecisionSummary summary = summarizePrecision(report, inputs);
    EXPECT_EQ(summary.layers, 37u);
    // The ten QuantizeLinear layers of the profile (0.232448 ms, TrexQatStandaloneQuantizeLayersWithTheirCost).
    const auto* qdq = group(summary.byKind, "quantize/dequantize");
    ASSERT_NE(qdq, nullptr);
    EXPECT_EQ(qdq->layers, 10u);
    EXPECT_NEAR(qdq->ms, 0.232448, 1e-9);
    // 20 CaskConvolution layers and the fc (a CaskConvolution too), all with INT8 weights.
    const auto* conv = group(summary.byKind, "convolution");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->layers, 21u);
    // The stem conv is the one CUDA-core kernel (ampere_fp32_icudnn_int8x4_...): 0.201728 ms in the profile.
    EXPECT_EQ(summary.tensorCores.noLayers, 1u);
    EXPECT_NEAR(summary.tensorCores.noMs, 0.201728, 1e-9);
    EXPECT_EQ(summary.tensorCores.matrixLayers, 21u);
    EXPECT_EQ(summary.tensorCores.matrixNoLayers, 1u);
    ASSERT_TRUE(summary.tensorCores.share.has_value());
    EXPECT_GT(*summary.tensorCores.share, 0.0);
    EXPECT_LT(*summary.tensorCores.share, 1.0);
    // Without the model: the 21 layers that folded a weight Quantize; every one reads INT8.
    EXPECT_EQ(summary.int8.basis, "engine");
    EXPECT_EQ(summary.int8.quantized, 21u);
    EXPECT_EQ(summary.int8.int8, 21u);
    ASSERT_TRUE(summary.int8.share.has_value());
    EXPECT_DOUBLE_EQ(*summary.int8.share, 1.0);
}

TEST(RealDataPrecisionSummary, MissingKernelNamesAreSaid)
{
    REQUIRE_SHARED();
    // The TREx 8.2 MobileNet layer list names some kernels; the yolo-orin one has names only.
    Inputs namesOnly = loadFiles({realdata("trex-notebooks-yolo-orin-trt852/layer_info.json")});
    PrecisionSummary summary = summarizePrecision(diagnose(namesOnly), namesOnly);
    EXPECT_FALSE(summary.tensorCores.share.has_value());
    EXPECT_NE(summary.tensorCores.evidence.find("--profilingVerbosity=detailed"), std::string::npos);
    EXPECT_NE(summary.tensorCores.evidence.find("names only"), std::string::npos);
    const auto* unknown = group(summary.byKind, "unknown");
    ASSERT_NE(unknown, nullptr);
}

TEST(RealDataPrecisionSummary, LogKernelIsTheChoiceWithTheLayersTactic)
{
    REQUIRE_SHARED();
    // The YOLO/Orin log times the stem in two format combinations: the DP4A tactic 0xb29abdd00304c881 the engine runs
    // (trt.out:8299, 12756) and the CHW32 tensor-core tactic 0x6986b0c6a136276e (trt.out:8316), logged after it. The
    // stem counts on CUDA cores, as the downsample conv of layer2 (ampere_fp32_icudnn_int8x4_..., trt.out:8767).
    const std::string dir = "trex-notebooks-yolo-orin-trt852/";
    Inputs inputs =
        loadFiles({realdata(dir + "trt.out"), realdata(dir + "layer_info.json"), realdata(dir + "profile.json")});
    PrecisionSummary summary = summarizePrecision(diagnose(inputs), inputs);
    EXPECT_EQ(summary.tensorCores.matrixLayers, 43u);
    EXPECT_EQ(summary.tensorCores.matrixNoLayers, 2u);
    // The stem's 59.7861 ms and the downsample conv's 3.63039 ms (averageMs in profile.json) are in the CUDA-core time.
    EXPECT_GT(summary.tensorCores.noMs, 59.7861 + 3.63039 - 1e-6);
}

TEST(PrecisionSummary, SampleReportsCarryIt)
{
    // Sample c (model, layer list, profile; TensorRT 8.2 formats, no TacticName).
    const auto dir = std::filesystem::path(QDQ_SOURCE_DIR) / "samples" / "c-resnet-conv-maxpool";
    Inputs inputs = loadFiles({dir / "model.onnx", dir / "layers.json", dir / "profile.json"});
    Report report = diagnose(inputs);
    PrecisionSummary summary = summarizePrecision(report, inputs);
    // The profile's seven averageMs add up to 2.6702 ms.
    EXPECT_NEAR(summary.totalMs, 2.6702, 1e-9);
    // Conv_9, Conv_22 and Conv_34 read a DequantizeLinear and run INT8.
    EXPECT_EQ(summary.int8.basis, "model");
    EXPECT_EQ(summary.int8.quantized, 3u);
    EXPECT_EQ(summary.int8.int8, 3u);
    // MaxPool_12 runs FP32 (0.4318 ms).
    const auto* fp32 = group(summary.byPrecision, "FP32");
    ASSERT_NE(fp32, nullptr);
    EXPECT_NEAR(fp32->ms, 0.4318, 1e-9);
    EXPECT_FALSE(summary.tensorCores.share.has_value());

    const std::string text = renderReportText(report, inputs);
    EXPECT_NE(text.find("Precision:     INT8 1.792 ms (4 layers"), std::string::npos) << text;
    EXPECT_NE(text.find("Tensor cores:  unknown: no kernel names"), std::string::npos);
    EXPECT_NE(text.find("INT8:          3 of 3 quantized operations run in INT8"), std::string::npos);
    const std::string json = renderReportJson(report, inputs);
    EXPECT_NE(json.find("\"precision_summary\":"), std::string::npos);
    EXPECT_NE(json.find("\"by_precision\":"), std::string::npos);
    EXPECT_NE(json.find("\"tensor_cores\":"), std::string::npos);
}
