// Build-log reader: TensorRT version lines and the optimizer's events (fusions, removals, swaps, eliminations,
// copies, reformats, layer counts) and the markers of a build's precision mode.

#include "parsers/build_log_parser.h"

#include <cstdlib>
#include <string>
#include <string_view>

namespace qdq::buildlog
{

std::string decodeVersionNumber(std::string_view digits)
{
    for (char c : digits)
    {
        if (!isDigit(c))
        {
            return {};
        }
    }
    if (digits.size() < 4 || digits.size() > 8)
    {
        return {};
    }
    std::size_t majorLength = digits.size() - 3;
    std::string_view major = digits.substr(0, majorLength);
    std::string_view minor = digits.substr(majorLength, 1);
    std::string_view patch = digits.substr(majorLength + 1);
    if (digits.size() >= 6)
    {
        majorLength = digits.size() - 4;
        major = digits.substr(0, majorLength);
        minor = digits.substr(majorLength, 2);
        patch = digits.substr(majorLength + 2);
    }
    auto number = [](std::string_view s)
    {
        std::int64_t value = 0;
        parseInt(s, value);
        return std::to_string(value);
    };
    return number(major) + "." + number(minor) + "." + number(patch);
}

void BuildLogParser::setVersion(std::string version, int priority, std::uint64_t lineNo)
{
    // TensorRT 8.x, 10.x and 11.x are the releases qdq-doctor follows (src/models/build_mode.cpp); a header of another
    // major ("v990000" reads as 99.0) is not one of them, and no major but these would be simulated honestly.
    const int major = std::atoi(version.c_str());
    if (!version.empty() && major != 8 && major != 10 && major != 11)
    {
        throw InputError(at(lineNo), "TensorRT version " + printable(version, 64) +
                                         " is not one qdq-doctor knows (8.x, 10.x and 11.x): a log of another "
                                         "release, or a damaged version line");
    }
    if (!version.empty() && priority > mVersionPriority)
    {
        mLog.trtVersion = std::move(version);
        mVersionPriority = priority;
    }
}

void BuildLogParser::readVersionLine(std::string_view m, std::uint64_t lineNo)
{
    std::string_view v = trim(m.substr(18));
    setVersion(v.find('.') != std::string_view::npos ? std::string(v) : decodeVersionNumber(v), 2, lineNo);
}

//! "Trying to load shared library libnvinfer_builder_resource.so.10.3.0" and "Loaded shared library ...".
void BuildLogParser::readBuilderResourceLibrary(std::string_view m, std::uint64_t lineNo)
{
    std::size_t so = m.find(".so.");
    if (so != std::string_view::npos)
    {
        setVersion(std::string(trim(m.substr(so + 4))), 1, lineNo);
    }
}

void BuildLogParser::addEvent(OptimizerEventKind kind, std::string_view pass, std::string_view subject,
                              std::string_view object, std::string_view detail, std::uint64_t lineNo)
{
    OptimizerEvent event;
    event.kind = kind;
    event.pass = std::string(pass);
    event.subject = std::string(trim(subject));
    event.object = std::string(trim(object));
    event.detail = std::string(detail);
    event.line = lineNo;
    mLog.events.push_back(std::move(event));
    ++mRecognized;
}

void BuildLogParser::readFusing(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = m.substr(7);
    std::size_t with = rest.find(" with ");
    addEvent(OptimizerEventKind::kFuse, {}, rest.substr(0, with),
             with == std::string_view::npos ? std::string_view{} : rest.substr(with + 6), {}, lineNo);
}

void BuildLogParser::readRunning(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = trim(m.substr(9));
    std::size_t on = rest.find(" on ");
    std::string_view pass = rest.substr(0, on);
    mCurrentPass.assign(pass);
    addEvent(OptimizerEventKind::kRunning, pass,
             on == std::string_view::npos ? std::string_view{} : rest.substr(on + 4), {}, {}, lineNo);
}

void BuildLogParser::readRetargeting(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = m.substr(12);
    std::size_t to = rest.rfind(" to ");
    addEvent(OptimizerEventKind::kRetarget, {}, rest.substr(0, to),
             to == std::string_view::npos ? std::string_view{} : rest.substr(to + 4), {}, lineNo);
}

void BuildLogParser::readSwapping(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = m.substr(9);
    std::size_t with = rest.find(" with ");
    addEvent(OptimizerEventKind::kSwap, mCurrentPass, rest.substr(0, with),
             with == std::string_view::npos ? std::string_view{} : rest.substr(with + 6), {}, lineNo);
}

void BuildLogParser::readLayerTypeChange(std::string_view rest, std::uint64_t lineNo)
{
    std::size_t from = rest.rfind(" from ");
    std::size_t to = from == std::string_view::npos ? from : rest.find(" to ", from);
    addEvent(OptimizerEventKind::kSwapLayerType, mCurrentPass, rest.substr(0, from),
             to == std::string_view::npos ? std::string_view{} : rest.substr(to + 4),
             to == std::string_view::npos ? std::string_view{} : rest.substr(from + 6, to - from - 6), lineNo);
}

//! "Eliminating concatenation X", "Eliminating slice X by Y", "Eliminating X which duplicates (Kind) Y".
void BuildLogParser::readEliminating(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = m.substr(12);
    if (startsWith(rest, "concatenation "))
    {
        addEvent(OptimizerEventKind::kEliminate, {}, rest.substr(14), {}, "concatenation", lineNo);
        return;
    }
    if (startsWith(rest, "slice "))
    {
        rest.remove_prefix(6);
        std::size_t by = rest.find(" by ");
        addEvent(OptimizerEventKind::kEliminate, {}, rest.substr(0, by), {},
                 by == std::string_view::npos ? std::string_view("slice") : rest.substr(by + 1), lineNo);
        return;
    }
    std::size_t dup = rest.find(" which duplicates ");
    std::string_view object;
    std::string_view detail;
    if (dup != std::string_view::npos)
    {
        object = rest.substr(dup + 18);
        detail = "duplicates";
        if (startsWith(object, "("))
        {
            std::size_t close = object.find(") ");
            if (close != std::string_view::npos)
            {
                detail = object.substr(1, close - 1);
                object = object.substr(close + 2);
            }
        }
    }
    addEvent(OptimizerEventKind::kEliminate, mCurrentPass, rest.substr(0, dup), object, detail, lineNo);
}

void BuildLogParser::readMerging(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = m.substr(16);
    std::size_t bar = rest.find(" || ");
    addEvent(OptimizerEventKind::kMerge, {}, rest.substr(0, bar),
             bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 4), {}, lineNo);
}

