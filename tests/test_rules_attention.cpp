// The transformer Q/DQ placement rules (attention-operand-not-dequantized, softmax-output-not-quantized,
// attention-scale-after-matmul, qdq-on-attention-scores) and their fix edits, on hand-built attentions
// softmax(Q * K^T) * V: each rule on a model that triggers it and on a near-identical one that must stay silent; fix
// on the issue 28 case (K Transpose between its DQ and the first MatMul, Softmax output in float) and on the attention
// that already has the documented placement; and the real DeiT-tiny exports in ../shared/models.
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/fix.h"
#include "qdq/patterns.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>

using namespace qdq;
using namespace qdq::test;

namespace
{

//! How the hand-built attention places its Q/DQ. The defaults are the documented placement (ModelOpt's FP8 recipe,
//! TensorRT's INT8 MHA placement): each MatMul reads a DQ directly, the scale multiplied into Q before its Q/DQ, a
//! Q/DQ on the Softmax output.
struct AttentionShape
{
    bool keyTransposeAfterDq = false; //!< k -> Q/DQ -> Transpose -> MatMul (else k -> Transpose -> Q/DQ -> MatMul)
    bool queryScaleAfterDq = false;   //!< q -> Q/DQ -> Mul(c) -> MatMul (else q -> Mul(c) -> Q/DQ -> MatMul)
    bool scaleOnScores = false;       //!< no Mul on q: MatMul -> Div(c) -> Softmax
    bool scoresQdq = false;           //!< MatMul -> Q/DQ -> Softmax
    bool softmaxQuantized = true;     //!< Softmax -> Q/DQ -> MatMul
    bool perChannelKey = false;       //!< the key's Q/DQ per channel (axis 3 of [B, N, S, H])
    int zeroPointType = 3;            //!< INT8 (3) or FLOAT8E4M3FN (17)
    std::string name = "attention";
};

constexpr float kQueryScale = 0.05f;
constexpr float kKeyScale = 0.04f;
constexpr float kValueScale = 0.03f;
constexpr float kAttentionScale = 0.25f; // 1/sqrt(16)

std::string typedQdq(GraphBuilder& g, const AttentionShape& shape, const std::string& prefix, const std::string& tensor,
                     float scaleValue)
{
    const std::string s = g.scale(prefix + "/scale", scaleValue);
    const std::string z = shape.zeroPointType == 3 ? g.zeroPoint(prefix + "/zero_point")
                                                   : g.typedZeroPoint(prefix + "/zero_point", shape.zeroPointType);
    const std::string q = g.node("QuantizeLinear", prefix + "/QuantizeLinear", {tensor, s, z});
    return g.node("DequantizeLinear", prefix + "/DequantizeLinear", {q, s, z});
}

std::string keyQdq(GraphBuilder& g, const AttentionShape& shape, const std::string& tensor)
{
    if (!shape.perChannelKey)
    {
        return typedQdq(g, shape, "/attn/k_q", tensor, kKeyScale);
    }
    const std::string s = g.scaleVector("/attn/k_q/scale", std::vector<float>(16, kKeyScale));
    const std::string z = g.int8Constant("/attn/k_q/zero_point", {16});
    const std::string q = g.node("QuantizeLinear", "/attn/k_q/QuantizeLinear", {tensor, s, z});
    g.intAttribute("/attn/k_q/QuantizeLinear", "axis", 3);
    const std::string dq = g.node("DequantizeLinear", "/attn/k_q/DequantizeLinear", {q, s, z});
    g.intAttribute("/attn/k_q/DequantizeLinear", "axis", 3);
    return dq;
}

//! q, k, v [1, 2, 8, 16] -> softmax(q * k^T * 0.25) * v -> out, the Q/DQ placed as `shape` says.
std::filesystem::path attentionModel(const AttentionShape& shape)
{
    GraphBuilder g;
    const std::string q = g.input("q", {1, 2, 8, 16});
    const std::string k = g.input("k", {1, 2, 8, 16});
    const std::string v = g.input("v", {1, 2, 8, 16});
    const std::string c = g.scale("/attn/scale_value", kAttentionScale);

    std::string query;
    if (shape.scaleOnScores)
    {
        query = typedQdq(g, shape, "/attn/q_q", q, kQueryScale);
    }
    else if (shape.queryScaleAfterDq)
    {
        query = g.node("Mul", "/attn/Mul_q", {typedQdq(g, shape, "/attn/q_q", q, kQueryScale), c});
    }
    else
    {
        query = typedQdq(g, shape, "/attn/q_q", g.node("Mul", "/attn/Mul_q", {q, c}), kQueryScale);
    }

    std::string key;
    if (shape.keyTransposeAfterDq)
    {
        key = g.node("Transpose", "/attn/Transpose_k", {keyQdq(g, shape, k)});
    }
    else
    {
        key = keyQdq(g, shape, g.node("Transpose", "/attn/Transpose_k", {k}));
    }
    g.intsAttribute("/attn/Transpose_k", "perm", {0, 1, 3, 2});

    std::string scores = g.node("MatMul", "/attn/MatMul", {query, key});
    if (shape.scaleOnScores)
    {
        scores = g.node("Div", "/attn/Div", {scores, g.scale("/attn/sqrt_head_size", 4.0f)});
    }
    if (shape.scoresQdq)
    {
        scores = typedQdq(g, shape, "/attn/scores_q", scores, 0.1f);
    }
    std::string probs = g.node("Softmax", "/attn/Softmax", {scores});
    g.intAttribute("/attn/Softmax", "axis", -1);
    if (shape.softmaxQuantized)
    {
        probs = typedQdq(g, shape, "/attn/probs_q", probs, 1.0f / 127.0f);
    }
    const std::string value = typedQdq(g, shape, "/attn/v_q", v, kValueScale);
    g.output(g.node("MatMul", "/attn/MatMul_1", {probs, value}), {1, 2, 8, 16});
    const std::filesystem::path path = tempDir("attention-" + shape.name) / "model.onnx";
    g.save(path.string());
    return path;
}

std::vector<Finding> findingsOn(const std::filesystem::path& model, const std::string& rule)
{
    return findingsOf(runDiagnose(readOnnx(model.string()), std::nullopt), rule);
}

bool mentions(const Finding& finding, const std::string& text)
{
    return finding.message.find(text) != std::string::npos;
}

bool namesNode(const Finding& finding, const std::string& node)
{
    return std::find(finding.onnxNodes.begin(), finding.onnxNodes.end(), node) != finding.onnxNodes.end();
}

struct Fixed
{
    std::filesystem::path output;
    FixReport report;
};

Fixed fixModel(const std::filesystem::path& model, bool dryRun = false)
{
    Fixed result;
    result.output = model.parent_path() / "fixed.onnx";
    InputFiles files;
    files.files = {model.string()};
    FixOptions options;
    options.output = result.output.string();
    options.dryRun = dryRun;
    result.report = runFix(files, options, Limits{});
    return result;
}

//! The one per-tensor scale a Q or DQ node of the graph reads.
double scaleOf(const OnnxGraph& graph, const OnnxNode& node)
{
    const QdqParameters* parameters = graph.qdqOf(node.index);
    if (parameters == nullptr || parameters->scale.size() != 1)
    {
        ADD_FAILURE() << node.name << " has no per-tensor scale";
        return -1.0;
    }
    return parameters->scale[0];
}

//! The DequantizeLinear feeding input `slot` of node (nullptr when another op does).
const OnnxNode* dequantizeFeeding(const OnnxGraph& graph, const std::string& nodeName, std::size_t slot)
{
    const OnnxNode* node = graph.findNode(nodeName);
    if (node == nullptr || node->inputs.size() <= slot)
    {
        ADD_FAILURE() << nodeName << " is missing";
        return nullptr;
    }
    const OnnxNode* producer = graph.producer(TensorKey(node->inputs[slot]));
    return producer != nullptr && patterns::isDequantize(*producer) ? producer : nullptr;
}

//! The Q writing what a DQ reads.
const OnnxNode* quantizeOf(const OnnxGraph& graph, const OnnxNode& dq)
{
    return graph.producer(TensorKey(dq.inputs[0]));
}

} // namespace

