// The views of qdq::graph: engine, ONNX, finding and diff pictures built as plain graph models (no Graphviz here).
// Everything is linear in layers + edges: tensor producers come from hash maps, the neighbourhood is a BFS over a
// CSR adjacency, and collapsing chains is a union-find over edges.
#include "qdq/graph.h"
#include "qdq/patterns.h"
#include "qdq/union_find.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace qdq::graph
{

namespace
{

using EdgeList = std::vector<std::pair<std::size_t, std::size_t>>;
//! Edge labels by (from, to) item: the tensor an edge carries.
using EdgeLabels = std::map<std::pair<std::size_t, std::size_t>, std::string>;

std::string precisionFill(Precision precision)
{
    switch (precision)
    {
    case Precision::kINT8:
    case Precision::kUINT8:
    case Precision::kINT4:
    case Precision::kFP8:
    case Precision::kFP4:
        return "#a1d99b";
    case Precision::kFP16:
    case Precision::kBF16:
        return "#9ecae1";
    case Precision::kFP32:
        return "#fdae6b";
    case Precision::kINT32:
    case Precision::kINT64:
    case Precision::kBool:
        return "#d9d9d9";
    case Precision::kUnknown:
        break;
    }
    return "#ffffff";
}

std::string formatMs(double ms)
{
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.3f ms", ms);
    return buffer;
}

//! Longest finding message drawn in a finding's picture (the report has it whole).
constexpr std::size_t kMaxTitleMessage = 600;

const char* kPrecisionLegend = "fill = output precision: green INT8/FP8/INT4, blue FP16/BF16, orange FP32, grey "
                               "INT32/INT64/BOOL, white unknown";

//! One drawable thing before collapsing: an engine layer or an ONNX node.
struct Item
{
    Node node;
    std::string name; //!< full name
    std::string kind; //!< "CaskConvolution INT8", for the composition of a collapsed node
    std::string key;  //!< items with equal keys may collapse together in the first pass
    std::optional<double> timeMs;
    bool seed = false; //!< named by the focus: never collapsed
};

void sortUnique(EdgeList& edges)
{
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    edges.erase(std::remove_if(edges.begin(), edges.end(), [](const auto& e) { return e.first == e.second; }),
                edges.end());
}

//! Items within `radius` edges (either direction) of the seeds.
std::vector<char> neighbourhood(std::size_t count, const EdgeList& edges, const std::vector<std::size_t>& seeds,
                                std::size_t radius)
{
    std::vector<std::size_t> offsets(count + 1, 0);
    for (const auto& [a, b] : edges)
    {
        ++offsets[a + 1];
        ++offsets[b + 1];
    }
    std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
    std::vector<std::size_t> adjacency(offsets.back());
    std::vector<std::size_t> fill(offsets.begin(), offsets.end() - 1);
    for (const auto& [a, b] : edges)
    {
        adjacency[fill[a]++] = b;
        adjacency[fill[b]++] = a;
    }
    std::vector<char> selected(count, 0);
    std::vector<std::size_t> frontier;
    for (std::size_t seed : seeds)
    {
        if (!selected[seed])
        {
            selected[seed] = 1;
            frontier.push_back(seed);
        }
    }
    for (std::size_t step = 0; step < radius && !frontier.empty(); ++step)
    {
        std::vector<std::size_t> next;
        for (std::size_t item : frontier)
        {
            for (std::size_t k = offsets[item]; k < offsets[item + 1]; ++k)
            {
                std::size_t other = adjacency[k];
                if (!selected[other])
                {
                    selected[other] = 1;
                    next.push_back(other);
                }
            }
        }
        frontier = std::move(next);
    }
    return selected;
}

//! Groups of selected items: chains (out-degree 1 -> in-degree 1) of items with equal keys and equal clusters; seeds
//! stay alone. With ignoreKeys, chains join whatever their keys but in pieces of at most maxSize items, so that a
//! long chain still shows its structure.
std::vector<std::size_t> chainGroups(const std::vector<Item>& items, const std::vector<char>& selected,
                                     const EdgeList& edges, bool ignoreKeys, std::size_t maxSize,
                                     std::size_t* groupCount)
{
    std::vector<std::uint32_t> inDegree(items.size(), 0), outDegree(items.size(), 0);
    for (const auto& [a, b] : edges)
    {
        ++outDegree[a];
        ++inDegree[b];
    }
    UnionFind sets(items.size());
    for (const auto& [a, b] : edges)
    {
        const Item& from = items[a];
        const Item& to = items[b];
        if (outDegree[a] == 1 && inDegree[b] == 1 && !from.seed && !to.seed && from.node.cluster == to.node.cluster &&
            (ignoreKeys || from.key == to.key))
        {
            sets.uniteUpTo(a, b, maxSize);
        }
    }
    std::vector<std::size_t> group(items.size());
    std::size_t groups = 0;
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        group[i] = sets.find(i);
        if (selected[i] && group[i] == i)
        {
            ++groups;
        }
    }
    *groupCount = groups;
    return group;
}

std::string layerWord(std::size_t count, const char* unit)
{
    return std::to_string(count) + " " + unit + (count == 1 ? "" : "s");
}

//! Items with no drawn edge at all (sync layers, constants) would spread over one rank: more than three of them
//! are drawn as one node.
void groupLooseItems(const std::vector<Item>& items, const std::vector<char>& selected, const EdgeList& edges,
                     std::vector<std::size_t>& group)
{
    std::vector<char> touched(items.size(), 0);
    for (const auto& [a, b] : edges)
    {
        touched[a] = touched[b] = 1;
    }
    std::size_t firstLoose = items.size();
    std::size_t loose = 0;
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        if (selected[i] && !touched[i] && !items[i].seed && items[i].node.badges.empty())
        {
            ++loose;
            firstLoose = std::min(firstLoose, i);
        }
    }
    if (loose > 3)
    {
        for (std::size_t i = 0; i < items.size(); ++i)
        {
            if (selected[i] && !touched[i] && !items[i].seed && items[i].node.badges.empty())
            {
                group[i] = firstLoose;
            }
        }
    }
}

