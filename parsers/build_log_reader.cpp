// Streaming reader of TensorRT verbose build logs (trtexec --verbose, Python and C++ loggers).
//
// One pass over the bytes: lines are found with memchr, checked for NUL/invalid UTF-8 with a word-wise scan, the
// logger prefix is stripped and the message is dispatched on its first character and cheap prefix checks. Lines that
// carry nothing of interest (most of a real log: tactic timing noise) cost no allocation; the tactic bookkeeping keeps
// string_views into the input until a choice is recorded.
//
// This file holds the line loop, the byte and prefix checks, the dispatch of messages and continuation lines to the
// handlers of each topic (parsers/build_log_parser.h lists their files) and the end of the log.

#include "parsers/build_log_parser.h"

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace qdq::buildlog
{

namespace
{

constexpr std::uint64_t kProgressStep = 64ull << 20;
constexpr std::uint64_t kReleaseStep = 8ull << 20;

// ----------------------------------------------------------------------------------------------------------------
// Byte checks: NUL and invalid UTF-8

//! Index of the first byte that is NUL or >= 0x80, or n.
std::size_t firstSuspectByte(const char* p, std::size_t n)
{
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
    {
        std::uint64_t w = 0;
        std::memcpy(&w, p + i, 8);
        std::uint64_t high = w & 0x8080808080808080ull;
        std::uint64_t zero = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
        if ((high | zero) != 0)
        {
            break;
        }
    }
    for (; i < n; ++i)
    {
        auto c = static_cast<unsigned char>(p[i]);
        if (c == 0 || c >= 0x80)
        {
            return i;
        }
    }
    return n;
}

//! Counts NUL bytes and bytes of invalid UTF-8 in p[start, n); sets firstBad to the first one.
std::size_t countBadBytes(const char* p, std::size_t n, std::size_t start, std::size_t& firstBad)
{
    std::size_t bad = 0;
    firstBad = n;
    auto markBad = [&](std::size_t i)
    {
        if (bad++ == 0)
        {
            firstBad = i;
        }
    };
    std::size_t i = start;
    while (i < n)
    {
        auto c = static_cast<unsigned char>(p[i]);
        if (c == 0)
        {
            markBad(i);
            ++i;
            continue;
        }
        if (c < 0x80)
        {
            ++i;
            continue;
        }
        std::size_t length = 0;
        unsigned char lo = 0x80;
        unsigned char hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
        {
            length = 2;
        }
        else if (c >= 0xE0 && c <= 0xEF)
        {
            length = 3;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        }
        else if (c >= 0xF0 && c <= 0xF4)
        {
            length = 4;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        }
        bool valid = length != 0 && i + length <= n;
        for (std::size_t k = 1; valid && k < length; ++k)
        {
            auto d = static_cast<unsigned char>(p[i + k]);
            if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF))
            {
                valid = false;
            }
        }
        if (valid)
        {
            i += length;
        }
        else
        {
            markBad(i);
            ++i;
        }
    }
    return bad;
}

// ----------------------------------------------------------------------------------------------------------------
// Logger prefixes

bool isTimestampAt(std::string_view line)
{
    // [MM/DD/YYYY-HH:MM:SS]
    return line.size() >= 21 && line[0] == '[' && line[3] == '/' && line[6] == '/' && line[11] == '-' &&
           line[14] == ':' && line[17] == ':' && line[20] == ']' && isDigit(line[1]) && isDigit(line[19]);
}

Severity severityLetter(char c)
{
    switch (c)
    {
    case 'V':
        return Severity::kVerbose;
    case 'I':
        return Severity::kInfo;
    case 'W':
        return Severity::kWarning;
    case 'E':
    case 'F':
        return Severity::kError;
    default:
        return Severity::kNone;
    }
}

