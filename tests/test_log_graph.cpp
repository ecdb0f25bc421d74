// The ONNX graph rebuilt from a verbose build log's parser lines (log_graph.h): every real log of ../shared/realdata
// that has them (expected values read off the files with grep -c / sed -n), the real mnist.onnx beside one of them,
// diagnose on a log alone, and broken and hostile logs written here.
#include "qdq/analysis.h"
#include "qdq/load_inputs.h"
#include "qdq/log_graph.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>

using namespace qdq;
using namespace qdq::test;
using qdq::test::fixture;

namespace
{

OnnxGraph rebuildReal(const std::string& relative)
{
    auto graph = rebuildGraphFromLog(realdata(relative).string());
    EXPECT_TRUE(graph.has_value()) << relative;
    return graph ? std::move(*graph) : OnnxGraph{};
}

std::optional<OnnxGraph> rebuildText(const std::string& text, const Limits& limits = {})
{
    return rebuildGraphFromLogText(text, "test.log", limits);
}

std::map<std::string, std::size_t> opHistogram(const OnnxGraph& graph)
{
    std::map<std::string, std::size_t> ops;
    for (const auto& node : graph.nodes)
    {
        ops[node.opType]++;
    }
    return ops;
}

std::vector<std::int64_t> dimsOfValueInfo(const OnnxGraph& graph, const std::string& tensor)
{
    // The rebuilt graph keeps shapes only in its value_info; constants keep theirs.
    if (const OnnxConstant* constant = graph.constant(tensor))
    {
        return constant->dims;
    }
    return {};
}

bool hasWarningAt(const OnnxGraph& graph, std::uint64_t line, const std::string& text)
{
    return std::any_of(graph.warnings.begin(), graph.warnings.end(),
                       [&](const ReaderWarning& warning)
                       { return warning.where.line == line && warning.message.find(text) != std::string::npos; });
}

bool hasWarning(const OnnxGraph& graph, const std::string& text)
{
    return std::any_of(graph.warnings.begin(), graph.warnings.end(),
                       [&](const ReaderWarning& warning) { return warning.message.find(text) != std::string::npos; });
}

// A small log in trtexec's format.
std::string line(const std::string& message)
{
    return "[11/24/2026-10:00:00] [V] [TRT] " + message + "\n";
}

std::string node(const std::string& name, const std::string& op, const std::string& inputs, const std::string& outputs)
{
    return line("Parsing node: " + name + " [" + op + "]") + line(name + " [" + op + "] inputs: " + inputs) +
           line(name + " [" + op + "] outputs: " + outputs);
}

std::string smallModel()
{
    return line("Adding network input: x with dtype: float32, dimensions: (1, 3, 8, 8)") +
           line("Importing initializer: w") + line("Importing initializer: s") + line("Importing initializer: zp") +
           node("q", "QuantizeLinear", "[x -> (1, 3, 8, 8)[FLOAT]], [s -> ()[FLOAT]], [zp -> ()[INT8]], ",
                "[q_out -> (1, 3, 8, 8)[FLOAT]], ") +
           node("dq", "DequantizeLinear", "[q_out -> (1, 3, 8, 8)[FLOAT]], [s -> ()[FLOAT]], [zp -> ()[INT8]], ",
                "[dq_out -> (1, 3, 8, 8)[FLOAT]], ") +
           node("conv", "Conv", "[dq_out -> (1, 3, 8, 8)[FLOAT]], [w -> (4, 3, 3, 3)[FLOAT]], ",
                "[y -> (1, 4, 8, 8)[FLOAT]], ") +
           line("Marking y_1 as output: y");
}

} // namespace

// ----------------------------------------------------------------------------------------------------------------
// Own logs

TEST(LogGraph, NoParserLinesIsNullopt)
{
    EXPECT_FALSE(rebuildText(line("Original: 3 layers") + line("After dead-layer removal: 3 layers")).has_value());
}

