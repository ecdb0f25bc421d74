// Text and JSON output of `qdq-doctor predict` (docs/predict-schema.md).
#include "qdq/predict.h"

#include "qdq/consistency.h"
#include "qdq/patterns.h"
#include "src/reporters/build_mode_json.h"
#include "src/reporters/consistency_report.h"
#include "src/reporters/json_writer.h"
#include "src/simulation/engine_simulator.h"
#include "src/simulation/gpu_dependent_structure.h"
#include "src/simulation/myelin_pass.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <thread>
#include <vector>

namespace qdq
{

void applyPrecisionFlag(const std::string& precision, SimulationOptions& options)
{
    if (precision == "fp32")
    {
        options.int8 = options.fp16 = false;
    }
    else if (precision == "fp16")
    {
        options.int8 = false;
        options.fp16 = true;
    }
    else if (precision == "int8")
    {
        options.int8 = true;
        options.fp16 = false;
    }
    else if (precision == "best")
    {
        options.int8 = options.fp16 = true;
    }
    else
    {
        throw InputError(SourceLocation{"--precision"},
                         "must be fp32, fp16, int8 or best, not '" + printable(precision, 64) + "'");
    }
    options.precisionSource = "--precision " + precision;
}

void applyTrtVersion(const std::string& version, SimulationOptions& options)
{
    // MAJOR[.MINOR[.PATCH[.BUILD]]], each part 1-3 digits (the major 1-2): "10..1", "10.", "abc", "10.x" are refused,
    // never read as another version.
    std::vector<long> parts;
    bool ok = !version.empty();
    for (std::size_t start = 0; ok && start <= version.size();)
    {
        const std::size_t dot = std::min(version.find('.', start), version.size());
        const std::string part = version.substr(start, dot - start);
        ok = !part.empty() && part.size() <= (parts.empty() ? 2u : 3u) &&
             std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (ok)
        {
            parts.push_back(std::strtol(part.c_str(), nullptr, 10));
        }
        start = dot + 1;
        ok = ok && parts.size() <= 4;
    }
    const long major = parts.empty() ? 0 : parts[0];
    const long minor = parts.size() > 1 ? parts[1] : 0;
    if (!ok || major < 5 || minor > 99)
    {
        throw InputError(SourceLocation{"--trt-version"},
                         "must look like 8.6, 10.16 or 10.16.1, not '" + printable(version, 64) + "'");
    }
    options.trtMajor = static_cast<int>(major);
    options.trtMinor = static_cast<int>(minor);
}

PredictionSummary summarizePrediction(const Prediction& prediction, const OnnxGraph& graph)
{
    PredictionSummary summary;
    summary.layers = prediction.layers.size();
    for (const auto& layer : prediction.layers)
    {
        if (!layer.onnxNodes.empty())
        {
            ++summary.computeLayers;
        }
        else
        {
            ++summary.reformats;
        }
        if (layer.role == "standalone-quantize" || layer.role == "standalone-dequantize")
        {
            ++summary.standaloneQdq;
        }
        if (layer.role == "requantize")
        {
            ++summary.requantize;
        }
        if (!layer.guess.empty())
        {
            ++summary.guessed;
        }
        if (layer.kind.find("ConvActPool") != std::string::npos)
        {
            ++summary.convActPool;
        }
        if (layer.kind.find("Convolution") != std::string::npos || layer.kind.find("ConvActPool") != std::string::npos)
        {
            for (std::uint32_t index : layer.nodeIndices)
            {
                const OnnxNode* node = index < graph.nodes.size() ? &graph.nodes[index] : nullptr;
                if (node != nullptr && node->opType == "Add" && node->inputs.size() == 2 &&
                    !patterns::isConstantTensor(graph, node->inputs[0]) &&
                    !patterns::isConstantTensor(graph, node->inputs[1]))
                {
                    ++summary.convWithResidualAdd;
                    break;
                }
            }
        }
    }
    return summary;
}

namespace
{

std::string versionText(const SimulationOptions& options)
{
    if (options.trtMajor == 0)
    {
        return "unknown (10.x assumed)";
    }
    return std::to_string(options.trtMajor) + "." + std::to_string(options.trtMinor);
}

std::string flagsText(const SimulationOptions& options)
{
    if (options.stronglyTyped())
    {
        return "strongly typed (no precision flags)";
    }
    std::string flags;
    if (options.int8)
    {
        flags += "--int8";
    }
    if (options.fp16)
    {
        flags += flags.empty() ? "--fp16" : " --fp16";
    }
    return flags.empty() ? "none (FP32)" : flags;
}

} // namespace

std::string renderPredictionJson(const Prediction& prediction, const OnnxGraph& graph, const std::string& source)
{
    std::string out;
    writePredictionJson(prediction, graph, source, [&out](std::string_view text) { out += text; });
    return out;
}

namespace
{

// Below this many Q/DQ nodes, a second thread for their part of the JSON costs more than it saves.
constexpr std::size_t kQdqElementsInParallelFrom = 10000;

void writeQdqElement(JsonWriter& json, const PredictedQdq& qdq)
{
    json.beginObject();
    json.member("name", qdq.node).member("op", qdq.isQuantize ? "QuantizeLinear" : "DequantizeLinear");
    json.member("fate", predictedFateName(qdq.fate));
    if (!qdq.partner.empty())
    {
        json.member("partner", qdq.partner);
    }
    json.member("why", qdq.reason());
    json.endObject();
}

void writeLayerElement(JsonWriter& json, const PredictedLayer& layer)
{
    json.beginObject();
    json.member("name", layer.name).member("kind", layer.kind).member("role", layer.role);
    json.member("onnx_nodes", layer.onnxNodes);
    if (!layer.partOf.empty())
    {
        json.member("part_of", layer.partOf);
    }
    json.member("input_precision", layer.inputPrecision).member("output_precision", layer.outputPrecision);
    if (!layer.guess.empty())
    {
        json.member("guess", layer.guess);
    }
    json.endObject();
}

//! The elements of the JSON's qdq_nodes array (depth 2: inside the document's object), in pieces of about a
//! megabyte, as the document's writer would write them.
std::vector<std::string> renderQdqElements(const std::vector<PredictedQdq>& qdq)
{
    constexpr std::size_t kPieceBytes = 1u << 20;
    std::vector<std::string> pieces;
    std::string out;
    JsonWriter json(out, JsonWriter::ArrayElementsAt{2, false});
    for (const auto& entry : qdq)
    {
        writeQdqElement(json, entry);
        if (out.size() >= kPieceBytes)
        {
            pieces.push_back(std::move(out));
            out.clear();
        }
    }
    if (!out.empty())
    {
        pieces.push_back(std::move(out));
    }
    return pieces;
}

//! The attention blocks and the MatMuls of Myelin regions (src/simulation/myelin_pass.cpp), when the model has any.
void writeTransformerJson(JsonWriter& json, const Prediction& prediction)
{
    if (prediction.attention.empty() && prediction.myelinQuantizedMatMuls.empty() &&
        prediction.myelinFloatMatMuls.empty())
    {
        return;
    }
    json.key("attention").beginArray();
    for (const auto& attention : prediction.attention)
    {
        json.beginObject();
        json.member("scores_matmul", attention.scoresMatMul).member("softmax", attention.softmax);
        json.member("context_matmul", attention.contextMatMul);
        json.member("fused", attention.fused).member("quantized", attention.quantized);
        json.member("reason", attention.reason);
        json.member("not_fused_because", attention.notFusedBecause);
        json.endObject();
    }
    json.endArray();
    json.member("myelin_quantized_matmuls", prediction.myelinQuantizedMatMuls);
    json.member("myelin_float_matmuls", prediction.myelinFloatMatMuls);
}

//! qdqElements: the qdq_nodes array's elements, already written by renderQdqElements; null to write them here.
void writeJson(const Prediction& prediction, const OnnxGraph& graph, const std::string& source,
               const std::function<void(std::string_view)>& write, const std::vector<std::string>* qdqElements)
{
    // Streamed a megabyte at a time: the JSON of a 500,000-node model is 128 MB, and growing one string to that size
    // cost a tenth of `predict` in copies and page faults.
    std::string out;
    JsonWriter json(out, [&write](const std::string& text) { write(text); });
    const PredictionSummary summary = summarizePrediction(prediction, graph);
    json.beginObject();
    json.member("schema", "qdq-doctor/predict/1");
    json.member("source", source);
    json.member("graph", graph.sourcePath);
    json.key("build").beginObject();
    json.member("int8", prediction.options.int8).member("fp16", prediction.options.fp16);
    json.member("tensorrt_version", versionText(prediction.options));
    json.member("flags_from", prediction.options.precisionSource);
    json.endObject();
    json.key("build_mode");
    writeBuildModeJson(json, prediction.options);
    if (const std::string note = simulation::gpuDependentStructureNote(prediction, graph); !note.empty())
    {
        json.member("gpu_dependent_structure", note);
    }
    json.key("summary").beginObject();
    json.member("layers", static_cast<std::uint64_t>(summary.layers));
    json.member("layers_executing_onnx_nodes", static_cast<std::uint64_t>(summary.computeLayers));
    json.member("standalone_qdq_layers", static_cast<std::uint64_t>(summary.standaloneQdq));
    json.member("requantize_layers", static_cast<std::uint64_t>(summary.requantize));
    json.member("reformat_layers", static_cast<std::uint64_t>(summary.reformats));
    json.member("conv_layers_with_residual_add", static_cast<std::uint64_t>(summary.convWithResidualAdd));
    json.member("conv_act_pool_layers", static_cast<std::uint64_t>(summary.convActPool));
    json.member("guessed_layers", static_cast<std::uint64_t>(summary.guessed));
    json.endObject();
    json.key("layers").beginArray();
    for (const auto& layer : prediction.layers)
    {
        writeLayerElement(json, layer);
    }
    json.endArray();
    json.key("qdq_nodes").beginArray();
    if (qdqElements != nullptr)
    {
        for (const std::string& piece : *qdqElements)
        {
            json.appendElements(piece);
        }
    }
    else
    {
        for (const auto& qdq : prediction.qdq)
        {
            writeQdqElement(json, qdq);
        }
    }
    json.endArray();
    json.member("eliminated_nodes", prediction.eliminated);
    writeTransformerJson(json, prediction);
    ConsistencyCheck consistency;
    checkPredictionConsistency(prediction, consistency);
    writeConsistencyJson(json, consistency, true);
    json.endObject(); // ends the document: the writer adds the final newline and hands over the rest
}

} // namespace

void writePredictionJson(const Prediction& prediction, const OnnxGraph& graph, const std::string& source,
                         const std::function<void(std::string_view)>& write)
{
    writeJson(prediction, graph, source, write, nullptr);
}

Prediction predictEngineWritingJson(const OnnxGraph& graph, const SimulationOptions& options, const std::string& source,
                                    const std::function<void(std::string_view)>& write)
{
    simulation::FirstStages stages = simulation::runFirstStages(graph, options);
    Prediction& prediction = stages.prediction;
    // The Myelin pass gives the Q/DQ nodes a transformer region takes their final fate while the layers are built:
    // those are written after it.
    if (prediction.qdq.size() < kQdqElementsInParallelFrom ||
        simulation::compilesTransformerWithMyelin(stages.transformer, options))
    {
        simulation::buildPredictedLayers(graph, options, prediction, std::move(stages.transformer));
        writeJson(prediction, graph, source, write, nullptr);
        return std::move(prediction);
    }
    // The Q/DQ fates are final before the layers are built, and the layer builder only reads them: their part of the
    // JSON (57% of it on the bench model) is written on a second thread meanwhile. `qdq-bench predict`, alternating
    // runs: predict and JSON 0.40-0.53 -> 0.32-0.51 s (bench/README.md).
    std::vector<std::string> qdqElements;
    std::exception_ptr renderError;
    {
        std::jthread renderer(
            [&]
            {
                try
                {
                    qdqElements = renderQdqElements(prediction.qdq);
                }
                catch (...)
                {
                    renderError = std::current_exception();
                }
            });
        simulation::buildPredictedLayers(graph, options, prediction, std::move(stages.transformer));
    } // joined here, also when the layer builder throws
    if (renderError)
    {
        std::rethrow_exception(renderError);
    }
    writeJson(prediction, graph, source, write, &qdqElements);
    return std::move(prediction);
}

std::string renderPredictionText(const Prediction& prediction, const OnnxGraph& graph, const std::string& source)
{
    const PredictionSummary summary = summarizePrediction(prediction, graph);
    std::string out = "Predicted engine for " + source + "\n";
    out += "Build: " + flagsText(prediction.options) + ", TensorRT " + versionText(prediction.options) +
           " (flags from " + prediction.options.precisionSource + ")\n";
    out += "Build mode: " + describeBuildMode(prediction.options) + "\n";
    if (const std::string note = simulation::gpuDependentStructureNote(prediction, graph); !note.empty())
    {
        out += "Layer structure: " + note + "\n";
    }
    out += "Layers: " + std::to_string(summary.layers) + " (" + std::to_string(summary.computeLayers) +
           " executing ONNX nodes, " + std::to_string(summary.standaloneQdq) + " standalone Q/DQ, " +
           std::to_string(summary.requantize) + " requantize, " + std::to_string(summary.reformats) +
           " reformats/copies; " + std::to_string(summary.guessed) + " guessed)\n\n";
    std::size_t index = 0;
    for (const auto& layer : prediction.layers)
    {
        char head[64];
        std::snprintf(head, sizeof(head), "%4zu. ", ++index);
        out += head;
        out += "[" + layer.kind + "] " + layer.name + "  " + layer.inputPrecision + " -> " + layer.outputPrecision;
        if (!layer.guess.empty())
        {
            out += "  (guess: " + layer.guess + ")";
        }
        out += '\n';
    }
    if (!prediction.attention.empty())
    {
        std::size_t fused = 0;
        for (const auto& attention : prediction.attention)
        {
            fused += attention.fused ? 1 : 0;
        }
        out += "\nAttention blocks: " + std::to_string(prediction.attention.size()) + ", " + std::to_string(fused) +
               " fused\n";
        for (const auto& attention : prediction.attention)
        {
            out += std::string("  ") + (attention.fused ? "fused: " : "not fused: ") + attention.reason + "\n";
        }
    }
    if (!prediction.myelinQuantizedMatMuls.empty() || !prediction.myelinFloatMatMuls.empty())
    {
        out += "\nMatMuls in Myelin regions: " + std::to_string(prediction.myelinQuantizedMatMuls.size()) +
               " quantized (both inputs straight from a DequantizeLinear), " +
               std::to_string(prediction.myelinFloatMatMuls.size()) + " in float";
        constexpr std::size_t kNamed = 12;
        for (std::size_t i = 0; i < prediction.myelinFloatMatMuls.size() && i < kNamed; ++i)
        {
            out += (i == 0 ? ": " : ", ") + std::string(prediction.myelinFloatMatMuls[i]);
        }
        if (prediction.myelinFloatMatMuls.size() > kNamed)
        {
            out += ", ...";
        }
        out += "\n";
    }
    std::map<std::string, std::size_t> byFate;
    for (const auto& qdq : prediction.qdq)
    {
        ++byFate[std::string(predictedFateName(qdq.fate))];
    }
    if (!prediction.qdq.empty())
    {
        out += "\nQ/DQ nodes: " + std::to_string(prediction.qdq.size());
        for (const auto& [fate, count] : byFate)
        {
            out += ", " + std::to_string(count) + " " + fate;
        }
        out += '\n';
        for (const auto& qdq : prediction.qdq)
        {
            if (qdq.fate == PredictedQdq::Fate::kStandalone || qdq.fate == PredictedQdq::Fate::kRequantize)
            {
                out += "  " + std::string(qdq.node) + ": " + std::string(predictedFateName(qdq.fate)) + ", " +
                       qdq.reason() + "\n";
            }
        }
    }
    ConsistencyCheck consistency;
    checkPredictionConsistency(prediction, consistency);
    out += "\n" + consistencyText(consistency, true);
    return out;
}

} // namespace qdq
