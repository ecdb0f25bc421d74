// fix --calibration-cache (docs/fix.md#calibration-cache): an FP32 model and an implicit build's calibration cache
// become the model of an explicitly quantized build. Small models built here, each beside a near-identical one that
// must come out otherwise; the real caches of ../shared/calibration with their models; and the A100 ResNet-18 recipe,
// whose predicted explicit engine must have the layer structure of the real -qat-residual-qgap engine.
#include "test_support.h"

#include "graph_builder.h"
#include "qdq/fix.h"
#include "qdq/predict.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>

using namespace qdq;
using namespace qdq::test;

namespace
{

std::uint32_t bitsOf(float value)
{
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

//! A cache as TensorRT writes one: the header, then "tensor: 8 hex digits" per tensor.
std::string cacheText(const std::vector<std::pair<std::string, float>>& scales,
                      const std::string& header = "TRT-8601-EntropyCalibration2")
{
    std::string text = header + "\n";
    for (const auto& [tensor, scale] : scales)
    {
        char hex[16];
        std::snprintf(hex, sizeof(hex), "%08x", bitsOf(scale));
        text += tensor + ": " + hex + "\n";
    }
    return text;
}

void writeText(const std::filesystem::path& path, const std::string& text)
{
    std::ofstream(path, std::ios::binary) << text;
}

struct CalibrationRun
{
    FixReport report;
    OnnxGraph fixed;
};

CalibrationRun fixWithCache(const std::filesystem::path& model, const std::string& cache, const std::string& name)
{
    const std::filesystem::path folder = tempDir("fix-calibration-" + name);
    const std::filesystem::path cachePath = folder / "calibration.cache";
    writeText(cachePath, cache);
    InputFiles files;
    files.files = {model.string()};
    FixOptions options;
    options.output = (folder / "explicit.onnx").string();
    options.calibrationCache = cachePath.string();
    CalibrationRun run;
    run.report = runFix(files, options, Limits{});
    run.fixed = readOnnx(options.output);
    return run;
}

CalibrationRun fixBuilt(GraphBuilder& g, const std::string& cache, const std::string& name)
{
    const std::filesystem::path model = tempDir("fix-calibration-model-" + name) / "model.onnx";
    g.save(model.string());
    return fixWithCache(model, cache, name);
}

//! "consumer|input" for every input of a non-Q/DQ node that a DequantizeLinear writes.
std::set<std::string> quantizedReads(const OnnxGraph& graph)
{
    std::set<std::string> reads;
    for (const auto& node : graph.nodes)
    {
        if (node.qdqKind != OnnxNode::QdqKind::kNone)
        {
            continue;
        }
        for (std::size_t i = 0; i < node.inputs.size(); ++i)
        {
            const OnnxNode* producer = graph.producer(TensorKey(node.inputs[i]));
            if (producer != nullptr && producer->opType == "DequantizeLinear")
            {
                reads.insert(node.name + "|" + std::to_string(i));
            }
        }
    }
    return reads;
}

//! The scale of the QuantizeLinear that quantizes tensor (per tensor), or nullopt.
std::optional<double> quantizeScaleOf(const OnnxGraph& graph, const std::string& tensor)
{
    for (const auto& parameters : graph.qdq)
    {
        const OnnxNode& node = graph.nodes[parameters.node];
        if (parameters.isQuantize && node.inputs[0] == tensor && parameters.scale.size() == 1)
        {
            return parameters.scale[0];
        }
    }
    return std::nullopt;
}

//! x -> Conv -> Relu -> Conv -> Add(., x) -> Relu: a residual block.
void residualBlock(GraphBuilder& g)
{
    const std::string x = g.input("x", {1, 8, 16, 16});
    std::string t = g.node("Conv", "/c1", {x, g.weight("w1", {8, 8, 3, 3}, 0.02f)});
    g.intsAttribute("/c1", "pads", {1, 1, 1, 1});
    t = g.node("Relu", "/r1", {t});
    t = g.node("Conv", "/c2", {t, g.weight("w2", {8, 8, 3, 3}, 0.03f)});
    g.intsAttribute("/c2", "pads", {1, 1, 1, 1});
    t = g.node("Add", "/add", {t, x});
    g.output(g.node("Relu", "/r2", {t}), {1, 8, 16, 16});
}

} // namespace

// The weighted ops' inputs and weights and the residual Add's other input take pairs; the input shared by the first
// conv and the Add takes one pair with the cache's scale, bit-exact; the weights take per-channel scales.
TEST(FixCalibration, ResidualBlockGetsConvInputsWeightsAndTheResidual)
{
    GraphBuilder g;
    residualBlock(g);
    const float xScale = 0.0213f;
    const CalibrationRun run = fixBuilt(
        g, cacheText({{"x", xScale}, {"/r1_out", 0.011f}, {"/c2_out", 0.03f}, {"/add_out", 0.04f}}), "residual");
    ASSERT_TRUE(run.report.calibration);
    const CalibrationFixSummary& summary = *run.report.calibration;
    EXPECT_EQ(summary.quantizedOps, 2u);
    EXPECT_EQ(summary.weightQdq, 2u);
    EXPECT_EQ(summary.activationQdq, 2u); // x (for /c1 and /add) and /r1_out
    EXPECT_TRUE(summary.keptFloat.empty());
    EXPECT_EQ(run.report.checker, "passed");
    EXPECT_EQ(quantizedReads(run.fixed), (std::set<std::string>{"/c1|0", "/c1|1", "/c2|0", "/c2|1", "/add|1"}));
    ASSERT_TRUE(quantizeScaleOf(run.fixed, "x"));
    EXPECT_EQ(bitsOf(static_cast<float>(*quantizeScaleOf(run.fixed, "x"))), bitsOf(xScale));
    // Per channel: 8 scales of max |w| / 127 on axis 0.
    bool perChannel = false;
    for (const auto& parameters : run.fixed.qdq)
    {
        if (parameters.isQuantize && run.fixed.nodes[parameters.node].inputs[0] == "w1")
        {
            perChannel = parameters.scale.size() == 8 && parameters.axis == 0 &&
                         std::fabs(parameters.scale[0] - 0.02 / 127.0) < 1e-9;
        }
    }
    EXPECT_TRUE(perChannel);
    EXPECT_EQ(run.report.after.predicted.convWithResidualAdd, 1u);
    EXPECT_NE(summary.trtexec.find("--stronglyTyped"), std::string::npos);
    EXPECT_EQ(summary.trtexec.find("--int8"), std::string::npos);
    EXPECT_EQ(summary.trtexec.find("--calib"), std::string::npos);
}

// Near-identical: the cache lacks x. The first conv stays float (no scale is invented) and so does the residual.
TEST(FixCalibration, AMissingScaleLeavesItsOpFloatAndSaysSo)
{
    GraphBuilder g;
    residualBlock(g);
    const CalibrationRun run = fixBuilt(g, cacheText({{"/r1_out", 0.011f}, {"/c2_out", 0.03f}}), "missing");
    const CalibrationFixSummary& summary = *run.report.calibration;
    EXPECT_EQ(summary.quantizedOps, 1u);
    EXPECT_EQ(quantizedReads(run.fixed), (std::set<std::string>{"/c2|0", "/c2|1"}));
    std::set<std::string> kept;
    for (const auto& entry : summary.keptFloat)
    {
        kept.insert(entry.node);
        EXPECT_NE(entry.why.find("no scale"), std::string::npos) << entry.why;
    }
    EXPECT_EQ(kept, (std::set<std::string>{"/c1", "/add"}));
}

namespace
{

//! x -> Conv -> Relu -> MaxPool -> Conv, or, withoutStem, x -> MaxPool -> Conv.
void convReluPool(GraphBuilder& g, bool withoutStem)
{
    const std::string x = g.input("x", {1, 4, 16, 16});
    std::string t = x;
    if (!withoutStem)
    {
        t = g.node("Conv", "/c1", {x, g.weight("w1", {4, 4, 3, 3})});
        t = g.node("Relu", "/relu", {t});
    }
    t = g.node("MaxPool", "/pool", {t});
    g.intsAttribute("/pool", "kernel_shape", {2, 2});
    g.intsAttribute("/pool", "strides", {2, 2});
    t = g.node("Conv", "/c2", {t, g.weight("w2", {8, 4, 1, 1})});
    g.output(t);
}

} // namespace

// Report c: nothing between Conv -> Relu and MaxPool, so TensorRT can fuse Conv-Act-Pool; the pool's output is the
// next conv's quantized input.
TEST(FixCalibration, ConvReluMaxPoolIsLeftToConvActPool)
{
    GraphBuilder g;
    convReluPool(g, false);
    const CalibrationRun run =
        fixBuilt(g, cacheText({{"x", 0.02f}, {"/relu_out", 0.01f}, {"/pool_out", 0.01f}, {"/c1_out", 0.01f}}), "pool");
    EXPECT_EQ(quantizedReads(run.fixed), (std::set<std::string>{"/c1|0", "/c1|1", "/c2|0", "/c2|1"}));
    EXPECT_EQ(run.report.after.predicted.convActPool, 1u);
}

// Near-identical: a MaxPool with no conv before it runs INT8 with its own input quantized (the Q/DQ crosses it).
TEST(FixCalibration, APoolWithoutAConvBeforeItGetsItsInputQuantized)
{
    GraphBuilder g;
    convReluPool(g, true);
    const CalibrationRun run = fixBuilt(g, cacheText({{"x", 0.02f}, {"/pool_out", 0.02f}}), "pool-alone");
    EXPECT_EQ(quantizedReads(run.fixed), (std::set<std::string>{"/pool|0", "/c2|0", "/c2|1"}))
        << renderFixText(run.report);
    EXPECT_EQ(run.report.after.predicted.convActPool, 0u);
}

namespace
{

//! Two convs concatenated, read by a third.
void convConcatConv(GraphBuilder& g)
{
    const std::string x = g.input("x", {1, 4, 8, 8});
    const std::string a = g.node("Conv", "/a", {x, g.weight("wa", {4, 4, 1, 1})});
    const std::string b = g.node("Conv", "/b", {x, g.weight("wb", {4, 4, 1, 1})});
    const std::string cat = g.node("Concat", "/cat", {a, b});
    g.intAttribute("/cat", "axis", 1);
    g.output(g.node("Conv", "/c", {cat, g.weight("wc", {4, 8, 1, 1})}));
}

} // namespace

// Report e: the Concat's inputs and its reader's pair share one scale, the largest of the cache's.
TEST(FixCalibration, ConcatInputsShareTheLargestScale)
{
    GraphBuilder g;
    convConcatConv(g);
    const CalibrationRun run =
        fixBuilt(g, cacheText({{"x", 0.02f}, {"/a_out", 0.01f}, {"/b_out", 0.03f}, {"/cat_out", 0.025f}}), "concat");
    EXPECT_TRUE(quantizedReads(run.fixed).count("/cat|0"));
    EXPECT_TRUE(quantizedReads(run.fixed).count("/cat|1"));
    for (const char* tensor : {"/a_out", "/b_out", "/cat_out"})
    {
        ASSERT_TRUE(quantizeScaleOf(run.fixed, tensor)) << tensor;
        EXPECT_EQ(bitsOf(static_cast<float>(*quantizeScaleOf(run.fixed, tensor))), bitsOf(0.03f)) << tensor;
    }
    EXPECT_EQ(run.report.checker, "passed");
}

// Near-identical: scales 10x apart are not shared: the Concat's inputs stay float and the report says why.
TEST(FixCalibration, ConcatScalesTooFarApartStayFloat)
{
    GraphBuilder g;
    convConcatConv(g);
    const CalibrationRun run = fixBuilt(
        g, cacheText({{"x", 0.02f}, {"/a_out", 0.003f}, {"/b_out", 0.03f}, {"/cat_out", 0.03f}}), "concat-far");
    EXPECT_FALSE(quantizedReads(run.fixed).count("/cat|0"));
    EXPECT_FALSE(quantizedReads(run.fixed).count("/cat|1"));
    EXPECT_TRUE(quantizedReads(run.fixed).count("/c|0")); // the conv after it still runs INT8
    bool told = false;
    for (const auto& kept : run.report.calibration->keptFloat)
    {
        told = told || (kept.node == "/cat" && kept.why.find("apart") != std::string::npos);
    }
    EXPECT_TRUE(told);
}

namespace
{

void unsqueezeModel(GraphBuilder& g, long opset)
{
    g.opset("", opset);
    const std::string x = g.input("x", {1, 4, 8, 8});
    std::string t = g.node("Conv", "/c", {x, g.weight("w", {4, 4, 1, 1})});
    t = g.node("Unsqueeze", "/u", {t});
    g.intsAttribute("/u", "axes", {0});
    g.output(t, {1, 1, 4, 8, 8});
}

} // namespace

// An opset-11 model is raised to 13 for the per-channel weights, its Unsqueeze given its axes as an input.
TEST(FixCalibration, Opset11IsRaisedTo13WithUnsqueezeRewritten)
{
    GraphBuilder g;
    unsqueezeModel(g, 11);
    const CalibrationRun run = fixBuilt(g, cacheText({{"x", 0.02f}}), "opset11");
    const CalibrationFixSummary& summary = *run.report.calibration;
    EXPECT_EQ(summary.opsetFrom, 11);
    EXPECT_EQ(summary.opsetTo, 13);
    ASSERT_EQ(summary.rewrittenForOpset.size(), 1u);
    EXPECT_EQ(run.report.checker, "passed");
    const OnnxNode* unsqueeze = run.fixed.findNode("/u");
    ASSERT_NE(unsqueeze, nullptr);
    EXPECT_EQ(unsqueeze->inputs.size(), 2u);
    EXPECT_EQ(unsqueeze->attribute("axes"), nullptr);
    std::int64_t opset = 0;
    for (const auto& [domain, version] : run.fixed.opsets)
    {
        opset = domain.empty() ? version : opset;
    }
    EXPECT_EQ(opset, 13);
}

// Near-identical at opset 13 (the default of the builder): nothing rewritten, the opset kept.
TEST(FixCalibration, Opset13IsKept)
{
    GraphBuilder g;
    const std::string x = g.input("x", {1, 4, 8, 8});
    std::string t = g.node("Conv", "/c", {x, g.weight("w", {4, 4, 1, 1})});
    t = g.node("Flatten", "/u", {t});
    g.output(t, {1, 256});
    const CalibrationRun run = fixBuilt(g, cacheText({{"x", 0.02f}}), "opset13");
    EXPECT_EQ(run.report.calibration->opsetFrom, run.report.calibration->opsetTo);
    EXPECT_TRUE(run.report.calibration->rewrittenForOpset.empty());
    EXPECT_EQ(run.report.checker, "passed");
}

// A Softmax over a flattened axis reads otherwise in opset 13: the raise is refused, naming the node.
TEST(FixCalibration, Opset11SoftmaxOverAFlattenedAxisIsRefused)
{
    GraphBuilder g;
    g.opset("", 11);
    const std::string x = g.input("x", {1, 4, 8, 8});
    std::string t = g.node("Conv", "/c", {x, g.weight("w", {4, 4, 1, 1})});
    g.output(g.node("Softmax", "/softmax", {t}));
    const std::filesystem::path model = tempDir("fix-calibration-softmax") / "model.onnx";
    g.save(model.string());
    try
    {
        fixWithCache(model, cacheText({{"x", 0.02f}}), "softmax");
        FAIL() << "raised an opset-11 Softmax to 13";
    }
    catch (const InputError& error)
    {
        EXPECT_NE(error.message().find("/softmax"), std::string::npos) << error.message();
    }
}

// Names the model lacks and TensorRT's own are reported, not fatal; a model that already has Q/DQ is refused.
TEST(FixCalibration, UnknownNamesAreNotedAndQuantizedModelsRefused)
{
    GraphBuilder g;
    residualBlock(g);
    const CalibrationRun run = fixBuilt(
        g, cacheText({{"x", 0.02f}, {"/r1_out", 0.01f}, {"(Unnamed Layer* 5) [Constant]_output", 0.1f}, {"107", 0.2f}}),
        "names");
    EXPECT_EQ(run.report.calibration->internalNames,
              (std::vector<std::string>{"(Unnamed Layer* 5) [Constant]_output"}));
    EXPECT_EQ(run.report.calibration->namesNotInModel, (std::vector<std::string>{"107"}));

    GraphBuilder quantized;
    const std::string x = quantized.qdq("/in", quantized.input("x", {1, 4, 8, 8}));
    quantized.output(quantized.node("Conv", "/c", {x, quantized.quantizedWeight("/w", 4, 4, 1)}));
    const std::filesystem::path model = tempDir("fix-calibration-quantized") / "model.onnx";
    quantized.save(model.string());
    EXPECT_THROW(fixWithCache(model, cacheText({{"x", 0.02f}}), "quantized"), InputError);
}

// Through the command line: the cache given by option, a report naming it and the trtexec line; a broken cache is
// exit 2 naming its line; a file that is no cache given as one is refused.
TEST(FixCalibration, CommandLine)
{
    GraphBuilder g;
    residualBlock(g);
    const std::filesystem::path folder = tempDir("fix-calibration-cli");
    g.save((folder / "model.onnx").string());
    writeText(folder / "good.cache", cacheText({{"x", 0.02f}, {"/r1_out", 0.01f}}));
    writeText(folder / "bad.cache", "TRT-8601-EntropyCalibration2\nx: 3c23d70a\n/r1_out: zz\n");
    const CommandResult good = runCli({"fix", (folder / "model.onnx").string(), "--calibration-cache",
                                       (folder / "good.cache").string(), "-o", (folder / "out.onnx").string()});
    ASSERT_EQ(good.exitStatus, 0) << good.err;
    EXPECT_NE(good.out.find("Calibration cache: " + (folder / "good.cache").string()), std::string::npos) << good.out;
    EXPECT_NE(good.out.find("build it with: trtexec --onnx=" + (folder / "out.onnx").string()), std::string::npos);
    const CommandResult bad = runCli({"fix", (folder / "model.onnx").string(), "--calibration-cache",
                                      (folder / "bad.cache").string(), "-o", (folder / "out2.onnx").string()});
    EXPECT_EQ(bad.exitStatus, 2);
    EXPECT_NE(bad.err.find("bad.cache:3"), std::string::npos) << bad.err;
    EXPECT_FALSE(std::filesystem::exists(folder / "out2.onnx"));
    const CommandResult notACache = runCli({"fix", (folder / "model.onnx").string(), "--calibration-cache",
                                            (folder / "model.onnx").string(), "-o", (folder / "out3.onnx").string()});
    EXPECT_EQ(notACache.exitStatus, 2);
    EXPECT_NE(notACache.err.find("given as --calibration-cache"), std::string::npos) << notACache.err;
}

// ----- real caches ------------------------------------------------------------------------------------------------

namespace
{

CalibrationRun fixRealSet(const std::filesystem::path& model, const std::filesystem::path& cache,
                          const std::string& name)
{
    InputFiles files;
    files.files = {model.string()};
    FixOptions options;
    options.output = (tempDir("fix-calibration-real-" + name) / "explicit.onnx").string();
    options.calibrationCache = cache.string();
    CalibrationRun run;
    run.report = runFix(files, options, Limits{});
    run.fixed = readOnnx(options.output);
    return run;
}

//! Every activation Q's scale bits are an entry of the cache, bit-exact
void expectScalesFromTheCache(const OnnxGraph& fixed, const CalibrationCache& cache, std::size_t& checked)
{
    // (the entry of the tensor itself, of the tensor a shape op reshaped, or a Concat's shared one)
    std::set<std::uint32_t> cacheBits;
    for (const auto& entry : cache.scales)
    {
        cacheBits.insert(entry.bits);
    }
    for (const auto& parameters : fixed.qdq)
    {
        if (!parameters.isQuantize || parameters.scale.size() != 1 ||
            fixed.isConstant(fixed.nodes[parameters.node].inputs[0]))
        {
            continue; // a weight: its scale comes from its values
        }
        const std::string tensor(fixed.nodes[parameters.node].inputs[0]);
        const std::uint32_t bits = bitsOf(static_cast<float>(parameters.scale[0]));
        EXPECT_TRUE(cacheBits.count(bits) != 0) << tensor << " takes a scale the cache does not hold";
        ++checked;
    }
}

} // namespace

// The Keras depthwise CNN (TensorRT 8.4.1, tf2onnx opset 13): its 9 convs run INT8 with the cache's scales; the 8
// TensorRT-internal names are reported.
TEST(RealDataFixCalibration, DepthwiseCnnCacheBecomesItsExplicitModel)
{
    REQUIRE_SHARED_PATH(set, "calibration/g5-cnn-depthwise-trt841");
    const CalibrationRun run =
        fixRealSet(set / "CNN_Depthwise.1b5dae4.onnx", set / "calibration.cache", "g5-cnn-depthwise");
    ASSERT_TRUE(run.report.calibration);
    const CalibrationFixSummary& summary = *run.report.calibration;
    EXPECT_EQ(summary.version, "8.4.1");
    EXPECT_EQ(summary.entries, 36u);
    EXPECT_EQ(summary.internalNames.size(), 8u);
    EXPECT_TRUE(summary.namesNotInModel.empty());
    EXPECT_EQ(summary.quantizedOps, 9u) << renderFixText(run.report);
    EXPECT_EQ(summary.weightQdq, 9u);
    EXPECT_TRUE(summary.keptFloat.empty());
    EXPECT_EQ(run.report.checker, "passed");
    std::size_t checked = 0;
    expectScalesFromTheCache(run.fixed, readCalibrationCache((set / "calibration.cache").string()), checked);
    EXPECT_EQ(checked, summary.activationQdq);
}

// The PyTorch U-Net (TensorRT 8.0.1, opset 11): raised to 13 with its Unsqueezes rewritten; the 17 names of another
// export and the 32 TensorRT-internal ones are reported, not fatal.
TEST(RealDataFixCalibration, OpsetElevenUnetCacheBecomesItsExplicitModel)
{
    REQUIRE_SHARED_PATH(set, "calibration/lannyyip-unet-instnorm-trt801");
    const CalibrationRun run = fixRealSet(set / "my_model.onnx", set / "calibration.cache", "unet");
    ASSERT_TRUE(run.report.calibration);
    const CalibrationFixSummary& summary = *run.report.calibration;
    EXPECT_EQ(summary.version, "8.0.1");
    EXPECT_EQ(summary.entries, 108u);
    EXPECT_EQ(summary.internalNames.size(), 32u);
    EXPECT_EQ(summary.namesNotInModel.size(), 17u);
    EXPECT_EQ(summary.opsetFrom, 11);
    EXPECT_EQ(summary.opsetTo, 13);
    EXPECT_EQ(summary.rewrittenForOpset.size(), 4u); // its four Unsqueeze nodes
    EXPECT_GT(summary.quantizedOps, 0u);
    EXPECT_EQ(run.report.checker, "passed");
    std::size_t checked = 0;
    expectScalesFromTheCache(run.fixed, readCalibrationCache((set / "calibration.cache").string()), checked);
    EXPECT_EQ(checked, summary.activationQdq);
}

namespace
{

//! What a layer name says op by op, the ops that decide a conv layer's structure only: "Conv + Add" for
//! "layer1.0.conv2.weight + QuantizeLinear_32 + Conv_34 + Add_36 + Relu_37" and for the predicted
//! "qdq_doctor/.../QuantizeLinear + /layer1/layer1.0/conv2/Conv + /layer1/layer1.0/Add + ...".
std::string structureOfName(std::string_view name)
{
    std::string ops;
    for (std::size_t start = 0; start <= name.size();)
    {
        std::size_t end = name.find(" + ", start);
        end = end == std::string_view::npos ? name.size() : end;
        std::string_view part = name.substr(start, end - start);
        part = part.substr(part.rfind('/') == std::string_view::npos ? 0 : part.rfind('/') + 1);
        // Relu is left out: the real engine names a conv's fused BatchNormalization + Relu after the conv alone,
        // which the FP32 model (its BatchNormalization folded) does not have.
        for (const char* op : {"Conv", "Add", "MaxPool", "GlobalAveragePool", "Gemm"})
        {
            if (part.rfind(op, 0) == 0 && (part.size() == std::strlen(op) || part[std::strlen(op)] == '_'))
            {
                ops += (ops.empty() ? "" : " + ") + std::string(op);
            }
        }
        start = end + 3;
    }
    return ops;
}

//! The FP32 ResNet-18 with random weights in its .data file (the shared model is graph-only).
std::filesystem::path resnetWithRandomWeights(const std::filesystem::path& graphOnly)
{
    const std::filesystem::path folder = tempDir("fix-calibration-resnet18");
    const std::filesystem::path model = folder / graphOnly.filename();
    std::filesystem::copy_file(graphOnly, model, std::filesystem::copy_options::overwrite_existing);
    const OnnxGraph graph = readOnnx(model.string());
    std::int64_t bytes = 0;
    for (const auto& constant : graph.constants)
    {
        if (constant.external)
        {
            bytes = std::max(bytes, constant.externalOffset + constant.externalLength);
        }
    }
    std::vector<float> values(static_cast<std::size_t>(bytes) / sizeof(float));
    std::mt19937 random(1234);
    std::uniform_real_distribution<float> uniform(-0.1f, 0.1f);
    for (float& value : values)
    {
        value = uniform(random);
    }
    std::ofstream data(folder / (graphOnly.filename().string() + ".data"), std::ios::binary);
    data.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(bytes));
    return model;
}

//! The cache an implicit build of resnet18-fp32 would have stored: a scale for every tensor, the recipe's where the
//! recipe quantizes the tensor (its projection shortcuts' BatchNormalization output is the shortcut conv's output
//! here, BatchNormalization being folded), 0.05 elsewhere.
std::string resnetCache(const OnnxGraph& fp32, const OnnxGraph& recipe)
{
    std::map<std::string, float> recipeScales;
    for (const auto& parameters : recipe.qdq)
    {
        const OnnxNode& node = recipe.nodes[parameters.node];
        if (parameters.isQuantize && parameters.scale.size() == 1 && !recipe.isConstant(node.inputs[0]))
        {
            std::string tensor(node.inputs[0]);
            if (const auto at = tensor.find("downsample.1/BatchNormalization"); at != std::string::npos)
            {
                tensor = tensor.substr(0, at) + "downsample.0/Conv_output_0";
            }
            recipeScales.emplace(tensor, static_cast<float>(parameters.scale[0]));
        }
    }
    std::vector<std::pair<std::string, float>> scales;
    for (const std::string& input : fp32.graphInputs)
    {
        scales.emplace_back(input, recipeScales.count(input) ? recipeScales[input] : 0.05f);
    }
    for (const auto& node : fp32.nodes)
    {
        for (const auto& output : node.outputs)
        {
            const std::string tensor(output);
            scales.emplace_back(tensor, recipeScales.count(tensor) ? recipeScales[tensor] : 0.05f);
        }
    }
    return cacheText(scales, "TRT-8401-EntropyCalibration2");
}

} // namespace

