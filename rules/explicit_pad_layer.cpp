// explicit-pad-layer: a Pad whose output feeds only convolutions or poolings but that TensorRT cannot fold into them,
// so it runs as its own layer that copies the whole tensor: a non-zero pad value, a reflect/edge mode, negative pads,
// pads computed at run time, or a pooling after it. A zero Pad with non-negative pads before a convolution folds
// (fusion table "Padding + Convolution/Deconvolution") and is not reported; a Q/DQ pair between the Pad and the
// convolution is qdq-between-pad-and-conv's (docs/rules/explicit-pad-layer.md).
#include "rules/kernel_common.h"
#include "rules/rules.h"

#include <algorithm>
#include <string>

namespace qdq::rules
{

namespace
{

using namespace patterns;

bool isConvolution(std::string_view opType)
{
    return opType == "Conv" || opType == "ConvTranspose";
}

bool isPooling(std::string_view opType)
{
    return opType == "MaxPool" || opType == "AveragePool";
}

//! Whether tensor is computed from constants and shapes only (an exporter's pads subgraph: ConstantOfShape, Concat,
//! Reshape, Slice, Transpose, Cast of initializers), so its values are known when the engine is built. A network
//! input's values (not through Shape or Size) make it a run-time value.
bool knownAtBuildTime(const OnnxGraph& graph, const std::string& tensor, int depth, TensorMemo& memo);

bool decideKnownAtBuildTime(const OnnxGraph& graph, const std::string& tensor, int depth, TensorMemo& memo)
{
    if (tensor.empty() || isConstantTensor(graph, tensor) || graph.constant(tensor) != nullptr)
    {
        return true;
    }
    const OnnxNode* producer = producerOf(graph, tensor);
    if (producer == nullptr || depth > 32)
    {
        return false; // a network input, or a chain too deep to follow
    }
    if (readsShapeOnly(producer->opType))
    {
        return true;
    }
    for (const auto& input : producer->inputs)
    {
        if (!knownAtBuildTime(graph, input, depth + 1, memo))
        {
            return false;
        }
    }
    return true;
}

//! Each tensor decided once (TensorMemo): a pads subgraph that reads one tensor twice at every level stays linear.
bool knownAtBuildTime(const OnnxGraph& graph, const std::string& tensor, int depth, TensorMemo& memo)
{
    return memo.decide(graph.tensors.find(TensorKey(tensor)),
                       [&] { return decideKnownAtBuildTime(graph, tensor, depth, memo); });
}

bool knownAtBuildTime(const OnnxGraph& graph, const std::string& tensor)
{
    TensorMemo memo;
    return decideKnownAtBuildTime(graph, tensor, 0, memo);
}

//! Why TensorRT cannot fold the Pad into the convolution or pooling that reads it; empty when it can. `likely` is set
//! when no source settles the reason.
std::string whyNotFolded(const OnnxGraph& graph, const OnnxNode& pad, bool beforePooling, bool& likely)
{
    if (const OnnxAttribute* mode = pad.attribute("mode"); mode != nullptr && mode->s != "constant")
    {
        return "it pads in mode \"" + mode->s + "\", and only zero padding folds into a convolution";
    }
    const OnnxAttribute* valueAttribute = pad.attribute("value");
    if (valueAttribute != nullptr && valueAttribute->f != 0.0)
    {
        return "it pads with the value " + std::to_string(valueAttribute->f) + ", and only zero padding folds";
    }
    if (pad.inputs.size() >= 3 && !pad.inputs[2].empty())
    {
        const OnnxConstant* value = graph.constant(pad.inputs[2]);
        if (value != nullptr && value->values.size() == 1 && value->values[0] != 0.0)
        {
            return "it pads with the value " + std::to_string(value->values[0]) + ", and only zero padding folds";
        }
    }
    std::vector<std::int64_t> pads;
    if (const OnnxAttribute* attribute = pad.attribute("pads"))
    {
        pads = attribute->ints;
    }
    else if (pad.inputs.size() >= 2 && !pad.inputs[1].empty())
    {
        const OnnxConstant* constant = graph.constant(pad.inputs[1]);
        if (constant == nullptr && !knownAtBuildTime(graph, pad.inputs[1]))
        {
            likely = true;
            return "its pads (" + pad.inputs[1] +
                   ") depend on a network input's values, so the builder cannot fold them";
        }
        if (constant != nullptr)
        {
            pads.assign(constant->values.begin(), constant->values.end());
        }
    }
    for (std::int64_t p : pads)
    {
        if (p < 0)
        {
            return "it has negative pads (it crops), and the fusion needs all padding sizes non-negative";
        }
    }
    if (beforePooling)
    {
        likely = true;
        return "a pooling reads it, and TensorRT's fusion list has Padding + Convolution but no Padding + Pooling";
    }
    return {};
}

class ExplicitPadLayer final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"explicit-pad-layer",
                                    "",
                                    "A Pad before a convolution or pooling that TensorRT cannot fold into it runs as "
                                    "its own layer that copies the whole tensor",
                                    Severity::kWarning,
                                    "8.0-10.x",
                                    kNeedsOnnxOrEngine | kReadsCorrelation | kReadsModelValues,
                                    "the padding moves into the convolution's pads attribute in the export (the "
                                    "framework code or the converter's options), which `fix` does not rewrite"};
        return kInfo;
    }

