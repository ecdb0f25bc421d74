// ONNX reader: streams the protobuf file, walking ModelProto and GraphProto by tag so that large weights are
// skipped (never loaded unless asked). Nodes are decoded from their bytes (parsers/onnx_node_wire.cpp); value
// infos, opset entries and Constant values are small and parsed with the ONNX protobuf classes; initializers are
// parsed field by field.
#include "parsers/external_data_location.h"
#include "parsers/external_data_ref.h"
#include "parsers/file_source.h"
#include "parsers/onnx_reader_impl.h"
#include "qdq/quantized_types.h"
#include "qdq/readers.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace qdq::onnx_detail
{

const char* wireTypeName(int wireType)
{
    switch (wireType)
    {
    case kVarint:
        return "varint";
    case kFixed64:
        return "fixed64";
    case kLengthDelimited:
        return "length-delimited";
    case kStartGroup:
    case kEndGroup:
        return "group";
    case kFixed32:
        return "fixed32";
    default:
        return "invalid";
    }
}

bool isStandardDomain(const std::string& domain)
{
    return domain.empty() || domain == "ai.onnx";
}

OnnxNode::QdqKind qdqKindOf(std::string_view opType, std::string_view domain)
{
    if (opType.starts_with("TRT_") && !domain.empty() && domain != "trt")
    {
        return OnnxNode::QdqKind::kNone; // the user's plugin of that name
    }
    if (opType == "QuantizeLinear" || opType == "TRT_FP8QuantizeLinear" || opType == "TRT_INT4QuantizeLinear" ||
        opType == "TRT_MXFP8QuantizeLinear" || opType == "TRT_FP4DynamicQuantize" ||
        opType == "TRT_MXFP8DynamicQuantize")
    {
        return OnnxNode::QdqKind::kQuantize;
    }
    if (opType == "DequantizeLinear" || opType == "TRT_FP8DequantizeLinear" || opType == "TRT_INT4DequantizeLinear" ||
        opType == "TRT_MXFP8DequantizeLinear")
    {
        return OnnxNode::QdqKind::kDequantize;
    }
    return OnnxNode::QdqKind::kNone;
}

std::optional<OnnxDataType> tensorRtQdqType(std::string_view opType)
{
    if (opType.starts_with("TRT_FP8") || opType.starts_with("TRT_MXFP8"))
    {
        return OnnxDataType::kFloat8E4M3FN;
    }
    if (opType.starts_with("TRT_INT4"))
    {
        return OnnxDataType::kInt4;
    }
    if (opType.starts_with("TRT_FP4"))
    {
        return OnnxDataType::kFloat4E2M1;
    }
    return std::nullopt;
}

bool importedAsQdq(const OnnxNode& node)
{
    return isStandardDomain(node.domain) || node.domain == "trt" || tensorRtQdqType(node.opType).has_value();
}

void OnnxReader::parseModel(Wire& wire)
{
    bool sawGraph = false;
    std::uint32_t tag = 0;
    std::uint64_t tagOffset = 0;
    onnx::OperatorSetIdProto opset;
    while (nextTag(wire, tag, tagOffset))
    {
        switch (tag >> 3)
        {
        case 1:
            expectWireType(tag, kVarint, tagOffset, "ir_version");
            mGraph.irVersion = static_cast<std::int64_t>(readVarint(wire, tagOffset));
            break;
        case 2:
            mGraph.producerName = readString(wire, tag, tagOffset, "producer_name");
            break;
        case 3:
            mGraph.producerVersion = readString(wire, tag, tagOffset, "producer_version");
            break;
        case 7:
        {
            expectWireType(tag, kLengthDelimited, tagOffset, "graph");
            std::uint32_t length = readLength(wire, tagOffset);
            mGraphStarted = true;
            reserveForGraph(position(wire), length);
            auto limit = wire.in.PushLimit(static_cast<int>(length));
            parseGraph(wire);
            wire.in.PopLimit(limit);
            sawGraph = true;
            break;
        }
        case 8:
            parseMessage(wire, tag, tagOffset, opset, "opset_import");
            mGraph.opsets.emplace_back(opset.domain(), opset.version());
            break;
        case 25:
        {
            // A model-local function (torch's export_modules_as_functions, onnxscript): TensorRT's parser expands
            // each call; this reader does not, so it remembers what is inside to say what goes unread.
            onnx::FunctionProto function;
            const std::uint64_t offset = tagOffset;
            parseMessage(wire, tag, tagOffset, function, "function");
            LocalFunction local{function.domain(), function.name(), offset,
                                static_cast<std::size_t>(function.node_size()), 0};
            for (const auto& node : function.node())
            {
                local.qdqNodes += node.op_type() == "QuantizeLinear" || node.op_type() == "DequantizeLinear";
            }
            mLocalFunctions.push_back(std::move(local));
            break;
        }
        default:
            skipField(wire, tag, tagOffset);
            break;
        }
    }
    if (!sawGraph)
    {
        fail(0, "not an ONNX model: no graph field");
    }
}

//! Sizes the node and tensor arrays before the graph is read, from a quick count of its node fields (tags and
//! lengths only, read in 64 KiB windows): growing them node by node would move every node several times. The
//! count ends at the first other field after the nodes (writers put the nodes first), so large initializers are
//! not read twice. A malformed graph stops the count; the parse that follows reports it.
void OnnxReader::reserveForGraph(std::uint64_t offset, std::uint64_t length)
{
    constexpr std::uint64_t kWindow = 1 << 16;
    constexpr std::uint64_t kHeader = 20; // a tag and a length varint at most
    const std::uint64_t end = offset + length;
    std::string window;
    std::uint64_t windowStart = 0;
    std::uint64_t position = offset;
    std::size_t nodes = 0;
    while (position < end && nodes < mLimits.maxGraphNodes)
    {
        if (window.empty() || position < windowStart ||
            position + std::min(kHeader, end - position) > windowStart + window.size())
        {
            windowStart = position;
            if (!mSource.read(position, std::min(kWindow, end - position), window))
            {
                return;
            }
        }
        const auto* at = reinterpret_cast<const unsigned char*>(window.data()) + (position - windowStart);
        const auto* limit = reinterpret_cast<const unsigned char*>(window.data()) + window.size();
        auto varint = [&](std::uint64_t& value)
        {
            value = 0;
            for (int shift = 0; shift < 64 && at < limit; shift += 7)
            {
                const unsigned char byte = *at++;
                value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
                if ((byte & 0x80) == 0)
                {
                    return true;
                }
            }
            return false;
        };
        std::uint64_t tag = 0;
        std::uint64_t size = 0;
        if (!varint(tag))
        {
            break;
        }
        switch (tag & 7)
        {
        case kVarint:
            if (!varint(size))
            {
                return;
            }
            size = 0;
            break;
        case kFixed64:
            size = 8;
            break;
        case kFixed32:
            size = 4;
            break;
        case kLengthDelimited:
            if (!varint(size))
            {
                return;
            }
            break;
        default:
            return;
        }
        if ((tag >> 3) == 1)
        {
            ++nodes;
        }
        else if (nodes > 0)
        {
            break; // the nodes are behind us
        }
        position = windowStart + static_cast<std::uint64_t>(at - reinterpret_cast<const unsigned char*>(window.data()));
        if (size > end - position)
        {
            break;
        }
        position += size;
    }
    nodes = std::min(nodes, mLimits.maxGraphNodes);
    mReservedNodes = nodes;
    mGraph.nodes.reserve(mGraph.nodes.size() + nodes);
    mNodeOffsets.reserve(mNodeOffsets.size() + nodes);
    mGraph.nodeInputStart.reserve(mGraph.nodeInputStart.size() + nodes + 1);
    mGraph.nodeOutputStart.reserve(mGraph.nodeOutputStart.size() + nodes + 1);
    mGraph.nodeInputIds.reserve(mGraph.nodeInputIds.size() + 2 * nodes); // most ops read 1-3 tensors
    mGraph.nodeOutputIds.reserve(mGraph.nodeOutputIds.size() + nodes);
    mGraph.tensors.names.reserve(mGraph.tensors.names.size() + nodes + nodes / 4);
    mGraph.tensors.index.reserve(mGraph.tensors.names.size() + nodes + nodes / 4);
}

void OnnxReader::parseGraph(Wire& wire)
{
    if (mGraph.nodeInputStart.empty())
    {
        mGraph.nodeInputStart.push_back(0);
        mGraph.nodeOutputStart.push_back(0);
    }
    std::uint32_t tag = 0;
    std::uint64_t tagOffset = 0;
    onnx::ValueInfoProto valueInfo;
    // Large graphs intern their nodes' tensor names on the second core: the bench's 500,000-node model read in
    // 0.43-0.58 s before (interning was a fifth of it).
    mInterner = std::make_unique<NodeTensorInterner>(mGraph, mReservedNodes >= kThreadedInternNodes);
    while (nextTag(wire, tag, tagOffset))
    {
        switch (tag >> 3)
        {
        case 1:
            mContext = {"graph.node", true, mGraph.nodes.size()};
            parseNode(wire, tag, tagOffset);
            break;
        case 2:
            mGraph.graphName = readString(wire, tag, tagOffset, "graph.name");
            break;
        case 5:
            mContext = {"graph.initializer", true, mInitializerCount};
            parseInitializer(wire, tag, tagOffset);
            ++mInitializerCount;
            break;
        case 11:
        case 12:
        case 13:
        {
            const int field = static_cast<int>(tag >> 3);
            mContext = {field == 11 ? "graph.input" : field == 12 ? "graph.output" : "graph.value_info"};
            parseMessage(wire, tag, tagOffset, valueInfo, "ValueInfoProto");
            if (valueInfo.type().has_tensor_type() && valueInfo.type().tensor_type().elem_type() != 0)
            {
                drainInterner();
                std::uint32_t id = mGraph.tensors.intern(valueInfo.name());
                growTensorArrays();
                mGraph.tensors.type[id] = static_cast<OnnxDataType>(valueInfo.type().tensor_type().elem_type());
            }
            if (field == 11)
            {
                mAllGraphInputs.push_back(valueInfo.name());
            }
            else if (field == 12)
            {
                mGraph.graphOutputs.push_back(valueInfo.name());
            }
            break;
        }
        case 15:
            mContext = {"graph.sparse_initializer"};
            parseSparseInitializer(wire, tag, tagOffset);
            break;
        default:
            skipField(wire, tag, tagOffset);
            break;
        }
        mContext = {};
    }
    drainInterner();
    mInterner.reset();
}

//! Waits for the interner thread; meanwhile this thread indexes the node names read so far (the interner runs
//! behind the decoding, and the index is work linkGraph would otherwise wait for).
void OnnxReader::drainInterner()
{
    mInterner->drain([this] { return indexNodeNames(kIndexSliceNodes); });
}

//! Indexes the next `most` nodes not yet indexed by name, in node order (the first of two nodes with one name
//! keeps it); returns whether nodes read so far are left.
bool OnnxReader::indexNodeNames(std::size_t most)
{
    if (mNodesIndexed == 0)
    {
        mGraph.nodeIndexByName.reserve(std::max(mReservedNodes, mGraph.nodes.size()));
    }
    const auto nodeName = [this](std::uint32_t id) -> const std::string& { return mGraph.nodes[id].name; };
    const std::size_t end = mGraph.nodes.size() - mNodesIndexed > most ? mNodesIndexed + most : mGraph.nodes.size();
    for (; mNodesIndexed < end; ++mNodesIndexed)
    {
        const auto index = static_cast<std::uint32_t>(mNodesIndexed);
        if (mGraph.nodeIndexByName.insert(mGraph.nodes[mNodesIndexed].name, index, nodeName) != index)
        {
            mDuplicateNameNodes.push_back(index);
        }
    }
    return mNodesIndexed < mGraph.nodes.size();
}

void OnnxReader::parseNode(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset)
{
    if (mGraph.nodes.size() >= mLimits.maxGraphNodes)
    {
        fail(tagOffset, "graph has more than " + std::to_string(mLimits.maxGraphNodes) +
                            " nodes, over the graph node limit (raise it with --max-graph-nodes)");
    }
    expectWireType(tag, kLengthDelimited, tagOffset, "graph.node");
    // Remember the whole NodeProto's byte range for a later re-read of a large Constant value.
    const std::uint32_t length = readLength(wire, tagOffset);
    const std::uint64_t bodyOffset = position(wire);
    if (!wire.in.ReadString(&mNodeBytes, static_cast<int>(length)))
    {
        failAt(tagOffset, "truncated protobuf");
    }
    std::string problem = onnx_wire::decodeNode(mNodeBytes, mNodeFields);
    if (!problem.empty())
    {
        failAt(tagOffset, "invalid NodeProto (" + problem + ")");
    }

    const std::size_t index = mGraph.nodes.size();
    OnnxNode& node = mGraph.nodes.emplace_back();
    node.index = index;
    node.name.assign(mNodeFields.name);
    node.opType.assign(mNodeFields.opType);
    node.domain.assign(mNodeFields.domain);
    node.qdqKind = qdqKindOf(mNodeFields.opType, mNodeFields.domain);
    mInterner->addNode(mNodeFields.inputs, mNodeFields.outputs);
    node.attributes.resize(mNodeFields.attributes.size());
    for (std::size_t i = 0; i < mNodeFields.attributes.size(); ++i)
    {
        problem = onnx_wire::decodeAttribute(mNodeFields.attributes[i], node.attributes[i]);
        if (!problem.empty())
        {
            failAt(tagOffset, "invalid NodeProto (attribute " + std::to_string(i) + ": " + problem + ")");
        }
    }
    if (node.name.empty())
    {
        node.nameWasEmpty = true;
        node.name = "node_of_" + (mNodeFields.outputs.empty() ? std::to_string(node.index)
                                                              : std::string(mNodeFields.outputs.front()));
    }
    mNodeOffsets.push_back(tagOffset);
    if (node.opType == "Constant" && isStandardDomain(node.domain) && !mNodeFields.outputs.empty())
    {
        // Rare and small: the value tensor is walked with the protobuf classes.
        if (!mNodeProto.ParseFromString(mNodeBytes))
        {
            failAt(tagOffset, "invalid NodeProto");
        }
        addConstantNode(mNodeProto, std::string(mNodeFields.outputs.front()), tagOffset, bodyOffset, length);
    }
}

bool preadAll(int fd, std::uint64_t offset, std::uint64_t length, std::string& out)
{
    out.resize(length);
    std::uint64_t done = 0;
    while (done < length)
    {
        ssize_t n = ::pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n <= 0)
        {
            return false;
        }
        done += static_cast<std::uint64_t>(n);
    }
    return true;
}

} // namespace qdq::onnx_detail

