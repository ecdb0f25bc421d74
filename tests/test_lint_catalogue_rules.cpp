// Catalogue rules R10 qdq-between-pad-and-conv and R27 depthwise-act-not-fused. No model or engine of ../shared has
// either pattern, so the triggering cases are built here (a Pad split from its Conv by a Q/DQ pair; a depthwise conv
// whose SiLU runs as its own PointWise layer) and, for R10, exported from PyTorch (tests/fixtures/pytorch-pad-*.onnx);
// the real engines are where they must stay silent.
#include "graph_builder.h"
#include "qdq/fix.h"
#include "qdq/load_inputs.h"
#include "qdq/predict.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qdq;
using namespace qdq::test;

namespace
{

//! input -> [Q/DQ] -> Pad -> [Q/DQ] -> Conv: the pair between the Pad and the Conv (splitPad), or before the Pad.
OnnxGraph padConvModel(bool splitPad)
{
    GraphBuilder g;
    std::string x = g.input("images", {1, 16, 32, 32});
    if (!splitPad)
    {
        x = g.qdq("/conv/in_q", x, 0.04f);
    }
    std::string padded = g.node("Pad", "/pad/Pad", {x});
    g.intsAttribute("/pad/Pad", "pads", {0, 0, 1, 1, 0, 0, 1, 1});
    if (splitPad)
    {
        padded = g.qdq("/conv/in_q", padded, 0.04f);
    }
    g.output(g.node("Conv", "/conv/Conv", {padded, g.quantizedWeight("conv", 32, 16)}));
    return g.build("pad-conv.onnx");
}

EngineTensor tensor(const std::string& name, std::vector<std::int64_t> dims, const std::string& format)
{
    EngineTensor t;
    t.name = name;
    t.dimensions = std::move(dims);
    t.format = format;
    t.precision = precisionFromFormat(format);
    return t;
}

const char* kInt8x32 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kFp16 = "Row major linear FP16 format";

//! A pointwise conv with its ReLU fused, then a depthwise conv and its SiLU: fused (silu in the conv's name) or not.
EnginePlan depthwiseEngine(bool siluFused)
{
    EnginePlan plan;
    plan.sourcePath = "dw/layers.json";
    plan.form = LayerListForm::kDetailed;
    EngineLayer pw;
    pw.name = "/pw/Conv + /pw/Relu";
    pw.type = "CaskConvolution";
    pw.inputs = {tensor("x", {1, 16, 56, 56}, kInt8x32)};
    pw.outputs = {tensor("p", {1, 96, 56, 56}, kInt8x32)};
    pw.activation = "RELU";
    pw.weightsPrecision = Precision::kINT8;
    plan.layers.push_back(pw);
    EngineLayer dw;
    dw.name = siluFused ? "/dw/Conv + PWN(/act/Sigmoid, /act/Mul)" : "/dw/Conv";
    dw.type = "CudaDepthwiseConvolution";
    dw.inputs = {tensor("p", {1, 96, 56, 56}, kInt8x32)};
    dw.outputs = {tensor(siluFused ? "s" : "d", {1, 96, 56, 56}, kFp16)};
    dw.weightsPrecision = Precision::kINT8;
    dw.otherFields.emplace_back("Groups", "96");
    plan.layers.push_back(dw);
    if (!siluFused)
    {
        EngineLayer act;
        act.name = "PWN(/act/Sigmoid, /act/Mul)";
        act.type = "PointWiseV2";
        act.inputs = {tensor("d", {1, 96, 56, 56}, kFp16)};
        act.outputs = {tensor("s", {1, 96, 56, 56}, kFp16)};
        plan.layers.push_back(act);
    }
    return plan;
}

} // namespace

TEST(RuleQdqBetweenPadAndConv, PairBetweenZeroPadAndConvMovesBeforeThePad)
{
    Report report = runDiagnose(padConvModel(true), std::nullopt);
    auto found = findingsOf(report, "qdq-between-pad-and-conv");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(found[0].likely); // no engine to confirm
    ASSERT_EQ(found[0].edits.size(), 2u);
    EXPECT_EQ(found[0].edits[0].kind, FixEdit::Kind::kRemoveQdqPair);
    EXPECT_EQ(found[0].edits[0].nodes,
              (std::vector<std::string>{"/conv/in_q/QuantizeLinear", "/conv/in_q/DequantizeLinear"}));
    EXPECT_EQ(found[0].edits[1].kind, FixEdit::Kind::kInsertQdq);
    EXPECT_EQ(found[0].edits[1].tensor, "images");
    EXPECT_EQ(found[0].edits[1].scaleFrom, "/conv/in_q/QuantizeLinear");
}

