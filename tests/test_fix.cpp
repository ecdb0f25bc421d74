// `qdq-doctor fix`: each edit on a model it fixes and on a near-identical one it must leave alone, the recipes of
// the real A100 ResNet engines, every real model and sample (no new warning, a second fix changes nothing), and the
// output's safety (no overwrite without --force, never the input, nothing written in a dry run).
#include "graph_builder.h"
#include "test_support.h"

#include "qdq/fix.h"
#include "qdq/readers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sys/stat.h>

using namespace qdq;
using namespace qdq::test;

namespace
{

//! The models built here declare no input shape, so they lack the output shapes the ONNX checker wants: the check
//! must pass or fail as the input does.
bool checkerAsInput(const FixReport& report)
{
    return report.checker == "passed" || report.checker.find("the input model fails the same way") != std::string::npos;
}

FixReport fixFile(const std::filesystem::path& model, const std::filesystem::path& output, FixOptions options = {})
{
    InputFiles files;
    files.files = {model.string()};
    options.output = output.string();
    return runFix(files, options, Limits{});
}

//! Where the model reads a dequantized tensor: "consumer|input" for every non-Q/DQ node input a DQ writes.
std::set<std::string> quantizedPositions(const OnnxGraph& graph)
{
    std::set<std::string> positions;
    for (const auto& node : graph.nodes)
    {
        if (node.opType == "QuantizeLinear" || node.opType == "DequantizeLinear")
        {
            continue;
        }
        for (std::size_t i = 0; i < node.inputs.size(); ++i)
        {
            const OnnxNode* producer = graph.producer(TensorKey(node.inputs[i]));
            if (producer != nullptr && producer->opType == "DequantizeLinear")
            {
                positions.insert(node.name + "|" + std::to_string(i));
            }
        }
    }
    return positions;
}

bool hasNode(const OnnxGraph& graph, std::string_view opType, std::string_view namePart)
{
    return std::any_of(graph.nodes.begin(), graph.nodes.end(),
                       [&](const OnnxNode& node)
                       { return node.opType == opType && node.name.find(namePart) != std::string::npos; });
}

std::size_t countOp(const OnnxGraph& graph, std::string_view opType)
{
    return static_cast<std::size_t>(std::count_if(graph.nodes.begin(), graph.nodes.end(),
                                                  [&](const OnnxNode& node) { return node.opType == opType; }));
}

std::size_t findings(const FixSide& side, const std::string& slug)
{
    for (const auto& [rule, count] : side.bySlug)
    {
        if (rule == slug)
        {
            return count;
        }
    }
    return 0;
}

std::filesystem::path saved(const GraphBuilder& g, const std::string& name)
{
    std::filesystem::path path = tempDir("fix-" + name) / "model.onnx";
    g.save(path.string());
    return path;
}

//! in -> Q/DQ -> conv0 -> Relu -> [Q/DQ] -> Add(conv1(...), residual) -> Relu -> Q/DQ -> conv2. quantizeResidual
//! puts a Q/DQ (the scale of conv1's input quantizer) on the residual input of the Add.
std::filesystem::path residualModel(bool quantizeResidual)
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string r0 = g.node("Relu", "/relu0/Relu", {g.node("Conv", "/conv0/Conv", {x, g.quantizedWeight("w0", 8, 3)})});
    std::string c1 = g.node("Conv", "/conv1/Conv", {g.qdq("/conv1/in_q", r0, 0.1f), g.quantizedWeight("w1", 8, 8)});
    std::string residual = quantizeResidual ? g.qdq("/res_q", r0, 0.1f) : r0;
    std::string sum = g.node("Relu", "/relu1/Relu", {g.node("Add", "/add/Add", {c1, residual})});
    g.output(g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", sum, 0.2f), g.quantizedWeight("w2", 8, 8)}));
    return saved(g, quantizeResidual ? "residual-quantized" : "residual-float");
}

} // namespace