Prefixed stripPrefix(std::string_view line)
{
    Prefixed out;
    out.message = line;
    if (line.empty())
    {
        return out;
    }
    if (line[0] == '[')
    {
        std::size_t p = 0;
        // Interleaved output can repeat the timestamp: "[03/07/2022-05:05:44] [03/07/2022-05:05:44] [V] [TRT] ...".
        bool timestamp = false;
        while (isTimestampAt(line.substr(p)))
        {
            timestamp = true;
            p += 21;
            if (p < line.size() && line[p] == ' ')
            {
                ++p;
            }
        }
        bool tags = false;
        for (int k = 0; k < 3 && p < line.size() && line[p] == '['; ++k)
        {
            std::string_view rest = line.substr(p);
            if (startsWith(rest, "[TRT]"))
            {
                out.trt = true;
                p += 5;
            }
            else if (rest.size() >= 3 && rest[2] == ']' && severityLetter(rest[1]) != Severity::kNone)
            {
                out.severity = severityLetter(rest[1]);
                p += 3;
            }
            else
            {
                break;
            }
            tags = true;
            if (p < line.size() && line[p] == ' ')
            {
                ++p;
            }
        }
        if (timestamp || tags)
        {
            out.prefixed = true;
            out.message = line.substr(p);
            return out;
        }
        if (startsWith(line, "[TensorRT] "))
        {
            std::string_view rest = line.substr(11);
            static constexpr std::pair<std::string_view, Severity> kWords[] = {{"VERBOSE: ", Severity::kVerbose},
                                                                               {"INFO: ", Severity::kInfo},
                                                                               {"WARNING: ", Severity::kWarning},
                                                                               {"ERROR: ", Severity::kError},
                                                                               {"INTERNAL ERROR: ", Severity::kError}};
            for (const auto& [word, severity] : kWords)
            {
                if (rest.starts_with(word))
                {
                    out.prefixed = true;
                    out.trt = true;
                    out.severity = severity;
                    out.message = rest.substr(word.size());
                    return out;
                }
            }
        }
        return out;
    }
    // Custom C++ loggers: "verbose: ", "info: ", "warning: ", "error: ", "internal error: ".
    static constexpr std::pair<std::string_view, Severity> kLower[] = {{"verbose: ", Severity::kVerbose},
                                                                       {"info: ", Severity::kInfo},
                                                                       {"warning: ", Severity::kWarning},
                                                                       {"error: ", Severity::kError},
                                                                       {"internal error: ", Severity::kError}};
    char c = line[0];
    if (c == 'v' || c == 'i' || c == 'w' || c == 'e')
    {
        for (const auto& [word, severity] : kLower)
        {
            if (line.starts_with(word))
            {
                out.prefixed = true;
                out.trt = true;
                out.severity = severity;
                out.message = line.substr(word.size());
                return out;
            }
        }
    }
    return out;
}

} // namespace

void BuildLogParser::checkBytes(std::string_view line, std::uint64_t lineStart, std::uint64_t lineNo)
{
    std::size_t suspect = firstSuspectByte(line.data(), line.size());
    if (suspect == line.size())
    {
        return;
    }
    std::size_t firstBad = 0;
    std::size_t bad = countBadBytes(line.data(), line.size(), suspect, firstBad);
    if (bad == 0)
    {
        return;
    }
    if (mBadLines++ == 0)
    {
        mFirstBadLine = lineNo;
        mFirstBadByte = lineStart + firstBad;
    }
    mBadBytes += bad;
    std::uint64_t seen = lineStart + line.size() + 1;
    bool mostlyBinaryLine = bad >= 8 && bad * 4 >= line.size();
    bool mostlyBinarySoFar = mBadBytes >= 16 && mBadBytes * 10 >= seen;
    if (mostlyBinaryLine || mostlyBinarySoFar)
    {
        SourceLocation where;
        where.path = mLog.sourcePath;
        where.byteOffset = mFirstBadByte;
        where.hasByteOffset = true;
        throw InputError(where, "not a text log: binary data at byte " + std::to_string(mFirstBadByte));
    }
    if (mBadLines <= kMaxBadLineWarnings)
    {
        warn(lineNo,
             "invalid UTF-8 or NUL byte at byte " + std::to_string(lineStart + firstBad) + "; the line is read as is");
    }
}

