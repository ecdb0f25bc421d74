// Graphs for bug reports: DOT golden files for small hand-built cases, escaping of hostile names, well-formed SVG
// from Graphviz, focus/radius neighbourhoods, collapsing, the CLI files, and real engines.
#include "graph_builder.h"
#include "qdq/graph.h"
#include "qdq/load_inputs.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <regex>

using namespace qdq;
using namespace qdq::test;

namespace
{

const char* kInt8 = "Thirty-two wide channel vectorized row major Int8 format";
const char* kFp16 = "Row major linear FP16 format";
const char* kFp32 = "Row major linear FP32";

//! A small well-formedness check for XML (no DTD processing): tags balance, attribute values are quoted, every `&`
//! starts a known entity or a character reference, text is valid UTF-8 without forbidden control characters.
//! Returns an empty string when well-formed, else what is wrong and where.
std::string xmlProblem(const std::string& xml)
{
    std::vector<std::string> stack;
    std::size_t i = 0;
    auto fail = [&](const std::string& what) { return what + " at byte " + std::to_string(i); };
    auto checkText = [&](std::size_t from, std::size_t to) -> std::string
    {
        for (std::size_t k = from; k < to; ++k)
        {
            unsigned char c = static_cast<unsigned char>(xml[k]);
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            {
                return "control character " + std::to_string(c) + " at byte " + std::to_string(k);
            }
            if (c == '<')
            {
                return "raw '<' at byte " + std::to_string(k);
            }
            if (c == '&')
            {
                std::size_t end = xml.find(';', k);
                if (end == std::string::npos || end > to || end - k > 10)
                {
                    return "bare '&' at byte " + std::to_string(k);
                }
                std::string entity = xml.substr(k + 1, end - k - 1);
                bool numeric = entity.size() > 1 && entity[0] == '#';
                if (!numeric && entity != "amp" && entity != "lt" && entity != "gt" && entity != "quot" &&
                    entity != "apos")
                {
                    return "unknown entity &" + entity + "; at byte " + std::to_string(k);
                }
            }
            if (c >= 0x80)
            {
                std::size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
                if (length == 0 || k + length > to)
                {
                    return "invalid UTF-8 at byte " + std::to_string(k);
                }
                for (std::size_t m = 1; m < length; ++m)
                {
                    if ((static_cast<unsigned char>(xml[k + m]) & 0xC0) != 0x80)
                    {
                        return "invalid UTF-8 at byte " + std::to_string(k);
                    }
                }
                k += length - 1;
            }
        }
        return {};
    };
    bool sawRoot = false;
    while (i < xml.size())
    {
        std::size_t open = xml.find('<', i);
        std::string problem = checkText(i, open == std::string::npos ? xml.size() : open);
        if (!problem.empty())
        {
            return problem;
        }
        if (open == std::string::npos)
        {
            break;
        }
        i = open;
        if (xml.compare(i, 4, "<!--") == 0)
        {
            std::size_t end = xml.find("-->", i);
            if (end == std::string::npos)
            {
                return fail("unterminated comment");
            }
            i = end + 3;
            continue;
        }
        if (xml.compare(i, 2, "<?") == 0 || xml.compare(i, 2, "<!") == 0)
        {
            std::size_t end = xml.find('>', i);
            if (end == std::string::npos)
            {
                return fail("unterminated declaration");
            }
            i = end + 1;
            continue;
        }
        bool closing = xml.compare(i, 2, "</") == 0;
        std::size_t k = i + (closing ? 2 : 1);
        std::size_t nameStart = k;
        while (k < xml.size() && (std::isalnum(static_cast<unsigned char>(xml[k])) || xml[k] == ':' || xml[k] == '-' ||
                                  xml[k] == '_' || xml[k] == '.'))
        {
            ++k;
        }
        std::string name = xml.substr(nameStart, k - nameStart);
        if (name.empty())
        {
            return fail("tag without a name");
        }
        // Attributes: name="value" with the value checked as text.
        bool selfClosing = false;
        while (true)
        {
            while (k < xml.size() && std::isspace(static_cast<unsigned char>(xml[k])))
            {
                ++k;
            }
            if (k >= xml.size())
            {
                return fail("unterminated tag <" + name);
            }
            if (xml[k] == '>')
            {
                ++k;
                break;
            }
            if (xml.compare(k, 2, "/>") == 0)
            {
                selfClosing = true;
                k += 2;
                break;
            }
            if (closing)
            {
                return fail("junk in closing tag");
            }
            std::size_t equals = xml.find('=', k);
            if (equals == std::string::npos || equals + 1 >= xml.size() ||
                (xml[equals + 1] != '"' && xml[equals + 1] != '\''))
            {
                return fail("attribute without a quoted value in <" + name);
            }
            char quote = xml[equals + 1];
            std::size_t end = xml.find(quote, equals + 2);
            if (end == std::string::npos)
            {
                return fail("unterminated attribute value");
            }
            std::string attributeProblem = checkText(equals + 2, end);
            if (!attributeProblem.empty())
            {
                return attributeProblem + " (attribute)";
            }
            k = end + 1;
        }
        if (closing)
        {
            if (stack.empty() || stack.back() != name)
            {
                return fail("closing </" + name + "> does not match <" + (stack.empty() ? "" : stack.back()) + ">");
            }
            stack.pop_back();
        }
        else if (!selfClosing)
        {
            if (stack.empty() && sawRoot)
            {
                return fail("second root element");
            }
            sawRoot = true;
            stack.push_back(name);
        }
        i = k;
    }
    if (!stack.empty())
    {
        return "unclosed <" + stack.back() + ">";
    }
    return sawRoot ? std::string() : "no root element";
}

//! Decoded text of the SVG (entities resolved) for searching names.
std::string svgText(const std::string& svg)
{
    std::string out;
    for (std::size_t i = 0; i < svg.size(); ++i)
    {
        if (svg[i] == '&')
        {
            std::size_t end = svg.find(';', i);
            std::string entity = svg.substr(i + 1, end - i - 1);
            if (entity.size() > 1 && entity[0] == '#')
            {
                unsigned long code =
                    entity[1] == 'x' ? std::stoul(entity.substr(2), nullptr, 16) : std::stoul(entity.substr(1));
                if (code < 0x80)
                {
                    out += static_cast<char>(code);
                }
                else if (code < 0x800)
                {
                    out += static_cast<char>(0xC0 | (code >> 6));
                    out += static_cast<char>(0x80 | (code & 0x3F));
                }
                else
                {
                    out += static_cast<char>(0xE0 | (code >> 12));
                    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                    out += static_cast<char>(0x80 | (code & 0x3F));
                }
            }
            else
            {
                out += entity == "amp"    ? "&"
                       : entity == "lt"   ? "<"
                       : entity == "gt"   ? ">"
                       : entity == "quot" ? "\""
                                          : "?";
            }
            i = end;
        }
        else
        {
            out += svg[i];
        }
    }
    return out;
}

//! Q -> conv (INT8) -> reformat -> conv (FP16) -> conv (FP32), with a profile; conv1 has a hostile name.
struct SmallEngine
{
    Inputs inputs;
    Report report;
};

SmallEngine smallEngine(const std::string& hostile = "conv1.weight + QuantizeLinear_7 + Conv_9")
{
    EnginePlan plan;
    plan.sourcePath = "small/layers.json";
    plan.form = LayerListForm::kDetailed;
    plan.layers.push_back(layer("QuantizeLinear_2", "Reformat", {{"input", kFp32}}, {{"q0", kInt8}}, "QDQ"));
    plan.layers.push_back(layer(hostile, "CaskConvolution", {{"q0", kInt8}}, {{"c0", kInt8}}));
    plan.layers.push_back(layer("Reformatting CopyNode for Input Tensor 0 to Conv_20", "Reformat", {{"c0", kInt8}},
                                {{"r0", kFp16}}, "REFORMAT"));
    plan.layers.push_back(layer("Conv_20", "CaskConvolution", {{"r0", kFp16}}, {{"c1", kFp16}}));
    plan.layers.push_back(layer("Conv_30", "CaskConvolution", {{"c1", kFp16}}, {{"output", kFp32}}));
    Profile profile;
    profile.sourcePath = "small/profile.json";
    double times[] = {0.05, 0.2, 0.03, 0.1, 0.125};
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        ProfileEntry entry;
        entry.name = plan.layers[i].name;
        entry.averageMs = entry.timeMs = times[i];
        profile.entries.push_back(entry);
    }
    SmallEngine result;
    result.inputs.layerInfo = plan;
    result.inputs.profile = profile;
    result.inputs.deriveMissingPlan();
    result.report = diagnose(result.inputs);
    return result;
}