TEST(LogGraph, SmallModelIsAnOrdinaryGraph)
{
    auto graph = rebuildText(smallModel());
    ASSERT_TRUE(graph.has_value());
    EXPECT_TRUE(graph->rebuiltFromLog);
    EXPECT_EQ(graph->sourcePath, "test.log");
    ASSERT_EQ(graph->nodes.size(), 3u);
    EXPECT_EQ(graph->nodes[0].name, "q");
    EXPECT_EQ(graph->nodes[2].opType, "Conv");
    EXPECT_EQ(graph->graphInputs, std::vector<std::string>{"x"});
    EXPECT_EQ(graph->graphOutputs, std::vector<std::string>{"y"});
    EXPECT_EQ(graph->producer("y")->name, "conv");
    EXPECT_EQ(graph->consumers("q_out").size(), 1u);
    // Initializers: shape and type, no values.
    const OnnxConstant* weight = graph->constant("w");
    ASSERT_NE(weight, nullptr);
    EXPECT_EQ(weight->dims, (std::vector<std::int64_t>{4, 3, 3, 3}));
    EXPECT_EQ(weight->dataType, OnnxDataType::kFloat);
    EXPECT_TRUE(weight->values.empty());
    // Q/DQ: the zero point's type and the scale's size are known, their values are not.
    ASSERT_EQ(graph->qdq.size(), 2u);
    EXPECT_TRUE(graph->qdq[0].scaleIsConstant);
    EXPECT_EQ(graph->qdq[0].scaleElements, 1);
    EXPECT_TRUE(graph->qdq[0].scale.empty());
    EXPECT_EQ(graph->qdq[0].zeroPointType, OnnxDataType::kInt8);
    EXPECT_TRUE(graph->qdq[0].zeroPoint.empty());
    // A Q's output has the zero point's type (TensorRT prints FLOAT).
    EXPECT_EQ(graph->tensorType("q_out"), OnnxDataType::kInt8);
    EXPECT_EQ(graph->tensorType("dq_out"), OnnxDataType::kFloat);
    EXPECT_EQ(graph->tensorType("x"), OnnxDataType::kFloat);
    EXPECT_TRUE(graph->warnings.empty()) << graph->warnings.front().describe();
}

TEST(LogGraph, OwnFixtureWithConstantsIfAndAnOmittedInput)
{
    auto graph = rebuildGraphFromLog(fixture("log-graph/parser-lines.log").string());
    ASSERT_TRUE(graph.has_value());
    EXPECT_EQ(graph->nodes.size(), 8u);
    // The Constant nodes' values are constants with shape and type (no data).
    const OnnxConstant* zeroPoint = graph->constant("zp_out");
    ASSERT_NE(zeroPoint, nullptr);
    EXPECT_TRUE(zeroPoint->fromConstantNode);
    EXPECT_EQ(zeroPoint->dataType, OnnxDataType::kInt8);
    EXPECT_EQ(graph->qdq[0].zeroPointType, OnnxDataType::kInt8);
    // The If's outputs line comes after its branch's node.
    EXPECT_EQ(graph->findNode("cond")->outputs.toVector(), std::vector<std::string>{"if_out"});
    EXPECT_EQ(graph->findNode("inner")->outputs.toVector(), std::vector<std::string>{"r_out"});
    const OnnxNode* resize = graph->findNode("up");
    ASSERT_EQ(resize->inputs.size(), 3u);
    EXPECT_EQ(resize->inputs[1], "");
    EXPECT_EQ(graph->tensorType("y"), OnnxDataType::kFloat16);
    EXPECT_EQ(graph->graphOutputs, std::vector<std::string>{"y"});
    // The If's condition comes from the branch-free part of a model this fixture leaves out.
    EXPECT_TRUE(hasWarningAt(*graph, 26, "'flag'"));
    EXPECT_EQ(graph->graphInputs, (std::vector<std::string>{"x", "flag"}));
}

TEST(LogGraph, SecondModelWarnsAndKeepsTheFirst)
{
    const std::string first = smallModel();
    const std::uint64_t secondLine = static_cast<std::uint64_t>(std::count(first.begin(), first.end(), '\n')) + 2;
    auto graph = rebuildText(
        first + line("Original: 3 layers") + line("Adding network input: other with dtype: float16, dimensions: (2)") +
        node("relu", "Relu", "[other -> (2)[HALF]], ", "[z -> (2)[HALF]], ") + line("Marking z_0 as output: z"));
    ASSERT_TRUE(graph.has_value());
    EXPECT_EQ(graph->nodes.size(), 3u);
    EXPECT_EQ(graph->findNode("relu"), nullptr);
    EXPECT_EQ(graph->graphInputs, std::vector<std::string>{"x"});
    EXPECT_TRUE(hasWarningAt(*graph, secondLine, "another network")) << graph->warnings.size();
}

