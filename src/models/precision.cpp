#include "qdq/precision.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace qdq
{

namespace
{
bool containsWord(const std::string& haystack, std::string_view needle)
{
    return haystack.find(needle) != std::string::npos;
}
} // namespace

Precision precisionFromFormat(std::string_view format)
{
    std::string lower(format);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    // Order matters: "bf16" before "fp16"/"16"; "uint8" before "int8"; "fp8" before "int8" is irrelevant.
    if (containsWord(lower, "n/a"))
    {
        return Precision::kUnknown;
    }
    if (containsWord(lower, "bf16") || containsWord(lower, "bfloat16"))
    {
        return Precision::kBF16;
    }
    if (containsWord(lower, "fp16") || containsWord(lower, "half") || containsWord(lower, "float16"))
    {
        return Precision::kFP16;
    }
    if (containsWord(lower, "fp32") || containsWord(lower, "float"))
    {
        return Precision::kFP32;
    }
    if (containsWord(lower, "fp8") || containsWord(lower, "e4m3") || containsWord(lower, "e5m2"))
    {
        return Precision::kFP8;
    }
    if (containsWord(lower, "fp4") || containsWord(lower, "e2m1"))
    {
        return Precision::kFP4;
    }
    if (containsWord(lower, "uint8"))
    {
        return Precision::kUINT8;
    }
    if (containsWord(lower, "int8"))
    {
        return Precision::kINT8;
    }
    if (containsWord(lower, "int4"))
    {
        return Precision::kINT4;
    }
    if (containsWord(lower, "int32"))
    {
        return Precision::kINT32;
    }
    if (containsWord(lower, "int64"))
    {
        return Precision::kINT64;
    }
    if (containsWord(lower, "bool"))
    {
        return Precision::kBool;
    }
    return Precision::kUnknown;
}

std::string_view precisionName(Precision precision)
{
    switch (precision)
    {
    case Precision::kFP32:
        return "FP32";
    case Precision::kFP16:
        return "FP16";
    case Precision::kBF16:
        return "BF16";
    case Precision::kFP8:
        return "FP8";
    case Precision::kINT8:
        return "INT8";
    case Precision::kUINT8:
        return "UINT8";
    case Precision::kINT4:
        return "INT4";
    case Precision::kFP4:
        return "FP4";
    case Precision::kINT32:
        return "INT32";
    case Precision::kINT64:
        return "INT64";
    case Precision::kBool:
        return "BOOL";
    case Precision::kUnknown:
        break;
    }
    return "unknown";
}

bool isQuantized(Precision precision)
{
    return precision == Precision::kINT8 || precision == Precision::kUINT8 || precision == Precision::kINT4 ||
           precision == Precision::kFP8 || precision == Precision::kFP4;
}

bool isFloat(Precision precision)
{
    return precision == Precision::kFP32 || precision == Precision::kFP16 || precision == Precision::kBF16;
}

} // namespace qdq
