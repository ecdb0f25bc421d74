#include "qdq/patterns.h"

#include "qdq/layer_names.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace qdq::patterns
{

bool isCustomOp(const OnnxNode& node)
{
    return !node.domain.empty() && node.domain != "ai.onnx" && node.domain != "ai.onnx.ml" && !isQdq(node);
}

namespace
{
//! Small fixed sets of operation types: a linear scan of short strings beats hashing them.
template <std::size_t N>
bool isOneOf(std::string_view opType, const std::string_view (&set)[N])
{
    for (std::string_view candidate : set)
    {
        if (candidate == opType)
        {
            return true;
        }
    }
    return false;
}
} // namespace

namespace
{
constexpr std::string_view kOnnxIntegerOps[] = {"QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger",
                                                "DynamicQuantizeLinear"};
constexpr std::string_view kOnnxRuntimeIntegerOps[] = {"QGemm",
                                                       "QAttention",
                                                       "QEmbedLayerNormalization",
                                                       "DynamicQuantizeMatMul",
                                                       "DynamicQuantizeLSTM",
                                                       "MatMulNBits",
                                                       "MatMulIntegerToFloat",
                                                       "MatMulBnb4",
                                                       "GatherBlockQuantized"};
} // namespace

bool isIntegerOpName(std::string_view opType)
{
    return isOneOf(opType, kOnnxIntegerOps) || opType.starts_with("QLinear") || opType.starts_with("QOrdered") ||
           isOneOf(opType, kOnnxRuntimeIntegerOps);
}

bool isOperatorFormatQuantized(const OnnxNode& node)
{
    if (node.domain.empty() || node.domain == "ai.onnx")
    {
        return isOneOf(node.opType, kOnnxIntegerOps);
    }
    return node.domain == "com.microsoft" && isIntegerOpName(node.opType);
}

bool isNormalizationMean(const OnnxGraph& graph, const OnnxNode& node)
{
    if (node.opType != "ReduceMean" || node.inputs.empty() || node.outputs.empty())
    {
        return false;
    }
    for (const OnnxNode* reader : consumersOf(graph, node.outputs[0]))
    {
        if (reader->opType == "Sub" &&
            std::find(reader->inputs.begin(), reader->inputs.end(), node.inputs[0]) != reader->inputs.end())
        {
            return true;
        }
    }
    const OnnxNode* producer = producerOf(graph, node.inputs[0]);
    return producer != nullptr &&
           (producer->opType == "Pow" ||
            (producer->opType == "Mul" && producer->inputs.size() == 2 && producer->inputs[0] == producer->inputs[1]));
}

bool isSpatialMean(const OnnxGraph& graph, const OnnxNode& node)
{
    if (node.opType != "ReduceMean" || node.inputs.empty() || isNormalizationMean(graph, node))
    {
        return false;
    }
    if (const OnnxAttribute* keep = node.attribute("keepdims"); keep != nullptr && keep->i == 0)
    {
        return false;
    }
    std::vector<std::int64_t> axes;
    if (const OnnxAttribute* attribute = node.attribute("axes"))
    {
        axes = attribute->ints; // opset 17 and earlier
    }
    else if (node.inputs.size() > 1 && !node.inputs[1].empty())
    {
        const OnnxConstant* constant = graph.constant(node.inputs[1]); // opset 18: an input
        if (constant == nullptr || !constant->dataLoaded)
        {
            return false;
        }
        for (double value : constant->values)
        {
            axes.push_back(static_cast<std::int64_t>(value));
        }
    }
    std::sort(axes.begin(), axes.end());
    return axes == std::vector<std::int64_t>{2, 3} || axes == std::vector<std::int64_t>{-2, -1};
}

bool isAveragePooling(const OnnxGraph& graph, const OnnxNode& node)
{
    return node.opType == "GlobalAveragePool" || node.opType == "AveragePool" || isSpatialMean(graph, node);
}

bool isConstantTensor(const OnnxGraph& graph, const std::string& tensor)
{
    return graph.isConstant(tensor);
}

bool isConstantLike(const OnnxGraph& graph, const std::string& tensor, int depth)
{
    if (isConstantTensor(graph, tensor))
    {
        return true;
    }
    const OnnxNode* producer = producerOf(graph, tensor);
    if (producer == nullptr || depth > 6 || producer->inputs.empty())
    {
        return false;
    }
    static constexpr std::string_view kPassThrough[] = {"Identity", "Transpose", "Reshape", "Cast"};
    if (producer->opType == "Constant")
    {
        return true;
    }
    return (isQdq(*producer) || isOneOf(producer->opType, kPassThrough)) &&
           isConstantLike(graph, producer->inputs[0], depth + 1);
}

const OnnxNode* selfGateOf(const OnnxGraph& graph, const OnnxNode& mul)
{
    if (mul.opType != "Mul" || mul.inputs.size() != 2)
    {
        return nullptr;
    }
    for (std::size_t k = 0; k < 2; ++k)
    {
        const OnnxNode* gate = producerOf(graph, mul.inputs[k]);
        if (gate != nullptr && isSelfGate(gate->opType) && !gate->inputs.empty() && !gate->inputs[0].empty() &&
            gate->inputs[0] == mul.inputs[1 - k])
        {
            return gate;
        }
    }
    return nullptr;
}

namespace
{

bool isShapeValue(const OnnxGraph& graph, const std::string& tensor, int depth, TensorMemo& memo);

bool decideShapeValue(const OnnxGraph& graph, const std::string& tensor, int depth, TensorMemo& memo)
{
    const OnnxNode* producer = producerOf(graph, tensor);
    if (producer == nullptr || depth > 8)
    {
        return false;
    }
    if (readsShapeOnly(producer->opType))
    {
        return true;
    }
    // The integer arithmetic exporters write around a Shape. Any other producer (a conv, an activation, a Q/DQ) ends
    // the walk at once; the walk follows one input at a time and stops at the first that is no shape value, so it
    // goes at most 9 levels deep (a chain of residual Adds), and each tensor is decided once (TensorMemo).
    static constexpr std::string_view kShapeArithmetic[] = {
        "Gather", "Cast", "Unsqueeze", "Squeeze", "Concat", "Slice", "Mul", "Div", "Add",  "Sub",
        "Floor",  "Ceil", "Identity",  "Reshape", "Range",  "Max",   "Min", "Neg", "Equal"};
    if (!isOneOf(producer->opType, kShapeArithmetic))
    {
        return false;
    }
    bool anyShape = false;
    for (const auto& input : producer->inputs)
    {
        if (input.empty() || isConstantTensor(graph, input))
        {
            continue;
        }
        const OnnxNode* inputProducer = producerOf(graph, input);
        if (inputProducer != nullptr && inputProducer->opType == "Constant")
        {
            continue;
        }
        if (!isShapeValue(graph, input, depth + 1, memo))
        {
            return false;
        }
        anyShape = true;
    }
    return anyShape;
}

bool isShapeValue(const OnnxGraph& graph, const std::string& tensor, int depth, TensorMemo& memo)
{
    return memo.decide(graph.tensors.find(TensorKey(tensor)),
                       [&] { return decideShapeValue(graph, tensor, depth, memo); });
}

} // namespace

bool isShapeValue(const OnnxGraph& graph, const std::string& tensor)
{
    TensorMemo memo; // allocates only when the walk goes past tensor's producer
    return decideShapeValue(graph, tensor, 0, memo);
}

bool isWeighted(const OnnxGraph& graph, const OnnxNode& node)
{
    const std::string_view opType = node.opType;
    if (opType == std::string_view("Conv") || opType == std::string_view("ConvTranspose") ||
        opType == std::string_view("Gemm"))
    {
        return true;
    }
    if (opType == std::string_view("MatMul") && node.inputs.size() >= 2)
    {
        return isConstantLike(graph, node.inputs[1]);
    }
    return false;
}

bool isCommuting(const std::string& opType)
{
    static constexpr std::string_view kOps[] = {"MaxPool",   "Concat",    "Slice",         "Split",
                                                "Reshape",   "Transpose", "Flatten",       "Squeeze",
                                                "Unsqueeze", "Identity",  "GlobalMaxPool", "Pad"};
    return isOneOf(opType, kOps);
}

bool carriesData(const OnnxGraph& graph, const OnnxNode& node, std::uint32_t tensor)
{
    if (node.opType == "Concat")
    {
        return true;
    }
    const auto inputs = graph.inputIds(node.index);
    return !inputs.empty() && inputs[0] == tensor;
}

bool carriesData(const OnnxNode& node, const std::string& tensor)
{
    return node.opType == "Concat" || (!node.inputs.empty() && node.inputs[0] == tensor);
}

bool isActivation(const std::string& opType)
{
    static constexpr std::string_view kOps[] = {
        "Relu", "Clip", "LeakyRelu", "Sigmoid",  "Tanh",  "HardSwish",       "HardSigmoid",
        "Gelu", "Elu",  "Selu",      "Softplus", "PRelu", "ThresholdedRelu", "Mish"};
    return isOneOf(opType, kOps);
}

bool isEpilogue(const std::string& opType)
{
    return opType == "BatchNormalization" || isActivation(opType);
}

bool isQuantizableNonWeighted(const std::string& opType)
{
    static constexpr std::string_view kOps[] = {"Add",    "Mul",      "Sub", "Div", "AveragePool", "GlobalAveragePool",
                                                "Resize", "Upsample", "Sum", "Max", "Min",         "ReduceMean",
                                                "Softmax"};
    return isOneOf(opType, kOps);
}

bool isQuantizableActivation(const std::string& opType)
{
    // onnx/onnx-tensorrt docs/operators.md (TensorRT 8.4 matrix): INT8 for Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid,
    // Clip, Elu, Selu, Softplus; HardSwish is HardSigmoid x Mul in TensorRT's importer.
    static constexpr std::string_view kOps[] = {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid",
                                                "Clip", "Elu",     "Selu", "Softplus",  "HardSwish"};
    return isOneOf(opType, kOps);
}

const OnnxNode* producerOf(const OnnxGraph& graph, const std::string& tensor)
{
    return graph.producer(tensor);
}

NodeRefs consumersOf(const OnnxGraph& graph, const std::string& tensor)
{
    return NodeRefs(graph.nodes.data(), graph.consumers(tensor));
}

bool isGraphInput(const OnnxGraph& graph, const std::string& tensor)
{
    return std::find(graph.graphInputs.begin(), graph.graphInputs.end(), tensor) != graph.graphInputs.end();
}

bool isGraphOutput(const OnnxGraph& graph, const std::string& tensor)
{
    return std::find(graph.graphOutputs.begin(), graph.graphOutputs.end(), tensor) != graph.graphOutputs.end();
}

const OnnxNode* feedingDequantize(const OnnxGraph& graph, const std::string& tensor)
{
    // A pointer, not a copy: the graph resolves its own tensor strings without hashing.
    const std::string* current = &tensor;
    for (int depth = 0; depth < 64; ++depth)
    {
        const OnnxNode* producer = graph.producer(*current);
        if (producer == nullptr)
        {
            return nullptr;
        }
        if (isDequantize(*producer))
        {
            return producer;
        }
        if (!isCommuting(producer->opType) || producer->inputs.empty() || producer->opType == "Concat")
        {
            return nullptr;
        }
        current = &producer->inputs[0];
    }
    return nullptr;
}

const OnnxNode* quantizingSource(const OnnxGraph& graph, const std::string& tensor)
{
    const std::string* current = &tensor;
    for (int depth = 0; depth < 64; ++depth)
    {
        const OnnxNode* producer = graph.producer(*current);
        if (producer == nullptr)
        {
            return nullptr;
        }
        if (isQuantize(*producer))
        {
            return producer;
        }
        if (isOperatorFormatQuantized(*producer))
        {
            // Its output is float only for QGemm without y_scale and for the dynamic ops (MatMulInteger's INT32).
            const bool floatOutput =
                producer->opType == "QGemm" && (producer->inputs.size() < 8 || producer->inputs[7].empty());
            return floatOutput || producer->opType == "ConvInteger" || producer->opType == "MatMulInteger" ||
                           producer->opType == "DynamicQuantizeLinear"
                       ? nullptr
                       : producer;
        }
        if (!isCommuting(producer->opType) || producer->inputs.empty() || producer->opType == "Concat")
        {
            return nullptr;
        }
        current = &producer->inputs[0];
    }
    return nullptr;
}

ForwardQuantizers forwardQuantizers(const OnnxGraph& graph, const std::string& tensor, bool throughEpilogue)
{
    ForwardQuantizers result;
    // Tensor ids; the walk rarely visits more than a handful, so a vector is the visited set.
    std::vector<std::pair<std::uint32_t, int>> stack = {{graph.tensors.find(tensor), 0}};
    std::vector<std::uint32_t> visited;
    while (!stack.empty())
    {
        auto [current, depth] = stack.back();
        stack.pop_back();
        if (std::find(visited.begin(), visited.end(), current) != visited.end() || depth > 64)
        {
            continue;
        }
        visited.push_back(current);
        auto consumers = graph.consumersOf(current);
        if (consumers.empty() || (current != OnnxGraph::kNone && isGraphOutput(graph, graph.tensors.names[current])))
        {
            result.allPaths = false;
        }
        for (std::uint32_t consumerIndex : consumers)
        {
            const OnnxNode* consumer = &graph.nodes[consumerIndex];
            if (readsShapeOnly(consumer->opType))
            {
                continue; // reads the dimensions, not the values
            }
            if (isQuantize(*consumer))
            {
                result.quantizers.push_back(consumer);
            }
            else if ((isCommuting(consumer->opType) || (throughEpilogue && isEpilogue(consumer->opType))) &&
                     !consumer->outputs.empty() && carriesData(graph, *consumer, current))
            {
                for (std::uint32_t output : graph.outputIds(consumer->index))
                {
                    if (output != OnnxGraph::kNone)
                    {
                        stack.emplace_back(output, depth + 1);
                    }
                }
            }
            else
            {
                result.allPaths = false;
            }
        }
    }
    return result;
}

EpilogueChain epilogueChain(const OnnxGraph& graph, const OnnxNode& weighted)
{
    EpilogueChain chain;
    if (weighted.outputs.empty())
    {
        return chain;
    }
    chain.output = &weighted.outputs[0];
    for (int depth = 0; depth < 8; ++depth)
    {
        auto consumers = consumersOf(graph, chain.tensor());
        // SiLU: x -> Sigmoid -> Mul(x, sigmoid(x)); both consumers of x.
        if (consumers.size() == 2)
        {
            const OnnxNode* sigmoid = nullptr;
            const OnnxNode* mul = nullptr;
            for (const OnnxNode* consumer : consumers)
            {
                if (isSelfGate(consumer->opType))
                {
                    sigmoid = consumer;
                }
                else if (consumer->opType == "Mul")
                {
                    mul = consumer;
                }
            }
            if (sigmoid != nullptr && mul != nullptr && !sigmoid->outputs.empty() && !mul->outputs.empty() &&
                std::find(mul->inputs.begin(), mul->inputs.end(), sigmoid->outputs[0]) != mul->inputs.end())
            {
                chain.nodes.push_back(sigmoid);
                chain.nodes.push_back(mul);
                chain.output = &mul->outputs[0];
                continue;
            }
        }
        if (consumers.size() != 1 || !isEpilogue(consumers[0]->opType) || consumers[0]->outputs.empty())
        {
            break;
        }
        chain.nodes.push_back(consumers[0]);
        chain.output = &consumers[0]->outputs[0];
    }
    return chain;
}

std::optional<double> perTensorScale(const OnnxGraph& graph, const OnnxNode& qdqNode)
{
    const QdqParameters* parameters = graph.qdqOf(qdqNode.index);
    if (parameters == nullptr || parameters->scale.size() != 1)
    {
        return std::nullopt;
    }
    return parameters->scale[0];
}

bool scalesEqual(double a, double b)
{
    return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b));
}

