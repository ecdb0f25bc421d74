// ONNX reader: streams the protobuf file, walking ModelProto and GraphProto by tag so that large weights are
// skipped (never loaded unless asked). Nodes are decoded from their bytes (parsers/onnx_node_wire.cpp); value
// infos, opset entries and Constant values are small and parsed with the ONNX protobuf classes; initializers are
// parsed field by field.
#include "parsers/external_data_location.h"
#include "parsers/external_data_ref.h"
#include "parsers/file_source.h"
#include "parsers/onnx_node_wire.h"
#include "parsers/onnx_tensor_data.h"
#include "parsers/onnx_tensor_interner.h"
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

namespace qdq
{

namespace
{

namespace fs = std::filesystem;
using google::protobuf::io::CodedInputStream;
using namespace onnx_detail;

constexpr std::size_t kWarningCap = 20;
constexpr int kFileBlockBytes = 1 << 16;

using onnx_wire::kEndGroup;
using onnx_wire::kFixed32;
using onnx_wire::kFixed64;
using onnx_wire::kLengthDelimited;
using onnx_wire::kStartGroup;
using onnx_wire::kVarint;

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

//! QuantizeLinear/DequantizeLinear, and the TensorRT-domain ops TensorRT's parser imports as them: NVIDIA ModelOpt
//! exports FP8 and INT4 as trt::TRT_FP8QuantizeLinear, TRT_FP8DequantizeLinear, TRT_INT4QuantizeLinear and
//! TRT_INT4DequantizeLinear (onnx-tensorrt's importers for them call its Q/DQ helper with the type set), in the "trt"
//! domain (or none: a graph rebuilt from a build log names no domain). Its NVFP4 and MXFP8 exports quantize
//! activations at run time with trt::TRT_FP4DynamicQuantize(x, scale) -> (x_fp4, fp8 block scales) and
//! trt::TRT_MXFP8DynamicQuantize(x) -> (x_fp8, e8m0 block scales), dequantized by trt::DequantizeLinear and
//! trt::TRT_MXFP8DequantizeLinear with axis and block_size (NVIDIA/Model-Optimizer
//! modelopt/torch/quantization/export_onnx.py; TensorRT CHANGELOG 10.12: "custom MXFP8 quantization operations").
//! The dynamic quantizers count as the Quantize of their pair: they write the quantized tensor the DQ reads.
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

//! The type a TensorRT-domain Q/DQ op quantizes to, or nothing for the ONNX ops.
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

//! Q/DQ ops TensorRT's parser reads: the ONNX ones in the standard domain, ModelOpt's trt::DequantizeLinear (its
//! NVFP4 export), and the TRT_ ops of the trt domain.
bool importedAsQdq(const OnnxNode& node)
{
    return isStandardDomain(node.domain) || node.domain == "trt" || tensorRtQdqType(node.opType).has_value();
}

//! Where the model's bytes come from, for the few tensors that are read after the streaming pass.
class ByteSource
{
public:
    virtual ~ByteSource() = default;
    virtual bool read(std::uint64_t offset, std::uint64_t length, std::string& out) const = 0;
};

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

struct Fd
{
    int fd = -1;
    Fd() = default;
    explicit Fd(int value) : fd(value) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd(Fd&& other) noexcept : fd(other.fd) { other.fd = -1; }
    ~Fd()
    {
        if (fd >= 0)
        {
            ::close(fd);
        }
    }
};

//! One protobuf input being walked by tag: the stream, the absolute offset of its first byte, and its end.
struct Wire
{
    CodedInputStream& in;
    std::uint64_t base = 0; //!< absolute offset of the stream's position 0 in the model
    std::uint64_t size = 0; //!< bytes in the stream
};

//! Data of a tensor that was not read while streaming, to read later if a Q/DQ node needs it.
struct PendingData
{
    bool fromConstantNode = false;
    std::uint64_t offset = 0; //!< absolute offset of the field payload, or of the Constant NodeProto
    std::uint64_t length = 0;
    int field = kFieldNone;
};

struct TensorRecord
{
    OnnxConstant constant;
    int dataType = 0;
    int dataField = kFieldNone;
    std::string payload;
    bool payloadSkipped = false;
    PendingData pending;
    std::vector<std::pair<std::string, std::string>> externalEntries;
    std::int64_t dataLocation = 0;
    bool weightless = false;
    std::uint64_t offset = 0;
};

struct ExternalFile
{
    bool missing = false;
    //! Why the location is not read (absolute, '..', resolves outside the model's folder); empty when it is.
    std::string refused;
    std::vector<std::string> tensors; //!< the first tensors stored there, for the warning of a refused location
    fs::path resolved;
    std::uint64_t size = 0;
    std::shared_ptr<Fd> fd;
    std::size_t references = 0;
    std::string firstTensor;
};

class OnnxReader
{
public:
    OnnxReader(std::string path, const OnnxReadOptions& options, const Limits& limits, const ByteSource& source)
        : mPath(std::move(path)), mOptions(options), mLimits(limits), mSource(source)
    {
        mGraph.sourcePath = mPath;
        fs::path parent = fs::path(mPath).parent_path();
        mModelDir = parent.empty() ? fs::path(".") : parent;
    }

    OnnxGraph read(CodedInputStream& in, std::uint64_t size)
    {
        if (size == 0)
        {
            fail(0, "empty file: not an ONNX model");
        }
        Wire wire{in, 0, size};
        parseModel(wire);
        finish();
        return std::move(mGraph);
    }

private:
    // ----- errors ---------------------------------------------------------------------------------------------
    [[noreturn]] void fail(std::uint64_t offset, const std::string& message) const
    {
        SourceLocation where;
        where.path = mPath;
        where.byteOffset = offset;
        where.hasByteOffset = true;
        throw InputError(where, message);
    }

    [[noreturn]] void failAt(std::uint64_t offset, const std::string& message) const
    {
        // Before the graph field starts the input may well be something else than a model.
        fail(offset, (mGraphStarted ? std::string() : std::string("not an ONNX model: ")) + message + " at byte " +
                         std::to_string(offset) + contextSuffix());
    }

    std::string contextSuffix() const
    {
        if (mContext.label == nullptr)
        {
            return {};
        }
        return " (in " + std::string(mContext.label) +
               (mContext.indexed ? "[" + std::to_string(mContext.index) + "]" : std::string()) + ")";
    }

    void warn(std::uint64_t offset, bool hasOffset, std::string message)
    {
        ReaderWarning warning;
        warning.where.path = mPath;
        warning.where.byteOffset = offset;
        warning.where.hasByteOffset = hasOffset;
        warning.message = std::move(message);
        mGraph.warnings.push_back(std::move(warning));
    }

    void warnNode(std::size_t node, std::string message) { warn(mNodeOffsets[node], true, std::move(message)); }

