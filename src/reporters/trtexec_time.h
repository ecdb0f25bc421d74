// The engine's end-to-end time as trtexec measured it (--exportTimes JSON, "GPU Compute Time"), shown beside the
// per-layer profile sum so that a user can reconcile the two (docs/report-schema.md, `trtexec_time`).
#pragma once

#include "qdq/analysis.h"
#include "src/reporters/json_writer.h"

#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace qdq
{

//! The timing file among the report's inputs, summarized (readTiming), with its path; unset when none was given or
//! it cannot be read (the reason in error).
struct TrtexecTime
{
    std::string path;
    std::optional<TimingSummary> summary;
    std::string error;
};
std::optional<TrtexecTime> trtexecTime(const Report& report);

//! `"trtexec_time": {...}` or null.
void writeTrtexecTimeJson(JsonWriter& json, const Report& report, const Inputs& inputs);

//! ", trtexec GPU compute 0.882 ms mean per inference (file, N runs)" for the text report's Time: line; empty
//! without a timing file.
std::string trtexecTimeText(const Report& report);
//! The same with the timing file named as `shown` names it (the text report's short file names).
std::string trtexecTimeText(const Report& report, const std::function<std::string(const std::string&)>& shown);

} // namespace qdq
