// `qdq-doctor fix` on ONNX Runtime's QOperator format (quantized-op-not-importable): each QLinearConv, QLinearAdd,
// QGemm, ... rewritten as DequantizeLinear -> float op -> QuantizeLinear with the same scales, the Flatten that ran on
// uint8 data wrapped the same way; then the passes make the uint8 quantizers symmetric INT8. On the fixture ONNX
// Runtime 1.30 wrote (tests/fixtures/export_ort_formats.py), and the near-identical dynamic export, which fix leaves
// to the user. Numbers on real networks: docs/fix.md (tools/device/check_qoperator_rewrite.py).
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/fix.h"
#include "qdq/patterns.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

using namespace qdq;
using namespace qdq::test;

namespace
{

struct FixedFixture
{
    std::filesystem::path model;
    std::filesystem::path output;
    FixReport report;
};

FixedFixture fixFixture(const std::string& name, std::vector<std::string> rules = {})
{
    FixedFixture result;
    const std::filesystem::path folder = tempDir("fix-quantized-ops-" + name + (rules.empty() ? "" : "-rules"));
    result.model = folder / name;
    std::filesystem::copy_file(fixture(name), result.model, std::filesystem::copy_options::overwrite_existing);
    result.output = folder / "fixed.onnx";
    InputFiles files;
    files.files = {result.model.string()};
    FixOptions options;
    options.output = result.output.string();
    options.rules = std::move(rules);
    result.report = runFix(files, options, Limits{});
    return result;
}

std::size_t rewrites(const FixReport& report)
{
    return static_cast<std::size_t>(std::count_if(report.edits.begin(), report.edits.end(),
                                                  [](const PlannedEdit& edit)
                                                  { return edit.edit.kind == FixEdit::Kind::kRewriteQuantizedOp; }));
}

const OnnxNode& nodeNamed(const OnnxGraph& graph, const std::string& name)
{
    const OnnxNode* node = graph.findNode(name);
    if (node == nullptr)
    {
        throw std::runtime_error("no node " + name);
    }
    return *node;
}

std::size_t findingsOfRule(const Report& report, const std::string& rule)
{
    return findingsOf(report, rule).size();
}

} // namespace

