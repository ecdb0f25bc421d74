// The DOT writer for qdq::graph: deterministic text, every label sanitized and escaped.
#include "qdq/diagnostics.h"
#include "qdq/graph.h"

#include <algorithm>
#include <cstdio>

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

std::string number(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.2f", value);
    return buffer;
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

} // namespace

std::string writeDot(const Graph& graph)
{
    std::string out;
    out.reserve(256 + graph.nodes.size() * 120 + graph.edges.size() * 24);
    out += "digraph qdq {\n";
    out += "  graph [";
    bool first = true;
    std::string title = escapeLabel(graph.title, 1024);
    for (const auto& line : graph.legend)
    {
        title += "\\n" + escapeLabel(line, 1024);
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
    out += "  edge [arrowsize=\"0.6\"];\n";

    // Clusters nest: write each cluster with its nodes and its child clusters, in index order.
    std::vector<std::vector<std::size_t>> nodesOf(graph.clusters.size());
    std::vector<std::vector<std::size_t>> childrenOf(graph.clusters.size());
    std::vector<std::size_t> topClusters;
    for (std::size_t i = 0; i < graph.nodes.size(); ++i)
    {
        int cluster = graph.nodes[i].cluster;
        if (cluster >= 0 && static_cast<std::size_t>(cluster) < graph.clusters.size())
        {
            nodesOf[static_cast<std::size_t>(cluster)].push_back(i);
        }
    }
    for (std::size_t c = 0; c < graph.clusters.size(); ++c)
    {
        int parent = graph.clusters[c].parent;
        if (parent >= 0 && static_cast<std::size_t>(parent) < c)
        {
            childrenOf[static_cast<std::size_t>(parent)].push_back(c);
        }
        else
        {
            topClusters.push_back(c);
        }
    }
    auto writeCluster = [&](auto&& self, std::size_t c, const std::string& indent) -> void
    {
        const Cluster& cluster = graph.clusters[c];
        out += indent + "subgraph cluster_" + std::to_string(c) + " {\n";
        std::string inner = indent + "  ";
        out += inner + "graph [label=\"" + escapeLines(cluster.label) + "\", style=\"" + cluster.style +
               (cluster.fill.empty() ? "" : ",filled") + "\"";
        if (!cluster.fill.empty())
        {
            out += ", fillcolor=\"" + cluster.fill + "\"";
        }
        if (!cluster.border.empty())
        {
            out += ", color=\"" + cluster.border + "\"";
        }
        out += ", fontsize=\"9\"];\n";
        for (std::size_t node : nodesOf[c])
        {
            writeNode(out, graph.nodes[node], inner);
        }
        for (std::size_t child : childrenOf[c])
        {
            self(self, child, inner);
        }
        out += indent + "}\n";
    };
    for (std::size_t c : topClusters)
    {
        writeCluster(writeCluster, c, "  ");
    }
    for (const auto& node : graph.nodes)
    {
        if (node.cluster < 0 || static_cast<std::size_t>(node.cluster) >= graph.clusters.size())
        {
            writeNode(out, node, "  ");
        }
    }
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
            writeAttribute(attributes, firstAttribute, "label", escapeLabel(edge.label, 256));
        }
        if (!attributes.empty())
        {
            out += " [" + attributes + "]";
        }
        out += ";\n";
    }
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

} // namespace qdq::graph