//! in -> Q/DQ -> Conv -> Relu -> MaxPool -> Q/DQ -> Conv -> Add(conv, pool) : the ResNet stem and a float residual.
OnnxGraph smallOnnx()
{
    GraphBuilder g;
    std::string x = g.qdq("/in_q", g.input("images"));
    std::string c0 = g.node("Conv", "/conv0/Conv", {x, g.quantizedWeight("conv0", 8, 3)});
    std::string r0 = g.node("Relu", "/relu0/Relu", {c0});
    std::string p0 = g.node("MaxPool", "/pool/MaxPool", {r0});
    std::string c1 = g.node("Conv", "/conv1/Conv", {g.qdq("/conv1/in_q", p0), g.quantizedWeight("conv1", 8, 8)});
    std::string sum = g.node("Add", "/add/Add", {c1, p0});
    g.output(sum);
    return g.build("small.onnx");
}

std::string goldenPath(const std::string& name)
{
    return fixture("graphs/" + name).string();
}

//! Compares with tests/fixtures/graphs/<name>; QDQ_UPDATE_GOLDEN=1 rewrites the file instead.
void expectGolden(const std::string& name, const std::string& actual)
{
    if (std::getenv("QDQ_UPDATE_GOLDEN") != nullptr)
    {
        writeFile(goldenPath(name), actual);
        return;
    }
    EXPECT_EQ(actual, readFile(goldenPath(name)))
        << "golden file " << name << " differs (QDQ_UPDATE_GOLDEN=1 rewrites it after review)";
}