bool withinUnificationBound(double smallest, double largest)
{
    return smallest > 0.0 && largest <= smallest * kMostUnifiedScaleRatio * (1.0 + 1e-6);
}

namespace
{

//! Why a Q's scale cannot be copied. A graph rebuilt from a build log knows each scale's shape from the parser's
//! lines (`Constant_1_output_0 -> ()[FLOAT]`, trex-notebooks-yolo-orin-trt852/trt.out:998: a scalar, one per-tensor
//! scale) but not its value, which TensorRT's verbose log does not print: that scale is unknown, not "not per-tensor".
std::string whyNoScaleOf(const OnnxGraph& graph, const OnnxNode& q)
{
    const QdqParameters* parameters = graph.qdqOf(q.index);
    if (parameters != nullptr && parameters->scaleIsConstant && parameters->scale.empty() &&
        parameters->scaleElements == 1)
    {
        return graph.rebuiltFromLog ? "the value of " + q.name +
                                          "'s scale is unknown: the build log gives its shape, one per-tensor scalar, "
                                          "but not its value; read it from the model (give the ONNX model too)"
                                    : "the value of " + q.name + "'s scale is unknown: the model does not hold it";
    }
    if (parameters != nullptr && parameters->scaleIsConstant && parameters->scaleElements > 1)
    {
        return "the scale of " + q.name + " is not one per-tensor constant: it is per-channel (" +
               std::to_string(parameters->scaleElements) + " values)";
    }
    if (parameters != nullptr && !parameters->scaleIsConstant)
    {
        return "the scale of " + q.name + " is computed in the graph, not a constant";
    }
    return "the scale of " + q.name + " is not one per-tensor positive constant";
}

} // namespace

