#include "qdq/inspect.h"
#include "qdq/quantized_types.h"

#include "qdq/log_graph.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace qdq
{

namespace
{

std::string layerFormName(LayerListForm form)
{
    switch (form)
    {
    case LayerListForm::kNamesOnly:
        return "names-only";
    case LayerListForm::kDetailed:
        return "detailed";
    case LayerListForm::kLogLine:
        return "log-lines";
    case LayerListForm::kUnknown:
        break;
    }
    return "unknown";
}

void summarizePlan(const EnginePlan& plan, FileSummary& summary)
{
    summary.layers = plan.layers.size();
    summary.form = layerFormName(plan.form);
    for (const auto& layer : plan.layers)
    {
        summary.layersByType[layer.type.empty() ? "(unknown)" : layer.type]++;
        Precision precision = layer.outputs.empty() ? Precision::kUnknown : layer.outputs.front().precision;
        summary.layersByPrecision[std::string(precisionName(precision))]++;
        if (layer.origin == "QDQ")
        {
            summary.qdqOriginLayers++;
        }
    }
    for (const auto& warning : plan.warnings)
    {
        summary.warnings.push_back(warning.describe());
    }
}

std::string formatMs(double value)
{
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.6f", value);
    return buffer;
}

} // namespace

FileSummary inspectFile(const std::string& path, const InspectOptions& options)
{
    FileSummary summary;
    summary.path = path;
    summary.kind = detectInputKind(path);
    switch (summary.kind)
    {
    case InputKind::kOnnx:
    {
        OnnxGraph graph = readOnnx(path, OnnxReadOptions{}, options.limits);
        summary.qdqNodes = graph.quantizeCount() + graph.dequantizeCount();
        summary.facts.emplace_back("nodes", std::to_string(graph.nodes.size()));
        summary.facts.emplace_back("quantize_nodes", std::to_string(graph.quantizeCount()));
        summary.facts.emplace_back("dequantize_nodes", std::to_string(graph.dequantizeCount()));
        summary.facts.emplace_back("initializers", std::to_string(graph.constants.size()));
        std::string types; // the Q/DQ nodes by quantized type (qdq/quantized_types.h): "FP8 12, INT4 4"
        for (const QuantizedTypeCount& count : countQuantizedTypes(graph))
        {
            types += (types.empty() ? "" : ", ") + std::string(quantizedTypeLabel(count.type)) + " " +
                     std::to_string(count.nodes);
        }
        if (!types.empty())
        {
            summary.facts.emplace_back("quantized_types", types);
        }
        std::string opsets;
        for (const auto& [domain, version] : graph.opsets)
        {
            opsets += (opsets.empty() ? "" : ",") + (domain.empty() ? std::string("ai.onnx") : domain) + ":" +
                      std::to_string(version);
        }
        summary.facts.emplace_back("opset", opsets);
        summary.facts.emplace_back("producer", graph.producerName);
        summary.facts.emplace_back("external_data_missing", graph.externalDataMissing ? "yes" : "no");
        std::map<std::string, std::size_t> ops;
        for (const auto& node : graph.nodes)
        {
            ops[node.domain.empty() || node.domain == "ai.onnx" ? node.opType : node.domain + "::" + node.opType]++;
        }
        for (const auto& [op, count] : ops)
        {
            summary.layersByType[op] = count; // for ONNX the histogram is by operator
        }
        for (const auto& warning : graph.warnings)
        {
            summary.warnings.push_back(warning.describe());
        }
        break;
    }
    case InputKind::kLayerInfo:
    {
        EnginePlan plan = readLayerInfo(path, options.limits);
        summarizePlan(plan, summary);
        summary.facts.emplace_back("bindings", std::to_string(plan.bindings.size()));
        break;
    }
    case InputKind::kProfile:
    {
        Profile profile = readProfile(path, options.limits);
        summary.layers = profile.entries.size();
        summary.timeMs = profile.totalAverageMs();
        if (profile.iterations)
        {
            summary.facts.emplace_back("iterations", std::to_string(*profile.iterations));
        }
        summary.facts.emplace_back("median", profile.hasMedian ? "yes" : "no");
        for (const auto& warning : profile.warnings)
        {
            summary.warnings.push_back(warning.describe());
        }
        break;
    }
    case InputKind::kBuildLog:
    {
        BuildLog log = readBuildLog(path, options.progress, options.limits);
        summary.trtVersion = log.trtVersion;
        if (log.hasEngineBlock)
        {
            summarizePlan(log.engine, summary);
        }
        else
        {
            summary.form = "no engine layer list";
        }
        if (log.hasProfileTable)
        {
            if (!log.hasEngineBlock)
            {
                summary.layers = log.profile.entries.size(); // the --dumpProfile table lists the layers
            }
            summary.timeMs = log.profile.totalAverageMs();
            summary.facts.emplace_back("profile_entries", std::to_string(log.profile.entries.size()));
        }
        summary.facts.emplace_back("lines", std::to_string(log.lineCount));
        summary.facts.emplace_back("parsed_onnx_nodes", std::to_string(log.parsedNodes.size()));
        summary.facts.emplace_back("registered_layers", std::to_string(log.registeredLayers.size()));
        summary.facts.emplace_back("optimizer_events", std::to_string(log.events.size()));
        summary.facts.emplace_back("tactic_choices", std::to_string(log.tactics.size()));
        summary.facts.emplace_back("errors", std::to_string(log.errors.size()));
        summary.facts.emplace_back("tactic_skips", std::to_string(log.tacticSkips.size()));
        summary.facts.emplace_back("build", log.passedLine != 0 ? "passed (line " + std::to_string(log.passedLine) + ")"
                                            : log.hasEngineBlock ? "engine layers listed"
                                            : log.errors.empty() ? "no outcome in the log"
                                                                 : "failed (errors, no engine)");
        summary.facts.emplace_back("trt_warnings", std::to_string(log.warningsInLog.size()));
        std::string mode = log.explicitPrecisionMarker ? "explicit (Q/DQ)"
                           : log.implicitInt8Marker    ? "implicit INT8"
                                                       : "";
        if (!mode.empty())
        {
            summary.facts.emplace_back("quantization", mode);
        }
        for (const auto& [key, value] : log.deviceInfo)
        {
            if (key == "Selected Device" || key == "Compute Capability")
            {
                summary.facts.emplace_back(key == "Selected Device" ? "device" : "compute_capability", value);
            }
        }
        for (const auto& warning : log.warnings)
        {
            summary.warnings.push_back(warning.describe());
        }
        std::optional<OnnxGraph> graph;
        try
        {
            graph = rebuildGraphFromLog(log, options.limits);
        }
        catch (const InputError& error)
        {
            summary.warnings.push_back("no graph rebuilt from the parser's lines: " + error.where().describe() + ": " +
                                       error.message());
        }
        if (graph)
        {
            FileSummary::RebuiltGraph rebuilt;
            rebuilt.nodes = graph->nodes.size();
            rebuilt.tensors = graph->tensors.names.size();
            for (const auto& constant : graph->constants)
            {
                ++(constant.fromConstantNode ? rebuilt.constantNodes : rebuilt.initializers);
            }
            rebuilt.inputs = graph->graphInputs.size();
            rebuilt.outputs = graph->graphOutputs.size();
            rebuilt.qdqNodes = graph->quantizeCount() + graph->dequantizeCount();
            for (const auto& node : graph->nodes)
            {
                rebuilt.operators[node.opType]++;
            }
            for (const auto& warning : graph->warnings)
            {
                rebuilt.warnings.push_back(warning.describe());
            }
            summary.rebuiltGraph = std::move(rebuilt);
        }
        break;
    }
    case InputKind::kTiming:
    {
        TimingSummary timing = readTiming(path, options.limits);
        summary.facts.emplace_back("records", std::to_string(timing.records));
        summary.facts.emplace_back("mean_compute_ms", formatMs(timing.meanComputeMs));
        summary.facts.emplace_back("median_compute_ms", formatMs(timing.medianComputeMs));
        summary.facts.emplace_back("mean_latency_ms", formatMs(timing.meanLatencyMs));
        for (const auto& warning : timing.warnings)
        {
            summary.warnings.push_back(warning.describe());
        }
        break;
    }
    case InputKind::kMetadata:
    {
        MetadataDocument document = readMetadata(path, options.limits);
        summary.form = document.variant;
        summary.facts.emplace_back("fields", std::to_string(document.fields.size()));
        for (const auto& warning : document.warnings)
        {
            summary.warnings.push_back(warning.describe());
        }
        break;
    }
    case InputKind::kUnknown:
        break;
    }
    return summary;
}

std::string renderInspectJson(const std::vector<FileSummary>& summaries)
{
    nlohmann::ordered_json array = nlohmann::ordered_json::array();
    for (const auto& summary : summaries)
    {
        nlohmann::ordered_json item;
        item["path"] = summary.path;
        item["kind"] = std::string(inputKindName(summary.kind));
        item["trt_version"] = summary.trtVersion ? nlohmann::ordered_json(*summary.trtVersion) : nullptr;
        item["layers"] = summary.layers ? nlohmann::ordered_json(*summary.layers) : nullptr;
        item["qdq_nodes"] = summary.qdqNodes ? nlohmann::ordered_json(*summary.qdqNodes) : nullptr;
        // Rounded to 6 decimals: sums of profile times carry float noise that would make output look unstable.
        item["time_ms"] = summary.timeMs ? nlohmann::ordered_json(std::round(*summary.timeMs * 1e6) / 1e6) : nullptr;
        if (!summary.form.empty())
        {
            item["form"] = summary.form;
        }
        if (summary.kind != InputKind::kOnnx)
        {
            item["qdq_origin_layers"] = summary.qdqOriginLayers;
        }
        item[summary.kind == InputKind::kOnnx ? "operators" : "layers_by_type"] = summary.layersByType;
        if (!summary.layersByPrecision.empty())
        {
            item["layers_by_precision"] = summary.layersByPrecision;
        }
        nlohmann::ordered_json facts = nlohmann::ordered_json::object();
        for (const auto& [key, value] : summary.facts)
        {
            facts[key] = value;
        }
        item["facts"] = facts;
        if (summary.rebuiltGraph)
        {
            const FileSummary::RebuiltGraph& rebuilt = *summary.rebuiltGraph;
            nlohmann::ordered_json graph;
            graph["nodes"] = rebuilt.nodes;
            graph["tensors"] = rebuilt.tensors;
            graph["initializers"] = rebuilt.initializers;
            graph["constant_nodes"] = rebuilt.constantNodes;
            graph["inputs"] = rebuilt.inputs;
            graph["outputs"] = rebuilt.outputs;
            graph["qdq_nodes"] = rebuilt.qdqNodes;
            graph["operators"] = rebuilt.operators;
            graph["warnings"] = rebuilt.warnings;
            item["rebuilt_graph"] = std::move(graph);
        }
        item["warnings"] = summary.warnings;
        array.push_back(std::move(item));
    }
    // Invalid UTF-8 in names is replaced rather than aborting the dump.
    return terminalSafeJson(array.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

std::string renderInspectText(const std::vector<FileSummary>& summaries)
{
    std::ostringstream out;
    for (const auto& summary : summaries)
    {
        out << printable(summary.path) << "\n";
        out << "  kind:               " << inputKindName(summary.kind) << "\n";
        out << "  TensorRT version:   " << (summary.trtVersion ? printable(*summary.trtVersion) : "unknown") << "\n";
        if (!summary.form.empty())
        {
            out << "  form:               " << printable(summary.form) << "\n";
        }
        if (summary.layers)
        {
            out << "  layers:             " << *summary.layers << "\n";
        }
        if (summary.kind != InputKind::kOnnx && summary.layers && summary.kind != InputKind::kProfile)
        {
            out << "  Origin: QDQ layers: " << summary.qdqOriginLayers << "\n";
        }
        if (summary.qdqNodes)
        {
            out << "  Q/DQ nodes:         " << *summary.qdqNodes << "\n";
        }
        if (summary.timeMs)
        {
            out << "  total time:         " << formatMs(*summary.timeMs) << " ms (sum of per-layer averages)\n";
        }
        for (const auto& [key, value] : summary.facts)
        {
            std::string label = key + ":";
            label.resize(std::max<std::size_t>(label.size() + 1, 20), ' '); // a long key keeps one space
            out << "  " << label << printable(value) << "\n";
        }
        if (!summary.layersByType.empty())
        {
            out << (summary.kind == InputKind::kOnnx ? "  by operator:\n" : "  by layer type:\n");
            for (const auto& [type, count] : summary.layersByType)
            {
                out << "    " << printable(type) << ": " << count << "\n";
            }
        }
        if (!summary.layersByPrecision.empty())
        {
            out << "  by output precision:\n";
            for (const auto& [precision, count] : summary.layersByPrecision)
            {
                out << "    " << precision << ": " << count << "\n";
            }
        }
        if (summary.rebuiltGraph)
        {
            const FileSummary::RebuiltGraph& rebuilt = *summary.rebuiltGraph;
            out << "  ONNX graph rebuilt from the parser's lines (no weight or scale values, no attributes):\n";
            out << "    nodes: " << rebuilt.nodes << ", tensors: " << rebuilt.tensors
                << ", initializers: " << rebuilt.initializers << ", Constant nodes: " << rebuilt.constantNodes
                << ", inputs: " << rebuilt.inputs << ", outputs: " << rebuilt.outputs
                << ", Q/DQ nodes: " << rebuilt.qdqNodes << "\n";
            out << "    by operator:\n";
            for (const auto& [op, count] : rebuilt.operators)
            {
                out << "      " << printable(op) << ": " << count << "\n";
            }
            for (const auto& warning : rebuilt.warnings)
            {
                out << "    warning: " << printable(warning) << "\n";
            }
        }
        for (const auto& warning : summary.warnings)
        {
            out << "  warning: " << printable(warning) << "\n";
        }
        out << "\n";
    }
    return out.str();
}

} // namespace qdq
