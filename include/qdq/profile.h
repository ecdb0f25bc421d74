// Per-layer timings: trtexec --exportProfile JSON, or the --dumpProfile table of a build/run log.
#pragma once

#include "qdq/diagnostics.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qdq
{

struct ProfileEntry
{
    std::string name;
    double timeMs = 0.0;    //!< total over all iterations
    double averageMs = 0.0; //!< per iteration
    std::optional<double> medianMs;
    std::optional<double> percentage;
    std::uint64_t line = 0;
};

struct Profile
{
    std::string sourcePath;
    std::optional<std::int64_t> iterations; //!< the leading {"count": N}, or "=== Profile (N iterations ) ==="
    bool hasMedian = false;
    std::vector<ProfileEntry> entries;
    std::vector<ReaderWarning> warnings;

    //! Sum of averageMs over all entries (a "Total" row of a log table is not an entry).
    double totalAverageMs() const;
};

//! Summary of trtexec --exportTimes JSON: per-inference records.
struct TimingSummary
{
    std::string sourcePath;
    std::size_t records = 0;
    double meanComputeMs = 0.0;
    double medianComputeMs = 0.0;
    double meanLatencyMs = 0.0;
    std::vector<ReaderWarning> warnings;
};

//! TREx helper JSON (build/profile/device metadata). Not produced by trtexec; kept as flat "a.b.c" -> value.
struct MetadataDocument
{
    std::string sourcePath;
    std::string variant; //!< "build-metadata", "profile-metadata", "device-metadata"
    std::vector<std::pair<std::string, std::string>> fields;
    std::vector<ReaderWarning> warnings;
};

} // namespace qdq
