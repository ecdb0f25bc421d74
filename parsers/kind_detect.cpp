// Decides what a file is from its content. File names lie (modelInformation.log is layer-info JSON; profiles are
// saved as .log, .txt or .json), so only bytes count.
#include "parsers/file_source.h"
#include "qdq/calibration_cache.h"
#include "qdq/readers.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>

namespace qdq
{

std::string_view inputKindName(InputKind kind)
{
    switch (kind)
    {
    case InputKind::kOnnx:
        return "onnx";
    case InputKind::kLayerInfo:
        return "layer-info";
    case InputKind::kProfile:
        return "profile";
    case InputKind::kBuildLog:
        return "build-log";
    case InputKind::kTiming:
        return "timing";
    case InputKind::kMetadata:
        return "metadata";
    case InputKind::kCalibrationCache:
        return "calibration-cache";
    case InputKind::kUnknown:
        break;
    }
    return "unknown";
}

namespace
{

constexpr std::size_t kDetectionPrefixBytes = 256 * 1024;

bool contains(std::string_view haystack, std::string_view needle)
{
    return haystack.find(needle) != std::string_view::npos;
}

std::string_view skipWhitespace(std::string_view text)
{
    std::size_t i = 0;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
    {
        ++i;
    }
    return text.substr(i);
}

//! Reads a protobuf varint; returns false when it runs past the buffer or exceeds 10 bytes.
bool readVarint(std::string_view bytes, std::size_t& position, std::uint64_t& value)
{
    value = 0;
    for (int shift = 0; shift < 70; shift += 7)
    {
        if (position >= bytes.size())
        {
            return false;
        }
        auto byte = static_cast<unsigned char>(bytes[position++]);
        value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
        if ((byte & 0x80) == 0)
        {
            return true;
        }
    }
    return false;
}

//! True when the prefix walks as a ModelProto: known field numbers with the right wire types. A prefix that ends
//! inside a field (large graphs) still counts when the fields seen so far are consistent and one is the graph.
bool looksLikeOnnx(std::string_view bytes, bool wholeFile)
{
    std::size_t position = 0;
    int fieldsSeen = 0;
    bool sawGraphOrIr = false;
    while (position < bytes.size())
    {
        std::uint64_t tag = 0;
        if (!readVarint(bytes, position, tag))
        {
            return !wholeFile && fieldsSeen > 0 && sawGraphOrIr;
        }
        std::uint64_t field = tag >> 3;
        std::uint64_t wireType = tag & 7;
        // ModelProto: 1 ir_version (varint), 2 producer_name, 3 producer_version, 4 domain (len), 5 model_version
        // (varint), 6 doc_string, 7 graph, 8 opset_import, 14 metadata_props, 20 training_info, 25 functions,
        // 26 configuration (all len).
        static constexpr std::array<std::uint64_t, 10> kLengthFields = {2, 3, 4, 6, 7, 8, 14, 20, 25, 26};
        bool isVarintField = field == 1 || field == 5;
        bool isLengthField = std::find(kLengthFields.begin(), kLengthFields.end(), field) != kLengthFields.end();
        if (isVarintField && wireType == 0)
        {
            std::uint64_t value = 0;
            if (!readVarint(bytes, position, value))
            {
                return !wholeFile && fieldsSeen > 0;
            }
            sawGraphOrIr = sawGraphOrIr || field == 1;
        }
        else if (isLengthField && wireType == 2)
        {
            std::uint64_t length = 0;
            if (!readVarint(bytes, position, length))
            {
                return !wholeFile && fieldsSeen > 0;
            }
            sawGraphOrIr = sawGraphOrIr || field == 7;
            if (length > bytes.size() - position)
            {
                // The field continues past what we hold: fine for a prefix, a truncation for a whole file (the
                // reader reports that with the byte offset).
                return sawGraphOrIr || !wholeFile;
            }
            position += length;
        }
        else
        {
            return false;
        }
        ++fieldsSeen;
    }
    return fieldsSeen > 0 && sawGraphOrIr;
}

bool looksBinary(std::string_view bytes)
{
    std::size_t sample = std::min<std::size_t>(bytes.size(), 4096);
    std::size_t control = 0;
    for (std::size_t i = 0; i < sample; ++i)
    {
        auto c = static_cast<unsigned char>(bytes[i]);
        if (c == 0)
        {
            return true;
        }
        if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != 0x1e && c != 0x1f && c != 0x1b)
        {
            ++control;
        }
    }
    return sample > 0 && control * 20 > sample;
}

//! True when "key" occurs as an object member name (followed by ':').
bool hasKey(std::string_view text, std::string_view key)
{
    std::string quoted = "\"" + std::string(key) + "\"";
    for (std::size_t at = text.find(quoted); at != std::string_view::npos; at = text.find(quoted, at + 1))
    {
        std::string_view after = skipWhitespace(text.substr(at + quoted.size()));
        if (!after.empty() && after.front() == ':')
        {
            return true;
        }
    }
    return false;
}

//! The first object of an array is an engine layer: a "Name" with a "LayerType", "Inputs" or "Outputs" (profile
//! records say "name", device metadata has no layer keys).
bool looksLikeLayerObject(std::string_view fromFirstObject)
{
    std::string_view start = fromFirstObject.substr(0, 16 * 1024);
    return hasKey(start, "LayerType") ||
           (hasKey(start, "Name") && (hasKey(start, "Inputs") || hasKey(start, "Outputs")));
}

InputKind classifyJson(std::string_view text)
{
    // Only the beginning is inspected: the markers sit in the first element / first keys.
    std::string_view head = text.substr(0, 64 * 1024);
    if (head.front() == '[')
    {
        std::string_view inner = skipWhitespace(head.substr(1));
        if (!inner.empty() && inner.front() == '{')
        {
            std::string_view firstElement =
                inner.substr(0, inner.find('}') == std::string_view::npos ? inner.size() : inner.find('}') + 1);
            if (contains(firstElement, "\"count\""))
            {
                return InputKind::kProfile;
            }
            if (contains(firstElement, "\"startEnqMs\"") || contains(firstElement, "\"latencyMs\"") ||
                contains(firstElement, "\"computeMs\""))
            {
                return InputKind::kTiming;
            }
            if (contains(firstElement, "\"averageMs\"") && contains(firstElement, "\"name\""))
            {
                return InputKind::kProfile;
            }
        }
        if (contains(head, "\"CUDA_VERSION\"") || contains(head, "\"ComputeCapability\""))
        {
            return InputKind::kMetadata;
        }
        if (!inner.empty() && inner.front() == '{' && looksLikeLayerObject(inner))
        {
            return InputKind::kLayerInfo; // a bare array of layer objects
        }
        if (contains(head, "\"startEnqMs\""))
        {
            return InputKind::kTiming;
        }
        if (contains(head, "\"averageMs\""))
        {
            return InputKind::kProfile;
        }
        return InputKind::kUnknown;
    }
    if (contains(head, "\"Layers\""))
    {
        return InputKind::kLayerInfo;
    }
    if (contains(head, "\"model_options\"") || contains(head, "\"build_options\"") ||
        contains(head, "\"performance_summary\"") || contains(head, "\"inference_options\"") ||
        contains(head, "\"device_information\""))
    {
        return InputKind::kMetadata;
    }
    if (hasKey(head, "layers") || hasKey(head, "LayerInfo"))
    {
        return InputKind::kLayerInfo; // the layer list under another writer's key
    }
    if (contains(head, "\"LayerType\"") && contains(head, "\"Name\""))
    {
        return InputKind::kLayerInfo; // a single inspector layer object
    }
    return InputKind::kUnknown;
}

//! "135.15  0.0093  0.0092  1.8  node_conv2d + node_relu": a row of trtexec's --dumpProfile table, pasted without the
//! table's title and header (a common excerpt in bug reports).
bool startsWithProfileRow(std::string_view text)
{
    const std::string_view line = text.substr(0, text.find('\n'));
    std::size_t numbers = 0;
    std::size_t at = 0;
    while (at < line.size())
    {
        while (at < line.size() && (line[at] == ' ' || line[at] == '\t'))
        {
            ++at;
        }
        std::size_t end = at;
        bool digits = false;
        while (end < line.size() && line[end] != ' ' && line[end] != '\t')
        {
            const char c = line[end];
            digits = digits || (c >= '0' && c <= '9');
            if (!((c >= '0' && c <= '9') || c == '.'))
            {
                return numbers >= 3; // the name after the numbers
            }
            ++end;
        }
        if (end == at || !digits)
        {
            break;
        }
        ++numbers;
        at = end;
    }
    return false;
}

bool looksLikeLog(std::string_view text)
{
    if (startsWithProfileRow(text))
    {
        return true;
    }
    static constexpr std::array<std::string_view, 22> kMarkers = {"[TRT]",
                                                                  "TensorRT",
                                                                  "&&&& ",
                                                                  "[V] ",
                                                                  "[I] ",
                                                                  "[W] ",
                                                                  "[E] ",
                                                                  "verbose: ",
                                                                  "info: ",
                                                                  "Layer(",
                                                                  "Engine Layer Information",
                                                                  "Registering layer",
                                                                  "=== Profile",
                                                                  "trtexec",
                                                                  "Tactic:",
                                                                  "LayerType:",
                                                                  "Timing Runner",
                                                                  "\"LayerType\"",
                                                                  "Reformatting CopyNode",
                                                                  "Autotuning",
                                                                  "ForeignNode",
                                                                  "[profile "};
    for (auto marker : kMarkers)
    {
        if (contains(text, marker))
        {
            return true;
        }
    }
    return false;
}

//! UTF-8 validity of the first 4 KiB, allowing a sequence cut at the sample's end.
bool startsAsUtf8(std::string_view bytes)
{
    std::size_t sample = std::min<std::size_t>(bytes.size(), 4096);
    for (std::size_t cut = 0; cut < 4 && cut <= sample; ++cut)
    {
        if (isValidUtf8(bytes.substr(0, sample - cut)))
        {
            return true;
        }
        if (sample == bytes.size())
        {
            return false; // the whole file is in the sample: nothing was cut
        }
    }
    return false;
}

//! The 4-byte tag a serialized TensorRT engine starts with: "ptrt" (TensorRT 8 and later), "ftrt" (earlier
//! engines). Ultralytics writes its .engine files as a 4-byte little-endian length, that many bytes of JSON
//! metadata, then the engine: the tag is looked for after the metadata too.
bool startsAsSerializedEngine(std::string_view prefix)
{
    const auto tagAt = [&](std::size_t offset)
    {
        std::string_view tag = prefix.substr(std::min(offset, prefix.size()), 4);
        return tag == "ptrt" || tag == "ftrt";
    };
    if (tagAt(0))
    {
        return true;
    }
    if (prefix.size() < 6 || prefix[4] != '{')
    {
        return false;
    }
    std::uint32_t metadataLength = 0;
    for (int i = 3; i >= 0; --i)
    {
        metadataLength = (metadataLength << 8) | static_cast<unsigned char>(prefix[static_cast<std::size_t>(i)]);
    }
    return metadataLength < prefix.size() - 4 && tagAt(4 + std::size_t{metadataLength});
}

bool hasEngineExtension(std::string_view path)
{
    for (std::string_view extension : {".engine", ".plan", ".trt"})
    {
        if (path.size() > extension.size() && path.substr(path.size() - extension.size()) == extension)
        {
            return true;
        }
    }
    return false;
}

//! The path as one shell word.
std::string shellWord(std::string_view path)
{
    bool plain = !path.empty();
    for (char c : path)
    {
        plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./:=+-@,%", c) != nullptr);
    }
    if (plain)
    {
        return std::string(path);
    }
    std::string quoted = "'";
    for (char c : path)
    {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

} // namespace

std::string engineExportCommand(const std::string& enginePath)
{
    // --exportLayerInfo writes the IEngineInspector JSON and --exportProfile the per-layer times (both need the
    // profiler run that --separateProfileRun keeps out of the timed run); --dumpLayerInfo and --dumpProfile put the
    // same in the log. --profilingVerbosity=detailed names the layers in the profile as the inspector does.
    return "trtexec --loadEngine=" + shellWord(enginePath) +
           " --profilingVerbosity=detailed --dumpLayerInfo --exportLayerInfo=layers.json --dumpProfile "
           "--separateProfileRun --exportProfile=profile.json";
}

bool isSerializedEngine(const std::string& path)
{
    std::string prefix = readFilePrefix(path, 64 * 1024);
    return startsAsSerializedEngine(prefix) ||
           (hasEngineExtension(path) && looksBinary(prefix) && !looksLikeOnnx(prefix, prefix.size() < 64 * 1024));
}

InputKind detectInputKindFromPrefix(std::string_view prefix, const std::string& pathForMessages)
{
    SourceLocation where;
    where.path = pathForMessages;
    if (prefix.empty())
    {
        throw InputError(where, "empty file");
    }
    std::string_view text = prefix;
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
    {
        text.remove_prefix(3);
    }
    std::string_view trimmed = skipWhitespace(text);
    if (trimmed.empty())
    {
        throw InputError(where, "file holds only whitespace");
    }
    bool binary = looksBinary(prefix);
    if (binary || !startsAsUtf8(prefix))
    {
        if (startsAsSerializedEngine(prefix) ||
            (hasEngineExtension(pathForMessages) && !looksLikeOnnx(prefix, prefix.size() < kDetectionPrefixBytes)))
        {
            throw InputError(
                where, "a serialized TensorRT engine (.engine/.plan), which qdq-doctor does not read: export what it "
                       "reads with `" +
                           engineExportCommand(pathForMessages) +
                           "` and give it layers.json and profile.json, with the ONNX model and the verbose build "
                           "log when you have them (layers.json has layer types, formats and tactics only when the "
                           "engine was built with --profilingVerbosity=detailed)");
        }
        if (looksLikeOnnx(prefix, prefix.size() < kDetectionPrefixBytes))
        {
            return InputKind::kOnnx;
        }
        if (binary)
        {
            throw InputError(
                where,
                "binary data that is not an ONNX model (expected an ONNX model, layer-info or profile JSON, or a "
                "TensorRT build log)");
        }
    }
    if (trimmed.front() == '{' || trimmed.front() == '[')
    {
        InputKind kind = classifyJson(trimmed);
        if (kind != InputKind::kUnknown)
        {
            return kind;
        }
        // A log that starts with a bracketed prefix ("[08/18/2022-12:25:06] [TRT] [V]") is still a log.
        if (trimmed.front() == '[' && looksLikeLog(trimmed.substr(0, 4096)))
        {
            return InputKind::kBuildLog;
        }
        throw InputError(where, "JSON document of unknown kind (no \"Layers\" list or array of layer objects, no "
                                "{\"count\": N} profile header, no per-inference timing records)");
    }
    if (trimmed.substr(0, 9) == "--- Layer")
    {
        return InputKind::kLayerInfo;
    }
    if (looksLikeOnnx(prefix, prefix.size() < kDetectionPrefixBytes))
    {
        return InputKind::kOnnx;
    }
    if (looksLikeLog(text))
    {
        return InputKind::kBuildLog;
    }
    if (looksLikeCalibrationCache(text))
    {
        return InputKind::kCalibrationCache;
    }
    std::size_t lineEnd = trimmed.find('\n');
    throw InputError(where, "not a TensorRT artifact: the content matches no known kind (first line: \"" +
                                printable(trimmed.substr(0, std::min<std::size_t>(lineEnd, 80))) + "\")");
}

InputKind detectInputKind(const std::string& path)
{
    std::string prefix = readFilePrefix(path, kDetectionPrefixBytes);
    return detectInputKindFromPrefix(prefix, path);
}

} // namespace qdq
