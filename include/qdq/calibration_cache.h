// TensorRT's implicit-INT8 calibration caches and per-tensor dynamic-range files, read as one input kind: the scale
// TensorRT gave each tensor of an implicitly quantized build (docs/calibration-cache.md). `fix --calibration-cache`
// turns them into the Q/DQ model of an explicitly quantized build.
#pragma once

#include "qdq/diagnostics.h"
#include "qdq/limits.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

//! One tensor's scale, as the file gives it.
struct CalibrationScale
{
    std::string tensor; //!< the network's tensor name (an ONNX tensor, or a TensorRT-internal one)
    float scale = 0.0f; //!< the INT8 scale: amax / 127
    std::uint64_t line = 0;
    //! A cache's IEEE-754 bits, written back bit-exact; a dynamic-range file's amax / 127 rounded to float.
    std::uint32_t bits = 0;
};

struct CalibrationCache
{
    enum class Format
    {
        kCache,        //!< "TRT-<version>-<algorithm>" then "<tensor>: <8 hex digits>" lines
        kDynamicRange, //!< "<tensor>: <decimal amax>" lines (TensorRT's sampleINT8API --ranges file)
    };
    std::string sourcePath;
    Format format = Format::kCache;
    std::string header;    //!< the cache's first line ("TRT-8401-EntropyCalibration2"); empty for a range file
    std::string algorithm; //!< "EntropyCalibration2", "EntropyCalibration", "MinMaxCalibration", "LegacyCalibration"
    //! The TensorRT version the header encodes: "8.4.1" from 8401 (major x 1000 + minor x 100 + patch, before 10),
    //! "10.10.0" from 101000 (major x 10000 + minor x 100 + patch, from 10). Empty for a range file.
    std::string version;
    std::vector<CalibrationScale> scales; //!< in file order, one per tensor
    std::vector<ReaderWarning> warnings;

    //! The entry of a tensor, or nullptr.
    const CalibrationScale* find(std::string_view tensor) const;
};

//! The version a cache header's number encodes ("8.4.1" for 8401, "10.10.0" for 101000), or nullopt when the number
//! encodes none (a major TensorRT never had, a minor or patch past 99).
std::optional<std::string> calibrationCacheVersion(std::uint64_t encoded);

//! Whether text starts like a calibration cache or a dynamic-range file (for kind detection).
bool looksLikeCalibrationCache(std::string_view prefix);

//! Reads a cache or a range file. Throws InputError naming the file and line for a bad header, a line that is not
//! "<tensor>: <value>", bad hex, a scale or range that is not a positive finite number, or a tensor given twice.
CalibrationCache readCalibrationCache(const std::string& path, const Limits& limits = {});
CalibrationCache readCalibrationCacheFromBuffer(std::string_view text, const std::string& pathForMessages,
                                                const Limits& limits = {});

} // namespace qdq