void BuildLogParser::run(std::string_view data, MappedFile* mapped, const ProgressCallback& progress)
{
    mLog.byteCount = data.size();
    if (data.empty())
    {
        throw InputError(at(0), "empty file: expected a TensorRT build log");
    }
    // A file whose first non-blank byte opens a JSON document is not a log (pasted JSON fragments inside a log are
    // salvaged only when the file is not JSON itself).
    std::size_t first = 0;
    while (first < data.size() && (isSpace(data[first]) || data[first] == '\n'))
    {
        ++first;
    }
    if (first < data.size())
    {
        if (data[first] == '{')
        {
            mLooksLikeJson = true;
        }
        else if (data[first] == '[')
        {
            std::size_t eol = data.find('\n', first);
            std::string_view firstLine =
                data.substr(first, eol == std::string_view::npos ? data.size() - first : eol - first);
            mLooksLikeJson = !stripPrefix(firstLine).prefixed && !startsWith(firstLine, "[TensorRT");
        }
    }

    const char* base = data.data();
    const std::size_t size = data.size();
    std::size_t pos = 0;
    std::uint64_t lineNo = 0;
    std::uint64_t nextProgress = kProgressStep;
    std::uint64_t nextRelease = kReleaseStep;
    const std::uint64_t maxLine = mLimits.maxLineBytes;
    while (pos < size)
    {
        ++lineNo;
        std::size_t window = size - pos;
        bool overLimit = false;
        if (window > maxLine)
        {
            window = static_cast<std::size_t>(maxLine) + 1;
            overLimit = true;
        }
        const void* nl = std::memchr(base + pos, '\n', window);
        std::size_t end = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - base) : pos + window;
        if (nl == nullptr && overLimit)
        {
            throw InputError(at(lineNo), "line " + std::to_string(lineNo) +
                                             " is longer than the line length limit of " +
                                             std::to_string(maxLine >> 20) + " MiB (" + std::to_string(maxLine) +
                                             " bytes; raise it with --max-line-mb)");
        }
        std::string_view line(base + pos, end - pos);
        if (!line.empty() && line.back() == '\r')
        {
            line.remove_suffix(1);
        }
        checkBytes(line, pos, lineNo);
        handleLine(line, lineNo);
        pos = nl != nullptr ? end + 1 : end;
        if (pos >= nextRelease)
        {
            if (mapped != nullptr)
            {
                mapped->releaseBefore(pos);
            }
            nextRelease = pos + kReleaseStep;
        }
        if (progress && pos >= nextProgress)
        {
            progress(pos, size);
            nextProgress = pos + kProgressStep;
        }
    }
    mLog.lineCount = lineNo;
    if (size > 0 && data.back() != '\n')
    {
        warn(lineNo, "the file does not end with a newline: the last line may be truncated");
    }
    finish(data);
    if (progress)
    {
        progress(size, size);
    }
}

void BuildLogParser::handleLine(std::string_view line, std::uint64_t lineNo)
{
    if (startsWith(line, "&&&& "))
    {
        closeBlock();
        ++mRecognized;
        std::size_t v = line.find("[TensorRT v");
        if (v != std::string_view::npos)
        {
            std::size_t close = line.find(']', v);
            if (close != std::string_view::npos)
            {
                setVersion(decodeVersionNumber(line.substr(v + 11, close - v - 11)), 3, lineNo);
            }
        }
        if (startsWith(line, "&&&& PASSED") && mLog.passedLine == 0)
        {
            mLog.passedLine = lineNo;
        }
        if (startsWith(line, "&&&& RUNNING"))
        {
            mSawStart = true;
            std::size_t hash = line.find(" # ");
            if (hash != std::string_view::npos)
            {
                mLog.commandLine = std::string(trim(line.substr(hash + 3)));
                mCommandLineLine = lineNo;
            }
        }
        return;
    }
    Prefixed prefixed = stripPrefix(line);
    if (!prefixed.prefixed)
    {
        handleContinuation(line, lineNo);
        return;
    }
    ++mRecognized;
    if (prefixed.severity == Severity::kVerbose)
    {
        ++mLog.verboseLines;
    }
    mPendingJsonName.clear();
    // Any logger line ends a multi-line payload (engine layer list, bindings).
    mInEngineMetadata = false;
    if (mInBlock || mInBindings)
    {
        closeBlock();
    }
    if (prefixed.severity == Severity::kError)
    {
        // "Error[9]: Error Code: 9: Skipping tactic 0x... due to exception ..." is printed while tactics are timed: a
        // tactic that could not run was left out and others were timed. Alone it does not fail the build (the
        // builds of NVIDIA/TensorRT#4028 and NVIDIA/Model-Optimizer#118 printed it; ../shared/docs/tensorrt-10-11.md
        // section 2).
        std::vector<LogMessage>& list =
            prefixed.message.find("Skipping tactic") != std::string_view::npos ? mLog.tacticSkips : mLog.errors;
        list.push_back({std::string(trim(prefixed.message)), lineNo});
    }
    else if (prefixed.severity == Severity::kInfo && mLog.passedLine == 0 &&
             (startsWith(prefixed.message, "Engine built in ") ||
              startsWith(prefixed.message, "Created engine with size")))
    {
        mLog.passedLine = lineNo; // trtexec's own lines once the engine exists
    }
    else if (prefixed.severity == Severity::kWarning)
    {
        mLog.warningsInLog.push_back({std::string(trim(prefixed.message)), lineNo});
    }
    if (prefixed.severity == Severity::kInfo && mLog.l2CacheLine == 0 &&
        startsWith(prefixed.message, "The following layers are used for L2 cache management"))
    {
        readL2CacheLayers(prefixed.message, lineNo);
        return;
    }
    if (mProfileState != ProfileState::kNone && handleProfileLine(prefixed, lineNo))
    {
        return;
    }
    if (mOptions != nullptr && handleOptionLine(prefixed, lineNo))
    {
        return;
    }
    if (!prefixed.trt && mProfileState == ProfileState::kNone && takeHeaderlessProfileRow(prefixed.message, lineNo))
    {
        return;
    }
    handleMessage(prefixed, lineNo);
}

