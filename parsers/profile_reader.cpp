// Layer profile JSON (trtexec --exportProfile): [{"count": N}, {"name", "timeMs", "averageMs", ["medianMs"],
// "percentage"}, ...], written with ", " leading commas. TensorRT 8.2 has no medianMs.
#include "parsers/file_source.h"
#include "parsers/json_pull.h"
#include "parsers/profile_times.h"
#include "qdq/readers.h"

#include <cmath>

namespace qdq
{

namespace
{
using json::PullParser;
using json::Token;

ReaderWarning fileWarning(const std::string& path, std::string message)
{
    SourceLocation where;
    where.path = path;
    return ReaderWarning{where, std::move(message)};
}

constexpr std::string_view kWhat = "a layer profile JSON (trtexec --exportProfile)";

//! One profile element as read: the entry, and which of its keys were there.
struct ProfileElement
{
    ProfileEntry entry;
    bool hasName = false;
    bool hasTime = false;
    bool hasAverage = false;
    bool isCount = false;
};

//! The bit of a key a profile element has, or 0 for keys of newer writers.
std::uint32_t profileKeyBit(const std::string& key)
{
    static constexpr std::string_view kKeys[] = {"name", "timeMs", "averageMs", "medianMs", "percentage", "count"};
    std::uint32_t bit = 0;
    for (std::size_t k = 0; k < std::size(kKeys); ++k)
    {
        if (key == kKeys[k])
        {
            bit = 1u << k;
        }
    }
    return bit;
}

//! Reads the number value of a key other than "name" into the element (or the iteration count).
void readProfileNumber(PullParser& parser, Profile& profile, const std::string& key, Token value,
                       ProfileElement& element)
{
    if (value != Token::kNumber)
    {
        profile.warnings.push_back(
            parser.warningAt(parser.tokenOffset(), "\"" + key + "\" is " + std::string(json::tokenDescription(value)) +
                                                       ", expected a number; ignored"));
        parser.skipValue(value);
        return;
    }
    double number = parser.numberValue();
    if (key == "timeMs" || key == "averageMs" || key == "medianMs")
    {
        if (const std::string problem = profileTimeProblem(number); !problem.empty())
        {
            parser.fail(parser.tokenOffset(), "\"" + key + "\" " + printable(parser.text(), 64) + " " + problem +
                                                  ": not a time TensorRT writes");
        }
    }
    else if (key == "percentage" && !std::isfinite(number))
    {
        parser.fail(parser.tokenOffset(), "\"percentage\" is not a finite number");
    }
    if (key == "count")
    {
        std::int64_t count = 0;
        if (!parser.integerValue(count) || count < 0)
        {
            profile.warnings.push_back(
                parser.warningAt(parser.tokenOffset(), "\"count\" is not a non-negative integer; ignored"));
            return;
        }
        if (profile.iterations)
        {
            profile.warnings.push_back(
                parser.warningAt(parser.tokenOffset(), "a second \"count\" element; the last one is used"));
        }
        profile.iterations = count;
        element.isCount = true;
    }
    else if (key == "timeMs")
    {
        element.entry.timeMs = number;
        element.hasTime = true;
    }
    else if (key == "averageMs")
    {
        element.entry.averageMs = number;
        element.hasAverage = true;
    }
    else if (key == "medianMs")
    {
        element.entry.medianMs = number;
    }
    else
    {
        element.entry.percentage = number;
    }
}

//! Reads the members of a profile element, after its '{'.
ProfileElement readProfileElement(PullParser& parser, Profile& profile, std::size_t start)
{
    ProfileElement element;
    element.entry.line = parser.lineOf(start);
    std::uint32_t seen = 0;
    for (Token member = parser.next(); member != Token::kObjectEnd; member = parser.next())
    {
        std::string key(parser.text());
        std::size_t keyOffset = parser.tokenOffset();
        Token value = parser.next();
        const std::uint32_t bit = profileKeyBit(key);
        if (bit == 0)
        {
            parser.skipValue(value); // unknown keys from newer writers
            continue;
        }
        if ((seen & bit) != 0)
        {
            profile.warnings.push_back(
                parser.warningAt(keyOffset, "duplicate key \"" + key + "\"; the last value is used"));
        }
        seen |= bit;
        if (key == "name")
        {
            if (value != Token::kString)
            {
                profile.warnings.push_back(parser.warningAt(parser.tokenOffset(), "\"name\" is not a string"));
            }
            element.entry.name = parser.valueText(value);
            element.hasName = true;
            continue;
        }
        readProfileNumber(parser, profile, key, value, element);
    }
    return element;
}

//! Whether a profile element is a layer entry; warns about what it lacks.
bool isLayerEntry(PullParser& parser, Profile& profile, const ProfileElement& element, std::size_t start,
                  std::size_t index)
{
    if (element.isCount && !element.hasName)
    {
        if (index != 0)
        {
            profile.warnings.push_back(parser.warningAt(start, "the {\"count\": N} element is not the first one"));
        }
        return false;
    }
    if (!element.hasName)
    {
        profile.warnings.push_back(parser.warningAt(start, "a profile entry has no \"name\"; skipped"));
        return false;
    }
    if (!element.hasTime || !element.hasAverage)
    {
        profile.warnings.push_back(
            parser.warningAt(start, "profile entry \"" + printable(element.entry.name, 200) + "\" lacks " +
                                        (!element.hasTime && !element.hasAverage ? "\"timeMs\" and \"averageMs\""
                                         : !element.hasTime                      ? "\"timeMs\""
                                                                                 : "\"averageMs\"") +
                                        "; read as 0"));
    }
    return true;
}

//! The warnings about the whole profile, once its elements are read.
void finishProfile(PullParser& parser, Profile& profile, const std::string& path, std::size_t elements,
                   std::size_t withMedian)
{
    if (profile.entries.empty() && !profile.iterations && elements > 0)
    {
        parser.fail(0, "no element has \"name\" or \"count\": not " + std::string(kWhat));
    }
    if (!profile.iterations)
    {
        profile.warnings.push_back(fileWarning(path, "no leading {\"count\": N} element"));
    }
    if (profile.entries.empty())
    {
        profile.warnings.push_back(fileWarning(path, "the profile has no layer entries"));
    }
    profile.hasMedian = withMedian > 0;
    if (withMedian > 0 && withMedian < profile.entries.size())
    {
        profile.warnings.push_back(parser.warningAt(0, std::to_string(profile.entries.size() - withMedian) + " of " +
                                                           std::to_string(profile.entries.size()) +
                                                           " profile entries lack \"medianMs\""));
    }
}

Profile readProfileText(std::string_view text, const std::string& path, const Limits& limits,
                        MappedFile* mapped = nullptr)
{
    json::requireJsonStart(text, path, "[{", kWhat, limits);
    PullParser parser(text, path, limits);
    parser.seek(json::firstContentOffset(text)); // after a byte order mark
    Profile profile;
    profile.sourcePath = path;

    Token first = parser.next();
    if (first != Token::kArrayBegin)
    {
        parser.fail(parser.tokenOffset(), "expected a JSON array (trtexec --exportProfile), found an object; "
                                          "layer information (--exportLayerInfo) and TREx metadata are objects");
    }
    std::size_t withMedian = 0;
    std::size_t element = 0;
    std::size_t released = 0;
    for (Token token = parser.next(); token != Token::kArrayEnd; token = parser.next(), ++element)
    {
        std::size_t start = parser.tokenOffset();
        if (token != Token::kObjectBegin)
        {
            profile.warnings.push_back(parser.warningAt(start, "a profile element is " +
                                                                   std::string(json::tokenDescription(token)) +
                                                                   ", not an object; skipped"));
            parser.skipValue(token);
            continue;
        }
        ProfileElement read = readProfileElement(parser, profile, start);
        if (!isLayerEntry(parser, profile, read, start, element))
        {
            continue;
        }
        if (read.entry.medianMs)
        {
            ++withMedian;
        }
        if (profile.entries.size() >= limits.maxGraphNodes)
        {
            parser.fail(start, "more than " + std::to_string(limits.maxGraphNodes) +
                                   " profile entries (raise the limit with --max-graph-nodes)");
        }
        profile.entries.push_back(std::move(read.entry));
        if (mapped != nullptr && start > released + (4u << 20))
        {
            // Text already parsed is not read again: let the kernel drop those pages (peak RSS stays near the
            // size of the entries, not entries + file).
            mapped->releaseBefore(start);
            released = start;
        }
    }
    parser.next(); // kEnd
    parser.expectEndOfInput();
    parser.checkAllLines();
    finishProfile(parser, profile, path, element, withMedian);
    return profile;
}
} // namespace

Profile readProfile(const std::string& path, const Limits& limits)
{
    MappedFile file(path, limits);
    return readProfileText(file.bytes(), path, limits, &file);
}

Profile readProfileFromBuffer(std::string_view text, const std::string& pathForMessages, const Limits& limits)
{
    return readProfileText(text, pathForMessages, limits);
}

} // namespace qdq
