// Reporters for `diagnose`: text for people at a terminal, JSON (schema qdq-doctor.report.v1) for scripts.
#include "qdq/analysis.h"
#include "qdq/patterns.h"
#include "qdq/precision_summary.h"
#include "qdq/root_causes.h"
#include "qdq/text_report.h"

#include "src/reporters/build_mode_json.h"
#include "src/reporters/consistency_report.h"
#include "src/reporters/json_writer.h"
#include "src/reporters/myelin_report.h"
#include "src/reporters/text_layout.h"
#include "src/reporters/trtexec_time.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <span>
#include <sstream>

namespace qdq
{

namespace
{
//! How many entries ahead the report loops ask for the memory they will read.
constexpr std::size_t kAhead = 8;

inline void prefetch(const void* address)
{
    __builtin_prefetch(address);
}

//! precision_summary (precision_summary.h): time and layers by precision and by layer kind, tensor-core share, INT8
//! share of the quantized operations.
void writePrecisionSummary(JsonWriter& json, const PrecisionSummary& summary)
{
    const auto time = [&](double ms) { return summary.hasTimings ? std::optional<double>(roundMs(ms)) : std::nullopt; };
    const auto groups = [&](const std::vector<PrecisionSummary::Group>& list)
    {
        json.beginArray();
        for (const auto& group : list)
        {
            json.beginObject().member("name", group.name).member("layers", std::uint64_t{group.layers});
            json.member("time_ms", time(group.ms)).endObject();
        }
        json.endArray();
    };
    json.key("precision_summary").beginObject();
    json.member("layers", std::uint64_t{summary.layers}).member("total_ms", time(summary.totalMs));
    json.key("by_precision");
    groups(summary.byPrecision);
    json.key("by_kind");
    groups(summary.byKind);
    const auto& cores = summary.tensorCores;
    json.key("tensor_cores").beginObject();
    json.member("share", cores.share ? std::optional<double>(roundMs(*cores.share)) : std::nullopt);
    json.member("tensor_core_layers", std::uint64_t{cores.yesLayers});
    json.member("cuda_core_layers", std::uint64_t{cores.noLayers});
    json.member("unknown_layers", std::uint64_t{cores.unknownLayers});
    json.member("tensor_core_ms", time(cores.yesMs)).member("cuda_core_ms", time(cores.noMs));
    json.member("unknown_ms", time(cores.unknownMs));
    json.member("matrix_layers", std::uint64_t{cores.matrixLayers});
    json.member("matrix_cuda_core_layers", std::uint64_t{cores.matrixNoLayers});
    json.member("evidence", cores.evidence).endObject();
    const auto& int8 = summary.int8;
    json.key("int8").beginObject();
    json.member("basis", int8.basis).member("quantized", std::uint64_t{int8.quantized});
    json.member("int8", std::uint64_t{int8.int8}).member("not_int8", std::uint64_t{int8.notInt8});
    json.member("unknown", std::uint64_t{int8.unknown});
    json.member("share", int8.share ? std::optional<double>(roundMs(*int8.share)) : std::nullopt);
    json.member("not_int8_names", int8.notInt8Names).endObject();
    json.key("quantized_types").beginArray();
    for (const auto& group : summary.quantizedTypes)
    {
        json.beginObject().member("type", group.name).member("qdq_nodes", std::uint64_t{group.layers}).endObject();
    }
    json.endArray();
    json.member("notes", summary.notes);
    json.endObject();
}

//! schema, inputs, accounting, precision_summary, layers, qdq_nodes: what depends only on the inputs and the
//! correlation.
void writeReportHead(JsonWriter& json, const Report& report, const Inputs& inputs)
{
    json.beginObject();
    json.member("schema", "qdq-doctor.report.v1");
    json.key("inputs").beginArray();
    for (const auto& source : report.inputs)
    {
        json.beginObject().member("kind", inputKindName(source.kind)).member("path", source.path).key("trt_version");
        source.trtVersion ? json.value(*source.trtVersion) : json.null();
        json.endObject();
    }
    json.endArray();
    json.key("build_mode");
    writeBuildModeJson(json, report.buildMode);

    auto layerTotals = report.correlation.layerTotals();
    auto qdqTotals = report.correlation.qdqTotals();
    json.key("accounting").beginObject();
    json.key("layers").beginObject();
    json.member("total", std::uint64_t{layerTotals.total}).member("mapped", std::uint64_t{layerTotals.mapped});
    json.member("inserted_qdq", std::uint64_t{layerTotals.insertedQdq});
    json.member("inserted_reformat", std::uint64_t{layerTotals.insertedReformat});
    json.member("dropped", std::uint64_t{layerTotals.dropped})
        .member("unattributed", std::uint64_t{layerTotals.unattributed});
    json.endObject();
    json.key("qdq_nodes").beginObject();
    json.member("total", std::uint64_t{qdqTotals.total}).member("fused", std::uint64_t{qdqTotals.fused});
    json.member("standalone", std::uint64_t{qdqTotals.standalone}).member("folded", std::uint64_t{qdqTotals.folded});
    json.member("eliminated", std::uint64_t{qdqTotals.eliminated}).member("unknown", std::uint64_t{qdqTotals.unknown});
    json.endObject();
    json.endObject();
    // Depends only on the inputs and the correlation: written with the head, while the rules still run.
    writePrecisionSummary(json, summarizePrecision(report, inputs));
    if (const EnginePlan* plan = inputs.engine())
    {
        writeMyelinRegionsJson(json, report.correlation.myelinRegions, *plan);
    }
    else
    {
        json.key("myelin_regions").beginArray().endArray();
    }

    const EnginePlan* plan = inputs.engine();
    const auto& mappings = report.correlation.layers;
    json.key("layers").beginArray();
    for (std::size_t i = 0; i < mappings.size(); ++i)
    {
        // The names written are scattered over the heap (layer records, model nodes): asking for those of a few
        // entries ahead keeps the writer from waiting on each one.
        if (i + kAhead < mappings.size())
        {
            const LayerMapping& ahead = mappings[i + kAhead];
            prefetch(plan->layers[ahead.layer].name.data());
            prefetch(ahead.onnxNodes.data());
        }
        if (i + kAhead / 2 < mappings.size())
        {
            for (std::string_view name : mappings[i + kAhead / 2].onnxNodes)
            {
                prefetch(name.data());
            }
        }
        const LayerMapping& mapping = mappings[i];
        const EngineLayer& layer = plan->layers[mapping.layer];
        json.beginObject();
        json.member("name", layer.name).member("type", layer.type).member("state", layerStateName(mapping.state));
        json.member("onnx_nodes", mapping.onnxNodes).member("evidence", mappingEvidenceName(mapping.evidence));
        json.member("output_precision", precisionName(patterns::outputPrecision(layer)));
        json.member("time_ms", mapping.timeMs);
        json.endObject();
    }
    json.endArray();

    const auto& qdqNodes = report.correlation.qdqNodes;
    json.key("qdq_nodes").beginArray();
    for (std::size_t i = 0; i < qdqNodes.size(); ++i)
    {
        if (i + kAhead < qdqNodes.size())
        {
            const QdqNodeState& ahead = qdqNodes[i + kAhead];
            prefetch(ahead.node.data());
            if (ahead.layer && plan != nullptr)
            {
                prefetch(&plan->layers[*ahead.layer].name);
            }
        }
        if (i + kAhead / 2 < qdqNodes.size() && qdqNodes[i + kAhead / 2].layer && plan != nullptr)
        {
            prefetch(plan->layers[*qdqNodes[i + kAhead / 2].layer].name.data());
        }
        const QdqNodeState& node = qdqNodes[i];
        json.beginObject();
        json.member("name", node.node).member("op", node.isQuantize ? "QuantizeLinear" : "DequantizeLinear");
        json.member("state", qdqStateName(node.state)).key("layer");
        node.layer&& plan != nullptr ? json.value(plan->layers[*node.layer].name) : json.null();
        json.member("why", node.why);
        json.endObject();
    }
    json.endArray();
}

//! findings, predicted_layers, time_ms, notes.
void writeReportTail(JsonWriter& json, const Report& report, const Inputs& inputs)
{
    json.key("findings").beginArray();
    for (const auto& finding : report.findings)
    {
        json.beginObject();
        json.member("rule", finding.rule).member("severity", severityName(finding.severity));
        json.member("likely", finding.likely).member("message", finding.message);
        json.member("onnx_nodes", finding.onnxNodes).member("engine_layers", finding.engineLayers);
        json.key("evidence").beginArray();
        for (const auto& e : finding.evidence)
        {
            json.beginObject().member("file", e.file).key("line");
            e.line == 0 ? json.null() : json.value(std::uint64_t{e.line});
            json.member("field", e.field).member("text", e.text).endObject();
        }
        json.endArray();
        json.member("fix", finding.fix).member("cost_ms", finding.costMs).member("owned_ms", finding.ownedMs);
        json.member("saving_ms", finding.savingMs).member("saving_basis", finding.savingBasis);
        json.key("root_cause");
        finding.rootCause ? json.value(std::uint64_t{*finding.rootCause}) : json.null();
        json.member("symptom", finding.symptom);
        json.endObject();
    }
    json.endArray();

    json.key("largest_layers").beginArray();
    for (const auto& share : largestLayers(report, inputs, 20))
    {
        json.beginObject().member("name", inputs.engine()->layers[share.layer].name).member("time_ms", share.ms);
        json.member("kind", share.kind).member("precision", share.precision).key("root_cause");
        share.cause ? json.value(std::uint64_t{*share.cause}) : json.null();
        json.endObject();
    }
    json.endArray();

    json.key("root_causes").beginArray();
    for (const auto& cause : report.causes)
    {
        json.beginObject().member("title", cause.title).member("severity", severityName(cause.severity));
        json.member("findings", cause.findings).member("symptoms", cause.symptoms).key("engine_layers").beginArray();
        const EnginePlan* plan = inputs.engine();
        for (std::size_t layer : cause.layers)
        {
            if (plan != nullptr && layer < plan->layers.size())
            {
                json.value(plan->layers[layer].name);
            }
        }
        json.endArray();
        json.member("involved_ms", cause.involvedMs).member("saving_ms", cause.savingMs);
        json.member("confidence", savingConfidenceName(cause.confidence)).member("basis", cause.basis);
        json.endObject();
    }
    json.endArray();

    json.key("predicted_layers").beginArray();
    for (const auto& predicted : report.prediction.layers)
    {
        json.beginObject().member("name", predicted.name).member("kind", predicted.kind);
        json.member("role", predicted.role).member("onnx_nodes", predicted.onnxNodes);
        json.member("input_precision", predicted.inputPrecision).member("output_precision", predicted.outputPrecision);
        json.member("int8_input", predicted.int8Input).member("int8_output", predicted.int8Output);
        if (!predicted.guess.empty())
        {
            json.member("guess", predicted.guess);
        }
        json.endObject();
    }
    json.endArray();

    if (report.predictionCheck)
    {
        const PredictionCheck& check = *report.predictionCheck;
        json.key("prediction_check").beginObject();
        json.member("real_layers", static_cast<std::uint64_t>(check.realLayers));
        json.member("predicted_layers", static_cast<std::uint64_t>(check.predictedLayers));
        json.member("exact", static_cast<std::uint64_t>(check.exact));
        json.member("real_standalone_qdq", static_cast<std::uint64_t>(check.realStandaloneQdq));
        json.member("predicted_standalone_qdq", static_cast<std::uint64_t>(check.predictedStandaloneQdq));
        json.member("disagreements", check.disagreements);
        json.endObject();
    }

    json.key("time_ms");
    if (report.hasTimings)
    {
        json.beginObject()
            .member("total", roundMs(report.totalMs))
            .member("standalone_qdq", roundMs(report.standaloneQdqMs));
        json.member("reformat", roundMs(report.reformatMs)).endObject();
    }
    else
    {
        json.null();
    }
    writeTrtexecTimeJson(json, report, inputs);
    writeConsistencyJson(json, report.consistency, false);
    json.member("notes", report.notes);
    json.endObject();
}

void writeReport(JsonWriter& json, const Report& report, const Inputs& inputs)
{
    writeReportHead(json, report, inputs);
    writeReportTail(json, report, inputs);
}
} // namespace

std::string renderReportJson(const Report& report, const Inputs& inputs)
{
    std::string out;
    JsonWriter json(out);
    writeReport(json, report, inputs);
    return out;
}

void writeReportJson(const Report& report, const Inputs& inputs, const std::function<void(std::string_view)>& write)
{
    std::string buffer;
    JsonWriter json(buffer, [&](const std::string& text) { write(text); });
    writeReport(json, report, inputs);
}

struct ReportJsonStream::State
{
    explicit State(std::function<void(std::string_view)> writer)
        : write(std::move(writer)), json(buffer, [this](const std::string& text) { write(text); })
    {
    }
    std::function<void(std::string_view)> write;
    std::string buffer;
    JsonWriter json;
};

ReportJsonStream::ReportJsonStream(std::function<void(std::string_view)> write)
    : mState(std::make_unique<State>(std::move(write)))
{
}

ReportJsonStream::~ReportJsonStream() = default;

void ReportJsonStream::head(const Report& report, const Inputs& inputs)
{
    writeReportHead(mState->json, report, inputs);
}

void ReportJsonStream::tail(const Report& report, const Inputs& inputs)
{
    writeReportTail(mState->json, report, inputs);
}

namespace
{

std::string percent(double share)
{
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.1f%%", 100.0 * share);
    return buffer;
}

//! "INT8 1.234 ms (20 layers, 61.0%), FP16 ..." for the first groups of a grouping.
std::string groupLine(const PrecisionSummary& summary, const std::vector<PrecisionSummary::Group>& groups,
                      std::size_t kShown)
{
    std::string line;
    for (std::size_t i = 0; i < groups.size() && i < kShown; ++i)
    {
        const auto& group = groups[i];
        line += (i == 0 ? "" : ", ") + printable(group.name, 128) + " ";
        if (summary.hasTimings)
        {
            line += patterns::formatMs(group.ms) + " (" + std::to_string(group.layers) + " layer" +
                    (group.layers == 1 ? "" : "s") +
                    (summary.totalMs > 0.0 ? ", " + percent(group.ms / summary.totalMs) : "") + ")";
        }
        else
        {
            line += std::to_string(group.layers) + " layer" + (group.layers == 1 ? "" : "s");
        }
    }
    if (groups.size() > kShown)
    {
        double rest = 0.0;
        for (std::size_t i = kShown; i < groups.size(); ++i)
        {
            rest += groups[i].ms;
        }
        line += ", " + std::to_string(groups.size() - kShown) + " more" +
                (summary.hasTimings ? " (" + patterns::formatMs(rest) + ")" : std::string());
    }
    return line;
}

//! The summary's lines of the text report: time by precision and by kind, tensor cores, INT8 share.
void writePrecisionSummaryText(std::ostream& out, const PrecisionSummary& summary, bool details)
{
    const std::size_t shown = details ? 8 : 4;
    if (!summary.quantizedTypes.empty())
    {
        out << "Quantized:     ";
        for (std::size_t i = 0; i < summary.quantizedTypes.size(); ++i)
        {
            out << (i == 0 ? "" : ", ") << summary.quantizedTypes[i].name << " (" << summary.quantizedTypes[i].layers
                << " Q/DQ nodes)";
        }
        out << "\n";
    }
    if (summary.layers == 0 && !summary.hasTimings)
    {
        return;
    }
    out << "Precision:     " << groupLine(summary, summary.byPrecision, shown) << "\n";
    if (details)
    {
        out << "Layer kinds:   " << groupLine(summary, summary.byKind, shown) << "\n";
    }
    const auto& cores = summary.tensorCores;
    out << "Tensor cores:  ";
    if (cores.evidence.rfind("no kernel names", 0) == 0 || cores.evidence.empty())
    {
        out << "unknown: " << (cores.evidence.empty() ? std::string("no layer list") : cores.evidence) << "\n";
    }
    else
    {
        if (cores.share)
        {
            out << percent(*cores.share) << " of the time on tensor cores (" << cores.yesLayers << " layers), ";
        }
        else
        {
            out << cores.yesLayers << " layers on tensor cores, ";
        }
        out << cores.noLayers << " on CUDA cores";
        if (summary.hasTimings)
        {
            out << " (" << patterns::formatMs(cores.noMs) << ")";
        }
        out << ", " << cores.unknownLayers << " unknown; " << cores.matrixNoLayers << " of " << cores.matrixLayers
            << " conv/deconv/gemm layers without; from " << cores.evidence << "\n";
    }
    const auto& int8 = summary.int8;
    if (!int8.basis.empty())
    {
        const std::string label = summary.quantizedLabel + ":";
        out << label << std::string(label.size() < 15 ? 15 - label.size() : 1, ' ') << int8.int8 << " of "
            << int8.quantized << (int8.basis == "model" ? " quantized operations" : " layers with fused Q/DQ")
            << " run in " << summary.quantizedLabel;
        if (int8.share)
        {
            out << " (" << percent(*int8.share) << " of those with known precision)";
        }
        if (int8.notInt8 > 0)
        {
            out << "; " << int8.notInt8
                << " run in float: " << printable(patterns::nameList(int8.notInt8Names, 4), 1024);
        }
        if (int8.unknown > 0)
        {
            out << "; " << int8.unknown << " not found in the engine or without tensor types";
        }
        out << "\n";
    }
}

//! The root causes, by what fixing them saves (src/advice, docs/savings.md), before the findings.
void writeRootCausesText(std::ostream& out, const Report& report, bool details)
{
    if (report.causes.size() < 2 && std::none_of(report.causes.begin(), report.causes.end(),
                                                 [](const RootCause& cause) { return cause.savingMs.has_value(); }))
    {
        return;
    }
    double saved = 0.0;
    for (const auto& cause : report.causes)
    {
        saved += cause.savingMs.value_or(0.0);
    }
    out << "Root causes, by what fixing them saves";
    if (report.hasTimings)
    {
        out << " (" << patterns::formatMs(saved) << " of the engine's " << patterns::formatMs(report.totalMs)
            << " in all; docs/savings.md)";
    }
    out << ":\n";
    // The findings are listed cause by cause: a cause's findings are the numbers of its first and last.
    std::vector<std::pair<std::size_t, std::size_t>> span(report.causes.size(), {SIZE_MAX, 0});
    for (std::size_t f = 0; f < report.findings.size(); ++f)
    {
        if (auto c = report.findings[f].rootCause; c && *c < span.size())
        {
            span[*c].first = std::min(span[*c].first, f + 1);
            span[*c].second = std::max(span[*c].second, f + 1);
        }
    }
    for (std::size_t c = 0; c < report.causes.size(); ++c)
    {
        const RootCause& cause = report.causes[c];
        out << "  " << c + 1 << ". [" << severityName(cause.severity) << "] " << printable(cause.title, 512);
        if (cause.savingMs && *cause.savingMs == 0.0)
        {
            out << "  saves nothing";
        }
        else if (cause.savingMs)
        {
            out << "  saves ~" << patterns::formatMs(*cause.savingMs);
            if (report.totalMs > 0.0)
            {
                out << " (" << percent(*cause.savingMs / report.totalMs) << ")";
            }
            out << ", confidence " << savingConfidenceName(cause.confidence);
        }
        else
        {
            out << "  saving not estimated";
        }
        if (!cause.layers.empty() && report.hasTimings)
        {
            out << "; owns " << patterns::formatMs(cause.involvedMs) << " in " << cause.layers.size()
                << (cause.layers.size() == 1 ? " layer" : " layers");
        }
        if (span[c].first != SIZE_MAX)
        {
            out << "; finding" << (span[c].first == span[c].second ? " " : "s ") << span[c].first;
            if (span[c].second != span[c].first)
            {
                out << "-" << span[c].second;
            }
        }
        out << "\n";
        if (details && cause.savingMs && *cause.savingMs > 0.0 && !cause.basis.empty())
        {
            out << "     how: " << printable(cause.basis, 1024) << "\n";
        }
    }
    out << "\n";
}

//! The largest layers and what owns them: a cost that no Q/DQ finding explains shows here.
//! How many of the largest layers the text shows.
std::size_t largestShown(bool details)
{
    return details ? 8 : 5;
}

void writeLargestLayersText(std::ostream& out, const Report& report, const Inputs& inputs, bool details)
{
    const std::size_t kShown = largestShown(details);
    std::vector<LayerTimeShare> largest = largestLayers(report, inputs, kShown);
    if (largest.empty() || report.totalMs <= 0.0)
    {
        return;
    }
    double shown = 0.0;
    for (const auto& share : largest)
    {
        shown += share.ms;
    }
    out << "Where the time goes (the " << largest.size() << " largest of " << report.correlation.layers.size()
        << " layers, " << percent(shown / report.totalMs) << " of the engine):\n";
    const EnginePlan& plan = *inputs.engine();
    const auto ownerOf = [](const LayerTimeShare& share)
    { return share.cause ? "cause " + std::to_string(*share.cause + 1) : std::string("no finding"); };
    std::size_t ownerWidth = 0;
    for (const auto& share : largest)
    {
        ownerWidth = std::max(ownerWidth, ownerOf(share).size());
    }
    for (const auto& share : largest)
    {
        const std::string owner = ownerOf(share);
        out << "  " << patterns::formatMs(share.ms) << " " << percent(share.ms / report.totalMs) << " " << owner
            << std::string(ownerWidth + 1 - owner.size(), ' ') << printable(share.kind, 64) << " "
            << printable(share.precision, 64) << " \"" << printable(plan.layers[share.layer].name, 160) << "\"\n";
    }
    out << "\n";
}

//! The common start of the file names in files ("resnet-qat.onnx.engine." of "resnet-qat.onnx.engine.graph.json" and
//! "resnet-qat.onnx.engine.profile.json"), cut after a dot; "" when there is none or only one file.
std::string commonFileNameStart(const std::vector<std::string>& names)
{
    if (names.size() < 2)
    {
        return {};
    }
    std::string common = names.front();
    for (const auto& name : names)
    {
        const auto [a, b] = std::mismatch(common.begin(), common.end(), name.begin(), name.end());
        common.erase(a, common.end());
    }
    const std::size_t dot = common.rfind('.');
    return dot == std::string::npos ? std::string() : common.substr(0, dot + 1);
}

//! One folder's inputs on one entry: "in DIR/ (prefix*): graph.json (layer-info), a.json, b.json (metadata)".
void writeFolderInputs(std::ostream& out, const std::string& folder, const std::vector<const Inputs::Source*>& sources,
                       const std::set<std::string>& cited)
{
    std::vector<std::string> names;
    for (const auto* source : sources)
    {
        names.push_back(std::filesystem::path(source->path).filename().string());
    }
    const std::string common = commonFileNameStart(names);
    out << "  in " << printable(folder) << "/" << (common.empty() ? "" : " (" + printable(common) + "*)") << ": ";
    // Files of one kind together: "build.metadata.json, metadata.json (metadata)".
    std::vector<InputKind> kinds;
    for (const auto* source : sources)
    {
        if (std::find(kinds.begin(), kinds.end(), source->kind) == kinds.end())
        {
            kinds.push_back(source->kind);
        }
    }
    std::stable_partition(kinds.begin(), kinds.end(), [](InputKind kind) { return kind != InputKind::kMetadata; });
    for (std::size_t k = 0; k < kinds.size(); ++k)
    {
        out << (k == 0 ? "" : ", ");
        // Metadata files (the engine's version, sizes and build options) that no finding cites: counted.
        const auto ofKind =
            std::count_if(sources.begin(), sources.end(), [&](const auto* source) { return source->kind == kinds[k]; });
        const bool countOnly =
            kinds[k] == InputKind::kMetadata && ofKind > 1 &&
            std::none_of(sources.begin(), sources.end(),
                         [&](const auto* source) { return source->kind == kinds[k] && cited.count(source->path) > 0; });
        if (countOnly)
        {
            out << ofKind << " " << inputKindName(kinds[k]) << " files";
            continue;
        }
        bool first = true;
        for (std::size_t i = 0; i < sources.size(); ++i)
        {
            if (sources[i]->kind != kinds[k])
            {
                continue;
            }
            out << (first ? "" : ", ") << printable(names[i].substr(common.size()))
                << (sources[i]->trtVersion ? " (TensorRT " + printable(*sources[i]->trtVersion) + ")" : "");
            first = false;
        }
        out << " (" << inputKindName(kinds[k]) << ")";
    }
    out << "\n";
}

//! The build mode as the header says it: the GPU's source cut to its file and what in it told (the whole source,
//! with the kernel and layer names, is in the JSON report's build_mode).
std::string headerBuildMode(SimulationOptions mode)
{
    if (mode.gpu && mode.gpu->source.size() > 60)
    {
        std::string& source = mode.gpu->source;
        const std::size_t open = source.find(" (");
        if (open != std::string::npos)
        {
            const std::size_t word = source.find_first_of(" )", open + 2);
            source = source.substr(0, open) + " (" + source.substr(open + 2, word - open - 2) + ")";
        }
    }
    // "assumed: no build log tells it; pass --strongly-typed, ..." -> "assumed: no build log tells it" (the
    // JSON's build_mode.typing_source and --details keep the whole source).
    if (const std::size_t semicolon = mode.typingSource.find("; "); semicolon != std::string::npos)
    {
        mode.typingSource.erase(semicolon);
    }
    return describeBuildMode(mode);
}

//! The report's first lines: what it read, the build mode it assumed, where its words are explained.
void writeHeaderText(std::ostream& out, const Report& report, bool details)
{
    out << "qdq-doctor diagnose\n";
    // Inputs of one folder on one entry.
    std::set<std::string> cited;
    for (const auto& finding : report.findings)
    {
        for (const auto& evidence : finding.evidence)
        {
            cited.insert(evidence.file);
        }
    }
    std::map<std::string, std::vector<const Inputs::Source*>> byFolder;
    std::vector<std::string> folders;
    for (const auto& source : report.inputs)
    {
        const std::string folder = std::filesystem::path(source.path).parent_path().string();
        auto [it, added] = byFolder.try_emplace(folder);
        if (added)
        {
            folders.push_back(folder);
        }
        it->second.push_back(&source);
    }
    for (const auto& folder : folders)
    {
        const auto& sources = byFolder[folder];
        if (sources.size() > 1 && !folder.empty())
        {
            writeFolderInputs(out, folder, sources, cited);
            continue;
        }
        const Inputs::Source& source = *sources.front();
        out << "  " << inputKindName(source.kind) << ": " << printable(source.path)
            << (source.trtVersion ? " (TensorRT " + printable(*source.trtVersion) + ")" : "") << "\n";
    }
    out << "  build mode: "
        << printable(details ? describeBuildMode(report.buildMode) : headerBuildMode(report.buildMode), 2000) << "\n";
    out << "  terms: docs/terms.md; each finding's rule: docs/rules/<rule>.md"
        << (details ? "" : "; every finding in full: --details") << "\n";
    out << "\n";
    if (report.findings.empty())
    {
        out << "No findings.\n\n";
    }
}

//! How the text names an input file in evidence: its file name, less the start the header shows once for its folder
//! ("graph.json" of "in DIR/ (resnet-qat.onnx.engine.*): graph.json"), when no other input is named so; else its file
//! name when that is unique; else its path.
class FileNames
{
public:
    explicit FileNames(const Report& report)
    {
        std::map<std::string, std::vector<std::string>> namesByFolder;
        for (const auto& source : report.inputs)
        {
            const std::filesystem::path path(source.path);
            ++countByName_[path.filename().string()];
            namesByFolder[path.parent_path().string()].push_back(path.filename().string());
        }
        for (const auto& [folder, names] : namesByFolder)
        {
            commonByFolder_[folder] = folder.empty() ? std::string() : commonFileNameStart(names);
        }
        for (const auto& source : report.inputs)
        {
            ++countByShortName_[shortName(source.path)];
        }
    }
    std::string shown(const std::string& path) const
    {
        const std::string name = std::filesystem::path(path).filename().string();
        const std::string brief = shortName(path);
        if (const auto it = countByShortName_.find(brief);
            it != countByShortName_.end() && it->second == 1 && countByName_.count(name) > 0)
        {
            return brief;
        }
        const auto it = countByName_.find(name);
        return it != countByName_.end() && it->second == 1 ? name : path;
    }

private:
    std::string shortName(const std::string& path) const
    {
        const std::filesystem::path p(path);
        const std::string name = p.filename().string();
        const auto it = commonByFolder_.find(p.parent_path().string());
        return it == commonByFolder_.end() || it->second.empty() || it->second.size() >= name.size()
                   ? name
                   : name.substr(it->second.size());
    }