// Done means (issue 40): the FP32 ResNet-18 with the cache an implicit build would have stored becomes a model whose
// predicted explicit engine has the structure of the real A100 -qat-residual-qgap engine: one standalone Q/DQ, the
// stem's Conv-Act-Pool, every Conv+Add INT8, the same conv layers op by op.
TEST(RealDataFixCalibration, ResNet18CacheGivesTheStructureOfTheRealQgapEngine)
{
    REQUIRE_SHARED_PATH(fp32, "models/resnet18-fp32.onnx");
    REQUIRE_SHARED_PATH(recipe, "models/resnet18-qat-residual-qgap.onnx");
    REQUIRE_SHARED_PATH(engineFolder, "realdata/trex-pt-resnet-a100-qat-residual-qgap");
    const std::filesystem::path model = resnetWithRandomWeights(fp32);
    const std::string cache = resnetCache(readOnnx(fp32.string()), readOnnx(recipe.string()));
    const CalibrationRun run = fixWithCache(model, cache, "resnet18");
    ASSERT_TRUE(run.report.calibration);
    EXPECT_EQ(run.report.calibration->quantizedOps, 21u); // 20 convs and the fc Gemm
    EXPECT_TRUE(run.report.calibration->keptFloat.empty());
    EXPECT_EQ(run.report.checker, "passed");

    const EnginePlan engine =
        readLayerInfo((engineFolder / "resnet-qat-residual-qgap.onnx.engine.graph.json").string());
    std::multiset<std::string> real;
    std::size_t realStandalone = 0;
    for (const auto& layer : engine.layers)
    {
        const std::string ops = structureOfName(layer.baseName());
        if (ops.find("Conv") != std::string::npos && layer.name.find("Reformatting") == std::string::npos)
        {
            real.insert(ops);
        }
        realStandalone += ops.empty() && (layer.name.find("QuantizeLinear") != std::string::npos ||
                                          layer.name.find("DequantizeLinear") != std::string::npos);
    }
    SimulationOptions options;
    options.trtMajor = 8;
    options.trtMinor = 4;
    const Prediction prediction = predictEngine(run.fixed, options);
    std::multiset<std::string> predicted;
    for (const auto& layer : prediction.layers)
    {
        const std::string ops = structureOfName(layer.name);
        if (ops.find("Conv") != std::string::npos)
        {
            predicted.insert(ops);
            EXPECT_TRUE(layer.int8Input) << layer.name << " reads " << layer.inputPrecision;
        }
    }
    EXPECT_EQ(predicted, real);
    EXPECT_EQ(realStandalone, 1u);
    EXPECT_EQ(run.report.after.predicted.standaloneQdq, realStandalone);
    EXPECT_EQ(run.report.after.predicted.convActPool, 1u);
    EXPECT_EQ(run.report.after.predicted.convWithResidualAdd, 8u);
}

