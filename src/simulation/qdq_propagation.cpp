// Predicts, from the ONNX graph alone, what TensorRT's Q/DQ optimizer will do (reference section 7.1): which Q/DQ
// fuse into a quantized neighbour, fold into weights, cancel, requantize or stay standalone, and which layers the
// engine will contain. It is a simulation of documented behaviour, not of TensorRT's code: it is a prediction to be
// held against a real engine.
#include "qdq/analysis.h"
#include "qdq/patterns.h"
#include "src/simulation/engine_simulator.h"
#include "src/simulation/live_nodes.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace qdq
{

using namespace patterns;

std::string_view predictedFateName(PredictedQdq::Fate fate)
{
    switch (fate)
    {
    case PredictedQdq::Fate::kFusedIntoProducer:
        return "fused-into-producer";
    case PredictedQdq::Fate::kFusedIntoConsumer:
        return "fused-into-consumer";
    case PredictedQdq::Fate::kFolded:
        return "folded";
    case PredictedQdq::Fate::kCancelled:
        return "cancelled";
    case PredictedQdq::Fate::kRequantize:
        return "requantize";
    case PredictedQdq::Fate::kStandalone:
        break;
    }
    return "standalone";
}

std::string PredictedQdq::reason() const
{
    if (!why.composed.empty())
    {
        return why.composed;
    }
    std::string text;
    text.reserve(why.prefix.size() + why.subject.size() + why.suffix.size());
    text.append(why.prefix).append(why.subject).append(why.suffix);
    return text;
}

const PredictedQdq* Prediction::find(std::string_view node) const
{
    for (const auto& entry : qdq)
    {
        if (entry.node == node)
        {
            return &entry;
        }
    }
    return nullptr;
}

namespace
{

PredictedQdq::Reason because(std::string_view prefix, std::string_view subject = {}, std::string_view suffix = {})
{
    PredictedQdq::Reason reason;
    reason.prefix = prefix;
    reason.subject = subject;
    reason.suffix = suffix;
    return reason;
}

PredictedQdq::Reason composed(std::string text)
{
    PredictedQdq::Reason reason;
    reason.composed = std::move(text);
    return reason;
}

class Predictor
{
public:
    explicit Predictor(const OnnxGraph& graph) : mGraph(graph) {}

    Prediction run()
    {
        mQuantizedWeighted.assign(mGraph.nodes.size(), false);
        for (const auto& node : mGraph.nodes)
        {
            if (isWeighted(mGraph, node) && allActivationInputsQuantized(node))
            {
                mQuantizedWeighted[node.index] = true;
            }
        }
        mResult.qdq.reserve(mGraph.qdq.size());
        const std::vector<bool> live = simulation::nodesReachingAnOutput(mGraph);
        for (const auto& node : mGraph.nodes)
        {
            if (isQdq(node) && !live[node.index])
            {
                mResult.qdq.push_back(deadQdq(node));
            }
            else if (isQuantize(node))
            {
                mResult.qdq.push_back(predictQuantize(node));
            }
            else if (isDequantize(node))
            {
                mResult.qdq.push_back(predictDequantize(node));
            }
        }
        mergeDuplicateQuantizers();
        return std::move(mResult);
    }

private:
    //! A Q/DQ node that reaches no network output: dead-layer removal drops it with the branch it is on.
    static PredictedQdq deadQdq(const OnnxNode& node)
    {
        PredictedQdq result;
        result.node = node.name;
        result.nodeIndex = static_cast<std::uint32_t>(node.index);
        result.isQuantize = isQuantize(node);
        result.fate = PredictedQdq::Fate::kFolded;
        result.why = because("reaches no network output: TensorRT's dead-layer removal drops it (live_nodes.h)");
        return result;
    }

    //! The first input of a weighted op (the activation) is DQ-fed and the weight is DQ-fed or constant.
    bool allActivationInputsQuantized(const OnnxNode& node) const
    {
        if (node.inputs.size() < 2)
        {
            return false;
        }
        return feedingDequantize(mGraph, node.inputs[0]) != nullptr &&
               (feedingDequantize(mGraph, node.inputs[1]) != nullptr);
    }

    //! depth bounds the walk: a cycle through Q/DQ or Identity nodes (q: b -> a, dq: a -> b) would recurse forever,
    //! and a real weight path is a handful of nodes.
    bool onWeightPath(const OnnxNode& node, int depth = 0) const
    {
        constexpr int kMaxWeightPath = 64;
        if (node.inputs.empty() || depth > kMaxWeightPath)
        {
            return false;
        }
        if (isConstantTensor(mGraph, node.inputs[0]))
        {
            return true;
        }
        const OnnxNode* producer = producerOf(mGraph, node.inputs[0]);
        // A DQ on the way counts too: an exporter that shares one weight between layers (torch's Identity copies)
        // can leave initializer -> DQ -> Identity -> Q -> DQ, constant from end to end (ConvNeXt's LayerNorm weights
        // under ONNX Runtime's quantizer), which TensorRT folds like any constant.
        return producer != nullptr &&
               (producer->opType == "Constant" || (isQdq(*producer) && onWeightPath(*producer, depth + 1)) ||
                (producer->opType == "Identity" && onWeightPath(*producer, depth + 1)) ||
                computedFromConstants(*producer, depth + 1));
    }

    //! Whether every input of node is a constant or computed from constants only: TensorRT folds such a node at build
    //! time like a constant (the constant-folding pass; a Q on its output folds with it). The zero-point fix's Relu
    //! before the Q of a uint8-quantized initializer (DETR's positional constants under ONNX Runtime's quantizer) was
    //! predicted as a float layer feeding a standalone Quantize. Multi-input walks stop at a depth of 8: a real
    //! constant subgraph is shallow, and the walk does not memoize.
    bool computedFromConstants(const OnnxNode& node, int depth) const
    {
        constexpr int kDeepestConstantWalk = 8;
        if (depth > kDeepestConstantWalk || node.inputs.empty() || isQdq(node))
        {
            return false;
        }
        for (const auto& input : node.inputs)
        {
            if (input.empty() || isConstantTensor(mGraph, input))
            {
                continue;
            }
            const OnnxNode* producer = producerOf(mGraph, input);
            if (producer == nullptr ||
                !(producer->opType == "Constant" || (isQdq(*producer) && onWeightPath(*producer, depth + 1)) ||
                  computedFromConstants(*producer, depth + 1)))
            {
                return false;
            }
        }
        return true;
    }

    //! The data input of an Add, Sub, Mul or Div whose other input is a constant (a bias or a scale), or nullptr.
    const std::string* constantOperandData(const OnnxNode& node) const
    {
        if (node.inputs.size() != 2 ||
            !(node.opType == "Add" || node.opType == "Sub" || node.opType == "Mul" || node.opType == "Div"))
        {
            return nullptr;
        }
        const bool constant0 = isConstantTensor(mGraph, node.inputs[0]);
        const bool constant1 = isConstantTensor(mGraph, node.inputs[1]);
        if (constant0 == constant1 || (constant0 && (node.opType == "Sub" || node.opType == "Div")))
        {
            return nullptr;
        }
        return &node.inputs[constant0 ? 1 : 0];
    }

    //! A producer that can emit INT8 through its epilogue: a quantized weighted op (possibly through epilogue ops),
    //! or a quantizable non-weighted op whose inputs are all DQ-fed.
    const OnnxNode* quantizedProducer(const std::string& tensor, int budget = 16) const
    {
        const std::string* current = &tensor;
        for (int depth = 0; depth < budget; ++depth)
        {
            const OnnxNode* producer = mGraph.producer(*current);
            if (producer == nullptr)
            {
                return nullptr;
            }
            if (mQuantizedWeighted[producer->index])
            {
                return producer;
            }
            if (producer->opType == "Mul" && isSiluMul(*producer))
            {
                current = siluInput(*producer); // SiLU is a conv epilogue
                continue;
            }
            // DQ -> activation -> Q: one quantized PointWise layer (a guess, patterns.h); after a conv the activation
            // is its epilogue and the walk goes on to the conv.
            if (isQuantizableActivation(producer->opType) && !producer->inputs.empty() &&
                feedingDequantize(mGraph, producer->inputs[0]) != nullptr)
            {
                return producer;
            }
            // A bias or scale (Add, Sub, Mul, Div by a constant) after a quantized conv is its epilogue, as the
            // weighted-layers pass fuses it (Convolution + Scale; TensorRT 8.5.10's ConstEltFusion and
            // ConvScaleFusion in ../shared/realdata/lix-mnist-orin-trt8510-best/trt_build_best.log): Keras'
            // BatchNormalization exported as Mul and Add. Elsewhere such an op is judged below.
            if (const std::string* data = constantOperandData(*producer);
                data != nullptr && floatReader(*data) == nullptr)
            {
                const OnnxNode* behind = quantizedProducer(*data, budget - depth - 1);
                if (behind != nullptr && mQuantizedWeighted[behind->index])
                {
                    return behind;
                }
            }
            if (isQuantizableNonWeighted(producer->opType) && !producer->inputs.empty())
            {
                return inputsQuantized(*producer) ? producer : nullptr;
            }
            bool passThrough = (isEpilogue(producer->opType) || isCommuting(producer->opType)) &&
                               !producer->inputs.empty() && producer->opType != "Concat";
            if (!passThrough)
            {
                return nullptr;
            }
            current = &producer->inputs[0];
            if (floatReader(*current) != nullptr)
            {
                return nullptr; // the producer's output also feeds a float consumer
            }
        }
        return nullptr;
    }

    //! A node other than a Quantize that reads tensor, or nullptr: with one, the tensor stays in float.
    const OnnxNode* floatReader(const std::string& tensor) const
    {
        const std::uint32_t id = mGraph.tensors.find(tensor);
        if (id == OnnxGraph::kNone)
        {
            return nullptr;
        }
        const auto consumers = mGraph.consumersOf(id);
        if (consumers.size() < 2)
        {
            return nullptr;
        }
        for (std::uint32_t consumer : consumers)
        {
            if (!isQuantize(mGraph.nodes[consumer]))
            {
                return &mGraph.nodes[consumer];
            }
        }
        return nullptr;
    }

    //! Whether every activation input of a non-weighted op arrives quantized, so the op can write its output Q: each
    //! is DQ-fed, constant or a shape, except that an Add may take one input straight from a quantized conv (the conv
    //! it fuses into). Only one: TensorRT fuses the Add into one conv, and the other input is the residual, which
    //! that conv reads in float when no Q/DQ quantizes it, and the residual input's precision sets the fused
    //! output's (the developer guide's residual figures and pytorch-quantization's ResNet-50 tutorial, reference
    //! 1.4, "Residual"; the real `trex-pt-resnet-a100-qat` engine's downsample block: `Add_97` writes FP16 and
    //! `QuantizeLinear_101` runs as its own layer).
    bool inputsQuantized(const OnnxNode& node) const
    {
        bool convSideTaken = false;
        for (const auto& input : node.inputs)
        {
            if (input.empty() || isConstantTensor(mGraph, input) || feedingDequantize(mGraph, input) != nullptr ||
                isShapeValue(mGraph, input))
            {
                continue;
            }
            if (!convSideTaken && residualOfQuantizedConv(node, input))
            {
                convSideTaken = true;
                continue;
            }
            return false;
        }
        return true;
    }

    //! Add(x, conv_out) where conv_out comes from a quantized conv: the conv side need not be DQ-fed.
    bool residualOfQuantizedConv(const OnnxNode& add, const std::string& input) const
    {
        if (add.opType != "Add")
        {
            return false;
        }
        const OnnxNode* producer = producerOf(mGraph, input);
        for (int depth = 0; producer != nullptr && depth < 4; ++depth)
        {
            if (mQuantizedWeighted[producer->index])
            {
                return true;
            }
            if (!isEpilogue(producer->opType) || producer->inputs.empty())
            {
                return false;
            }
            producer = producerOf(mGraph, producer->inputs[0]);
        }
        return false;
    }

    bool isSiluMul(const OnnxNode& mul) const { return siluInput(mul) != nullptr; }

    //! x of Mul(x, Sigmoid(x)) or Mul(x, HardSigmoid(x)), or nullptr.
    const std::string* siluInput(const OnnxNode& mul) const
    {
        const OnnxNode* gate = selfGateOf(mGraph, mul);
        return gate == nullptr ? nullptr : &gate->inputs[0];
    }

    PredictedQdq predictQuantize(const OnnxNode& node) const
    {
        PredictedQdq result;
        result.node = node.name;
        result.nodeIndex = static_cast<std::uint32_t>(node.index);
        result.isQuantize = true;
        if (onWeightPath(node))
        {
            result.fate = PredictedQdq::Fate::kFolded;
            result.why = because("quantizes a constant weight");
            return result;
        }
        if (node.inputs.empty())
        {
            result.why = because("no input");
            return result;
        }
        BackResult back = walkBack(node.inputs[0], perTensorScale(mGraph, node), 0);
        result.fate = back.fate;
        result.partner = back.partner;
        result.partnerIndex = back.partnerIndex;
        result.why = std::move(back.why);
        return result;
    }

    struct BackResult
    {
        PredictedQdq::Fate fate = PredictedQdq::Fate::kStandalone;
        std::string_view partner;
        std::uint32_t partnerIndex = PredictedQdq::kNoNode;
        PredictedQdq::Reason why;
    };

    //! The inputs of Concats already walked in one walkBack, by tensor and the float reader met on the way: a Concat
    //! of one tensor three times, sixteen levels deep, is walked 16 times rather than 3^16.
    using ConcatInputsWalked = std::map<std::pair<std::uint32_t, const OnnxNode*>, BackResult>;

    //! A Q walked back onto a DQ: cancelled against an equal scale, else a requantize.
    BackResult meetDequantize(const OnnxNode& producer, std::optional<double> scale) const
    {
        BackResult result;
        auto other = perTensorScale(mGraph, producer);
        result.partner = producer.name;
        result.partnerIndex = static_cast<std::uint32_t>(producer.index);
        if (scale && other && scalesEqual(*scale, *other))
        {
            result.fate = PredictedQdq::Fate::kCancelled;
            result.why = because("follows ", producer.name, " with the same scale");
        }
        else if (mGraph.rebuiltFromLog && !(scale && other))
        {
            result.fate = PredictedQdq::Fate::kCancelled;
            result.why =
                because("follows ", producer.name, " (equal scales assumed: the build log has no scale values)");
        }
        else
        {
            result.fate = PredictedQdq::Fate::kRequantize;
            result.why = because("follows ", producer.name, " with a different scale");
        }
        return result;
    }

    //! A Q hoisted above a Concat: one clone per input, each walked back on its own.
    BackResult hoistAboveConcat(const OnnxNode& concat, std::optional<double> scale, int depth,
                                std::string_view floatTensor, const OnnxNode* floatReaderOf,
                                ConcatInputsWalked* walked) const
    {
        BackResult result;
        const OnnxNode* producer = &concat;
        std::vector<std::string> floatInputs;
        std::vector<std::string> requantized;
        bool anyFused = false;
        ConcatInputsWalked walkedHere;
        ConcatInputsWalked& seen = walked != nullptr ? *walked : walkedHere;
        for (const auto& input : producer->inputs)
        {
            const std::pair<std::uint32_t, const OnnxNode*> key{mGraph.tensors.find(TensorKey(input)), floatReaderOf};
            BackResult unnamed;
            const BackResult* walkedPart = &unnamed;
            if (key.first == OnnxGraph::kNone)
            {
                unnamed = walkBack(input, scale, depth + 1, floatTensor, floatReaderOf, &seen);
            }
            else
            {
                auto known = seen.find(key);
                if (known == seen.end())
                {
                    known =
                        seen.emplace(key, walkBack(input, scale, depth + 1, floatTensor, floatReaderOf, &seen)).first;
                }
                walkedPart = &known->second;
            }
            const BackResult& part = *walkedPart;
            if (part.fate == PredictedQdq::Fate::kStandalone)
            {
                floatInputs.push_back(input);
            }
            else if (part.fate == PredictedQdq::Fate::kRequantize)
            {
                requantized.emplace_back(part.partner);
            }
            anyFused = anyFused || part.fate == PredictedQdq::Fate::kFusedIntoProducer;
        }
        result.partner = producer->name;
        result.partnerIndex = static_cast<std::uint32_t>(producer->index);
        if (!floatInputs.empty())
        {
            result.why = composed("hoisted above Concat " + producer->name + ", whose input(s) " +
                                  nameList(floatInputs, 3) + " come from float producers");
        }
        else if (!requantized.empty())
        {
            result.fate = PredictedQdq::Fate::kRequantize;
            result.why = composed("hoisted above Concat " + producer->name + ", it meets " + nameList(requantized, 3) +
                                  " with a different scale");
        }
        else
        {
            result.fate = anyFused ? PredictedQdq::Fate::kFusedIntoProducer : PredictedQdq::Fate::kCancelled;
            result.why = because("hoisted above Concat ", producer->name, " into every producer");
        }
        return result;
    }

    //! Where a Q on `tensor` ends up when TensorRT propagates it backward (across data-movement ops, one clone per
    //! Concat input): cancelled against a DQ of equal scale, a requantize against a DQ of another scale, fused into a
    //! quantized producer, or standalone in front of a float producer or a network input.
    BackResult walkBack(const std::string& tensor, std::optional<double> scale, int depth,
                        std::string_view floatTensor = {}, const OnnxNode* floatReaderOf = nullptr,
                        ConcatInputsWalked* walked = nullptr) const
    {
        BackResult result;
        const OnnxNode* producer = producerOf(mGraph, tensor);
        if (depth > 16)
        {
            result.why = because("propagation too deep to follow");
            return result;
        }
        if (producer == nullptr)
        {
            result.why = because(
                isGraphInput(mGraph, tensor) ? "quantizes the network input " : "nothing produces its input ", tensor);
            return result;
        }
        if (isDequantize(*producer))
        {
            return meetDequantize(*producer, scale);
        }
        if (producer->opType == "Concat")
        {
            return hoistAboveConcat(*producer, scale, depth, floatTensor, floatReaderOf, walked);
        }
        // A quantized producer absorbs the Q only when nothing else reads the tensors on the way in float: a layer
        // writes one tensor in one precision. (Meeting a DQ instead is decided by scales, as above.)
        if (floatReaderOf == nullptr)
        {
            if (const OnnxNode* reader = floatReader(tensor))
            {
                floatReaderOf = reader;
                floatTensor = tensor;
            }
        }
        if (isCommuting(producer->opType) && !producer->inputs.empty())
        {
            return walkBack(producer->inputs[0], scale, depth + 1, floatTensor, floatReaderOf, walked);
        }
        if (const OnnxNode* quantized = quantizedProducer(tensor))
        {
            if (floatReaderOf != nullptr)
            {
                result.why =
                    composed(std::string(floatTensor) + " also feeds " + floatReaderOf->name + " (" +
                             floatReaderOf->opType + ") in float, so the Q cannot move into " + quantized->name);
                return result;
            }
            result.fate = PredictedQdq::Fate::kFusedIntoProducer;
            result.partner = quantized->name;
            result.partnerIndex = static_cast<std::uint32_t>(quantized->index);
            result.why = because("output quantization of ", quantized->name);
            return result;
        }
        result.why = composed("its producer " + producer->name + " (" + producer->opType +
                              ") runs in float and cannot absorb it");
        return result;
    }

    //! What the forward walk from a DQ (through commuting ops) met among its consumers.
    struct ForwardMeetings
    {
        bool allFused = true;
        std::string_view partner;
        std::uint32_t partnerNode = PredictedQdq::kNoNode;
        std::string_view requantizePartner;
        std::uint32_t requantizeNode = PredictedQdq::kNoNode;
        bool floatConsumer = false;
        bool allQuantizers = true; // every path ends at a Q: a DQ -> Q pair
        bool allEqual = true;
        PredictedQdq::Reason floatWhy; // why the first float consumer keeps it
    };

    //! One consumer met on the forward walk from dq: a Q (equal scale or not), a quantized op, a commuting op to walk
    //! through (its outputs go to next), or a float consumer.
    void meetConsumer(const OnnxNode& node, const OnnxNode& consumer, ForwardMeetings& met,
                      std::vector<std::uint32_t>& next) const
    {
        if (readsShapeOnly(consumer.opType))
        {
            return; // reads the dimensions only: no float consumer of the values
        }
        if (isQuantize(consumer))
        {
            auto a = perTensorScale(mGraph, node);
            auto b = perTensorScale(mGraph, consumer);
            const bool assumedEqual = mGraph.rebuiltFromLog && !(a && b);
            if (!assumedEqual && !(a && b && scalesEqual(*a, *b)))
            {
                met.allEqual = false;
                if (met.requantizePartner.empty())
                {
                    met.requantizePartner = consumer.name;
                    met.requantizeNode = static_cast<std::uint32_t>(consumer.index);
                }
            }
            if (met.partner.empty())
            {
                met.partner = consumer.name;
                met.partnerNode = static_cast<std::uint32_t>(consumer.index);
            }
        }
        else if (mQuantizedWeighted[consumer.index] || quantizableWithOutputQ(consumer))
        {
            met.allQuantizers = false;
            if (met.partner.empty())
            {
                met.partner = consumer.name;
                met.partnerNode = static_cast<std::uint32_t>(consumer.index);
            }
        }
        else if (isCommuting(consumer.opType))
        {
            next.insert(next.end(), consumer.outputs.ids().begin(), consumer.outputs.ids().end());
        }
        else
        {
            met.allFused = false;
            if (!met.floatConsumer)
            {
                met.floatConsumer = true;
                met.floatWhy = composed("its consumer " + consumer.name + " (" + consumer.opType + ") runs in float");
            }
        }
    }

    //! Walks forward from the DQ node through commuting ops to its consumers.
    ForwardMeetings walkForward(const OnnxNode& node) const
    {
        ForwardMeetings met;
        std::vector<std::uint32_t> frontier = {node.outputs.id(0)};
        // Each tensor is expanded once: tensors written by several nodes, or read back by what they feed (a cycle),
        // would otherwise multiply the frontier at every level.
        std::unordered_set<std::uint32_t> expanded;
        for (int depth = 0; depth < 16 && !frontier.empty(); ++depth)
        {
            std::vector<std::uint32_t> next;
            for (std::uint32_t tensor : frontier)
            {
                if (!expanded.insert(tensor).second)
                {
                    continue;
                }
                const NodeRefs consumers(mGraph.nodes.data(), mGraph.consumersOf(tensor));
                if (consumers.empty())
                {
                    met.allFused = false;
                }
                for (const OnnxNode* consumer : consumers)
                {
                    meetConsumer(node, *consumer, met, next);
                }
            }
            frontier = std::move(next);
        }
        return met;
    }

    PredictedQdq predictDequantize(const OnnxNode& node) const
    {
        PredictedQdq result;
        result.node = node.name;
        result.nodeIndex = static_cast<std::uint32_t>(node.index);
        if (onWeightPath(node))
        {
            result.fate = PredictedQdq::Fate::kFolded;
            result.why = because("dequantizes a constant weight");
            return result;
        }
        if (node.outputs.empty())
        {
            result.why = because("no output");
            return result;
        }
        // Walk forward through commuting ops to the consumers.
        const ForwardMeetings met = walkForward(node);
        if (met.floatConsumer)
        {
            result.why = met.floatWhy;
        }
        if (met.allFused && !met.partner.empty() && met.allQuantizers)
        {
            result.fate = met.allEqual ? PredictedQdq::Fate::kCancelled : PredictedQdq::Fate::kRequantize;
            result.partner = met.allEqual ? met.partner : met.requantizePartner;
            result.partnerIndex = met.allEqual ? met.partnerNode : met.requantizeNode;
            result.why = met.allEqual ? because("meets ", met.partner, " with the same scale")
                                      : because("meets ", met.requantizePartner, " with a different scale");
        }
        else if (met.allFused && !met.partner.empty())
        {
            result.fate = PredictedQdq::Fate::kFusedIntoConsumer;
            result.partner = met.partner;
            result.partnerIndex = met.partnerNode;
            result.why = because("input dequantization of ", met.partner);
        }
        else if (!met.floatConsumer)
        {
            result.why = because("no quantized consumer");
        }
        return result;
    }

    //! A non-weighted quantizable op with every input DQ-fed and its output quantized.
    bool quantizableWithOutputQ(const OnnxNode& node) const
    {
        if (!(isQuantizableNonWeighted(node.opType) || isQuantizableActivation(node.opType)) || node.outputs.empty())
        {
            return false;
        }
        if (!inputsQuantized(node))
        {
            return false;
        }
        auto forward = forwardQuantizers(mGraph, node.outputs[0], true);
        return forward.allPaths && !forward.quantizers.empty();
    }

    //! Q nodes on one tensor with equal scales (one per consumer, as pytorch-quantization exports them) are merged
    //! into one (HorizontalMergeQNodes): the first keeps its fate, the others are eliminated as its duplicates.
    void mergeDuplicateQuantizers()
    {
        // (input tensor, quantizer) pairs grouped by a stable sort: a hash map of vectors cost about 1.5% of the
        // 500,000-node bench transformer's predict, one vector per Q node.
        std::vector<std::pair<std::uint32_t, PredictedQdq*>> byInput;
        for (auto& entry : mResult.qdq)
        {
            if (!entry.isQuantize || entry.fate == PredictedQdq::Fate::kFolded ||
                entry.nodeIndex == PredictedQdq::kNoNode)
            {
                continue;
            }
            auto inputs = mGraph.inputIds(entry.nodeIndex);
            if (!inputs.empty() && inputs[0] != OnnxGraph::kNone)
            {
                byInput.emplace_back(inputs[0], &entry);
            }
        }
        std::stable_sort(byInput.begin(), byInput.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (std::size_t first = 0, end = 0; first < byInput.size(); first = end)
        {
            end = first + 1;
            while (end < byInput.size() && byInput[end].first == byInput[first].first)
            {
                ++end;
            }
            for (std::size_t i = first + 1; i < end; ++i)
            {
                PredictedQdq* kept = byInput[first].second;
                PredictedQdq* twin = byInput[i].second;
                auto a = perTensorScale(mGraph, mGraph.nodes[kept->nodeIndex]);
                auto b = perTensorScale(mGraph, mGraph.nodes[twin->nodeIndex]);
                // A graph rebuilt from a build log has no scale values: quantizers of one tensor are taken to share
                // their scale, as calibration gives them (the reason says it is assumed).
                const bool unknown = mGraph.rebuiltFromLog && !(a && b);
                if ((!unknown && !(a && b && scalesEqual(*a, *b))) || twin->fate != kept->fate)
                {
                    continue;
                }
                twin->fate = PredictedQdq::Fate::kCancelled;
                twin->partner = kept->node;
                twin->partnerIndex = kept->nodeIndex;
                twin->why = unknown ? because("duplicates ", kept->node,
                                              " (same input; equal scales assumed, the build log has no values): "
                                              "merged into one")
                                    : because("duplicates ", kept->node, " (same input, same scale): merged into one");
            }
        }
    }

    const OnnxGraph& mGraph;
    std::vector<bool> mQuantizedWeighted; //!< by node index: a weighted op whose inputs are all quantized
    Prediction mResult;
};

} // namespace

Prediction simulation::predictQdqFates(const OnnxGraph& graph, const SimulationOptions& options)
{
    Prediction prediction = Predictor(graph).run();
    prediction.options = options;
    return prediction;
}

Prediction predictEngine(const OnnxGraph& graph, const SimulationOptions& options)
{
    simulation::FirstStages stages = simulation::runFirstStages(graph, options);
    simulation::buildPredictedLayers(graph, options, stages.prediction, std::move(stages.transformer));
    return std::move(stages.prediction);
}

} // namespace qdq