const OnnxNode* scaleSourceAmong(const OnnxGraph& graph, const std::vector<const OnnxNode*>& quantizers,
                                 std::string* whyNot)
{
    const OnnxNode* smallestNode = nullptr;
    const OnnxNode* largestNode = nullptr;
    double smallest = 0.0;
    double largest = 0.0;
    for (const OnnxNode* q : quantizers)
    {
        auto scale = perTensorScale(graph, *q);
        if (!scale || *scale <= 0.0)
        {
            if (whyNot != nullptr)
            {
                *whyNot = whyNoScaleOf(graph, *q);
            }
            return nullptr;
        }
        if (smallestNode == nullptr || *scale < smallest)
        {
            smallestNode = q;
            smallest = *scale;
        }
        if (largestNode == nullptr || (*scale > largest && !scalesEqual(*scale, largest)))
        {
            largestNode = q;
            largest = *scale;
        }
    }
    if (largestNode == nullptr)
    {
        if (whyNot != nullptr)
        {
            *whyNot = "no quantizer to take a scale from";
        }
        return nullptr;
    }
    if (!withinUnificationBound(smallest, largest))
    {
        if (whyNot != nullptr)
        {
            const auto number = [](double value, int digits)
            {
                char text[32];
                std::snprintf(text, sizeof(text), "%.*g", digits, value);
                return std::string(text);
            };
            const std::string reason = number(smallest, 8) + " at " + smallestNode->name + " and " +
                                       number(largest, 8) + " at " + largestNode->name + " differ by " +
                                       number(largest / smallest, 3) + "x, more than " +
                                       number(kMostUnifiedScaleRatio, 3) + "x";
            *whyNot = "the scales of its quantizers, " + reason +
                      ": no one scale serves them, so the tensor needs a range from calibration data";
        }
        return nullptr;
    }
    return largestNode;
}

