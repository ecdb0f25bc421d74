// The engine simulator on the real verbose build logs whose parser lines describe the model they built: the graph
// rebuilt from the log is predicted and held against the log's own engine layer list.
#include "test_support.h"

#include "qdq/load_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <ostream>

using namespace qdq;
using namespace qdq::test;

namespace
{

struct LogCase
{
    const char* log;
    const char* name;
    //! Real layers whose predicted layer (same nodes) has their name string for string, as measured when the names
    //! of quantized convs with a folded BatchNormalization were made TensorRT's (docs/predict-schema.md): a floor.
    std::size_t sameName;
};

// Names the case in gtest's output instead of printing the struct's bytes.
void PrintTo(const LogCase& logCase, std::ostream* out)
{
    *out << logCase.log;
}

} // namespace

class RealDataSimulatorLogs : public ::testing::TestWithParam<LogCase>
{
};

// Every real log with parser lines and an engine layer list: the same number of layers executing ONNX nodes, and at
// least 95% of the real ones with a predicted layer executing exactly the same nodes.
TEST_P(RealDataSimulatorLogs, PredictsTheLogsOwnEngine)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files = {realdata(GetParam().log).string()};
    Inputs inputs = loadInputs(files, Limits{});
    ASSERT_TRUE(inputs.onnx.has_value()) << "no graph rebuilt from " << GetParam().log;
    ASSERT_TRUE(inputs.onnx->rebuiltFromLog);
    Report report = diagnose(inputs);
    ASSERT_TRUE(report.predictionCheck.has_value());
    const PredictionCheck& check = *report.predictionCheck;
    std::string disagreements;
    for (const auto& text : check.disagreements)
    {
        disagreements += "\n  " + text;
    }
    EXPECT_EQ(check.predictedLayers, check.realLayers) << disagreements;
    EXPECT_GE(check.exact * 100, check.realLayers * 95)
        << check.exact << " of " << check.realLayers << " exact" << disagreements;
}

namespace
{

//! How the prediction check held a real engine: real layers executing ONNX nodes, those with a predicted layer of
//! the same nodes, and among them those whose predicted name is the engine layer's name, string for string.
struct NameCounts
{
    std::size_t real = 0;
    std::size_t byNodes = 0;
    std::size_t byName = 0;
};

NameCounts nameCounts(const Report& report, const Inputs& inputs)
{
    NameCounts counts;
    if (!report.predictionCheck || inputs.engine() == nullptr)
    {
        return counts;
    }
    counts.real = report.predictionCheck->realLayers;
    for (const LayerAgreement& agreement : report.predictionCheck->layers)
    {
        if (agreement.predictedLayer)
        {
            ++counts.byNodes;
            counts.byName += inputs.engine()->layers[agreement.layer].baseName() ==
                             report.prediction.layers[*agreement.predictedLayer].name;
        }
    }
    return counts;
}

} // namespace

// The counts of every real pair, printed for the record; the names agree at least as often as when measured.
TEST_P(RealDataSimulatorLogs, NamesTheLayersAsTheEngineDoes)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files = {realdata(GetParam().log).string()};
    Inputs inputs = loadInputs(files, Limits{});
    ASSERT_TRUE(inputs.onnx.has_value());
    Report report = diagnose(inputs);
    const NameCounts counts = nameCounts(report, inputs);
    std::printf("[ names    ] %s: %zu real layers, %zu same nodes (%zu of them same name), %zu unmatched\n",
                GetParam().log, counts.real, counts.byNodes, counts.byName, counts.real - counts.byNodes);
    EXPECT_LE(counts.byName, counts.byNodes);
    EXPECT_GE(counts.byName, GetParam().sameName);
}

