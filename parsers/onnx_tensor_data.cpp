#include "parsers/onnx_tensor_data.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace qdq::onnx_detail
{

namespace
{
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool isPacked4(int dataType)
{
    return dataType == static_cast<int>(OnnxDataType::kUint4) || dataType == static_cast<int>(OnnxDataType::kInt4) ||
           dataType == static_cast<int>(OnnxDataType::kFloat4E2M1);
}

double nibbleValue(int dataType, std::uint8_t nibble)
{
    switch (static_cast<OnnxDataType>(dataType))
    {
    case OnnxDataType::kInt4:
        return nibble >= 8 ? static_cast<double>(nibble) - 16.0 : static_cast<double>(nibble);
    case OnnxDataType::kFloat4E2M1:
        return float4e2m1ToDouble(nibble);
    default:
        return static_cast<double>(nibble);
    }
}

// Value of one element whose bits are held in an integer (int32_data, or raw bytes of small types).
double bitsValue(int dataType, std::uint64_t bits)
{
    switch (static_cast<OnnxDataType>(dataType))
    {
    case OnnxDataType::kFloat16:
        return halfToDouble(static_cast<std::uint16_t>(bits));
    case OnnxDataType::kBfloat16:
        return bfloat16ToDouble(static_cast<std::uint16_t>(bits));
    case OnnxDataType::kFloat8E4M3FN:
    case OnnxDataType::kFloat8E4M3FNUZ:
    case OnnxDataType::kFloat8E5M2:
    case OnnxDataType::kFloat8E5M2FNUZ:
        return float8ToDouble(dataType, static_cast<std::uint8_t>(bits));
    case OnnxDataType::kUint8:
        return static_cast<double>(static_cast<std::uint8_t>(bits));
    case OnnxDataType::kInt8:
        return static_cast<double>(static_cast<std::int8_t>(bits));
    case OnnxDataType::kUint16:
        return static_cast<double>(static_cast<std::uint16_t>(bits));
    case OnnxDataType::kInt16:
        return static_cast<double>(static_cast<std::int16_t>(bits));
    case OnnxDataType::kInt32:
        return static_cast<double>(static_cast<std::int32_t>(bits));
    case OnnxDataType::kBool:
        return bits != 0 ? 1.0 : 0.0;
    case OnnxDataType::kUint32:
        return static_cast<double>(static_cast<std::uint32_t>(bits));
    case OnnxDataType::kInt64:
        return static_cast<double>(static_cast<std::int64_t>(bits));
    case OnnxDataType::kUint64:
        return static_cast<double>(bits);
    default:
        return static_cast<double>(bits);
    }
}

template <typename T>
T loadLittle(const char* data)
{
    T value;
    std::memcpy(&value, data, sizeof(T));
    return value;
}

std::string decodeRaw(int dataType, std::string_view payload, std::int64_t count, std::vector<double>& values)
{
    const std::int64_t expected = expectedRawBytes(dataType, count);
    if (expected < 0)
    {
        return "data type " + std::string(onnxDataTypeName(static_cast<OnnxDataType>(dataType))) + " is not decoded";
    }
    if (static_cast<std::int64_t>(payload.size()) != expected)
    {
        return "raw_data holds " + std::to_string(payload.size()) + " bytes, expected " + std::to_string(expected);
    }
    values.resize(static_cast<std::size_t>(count));
    const char* data = payload.data();
    const auto n = static_cast<std::size_t>(count);
    if (isPacked4(dataType))
    {
        for (std::size_t i = 0; i < n; ++i)
        {
            auto byte = static_cast<std::uint8_t>(data[i / 2]);
            values[i] = nibbleValue(dataType, (i % 2) != 0 ? static_cast<std::uint8_t>(byte >> 4)
                                                           : static_cast<std::uint8_t>(byte & 0x0F));
        }
        return {};
    }
    switch (static_cast<OnnxDataType>(dataType))
    {
    case OnnxDataType::kFloat:
        for (std::size_t i = 0; i < n; ++i)
        {
            values[i] = loadLittle<float>(data + 4 * i);
        }
        break;
    case OnnxDataType::kDouble:
        for (std::size_t i = 0; i < n; ++i)
        {
            values[i] = loadLittle<double>(data + 8 * i);
        }
        break;
    case OnnxDataType::kInt64:
        for (std::size_t i = 0; i < n; ++i)
        {
            values[i] = static_cast<double>(loadLittle<std::int64_t>(data + 8 * i));
        }
        break;
    case OnnxDataType::kUint64:
        for (std::size_t i = 0; i < n; ++i)
        {
            values[i] = static_cast<double>(loadLittle<std::uint64_t>(data + 8 * i));
        }
        break;
    case OnnxDataType::kInt32:
        for (std::size_t i = 0; i < n; ++i)
        {
            values[i] = loadLittle<std::int32_t>(data + 4 * i);
        }
        break;
    case OnnxDataType::kUint32:
        for (std::size_t i = 0; i < n; ++i)
        {
            values[i] = loadLittle<std::uint32_t>(data + 4 * i);
        }
        break;
    case OnnxDataType::kInt8:
        for (std::size_t i = 0; i < n; ++i)
        {
            values[i] = static_cast<std::int8_t>(data[i]);
        }
        break;
    case OnnxDataType::kUint8:
        for (std::size_t i = 0; i < n; ++i)
        {
            values[i] = static_cast<std::uint8_t>(data[i]);
        }
        break;
    default:
    {
        const int size = rawElementBytes(dataType);
        for (std::size_t i = 0; i < n; ++i)
        {
            std::uint64_t bits = 0;
            std::memcpy(&bits, data + static_cast<std::size_t>(size) * i, static_cast<std::size_t>(size));
            values[i] = bitsValue(dataType, bits);
        }
        break;
    }
    }
    return {};
}

bool readVarint(std::string_view payload, std::size_t& pos, std::uint64_t& value)
{
    value = 0;
    for (int shift = 0; shift < 70 && pos < payload.size(); shift += 7)
    {
        auto byte = static_cast<std::uint8_t>(payload[pos++]);
        value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
        if ((byte & 0x80) == 0)
        {
            return true;
        }
    }
    return false;
}

std::string decodeVarints(int dataType, int field, std::string_view payload, std::int64_t count,
                          std::vector<double>& values)
{
    std::vector<std::uint64_t> raw;
    raw.reserve(static_cast<std::size_t>(std::min<std::int64_t>(count, 1 << 20)));
    for (std::size_t pos = 0; pos < payload.size();)
    {
        std::uint64_t value = 0;
        if (!readVarint(payload, pos, value))
        {
            return "malformed varint in packed data";
        }
        raw.push_back(value);
    }
    const auto n = static_cast<std::size_t>(count);
    if (field == kFieldInt32Data && isPacked4(dataType) && raw.size() == (n + 1) / 2 && raw.size() != n)
    {
        // Two 4-bit elements per int32_data entry (low nibble first).
        values.resize(n);
        for (std::size_t i = 0; i < n; ++i)
        {
            auto byte = static_cast<std::uint8_t>(raw[i / 2]);
            values[i] = nibbleValue(dataType, (i % 2) != 0 ? static_cast<std::uint8_t>(byte >> 4)
                                                           : static_cast<std::uint8_t>(byte & 0x0F));
        }
        return {};
    }
    if (raw.size() != n)
    {
        return "holds " + std::to_string(raw.size()) + " values, expected " + std::to_string(n);
    }
    values.resize(n);
    for (std::size_t i = 0; i < n; ++i)
    {
        if (field == kFieldInt32Data)
        {
            if (isPacked4(dataType))
            {
                values[i] = nibbleValue(dataType, static_cast<std::uint8_t>(raw[i] & 0x0F));
            }
            else
            {
                values[i] = bitsValue(dataType, static_cast<std::uint32_t>(raw[i]));
            }
        }
        else if (field == kFieldInt64Data)
        {
            values[i] = static_cast<double>(static_cast<std::int64_t>(raw[i]));
        }
        else
        {
            values[i] = static_cast<double>(raw[i]);
        }
    }
    return {};
}
} // namespace

int rawElementBytes(int dataType)
{
    switch (static_cast<OnnxDataType>(dataType))
    {
    case OnnxDataType::kFloat:
    case OnnxDataType::kInt32:
    case OnnxDataType::kUint32:
        return 4;
    case OnnxDataType::kDouble:
    case OnnxDataType::kInt64:
    case OnnxDataType::kUint64:
        return 8;
    case OnnxDataType::kUint16:
    case OnnxDataType::kInt16:
    case OnnxDataType::kFloat16:
    case OnnxDataType::kBfloat16:
        return 2;
    case OnnxDataType::kUint8:
    case OnnxDataType::kInt8:
    case OnnxDataType::kBool:
    case OnnxDataType::kFloat8E4M3FN:
    case OnnxDataType::kFloat8E4M3FNUZ:
    case OnnxDataType::kFloat8E5M2:
    case OnnxDataType::kFloat8E5M2FNUZ:
        return 1;
    case OnnxDataType::kUint4:
    case OnnxDataType::kInt4:
    case OnnxDataType::kFloat4E2M1:
        return 0;
    default:
        return -1;
    }
}

std::int64_t expectedRawBytes(int dataType, std::int64_t elementCount)
{
    const int size = rawElementBytes(dataType);
    if (size < 0 || elementCount < 0)
    {
        return -1;
    }
    if (size == 0)
    {
        return (elementCount + 1) / 2;
    }
    if (elementCount > std::numeric_limits<std::int64_t>::max() / size)
    {
        return -1;
    }
    return elementCount * size;
}

std::string decodeTensorPayload(int dataType, int field, std::string_view payload, std::int64_t elementCount,
                                std::vector<double>& values)
{
    values.clear();
    if (rawElementBytes(dataType) < 0)
    {
        return "data type " + std::string(onnxDataTypeName(static_cast<OnnxDataType>(dataType))) + " is not decoded";
    }
    switch (field)
    {
    case kFieldRawData:
        return decodeRaw(dataType, payload, elementCount, values);
    case kFieldFloatData:
    case kFieldDoubleData:
    {
        const std::size_t width = field == kFieldFloatData ? 4 : 8;
        if (payload.size() % width != 0 || payload.size() / width != static_cast<std::uint64_t>(elementCount))
        {
            return std::string(field == kFieldFloatData ? "float_data" : "double_data") + " holds " +
                   std::to_string(payload.size() / width) + " values, expected " + std::to_string(elementCount);
        }
        values.resize(static_cast<std::size_t>(elementCount));
        for (std::size_t i = 0; i < values.size(); ++i)
        {
            values[i] = width == 4 ? static_cast<double>(loadLittle<float>(payload.data() + 4 * i))
                                   : loadLittle<double>(payload.data() + 8 * i);
        }
        return {};
    }
    case kFieldInt32Data:
    case kFieldInt64Data:
    case kFieldUint64Data:
        return decodeVarints(dataType, field, payload, elementCount, values);
    default:
        return "no data";
    }
}

double halfToDouble(std::uint16_t bits)
{
    const int sign = (bits >> 15) & 1;
    const int exponent = (bits >> 10) & 0x1F;
    const int mantissa = bits & 0x3FF;
    double value = 0.0;
    if (exponent == 0)
    {
        value = std::ldexp(static_cast<double>(mantissa), -24);
    }
    else if (exponent == 0x1F)
    {
        value = mantissa == 0 ? kInf : kNaN;
    }
    else
    {
        value = std::ldexp(static_cast<double>(mantissa | 0x400), exponent - 25);
    }
    return sign != 0 ? -value : value;
}

double bfloat16ToDouble(std::uint16_t bits)
{
    const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
    float value = 0.0F;
    std::memcpy(&value, &wide, sizeof(value));
    return value;
}

double float8ToDouble(int dataType, std::uint8_t bits)
{
    const auto type = static_cast<OnnxDataType>(dataType);
    const bool isE4M3 = type == OnnxDataType::kFloat8E4M3FN || type == OnnxDataType::kFloat8E4M3FNUZ;
    const bool isUz = type == OnnxDataType::kFloat8E4M3FNUZ || type == OnnxDataType::kFloat8E5M2FNUZ;
    if (isUz && bits == 0x80)
    {
        return kNaN;
    }
    const int sign = bits >> 7;
    const int mantissaBits = isE4M3 ? 3 : 2;
    const int exponent = (bits & 0x7F) >> mantissaBits;
    const int mantissa = bits & ((1 << mantissaBits) - 1);
    const int bias = (isE4M3 ? 7 : 15) + (isUz ? 1 : 0);
    double value = 0.0;
    if (type == OnnxDataType::kFloat8E4M3FN && exponent == 0xF && mantissa == 7)
    {
        return kNaN;
    }
    if (type == OnnxDataType::kFloat8E5M2 && exponent == 0x1F)
    {
        value = mantissa == 0 ? kInf : kNaN;
        return sign != 0 ? -value : value;
    }
    if (exponent == 0)
    {
        value = std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissaBits);
    }
    else
    {
        value = std::ldexp(static_cast<double>(mantissa | (1 << mantissaBits)), exponent - bias - mantissaBits);
    }
    return sign != 0 ? -value : value;
}

double float4e2m1ToDouble(std::uint8_t nibble)
{
    const int sign = (nibble >> 3) & 1;
    const int exponent = (nibble >> 1) & 3;
    const int mantissa = nibble & 1;
    const double value = exponent == 0 ? 0.5 * mantissa : std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
    return sign != 0 ? -value : value;
}

} // namespace qdq::onnx_detail
