// diagnose on the real TensorRT artifacts and models: the accounting invariant on every real input, and the stories
// the issues name (TREx ResNet18 A100 QAT series). Expected values were read off the files by hand.
#include "qdq/analysis.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

void expectAccountingAddsUp(const Report& report, const Inputs& inputs, const std::string& what)
{
    auto layers = report.correlation.layerTotals();
    EXPECT_EQ(layers.total,
              layers.mapped + layers.insertedQdq + layers.insertedReformat + layers.dropped + layers.unattributed)
        << what;
    std::size_t engineLayers = inputs.engine() == nullptr ? 0 : inputs.engine()->layers.size();
    EXPECT_EQ(layers.total, engineLayers) << what;
    auto qdq = report.correlation.qdqTotals();
    EXPECT_EQ(qdq.total, qdq.fused + qdq.standalone + qdq.folded + qdq.eliminated + qdq.unknown) << what;
    if (inputs.onnx)
    {
        EXPECT_EQ(qdq.total, inputs.onnx->quantizeCount() + inputs.onnx->dequantizeCount()) << what;
    }
}

//! Every file of MANIFEST.tsv that an engine analysis can read (all but timing and TREx metadata JSON).
std::vector<std::string> manifestEngineFiles()
{
    std::vector<std::string> files;
    for (const ManifestEntry& entry : manifestEntries())
    {
        if (entry.kind != "timing-json" && entry.kind != "metadata-json")
        {
            files.push_back(entry.path());
        }
    }
    return files;
}

std::size_t countRule(const Report& report, const std::string& rule)
{
    std::size_t count = 0;
    for (const auto& finding : report.findings)
    {
        count += finding.rule == rule ? 1 : 0;
    }
    return count;
}

const Finding* firstOf(const Report& report, const std::string& rule)
{
    for (const auto& finding : report.findings)
    {
        if (finding.rule == rule)
        {
            return &finding;
        }
    }
    return nullptr;
}

} // namespace

TEST(RealDataAccounting, EveryManifestFileAddsUp)
{
    REQUIRE_SHARED();
    auto files = manifestEngineFiles();
    ASSERT_GE(files.size(), 40u);
    for (const auto& file : files)
    {
        Inputs inputs = loadFiles({realdata(file)});
        Report report = diagnose(inputs);
        expectAccountingAddsUp(report, inputs, file);
        // The TREx and cookbook sets are fully understood: nothing left unattributed.
        if ((file.rfind("trex-", 0) == 0 || file.rfind("cookbook-", 0) == 0) &&
            !(inputs.onnx && inputs.onnx->rebuiltFromLog))
        {
            EXPECT_EQ(report.correlation.layerTotals().unattributed, 0u) << file;
        }
        else if (file.rfind("trex-", 0) == 0 || file.rfind("cookbook-", 0) == 0)
        {
            // A log alone is held against the graph rebuilt from its parser lines (log_graph.h): only layers that
            // TensorRT made and named itself (decomposed BatchNormalization, Myelin kernels, shape copies) are left
            // unattributed.
            for (const auto& mapping : report.correlation.layers)
            {
                if (mapping.state != LayerState::kUnattributed)
                {
                    continue;
                }
                const std::string& name = inputs.engine()->layers[mapping.layer].name;
                EXPECT_TRUE(name.find("(Unnamed Layer* ") != std::string::npos || name.rfind("__my", 0) == 0)
                    << file << ": " << name;
            }
        }
    }
}

TEST(RealDataAccounting, EveryModelAddsUp)
{
    REQUIRE_SHARED();
    std::size_t models = 0;
    for (const auto& folder : {sharedModel(""), sharedModel("with-weights")})
    {
        for (const auto& entry : std::filesystem::directory_iterator(folder))
        {
            if (entry.path().extension() != ".onnx")
            {
                continue;
            }
            Inputs inputs = loadFiles({entry.path()});
            Report report = diagnose(inputs);
            expectAccountingAddsUp(report, inputs, entry.path().string());
            ++models;
        }
    }
    EXPECT_EQ(models, 18u);
}