// The TensorRT 8.5.2 YOLO engine of ../shared/realdata/trex-notebooks-yolo-orin-trt852, predicted from the graph its
// log describes: each quantized conv with a folded BatchNormalization that the check holds against the real layer of
// the same nodes has that layer's name, string for string (the BatchNormalization, and a Relu fused with it, left
// out; a LeakyRelu kept as PWN(...); an Add and Relu after the BatchNormalization kept).
TEST(RealDataSimulatorNames, QuantizedConvsWithAFoldedBatchNormAreNamedAsTheYoloEngineNamesThem)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files = {realdata("trex-notebooks-yolo-orin-trt852/trt.out").string()};
    Inputs inputs = loadInputs(files, Limits{});
    ASSERT_TRUE(inputs.onnx.has_value());
    Report report = diagnose(inputs);
    ASSERT_TRUE(report.predictionCheck.has_value());
    ASSERT_NE(inputs.engine(), nullptr);
    std::size_t convsWithBatchNorm = 0;
    for (const LayerAgreement& agreement : report.predictionCheck->layers)
    {
        if (!agreement.predictedLayer)
        {
            continue;
        }
        const PredictedLayer& predicted = report.prediction.layers[*agreement.predictedLayer];
        const bool batchNorm =
            std::any_of(predicted.nodeIndices.begin(), predicted.nodeIndices.end(),
                        [&](std::uint32_t node) { return inputs.onnx->nodes[node].opType == "BatchNormalization"; });
        if (predicted.role != "quantized-Conv" || !batchNorm)
        {
            continue;
        }
        ++convsWithBatchNorm;
        EXPECT_EQ(predicted.name, inputs.engine()->layers[agreement.layer].baseName());
    }
    EXPECT_GE(convsWithBatchNorm, 37u);
    // One of them, as the engine's layer_info.json and the log's layer list write it.
    const auto conv =
        std::find_if(report.prediction.layers.begin(), report.prediction.layers.end(),
                     [](const PredictedLayer& layer)
                     {
                         return std::find(layer.onnxNodes.begin(), layer.onnxNodes.end(),
                                          "/backbone/layer1/layer1.0/bn1/BatchNormalization") != layer.onnxNodes.end();
                     });
    ASSERT_NE(conv, report.prediction.layers.end());
    EXPECT_EQ(conv->name, "backbone.layer1.0.conv1.weight + /backbone/layer1/layer1.0/conv1/_weight_quantizer/"
                          "QuantizeLinear + /backbone/layer1/layer1.0/conv1/Conv");
}

// The one real pair of a model file and the engine built from it.
TEST(RealDataSimulatorNames, MnistModelAndItsLog)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files = {realdata("lix-mnist-orin-trt8510-best/mnist.onnx").string(),
                   realdata("lix-mnist-orin-trt8510-best/trt_build_best.log").string()};
    Inputs inputs = loadInputs(files, Limits{});
    Report report = diagnose(inputs);
    const NameCounts counts = nameCounts(report, inputs);
    std::printf("[ names    ] mnist.onnx + trt_build_best.log: %zu real layers, %zu same nodes (%zu of them same "
                "name), %zu unmatched\n",
                counts.real, counts.byNodes, counts.byName, counts.real - counts.byNodes);
    EXPECT_LE(counts.byName, counts.byNodes);
    EXPECT_GE(counts.byName, 2u);
}

INSTANTIATE_TEST_SUITE_P(
    Logs, RealDataSimulatorLogs,
    ::testing::Values(LogCase{"cookbook-mnist-trt8003/result-FP32.txt", "mnist_trt8003_fp32", 5},
                      LogCase{"cookbook-mnist-trt8003/result-FP16.txt", "mnist_trt8003_fp16", 5},
                      LogCase{"cookbook-mnist-trt8203/result-FP32.txt", "mnist_trt8203_fp32", 5},
                      LogCase{"cookbook-mnist-trt8401/result-FP32.log", "mnist_trt8401_fp32", 5},
                      LogCase{"cookbook-mnist-trt8401/result-FP16.log", "mnist_trt8401_fp16", 5},
                      LogCase{"cookbook-mnist-trt8600/result-02.log", "mnist_trt8600", 5},
                      LogCase{"cookbook-mnist-trt10141/result-02.log", "mnist_trt10141", 8},
                      LogCase{"cookbook-profilingverbosity-trt1016/log-main.py.log", "profilingverbosity_trt1016", 4},
                      LogCase{"lix-mnist-orin-trt8510-best/trt_build_best.log", "lix_mnist_trt8510", 2},
                      LogCase{"trex-notebooks-yolo-orin-trt852/trt.out", "yolo_orin_trt852", 53}),
    [](const auto& param) { return std::string(param.param.name); });