//! The group each item is drawn in: itself, or with many selected items a chain of equal keys (pieces of any keys
//! when there are still too many), loose items together.
std::vector<std::size_t> drawingGroups(const std::vector<Item>& items, const std::vector<char>& selected,
                                       const EdgeList& edges, const Options& options, std::size_t selectedCount)
{
    std::vector<std::size_t> group(items.size());
    std::iota(group.begin(), group.end(), 0);
    if (selectedCount <= options.collapseAbove)
    {
        return group;
    }
    std::size_t groups = 0;
    group = chainGroups(items, selected, edges, false, items.size(), &groups);
    if (groups > options.collapseTarget)
    {
        std::size_t piece = std::max<std::size_t>(2, (selectedCount + options.collapseTarget - 1) /
                                                         std::max<std::size_t>(1, options.collapseTarget));
        group = chainGroups(items, selected, edges, true, piece, &groups);
    }
    groupLooseItems(items, selected, edges, group);
    return group;
}

//! "3 Conv, 2 Relu, ...": the most frequent kinds of a collapsed node first.
std::string compositionOf(const std::unordered_map<std::string_view, std::size_t>& kinds)
{
    std::vector<std::pair<std::string_view, std::size_t>> sorted(kinds.begin(), kinds.end());
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b)
              { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    std::string composition;
    for (std::size_t k = 0; k < sorted.size() && k < 3; ++k)
    {
        composition += (k == 0 ? "" : ", ") + std::to_string(sorted[k].second) + " " + std::string(sorted[k].first);
    }
    if (sorted.size() > 3)
    {
        composition += ", ...";
    }
    return composition;
}

//! One node for a group of items: its size, first and last names, composition, total time, commonest fill and the
//! badges of its members.
Node collapsedNode(const std::vector<Item>& items, const std::vector<std::size_t>& list, std::size_t index,
                   const Options& options, const char* unit)
{
    const Item& first = items[list.front()];
    const Item& last = items[list.back()];
    Node node;
    node.id = "C" + std::to_string(index);
    node.shape = "box3d";
    node.style = "filled";
    node.cluster = first.node.cluster;
    node.members = list.size();
    node.lines.push_back(layerWord(list.size(), unit));
    for (const auto& line : wrapName(first.name, options.labelWidth, 2))
    {
        node.lines.push_back(line);
    }
    std::vector<std::string> lastLines = wrapName(last.name, options.labelWidth, 2);
    lastLines.front() = "... " + lastLines.front();
    node.lines.insert(node.lines.end(), lastLines.begin(), lastLines.end());
    std::unordered_map<std::string_view, std::size_t> kinds;
    std::unordered_map<std::string_view, std::size_t> fills;
    double total = 0.0;
    bool anyTime = false;
    std::vector<std::string> badges;
    for (std::size_t i : list)
    {
        ++kinds[items[i].kind];
        ++fills[items[i].node.fill];
        if (items[i].timeMs)
        {
            total += *items[i].timeMs;
            anyTime = true;
        }
        for (const auto& badge : items[i].node.badges)
        {
            if (std::find(badges.begin(), badges.end(), badge) == badges.end())
            {
                badges.push_back(badge);
            }
        }
    }
    node.lines.push_back(shortenLine(compositionOf(kinds), options.labelWidth + 16));
    if (anyTime)
    {
        node.lines.push_back("total " + formatMs(total));
    }
    std::string_view fill = "#ffffff";
    std::size_t best = 0;
    for (const auto& [colour, count] : fills)
    {
        if (count > best || (count == best && colour < fill))
        {
            best = count;
            fill = colour;
        }
    }
    node.fill = std::string(fill);
    std::sort(badges.begin(), badges.end());
    node.badges = std::move(badges);
    return node;
}

//! The edges between drawn nodes, each once. A drawn edge is labelled when every edge it stands for carries the
//! same tensor description.
void drawEdges(Graph& graph, const EdgeList& edges, const std::vector<std::size_t>& group,
               const std::vector<std::size_t>& nodeOfGroup, const EdgeLabels& labels, const Options& options)
{
    EdgeList drawn;
    drawn.reserve(edges.size());
    EdgeLabels drawnLabels;
    std::set<std::pair<std::size_t, std::size_t>> mixed;
    for (const auto& [a, b] : edges)
    {
        std::pair<std::size_t, std::size_t> key(nodeOfGroup[group[a]], nodeOfGroup[group[b]]);
        drawn.push_back(key);
        auto label = labels.find({a, b});
        std::string text = label == labels.end() ? std::string() : label->second;
        auto [it, added] = drawnLabels.emplace(key, text);
        if (!added && it->second != text)
        {
            mixed.insert(key);
        }
    }
    sortUnique(drawn);
    graph.edges.reserve(drawn.size());
    const bool outside = drawn.size() > 0 && graph.nodes.size() > kInlineEdgeLabelsUpTo;
    for (const auto& [a, b] : drawn)
    {
        Edge edge{a, b, "", "", "", false};
        if (options.edgeLabels && !mixed.count({a, b}))
        {
            edge.label = drawnLabels[{a, b}];
            edge.labelOutside = outside;
        }
        graph.edges.push_back(std::move(edge));
    }
}