private:
    //! The Pads whose readers are all convolutions or poolings (reading the padded tensor as their data input).
    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const OnnxNode& pad : graph.nodes)
        {
            if (pad.opType != "Pad" || pad.outputs.empty())
            {
                continue;
            }
            const auto readers = consumersOf(graph, pad.outputs[0]);
            bool allFoldable = readers.size() > 0;
            bool beforePooling = false;
            for (const OnnxNode* reader : readers)
            {
                allFoldable = allFoldable && (isConvolution(reader->opType) || isPooling(reader->opType)) &&
                              !reader->inputs.empty() && reader->inputs[0] == pad.outputs[0];
                beforePooling = beforePooling || isPooling(reader->opType);
            }
            if (!allFoldable)
            {
                continue; // a Q/DQ between the Pad and the conv is qdq-between-pad-and-conv's; other readers need it
            }
            bool likely = false;
            const std::string why = whyNotFolded(graph, pad, beforePooling, likely);
            if (why.empty())
            {
                continue; // zero padding, non-negative: TensorRT folds it into the convolution
            }
            sink.add(describeNode(context, pad, **readers.begin(), why, likely));
        }
    }

    Finding describeNode(const Context& context, const OnnxNode& pad, const OnnxNode& reader, const std::string& why,
                         bool likely) const
    {
        Finding finding = makeFinding(info(), "");
        finding.onnxNodes = {pad.name, reader.name};
        finding.evidence.push_back(
            nodeEvidence(context, pad, "Pad feeding " + reader.name + " (" + reader.opType + "): " + why));
        // With an engine: the Pad's own layer, apart from the reader's, confirms it and gives its time.
        const auto padLayers = layersOf(context, pad.name);
        const auto readerLayers = layersOf(context, reader.name);
        const bool ownLayer = context.engine() != nullptr && !padLayers.empty() && padLayers != readerLayers;
        if (context.engine() != nullptr && !padLayers.empty() && !ownLayer)
        {
            likely = true; // the engine shows the Pad inside the reader's layer; unusual, say so
        }
        if (ownLayer)
        {
            finding.engineLayers = layerNames(context, padLayers);
            finding.costMs = sumTimes(context, padLayers);
            finding.evidence.push_back(
                layerEvidence(context, padLayers.front(), "Name", "the Pad runs in its own layer"));
        }
        finding.likely = likely || context.engine() == nullptr;
        finding.message =
            "Pad " + pad.name + " before " + reader.opType + " " + reader.name +
            " runs as its own layer that copies the padded tensor" +
            (ownLayer                      ? std::string()
             : context.engine() != nullptr ? std::string(" (likely; no engine layer is mapped to it)")
                                           : std::string(" (likely; give the engine's layer list to confirm)")) +
            ": " + why + ".";
        finding.fix = isPooling(reader.opType) ? poolingFix() : convolutionFix();
        return finding;
    }

    static std::string convolutionFix()
    {
        return "fold the padding into the convolution's pads attribute in the export: nn.Conv2d(padding=...) "
               "instead of nn.ZeroPad2d / F.pad before it; for TensorFlow \"same\" padding let the converter write it "
               "into the Conv (tf2onnx does when the padding is symmetric); a reflect or edge padding has no "
               "convolution equivalent: keep it, or train with zero padding";
    }

    static std::string poolingFix()
    {
        return "give the pooling the padding in its own pads attribute (MaxPool pads with -inf, which equals zero "
               "padding when its input is non-negative, e.g. after a ReLU; AveragePool with count_include_pad=1 "
               "averages zeros like the Pad did)";
    }

    //! Without a model: a Padding layer whose output only convolutions or poolings read.
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan* plan = kernels::mappedEngine(context);
        if (plan == nullptr)
        {
            return;
        }
        for (std::size_t i = 0; i < plan->layers.size(); ++i)
        {
            const EngineLayer& layer = plan->layers[i];
            if (layer.type != "Padding" || layer.outputs.empty() || layerNameHas(layer, "QuantizeLinear"))
            {
                continue; // a quantized Pad is qdq-between-pad-and-conv's
            }
            const auto readers = consumerLayers(*plan, layer.outputs[0].name);
            bool allFoldable = !readers.empty();
            for (std::size_t reader : readers)
            {
                const std::string& type = plan->layers[reader].type;
                allFoldable = allFoldable && (type.find("Convolution") != std::string::npos ||
                                              type.find("Pooling") != std::string::npos);
            }
            if (!allFoldable)
            {
                continue;
            }
            // The reader decides the advice: a pooling takes its padding in its own pads attribute, a convolution
            // folds a zero padding (a Pad before a MaxPool is not folded into a convolution).
            const auto isPoolingLayer = [&](std::size_t reader)
            { return plan->layers[reader].type.find("Pooling") != std::string::npos; };
            const bool allPooling = std::all_of(readers.begin(), readers.end(), isPoolingLayer);
            const bool anyPooling = std::any_of(readers.begin(), readers.end(), isPoolingLayer);
            Finding finding = makeFinding(info(), "");
            finding.likely = true;
            finding.engineLayers = {layer.name};
            finding.costMs = layerTime(context, i);
            finding.evidence.push_back(
                layerEvidence(context, i, "LayerType", "Padding, read by " + plan->layers[readers.front()].name));
            const std::string before = "Padding layer \"" + layer.name + "\" runs on its own before \"" +
                                       plan->layers[readers.front()].name + "\"";
            finding.message =
                allPooling
                    ? before + ", a pooling: the padding is a layer of its own where the pooling's own pads attribute "
                               "would pad inside the pooling."
                    : before +
                          ": TensorRT folds a zero padding with non-negative pads into the convolution after "
                          "it, so this one likely pads with a value, a mode or negative sizes that do not fold" +
                          (anyPooling ? ", or also feeds a pooling" : "") + " (give the ONNX model to tell which).";
            finding.fix = allPooling   ? poolingFix()
                          : anyPooling ? convolutionFix() + "; for the pooling that reads it: " + poolingFix()
                                       : convolutionFix();
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeExplicitPadLayer()
{
    return std::make_unique<ExplicitPadLayer>();
}

} // namespace qdq::rules
