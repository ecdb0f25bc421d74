// Internal to the model writer (src/fixes/model_*.cpp): reading an ONNX model file at the protobuf wire level, the
// field numbers of onnx.proto the writer looks at, and the small encoding helpers the writer and the checker's copy
// share.
#pragma once

#include "parsers/external_data_location.h"
#include "parsers/external_data_ref.h"
#include "parsers/file_source.h"
#include "parsers/onnx_node_wire.h"
#include "qdq/diagnostics.h"
#include "qdq/model_edit.h"

#include <onnx/onnx_pb.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace qdq::model_wire
{

namespace fs = std::filesystem;

using onnx_wire::kEndGroup;
using onnx_wire::kFixed32;
using onnx_wire::kFixed64;
using onnx_wire::kLengthDelimited;
using onnx_wire::kStartGroup;
using onnx_wire::kVarint;

// Field numbers of onnx.proto that the writer looks at.
constexpr std::uint32_t kModelGraph = 7;
constexpr std::uint32_t kModelIrVersion = 1;
constexpr std::uint32_t kModelOpsetImport = 8;
constexpr std::uint64_t kIrVersionOfOpset13 = 7; //!< ONNX 1.8: IR 7, opset 13
constexpr std::uint32_t kOpsetDomain = 1;
constexpr std::uint32_t kOpsetVersion = 2;
constexpr std::uint32_t kGraphNode = 1;
constexpr std::uint32_t kGraphInitializer = 5;
constexpr std::uint32_t kGraphInput = 11;
constexpr std::uint32_t kGraphOutput = 12;
constexpr std::uint32_t kGraphValueInfo = 13;
constexpr std::uint32_t kNodeOutput = 2;
constexpr std::uint32_t kNodeName = 3;
constexpr std::uint32_t kNodeOpType = 4;
constexpr std::uint32_t kNodeDomain = 7;
constexpr std::uint32_t kTensorDims = 1;
constexpr std::uint32_t kTensorDataType = 2;
constexpr std::uint32_t kTensorFloatData = 4;
constexpr std::uint32_t kTensorInt32Data = 5;
constexpr std::uint32_t kTensorStringData = 6;
constexpr std::uint32_t kTensorInt64Data = 7;
constexpr std::uint32_t kTensorName = 8;
constexpr std::uint32_t kTensorRawData = 9;
constexpr std::uint32_t kTensorDoubleData = 10;
constexpr std::uint32_t kTensorUint64Data = 11;
constexpr std::uint32_t kTensorExternalData = 13;
constexpr std::uint32_t kTensorDataLocation = 14;
constexpr std::uint32_t kValueInfoName = 1;
constexpr std::uint32_t kEntryKey = 1;
constexpr std::uint32_t kEntryValue = 2;

//! Window of the pass-1 walk: graph structure fields are small, and a larger window would read megabytes of the
//! weights it skips each time it jumps over one.
constexpr std::size_t kScanWindowBytes = 64 << 10;
//! Largest node or tensor parsed to rewrite an external data location: anything larger holds inline data.
constexpr std::uint64_t kMaxReencodedBytes = 1 << 20;
//! A new tensor of this many bytes or more goes to the output's data file, when it has one: the size_threshold default
//! of ONNX's convert_model_to_external_data (https://onnx.ai/onnx/api/external_data_helper.html).
constexpr std::size_t kExternalThresholdBytes = 1024;
//! Serialized protobuf messages cannot exceed 2 GiB.
constexpr std::uint64_t kProtobufLimit = INT_MAX;
//! checkModelFile: initializer data above these sizes is replaced by a placeholder. Shape inference reads the values
//! of shape-like inputs (Reshape's shape, Slice's starts, Resize's scales, ...), which are small; INT32/INT64 tensors
//! keep up to 64 KiB, others 1 KiB, so weights never reach the checker (on the 500,000-node bench model with 500 MB
//! of 5 KB weights this keeps the check copy at the graph's size instead of the file's).
constexpr std::uint64_t kCheckPlaceholderBytes = 64 << 10;
constexpr std::uint64_t kCheckPlaceholderOtherBytes = 1 << 10;

inline bool isDataField(std::uint32_t number)
{
    return number == kTensorFloatData || number == kTensorInt32Data || number == kTensorStringData ||
           number == kTensorInt64Data || number == kTensorRawData || number == kTensorDoubleData ||
           number == kTensorUint64Data;
}

inline bool isStandardDomain(std::string_view domain)
{
    return domain.empty() || domain == "ai.onnx";
}

inline void appendVarint(std::string& out, std::uint64_t value)
{
    while (value >= 0x80)
    {
        out.push_back(static_cast<char>((value & 0x7F) | 0x80));
        value >>= 7;
    }
    out.push_back(static_cast<char>(value));
}

inline std::uint64_t varintSize(std::uint64_t value)
{
    std::uint64_t size = 1;
    while (value >= 0x80)
    {
        value >>= 7;
        ++size;
    }
    return size;
}

//! Tag, length and payload of a length-delimited field.
inline std::string lengthDelimitedField(std::uint32_t number, std::string_view payload)
{
    std::string field;
    field.reserve(payload.size() + 10);
    appendVarint(field, (static_cast<std::uint64_t>(number) << 3) | kLengthDelimited);
    appendVarint(field, payload.size());
    field.append(payload);
    return field;
}

//! Bits per element of a TensorProto.DataType; 0 for STRING, UNDEFINED and types this code does not know.
inline int elementBits(std::int32_t dataType)
{
    switch (dataType)
    {
    case 2:  // UINT8
    case 3:  // INT8
    case 9:  // BOOL
    case 17: // FLOAT8E4M3FN
    case 18: // FLOAT8E4M3FNUZ
    case 19: // FLOAT8E5M2
    case 20: // FLOAT8E5M2FNUZ
        return 8;
    case 4:  // UINT16
    case 5:  // INT16
    case 10: // FLOAT16
    case 16: // BFLOAT16
        return 16;
    case 1:  // FLOAT
    case 6:  // INT32
    case 12: // UINT32
        return 32;
    case 7:  // INT64
    case 11: // DOUBLE
    case 13: // UINT64
    case 14: // COMPLEX64
        return 64;
    case 15: // COMPLEX128
        return 128;
    case 21: // UINT4
    case 22: // INT4
    case 23: // FLOAT4E2M1
        return 4;
    default:
        return 0;
    }
}

//! Element count of dims; nullopt when a dimension is negative or the product overflows.
inline std::optional<std::uint64_t> elementCount(const std::vector<std::int64_t>& dims)
{
    std::uint64_t count = 1;
    for (std::int64_t dim : dims)
    {
        if (dim < 0)
        {
            return std::nullopt;
        }
        if (dim != 0 && count > UINT64_MAX / static_cast<std::uint64_t>(dim))
        {
            return std::nullopt;
        }
        count *= static_cast<std::uint64_t>(dim);
    }
    return count;
}

[[noreturn]] inline void failPath(const std::string& path, const std::string& message)
{
    SourceLocation where;
    where.path = path;
    throw InputError(where, message);
}

[[noreturn]] inline void invalidEdit(const std::string& message)
{
    throw std::invalid_argument("ModelEdits: " + message);
}

inline std::string inQuotes(std::string_view text)
{
    return "'" + printable(text, 256) + "'";
}

// ----- reading the source ---------------------------------------------------------------------------------------

//! One protobuf field of the source: where its tag, length and payload are.
struct WireField
{
    std::uint32_t number = 0;
    int wireType = 0;
    std::uint64_t tagOffset = 0;
    std::uint64_t lengthOffset = 0;  //!< just after the tag
    std::uint64_t payloadOffset = 0; //!< a length-delimited field's payload (else the value's first byte)
    std::uint64_t payloadLength = 0;
    std::uint64_t value = 0; //!< a varint field's value
    std::uint64_t end = 0;
};

//! The source model file: random access by offset through a small window (pass 1) or straight into a caller's
//! buffer (pass 2), and the wire-level field walk with errors that name the file, byte offset and place.
class WireSource
{
public:
    WireSource(std::string path, const Limits& limits, std::size_t windowBytes) : mPath(std::move(path))
    {
        mSize = checkedFileSize(mPath, limits);
        mFd = ::open(mPath.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (mFd < 0)
        {
            failPath(mPath, std::string("cannot open: ") + std::strerror(errno));
        }
        struct stat info
        {
        };
        if (::fstat(mFd, &info) != 0 || !S_ISREG(info.st_mode) || static_cast<std::uint64_t>(info.st_size) != mSize)
        {
            ::close(mFd);
            failPath(mPath, "changed while being opened");
        }
        mModified = info.st_mtim;
        mWindow.resize(windowBytes);
    }
    ~WireSource()
    {
        if (mFd >= 0)
        {
            ::close(mFd);
        }
    }
    WireSource(const WireSource&) = delete;
    WireSource& operator=(const WireSource&) = delete;

    const std::string& path() const { return mPath; }
    std::uint64_t size() const { return mSize; }

    //! Names the part of the model being walked in messages: "graph.node[12]".
    void setContext(const char* label, std::optional<std::uint64_t> index = std::nullopt)
    {
        mContextLabel = label;
        mContextIndex = index;
    }

    [[noreturn]] void fail(std::uint64_t offset, const std::string& message) const
    {
        SourceLocation where;
        where.path = mPath;
        where.byteOffset = offset;
        where.hasByteOffset = true;
        std::string context;
        if (mContextLabel != nullptr)
        {
            context = std::string(" (in ") + mContextLabel +
                      (mContextIndex ? "[" + std::to_string(*mContextIndex) + "]" : std::string()) + ")";
        }
        throw InputError(where, message + context);
    }

    //! Bytes [offset, offset + length), valid until the next call.
    std::string_view view(std::uint64_t offset, std::uint64_t length)
    {
        if (length > mSize || offset > mSize - length)
        {
            fail(offset, "truncated protobuf");
        }
        if (offset >= mWindowStart && offset + length <= mWindowStart + mWindowSize)
        {
            return {mWindow.data() + (offset - mWindowStart), static_cast<std::size_t>(length)};
        }
        if (length > mWindow.size())
        {
            mScratch.resize(length);
            readInto(offset, mScratch.data(), length);
            return mScratch;
        }
        mWindowStart = offset;
        mWindowSize = std::min<std::uint64_t>(mWindow.size(), mSize - offset);
        readInto(offset, mWindow.data(), mWindowSize);
        return {mWindow.data(), static_cast<std::size_t>(length)};
    }

    std::string read(std::uint64_t offset, std::uint64_t length) { return std::string(view(offset, length)); }

    void readInto(std::uint64_t offset, char* data, std::uint64_t length) const
    {
        std::uint64_t done = 0;
        while (done < length)
        {
            ssize_t n = ::pread(mFd, data + done, length - done, static_cast<off_t>(offset + done));
            if (n < 0 && errno == EINTR)
            {
                continue;
            }
            if (n < 0)
            {
                fail(offset + done, std::string("read failed: ") + std::strerror(errno));
            }
            if (n == 0)
            {
                fail(offset + done, "file ended early (changed while being read?)");
            }
            done += static_cast<std::uint64_t>(n);
        }
    }

    //! Throws when the file's size or modification time changed since it was opened (it was written to while
    //! being copied).
    void checkUnchanged() const
    {
        struct stat info
        {
        };
        if (::fstat(mFd, &info) != 0 || static_cast<std::uint64_t>(info.st_size) != mSize ||
            info.st_mtim.tv_sec != mModified.tv_sec || info.st_mtim.tv_nsec != mModified.tv_nsec)
        {
            failPath(mPath, "changed while the edited model was being written");
        }
    }

    //! Decodes the varint at offset (before end); returns its byte count.
    std::uint64_t varint(std::uint64_t offset, std::uint64_t end, std::uint64_t& value)
    {
        const std::uint64_t available = std::min<std::uint64_t>(10, end - offset);
        const std::string_view bytes = view(offset, available);
        value = 0;
        for (std::size_t i = 0; i < bytes.size(); ++i)
        {
            const auto byte = static_cast<unsigned char>(bytes[i]);
            value |= static_cast<std::uint64_t>(byte & 0x7F) << (7 * i);
            if ((byte & 0x80) == 0)
            {
                return i + 1;
            }
        }
        fail(offset, available < 10 ? "truncated protobuf" : "malformed protobuf varint");
    }

    //! Reads the field at position (when position < end) and moves position past it. Throws InputError on
    //! malformed data, as the ONNX reader does.
    bool nextField(std::uint64_t& position, std::uint64_t end, WireField& field)
    {
        if (position >= end)
        {
            return false;
        }
        field = WireField{};
        field.tagOffset = position;
        std::uint64_t tag = 0;
        position += varint(position, end, tag);
        if (tag > 0xFFFFFFFFu)
        {
            fail(field.tagOffset, "invalid protobuf tag");
        }
        field.number = static_cast<std::uint32_t>(tag >> 3);
        field.wireType = static_cast<int>(tag & 7);
        if (field.number == 0)
        {
            fail(field.tagOffset, "invalid protobuf field number 0");
        }
        field.lengthOffset = position;
        switch (field.wireType)
        {
        case kVarint:
            field.payloadOffset = position;
            field.payloadLength = varint(position, end, field.value);
            break;
        case kFixed64:
        case kFixed32:
            field.payloadOffset = position;
            field.payloadLength = field.wireType == kFixed64 ? 8 : 4;
            if (field.payloadLength > end - position)
            {
                fail(field.tagOffset, "truncated protobuf");
            }
            break;
        case kLengthDelimited:
            position += varint(position, end, field.payloadLength);
            field.payloadOffset = position;
            if (field.payloadLength > end - position)
            {
                fail(field.tagOffset, "field length " + std::to_string(field.payloadLength) +
                                          " exceeds the remaining " + std::to_string(end - position) + " bytes");
            }
            break;
        case kStartGroup:
        case kEndGroup:
            fail(field.tagOffset,
                 "unsupported protobuf wire type " + std::to_string(field.wireType) + " (group, never used by ONNX)");
        default:
            fail(field.tagOffset, "invalid protobuf wire type " + std::to_string(field.wireType));
        }
        position = field.payloadOffset + field.payloadLength;
        field.end = position;
        return true;
    }

    void expectLengthDelimited(const WireField& field, const char* what) const
    {
        if (field.wireType != kLengthDelimited)
        {
            fail(field.tagOffset, std::string("field ") + what + " is not length-delimited (not an ONNX model?)");
        }
    }

    //! A length-delimited field's payload as a string (names, keys: small).
    std::string string(const WireField& field) { return read(field.payloadOffset, field.payloadLength); }

private:
    std::string mPath;
    int mFd = -1;
    std::uint64_t mSize = 0;
    struct timespec mModified
    {
    };
    std::string mWindow;
    std::uint64_t mWindowStart = 0;
    std::uint64_t mWindowSize = 0;
    std::string mScratch;
    const char* mContextLabel = nullptr;
    std::optional<std::uint64_t> mContextIndex;
};

//! Where the graph field (ModelProto field 7) is.
struct GraphLocation
{
    std::uint64_t tagOffset = 0;
    std::uint64_t lengthOffset = 0;
    std::uint64_t payloadOffset = 0;
    std::uint64_t end = 0;
};

inline GraphLocation locateGraph(WireSource& source)
{
    if (source.size() == 0)
    {
        source.fail(0, "empty file: not an ONNX model");
    }
    GraphLocation graph;
    bool found = false;
    std::uint64_t position = 0;
    WireField field;
    while (source.nextField(position, source.size(), field))
    {
        if (field.number != kModelGraph)
        {
            continue;
        }
        source.expectLengthDelimited(field, "graph");
        if (found)
        {
            source.fail(field.tagOffset, "the model has more than one graph field (protobuf would merge them); "
                                         "such a model cannot be edited");
        }
        found = true;
        graph = {field.tagOffset, field.lengthOffset, field.payloadOffset, field.end};
    }
    if (!found)
    {
        source.fail(0, "not an ONNX model: no graph field");
    }
    return graph;
}

//! The TensorProto fields that decide what happens to an initializer; data fields are skipped, not read.
struct TensorHeader
{
    std::string name;
    std::int32_t dataType = 0;
    std::vector<std::int64_t> dims;
    bool hasLocation = false;
    std::string location;
    bool externalLocation = false; //!< data_location is EXTERNAL
    std::uint64_t dataBytes = 0;   //!< payload bytes of the data fields
    std::uint32_t firstDataField = 0;

    bool external() const { return hasLocation || externalLocation; }
};

inline TensorHeader decodeTensorHeader(WireSource& source, const WireField& tensor)
{
    TensorHeader header;
    std::uint64_t position = tensor.payloadOffset;
    WireField field;
    WireField inner;
    while (source.nextField(position, tensor.end, field))
    {
        if (isDataField(field.number))
        {
            header.dataBytes += field.payloadLength;
            header.firstDataField = header.firstDataField == 0 ? field.number : header.firstDataField;
            continue;
        }
        switch (field.number)
        {
        case kTensorDims:
            if (field.wireType == kVarint)
            {
                header.dims.push_back(static_cast<std::int64_t>(field.value));
            }
            else if (field.wireType == kLengthDelimited)
            {
                for (std::uint64_t at = field.payloadOffset; at < field.end;)
                {
                    std::uint64_t dim = 0;
                    at += source.varint(at, field.end, dim);
                    header.dims.push_back(static_cast<std::int64_t>(dim));
                }
            }
            break;
        case kTensorDataType:
            header.dataType = static_cast<std::int32_t>(field.value);
            break;
        case kTensorName:
            source.expectLengthDelimited(field, "TensorProto.name");
            header.name = source.string(field);
            break;
        case kTensorExternalData:
        {
            source.expectLengthDelimited(field, "TensorProto.external_data");
            std::string key;
            std::string value;
            for (std::uint64_t at = field.payloadOffset; source.nextField(at, field.end, inner);)
            {
                if (inner.wireType == kLengthDelimited && inner.number == kEntryKey)
                {
                    key = source.string(inner);
                }
                else if (inner.wireType == kLengthDelimited && inner.number == kEntryValue)
                {
                    value = source.string(inner);
                }
            }
            if (key == "location")
            {
                header.hasLocation = true;
                header.location = value;
            }
            break;
        }
        case kTensorDataLocation:
            header.externalLocation = field.wireType == kVarint && field.value == onnx::TensorProto::EXTERNAL;
            break;
        default:
            break;
        }
    }
    return header;
}

//! The NodeProto fields the writer looks at: op type and domain (copied) and, through a callback, name and outputs.
struct NodeHeader
{
    std::string opType;
    std::string domain;

    bool isConstant() const { return opType == "Constant" && isStandardDomain(domain); }
};

template <typename OnName>
NodeHeader decodeNodeHeader(WireSource& source, const WireField& node, OnName&& onName)
{
    NodeHeader header;
    std::uint64_t position = node.payloadOffset;
    WireField field;
    while (source.nextField(position, node.end, field))
    {
        if (field.wireType != kLengthDelimited)
        {
            continue;
        }
        switch (field.number)
        {
        case kNodeOutput:
        case kNodeName:
            onName(field.number, source.view(field.payloadOffset, field.payloadLength));
            break;
        case kNodeOpType:
            header.opType = source.string(field);
            break;
        case kNodeDomain:
            header.domain = source.string(field);
            break;
        default:
            break;
        }
    }
    return header;
}

//! The name of a ValueInfoProto (graph input or output).
inline std::string decodeValueInfoName(WireSource& source, const WireField& valueInfo)
{
    std::string name;
    std::uint64_t position = valueInfo.payloadOffset;
    WireField field;
    while (source.nextField(position, valueInfo.end, field))
    {
        if (field.number == kValueInfoName && field.wireType == kLengthDelimited)
        {
            name = source.string(field);
        }
    }
    return name;
}

} // namespace qdq::model_wire
