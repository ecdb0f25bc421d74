// Quantized types beyond INT8 in the model: which type each Q/DQ node stands for, what each type needs, and the
// opset notes. Sources are listed in include/qdq/quantized_types.h.
#include "qdq/quantized_types.h"

#include "qdq/analysis.h"

#include <algorithm>
#include <array>
#include <set>

namespace qdq
{

namespace
{

// ONNX operator changelog: the opset in which QuantizeLinear/DequantizeLinear first took each element type.
constexpr std::int64_t kFp8Opset = 19;
constexpr std::int64_t kInt4Opset = 21;
constexpr std::int64_t kBlockSizeOpset = 21;
constexpr std::int64_t kFp4Opset = 23;

bool isMxfp8Op(const OnnxNode& node)
{
    return node.opType == "TRT_MXFP8DynamicQuantize" || node.opType == "TRT_MXFP8DequantizeLinear" ||
           node.opType == "TRT_MXFP8QuantizeLinear";
}

//! The DQ that reads this DQ's output as its scale (input 1), or nullptr.
const OnnxNode* dequantizeReadingAsScale(const OnnxGraph& graph, const OnnxNode& dq)
{
    if (dq.outputs.empty())
    {
        return nullptr;
    }
    for (std::uint32_t consumer : graph.consumers(dq.outputs[0]))
    {
        const OnnxNode& node = graph.nodes[consumer];
        if (node.qdqKind == OnnxNode::QdqKind::kDequantize && node.inputs.size() > 1 && node.inputs[1] == dq.outputs[0])
        {
            return &node;
        }
    }
    return nullptr;
}

QuantizedType typeOf(const OnnxGraph& graph, std::size_t nodeIndex, int depth)
{
    const QdqParameters* parameters = graph.qdqOf(nodeIndex);
    const OnnxNode& node = graph.nodes[nodeIndex];
    if (parameters == nullptr || depth > 2)
    {
        return QuantizedType::kUnknown;
    }
    if (isMxfp8Op(node))
    {
        return QuantizedType::kMxfp8;
    }
    if (!parameters->isQuantize)
    {
        // NVFP4's double quantization: this DQ turns the FP8 block scales into the float scales of an FP4 DQ.
        if (const OnnxNode* user = dequantizeReadingAsScale(graph, node))
        {
            const QuantizedType userType = typeOf(graph, user->index, depth + 1);
            if (userType != QuantizedType::kUnknown)
            {
                return userType;
            }
        }
    }
    if (parameters->hasZeroPoint && parameters->zeroPointType != OnnxDataType::kUndefined)
    {
        return quantizedTypeOfElement(parameters->zeroPointType);
    }
    if (parameters->outputDtype)
    {
        return quantizedTypeOfElement(static_cast<OnnxDataType>(*parameters->outputDtype));
    }
    if (!parameters->isQuantize && !node.inputs.empty() && !node.inputs[0].empty())
    {
        if (const OnnxConstant* constant = graph.constant(node.inputs[0]))
        {
            if (QuantizedType type = quantizedTypeOfElement(constant->dataType); type != QuantizedType::kUnknown)
            {
                return type;
            }
        }
        if (auto type = graph.tensorType(node.inputs[0]))
        {
            if (QuantizedType quantized = quantizedTypeOfElement(*type); quantized != QuantizedType::kUnknown)
            {
                return quantized;
            }
        }
        if (const OnnxNode* q = graph.producer(node.inputs[0]); q != nullptr && graph.qdqOf(q->index) != nullptr)
        {
            return typeOf(graph, q->index, depth + 1);
        }
    }
    return QuantizedType::kInt8; // no zero point and no type: ONNX's uint8, which TensorRT reads as INT8 Q/DQ
}

std::string nodeLabel(const OnnxNode& node)
{
    return "node '" + printable(node.name, 256) + "' (" + (node.domain.empty() ? "" : node.domain + "::") +
           node.opType + ")";
}

std::int64_t standardOpset(const OnnxGraph& graph)
{
    for (const auto& [domain, version] : graph.opsets)
    {
        if (domain.empty() || domain == "ai.onnx")
        {
            return version;
        }
    }
    return 0;
}

//! The opset the node's quantized element type needs, with the type's ONNX name; {0, ""} when any opset has it.
std::pair<std::int64_t, std::string_view> opsetNeeded(OnnxDataType type)
{
    switch (type)
    {
    case OnnxDataType::kFloat8E4M3FN:
    case OnnxDataType::kFloat8E4M3FNUZ:
    case OnnxDataType::kFloat8E5M2:
    case OnnxDataType::kFloat8E5M2FNUZ:
        return {kFp8Opset, onnxDataTypeName(type)};
    case OnnxDataType::kInt4:
    case OnnxDataType::kUint4:
        return {kInt4Opset, onnxDataTypeName(type)};
    case OnnxDataType::kFloat4E2M1:
        return {kFp4Opset, onnxDataTypeName(type)};
    default:
        return {0, {}};
    }
}

//! The element type a standard Q/DQ node's own tensors carry: zero point, output_dtype, or the DQ's constant input.
OnnxDataType elementTypeOf(const OnnxGraph& graph, const OnnxNode& node, const QdqParameters& parameters)
{
    if (parameters.hasZeroPoint && parameters.zeroPointType != OnnxDataType::kUndefined)
    {
        return parameters.zeroPointType;
    }
    if (parameters.outputDtype)
    {
        return static_cast<OnnxDataType>(*parameters.outputDtype);
    }
    if (!parameters.isQuantize && !node.inputs.empty() && !node.inputs[0].empty())
    {
        if (const OnnxConstant* constant = graph.constant(node.inputs[0]))
        {
            return constant->dataType;
        }
    }
    return OnnxDataType::kUndefined;
}

} // namespace

std::string_view quantizedTypeLabel(QuantizedType type)
{
    switch (type)
    {
    case QuantizedType::kInt8:
        return "INT8";
    case QuantizedType::kFp8:
        return "FP8";
    case QuantizedType::kInt4:
        return "INT4";
    case QuantizedType::kFp4:
        return "FP4";
    case QuantizedType::kMxfp8:
        return "MXFP8";
    case QuantizedType::kInt32:
        return "INT32";
    case QuantizedType::kUnknown:
        break;
    }
    return "unknown";
}

QuantizedType quantizedTypeOfElement(OnnxDataType type)
{
    switch (type)
    {
    case OnnxDataType::kInt8:
    case OnnxDataType::kUint8:
        return QuantizedType::kInt8;
    case OnnxDataType::kFloat8E4M3FN:
    case OnnxDataType::kFloat8E4M3FNUZ:
    case OnnxDataType::kFloat8E5M2:
    case OnnxDataType::kFloat8E5M2FNUZ:
        return QuantizedType::kFp8;
    case OnnxDataType::kInt4:
    case OnnxDataType::kUint4:
        return QuantizedType::kInt4;
    case OnnxDataType::kFloat4E2M1:
        return QuantizedType::kFp4;
    case OnnxDataType::kInt32:
        return QuantizedType::kInt32;
    default:
        return QuantizedType::kUnknown;
    }
}

QuantizedType quantizedTypeOfQdq(const OnnxGraph& graph, std::size_t nodeIndex)
{
    return typeOf(graph, nodeIndex, 0);
}

bool isDynamicBlockQuantize(const OnnxNode& node)
{
    return node.opType == "TRT_FP4DynamicQuantize" || node.opType == "TRT_MXFP8DynamicQuantize";
}

std::vector<QuantizedTypeCount> countQuantizedTypes(const OnnxGraph& graph)
{
    std::array<std::size_t, 7> counts{};
    for (const QdqParameters& parameters : graph.qdq)
    {
        ++counts[static_cast<std::size_t>(quantizedTypeOfQdq(graph, parameters.node))];
    }
    std::vector<QuantizedTypeCount> result;
    for (std::size_t i = 0; i < counts.size(); ++i)
    {
        if (counts[i] > 0)
        {
            result.push_back({static_cast<QuantizedType>(i), counts[i]});
        }
    }
    return result;
}

QuantizedTypeNeeds needsOf(QuantizedType type)
{
    QuantizedTypeNeeds needs;
    switch (type)
    {
    case QuantizedType::kFp8:
        needs.minCcMajor = 8;
        needs.minCcMinor = 9;
        needs.gpuSource = "TensorRT-RTX support matrix (FP8 from compute capability 8.9, Ada; none on 8.6 Ampere)";
        break;
    case QuantizedType::kFp4:
        needs.minCcMajor = 10;
        needs.gpuSource =
            "TensorRT-RTX support matrix (FP4 GEMM on Blackwell only) and Torch-TensorRT's quantization guide "
            "(NVFP4: Blackwell or newer, TensorRT >= 10.8)";
        needs.minTrtMajor = 10;
        needs.minTrtMinor = 8;
        needs.trtSource = "TensorRT CHANGELOG 10.8.0: the ONNX parser added the FLOAT4E2M1 type";
        break;
    case QuantizedType::kMxfp8:
        // No TensorRT page names MXFP8's GPUs; Transformer Engine's support matrix (another NVIDIA library) has it on
        // Blackwell (10.0) only: a guess for TensorRT.
        needs.minCcMajor = 10;
        needs.gpuSource = "guess: Transformer Engine's support matrix lists MXFP8 on Blackwell (10.0) only; TensorRT's "
                          "pages do not say";
        needs.gpuGuess = true;
        needs.minTrtMajor = 10;
        needs.minTrtMinor = 12;
        needs.trtSource = "TensorRT CHANGELOG 10.12.0: the ONNX parser added ModelOpt's custom MXFP8 quantization ops";
        break;
    case QuantizedType::kInt4:
        needs.minCcMajor = 8;
        needs.minCcMinor = 0;
        needs.gpuSource = "Model Optimizer's support matrix (W4A16, block-wise INT4 weights: Ampere and later) and the "
                          "TensorRT-RTX support matrix (INT4 weight-only GEMM: none on 7.5 Turing); TensorRT's own "
                          "matrix does not list INT4";
        needs.gpuGuess = true;
        needs.minTrtMajor = 10;
        needs.minTrtMinor = 0;
        needs.trtSource = "TensorRT CHANGELOG 10.0.0 EA: added INT4 quantization";
        break;
    case QuantizedType::kInt8:
    case QuantizedType::kInt32:
    case QuantizedType::kUnknown:
        break;
    }
    return needs;
}

std::vector<ReaderWarning> quantizedTypeOpsetNotes(const OnnxGraph& graph)
{
    std::vector<ReaderWarning> notes;
    const std::int64_t opset = standardOpset(graph);
    if (opset == 0)
    {
        return notes;
    }
    for (const QdqParameters& parameters : graph.qdq)
    {
        const OnnxNode& node = graph.nodes[parameters.node];
        if (!(node.domain.empty() || node.domain == "ai.onnx"))
        {
            continue; // TensorRT-domain ops carry their type in the op, not in the ONNX opset
        }
        const auto [needed, typeName] = opsetNeeded(elementTypeOf(graph, node, parameters));
        if (needed <= opset && !(parameters.blockSize && opset < kBlockSizeOpset))
        {
            continue; // the common case: no note, and no copy of the path for it
        }
        SourceLocation where;
        where.path = graph.sourcePath;
        if (needed > opset)
        {
            notes.push_back(
                {where, nodeLabel(node) + " uses " + std::string(typeName) + ", which ONNX's " + node.opType +
                            " has from opset " + std::to_string(needed) + "; the model imports opset " +
                            std::to_string(opset) +
                            ": ONNX's checker and ONNX Runtime reject it, and no TensorRT page says what its "
                            "parser does with it; re-export with opset " +
                            std::to_string(needed) + " or later"});
        }
        else if (parameters.blockSize && opset < kBlockSizeOpset)
        {
            notes.push_back({where, nodeLabel(node) + " has a block_size attribute, which ONNX's " + node.opType +
                                        " has from opset " + std::to_string(kBlockSizeOpset) +
                                        "; the model imports opset " + std::to_string(opset) +
                                        ": ONNX tools reject it (re-export with opset 21 or later)"});
        }
    }
    return notes;
}

std::vector<std::string> quantizedTypesUncheckedByOnnx(const OnnxGraph& graph)
{
    std::set<std::string> newTypes;
    std::size_t tensorRtOps = 0;
    std::string firstTensorRtOp;
    const auto noteType = [&](OnnxDataType type)
    {
        if (static_cast<int>(type) >= static_cast<int>(OnnxDataType::kFloat8E4M3FN))
        {
            newTypes.insert(std::string(onnxDataTypeName(type)));
        }
    };
    for (const OnnxConstant& constant : graph.constants)
    {
        noteType(constant.dataType);
    }
    for (OnnxDataType type : graph.tensors.type)
    {
        noteType(type);
    }
    for (const QdqParameters& parameters : graph.qdq)
    {
        const OnnxNode& node = graph.nodes[parameters.node];
        noteType(parameters.zeroPointType);
        if (parameters.outputDtype)
        {
            noteType(static_cast<OnnxDataType>(*parameters.outputDtype));
        }
        if (node.domain == "trt")
        {
            if (tensorRtOps++ == 0)
            {
                firstTensorRtOp = node.name;
            }
        }
    }
    std::vector<std::string> notes;
    if (!newTypes.empty())
    {
        std::string list;
        for (const std::string& name : newTypes)
        {
            list += (list.empty() ? "" : ", ") + name;
        }
        notes.push_back("not checked by ONNX 1.12's checker: the element types " + list +
                        " (ONNX 1.14 and later define them); qdq-doctor checks their opset, block sizes and scale "
                        "shapes instead (check the model with a recent ONNX Runtime)");
    }
    if (tensorRtOps > 0)
    {
        notes.push_back("not checked by the ONNX checker: " + std::to_string(tensorRtOps) +
                        " TensorRT-domain Q/DQ op(s) (trt::, first '" + printable(firstTensorRtOp, 128) +
                        "'), which only TensorRT's parser defines");
    }
    return notes;
}

} // namespace qdq
