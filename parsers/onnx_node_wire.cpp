#include "parsers/onnx_node_wire.h"

#include <cstring>

namespace qdq::onnx_wire
{

namespace
{

// AttributeProto.AttributeType values (onnx.proto).
enum : std::uint64_t
{
    kTypeUndefined = 0,
    kTypeFloat = 1,
    kTypeInt = 2,
    kTypeString = 3,
    kTypeTensor = 4,
    kTypeGraph = 5,
    kTypeFloats = 6,
    kTypeInts = 7,
    kTypeGraphs = 10,
    kTypeLast = 14,
};

//! A cursor over protobuf bytes. Every read checks the end; a failed read sets error and returns false.
class Cursor
{
public:
    explicit Cursor(std::string_view bytes)
        : mAt(reinterpret_cast<const unsigned char*>(bytes.data())), mEnd(mAt + bytes.size())
    {
    }

    bool atEnd() const { return mAt == mEnd; }

    bool varint(std::uint64_t& value)
    {
        value = 0;
        for (int shift = 0; shift < 64; shift += 7)
        {
            if (mAt == mEnd)
            {
                return false;
            }
            const unsigned char byte = *mAt++;
            value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
            if ((byte & 0x80) == 0)
            {
                return true;
            }
        }
        return false; // more than ten bytes
    }

    bool bytes(std::string_view& value)
    {
        std::uint64_t length = 0;
        if (!varint(length) || length > static_cast<std::uint64_t>(mEnd - mAt))
        {
            return false;
        }
        value = std::string_view(reinterpret_cast<const char*>(mAt), static_cast<std::size_t>(length));
        mAt += length;
        return true;
    }

    bool fixed32(std::uint32_t& value)
    {
        if (mEnd - mAt < 4)
        {
            return false;
        }
        value = static_cast<std::uint32_t>(mAt[0]) | static_cast<std::uint32_t>(mAt[1]) << 8 |
                static_cast<std::uint32_t>(mAt[2]) << 16 | static_cast<std::uint32_t>(mAt[3]) << 24;
        mAt += 4;
        return true;
    }

    //! Skips a field's payload of the given wire type; false when truncated or of a type ONNX never uses.
    bool skip(int wireType)
    {
        std::uint64_t ignored = 0;
        std::string_view payload;
        switch (wireType)
        {
        case kVarint:
            return varint(ignored);
        case kFixed64:
            return advance(8);
        case kLengthDelimited:
            return bytes(payload);
        case kFixed32:
            return advance(4);
        default:
            return false;
        }
    }

private:
    bool advance(std::ptrdiff_t count)
    {
        if (mEnd - mAt < count)
        {
            return false;
        }
        mAt += count;
        return true;
    }