TEST(Fix, InsertsTheResidualQdqWithTheScaleOfTheQAlreadyOnTheTensor)
{
    const auto model = residualModel(false);
    const auto output = model.parent_path() / "fixed.onnx";
    FixReport report = fixFile(model, output);
    ASSERT_EQ(report.edits.size(), 1u);
    EXPECT_EQ(report.edits[0].edit.kind, FixEdit::Kind::kInsertQdq);
    EXPECT_EQ(report.edits[0].edit.tensor, "/relu0/Relu_out");
    EXPECT_NE(report.edits[0].scale.find("0.1 from /conv1/in_q/QuantizeLinear"), std::string::npos)
        << report.edits[0].scale;
    EXPECT_TRUE(checkerAsInput(report)) << report.checker;
    EXPECT_TRUE(report.newFindings.empty());
    EXPECT_EQ(findings(report.before, "residual-input-not-quantized"), 1u);
    EXPECT_EQ(findings(report.after, "residual-input-not-quantized"), 0u);
    OnnxGraph fixed = readOnnx(output.string());
    const OnnxNode* add = fixed.findNode("/add/Add");
    ASSERT_NE(add, nullptr);
    const OnnxNode* dq = fixed.producer(TensorKey(add->inputs[1]));
    ASSERT_NE(dq, nullptr);
    EXPECT_EQ(dq->opType, "DequantizeLinear");
    // Named after the first rule that asked for it (int8-conv-float-output and residual-input-not-quantized both do).
    EXPECT_EQ(dq->name.rfind("qdq_doctor/", 0), 0u) << dq->name;
    EXPECT_NE(dq->name.find("/relu0/Relu_out/DequantizeLinear"), std::string::npos) << dq->name;
    ASSERT_NE(fixed.qdqOf(dq->index), nullptr);
    ASSERT_EQ(fixed.qdqOf(dq->index)->scale.size(), 1u);
    EXPECT_FLOAT_EQ(static_cast<float>(fixed.qdqOf(dq->index)->scale[0]), 0.1f);
    // Node order: the new pair right before the Add, everything else where it was.
    const std::uint32_t addIndex = fixed.nodeIndex("/add/Add");
    EXPECT_EQ(fixed.nodes[addIndex - 1].name, dq->name);
}

TEST(Fix, LeavesAQuantizedResidualAlone)
{
    const auto model = residualModel(true);
    const auto output = model.parent_path() / "fixed.onnx";
    FixReport report = fixFile(model, output);
    EXPECT_TRUE(report.edits.empty());
    EXPECT_TRUE(report.unchanged);
    EXPECT_EQ(readFile(model), readFile(output)); // a byte-identical copy
}

