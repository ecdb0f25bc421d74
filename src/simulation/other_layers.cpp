// The layers of everything that is not a weighted op: PointWise chains, shuffles, Concat elimination, Myelin
// regions and single-op layers (pooling, SoftMax + TopK, Resize, plugins, ...).

#include "src/simulation/layer_formation.h"
#include "src/simulation/op_classes.h"

#include "qdq/patterns.h"

#include <algorithm>

namespace qdq::simulation
{

using namespace patterns;

namespace
{

bool isPoolingOp(std::string_view op)
{
    return isOneOfOps(op, {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"});
}

std::string join(const std::vector<std::string>& parts)
{
    std::string name;
    for (const auto& part : parts)
    {
        if (!name.empty())
        {
            name += " + ";
        }
        name += part;
    }
    return name;
}

//! A custom-domain op: a plugin layer, and whether it reads or writes INT8 (Q -> plugin -> DQ).
void describePlugin(const SimulationState& s, const OnnxNode& node, PredictedLayer& layer)
{
    layer.kind = "PluginV2";
    layer.guess = "a custom-domain op becomes a plugin layer when a plugin of that name is registered";
    // Q -> plugin -> DQ: the plugin takes and gives INT8 itself (TensorRT never fuses Q/DQ into a plugin,
    // but a plugin that declares INT8 formats reads a Quantize's output as it is).
    bool readsQuantized = false;
    for (const auto& input : node.inputs)
    {
        const OnnxNode* producer = input.empty() ? nullptr : s.graph.producer(input);
        readsQuantized = readsQuantized || (producer != nullptr && isQuantize(*producer));
    }
    bool writesQuantized = !node.outputs.empty();
    for (const auto& output : node.outputs)
    {
        const auto readers = patterns::consumersOf(s.graph, output);
        writesQuantized =
            writesQuantized && !readers.empty() &&
            std::all_of(readers.begin(), readers.end(), [](const OnnxNode* reader) { return isDequantize(*reader); });
    }
    layer.int8Input = readsQuantized;
    layer.int8Output = writesQuantized;
    if (readsQuantized || writesQuantized)
    {
        layer.guess += "; it reads or writes INT8 here (Q -> plugin -> DQ), which the plugin must support";
    }
}

//! The kind of the layer of one node (and the guess, where the kind is not documented).
void classifySingle(const SimulationState& s, const OnnxNode& node, PredictedLayer& layer)
{
    const std::string& op = node.opType;
    if (isPoolingOp(op) || isSpatialMean(s.graph, node))
    {
        layer.kind = "Pooling";
    }
    else if (op == "Softmax" || op == "LogSoftmax")
    {
        layer.kind = "SoftMax";
    }
    else if (isOneOfOps(op, {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2"}))
    {
        layer.kind = "Reduce";
    }
    else if (isOneOfOps(op, {"Resize", "Upsample"}))
    {
        layer.kind = "Resize";
    }
    else if (isOneOfOps(op, {"Slice", "Split"}))
    {
        layer.kind = "Slice";
    }
    else if (op == "Pad")
    {
        layer.kind = "Padding";
    }
    else if (op == "MatMul")
    {
        layer.kind = s.usesMyelinForGemm() ? "Myelin" : "MatrixMultiply";
        if (s.usesMyelinForGemm())
        {
            layer.name = "{ForeignNode[" + node.name + "]}";
        }
    }
    else if (isOneOfOps(op, {"Gather", "GatherElements", "GatherND"}))
    {
        layer.kind = "Gather";
    }
    else if (isOneOfOps(op, {"ArgMax", "ArgMin", "TopK"}))
    {
        layer.kind = "TopK";
    }
    else if (op == "Cast")
    {
        layer.kind = "Cast";
    }
    else if (op == "NonMaxSuppression")
    {
        layer.kind = "NMS";
    }
    else if (op == "BatchNormalization")
    {
        layer.kind = "Scale";
        layer.guess = "a BatchNormalization whose parameters are computed (not initializers) is not folded into "
                      "the conv: a Scale layer, with a PointWise layer for its variance";
    }
    else if (patterns::isOperatorFormatQuantized(node))
    {
        layer.kind = op;
        layer.guess = "TensorRT's ONNX parser has no importer for " + op +
                      " and the build fails here (quantized-op-not-importable); one layer is shown in its place";
    }
    else if (node.isCustomDomain())
    {
        describePlugin(s, node, layer);
    }
    else
    {
        layer.kind = op;
        layer.guess = "no documented TensorRT layer for " + op + ": one layer assumed";
    }
}

} // namespace

//! Pointwise nodes that follow `last` with nothing else reading in between join the PointWise layer.
void extendPointwise(SimulationState& s, std::uint32_t layer, const OnnxNode* last, std::vector<std::string>& parts)
{
    // What the layer reads from outside: a binary op on one of them joins too (x * sigmoid(x)).
    const auto layerInputs = s.activationInputs(*last);
    for (int step = 0; step < 64; ++step)
    {
        const OnnxNode* next = s.soleConsumer(s.firstOutput(*last));
        if (next == nullptr || s.layerOf[next->index] != kNone || !isPointwiseOp(next->opType) || s.folded[next->index])
        {
            break;
        }
        // A binary op joins when its other input is constant or already computed by this layer's nodes.
        bool joins = true;
        for (std::uint32_t input : s.activationInputs(*next))
        {
            if (input == s.firstOutput(*last))
            {
                continue;
            }
            if (std::find(layerInputs.begin(), layerInputs.end(), input) != layerInputs.end())
            {
                continue;
            }
            const OnnxNode* producer = s.graph.producerOf(input);
            if (producer == nullptr || s.layerOf[producer->index] != layer)
            {
                joins = false;
            }
        }
        if (!joins)
        {
            break;
        }
        s.assign(layer, *next);
        parts.push_back(next->name);
        last = next;
    }
}

std::string pwnName(const std::vector<std::string>& parts)
{
    std::string name = "PWN(" + (parts.empty() ? std::string() : parts[0]) + ")";
    for (std::size_t i = 1; i < parts.size(); ++i)
    {
        name = "PWN(" + name + ", " + parts[i] + ")";
    }
    return name;
}

std::string joinViews(const std::vector<std::pair<std::string_view, bool>>& parts)
{
    std::size_t size = 0;
    for (const auto& [part, pwn] : parts)
    {
        size += part.size() + 3 + (pwn ? 5 : 0);
    }
    std::string name;
    name.reserve(size);
    for (const auto& [part, pwn] : parts)
    {
        if (!name.empty())
        {
            name += " + ";
        }
        if (pwn)
        {
            name += "PWN(";
        }
        name += part;
        if (pwn)
        {
            name += ')';
        }
    }
    return name;
}

void buildPointwise(SimulationState& s, const OnnxNode& node)
{
    PredictedLayer layer;
    layer.kind = "PointWise";
    layer.role = "float-" + node.opType;
    const std::uint32_t index = s.newLayer(std::move(layer));
    s.assign(index, node);
    std::vector<std::string> parts = {node.name};
    extendPointwise(s, index, &node, parts);
    s.out.layers[index].name = pwnName(parts);
    if (parts.size() == 1 && node.opType == "BatchNormalization")
    {
        s.out.layers[index].kind = "Scale";
    }
}

//! Consecutive shuffles are one layer: a Shuffle when one transposes, else a NoOp (a reshape of the same
//! memory); a reshape of (N, C, 1, 1) into a fully connected layer vanishes into it.
void buildShuffle(SimulationState& s, const OnnxNode& node)
{
    PredictedLayer layer;
    layer.role = "float-" + node.opType;
    const std::uint32_t index = s.newLayer(std::move(layer));
    s.assign(index, node);
    std::vector<std::string> parts = {node.name};
    bool transposes = node.opType == "Transpose";
    const OnnxNode* last = &node;
    for (int step = 0; step < 16; ++step)
    {
        const OnnxNode* next = s.soleConsumer(s.firstOutput(*last));
        if (next == nullptr || s.layerOf[next->index] != kNone || !isShuffleOp(next->opType) || s.folded[next->index])
        {
            break;
        }
        s.assign(index, *next);
        parts.push_back(next->name);
        transposes = transposes || next->opType == "Transpose";
        last = next;
    }
    PredictedLayer& built = s.out.layers[index];
    built.name = join(parts);
    built.kind = transposes ? "Shuffle" : "NoOp";
    const OnnxNode* consumer = s.consumerThroughQdq(s.firstOutput(*last));
    const OnnxNode* source = node.inputs.empty() ? nullptr : producerOf(s.graph, node.inputs[0]);
    if (!transposes && consumer != nullptr && isWeighted(s.graph, *consumer) &&
        (consumer->opType == "Gemm" || consumer->opType == "MatMul") && source != nullptr &&
        isOneOfOps(source->opType, {"GlobalAveragePool", "GlobalMaxPool", "ReduceMean"}))
    {
        // Flatten of a pooled (N, C, 1, 1) tensor: the fully connected layer reads it as it is.
        built.kind = "NoOp";
        built.role = "eliminated";
        built.guess = "a flatten of a globally pooled tensor into a fully connected layer needs no layer";
    }
}

//! Concat elimination: producers write into the concatenated tensor. An input that is also read elsewhere, or
//! a network input, is copied ("<tensor> copy").
void buildConcat(SimulationState& s, const OnnxNode& node)
{
    std::vector<std::string> copies;
    for (std::uint32_t input : s.activationInputs(node))
    {
        const OnnxNode* producer = s.graph.producerOf(input);
        if (producer == nullptr || s.consumers(input).size() > 1)
        {
            copies.push_back(s.graph.tensors.names[input]);
        }
    }
    PredictedLayer layer;
    layer.role = "eliminated";
    layer.kind = "NoOp";
    layer.name = node.name;
    layer.guess = "Concat elimination: the inputs are written in place";
    const std::uint32_t index = s.newLayer(std::move(layer));
    s.assign(index, node);
    for (const auto& tensor : copies)
    {
        PredictedLayer copy;
        copy.kind = "Reformat";
        copy.role = "concat-copy";
        copy.name = tensor + " copy";
        copy.guess = "the input is read elsewhere too, so TensorRT copies it into the concatenation";
        s.copies.push_back(std::move(copy));
    }
}

//! A Myelin region on the versions that make them (src/simulation/myelin_pass.cpp).
void buildMyelin(SimulationState& s, const OnnxNode& seed)
{
    GrownMyelinRegion region = s.myelin.grow(seed);
    if (region.members.empty())
    {
        return;
    }
    PredictedLayer layer;
    layer.kind = "Myelin";
    layer.role = "float-Myelin";
    layer.name = std::move(region.name);
    layer.guess = std::move(region.guess);
    layer.int8Input = region.int8Input;
    layer.int8Output = region.int8Output;
    const std::uint32_t index = s.newLayer(std::move(layer));
    for (std::uint32_t member : region.members)
    {
        s.layerOf[member] = index;
    }
    s.layerNodes[index] = std::move(region.members);
}

void buildSingle(SimulationState& s, const OnnxNode& node)
{
    PredictedLayer layer;
    layer.role = "float-" + node.opType;
    layer.name = node.name;
    classifySingle(s, node, layer);
    const std::uint32_t index = s.newLayer(std::move(layer));
    s.assign(index, node);
    // SoftMax + TopK: one layer (ArgMax is a TopK with k = 1).
    if (node.opType == "Softmax" || node.opType == "LogSoftmax")
    {
        const OnnxNode* next = s.soleConsumer(s.firstOutput(node));
        if (next != nullptr && s.layerOf[next->index] == kNone && isOneOfOps(next->opType, {"ArgMax", "TopK"}))
        {
            s.assign(index, *next);
            s.out.layers[index].name += " + " + next->name;
            s.out.layers[index].kind = "LogSoftmaxTopK";
        }
    }
}

} // namespace qdq::simulation
