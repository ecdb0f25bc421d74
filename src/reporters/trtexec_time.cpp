// trtexec's measured time beside the profile sum (trtexec_time.h).
#include "src/reporters/trtexec_time.h"

#include "qdq/patterns.h"
#include "qdq/readers.h"

#include <exception>
#include <filesystem>

namespace qdq
{

std::optional<TrtexecTime> trtexecTime(const Report& report)
{
    for (const auto& source : report.inputs)
    {
        if (source.kind != InputKind::kTiming)
        {
            continue;
        }
        TrtexecTime time;
        time.path = source.path;
        try
        {
            TimingSummary summary = readTiming(source.path);
            if (summary.records > 0)
            {
                time.summary = std::move(summary);
            }
            else
            {
                time.error = "no inference records";
            }
        }
        catch (const std::exception& error)
        {
            time.error = error.what();
        }
        return time; // the first timing file given
    }
    return std::nullopt;
}

void writeTrtexecTimeJson(JsonWriter& json, const Report& report, const Inputs& inputs)
{
    json.key("trtexec_time");
    const std::optional<TrtexecTime> time = trtexecTime(report);
    if (!time)
    {
        json.null();
        return;
    }
    json.beginObject().member("file", time->path);
    if (time->summary)
    {
        json.member("records", std::uint64_t{time->summary->records});
        json.member("mean_compute_ms", roundMs(time->summary->meanComputeMs));
        json.member("median_compute_ms", roundMs(time->summary->medianComputeMs));
        json.member("error", "");
    }
    else
    {
        json.member("records", std::uint64_t{0}).key("mean_compute_ms").null().key("median_compute_ms").null();
        json.member("error", time->error);
    }
    // The number it stands beside: the per-layer profile sum (time_ms.total) and its file.
    const Profile* profile = inputs.timings();
    if (report.hasTimings && profile != nullptr)
    {
        json.member("profile_total_ms", roundMs(report.totalMs)).member("profile_file", profile->sourcePath);
    }
    else
    {
        json.key("profile_total_ms").null().key("profile_file").null();
    }
    json.endObject();
}

std::string trtexecTimeText(const Report& report)
{
    return trtexecTimeText(report,
                           [](const std::string& path) { return std::filesystem::path(path).filename().string(); });
}

std::string trtexecTimeText(const Report& report, const std::function<std::string(const std::string&)>& shown)
{
    const std::optional<TrtexecTime> time = trtexecTime(report);
    if (!time)
    {
        return {};
    }
    const std::string file = shown(time->path);
    if (!time->summary)
    {
        return "trtexec timing " + file + " not read (" + time->error + ")";
    }
    return "trtexec GPU compute " + patterns::formatMs(time->summary->meanComputeMs) + " mean, " + file + ", " +
           std::to_string(time->summary->records) + " runs";
}

} // namespace qdq