//! Turns the selected items into the graph: collapsing chains when there are many, grouping edgeless items.
void assemble(Graph& graph, std::vector<Item>& items, const std::vector<char>& selected, EdgeList edges,
              const Options& options, const char* unit, const EdgeLabels& labels = {})
{
    // Only edges between selected items are drawn.
    edges.erase(std::remove_if(edges.begin(), edges.end(),
                               [&](const auto& e) { return !selected[e.first] || !selected[e.second]; }),
                edges.end());
    std::size_t selectedCount = static_cast<std::size_t>(std::count(selected.begin(), selected.end(), 1));
    const std::vector<std::size_t> group = drawingGroups(items, selected, edges, options, selectedCount);
    // Members of each group, in item order (the plan's or the graph's order).
    std::vector<std::size_t> nodeOfGroup(items.size(), static_cast<std::size_t>(-1));
    std::vector<std::vector<std::size_t>> members;
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        if (!selected[i])
        {
            continue;
        }
        std::size_t g = group[i];
        if (nodeOfGroup[g] == static_cast<std::size_t>(-1))
        {
            nodeOfGroup[g] = members.size();
            members.emplace_back();
        }
        members[nodeOfGroup[g]].push_back(i);
    }
    graph.nodes.reserve(members.size());
    for (const auto& list : members)
    {
        if (list.size() == 1)
        {
            graph.nodes.push_back(std::move(items[list.front()].node));
            continue;
        }
        graph.collapsedLayers += list.size();
        graph.nodes.push_back(collapsedNode(items, list, graph.nodes.size(), options, unit));
    }
    drawEdges(graph, edges, group, nodeOfGroup, labels, options);
    graph.hiddenLayers = items.size() - selectedCount;
}

//! Layout options chosen by size: dot's defaults for pictures people read closely, cheaper ranking, crossing
//! minimization and straight edges for big graphs (the layout time of dot grows fast with both).
void chooseLayout(Graph& graph)
{
    graph.attributes.emplace_back("rankdir", "TB");
    graph.attributes.emplace_back("nodesep", "0.2");
    graph.attributes.emplace_back("ranksep", "0.3");
    std::size_t count = graph.nodes.size();
    // Measured on the 1,309-layer engine drawn as 571 nodes: nslimit 4 took 2.1 s of layout, 1 took 1.0 s, 0.5 took
    // 0.65 s (bench/README.md).
    const char* nslimit = count > 1500 ? "0.2" : count > 400 ? "0.5" : "1";
    if (count > 150)
    {
        graph.attributes.emplace_back("splines", "line");
        graph.attributes.emplace_back("nslimit", nslimit);
        graph.attributes.emplace_back("nslimit1", nslimit);
        graph.attributes.emplace_back("mclimit", count > 1500 ? "0.1" : "0.3");
        graph.attributes.emplace_back("remincross", "false");
    }
    if (count > 1500)
    {
        graph.attributes.emplace_back("searchsize", "10");
    }
}

void addSummaryLegend(Graph& graph, const Options& options, const char* unit)
{
    if (graph.collapsedLayers > 0)
    {
        graph.legend.push_back("collapsed: " + layerWord(graph.collapsedLayers, unit) +
                               " drawn inside 3-D boxes (a chain of similar " + unit +
                               "s with its count, first and last name, " +
                               "composition and total time); edges inside a chain are not drawn");
    }
    if (!options.focus.empty())
    {
        std::string names;
        for (std::size_t i = 0; i < options.focus.size() && i < 3; ++i)
        {
            names += (i == 0 ? "" : ", ") + options.focus[i]; // whole: the legend wraps at spaces
        }
        if (options.focus.size() > 3)
        {
            names += ", ... (" + std::to_string(options.focus.size()) + " in all)";
        }
        graph.legend.push_back("focus: " + names + " (thick border), radius " + std::to_string(options.radius) + "; " +
                               layerWord(graph.hiddenLayers, unit) + " outside it not shown");
    }
}

//! Seeds for focus names: exact names first, then the layers executing an ONNX node of that name, then substrings.
template <typename Lookup, typename Contains>
std::vector<std::size_t> resolveFocus(const Options& options, std::size_t count, Lookup&& exact, Contains&& contains)
{
    std::vector<std::size_t> seeds;
    for (const auto& name : options.focus)
    {
        std::vector<std::size_t> found = exact(name);
        if (found.empty())
        {
            for (std::size_t i = 0; i < count && found.size() < 64; ++i)
            {
                if (contains(i, name))
                {
                    found.push_back(i);
                }
            }
        }
        if (found.empty())
        {
            throw std::invalid_argument("no engine layer or ONNX node named \"" + printable(name, 200) + "\"");
        }
        seeds.insert(seeds.end(), found.begin(), found.end());
    }
    std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
    return seeds;
}

std::string baseName(const std::string& path)
{
    std::size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

//! Edges between engine layers through tensor names, with what each tensor is (tensorLabel); names-only lists get
//! their execution order instead.
EdgeList engineEdges(const EnginePlan& plan, bool* orderOnly, EdgeLabels& labels)
{
    std::unordered_map<std::string_view, std::size_t> producer;
    producer.reserve(plan.layers.size() * 2);
    bool anyTensor = false;
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        for (const auto& tensor : plan.layers[i].outputs)
        {
            producer.emplace(tensor.name, i);
            anyTensor = true;
        }
        anyTensor = anyTensor || !plan.layers[i].inputs.empty();
    }
    EdgeList edges;
    *orderOnly = !anyTensor;
    if (!anyTensor)
    {
        for (std::size_t i = 1; i < plan.layers.size(); ++i)
        {
            edges.emplace_back(i - 1, i);
        }
        return edges;
    }
    for (std::size_t i = 0; i < plan.layers.size(); ++i)
    {
        for (const auto& tensor : plan.layers[i].inputs)
        {
            auto it = producer.find(tensor.name);
            if (it != producer.end())
            {
                edges.emplace_back(it->second, i);
                // The consumer's record of the tensor, else the producer's (one may list less than the other).
                std::string label = tensorLabel(tensor);
                if (label.empty())
                {
                    for (const auto& output : plan.layers[it->second].outputs)
                    {
                        if (output.name == tensor.name && label.empty())
                        {
                            label = tensorLabel(output);
                        }
                    }
                }
                if (!label.empty())
                {
                    // Two tensors between one pair of layers: both, one per line.
                    std::string& text = labels[{it->second, i}];
                    text += (text.empty() ? "" : "\n") + label;
                }
            }
        }
    }
    sortUnique(edges);
    return edges;
}