    // ----- wire primitives ----------------------------------------------------------------------------------
    static std::uint64_t position(const Wire& wire)
    {
        return wire.base + static_cast<std::uint64_t>(wire.in.CurrentPosition());
    }

    static std::uint64_t remaining(const Wire& wire)
    {
        int untilLimit = wire.in.BytesUntilLimit();
        auto toEnd = wire.size - static_cast<std::uint64_t>(wire.in.CurrentPosition());
        return untilLimit >= 0 ? std::min<std::uint64_t>(static_cast<std::uint64_t>(untilLimit), toEnd) : toEnd;
    }

    //! Reads the next tag; false at the end of the current message. Throws on malformed data.
    bool nextTag(Wire& wire, std::uint32_t& tag, std::uint64_t& tagOffset)
    {
        tagOffset = position(wire);
        if (remaining(wire) == 0)
        {
            return false;
        }
        tag = wire.in.ReadTag();
        if (tag == 0 && position(wire) > tagOffset)
        {
            failAt(tagOffset, "invalid protobuf field number 0");
        }
        if (tag == 0)
        {
            const void* data = nullptr;
            int available = 0;
            if (!wire.in.GetDirectBufferPointer(&data, &available) || available <= 0)
            {
                failAt(tagOffset, "truncated protobuf");
            }
            const auto* bytes = static_cast<const unsigned char*>(data);
            if (bytes[0] == 0)
            {
                failAt(tagOffset, "invalid protobuf field number 0");
            }
            bool allContinue = true;
            for (int i = 0; i < available && i < 10; ++i)
            {
                allContinue = allContinue && (bytes[i] & 0x80) != 0;
            }
            if (allContinue && static_cast<std::uint64_t>(available) == remaining(wire) && available < 10)
            {
                failAt(tagOffset, "truncated protobuf");
            }
            failAt(tagOffset, "invalid protobuf tag");
        }
        const int wireType = static_cast<int>(tag & 7);
        if (wireType == 6 || wireType == 7)
        {
            failAt(tagOffset, "invalid protobuf wire type " + std::to_string(wireType));
        }
        if (wireType == kStartGroup || wireType == kEndGroup)
        {
            failAt(tagOffset,
                   "unsupported protobuf wire type " + std::to_string(wireType) + " (group, never used by ONNX)");
        }
        if ((tag >> 3) == 0)
        {
            failAt(tagOffset, "invalid protobuf field number 0");
        }
        return true;
    }

    void expectWireType(std::uint32_t tag, int expected, std::uint64_t tagOffset, const char* field)
    {
        const int wireType = static_cast<int>(tag & 7);
        if (wireType != expected)
        {
            failAt(tagOffset, std::string("field ") + field + " has wire type " + wireTypeName(wireType) +
                                  ", expected " + wireTypeName(expected) + " (not an ONNX model?)");
        }
    }

    std::uint64_t readVarint(Wire& wire, std::uint64_t tagOffset)
    {
        std::uint64_t value = 0;
        if (!wire.in.ReadVarint64(&value))
        {
            failAt(tagOffset, remaining(wire) < 10 ? "truncated protobuf" : "malformed protobuf varint");
        }
        return value;
    }

    //! Reads a length prefix and checks it against what is left of the enclosing message and of the input.
    std::uint32_t readLength(Wire& wire, std::uint64_t tagOffset)
    {
        std::uint64_t length = readVarint(wire, tagOffset);
        std::uint64_t left = remaining(wire);
        if (length > left)
        {
            failAt(tagOffset, "field length " + std::to_string(length) + " exceeds the remaining " +
                                  std::to_string(left) + " bytes");
        }
        return static_cast<std::uint32_t>(length);
    }

    void skipBytes(Wire& wire, std::uint64_t count, std::uint64_t tagOffset)
    {
        if (count > remaining(wire))
        {
            failAt(tagOffset, "truncated protobuf");
        }
        if (count > 0 && !wire.in.Skip(static_cast<int>(count)))
        {
            failAt(tagOffset, "truncated protobuf");
        }
    }

    void skipField(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset)
    {
        switch (static_cast<int>(tag & 7))
        {
        case kVarint:
            readVarint(wire, tagOffset);
            break;
        case kFixed64:
            skipBytes(wire, 8, tagOffset);
            break;
        case kFixed32:
            skipBytes(wire, 4, tagOffset);
            break;
        case kLengthDelimited:
            skipBytes(wire, readLength(wire, tagOffset), tagOffset);
            break;
        default:
            failAt(tagOffset, "invalid protobuf wire type");
        }
    }

    std::string readString(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset, const char* field)
    {
        expectWireType(tag, kLengthDelimited, tagOffset, field);
        std::uint32_t length = readLength(wire, tagOffset);
        std::string value;
        if (!wire.in.ReadString(&value, static_cast<int>(length)))
        {
            failAt(tagOffset, "truncated protobuf");
        }
        return value;
    }

    //! Parses a length-delimited submessage with the ONNX protobuf classes.
    template <typename Message>
    void parseMessage(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset, Message& message, const char* what)
    {
        expectWireType(tag, kLengthDelimited, tagOffset, what);
        std::uint32_t length = readLength(wire, tagOffset);
        auto limit = wire.in.PushLimit(static_cast<int>(length));
        if (!message.ParseFromCodedStream(&wire.in) || wire.in.BytesUntilLimit() != 0)
        {
            failAt(tagOffset, std::string("invalid ") + what);
        }
        wire.in.PopLimit(limit);
    }

    // ----- ModelProto / GraphProto ----------------------------------------------------------------------------
    void parseModel(Wire& wire)
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
    void reserveForGraph(std::uint64_t offset, std::uint64_t length)
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
            position =
                windowStart + static_cast<std::uint64_t>(at - reinterpret_cast<const unsigned char*>(window.data()));
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

    void parseGraph(Wire& wire)
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
    void drainInterner()
    {
        mInterner->drain([this] { return indexNodeNames(kIndexSliceNodes); });
    }

    //! Indexes the next `most` nodes not yet indexed by name, in node order (the first of two nodes with one name
    //! keeps it); returns whether nodes read so far are left.
    bool indexNodeNames(std::size_t most)
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

    void parseNode(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset)
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