const graph::Node* findNodeWithLine(const graph::Graph& g, const std::string& text)
{
    // The full name first: a wrapped name's last line ("Conv_20" of "... to Conv_20") is another node's whole name.
    for (const auto& node : g.nodes)
    {
        if (node.tooltip == text)
        {
            return &node;
        }
    }
    for (const auto& node : g.nodes)
    {
        for (const auto& line : node.lines)
        {
            if (line == text)
            {
                return &node;
            }
        }
    }
    return nullptr;
}

} // namespace

// ---- DOT text: golden files -------------------------------------------------------------------------------------

TEST(GraphDot, SmallEngineGolden)
{
    SmallEngine engine = smallEngine();
    expectGolden("small-engine.dot", graph::writeDot(graph::buildEngineGraph(engine.inputs, engine.report)));
}

TEST(GraphDot, SmallEngineFocusGolden)
{
    SmallEngine engine = smallEngine();
    graph::Options options;
    options.focus = {"Conv_20"};
    options.radius = 1;
    expectGolden("small-engine-focus.dot",
                 graph::writeDot(graph::buildEngineGraph(engine.inputs, engine.report, options)));
}

TEST(GraphDot, SmallOnnxGolden)
{
    Inputs inputs;
    inputs.onnx = smallOnnx();
    Report report = diagnose(inputs);
    expectGolden("small-onnx-predicted.dot", graph::writeDot(graph::buildOnnxGraph(inputs, report)));
}

TEST(GraphDot, HostileNamesGolden)
{
    SmallEngine engine = smallEngine(std::string("a\"b<c>d&e || f\\g\x1e h\x1fi \xff\xfe j &amp; k"));
    expectGolden("hostile-engine.dot", graph::writeDot(graph::buildEngineGraph(engine.inputs, engine.report)));
}