// A cache is an input kind of its own, told by its content; diagnose names it and leaves it to fix, and a second one
// is refused.
TEST(FixCalibration, ACacheIsAnInputKind)
{
    EXPECT_EQ(detectInputKindFromPrefix(cacheText({{"x", 0.02f}}), "c.cache"), InputKind::kCalibrationCache);
    EXPECT_EQ(detectInputKindFromPrefix("x: 6.5\ny: 1.25\n", "ranges.txt"), InputKind::kCalibrationCache);
    // Near-identical text that is a log stays a log.
    EXPECT_EQ(detectInputKindFromPrefix("[08/18/2022-12:25:06] [I] [TRT] x: 3c23d70a\n", "build.log"),
              InputKind::kBuildLog);
    const std::filesystem::path folder = tempDir("fix-calibration-kind");
    GraphBuilder g;
    residualBlock(g);
    g.save((folder / "model.onnx").string());
    writeText(folder / "a.cache", cacheText({{"x", 0.02f}}));
    writeText(folder / "b.cache", cacheText({{"x", 0.03f}}));
    const CommandResult one = runCli({"diagnose", (folder / "model.onnx").string(), (folder / "a.cache").string()});
    ASSERT_EQ(one.exitStatus, 0) << one.err;
    EXPECT_NE(one.out.find("a calibration cache (1 scales, TensorRT 8.6.1)"), std::string::npos) << one.out;
    const CommandResult two = runCli(
        {"diagnose", (folder / "model.onnx").string(), (folder / "a.cache").string(), (folder / "b.cache").string()});
    EXPECT_EQ(two.exitStatus, 2);
    EXPECT_NE(two.err.find("a second calibration cache"), std::string::npos) << two.err;
}