    // ----- tensors ------------------------------------------------------------------------------------------
    //! Walks a TensorProto's fields (the caller pushed a limit around it). Data fields longer than
    //! options.smallTensorBytes are skipped unless forceLoad or options.loadWeights.
    void parseTensorFields(Wire& wire, TensorRecord& record, bool forceLoad)
    {
        std::uint32_t tag = 0;
        std::uint64_t tagOffset = 0;
        const bool loadAll = forceLoad || mOptions.loadWeights;
        onnx::StringStringEntryProto entry;
        while (nextTag(wire, tag, tagOffset))
        {
            const int field = static_cast<int>(tag >> 3);
            const int wireType = static_cast<int>(tag & 7);
            switch (field)
            {
            case 1: // dims
                if (wireType == kVarint)
                {
                    record.constant.dims.push_back(static_cast<std::int64_t>(readVarint(wire, tagOffset)));
                }
                else
                {
                    expectWireType(tag, kLengthDelimited, tagOffset, "TensorProto.dims");
                    std::uint32_t length = readLength(wire, tagOffset);
                    auto limit = wire.in.PushLimit(static_cast<int>(length));
                    while (wire.in.BytesUntilLimit() > 0)
                    {
                        record.constant.dims.push_back(static_cast<std::int64_t>(readVarint(wire, tagOffset)));
                    }
                    wire.in.PopLimit(limit);
                }
                break;
            case 2:
                expectWireType(tag, kVarint, tagOffset, "TensorProto.data_type");
                record.dataType = static_cast<int>(static_cast<std::int32_t>(readVarint(wire, tagOffset)));
                break;
            case kFieldFloatData:
            case kFieldInt32Data:
            case kFieldInt64Data:
            case kFieldRawData:
            case kFieldDoubleData:
            case kFieldUint64Data:
                readDataField(wire, record, tag, tagOffset, loadAll);
                break;
            case 8:
                record.constant.name = readString(wire, tag, tagOffset, "TensorProto.name");
                break;
            case 12:
            {
                std::string doc = readString(wire, tag, tagOffset, "TensorProto.doc_string");
                record.weightless = doc.rfind("TRT_WEIGHTLESS", 0) == 0;
                break;
            }
            case 13:
                parseMessage(wire, tag, tagOffset, entry, "TensorProto.external_data");
                record.externalEntries.emplace_back(entry.key(), entry.value());
                break;
            case 14:
                expectWireType(tag, kVarint, tagOffset, "TensorProto.data_location");
                record.dataLocation = static_cast<std::int64_t>(readVarint(wire, tagOffset));
                break;
            default:
                skipField(wire, tag, tagOffset);
                break;
            }
        }
    }

    void readDataField(Wire& wire, TensorRecord& record, std::uint32_t tag, std::uint64_t tagOffset, bool loadAll)
    {
        const int field = static_cast<int>(tag >> 3);
        const int wireType = static_cast<int>(tag & 7);
        if (record.dataField != kFieldNone && record.dataField != field)
        {
            // Two different data fields: keep the first one, as TensorRT reads only one of them.
            skipField(wire, tag, tagOffset);
            return;
        }
        record.dataField = field;
        if (wireType == kLengthDelimited)
        {
            std::uint32_t length = readLength(wire, tagOffset);
            const std::uint64_t dataOffset = position(wire);
            if (field == kFieldRawData)
            {
                record.payload.clear(); // optional bytes: the last one wins
                record.payloadSkipped = false;
            }
            if (!record.payloadSkipped && (loadAll || record.payload.size() + length <= mOptions.smallTensorBytes))
            {
                std::size_t old = record.payload.size();
                record.payload.resize(old + length);
                if (length > 0 && !wire.in.ReadRaw(record.payload.data() + old, static_cast<int>(length)))
                {
                    failAt(tagOffset, "truncated protobuf");
                }
                return;
            }
            if (!record.payloadSkipped && record.payload.empty())
            {
                record.pending = PendingData{false, dataOffset, length, field};
            }
            else
            {
                record.pending = PendingData{}; // data split over several chunks: not re-read later
            }
            record.payload.clear();
            record.payloadSkipped = true;
            skipBytes(wire, length, tagOffset);
            return;
        }
        // Unpacked repeated element: keep it in the packed encoding.
        char buffer[10];
        std::size_t size = 0;
        if (field == kFieldFloatData)
        {
            expectWireType(tag, kFixed32, tagOffset, "TensorProto.float_data");
            std::uint32_t bits = 0;
            if (!wire.in.ReadLittleEndian32(&bits))
            {
                failAt(tagOffset, "truncated protobuf");
            }
            std::memcpy(buffer, &bits, 4);
            size = 4;
        }
        else if (field == kFieldDoubleData)
        {
            expectWireType(tag, kFixed64, tagOffset, "TensorProto.double_data");
            std::uint64_t bits = 0;
            if (!wire.in.ReadLittleEndian64(&bits))
            {
                failAt(tagOffset, "truncated protobuf");
            }
            std::memcpy(buffer, &bits, 8);
            size = 8;
        }
        else
        {
            expectWireType(tag, kVarint, tagOffset, "TensorProto data");
            std::uint64_t value = readVarint(wire, tagOffset);
            do
            {
                auto byte = static_cast<unsigned char>(value & 0x7F);
                value >>= 7;
                buffer[size++] = static_cast<char>(value != 0 ? (byte | 0x80) : byte);
            } while (value != 0);
        }
        record.pending = PendingData{};
        if (!record.payloadSkipped)
        {
            record.payload.append(buffer, size);
        }
    }

    //! Element count from dims; -1 when a dimension is negative or the product overflows.
    static std::int64_t elementCountOf(const std::vector<std::int64_t>& dims)
    {
        std::int64_t count = 1;
        for (std::int64_t dim : dims)
        {
            if (dim < 0)
            {
                return -1;
            }
            if (dim != 0 && count > INT64_MAX / dim)
            {
                return -1;
            }
            count *= dim;
        }
        return count;
    }

    //! Finishes a tensor record: element count, external data, decoding of what was read.
    void finishTensor(TensorRecord& record, std::uint64_t offset)
    {
        OnnxConstant& constant = record.constant;
        constant.dataType = static_cast<OnnxDataType>(record.dataType);
        constant.elementCount = elementCountOf(constant.dims);
        if (constant.elementCount < 0)
        {
            warn(offset, true,
                 "tensor '" + printable(constant.name, 256) + "' has a negative or overflowing dimension");
            constant.elementCount = 0;
        }
        bool external = record.dataLocation == onnx::TensorProto::EXTERNAL;
        for (const auto& [key, value] : record.externalEntries)
        {
            if (key == "location")
            {
                external = true;
                constant.externalLocation = value;
            }
        }
        if (external)
        {
            constant.external = true;
            for (const auto& [key, value] : record.externalEntries)
            {
                if (key == "offset" || key == "length")
                {
                    std::int64_t number = parseExternalNumber(value, key, constant.name, offset);
                    (key == "offset" ? constant.externalOffset : constant.externalLength) = number;
                }
            }
            registerExternal(constant, offset);
            return;
        }
        if (record.dataField == kFieldNone || (!record.payloadSkipped && record.payload.empty()))
        {
            if (constant.elementCount == 0)
            {
                constant.dataLoaded = true;
            }
            else if (rawElementBytes(record.dataType) >= 0)
            {
                ++mTensorsWithoutData;
                mWeightlessSeen = mWeightlessSeen || record.weightless;
                if (mFirstTensorWithoutData.empty())
                {
                    mFirstTensorWithoutData = constant.name;
                }
            }
            return;
        }
        if (record.payloadSkipped)
        {
            return;
        }
        std::string why = decodeTensorPayload(record.dataType, record.dataField, record.payload, constant.elementCount,
                                              constant.values);
        if (why.empty())
        {
            constant.dataLoaded = true;
        }
        else if (rawElementBytes(record.dataType) >= 0)
        {
            warn(offset, true, "tensor '" + printable(constant.name, 256) + "': " + why);
        }
        record.payload.clear();
        record.payload.shrink_to_fit();
    }

