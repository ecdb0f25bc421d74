// Graphs for bug reports: the engine, the ONNX model and a diff drawn as pictures, with the findings on them.
// The graph model and its DOT text are built here by plain C++ (deterministic, testable); only renderGraph hands the
// DOT text to Graphviz (libgvc) for layout and SVG.
#pragma once

#include "qdq/analysis.h"
#include "qdq/diff.h"

#include <cstddef>
#include <string>
#include <vector>

namespace qdq::graph
{

struct Node
{
    std::string id;                 //!< DOT id: plain ASCII, unique ("L12", "N3", "C4")
    std::vector<std::string> lines; //!< label lines as raw text; the writer sanitizes and escapes them
    std::string tooltip;            //!< raw text (full name); empty for none
    std::string shape = "box";
    std::string style = "rounded,filled";
    std::string fill = "#ffffff";
    std::string border;    //!< border colour; empty for the default
    double penwidth = 0.0; //!< 0 for the default
    double width = 0.0;    //!< fixed size in inches for markers; 0 for automatic
    double height = 0.0;
    std::vector<std::string> badges; //!< rule slugs of the findings on this node
    int cluster = -1;                //!< index into Graph::clusters, -1 for none
    std::size_t members = 1;         //!< layers or nodes drawn by this node (> 1 when collapsed)
    bool focus = false;              //!< one of the nodes the picture is about
};

struct Edge
{
    std::size_t from = 0; //!< index into Graph::nodes
    std::size_t to = 0;
    std::string style; //!< "", "dashed", "dotted", "invis"
    std::string color;
    std::string label; //!< raw text
    //! Draw the label beside the edge after layout (xlabel) instead of as part of it: big graphs, where edge labels
    //! would make the layout slow and spread the ranks.
    bool labelOutside = false;
};

struct Cluster
{
    std::string label; //!< raw text
    std::string fill;
    std::string border;
    std::string style = "rounded";
    int parent = -1; //!< enclosing cluster, -1 for the graph
};

struct Graph
{
    std::string title;               //!< raw text, drawn on top
    std::vector<std::string> legend; //!< raw text lines drawn under the title
    //! Graph attributes (layout options), written in this order; values are written quoted and escaped.
    std::vector<std::pair<std::string, std::string>> attributes;
    std::vector<Node> nodes;
    std::vector<Edge> edges;
    std::vector<Cluster> clusters;
    std::size_t hiddenLayers = 0;    //!< layers outside the focus, not drawn
    std::size_t collapsedLayers = 0; //!< layers drawn inside a collapsed node
};

enum class View
{
    kEngine,
    kOnnx,
};

struct Options
{
    //! Names of engine layers or ONNX nodes the picture is about; empty for the whole graph.
    std::vector<std::string> focus;
    //! Neighbourhood around the focus, in edges (either direction).
    std::size_t radius = 2;
    //! Whole graphs with more nodes than this collapse chains of similar layers into one node with a count.
    std::size_t collapseAbove = 200;
    //! When a first pass of collapsing leaves more than this, chains collapse whatever their precision.
    std::size_t collapseTarget = 400;
    //! Longest label line, in bytes: longer names wrap onto more lines at " + " (then '/', '_', '.').
    std::size_t labelWidth = 48;
    //! Most lines a wrapped name takes before the rest is summarized as "(+N more)".
    std::size_t nameLines = 6;
    //! Edges carry the tensor's precision, layout and shape where the layer list gives them.
    bool edgeLabels = true;
};

//! How many drawn nodes a picture may have before its edge labels are drawn beside the edges (xlabel).
constexpr std::size_t kInlineEdgeLabelsUpTo = 150;

//! The engine view: layers coloured by output precision, Q/DQ and reformat layers marked by shape, time per layer
//! when a profile is present, findings as badges. Needs inputs.engine(); throws std::invalid_argument otherwise or
//! when a focus name matches nothing.
Graph buildEngineGraph(const Inputs& inputs, const Report& report, const Options& options = {});

//! The ONNX view: Q/DQ nodes as small markers, observed (or predicted) fusion groups as clusters, findings
//! highlighted. Needs inputs.onnx.
Graph buildOnnxGraph(const Inputs& inputs, const Report& report, const Options& options = {});

//! The picture for one finding: the engine view around its layers when an engine is given and the finding names
//! layers, else the ONNX view around its nodes. Throws std::invalid_argument when the finding names nothing drawable.
Graph buildFindingGraph(const Inputs& inputs, const Report& report, const Finding& finding,
                        const Options& options = {});

//! The diff view: the top regions, each a cluster holding the baseline and the candidate side by side.
Graph buildDiffGraph(const DiffReport& report, const Inputs& baseline, const Inputs& candidate,
                     std::size_t topRegions = 5);

//! DOT text of a graph: deterministic, every label sanitized (control characters and invalid UTF-8 made visible)
//! and escaped.
std::string writeDot(const Graph& graph);

//! Label text as written inside a DOT quoted string: printable(), then `&`, `"`, `\` and characters XML cannot carry
//! escaped so that Graphviz's SVG is well-formed.
std::string escapeLabel(std::string_view text, std::size_t maxBytes = 4096);

enum class Format
{
    kSvg,
    kDot,
};

//! Lays out DOT text with Graphviz (libgvc, in-process) and renders it; `format` "svg". Throws std::runtime_error
//! with Graphviz's messages when it fails (for example when libgvc's plugins are not configured).
std::string renderDot(const std::string& dot, const std::string& layout = "dot", const std::string& format = "svg");

//! writeDot or writeDot + renderDot.
std::string render(const Graph& graph, Format format);

//! A long label line shortened to about width bytes, keeping its start and end ("conv1...relu").
std::string shortenLine(const std::string& line, std::size_t width);

//! A name as label lines of at most width bytes: broken after " + " and " || " first, then after '/', '_', '.',
//! ' ' or ',', so fused names keep whole ONNX node names on a line; a part without any of those is cut at width (on
//! a UTF-8 character boundary). More than maxLines lines end with a line "(+N more)".
std::vector<std::string> wrapName(const std::string& name, std::size_t width, std::size_t maxLines = 6);

//! Prose (titles, legends, messages) broken at spaces into lines of at most width bytes; a longer word stays whole.
std::vector<std::string> wrapText(const std::string& text, std::size_t width);

//! An engine tensor as an edge label: precision, TensorRT layout and shape ("INT8 CHW32 32x64x56x56"), from what the
//! layer list tells; empty when it tells none of them.
std::string tensorLabel(const EngineTensor& tensor);

//! Slug for file names: lower-case ASCII letters, digits and '-'.
std::string fileSlug(std::string_view text);

} // namespace qdq::graph