TEST(FixQuantizedOps, RewritesEachQOperatorOpWithItsOwnScales)
{
    // --rules quantized-op-not-importable: the rewrite alone, every new Q/DQ reading the op's own scale tensors.
    const FixedFixture fixed = fixFixture("ort-qoperator-small.onnx", {"quantized-op-not-importable"});
    EXPECT_EQ(fixed.report.checker, "passed");
    // 2 QLinearConv, QLinearAdd, QLinearGlobalAveragePool, QGemm, and the Flatten between the pooling and QGemm,
    // which ran on uint8 data.
    EXPECT_EQ(rewrites(fixed.report), 6u) << renderFixText(fixed.report);
    const OnnxGraph original = readOnnx(fixed.model.string());
    const OnnxGraph graph = readOnnx(fixed.output.string());
    for (const auto& node : graph.nodes)
    {
        EXPECT_FALSE(patterns::isOperatorFormatQuantized(node)) << node.name << " " << node.opType;
    }
    // The float ops keep the names; their attributes are the quantized ops' own.
    const OnnxNode& conv = nodeNamed(graph, "/stem/stem.0/Conv_quant");
    EXPECT_EQ(conv.opType, "Conv");
    EXPECT_TRUE(conv.domain.empty());
    EXPECT_EQ(conv.attribute("pads")->ints, nodeNamed(original, "/stem/stem.0/Conv_quant").attribute("pads")->ints);
    EXPECT_EQ(nodeNamed(graph, "/head/Gemm_quant").opType, "Gemm");
    EXPECT_EQ(nodeNamed(graph, "/head/Gemm_quant").intAttribute("transB"),
              nodeNamed(original, "/head/Gemm_quant").intAttribute("transB"));
    EXPECT_EQ(nodeNamed(graph, "/Add_quant").opType, "Add");
    EXPECT_EQ(nodeNamed(graph, "/GlobalAveragePool_quant").opType, "GlobalAveragePool");

    // The conv reads DQ(x) and DQ(w) with the QLinearConv's scale and zero point tensors; its output is quantized by
    // a Q that writes the QLinearConv's output tensor, so its readers are unchanged.
    const OnnxNode& quantizedConv = nodeNamed(original, "/stem/stem.0/Conv_quant");
    const OnnxNode* dqX = patterns::producerOf(graph, conv.inputs[0]);
    const OnnxNode* dqW = patterns::producerOf(graph, conv.inputs[1]);
    ASSERT_NE(dqX, nullptr);
    ASSERT_NE(dqW, nullptr);
    EXPECT_EQ(dqX->opType, "DequantizeLinear");
    EXPECT_EQ(std::vector<std::string>(dqX->inputs.begin(), dqX->inputs.end()),
              (std::vector<std::string>{quantizedConv.inputs[0], quantizedConv.inputs[1], quantizedConv.inputs[2]}));
    EXPECT_EQ(std::vector<std::string>(dqW->inputs.begin(), dqW->inputs.end()),
              (std::vector<std::string>{quantizedConv.inputs[3], quantizedConv.inputs[4], quantizedConv.inputs[5]}));
    // Per-channel weight scales: the DQ of the weight dequantizes along the output channels.
    ASSERT_GT(original.constant(quantizedConv.inputs[4])->elementCount, 1);
    ASSERT_NE(dqW->attribute("axis"), nullptr);
    EXPECT_EQ(dqW->attribute("axis")->i, 0);
    const auto readers = patterns::consumersOf(graph, conv.outputs[0]);
    ASSERT_EQ(readers.size(), 1u);
    EXPECT_EQ(readers[0]->opType, "QuantizeLinear");
    EXPECT_EQ(readers[0]->outputs[0], quantizedConv.outputs[0]);
    EXPECT_EQ(readers[0]->inputs[1], quantizedConv.inputs[6]);
    EXPECT_EQ(readers[0]->inputs[2], quantizedConv.inputs[7]);

    // The INT32 bias becomes the float values it stands for: bias x x_scale x w_scale[channel].
    const OnnxConstant* intBias = original.constant(quantizedConv.inputs[8]);
    const OnnxConstant* xScale = original.constant(quantizedConv.inputs[1]);
    const OnnxConstant* wScale = original.constant(quantizedConv.inputs[4]);
    const OnnxConstant* floatBias = graph.constant(conv.inputs[2]);
    ASSERT_TRUE(intBias && xScale && wScale && floatBias);
    ASSERT_TRUE(intBias->dataLoaded && floatBias->dataLoaded);
    ASSERT_EQ(floatBias->dataType, OnnxDataType::kFloat);
    ASSERT_EQ(floatBias->values.size(), intBias->values.size());
    for (std::size_t c = 0; c < intBias->values.size(); ++c)
    {
        const double expected = intBias->values[c] * xScale->values[0] * wScale->values[c];
        EXPECT_NEAR(floatBias->values[c], expected, 1e-6 * std::max(1.0, std::abs(expected))) << c;
    }

    // The Flatten ran on uint8: now DQ -> Flatten -> Q with the pooling's output scale.
    const OnnxNode* flatten = nullptr;
    for (const auto& node : graph.nodes)
    {
        flatten = node.opType == "Flatten" ? &node : flatten;
    }
    ASSERT_NE(flatten, nullptr);
    EXPECT_EQ(patterns::producerOf(graph, flatten->inputs[0])->opType, "DequantizeLinear");
    EXPECT_EQ(patterns::consumersOf(graph, flatten->outputs[0])[0]->opType, "QuantizeLinear");

    const Report after = runDiagnose(graph, std::nullopt);
    EXPECT_EQ(findingsOfRule(after, "quantized-op-not-importable"), 0u);
}