    const unsigned char* mAt;
    const unsigned char* mEnd;
};

//! Reads a tag: false at a malformed one (field number 0, or past 2^29).
bool readTag(Cursor& in, std::uint32_t& field, int& wireType)
{
    std::uint64_t tag = 0;
    if (!in.varint(tag) || tag > 0xFFFFFFFFu)
    {
        return false;
    }
    field = static_cast<std::uint32_t>(tag >> 3);
    wireType = static_cast<int>(tag & 7);
    return field != 0;
}

float asFloat(std::uint32_t bits)
{
    float value = 0.0F;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
}

std::string fieldError(const char* what, std::uint32_t field)
{
    return std::string(what) + " field " + std::to_string(field);
}

} // namespace

std::string decodeNode(std::string_view bytes, NodeFields& node)
{
    node.clear();
    Cursor in(bytes);
    while (!in.atEnd())
    {
        std::uint32_t field = 0;
        int wireType = 0;
        if (!readTag(in, field, wireType))
        {
            return "malformed tag";
        }
        if (wireType == kLengthDelimited && (field <= 5 || field == 7))
        {
            std::string_view value;
            if (!in.bytes(value))
            {
                return fieldError("truncated", field);
            }
            switch (field)
            {
            case 1:
                node.inputs.push_back(value);
                break;
            case 2:
                node.outputs.push_back(value);
                break;
            case 3:
                node.name = value;
                break;
            case 4:
                node.opType = value;
                break;
            case 5:
                node.attributes.push_back(value);
                break;
            default:
                node.domain = value;
                break;
            }
        }
        else if (!in.skip(wireType))
        {
            return fieldError(wireType == 3 || wireType == 4 || wireType > 5 ? "unsupported wire type in" : "truncated",
                              field);
        }
    }
    return {};
}

namespace
{

//! The AttributeProto fields decodeAttribute reads, before the type picks the value.
struct AttributeFields
{
    std::uint64_t type = kTypeUndefined;
    bool hasF = false;
    bool hasI = false;
    bool hasS = false;
    bool hasT = false;
    bool hasG = false;
    std::uint64_t intValue = 0;
    std::uint32_t floatBits = 0;
    std::string_view text;
    std::vector<std::int64_t> ints;
    std::vector<double> floats;
};

bool readPackedFloats(Cursor& in, std::vector<double>& floats)
{
    std::string_view payload;
    bool ok = in.bytes(payload) && payload.size() % 4 == 0;
    Cursor packed(payload);
    for (std::uint32_t bits = 0; ok && !packed.atEnd();)
    {
        ok = packed.fixed32(bits);
        floats.push_back(asFloat(bits));
    }
    return ok;
}

bool readPackedInts(Cursor& in, std::vector<std::int64_t>& ints)
{
    std::string_view payload;
    bool ok = in.bytes(payload);
    Cursor packed(payload);
    for (std::uint64_t value = 0; ok && !packed.atEnd();)
    {
        ok = packed.varint(value);
        ints.push_back(static_cast<std::int64_t>(value));
    }
    return ok;
}

//! Reads one field of an AttributeProto into `fields` (the name into the attribute); false when it is truncated or
//! malformed.
bool readAttributeField(Cursor& in, std::uint32_t field, int wireType, AttributeFields& fields,
                        OnnxAttribute& attribute)
{
    bool ok = true;
    std::string_view payload;
    if (field == 1 && wireType == kLengthDelimited)
    {
        ok = in.bytes(payload);
        attribute.name.assign(payload);
    }
    else if (field == 20 && wireType == kVarint)
    {
        std::uint64_t value = 0;
        ok = in.varint(value);
        // An enum value this schema does not know stays unset, as protobuf leaves it.
        if (ok && value <= kTypeLast)
        {
            fields.type = value;
        }
    }
    else if (field == 2 && wireType == kFixed32)
    {
        ok = in.fixed32(fields.floatBits);
        fields.hasF = true;
    }
    else if (field == 3 && wireType == kVarint)
    {
        ok = in.varint(fields.intValue);
        fields.hasI = true;
    }
    else if (field == 4 && wireType == kLengthDelimited)
    {
        ok = in.bytes(fields.text);
        fields.hasS = true;
    }
    else if ((field == 5 || field == 6) && wireType == kLengthDelimited)
    {
        ok = in.bytes(payload);
        (field == 5 ? fields.hasT : fields.hasG) = true;
    }
    else if (field == 7 && wireType == kFixed32)
    {
        std::uint32_t bits = 0;
        ok = in.fixed32(bits);
        fields.floats.push_back(asFloat(bits));
    }
    else if (field == 7 && wireType == kLengthDelimited)
    {
        ok = readPackedFloats(in, fields.floats);
    }
    else if (field == 8 && wireType == kVarint)
    {
        std::uint64_t value = 0;
        ok = in.varint(value);
        fields.ints.push_back(static_cast<std::int64_t>(value));
    }
    else if (field == 8 && wireType == kLengthDelimited)
    {
        ok = readPackedInts(in, fields.ints);
    }
    else
    {
        ok = in.skip(wireType);
    }
    return ok;
}

//! The attribute's type: the one it names, or for old models that leave it out the one of the field that is set.
std::uint64_t attributeType(const AttributeFields& fields)
{
    if (fields.type != kTypeUndefined)
    {
        return fields.type;
    }
    return fields.hasF              ? kTypeFloat
           : fields.hasI            ? kTypeInt
           : fields.hasS            ? kTypeString
           : fields.hasT            ? kTypeTensor
           : fields.hasG            ? kTypeGraph
           : !fields.floats.empty() ? kTypeFloats
           : !fields.ints.empty()   ? kTypeInts
                                    : kTypeUndefined;
}

void storeAttributeValue(std::uint64_t type, AttributeFields& fields, OnnxAttribute& attribute)
{
    switch (type)
    {
    case kTypeInt:
        attribute.kind = OnnxAttribute::Kind::kInt;
        attribute.i = static_cast<std::int64_t>(fields.intValue);
        break;
    case kTypeFloat:
        attribute.kind = OnnxAttribute::Kind::kFloat;
        attribute.f = asFloat(fields.floatBits);
        break;
    case kTypeString:
        attribute.kind = OnnxAttribute::Kind::kString;
        attribute.s.assign(fields.text);
        break;
    case kTypeInts:
        attribute.kind = OnnxAttribute::Kind::kInts;
        attribute.ints = std::move(fields.ints);
        break;
    case kTypeFloats:
        attribute.kind = OnnxAttribute::Kind::kFloats;
        attribute.floats = std::move(fields.floats);
        break;
    case kTypeTensor:
        attribute.kind = OnnxAttribute::Kind::kTensor;
        break;
    case kTypeGraph:
    case kTypeGraphs:
        attribute.kind = OnnxAttribute::Kind::kGraph;
        break;
    default:
        attribute.kind = OnnxAttribute::Kind::kOther;
        break;
    }
}

} // namespace

std::string decodeAttribute(std::string_view bytes, OnnxAttribute& attribute)
{
    attribute = OnnxAttribute{};
    Cursor in(bytes);
    AttributeFields fields;
    while (!in.atEnd())
    {
        std::uint32_t field = 0;
        int wireType = 0;
        if (!readTag(in, field, wireType))
        {
            return "malformed tag in attribute";
        }
        if (!readAttributeField(in, field, wireType, fields, attribute))
        {
            return fieldError("truncated or malformed attribute", field);
        }
    }
    storeAttributeValue(attributeType(fields), fields, attribute);
    return {};
}

} // namespace qdq::onnx_wire