// The writer raises the default domain's opset (and an IR version below 7) and leaves a newer opset as it is.
TEST(FixCalibration, WriterRaisesTheDefaultOpsetOnly)
{
    const std::filesystem::path folder = tempDir("fix-calibration-opset-writer");
    for (const long opset : {11L, 17L})
    {
        GraphBuilder g;
        g.opset("", opset);
        g.opset("com.example", 1);
        g.output(g.node("Relu", "/r", {g.input("x", {1, 4})}), {1, 4});
        const std::filesystem::path model = folder / ("opset" + std::to_string(opset) + ".onnx");
        g.save(model.string());
        ModelEdits edits;
        edits.defaultOpset = 13;
        MemoryModelSink sink;
        const ModelWriteResult written = writeEditedModel(model.string(), edits, sink);
        EXPECT_EQ(written.opsetRaised, opset < 13) << opset;
        const OnnxGraph graph = readOnnxFromBuffer(sink.bytes(), "written.onnx");
        std::map<std::string, std::int64_t> opsets(graph.opsets.begin(), graph.opsets.end());
        EXPECT_EQ(opsets[""], std::max<std::int64_t>(opset, 13)) << opset;
        EXPECT_EQ(opsets["com.example"], 1);
        EXPECT_GE(graph.irVersion, 7);
    }
}

