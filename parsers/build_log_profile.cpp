// Build-log reader: trtexec's --dumpProfile tables (with their title and header, or rows pasted without them) and
// its options blocks ("=== Model Options ===", "=== Build Options ===", "=== Device Information ===").

#include "parsers/build_log_parser.h"
#include "parsers/profile_times.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace qdq::buildlog
{

namespace
{

//! One --dumpProfile row: total, average, [median,] percent.
ProfileEntry profileRow(std::string_view name, const double (&values)[4], bool withMedian, std::uint64_t lineNo)
{
    ProfileEntry entry;
    entry.name = std::string(name);
    entry.timeMs = values[0];
    entry.averageMs = values[1];
    if (withMedian)
    {
        entry.medianMs = values[2];
    }
    entry.percentage = values[withMedian ? 3 : 2];
    entry.line = lineNo;
    return entry;
}

} // namespace

void BuildLogParser::readOptionsTitle(std::string_view m)
{
    std::string_view title = trim(m);
    mOptions = nullptr;
    if (title == "=== Model Options ===")
    {
        mOptions = &mLog.modelOptions;
        mSawStart = true;
    }
    else if (title == "=== Build Options ===")
    {
        mOptions = &mLog.buildOptions;
        mSawStart = true;
    }
    else if (title == "=== Device Information ===")
    {
        mOptions = &mLog.deviceInfo;
    }
}

bool BuildLogParser::handleOptionLine(const Prefixed& prefixed, std::uint64_t lineNo)
{
    std::string_view text = trim(prefixed.message);
    if (prefixed.trt || prefixed.severity != Severity::kInfo || text.empty() || startsWith(text, "==="))
    {
        mOptions = nullptr;
        return false;
    }
    std::size_t colon = text.find(": ");
    std::string_view key;
    std::string_view value;
    if (colon != std::string_view::npos)
    {
        key = trim(text.substr(0, colon));
        value = trim(text.substr(colon + 2));
    }
    else if (text.back() == ':')
    {
        key = trim(text.substr(0, text.size() - 1));
    }
    else
    {
        return true; // a free-form line inside the block ("Note: ..." has a colon; anything else is skipped)
    }
    if (key == "TensorRT version")
    {
        mOptions = nullptr;
        return false;
    }
    readOptionTyping(key, value, lineNo, mLog);
    mOptions->emplace_back(std::string(key), std::string(value));
    return true;
}

//! "=== Profile (<iterations> ...": a --dumpProfile table's title; its header follows.
void BuildLogParser::readProfileTitle(std::string_view m, std::uint64_t lineNo)
{
    std::int64_t iterations = 0;
    std::string_view rest = m.substr(13);
    std::size_t space = rest.find(' ');
    if (mProfileTables++ > 0)
    {
        warn(lineNo, "several --dumpProfile tables found; using the last one");
        mLog.profile.entries.clear();
    }
    if (parseInt(rest.substr(0, space), iterations))
    {
        mLog.profile.iterations = iterations;
    }
    mProfileState = ProfileState::kHeader;
}

void BuildLogParser::checkProfileTimes(std::string_view name, const double (&values)[4], bool withMedian,
                                       std::uint64_t lineNo) const
{
    static constexpr const char* kColumns[] = {"total time", "average time", "median time"};
    for (std::size_t k = 0; k < (withMedian ? 3u : 2u); ++k)
    {
        if (const std::string problem = profileTimeProblem(values[k]); !problem.empty())
        {
            throw InputError(at(lineNo), "profile row '" + printable(name, 200) + "': the " + kColumns[k] + " " +
                                             problem + ": not a time TensorRT writes");
        }
    }
}

bool BuildLogParser::handleProfileLine(const Prefixed& prefixed, std::uint64_t lineNo)
{
    std::string_view text = trim(prefixed.message);
    if (prefixed.trt)
    {
        return false; // TensorRT's own messages interleave; the table is trtexec's
    }
    if (mProfileState == ProfileState::kHeader)
    {
        return readProfileHeader(text, lineNo);
    }
    return readProfileRow(text, lineNo);
}

//! The header after the title: the layer name column first ("Layer ... Time ...") or last ("Time ... Layer").
bool BuildLogParser::readProfileHeader(std::string_view text, std::uint64_t lineNo)
{
    if (startsWith(text, "Layer") && text.find("Time") != std::string_view::npos)
    {
        mProfileNameLast = false;
    }
    else if (startsWith(text, "Time"))
    {
        mProfileNameLast = true;
    }
    else
    {
        warn(lineNo, "profile table header not understood; table skipped");
        mProfileState = ProfileState::kNone;
        return false;
    }
    mLog.profile.hasMedian = text.find("Median") != std::string_view::npos;
    mProfileState = ProfileState::kRows;
    return true;
}

bool BuildLogParser::readProfileRow(std::string_view text, std::uint64_t lineNo)
{
    if (text.empty())
    {
        mProfileState = ProfileState::kNone;
        return true;
    }
    const std::size_t numbers = mLog.profile.hasMedian ? 4 : 3;
    double values[4] = {0, 0, 0, 0};
    std::string_view rest = text;
    bool ok = true;
    for (std::size_t k = 0; k < numbers && ok; ++k)
    {
        rest = trim(rest);
        std::string_view token;
        if (mProfileNameLast)
        {
            std::size_t space = rest.find(' ');
            token = rest.substr(0, space);
            rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space);
            ok = parseDouble(token, values[k]);
        }
        else
        {
            std::size_t space = rest.rfind(' ');
            token = space == std::string_view::npos ? rest : rest.substr(space + 1);
            rest = space == std::string_view::npos ? std::string_view{} : rest.substr(0, space);
            ok = parseDouble(token, values[numbers - 1 - k]);
        }
    }
    std::string_view name = trim(rest);
    if (!ok || name.empty())
    {
        warn(lineNo, "profile table row not understood (truncated?); the table ends here");
        mProfileState = ProfileState::kNone;
        return true;
    }
    if (name == "Total")
    {
        mProfileState = ProfileState::kNone;
        return true;
    }
    if (mLog.profile.entries.size() >= mLimits.maxGraphNodes)
    {
        throw InputError(at(lineNo), "the profile table has more than " + std::to_string(mLimits.maxGraphNodes) +
                                         " rows, over the graph size limit (raise it with --max-graph-nodes)");
    }
    checkProfileTimes(name, values, mLog.profile.hasMedian, lineNo);
    mLog.profile.entries.push_back(profileRow(name, values, mLog.profile.hasMedian, lineNo));
    mLog.hasProfileTable = true;
    return true;
}