TEST(LogGraph, NodesParsedAfterTheOutputsAreASecondModel)
{
    const std::string first = smallModel();
    const std::uint64_t secondLine = static_cast<std::uint64_t>(std::count(first.begin(), first.end(), '\n')) + 1;
    auto graph = rebuildText(first + node("relu", "Relu", "[y -> (1)[FLOAT]], ", "[z -> (1)[FLOAT]], "));
    ASSERT_TRUE(graph.has_value());
    EXPECT_EQ(graph->nodes.size(), 3u);
    EXPECT_TRUE(hasWarningAt(*graph, secondLine, "another network"));
}

TEST(LogGraph, CutOffMidGraphIsAPartialGraph)
{
    // The log ends after the second node's inputs line, in the middle of a third one's inputs line.
    std::string text = line("Adding network input: x with dtype: float32, dimensions: (1, 4)") +
                       node("a", "Relu", "[x -> (1, 4)[FLOAT]], ", "[a_out -> (1, 4)[FLOAT]], ") +
                       line("Parsing node: b [Sigmoid]") + line("b [Sigmoid] inputs: [a_out -> (1, 4)[FLOAT]], ") +
                       line("Parsing node: c [Add]") + "[11/24/2026-10:00:00] [V] [TRT] c [Add] inputs: [a_out -> (1,";
    auto graph = rebuildText(text);
    ASSERT_TRUE(graph.has_value());
    ASSERT_EQ(graph->nodes.size(), 3u);
    EXPECT_TRUE(graph->nodes[1].outputs.empty());
    EXPECT_TRUE(hasWarningAt(*graph, 5, "no outputs line")) << graph->warnings.front().describe();
    EXPECT_TRUE(hasWarning(*graph, "no `Marking"));
    // The cut entry still names its tensor.
    ASSERT_EQ(graph->nodes[2].inputs.size(), 1u);
    EXPECT_EQ(graph->nodes[2].inputs[0], "a_out");
    // The reader said the line is cut off; the parse is incomplete.
    BuildLog log = readBuildLogFromBuffer(text, "test.log");
    EXPECT_FALSE(logGraphComplete(log));
    EXPECT_TRUE(logGraphComplete(readBuildLogFromBuffer(smallModel(), "test.log")));
    EXPECT_TRUE(std::any_of(log.warnings.begin(), log.warnings.end(),
                            [](const ReaderWarning& w) {
                                return w.message.find("cut off or unreadable") != std::string::npos &&
                                       w.where.line == 8;
                            }));
}

TEST(LogGraph, UnknownTensorsAreWarnedAndDefined)
{
    // An excerpt: the Q's input and scale were defined before the excerpt starts.
    std::string text =
        line("Parsing node: q [QuantizeLinear]") +
        line("q [QuantizeLinear] inputs: [images -> (1, 3, 4, 4)[FLOAT]], [s -> ()[FLOAT]], [zp -> ()[INT8]], ") +
        line("Registering layer: s for ONNX node: s") +
        line("q [QuantizeLinear] outputs: [q_out -> (1, 3, 4, 4)[FLOAT]], ");
    auto graph = rebuildText(text);
    ASSERT_TRUE(graph.has_value());
    EXPECT_EQ(graph->graphInputs, std::vector<std::string>{"images"});
    EXPECT_NE(graph->constant("s"), nullptr);
    EXPECT_NE(graph->constant("zp"), nullptr);
    EXPECT_TRUE(graph->qdq[0].scaleIsConstant);
    EXPECT_TRUE(hasWarningAt(*graph, 2, "'images'"));
    EXPECT_TRUE(hasWarning(*graph, "taken as a network input"));
    EXPECT_TRUE(hasWarning(*graph, "taken as a constant"));
    EXPECT_EQ(graph->graphOutputs, std::vector<std::string>{"q_out"});
}

