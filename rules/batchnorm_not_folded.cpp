// batchnorm-not-folded: a BatchNormalization whose scale, bias, mean or variance is not an initializer (nor a Constant
// node's value) but a computed tensor, e.g. an initializer passed through an Identity node. TensorRT's ONNX parser
// folds a BatchNormalization into one per-channel Scale (which the builder then fuses into the convolution before it)
// only when all four parameters are weights; otherwise it builds the formula out of elementwise layers that run as
// their own float layers (docs/rules/batchnorm-not-folded.md).
#include "qdq/layer_names.h"
#include "qdq/patterns.h"
#include "rules/build_mode_advice.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

#include <algorithm>

namespace qdq::rules
{

namespace
{

using namespace patterns;

//! The parameter inputs of BatchNormalization (X, scale, B, input_mean, input_var).
constexpr std::size_t kFirstParameter = 1;
constexpr std::size_t kParameterCount = 4;
constexpr const char* kParameterNames[kParameterCount] = {"scale", "B", "input_mean", "input_var"};

bool isBatchNorm(const OnnxNode& node)
{
    return node.opType == "BatchNormalization" && node.inputs.size() >= kFirstParameter + kParameterCount;
}

//! Whether every token of a layer name is a parser helper layer ("(Unnamed Layer* 109) [Constant]", "[ElementWise]",
//! "[Unary]"): the elementwise layers the parser's BatchNormalization fallback adds carry no ONNX name.
bool onlyUnnamedLayers(const EngineLayer& layer)
{
    const LayerNameParts parts = parseLayerName(layer.name);
    return !parts.tokens.empty() && std::all_of(parts.tokens.begin(), parts.tokens.end(),
                                                [](const std::string& token) { return isUnnamedLayerToken(token); });
}

bool hasUnnamedElementWise(const EngineLayer& layer)
{
    for (const auto& token : parseLayerName(layer.name).tokens)
    {
        if (isUnnamedLayerToken(token) && token.find("[ElementWise]") != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

class BatchNormNotFolded final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "batchnorm-not-folded",
            "",
            "A BatchNormalization whose scale, bias, mean or variance is not an initializer cannot be folded by the "
            "ONNX parser: it runs as separate float elementwise/Scale layers instead of inside the convolution",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "constant folding rewrites the model's parameters (polygraphy surgeon sanitize --fold-constants, "
            "onnx-simplifier), which `fix` does not do"};
        return kInfo;
    }

private:
    //! The parser's view of a node in the build log the graph was rebuilt from: its inputs line, for evidence.
    static std::optional<Evidence> parserLine(const Context& context, const std::string& node)
    {
        if (!context.inputs.buildLog)
        {
            return std::nullopt;
        }
        for (const auto& parsed : context.inputs.buildLog->parsedNodes)
        {
            if (parsed.onnxNode == node && parsed.inputsLine != 0)
            {
                Evidence evidence;
                evidence.file = context.inputs.buildLog->sourcePath;
                evidence.line = parsed.inputsLine;
                evidence.field = "node " + node + " (" + parsed.opType + ") inputs";
                return evidence;
            }
        }
        return std::nullopt;
    }

    //! The float layers that carry out an unfolded BatchNormalization: the layers executing the node and the
    //! unnamed elementwise layers of the parser's fallback that feed them.
    static std::vector<std::size_t> fallbackLayers(const Context& context, const std::string& node)
    {
        std::vector<std::size_t> layers;
        const EnginePlan* plan = context.engine();
        if (plan == nullptr || context.correlation.layers.size() != plan->layers.size())
        {
            return layers;
        }
        for (std::size_t layer : layersOf(context, node))
        {
            const EngineLayer& engineLayer = plan->layers[layer];
            if (layerNameHas(engineLayer, "Conv") || layerNameHas(engineLayer, "Gemm"))
            {
                continue; // folded into a convolution after all: nothing runs apart
            }
            addUnique(layers, layer);
            for (const auto& input : engineLayer.inputs)
            {
                auto producer = producerLayer(*plan, input.name);
                if (producer && onlyUnnamedLayers(plan->layers[*producer]))
                {
                    addUnique(layers, *producer);
                }
            }
        }
        std::sort(layers.begin(), layers.end());
        return layers;
    }

    static void addUnique(std::vector<std::size_t>& list, std::size_t value)
    {
        if (std::find(list.begin(), list.end(), value) == list.end())
        {
            list.push_back(value);
        }
    }

    //! "B (backbone.layer2.0.downsample.1.bias) comes from Identity_2 (Identity)" for each parameter that is no
    //! weight; empty when all four are initializers or Constant values.
    static std::vector<std::string> computedParameters(const OnnxGraph& graph, const OnnxNode& node,
                                                       std::vector<const OnnxNode*>& producers)
    {
        std::vector<std::string> computed;
        for (std::size_t p = 0; p < kParameterCount; ++p)
        {
            const std::string& tensor = node.inputs[kFirstParameter + p];
            if (tensor.empty() || graph.isConstant(tensor))
            {
                continue;
            }
            const OnnxNode* producer = producerOf(graph, tensor);
            std::string from = producer != nullptr ? "comes from " + producer->name + " (" + producer->opType + ")"
                               : isGraphInput(graph, tensor) ? std::string("is a network input")
                                                             : std::string("is not a constant");
            if (producer != nullptr)
            {
                producers.push_back(producer);
            }
            computed.push_back(std::string(kParameterNames[p]) + " (" + tensor + ") " + from);
        }
        return computed;
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        Finding finding = makeFinding(info(), "");
        std::vector<std::string> nodes;
        std::vector<std::size_t> layers;
        bool viaIdentity = false;
        for (const auto& node : graph.nodes)
        {
            if (!isBatchNorm(node))
            {
                continue;
            }
            std::vector<const OnnxNode*> producers;
            const std::vector<std::string> computed = computedParameters(graph, node, producers);
            if (computed.empty())
            {
                continue;
            }
            nodes.push_back(node.name);
            finding.onnxNodes.push_back(node.name);
            Evidence evidence = parserLine(context, node.name).value_or(nodeEvidence(context, node, ""));
            evidence.text = nameList(computed, 4) + ": not an initializer";
            finding.evidence.push_back(std::move(evidence));
            for (const OnnxNode* producer : producers)
            {
                viaIdentity = viaIdentity || producer->opType == "Identity";
                finding.onnxNodes.push_back(producer->name);
                Evidence from = parserLine(context, producer->name).value_or(nodeEvidence(context, *producer, ""));
                from.text = "computes " + std::string(producer->outputs.empty() ? "" : producer->outputs[0]) +
                            ", read by " + node.name;
                finding.evidence.push_back(std::move(from));
            }
            for (std::size_t layer : fallbackLayers(context, node.name))
            {
                addUnique(layers, layer);
            }
        }
        if (nodes.empty())
        {
            return;
        }
        std::sort(layers.begin(), layers.end());
        describe(context, finding, nodes, layers, viaIdentity);
        sink.add(std::move(finding));
    }

    //! Without a model: a layer that executes a BatchNormalization together with the parser fallback's unnamed
    //! ElementWise layers, and the unnamed PointWise layer that feeds it.
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        Finding finding = makeFinding(info(), "");
        finding.likely = true;
        std::vector<std::string> nodes;
        std::vector<std::size_t> layers;
        for (std::size_t i = 0; i < plan.layers.size(); ++i)
        {
            const EngineLayer& layer = plan.layers[i];
            std::string batchNorm;
            for (const auto& token : parseLayerName(layer.name).tokens)
            {
                if (token.find("BatchNorm") != std::string::npos)
                {
                    batchNorm = token;
                }
            }
            if (batchNorm.empty() || !hasUnnamedElementWise(layer) || layerNameHas(layer, "Conv"))
            {
                continue;
            }
            nodes.push_back(batchNorm);
            finding.onnxNodes.push_back(batchNorm);
            addUnique(layers, i);
            finding.evidence.push_back(layerEvidence(context, i, "Name",
                                                     "executes " + batchNorm +
                                                         " with the parser's unnamed ElementWise layers, apart "
                                                         "from any convolution"));
            // The fallback's other elementwise layers fused into a PointWise layer that feeds this one: by tensor
            // when the list has tensors, else the layer just before it (names-only lists keep execution order).
            std::optional<std::size_t> feeder;
            if (!layer.inputs.empty())
            {
                feeder = producerLayer(plan, layer.inputs[0].name);
            }
            else if (i > 0)
            {
                feeder = i - 1;
            }
            if (feeder && onlyUnnamedLayers(plan.layers[*feeder]))
            {
                addUnique(layers, *feeder);
            }
        }
        if (nodes.empty())
        {
            return;
        }
        std::sort(layers.begin(), layers.end());
        describe(context, finding, nodes, layers, false);
        sink.add(std::move(finding));
    }

