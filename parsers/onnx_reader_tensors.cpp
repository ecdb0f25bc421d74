// The ONNX reader's tensors: TensorProto fields of initializers and Constant values, their data read while
// streaming or later (ensureLoaded), and external data files.
#include "parsers/external_data_location.h"
#include "parsers/external_data_ref.h"
#include "parsers/onnx_reader_impl.h"
#include "qdq/quantized_types.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>

namespace qdq::onnx_detail
{

//! Walks a TensorProto's fields (the caller pushed a limit around it). Data fields longer than
//! options.smallTensorBytes are skipped unless forceLoad or options.loadWeights.
void OnnxReader::parseTensorFields(Wire& wire, TensorRecord& record, bool forceLoad)
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

void OnnxReader::readDataField(Wire& wire, TensorRecord& record, std::uint32_t tag, std::uint64_t tagOffset,
                               bool loadAll)
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
std::int64_t OnnxReader::elementCountOf(const std::vector<std::int64_t>& dims)
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
void OnnxReader::finishTensor(TensorRecord& record, std::uint64_t offset)
{
    OnnxConstant& constant = record.constant;
    constant.dataType = static_cast<OnnxDataType>(record.dataType);
    constant.elementCount = elementCountOf(constant.dims);
    if (constant.elementCount < 0)
    {
        warn(offset, true, "tensor '" + printable(constant.name, 256) + "' has a negative or overflowing dimension");
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
    std::string why =
        decodeTensorPayload(record.dataType, record.dataField, record.payload, constant.elementCount, constant.values);
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

std::int64_t OnnxReader::parseExternalNumber(const std::string& text, const std::string& key, const std::string& tensor,
                                             std::uint64_t offset)
{
    const auto value = parseExternalDataNumber(text);
    if (!value)
    {
        fail(offset, "external data " + key + " '" + printable(text, 64) + "' of tensor '" + printable(tensor, 256) +
                         "' is not a non-negative integer of at most 18 digits");
    }
    return static_cast<std::int64_t>(*value);
}

//! Checks an external data location (relative, inside the model's folder) and whether its file exists.
void OnnxReader::registerExternal(OnnxConstant& constant, std::uint64_t offset)
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
void OnnxReader::noteExternalTensor(ExternalFile& file, const std::string& tensor)
{
    ++file.references;
    if (!file.refused.empty() && file.tensors.size() < kNamedRefusedTensors)
    {
        file.tensors.push_back(tensor);
    }
}

void OnnxReader::parseInitializer(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset)
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

void OnnxReader::parseSparseInitializer(Wire& wire, std::uint32_t tag, std::uint64_t tagOffset)
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

void OnnxReader::addConstant(TensorRecord&& record, std::uint64_t offset)
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
void OnnxReader::parseTensorBytes(const std::string& bytes, TensorRecord& record, std::uint64_t offset, bool forceLoad)
{
    CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
    Wire wire{in, offset, bytes.size()};
    Context savedContext = mContext;
    parseTensorFields(wire, record, forceLoad);
    mContext = savedContext;
}

void OnnxReader::addConstantNode(const onnx::NodeProto& proto, const std::string& outputName, std::uint64_t nodeOffset,
                                 std::uint64_t bodyOffset, std::uint32_t bodyLength, bool forceLoad)
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

//! Loads the data of a constant that was skipped while streaming (a Q/DQ scale or zero point, or weights).
void OnnxReader::ensureLoaded(std::size_t index)
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
    std::string why = decodeTensorPayload(static_cast<int>(constant.dataType), data.field, bytes, constant.elementCount,
                                          constant.values);
    if (why.empty())
    {
        constant.dataLoaded = true;
    }
    else if (rawElementBytes(static_cast<int>(constant.dataType)) >= 0)
    {
        warn(data.offset, true, "tensor '" + printable(constant.name, 256) + "': " + why);
    }
}

void OnnxReader::loadExternal(OnnxConstant& constant)
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
std::optional<std::size_t> OnnxReader::resolveConstant(std::uint32_t tensor) const
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
void OnnxReader::growTensorArrays()
{
    OnnxTensorTable& tensors = mGraph.tensors;
    const std::size_t count = tensors.names.size();
    if (tensors.constant.size() < count)
    {
        tensors.constant.resize(count, OnnxGraph::kNone);
        tensors.type.resize(count, OnnxDataType::kUndefined);
    }
}

} // namespace qdq::onnx_detail