// ---- attention-operand-not-dequantized ---------------------------------------------------------------------------

TEST(RuleAttentionOperandNotDequantized, NamesTheMatMulAndTheKeyTransposeAfterTheDequantize)
{
    AttentionShape shape;
    shape.keyTransposeAfterDq = true;
    shape.name = "key-transpose-after-dq";
    const auto findings = findingsOn(attentionModel(shape), "attention-operand-not-dequantized");
    ASSERT_EQ(findings.size(), 1u);
    const Finding& finding = findings[0];
    EXPECT_EQ(finding.severity, Severity::kWarning);
    EXPECT_TRUE(mentions(finding, "/attn/MatMul ")) << finding.message;
    EXPECT_TRUE(mentions(finding, "Transpose /attn/Transpose_k")) << finding.message;
    EXPECT_TRUE(mentions(finding, "/attn/k_q/DequantizeLinear")) << finding.message;
    EXPECT_TRUE(mentions(finding, "INT8")) << finding.message;
    EXPECT_TRUE(namesNode(finding, "/attn/MatMul"));
    EXPECT_TRUE(namesNode(finding, "/attn/Transpose_k"));
    ASSERT_EQ(finding.edits.size(), 2u);
    EXPECT_EQ(finding.edits[0].kind, FixEdit::Kind::kRemoveQdqPair);
    EXPECT_EQ(finding.edits[1].kind, FixEdit::Kind::kInsertQdq);
    EXPECT_EQ(finding.edits[1].scaleFactor, 1.0);
}