void BuildLogParser::handleContinuation(std::string_view line, std::uint64_t lineNo)
{
    std::string_view text = trim(line);
    if (mProfileState != ProfileState::kNone)
    {
        mProfileState = ProfileState::kNone;
    }
    if (!mInBlock && !mInBindings && takeHeaderlessProfileRow(text, lineNo))
    {
        ++mRecognized;
        return;
    }
    mOptions = nullptr;
    if (text.empty())
    {
        endListsAtBlankLine();
        return;
    }
    if (startsWith(text, "Layer(") && (mInBlock || text.find(", Tactic: ") != std::string_view::npos))
    {
        readLayerLine(text, lineNo);
        return;
    }
    if (startsWith(text, "Name: ") && text.find(", LayerType: ") != std::string_view::npos)
    {
        readLayerRecord(text, lineNo);
        return;
    }
    if (text == "Layers:" || text == "Engine Layer Information:")
    {
        // Bare headers of IEngineInspector programs.
        ++mRecognized;
        openBlock(LayerListForm::kUnknown, lineNo);
        return;
    }
    if (handleBindingLines(text, lineNo))
    {
        return;
    }
    if (mInBlock)
    {
        readNamesOnlyLayer(text, lineNo);
        return;
    }
    if (!mLooksLikeJson && text.size() > 10 && text[0] == '"' && readPastedJsonLine(text, lineNo))
    {
        return;
    }
    mPendingJsonName.clear();
    handleLooseLine(text, lineNo);
}

//! A line outside every list: a crash of the process itself, or the shell's echo of the trtexec command.
void BuildLogParser::handleLooseLine(std::string_view text, std::uint64_t lineNo)
{
    // A crash of the process itself: "trtexec: .../graph.cpp:1059: ...: Assertion `0 && "Unsupported type"' failed."
    if (text.find(": Assertion `") != std::string_view::npos)
    {
        mLog.errors.push_back({std::string(text), lineNo});
        ++mRecognized;
        return;
    }
    if (startsWith(text, "$ ") && mLog.commandLine.empty() && text.find("trtexec") != std::string_view::npos)
    {
        mLog.commandLine = std::string(trim(text.substr(2)));
        mCommandLineLine = lineNo;
    }
}

void BuildLogParser::handleMessage(const Prefixed& prefixed, std::uint64_t lineNo)
{
    std::string_view m = prefixed.message;
    if (m.empty())
    {
        return;
    }
    if (!mOpenNodes.empty() && handleNodeTensors(m, lineNo))
    {
        return;
    }
    if (dispatchKeyed(prefixed, lineNo))
    {
        return;
    }
    handleUnkeyed(m, lineNo);
}