TEST(LogGraph, CycleIsWarnedNotFatal)
{
    std::string text = line("Adding network input: x with dtype: float32, dimensions: (1)") +
                       node("a", "Add", "[x -> (1)[FLOAT]], [b_out -> (1)[FLOAT]], ", "[a_out -> (1)[FLOAT]], ") +
                       node("b", "Relu", "[a_out -> (1)[FLOAT]], ", "[b_out -> (1)[FLOAT]], ") +
                       line("Marking b_out as output: b_out");
    auto graph = rebuildText(text);
    ASSERT_TRUE(graph.has_value());
    EXPECT_EQ(graph->nodes.size(), 2u);
    EXPECT_TRUE(hasWarningAt(*graph, 2, "written by a node parsed later"));
    EXPECT_TRUE(hasWarning(*graph, "cycle"));
    // Whatever the rules make of it, diagnose does not fail.
    auto dir = tempDir("log-graph-cycle");
    auto path = writeFile(dir / "cycle.log", text);
    InputFiles files;
    files.files.push_back(path.string());
    Inputs inputs = loadInputs(files, Limits{});
    ASSERT_TRUE(inputs.onnx.has_value());
    EXPECT_NO_THROW(diagnose(inputs));
}

TEST(LogGraph, HostileLinesDoNotCrash)
{
    const std::vector<std::string> bodies = {
        line("Parsing node: ") + line(" [] inputs: [") + line(" [] outputs: ]]"),
        line("Parsing node: a [Relu]") + line("a [Relu] inputs: [ -> ()[]], [x -> (9999999999999999999999)[X]], "),
        line("Parsing node: a [Relu]") + line("a [Relu] outputs: [a -> (1)[FLOAT]], ") +
            line("Parsing node: a [Relu]") + line("a [Relu] inputs: [a -> (1)[FLOAT]], ") +
            line("a [Relu] outputs: [a -> (1)[FLOAT]], "),
        line("Adding network input: with dtype: , dimensions: (") + line("Parsing node: [x] [y]") +
            line("Marking  as output: "),
        line("Parsing node: n [If]") + line("n [If] inputs: [c -> ()[BOOL]], ") + line("Parsing node: m [Relu]") +
            line("n [If] outputs: [o -> (1)[FLOAT]], ") + line("m [Relu] outputs: [p -> (1)[FLOAT]], "),
    };
    for (const auto& body : bodies)
    {
        try
        {
            auto graph = rebuildText(body);
            if (graph)
            {
                EXPECT_TRUE(graph->rebuiltFromLog);
            }
        }
        catch (const InputError& error)
        {
            EXPECT_EQ(error.where().path, "test.log") << error.what();
        }
    }
}

TEST(LogGraph, MillionNodes)
{
    // A chain of 10^6 Relu nodes: over a lower node limit it is a clear error naming the option, within the default
    // limits an ordinary graph.
    constexpr std::size_t kNodes = 1'000'000;
    std::string text = "[V] [TRT] Adding network input: t0 with dtype: float32, dimensions: (1)\n";
    text.reserve(kNodes * 110);
    for (std::size_t i = 1; i <= kNodes; ++i)
    {
        const std::string n = std::to_string(i);
        const std::string in = std::to_string(i - 1);
        text += "[V] [TRT] Parsing node: n" + n + " [Relu]\n[V] [TRT] n" + n + " [Relu] inputs: [t" + in +
                " -> (1)[FLOAT]], \n[V] [TRT] n" + n + " [Relu] outputs: [t" + n + " -> (1)[FLOAT]], \n";
    }
    text += "[V] [TRT] Marking t" + std::to_string(kNodes) + " as output: t" + std::to_string(kNodes) + "\n";
    const BuildLog log = readBuildLogFromBuffer(text, "test.log");
    text.clear();
    text.shrink_to_fit();
    EXPECT_EQ(log.parsedNodes.size(), kNodes);
    Limits small;
    small.maxGraphNodes = 1000;
    try
    {
        rebuildGraphFromLog(log, small);
        ADD_FAILURE() << "expected an InputError";
    }
    catch (const InputError& error)
    {
        EXPECT_NE(error.message().find("--max-graph-nodes"), std::string::npos) << error.message();
        EXPECT_EQ(error.where().line, 2u + 3u * 1000u);
    }
    auto graph = rebuildGraphFromLog(log);
    ASSERT_TRUE(graph.has_value());
    EXPECT_EQ(graph->nodes.size(), kNodes);
    EXPECT_EQ(graph->producer("t1000000")->name, "n1000000");
    EXPECT_TRUE(graph->warnings.empty());
}