namespace
{

//! in -> Q/DQ -> conv -> [Q -> DQ] -> Relu -> Q/DQ -> conv2 (ONNX Runtime quantizes the conv output too).
std::filesystem::path epilogueModel(bool qdqBeforeRelu)
{
    GraphBuilder g;
    std::string c = g.node("Conv", "/conv/Conv", {g.qdq("/in_q", g.input("images")), g.quantizedWeight("w", 8, 3)});
    std::string r = g.node("Relu", "/relu/Relu", {qdqBeforeRelu ? g.qdq("/conv/out_q", c) : c});
    g.output(g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", r), g.quantizedWeight("w2", 8, 8)}));
    return saved(g, qdqBeforeRelu ? "epilogue-qdq" : "epilogue-clean");
}

} // namespace

TEST(Fix, RemovesTheQdqPairInsideTheConvEpilogue)
{
    const auto model = epilogueModel(true);
    const auto output = model.parent_path() / "fixed.onnx";
    FixReport report = fixFile(model, output);
    ASSERT_EQ(report.edits.size(), 1u);
    EXPECT_EQ(report.edits[0].edit.kind, FixEdit::Kind::kRemoveQdqPair);
    EXPECT_EQ(report.edits[0].removed.size(), 2u);
    OnnxGraph fixed = readOnnx(output.string());
    EXPECT_FALSE(hasNode(fixed, "QuantizeLinear", "/conv/out_q"));
    EXPECT_FALSE(hasNode(fixed, "DequantizeLinear", "/conv/out_q"));
    const OnnxNode* relu = fixed.findNode("/relu/Relu");
    ASSERT_NE(relu, nullptr);
    EXPECT_EQ(relu->inputs[0], "/conv/Conv_out");
    EXPECT_EQ(findings(report.after, "qdq-inside-conv-epilogue"), 0u);
    EXPECT_LT(report.after.predicted.layers, report.before.predicted.layers);
    EXPECT_TRUE(checkerAsInput(report)) << report.checker;
}

namespace
{

bool hasInitializer(const OnnxGraph& graph, const std::string& name)
{
    return std::any_of(graph.constants.begin(), graph.constants.end(),
                       [&](const OnnxConstant& constant)
                       { return !constant.fromConstantNode && constant.name == name; });
}

//! The epilogue model whose removed pair reads the scale and zero point of the next conv's input quantizer, which
//! stays (sharedWithKept), or its own (an exporter's one-scale-per-pair layout).
std::filesystem::path epilogueModelSharingScale(bool sharedWithKept)
{
    GraphBuilder g;
    std::string c = g.node("Conv", "/conv/Conv", {g.qdq("/in_q", g.input("images")), g.quantizedWeight("w", 8, 3)});
    const std::string s = g.scale("/shared/scale", 0.05f);
    const std::string z = g.zeroPoint("/shared/zero_point");
    const std::string own = sharedWithKept ? s : g.scale("/conv/out_q/scale", 0.05f);
    const std::string ownZero = sharedWithKept ? z : g.zeroPoint("/conv/out_q/zero_point");
    std::string q = g.node("QuantizeLinear", "/conv/out_q/QuantizeLinear", {c, own, ownZero});
    std::string r =
        g.node("Relu", "/relu/Relu", {g.node("DequantizeLinear", "/conv/out_q/DequantizeLinear", {q, own, ownZero})});
    std::string q2 = g.node("QuantizeLinear", "/conv2/in_q/QuantizeLinear", {r, s, z});
    std::string r2 = g.node("DequantizeLinear", "/conv2/in_q/DequantizeLinear", {q2, s, z});
    g.output(g.node("Conv", "/conv2/Conv", {r2, g.quantizedWeight("w2", 8, 8)}));
    return saved(g, sharedWithKept ? "epilogue-shared-scale" : "epilogue-own-scale");
}

} // namespace

TEST(Fix, ARemovedPairsOwnScaleAndZeroPointGoWithIt)
{
    const auto model = epilogueModelSharingScale(false);
    const auto output = model.parent_path() / "fixed.onnx";
    FixReport report = fixFile(model, output);
    ASSERT_EQ(report.edits.size(), 1u);
    const OnnxGraph fixed = readOnnx(output.string());
    EXPECT_FALSE(hasInitializer(fixed, "/conv/out_q/scale"));
    EXPECT_FALSE(hasInitializer(fixed, "/conv/out_q/zero_point"));
    EXPECT_TRUE(hasInitializer(fixed, "/shared/scale"));
    const auto& changed = report.edits[0].changed;
    EXPECT_NE(
        std::find(changed.begin(), changed.end(), "initializer /conv/out_q/scale removed: no node reads it any more"),
        changed.end());
    EXPECT_TRUE(checkerAsInput(report)) << report.checker;
}

TEST(Fix, AScaleAKeptQuantizerStillReadsStays)
{
    const auto model = epilogueModelSharingScale(true);
    const auto output = model.parent_path() / "fixed.onnx";
    FixReport report = fixFile(model, output);
    ASSERT_EQ(report.edits.size(), 1u);
    EXPECT_EQ(report.edits[0].removed.size(), 2u);
    const OnnxGraph fixed = readOnnx(output.string());
    EXPECT_TRUE(hasInitializer(fixed, "/shared/scale"));
    EXPECT_TRUE(hasInitializer(fixed, "/shared/zero_point"));
    EXPECT_TRUE(checkerAsInput(report)) << report.checker;
}

TEST(Fix, LeavesAConvWithoutEpilogueQdqAlone)
{
    const auto model = epilogueModel(false);
    FixReport report = fixFile(model, model.parent_path() / "fixed.onnx");
    EXPECT_TRUE(report.edits.empty());
}

namespace
{

//! in -> Q/DQ -> conv(w, bias) where the bias is an INT32 initializer behind a DequantizeLinear, or a float one.
std::filesystem::path biasModel(bool quantizedBias)
{
    GraphBuilder g;
    std::string bias = quantizedBias
                           ? g.node("DequantizeLinear", "/bias/DequantizeLinear",
                                    {g.int32Constant("conv.bias_quantized", {8}), g.scale("bias.scale", 0.5f)})
                           : g.weight("conv.bias", {8});
    std::string c =
        g.node("Conv", "/conv/Conv", {g.qdq("/in_q", g.input("images")), g.quantizedWeight("w", 8, 3), bias});
    g.output(g.node("Conv", "/conv2/Conv", {g.qdq("/conv2/in_q", c), g.quantizedWeight("w2", 8, 8)}));
    return saved(g, quantizedBias ? "bias-int32" : "bias-float");
}

} // namespace

TEST(Fix, TurnsAQuantizedBiasBackIntoAFloatInitializer)
{
    const auto model = biasModel(true);
    const auto output = model.parent_path() / "fixed.onnx";
    FixReport report = fixFile(model, output);
    ASSERT_EQ(report.edits.size(), 1u);
    EXPECT_EQ(report.edits[0].edit.kind, FixEdit::Kind::kFloatBias);
    OnnxGraph fixed = readOnnx(output.string(), OnnxReadOptions{true, 32});
    EXPECT_FALSE(hasNode(fixed, "DequantizeLinear", "/bias/"));
    const OnnxNode* conv = fixed.findNode("/conv/Conv");
    ASSERT_NE(conv, nullptr);
    ASSERT_EQ(conv->inputs.size(), 3u);
    const OnnxConstant* bias = fixed.constant(TensorKey(conv->inputs[2]));
    ASSERT_NE(bias, nullptr);
    EXPECT_EQ(bias->dataType, OnnxDataType::kFloat);
    ASSERT_EQ(bias->values.size(), 8u);
    for (std::size_t i = 0; i < 8; ++i)
    {
        EXPECT_FLOAT_EQ(static_cast<float>(bias->values[i]), 0.5f * static_cast<float>(i)); // INT32 i x scale 0.5
    }
    EXPECT_EQ(findings(report.after, "quantized-bias"), 0u);
}

TEST(Fix, LeavesAFloatBiasAlone)
{
    const auto model = biasModel(false);
    FixReport report = fixFile(model, model.parent_path() / "fixed.onnx");
    EXPECT_TRUE(report.edits.empty());
}

TEST(Fix, RulesOptionKeepsOtherRulesEdits)
{
    const auto model = epilogueModel(true);
    FixOptions options;
    options.rules = {"quantized-bias"};
    FixReport report = fixFile(model, model.parent_path() / "only-bias.onnx", options);
    EXPECT_TRUE(report.edits.empty());
    EXPECT_TRUE(std::any_of(report.unfixed.begin(), report.unfixed.end(),
                            [](const UnfixedFinding& unfixed) {
                                return unfixed.rule == "qdq-inside-conv-epilogue" && unfixed.why == "not among --rules";
                            }));
}

TEST(FixCli, DryRunWritesNothingAndExistingOutputNeedsForce)
{
    const auto model = residualModel(false);
    const auto output = model.parent_path() / "out.onnx";
    const std::string before = readFile(model);
    CommandResult dry = runCli({"fix", model.string(), "-o", output.string(), "--dry-run"});
    EXPECT_EQ(dry.exitStatus, 0) << dry.err;
    EXPECT_FALSE(std::filesystem::exists(output));
    EXPECT_NE(dry.out.find("dry run: nothing written"), std::string::npos);
    EXPECT_NE(dry.out.find("insert QuantizeLinear -> DequantizeLinear on /relu0/Relu_out"), std::string::npos);

    writeFile(output, "precious");
    CommandResult refused = runCli({"fix", model.string(), "-o", output.string()});
    EXPECT_EQ(refused.exitStatus, 2);
    EXPECT_NE(refused.err.find("already exists"), std::string::npos) << refused.err;
    EXPECT_EQ(readFile(output), "precious");

    CommandResult forced = runCli({"fix", model.string(), "-o", output.string(), "--force", "--format", "json"});
    EXPECT_EQ(forced.exitStatus, 0) << forced.err;
    EXPECT_NE(forced.out.find("\"schema\": \"qdq-doctor/fix/1\""), std::string::npos);
    EXPECT_NE(readFile(output), "precious");

    CommandResult itself = runCli({"fix", model.string(), "-o", model.string(), "--force"});
    EXPECT_EQ(itself.exitStatus, 2);
    EXPECT_NE(itself.err.find("input model itself"), std::string::npos) << itself.err;
    EXPECT_EQ(readFile(model), before);

    CommandResult noOutput = runCli({"fix", model.string()});
    EXPECT_EQ(noOutput.exitStatus, 2);
    CommandResult badRule = runCli({"fix", model.string(), "--dry-run", "--rules", "no-such-rule"});
    EXPECT_EQ(badRule.exitStatus, 2);
    EXPECT_NE(badRule.err.find("no-such-rule"), std::string::npos);
    // Nothing left behind in the output's folder but the output.
    for (const auto& entry : std::filesystem::directory_iterator(model.parent_path()))
    {
        EXPECT_EQ(entry.path().filename().string().find(".qdq-doctor-fix"), std::string::npos) << entry.path();
    }
}

// `fix -o /dev/null --force` used to rename the fixed model onto /dev/null, replacing the device node with a file.
// A pipe stands for any name that is not a file: refused with or without --force, left as it was.
TEST(FixCli, OutputThatIsNoFileIsRefusedEvenWithForce)
{
    const auto model = residualModel(false);
    const auto pipe = model.parent_path() / "pipe.onnx";
    std::filesystem::remove(pipe);
    ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
    for (const bool force : {false, true})
    {
        std::vector<std::string> args = {"fix", model.string(), "-o", pipe.string()};
        if (force)
        {
            args.push_back("--force");
        }
        CommandResult refused = runCli(args);
        EXPECT_EQ(refused.exitStatus, 2) << refused.out;
        EXPECT_NE(refused.err.find(pipe.string() + ": error: is not a regular file"), std::string::npos) << refused.err;
        EXPECT_TRUE(std::filesystem::is_fifo(std::filesystem::symlink_status(pipe)));
    }
    for (const auto& entry : std::filesystem::directory_iterator(model.parent_path()))
    {
        EXPECT_EQ(entry.path().filename().string().find(".qdq-doctor-fix"), std::string::npos) << entry.path();
    }
    std::filesystem::remove(pipe);
}

// The stages fix reports after the read (a status line on a terminal, a line each with --progress into a file), in
// the order they run; the report on stdout is the same with and without them.
TEST(FixCli, ProgressNamesEachStageAndLeavesTheReportAlone)
{
    const auto model = epilogueModel(true);
    std::vector<std::string> stages;
    InputFiles files;
    files.files = {model.string()};
    FixOptions options;
    options.output = (model.parent_path() / "staged.onnx").string();
    runFix(files, options, Limits{}, {}, [&](std::string_view stage) { stages.emplace_back(stage); });
    const std::vector<std::string> expected = {"diagnosing the model", "planning the edits", "writing the fixed model",
                                               "diagnosing the fixed model (ONNX checker beside it)"};
    ASSERT_GE(stages.size(), expected.size() + 1);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), stages.begin()));
    EXPECT_EQ(stages.back(), ""); // done: a terminal's status line is cleared
    for (const auto& stage : stages)
    {
        EXPECT_LT(stage.size(), 60U) << stage; // one line of an 80-column terminal with the prefix
    }

    options.dryRun = true;
    options.output.clear();
    stages.clear();
    runFix(files, options, Limits{}, {}, [&](std::string_view stage) { stages.emplace_back(stage); });
    EXPECT_NE(std::find(stages.begin(), stages.end(), "writing the fixed model to a temporary file (dry run)"),
              stages.end());

    const CommandResult quiet = runCli({"fix", model.string(), "--dry-run"});
    const CommandResult told = runCli({"fix", model.string(), "--dry-run", "--progress"});
    ASSERT_EQ(told.exitStatus, 0) << told.err;
    EXPECT_EQ(told.out, quiet.out);
    EXPECT_NE(told.err.find("qdq-doctor: fix: writing the fixed model to a temporary file (dry run)\n"),
              std::string::npos)
        << told.err;
    EXPECT_EQ(quiet.err.find("qdq-doctor: fix:"), std::string::npos) << quiet.err; // stderr is not a terminal here
}

