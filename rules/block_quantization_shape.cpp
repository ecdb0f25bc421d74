// block-quantization-shape: a block-quantized Q/DQ (opset 21 block_size, ModelOpt's INT4/FP4/MXFP8 ops) whose block
// size, blocked axis or scale shape TensorRT rejects.
// Sources:
// - IQuantizeLayer / IDequantizeLayer API (TensorRT 10.x) and the "Quantize" operator page: for block quantization
//   the scale has the input's rank and the input's shape except on the blocked axis, which must be the last or the
//   second to last one; there the scale's extent is the input's divided by the block size.
// - "DynamicQuantize" operator page: NVFP4 blocks 16 elements, MXFP8 32, along the last or second to last axis, whose
//   extent the block size must divide.
// - ONNX DequantizeLinear-21: the scale's extent on the blocked axis is ceil(extent / block_size); a block size that
//   does not divide the axis is legal ONNX, but no TensorRT page says it is accepted (a guess: likely).
#include "qdq/patterns.h"
#include "qdq/quantized_types.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;

std::string dimsText(const std::vector<std::int64_t>& dims)
{
    return weights::formatDims(dims);
}

class BlockQuantizationShape final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "block-quantization-shape",
            "",
            "A block-quantized Q/DQ whose block size, blocked axis or scale shape TensorRT rejects (INT4/FP4 weights, "
            "NVFP4 and MXFP8 dynamic quantization)",
            Severity::kError,
            "10.0-11.x",
            kNeedsOnnx,
            "the block quantization must be re-exported with a block size and scale TensorRT accepts"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const QdqParameters& parameters : graph.qdq)
        {
            const OnnxNode& node = graph.nodes[parameters.node];
            if (isDynamicBlockQuantize(node))
            {
                checkDynamic(context, node, parameters, sink);
            }
            else if (parameters.blockSize)
            {
                checkStatic(context, node, parameters, sink);
            }
        }
    }