// ----------------------------------------------------------------------------------------------------------------
// Real logs

TEST(RealDataLogGraph, CookbookMnistTrtexecLogs)
{
    REQUIRE_SHARED();
    // Every cookbook trtexec log: 15 nodes (12 in the 10.14 one: its torch export has no Constant/Shape nodes).
    const std::vector<std::pair<std::string, std::size_t>> logs = {
        {"cookbook-mnist-trt8003/result-FP32.txt", 15}, {"cookbook-mnist-trt8003/result-FP16.txt", 15},
        {"cookbook-mnist-trt8203/result-FP32.txt", 15}, {"cookbook-mnist-trt8401/result-FP16.log", 15},
        {"cookbook-mnist-trt8401/result-FP32.log", 15}, {"cookbook-mnist-trt8600/result-02.log", 15},
        {"cookbook-mnist-trt10141/result-02.log", 12}};
    for (const auto& [relative, nodes] : logs)
    {
        OnnxGraph graph = rebuildReal(relative);
        EXPECT_EQ(graph.nodes.size(), nodes) << relative;
        EXPECT_EQ(graph.graphInputs.size(), 1u) << relative;
        EXPECT_EQ(graph.nodes.front().opType, "Conv") << relative;
        EXPECT_EQ(opHistogram(graph)["Conv"], 2u) << relative;
        EXPECT_EQ(opHistogram(graph)["MaxPool"], 2u) << relative;
        EXPECT_TRUE(graph.qdq.empty()) << relative;
        // 9 `Importing initializer` lines in each.
        std::size_t initializers = static_cast<std::size_t>(std::count_if(
            graph.constants.begin(), graph.constants.end(), [](const OnnxConstant& c) { return !c.fromConstantNode; }));
        EXPECT_EQ(initializers, 9u) << relative;
        for (const auto& warning : graph.warnings)
        {
            ADD_FAILURE() << relative << ": " << warning.describe();
        }
    }
    OnnxGraph tf = rebuildReal("cookbook-mnist-trt8003/result-FP32.txt");
    EXPECT_EQ(tf.graphInputs, std::vector<std::string>{"x:0"});
    EXPECT_EQ(tf.graphOutputs, std::vector<std::string>{"z:0"});
    ASSERT_NE(tf.findNode("Conv__25"), nullptr);
    EXPECT_EQ(tf.findNode("Conv__25")->inputs.toVector(), (std::vector<std::string>{"x:0", "w1/read:0", "b1/read:0"}));
    EXPECT_EQ(dimsOfValueInfo(tf, "w1/read:0"), (std::vector<std::int64_t>{32, 1, 5, 5}));
    EXPECT_EQ(tf.producer("Relu:0")->name, "Relu");

    OnnxGraph torch = rebuildReal("cookbook-mnist-trt10141/result-02.log");
    EXPECT_EQ(torch.graphOutputs, (std::vector<std::string>{"y", "z"}));
    EXPECT_EQ(torch.tensorType("z"), OnnxDataType::kInt64);     // ArgMax output: (-1)[INT64]
    EXPECT_EQ(torch.tensorType("val_5"), OnnxDataType::kInt64); // Reshape shape: (2)[INT64]
    EXPECT_EQ(dimsOfValueInfo(torch, "val_5"), (std::vector<std::int64_t>{2}));
    EXPECT_EQ(torch.nodes.back().opType, "ArgMax");
}

TEST(RealDataLogGraph, PythonLogWithThreeBuildsGivesTheFirst)
{
    REQUIRE_SHARED();
    // 36 `Parsing node` lines, 12 per build; the second build's `Adding network input` is line 1428.
    OnnxGraph graph = rebuildReal("cookbook-profilingverbosity-trt1016/log-main.py.log");
    EXPECT_EQ(graph.nodes.size(), 12u);
    EXPECT_EQ(graph.graphOutputs, (std::vector<std::string>{"y", "z"}));
    EXPECT_TRUE(hasWarningAt(graph, 1428, "another network"));
    BuildLog log = readBuildLog(realdata("cookbook-profilingverbosity-trt1016/log-main.py.log").string());
    EXPECT_EQ(log.parsedNodes.size(), 36u);
    EXPECT_EQ(log.networkInputs.size(), 3u);
    EXPECT_EQ(log.initializers.size(), 27u);
    EXPECT_EQ(log.networkOutputs.size(), 6u);
    for (const auto& node : log.parsedNodes)
    {
        EXPECT_NE(node.inputsLine, 0u) << node.onnxNode;
        EXPECT_NE(node.outputsLine, 0u) << node.onnxNode;
    }
}