TEST(GraphDot, WriterIsDeterministic)
{
    SmallEngine a = smallEngine();
    SmallEngine b = smallEngine();
    EXPECT_EQ(graph::writeDot(graph::buildEngineGraph(a.inputs, a.report)),
              graph::writeDot(graph::buildEngineGraph(b.inputs, b.report)));
}

// ---- escaping -----------------------------------------------------------------------------------------------------

TEST(GraphEscape, QuotesBackslashesAndMarkup)
{
    EXPECT_EQ(graph::escapeLabel("a\"b"), "a\\\"b");
    EXPECT_EQ(graph::escapeLabel("a\\b"), "a\\\\b");
    EXPECT_EQ(graph::escapeLabel("<x> & y"), "&lt;x&gt; &amp; y");
    EXPECT_EQ(graph::escapeLabel("&amp;"), "&amp;amp;");
    EXPECT_EQ(graph::escapeLabel("a || b"), "a || b");
}

TEST(GraphEscape, ControlCharactersAndInvalidUtf8BecomeVisible)
{
    EXPECT_EQ(graph::escapeLabel("a\x1e"
                                 "b\x1f"
                                 "c"),
              "a\\\\x1eb\\\\x1fc");
    EXPECT_EQ(graph::escapeLabel("a\xff"
                                 "b"),
              "a\\\\xffb");
    EXPECT_EQ(graph::escapeLabel("\xef\xbf\xbf"), "\\\\uffff");
    EXPECT_EQ(graph::escapeLabel("caf\xc3\xa9"), "caf\xc3\xa9"); // valid UTF-8 stays
}

TEST(GraphEscape, ShortenKeepsStartAndEndOnCharacterBoundaries)
{
    std::string name = "layer1.0.conv2.weight + QuantizeLinear_32 + Conv_34 + Add_36 + Relu_37";
    std::string shortened = graph::shortenLine(name, 30);
    EXPECT_LE(shortened.size(), 30u);
    EXPECT_EQ(shortened.rfind("layer1.0.conv2.we", 0), 0u);
    EXPECT_NE(shortened.find("..."), std::string::npos);
    EXPECT_EQ(shortened.substr(shortened.size() - 4), "u_37");
    std::string accented;
    for (int i = 0; i < 40; ++i)
    {
        accented += "\xc3\xa9";
    }
    EXPECT_TRUE(xmlProblem("<a>" + graph::shortenLine(accented, 21) + "</a>").empty());
}

TEST(GraphEscape, FileSlug)
{
    EXPECT_EQ(graph::fileSlug("standalone-qdq"), "standalone-qdq");
    EXPECT_EQ(graph::fileSlug("../../etc/Passwd"), "etc-passwd");
    EXPECT_EQ(graph::fileSlug(""), "graph");
}

// ---- SVG through libgvc -------------------------------------------------------------------------------------------

TEST(GraphSvg, XmlCheckerRejectsBrokenDocuments)
{
    EXPECT_TRUE(xmlProblem("<svg a=\"1\"><g>x &amp; y</g></svg>").empty());
    EXPECT_FALSE(xmlProblem("<svg><g></svg>").empty());
    EXPECT_FALSE(xmlProblem("<svg>a & b</svg>").empty());
    EXPECT_FALSE(xmlProblem("<svg>a \x1e b</svg>").empty());
    EXPECT_FALSE(xmlProblem("<svg>\xff</svg>").empty());
    EXPECT_FALSE(xmlProblem("<svg a=1></svg>").empty());
}

TEST(GraphSvg, SmallEngineIsWellFormedAndNamesEverything)
{
    SmallEngine engine = smallEngine();
    std::string svg = graph::render(graph::buildEngineGraph(engine.inputs, engine.report), graph::Format::kSvg);
    ASSERT_EQ(xmlProblem(svg), "");
    std::string text = svgText(svg);
    EXPECT_NE(text.find("QuantizeLinear_2"), std::string::npos);
    EXPECT_NE(text.find("Conv_20"), std::string::npos);
    EXPECT_NE(text.find("0.200 ms"), std::string::npos);
    ASSERT_FALSE(engine.report.findings.empty());
    EXPECT_NE(text.find("[!] " + engine.report.findings.front().rule), std::string::npos);
}