std::string scaleAdviceAmong(const OnnxGraph& graph, const std::vector<const OnnxNode*>& quantizers)
{
    std::string whyNot;
    const OnnxNode* source = scaleSourceAmong(graph, quantizers, &whyNot);
    if (source == nullptr)
    {
        return " with a calibrated scale (" + whyNot + ")";
    }
    char text[32];
    std::snprintf(text, sizeof(text), "%.8g", perTensorScale(graph, *source).value_or(0.0));
    return " with the scale of " + source->name + " (scale " + text + ")";
}

std::optional<double> layerTime(const Context& context, std::size_t layer)
{
    if (layer < context.correlation.layers.size())
    {
        return context.correlation.layers[layer].timeMs;
    }
    return std::nullopt;
}

std::optional<double> sumTimes(const Context& context, const std::vector<std::size_t>& layers)
{
    if (context.timings() == nullptr)
    {
        return std::nullopt;
    }
    double total = 0.0;
    bool any = false;
    for (std::size_t layer : layers)
    {
        if (auto time = layerTime(context, layer))
        {
            total += *time;
            any = true;
        }
    }
    return any ? std::optional<double>(total) : std::nullopt;
}

std::vector<std::size_t> layersOf(const Context& context, const std::string& onnxNode)
{
    auto layers = context.correlation.layersOfNode.find(onnxNode);
    return std::vector<std::size_t>(layers.begin(), layers.end());
}