std::string layerKind(const EngineLayer& layer, LayerState state)
{
    if (state == LayerState::kInsertedQdq)
    {
        return "Q/DQ";
    }
    if (state == LayerState::kInsertedReformat)
    {
        return "reformat";
    }
    return layer.type.empty() ? "layer" : layer.type;
}

} // namespace

namespace
{

//! A layer's node: its name, kind and precision, shape and style by how it relates to the model, and its time.
Item engineItem(const EngineLayer& layer, std::size_t i, const Report& report, const Options& options)
{
    LayerState state =
        i < report.correlation.layers.size() ? report.correlation.layers[i].state : LayerState::kUnattributed;
    Precision precision = patterns::outputPrecision(layer);
    Item item;
    item.name = layer.name;
    item.kind = layerKind(layer, state);
    if (precision != Precision::kUnknown)
    {
        item.kind += " " + std::string(precisionName(precision));
    }
    item.key = std::string(layerStateName(state)) + "/" + std::string(precisionName(precision));
    Node& node = item.node;
    node.id = "L" + std::to_string(i);
    node.lines = wrapName(layer.name, options.labelWidth, options.nameLines);
    node.lines.push_back(item.kind);
    node.fill = precisionFill(precision);
    node.tooltip = layer.name;
    switch (state)
    {
    case LayerState::kInsertedQdq:
        node.shape = "hexagon";
        node.style = "filled";
        break;
    case LayerState::kInsertedReformat:
        node.shape = "parallelogram";
        node.style = "filled";
        break;
    case LayerState::kDropped:
        node.style = "rounded,dashed,filled";
        break;
    case LayerState::kUnattributed:
        node.style = "rounded,dotted,filled";
        break;
    case LayerState::kMapped:
        break;
    }
    if (i < report.correlation.layers.size() && report.correlation.layers[i].timeMs)
    {
        item.timeMs = report.correlation.layers[i].timeMs;
        node.lines.push_back(formatMs(*item.timeMs));
    }
    return item;
}

//! Findings as badges, on the layers they name and on the layers executing the ONNX nodes they name.
void badgeEngineFindings(std::vector<Item>& items, const Report& report,
                         const std::unordered_map<std::string_view, std::size_t>& byName)
{
    const std::size_t count = items.size();
    for (const auto& finding : report.findings)
    {
        auto badge = [&](std::size_t layer)
        {
            auto& badges = items[layer].node.badges;
            if (std::find(badges.begin(), badges.end(), finding.rule) == badges.end())
            {
                badges.push_back(finding.rule);
            }
        };
        for (const auto& name : finding.engineLayers)
        {
            auto it = byName.find(name);
            if (it != byName.end())
            {
                badge(it->second);
            }
        }
        for (const auto& node : finding.onnxNodes)
        {
            for (std::size_t layer : report.correlation.layersOfNode.find(node))
            {
                if (layer < count)
                {
                    badge(layer);
                }
            }
        }
    }
}

//! The layers --focus names (a layer name, or an ONNX node name: the layers executing it) and their neighbourhood;
//! every layer without --focus.
std::vector<char> selectEngineFocus(std::vector<Item>& items, const EnginePlan& plan, const Report& report,
                                    const Options& options, const EdgeList& edges,
                                    const std::unordered_map<std::string_view, std::size_t>& byName)
{
    const std::size_t count = plan.layers.size();
    if (options.focus.empty())
    {
        return std::vector<char>(count, 1);
    }
    auto seeds = resolveFocus(
        options, count,
        [&](const std::string& name)
        {
            std::vector<std::size_t> found;
            auto it = byName.find(name);
            if (it != byName.end())
            {
                found.push_back(it->second);
            }
            for (std::size_t layer : report.correlation.layersOfNode.find(name))
            {
                if (layer < count)
                {
                    found.push_back(layer);
                }
            }
            return found;
        },
        [&](std::size_t i, const std::string& name) { return plan.layers[i].name.find(name) != std::string::npos; });
    for (std::size_t seed : seeds)
    {
        items[seed].seed = true;
        items[seed].node.focus = true;
        items[seed].node.penwidth = 3.0;
    }
    return neighbourhood(count, edges, seeds, options.radius);
}

} // namespace

Graph buildEngineGraph(const Inputs& inputs, const Report& report, const Options& options)
{
    const EnginePlan* plan = inputs.engine();
    if (plan == nullptr)
    {
        throw std::invalid_argument("the engine view needs an engine layer list (layer-info JSON or build log)");
    }
    const std::size_t count = plan->layers.size();
    std::vector<Item> items(count);
    std::unordered_map<std::string_view, std::size_t> byName;
    byName.reserve(count * 2);
    for (std::size_t i = 0; i < count; ++i)
    {
        byName.emplace(plan->layers[i].name, i);
        byName.emplace(plan->layers[i].baseName(), i);
    }
    for (std::size_t i = 0; i < count; ++i)
    {
        items[i] = engineItem(plan->layers[i], i, report, options);
    }
    badgeEngineFindings(items, report, byName);
    bool orderOnly = false;
    EdgeLabels edgeLabels;
    EdgeList edges = engineEdges(*plan, &orderOnly, edgeLabels);
    const std::vector<char> selected = selectEngineFocus(items, *plan, report, options, edges, byName);

    Graph graph;
    graph.title = "Engine " + baseName(plan->sourcePath) + ": " + layerWord(count, "layer") +
                  (inputs.timings() != nullptr ? ", times from " + baseName(inputs.timings()->sourcePath) : "");
    graph.legend.push_back(kPrecisionLegend);
    graph.legend.push_back("hexagon = standalone Q/DQ layer, parallelogram = reformat/copy, dashed = dropped, dotted = "
                           "unattributed, red border with [!] = finding (rule slug)");
    if (orderOnly)
    {
        graph.legend.push_back("names-only layer list: edges show execution order, not data flow");
    }
    assemble(graph, items, selected, std::move(edges), options, "layer", edgeLabels);
    if (orderOnly)
    {
        for (auto& edge : graph.edges)
        {
            edge.style = "dashed";
        }
    }
    addSummaryLegend(graph, options, "layer");
    chooseLayout(graph);
    return graph;
}