bool BuildLogParser::dispatchKeyed(const Prefixed& prefixed, std::uint64_t lineNo)
{
    const std::string_view m = prefixed.message;
    switch (m[0])
    {
    case 'T':
        return dispatchT(m, lineNo);
    case '-':
        if (startsWith(m, "--------------- Timing Runner: "))
        {
            readTimingRunner(m);
            return true;
        }
        return false;
    case '*':
        if (startsWith(m, "*************** Autotuning "))
        {
            mRunnerResults.clear();
            return true;
        }
        return false;
    case '>':
        if (m.find("Chose Runner Type: ") != std::string_view::npos)
        {
            handleTactic(m, lineNo);
            return true;
        }
        return false;
    case 'F':
        return dispatchF(m, lineNo);
    case '=':
        return dispatchEquals(prefixed, lineNo);
    case 'I':
        if (startsWith(m, "Importing initializer: "))
        {
            mLog.initializers.push_back({std::string(trim(m.substr(23))), lineNo});
            return true;
        }
        return false;
    case 'P':
        if (startsWith(m, "Parsing node: "))
        {
            readParsingNode(m, lineNo);
            return true;
        }
        return false;
    case 'R':
        return dispatchR(m, lineNo);
    case 'S':
        return dispatchS(m, lineNo);
    case 'C':
        return dispatchC(m, lineNo);
    case 'E':
        return dispatchE(m, lineNo);
    case 'L':
        if (trim(m) == "Layers:")
        {
            openBlock(LayerListForm::kUnknown, lineNo);
            return true;
        }
        return false;
    case 'M':
        return dispatchM(m, lineNo);
    case 'G':
        return dispatchG(m, lineNo);
    case 'Q':
        if (startsWith(m, "QDQ graph optimizer") || startsWith(m, "QDQ optimization pass"))
        {
            readQdqPhase(m, lineNo);
            return true;
        }
        return false;
    case 'O':
        if (startsWith(m, "Original: ") && endsWith(m, " layers"))
        {
            readOriginalLayerCount(m, lineNo);
            return true;
        }
        return false;
    case 'A':
        return dispatchA(m, lineNo);
    default:
        return false;
    }
}

bool BuildLogParser::dispatchT(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Tactic: "))
    {
        return true; // per-tactic timing noise
    }
    if (startsWith(m, "Tactic Name: "))
    {
        readTacticName(m);
        return true;
    }
    if (startsWith(m, "TensorRT version: "))
    {
        readVersionLine(m, lineNo);
        return true;
    }
    if (startsWith(m, "Trying to load shared library libnvinfer_builder_resource"))
    {
        readBuilderResourceLibrary(m, lineNo);
        return true;
    }
    if (startsWith(m, "The profiling verbosity was set to ProfilingVerbosity::kLAYER_NAMES_ONLY"))
    {
        mNamesOnlyNext = true;
        return true;
    }
    return false;
}

bool BuildLogParser::dispatchF(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Fastest Tactic: "))
    {
        readFastestTactic(m);
        return true;
    }
    if (startsWith(m, "Fusing "))
    {
        readFusing(m, lineNo);
        return true;
    }
    return false;
}

bool BuildLogParser::dispatchEquals(const Prefixed& prefixed, std::uint64_t lineNo)
{
    const std::string_view m = prefixed.message;
    if (startsWith(m, "=============== Computing "))
    {
        readComputing(m);
        return true;
    }
    if (startsWith(m, "=== Profile ("))
    {
        readProfileTitle(m, lineNo);
        return true;
    }
    if (startsWith(m, "=== ") && !prefixed.trt)
    {
        readOptionsTitle(m);
        return true;
    }
    return false;
}

bool BuildLogParser::dispatchR(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Registering layer: "))
    {
        readRegisteringLayer(m, lineNo);
        return true;
    }
    if (startsWith(m, "Running: "))
    {
        readRunning(m, lineNo);
        return true;
    }
    if (startsWith(m, "Removing "))
    {
        addEvent(OptimizerEventKind::kRemove, mCurrentPass, m.substr(9), {}, {}, lineNo);
        return true;
    }
    if (startsWith(m, "Retargeting "))
    {
        readRetargeting(m, lineNo);
        return true;
    }
    return false;
}

bool BuildLogParser::dispatchS(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Swapping "))
    {
        readSwapping(m, lineNo);
        return true;
    }
    if (startsWith(m, "Swap the layer type of "))
    {
        readLayerTypeChange(m.substr(23), lineNo);
        return true;
    }
    if (startsWith(m, "Setting dynamic range for ") || startsWith(m, "Starting Calibration"))
    {
        mLog.implicitInt8Marker = true;
        return true;
    }
    return false;
}

bool BuildLogParser::dispatchC(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Convert layer type of "))
    {
        readLayerTypeChange(m.substr(22), lineNo);
        return true;
    }
    if (startsWith(m, "Calibrator won't be used in explicit precision mode"))
    {
        mLog.explicitPrecisionMarker = true;
        return true;
    }
    if (startsWith(m, "Calibration completed") || startsWith(m, "Calibrated batch "))
    {
        mLog.implicitInt8Marker = true;
        return true;
    }
    return false;
}