TEST(RuleQdqBetweenPadAndConv, PairBeforeThePadIsWhereItBelongs)
{
    Report report = runDiagnose(padConvModel(false), std::nullopt);
    EXPECT_TRUE(findingsOf(report, "qdq-between-pad-and-conv").empty());
}

TEST(RuleQdqBetweenPadAndConv, PadFoldedIntoTheConvLayerIsSilent)
{
    // The engine shows the padding inside the convolution's layer, as #2527's engine does.
    EnginePlan plan;
    plan.sourcePath = "pad/layers.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(
        layer("/pad/Pad + conv.weight + /conv/Conv", "CaskConvolution", {{"images", kInt8x32}}, {{"out", kInt8x32}}));
    Report report = runDiagnose(padConvModel(true), plan);
    EXPECT_TRUE(findingsOf(report, "qdq-between-pad-and-conv").empty());
}

TEST(RuleDepthwiseActNotFused, SiluAsItsOwnLayerAfterTheDepthwiseConv)
{
    Report report = runDiagnose(std::nullopt, depthwiseEngine(false));
    auto found = findingsOf(report, "depthwise-act-not-fused");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].engineLayers, (std::vector<std::string>{"/dw/Conv", "PWN(/act/Sigmoid, /act/Mul)"}));
    EXPECT_NE(found[0].message.find("other convolutions carry their activations"), std::string::npos);
    EXPECT_TRUE(found[0].likely);
}

TEST(RuleDepthwiseActNotFused, FusedSiluIsSilent)
{
    Report report = runDiagnose(std::nullopt, depthwiseEngine(true));
    EXPECT_TRUE(findingsOf(report, "depthwise-act-not-fused").empty());
}

TEST(RealDataRuleDepthwiseActNotFused, MobilenetDepthwiseConvsCarryTheirClip)
{
    REQUIRE_SHARED();
    // MobileNetV2 QAT (TensorRT 8.4 and 8.2): every CudaDepthwiseConvolution has its PWN(Clip) fused.
    for (const char* set : {"trex-tests-mobilenet-qat/mobilenet.qat", "trex-tests-mobilenet-qat-2022-04/mobilenet.qat"})
    {
        InputFiles files;
        files.files = {realdata(std::string(set) + ".onnx.engine.graph.json").string(),
                       realdata(std::string(set) + ".onnx.engine.profile.json").string()};
        Inputs inputs = loadInputs(files, Limits{});
        Report report = diagnose(inputs);
        EXPECT_TRUE(findingsOf(report, "depthwise-act-not-fused").empty()) << set;
    }
}

TEST(RealDataRuleQdqBetweenPadAndConv, RealModelsHaveNoSplitPad)
{
    REQUIRE_SHARED();
    // The shared models have no Pad nodes (convolutions pad by attribute): nothing to report on any of them.
    for (const char* model : {"resnet18-ort-qdq.onnx", "yolov8lite-qat-outputs.onnx", "unet-convtranspose-qat.onnx"})
    {
        InputFiles files;
        files.files = {sharedModel(model).string()};
        Inputs inputs = loadInputs(files, Limits{});
        EXPECT_TRUE(findingsOf(diagnose(inputs), "qdq-between-pad-and-conv").empty()) << model;
    }
}

// A real PyTorch QAT export (tests/fixtures/export_pad_conv.py, torch 2.11, opset 13): TensorFlow-style "same" padding
// as nn.ZeroPad2d before a stride-2 conv, its input quantizer after the Pad. The exporter computes the pads with a
// subgraph (ConstantOfShape, Concat, Reshape, Slice, Transpose, Cast), so the Pad's pads are not an initializer. The
// same network with the padding inside the conv is the near-identical case.
TEST(RealExportRuleQdqBetweenPadAndConv, PyTorchZeroPadBeforeAQuantizedConv)
{
    InputFiles files;
    files.files = {fixture("pytorch-pad-before-conv.onnx").string()};
    Inputs inputs = loadInputs(files, Limits{});
    Report report = diagnose(inputs);
    auto found = findingsOf(report, "qdq-between-pad-and-conv");
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].onnxNodes,
              (std::vector<std::string>{"/2/Pad", "/3/Conv", "/3/iq/DequantizeLinear", "/3/iq/QuantizeLinear"}));
    // The simulator keeps the Pad as its own layer there; the fixed model folds it into the conv, as TensorRT does,
    // and has as many predicted layers as the export with the padding inside the conv.
    files.files = {fixture("pytorch-pad-in-conv.onnx").string()};
    Inputs padInConv = loadInputs(files, Limits{});
    EXPECT_TRUE(findingsOf(diagnose(padInConv), "qdq-between-pad-and-conv").empty());
    const std::size_t padInConvLayers = summarizePrediction(predictEngine(*padInConv.onnx), *padInConv.onnx).layers;

    const auto output = tempDir("pad-export-fix") / "fixed.onnx";
    files.files = {fixture("pytorch-pad-before-conv.onnx").string()};
    FixOptions options;
    options.output = output.string();
    const FixReport fixed = runFix(files, options, Limits{});
    EXPECT_EQ(fixed.checker, "passed");
    EXPECT_TRUE(fixed.newFindings.empty());
    EXPECT_EQ(fixed.before.predicted.layers, padInConvLayers + 1);
    EXPECT_EQ(fixed.after.predicted.layers, padInConvLayers);
    const OnnxGraph graph = readOnnx(output.string());
    const Prediction prediction = predictEngine(graph);
    bool padInConvLayer = false;
    for (const auto& layer : prediction.layers)
    {
        if (std::find(layer.onnxNodes.begin(), layer.onnxNodes.end(), "/2/Pad") != layer.onnxNodes.end())
        {
            padInConvLayer = layer.kind == "CaskConvolution" && layer.name.rfind("/2/Pad + ", 0) == 0 &&
                             layer.inputPrecision == "INT8";
        }
    }
    EXPECT_TRUE(padInConvLayer);
}

