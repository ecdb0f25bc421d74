// Attention blocks in an ONNX graph and the conditions of TensorRT's fused attention (qdq/attention_pattern.h).
#include "qdq/attention_pattern.h"

#include "qdq/patterns.h"

#include <algorithm>

namespace qdq
{

using namespace patterns;

namespace
{

constexpr std::uint32_t kNoNode = AttentionOperand::kNoNode;
constexpr std::uint32_t kNoTensor = OnnxGraph::kNone;

// How far the walks go: exporters put a handful of casts, reshapes and Q/DQ nodes between the attention's parts.
// Between Swin's first MatMul and its Softmax, ONNX Runtime's quantizer leaves 14 nodes (the bias Add, two Reshapes
// and the mask Add, each followed by a Q/DQ pair: tests/fixtures/transformers/swin-block-ort-qdq.onnx).
constexpr int kMaxScoreHops = 16;
constexpr int kMaxOperandHops = 6;
constexpr int kMaxScaleHops = 8;

bool isDataMovement(std::string_view op)
{
    return op == "Transpose" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten" ||
           op == "Cast" || op == "Identity";
}

//! Tensors whose values TensorRT knows at build time: initializers, Constant outputs, what Shape/Size give, and what
//! only such tensors compute (DeiT's attention scale is Sqrt(Cast(Gather(Shape(x))))).
class BuildTimeValues
{
public:
    explicit BuildTimeValues(const OnnxGraph& graph) : mGraph(graph) {}

    bool known(std::uint32_t tensor, int depth = 0)
    {
        if (tensor == kNoTensor)
        {
            return false;
        }
        // One byte per tensor of the model instead of a hash map (patterns::TensorMemo): the attention search asks
        // about most of a transformer's tensors, and the map's look-ups and growth took about 2% of the 500,000-node
        // bench transformer's predict.
        if (mKnown.empty())
        {
            mKnown.assign(mGraph.tensors.constant.size(), kUndecided);
        }
        if (tensor >= mKnown.size())
        {
            return false;
        }
        if (mKnown[tensor] != kUndecided)
        {
            return mKnown[tensor] == kYes;
        }
        mKnown[tensor] = kNo; // while deciding: a cycle back to this tensor reads "not known"
        const bool answer = decide(tensor, depth);
        mKnown[tensor] = answer ? kYes : kNo;
        return answer;
    }

    //! The inputs of node that are not build-time values.
    std::vector<std::uint32_t> activations(const OnnxNode& node)
    {
        std::vector<std::uint32_t> result;
        for (std::uint32_t input : mGraph.inputIds(node.index))
        {
            if (input != kNoTensor && !known(input))
            {
                result.push_back(input);
            }
        }
        return result;
    }

private:
    bool decide(std::uint32_t tensor, int depth)
    {
        if (mGraph.tensors.constant[tensor] != kNoTensor)
        {
            return true;
        }
        const OnnxNode* producer = mGraph.producerOf(tensor);
        if (producer == nullptr || producer->isCustomDomain() || depth > 16)
        {
            return false;
        }
        if (producer->opType == "Constant" || readsShapeOnly(producer->opType))
        {
            return true;
        }
        bool any = false;
        for (std::uint32_t input : mGraph.inputIds(producer->index))
        {
            if (input == kNoTensor)
            {
                continue;
            }
            any = true;
            if (!known(input, depth + 1))
            {
                return false;
            }
        }
        return any;
    }

    static constexpr std::int8_t kUndecided = -1;
    static constexpr std::int8_t kNo = 0;
    static constexpr std::int8_t kYes = 1;
    const OnnxGraph& mGraph;
    std::vector<std::int8_t> mKnown; //!< per tensor id: kUndecided, kNo or kYes
};

std::uint32_t firstOutputOf(const OnnxGraph& graph, std::uint32_t node)
{
    auto outputs = graph.outputIds(node);
    return outputs.empty() ? kNoTensor : outputs[0];
}

std::uint32_t inputOf(const OnnxGraph& graph, std::uint32_t node, std::size_t which)
{
    auto inputs = graph.inputIds(node);
    return which < inputs.size() ? inputs[which] : kNoTensor;
}

class AttentionFinder
{
public:
    explicit AttentionFinder(const OnnxGraph& graph) : mGraph(graph), mValues(graph) {}