    std::map<std::string, std::size_t> countByName_;
    std::map<std::string, std::size_t> countByShortName_;
    std::map<std::string, std::string> commonByFolder_;
};

//! One evidence line: "file:line field: text".
std::string evidenceText(const Evidence& evidence, const FileNames& files)
{
    std::string line = printable(files.shown(evidence.file), 512);
    if (evidence.line > 0)
    {
        line += ":" + std::to_string(evidence.line);
    }
    if (!evidence.field.empty())
    {
        line += " " + printable(evidence.field, 512);
    }
    if (!evidence.text.empty())
    {
        line += ": " + printable(evidence.text, 512);
    }
    return line;
}

//! "file:12, :40, other:7": where a finding's evidence is, without its text.
std::string evidencePlaces(std::span<const Evidence> evidence, const FileNames& files, std::size_t most = SIZE_MAX)
{
    std::vector<const Evidence*> distinct; // one place cited twice (two fields of one layer) is named once
    std::set<std::pair<std::string, std::size_t>> seen;
    for (const auto& item : evidence)
    {
        if (seen.emplace(item.file, item.line).second)
        {
            distinct.push_back(&item);
        }
    }
    std::string places;
    std::string lastFile;
    for (std::size_t i = 0; i < distinct.size() && i < most; ++i)
    {
        const std::string file = printable(files.shown(distinct[i]->file), 512);
        places += places.empty() ? "" : ", ";
        places += file == lastFile ? "" : file;
        places += distinct[i]->line > 0 ? ":" + std::to_string(distinct[i]->line) : "";
        lastFile = file;
    }
    if (distinct.size() > most)
    {
        places += " and " + std::to_string(distinct.size() - most) + " more";
    }
    return places;
}

//! How many places of a finding's evidence the compact text names (--details: all).
constexpr std::size_t kCompactPlaces = 6;

//! A finding's evidence: the first in full, the others by where they are (the JSON and HTML reports have their text).
void writeEvidenceText(std::ostream& out, const std::vector<Evidence>& evidence, const FileNames& files, bool details)
{
    if (evidence.empty())
    {
        return;
    }
    if (!details)
    {
        out << "   evidence: " << evidencePlaces(evidence, files, kCompactPlaces) << "\n";
        return;
    }
    out << "   evidence: " << evidenceText(evidence.front(), files);
    if (evidence.size() > 1)
    {
        out << "; also " << evidencePlaces(std::span(evidence).subspan(1), files);
    }
    out << "\n";
}

//! The fix line; a symptom's fix is its cause's, so only the cause is named.
void writeFixText(std::ostream& out, const Finding& finding)
{
    if (finding.symptom && finding.rootCause && finding.fix.starts_with("an effect of "))
    {
        out << "   fix: with cause " << *finding.rootCause + 1 << ", not a change of its own\n";
        return;
    }
    out << "   fix: " << printable(finding.fix, 4096) << "\n";
}

//! ", owns X" beside a cost when the root-cause step gave the finding other layers than its rule timed (its
//! symptoms' layers, or fewer where another cause owns some): the owned time is what its saving is a part of.
std::string ownedText(std::optional<double> costMs, std::optional<double> ownedMs, bool symptom = false)
{
    // A symptom whose layers its cause owns says so by its cause label; "owns 0.000 ms" would only add a line.
    if (!costMs || !ownedMs || patterns::formatMs(*costMs) == patterns::formatMs(*ownedMs) ||
        (symptom && *ownedMs == 0.0))
    {
        return "";
    }
    return ", owns " + patterns::formatMs(*ownedMs);
}

//! compact: one figure where cost and owned time differ, the owned one (the saving is a part of it), for the
//! items of a grouped finding, printed two to a line.
std::string costAndSaving(const Finding& finding, bool compact = false)
{
    std::string text;
    const std::string owned = ownedText(finding.costMs, finding.ownedMs, finding.symptom);
    if (finding.costMs && compact && !owned.empty())
    {
        text += "  owns " + patterns::formatMs(*finding.ownedMs);
    }
    else if (finding.costMs)
    {
        text += "  cost " + patterns::formatMs(*finding.costMs) + owned;
    }
    if (finding.savingMs && !finding.symptom && (*finding.savingMs > 0.0 || finding.severity != Severity::kInfo))
    {
        text += "  saves ~" + patterns::formatMs(*finding.savingMs);
    }
    return text;
}

std::string causeLabel(const Report& report, const Finding& finding)
{
    if (!finding.rootCause || report.causes.size() < 2)
    {
        return "";
    }
    return std::string("  (") + (finding.symptom ? "symptom of " : "") + "cause " +
           std::to_string(*finding.rootCause + 1) + ")";
}

//! Whether every ONNX node of the finding is named in its engine layers' names (a fused layer "a + b + c").
bool engineLayersNameTheNodes(const Finding& finding)
{
    if (finding.engineLayers.empty() || finding.engineLayers.size() > 4)
    {
        return false;
    }
    return std::all_of(finding.onnxNodes.begin(), finding.onnxNodes.end(),
                       [&](const std::string& node)
                       {
                           return std::any_of(finding.engineLayers.begin(), finding.engineLayers.end(),
                                              [&](const std::string& layer)
                                              { return layer.find(node) != std::string::npos; });
                       });
}

//! Whether the finding's message already names the first of these (up to two): the text then lists them once.
bool namesInMessage(const Finding& finding, const std::vector<std::string>& names)
{
    const std::size_t checked = std::min<std::size_t>(names.size(), 2);
    for (std::size_t i = 0; i < checked; ++i)
    {
        if (finding.message.find(names[i]) == std::string::npos)
        {
            return false;
        }
    }
    return true;
}

//! An info finding, or a symptom its cause's fix removes: its header, message, where its evidence is and (unless its
//! cause's fix removes it) its fix; the JSON and HTML reports have the rest.
void writeBriefFindingText(std::ostream& out, const Report& report, const Finding& finding, std::size_t number,
                           const FileNames& files)
{
    out << number << ". [" << severityName(finding.severity) << "] " << finding.rule << costAndSaving(finding)
        << causeLabel(report, finding) << "\n";
    out << "   " << printable(finding.message, 8192) << "\n";
    if (!finding.evidence.empty())
    {
        out << "   evidence: " << evidencePlaces(finding.evidence, files) << "\n";
    }
    if (!finding.symptom)
    {
        out << "   fix: " << printable(finding.fix, 4096) << "\n";
    }
}

//! A symptom on one line: its rule, numbers and cause, what it is about and where its evidence is (its cause's
//! findings explain it; --details and the JSON and HTML reports have its message).
void writeSymptomLine(std::ostream& out, const Report& report, const Finding& finding, std::size_t number,
                      const FileNames& files)
{
    out << number << ". [" << severityName(finding.severity) << "] " << finding.rule << costAndSaving(finding)
        << causeLabel(report, finding) << ": ";
    if (!finding.engineLayers.empty())
    {
        out << "\"" << printable(finding.engineLayers.front(), 512) << "\""
            << (finding.engineLayers.size() > 1 ? " and " + std::to_string(finding.engineLayers.size() - 1) + " more"
                                                : "");
    }
    else if (!finding.onnxNodes.empty())
    {
        out << printable(patterns::nameList(finding.onnxNodes, 2), 512);
    }
    if (!finding.evidence.empty())
    {
        out << "; " << evidencePlaces(finding.evidence, files);
    }
    out << "\n";
}

//! Whether the compact text gives the finding one line: a symptom of a cause the report lists, or an info finding
//! with nothing to do.
bool oneLine(const Report& report, const Finding& finding)
{
    const bool listedCause = finding.rootCause && report.causes.size() >= 2;
    return listedCause &&
           (finding.symptom || (finding.severity == Severity::kInfo && finding.fix.starts_with("nothing")));
}

void writeFindingText(std::ostream& out, const Report& report, const Finding& finding, std::size_t number,
                      const FileNames& files, bool details)
{
    if (!details && oneLine(report, finding))
    {
        writeSymptomLine(out, report, finding, number, files);
        return;
    }
    if (finding.symptom || finding.severity == Severity::kInfo)
    {
        writeBriefFindingText(out, report, finding, number, files);
        return;
    }
    out << number << ". [" << severityName(finding.severity) << "] " << finding.rule << costAndSaving(finding)
        << causeLabel(report, finding) << "\n";
    out << "   " << printable(finding.message, 8192) << "\n";
    if (!finding.onnxNodes.empty() && !engineLayersNameTheNodes(finding) && !namesInMessage(finding, finding.onnxNodes))
    {
        out << "   ONNX nodes: " << printable(patterns::nameList(finding.onnxNodes, 6), 2048) << "\n";
    }
    if (!finding.engineLayers.empty() && !namesInMessage(finding, finding.engineLayers))
    {
        out << "   engine layers: " << printable(patterns::nameList(finding.engineLayers, 4), 2048) << "\n";
    }
    writeEvidenceText(out, finding.evidence, files, details);
    writeFixText(out, finding);
}

//! Whether two findings are alike enough to be listed together: the same rule, severity and cause.
bool alike(const Finding& a, const Finding& b)
{
    return a.rule == b.rule && a.severity == b.severity && a.rootCause == b.rootCause && a.symptom == b.symptom;
}

//! Findings [first, first + count) of one rule, as one entry: the first one's message and fix, then a line for each
//! finding with the node it is about, its numbers and where its evidence is.
void writeFindingGroupText(std::ostream& out, const Report& report, std::size_t first, std::size_t count,
                           const FileNames& files, bool details)
{
    const Finding& lead = report.findings[first];
    double cost = 0.0, saving = 0.0, owned = 0.0;
    bool anyCost = false, anySaving = false, anyOwned = false;
    for (std::size_t f = first; f < first + count; ++f)
    {
        const Finding& finding = report.findings[f];
        cost += finding.costMs.value_or(0.0);
        anyCost = anyCost || finding.costMs.has_value();
        owned += finding.ownedMs.value_or(0.0);
        anyOwned = anyOwned || finding.ownedMs.has_value();
        saving += finding.savingMs.value_or(0.0);
        anySaving = anySaving || finding.savingMs.has_value();
    }
    out << first + 1 << "-" << first + count << ". [" << severityName(lead.severity) << "] " << lead.rule << ", "
        << count << " findings";
    if (anyCost)
    {
        // One figure in the header (a second wraps it at 100 columns): the owned time where it differs.
        const std::string ownedPart = ownedText(cost, anyOwned ? std::optional<double>(owned) : std::nullopt);
        out << (ownedPart.empty() ? "  cost " + patterns::formatMs(cost) : "  owns " + patterns::formatMs(owned));
    }
    if (anySaving && !lead.symptom && (saving > 0.0 || lead.severity != Severity::kInfo))
    {
        out << "  saves ~" << patterns::formatMs(saving);
    }
    out << causeLabel(report, lead) << "\n";
    out << "   " << first + 1 << ". " << printable(lead.message, 8192) << "\n";
    std::vector<std::string> items;
    for (std::size_t f = first; f < first + count; ++f)
    {
        const Finding& finding = report.findings[f];
        const std::string subject = !finding.onnxNodes.empty()      ? finding.onnxNodes.front()
                                    : !finding.engineLayers.empty() ? finding.engineLayers.front()
                                                                    : std::string("(no node)");
        items.push_back("- " + std::to_string(f + 1) + ". " + printable(subject, 160) + costAndSaving(finding, true));
    }
    // Short items two to a line in the compact text (each 46 columns at most, so a pair fits 100).
    constexpr std::size_t kPairable = 46;
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        out << "   " << items[i];
        if (!details && i + 1 < items.size() && items[i].size() <= kPairable && items[i + 1].size() <= kPairable)
        {
            out << std::string(kPairable + 2 - items[i].size(), ' ') << items[i + 1];
            ++i;
        }
        out << "\n";
    }
    std::vector<Evidence> evidence;
    for (std::size_t f = first; f < first + count; ++f)
    {
        evidence.insert(evidence.end(), report.findings[f].evidence.begin(), report.findings[f].evidence.end());
    }
    if (!evidence.empty())
    {
        out << "   evidence: " << evidencePlaces(evidence, files, details ? SIZE_MAX : kCompactPlaces) << "\n";
    }
    if (!lead.symptom || !lead.fix.starts_with("an effect of "))
    {
        out << "   fix: " << printable(lead.fix, 4096) << " (the same edit for each finding above, on its own node)\n";
    }
    else
    {
        writeFixText(out, lead);
    }
}

void writeFindingsText(std::ostream& out, const Report& report, bool details)
{
    const FileNames files(report);
    // A blank line before each entry but a one-line one: a symptom's line follows its cause's finding directly.
    bool firstEntry = true;
    for (std::size_t first = 0; first < report.findings.size();)
    {
        std::size_t count = 1;
        while (first + count < report.findings.size() && alike(report.findings[first], report.findings[first + count]))
        {
            ++count;
        }
        // Three or more findings of one rule in a row share an entry; two are listed as they are. --details lists
        // each finding in full.
        const std::size_t kGroupFrom = details ? SIZE_MAX : 3;
        for (std::size_t f = first; f < first + (count < kGroupFrom ? count : 1); ++f)
        {
            const bool single = !details && count < kGroupFrom && oneLine(report, report.findings[f]);
            if (!firstEntry && !single)
            {
                out << "\n";
            }
            firstEntry = false;
            if (count < kGroupFrom)
            {
                writeFindingText(out, report, report.findings[f], f + 1, files, details);
            }
            else
            {
                writeFindingGroupText(out, report, first, count, files, details);
            }
        }
        first += count;
    }
    if (!firstEntry)
    {
        out << "\n";
    }
}

//! The accounting: every engine layer and every Q/DQ node in exactly one state (docs/terms.md).
void writeAccountingText(std::ostream& out, const Report& report, const Inputs& inputs)
{
    auto layers = report.correlation.layerTotals();
    auto qdq = report.correlation.qdqTotals();
    if (inputs.engine() != nullptr)
    {
        out << "Engine layers: " << layers.total << " = " << layers.mapped << " mapped + " << layers.insertedQdq
            << " standalone Q/DQ + " << layers.insertedReformat << " reformat + " << layers.dropped << " dropped + "
            << layers.unattributed << " unattributed\n";
    }
    out << "Q/DQ nodes:    " << qdq.total << " = " << qdq.fused << " fused + " << qdq.standalone << " standalone + "
        << qdq.folded << " folded + " << qdq.eliminated << " eliminated + " << qdq.unknown << " unknown\n";
    // Two measurements of one engine that need not agree: the per-layer profile sum (a profiler "may affect execution
    // time negatively", IProfiler in the TensorRT 8.6.1 API) and trtexec's end-to-end GPU compute time; each says
    // its file (docs/report-schema.md, trtexec_time).
    const FileNames files(report);
    const std::string trtexec = trtexecTimeText(report, [&](const std::string& path) { return files.shown(path); });
    const Profile* profile = inputs.timings();
    if (report.hasTimings)
    {
        out << "Time:          " << patterns::formatMs(report.totalMs) << " total (the per-layer profile's sum";
        if (profile != nullptr && !profile->sourcePath.empty())
        {
            out << ", " << files.shown(profile->sourcePath);
        }
        out << (trtexec.empty() ? "" : "; " + trtexec) << "); " << patterns::formatMs(report.standaloneQdqMs)
            << " standalone Q/DQ, " << patterns::formatMs(report.reformatMs) << " reformats\n";
    }
    else if (!trtexec.empty())
    {
        out << "Time:          " << trtexec << " (no per-layer profile)\n";
    }
}

void writePredictionCheckText(std::ostream& out, const Report& report)
{
    if (!report.predictionCheck)
    {
        return;
    }
    const PredictionCheck& check = *report.predictionCheck;
    out << "Simulator:     " << check.exact << " of " << check.realLayers
        << " engine layers executing ONNX nodes predicted exactly (" << check.predictedLayers
        << " predicted); standalone Q/DQ layers " << check.realStandaloneQdq << " real, "
        << check.predictedStandaloneQdq << " predicted\n";
    const std::size_t shown = std::min<std::size_t>(check.disagreements.size(), 5);
    for (std::size_t i = 0; i < shown; ++i)
    {
        out << "  - " << printable(check.disagreements[i], 1024) << "\n";
    }
    if (check.disagreements.size() > shown)
    {
        out << "  - ... " << check.disagreements.size() - shown << " more (see --format json)\n";
    }
}

void writeNotesText(std::ostream& out, const Report& report)
{
    if (report.notes.empty())
    {
        return;
    }
    out << "\nNotes:\n";
    for (const auto& note : text_layout::foldNotCheckedNotes(report.notes))
    {
        // "read folder DIR: a (kind), b (kind); skipped c": the header lists what was read, the note what was not.
        if (note.starts_with("read folder "))
        {
            const std::size_t skipped = note.find("; skipped ");
            if (skipped != std::string::npos)
            {
                out << "  - " << printable(note.substr(0, note.find(": ")) + note.substr(skipped), 2048) << "\n";
            }
            continue;
        }
        out << "  - " << printable(note, 2048) << "\n";
    }
}

//! After the header, which gives every input's path, an input is named by its file name where that is unique.
void shortenInputPaths(std::string& text, std::size_t from, const Report& report)
{
    const FileNames files(report);
    for (const auto& source : report.inputs)
    {
        const std::string shown = files.shown(source.path);
        if (shown == source.path || source.path.empty())
        {
            continue;
        }
        for (std::size_t at = text.find(source.path, from); at != std::string::npos;
             at = text.find(source.path, at + shown.size()))
        {
            text.replace(at, source.path.size(), shown);
        }
    }
}

//! The engine layer names the report prints most: those its findings and its largest layers name.
std::vector<std::string_view> namesToShorten(const Report& report, const Inputs& inputs, bool details)
{
    std::vector<std::string_view> names;
    for (const auto& finding : report.findings)
    {
        names.insert(names.end(), finding.engineLayers.begin(), finding.engineLayers.end());
    }
    if (const EnginePlan* plan = inputs.engine())
    {
        for (const auto& share : largestLayers(report, inputs, largestShown(details)))
        {
            names.push_back(plan->layers[share.layer].name);
        }
    }
    return names;
}

} // namespace