bool BuildLogParser::dispatchE(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Eliminating "))
    {
        readEliminating(m, lineNo);
        return true;
    }
    if (trim(m) == "Engine Layer Information:")
    {
        openBlock(LayerListForm::kLogLine, lineNo);
        return true;
    }
    return false;
}

bool BuildLogParser::dispatchM(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Marking ") && readMarkingOutput(m, lineNo))
    {
        return true;
    }
    if (startsWith(m, "Merging layers: "))
    {
        readMerging(m, lineNo);
        return true;
    }
    return false;
}

bool BuildLogParser::dispatchG(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Generating copy for "))
    {
        readGeneratingCopy(m, lineNo);
        return true;
    }
    // trtexec's performance summary: "GPU Compute Time: min = 0.15 ms, max = 0.54 ms, mean = 0.16 ms, ..."
    if (startsWith(m, "GPU Compute Time: "))
    {
        readGpuComputeTime(m, lineNo);
        return true;
    }
    return false;
}

bool BuildLogParser::dispatchA(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Adding network input: "))
    {
        readNetworkInput(m, lineNo);
        return true;
    }
    if (startsWith(m, "After ") && endsWith(m, " layers") && readAfterLayerCount(m, lineNo))
    {
        return true;
    }
    if (startsWith(m, "Adding reformat layer: "))
    {
        readAddingReformat(m, lineNo);
        return true;
    }
    return false;
}

void BuildLogParser::handleUnkeyed(std::string_view m, std::uint64_t lineNo)
{
    if (startsWith(m, "Loaded shared library libnvinfer_builder_resource"))
    {
        readBuilderResourceLibrary(m, lineNo);
        return;
    }
    if (startsWith(m, "[MemUsageChange] Init CUDA") || startsWith(m, "[MemUsageChange] Init builder kernel library"))
    {
        mSawStart = true;
        return;
    }
    if (readBuildFactLine(m, lineNo, mLog, mFacts))
    {
        return;
    }
    handleFallback(m, lineNo);
}

void BuildLogParser::finish(std::string_view /*data*/)
{
    closeBlock();
    readCommandLineTyping(mCommandLineLine, mLog);
    adoptHeaderlessProfile();
    if (!mBlocks.empty())
    {
        adoptEngineBlock();
    }
    else if (!mSalvaged.empty())
    {
        adoptSalvagedLayers();
    }
    if (mBadLines > kMaxBadLineWarnings)
    {
        warn(mFirstBadLine, std::to_string(mBadLines) + " lines hold invalid UTF-8 or NUL bytes (" +
                                std::to_string(mBadBytes) + " bytes; the first at byte " +
                                std::to_string(mFirstBadByte) + ")");
    }
    checkRecognized();
    if (!mSawStart)
    {
        warn(0, "only fragments of a build log were recognized (no trtexec header or builder start): an excerpt; "
                "facts may be incomplete");
    }
}

void BuildLogParser::checkRecognized() const
{
    if (mRecognized == 0)
    {
        if (mLooksLikeJson)
        {
            throw InputError(
                at(0), "not a TensorRT build log: the file starts like a JSON document and no log content was found");
        }
        throw InputError(
            at(0),
            "no TensorRT build-log content found (no logger-prefixed lines, engine layer list or profile table)");
    }
}

} // namespace qdq::buildlog

namespace qdq
{

using buildlog::BuildLogParser;

BuildLog readBuildLog(const std::string& path, const ProgressCallback& progress, const Limits& limits)
{
    MappedFile file(path, limits);
    BuildLogParser parser(path, limits);
    parser.run(file.bytes(), &file, progress);
    return parser.take();
}

BuildLog readBuildLogFromBuffer(std::string_view text, const std::string& pathForMessages, const Limits& limits)
{
    if (text.size() > limits.maxInputBytes)
    {
        SourceLocation where;
        where.path = pathForMessages;
        throw InputError(where, "input is " + std::to_string(text.size() >> 20) +
                                    " MiB, over the input size limit of " + std::to_string(limits.maxInputBytes >> 20) +
                                    " MiB (raise it with --max-input-mb)");
    }
    BuildLogParser parser(pathForMessages, limits);
    parser.run(text, nullptr, {});
    return parser.take();
}

} // namespace qdq