// Done means (issue 12): the convs-only recipe, fixed, quantizes the same (consumer, input) positions as the recipe
// whose real A100 engine has 1 standalone Q/DQ layer where the convs-only engine has 10. Since issue 30 fix borrows
// no scale across a range-changing op: the three projection shortcuts (whose only quantizers are after their Add)
// and the average pooling's input (whose only quantizer is after the average) are listed as skipped, to calibrate.
// The fixed model and those positions together are the recipe's.
TEST(RealDataFix, ResNetConvsRecipeBecomesTheResidualQgapRecipe)
{
    REQUIRE_SHARED();
    const auto output = tempDir("fix-resnet") / "resnet18-fixed.onnx";
    FixReport report = fixFile(sharedModel("resnet18-qat-convs.onnx"), output);
    EXPECT_TRUE(report.newFindings.empty());
    EXPECT_EQ(report.checker, "passed");
    OnnxGraph fixed = readOnnx(output.string());
    OnnxGraph recipe = readOnnx(sharedModel("resnet18-qat-residual-qgap.onnx").string());
    // The last block's residual pair is refused: with the pooling's input left float, it would give the fused
    // Conv+Add an INT8 residual and a float reader (a new residual-precision-mismatch).
    std::set<std::string> toCalibrate;
    std::set<std::string> notMade;
    for (const auto& skipped : report.skipped)
    {
        const bool calibrate = skipped.why.find("calibrate this tensor") != std::string::npos;
        EXPECT_TRUE(calibrate || skipped.why.find("new residual-precision-mismatch warning") != std::string::npos)
            << skipped.why;
        for (const auto& [consumer, input] : skipped.edit.consumers)
        {
            (calibrate ? toCalibrate : notMade).insert(consumer + "|" + std::to_string(input));
        }
    }
    EXPECT_EQ(toCalibrate.size(), 4u);
    EXPECT_EQ(notMade.size(), 1u);
    std::set<std::string> positions = quantizedPositions(fixed);
    toCalibrate.insert(notMade.begin(), notMade.end());
    for (const auto& position : toCalibrate)
    {
        EXPECT_TRUE(positions.insert(position).second) << position << " is quantized already";
    }
    EXPECT_EQ(positions, quantizedPositions(recipe));
    // And the simulator sees most of the recipe's engine in it: the standalone Q/DQ layers left are those the
    // calibrated pairs would fuse.
    EXPECT_EQ(report.before.predicted.standaloneQdq, 10u);
    // Five remain (defect 6 of the issue "One model of TensorRT": it said 3 while a fused Conv+Add with a float
    // residual was let write INT8): the network input's Quantize, the Quantize after each of the three downsample
    // blocks, whose shortcut conv writes the float residual of the fused Conv+Add until its pair is calibrated (the
    // real -qat engine's Add_97 writes FP16 before the standalone QuantizeLinear_101), and the pooling's.
    EXPECT_EQ(report.after.predicted.standaloneQdq, 5u);
    EXPECT_EQ(report.after.predicted.convActPool, 1u);
    // The weights' external data reference is kept (the file is not shipped with the graph-only model).
    EXPECT_FALSE(report.notes.empty());
}

