// Tensor precisions as TensorRT prints them, normalized.
#pragma once

#include <string_view>

namespace qdq
{

enum class Precision
{
    kUnknown,
    kFP32,
    kFP16,
    kBF16,
    kFP8,
    kINT8,
    kUINT8,
    kINT4,
    kFP4,
    kINT32,
    kINT64,
    kBool,
};

//! Decides precision from a layer-info `Format/Datatype` string, long or short form ("Row major linear FP32",
//! "Thirty-two wide channel vectorized row major Int8 format", "Half", "Float", "Int8", "BF16", "FP8", "Bool"),
//! or from a log tensor type ("Int8", "Float", "Half"). Unknown strings (e.g. "N/A due to dynamic shapes") give
//! kUnknown.
Precision precisionFromFormat(std::string_view format);

//! Short canonical name: "FP32", "FP16", "BF16", "FP8", "INT8", "UINT8", "INT4", "FP4", "INT32", "INT64", "BOOL",
//! "unknown".
std::string_view precisionName(Precision precision);

//! True for INT8/UINT8/INT4/FP8/FP4: the quantized types.
bool isQuantized(Precision precision);

//! True for FP32/FP16/BF16.
bool isFloat(Precision precision);

} // namespace qdq