bool layerNameHas(const EngineLayer& layer, std::string_view op)
{
    for (const auto& token : parseLayerName(layer.name).tokens)
    {
        if (token.find(op) != std::string::npos)
        {
            return true;
        }
    }
    return false;
}

Precision outputPrecision(const EngineLayer& layer)
{
    return layer.outputs.empty() ? Precision::kUnknown : layer.outputs.front().precision;
}

Precision inputPrecision(const EngineLayer& layer, std::size_t input)
{
    return input < layer.inputs.size() ? layer.inputs[input].precision : Precision::kUnknown;
}

std::optional<std::size_t> producerLayer(const EnginePlan& plan, const std::string& tensor)
{
    return plan.tensorIndex().producer(tensor);
}

std::vector<std::size_t> consumerLayers(const EnginePlan& plan, const std::string& tensor)
{
    const auto consumers = plan.tensorIndex().consumers(tensor);
    return std::vector<std::size_t>(consumers.begin(), consumers.end());
}

Evidence layerEvidence(const Context& context, std::size_t layer, const std::string& field, const std::string& text)
{
    Evidence evidence;
    const EnginePlan* plan = context.engine();
    if (plan != nullptr && layer < plan->layers.size())
    {
        // A plan merged from several files cites the file that told the fact the field names.
        LayerFact fact = LayerFact::kRecord;
        if (field.starts_with("Inputs") || field.starts_with("Outputs"))
        {
            fact = LayerFact::kTensors;
        }
        else if (field.starts_with("Metadata"))
        {
            fact = LayerFact::kMetadata;
        }
        else if (field.starts_with("Tactic"))
        {
            fact = LayerFact::kTactic;
        }
        const auto [file, line] = plan->factSource(layer, fact);
        evidence.file = std::string(file);
        evidence.line = line;
        evidence.field = "layer \"" + plan->layers[layer].name + "\"" + (field.empty() ? "" : " " + field);
    }
    evidence.text = text;
    return evidence;
}