TEST(RealDataRuleRefitScaleGroup, RefittableBuildWithMergedQuantizes)
{
    REQUIRE_SHARED();
    // The TensorRT 8.4 YOLOv8 log merges two Quantizes as duplicates (line 66). Built with --refit, a refit must keep
    // their scales equal; the log as it is (no --refit) is the near-identical case.
    const auto original = realdata("blogdoc-yolov8-qdq-orin-trt8412/blogdoc-yolov8-qdq-orin-trt8412.log.txt");
    std::string text = readFile(original);
    const std::size_t at = text.find("--int8 ");
    ASSERT_NE(at, std::string::npos);
    text.insert(at, "--refit ");
    const auto refittable = writeFile(tempDir("refit-log") / "build.log", text);
    for (const auto& [path, expected] : {std::pair{refittable, 1u}, std::pair{original, 0u}})
    {
        InputFiles files;
        files.files = {path.string()};
        Inputs inputs = loadInputs(files, Limits{});
        auto found = findingsOf(diagnose(inputs), "refit-scale-group");
        ASSERT_EQ(found.size(), expected) << path;
        if (expected == 1u)
        {
            EXPECT_NE(found[0].message.find("/model/backbone2/cv2/conv/_input_quantizer/QuantizeLinear_clone_1"),
                      std::string::npos);
            ASSERT_FALSE(found[0].evidence.empty());
            EXPECT_EQ(found[0].evidence[0].line, 66u);
        }
    }
}

TEST(RuleQdqBetweenPadAndConv, FixMovesThePairBeforeThePad)
{
    // Saved through the ONNX writer and fixed in process: the warning is gone from the written model.
    GraphBuilder g;
    std::string padded = g.node("Pad", "/pad/Pad", {g.input("images", {1, 16, 32, 32})});
    g.intsAttribute("/pad/Pad", "pads", {0, 0, 1, 1, 0, 0, 1, 1});
    g.output(g.node("Conv", "/conv/Conv", {g.qdq("/conv/in_q", padded, 0.04f), g.quantizedWeight("conv", 32, 16)}),
             {1, 32, 32, 32});
    const auto dir = tempDir("fix-pad-conv");
    g.save((dir / "model.onnx").string());
    InputFiles files;
    files.files = {(dir / "model.onnx").string()};
    FixOptions options;
    options.output = (dir / "fixed.onnx").string();
    options.rules = {"qdq-between-pad-and-conv"};
    FixReport report = runFix(files, options, Limits{});
    // (The hand-made Pad has its pads as an attribute, opset 2 style: the checker objects to the input model and the
    // fixed one alike, which is not this rule's concern.)
    EXPECT_TRUE(report.written);
    EXPECT_FALSE(report.edits.empty());
    InputFiles fixedFiles;
    fixedFiles.files = {(dir / "fixed.onnx").string()};
    Inputs fixed = loadInputs(fixedFiles, Limits{});
    EXPECT_TRUE(findingsOf(diagnose(fixed), "qdq-between-pad-and-conv").empty());
    // The Pad now reads the dequantized input, and the Conv reads the Pad directly.
    const OnnxNode* pad = fixed.onnx->findNode("/pad/Pad");
    const OnnxNode* conv = fixed.onnx->findNode("/conv/Conv");
    ASSERT_NE(pad, nullptr);
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->inputs[0], pad->outputs[0]);
    EXPECT_NE(pad->inputs[0], "images");
}