TEST(RuleAttentionOperandNotDequantized, NamesTheScalingMulAfterTheQueryDequantize)
{
    AttentionShape shape;
    shape.queryScaleAfterDq = true;
    shape.name = "query-mul-after-dq";
    const auto findings = findingsOn(attentionModel(shape), "attention-operand-not-dequantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(mentions(findings[0], "Mul /attn/Mul_q")) << findings[0].message;
    EXPECT_TRUE(mentions(findings[0], "query (input 0)")) << findings[0].message;
    ASSERT_EQ(findings[0].edits.size(), 2u);
    EXPECT_FLOAT_EQ(static_cast<float>(findings[0].edits[1].scaleFactor), kAttentionScale);
}

TEST(RuleAttentionOperandNotDequantized, SilentWhenEachMatMulReadsADequantizeDirectly)
{
    AttentionShape shape;
    shape.name = "documented-placement";
    EXPECT_TRUE(findingsOn(attentionModel(shape), "attention-operand-not-dequantized").empty());
}

TEST(RuleAttentionOperandNotDequantized, LeavesAPerChannelKeyPairToTheUser)
{
    AttentionShape shape;
    shape.keyTransposeAfterDq = true;
    shape.perChannelKey = true;
    shape.name = "per-channel-key";
    const auto findings = findingsOn(attentionModel(shape), "attention-operand-not-dequantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].edits.empty());
    EXPECT_NE(findings[0].fix.find("axis permuted"), std::string::npos) << findings[0].fix;
}

// ---- softmax-output-not-quantized -------------------------------------------------------------------------------

TEST(RuleSoftmaxOutputNotQuantized, WarnsWhenAQuantizedAttentionReadsTheSoftmaxInFloat)
{
    AttentionShape shape;
    shape.softmaxQuantized = false;
    shape.name = "softmax-float";
    const auto findings = findingsOn(attentionModel(shape), "softmax-output-not-quantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(mentions(findings[0], "Softmax /attn/Softmax")) << findings[0].message;
    EXPECT_TRUE(mentions(findings[0], "/attn/MatMul_1")) << findings[0].message;
    ASSERT_EQ(findings[0].edits.size(), 1u);
    EXPECT_FLOAT_EQ(static_cast<float>(findings[0].edits[0].fixedScale), 1.0f / 127.0f);
}

TEST(RuleSoftmaxOutputNotQuantized, SilentWhenTheSoftmaxOutputIsQuantized)
{
    AttentionShape shape;
    shape.name = "softmax-quantized";
    EXPECT_TRUE(findingsOn(attentionModel(shape), "softmax-output-not-quantized").empty());
}

TEST(RuleSoftmaxOutputNotQuantized, SilentWhenTheValueIsFloat)
{
    // The same attention with no Q/DQ at all: a float attention wants no Softmax quantization.
    GraphBuilder g;
    const std::string q = g.input("q", {1, 2, 8, 16});
    const std::string k = g.input("k", {1, 2, 8, 16});
    const std::string v = g.input("v", {1, 2, 8, 16});
    const std::string kt = g.node("Transpose", "/attn/Transpose_k", {k});
    g.intsAttribute("/attn/Transpose_k", "perm", {0, 1, 3, 2});
    const std::string probs = g.node("Softmax", "/attn/Softmax", {g.node("MatMul", "/attn/MatMul", {q, kt})});
    g.output(g.node("MatMul", "/attn/MatMul_1", {probs, v}), {1, 2, 8, 16});
    EXPECT_TRUE(findingsOf(runDiagnose(g.build(), std::nullopt), "softmax-output-not-quantized").empty());
}

TEST(RuleSoftmaxOutputNotQuantized, GivesAnFp8AttentionTheFixedScaleOfModelOptsRecipe)
{
    AttentionShape shape;
    shape.softmaxQuantized = false;
    shape.zeroPointType = 17; // FLOAT8E4M3FN
    shape.name = "fp8-softmax-float";
    const auto findings = findingsOn(attentionModel(shape), "softmax-output-not-quantized");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(mentions(findings[0], "FP8")) << findings[0].message;
    ASSERT_EQ(findings[0].edits.size(), 1u);
    EXPECT_FLOAT_EQ(static_cast<float>(findings[0].edits[0].fixedScale), 1.0f / 448.0f);
}

// ---- attention-scale-after-matmul --------------------------------------------------------------------------------

TEST(RuleAttentionScaleAfterMatmul, WarnsOnADivOfTheScoresBeforeTheSoftmax)
{
    AttentionShape shape;
    shape.scaleOnScores = true;
    shape.name = "scale-on-scores";
    const auto findings = findingsOn(attentionModel(shape), "attention-scale-after-matmul");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(mentions(findings[0], "Div /attn/Div")) << findings[0].message;
    EXPECT_TRUE(mentions(findings[0], "a guess")) << findings[0].message;
    EXPECT_TRUE(findings[0].edits.empty());
}

TEST(RuleAttentionScaleAfterMatmul, SilentWhenTheScaleIsMultipliedIntoTheQuery)
{
    AttentionShape shape;
    shape.name = "scale-in-query";
    EXPECT_TRUE(findingsOn(attentionModel(shape), "attention-scale-after-matmul").empty());
}

// ---- qdq-on-attention-scores -------------------------------------------------------------------------------------

TEST(RuleQdqOnAttentionScores, NotesAPairOnTheScoresAsAGuess)
{
    AttentionShape shape;
    shape.scoresQdq = true;
    shape.name = "scores-qdq";
    const auto findings = findingsOn(attentionModel(shape), "qdq-on-attention-scores");
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].severity, Severity::kInfo);
    EXPECT_TRUE(findings[0].likely);
    EXPECT_TRUE(namesNode(findings[0], "/attn/scores_q/QuantizeLinear"));
    EXPECT_TRUE(findings[0].edits.empty());
}

TEST(RuleQdqOnAttentionScores, SilentWithoutAPairOnTheScores)
{
    AttentionShape shape;
    shape.name = "no-scores-qdq";
    EXPECT_TRUE(findingsOn(attentionModel(shape), "qdq-on-attention-scores").empty());
}

// ---- fix -----------------------------------------------------------------------------------------------------------

// Issue 28's case: the K Transpose between its DQ and the first MatMul, the Softmax output in float. fix moves the
// pair after the Transpose and quantizes the Softmax output; both MatMuls then read DequantizeLinear nodes only.
TEST(FixCaseAttention, MovesTheKeyPairAfterTheTransposeAndQuantizesTheSoftmaxOutput)
{
    AttentionShape shape;
    shape.keyTransposeAfterDq = true;
    shape.softmaxQuantized = false;
    shape.name = "fix-issue-28";
    const std::filesystem::path model = attentionModel(shape);
    const auto warnings = findingsOn(model, "attention-operand-not-dequantized");
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(namesNode(warnings[0], "/attn/MatMul") && namesNode(warnings[0], "/attn/Transpose_k"));
    ASSERT_EQ(findingsOn(model, "softmax-output-not-quantized").size(), 1u);

    const Fixed fixed = fixModel(model);
    EXPECT_TRUE(fixed.report.written);
    EXPECT_EQ(fixed.report.checker, "passed");
    EXPECT_TRUE(fixed.report.skipped.empty()) << fixed.report.skipped.front().why;
    EXPECT_TRUE(fixed.report.newFindings.empty()) << fixed.report.newFindings.front();
    const OnnxGraph graph = readOnnx(fixed.output.string());
    // Both MatMuls read DequantizeLinear nodes at both inputs.
    for (const char* matMul : {"/attn/MatMul", "/attn/MatMul_1"})
    {
        for (std::size_t slot = 0; slot < 2; ++slot)
        {
            EXPECT_NE(dequantizeFeeding(graph, matMul, slot), nullptr) << matMul << " input " << slot;
        }
    }
    // The Transpose reads k itself now, and the key's pair keeps its scale.
    const OnnxNode* transpose = graph.findNode("/attn/Transpose_k");
    ASSERT_NE(transpose, nullptr);
    EXPECT_EQ(transpose->inputs[0], "k");
    EXPECT_EQ(graph.findNode("/attn/k_q/QuantizeLinear"), nullptr);
    const OnnxNode* keyDq = dequantizeFeeding(graph, "/attn/MatMul", 1);
    ASSERT_NE(keyDq, nullptr);
    const OnnxNode* keyQ = quantizeOf(graph, *keyDq);
    ASSERT_NE(keyQ, nullptr);
    EXPECT_EQ(keyQ->inputs[0], transpose->outputs[0]);
    EXPECT_FLOAT_EQ(static_cast<float>(scaleOf(graph, *keyQ)), kKeyScale);
    // The Softmax output quantized with 1/127, int8 zero point 0.
    const OnnxNode* probsDq = dequantizeFeeding(graph, "/attn/MatMul_1", 0);
    ASSERT_NE(probsDq, nullptr);
    const OnnxNode* probsQ = quantizeOf(graph, *probsDq);
    ASSERT_NE(probsQ, nullptr);
    EXPECT_EQ(probsQ->inputs[0], graph.findNode("/attn/Softmax")->outputs[0]);
    EXPECT_FLOAT_EQ(static_cast<float>(scaleOf(graph, *probsQ)), 1.0f / 127.0f);
    const QdqParameters* probsParameters = graph.qdqOf(probsQ->index);
    ASSERT_NE(probsParameters, nullptr);
    EXPECT_EQ(probsParameters->zeroPointType, OnnxDataType::kInt8);
    ASSERT_EQ(probsParameters->zeroPoint.size(), 1u);
    EXPECT_EQ(probsParameters->zeroPoint[0], 0.0);
    // Diagnosed again: neither warning is left.
    EXPECT_TRUE(findingsOn(fixed.output, "attention-operand-not-dequantized").empty());
    EXPECT_TRUE(findingsOn(fixed.output, "softmax-output-not-quantized").empty());
}

// The scaling Mul after the query's DQ moves before the Q, and the pair's scale takes the constant: 0.05 x 0.25.
TEST(FixCaseAttention, MovesTheScalingMulBeforeTheQueryPairAndScalesThePair)
{
    AttentionShape shape;
    shape.queryScaleAfterDq = true;
    shape.name = "fix-query-mul";
    const Fixed fixed = fixModel(attentionModel(shape));
    EXPECT_EQ(fixed.report.checker, "passed");
    EXPECT_TRUE(fixed.report.skipped.empty()) << fixed.report.skipped.front().why;
    const OnnxGraph graph = readOnnx(fixed.output.string());
    const OnnxNode* queryDq = dequantizeFeeding(graph, "/attn/MatMul", 0);
    ASSERT_NE(queryDq, nullptr);
    const OnnxNode* queryQ = quantizeOf(graph, *queryDq);
    ASSERT_NE(queryQ, nullptr);
    const OnnxNode* mul = graph.findNode("/attn/Mul_q");
    ASSERT_NE(mul, nullptr);
    EXPECT_EQ(mul->inputs[0], "q");
    EXPECT_EQ(queryQ->inputs[0], mul->outputs[0]);
    EXPECT_FLOAT_EQ(static_cast<float>(scaleOf(graph, *queryQ)), 0.0125f);
    EXPECT_FLOAT_EQ(static_cast<float>(scaleOf(graph, *queryDq)), 0.0125f);
    EXPECT_TRUE(findingsOn(fixed.output, "attention-operand-not-dequantized").empty());
}

TEST(FixCaseAttention, LeavesTheDocumentedPlacementAlone)
{
    AttentionShape shape;
    shape.name = "fix-documented";
    const std::filesystem::path model = attentionModel(shape);
    for (const char* rule : {"attention-operand-not-dequantized", "softmax-output-not-quantized",
                             "attention-scale-after-matmul", "qdq-on-attention-scores"})
    {
        EXPECT_TRUE(findingsOn(model, rule).empty()) << rule;
    }
    const Fixed fixed = fixModel(model);
    EXPECT_TRUE(fixed.report.edits.empty()) << fixed.report.edits.front().rule;
    EXPECT_TRUE(fixed.report.unchanged);
    EXPECT_EQ(readFile(model), readFile(fixed.output));
}

// FP8: the Softmax pair is FLOAT8E4M3FN with scale 1/448, ModelOpt's fixed scale (the ONNX checker here predates the
// FP8 types, so only the written model is looked at).
TEST(FixCaseAttention, QuantizesAnFp8SoftmaxOutputWithScaleOneOver448)
{
    AttentionShape shape;
    shape.softmaxQuantized = false;
    shape.zeroPointType = 17;
    shape.name = "fix-fp8-softmax";
    const Fixed fixed = fixModel(attentionModel(shape));
    ASSERT_EQ(fixed.report.edits.size(), 1u);
    EXPECT_EQ(fixed.report.edits[0].rule, "softmax-output-not-quantized");
    ASSERT_TRUE(fixed.report.written);
    const OnnxGraph graph = readOnnx(fixed.output.string());
    const OnnxNode* probsDq = dequantizeFeeding(graph, "/attn/MatMul_1", 0);
    ASSERT_NE(probsDq, nullptr);
    const OnnxNode* probsQ = quantizeOf(graph, *probsDq);
    ASSERT_NE(probsQ, nullptr);
    EXPECT_FLOAT_EQ(static_cast<float>(scaleOf(graph, *probsQ)), 1.0f / 448.0f);
    const QdqParameters* parameters = graph.qdqOf(probsQ->index);
    ASSERT_NE(parameters, nullptr);
    EXPECT_EQ(parameters->zeroPointType, OnnxDataType::kFloat8E4M3FN);
}

// ---- real models ---------------------------------------------------------------------------------------------------

// ONNX Runtime's quantize_static export of DeiT-tiny (timm, torch SDPA): each MatMul reads a DQ directly, the scale is
// sqrt(scale) on both Q and K, the Softmax output is quantized; its scores carry a Q/DQ pair too (qdq-on-attention-
// scores, a guess, in each of the 12 blocks).
TEST(RuleQdqOnAttentionScores, FindsThePairOnTheScoresOfEachDeitBlock)
{
    REQUIRE_SHARED();
    const auto model = sharedModel("deit-tiny-ort-qdq.onnx");
    const Report report = runDiagnose(readOnnx(model.string()), std::nullopt);
    EXPECT_TRUE(findingsOf(report, "attention-operand-not-dequantized").empty());
    EXPECT_TRUE(findingsOf(report, "softmax-output-not-quantized").empty());
    EXPECT_TRUE(findingsOf(report, "attention-scale-after-matmul").empty());
    const auto scores = findingsOf(report, "qdq-on-attention-scores");
    ASSERT_EQ(scores.size(), 12u);
    for (int block = 0; block < 12; ++block)
    {
        const std::string prefix = "/blocks/blocks." + std::to_string(block) + "/attn/";
        EXPECT_TRUE(std::any_of(scores.begin(), scores.end(),
                                [&](const Finding& finding) {
                                    return namesNode(finding, prefix + "MatMul_output_0_QuantizeLinear") &&
                                           namesNode(finding, prefix + "Softmax");
                                }))
            << prefix;
    }
}

TEST(RuleAttentionScaleAfterMatmul, SilentOnTheFloatDeit)
{
    REQUIRE_SHARED();
    const Report report = runDiagnose(readOnnx(sharedModel("deit-tiny-fp32.onnx").string()), std::nullopt);
    for (const char* rule : {"attention-operand-not-dequantized", "softmax-output-not-quantized",
                             "attention-scale-after-matmul", "qdq-on-attention-scores"})
    {
        EXPECT_TRUE(findingsOf(report, rule).empty()) << rule;
    }
}

// standalone-qdq leaves out the Q/DQ that an attention with the documented placement hands to TensorRT's fused
// attention. The same attention with its Softmax output in float is predicted inside a Myelin region as well (the
// simulator's Myelin pass, TensorRT 10), so standalone-qdq stays silent there too; softmax-output-not-quantized is the
// rule that reports it.
TEST(RuleStandaloneQdqAttention, LeavesTheQdqOfADocumentedAttentionOut)
{
    AttentionShape shape;
    shape.name = "standalone-documented";
    for (const Finding& finding : findingsOn(attentionModel(shape), "standalone-qdq"))
    {
        EXPECT_FALSE(namesNode(finding, "/attn/v_q/DequantizeLinear")) << finding.message;
        EXPECT_FALSE(namesNode(finding, "/attn/probs_q/QuantizeLinear")) << finding.message;
    }
    shape.softmaxQuantized = false;
    shape.name = "standalone-softmax-float";
    EXPECT_FALSE(findingsOn(attentionModel(shape), "softmax-output-not-quantized").empty());
}