Evidence nodeEvidence(const Context& context, const OnnxNode& node, std::string text)
{
    Evidence evidence;
    if (const OnnxGraph* graph = context.graph())
    {
        evidence.file = graph->sourcePath;
    }
    evidence.field.reserve(node.name.size() + node.opType.size() + 8);
    evidence.field.append("node ").append(node.name).append(" (").append(node.opType).append(")");
    evidence.text = std::move(text);
    return evidence;
}

std::vector<Evidence> buildLogErrorEvidence(const Context& context, bool (*matches)(const std::string& text))
{
    std::vector<Evidence> found;
    if (!context.inputs.buildLog)
    {
        return found;
    }
    for (const auto& error : context.inputs.buildLog->errors)
    {
        if (matches(error.text))
        {
            Evidence evidence;
            evidence.file = context.inputs.buildLog->sourcePath;
            evidence.line = error.line;
            evidence.text = error.text;
            found.push_back(std::move(evidence));
        }
    }
    return found;
}

bool reachesQuantizer(const OnnxGraph& graph, const std::string& tensor)
{
    std::vector<std::pair<const std::string*, int>> frontier{{&tensor, 0}};
    for (std::size_t i = 0; i < frontier.size() && i < 64; ++i)
    {
        const auto [current, depth] = frontier[i];
        for (const OnnxNode* consumer : consumersOf(graph, *current))
        {
            if (isQuantize(*consumer))
            {
                return true;
            }
            const std::string& op = consumer->opType;
            const bool passes = isActivation(op) || op == "MaxPool" || isAveragePooling(graph, *consumer) ||
                                op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze";
            if (passes && depth < 6 && !consumer->outputs.empty())
            {
                frontier.emplace_back(&consumer->outputs[0], depth + 1);
            }
        }
    }
    return false;
}