namespace
{

//! Clusters of the ONNX view: observed engine layers executing two or more nodes, else predicted layers. A node is
//! in the first cluster that claims it.
std::vector<int> addFusionClusters(Graph& graph, const OnnxGraph& onnx, const EnginePlan* plan, const Report& report,
                                   const Options& options, bool observed)
{
    std::vector<int> clusterOf(onnx.nodes.size(), -1);
    auto addGroup = [&](const auto& nodes, std::string label)
    {
        std::vector<std::size_t> members;
        for (const auto& name : nodes)
        {
            std::uint32_t index = onnx.nodeIndex(name);
            if (index != OnnxGraph::kNone && clusterOf[index] < 0)
            {
                members.push_back(index);
            }
        }
        if (members.size() < 2)
        {
            return;
        }
        int index = static_cast<int>(graph.clusters.size());
        Cluster cluster;
        cluster.label = std::move(label);
        cluster.border = observed ? "#3182bd" : "#756bb1";
        cluster.style = observed ? "rounded" : "rounded,dashed";
        graph.clusters.push_back(std::move(cluster));
        for (std::size_t member : members)
        {
            clusterOf[member] = index;
        }
    };
    if (!observed)
    {
        for (const auto& layer : report.prediction.layers)
        {
            if (layer.onnxNodes.size() >= 2)
            {
                addGroup(layer.onnxNodes, "predicted " + layer.kind);
            }
        }
        return clusterOf;
    }
    for (const auto& mapping : report.correlation.layers)
    {
        if (mapping.state == LayerState::kMapped && mapping.onnxNodes.size() >= 2)
        {
            std::string label = "layer";
            for (const auto& line :
                 wrapName(plan->layers[mapping.layer].name, options.labelWidth + 16, options.nameLines))
            {
                label += (label == "layer" ? " " : "\n") + line;
            }
            if (mapping.timeMs)
            {
                label += " (" + formatMs(*mapping.timeMs) + ")";
            }
            addGroup(mapping.onnxNodes, label);
        }
    }
    return clusterOf;
}

//! What the report says of each ONNX node by name: its observed Q/DQ state, its first Q/DQ prediction (as
//! Prediction::find gives) and its predicted layer.
struct NodeFates
{
    explicit NodeFates(const Report& report)
    {
        for (const auto& state : report.correlation.qdqNodes)
        {
            qdqState.emplace(state.node, &state);
        }
        for (const auto& predicted : report.prediction.qdq)
        {
            predictedQdq.emplace(predicted.node, &predicted);
        }
        for (const auto& layer : report.prediction.layers)
        {
            for (const auto& name : layer.onnxNodes)
            {
                predictedLayer.emplace(name, &layer);
            }
        }
    }

