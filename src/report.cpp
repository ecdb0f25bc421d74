// Reporters for `diagnose`: text for people at a terminal, JSON (schema qdq-doctor.report.v1) for scripts.
#include "qdq/analysis.h"
#include "qdq/patterns.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace qdq
{

namespace
{

using Json = nlohmann::ordered_json;

//! Milliseconds rounded to 6 decimals so that output is stable across platforms.
Json milliseconds(double value)
{
    return std::round(value * 1e6) / 1e6;
}

Json optionalMs(const std::optional<double>& value)
{
    return value ? milliseconds(*value) : Json(nullptr);
}

} // namespace

std::string renderReportJson(const Report& report, const Inputs& inputs)
{
    Json root;
    root["schema"] = "qdq-doctor.report.v1";
    Json sources = Json::array();
    for (const auto& source : report.inputs)
    {
        sources.push_back({{"kind", std::string(inputKindName(source.kind))}, {"path", source.path},
            {"trt_version", source.trtVersion ? Json(*source.trtVersion) : Json(nullptr)}});
    }
    root["inputs"] = sources;

    auto layerTotals = report.correlation.layerTotals();
    auto qdqTotals = report.correlation.qdqTotals();
    root["accounting"] = {
        {"layers",
            {{"total", layerTotals.total}, {"mapped", layerTotals.mapped}, {"inserted_qdq", layerTotals.insertedQdq},
                {"inserted_reformat", layerTotals.insertedReformat}, {"dropped", layerTotals.dropped},
                {"unattributed", layerTotals.unattributed}}},
        {"qdq_nodes",
            {{"total", qdqTotals.total}, {"fused", qdqTotals.fused}, {"standalone", qdqTotals.standalone},
                {"folded", qdqTotals.folded}, {"eliminated", qdqTotals.eliminated}, {"unknown", qdqTotals.unknown}}},
    };

    Json layers = Json::array();
    const EnginePlan* plan = inputs.engine();
    for (const auto& mapping : report.correlation.layers)
    {
        const EngineLayer& layer = plan->layers[mapping.layer];
        Json item;
        item["name"] = layer.name;
        item["type"] = layer.type;
        item["state"] = std::string(layerStateName(mapping.state));
        item["onnx_nodes"] = mapping.onnxNodes;
        item["evidence"] = std::string(mappingEvidenceName(mapping.evidence));
        item["output_precision"] = std::string(precisionName(patterns::outputPrecision(layer)));
        item["time_ms"] = optionalMs(mapping.timeMs);
        layers.push_back(std::move(item));
    }
    root["layers"] = layers;

    Json qdqNodes = Json::array();
    for (const auto& node : report.correlation.qdqNodes)
    {
        Json item;
        item["name"] = node.node;
        item["op"] = node.isQuantize ? "QuantizeLinear" : "DequantizeLinear";
        item["state"] = std::string(qdqStateName(node.state));
        item["layer"] = node.layer && plan != nullptr ? Json(plan->layers[*node.layer].name) : Json(nullptr);
        item["why"] = node.why;
        qdqNodes.push_back(std::move(item));
    }
    root["qdq_nodes"] = qdqNodes;

    Json findings = Json::array();
    for (const auto& finding : report.findings)
    {
        Json item;
        item["rule"] = finding.rule;
        item["severity"] = std::string(severityName(finding.severity));
        item["likely"] = finding.likely;
        item["message"] = finding.message;
        item["onnx_nodes"] = finding.onnxNodes;
        item["engine_layers"] = finding.engineLayers;
        Json evidence = Json::array();
        for (const auto& e : finding.evidence)
        {
            evidence.push_back({{"file", e.file}, {"line", e.line == 0 ? Json(nullptr) : Json(e.line)},
                {"field", e.field}, {"text", e.text}});
        }
        item["evidence"] = evidence;
        item["fix"] = finding.fix;
        item["cost_ms"] = optionalMs(finding.costMs);
        findings.push_back(std::move(item));
    }
    root["findings"] = findings;

    Json prediction = Json::array();
    for (const auto& predicted : report.prediction.layers)
    {
        prediction.push_back({{"kind", predicted.kind}, {"onnx_nodes", predicted.onnxNodes},
            {"int8_input", predicted.int8Input}, {"int8_output", predicted.int8Output}});
    }
    root["predicted_layers"] = prediction;

    root["time_ms"] = report.hasTimings ? Json{{"total", milliseconds(report.totalMs)},
                                              {"standalone_qdq", milliseconds(report.standaloneQdqMs)},
                                              {"reformat", milliseconds(report.reformatMs)}}
                                        : Json(nullptr);
    root["notes"] = report.notes;
    return terminalSafeJson(root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
}

std::string renderReportText(const Report& report, const Inputs& inputs)
{
    std::ostringstream out;
    out << "qdq-doctor diagnose\n";
    for (const auto& source : report.inputs)
    {
        out << "  " << inputKindName(source.kind) << ": " << printable(source.path);
        if (source.trtVersion)
        {
            out << " (TensorRT " << printable(*source.trtVersion) << ")";
        }
        out << "\n";
    }
    out << "\n";
    if (report.findings.empty())
    {
        out << "No findings.\n\n";
    }
    std::size_t index = 0;
    for (const auto& finding : report.findings)
    {
        out << ++index << ". [" << severityName(finding.severity) << "] " << finding.rule;
        if (finding.costMs)
        {
            out << "  cost " << patterns::formatMs(*finding.costMs);
        }
        out << "\n   " << printable(finding.message, 8192) << "\n";
        if (!finding.onnxNodes.empty())
        {
            out << "   ONNX nodes:    " << printable(patterns::nameList(finding.onnxNodes, 6), 2048) << "\n";
        }
        if (!finding.engineLayers.empty())
        {
            out << "   engine layers: " << printable(patterns::nameList(finding.engineLayers, 4), 2048) << "\n";
        }
        for (std::size_t e = 0; e < finding.evidence.size() && e < 3; ++e)
        {
            const Evidence& evidence = finding.evidence[e];
            out << "   evidence:      " << printable(evidence.file, 512);
            if (evidence.line > 0)
            {
                out << ":" << evidence.line;
            }
            if (!evidence.field.empty())
            {
                out << " " << printable(evidence.field, 512);
            }
            if (!evidence.text.empty())
            {
                out << ": " << printable(evidence.text, 512);
            }
            out << "\n";
        }
        if (finding.evidence.size() > 3)
        {
            out << "   evidence:      ... " << finding.evidence.size() - 3 << " more (see --format json)\n";
        }
        out << "   fix:           " << printable(finding.fix, 4096) << "\n\n";
    }

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
    if (report.hasTimings)
    {
        out << "Time:          " << patterns::formatMs(report.totalMs) << " total, "
            << patterns::formatMs(report.standaloneQdqMs) << " in standalone Q/DQ layers, "
            << patterns::formatMs(report.reformatMs) << " in reformats\n";
    }
    if (!report.notes.empty())
    {
        out << "\nNotes:\n";
        for (const auto& note : report.notes)
        {
            out << "  - " << printable(note, 2048) << "\n";
        }
    }
    return out.str();
}

} // namespace qdq