bool isZeroPad(const OnnxGraph& graph, const OnnxNode& pad)
{
    if (const OnnxAttribute* mode = pad.attribute("mode"); mode != nullptr && mode->s != "constant")
    {
        return false;
    }
    if (pad.inputs.size() >= 3 && !pad.inputs[2].empty())
    {
        const OnnxConstant* value = graph.constant(pad.inputs[2]);
        if (value == nullptr || value->values.size() != 1 || value->values[0] != 0.0)
        {
            return false; // a value the model does not show, or not zero
        }
    }
    if (pad.inputs.size() >= 2 && !pad.inputs[1].empty())
    {
        if (const OnnxConstant* pads = graph.constant(pad.inputs[1]))
        {
            for (double p : pads->values)
            {
                if (p < 0.0)
                {
                    return false;
                }
            }
        }
    }
    return true;
}

FixEdit setScaleEdit(std::vector<std::string> nodes, std::string scaleFrom, std::string scaleReason)
{
    FixEdit edit;
    edit.kind = FixEdit::Kind::kSetScale;
    edit.nodes = std::move(nodes);
    edit.scaleFrom = std::move(scaleFrom);
    edit.scaleReason = std::move(scaleReason);
    return edit;
}

FixEdit insertQdqEdit(const OnnxNode& consumer, const std::string& tensor, const std::string& scaleFrom,
                      std::string scaleReason)
{
    FixEdit edit;
    edit.kind = FixEdit::Kind::kInsertQdq;
    edit.tensor = tensor;
    for (std::size_t i = 0; i < consumer.inputs.size(); ++i)
    {
        if (consumer.inputs[i] == tensor)
        {
            edit.consumers.emplace_back(consumer.name, static_cast<std::uint32_t>(i));
        }
    }
    edit.scaleFrom = scaleFrom;
    edit.scaleReason = std::move(scaleReason);
    return edit;
}

FixEdit removeQdqPairEdit(const OnnxNode& q, const OnnxNode& dq)
{
    FixEdit edit;
    edit.kind = FixEdit::Kind::kRemoveQdqPair;
    edit.nodes = {q.name, dq.name};
    edit.tensor = q.inputs.empty() ? std::string() : std::string(q.inputs[0]);
    return edit;
}

Finding makeFinding(const RuleInfo& info, std::string message)
{
    Finding finding;
    finding.rule = info.slug;
    finding.severity = info.defaultSeverity;
    finding.message = std::move(message);
    return finding;
}

std::vector<std::string> layerNames(const Context& context, const std::vector<std::size_t>& layers)
{
    std::vector<std::string> names;
    const EnginePlan* plan = context.engine();
    for (std::size_t layer : layers)
    {
        if (plan != nullptr && layer < plan->layers.size())
        {
            names.push_back(plan->layers[layer].name);
        }
    }
    return names;
}

std::string nameList(const std::vector<std::string>& names, std::size_t shown)
{
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < shown; ++i)
    {
        text += (i == 0 ? "" : ", ") + names[i];
    }
    if (names.size() > shown)
    {
        text += " and " + std::to_string(names.size() - shown) + " more";
    }
    return text;
}

std::string formatMs(double ms)
{
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.3f ms", ms);
    return buffer;
}

} // namespace qdq::patterns