namespace qdq
{

namespace
{

using namespace onnx_detail;

class BufferSource : public ByteSource
{
public:
    explicit BufferSource(std::string_view bytes) : mBytes(bytes) {}
    bool read(std::uint64_t offset, std::uint64_t length, std::string& out) const override
    {
        if (offset > mBytes.size() || length > mBytes.size() - offset)
        {
            return false;
        }
        out.assign(mBytes.substr(offset, length));
        return true;
    }

private:
    std::string_view mBytes;
};

class FdSource : public ByteSource
{
public:
    explicit FdSource(int fd) : mFd(fd) {}
    bool read(std::uint64_t offset, std::uint64_t length, std::string& out) const override
    {
        return preadAll(mFd, offset, length, out);
    }

private:
    int mFd;
};

[[noreturn]] void failWhole(const std::string& path, const std::string& message)
{
    SourceLocation where;
    where.path = path;
    throw InputError(where, message);
}

void checkProtobufSize(const std::string& path, std::uint64_t size)
{
    if (size > static_cast<std::uint64_t>(INT_MAX))
    {
        failWhole(
            path,
            "file is " + std::to_string(size >> 20) +
                " MiB; an ONNX protobuf file cannot exceed 2 GiB (larger models keep their weights in external data "
                "files)");
    }
}

} // namespace

OnnxGraph readOnnx(const std::string& path, const OnnxReadOptions& options, const Limits& limits)
{
    const std::uint64_t size = checkedFileSize(path, limits);
    checkProtobufSize(path, size);
    Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.fd < 0)
    {
        failWhole(path, std::string("cannot open: ") + std::strerror(errno));
    }
    google::protobuf::io::FileInputStream stream(file.fd, kFileBlockBytes);
    CodedInputStream in(&stream);
    in.SetTotalBytesLimit(static_cast<int>(size));
    FdSource source(file.fd);
    OnnxReader reader(path, options, limits, source);
    return reader.read(in, size);
}

OnnxGraph readOnnxFromBuffer(std::string_view bytes, const std::string& pathForMessages, const OnnxReadOptions& options,
                             const Limits& limits)
{
    if (bytes.size() > limits.maxInputBytes)
    {
        failWhole(pathForMessages,
                  "input is " + std::to_string(bytes.size() >> 20) + " MiB, over the input size limit of " +
                      std::to_string(limits.maxInputBytes >> 20) + " MiB (raise it with --max-input-mb)");
    }
    checkProtobufSize(pathForMessages, bytes.size());
    google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
    CodedInputStream in(&stream);
    in.SetTotalBytesLimit(static_cast<int>(bytes.size()));
    BufferSource source(bytes);
    OnnxReader reader(pathForMessages, options, limits, source);
    return reader.read(in, bytes.size());
}

} // namespace qdq