    std::vector<AttentionBlock> run()
    {
        std::vector<AttentionBlock> blocks;
        for (const OnnxNode& node : mGraph.nodes)
        {
            if (node.opType != "Softmax")
            {
                continue;
            }
            AttentionBlock block;
            mScoreScale = kNoNode;
            block.softmax = static_cast<std::uint32_t>(node.index);
            if (!findScores(block) || !findContext(block))
            {
                continue;
            }
            traceOperands(block);
            findScale(block);
            checkConditions(block);
            blocks.push_back(std::move(block));
        }
        return blocks;
    }

private:
    //! A MatMul of two activations (Q * K^T), not a weighted op.
    bool isBatchedMatMul(const OnnxNode& node)
    {
        return node.opType == "MatMul" && mValues.activations(node).size() == 2;
    }

    //! Back from the Softmax to the first MatMul through the scale, the mask, Q/DQ and casts.
    bool findScores(AttentionBlock& block)
    {
        std::uint32_t tensor = inputOf(mGraph, block.softmax, 0);
        std::vector<std::uint32_t> before;
        for (int hop = 0; hop < kMaxScoreHops; ++hop)
        {
            const OnnxNode* producer = tensor == kNoTensor ? nullptr : mGraph.producerOf(tensor);
            if (producer == nullptr || mGraph.consumersOf(tensor).size() != 1)
            {
                return false;
            }
            const auto index = static_cast<std::uint32_t>(producer->index);
            if (isBatchedMatMul(*producer))
            {
                block.scoresMatMul = index;
                std::reverse(before.begin(), before.end());
                block.inner = std::move(before);
                return true;
            }
            const std::string& op = producer->opType;
            const auto activations = mValues.activations(*producer);
            if (isQdq(*producer))
            {
                block.scoreQdq.push_back(index);
                tensor = inputOf(mGraph, index, 0);
            }
            else if (op == "Cast" && activations.size() == 1)
            {
                tensor = activations[0];
            }
            else if ((op == "Mul" || op == "Div") && activations.size() == 1)
            {
                mScoreScale = index;
                tensor = activations[0];
            }
            else if (op == "Add" && !activations.empty())
            {
                block.mask = index;
                tensor = scoresInput(*producer, activations);
            }
            else if (op == "Where" && activations.size() >= 1)
            {
                block.mask = index;
                tensor = scoresInput(*producer, activations);
            }
            else if (op == "Reshape" && activations.size() == 1)
            {
                // Swin's window attention regroups the scores per window to add its shifted-window mask, then
                // back (torchvision's shifted_window_attention): Reshape -> Add -> Reshape before the Softmax.
                block.scoreReshapes.push_back(index);
                tensor = activations[0];
            }
            else
            {
                return false;
            }
            before.push_back(index);
        }
        return false;
    }

    //! Of a mask node's activation inputs, the one that carries the scores: the one written by a MatMul, Q/DQ,
    //! scale or cast; for Where, its second input (Where(condition, scores, fill)) unless only the third is one.
    std::uint32_t scoresInput(const OnnxNode& node, const std::vector<std::uint32_t>& activations)
    {
        if (node.opType == "Where")
        {
            const std::uint32_t x = inputOf(mGraph, node.index, 1);
            const std::uint32_t y = inputOf(mGraph, node.index, 2);
            return std::find(activations.begin(), activations.end(), x) != activations.end() ? x : y;
        }
        for (std::uint32_t input : activations)
        {
            const OnnxNode* producer = mGraph.producerOf(input);
            if (producer != nullptr && (producer->opType == "MatMul" || isQdq(*producer) || producer->opType == "Mul" ||
                                        producer->opType == "Div"))
            {
                return input;
            }
        }
        // Then the scores regrouped or offset before (Swin: a bias Add, then a Reshape per window).
        for (std::uint32_t input : activations)
        {
            const OnnxNode* producer = mGraph.producerOf(input);
            if (producer != nullptr && (producer->opType == "Reshape" || producer->opType == "Add"))
            {
                return input;
            }
        }
        return activations[0];
    }

