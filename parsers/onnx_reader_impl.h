// The ONNX reader's class, shared by its files: parsers/onnx_reader.cpp (the model and graph walk, nodes),
// parsers/onnx_reader_tensors.cpp (initializers, Constant values, external data) and parsers/onnx_graph_link.cpp
// (linking nodes by tensor, cycles, the Q/DQ pairs). Internal to parsers/.
#pragma once

#include "parsers/onnx_node_wire.h"
#include "parsers/onnx_tensor_data.h"
#include "parsers/onnx_tensor_interner.h"
#include "qdq/readers.h"

#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace qdq::onnx_detail
{

namespace fs = std::filesystem;
using google::protobuf::io::CodedInputStream;

constexpr std::size_t kWarningCap = 20;
constexpr int kFileBlockBytes = 1 << 16;

using onnx_wire::kEndGroup;
using onnx_wire::kFixed32;
using onnx_wire::kFixed64;
using onnx_wire::kLengthDelimited;
using onnx_wire::kStartGroup;
using onnx_wire::kVarint;

const char* wireTypeName(int wireType);

bool isStandardDomain(const std::string& domain);

//! QuantizeLinear/DequantizeLinear, and the TensorRT-domain ops TensorRT's parser imports as them: NVIDIA ModelOpt
//! exports FP8 and INT4 as trt::TRT_FP8QuantizeLinear, TRT_FP8DequantizeLinear, TRT_INT4QuantizeLinear and
//! TRT_INT4DequantizeLinear (onnx-tensorrt's importers for them call its Q/DQ helper with the type set), in the "trt"
//! domain (or none: a graph rebuilt from a build log names no domain). Its NVFP4 and MXFP8 exports quantize
//! activations at run time with trt::TRT_FP4DynamicQuantize(x, scale) -> (x_fp4, fp8 block scales) and
//! trt::TRT_MXFP8DynamicQuantize(x) -> (x_fp8, e8m0 block scales), dequantized by trt::DequantizeLinear and
//! trt::TRT_MXFP8DequantizeLinear with axis and block_size (NVIDIA/Model-Optimizer
//! modelopt/torch/quantization/export_onnx.py; TensorRT CHANGELOG 10.12: "custom MXFP8 quantization operations").
//! The dynamic quantizers count as the Quantize of their pair: they write the quantized tensor the DQ reads.
OnnxNode::QdqKind qdqKindOf(std::string_view opType, std::string_view domain);

//! The type a TensorRT-domain Q/DQ op quantizes to, or nothing for the ONNX ops.
std::optional<OnnxDataType> tensorRtQdqType(std::string_view opType);

//! Q/DQ ops TensorRT's parser reads: the ONNX ones in the standard domain, ModelOpt's trt::DequantizeLinear (its
//! NVFP4 export), and the TRT_ ops of the trt domain.
bool importedAsQdq(const OnnxNode& node);

//! Reads `length` bytes at `offset` of a file, retrying interrupted and short reads.
bool preadAll(int fd, std::uint64_t offset, std::uint64_t length, std::string& out);

//! Where the model's bytes come from, for the few tensors that are read after the streaming pass.
class ByteSource
{
public:
    virtual ~ByteSource() = default;
    virtual bool read(std::uint64_t offset, std::uint64_t length, std::string& out) const = 0;
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
    void parseModel(Wire& wire);

    //! Sizes the node and tensor arrays before the graph is read, from a quick count of its node fields (tags and
    //! lengths only, read in 64 KiB windows): growing them node by node would move every node several times. The
    //! count ends at the first other field after the nodes (writers put the nodes first), so large initializers are
    //! not read twice. A malformed graph stops the count; the parse that follows reports it.
    void reserveForGraph(std::uint64_t offset, std::uint64_t length);

    void parseGraph(Wire& wire);

    //! Waits for the interner thread; meanwhile this thread indexes the node names read so far (the interner runs
    //! behind the decoding, and the index is work linkGraph would otherwise wait for).
    void drainInterner();

    //! Indexes the next `most` nodes not yet indexed by name, in node order (the first of two nodes with one name
    //! keeps it); returns whether nodes read so far are left.
    bool indexNodeNames(std::size_t most);

    void parseNode(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset);

    // ----- tensors ------------------------------------------------------------------------------------------
    //! Walks a TensorProto's fields (the caller pushed a limit around it). Data fields longer than
    //! options.smallTensorBytes are skipped unless forceLoad or options.loadWeights.
    void parseTensorFields(Wire& wire, TensorRecord& record, bool forceLoad);

    void readDataField(Wire& wire, TensorRecord& record, std::uint32_t tag, std::uint64_t tagOffset, bool loadAll);

    //! Element count from dims; -1 when a dimension is negative or the product overflows.
    static std::int64_t elementCountOf(const std::vector<std::int64_t>& dims);

    //! Finishes a tensor record: element count, external data, decoding of what was read.
    void finishTensor(TensorRecord& record, std::uint64_t offset);

    std::int64_t parseExternalNumber(const std::string& text, const std::string& key, const std::string& tensor,
                                     std::uint64_t offset);

    //! Checks an external data location (relative, inside the model's folder) and whether its file exists.
    void registerExternal(OnnxConstant& constant, std::uint64_t offset);

    //! Counts a tensor stored in an external file; the first few names of a refused location are kept.
    static void noteExternalTensor(ExternalFile& file, const std::string& tensor);

    static constexpr std::size_t kNamedRefusedTensors = 8;

    void parseInitializer(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset);

    void parseSparseInitializer(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset);

    void addConstant(TensorRecord&& record, std::uint64_t offset);

    //! Parses a tensor held in memory (a Constant node's value) with the same field walker.
    void parseTensorBytes(const std::string& bytes, TensorRecord& record, std::uint64_t offset, bool forceLoad);

    void addConstantNode(const onnx::NodeProto& proto, const std::string& outputName, std::uint64_t nodeOffset,
                         std::uint64_t bodyOffset, std::uint32_t bodyLength, bool forceLoad = false);

    // ----- after the streaming pass ---------------------------------------------------------------------------
    //! Loads the data of a constant that was skipped while streaming (a Q/DQ scale or zero point, or weights).
    void ensureLoaded(std::size_t index);
    bool mayLoadQuantizedConstant(const OnnxConstant& constant);

    void loadExternal(OnnxConstant& constant);

    //! The constant a tensor holds, looking through Identity nodes.
    std::optional<std::size_t> resolveConstant(std::uint32_t tensor) const;

    //! Sizes the per-tensor arrays to the tensors interned so far.
    void growTensorArrays();

    //! The scales, zero points and INT32 biases of ONNX Runtime's QOperator ops (QLinearConv, com.microsoft QLinearAdd,
    //! QGemm, ...): `fix` rewrites such an op as DequantizeLinear -> float op -> QuantizeLinear and computes the float
    //! bias from them. Weights are left unread: an INT8/UINT8 constant is read only when it is small enough to be a
    //! zero point (one per channel).
    void loadQuantizedOpParameters();

    //! Warns about each model-local function the graph calls: its nodes are not analyzed.
    void warnLocalFunctionCalls();

    void finish();

    void linkGraph();
    //! The producer of each tensor; warns about tensors with several.
    void linkProducers();
    //! The consumers of each tensor, as compressed rows.
    void linkConsumers();
    //! Lists the graph inputs that are not initializers; returns which tensors are graph inputs.
    std::vector<bool> collectGraphInputs();
    //! Types a tensor the value infos left untyped from its constant.
    void typeTensorsOfConstants();
    //! Warns about node inputs that no node, initializer or graph input produces.
    void warnDanglingInputs(const std::vector<bool>& isGraphInput);
    //! Places the duplicate node name warnings at `warningsAt`, where linkGraph's producer warnings end.
    void warnDuplicateNodeNames(std::size_t warningsAt);

    void checkCycles();

    void collectQdq();

    std::string mPath;
    const OnnxReadOptions& mOptions;
    const Limits& mLimits;
    std::uint64_t mQuantizedConstantBytes = 0; //!< decoded by mayLoadQuantizedConstant so far
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

} // namespace qdq::onnx_detail