TEST(RealDataFix, OrtResNetLosesEpilogueConvAddAndBiasQdq)
{
    REQUIRE_SHARED();
    const auto output = tempDir("fix-ort") / "resnet18-ort-fixed.onnx";
    FixReport report = fixFile(sharedModel("resnet18-ort-qdq.onnx"), output);
    EXPECT_GT(findings(report.before, "qdq-inside-conv-epilogue"), 0u);
    EXPECT_GT(findings(report.before, "qdq-between-conv-and-add"), 0u);
    EXPECT_GT(findings(report.before, "quantized-bias"), 0u);
    EXPECT_EQ(findings(report.after, "qdq-inside-conv-epilogue"), 0u);
    EXPECT_EQ(findings(report.after, "qdq-between-conv-and-add"), 0u);
    EXPECT_EQ(findings(report.after, "quantized-bias"), 0u);
    EXPECT_TRUE(report.newFindings.empty());
    EXPECT_EQ(report.checker, "passed");
    OnnxGraph fixed = readOnnx(output.string());
    OnnxGraph original = readOnnx(sharedModel("resnet18-ort-qdq.onnx").string());
    EXPECT_LT(countOp(fixed, "DequantizeLinear"), countOp(original, "DequantizeLinear"));
    EXPECT_EQ(countOp(fixed, "Conv"), countOp(original, "Conv"));
    EXPECT_EQ(report.after.predicted.convWithResidualAdd, 8u);
}

