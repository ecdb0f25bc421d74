#include "qdq/onnx_graph.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace qdq
{

std::string_view onnxDataTypeName(OnnxDataType type)
{
    switch (type)
    {
    case OnnxDataType::kUndefined:
        return "undefined";
    case OnnxDataType::kFloat:
        return "float";
    case OnnxDataType::kUint8:
        return "uint8";
    case OnnxDataType::kInt8:
        return "int8";
    case OnnxDataType::kUint16:
        return "uint16";
    case OnnxDataType::kInt16:
        return "int16";
    case OnnxDataType::kInt32:
        return "int32";
    case OnnxDataType::kInt64:
        return "int64";
    case OnnxDataType::kString:
        return "string";
    case OnnxDataType::kBool:
        return "bool";
    case OnnxDataType::kFloat16:
        return "float16";
    case OnnxDataType::kDouble:
        return "double";
    case OnnxDataType::kUint32:
        return "uint32";
    case OnnxDataType::kUint64:
        return "uint64";
    case OnnxDataType::kBfloat16:
        return "bfloat16";
    case OnnxDataType::kFloat8E4M3FN:
        return "float8e4m3fn";
    case OnnxDataType::kFloat8E4M3FNUZ:
        return "float8e4m3fnuz";
    case OnnxDataType::kFloat8E5M2:
        return "float8e5m2";
    case OnnxDataType::kFloat8E5M2FNUZ:
        return "float8e5m2fnuz";
    case OnnxDataType::kUint4:
        return "uint4";
    case OnnxDataType::kInt4:
        return "int4";
    case OnnxDataType::kFloat4E2M1:
        return "float4e2m1";
    }
    return "unknown";
}

const OnnxAttribute* OnnxNode::attribute(std::string_view attributeName) const
{
    for (const auto& candidate : attributes)
    {
        if (candidate.name == attributeName)
        {
            return &candidate;
        }
    }
    return nullptr;
}

std::optional<std::int64_t> OnnxNode::intAttribute(std::string_view attributeName) const
{
    const OnnxAttribute* found = attribute(attributeName);
    if (found == nullptr || found->kind != OnnxAttribute::Kind::kInt)
    {
        return std::nullopt;
    }
    return found->i;
}

bool OnnxNode::isCustomDomain() const
{
    // TensorRT's own Q/DQ ops (trt::TRT_FP8QuantizeLinear, ...) are Q/DQ to its parser, not plugins.
    return !domain.empty() && domain != "ai.onnx" && qdqKind == QdqKind::kNone;
}

std::uint32_t OnnxTensorTable::intern(std::string_view name)
{
    // Most names come back soon after they first appear (a node's output read by the next node): a small cache of
    // recent ids by hash skips the probe of the large table, whose slots are rarely in the CPU cache.
    const std::uint32_t hash = NameIndex::hashOf(name);
    std::uint32_t& recent = mRecent[hash & (kRecent - 1)];
    if (recent < names.size() && names[recent] == name)
    {
        return recent;
    }
    const auto nameOf = [this](std::uint32_t id) -> const std::string& { return names[id]; };
    const std::uint32_t id = index.insertHashed(name, hash, static_cast<std::uint32_t>(names.size()), nameOf);
    if (id == names.size())
    {
        names.emplace_back(name);
    }
    recent = id;
    return id;
}

const std::string& TensorNames::emptyName()
{
    static const std::string empty;
    return empty;
}

const std::string& TensorNames::at(std::size_t i) const
{
    if (i >= mCount)
    {
        throw std::out_of_range("TensorNames::at: index " + std::to_string(i) + " >= size " + std::to_string(mCount));
    }
    return (*this)[i];
}

void OnnxGraph::linkNodeTensors()
{
    for (std::size_t i = 0; i < nodes.size(); ++i)
    {
        if (i + 1 >= nodeInputStart.size() || i + 1 >= nodeOutputStart.size())
        {
            nodes[i].inputs = {};
            nodes[i].outputs = {};
            continue;
        }
        nodes[i].inputs = TensorNames(tensors.names.data(), nodeInputIds.data() + nodeInputStart[i],
                                      nodeInputStart[i + 1] - nodeInputStart[i]);
        nodes[i].outputs = TensorNames(tensors.names.data(), nodeOutputIds.data() + nodeOutputStart[i],
                                       nodeOutputStart[i + 1] - nodeOutputStart[i]);
    }
}

std::uint32_t OnnxGraph::nodeIndex(const std::string& nodeName) const
{
    if (!nodes.empty())
    {
        const auto address = reinterpret_cast<std::uintptr_t>(&nodeName);
        const auto first = reinterpret_cast<std::uintptr_t>(nodes.data());
        if (address >= first && address < first + nodes.size() * sizeof(OnnxNode))
        {
            const std::size_t index = (address - first) / sizeof(OnnxNode);
            if (&nodes[index].name == &nodeName && !duplicateNodeNames)
            {
                return static_cast<std::uint32_t>(index);
            }
        }
    }
    return nodeIndex(std::string_view(nodeName));
}

const OnnxNode* OnnxGraph::findNode(const std::string& nodeName) const
{
    std::uint32_t index = nodeIndex(nodeName);
    return index == kNone ? nullptr : &nodes[index];
}

std::uint32_t OnnxGraph::nodeIndex(std::string_view nodeName) const
{
    return nodeIndexByName.find(nodeName, [this](std::uint32_t id) -> const std::string& { return nodes[id].name; });
}

const OnnxNode* OnnxGraph::findNode(std::string_view nodeName) const
{
    std::uint32_t index = nodeIndex(nodeName);
    return index == kNone ? nullptr : &nodes[index];
}

const OnnxNode* OnnxGraph::producer(const TensorKey& tensor) const
{
    std::uint32_t id = tensors.find(tensor);
    return id == kNone ? nullptr : producerOf(id);
}

std::span<const std::uint32_t> OnnxGraph::consumersOf(std::uint32_t tensorId) const
{
    if (tensorId == kNone || tensorId + 1 >= tensors.consumerStart.size())
    {
        return {};
    }
    return std::span<const std::uint32_t>(tensors.consumerNodes)
        .subspan(tensors.consumerStart[tensorId],
                 tensors.consumerStart[tensorId + 1] - tensors.consumerStart[tensorId]);
}

std::span<const std::uint32_t> OnnxGraph::consumers(const TensorKey& tensor) const
{
    return consumersOf(tensors.find(tensor));
}

const OnnxConstant* OnnxGraph::constant(const TensorKey& tensor) const
{
    std::uint32_t id = tensors.find(tensor);
    if (id == kNone || id >= tensors.constant.size() || tensors.constant[id] == kNone)
    {
        return nullptr;
    }
    return &constants[tensors.constant[id]];
}

std::optional<OnnxDataType> OnnxGraph::tensorType(const TensorKey& tensor) const
{
    std::uint32_t id = tensors.find(tensor);
    if (id == kNone || id >= tensors.type.size() || tensors.type[id] == OnnxDataType::kUndefined)
    {
        return std::nullopt;
    }
    return tensors.type[id];
}

const QdqParameters* OnnxGraph::qdqOf(std::size_t nodeIndex) const
{
    if (nodeIndex >= qdqOfNode.size() || qdqOfNode[nodeIndex] == kNone)
    {
        return nullptr;
    }
    return &qdq[qdqOfNode[nodeIndex]];
}

std::size_t OnnxGraph::quantizeCount() const
{
    return static_cast<std::size_t>(
        std::count_if(qdq.begin(), qdq.end(), [](const QdqParameters& entry) { return entry.isQuantize; }));
}

std::size_t OnnxGraph::dequantizeCount() const
{
    return qdq.size() - quantizeCount();
}

} // namespace qdq