private:
    //! The dims of the data a Q/DQ quantizes, when it is a constant (a weight).
    static const OnnxConstant* dataConstant(const OnnxGraph& graph, const OnnxNode& node)
    {
        if (node.inputs.empty() || node.inputs[0].empty())
        {
            return nullptr;
        }
        if (const OnnxConstant* constant = graph.constant(node.inputs[0]))
        {
            return constant;
        }
        const OnnxNode* q = producerOf(graph, node.inputs[0]);
        return q != nullptr && isQuantize(*q) && !q->inputs.empty() ? graph.constant(q->inputs[0]) : nullptr;
    }

    //! The scale's dims: a constant, or the constant block scales behind NVFP4's scale DQ.
    static const OnnxConstant* scaleConstant(const OnnxGraph& graph, const OnnxNode& node)
    {
        if (node.inputs.size() < 2 || node.inputs[1].empty())
        {
            return nullptr;
        }
        if (const OnnxConstant* constant = graph.constant(node.inputs[1]))
        {
            return constant;
        }
        const OnnxNode* scaleDq = producerOf(graph, node.inputs[1]);
        return scaleDq != nullptr && isDequantize(*scaleDq) && !scaleDq->inputs.empty()
                   ? graph.constant(scaleDq->inputs[0])
                   : nullptr;
    }

    void add(const Context& context, const OnnxNode& node, std::string message, std::string evidence, bool guess,
             std::string fix, FindingSink& sink) const
    {
        Finding finding = makeFinding(info(), std::move(message));
        finding.onnxNodes = {node.name};
        finding.evidence.push_back(nodeEvidence(context, node, std::move(evidence)));
        finding.fix = std::move(fix);
        if (guess)
        {
            finding.likely = true;
            finding.severity = Severity::kWarning;
        }
        sink.add(std::move(finding));
    }

    void checkStatic(const Context& context, const OnnxNode& node, const QdqParameters& parameters,
                     FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const std::int64_t block = *parameters.blockSize;
        const std::string where = node.opType + " " + node.name;
        if (block <= 0)
        {
            add(context, node,
                where + " has block_size " + std::to_string(block) +
                    "; a block holds at least one "
                    "element.",
                "block_size " + std::to_string(block), false, "re-export with a positive block size", sink);
            return;
        }
        const OnnxConstant* data = dataConstant(graph, node);
        if (data == nullptr || data->dims.empty())
        {
            return; // an activation's shape is not in the model: nothing to hold the block against
        }
        const auto rank = static_cast<std::int64_t>(data->dims.size());
        std::int64_t axis = parameters.axis.value_or(1); // ONNX's default axis for Q/DQ
        if (axis < 0)
        {
            axis += rank;
        }
        if (axis < 0 || axis >= rank)
        {
            add(context, node,
                where + " blocks axis " + std::to_string(parameters.axis.value_or(1)) + ", outside the rank-" +
                    std::to_string(rank) + " tensor " + data->name + ".",
                "axis outside " + dimsText(data->dims), false, "re-export with the axis of the blocked dimension",
                sink);
            return;
        }
        if (axis < rank - 2)
        {
            add(context, node,
                where + " blocks axis " + std::to_string(axis) + " of " + data->name + " " + dimsText(data->dims) +
                    "; TensorRT blocks only the last or the second to last dimension (IQuantizeLayer / "
                    "IDequantizeLayer API).",
                "block_size " + std::to_string(block) + " on axis " + std::to_string(axis), false,
                "block the last or second to last dimension (MatMul's K: the weight's rows)", sink);
            return;
        }
        const std::int64_t extent = data->dims[static_cast<std::size_t>(axis)];
        if (extent > 0 && extent % block != 0)
        {
            add(context, node,
                where + ": block_size " + std::to_string(block) + " does not divide dimension " + std::to_string(axis) +
                    " (" + std::to_string(extent) + ") of " + data->name + " " + dimsText(data->dims) +
                    ". ONNX allows a last, shorter block; TensorRT's pages give the scale's extent as the input's "
                    "divided by the block size and say nothing of a remainder (a guess: likely rejected).",
                "block_size " + std::to_string(block) + ", extent " + std::to_string(extent), true,
                "re-export with a block size that divides " + std::to_string(extent) + " (ModelOpt uses 128 for INT4)",
                sink);
        }
        checkScaleShape(context, node, *data, axis, block, sink);
    }

    void checkScaleShape(const Context& context, const OnnxNode& node, const OnnxConstant& data, std::int64_t axis,
                         std::int64_t block, FindingSink& sink) const
    {
        const OnnxConstant* scale = scaleConstant(*context.graph(), node);
        if (scale == nullptr)
        {
            return;
        }
        std::vector<std::int64_t> expected = data.dims;
        auto& blocked = expected[static_cast<std::size_t>(axis)];
        blocked = blocked > 0 ? (blocked + block - 1) / block : blocked;
        if (scale->dims == expected)
        {
            return;
        }
        add(context, node,
            node.opType + " " + node.name + ": the scale " + scale->name + " is " + dimsText(scale->dims) + " but " +
                data.name + " " + dimsText(data.dims) + " in blocks of " + std::to_string(block) + " on axis " +
                std::to_string(axis) + " needs " + dimsText(expected) +
                " (the input's shape with the blocked dimension divided by the block size: ONNX DequantizeLinear-21 "
                "and TensorRT's IDequantizeLayer); TensorRT rejects it.",
            "scale " + dimsText(scale->dims) + ", expected " + dimsText(expected), false,
            "re-export the scales as " + dimsText(expected), sink);
    }

    void checkDynamic(const Context& context, const OnnxNode& node, const QdqParameters& parameters,
                      FindingSink& sink) const
    {
        const bool fp4 = node.opType == "TRT_FP4DynamicQuantize";
        const std::int64_t documented = fp4 ? 16 : 32;
        const std::string scheme = fp4 ? "NVFP4" : "MXFP8";
        if (parameters.blockSize && *parameters.blockSize != documented)
        {
            add(context, node,
                node.opType + " " + node.name + " has block_size " + std::to_string(*parameters.blockSize) + "; " +
                    scheme + " dynamic quantization blocks " + std::to_string(documented) +
                    " elements (\"DynamicQuantize\" operator page: the block size is currently limited to 16 for "
                    "FP4 and 32 for MXFP8).",
                "block_size " + std::to_string(*parameters.blockSize), false,
                "re-export with block_size " + std::to_string(documented), sink);
        }
        const std::optional<std::int64_t> axis = parameters.axis;
        if (axis && *axis < -2)
        {
            add(context, node,
                node.opType + " " + node.name + " blocks axis " + std::to_string(*axis) +
                    "; dynamic block quantization blocks the last or the second to last dimension (\"DynamicQuantize\" "
                    "operator page).",
                "axis " + std::to_string(*axis), false, "block the last dimension (axis -1)", sink);
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeBlockQuantizationShape()
{
    return std::make_unique<BlockQuantizationShape>();
}

} // namespace qdq::rules