//! A --dumpProfile row without its table: "135.15  0.0093  0.0092  1.8  name" (10.x and 8.4+: total, average,
//! median, percent, then the name; 3 numbers without the median) or the name first and the numbers after it (8.0-8.2).
//! The numbers are the columns of the tables this reader knows (trtexec's --dumpProfile); a "Total" row is skipped.
bool BuildLogParser::takeHeaderlessProfileRow(std::string_view text, std::uint64_t lineNo)
{
    text = trim(text);
    std::vector<std::string_view> tokens;
    for (std::size_t at = 0; at < text.size() && tokens.size() < 6;)
    {
        const std::size_t end = std::min(text.find(' ', at), text.size());
        if (end > at)
        {
            tokens.push_back(text.substr(at, end - at));
        }
        at = end + 1;
    }
    const auto numeric = [](std::string_view token)
    {
        double value = 0;
        return !token.empty() && (std::isdigit(static_cast<unsigned char>(token[0])) != 0) && parseDouble(token, value);
    };
    std::size_t leading = 0;
    while (leading < tokens.size() && leading < 4 && numeric(tokens[leading]))
    {
        ++leading;
    }
    double values[4] = {0, 0, 0, 0};
    std::string_view name;
    std::size_t count = 0;
    if (leading >= 3 && leading < tokens.size())
    {
        count = leading;
        std::string_view rest = text;
        for (std::size_t k = 0; k < count; ++k)
        {
            rest = trim(rest);
            const std::size_t space = rest.find(' ');
            parseDouble(rest.substr(0, space), values[k]);
            rest = rest.substr(space);
        }
        name = trim(rest);
    }
    else if (leading == 0)
    {
        // Name first: the last 3 or 4 tokens are numbers.
        std::string_view rest = text;
        double trailing[4] = {0, 0, 0, 0};
        std::size_t found = 0;
        while (found < 4)
        {
            const std::size_t space = rest.rfind(' ');
            if (space == std::string_view::npos || !numeric(rest.substr(space + 1)))
            {
                break;
            }
            parseDouble(rest.substr(space + 1), trailing[found++]);
            rest = trim(rest.substr(0, space));
        }
        if (found < 3)
        {
            return false;
        }
        count = found;
        for (std::size_t k = 0; k < count; ++k)
        {
            values[k] = trailing[count - 1 - k];
        }
        name = rest;
    }
    if (count < 3 || name.empty() || values[1] > values[0] || values[count - 1] > 100.0)
    {
        return false; // not a row: the total is never below the average, the percent at most 100
    }
    // A printed array ("[  0.   0.   1. ...]", the output tensors a Python-API script prints after its engine:
    // ../shared/realdata/cookbook11-mnist-fp32-inspector-b200/log-main.py.log:39 ff.) names no layer.
    if (std::all_of(name.begin(), name.end(),
                    [](char c)
                    {
                        return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == ' ' || c == '.' || c == '[' ||
                               c == ']' || c == '-' || c == '+' || c == 'e';
                    }))
    {
        return false;
    }
    if (name == "Total")
    {
        return true;
    }
    if (mHeaderlessRows.size() >= mLimits.maxGraphNodes)
    {
        throw InputError(at(lineNo), "the profile rows number more than " + std::to_string(mLimits.maxGraphNodes) +
                                         ", over the graph size limit (raise it with --max-graph-nodes)");
    }
    checkProfileTimes(name, values, count == 4, lineNo);
    mHeaderlessHasMedian = mHeaderlessHasMedian || count == 4;
    mHeaderlessRows.push_back(profileRow(name, values, count == 4, lineNo));
    return true;
}

//! Rows read without a table are the profile when the log has no table of its own.
void BuildLogParser::adoptHeaderlessProfile()
{
    if (!mLog.hasProfileTable && mHeaderlessRows.size() >= 2)
    {
        warn(mHeaderlessRows.front().line,
             std::to_string(mHeaderlessRows.size()) +
                 " profile rows without the table's title and header were read as a --dumpProfile table (columns: "
                 "total ms, average ms" +
                 (mHeaderlessHasMedian ? ", median ms" : "") + ", percent, layer name)");
        mLog.profile.entries = std::move(mHeaderlessRows);
        mLog.profile.hasMedian = mHeaderlessHasMedian;
        mLog.hasProfileTable = true;
    }
}

} // namespace qdq::buildlog