namespace
{

//! The dynamic ranges TensorRT 8.5.10 set in the implicit --best build of mnist.onnx, as a range file: its log's
//! "Setting dynamic range for X to [-a,a]" lines.
std::filesystem::path mnistRanges(const std::filesystem::path& log)
{
    std::ifstream in(log);
    std::string line;
    std::string ranges;
    const std::string marker = "Setting dynamic range for ";
    while (std::getline(in, line))
    {
        const auto at = line.find(marker);
        const auto to = line.rfind(" to [");
        const auto comma = line.rfind(',');
        if (at == std::string::npos || to == std::string::npos || comma == std::string::npos)
        {
            continue;
        }
        ranges += line.substr(at + marker.size(), to - at - marker.size()) + ": " +
                  line.substr(comma + 1, line.rfind(']') - comma - 1) + "\n";
    }
    const std::filesystem::path path = tempDir("fix-calibration-mnist-ranges") / "mnist-ranges.txt";
    writeText(path, ranges);
    return path;
}

} // namespace

// The real implicit --best build of mnist.onnx (TensorRT 8.5.10, Orin): from its log's dynamic ranges the opset-8
// model becomes an opset-13 explicit one whose convs run INT8 and whose stem is left to Conv-Act-Pool (its bias Add
// and Relu in between). Given the log too, fix follows its engine, where every layer ran FP32: nothing is quantized.
TEST(RealDataFixCalibration, MnistFollowsItsImplicitEngine)
{
    REQUIRE_SHARED_PATH(folder, "realdata/lix-mnist-orin-trt8510-best");
    const std::filesystem::path ranges = mnistRanges(folder / "trt_build_best.log");
    InputFiles files;
    files.files = {(folder / "mnist.onnx").string()};
    FixOptions options;
    options.output = (tempDir("fix-calibration-mnist") / "explicit.onnx").string();
    options.calibrationCache = ranges.string();
    const FixReport alone = runFix(files, options, Limits{});
    ASSERT_TRUE(alone.calibration);
    EXPECT_EQ(alone.calibration->entries, 19u);
    EXPECT_EQ(alone.calibration->opsetFrom, 8);
    EXPECT_EQ(alone.calibration->quantizedOps, 2u);
    EXPECT_EQ(alone.checker, "passed");
    EXPECT_EQ(alone.after.predicted.convActPool, 1u);
    EXPECT_EQ(alone.buildMode.trtMajor, 11);
    EXPECT_TRUE(alone.buildMode.stronglyTyped());

    files.files.push_back((folder / "trt_build_best.log").string());
    options.output = (tempDir("fix-calibration-mnist-log") / "explicit.onnx").string();
    const FixReport followed = runFix(files, options, Limits{});
    ASSERT_TRUE(followed.calibration);
    const CalibrationFixSummary& summary = *followed.calibration;
    EXPECT_EQ(summary.implicitEngine, (folder / "trt_build_best.log").string());
    EXPECT_EQ(summary.implicitLayers, 7u);
    EXPECT_EQ(summary.implicitConvActPool, 0u); // its convs and pools ran as separate FP32 layers
    EXPECT_EQ(summary.implicitStandaloneQdq, 0u);
    EXPECT_EQ(summary.quantizedOps, 0u);
    ASSERT_EQ(summary.keptFloat.size(), 2u);
    for (const auto& kept : summary.keptFloat)
    {
        EXPECT_NE(kept.why.find("ran in float in the implicit engine"), std::string::npos) << kept.why;
    }
    EXPECT_TRUE(summary.engineDifferences.empty());
    EXPECT_EQ(followed.after.predicted.standaloneQdq, 0u);
    // The target is still the explicit, strongly typed build, not the implicit one the log tells.
    EXPECT_TRUE(followed.buildMode.stronglyTyped());
    bool typingTold = false;
    for (const auto& note : summary.notes)
    {
        typingTold = typingTold || note.find("weakly typed") != std::string::npos;
    }
    EXPECT_TRUE(typingTold);
}

