// The build mode (SimulationOptions, resolveBuildMode) as the JSON object every JSON-bearing report carries.
#pragma once

#include "qdq/analysis.h"
#include "src/reporters/json_writer.h"

#include <string>

namespace qdq
{

//! The TensorRT version as "10.16", or empty while unknown.
inline std::string buildModeVersion(const SimulationOptions& mode)
{
    return mode.trtMajor == 0 ? std::string() : std::to_string(mode.trtMajor) + "." + std::to_string(mode.trtMinor);
}

//! {"trt_version", "version_source", "typing", "typing_source", "typing_assumed", "precision_flags", "summary"}.
inline void writeBuildModeJson(JsonWriter& json, const SimulationOptions& mode)
{
    json.beginObject().key("trt_version");
    const std::string version = buildModeVersion(mode);
    version.empty() ? json.null() : json.value(version);
    json.key("version_source");
    mode.versionSource.empty() ? json.null() : json.value(mode.versionSource);
    json.member("typing", mode.stronglyTyped() ? "strong" : "weak").member("typing_source", mode.typingSource);
    json.key("typing_assumed").value(mode.typingAssumed);
    json.key("precision_flags").beginArray();
    if (!mode.stronglyTyped())
    {
        if (mode.int8)
        {
            json.value("--int8");
        }
        if (mode.fp16)
        {
            json.value("--fp16");
        }
    }
    json.endArray();
    json.member("summary", describeBuildMode(mode));
    json.endObject();
}

} // namespace qdq
