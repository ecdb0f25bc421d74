// The DOT writer for qdq::graph: deterministic text, every label sanitized and escaped.
#include "qdq/diagnostics.h"
#include "qdq/graph.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace qdq::graph
{

std::string escapeLabel(std::string_view text, std::size_t maxBytes)
{
    // printable() makes control characters (\x1e, \x1f, ...) and invalid UTF-8 visible as \xNN text, so only valid
    // UTF-8 without XML-forbidden controls reaches Graphviz.
    std::string clean = printable(text, maxBytes);
    std::string out;
    out.reserve(clean.size() + 8);
    for (std::size_t i = 0; i < clean.size(); ++i)
    {
        char c = clean[i];
        switch (c)
        {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '&':
            // Graphviz decodes entities in labels; writing every '&' as an entity keeps a literal "&amp;" literal.
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        default:
            // U+FFFE and U+FFFF are valid UTF-8 but not XML characters.
            if (static_cast<unsigned char>(c) == 0xEF && i + 2 < clean.size() &&
                static_cast<unsigned char>(clean[i + 1]) == 0xBF &&
                (static_cast<unsigned char>(clean[i + 2]) == 0xBE || static_cast<unsigned char>(clean[i + 2]) == 0xBF))
            {
                out += static_cast<unsigned char>(clean[i + 2]) == 0xBE ? "\\\\ufffe" : "\\\\uffff";
                i += 2;
                break;
            }
            out += c;
        }
    }
    return out;
}

namespace
{

//! A label of several lines ('\n' in the raw text), each line escaped.
std::string escapeLines(const std::string& text)
{
    std::string out;
    std::size_t start = 0;
    while (true)
    {
        std::size_t end = text.find('\n', start);
        out += escapeLabel(std::string_view(text).substr(start, end == std::string::npos ? end : end - start), 1024);
        if (end == std::string::npos)
        {
            return out;
        }
        out += "\\n";
        start = end + 1;
    }
}

std::string shortened(const std::string& line, std::size_t width)
{
    if (line.size() <= width || width < 8)
    {
        return line;
    }
    // Keep the start and the end of long layer names: both tell which layer it is.
    std::size_t head = (width - 3) * 2 / 3;
    std::size_t tail = width - 3 - head;
    auto safeCut = [&](std::size_t position)
    {
        while (position > 0 && position < line.size() && (static_cast<unsigned char>(line[position]) & 0xC0) == 0x80)
        {
            --position;
        }
        return position;
    };
    std::size_t headEnd = safeCut(head);
    std::size_t tailStart = safeCut(line.size() - tail);
    if (tailStart <= headEnd)
    {
        return line;
    }
    return line.substr(0, headEnd) + "..." + line.substr(tailStart);
}

//! Longest line of a title or legend: longer ones wrap at spaces instead of running off the picture's side.
constexpr std::size_t kTitleWidth = 110;

//! Cuts position back to the start of a UTF-8 character.
std::size_t characterStart(const std::string& text, std::size_t position)
{
    while (position > 0 && position < text.size() && (static_cast<unsigned char>(text[position]) & 0xC0) == 0x80)
    {
        --position;
    }
    return position;
}

//! Splits text after each of the separators (the separator stays with the part before it; with trimSpaces, without
//! its trailing spaces).
std::vector<std::string> splitAfter(const std::string& text, const std::vector<std::string_view>& separators,
                                    bool trimSpaces)
{
    std::vector<std::string> parts;
    std::size_t start = 0;
    std::size_t i = 0;
    while (i < text.size())
    {
        std::size_t matched = 0;
        for (std::string_view separator : separators)
        {
            if (text.compare(i, separator.size(), separator) == 0)
            {
                matched = separator.size();
                break;
            }
        }
        if (matched == 0)
        {
            ++i;
            continue;
        }
        i += matched;
        std::string part = text.substr(start, i - start);
        while (trimSpaces && !part.empty() && part.back() == ' ')
        {
            part.pop_back();
        }
        parts.push_back(std::move(part));
        start = i;
    }
    if (start < text.size())
    {
        parts.push_back(text.substr(start));
    }
    return parts;
}

//! Packs parts greedily into lines of at most width bytes, joined by `glue`.
void pack(const std::vector<std::string>& parts, std::size_t width, const std::string& glue,
          std::vector<std::string>& lines)
{
    std::string line;
    for (const auto& part : parts)
    {
        if (!line.empty() && line.size() + glue.size() + part.size() <= width)
        {
            line += glue + part;
            continue;
        }
        if (!line.empty())
        {
            lines.push_back(std::move(line));
        }
        line = part;
    }
    if (!line.empty())
    {
        lines.push_back(std::move(line));
    }
}

std::string number(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.2f", value);
    return buffer;
}

//! A title or legend line wrapped and escaped, its lines joined by DOT's "\n".
std::string escapedWrapped(const std::string& text)
{
    std::string out;
    for (const auto& line : wrapText(text, kTitleWidth))
    {
        out += (out.empty() ? "" : "\\n") + escapeLabel(line, 1024);
    }
    return out;
}

void writeAttribute(std::string& out, bool& first, const char* name, const std::string& value)
{
    out += first ? "" : ", ";
    first = false;
    out += name;
    out += "=\"";
    out += value;
    out += '"';
}

void writeNode(std::string& out, const Node& node, const std::string& indent)
{
    out += indent;
    out += node.id;
    out += " [";
    bool first = true;
    std::string label;
    for (std::size_t i = 0; i < node.lines.size(); ++i)
    {
        label += (i == 0 ? "" : "\\n") + escapeLabel(node.lines[i], 1024);
    }
    // Badges go under the name; a fixed-size marker carries them outside, as an external label.
    std::string badges;
    for (const auto& badge : node.badges)
    {
        badges += (badges.empty() ? "" : "\\n") + std::string("[!] ") + escapeLabel(badge, 256);
    }
    bool marker = node.width > 0;
    if (!marker && !badges.empty())
    {
        label += (label.empty() ? "" : "\\n") + badges;
    }
    writeAttribute(out, first, "label", label);
    if (marker && !badges.empty())
    {
        writeAttribute(out, first, "xlabel", badges);
    }
    if (node.shape != "box")
    {
        writeAttribute(out, first, "shape", node.shape);
    }
    if (node.style != "rounded,filled")
    {
        writeAttribute(out, first, "style", node.style);
    }
    if (node.fill != "#ffffff")
    {
        writeAttribute(out, first, "fillcolor", node.fill);
    }
    std::string border = node.border;
    double penwidth = node.penwidth;
    if (!node.badges.empty())
    {
        border = "#d62728";
        penwidth = std::max(penwidth, 2.5);
    }
    if (!border.empty())
    {
        writeAttribute(out, first, "color", border);
    }
    if (penwidth > 0)
    {
        writeAttribute(out, first, "penwidth", number(penwidth));
    }
    if (node.width > 0)
    {
        writeAttribute(out, first, "width", number(node.width));
        writeAttribute(out, first, "height", number(node.height));
        writeAttribute(out, first, "fixedsize", "true");
        writeAttribute(out, first, "fontsize", "7");
    }
    if (!node.tooltip.empty())
    {
        writeAttribute(out, first, "tooltip", escapeLabel(node.tooltip, 1024));
    }
    out += "];\n";
}

//! The graph's label (title and legend), its attributes, and the node and edge defaults.
void writeGraphHeader(std::string& out, const Graph& graph)
{
    out += "digraph qdq {\n";
    out += "  graph [";
    bool first = true;
    std::string title = escapedWrapped(graph.title);
    for (const auto& line : graph.legend)
    {
        title += "\\n" + escapedWrapped(line);
    }
    writeAttribute(out, first, "label", title);
    writeAttribute(out, first, "labelloc", "t");
    writeAttribute(out, first, "fontname", "Helvetica");
    writeAttribute(out, first, "fontsize", "12");
    for (const auto& [name, value] : graph.attributes)
    {
        out += ", " + name + "=\"" + escapeLabel(value, 256) + "\"";
    }
    out += "];\n";
    out += "  node [shape=\"box\", style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", "
           "fontsize=\"10\"];\n";
    out += "  edge [arrowsize=\"0.6\", fontname=\"Helvetica\", fontsize=\"8\", fontcolor=\"#555555\"];\n";
}

//! Clusters nest: each cluster is written with its nodes and its child clusters, in index order.
class ClusterWriter
{
public:
    ClusterWriter(std::string& out, const Graph& graph)
        : mOut(out), mGraph(graph), mNodesOf(graph.clusters.size()), mChildrenOf(graph.clusters.size())
    {
        for (std::size_t i = 0; i < graph.nodes.size(); ++i)
        {
            int cluster = graph.nodes[i].cluster;
            if (cluster >= 0 && static_cast<std::size_t>(cluster) < graph.clusters.size())
            {
                mNodesOf[static_cast<std::size_t>(cluster)].push_back(i);
            }
        }
        for (std::size_t c = 0; c < graph.clusters.size(); ++c)
        {
            int parent = graph.clusters[c].parent;
            if (parent >= 0 && static_cast<std::size_t>(parent) < c)
            {
                mChildrenOf[static_cast<std::size_t>(parent)].push_back(c);
            }
            else
            {
                mTopClusters.push_back(c);
            }
        }
    }

    void writeAll()
    {
        for (std::size_t c : mTopClusters)
        {
            write(c, "  ");
        }
    }

private:
    void write(std::size_t c, const std::string& indent)
    {
        const Cluster& cluster = mGraph.clusters[c];
        mOut += indent + "subgraph cluster_" + std::to_string(c) + " {\n";
        std::string inner = indent + "  ";
        mOut += inner + "graph [label=\"" + escapeLines(cluster.label) + "\", style=\"" + cluster.style +
                (cluster.fill.empty() ? "" : ",filled") + "\"";
        if (!cluster.fill.empty())
        {
            mOut += ", fillcolor=\"" + cluster.fill + "\"";
        }
        if (!cluster.border.empty())
        {
            mOut += ", color=\"" + cluster.border + "\"";
        }
        mOut += ", fontsize=\"9\"];\n";
        for (std::size_t node : mNodesOf[c])
        {
            writeNode(mOut, mGraph.nodes[node], inner);
        }
        for (std::size_t child : mChildrenOf[c])
        {
            write(child, inner);
        }
        mOut += indent + "}\n";
    }

    std::string& mOut;
    const Graph& mGraph;
    std::vector<std::vector<std::size_t>> mNodesOf;
    std::vector<std::vector<std::size_t>> mChildrenOf;
    std::vector<std::size_t> mTopClusters;
};

void writeEdges(std::string& out, const Graph& graph)
{
    for (const auto& edge : graph.edges)
    {
        if (edge.from >= graph.nodes.size() || edge.to >= graph.nodes.size())
        {
            continue;
        }
        out += "  " + graph.nodes[edge.from].id + " -> " + graph.nodes[edge.to].id;
        bool firstAttribute = true;
        std::string attributes;
        if (!edge.style.empty())
        {
            writeAttribute(attributes, firstAttribute, "style", edge.style);
        }
        if (!edge.color.empty())
        {
            writeAttribute(attributes, firstAttribute, "color", edge.color);
        }
        if (!edge.label.empty())
        {
            writeAttribute(attributes, firstAttribute, edge.labelOutside ? "xlabel" : "label", escapeLines(edge.label));
        }
        if (!attributes.empty())
        {
            out += " [" + attributes + "]";
        }
        out += ";\n";
    }
}

} // namespace

std::string writeDot(const Graph& graph)
{
    std::string out;
    out.reserve(256 + graph.nodes.size() * 120 + graph.edges.size() * 24);
    writeGraphHeader(out, graph);
    ClusterWriter(out, graph).writeAll();
    for (const auto& node : graph.nodes)
    {
        if (node.cluster < 0 || static_cast<std::size_t>(node.cluster) >= graph.clusters.size())
        {
            writeNode(out, node, "  ");
        }
    }
    writeEdges(out, graph);
    out += "}\n";
    return out;
}

std::string fileSlug(std::string_view text)
{
    std::string out;
    for (char c : text)
    {
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
        {
            out += c;
        }
        else if (c >= 'A' && c <= 'Z')
        {
            out += static_cast<char>(c - 'A' + 'a');
        }
        else if (!out.empty() && out.back() != '-')
        {
            out += '-';
        }
        if (out.size() >= 64)
        {
            break;
        }
    }
    while (!out.empty() && out.back() == '-')
    {
        out.pop_back();
    }
    return out.empty() ? "graph" : out;
}

std::string render(const Graph& graph, Format format)
{
    std::string dot = writeDot(graph);
    if (format == Format::kDot)
    {
        return dot;
    }
    return renderDot(dot);
}

std::string shortenLine(const std::string& line, std::size_t width)
{
    return shortened(line, width);
}

std::vector<std::string> wrapName(const std::string& name, std::size_t width, std::size_t maxLines)
{
    width = std::max<std::size_t>(width, 8);
    std::vector<std::string> lines;
    if (name.size() <= width)
    {
        lines.push_back(name);
        return lines;
    }
    // Fused layer names join ONNX node names with " + " (and " || " for horizontal merges): a line breaks after one.
    std::vector<std::string> parts;
    for (auto& part : splitAfter(name, {" + ", " || "}, true))
    {
        if (part.size() <= width)
        {
            parts.push_back(std::move(part));
            continue;
        }
        // One node name longer than a line: break inside it after '/', '_', '.', ' ' or ',' ...
        std::vector<std::string> pieces;
        pack(splitAfter(part, {"/", "_", ".", " ", ","}, false), width, "", pieces);
        for (auto& piece : pieces)
        {
            // ... and only where there is none, at the width itself.
            while (piece.size() > width)
            {
                std::size_t cut = characterStart(piece, width);
                cut = cut == 0 ? width : cut;
                parts.push_back(piece.substr(0, cut));
                piece.erase(0, cut);
            }
            parts.push_back(std::move(piece));
        }
    }
    // Parts that end a node name (" +") are followed by a space; pieces of one name are not.
    std::string line;
    for (const auto& part : parts)
    {
        bool endsName = line.size() >= 2 && (line.compare(line.size() - 2, 2, " +") == 0 ||
                                             (line.size() >= 3 && line.compare(line.size() - 3, 3, " ||") == 0));
        std::string glue = line.empty() ? "" : endsName ? " " : "";
        if (!line.empty() && line.size() + glue.size() + part.size() <= width)
        {
            line += glue + part;
            continue;
        }
        if (!line.empty())
        {
            lines.push_back(std::move(line));
        }
        line = part;
    }
    if (!line.empty())
    {
        lines.push_back(std::move(line));
    }
    for (auto& wrapped : lines)
    {
        while (wrapped.size() > 1 && wrapped.back() == ' ')
        {
            wrapped.pop_back();
        }
    }
    if (maxLines > 0 && lines.size() > maxLines)
    {
        std::size_t rest = lines.size() - (maxLines - 1);
        lines.resize(maxLines - 1);
        lines.push_back("(+" + std::to_string(rest) + " more lines; full name in the tooltip)");
    }
    return lines;
}

std::vector<std::string> wrapText(const std::string& text, std::size_t width)
{
    std::vector<std::string> words;
    std::size_t start = 0;
    while (start <= text.size())
    {
        std::size_t end = text.find(' ', start);
        if (end == std::string::npos)
        {
            end = text.size();
        }
        if (end > start)
        {
            words.push_back(text.substr(start, end - start));
        }
        start = end + 1;
    }
    std::vector<std::string> lines;
    pack(words, width, " ", lines);
    if (lines.empty())
    {
        lines.emplace_back();
    }
    return lines;
}

std::string tensorLabel(const EngineTensor& tensor)
{
    std::string label;
    if (tensor.precision != Precision::kUnknown)
    {
        label = precisionName(tensor.precision);
    }
    // TensorRT's TensorFormat names for the formats the layer list spells out.
    std::string_view format = tensor.format;
    std::string layout;
    if (tensor.vectorWidth > 0)
    {
        layout = "CHW" + std::to_string(tensor.vectorWidth);
    }
    else if (format.find("Row major linear") != std::string_view::npos)
    {
        layout = "LINEAR";
    }
    else if (format.find("Channel major") != std::string_view::npos)
    {
        layout = "HWC";
        std::size_t percent = format.find("% ");
        if (percent != std::string_view::npos)
        {
            std::size_t digits = percent + 2;
            while (digits < format.size() && format[digits] >= '0' && format[digits] <= '9')
            {
                layout += format[digits++];
            }
        }
    }
    if (!layout.empty())
    {
        label += (label.empty() ? "" : " ") + layout;
    }
    if (!tensor.dimensions.empty())
    {
        std::string shape;
        for (std::int64_t dimension : tensor.dimensions)
        {
            shape += (shape.empty() ? "" : "x") + (dimension < 0 ? std::string("?") : std::to_string(dimension));
        }
        label += (label.empty() ? "" : " ") + shape;
    }
    return label;
}

} // namespace qdq::graph