// diff of the implicit build against the explicit model says that their builds differ in typing; against the FP32
// model itself (no Q/DQ) it does not.
TEST(RealDataFixCalibration, DiffOfImplicitAndExplicitBuildsTellsTheTyping)
{
    REQUIRE_SHARED_PATH(folder, "realdata/lix-mnist-orin-trt8510-best");
    InputFiles files;
    files.files = {(folder / "mnist.onnx").string()};
    FixOptions options;
    options.output = (tempDir("fix-calibration-mnist-diff") / "explicit.onnx").string();
    options.calibrationCache = mnistRanges(folder / "trt_build_best.log").string();
    runFix(files, options, Limits{});
    const auto typingNoted = [&](const std::string& candidate)
    {
        const CommandResult diff = runCli({"diff", "--format", "json", "--baseline",
                                           (folder / "trt_build_best.log").string(), "--candidate", candidate});
        EXPECT_EQ(diff.exitStatus, 0) << diff.err;
        const auto json = nlohmann::json::parse(diff.out);
        for (const auto& note : json["notes"])
        {
            if (note.get<std::string>().find("differ in typing") != std::string::npos)
            {
                return true;
            }
        }
        return false;
    };
    EXPECT_TRUE(typingNoted(options.output));
    EXPECT_FALSE(typingNoted((folder / "mnist.onnx").string()));
}