TEST(FixQuantizedOps, ThenMakesTheUint8QuantizersSymmetric)
{
    const FixedFixture fixed = fixFixture("ort-qoperator-small.onnx");
    EXPECT_EQ(fixed.report.checker, "passed");
    EXPECT_EQ(rewrites(fixed.report), 6u);
    const OnnxGraph graph = readOnnx(fixed.output.string());
    const Report after = runDiagnose(graph, std::nullopt);
    EXPECT_EQ(findingsOfRule(after, "quantized-op-not-importable"), 0u);
    EXPECT_EQ(findingsOfRule(after, "nonzero-zero-point"), 0u);
    // The first pass could not convert the quantizers that fed integer ops; the second did, so they are not left to
    // the user.
    for (const auto& unfixed : fixed.report.unfixed)
    {
        EXPECT_NE(unfixed.rule, "nonzero-zero-point") << unfixed.why;
    }
    // fix applied to its own output changes nothing.
    InputFiles files;
    files.files = {fixed.output.string()};
    FixOptions options;
    options.dryRun = true;
    EXPECT_TRUE(runFix(files, options, Limits{}).edits.empty());
}

TEST(FixQuantizedOps, LeavesDynamicQuantizationToTheUser)
{
    // The same network by quantize_dynamic: its scales are computed at run time, so there is nothing to rewrite.
    const FixedFixture fixed = fixFixture("ort-dynamic-small.onnx");
    EXPECT_EQ(rewrites(fixed.report), 0u);
    EXPECT_TRUE(fixed.report.unchanged);
    const auto unfixed =
        std::find_if(fixed.report.unfixed.begin(), fixed.report.unfixed.end(),
                     [](const UnfixedFinding& finding) { return finding.rule == "quantized-op-not-importable"; });
    ASSERT_NE(unfixed, fixed.report.unfixed.end());
    EXPECT_NE(unfixed->why.find("dynamic quantization"), std::string::npos) << unfixed->why;
}

TEST(FixQuantizedOps, LeavesTheQdqExportAlone)
{
    const FixedFixture fixed = fixFixture("ort-qdq-small.onnx");
    EXPECT_EQ(rewrites(fixed.report), 0u);
}

namespace
{

//! Q -> com.microsoft QLinearSigmoid -> QLinearSoftmax (of op set softmaxOpset) -> QLinearReduceMean -> DQ, in a model
//! of op set 17, fixed with --rules quantized-op-not-importable as a dry run.
FixReport fixSoftmaxChain(long softmaxOpset)
{
    GraphBuilder g;
    g.opset("com.microsoft", 1);
    const std::string s = g.scale("s", 0.02f);
    const std::string z = g.zeroPoint("z", true, 128);
    const std::string q = g.node("QuantizeLinear", "q", {g.input("x", {1, 8}), s, z});
    const std::string sigmoid = g.node("QLinearSigmoid", "sigmoid_quant", {q, s, z, s, z}, {}, "com.microsoft");
    const std::string softmax = g.node("QLinearSoftmax", "softmax_quant", {sigmoid, s, z, s, z}, {}, "com.microsoft");
    g.intAttribute("softmax_quant", "axis", -1);
    g.intAttribute("softmax_quant", "opset", softmaxOpset);
    const std::string mean = g.node("QLinearReduceMean", "mean_quant", {softmax, s, z, s, z}, {}, "com.microsoft");
    g.output(g.node("DequantizeLinear", "dq", {mean, s, z}), {1, 8});
    const std::filesystem::path path =
        tempDir("fix-quantized-ops-softmax-" + std::to_string(softmaxOpset)) / "model.onnx";
    g.save(path.string());
    InputFiles files;
    files.files = {path.string()};
    FixOptions options;
    options.dryRun = true;
    options.rules = {"quantized-op-not-importable"};
    return runFix(files, options, Limits{});
}

} // namespace

TEST(FixQuantizedOps, SaysWhyAnOpHasNoRewrite)
{
    // QLinearSoftmax of op set 11 flattens to 2-D, which the model's op set 17 Softmax does not; QLinearReduceMean
    // has no rewrite at all; QLinearSigmoid beside them has one.
    const FixReport report = fixSoftmaxChain(11);
    ASSERT_EQ(rewrites(report), 1u) << renderFixText(report);
    EXPECT_EQ(report.edits[0].edit.nodes, std::vector<std::string>{"sigmoid_quant"});
    ASSERT_EQ(report.skipped.size(), 2u);
    EXPECT_EQ(report.skipped[0].edit.nodes, std::vector<std::string>{"softmax_quant"});
    EXPECT_NE(report.skipped[0].why.find("Softmax of op set 11"), std::string::npos) << report.skipped[0].why;
    EXPECT_EQ(report.skipped[1].edit.nodes, std::vector<std::string>{"mean_quant"});
    EXPECT_NE(report.skipped[1].why.find("QLinearReduceMean has no float op"), std::string::npos)
        << report.skipped[1].why;
}

