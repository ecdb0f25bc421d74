// Per-inference timing JSON (trtexec --exportTimes): an array of {"startEnqMs", ..., "computeMs", "d2hMs",
// "latencyMs"} records, no leading count element. Summarized: record count, mean and median computeMs, mean latencyMs.
#include "parsers/file_source.h"
#include "parsers/json_pull.h"
#include "qdq/readers.h"

#include <algorithm>

namespace qdq
{

namespace
{
using json::PullParser;
using json::Token;

constexpr std::string_view kWhat = "a timing JSON (trtexec --exportTimes)";

ReaderWarning fileWarning(const std::string& path, std::string message)
{
    SourceLocation where;
    where.path = path;
    return ReaderWarning{where, std::move(message)};
}

//! The values gathered from the records, and the records that lack one.
struct TimingSums
{
    std::vector<double> compute;
    double latencySum = 0.0;
    std::size_t latencyCount = 0;
    std::size_t missingCompute = 0;
    std::size_t missingLatency = 0;
    std::size_t firstMissingLine = 0;
};

//! Reads the members of one record, after its '{'.
void readTimingRecord(PullParser& parser, TimingSummary& summary, TimingSums& sums, std::size_t start)
{
    bool hasCompute = false;
    bool hasLatency = false;
    for (Token member = parser.next(); member != Token::kObjectEnd; member = parser.next())
    {
        std::string_view key = parser.text();
        bool isCompute = key == "computeMs";
        bool isLatency = key == "latencyMs";
        Token value = parser.next();
        if (!isCompute && !isLatency)
        {
            parser.skipValue(value);
            continue;
        }
        if (value != Token::kNumber)
        {
            summary.warnings.push_back(
                parser.warningAt(parser.tokenOffset(), std::string(isCompute ? "\"computeMs\"" : "\"latencyMs\"") +
                                                           " is not a number; ignored"));
            parser.skipValue(value);
            continue;
        }
        double number = parser.numberValue();
        if (isCompute && !hasCompute)
        {
            sums.compute.push_back(number);
            hasCompute = true;
        }
        else if (isLatency && !hasLatency)
        {
            sums.latencySum += number;
            ++sums.latencyCount;
            hasLatency = true;
        }
    }
    ++summary.records;
    if (!hasCompute || !hasLatency)
    {
        sums.missingCompute += hasCompute ? 0 : 1;
        sums.missingLatency += hasLatency ? 0 : 1;
        if (sums.firstMissingLine == 0)
        {
            sums.firstMissingLine = start + 1;
        }
    }
}

//! Mean and median of the compute times (reordered).
void summarizeCompute(std::vector<double>& compute, TimingSummary& summary)
{
    double sum = 0.0;
    for (double value : compute)
    {
        sum += value;
    }
    summary.meanComputeMs = sum / static_cast<double>(compute.size());
    std::size_t middle = compute.size() / 2;
    std::nth_element(compute.begin(), compute.begin() + static_cast<long>(middle), compute.end());
    double upper = compute[middle];
    if (compute.size() % 2 == 0)
    {
        double lower = *std::max_element(compute.begin(), compute.begin() + static_cast<long>(middle));
        summary.medianComputeMs = (lower + upper) / 2.0;
    }
    else
    {
        summary.medianComputeMs = upper;
    }
}

void finishTiming(PullParser& parser, TimingSummary& summary, TimingSums& sums, const std::string& path)
{
    if (summary.records > 0 && sums.compute.empty() && sums.latencyCount == 0)
    {
        parser.fail(0, "no record has \"computeMs\" or \"latencyMs\": not " + std::string(kWhat));
    }
    if (sums.missingCompute > 0 || sums.missingLatency > 0)
    {
        summary.warnings.push_back(
            parser.warningAt(sums.firstMissingLine - 1,
                             std::to_string(sums.missingCompute) + " records lack \"computeMs\" and " +
                                 std::to_string(sums.missingLatency) + " lack \"latencyMs\" (first one here)"));
    }
    if (summary.records == 0)
    {
        summary.warnings.push_back(fileWarning(path, "the timing JSON has no records"));
    }
    if (!sums.compute.empty())
    {
        summarizeCompute(sums.compute, summary);
    }
    if (sums.latencyCount > 0)
    {
        summary.meanLatencyMs = sums.latencySum / static_cast<double>(sums.latencyCount);
    }
}

TimingSummary readTimingText(std::string_view text, const std::string& path, const Limits& limits)
{
    json::requireJsonStart(text, path, "[{", kWhat, limits);
    PullParser parser(text, path, limits);
    parser.seek(json::firstContentOffset(text)); // after a byte order mark
    TimingSummary summary;
    summary.sourcePath = path;

    Token first = parser.next();
    if (first != Token::kArrayBegin)
    {
        parser.fail(parser.tokenOffset(), "expected a JSON array of per-inference records (trtexec --exportTimes), "
                                          "found an object");
    }
    TimingSums sums;
    for (Token token = parser.next(); token != Token::kArrayEnd; token = parser.next())
    {
        std::size_t start = parser.tokenOffset();
        if (token != Token::kObjectBegin)
        {
            summary.warnings.push_back(parser.warningAt(start, "a timing element is " +
                                                                   std::string(json::tokenDescription(token)) +
                                                                   ", not an object; skipped"));
            parser.skipValue(token);
            continue;
        }
        readTimingRecord(parser, summary, sums, start);
    }
    parser.next(); // kEnd
    parser.expectEndOfInput();
    parser.checkAllLines();
    finishTiming(parser, summary, sums, path);
    return summary;
}
} // namespace

TimingSummary readTiming(const std::string& path, const Limits& limits)
{
    MappedFile file(path, limits);
    return readTimingText(file.bytes(), path, limits);
}

} // namespace qdq
