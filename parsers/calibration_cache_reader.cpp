// Reads TensorRT's implicit-INT8 calibration caches and per-tensor dynamic-range files
// (include/qdq/calibration_cache.h, docs/calibration-cache.md). A cache is what IInt8Calibrator::writeCalibrationCache
// stored: a header line "TRT-<version>-<algorithm>", then "<tensor>: <hex>" with the float32 bits of the tensor's scale
// (the real caches in
// ../shared/calibration; the verbose log of a build that read one prints the same values as "INT8 Inference Tensor
// scales"). A range file is what TensorRT's sampleINT8API reads with --ranges: "<tensor>: <amax>" per line.
#include "parsers/file_source.h"
#include "qdq/calibration_cache.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace qdq
{
namespace
{

constexpr std::string_view kKnownAlgorithms[] = {"EntropyCalibration2", "EntropyCalibration", "MinMaxCalibration",
                                                 "LegacyCalibration"};

std::string_view trimmed(std::string_view text)
{
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    {
        text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    {
        text.remove_suffix(1);
    }
    return text;
}

bool allDigits(std::string_view text)
{
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

class CacheParser
{
public:
    CacheParser(std::string_view text, const std::string& path, const Limits& limits) : mText(text), mLimits(limits)
    {
        mCache.sourcePath = path;
    }

    CalibrationCache run()
    {
        std::uint64_t lineNumber = 0;
        std::size_t position = 0;
        while (position < mText.size())
        {
            const std::size_t end = std::min(mText.find('\n', position), mText.size());
            ++lineNumber;
            if (end - position > mLimits.maxLineBytes)
            {
                fail(lineNumber, "line longer than --max-line-mb");
            }
            line(trimmed(mText.substr(position, end - position)), lineNumber);
            position = end + 1;
        }
        if (lineNumber == 0 || (mCache.format == CalibrationCache::Format::kCache && mCache.header.empty()))
        {
            fail(1, "empty: neither a TensorRT calibration cache (\"TRT-<version>-<algorithm>\" then "
                    "\"<tensor>: <hex>\" lines) nor a dynamic-range file (\"<tensor>: <amax>\" lines)");
        }
        if (mCache.scales.empty())
        {
            mCache.warnings.push_back({SourceLocation{mCache.sourcePath, 1}, "the file holds no tensor scale"});
        }
        return std::move(mCache);
    }

private:
    std::string_view mText;
    const Limits& mLimits;
    CalibrationCache mCache;
    bool mFirst = true;
    std::unordered_map<std::string, std::uint64_t> mLineOf;

    [[noreturn]] void fail(std::uint64_t line, const std::string& message) const
    {
        throw InputError(SourceLocation{mCache.sourcePath, line}, message);
    }

    void line(std::string_view text, std::uint64_t number)
    {
        if (mFirst)
        {
            mFirst = false;
            if (text.rfind("TRT-", 0) == 0)
            {
                header(text, number);
                return;
            }
            if (text.find(':') == std::string_view::npos)
            {
                fail(number,
                     "not a TensorRT calibration cache: the first line is not \"TRT-<version>-<algorithm>\" "
                     "(e.g. TRT-8401-EntropyCalibration2) and not \"<tensor>: <amax>\" of a dynamic-range file");
            }
            mCache.format = CalibrationCache::Format::kDynamicRange;
        }
        if (text.empty())
        {
            return;
        }
        entry(text, number);
    }

    void header(std::string_view text, std::uint64_t number)
    {
        const std::size_t dash = text.find('-', 4);
        const std::string_view encoded = text.substr(4, dash == std::string_view::npos ? text.size() : dash - 4);
        if (dash == std::string_view::npos || !allDigits(encoded) || encoded.size() > 9 || dash + 1 >= text.size())
        {
            fail(number, "bad calibration cache header \"" + printable(text, 128) +
                             "\": expected \"TRT-<version number>-<algorithm>\", e.g. TRT-8401-EntropyCalibration2");
        }
        mCache.header = std::string(text);
        mCache.algorithm = std::string(text.substr(dash + 1));
        std::uint64_t value = 0;
        std::from_chars(encoded.data(), encoded.data() + encoded.size(), value);
        if (auto version = calibrationCacheVersion(value))
        {
            mCache.version = *version;
        }
        else
        {
            mCache.warnings.push_back({SourceLocation{mCache.sourcePath, number},
                                       "the header's version " + std::string(encoded) +
                                           " encodes no TensorRT release (major x 1000 + minor x 100 + patch before "
                                           "10, major x 10000 + minor x 100 + patch from 10)"});
        }
        bool known = false;
        for (std::string_view algorithm : kKnownAlgorithms)
        {
            known = known || mCache.algorithm == algorithm;
        }
        if (!known)
        {
            mCache.warnings.push_back({SourceLocation{mCache.sourcePath, number},
                                       "unknown calibration algorithm \"" + printable(mCache.algorithm, 64) +
                                           "\" (TensorRT writes EntropyCalibration2, EntropyCalibration, "
                                           "MinMaxCalibration or LegacyCalibration); its scales are read as they are"});
        }
    }

    //! "<tensor>: <value>": the tensor name may hold ':' itself (tf2onnx's "Conv__54:0"), so the value follows the
    //! last ": ".
    void entry(std::string_view text, std::uint64_t number)
    {
        const std::size_t colon = text.rfind(':');
        if (colon == std::string_view::npos || colon == 0)
        {
            fail(number, "expected \"<tensor>: <value>\", got \"" + printable(text, 128) + "\"");
        }
        const std::string tensor(trimmed(text.substr(0, colon)));
        const std::string_view value = trimmed(text.substr(colon + 1));
        CalibrationScale scale;
        scale.tensor = tensor;
        scale.line = number;
        if (mCache.format == CalibrationCache::Format::kCache)
        {
            scale.bits = hexBits(value, tensor, number);
            std::memcpy(&scale.scale, &scale.bits, sizeof(float));
            checkPositive(scale.scale, value, tensor, number, "scale");
        }
        else
        {
            const double amax = decimal(value, tensor, number);
            checkPositive(amax, value, tensor, number, "dynamic range");
            scale.scale = static_cast<float>(amax / 127.0);
            std::memcpy(&scale.bits, &scale.scale, sizeof(float));
        }
        if (const auto [it, inserted] = mLineOf.emplace(tensor, number); !inserted)
        {
            fail(number, "tensor \"" + printable(tensor, 128) + "\" is given twice (first at line " +
                             std::to_string(it->second) + ")");
        }
        mCache.scales.push_back(std::move(scale));
    }

    std::uint32_t hexBits(std::string_view value, const std::string& tensor, std::uint64_t number) const
    {
        std::uint32_t bits = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), bits, 16);
        if (value.empty() || value.size() > 8 || error != std::errc() || end != value.data() + value.size())
        {
            fail(number, "the scale of \"" + printable(tensor, 128) + "\" is \"" + printable(value, 32) +
                             "\": a cache gives the float32 bits of a scale as at most 8 hex digits");
        }
        return bits;
    }

    double decimal(std::string_view value, const std::string& tensor, std::uint64_t number) const
    {
        double result = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
        if (value.empty() || error != std::errc() || end != value.data() + value.size())
        {
            fail(number, "the dynamic range of \"" + printable(tensor, 128) + "\" is \"" + printable(value, 32) +
                             "\", not a number");
        }
        return result;
    }

    void checkPositive(double value, std::string_view text, const std::string& tensor, std::uint64_t number,
                       const char* what) const
    {
        if (!std::isfinite(value) || value <= 0.0 || !std::isfinite(value / 127.0))
        {
            char shown[48];
            std::snprintf(shown, sizeof(shown), "%g", value);
            fail(number, std::string("the ") + what + " of \"" + printable(tensor, 128) + "\" (" + printable(text, 32) +
                             " = " + shown + ") is not a positive finite number");
        }
    }
};

} // namespace

const CalibrationScale* CalibrationCache::find(std::string_view tensor) const
{
    for (const auto& scale : scales)
    {
        if (scale.tensor == tensor)
        {
            return &scale;
        }
    }
    return nullptr;
}

std::optional<std::string> calibrationCacheVersion(std::uint64_t encoded)
{
    std::uint64_t major = 0;
    std::uint64_t minor = 0;
    const std::uint64_t patch = encoded % 100;
    if (encoded >= 100000)
    {
        major = encoded / 10000;
        minor = (encoded / 100) % 100;
    }
    else
    {
        major = encoded / 1000;
        minor = (encoded / 100) % 10;
    }
    // Caches come from implicit-INT8 builds: TensorRT 5 to 10 (11 removed implicit INT8).
    const bool known = encoded >= 100000 ? (major == 10 || major == 11) : (major >= 5 && major <= 9);
    if (!known)
    {
        return std::nullopt;
    }
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

namespace
{

//! "<tensor>: <decimal number>", a dynamic-range file's line.
bool isRangeLine(std::string_view line)
{
    const std::size_t colon = line.rfind(':');
    if (colon == std::string_view::npos || colon == 0)
    {
        return false;
    }
    std::string value(line.substr(colon + 1));
    const std::size_t first = value.find_first_not_of(" \t\r");
    if (first == std::string::npos)
    {
        return false;
    }
    char* end = nullptr;
    const double amax = std::strtod(value.c_str() + first, &end);
    while (end != nullptr && (*end == ' ' || *end == '\t' || *end == '\r'))
    {
        ++end;
    }
    return end != nullptr && *end == '\0' && end != value.c_str() + first && std::isfinite(amax);
}

//! Every whole line of the prefix (the first 64) is a range line.
bool looksLikeRangeFile(std::string_view prefix)
{
    std::size_t lines = 0;
    for (std::size_t start = 0; start < prefix.size() && lines < 64;)
    {
        const std::size_t end = prefix.find('\n', start);
        if (end == std::string_view::npos && lines > 0)
        {
            break; // a line the prefix cut off
        }
        std::string_view line =
            prefix.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        start = end == std::string_view::npos ? prefix.size() : end + 1;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos)
        {
            continue;
        }
        if (!isRangeLine(line))
        {
            return false;
        }
        ++lines;
    }
    return lines > 0;
}

} // namespace

bool looksLikeCalibrationCache(std::string_view prefix)
{
    if (prefix.rfind("TRT-", 0) != 0)
    {
        return looksLikeRangeFile(prefix);
    }
    const std::size_t dash = prefix.find('-', 4);
    return dash != std::string_view::npos && dash > 4 && allDigits(prefix.substr(4, dash - 4));
}

CalibrationCache readCalibrationCache(const std::string& path, const Limits& limits)
{
    return readCalibrationCacheFromBuffer(readWholeFile(path, limits), path, limits);
}

CalibrationCache readCalibrationCacheFromBuffer(std::string_view text, const std::string& pathForMessages,
                                                const Limits& limits)
{
    return CacheParser(text, pathForMessages, limits).run();
}

} // namespace qdq
