// quantized-op-not-importable on ONNX Runtime's own exports (tests/fixtures/export_ort_formats.py, ONNX Runtime 1.30):
// one small float network quantized in QOperator format, by dynamic quantization, and in QDQ format (the
// near-identical case TensorRT imports); and on built graphs for the ops' domains.
#include "graph_builder.h"
#include "qdq/load_inputs.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

Report diagnoseFixture(const std::string& name)
{
    InputFiles files;
    files.files = {fixture(name).string()};
    return diagnose(loadInputs(files, Limits{}));
}

} // namespace

TEST(RuleQuantizedOpNotImportable, OnnxRuntimeQOperatorExport)
{
    Report report = diagnoseFixture("ort-qoperator-small.onnx");
    auto found = findingsOf(report, "quantized-op-not-importable");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].severity, Severity::kError);
    EXPECT_EQ(found[0].onnxNodes,
              (std::vector<std::string>{"/Add_quant", "/GlobalAveragePool_quant", "/body/body.0/Conv_quant",
                                        "/head/Gemm_quant", "/stem/stem.0/Conv_quant"}));
    EXPECT_NE(found[0].message.find("QOperator format (1 QGemm (com.microsoft), 1 QLinearAdd (com.microsoft), 2 "
                                    "QLinearConv, 1 QLinearGlobalAveragePool (com.microsoft))"),
              std::string::npos)
        << found[0].message;
    EXPECT_NE(found[0].message.find("stops at the first, /stem/stem.0/Conv_quant (QLinearConv)"), std::string::npos);
    EXPECT_NE(found[0].fix.find("quant_format=QuantFormat.QDQ"), std::string::npos);
    // The integer ops are not an FP32 island, and the DQ of QGemm's output is not a lone Dequantize of this graph;
    // the Quantize of the network input stays (the QDQ re-export has it too).
    EXPECT_TRUE(findingsOf(report, "fp32-island").empty());
    auto standalone = findingsOf(report, "standalone-qdq");
    EXPECT_FALSE(anyNames(standalone, "logits_DequantizeLinear"));
    EXPECT_TRUE(anyNames(standalone, "input_QuantizeLinear"));
    // The uint8 zero points are a second, separate error.
    EXPECT_EQ(findingsOf(report, "nonzero-zero-point").size(), 1u);
    // predict shows each integer op as one layer and says the build fails there.
    const OnnxGraph graph = readOnnx(fixture("ort-qoperator-small.onnx").string());
    const Prediction prediction = predictEngine(graph);
    int failing = 0;
    for (const auto& layer : prediction.layers)
    {
        failing += layer.guess.find("no importer for " + layer.kind + " and the build fails here") != std::string::npos;
    }
    EXPECT_EQ(failing, 5);
}

TEST(RuleQuantizedOpNotImportable, OnnxRuntimeDynamicQuantization)
{
    Report report = diagnoseFixture("ort-dynamic-small.onnx");
    auto found = findingsOf(report, "quantized-op-not-importable");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_NE(found[0].message.find("dynamic quantization (2 ConvInteger, 3 DynamicQuantizeLinear, 1 MatMulInteger)"),
              std::string::npos)
        << found[0].message;
    EXPECT_NE(found[0].fix.find("no dynamic INT8"), std::string::npos);
    // A model without any Q/DQ gave "No findings" before this rule.
    EXPECT_EQ(report.findings.size(), 1u);
}

TEST(RuleQuantizedOpNotImportable, SilentOnTheSameNetworkInQdqFormat)
{
    Report report = diagnoseFixture("ort-qdq-small.onnx");
    EXPECT_TRUE(findingsOf(report, "quantized-op-not-importable").empty());
    // Its Relus sit between a DQ and a Q: predicted as quantized PointWise layers (a guess, docs/simulator.md,
    // "Doubtful fusions"), so no float op is left for fp32-island.
    EXPECT_TRUE(findingsOf(report, "fp32-island").empty());
}

TEST(RuleQuantizedOpNotImportable, ContribOpsOnlyInOnnxRuntimesDomain)
{
    // QLinearAdd in com.microsoft is ONNX Runtime's; a plugin of the same name in the user's own domain is a plugin,
    // and QuantizeLinear in com.microsoft imports as a QuantizeLinear (the parser looks ops up by type only).
    for (const std::string domain : {"com.microsoft", "my.plugins"})
    {
        GraphBuilder g;
        g.opset(domain, 1);
        std::string x = g.node("QuantizeLinear", "/in/QuantizeLinear",
                               {g.input("x", {1, 8, 4, 4}), g.scale("/in/scale", 0.05f), g.zeroPoint("/in/zp")}, {},
                               "com.microsoft");
        std::string add =
            g.node("QLinearAdd", "/add/QLinearAdd",
                   {x, "/in/scale", "/in/zp", x, "/in/scale", "/in/zp", "/in/scale", "/in/zp"}, {}, domain);
        g.output(g.node("DequantizeLinear", "/out/DequantizeLinear", {add, "/in/scale", "/in/zp"}), {1, 8, 4, 4});
        auto found = findingsOf(runDiagnose(g.build(), std::nullopt), "quantized-op-not-importable");
        if (domain == "com.microsoft")
        {
            ASSERT_EQ(found.size(), 1u);
            EXPECT_EQ(found[0].onnxNodes, (std::vector<std::string>{"/add/QLinearAdd"}));
        }
        else
        {
            EXPECT_TRUE(found.empty()) << found[0].message;
        }
    }
}

// A trtexec log of TensorRT 10.16 failing on a dynamically quantized model, written by hand in the format of
// onnx-tensorrt's ModelImporter.cpp (tests/fixtures/build-log/integer-op-parse-failure.log): without the model, the
// parser's error line names the op. The same log failing at a plugin of the user's is the near-identical case.
TEST(RuleQuantizedOpNotImportable, BuildLogOfTheFailedParse)
{
    const std::string text = readFile(fixture("build-log/integer-op-parse-failure.log"));
    Inputs inputs;
    inputs.buildLog = readBuildLogFromBuffer(text, "build.log");
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "quantized-op-not-importable");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].severity, Severity::kError);
    EXPECT_NE(found[0].message.find("failing at a DynamicQuantizeLinear node"), std::string::npos) << found[0].message;
    ASSERT_FALSE(found[0].evidence.empty());
    EXPECT_EQ(found[0].evidence[0].line, 18u);
    EXPECT_NE(found[0].fix.find("no dynamic INT8"), std::string::npos);

    std::string plugin = text;
    for (std::size_t at = plugin.find("DynamicQuantizeLinear"); at != std::string::npos;
         at = plugin.find("DynamicQuantizeLinear", at))
    {
        plugin.replace(at, std::string("DynamicQuantizeLinear").size(), "MyQuantizePlugin");
    }
    Inputs pluginInputs;
    pluginInputs.buildLog = readBuildLogFromBuffer(plugin, "build.log");
    EXPECT_TRUE(findingsOf(diagnose(pluginInputs), "quantized-op-not-importable").empty());
}