    //! The convolutions whose float output the unfolded BatchNormalization layers read, with an INT8 input: they
    //! write float because those float layers read their output (TREx's ConvLinter flags them "Quantized Convolution
    //! has float outputs"; in trex-notebooks-yolo-orin-trt852 the downsample convs of layer2.0-4.0). Named by the
    //! finding, not charged: they stay.
    static std::vector<std::size_t> int8ConvsWritingFloatInto(const Context& context,
                                                              const std::vector<std::size_t>& layers)
    {
        std::vector<std::size_t> writers;
        const EnginePlan* plan = context.engine();
        if (plan == nullptr)
        {
            return writers;
        }
        for (std::size_t layer : layers)
        {
            for (const auto& input : plan->layers[layer].inputs)
            {
                auto producer = producerLayer(*plan, input.name);
                if (!producer || std::find(layers.begin(), layers.end(), *producer) != layers.end())
                {
                    continue;
                }
                const EngineLayer& writer = plan->layers[*producer];
                if (precision::isWeightedLayer(writer) && !writer.inputs.empty() &&
                    isQuantized(inputPrecision(writer)) && isFloat(outputPrecision(writer)))
                {
                    addUnique(writers, *producer);
                }
            }
        }
        return writers;
    }

    static void describe(const Context& context, Finding& finding, const std::vector<std::string>& nodes,
                         const std::vector<std::size_t>& layers, bool viaIdentity)
    {
        finding.engineLayers = layerNames(context, layers);
        finding.costMs = sumTimes(context, layers);
        std::string engineText;
        if (!layers.empty())
        {
            engineText = " In the engine they run as " + std::to_string(layers.size()) + " separate layer(s) (" +
                         nameList(finding.engineLayers, 2) + ")" +
                         (finding.costMs ? ", " + formatMs(*finding.costMs) : std::string()) +
                         ", in float, between the convolution and its consumer.";
        }
        const std::vector<std::size_t> writers = int8ConvsWritingFloatInto(context, layers);
        if (!writers.empty())
        {
            const std::vector<std::string> writerNames = layerNames(context, writers);
            engineText += " The INT8 convolution(s) before them (" + nameList(writerNames, 2) +
                          ") write float because these float layers read their output.";
            finding.engineLayers.insert(finding.engineLayers.end(), writerNames.begin(), writerNames.end());
        }
        finding.message =
            std::to_string(nodes.size()) + " BatchNormalization node(s) (" + nameList(nodes, 3) +
            ") have a scale, bias, mean or variance that is not an initializer" +
            (viaIdentity ? " (it passes through an Identity node)" : "") +
            ": TensorRT's ONNX parser folds a BatchNormalization into one per-channel Scale, which the builder fuses "
            "into the convolution before it, only when all four are weights; otherwise it computes "
            "(x - mean) / sqrt(var + epsilon) * scale + bias with elementwise layers." +
            engineText;
        finding.fix =
            "constant-fold the model before building, so that the parameters are initializers again: "
            "`polygraphy surgeon sanitize model.onnx --fold-constants -o folded.onnx` (or onnx-simplifier); " +
            std::string(precisionFlagsApply(context) ? "building with --fp16 does not fold them"
                                                     : "an FP16 model does not fold them either");
        if (viaIdentity)
        {
            // A guess: torch.onnx replaces an initializer equal to another by an Identity of that one.
            finding.fix += "; the Identity nodes likely come from the exporter deduplicating parameters with equal "
                           "values, which constant folding undoes";
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeBatchNormNotFolded()
{
    return std::make_unique<BatchNormNotFolded>();
}

} // namespace qdq::rules