    std::int64_t parseExternalNumber(const std::string& text, const std::string& key, const std::string& tensor,
                                     std::uint64_t offset)
    {
        const auto value = parseExternalDataNumber(text);
        if (!value)
        {
            fail(offset, "external data " + key + " '" + printable(text, 64) + "' of tensor '" +
                             printable(tensor, 256) + "' is not a non-negative integer of at most 18 digits");
        }
        return static_cast<std::int64_t>(*value);
    }

    //! Checks an external data location (relative, inside the model's folder) and whether its file exists.
    void registerExternal(OnnxConstant& constant, std::uint64_t offset)
    {
        const std::string& location = constant.externalLocation;
        const std::string tensor = printable(constant.name, 256);
        auto existing = mExternalFiles.find(location);
        if (existing == mExternalFiles.end())
        {
            if (location.empty())
            {
                fail(offset, "tensor '" + tensor + "' has external data without a location");
            }
            if (location.find('\0') != std::string::npos)
            {
                fail(offset, "external data location of tensor '" + tensor + "' contains a NUL byte");
            }
            // Bytes outside the model's folder are never opened; the tensors stored there are skipped (like
            // missing weights, with a warning naming them) and the graph is still diagnosed.
            ExternalFile file;
            file.firstTensor = constant.name;
            ResolvedExternalLocation where = resolveExternalDataLocation(mModelDir, location);
            if (where.unresolvable)
            {
                fail(offset, "cannot resolve external data location '" + printable(location, 512) + "'");
            }
            file.refused = std::move(where.refused);
            const fs::path resolved = std::move(where.resolved);
            if (!file.refused.empty())
            {
                file.missing = true;
                existing = mExternalFiles.emplace(location, std::move(file)).first;
                mExternalOrder.push_back(location);
                noteExternalTensor(existing->second, constant.name);
                mGraph.externalDataMissing = true;
                return;
            }
            file.resolved = resolved;
            struct stat info
            {
            };
            if (::stat(resolved.c_str(), &info) != 0)
            {
                file.missing = true;
            }
            else if (!S_ISREG(info.st_mode))
            {
                fail(offset, "external data location '" + printable(location, 512) + "' is not a regular file");
            }
            else
            {
                file.size = static_cast<std::uint64_t>(info.st_size);
            }
            existing = mExternalFiles.emplace(location, std::move(file)).first;
            mExternalOrder.push_back(location);
            ++existing->second.references;
        }
        else
        {
            noteExternalTensor(existing->second, constant.name);
        }
        if (existing->second.missing)
        {
            mGraph.externalDataMissing = true;
        }
    }

    //! Counts a tensor stored in an external file; the first few names of a refused location are kept.
    static void noteExternalTensor(ExternalFile& file, const std::string& tensor)
    {
        ++file.references;
        if (!file.refused.empty() && file.tensors.size() < kNamedRefusedTensors)
        {
            file.tensors.push_back(tensor);
        }
    }

    static constexpr std::size_t kNamedRefusedTensors = 8;

    void parseInitializer(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset)
    {
        expectWireType(tag, kLengthDelimited, tagOffset, "graph.initializer");
        std::uint32_t length = readLength(wire, tagOffset);
        auto limit = wire.in.PushLimit(static_cast<int>(length));
        TensorRecord record;
        parseTensorFields(wire, record, false);
        wire.in.PopLimit(limit);
        finishTensor(record, tagOffset);
        addConstant(std::move(record), tagOffset);
    }

    void parseSparseInitializer(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset)
    {
        expectWireType(tag, kLengthDelimited, tagOffset, "graph.sparse_initializer");
        std::uint32_t length = readLength(wire, tagOffset);
        auto limit = wire.in.PushLimit(static_cast<int>(length));
        TensorRecord values;
        std::vector<std::int64_t> dims;
        std::uint32_t innerTag = 0;
        std::uint64_t innerOffset = 0;
        while (nextTag(wire, innerTag, innerOffset))
        {
            if ((innerTag >> 3) == 1)
            {
                expectWireType(innerTag, kLengthDelimited, innerOffset, "SparseTensorProto.values");
                std::uint32_t valuesLength = readLength(wire, innerOffset);
                auto valuesLimit = wire.in.PushLimit(static_cast<int>(valuesLength));
                parseTensorFields(wire, values, false);
                wire.in.PopLimit(valuesLimit);
            }
            else if ((innerTag >> 3) == 3 && (innerTag & 7) == kVarint)
            {
                dims.push_back(static_cast<std::int64_t>(readVarint(wire, innerOffset)));
            }
            else
            {
                skipField(wire, innerTag, innerOffset);
            }
        }
        wire.in.PopLimit(limit);
        TensorRecord record;
        record.constant.name = values.constant.name;
        record.constant.dims = dims;
        record.constant.dataType = static_cast<OnnxDataType>(values.dataType);
        record.constant.elementCount = std::max<std::int64_t>(0, elementCountOf(dims));
        addConstant(std::move(record), tagOffset);
    }

    void addConstant(TensorRecord&& record, std::uint64_t offset)
    {
        const std::size_t index = mGraph.constants.size();
        if (mInterner)
        {
            drainInterner(); // the nodes' names before this one's, as the file orders them
        }
        const std::uint32_t id = mGraph.tensors.intern(record.constant.name);
        growTensorArrays();
        if (mGraph.tensors.constant[id] == OnnxGraph::kNone)
        {
            mGraph.tensors.constant[id] = static_cast<std::uint32_t>(index);
        }
        else
        {
            ++mDuplicateConstants;
            if (mDuplicateConstants <= kWarningCap)
            {
                warn(offset, true,
                     "constant tensor '" + printable(record.constant.name, 256) +
                         "' is defined more than once; the first definition is used");
            }
        }
        if (record.pending.length > 0 || record.pending.fromConstantNode)
        {
            mPending.emplace(index, record.pending);
        }
        mGraph.constants.push_back(std::move(record.constant));
    }