TEST(GraphSvg, HostileNamesGiveWellFormedSvg)
{
    std::string hostile = std::string("a\"b<c>d&e || f\\g\x1e h\x1fi \xff\xfe j &amp; k");
    SmallEngine engine = smallEngine(hostile);
    std::string svg = graph::render(graph::buildEngineGraph(engine.inputs, engine.report), graph::Format::kSvg);
    ASSERT_EQ(xmlProblem(svg), "");
    std::string text = svgText(svg);
    // Shown as written: quotes, markup, ampersands and the pipe operator; control bytes and invalid UTF-8 as \xNN.
    EXPECT_NE(text.find("a\"b<c>d&e || f\\g\\x1e h\\x1fi \\xff\\xfe j &amp; k"), std::string::npos) << text;
}

TEST(GraphSvg, OnnxViewDrawsQdqMarkersAndFindings)
{
    Inputs inputs;
    inputs.onnx = smallOnnx();
    Report report = diagnose(inputs);
    graph::Graph g = graph::buildOnnxGraph(inputs, report);
    std::size_t markers = 0;
    for (const auto& node : g.nodes)
    {
        markers += node.shape == "circle" ? 1 : 0;
    }
    EXPECT_EQ(markers, inputs.onnx->qdq.size());
    std::string svg = graph::render(g, graph::Format::kSvg);
    ASSERT_EQ(xmlProblem(svg), "");
    std::string text = svgText(svg);
    EXPECT_NE(text.find("/conv1/Conv"), std::string::npos);
    EXPECT_NE(text.find("/add/Add"), std::string::npos);
    bool residualFinding = false;
    for (const auto& finding : report.findings)
    {
        residualFinding = residualFinding || finding.rule == "residual-input-not-quantized";
    }
    ASSERT_TRUE(residualFinding);
    EXPECT_NE(text.find("[!] residual-input-not-quantized"), std::string::npos);
}

TEST(GraphSvg, RenderErrorsAreExceptions)
{
    EXPECT_THROW(graph::renderDot("digraph { a -> "), std::runtime_error);
    EXPECT_THROW(graph::renderDot("digraph { a }", "no-such-layout"), std::runtime_error);
}

// ---- focus and radius ---------------------------------------------------------------------------------------------

TEST(GraphFocus, RadiusSelectsTheNeighbourhood)
{
    SmallEngine engine = smallEngine();
    graph::Options options;
    options.focus = {"Conv_20"};
    options.radius = 1;
    graph::Graph g = graph::buildEngineGraph(engine.inputs, engine.report, options);
    // Conv_20 and its neighbours: the reformat before it and Conv_30 after it.
    ASSERT_EQ(g.nodes.size(), 3u);
    EXPECT_NE(findNodeWithLine(g, "Conv_20"), nullptr);
    EXPECT_NE(findNodeWithLine(g, "Conv_30"), nullptr);
    EXPECT_NE(findNodeWithLine(g, "Reformatting CopyNode for Input Tensor 0 to Conv_20"), nullptr);
    EXPECT_TRUE(findNodeWithLine(g, "Conv_20")->focus);
    EXPECT_EQ(g.hiddenLayers, 2u);
    options.radius = 0;
    EXPECT_EQ(graph::buildEngineGraph(engine.inputs, engine.report, options).nodes.size(), 1u);
    options.radius = 2;
    EXPECT_EQ(graph::buildEngineGraph(engine.inputs, engine.report, options).nodes.size(), 4u);
}