    std::unordered_map<std::string_view, const QdqNodeState*> qdqState;
    std::unordered_map<std::string_view, const PredictedQdq*> predictedQdq;
    std::unordered_map<std::string_view, const PredictedLayer*> predictedLayer;
};

//! A Q/DQ node as a small circle filled by its fate (observed, else predicted).
void describeQdqNode(Item& item, const OnnxNode& onnxNode, const NodeFates& fates, bool observed)
{
    Node& node = item.node;
    bool quantize = patterns::isQuantize(onnxNode);
    item.kind = quantize ? "Q" : "DQ";
    std::string fate = "unknown";
    auto it = fates.qdqState.find(onnxNode.name);
    if (observed && it != fates.qdqState.end())
    {
        fate = std::string(qdqStateName(it->second->state));
    }
    else if (auto predicted = fates.predictedQdq.find(onnxNode.name); predicted != fates.predictedQdq.end())
    {
        fate = std::string(predictedFateName(predicted->second->fate));
    }
    node.shape = "circle";
    node.style = "filled";
    node.width = node.height = 0.32;
    node.lines.push_back(item.kind);
    node.tooltip += ": " + fate;
    item.key = "qdq/" + fate;
    if (fate == "standalone")
    {
        node.fill = "#ff9896";
    }
    else if (fate == "fused" || fate.rfind("fused", 0) == 0)
    {
        node.fill = "#a1d99b";
    }
    else if (fate == "folded")
    {
        node.fill = "#d9d9d9";
    }
    else if (fate == "requantize")
    {
        node.fill = "#fdae6b";
    }
    else if (fate == "eliminated" || fate == "cancelled")
    {
        node.fill = "#f7f7f7";
        node.style = "dashed,filled";
    }
}

//! Any other node: its name and op type, filled by the precision of the layer executing it (with no engine: INT8
//! when its predicted layer reads or writes INT8).
void describeOpNode(Item& item, const OnnxNode& onnxNode, const EnginePlan* plan, const Report& report,
                    const NodeFates& fates, const Options& options)
{
    Node& node = item.node;
    node.lines = wrapName(onnxNode.name, options.labelWidth, options.nameLines);
    node.lines.push_back(onnxNode.opType);
    item.kind = onnxNode.opType;
    Precision precision = Precision::kUnknown;
    auto layers = report.correlation.layersOfNode.find(onnxNode.name);
    if (plan != nullptr && !layers.empty() && layers.front() < plan->layers.size())
    {
        precision = patterns::outputPrecision(plan->layers[layers.front()]);
    }
    else if (plan == nullptr)
    {
        auto predicted = fates.predictedLayer.find(onnxNode.name);
        if (predicted != fates.predictedLayer.end() && (predicted->second->int8Output || predicted->second->int8Input))
        {
            precision = Precision::kINT8;
        }
    }
    node.fill = precisionFill(precision);
    item.key = onnxNode.opType + "/" + std::string(precisionName(precision));
}

std::vector<Item> onnxItems(const OnnxGraph& onnx, const EnginePlan* plan, const Report& report, const Options& options,
                            const std::vector<int>& clusterOf, bool observed)
{
    const NodeFates fates(report);
    std::vector<Item> items(onnx.nodes.size());
    for (std::size_t i = 0; i < onnx.nodes.size(); ++i)
    {
        const OnnxNode& onnxNode = onnx.nodes[i];
        Item& item = items[i];
        Node& node = item.node;
        item.name = onnxNode.name;
        node.id = "N" + std::to_string(i);
        node.cluster = clusterOf[i];
        node.tooltip = onnxNode.name + " (" + onnxNode.opType + ")";
        if (patterns::isQdq(onnxNode))
        {
            describeQdqNode(item, onnxNode, fates, observed);
        }
        else
        {
            describeOpNode(item, onnxNode, plan, report, fates, options);
        }
    }
    return items;
}

//! Each finding's rule slug as a badge of the nodes it names, once per node.
void badgeFindings(std::vector<Item>& items, const Report& report,
                   const std::unordered_map<std::string_view, std::size_t>& byName)
{
    for (const auto& finding : report.findings)
    {
        for (const auto& name : finding.onnxNodes)
        {
            auto it = byName.find(name);
            if (it != byName.end())
            {
                auto& badges = items[it->second].node.badges;
                if (std::find(badges.begin(), badges.end(), finding.rule) == badges.end())
                {
                    badges.push_back(finding.rule);
                }
            }
        }
    }
}

//! Producer -> consumer edges of the model's nodes.
EdgeList onnxEdges(const OnnxGraph& onnx)
{
    const std::size_t count = onnx.nodes.size();
    EdgeList edges;
    for (std::size_t i = 0; i < count; ++i)
    {
        for (const auto& tensor : onnx.nodes[i].inputs)
        {
            if (tensor.empty())
            {
                continue;
            }
            const OnnxNode* producer = onnx.producer(tensor);
            if (producer != nullptr && producer->index < count)
            {
                edges.emplace_back(producer->index, i);
            }
        }
    }
    sortUnique(edges);
    return edges;
}

//! The nodes --focus names (a node name, or an engine layer name: the nodes it executes) and their neighbourhood;
//! every node without --focus.
std::vector<char> selectOnnxFocus(std::vector<Item>& items, const OnnxGraph& onnx, const EnginePlan* plan,
                                  const Report& report, const Options& options, const EdgeList& edges,
                                  const std::unordered_map<std::string_view, std::size_t>& byName)
{
    const std::size_t count = onnx.nodes.size();
    if (options.focus.empty())
    {
        return std::vector<char>(count, 1);
    }
    auto seeds = resolveFocus(
        options, count,
        [&](const std::string& name)
        {
            std::vector<std::size_t> found;
            auto it = byName.find(name);
            if (it != byName.end())
            {
                found.push_back(it->second);
            }
            else if (plan != nullptr)
            {
                // An engine layer name: the nodes it executes.
                for (const auto& mapping : report.correlation.layers)
                {
                    if (mapping.layer < plan->layers.size() && plan->layers[mapping.layer].name == name)
                    {
                        for (const auto& nodeName : mapping.onnxNodes)
                        {
                            auto nodeIt = byName.find(nodeName);
                            if (nodeIt != byName.end())
                            {
                                found.push_back(nodeIt->second);
                            }
                        }
                    }
                }
            }
            return found;
        },
        [&](std::size_t i, const std::string& name) { return onnx.nodes[i].name.find(name) != std::string::npos; });
    for (std::size_t seed : seeds)
    {
        items[seed].seed = true;
        items[seed].node.focus = true;
        items[seed].node.penwidth = 3.0;
    }
    return neighbourhood(count, edges, seeds, options.radius);
}

//! Clusters nobody is drawn in any more (outside the focus) are dropped by the writer only if empty; remove them
//! here so the DOT text stays small.
void dropUnusedClusters(Graph& graph)
{
    std::vector<int> used(graph.clusters.size(), 0);
    for (const auto& node : graph.nodes)
    {
        if (node.cluster >= 0)
        {
            used[static_cast<std::size_t>(node.cluster)] = 1;
        }
    }
    std::vector<int> renumber(graph.clusters.size(), -1);
    std::vector<Cluster> kept;
    for (std::size_t c = 0; c < graph.clusters.size(); ++c)
    {
        if (used[c])
        {
            renumber[c] = static_cast<int>(kept.size());
            kept.push_back(std::move(graph.clusters[c]));
        }
    }
    graph.clusters = std::move(kept);
    for (auto& node : graph.nodes)
    {
        if (node.cluster >= 0)
        {
            node.cluster = renumber[static_cast<std::size_t>(node.cluster)];
        }
    }
}

} // namespace

Graph buildOnnxGraph(const Inputs& inputs, const Report& report, const Options& options)
{
    if (!inputs.onnx)
    {
        throw std::invalid_argument("the ONNX view needs the ONNX model");
    }
    const OnnxGraph& onnx = *inputs.onnx;
    const EnginePlan* plan = inputs.engine();
    const std::size_t count = onnx.nodes.size();
    Graph graph;
    const bool observed = plan != nullptr && !report.correlation.layers.empty();
    const std::vector<int> clusterOf = addFusionClusters(graph, onnx, plan, report, options, observed);
    std::vector<Item> items = onnxItems(onnx, plan, report, options, clusterOf, observed);
    std::unordered_map<std::string_view, std::size_t> byName;
    for (std::size_t i = 0; i < count; ++i)
    {
        byName.emplace(onnx.nodes[i].name, i);
    }
    badgeFindings(items, report, byName);
    EdgeList edges = onnxEdges(onnx);
    const std::vector<char> selected = selectOnnxFocus(items, onnx, plan, report, options, edges, byName);
    graph.title = "ONNX " + baseName(onnx.sourcePath) + ": " + layerWord(count, "node");
    graph.legend.push_back(observed ? "clusters = engine layers executing several nodes (observed fusion), fill = "
                                      "precision of the executing layer"
                                    : "dashed clusters = fusion groups predicted from the ONNX graph alone, green = "
                                      "predicted INT8");
    graph.legend.push_back("circles = Q/DQ nodes: green fused, red standalone, grey folded, orange requantize, dashed "
                           "eliminated/cancelled; red border with [!] = finding (rule slug)");
    assemble(graph, items, selected, std::move(edges), options, "node");
    addSummaryLegend(graph, options, "node");
    dropUnusedClusters(graph);
    chooseLayout(graph);
    return graph;
}

