// The HTML report (docs/html-report.md): the page is a fixed template (src/reporters/html/, embedded at build time)
// around one JSON blob that its script renders. Everything taken from the user's files (layer, node and tensor names,
// messages, paths) travels inside that JSON, written so that no byte of it can end the <script> element, and reaches
// the page only through the script's escaping; the only markup written here from the inputs is Graphviz's SVG of
// the pictures, which graph::escapeLabel made well-formed XML.
#include "qdq/html_report.h"

#include "qdq/graph.h"
#include "qdq/patterns.h"
#include "qdq/precision_summary.h"

#include "src/reporters/build_mode_json.h"
#include "src/reporters/html_assets.h"
#include "src/reporters/json_writer.h"
#include "src/reporters/myelin_report.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace qdq
{

namespace
{

//! Appends the JSON text handed to it to out, made fit to sit inside <script type="application/json">: whitespace
//! between tokens dropped, and every <, > and & (which JSON allows only inside strings) written as a \u escape, so no
//! "</script>" or "<!--" can appear. Takes the text in pieces (JsonWriter's flushes) and keeps its place between them.
class ScriptJson
{
public:
    explicit ScriptJson(std::string& out) : mOut(out) {}
    void operator()(const std::string& piece)
    {
        for (char c : piece)
        {
            if (!mInString)
            {
                if (c == ' ' || c == '\n')
                {
                    continue;
                }
                mInString = c == '"';
                mOut += c;
                continue;
            }
            if (mEscaped)
            {
                mEscaped = false;
            }
            else if (c == '\\')
            {
                mEscaped = true;
            }
            else if (c == '"')
            {
                mInString = false;
            }
            switch (c)
            {
            case '<':
                mOut += "\\u003c";
                break;
            case '>':
                mOut += "\\u003e";
                break;
            case '&':
                mOut += "\\u0026";
                break;
            default:
                mOut += c;
            }
        }
    }

private:
    std::string& mOut;
    bool mInString = false;
    bool mEscaped = false;
};

using Count = std::uint64_t;

void writeMs(JsonWriter& json, std::string_view key, const std::optional<double>& value)
{
    json.key(key);
    value ? json.value(roundMs(*value)) : json.null();
}

//! The root causes (src/advice): the page shows each with its savings bar and its findings and symptoms folded under.
void writeRootCauses(JsonWriter& json, const Report& report)
{
    json.key("causes").beginArray();
    for (const RootCause& cause : report.causes)
    {
        json.beginObject().member("title", cause.title).member("severity", severityName(cause.severity));
        json.member("findings", cause.findings).member("symptoms", cause.symptoms);
        writeMs(json, "saving_ms", cause.savingMs);
        writeMs(json, "involved_ms", report.hasTimings ? std::optional<double>(cause.involvedMs) : std::nullopt);
        json.member("layers", std::uint64_t{cause.layers.size()});
        json.member("confidence", savingConfidenceName(cause.confidence)).member("basis", cause.basis);
        json.endObject();
    }
    json.endArray();
}

void writeSources(JsonWriter& json, const std::vector<Inputs::Source>& sources)
{
    json.beginArray();
    for (const auto& source : sources)
    {
        json.beginObject().member("kind", inputKindName(source.kind)).member("path", source.path).key("trt_version");
        source.trtVersion ? json.value(*source.trtVersion) : json.null();
        json.endObject();
    }
    json.endArray();
}

//! Interns tensors as [name, label] pairs so the layers that read one tensor name it by index.
class TensorTable
{
public:
    std::size_t add(const std::string& name, std::string label)
    {
        auto [it, added] = mIndex.emplace(name, mRows.size());
        if (added)
        {
            mRows.emplace_back(name, std::move(label));
        }
        return it->second;
    }
    void write(JsonWriter& json) const
    {
        json.beginArray();
        for (const auto& [name, label] : mRows)
        {
            json.beginArray().value(name).value(label).endArray();
        }
        json.endArray();
    }

private:
    std::unordered_map<std::string, std::size_t> mIndex;
    std::vector<std::pair<std::string, std::string>> mRows;
};

void writeGroups(JsonWriter& json, const std::vector<PrecisionSummary::Group>& groups)
{
    json.beginArray();
    for (const auto& group : groups)
    {
        json.beginObject().member("name", group.name).member("layers", Count{group.layers});
        json.member("ms", roundMs(group.ms)).endObject();
    }
    json.endArray();
}

void writeSummary(JsonWriter& json, const Report& report, const Inputs& inputs)
{
    json.key("summary").beginObject();
    json.member("has_timings", report.hasTimings);
    writeMs(json, "total_ms", report.hasTimings ? std::optional<double>(report.totalMs) : std::nullopt);
    writeMs(json, "standalone_qdq_ms",
            report.hasTimings ? std::optional<double>(report.standaloneQdqMs) : std::nullopt);
    writeMs(json, "reformat_ms", report.hasTimings ? std::optional<double>(report.reformatMs) : std::nullopt);
    auto layers = report.correlation.layerTotals();
    json.key("layers").beginObject();
    json.member("total", Count{layers.total}).member("mapped", Count{layers.mapped});
    json.member("inserted_qdq", Count{layers.insertedQdq}).member("inserted_reformat", Count{layers.insertedReformat});
    json.member("dropped", Count{layers.dropped}).member("unattributed", Count{layers.unattributed});
    json.endObject();
    auto qdq = report.correlation.qdqTotals();
    json.key("qdq_nodes").beginObject();
    json.member("total", Count{qdq.total}).member("fused", Count{qdq.fused});
    json.member("standalone", Count{qdq.standalone}).member("folded", Count{qdq.folded});
    json.member("eliminated", Count{qdq.eliminated}).member("unknown", Count{qdq.unknown});
    json.endObject();
    // Without an engine the correlation knows no Q/DQ fate: the page shows the simulator's instead.
    if (inputs.engine() == nullptr && !report.prediction.qdq.empty())
    {
        Count fates[6] = {0, 0, 0, 0, 0, 0};
        for (const auto& predicted : report.prediction.qdq)
        {
            ++fates[static_cast<int>(predicted.fate)];
        }
        using Fate = PredictedQdq::Fate;
        json.key("predicted_qdq").beginObject();
        json.member("total", Count{report.prediction.qdq.size()});
        json.member("fused", Count{fates[static_cast<int>(Fate::kFusedIntoProducer)] +
                                   fates[static_cast<int>(Fate::kFusedIntoConsumer)]});
        json.member("standalone", fates[static_cast<int>(Fate::kStandalone)]);
        json.member("requantize", fates[static_cast<int>(Fate::kRequantize)]);
        json.member("folded", fates[static_cast<int>(Fate::kFolded)]);
        json.member("cancelled", fates[static_cast<int>(Fate::kCancelled)]);
        json.endObject();
    }
    Count bySeverity[3] = {0, 0, 0};
    for (const auto& finding : report.findings)
    {
        ++bySeverity[static_cast<int>(finding.severity)];
    }
    json.key("findings").beginObject();
    json.member("error", bySeverity[static_cast<int>(Severity::kError)]);
    json.member("warning", bySeverity[static_cast<int>(Severity::kWarning)]);
    json.member("info", bySeverity[static_cast<int>(Severity::kInfo)]);
    json.endObject();
    if (inputs.engine() != nullptr)
    {
        PrecisionSummary precision = summarizePrecision(report, inputs);
        json.key("by_precision");
        writeGroups(json, precision.byPrecision);
        json.key("by_kind");
        writeGroups(json, precision.byKind);
        json.member("tensor_core_share", precision.tensorCores.share);
        if (!precision.int8.basis.empty())
        {
            json.key("int8").beginObject().member("basis", precision.int8.basis);
            json.member("quantized", Count{precision.int8.quantized}).member("int8", Count{precision.int8.int8});
            json.member("not_int8", Count{precision.int8.notInt8}).member("unknown", Count{precision.int8.unknown});
            json.endObject();
        }
    }
    json.endObject();
}

void writeIndices(JsonWriter& json, std::string_view key, const std::vector<std::size_t>& indices)
{
    json.key(key).beginArray();
    for (std::size_t index : indices)
    {
        json.value(Count{index});
    }
    json.endArray();
}

//! Engine layers: name, type, kind, precision, state, mapping evidence, ONNX nodes, time, tensors and the layers
//! producing their inputs (keys kept short: a 100,000-layer engine writes them 100,000 times).
void writeEngineLayers(JsonWriter& json, const Report& report, const EnginePlan& plan, TensorTable& tensors)
{
    const TensorIndex& index = plan.tensorIndex();
    json.key("layers").beginArray();
    std::vector<std::size_t> in, out, producers;
    for (const LayerMapping& mapping : report.correlation.layers)
    {
        const EngineLayer& layer = plan.layers[mapping.layer];
        json.beginObject().member("n", layer.name).member("t", layer.type);
        json.member("k", layerKind(layer, mapping.state)).member("p", layerPrecisionLabel(layer, mapping.state));
        json.member("s", layerStateName(mapping.state)).member("e", mappingEvidenceName(mapping.evidence));
        json.member("o", mapping.onnxNodes);
        writeMs(json, "ms", mapping.timeMs);
        in.clear();
        out.clear();
        producers.clear();
        for (const EngineTensor& tensor : layer.inputs)
        {
            in.push_back(tensors.add(tensor.name, graph::tensorLabel(tensor)));
            if (auto producer = index.producer(tensor.name); producer && *producer != mapping.layer)
            {
                producers.push_back(*producer);
            }
        }
        for (const EngineTensor& tensor : layer.outputs)
        {
            out.push_back(tensors.add(tensor.name, graph::tensorLabel(tensor)));
        }
        std::sort(producers.begin(), producers.end());
        producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
        writeIndices(json, "i", in);
        writeIndices(json, "out", out);
        writeIndices(json, "pr", producers);
        json.endObject();
    }
    json.endArray();
}

//! How predicted layers connect through the ONNX graph: the layer executing each node, and the tensors each layer
//! reads from another layer (or the graph's inputs) and writes for another layer (or the graph's outputs).
class PredictedLayerWiring
{
public:
    static constexpr std::uint32_t kNone = 0xFFFFFFFFu;

    PredictedLayerWiring(const Report& report, const OnnxGraph& graph)
        : mGraph(graph), mLayerOfNode(graph.nodes.size(), kNone)
    {
        const auto& predicted = report.prediction.layers;
        for (std::size_t l = 0; l < predicted.size(); ++l)
        {
            for (std::uint32_t node : predicted[l].nodeIndices)
            {
                if (node < mLayerOfNode.size() && mLayerOfNode[node] == kNone)
                {
                    mLayerOfNode[node] = static_cast<std::uint32_t>(l);
                }
            }
        }
        for (const auto& name : graph.graphOutputs)
        {
            if (std::uint32_t id = graph.tensors.find(name); id != OnnxTensorTable::kNone)
            {
                mGraphOutputs.insert(id);
            }
        }
    }

    //! The tensors layer l reads and writes across its boundary, and the layers that feed it.
    void wire(const PredictedLayer& layer, std::size_t l, std::set<std::uint32_t>& inputIds,
              std::set<std::uint32_t>& outputIds, std::set<std::size_t>& producers) const
    {
        for (std::uint32_t node : layer.nodeIndices)
        {
            if (node >= mGraph.nodes.size())
            {
                continue;
            }
            for (std::uint32_t id : mGraph.inputIds(node))
            {
                if (id == OnnxTensorTable::kNone || mGraph.tensors.constant[id] != OnnxTensorTable::kNone)
                {
                    continue;
                }
                std::uint32_t producer = mGraph.tensors.producer[id];
                if (producer != kNone && mLayerOfNode[producer] == l)
                {
                    continue;
                }
                if (feedsFromLayers(producer, l, producers) || producer == kNone)
                {
                    inputIds.insert(id);
                }
            }
            for (std::uint32_t id : mGraph.outputIds(node))
            {
                if (id != OnnxTensorTable::kNone && leavesLayer(id, l))
                {
                    outputIds.insert(id);
                }
            }
        }
    }

private:
    //! Walks back from producer through nodes no layer executes to the layers that feed them (added to producers).
    //! Returns whether a layer other than l was reached.
    bool feedsFromLayers(std::uint32_t producer, std::size_t l, std::set<std::size_t>& producers) const
    {
        std::vector<std::uint32_t> work;
        std::set<std::uint32_t> seen;
        if (producer != kNone)
        {
            work.push_back(producer);
        }
        bool fromLayer = false;
        while (!work.empty() && seen.size() < 64)
        {
            std::uint32_t current = work.back();
            work.pop_back();
            if (!seen.insert(current).second)
            {
                continue;
            }
            if (mLayerOfNode[current] != kNone)
            {
                if (mLayerOfNode[current] != l)
                {
                    producers.insert(mLayerOfNode[current]);
                    fromLayer = true;
                }
                continue;
            }
            for (std::uint32_t before : mGraph.inputIds(current))
            {
                if (before != OnnxTensorTable::kNone && mGraph.tensors.producer[before] != kNone)
                {
                    work.push_back(mGraph.tensors.producer[before]);
                }
            }
        }
        return fromLayer;
    }

    //! A tensor leaves layer l when the graph outputs it or a node of another layer reads it.
    bool leavesLayer(std::uint32_t id, std::size_t l) const
    {
        bool leaves = mGraphOutputs.count(id) > 0;
        for (std::uint32_t consumer : mGraph.consumersOf(id))
        {
            leaves = leaves || mLayerOfNode[consumer] != l;
        }
        return leaves;
    }

    const OnnxGraph& mGraph;
    std::vector<std::uint32_t> mLayerOfNode;
    std::set<std::uint32_t> mGraphOutputs;
};

//! Without a layer list: the layers predicted from the model, their tensors and producers read from the ONNX graph
//! (through nodes no predicted layer executes, such as an eliminated Concat).
void writePredictedLayers(JsonWriter& json, const Report& report, const OnnxGraph& graph, TensorTable& tensors)
{
    const auto& predicted = report.prediction.layers;
    const PredictedLayerWiring wiring(report, graph);
    json.key("layers").beginArray();
    for (std::size_t l = 0; l < predicted.size(); ++l)
    {
        const PredictedLayer& layer = predicted[l];
        json.beginObject().member("n", layer.name).member("t", layer.kind).member("k", layer.role);
        json.member("p", layer.inputPrecision == layer.outputPrecision || layer.inputPrecision.empty()
                             ? layer.outputPrecision
                             : layer.inputPrecision + "->" + layer.outputPrecision);
        json.member("s", "predicted").member("e", layer.guess.empty() ? "documented" : "guess: " + layer.guess);
        json.member("o", layer.onnxNodes).key("ms").null();
        std::set<std::uint32_t> inputIds, outputIds;
        std::set<std::size_t> producers;
        wiring.wire(layer, l, inputIds, outputIds, producers);
        std::vector<std::size_t> in, out;
        for (std::uint32_t id : inputIds)
        {
            in.push_back(tensors.add(graph.tensors.names[id], layer.inputPrecision));
        }
        for (std::uint32_t id : outputIds)
        {
            out.push_back(tensors.add(graph.tensors.names[id], layer.outputPrecision));
        }
        writeIndices(json, "i", in);
        writeIndices(json, "out", out);
        writeIndices(json, "pr", std::vector<std::size_t>(producers.begin(), producers.end()));
        json.endObject();
    }
    json.endArray();
}

//! The layers (indices into the page's layer list) a finding is about: its engine layers by name, and the layers
//! executing its ONNX nodes.
std::vector<std::size_t> findingLayers(const Finding& finding, const Report& report,
                                       const std::unordered_map<std::string_view, std::size_t>& layerByName,
                                       const std::unordered_map<std::string_view, std::size_t>& layerByNode)
{
    std::set<std::size_t> layers;
    for (const auto& name : finding.engineLayers)
    {
        if (auto it = layerByName.find(name); it != layerByName.end())
        {
            layers.insert(it->second);
        }
    }
    for (const auto& node : finding.onnxNodes)
    {
        if (!layerByNode.empty())
        {
            if (auto it = layerByNode.find(node); it != layerByNode.end())
            {
                layers.insert(it->second);
            }
            continue;
        }
        for (std::size_t layer : report.correlation.layersOfNode.find(node))
        {
            layers.insert(layer);
        }
    }
    return {layers.begin(), layers.end()};
}

void writeEvidence(JsonWriter& json, const std::vector<Evidence>& evidence)
{
    json.key("evidence").beginArray();
    for (const auto& e : evidence)
    {
        json.beginObject().member("file", e.file).key("line");
        e.line == 0 ? json.null() : json.value(Count{e.line});
        json.member("field", e.field).member("text", e.text).endObject();
    }
    json.endArray();
}

//! The page: the template with the title, the data, the pictures (hidden until the script places them).
std::string page(const std::string& title, const std::string& data, const std::string& pictures)
{
    std::string out;
    out.reserve(data.size() + pictures.size() + html::reportJs().size() + html::reportCss().size() + 4096);
    out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    out += "<title>" + htmlEscape(title) + "</title>\n<style>\n";
    out += html::reportCss();
    out += "</style>\n";
    // Records every script error in the page, for the reader and for the browser tests; set before any other script.
    out += "<script>window.qdqErrors=[];function qdqError(text){window.qdqErrors.push(String(text));"
           "var p=document.getElementById('script-errors');if(p){p.textContent+=text+'\\n';p.hidden=false;}}"
           "window.addEventListener('error',function(e){qdqError((e.message||'error')+(e.lineno?' (line '+e.lineno+"
           "')':''));});window.addEventListener('unhandledrejection',function(e){qdqError('unhandled rejection: '+"
           "e.reason);});</script>\n";
    out += "</head>\n<body data-ready=\"0\">\n";
    out += "<pre id=\"script-errors\" hidden></pre>\n";
    out += "<noscript><p class=\"noscript\">This report is drawn by its inline script: allow JavaScript for this "
           "file, or read report.txt and report.json beside it.</p></noscript>\n";
    out += "<div id=\"app\"></div>\n";
    out += "<div id=\"pictures\" hidden>\n" + pictures + "</div>\n";
    out += "<script type=\"application/json\" id=\"report-data\">" + data + "</script>\n<script>\n";
    out += html::reportJs();
    out += "</script>\n</body>\n</html>\n";
    return out;
}

} // namespace

std::string htmlEscape(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (char c : text)
    {
        switch (c)
        {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\'':
            out += "&#39;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

std::string inlineSvg(std::string_view svg)
{
    std::size_t start = svg.find("<svg");
    if (start == std::string_view::npos)
    {
        return "";
    }
    std::string_view body = svg.substr(start);
    std::string out;
    out.reserve(body.size() + body.size() / 32);
    // Attribute values never hold a raw '"' (XML escapes it), so ` id="` only ever starts an id attribute.
    constexpr std::string_view kId = " id=\"";
    std::size_t at = 0;
    while (at < body.size())
    {
        std::size_t next = body.find(kId, at);
        if (next == std::string_view::npos)
        {
            out.append(body.substr(at));
            break;
        }
        out.append(body.substr(at, next - at));
        out += " data-id=\"";
        at = next + kId.size();
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
    {
        out.pop_back();
    }
    return out;
}

std::string findingPictureSvg(const Inputs& inputs, const Report& report, const Finding& finding)
{
    try
    {
        return graph::renderDot(graph::writeDot(graph::buildFindingGraph(inputs, report, finding)));
    }
    catch (const std::invalid_argument&)
    {
        return "";
    }
    catch (const std::runtime_error&)
    {
        return "";
    }
}

HtmlPictures drawFindingPictures(const Inputs& inputs, const Report& report)
{
    HtmlPictures pictures;
    for (std::size_t i = 0; i < report.findings.size() && i < kHtmlMaxFindingPictures; ++i)
    {
        pictures.findings.push_back(findingPictureSvg(inputs, report, report.findings[i]));
    }
    return pictures;
}

namespace
{

//! The page's layer list by layer name, and (predicted layers only) by the ONNX nodes they execute.
struct LayerIndex
{
    std::unordered_map<std::string_view, std::size_t> byName;
    std::unordered_map<std::string_view, std::size_t> byNode;
};

//! The engine's layers, else the layers predicted from the model, else none; then the tensors they name.
LayerIndex writeLayers(JsonWriter& json, const Report& report, const Inputs& inputs)
{
    TensorTable tensors;
    LayerIndex index;
    const EnginePlan* plan = inputs.engine();
    if (plan != nullptr)
    {
        json.member("layer_source", "engine");
        writeEngineLayers(json, report, *plan, tensors);
        for (std::size_t i = 0; i < report.correlation.layers.size(); ++i)
        {
            index.byName.emplace(plan->layers[report.correlation.layers[i].layer].name, i);
        }
    }
    else if (inputs.onnx)
    {
        json.member("layer_source", "predicted");
        writePredictedLayers(json, report, *inputs.onnx, tensors);
        for (std::size_t l = 0; l < report.prediction.layers.size(); ++l)
        {
            index.byName.emplace(report.prediction.layers[l].name, l);
            for (std::string_view node : report.prediction.layers[l].onnxNodes)
            {
                index.byNode.emplace(node, l);
            }
        }
    }
    else
    {
        json.member("layer_source", "none").key("layers").beginArray().endArray();
    }
    json.key("tensors");
    tensors.write(json);
    return index;
}

//! The pictures of the findings, inlined while they fit kHtmlMaxPictureBytes.
struct FindingPictures
{
    std::string html;
    std::size_t bytes = 0;
    std::size_t omitted = 0;
};

FindingPictures writeFindings(JsonWriter& json, const Report& report, const HtmlPictures& pictures,
                              const LayerIndex& index)
{
    FindingPictures inlined;
    json.key("findings").beginArray();
    for (std::size_t i = 0; i < report.findings.size(); ++i)
    {
        const Finding& finding = report.findings[i];
        json.beginObject().member("rule", finding.rule).member("severity", severityName(finding.severity));
        json.member("likely", finding.likely).member("message", finding.message);
        json.member("onnx_nodes", finding.onnxNodes).member("engine_layers", finding.engineLayers);
        writeIndices(json, "layers", findingLayers(finding, report, index.byName, index.byNode));
        writeEvidence(json, finding.evidence);
        json.member("fix", finding.fix);
        writeMs(json, "cost_ms", finding.costMs);
        writeMs(json, "owned_ms", finding.ownedMs);
        writeMs(json, "saving_ms", finding.savingMs);
        json.key("root_cause");
        finding.rootCause ? json.value(std::uint64_t{*finding.rootCause}) : json.null();
        json.member("symptom", finding.symptom);
        std::string svg = i < pictures.findings.size() ? inlineSvg(pictures.findings[i]) : std::string();
        bool shown = false;
        if (!svg.empty())
        {
            if (inlined.bytes + svg.size() <= kHtmlMaxPictureBytes)
            {
                inlined.bytes += svg.size();
                inlined.html += "<div class=\"picture\" data-finding=\"" + std::to_string(i) + "\">" + svg + "</div>\n";
                shown = true;
            }
            else
            {
                ++inlined.omitted;
            }
        }
        json.member("picture", shown).endObject();
    }
    json.endArray();
    return inlined;
}

void writePredictionCheck(JsonWriter& json, const PredictionCheck& check)
{
    const std::size_t shown = std::min<std::size_t>(check.disagreements.size(), 50);
    std::vector<std::string> disagreements(check.disagreements.begin(),
                                           check.disagreements.begin() + static_cast<std::ptrdiff_t>(shown));
    json.key("prediction_check").beginObject();
    json.member("real_layers", Count{check.realLayers}).member("predicted_layers", Count{check.predictedLayers});
    json.member("exact", Count{check.exact}).member("real_standalone_qdq", Count{check.realStandaloneQdq});
    json.member("predicted_standalone_qdq", Count{check.predictedStandaloneQdq});
    json.member("disagreements", disagreements);
    json.member("more_disagreements", Count{check.disagreements.size() - shown}).endObject();
}

//! Named after the model, else the layer list, else the first file.
std::string pageTitle(const Report& report)
{
    std::string title = "qdq-doctor report";
    const Inputs::Source* named = report.inputs.empty() ? nullptr : &report.inputs.front();
    for (InputKind kind : {InputKind::kLayerInfo, InputKind::kOnnx})
    {
        for (const auto& source : report.inputs)
        {
            if (source.kind == kind)
            {
                named = &source;
                break;
            }
        }
    }
    if (named != nullptr)
    {
        std::size_t slash = named->path.find_last_of('/');
        title += ": " + (slash == std::string::npos ? named->path : named->path.substr(slash + 1));
    }
    return title;
}

} // namespace

std::string renderReportHtml(const Report& report, const Inputs& inputs, const HtmlPictures& pictures,
                             const std::string& toolVersion)
{
    std::string data;
    ScriptJson sink(data);
    std::string buffer;
    JsonWriter json(buffer, [&](const std::string& piece) { sink(piece); });
    json.beginObject().member("kind", "diagnose").member("tool", "qdq-doctor " + toolVersion);
    json.key("inputs");
    writeSources(json, report.inputs);
    json.member("trt_version", inputs.trtVersion());
    json.key("build_mode");
    writeBuildModeJson(json, report.buildMode);
    if (const EnginePlan* engine = inputs.engine())
    {
        writeMyelinRegionsJson(json, report.correlation.myelinRegions, *engine);
    }
    writeSummary(json, report, inputs);
    const LayerIndex index = writeLayers(json, report, inputs);
    const FindingPictures inlined = writeFindings(json, report, pictures, index);
    writeRootCauses(json, report);
    std::vector<std::string> notes = report.notes;
    if (report.findings.size() > pictures.findings.size())
    {
        notes.push_back("pictures are drawn for the first " + std::to_string(pictures.findings.size()) + " of " +
                        std::to_string(report.findings.size()) + " findings");
    }
    if (inlined.omitted > 0)
    {
        notes.push_back(std::to_string(inlined.omitted) +
                        " finding picture(s) left out of this page to keep it under " +
                        std::to_string(kHtmlMaxPictureBytes >> 20) + " MB of pictures (see finding-NN-*.svg)");
    }
    json.member("notes", notes);
    if (report.predictionCheck)
    {
        writePredictionCheck(json, *report.predictionCheck);
    }
    json.endObject();
    return page(pageTitle(report), data, inlined.html);
}

std::string renderDiffHtml(const DiffReport& report, const Inputs& baseline, const Inputs& candidate,
                           const std::string& diffSvg, const std::string& toolVersion)
{
    std::string data;
    ScriptJson sink(data);
    std::string buffer;
    JsonWriter json(buffer, [&](const std::string& piece) { sink(piece); });
    json.beginObject().member("kind", "diff").member("tool", "qdq-doctor " + toolVersion);
    auto side = [&](std::string_view key, const Inputs& inputs, const std::vector<Inputs::Source>& sources,
                    const std::optional<double>& total, const std::string& totalSource)
    {
        json.key(key).beginObject().key("inputs");
        writeSources(json, sources);
        writeMs(json, "total_ms", total);
        json.member("total_source", totalSource);
        std::unordered_map<std::string_view, double> times;
        if (const Profile* profile = inputs.timings())
        {
            for (const auto& entry : profile->entries)
            {
                times.emplace(entry.name, entry.averageMs);
            }
        }
        json.key("layers").beginArray();
        if (const EnginePlan* plan = inputs.engine())
        {
            for (const EngineLayer& layer : plan->layers)
            {
                auto time = times.find(layer.name);
                json.beginArray().value(layer.name).value(layer.type);
                json.value(precisionName(patterns::outputPrecision(layer)));
                time == times.end() ? json.null() : json.value(roundMs(time->second));
                json.endArray();
            }
        }
        json.endArray().endObject();
    };
    side("baseline", baseline, report.baselineInputs, report.baselineMs, report.baselineTotalSource);
    side("candidate", candidate, report.candidateInputs, report.candidateMs, report.candidateTotalSource);
    json.member("delta_ms", roundMs(report.deltaMs)).member("explained_ms", roundMs(report.explainedMs));
    json.member("unexplained_ms", roundMs(report.unexplainedMs)).member("per_layer_times", report.perLayerTimes);

    // A finding often covers several regions: it is listed once, and each region refers to it.
    std::map<std::string, std::size_t> findingIndex;
    std::vector<const Finding*> findings;
    std::vector<std::vector<std::size_t>> findingRegions;
    json.key("regions").beginArray();
    for (std::size_t r = 0; r < report.regions.size(); ++r)
    {
        const DiffRegion& region = report.regions[r];
        json.beginObject();
        writeMs(json, "delta_ms", region.hasTimes ? std::optional<double>(region.deltaMs) : std::nullopt);
        writeMs(json, "baseline_ms", region.hasTimes ? std::optional<double>(region.baselineMs) : std::nullopt);
        writeMs(json, "candidate_ms", region.hasTimes ? std::optional<double>(region.candidateMs) : std::nullopt);
        json.member("explained", region.explained).member("alignment", region.alignment);
        writeIndices(json, "baseline_layers", region.baselineLayers);
        writeIndices(json, "candidate_layers", region.candidateLayers);
        json.member("onnx_nodes", region.onnxNodes).member("differences", region.differences);
        std::vector<std::size_t> refs;
        for (const Finding& finding : region.findings)
        {
            std::string key = finding.rule + '\x1f' + finding.message + '\x1f' + finding.fix;
            auto [it, added] = findingIndex.emplace(key, findings.size());
            if (added)
            {
                findings.push_back(&finding);
                findingRegions.emplace_back();
            }
            if (std::find(refs.begin(), refs.end(), it->second) == refs.end())
            {
                refs.push_back(it->second);
                findingRegions[it->second].push_back(r);
            }
        }
        writeIndices(json, "findings", refs);
        json.endObject();
    }
    json.endArray();
    json.key("findings").beginArray();
    for (std::size_t f = 0; f < findings.size(); ++f)
    {
        const Finding& finding = *findings[f];
        json.beginObject().member("rule", finding.rule).member("severity", severityName(finding.severity));
        json.member("likely", finding.likely).member("message", finding.message).member("fix", finding.fix);
        writeMs(json, "cost_ms", finding.costMs);
        writeIndices(json, "regions", findingRegions[f]);
        json.endObject();
    }
    json.endArray();
    json.member("notes", report.notes);
    std::string pictures;
    std::string svg = inlineSvg(diffSvg);
    if (!svg.empty() && svg.size() <= kHtmlMaxPictureBytes)
    {
        pictures = "<div class=\"picture\" data-diff=\"1\">" + svg + "</div>\n";
    }
    json.member("picture", !pictures.empty()).endObject();
    return page("qdq-doctor diff", data, pictures);
}

} // namespace qdq