TEST(RealDataLogGraph, TrexYoloQdqLog)
{
    REQUIRE_SHARED();
    OnnxGraph graph = rebuildReal("trex-notebooks-yolo-orin-trt852/trt.out");
    // grep -c "Parsing node" = 701; by op: 279 Constant, 86 QuantizeLinear, 86 DequantizeLinear, 43 Conv, ...
    EXPECT_EQ(graph.nodes.size(), 701u);
    auto ops = opHistogram(graph);
    EXPECT_EQ(ops["Constant"], 279u);
    EXPECT_EQ(ops["QuantizeLinear"], 86u);
    EXPECT_EQ(ops["DequantizeLinear"], 86u);
    EXPECT_EQ(ops["Conv"], 43u);
    EXPECT_EQ(ops["Resize"], 2u);
    EXPECT_EQ(graph.quantizeCount(), 86u);
    EXPECT_EQ(graph.qdq.size(), 172u);
    EXPECT_EQ(graph.graphInputs, std::vector<std::string>{"input"});
    EXPECT_EQ(graph.graphOutputs, std::vector<std::string>{"output"});
    EXPECT_EQ(graph.tensorType("input"), OnnxDataType::kFloat);
    // 203 `Importing initializer` lines, 279 Constant nodes.
    std::size_t initializers = static_cast<std::size_t>(std::count_if(
        graph.constants.begin(), graph.constants.end(), [](const OnnxConstant& c) { return !c.fromConstantNode; }));
    EXPECT_EQ(initializers, 203u);
    EXPECT_EQ(graph.constants.size() - initializers, 279u);
    // Lines 414-422: the input Q reads input, a () FLOAT scale and a () INT8 zero point from Constant nodes.
    const OnnxNode* q = graph.findNode("/backbone/conv1/_input_quantizer/QuantizeLinear");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->inputs[0], "input");
    const QdqParameters* parameters = graph.qdqOf(q->index);
    ASSERT_NE(parameters, nullptr);
    EXPECT_TRUE(parameters->scaleIsConstant);
    EXPECT_EQ(parameters->scaleElements, 1);
    EXPECT_EQ(parameters->zeroPointType, OnnxDataType::kInt8);
    // Lines 436-440: the weight Q has 64 scales (per channel).
    const OnnxNode* wq = graph.findNode("/backbone/conv1/_weight_quantizer/QuantizeLinear");
    ASSERT_NE(wq, nullptr);
    EXPECT_EQ(graph.qdqOf(wq->index)->scaleElements, 64);
    EXPECT_EQ(dimsOfValueInfo(graph, "backbone.conv1.weight"), (std::vector<std::int64_t>{64, 3, 7, 7}));
    // Line 2396: Resize's omitted roi input.
    const OnnxNode* resize = graph.findNode("/neck/Resize");
    ASSERT_NE(resize, nullptr);
    ASSERT_EQ(resize->inputs.size(), 3u);
    EXPECT_EQ(resize->inputs[1], "");
    for (const auto& warning : graph.warnings)
    {
        ADD_FAILURE() << warning.describe();
    }
}

TEST(RealDataLogGraph, OrinLogWithIfBranchesAndACrash)
{
    REQUIRE_SHARED();
    // 14 `Parsing node` lines; the If nodes' outputs lines follow the nodes of their branches (lines 190-235).
    OnnxGraph graph = rebuildReal("lix-orin-trt8410-best/orin_build_from_shqi.log");
    EXPECT_EQ(graph.nodes.size(), 14u);
    EXPECT_EQ(opHistogram(graph)["If"], 2u);
    const OnnxNode* outer = graph.findNode("If_6");
    ASSERT_NE(outer, nullptr);
    EXPECT_EQ(outer->outputs.toVector(), std::vector<std::string>{"10"});
    EXPECT_EQ(graph.findNode("If_11")->outputs.toVector(), std::vector<std::string>{"15"});
    EXPECT_EQ(graph.graphOutputs, std::vector<std::string>{"10"});
    EXPECT_EQ(graph.tensorType("8"), OnnxDataType::kBool);
}