    //! Forward from the Softmax to the second MatMul, which reads the probabilities as its first input.
    bool findContext(AttentionBlock& block)
    {
        std::uint32_t tensor = firstOutputOf(mGraph, block.softmax);
        std::vector<std::uint32_t> qdqAfter;
        for (int hop = 0; hop < kMaxScoreHops; ++hop)
        {
            auto readers = tensor == kNoTensor ? std::span<const std::uint32_t>() : mGraph.consumersOf(tensor);
            if (readers.size() != 1)
            {
                return false;
            }
            const OnnxNode& reader = mGraph.nodes[readers[0]];
            if (reader.opType == "MatMul")
            {
                if (inputOf(mGraph, reader.index, 0) != tensor || !isBatchedMatMul(reader))
                {
                    return false;
                }
                block.contextMatMul = static_cast<std::uint32_t>(reader.index);
                block.softmaxOutputQuantized = qdqAfter.size() >= 2 && isQuantize(mGraph.nodes[qdqAfter[0]]) &&
                                               isDequantize(mGraph.nodes.at(qdqAfter.back()));
                block.inner.push_back(block.softmax);
                block.inner.insert(block.inner.end(), qdqAfter.begin(), qdqAfter.end());
                return true;
            }
            if (!isQdq(reader) && reader.opType != "Cast")
            {
                return false;
            }
            if (isQdq(reader))
            {
                qdqAfter.push_back(static_cast<std::uint32_t>(reader.index));
            }
            tensor = firstOutputOf(mGraph, static_cast<std::uint32_t>(reader.index));
        }
        return false;
    }

    AttentionOperand traceOperand(std::uint32_t matmul, int input)
    {
        AttentionOperand operand;
        operand.matmul = matmul;
        operand.input = input;
        std::uint32_t tensor = inputOf(mGraph, matmul, static_cast<std::size_t>(input));
        for (int hop = 0; hop < kMaxOperandHops; ++hop)
        {
            const OnnxNode* producer = tensor == kNoTensor ? nullptr : mGraph.producerOf(tensor);
            if (producer == nullptr)
            {
                break;
            }
            if (isDequantize(*producer))
            {
                operand.dequantize = static_cast<std::uint32_t>(producer->index);
                return operand;
            }
            const auto activations = mValues.activations(*producer);
            const bool scaling = (producer->opType == "Mul" || producer->opType == "Div") && activations.size() == 1;
            if (activations.size() != 1 || (!isDataMovement(producer->opType) && !scaling))
            {
                break;
            }
            operand.between.push_back(static_cast<std::uint32_t>(producer->index));
            tensor = activations[0];
        }
        operand.between.clear(); // no DequantizeLinear behind it: float, nothing in between counts
        return operand;
    }

    void traceOperands(AttentionBlock& block)
    {
        block.query = traceOperand(block.scoresMatMul, 0);
        block.key = traceOperand(block.scoresMatMul, 1);
        block.probabilities = traceOperand(block.contextMatMul, 0);
        block.value = traceOperand(block.contextMatMul, 1);
        block.quantized = block.query.quantized() || block.key.quantized() || block.probabilities.quantized() ||
                          block.value.quantized();
    }