namespace
{

//! A skipped edit is listed once, with the reason that stands at the end, and a made insertion is not also listed as
//! skipped.
void expectEachSkipListedOnceAndNotMade(const FixReport& report, const std::string& model)
{
    std::set<std::string> skippedKeys;
    for (const auto& skipped : report.skipped)
    {
        std::string key =
            skipped.rule + "|" + std::to_string(static_cast<int>(skipped.edit.kind)) + "|" + skipped.edit.tensor + "|";
        for (const auto& node : skipped.edit.nodes)
        {
            key += node + ",";
        }
        for (const auto& [consumer, input] : skipped.edit.consumers)
        {
            key += consumer + ":" + std::to_string(input) + ",";
        }
        EXPECT_TRUE(skippedKeys.insert(key).second) << model << ": listed twice: " << key;
        if (skipped.edit.kind != FixEdit::Kind::kInsertQdq)
        {
            continue;
        }
        for (const auto& made : report.edits)
        {
            const bool sameInsertion = made.edit.kind == FixEdit::Kind::kInsertQdq &&
                                       made.edit.tensor == skipped.edit.tensor &&
                                       made.edit.consumers == skipped.edit.consumers;
            EXPECT_FALSE(sameInsertion) << model << ": made and skipped: " << skipped.edit.tensor;
        }
    }
}

} // namespace