TEST(RealDataLogGraph, BlogExcerptWithOneNode)
{
    REQUIRE_SHARED();
    // An excerpt: one Q node whose input and constants were defined before it.
    OnnxGraph graph = rebuildReal("blogdoc-yolov8-qdq-orin-trt8412/blogdoc-yolov8-qdq-orin-trt8412.log.txt");
    ASSERT_EQ(graph.nodes.size(), 1u);
    EXPECT_EQ(graph.nodes[0].opType, "QuantizeLinear");
    EXPECT_EQ(graph.graphInputs, std::vector<std::string>{"images"});
    ASSERT_EQ(graph.qdq.size(), 1u);
    EXPECT_TRUE(graph.qdq[0].scaleIsConstant);
    EXPECT_TRUE(hasWarning(graph, "'images'"));
    // diagnose does not take an excerpt's graph for the model: the engine artifacts are judged as before.
    InputFiles files;
    files.files.push_back(realdata("blogdoc-yolov8-qdq-orin-trt8412/blogdoc-yolov8-qdq-orin-trt8412.log.txt").string());
    Inputs inputs = loadInputs(files, Limits{});
    EXPECT_FALSE(inputs.onnx.has_value());
    ASSERT_TRUE(inputs.buildLog.has_value());
    EXPECT_TRUE(std::any_of(inputs.buildLog->warnings.begin(), inputs.buildLog->warnings.end(),
                            [](const ReaderWarning& w) { return w.message.find("incomplete") != std::string::npos; }));
    EXPECT_FALSE(logGraphComplete(*inputs.buildLog));
}

TEST(RealDataLogGraph, LixMnistMatchesTheRealModel)
{
    REQUIRE_SHARED();
    OnnxGraph rebuilt = rebuildReal("lix-mnist-orin-trt8510-best/trt_build_best.log");
    OnnxGraph real = readOnnx(realdata("lix-mnist-orin-trt8510-best/mnist.onnx").string());
    ASSERT_EQ(rebuilt.nodes.size(), real.nodes.size());
    EXPECT_EQ(rebuilt.nodes.size(), 12u); // grep -c "Parsing node"
    for (std::size_t i = 0; i < real.nodes.size(); ++i)
    {
        EXPECT_EQ(rebuilt.nodes[i].name, real.nodes[i].name) << i;
        EXPECT_EQ(rebuilt.nodes[i].opType, real.nodes[i].opType) << i;
        EXPECT_EQ(rebuilt.nodes[i].inputs.toVector(), real.nodes[i].inputs.toVector()) << real.nodes[i].name;
        EXPECT_EQ(rebuilt.nodes[i].outputs.toVector(), real.nodes[i].outputs.toVector()) << real.nodes[i].name;
    }
    EXPECT_EQ(rebuilt.graphInputs, real.graphInputs);
    EXPECT_EQ(rebuilt.graphOutputs, real.graphOutputs);
    // Every initializer of the real model, with its shape and type.
    for (const auto& constant : real.constants)
    {
        const OnnxConstant* mine = rebuilt.constant(constant.name);
        ASSERT_NE(mine, nullptr) << constant.name;
        EXPECT_EQ(mine->dims, constant.dims) << constant.name;
        // TensorRT 8.x casts INT64 initializers (Reshape shapes here) to INT32 and prints the cast type (the log's
        // "Your ONNX model has been generated with INT64 weights" warning); 10.x prints INT64.
        EXPECT_EQ(mine->dataType, constant.dataType == OnnxDataType::kInt64 ? OnnxDataType::kInt32 : constant.dataType)
            << constant.name;
        EXPECT_EQ(mine->fromConstantNode, constant.fromConstantNode) << constant.name;
    }
    EXPECT_EQ(rebuilt.constants.size(), real.constants.size());
}

