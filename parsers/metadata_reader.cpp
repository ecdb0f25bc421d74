// TREx helper JSONs (not trtexec output): build metadata {"model_options", "build_options", ...}, profile metadata
// {"performance_summary", "inference_options", "device_information"} and the device list [{"Name", ...}].
// Flattened to "a.b.c" -> value; arrays are kept whole as compact JSON text ("[11,6,0]").
#include "parsers/file_source.h"
#include "parsers/json_pull.h"
#include "qdq/readers.h"

namespace qdq
{

namespace
{
using json::PullParser;
using json::Token;
using Fields = std::vector<std::pair<std::string, std::string>>;

constexpr std::string_view kWhat = "a TREx metadata JSON (build, profile or device metadata)";

// Flattens the members of an object whose '{' was just read, without recursion.
void flattenObject(PullParser& parser, const std::string& base, Fields& fields)
{
    std::string path = base;
    std::vector<std::size_t> parents;
    int depth = 1;
    while (depth > 0)
    {
        Token token = parser.next();
        if (token == Token::kObjectEnd)
        {
            --depth;
            if (!parents.empty())
            {
                path.resize(parents.back());
                parents.pop_back();
            }
            continue;
        }
        std::size_t parentLength = path.size();
        if (!path.empty())
        {
            path += '.';
        }
        path += parser.text();
        Token value = parser.next();
        if (value == Token::kObjectBegin)
        {
            parents.push_back(parentLength);
            ++depth;
            continue;
        }
        fields.emplace_back(path, parser.valueText(value));
        path.resize(parentLength);
    }
}

MetadataDocument readMetadataText(std::string_view text, const std::string& path, const Limits& limits)
{
    json::requireJsonStart(text, path, "{[", kWhat, limits);
    PullParser parser(text, path, limits);
    parser.seek(json::firstContentOffset(text)); // after a byte order mark
    MetadataDocument document;
    document.sourcePath = path;

    Token first = parser.next();
    std::size_t start = parser.tokenOffset();
    if (first == Token::kObjectBegin)
    {
        flattenObject(parser, "", document.fields);
        bool build = false;
        bool profile = false;
        bool layers = false;
        for (const auto& [key, value] : document.fields)
        {
            std::string_view top = std::string_view(key).substr(0, key.find('.'));
            build = build || top == "model_options" || top == "build_options";
            profile = profile || top == "performance_summary" || top == "inference_options";
            layers = layers || top == "Layers";
        }
        if (layers)
        {
            parser.fail(start, "this is layer information (\"Layers\"), not " + std::string(kWhat));
        }
        if (!build && !profile)
        {
            parser.fail(start, "none of model_options, build_options, performance_summary or inference_options: not " +
                                   std::string(kWhat));
        }
        document.variant = build ? "build-metadata" : "profile-metadata";
    }
    else
    {
        // The device list: one pycuda device-attribute object per GPU. One device: plain keys; several: "N." prefix.
        std::vector<Fields> devices;
        for (Token token = parser.next(); token != Token::kArrayEnd; token = parser.next())
        {
            if (token != Token::kObjectBegin)
            {
                parser.fail(parser.tokenOffset(), "a device-metadata list holds " +
                                                      std::string(json::tokenDescription(token)) +
                                                      ", not device objects: not " + std::string(kWhat));
            }
            devices.emplace_back();
            flattenObject(parser, "", devices.back());
        }
        if (devices.empty())
        {
            parser.fail(start, "an empty JSON array: not " + std::string(kWhat));
        }
        bool named = false;
        for (const auto& [key, value] : devices.front())
        {
            named = named || key == "Name";
        }
        if (!named)
        {
            parser.fail(start, "the first array element has no \"Name\": not a device-metadata list");
        }
        for (std::size_t i = 0; i < devices.size(); ++i)
        {
            for (auto& [key, value] : devices[i])
            {
                document.fields.emplace_back(devices.size() == 1 ? std::move(key) : std::to_string(i) + "." + key,
                                             std::move(value));
            }
        }
        document.variant = "device-metadata";
    }
    parser.next(); // kEnd
    parser.expectEndOfInput();
    parser.checkAllLines();
    return document;
}
} // namespace

MetadataDocument readMetadata(const std::string& path, const Limits& limits)
{
    std::string text = readWholeFile(path, limits);
    return readMetadataText(text, path, limits);
}

} // namespace qdq