// The YOLOv8-style model quantized at its convs' inputs: the first pass refuses the insertions on the Split outputs
// (a new fan-out mismatch); once the fan-outs have one scale, the second pass refuses them again, for a new
// standalone Q/DQ. The report lists each Split insertion once, with the second pass's reason. The insertion on
// /n1/cv2/act/Mul_output_0 was made in the second pass with the scale the fan-out unification gave the head's Q, 959x
// its own; since issue 30 its quantizers' scales are too far apart for one scale, and it is listed once as skipped.
TEST(RealDataFix, YoloConvsRecipeListsAnEditRefusedTwiceOnce)
{
    REQUIRE_SHARED();
    const auto output = tempDir("fix-yolo-skips") / "yolov8lite-fixed.onnx";
    FixReport report = fixFile(sharedModel("yolov8lite-qat-convs.onnx"), output);
    expectEachSkipListedOnceAndNotMade(report, "yolov8lite-qat-convs.onnx");
    EXPECT_TRUE(std::any_of(report.skipped.begin(), report.skipped.end(),
                            [](const SkippedEdit& skipped)
                            {
                                return skipped.edit.tensor == "/n1/cv2/act/Mul_output_0" &&
                                       skipped.why.find("needs a calibrated scale") != std::string::npos;
                            }));
    std::vector<std::string> skippedSplits;
    for (const auto& skipped : report.skipped)
    {
        if (skipped.edit.tensor.find("/Split_output_1") != std::string::npos)
        {
            skippedSplits.push_back(skipped.edit.tensor);
            EXPECT_NE(skipped.why.find("new standalone-qdq warning"), std::string::npos) << skipped.why;
        }
    }
    EXPECT_EQ(skippedSplits, (std::vector<std::string>{"/b2/Split_output_1", "/b4/Split_output_1", "/b6/Split_output_1",
                                                       "/b8/Split_output_1"}));
}

// The YOLOv8-style model quantized at its convs' inputs: int8-conv-float-output inserts a pair on tensors whose
// fan-outs fanout-scale-mismatch unifies. A refusal round that refused both kinds together left every fan-out
// mismatched; the inserted pairs are refused first now, and each fan-out gets its one scale, except those whose
// scales are more than 4x apart (issue 30), which are skipped and keep their finding.
TEST(RealDataFix, YoloConvsRecipeUnifiesEveryFanoutWithinTheBound)
{
    REQUIRE_SHARED();
    const auto output = tempDir("fix-yolo") / "yolov8lite-fixed.onnx";
    FixReport report = fixFile(sharedModel("yolov8lite-qat-convs.onnx"), output);
    EXPECT_GT(findings(report.before, "fanout-scale-mismatch"), 0u);
    const auto beyondTheBound = static_cast<std::size_t>(
        std::count_if(report.skipped.begin(), report.skipped.end(),
                      [](const SkippedEdit& skipped)
                      {
                          return skipped.rule == "fanout-scale-mismatch" &&
                                 skipped.why.find("more than the 4x fix allows") != std::string::npos;
                      }));
    EXPECT_GT(beyondTheBound, 0u);
    EXPECT_EQ(findings(report.after, "fanout-scale-mismatch"), beyondTheBound);
    EXPECT_LT(report.after.warnings, report.before.warnings);
    EXPECT_TRUE(report.newFindings.empty());
    EXPECT_EQ(report.checker, "passed");
}

// Every real model and every sample: the fix adds no warning, passes the checker where the input does, and a second
// fix of its output changes nothing (byte-identical).
TEST(RealDataFix, EveryModelAndSampleIsAFixedPoint)
{
    std::vector<std::filesystem::path> models;
    for (const char* sample : {"a-plugin-between-dq-and-q", "b-yolov8-split-concat-silu", "c-resnet-conv-maxpool",
                               "d-residual-add-concat-fp32", "e-explicit-slower-than-implicit"})
    {
        models.push_back(std::filesystem::path(QDQ_SOURCE_DIR) / "samples" / sample / "model.onnx");
    }
    if (sharedDir())
    {
        for (const auto& entry : std::filesystem::directory_iterator(sharedModel("")))
        {
            if (entry.path().extension() == ".onnx")
            {
                models.push_back(entry.path());
            }
        }
    }
    std::sort(models.begin(), models.end());
    const auto dir = tempDir("fix-all");
    std::size_t index = 0;
    for (const auto& model : models)
    {
        const auto first = dir / (std::to_string(index) + ".onnx");
        const auto second = dir / (std::to_string(index++) + "-again.onnx");
        FixReport report = fixFile(model, first);
        EXPECT_TRUE(report.newFindings.empty()) << model << ": " << report.newFindings.front();
        EXPECT_TRUE(report.checker == "passed" ||
                    report.checker.find("the input model fails the same way") != std::string::npos)
            << model << ": " << report.checker;
        // No two findings ask for conflicting edits: none is skipped because another edit changes the same input or
        // removes the same node.
        for (const auto& skipped : report.skipped)
        {
            EXPECT_EQ(skipped.why.find("another edit"), std::string::npos)
                << model << ": " << skipped.rule << ": " << skipped.why;
        }
        expectEachSkipListedOnceAndNotMade(report, model.string());
        if (model.string().find(QDQ_SOURCE_DIR) == 0)
        {
            EXPECT_EQ(report.checker, "passed") << model; // the samples declare their shapes
        }
        FixReport again = fixFile(first, second);
        EXPECT_TRUE(again.edits.empty()) << model;
        EXPECT_EQ(readFile(first), readFile(second)) << model;
    }
}