TEST(GraphFocus, OnnxNodeNameFocusesItsEngineLayers)
{
    SmallEngine engine = smallEngine();
    graph::Options options;
    options.focus = {"Conv_9"}; // executed by "conv1.weight + QuantizeLinear_7 + Conv_9"
    options.radius = 0;
    graph::Graph g = graph::buildEngineGraph(engine.inputs, engine.report, options);
    ASSERT_EQ(g.nodes.size(), 1u);
    EXPECT_EQ(g.nodes[0].tooltip, "conv1.weight + QuantizeLinear_7 + Conv_9");
}

TEST(GraphFocus, UnknownFocusIsAnError)
{
    SmallEngine engine = smallEngine();
    graph::Options options;
    options.focus = {"NoSuchLayer"};
    EXPECT_THROW(graph::buildEngineGraph(engine.inputs, engine.report, options), std::invalid_argument);
}

TEST(GraphFocus, OnnxFocus)
{
    Inputs inputs;
    inputs.onnx = smallOnnx();
    Report report = diagnose(inputs);
    graph::Options options;
    options.focus = {"/pool/MaxPool"};
    options.radius = 1;
    graph::Graph g = graph::buildOnnxGraph(inputs, report, options);
    // MaxPool, the Relu before it, the Q after it and the Add consuming it.
    EXPECT_EQ(g.nodes.size(), 4u);
    EXPECT_NE(findNodeWithLine(g, "/relu0/Relu"), nullptr);
    EXPECT_NE(findNodeWithLine(g, "/add/Add"), nullptr);
    EXPECT_EQ(findNodeWithLine(g, "/conv1/Conv"), nullptr);
}

TEST(GraphFocus, FindingGraphIsDrawnAroundTheFinding)
{
    SmallEngine engine = smallEngine();
    ASSERT_FALSE(engine.report.findings.empty());
    for (const auto& finding : engine.report.findings)
    {
        graph::Graph g = graph::buildFindingGraph(engine.inputs, engine.report, finding);
        EXPECT_NE(g.title.find(finding.rule), std::string::npos);
        bool badge = false;
        for (const auto& node : g.nodes)
        {
            badge = badge || std::find(node.badges.begin(), node.badges.end(), finding.rule) != node.badges.end();
        }
        EXPECT_TRUE(badge) << finding.rule;
    }
}

// ---- collapsing big graphs ------------------------------------------------------------------------------------------

TEST(GraphCollapse, LongChainsCollapseWithCounts)
{
    EnginePlan plan;
    plan.sourcePath = "chain.json";
    plan.form = LayerListForm::kDetailed;
    for (int i = 0; i < 1000; ++i)
    {
        bool fp16 = (i / 100) % 2 == 1;
        plan.layers.push_back(layer("conv_" + std::to_string(i), "CaskConvolution",
                                    {{"t" + std::to_string(i), fp16 ? kFp16 : kInt8}},
                                    {{"t" + std::to_string(i + 1), fp16 ? kFp16 : kInt8}}));
    }
    Inputs inputs;
    inputs.layerInfo = plan;
    Report report = diagnose(inputs);
    graph::Graph g = graph::buildEngineGraph(inputs, report);
    // Ten runs of 100 layers of one precision each.
    ASSERT_EQ(g.nodes.size(), 10u);
    EXPECT_EQ(g.edges.size(), 9u);
    EXPECT_EQ(g.collapsedLayers, 1000u);
    EXPECT_EQ(g.nodes[0].lines[0], "100 layers");
    EXPECT_EQ(g.nodes[0].lines[1], "conv_0");
    EXPECT_EQ(g.nodes[0].lines[2], "... conv_99");
    EXPECT_EQ(g.nodes[1].fill, "#9ecae1"); // FP16
    std::string svg = graph::render(g, graph::Format::kSvg);
    EXPECT_EQ(xmlProblem(svg), "");
}

TEST(GraphCollapse, SmallGraphsAreNotCollapsed)
{
    SmallEngine engine = smallEngine();
    graph::Graph g = graph::buildEngineGraph(engine.inputs, engine.report);
    EXPECT_EQ(g.nodes.size(), 5u);
    EXPECT_EQ(g.collapsedLayers, 0u);
}

