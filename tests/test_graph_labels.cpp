// Labels of the pictures: names wrap at their joints instead of being cut, titles wrap instead of running off the
// side, edges carry the tensor's precision, layout and shape, and --collapse none draws every layer.
#include "qdq/graph.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace qdq;
using namespace qdq::test;
namespace fs = std::filesystem;

namespace
{

std::string joined(const std::vector<std::string>& lines)
{
    std::string text;
    for (const auto& line : lines)
    {
        text += (text.empty() ? "" : "|") + line;
    }
    return text;
}

std::size_t countOf(const std::string& text, const std::string& needle)
{
    std::size_t count = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size()))
    {
        ++count;
    }
    return count;
}

EngineTensor tensor(const std::string& name, Precision precision, const std::string& format,
                    std::vector<std::int64_t> dimensions, int vectorWidth = 0)
{
    EngineTensor t;
    t.name = name;
    t.precision = precision;
    t.format = format;
    t.dimensions = std::move(dimensions);
    t.vectorWidth = vectorWidth;
    return t;
}

} // namespace

TEST(GraphLabels, FusedNamesWrapAfterPlusSigns)
{
    const std::string name = "layer1.0.conv2.weight + QuantizeLinear_32 + Conv_34 + BatchNormalization_35 + Add_36 + "
                             "Relu_37";
    std::vector<std::string> lines = graph::wrapName(name, 48);
    EXPECT_EQ(joined(lines), "layer1.0.conv2.weight + QuantizeLinear_32 +|Conv_34 + BatchNormalization_35 + Add_36 +|"
                             "Relu_37");
    // Every node name whole on one line, nothing cut or dropped.
    std::string rejoined;
    for (const auto& line : lines)
    {
        EXPECT_LE(line.size(), 48u) << line;
        rejoined += (rejoined.empty() ? "" : " ") + line;
    }
    EXPECT_EQ(rejoined, name);
    EXPECT_EQ(graph::wrapName("Conv_9", 48), std::vector<std::string>{"Conv_9"});
    EXPECT_EQ(joined(graph::wrapName("a || b || c", 6)), "a |||b || c");
}

TEST(GraphLabels, LongSingleNamesBreakAtSlashesAndLongListsAreSummarized)
{
    // One ONNX node name longer than a line: broken after '/', never cut with "...".
    std::vector<std::string> lines =
        graph::wrapName("/img_backbone/layer2/layer2_0/downsample/downsample_0/Conv_myl2_29", 40);
    EXPECT_EQ(joined(lines), "/img_backbone/layer2/layer2_0/|downsample/downsample_0/Conv_myl2_29");
    // No joint at all: cut at the width, on a character boundary, every byte kept.
    std::string plain(100, 'x');
    lines = graph::wrapName(plain, 48);
    EXPECT_EQ(joined(lines), std::string(48, 'x') + "|" + std::string(48, 'x') + "|xxxx");
    // A Myelin region of dozens of nodes: the first lines, then how many more.
    std::string many;
    for (int i = 0; i < 40; ++i)
    {
        many += (i == 0 ? "" : " + ") + std::string("/encoder/layer.") + std::to_string(i) + "/Add";
    }
    lines = graph::wrapName(many, 48, 6);
    ASSERT_EQ(lines.size(), 6u);
    EXPECT_EQ(lines.back().rfind("(+", 0), 0u) << lines.back();
    EXPECT_EQ(lines.front(), "/encoder/layer.0/Add + /encoder/layer.1/Add +");
}

TEST(GraphLabels, TextWrapsAtSpaces)
{
    EXPECT_EQ(joined(graph::wrapText("aaa bbb ccc ddd", 7)), "aaa bbb|ccc ddd");
    EXPECT_EQ(joined(graph::wrapText("averyveryverylongword x", 5)), "averyveryverylongword|x");
    EXPECT_EQ(joined(graph::wrapText("short", 110)), "short");
}

TEST(GraphLabels, TensorLabelsNamePrecisionLayoutAndShape)
{
    EXPECT_EQ(
        graph::tensorLabel(tensor("t", Precision::kINT8, "Thirty-two wide channel vectorized row major Int8 format",
                                  {128, 16, 56, 56}, 32)),
        "INT8 CHW32 128x16x56x56");
    EXPECT_EQ(graph::tensorLabel(
                  tensor("t", Precision::kFP16, "Channel major FP16 format where channel % 8 == 0", {1, 64, -1, 56})),
              "FP16 HWC8 1x64x?x56");
    EXPECT_EQ(graph::tensorLabel(tensor("t", Precision::kFP32, "Row major linear FP32", {1, 3})), "FP32 LINEAR 1x3");
    EXPECT_EQ(graph::tensorLabel(tensor("t", Precision::kFP16, "Half", {7, 64})), "FP16 7x64");
    EXPECT_EQ(graph::tensorLabel(tensor("t", Precision::kUnknown, "", {})), "");
}