    //! Parses a tensor held in memory (a Constant node's value) with the same field walker.
    void parseTensorBytes(const std::string& bytes, TensorRecord& record, std::uint64_t offset, bool forceLoad)
    {
        CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
        Wire wire{in, offset, bytes.size()};
        Context savedContext = mContext;
        parseTensorFields(wire, record, forceLoad);
        mContext = savedContext;
    }

    void addConstantNode(const onnx::NodeProto& proto, const std::string& outputName, std::uint64_t nodeOffset,
                         std::uint64_t bodyOffset, std::uint32_t bodyLength, bool forceLoad = false)
    {
        TensorRecord record;
        bool found = false;
        for (const auto& attribute : proto.attribute())
        {
            const std::string& name = attribute.name();
            if (name == "value" && attribute.has_t())
            {
                std::string bytes;
                attribute.t().SerializeToString(&bytes);
                parseTensorBytes(bytes, record, nodeOffset, forceLoad);
                finishTensor(record, nodeOffset);
                found = true;
            }
            else if (name == "value_float" || name == "value_int")
            {
                record.constant.dataType = name == "value_float" ? OnnxDataType::kFloat : OnnxDataType::kInt64;
                record.constant.elementCount = 1;
                record.constant.values = {name == "value_float" ? static_cast<double>(attribute.f())
                                                                : static_cast<double>(attribute.i())};
                record.constant.dataLoaded = true;
                found = true;
            }
            else if (name == "value_floats" || name == "value_ints")
            {
                const bool isFloat = name == "value_floats";
                record.constant.dataType = isFloat ? OnnxDataType::kFloat : OnnxDataType::kInt64;
                record.constant.elementCount = isFloat ? attribute.floats_size() : attribute.ints_size();
                record.constant.dims = {record.constant.elementCount};
                if (isFloat)
                {
                    record.constant.values.assign(attribute.floats().begin(), attribute.floats().end());
                }
                else
                {
                    for (std::int64_t value : attribute.ints())
                    {
                        record.constant.values.push_back(static_cast<double>(value));
                    }
                }
                record.constant.dataLoaded = true;
                found = true;
            }
            else if (name == "value_string" || name == "value_strings")
            {
                record.constant.dataType = OnnxDataType::kString;
                found = true;
            }
            else if (name == "sparse_value")
            {
                found = true;
            }
        }
        if (!found)
        {
            return;
        }
        record.constant.name = outputName;
        record.constant.fromConstantNode = true;
        record.pending = PendingData{};
        if (record.payloadSkipped)
        {
            record.pending = PendingData{true, bodyOffset, bodyLength, kFieldNone};
        }
        if (forceLoad)
        {
            mReloaded = std::move(record.constant);
            return;
        }
        addConstant(std::move(record), nodeOffset);
    }

    // ----- after the streaming pass ---------------------------------------------------------------------------
    //! Loads the data of a constant that was skipped while streaming (a Q/DQ scale or zero point, or weights).
    void ensureLoaded(std::size_t index)
    {
        OnnxConstant& constant = mGraph.constants[index];
        if (constant.dataLoaded)
        {
            return;
        }
        if (constant.external)
        {
            loadExternal(constant);
            return;
        }
        auto pending = mPending.find(index);
        if (pending == mPending.end())
        {
            return;
        }
        const PendingData data = pending->second;
        mPending.erase(pending);
        std::string bytes;
        if (!mSource.read(data.offset, data.length, bytes))
        {
            warn(data.offset, true, "cannot re-read the data of tensor '" + printable(constant.name, 256) + "'");
            return;
        }
        if (data.fromConstantNode)
        {
            onnx::NodeProto proto;
            if (!proto.ParseFromString(bytes))
            {
                return;
            }
            if (proto.output().empty())
            {
                return;
            }
            addConstantNode(proto, proto.output(0), data.offset, data.offset, static_cast<std::uint32_t>(data.length),
                            true);
            if (mReloaded.dataLoaded)
            {
                constant.values = std::move(mReloaded.values);
                constant.dataLoaded = true;
            }
            return;
        }
        std::string why = decodeTensorPayload(static_cast<int>(constant.dataType), data.field, bytes,
                                              constant.elementCount, constant.values);
        if (why.empty())
        {
            constant.dataLoaded = true;
        }
        else if (rawElementBytes(static_cast<int>(constant.dataType)) >= 0)
        {
            warn(data.offset, true, "tensor '" + printable(constant.name, 256) + "': " + why);
        }
    }