void BuildLogParser::readGeneratingCopy(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = m.substr(20);
    std::size_t because = rest.find(" because ");
    std::string_view head = rest.substr(0, because);
    std::string_view reason = because == std::string_view::npos ? std::string_view{} : rest.substr(because + 9);
    if (!reason.empty() && reason.back() == '.')
    {
        reason.remove_suffix(1);
    }
    std::size_t to = head.rfind(" to ");
    addEvent(OptimizerEventKind::kGenerateCopy, {}, head.substr(0, to),
             to == std::string_view::npos ? std::string_view{} : head.substr(to + 4), reason, lineNo);
}

void BuildLogParser::readGpuComputeTime(std::string_view m, std::uint64_t lineNo)
{
    std::size_t mean = m.find("mean = ");
    if (mean != std::string_view::npos)
    {
        std::string_view value = m.substr(mean + 7);
        value = value.substr(0, value.find(" ms"));
        double ms = 0.0;
        if (parseDouble(value, ms))
        {
            mLog.gpuComputeMeanMs = ms;
            mLog.gpuComputeLine = lineNo;
        }
    }
}

void BuildLogParser::readQdqPhase(std::string_view m, std::uint64_t lineNo)
{
    mCurrentPass.clear();
    addEvent(OptimizerEventKind::kQdqPhase, {}, {}, {}, trim(m), lineNo);
}

void BuildLogParser::readOriginalLayerCount(std::string_view m, std::uint64_t lineNo)
{
    mCurrentPass.clear();
    addEvent(OptimizerEventKind::kLayerCount, {}, "Original", m.substr(10, m.size() - 17), {}, lineNo);
}

//! "After <pass>: N layers"; false when the line has no ": ".
bool BuildLogParser::readAfterLayerCount(std::string_view m, std::uint64_t lineNo)
{
    std::size_t colon = m.rfind(": ");
    if (colon == std::string_view::npos)
    {
        return false;
    }
    mCurrentPass.clear();
    addEvent(OptimizerEventKind::kLayerCount, {}, m.substr(0, colon), m.substr(colon + 2, m.size() - colon - 2 - 7), {},
             lineNo);
    return true;
}

void BuildLogParser::readAddingReformat(std::string_view m, std::uint64_t lineNo)
{
    std::string_view rest = m.substr(23);
    std::size_t from = rest.rfind(" from ");
    std::string_view head = rest.substr(0, from);
    std::string_view detail = from == std::string_view::npos ? std::string_view{} : rest.substr(from + 6);
    std::string_view tensor;
    if (!head.empty() && head.back() == ')')
    {
        std::size_t open = head.rfind(" (");
        if (open != std::string_view::npos)
        {
            tensor = head.substr(open + 2, head.size() - open - 3);
            head = head.substr(0, open);
        }
    }
    addEvent(OptimizerEventKind::kAddReformat, {}, head, tensor, detail, lineNo);
}

} // namespace qdq::buildlog