// --autocast fp16 composes: the explicit model's float part is written in FP16, its Q/DQ kept; near-identical without
// it, no autocast section.
TEST(FixCalibration, AutocastComposes)
{
    GraphBuilder g;
    const std::string x = g.input("x", {1, 8, 16, 16});
    std::string t = g.node("Conv", "/c1", {x, g.weight("w1", {8, 8, 3, 3}, 0.02f)});
    g.intsAttribute("/c1", "pads", {1, 1, 1, 1});
    t = g.node("Relu", "/r1", {t});
    g.output(t, {1, 8, 16, 16});
    // A float part: a branch on the network input that no weighted op reads.
    const std::string side = g.node("Mul", "/side_square", {x, x});
    g.output(g.node("Tanh", "/side_tanh", {side}), {1, 8, 16, 16});
    const std::filesystem::path folder = tempDir("fix-calibration-autocast");
    g.save((folder / "model.onnx").string());
    writeText(folder / "c.cache", cacheText({{"x", 0.02f}}));
    InputFiles files;
    files.files = {(folder / "model.onnx").string()};
    FixOptions options;
    options.calibrationCache = (folder / "c.cache").string();
    options.output = (folder / "plain.onnx").string();
    const FixReport plain = runFix(files, options, Limits{});
    EXPECT_FALSE(plain.autocast);
    options.output = (folder / "fp16.onnx").string();
    options.autocast.target = AutocastOptions::Target::kFp16;
    const FixReport fp16 = runFix(files, options, Limits{});
    ASSERT_TRUE(fp16.autocast);
    EXPECT_TRUE(fp16.autocast->changed) << renderFixText(fp16);
    EXPECT_EQ(fp16.checker, "passed");
    ASSERT_TRUE(fp16.calibration);
    EXPECT_EQ(fp16.calibration->quantizedOps, plain.calibration->quantizedOps);
    EXPECT_EQ(quantizedReads(readOnnx(options.output)), quantizedReads(readOnnx((folder / "plain.onnx").string())));
}

// A weight holding an infinity has no scale: its conv stays float, named; the same conv with finite weights runs INT8.
TEST(FixCalibration, AnInfiniteWeightLeavesItsConvFloat)
{
    for (const float value : {0.02f, std::numeric_limits<float>::infinity()})
    {
        GraphBuilder g;
        const std::string x = g.input("x", {1, 4, 8, 8});
        g.output(g.node("Conv", "/c", {x, g.weight("w", {4, 4, 1, 1}, value)}), {1, 4, 8, 8});
        const CalibrationRun run = fixBuilt(g, cacheText({{"x", 0.02f}}), "inf-weight");
        const bool finite = std::isfinite(value);
        EXPECT_EQ(run.report.calibration->quantizedOps, finite ? 1u : 0u);
        ASSERT_EQ(run.report.calibration->keptFloat.size(), finite ? 0u : 1u);
        if (!finite)
        {
            EXPECT_NE(run.report.calibration->keptFloat[0].why.find("infinite or NaN"), std::string::npos);
        }
    }
}