Graph buildFindingGraph(const Inputs& inputs, const Report& report, const Finding& finding, const Options& options)
{
    constexpr std::size_t kMaxSeeds = 12;
    Options focused = options;
    focused.focus.clear();
    Graph graph;
    std::size_t named = 0;
    if (inputs.engine() != nullptr)
    {
        std::vector<std::string> names = finding.engineLayers;
        for (const auto& node : finding.onnxNodes)
        {
            if (report.correlation.layersOfNode.contains(node))
            {
                names.push_back(node);
            }
        }
        named = names.size();
        for (std::size_t i = 0; i < names.size() && focused.focus.size() < kMaxSeeds; ++i)
        {
            focused.focus.push_back(names[i]);
        }
        if (!focused.focus.empty())
        {
            try
            {
                graph = buildEngineGraph(inputs, report, focused);
            }
            catch (const std::invalid_argument&)
            {
                focused.focus.clear();
            }
        }
    }
    if (graph.nodes.empty() && inputs.onnx && !finding.onnxNodes.empty())
    {
        focused.focus.clear();
        named = finding.onnxNodes.size();
        for (std::size_t i = 0; i < finding.onnxNodes.size() && focused.focus.size() < kMaxSeeds; ++i)
        {
            if (inputs.onnx->findNode(finding.onnxNodes[i]) != nullptr)
            {
                focused.focus.push_back(finding.onnxNodes[i]);
            }
        }
        if (!focused.focus.empty())
        {
            graph = buildOnnxGraph(inputs, report, focused);
        }
    }
    if (graph.nodes.empty())
    {
        throw std::invalid_argument("finding " + finding.rule + " names no engine layer or ONNX node to draw");
    }
    std::string title = "[" + std::string(severityName(finding.severity)) + "] " + finding.rule;
    if (finding.costMs)
    {
        title += ", cost " + formatMs(*finding.costMs);
    }
    // The whole message, wrapped by the writer; only a very long one is cut, at a word.
    std::string message = finding.message;
    if (message.size() > kMaxTitleMessage)
    {
        std::size_t cut = message.rfind(' ', kMaxTitleMessage);
        message = message.substr(0, cut == std::string::npos ? kMaxTitleMessage : cut) + " ...";
    }
    graph.legend.insert(graph.legend.begin(), message);
    if (named > focused.focus.size())
    {
        graph.legend.push_back("drawn around the first " + std::to_string(focused.focus.size()) + " of the " +
                               std::to_string(named) + " layers/nodes this finding names");
    }
    graph.title = title + " - " + graph.title;
    return graph;
}

namespace
{

//! The diff view: one cluster per region, holding a baseline and a candidate cluster of its layers; regions stack
//! top to bottom in the report's order.
class DiffGraphBuilder
{
public:
    DiffGraphBuilder(const DiffReport& report, const Inputs& baseline, const Inputs& candidate)
        : mReport(report), mPlans{baseline.engine(), candidate.engine()}
    {
        const Profile* profiles[2] = {baseline.timings(), candidate.timings()};
        for (int side = 0; side < 2; ++side)
        {
            if (profiles[side] != nullptr)
            {
                for (const auto& entry : profiles[side]->entries)
                {
                    mTimes[side].emplace(entry.name, entry.averageMs);
                }
            }
            if (mPlans[side] != nullptr)
            {
                for (std::size_t i = 0; i < mPlans[side]->layers.size(); ++i)
                {
                    for (const auto& tensor : mPlans[side]->layers[i].outputs)
                    {
                        mProducers[side].emplace(tensor.name, i);
                    }
                }
            }
        }
    }

    Graph build(std::size_t topRegions)
    {
        char buffer[160];
        std::snprintf(buffer, sizeof(buffer), "Diff: top %zu of %zu regions, total delta %+.3f ms",
                      std::min(topRegions, mReport.regions.size()), mReport.regions.size(), mReport.deltaMs);
        mGraph.title = buffer;
        mGraph.legend.push_back("each region: baseline (left) and candidate (right) layers covering the same ONNX "
                                "nodes");
        mGraph.legend.push_back(kPrecisionLegend);
        for (std::size_t r = 0; r < mReport.regions.size() && r < topRegions; ++r)
        {
            addRegion(r);
        }
        if (mGraph.nodes.empty())
        {
            Node none;
            none.id = "empty";
            none.lines.push_back("no regions differ");
            mGraph.nodes.push_back(std::move(none));
        }
        mGraph.attributes.emplace_back("rankdir", "TB");
        mGraph.attributes.emplace_back("nodesep", "0.2");
        mGraph.attributes.emplace_back("ranksep", "0.3");
        return std::move(mGraph);
    }

private:
    static constexpr std::size_t kMaxLayersPerSide = 24;

    void addRegion(std::size_t r)
    {
        const DiffRegion& region = mReport.regions[r];
        Cluster regionCluster;
        char delta[48] = "no per-layer times";
        if (region.hasTimes)
        {
            std::snprintf(delta, sizeof(delta), "%+.3f ms", region.deltaMs);
        }
        char buffer[160];
        std::snprintf(buffer, sizeof(buffer), "region %zu: %s (%s)", r + 1, delta, region.alignment.c_str());
        regionCluster.label = buffer;
        for (std::size_t d = 0; d < region.differences.size() && d < 2; ++d)
        {
            regionCluster.label += "\n" + shortenLine(region.differences[d], 80);
        }
        regionCluster.border = "#636363";
        int regionIndex = static_cast<int>(mGraph.clusters.size());
        mGraph.clusters.push_back(std::move(regionCluster));
        std::vector<std::size_t> firstNodes;
        std::vector<std::size_t> sinks;
        for (int side = 0; side < 2; ++side)
        {
            firstNodes.push_back(addSide(r, side, regionIndex, sinks));
        }
        // Regions stack top to bottom: invisible edges from the previous region's sinks.
        for (std::size_t sink : mPreviousSinks)
        {
            for (std::size_t first : firstNodes)
            {
                mGraph.edges.push_back({sink, first, "invis", "", "", false});
            }
        }
        mPreviousSinks = std::move(sinks);
        if (mPreviousSinks.size() > 4)
        {
            mPreviousSinks.resize(4);
        }
    }