TEST(RealDataAccounting, TrexPairsAddUpWithTheirProfiles)
{
    REQUIRE_SHARED();
    for (const char* set :
         {"trex-pt-resnet-a100-fp32/resnet", "trex-pt-resnet-a100-fp16/resnet", "trex-pt-resnet-a100-qat/resnet-qat",
          "trex-pt-resnet-a100-qat-residual/resnet-qat-residual",
          "trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap", "trex-tests-mobilenet-qat/mobilenet.qat",
          "trex-tests-mobilenet-qat-2022-04/mobilenet.qat"})
    {
        std::string base = std::string(set) + ".onnx.engine.";
        Inputs inputs = loadFiles({realdata(base + "graph.json"), realdata(base + "profile.json")});
        Report report = diagnose(inputs);
        expectAccountingAddsUp(report, inputs, set);
        EXPECT_EQ(report.correlation.layerTotals().unattributed, 0u) << set;
        // Every layer has its timing (layer-info and profile of one engine).
        for (const auto& mapping : report.correlation.layers)
        {
            EXPECT_TRUE(mapping.timeMs.has_value()) << set << ": " << inputs.engine()->layers[mapping.layer].name;
        }
    }
}

TEST(RealDataDiagnose, TrexQatStandaloneQuantizeLayersWithTheirCost)
{
    REQUIRE_SHARED();
    Inputs inputs = loadFiles({realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.graph.json"),
                               realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.json")});
    Report report = diagnose(inputs);
    const Finding* standalone = firstOf(report, "standalone-qdq");
    ASSERT_NE(standalone, nullptr);
    // The ten QuantizeLinear layers of the profile: QuantizeLinear_2, _15, _40, _65, _101, _126, _162, _187, _223,
    // _250; their averageMs sum to 0.232448 ms.
    EXPECT_EQ(standalone->engineLayers.size(), 10u);
    EXPECT_EQ(standalone->engineLayers.front(), "QuantizeLinear_2");
    EXPECT_EQ(standalone->engineLayers.back(), "QuantizeLinear_250");
    ASSERT_TRUE(standalone->costMs.has_value());
    EXPECT_NEAR(*standalone->costMs, 0.232448, 1e-9);
    EXPECT_EQ(report.correlation.layerTotals().insertedQdq, 10u);
    EXPECT_NEAR(report.standaloneQdqMs, 0.232448, 1e-9);

    // Tied to residual inputs that are not quantized: the first block's Add_36 is charged with QuantizeLinear_15
    // (its residual input is quantized separately), QuantizeLinear_40 (requantizes its output) and the builder
    // reformat of MaxPool_12's output (0.036864 ms) that both QuantizeLinear_15 and the residual input of Add_36 read.
    EXPECT_GE(countRule(report, "residual-input-not-quantized"), 5u);
    const Finding* residual = firstOf(report, "residual-input-not-quantized");
    ASSERT_NE(residual, nullptr);
    EXPECT_EQ(residual->onnxNodes, std::vector<std::string>{"Add_36"});
    EXPECT_NEAR(residual->costMs.value_or(0), 0.027648 + 0.027648 + 0.036864, 1e-9);

    // The lost Conv+MaxPool fusion: MaxPool_12 (0.095232 ms) and the reformat after it (0.036864 ms).
    const Finding* pool = firstOf(report, "conv-act-pool-blocked");
    ASSERT_NE(pool, nullptr);
    EXPECT_NEAR(pool->costMs.value_or(0), 0.095232 + 0.036864, 1e-9);
    EXPECT_EQ(pool->engineLayers.front(), "conv1.weight + QuantizeLinear_7 + Conv_9");
}

TEST(RealDataDiagnose, TrexQatResidualQgapReportsNoneOfThat)
{
    REQUIRE_SHARED();
    Inputs inputs = loadFiles(
        {realdata("trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.graph.json"),
         realdata("trex-pt-resnet-a100-qat-residual-qgap/resnet-qat-residual-qgap.onnx.engine.profile.json")});
    Report report = diagnose(inputs);
    EXPECT_EQ(countRule(report, "residual-input-not-quantized"), 0u);
    EXPECT_EQ(countRule(report, "conv-act-pool-blocked"), 0u);
    // Only the Quantize of the float network input remains, and it is reported as expected (info).
    const Finding* standalone = firstOf(report, "standalone-qdq");
    ASSERT_NE(standalone, nullptr);
    EXPECT_EQ(standalone->severity, Severity::kInfo);
    EXPECT_EQ(standalone->engineLayers, std::vector<std::string>{"QuantizeLinear_2"});
    for (const auto& finding : report.findings)
    {
        EXPECT_NE(finding.severity, Severity::kWarning) << finding.rule << ": " << finding.message;
        EXPECT_NE(finding.severity, Severity::kError) << finding.rule << ": " << finding.message;
    }
}

TEST(RealDataDiagnose, TrexQatResidualKeepsConvActPool)
{
    REQUIRE_SHARED();
    Inputs inputs =
        loadFiles({realdata("trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.graph.json"),
                   realdata("trex-pt-resnet-a100-qat-residual/resnet-qat-residual.onnx.engine.profile.json")});
    Report report = diagnose(inputs);
    EXPECT_EQ(countRule(report, "conv-act-pool-blocked"), 0u);
    // QuantizeLinear_2, DequantizeLinear_291, QuantizeLinear_298: 0.115712 ms.
    const Finding* standalone = firstOf(report, "standalone-qdq");
    ASSERT_NE(standalone, nullptr);
    EXPECT_EQ(standalone->engineLayers.size(), 3u);
    EXPECT_NEAR(standalone->costMs.value_or(0), 0.115712, 1e-9);
}

TEST(RealDataDiagnose, ProfileAloneStandsInForTheLayerList)
{
    REQUIRE_SHARED();
    Inputs inputs = loadFiles({realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.json")});
    ASSERT_TRUE(inputs.planFromProfile.has_value());
    Report report = diagnose(inputs);
    // 37 profile entries (after the count element).
    EXPECT_EQ(report.correlation.layerTotals().total, 37u);
    EXPECT_EQ(report.correlation.layerTotals().insertedQdq, 10u);
}

namespace
{

std::vector<const Finding*> allOf(const Report& report, const std::string& rule)
{
    std::vector<const Finding*> found;
    for (const auto& finding : report.findings)
    {
        if (finding.rule == rule)
        {
            found.push_back(&finding);
        }
    }
    return found;
}

bool names(const Finding& finding, const std::string& node)
{
    return std::find(finding.onnxNodes.begin(), finding.onnxNodes.end(), node) != finding.onnxNodes.end();
}

} // namespace

// Counts established with python3-onnx on the model: 9 Conv -> Q -> DQ -> Relu chains (stem + 8 conv1), 8 Adds whose
// two inputs are DequantizeLinear and one of them comes from a conv2 through Q/DQ, 21 INT32 biases behind a
// DequantizeLinear (20 Conv + the fc Gemm), and the MaxPool reads /relu/Relu through a Q/DQ pair.
TEST(RealDataModels, OnnxRuntimeResnet18GetsTheEpilogueAddPoolAndBiasFindings)
{
    REQUIRE_SHARED();
    Report report = diagnose(loadFiles({sharedModel("resnet18-ort-qdq.onnx")}));
    // 9 conv epilogues, plus the Q -> DQ between each of the 8 residual Adds (fused into a conv) and its Relu.
    auto epilogue = allOf(report, "qdq-inside-conv-epilogue");
    ASSERT_EQ(epilogue.size(), 17u);
    EXPECT_EQ(std::count_if(epilogue.begin(), epilogue.end(),
                            [](const Finding* finding)
                            { return finding->message.find("sits between the residual Add") != std::string::npos; }),
              8);
    epilogue.erase(std::remove_if(epilogue.begin(), epilogue.end(),
                                  [](const Finding* finding)
                                  { return finding->message.find("residual Add") != std::string::npos; }),
                   epilogue.end());
    ASSERT_EQ(epilogue.size(), 9u);
    EXPECT_TRUE(names(*epilogue.front(), "/conv1/Conv"));
    EXPECT_TRUE(names(*epilogue.front(), "/relu/Relu"));
    EXPECT_TRUE(names(*epilogue.front(), "/conv1/Conv_output_0_QuantizeLinear"));
    auto pool = allOf(report, "conv-act-pool-blocked");
    ASSERT_EQ(pool.size(), 1u);
    EXPECT_TRUE(names(*pool.front(), "/maxpool/MaxPool"));
    EXPECT_TRUE(names(*pool.front(), "/relu/Relu_output_0_QuantizeLinear"));
    auto add = allOf(report, "qdq-between-conv-and-add");
    ASSERT_EQ(add.size(), 8u);
    for (const Finding* finding : add)
    {
        EXPECT_NE(finding->fix.find("conv2/Conv_output_0_QuantizeLinear"), std::string::npos) << finding->fix;
    }
    auto bias = allOf(report, "quantized-bias");
    ASSERT_EQ(bias.size(), 1u);
    EXPECT_EQ(bias.front()->evidence.size(), 21u);
    EXPECT_TRUE(names(*bias.front(), "/fc/Gemm"));
    EXPECT_NE(bias.front()->fix.find("QuantizeBias"), std::string::npos);
}

TEST(RealDataModels, QatResidualQgapGetsNoneOfThem)
{
    REQUIRE_SHARED();
    Report report = diagnose(loadFiles({sharedModel("resnet18-qat-residual-qgap.onnx")}));
    for (const char* rule : {"qdq-inside-conv-epilogue", "conv-act-pool-blocked", "qdq-between-conv-and-add",
                             "quantized-bias", "residual-input-not-quantized"})
    {
        EXPECT_TRUE(allOf(report, rule).empty()) << rule;
    }
    for (const auto& finding : report.findings)
    {
        EXPECT_EQ(finding.severity, Severity::kInfo) << finding.rule << ": " << finding.message;
    }
}

TEST(RealDataModels, QatConvsLosesConvPoolAndLeavesResidualsFloat)
{
    REQUIRE_SHARED();
    Report report = diagnose(loadFiles({sharedModel("resnet18-qat-convs.onnx")}));
    // The TREx recipe "convs only": every one of the 8 residual Adds has a float identity input.
    EXPECT_EQ(allOf(report, "residual-input-not-quantized").size(), 8u);
    EXPECT_EQ(allOf(report, "conv-act-pool-blocked").size(), 1u);
}

namespace
{

//! The fused Conv+Add layers of an engine whose second input (the residual) is float, read off the layer list: two
//! inputs, an Add among the name's " + " parts, input 1 FP32 or FP16.
std::vector<std::size_t> floatResidualConvAdds(const EnginePlan& plan)
{
    std::vector<std::size_t> layers;
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        const EngineLayer& layer = plan.layers[i];
        if (layer.inputs.size() == 2 && layer.name.find(" + Add_") != std::string::npos &&
            layer.type.find("Convolution") != std::string::npos && isFloat(layer.inputs[1].precision))
        {
            layers.push_back(i);
        }
    }
    return layers;
}

//! The layers that carry a Conv+Add's output to the next convolution: the chain of single-reader, single-output
//! layers that are not convolutions (the builder's reformats and the standalone Quantize).
std::vector<std::size_t> layersUpToTheNextConv(const EnginePlan& plan, std::size_t convAdd)
{
    std::vector<std::size_t> chain;
    std::string tensor = plan.layers[convAdd].outputs[0].name;
    for (bool extended = true; extended;)
    {
        extended = false;
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            const EngineLayer& layer = plan.layers[i];
            if (layer.inputs.size() == 1 && layer.outputs.size() == 1 && layer.inputs[0].name == tensor &&
                layer.type.find("Convolution") == std::string::npos)
            {
                chain.push_back(i);
                tensor = layer.outputs[0].name;
                extended = true;
                break;
            }
        }
    }
    return chain;
}

} // namespace

// TREx's MobileNetV2 QAT engine (TRT 8.2, TITAN RTX): 10 inverted-residual Adds fused into their projection conv
// with a float residual; in 7 of them a builder reformat sits between the Conv+Add and the standalone Quantize
// (graph.json layers 32-34: "... + Add_387" -> "Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_390" ->
// QuantizeLinear_390). The newer TRT 8.4 build of the same model has no such reformats.
TEST(RealDataDiagnose, MobilenetEveryFloatResidualAddUnderTheResidualRootCause)
{
    REQUIRE_SHARED();
    for (const char* set : {"trex-tests-mobilenet-qat-2022-04/mobilenet.qat", "trex-tests-mobilenet-qat/mobilenet.qat"})
    {
        const std::string base = std::string(set) + ".onnx.engine.";
        Inputs inputs = loadFiles({realdata(base + "graph.json"), realdata(base + "profile.json")});
        Report report = diagnose(inputs);
        const EnginePlan& plan = *inputs.engine();
        const std::vector<std::size_t> adds = floatResidualConvAdds(plan);
        ASSERT_EQ(adds.size(), 10u) << set; // read off graph.json by hand
        ASSERT_FALSE(report.causes.empty()) << set;
        const RootCause& first = report.causes[0];
        EXPECT_EQ(first.title, "residual-input-not-quantized (10)") << set;
        std::size_t reformatsOwned = 0;
        for (std::size_t add : adds)
        {
            const auto named = std::count_if(report.findings.begin(), report.findings.end(),
                                             [&](const Finding& f)
                                             {
                                                 return f.rule == "residual-input-not-quantized" &&
                                                        !f.engineLayers.empty() &&
                                                        f.engineLayers[0] == plan.layers[add].name;
                                             });
            EXPECT_EQ(named, 1) << set << ": " << plan.layers[add].name;
            // The Conv+Add, and the reformats and Quantize that carry its float output to the next conv, are the
            // residual cause's time.
            std::vector<std::size_t> owned{add};
            for (std::size_t layer : layersUpToTheNextConv(plan, add))
            {
                owned.push_back(layer);
                reformatsOwned += plan.layers[layer].name.rfind("Reformatting CopyNode", 0) == 0 ? 1 : 0;
            }
            for (std::size_t layer : owned)
            {
                EXPECT_TRUE(std::find(first.layers.begin(), first.layers.end(), layer) != first.layers.end())
                    << set << ": " << plan.layers[layer].name;
            }
        }
        if (std::string(set).find("2022-04") != std::string::npos)
        {
            EXPECT_EQ(reformatsOwned, 7u);
        }
        // Findings on those layers alone are symptoms under it.
        for (const Finding& finding : report.findings)
        {
            const bool onTheAddsOnly =
                !finding.engineLayers.empty() &&
                std::all_of(finding.engineLayers.begin(), finding.engineLayers.end(),
                            [&](const std::string& name) {
                                return std::any_of(adds.begin(), adds.end(),
                                                   [&](std::size_t add) { return plan.layers[add].name == name; });
                            });
            if (onTheAddsOnly && finding.rule != "residual-input-not-quantized")
            {
                EXPECT_EQ(finding.rootCause, std::optional<std::size_t>(0)) << set << " " << finding.rule;
                EXPECT_TRUE(finding.symptom) << set << " " << finding.rule;
            }
        }
    }
}