// ---- CLI ------------------------------------------------------------------------------------------------------------

TEST(GraphCli, DiagnoseWritesEngineOnnxAndFindingPictures)
{
    auto dir = tempDir("graphs-cli-diagnose");
    std::string sample = (std::filesystem::path(QDQ_SOURCE_DIR) / "samples/c-resnet-conv-maxpool").string();
    std::vector<std::string> arguments = {"diagnose", "-o", (dir / "out").string(), "--dot"};
    for (const auto& entry : std::filesystem::directory_iterator(sample))
    {
        arguments.push_back(entry.path().string());
    }
    CommandResult result = runCli(arguments);
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    for (const char* name : {"engine.svg", "onnx.svg", "engine.dot", "onnx.dot"})
    {
        ASSERT_TRUE(std::filesystem::exists(dir / "out" / name)) << name;
    }
    EXPECT_EQ(xmlProblem(readFile(dir / "out/engine.svg")), "");
    EXPECT_EQ(xmlProblem(readFile(dir / "out/onnx.svg")), "");
    // The demo report's findings, by root cause: residual-input-not-quantized and conv-act-pool-blocked (one cause:
    // the MaxPool output is the float residual), then standalone-qdq.
    std::string finding = readFile(dir / "out/finding-02-conv-act-pool-blocked.svg");
    EXPECT_EQ(xmlProblem(finding), "");
    EXPECT_NE(svgText(finding).find("MaxPool_12"), std::string::npos);
    EXPECT_NE(svgText(finding).find("conv-act-pool-blocked"), std::string::npos);
    EXPECT_TRUE(std::filesystem::exists(dir / "out/finding-01-residual-input-not-quantized.svg"));
    EXPECT_TRUE(std::filesystem::exists(dir / "out/finding-03-standalone-qdq.svg"));

    // A second run without --force refuses to overwrite.
    CommandResult again = runCli(arguments);
    EXPECT_EQ(again.exitStatus, 2);
    EXPECT_NE(again.err.find("--force"), std::string::npos);
}

TEST(GraphCli, GraphCommandWithFocusAndDot)
{
    auto dir = tempDir("graphs-cli-graph");
    std::string sample = (std::filesystem::path(QDQ_SOURCE_DIR) / "samples/c-resnet-conv-maxpool").string();
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(sample))
    {
        files.push_back(entry.path().string());
    }
    std::vector<std::string> arguments = {"graph"};
    arguments.insert(arguments.end(), files.begin(), files.end());
    std::vector<std::string> focused = arguments;
    focused.insert(focused.end(), {"--focus", "MaxPool_12", "--radius", "1", "-o", (dir / "pool.svg").string()});
    CommandResult result = runCli(focused);
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    std::string svg = readFile(dir / "pool.svg");
    EXPECT_EQ(xmlProblem(svg), "");
    EXPECT_NE(svgText(svg).find("MaxPool_12"), std::string::npos);

    std::vector<std::string> dot = arguments;
    dot.insert(dot.end(), {"--view", "onnx", "--format", "dot"});
    result = runCli(dot);
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    EXPECT_EQ(result.out.rfind("digraph qdq {", 0), 0u);

    std::vector<std::string> unknown = arguments;
    unknown.insert(unknown.end(), {"--focus", "NoSuchNode"});
    result = runCli(unknown);
    EXPECT_EQ(result.exitStatus, 2);
    EXPECT_NE(result.err.find("NoSuchNode"), std::string::npos);
}

// ---- real engines ---------------------------------------------------------------------------------------------------