    void loadExternal(OnnxConstant& constant)
    {
        ExternalFile& file = mExternalFiles.at(constant.externalLocation);
        if (file.missing)
        {
            return;
        }
        SourceLocation where;
        where.path = file.resolved.string();
        if (!file.fd)
        {
            if (file.size > mLimits.maxInputBytes)
            {
                throw InputError(where, "external data file is " + std::to_string(file.size >> 20) +
                                            " MiB, over the input size limit of " +
                                            std::to_string(mLimits.maxInputBytes >> 20) +
                                            " MiB (raise it with --max-input-mb)");
            }
            file.fd = std::make_shared<Fd>(::open(file.resolved.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
            if (file.fd->fd < 0)
            {
                throw InputError(where, std::string("cannot open external data file: ") + std::strerror(errno));
            }
        }
        // The range checked as the model writer and autocast check it (parsers/external_data_ref.h): inside the
        // file, and the size the tensor's dims and type hold.
        ExternalDataEntries entries;
        entries.tensor = constant.name;
        entries.location = constant.externalLocation;
        entries.offset = std::to_string(constant.externalOffset);
        if (constant.externalLength >= 0)
        {
            entries.length = std::to_string(constant.externalLength);
        }
        entries.dataType = static_cast<int>(constant.dataType);
        entries.dims = constant.dims;
        const auto [offset, length] = checkedExternalRange(mPath, where.path, file.size, entries);
        std::string bytes;
        if (!preadAll(file.fd->fd, offset, length, bytes))
        {
            throw InputError(where, "cannot read external data of tensor '" + printable(constant.name, 256) + "'");
        }
        std::string why = decodeTensorPayload(static_cast<int>(constant.dataType), kFieldRawData, bytes,
                                              constant.elementCount, constant.values);
        if (why.empty())
        {
            constant.dataLoaded = true;
        }
        else if (rawElementBytes(static_cast<int>(constant.dataType)) >= 0)
        {
            warn(0, false, "external data of tensor '" + printable(constant.name, 256) + "': " + why);
        }
    }

    //! The constant a tensor holds, looking through Identity nodes.
    std::optional<std::size_t> resolveConstant(std::uint32_t tensor) const
    {
        const OnnxTensorTable& tensors = mGraph.tensors;
        for (int hop = 0; hop < 64 && tensor != OnnxGraph::kNone; ++hop)
        {
            if (tensors.constant[tensor] != OnnxGraph::kNone)
            {
                return tensors.constant[tensor];
            }
            std::uint32_t producer = tensors.producer[tensor];
            if (producer == OnnxGraph::kNone)
            {
                return std::nullopt;
            }
            const OnnxNode& node = mGraph.nodes[producer];
            auto inputs = mGraph.inputIds(producer);
            if (node.opType != "Identity" || !isStandardDomain(node.domain) || inputs.empty())
            {
                return std::nullopt;
            }
            tensor = inputs.front();
        }
        return std::nullopt;
    }

    //! Sizes the per-tensor arrays to the tensors interned so far.
    void growTensorArrays()
    {
        OnnxTensorTable& tensors = mGraph.tensors;
        const std::size_t count = tensors.names.size();
        if (tensors.constant.size() < count)
        {
            tensors.constant.resize(count, OnnxGraph::kNone);
            tensors.type.resize(count, OnnxDataType::kUndefined);
        }
    }

    //! The scales, zero points and INT32 biases of ONNX Runtime's QOperator ops (QLinearConv, com.microsoft QLinearAdd,
    //! QGemm, ...): `fix` rewrites such an op as DequantizeLinear -> float op -> QuantizeLinear and computes the float
    //! bias from them. Weights are left unread: an INT8/UINT8 constant is read only when it is small enough to be a
    //! zero point (one per channel).
    void loadQuantizedOpParameters()
    {
        for (const OnnxNode& node : mGraph.nodes)
        {
            const bool standard = isStandardDomain(node.domain);
            const bool quantizedOp =
                (standard && (node.opType == "QLinearConv" || node.opType == "QLinearMatMul")) ||
                (node.domain == "com.microsoft" && (node.opType.starts_with("QLinear") || node.opType == "QGemm"));
            if (!quantizedOp)
            {
                continue;
            }
            for (std::uint32_t input : mGraph.inputIds(node.index))
            {
                const auto constant = input == OnnxGraph::kNone ? std::nullopt : resolveConstant(input);
                if (!constant)
                {
                    continue;
                }
                const OnnxConstant& tensor = mGraph.constants[*constant];
                const bool integer8 = tensor.dataType == OnnxDataType::kInt8 || tensor.dataType == OnnxDataType::kUint8;
                if (tensor.elementCount <= (integer8 ? 4096 : 16384))
                {
                    ensureLoaded(*constant);
                }
            }
        }
    }

    //! Warns about each model-local function the graph calls: its nodes are not analyzed.
    void warnLocalFunctionCalls()
    {
        for (const LocalFunction& function : mLocalFunctions)
        {
            std::size_t calls = 0;
            const OnnxNode* first = nullptr;
            for (const OnnxNode& node : mGraph.nodes)
            {
                if (node.opType == function.name && node.domain == function.domain)
                {
                    first = first == nullptr ? &node : first;
                    ++calls;
                }
            }
            if (calls == 0)
            {
                continue;
            }
            warn(function.offset, true,
                 "the model's local function '" + printable(function.domain, 256) + "." +
                     printable(function.name, 256) + "' (" + std::to_string(function.nodes) + " nodes, " +
                     std::to_string(function.qdqNodes) + " of them QuantizeLinear/DequantizeLinear) is called by " +
                     std::to_string(calls) + " node(s) such as '" + printable(first->name, 256) +
                     "': TensorRT's ONNX parser expands local functions, qdq-doctor does not look inside them, so "
                     "their Q/DQ and ops are not analyzed and each call is treated as a custom op (inline the "
                     "functions, e.g. onnx.inliner.inline_local_functions, for a full diagnosis)");
        }
    }

    void finish()
    {
        mGraph.linkNodeTensors();
        linkGraph();
        checkCycles();
        collectQdq();
        // FP8 / INT4 / FP4 Q/DQ in an opset that lacks the type: a note naming the node; the rest is analysed.
        for (ReaderWarning& note : quantizedTypeOpsetNotes(mGraph))
        {
            mGraph.warnings.push_back(std::move(note));
        }
        loadQuantizedOpParameters();
        warnLocalFunctionCalls();
        if (mOptions.loadWeights)
        {
            for (std::size_t i = 0; i < mGraph.constants.size(); ++i)
            {
                ensureLoaded(i);
            }
        }
        for (const std::string& location : mExternalOrder)
        {
            const ExternalFile& file = mExternalFiles.at(location);
            if (!file.refused.empty())
            {
                std::string names;
                for (const auto& name : file.tensors)
                {
                    names += (names.empty() ? "'" : ", '") + printable(name, 256) + "'";
                }
                if (file.references > file.tensors.size())
                {
                    names += " and " + std::to_string(file.references - file.tensors.size()) + " more";
                }
                warn(0, false,
                     "external data location '" + printable(location, 512) + "' " + file.refused +
                         ": only files inside the model's folder are read, so the data of " +
                         std::to_string(file.references) + " tensor(s) stored there is skipped: " + names);
            }
            else if (file.missing)
            {
                warn(0, false,
                     "external data file '" + printable(location, 512) + "' is missing (looked for " +
                         printable(file.resolved.string(), 1024) + "); the weights of " +
                         std::to_string(file.references) + " initializer(s) such as '" +
                         printable(file.firstTensor, 256) + "' are not available");
            }
        }
        if (mTensorsWithoutData > 0)
        {
            warn(0, false,
                 std::to_string(mTensorsWithoutData) + " initializer(s) such as '" +
                     printable(mFirstTensorWithoutData, 256) + "' hold no data" +
                     (mWeightlessSeen ? " (weights stripped: TRT_WEIGHTLESS)" : std::string()));
        }
    }

    void linkGraph()
    {
        OnnxTensorTable& tensors = mGraph.tensors;
        const std::size_t tensorCount = tensors.names.size();
        const std::size_t nodeCount = mGraph.nodes.size();
        growTensorArrays();
        tensors.producer.assign(tensorCount, OnnxGraph::kNone);
        std::size_t duplicateProducers = 0;
        // The node names not indexed yet (drainInterner indexes them while it waits) are indexed on the second core
        // while the producers and consumers are linked here: each insert waits on a cache miss (the bench's
        // 500,000-node model: linkGraph was 6% of predict's main thread).
        std::exception_ptr nameIndexFailure;
        const auto indexNodeNamesLeft = [&]
        {
            try
            {
                indexNodeNames(nodeCount);
            }
            catch (...)
            {
                nameIndexFailure = std::current_exception();
            }
        };
        std::thread nameIndexer;
        struct JoinOnExit
        {
            std::thread& thread;
            ~JoinOnExit()
            {
                if (thread.joinable())
                {
                    thread.join();
                }
            }
        } joinOnExit{nameIndexer};
        if (nodeCount - mNodesIndexed >= kThreadedIndexNodes)
        {
            nameIndexer = std::thread(indexNodeNamesLeft);
        }
        else
        {
            indexNodeNamesLeft();
        }
        for (const OnnxNode& node : mGraph.nodes)
        {
            const auto index = static_cast<std::uint32_t>(node.index);
            for (std::uint32_t output : mGraph.outputIds(node.index))
            {
                if (output == OnnxGraph::kNone)
                {
                    continue;
                }
                if (tensors.producer[output] == OnnxGraph::kNone)
                {
                    tensors.producer[output] = index;
                }
                else if (++duplicateProducers <= kWarningCap)
                {
                    warnNode(node.index, "tensor '" + printable(tensors.names[output], 256) +
                                             "' is produced by more than one node ('" +
                                             printable(mGraph.nodes[tensors.producer[output]].name, 256) + "' and '" +
                                             printable(node.name, 256) + "')");
                }
            }
        }
        if (duplicateProducers > kWarningCap)
        {
            warn(0, false, std::to_string(duplicateProducers - kWarningCap) + " more tensors with several producers");
        }
        // The duplicate-name warnings go here, after the producers' and before the dangling inputs', once the index
        // is built: the thread is joined at the end, so that it runs while the consumers are listed below (predict on
        // the bench model waited about 50 ms for it when it was joined here).
        const std::size_t nameWarningsAt = mGraph.warnings.size();

        // Consumers, as compressed rows: count, prefix sums, fill (each node once per tensor, in node order).
        std::vector<std::uint32_t> lastReader(tensorCount, OnnxGraph::kNone);
        tensors.consumerStart.assign(tensorCount + 1, 0);
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            for (std::uint32_t input : mGraph.inputIds(i))
            {
                if (input != OnnxGraph::kNone && lastReader[input] != i)
                {
                    lastReader[input] = static_cast<std::uint32_t>(i);
                    ++tensors.consumerStart[input + 1];
                }
            }
        }
        for (std::size_t id = 0; id < tensorCount; ++id)
        {
            tensors.consumerStart[id + 1] += tensors.consumerStart[id];
        }
        tensors.consumerNodes.assign(tensors.consumerStart[tensorCount], 0);
        std::vector<std::uint32_t> fill(tensors.consumerStart.begin(), tensors.consumerStart.end() - 1);
        std::fill(lastReader.begin(), lastReader.end(), OnnxGraph::kNone);
        for (std::size_t i = 0; i < nodeCount; ++i)
        {
            for (std::uint32_t input : mGraph.inputIds(i))
            {
                if (input != OnnxGraph::kNone && lastReader[input] != i)
                {
                    lastReader[input] = static_cast<std::uint32_t>(i);
                    tensors.consumerNodes[fill[input]++] = static_cast<std::uint32_t>(i);
                }
            }
        }

        std::vector<bool> isGraphInput(tensorCount, false);
        for (const std::string& input : mAllGraphInputs)
        {
            const std::uint32_t id = tensors.find(input);
            if (id != OnnxGraph::kNone)
            {
                isGraphInput[id] = true;
            }
            if (id == OnnxGraph::kNone || tensors.constant[id] == OnnxGraph::kNone)
            {
                mGraph.graphInputs.push_back(input);
            }
        }
        for (const OnnxConstant& constant : mGraph.constants)
        {
            const std::uint32_t id = tensors.find(constant.name);
            if (constant.dataType != OnnxDataType::kUndefined && tensors.type[id] == OnnxDataType::kUndefined)
            {
                tensors.type[id] = constant.dataType;
            }
        }
        std::size_t dangling = 0;
        std::vector<bool> reported(tensorCount, false);
        for (const OnnxNode& node : mGraph.nodes)
        {
            for (std::uint32_t input : mGraph.inputIds(node.index))
            {
                if (input == OnnxGraph::kNone || tensors.producer[input] != OnnxGraph::kNone ||
                    tensors.constant[input] != OnnxGraph::kNone || isGraphInput[input] || reported[input])
                {
                    continue;
                }
                reported[input] = true;
                if (++dangling <= kWarningCap)
                {
                    warnNode(node.index, "input '" + printable(tensors.names[input], 256) + "' of node '" +
                                             printable(node.name, 256) +
                                             "' is produced by no node, initializer or graph input");
                }
            }
        }
        if (dangling > kWarningCap)
        {
            warn(0, false, std::to_string(dangling - kWarningCap) + " more dangling node inputs");
        }

        if (nameIndexer.joinable())
        {
            nameIndexer.join();
        }
        if (nameIndexFailure)
        {
            std::rethrow_exception(nameIndexFailure);
        }
        mGraph.duplicateNodeNames = !mDuplicateNameNodes.empty();
        std::vector<ReaderWarning> laterWarnings(mGraph.warnings.begin() + static_cast<std::ptrdiff_t>(nameWarningsAt),
                                                 mGraph.warnings.end());
        mGraph.warnings.resize(nameWarningsAt);
        for (std::size_t i = 0; i < mDuplicateNameNodes.size() && i < kWarningCap; ++i)
        {
            const OnnxNode& node = mGraph.nodes[mDuplicateNameNodes[i]];
            warnNode(node.index, "node name '" + printable(node.name, 256) + "' is used by more than one node");
        }
        if (mDuplicateNameNodes.size() > kWarningCap)
        {
            warn(0, false, std::to_string(mDuplicateNameNodes.size() - kWarningCap) + " more duplicate node names");
        }
        mGraph.warnings.insert(mGraph.warnings.end(), std::make_move_iterator(laterWarnings.begin()),
                               std::make_move_iterator(laterWarnings.end()));
    }

    void checkCycles()
    {
        const std::size_t count = mGraph.nodes.size();
        // ONNX stores nodes in topological order: when every producer comes before its consumers there is no cycle.
        bool sorted = true;
        for (std::size_t i = 0; i < count && sorted; ++i)
        {
            for (std::uint32_t input : mGraph.inputIds(i))
            {
                const std::uint32_t producer =
                    input == OnnxGraph::kNone ? OnnxGraph::kNone : mGraph.tensors.producer[input];
                if (producer != OnnxGraph::kNone && producer >= i)
                {
                    sorted = false;
                    break;
                }
            }
        }
        if (sorted)
        {
            return;
        }
        std::vector<std::vector<std::size_t>> successors(count);
        std::vector<std::size_t> pendingInputs(count, 0);
        for (const OnnxNode& node : mGraph.nodes)
        {
            for (std::uint32_t input : mGraph.inputIds(node.index))
            {
                std::uint32_t producer = input == OnnxGraph::kNone ? OnnxGraph::kNone : mGraph.tensors.producer[input];
                if (producer != OnnxGraph::kNone)
                {
                    successors[producer].push_back(node.index);
                    ++pendingInputs[node.index];
                }
            }
        }
        std::vector<std::size_t> ready;
        for (std::size_t i = 0; i < count; ++i)
        {
            if (pendingInputs[i] == 0)
            {
                ready.push_back(i);
            }
        }
        std::size_t done = 0;
        while (!ready.empty())
        {
            std::size_t current = ready.back();
            ready.pop_back();
            ++done;
            for (std::size_t next : successors[current])
            {
                if (--pendingInputs[next] == 0)
                {
                    ready.push_back(next);
                }
            }
        }
        if (done == count)
        {
            return;
        }
        // Walk back through unfinished producers until a node repeats: that node lies on a cycle.
        std::size_t current = 0;
        while (pendingInputs[current] == 0)
        {
            ++current;
        }
        std::vector<bool> seen(count, false);
        while (!seen[current])
        {
            seen[current] = true;
            for (std::uint32_t input : mGraph.inputIds(current))
            {
                std::uint32_t producer = input == OnnxGraph::kNone ? OnnxGraph::kNone : mGraph.tensors.producer[input];
                if (producer != OnnxGraph::kNone && pendingInputs[producer] != 0)
                {
                    current = producer;
                    break;
                }
            }
        }
        warnNode(current, "the graph has a cycle through node '" + printable(mGraph.nodes[current].name, 256) + "' (" +
                              std::to_string(count - done) + " nodes are on or after a cycle)");
    }

    void collectQdq()
    {
        mGraph.qdqOfNode.assign(mGraph.nodes.size(), OnnxGraph::kNone);
        mGraph.qdq.reserve(static_cast<std::size_t>(
            std::count_if(mGraph.nodes.begin(), mGraph.nodes.end(),
                          [](const OnnxNode& node) { return node.qdqKind != OnnxNode::QdqKind::kNone; })));
        for (const OnnxNode& node : mGraph.nodes)
        {
            const bool isQuantize = node.qdqKind == OnnxNode::QdqKind::kQuantize;
            const std::optional<OnnxDataType> tensorRtType = tensorRtQdqType(node.opType);
            if (node.qdqKind == OnnxNode::QdqKind::kNone || !importedAsQdq(node))
            {
                continue;
            }
            QdqParameters parameters;
            parameters.node = node.index;
            parameters.isQuantize = isQuantize;
            auto inputIds = mGraph.inputIds(node.index);
            // A quantized bias (an INT32 constant behind a DequantizeLinear, ONNX Runtime's QDQ format, or a UINT8
            // one when it quantizes an Add's constant operand like an activation) is small and read too: `fix` turns
            // it back into float values.
            if (!isQuantize && !inputIds.empty() && inputIds[0] != OnnxGraph::kNone)
            {
                if (auto bias = resolveConstant(inputIds[0]);
                    bias &&
                    (mGraph.constants[*bias].dataType == OnnxDataType::kInt32 ||
                     mGraph.constants[*bias].dataType == OnnxDataType::kUint8) &&
                    mGraph.constants[*bias].elementCount <= 16384)
                {
                    ensureLoaded(*bias);
                }
            }
            if (inputIds.size() > 1 && inputIds[1] != OnnxGraph::kNone)
            {
                if (auto scale = resolveConstant(inputIds[1]))
                {
                    ensureLoaded(*scale);
                    const OnnxConstant& constant = mGraph.constants[*scale];
                    parameters.scaleIsConstant = true;
                    parameters.scaleElements = constant.elementCount;
                    if (constant.dataLoaded)
                    {
                        parameters.scale = constant.values;
                    }
                }
            }
            if (inputIds.size() > 2 && inputIds[2] != OnnxGraph::kNone)
            {
                parameters.hasZeroPoint = true;
                if (auto zeroPoint = resolveConstant(inputIds[2]))
                {
                    ensureLoaded(*zeroPoint);
                    const OnnxConstant& constant = mGraph.constants[*zeroPoint];
                    parameters.zeroPointIsConstant = true;
                    parameters.zeroPointType = constant.dataType;
                    if (constant.dataLoaded)
                    {
                        parameters.zeroPoint = constant.values;
                    }
                }
                else if (mGraph.tensors.type[inputIds[2]] != OnnxDataType::kUndefined)
                {
                    parameters.zeroPointType = mGraph.tensors.type[inputIds[2]];
                }
            }
            parameters.axis = node.intAttribute("axis");
            parameters.blockSize = node.intAttribute("block_size");
            if (isQuantize && !node.opType.starts_with("TRT_FP4"))
            {
                parameters.outputDtype = node.intAttribute("output_dtype");
            }
            if (tensorRtType && !parameters.outputDtype)
            {
                parameters.outputDtype = static_cast<std::int64_t>(*tensorRtType);
            }
            mGraph.qdqOfNode[node.index] = static_cast<std::uint32_t>(mGraph.qdq.size());
            mGraph.qdq.push_back(std::move(parameters));
        }
    }

    std::string mPath;
    const OnnxReadOptions& mOptions;
    const Limits& mLimits;
    const ByteSource& mSource;
    fs::path mModelDir;
    OnnxGraph mGraph;
    //! Where in the model the reader is, for messages: "graph.node[12]".
    struct Context
    {
        const char* label = nullptr;
        bool indexed = false;
        std::size_t index = 0;
    };
    Context mContext;
    bool mGraphStarted = false;
    onnx::NodeProto mNodeProto;
    std::string mNodeBytes;
    onnx_wire::NodeFields mNodeFields;
    std::vector<std::uint64_t> mNodeOffsets;
    std::size_t mReservedNodes = 0;                 //!< the node count reserveForGraph found
    std::size_t mNodesIndexed = 0;                  //!< nodes in mGraph.nodeIndexByName so far
    std::vector<std::uint32_t> mDuplicateNameNodes; //!< nodes whose name an earlier node has
    static constexpr std::size_t kThreadedInternNodes = 20000;
    //! Node names indexed between two looks at whether the interner thread has caught up (about 0.2 ms of work).
    static constexpr std::size_t kIndexSliceNodes = 1024;
    //! Below this many nodes left to index, linkGraph indexes them itself instead of starting a thread.
    static constexpr std::size_t kThreadedIndexNodes = 20000;
    std::unique_ptr<NodeTensorInterner> mInterner; //!< while a graph's fields are parsed
    std::vector<std::string> mAllGraphInputs;
    std::size_t mInitializerCount = 0;
    std::size_t mDuplicateConstants = 0;
    std::size_t mTensorsWithoutData = 0;
    bool mWeightlessSeen = false;
    std::string mFirstTensorWithoutData;
    std::unordered_map<std::size_t, PendingData> mPending;
    std::map<std::string, ExternalFile> mExternalFiles;
    struct LocalFunction
    {
        std::string domain;
        std::string name;
        std::uint64_t offset = 0; //!< of its field in the model
        std::size_t nodes = 0;
        std::size_t qdqNodes = 0;
    };
    std::vector<LocalFunction> mLocalFunctions;
    std::vector<std::string> mExternalOrder;
    OnnxConstant mReloaded;
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
