// Decoding of ONNX tensor payloads (raw_data and the typed repeated fields) into doubles.
// Internal to parsers/.
#pragma once

#include "qdq/onnx_graph.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qdq::onnx_detail
{

//! TensorProto field numbers that carry data.
enum TensorDataField : int
{
    kFieldNone = 0,
    kFieldFloatData = 4,
    kFieldInt32Data = 5,
    kFieldInt64Data = 7,
    kFieldRawData = 9,
    kFieldDoubleData = 10,
    kFieldUint64Data = 11,
};

//! Bytes one element takes in raw_data; 0 for 4-bit packed types; -1 for types that are not decoded (string,
//! complex, unknown).
int rawElementBytes(int dataType);

//! Bytes raw_data must hold for elementCount elements of dataType, or -1 when the type is not decoded.
std::int64_t expectedRawBytes(int dataType, std::int64_t elementCount);

//! Decodes the payload of one data field (packed encoding for the repeated fields, as stored on the wire) into
//! values. Returns an empty string on success, otherwise why the data could not be decoded.
std::string decodeTensorPayload(int dataType, int field, std::string_view payload, std::int64_t elementCount,
                                std::vector<double>& values);

double halfToDouble(std::uint16_t bits);
double bfloat16ToDouble(std::uint16_t bits);
double float8ToDouble(int dataType, std::uint8_t bits);
double float4e2m1ToDouble(std::uint8_t nibble);

} // namespace qdq::onnx_detail
