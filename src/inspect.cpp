#include "qdq/inspect.h"
#include "qdq/quantized_types.h"

#include "qdq/analysis.h"
#include "qdq/calibration_cache.h"
#include "qdq/layer_names.h"
#include "qdq/log_graph.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <set>
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
        // A typed record with no outputs (TensorRT 11's L2-cache custom_layer, Myelin's shape_call) writes nothing.
        const bool writesNothing = layer.outputs.empty() && !layer.type.empty();
        summary.layersByPrecision[writesNothing ? "none" : std::string(precisionName(precision))]++;
        if (layer.origin == "QDQ")
        {
            summary.qdqOriginLayers++;
        }
        if (layer.origin != "QDQ" && layer.name.find("uantize") == std::string::npos)
        {
            continue; // every name the check below accepts holds "Quantize"/"quantize" (and skips the name parse)
        }
        const LayerNameParts parts = parseLayerName(layer.name);
        std::vector<std::string_view> names(parts.tokens.begin(), parts.tokens.end());
        if (parts.foreignNode)
        {
            names.push_back(parts.rangeFirst);
            names.push_back(parts.rangeLast);
        }
        if (layer.origin == "QDQ" || layer.name.find("[DynamicQuantize]") != std::string::npos ||
            std::any_of(names.begin(), names.end(),
                        [](std::string_view name)
                        { return looksLikeQuantizeName(name) || looksLikeDequantizeName(name); }))
        {
            summary.quantizeOpLayers++;
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

std::string formatNumber(double value)
{
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%g", value);
    return buffer;
}

//! Myelin's fastest kernel of every op tuning with a tactic table, in log order (an op is tuned once per format
//! combination and per build, so it may come several times).
std::vector<std::string> myelinKernelLines(const BuildLog& log)
{
    std::vector<std::string> lines;
    for (const auto& op : log.myelinOps)
    {
        if (op.fastestKernel.empty())
        {
            continue;
        }
        std::string line = op.op + ": " + op.fastestKernel + " (" + std::to_string(op.tacticsTimed) + " tactics timed";
        if (op.fastestMs)
        {
            line += ", fastest " + formatNumber(*op.fastestMs) + " ms";
        }
        lines.push_back(line + ", line " + std::to_string(op.line) + ")");
    }
    return lines;
}

std::vector<std::string> backendStrategyLines(const BuildLog& log)
{
    std::vector<std::string> lines;
    for (const auto& strategy : log.backendStrategies)
    {
        std::string line = std::to_string(strategy.id) + " (line " + std::to_string(strategy.line) + "): ";
        line += strategy.kept ? "kept" : strategy.skipped ? "not kept" : "no verdict in the log";
        if (strategy.estimatedTime)
        {
            line += ", estimated inference time " + formatNumber(*strategy.estimatedTime);
        }
        lines.push_back(line);
    }
    return lines;
}

//! The build mode the log alone tells, as every command would resolve it from this log.
void readBuildModeOfLog(BuildLog& log, FileSummary::LogContents& contents)
{
    Inputs inputs; // the log is lent to it and taken back: a verbose log can be large
    inputs.buildLog = std::move(log);
    const SimulationOptions mode = simulationOptionsFor(inputs);
    contents.buildMode = describeBuildMode(mode);
    contents.typing = mode.stronglyTyped() ? "strong" : "weak";
    contents.typingSource = mode.typingSource;
    contents.typingAssumed = mode.typingAssumed;
    log = std::move(*inputs.buildLog);
}

FileSummary::LogContents logContentsOf(BuildLog& log)
{
    FileSummary::LogContents contents;
    readBuildModeOfLog(log, contents);
    contents.verboseLines = log.verboseLines;
    contents.layerList = log.hasEngineBlock;
    contents.profileTable = log.hasProfileTable;
    contents.parsedOnnxNodes = log.parsedNodes.size();
    contents.tacticSkips = log.tacticSkips.size();
    contents.memorySkips = log.memorySkips.size();
    for (const auto& layer : log.nonConformingLayers)
    {
        contents.nonConformingLayers.push_back(layer.text + " (line " + std::to_string(layer.line) + ")");
    }
    contents.errors = log.errors.size();
    contents.compilerBackendBuildLine = log.summary.compilerBackendBuildLine;
    contents.compilerBackendExecutionLine = log.summary.compilerBackendExecutionLine;
    contents.myelinOffloadAllLine = log.summary.myelinOffloadAllLine;
    std::set<std::string> regions;
    for (const auto& region : log.myelinRegions)
    {
        regions.insert(region.name);
    }
    contents.myelinRegions = regions.size();
    contents.myelinKernels = myelinKernelLines(log);
    contents.backendStrategies = backendStrategyLines(log);
    contents.summary = log.summary;
    contents.gpuComputeMeanMs = log.gpuComputeMeanMs;
    return contents;
}

std::string lineOrNo(std::uint64_t line)
{
    return line != 0 ? "yes (line " + std::to_string(line) + ")" : "no";
}

//! The text block of a build log's contents.
void renderLogContents(const FileSummary::LogContents& log, std::ostream& out)
{
    out << "  build mode:         " << printable(log.buildMode) << "\n";
    out << "  build log holds:\n";
    out << "    verbose lines:      " << log.verboseLines
        << (log.verboseLines == 0 ? " (written without --verbose)" : "") << "\n";
    out << "    layer list:         " << (log.layerList ? "yes" : "no") << "\n";
    out << "    profile table:      " << (log.profileTable ? "yes" : "no") << "\n";
    out << "    ONNX parser lines:  "
        << (log.parsedOnnxNodes > 0 ? "yes (" + std::to_string(log.parsedOnnxNodes) + " nodes)" : "no") << "\n";
    out << "    compiler backend:   build " << lineOrNo(log.compilerBackendBuildLine) << ", execution "
        << lineOrNo(log.compilerBackendExecutionLine) << "\n";
    out << "    Myelin regions:     " << log.myelinRegions << " with ONNX metadata";
    if (log.myelinOffloadAllLine != 0)
    {
        out << "; the build at line " << log.myelinOffloadAllLine << " offloaded every operator Myelin supports";
    }
    out << "\n";
    constexpr std::size_t kKernelLinesShown = 20;
    for (std::size_t i = 0; i < log.myelinKernels.size() && i < kKernelLinesShown; ++i)
    {
        out << "      Myelin kernel " << printable(log.myelinKernels[i]) << "\n";
    }
    if (log.myelinKernels.size() > kKernelLinesShown)
    {
        out << "      ... " << log.myelinKernels.size() - kKernelLinesShown << " more in --format json\n";
    }
    for (const auto& strategy : log.backendStrategies)
    {
        out << "    backend strategy:   " << printable(strategy) << "\n";
    }
    out << "    tactic skips:       " << log.tacticSkips << " at error severity, " << log.memorySkips
        << " for insufficient workspace memory\n";
    for (const auto& layer : log.nonConformingLayers)
    {
        out << "    precision ignored:  " << printable(layer) << " (a faster non-conforming implementation)\n";
    }
    const BuildSummary& summary = log.summary;
    if (summary.engineGenerations > 0)
    {
        out << "    engine generations: " << summary.engineGenerations << " (the engine kept took "
            << formatNumber(summary.generationSeconds.value_or(0)) << " s"
            << (summary.engineGenerations > 1 ? "; the Myelin and skip lines above come from all of them, the memory "
                                                "below from the kept build where the log names one"
                                              : "")
            << ")\n";
    }
    if (summary.onnxOpset || !summary.onnxProducer.empty())
    {
        out << "    ONNX model:         opset " << (summary.onnxOpset ? std::to_string(*summary.onnxOpset) : "?")
            << (summary.onnxProducer.empty() ? "" : ", from " + printable(summary.onnxProducer)) << "\n";
    }
    if (summary.engineSizeMiB)
    {
        out << "    engine size:        " << formatNumber(*summary.engineSizeMiB) << " MiB\n";
    }
    if (summary.buildSeconds)
    {
        out << "    built in:           " << formatNumber(*summary.buildSeconds) << " s\n";
    }
    if (summary.activationBytes || summary.weightsBytes)
    {
        out << "    memory:             activations " << summary.activationBytes.value_or(0) << " bytes, weights "
            << summary.weightsBytes.value_or(0) << " bytes\n";
    }
    if (summary.throughputQps)
    {
        out << "    throughput:         " << formatNumber(*summary.throughputQps) << " qps\n";
    }
    if (log.gpuComputeMeanMs)
    {
        out << "    GPU compute mean:   " << formatNumber(*log.gpuComputeMeanMs) << " ms\n";
    }
}

template <typename T>
nlohmann::ordered_json optionalJson(const std::optional<T>& value)
{
    return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json lineJson(std::uint64_t line)
{
    return line != 0 ? nlohmann::ordered_json(line) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json logContentsJson(const FileSummary::LogContents& log)
{
    nlohmann::ordered_json json;
    json["build_mode"] = log.buildMode;
    json["typing"] = log.typing;
    json["typing_source"] = log.typingSource;
    json["typing_assumed"] = log.typingAssumed;
    json["verbose_lines"] = log.verboseLines;
    json["layer_list"] = log.layerList;
    json["profile_table"] = log.profileTable;
    json["parsed_onnx_nodes"] = log.parsedOnnxNodes;
    json["compiler_backend_build_line"] = lineJson(log.compilerBackendBuildLine);
    json["compiler_backend_execution_line"] = lineJson(log.compilerBackendExecutionLine);
    json["myelin_offload_all_line"] = lineJson(log.myelinOffloadAllLine);
    json["myelin_regions"] = log.myelinRegions;
    json["myelin_kernels"] = log.myelinKernels;
    json["backend_strategies"] = log.backendStrategies;
    json["tactic_skips"] = log.tacticSkips;
    json["memory_tactic_skips"] = log.memorySkips;
    json["non_conforming_layers"] = log.nonConformingLayers;
    json["errors"] = log.errors;
    json["onnx_opset"] = optionalJson(log.summary.onnxOpset);
    json["onnx_producer"] = log.summary.onnxProducer;
    json["engine_generations"] = log.summary.engineGenerations;
    json["engine_generation_seconds"] = optionalJson(log.summary.generationSeconds);
    json["engine_size_mib"] = optionalJson(log.summary.engineSizeMiB);
    json["build_seconds"] = optionalJson(log.summary.buildSeconds);
    json["activation_memory_bytes"] = optionalJson(log.summary.activationBytes);
    json["weights_memory_bytes"] = optionalJson(log.summary.weightsBytes);
    json["throughput_qps"] = optionalJson(log.summary.throughputQps);
    json["gpu_compute_mean_ms"] = optionalJson(log.gpuComputeMeanMs);
    return json;
}

//! An ONNX model: node counts, quantized types, opsets and the operator histogram.
void summarizeOnnx(const std::string& path, const InspectOptions& options, FileSummary& summary)
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
}

//! A layer-info JSON: the plan's summary and its bindings.
void summarizeLayerInfo(const std::string& path, const InspectOptions& options, FileSummary& summary)
{
    EnginePlan plan = readLayerInfo(path, options.limits);
    summarizePlan(plan, summary);
    summary.facts.emplace_back("bindings", std::to_string(plan.bindings.size()));
    if (plan.writer.trtMajor != 0)
    {
        summary.trtVersion = std::to_string(plan.writer.trtMajor) + ".x (line " + std::to_string(plan.writer.line) +
                             ": " + plan.writer.what + ")";
    }
    if (plan.optimizationProfiles() > 1)
    {
        summary.facts.emplace_back("optimization profiles", std::to_string(plan.optimizationProfiles()));
    }
}

//! A profile JSON: its layers and total time.
void summarizeProfile(const std::string& path, const InspectOptions& options, FileSummary& summary)
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
}

//! What a build log holds, counted, and how its build went.
void addBuildLogFacts(const BuildLog& log, FileSummary& summary)
{
    summary.facts.emplace_back("lines", std::to_string(log.lineCount));
    summary.facts.emplace_back("parsed_onnx_nodes", std::to_string(log.parsedNodes.size()));
    summary.facts.emplace_back("registered_layers", std::to_string(log.registeredLayers.size()));
    summary.facts.emplace_back("optimizer_events", std::to_string(log.events.size()));
    summary.facts.emplace_back("tactic_choices", std::to_string(log.tactics.size()));
    summary.facts.emplace_back("errors", std::to_string(log.errors.size()));
    summary.facts.emplace_back("tactic_skips", std::to_string(log.tacticSkips.size()));
    summary.facts.emplace_back("build", log.passedLine != 0  ? "passed (line " + std::to_string(log.passedLine) + ")"
                                        : log.hasEngineBlock ? "engine layers listed"
                                        : log.errors.empty() ? "no outcome in the log"
                                                             : "failed (errors, no engine)");
    summary.facts.emplace_back("trt_warnings", std::to_string(log.warningsInLog.size()));
    std::string mode = log.explicitPrecisionMarker ? "explicit (Q/DQ)" : log.implicitInt8Marker ? "implicit INT8" : "";
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
}

//! The graph rebuilt from a build log's parser lines, or why there is none.
void summarizeRebuiltGraph(const BuildLog& log, const InspectOptions& options, FileSummary& summary)
{
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
}

//! A verbose build log: its engine and profile table, what it logged, and the graph rebuilt from the parser's lines.
void summarizeBuildLog(const std::string& path, const InspectOptions& options, FileSummary& summary)
{
    BuildLog log = readBuildLog(path, options.progress, options.limits);
    summary.trtVersion = log.trtVersion;
    if (!summary.trtVersion && log.engine.writer.trtMajor != 0)
    {
        summary.trtVersion = std::to_string(log.engine.writer.trtMajor) + ".x (line " +
                             std::to_string(log.engine.writer.line) + ": " + log.engine.writer.what + ")";
    }
    if (log.hasEngineBlock)
    {
        summarizePlan(log.engine, summary);
        if (log.engine.optimizationProfiles() > 1)
        {
            summary.facts.emplace_back("optimization profiles", std::to_string(log.engine.optimizationProfiles()));
        }
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
    addBuildLogFacts(log, summary);
    for (const auto& warning : log.warnings)
    {
        summary.warnings.push_back(warning.describe());
    }
    summary.logContents = logContentsOf(log);
    summarizeRebuiltGraph(log, options, summary);
}

//! A timing JSON: its records and times.
void summarizeTiming(const std::string& path, const InspectOptions& options, FileSummary& summary)
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
}

//! A metadata JSON: its variant and fields.
void summarizeMetadata(const std::string& path, const InspectOptions& options, FileSummary& summary)
{
    MetadataDocument document = readMetadata(path, options.limits);
    summary.form = document.variant;
    summary.facts.emplace_back("fields", std::to_string(document.fields.size()));
    for (const auto& warning : document.warnings)
    {
        summary.warnings.push_back(warning.describe());
    }
}

//! A calibration cache or dynamic-range file: its header, the version it encodes and how many scales it holds.
void summarizeCalibrationCache(const std::string& path, const InspectOptions& options, FileSummary& summary)
{
    CalibrationCache cache = readCalibrationCache(path, options.limits);
    summary.form = cache.format == CalibrationCache::Format::kCache ? "calibration-cache" : "dynamic-range";
    if (!cache.version.empty())
    {
        summary.trtVersion = cache.version;
    }
    if (!cache.algorithm.empty())
    {
        summary.facts.emplace_back("algorithm", cache.algorithm);
    }
    summary.facts.emplace_back("scales", std::to_string(cache.scales.size()));
    for (const auto& warning : cache.warnings)
    {
        summary.warnings.push_back(warning.describe());
    }
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
        summarizeOnnx(path, options, summary);
        break;
    case InputKind::kLayerInfo:
        summarizeLayerInfo(path, options, summary);
        break;
    case InputKind::kProfile:
        summarizeProfile(path, options, summary);
        break;
    case InputKind::kBuildLog:
        summarizeBuildLog(path, options, summary);
        break;
    case InputKind::kTiming:
        summarizeTiming(path, options, summary);
        break;
    case InputKind::kMetadata:
        summarizeMetadata(path, options, summary);
        break;
    case InputKind::kCalibrationCache:
        summarizeCalibrationCache(path, options, summary);
        break;
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
            item["quantize_op_layers"] = summary.quantizeOpLayers;
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
        if (summary.logContents)
        {
            item["log"] = logContentsJson(*summary.logContents);
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
            out << "  quantize-op layers: " << summary.quantizeOpLayers << "\n";
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
        if (summary.logContents)
        {
            renderLogContents(*summary.logContents, out);
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