    //! One side's cluster of a region, its layer nodes and the data-flow edges between them; the nodes that feed
    //! no other are added to sinks. Returns the side's first node.
    std::size_t addSide(std::size_t r, int side, int regionIndex, std::vector<std::size_t>& sinks)
    {
        const DiffRegion& region = mReport.regions[r];
        const char* sideNames[2] = {"baseline", "candidate"};
        const auto& layers = side == 0 ? region.baselineLayers : region.candidateLayers;
        Cluster sideCluster;
        sideCluster.parent = regionIndex;
        sideCluster.label = std::string(sideNames[side]) + ": " + layerWord(layers.size(), "layer");
        if (region.hasTimes)
        {
            sideCluster.label += ", " + formatMs(side == 0 ? region.baselineMs : region.candidateMs);
        }
        sideCluster.fill = side == 0 ? "#f7f7f7" : "#fff5eb";
        int sideIndex = static_cast<int>(mGraph.clusters.size());
        mGraph.clusters.push_back(std::move(sideCluster));
        std::unordered_map<std::size_t, std::size_t> nodeOfLayer;
        std::size_t firstNode = mGraph.nodes.size();
        const std::string prefix = "R" + std::to_string(r) + (side == 0 ? "B" : "C");
        for (std::size_t k = 0; k < layers.size() && k < kMaxLayersPerSide; ++k)
        {
            Node node = layerNode(region, side, layers[k]);
            node.id = prefix + std::to_string(k);
            node.cluster = sideIndex;
            nodeOfLayer.emplace(layers[k], mGraph.nodes.size());
            mGraph.nodes.push_back(std::move(node));
        }
        if (layers.size() > kMaxLayersPerSide)
        {
            addPlaceholder(prefix + "more", sideIndex,
                           "+ " + layerWord(layers.size() - kMaxLayersPerSide, "more layer"));
        }
        if (layers.empty())
        {
            addPlaceholder(prefix + "none", sideIndex, "no layer");
        }
        addSideEdges(side, nodeOfLayer, firstNode, sinks);
        return firstNode;
    }

    //! A layer's name, type and precision, time, and (on the candidate) the rules of the region's findings on it.
    Node layerNode(const DiffRegion& region, int side, std::size_t index) const
    {
        Node node;
        const EnginePlan* plan = mPlans[side];
        if (plan == nullptr || index >= plan->layers.size())
        {
            node.lines.push_back("layer " + std::to_string(index));
            return node;
        }
        const EngineLayer& layer = plan->layers[index];
        Precision precision = patterns::outputPrecision(layer);
        node.lines = wrapName(layer.name, 40, 4);
        std::string kind = layer.type.empty() ? "layer" : layer.type;
        if (precision != Precision::kUnknown)
        {
            kind += " " + std::string(precisionName(precision));
        }
        node.lines.push_back(kind);
        auto time = mTimes[side].find(layer.name);
        if (time != mTimes[side].end())
        {
            node.lines.push_back(formatMs(time->second));
        }
        node.fill = precisionFill(precision);
        node.tooltip = layer.name;
        if (side == 1)
        {
            for (const auto& finding : region.findings)
            {
                if (std::find(finding.engineLayers.begin(), finding.engineLayers.end(), layer.name) !=
                        finding.engineLayers.end() &&
                    std::find(node.badges.begin(), node.badges.end(), finding.rule) == node.badges.end())
                {
                    node.badges.push_back(finding.rule);
                }
            }
        }
        return node;
    }

    void addPlaceholder(std::string id, int cluster, std::string line)
    {
        Node node;
        node.id = std::move(id);
        node.cluster = cluster;
        node.style = "dashed";
        node.lines.push_back(std::move(line));
        mGraph.nodes.push_back(std::move(node));
    }

    //! Data-flow edges between this side's layers of the region.
    void addSideEdges(int side, const std::unordered_map<std::size_t, std::size_t>& nodeOfLayer, std::size_t firstNode,
                      std::vector<std::size_t>& sinks)
    {
        const EnginePlan* plan = mPlans[side];
        std::vector<char> hasOut(mGraph.nodes.size() - firstNode, 0);
        EdgeList edges;
        if (plan != nullptr)
        {
            for (const auto& [layer, node] : nodeOfLayer)
            {
                for (const auto& tensor : plan->layers[layer].inputs)
                {
                    auto producer = mProducers[side].find(tensor.name);
                    if (producer != mProducers[side].end())
                    {
                        auto from = nodeOfLayer.find(producer->second);
                        if (from != nodeOfLayer.end())
                        {
                            edges.emplace_back(from->second, node);
                        }
                    }
                }
            }
        }
        sortUnique(edges);
        for (const auto& [a, b] : edges)
        {
            mGraph.edges.push_back({a, b, "", "", "", false});
            hasOut[a - firstNode] = 1;
        }
        for (std::size_t n = firstNode; n < mGraph.nodes.size(); ++n)
        {
            if (!hasOut[n - firstNode])
            {
                sinks.push_back(n);
            }
        }
    }

    const DiffReport& mReport;
    const EnginePlan* mPlans[2];
    std::unordered_map<std::string_view, double> mTimes[2];
    std::unordered_map<std::string_view, std::size_t> mProducers[2];
    Graph mGraph;
    std::vector<std::size_t> mPreviousSinks;
};

} // namespace

Graph buildDiffGraph(const DiffReport& report, const Inputs& baseline, const Inputs& candidate, std::size_t topRegions)
{
    return DiffGraphBuilder(report, baseline, candidate).build(topRegions);
}

} // namespace qdq::graph