TEST(GraphLabels, EdgesCarryTheTensorAndGoBesideTheEdgeInBigPictures)
{
    auto draw = [](std::size_t layers)
    {
        EnginePlan plan;
        plan.sourcePath = "chain/layers.json";
        plan.form = LayerListForm::kDetailed;
        for (std::size_t i = 0; i < layers; ++i)
        {
            EngineLayer layer;
            layer.setName("Conv_" + std::to_string(i));
            layer.type = "CaskConvolution";
            // Alternating precisions keep a long chain from collapsing into one box.
            Precision precision = i % 2 == 0 ? Precision::kINT8 : Precision::kFP16;
            layer.inputs.push_back(tensor("t" + std::to_string(i), precision, "", {1, 64, 56, 56}));
            layer.outputs.push_back(tensor("t" + std::to_string(i + 1),
                                           i % 2 == 0 ? Precision::kFP16 : Precision::kINT8, "", {1, 64, 56, 56}));
            plan.layers.push_back(std::move(layer));
        }
        Inputs inputs;
        inputs.layerInfo = plan;
        Report report = diagnose(inputs);
        graph::Options options;
        options.collapseAbove = static_cast<std::size_t>(-1);
        return graph::writeDot(graph::buildEngineGraph(inputs, report, options));
    };
    std::string small = draw(3);
    EXPECT_NE(small.find("L0 -> L1 [label=\"FP16 1x64x56x56\"]"), std::string::npos) << small;
    EXPECT_EQ(small.find("xlabel"), std::string::npos);
    std::string big = draw(graph::kInlineEdgeLabelsUpTo + 10);
    EXPECT_NE(big.find("L0 -> L1 [xlabel=\"FP16 1x64x56x56\"]"), std::string::npos);

    graph::Options noLabels;
    noLabels.edgeLabels = false;
    EnginePlan plan;
    plan.sourcePath = "x.json";
    EngineLayer a;
    a.setName("a");
    a.outputs.push_back(tensor("t", Precision::kINT8, "", {1}));
    EngineLayer b;
    b.setName("b");
    b.inputs.push_back(tensor("t", Precision::kINT8, "", {1}));
    plan.layers = {a, b};
    Inputs inputs;
    inputs.layerInfo = plan;
    Report report = diagnose(inputs);
    EXPECT_EQ(graph::writeDot(graph::buildEngineGraph(inputs, report, noLabels)).find("label=\"INT8"),
              std::string::npos);
}

TEST(GraphLabels, FindingPictureTitleHoldsTheWholeMessage)
{
    fs::path sample = fs::path(QDQ_SOURCE_DIR) / "samples" / "c-resnet-conv-maxpool";
    fs::path out = tempDir("graph-labels") / "report";
    auto result = runCli({"diagnose", "-o", out.string(), "--dot", sample.string()});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    std::string dot = readFile(out / "finding-02-conv-act-pool-blocked.dot");
    std::string title = dot.substr(dot.find("label=\""), dot.find("labelloc") - dot.find("label=\""));
    // The message wraps over lines; none of it is replaced by "...".
    EXPECT_NE(title.find("the MaxPool output also\\nfeeds Add_36 (Add) without quantization, so the pool cannot run "
                         "in the conv's INT8 precision."),
              std::string::npos)
        << title;
    EXPECT_EQ(title.substr(0, title.find("fill = ")).find("..."), std::string::npos) << title;
    // Focus names are whole too (the list of more than three ends with "... (N in all)").
    EXPECT_NE(title.find("Reformatting CopyNode for Output Tensor 0 to MaxPool_12"), std::string::npos) << title;
    for (std::size_t start = 0, end = 0; end != std::string::npos; start = end + 2)
    {
        end = title.find("\\n", start);
        EXPECT_LE((end == std::string::npos ? title.size() : end) - start, 125u);
    }
    // Layer names are whole, wrapped at " + ".
    EXPECT_NE(dot.find("layer1.0.conv2.weight + QuantizeLinear_32 +\\nConv_34 + BatchNormalization_35 + Add_36 +"),
              std::string::npos);
}

TEST(RealDataGraphLabels, CollapseNoneDrawsEveryLayer)
{
    REQUIRE_SHARED();
    const std::string layers = realdata("lix-engine-analysis-dmt-fp16/layers_tofp16.json").string();
    auto automatic = runCli({"graph", layers, "--format", "dot"});
    auto every = runCli({"graph", layers, "--format", "dot", "--collapse", "none"});
    ASSERT_EQ(automatic.exitStatus, 0) << automatic.err;
    ASSERT_EQ(every.exitStatus, 0) << every.err;
    // One node per layer (ids L<n>), no 3-D boxes, against the collapsed picture.
    EXPECT_EQ(countOf(every.out, "shape=\"box3d\""), 0u);
    EXPECT_GT(countOf(automatic.out, "shape=\"box3d\""), 0u);
    std::size_t nodes = 0;
    for (std::size_t at = every.out.find("\n  L"); at != std::string::npos; at = every.out.find("\n  L", at + 1))
    {
        std::size_t space = every.out.find(' ', at + 3);
        nodes += every.out.compare(space, 4, " [la") == 0 ? 1 : 0;
    }
    EXPECT_EQ(nodes, 1309u);
    // Edge labels of a picture this big sit beside the edges.
    EXPECT_NE(every.out.find("[xlabel=\"INT8 "), std::string::npos);
    EXPECT_EQ(runCli({"graph", layers, "--collapse", "some"}).exitStatus, 2);
}