namespace
{

SkippedEdit skippedInsertion(const std::string& tensor, const std::string& rule, const std::string& why)
{
    SkippedEdit skipped;
    skipped.edit.kind = FixEdit::Kind::kInsertQdq;
    skipped.edit.tensor = tensor;
    skipped.rule = rule;
    skipped.why = why;
    return skipped;
}

std::size_t occurrences(const std::string& text, const std::string& part)
{
    std::size_t count = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size()))
    {
        ++count;
    }
    return count;
}

} // namespace

TEST(FixReportText, SkippedEditsSharingARuleAndReasonAreListedUnderTheReasonOnce)
{
    const std::string refusal = "refused: with it the fixed model gets a new standalone-qdq warning (2 Q/DQ node(s))";
    FixReport report;
    report.skipped = {skippedInsertion("/a/Mul_output_0", "standalone-qdq", refusal),
                      skippedInsertion("/b/Sigmoid_output_0", "int8-conv-float-output", "its scale needs calibration"),
                      skippedInsertion("/c/Mul_output_0", "standalone-qdq", refusal)};
    const std::string text = renderFixText(report);
    EXPECT_EQ(occurrences(text, refusal), 1u) << text;
    EXPECT_NE(text.find("  - 2 edits (standalone-qdq): " + refusal +
                        "\n"
                        "      insert QuantizeLinear -> DequantizeLinear on /a/Mul_output_0\n"
                        "      insert QuantizeLinear -> DequantizeLinear on /c/Mul_output_0\n"),
              std::string::npos)
        << text;
    EXPECT_NE(
        text.find("  - insert QuantizeLinear -> DequantizeLinear on /b/Sigmoid_output_0 (int8-conv-float-output): "
                  "its scale needs calibration\n"),
        std::string::npos)
        << text;
}

TEST(FixReportText, SkippedEditsWithTheirOwnReasonsAreListedOnePerLine)
{
    FixReport report;
    report.skipped = {skippedInsertion("/a/Mul_output_0", "standalone-qdq", "refused: a new warning on /a"),
                      skippedInsertion("/c/Mul_output_0", "standalone-qdq", "refused: a new warning on /c")};
    const std::string text = renderFixText(report);
    EXPECT_EQ(text.find("edits (standalone-qdq)"), std::string::npos) << text;
    EXPECT_NE(text.find("  - insert QuantizeLinear -> DequantizeLinear on /a/Mul_output_0 (standalone-qdq): refused: a "
                        "new warning on /a\n"
                        "  - insert QuantizeLinear -> DequantizeLinear on /c/Mul_output_0 (standalone-qdq): refused: a "
                        "new warning on /c\n"),
              std::string::npos)
        << text;
}

TEST(FixReportText, RowsByRuleSayTheyCountInfoFindingsToo)
{
    FixReport report;
    report.before.warnings = 1;
    report.before.bySlug = {{"residual-input-not-quantized", 1}, {"standalone-qdq", 2}};
    report.after.bySlug = {{"standalone-qdq", 1}};
    const std::string text = renderFixText(report);
    EXPECT_NE(text.find("  warnings and errors               1     -> 0\n"
                        "  findings of each rule, info included:\n"
                        "    residual-input-not-quantized    1     -> 0\n"
                        "    standalone-qdq                  2     -> 1\n"),
              std::string::npos)
        << text;
}

TEST(FixReportText, NoRowsByRuleAndNoTheirHeaderWhenNoRuleChanged)
{
    FixReport report;
    report.before.bySlug = {{"standalone-qdq", 2}};
    report.after.bySlug = {{"standalone-qdq", 2}};
    const std::string text = renderFixText(report);
    EXPECT_EQ(text.find("findings of each rule"), std::string::npos) << text;
    EXPECT_EQ(text.find("    standalone-qdq"), std::string::npos) << text;
}