TEST(RealDataLogGraph, DiagnoseTrexLogAlone)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files.push_back(realdata("trex-notebooks-yolo-orin-trt852/trt.out").string());
    Inputs inputs = loadInputs(files, Limits{});
    ASSERT_TRUE(inputs.onnx.has_value());
    EXPECT_TRUE(inputs.onnx->rebuiltFromLog);
    Report report = diagnose(inputs);
    // Before the graph was rebuilt, the log alone gave 18 findings: fp32-island, standalone-qdq,
    // conv-act-pool-blocked, 2 fanout-scale-mismatch (a Q and a post-merge clone: no longer), 8
    // residual-input-not-quantized, 2 int8-conv-float-output, 2 concat-quantize-hoisted, io-reformat.
    std::map<std::string, std::size_t> bySlug;
    for (const auto& finding : report.findings)
    {
        bySlug[finding.rule]++;
    }
    EXPECT_GE(report.findings.size(), 16u);
    EXPECT_GE(bySlug["fp32-island"], 1u);
    EXPECT_GE(bySlug["standalone-qdq"], 1u);
    EXPECT_GE(bySlug["conv-act-pool-blocked"], 1u);
    EXPECT_EQ(bySlug["fanout-scale-mismatch"], 0u); // its two were a Q beside a post-merge clone
    EXPECT_GE(bySlug["residual-input-not-quantized"], 8u);
    EXPECT_GE(bySlug["int8-conv-float-output"], 2u);
    EXPECT_GE(bySlug["concat-quantize-hoisted"], 2u);
    EXPECT_GE(bySlug["io-reformat"], 1u);
    // The accounting covers every Q/DQ node of the rebuilt graph.
    auto qdq = report.correlation.qdqTotals();
    EXPECT_EQ(qdq.total, 172u);
    EXPECT_EQ(qdq.total, qdq.fused + qdq.standalone + qdq.folded + qdq.eliminated + qdq.unknown);
    // The notes say where the graph came from and which rules need the model's values.
    auto hasNote = [&](const std::string& text)
    {
        return std::any_of(report.notes.begin(), report.notes.end(),
                           [&](const std::string& note) { return note.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(hasNote("graph rebuilt from"));
    EXPECT_TRUE(hasNote("701 nodes"));
    EXPECT_TRUE(
        hasNote("concat-scale-mismatch: not checked, needs the ONNX model (the build log has no scale values)"));
    EXPECT_TRUE(hasNote("weight-axis: not checked, needs the ONNX model"));
    EXPECT_TRUE(hasNote("fanout-scale-mismatch: the model's part not checked, needs the ONNX model"));
}

TEST(RealDataLogGraph, ModelGivenBesideTheLogIsUsed)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files.push_back(realdata("lix-mnist-orin-trt8510-best/trt_build_best.log").string());
    files.files.push_back(realdata("lix-mnist-orin-trt8510-best/mnist.onnx").string());
    Inputs inputs = loadInputs(files, Limits{});
    ASSERT_TRUE(inputs.onnx.has_value());
    EXPECT_FALSE(inputs.onnx->rebuiltFromLog);
}

TEST(RealDataLogGraph, InspectShowsTheRebuiltGraph)
{
    REQUIRE_SHARED();
    const std::string log = realdata("trex-notebooks-yolo-orin-trt852/trt.out").string();
    auto json = runCli({"inspect", "--format", "json", log});
    ASSERT_EQ(json.exitStatus, 0) << json.err;
    auto summary = nlohmann::json::parse(json.out);
    ASSERT_EQ(summary.size(), 1u);
    const auto& graph = summary[0]["rebuilt_graph"];
    EXPECT_EQ(graph["nodes"], 701);
    EXPECT_EQ(graph["qdq_nodes"], 172);
    EXPECT_EQ(graph["initializers"], 203);
    EXPECT_EQ(graph["constant_nodes"], 279);
    EXPECT_EQ(graph["inputs"], 1);
    EXPECT_EQ(graph["outputs"], 1);
    EXPECT_EQ(graph["operators"]["Conv"], 43);
    EXPECT_EQ(graph["operators"]["QuantizeLinear"], 86);
    auto text = runCli({"inspect", log});
    ASSERT_EQ(text.exitStatus, 0) << text.err;
    EXPECT_NE(text.out.find("nodes: 701, tensors: "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("Q/DQ nodes: 172"), std::string::npos);
    EXPECT_NE(text.out.find("      DequantizeLinear: 86"), std::string::npos);
}