TEST(RealDataGraphs, TrexQatEngineFullSvg)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files = {realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.graph.json").string(),
                   realdata("trex-pt-resnet-a100-qat/resnet-qat.onnx.engine.profile.json").string()};
    Inputs inputs = loadInputs(files, Limits{});
    Report report = diagnose(inputs);
    graph::Graph g = graph::buildEngineGraph(inputs, report);
    // 37 layers, drawn one node each (below the collapsing threshold).
    EXPECT_EQ(g.nodes.size(), 37u);
    std::string svg = graph::render(g, graph::Format::kSvg);
    ASSERT_EQ(xmlProblem(svg), "");
    std::string text = svgText(svg);
    EXPECT_NE(text.find("37 layers"), std::string::npos);
    EXPECT_NE(text.find("QuantizeLinear_2"), std::string::npos);
    EXPECT_NE(text.find("0.061 ms"), std::string::npos); // QuantizeLinear_2: averageMs 0.06144
    EXPECT_NE(text.find("MaxPool_12"), std::string::npos);
    EXPECT_NE(text.find("Reformatting CopyNode for Output Tensor 0 to MaxPool_12"), std::string::npos);
    const graph::Node* quantize = findNodeWithLine(g, "QuantizeLinear_2");
    ASSERT_NE(quantize, nullptr);
    EXPECT_EQ(quantize->shape, "hexagon"); // Origin QDQ
    const graph::Node* reformat = findNodeWithLine(g, "Reformatting CopyNode for Output Tensor 0 to MaxPool_12");
    ASSERT_NE(reformat, nullptr);
    EXPECT_EQ(reformat->shape, "parallelogram");
    EXPECT_EQ(reformat->fill, "#9ecae1"); // its output is FP16
}

TEST(RealDataGraphs, DmtEngineFullSvgCollapsed)
{
    REQUIRE_SHARED();
    InputFiles files;
    files.files = {realdata("lix-engine-analysis-dmt-fp16/layers_tofp16.json").string(),
                   realdata("lix-engine-analysis-dmt-fp16/profile_tofp16.json").string()};
    Inputs inputs = loadInputs(files, Limits{});
    Report report = diagnose(inputs);
    auto start = std::chrono::steady_clock::now();
    graph::Graph g = graph::buildEngineGraph(inputs, report);
    std::string svg = graph::render(g, graph::Format::kSvg);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(xmlProblem(svg), "");
    std::string text = svgText(svg);
    EXPECT_NE(text.find("1309 layers"), std::string::npos);
    EXPECT_LT(g.nodes.size(), 1309u / 2);
    EXPECT_GT(g.collapsedLayers, 0u);
    // Every layer is either drawn alone or counted inside a collapsed node.
    std::size_t members = 0;
    for (const auto& node : g.nodes)
    {
        members += node.members;
    }
    EXPECT_EQ(members, 1309u);
    EXPECT_NE(text.find("Reformatting CopyNode for Network Input voxel_num_points"), std::string::npos);
    // Generous bound for a loaded test machine; bench/README.md records the measured figure.
    EXPECT_LT(seconds, 30.0);
}

TEST(GraphCli, DiffWritesRegionsSideBySide)
{
    auto dir = tempDir("graphs-cli-diff");
    auto sample = std::filesystem::path(QDQ_SOURCE_DIR) / "samples/e-explicit-slower-than-implicit";
    CommandResult result =
        runCli({"diff", "--baseline", (sample / "implicit/layers.json").string(),
                (sample / "implicit/profile.json").string(), "--candidate", (sample / "explicit/layers.json").string(),
                (sample / "explicit/profile.json").string(), "-o", (dir / "out").string(), "--dot"});
    ASSERT_EQ(result.exitStatus, 0) << result.err;
    std::string svg = readFile(dir / "out/diff.svg");
    ASSERT_EQ(xmlProblem(svg), "");
    std::string text = svgText(svg);
    EXPECT_NE(text.find("region 1"), std::string::npos);
    EXPECT_NE(text.find("baseline: "), std::string::npos);
    EXPECT_NE(text.find("candidate: "), std::string::npos);
    std::string dot = readFile(dir / "out/diff.dot");
    // Each region is a cluster holding two side clusters.
    EXPECT_NE(dot.find("subgraph cluster_0 {"), std::string::npos);
    EXPECT_NE(dot.find("subgraph cluster_1 {"), std::string::npos);
    EXPECT_NE(dot.find("subgraph cluster_2 {"), std::string::npos);
}