    //! A Mul or Div by a build-time value on the way back from a MatMul input, through Q/DQ and data movement.
    std::uint32_t scaleOnPath(std::uint32_t tensor)
    {
        for (int hop = 0; hop < kMaxScaleHops && tensor != kNoTensor; ++hop)
        {
            const OnnxNode* producer = mGraph.producerOf(tensor);
            if (producer == nullptr)
            {
                return kNoNode;
            }
            const auto activations = mValues.activations(*producer);
            if (activations.size() != 1)
            {
                return kNoNode;
            }
            if (producer->opType == "Mul" || producer->opType == "Div")
            {
                return static_cast<std::uint32_t>(producer->index);
            }
            if (!isQdq(*producer) && !isDataMovement(producer->opType))
            {
                return kNoNode;
            }
            tensor = activations[0];
        }
        return kNoNode;
    }

    void findScale(AttentionBlock& block)
    {
        block.query.scaledBy = scaleOnPath(inputOf(mGraph, block.scoresMatMul, 0));
        block.key.scaledBy = scaleOnPath(inputOf(mGraph, block.scoresMatMul, 1));
        if (block.query.scaledBy != kNoNode && block.key.scaledBy != kNoNode)
        {
            block.scale = AttentionScale::kIntoBoth;
        }
        else if (block.query.scaledBy != kNoNode)
        {
            block.scale = AttentionScale::kIntoQuery;
        }
        else if (block.key.scaledBy != kNoNode)
        {
            block.scale = AttentionScale::kIntoKey;
        }
        else if (mScoreScale != kNoNode)
        {
            block.scale = AttentionScale::kOnScores;
        }
        if (block.scale == AttentionScale::kOnScores)
        {
            mScoreScaleOf = mScoreScale;
        }
        mScoreScale = kNoNode;
    }

    const std::string& name(std::uint32_t node) const { return mGraph.nodes[node].name; }

    void checkOperand(AttentionBlock& block, const AttentionOperand& operand, std::string_view role)
    {
        const std::string which =
            std::string(role) + " (input " + std::to_string(operand.input) + " of " + name(operand.matmul) + ")";
        if (operand.readsDequantizeStraight())
        {
            return;
        }
        AttentionBlocker blocker;
        blocker.matmul = operand.matmul;
        if (operand.quantized())
        {
            std::string path;
            for (auto it = operand.between.rbegin(); it != operand.between.rend(); ++it)
            {
                path += (path.empty() ? "" : ", ") + name(*it) + " (" + mGraph.nodes[*it].opType + ")";
            }
            blocker.node = operand.between.front();
            blocker.reason = which + " reads " + path + " after its DequantizeLinear " + name(operand.dequantize) +
                             ", not the DequantizeLinear itself; quantized fused attention wants each MatMul input "
                             "straight from a DequantizeLinear, with the Transpose or scaling Mul moved to the other "
                             "side of the Q/DQ (NVIDIA Model-Optimizer PR #1289)";
        }
        else
        {
            blocker.node = operand.matmul;
            blocker.reason = which + " is not quantized while the rest of the attention is; quantized fused "
                                     "attention wants every MatMul input from a DequantizeLinear (NVIDIA "
                                     "Model-Optimizer PR #1289)";
        }
        block.blockers.push_back(std::move(blocker));
    }