std::string renderReportText(const Report& report, const Inputs& inputs, std::size_t width)
{
    return renderReportText(report, inputs, TextReportOptions{width, false});
}

std::string renderReportText(const Report& report, const Inputs& inputs, const TextReportOptions& options)
{
    std::ostringstream out;
    writeHeaderText(out, report, options.details);
    // After the inputs' lines, which give every input's path, an input is named by its file name.
    const std::size_t headerEnd = out.str().find("  build mode: ");
    writeRootCausesText(out, report, options.details);
    writeLargestLayersText(out, report, inputs, options.details);
    writeFindingsText(out, report, options.details);
    writeAccountingText(out, report, inputs);
    writePrecisionSummaryText(out, summarizePrecision(report, inputs), options.details);
    if (const EnginePlan* plan = inputs.engine())
    {
        writeMyelinRegionsText(out, report.correlation.myelinRegions, *plan);
    }
    writePredictionCheckText(out, report);
    if (options.details || !report.consistency.contradictions.empty())
    {
        // The compact text keeps to its length: a clean check is said in --details and the JSON only.
        out << "\n" << consistencyText(report.consistency, false);
    }
    writeNotesText(out, report);
    std::string text = out.str();
    shortenInputPaths(text, headerEnd, report);
    return text_layout::wrapLines(text_layout::shortenRepeatedNames(std::move(text),
                                                                    namesToShorten(report, inputs, options.details),
                                                                    options.details),
                                  options.width);
}

std::string renderReportText(const Report& report, const Inputs& inputs)
{
    return renderReportText(report, inputs, text_layout::kDefaultWidth);
}

} // namespace qdq