TEST(FixQuantizedOps, RewritesASoftmaxOfTheModelsOpSet)
{
    const FixReport report = fixSoftmaxChain(13);
    ASSERT_EQ(rewrites(report), 2u) << renderFixText(report);
    EXPECT_EQ(report.edits[1].edit.nodes, std::vector<std::string>{"softmax_quant"});
    EXPECT_EQ(report.checker, "passed");
}

namespace
{

//! Q -> QLinearConv -> y; SiLU in QOperator form: QLinearSigmoid(y) and QLinearMul(y, sigmoid) -> DQ. With
//! sameScale false, QLinearMul reads y with another scale than QLinearSigmoid does.
FixReport fixQuantizedSilu(bool sameScale)
{
    GraphBuilder g;
    g.opset("com.microsoft", 1);
    const std::string s = g.scale("s", 0.02f);
    const std::string z = g.zeroPoint("z", true, 128);
    const std::string ys = g.scale("y_scale", 0.05f);
    const std::string yz = g.zeroPoint("y_zero_point", true, 100);
    const std::string other = sameScale ? ys : g.scale("y_scale_2", 0.06f);
    const std::string q = g.node("QuantizeLinear", "q", {g.input("x", {1, 3, 8, 8}), s, z});
    const std::string y = g.node(
        "QLinearConv", "conv_quant",
        {q, s, z, g.int8Constant("w", {4, 3, 1, 1}), g.scale("w_scale", 0.01f), g.zeroPoint("w_zero_point"), ys, yz});
    const std::string gate = g.node("QLinearSigmoid", "sigmoid_quant", {y, ys, yz, s, z}, {}, "com.microsoft");
    const std::string silu = g.node("QLinearMul", "mul_quant", {y, other, yz, gate, s, z, s, z}, {}, "com.microsoft");
    g.output(g.node("DequantizeLinear", "dq", {silu, s, z}), {1, 4, 8, 8});
    const std::filesystem::path path =
        tempDir(std::string("fix-quantized-ops-silu-") + (sameScale ? "shared" : "apart")) / "model.onnx";
    g.save(path.string());
    InputFiles files;
    files.files = {path.string()};
    FixOptions options;
    options.output = (path.parent_path() / "fixed.onnx").string();
    options.force = true;
    options.rules = {"quantized-op-not-importable"};
    return runFix(files, options, Limits{});
}

//! The DequantizeLinear nodes reading tensor in the written model.
std::size_t dequantizersOf(const FixReport& report, const std::string& tensor)
{
    const OnnxGraph graph = readOnnx(report.output);
    std::size_t count = 0;
    for (const OnnxNode* reader : patterns::consumersOf(graph, tensor))
    {
        count += patterns::isDequantize(*reader) ? 1 : 0;
    }
    return count;
}

} // namespace

TEST(FixQuantizedOps, SharesOneDequantizeBetweenTheReadersOfATensor)
{
    // The Sigmoid and the Mul of the SiLU read the conv's output through one DQ, as a QDQ export writes it, so that
    // the conv can take the SiLU as its epilogue.
    const FixReport report = fixQuantizedSilu(true);
    ASSERT_EQ(rewrites(report), 3u) << renderFixText(report);
    EXPECT_EQ(report.checker, "passed");
    EXPECT_EQ(dequantizersOf(report, "conv_quant_out"), 1u);
}

TEST(FixQuantizedOps, KeepsTwoDequantizesForTwoScales)
{
    const FixReport report = fixQuantizedSilu(false);
    ASSERT_EQ(rewrites(report), 3u) << renderFixText(report);
    EXPECT_EQ(dequantizersOf(report, "conv_quant_out"), 2u);
}