    void checkConditions(AttentionBlock& block)
    {
        if (block.scale == AttentionScale::kOnScores)
        {
            AttentionBlocker blocker;
            blocker.node = mScoreScaleOf;
            blocker.matmul = block.scoresMatMul;
            blocker.reason = name(mScoreScaleOf) + " scales Q * K^T after " + name(block.scoresMatMul) +
                             "; TensorRT's fused attention wants the scale multiplied into Q or K (or its square root "
                             "into both) before the first MatMul (TensorRT docs, \"Fused Attention\")";
            block.blockers.push_back(std::move(blocker));
        }
        else if (block.scale == AttentionScale::kNone)
        {
            block.notes.push_back("no attention scale found before " + name(block.scoresMatMul) +
                                  "; the \"Fused Attention\" page asks for one in Q or K, and does not say whether "
                                  "an unscaled attention fuses (guess: it does)");
        }
        if (block.quantized)
        {
            checkOperand(block, block.query, "Q");
            checkOperand(block, block.key, "K");
            if (!block.softmaxOutputQuantized)
            {
                AttentionBlocker blocker;
                blocker.node = block.softmax;
                blocker.matmul = block.contextMatMul;
                blocker.reason = "the output of " + name(block.softmax) +
                                 " is not quantized; quantized fused attention gives the Softmax output its own "
                                 "Q/DQ (FP8: a fixed 1/448 scale; NVIDIA Model-Optimizer PR #1289)";
                block.blockers.push_back(std::move(blocker));
            }
            else
            {
                checkOperand(block, block.probabilities, "the probabilities");
            }
            checkOperand(block, block.value, "V");
        }
        if (!block.scoreReshapes.empty())
        {
            block.notes.push_back(name(block.scoreReshapes.front()) + " reshapes Q * K^T before " +
                                  name(block.softmax) +
                                  " (a window attention's per-window mask, as in Swin); the \"Fused Attention\" page "
                                  "describes only a mask between the first MatMul and the Softmax, and no source says "
                                  "whether the fused kernel takes a reshape there (guess: it does, the reshape only "
                                  "regroups the scores)");
        }
        if (!block.scoreQdq.empty())
        {
            block.notes.push_back("a Q/DQ pair quantizes Q * K^T before " + name(block.softmax) +
                                  "; ModelOpt's recipe has none there and no source says whether the fused kernel "
                                  "takes it (guess: it does, and the scores keep their float precision)");
        }
    }

    const OnnxGraph& mGraph;
    BuildTimeValues mValues;
    std::uint32_t mScoreScale = kNoNode;   //!< the scale found on the scores while walking back from a Softmax
    std::uint32_t mScoreScaleOf = kNoNode; //!< that scale, when it is the block's scale
};

} // namespace

std::string_view attentionScaleName(AttentionScale scale)
{
    switch (scale)
    {
    case AttentionScale::kIntoQuery:
        return "into Q";
    case AttentionScale::kIntoKey:
        return "into K";
    case AttentionScale::kIntoBoth:
        return "into Q and K";
    case AttentionScale::kOnScores:
        return "on Q * K^T";
    case AttentionScale::kNone:
        break;
    }
    return "none";
}

std::vector<std::uint32_t> AttentionBlock::nodes() const
{
    std::vector<std::uint32_t> result = {scoresMatMul, contextMatMul};
    result.insert(result.end(), inner.begin(), inner.end());
    for (const AttentionOperand* operand : {&query, &key, &probabilities, &value})
    {
        result.insert(result.end(), operand->between.begin(), operand->between.end());
        if (operand->dequantize != kNoNode)
        {
            result.push_back(operand->dequantize);
        }
    }
    std::sort(result.begin(), result.end());
    result.erase(std::unique(result.begin(), result.end()), result.end());
    return result;
}

std::vector<AttentionBlock> findAttentionBlocks(const OnnxGraph& graph)
{
    return AttentionFinder(graph).run();
}

std::string describeAttention(const OnnxGraph& graph, const AttentionBlock& block)
{
    std::string text = "attention " + graph.nodes[block.scoresMatMul].name + " -> " + graph.nodes[block.softmax].name +
                       " -> " + graph.nodes[block.contextMatMul].name + ": ";
    text += block.quantized ? "quantized, " : "float, ";
    text += "scale " + std::string(attentionScaleName(block.scale));
    if (block.mask != kNoNode)
    {
        text += ", " + std::string(graph.nodes[block.mask].opType == "Where" ? "boolean" : "add") + " mask " +
                graph.nodes[block.mask].name;
    }
    if (block.fuses())
    {
        text += "; meets the documented conditions of fused attention";
    }
    for (const auto& blocker : block.blockers)
    {
        text += "; does not fuse: " + blocker.reason;
    }
    for (const auto& note : block.notes)
    {
        text += "; " + note;
    }
    return text;
}

} // namespace qdq
