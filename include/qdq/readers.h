// Entry points of the four readers (plus the timing and TREx-metadata JSON readers) and content-based kind
// detection. Every function throws InputError (with file and line or byte offset) for unreadable input.
#pragma once

#include "qdq/build_log.h"
#include "qdq/engine_plan.h"
#include "qdq/limits.h"
#include "qdq/onnx_graph.h"
#include "qdq/profile.h"

#include <string>
#include <string_view>

namespace qdq
{

enum class InputKind
{
    kUnknown,
    kOnnx,
    kLayerInfo,
    kProfile,
    kBuildLog,
    kTiming,
    kMetadata,
    kCalibrationCache, //!< an implicit-INT8 calibration cache or a per-tensor dynamic-range file
};

//! "onnx", "layer-info", "profile", "build-log", "timing", "metadata", "calibration-cache", "unknown".
std::string_view inputKindName(InputKind kind);

//! Decides a file's kind from its first bytes (never from its name). Throws InputError when the file cannot be
//! opened or its content matches no kind; the message says what was seen.
InputKind detectInputKind(const std::string& path);

//! Same, on a buffer holding the beginning of a file (used by the fuzzers and tests).
InputKind detectInputKindFromPrefix(std::string_view prefix, const std::string& pathForMessages);

//! True when the file is a serialized TensorRT engine: it starts with the "ptrt" or "ftrt" tag (after Ultralytics'
//! JSON metadata, too), or it is binary, not ONNX, and named .engine, .plan or .trt. qdq-doctor does not read
//! engines; detectInputKind() refuses them with engineExportCommand() in the message.
bool isSerializedEngine(const std::string& path);

//! The trtexec command that exports from a serialized engine the layer-info and profile JSON qdq-doctor reads.
std::string engineExportCommand(const std::string& enginePath);

OnnxGraph readOnnx(const std::string& path, const OnnxReadOptions& options = {}, const Limits& limits = {});
OnnxGraph readOnnxFromBuffer(std::string_view bytes, const std::string& pathForMessages,
                             const OnnxReadOptions& options = {}, const Limits& limits = {});

EnginePlan readLayerInfo(const std::string& path, const Limits& limits = {});
EnginePlan readLayerInfoFromBuffer(std::string_view text, const std::string& pathForMessages,
                                   const Limits& limits = {});

Profile readProfile(const std::string& path, const Limits& limits = {});
Profile readProfileFromBuffer(std::string_view text, const std::string& pathForMessages, const Limits& limits = {});

BuildLog readBuildLog(const std::string& path, const ProgressCallback& progress = {}, const Limits& limits = {});
BuildLog readBuildLogFromBuffer(std::string_view text, const std::string& pathForMessages, const Limits& limits = {});

TimingSummary readTiming(const std::string& path, const Limits& limits = {});
MetadataDocument readMetadata(const std::string& path, const Limits& limits = {});

} // namespace qdq
