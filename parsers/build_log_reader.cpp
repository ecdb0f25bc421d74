// Streaming reader of TensorRT verbose build logs (trtexec --verbose, Python and C++ loggers).
//
// One pass over the bytes: lines are found with memchr, checked for NUL/invalid UTF-8 with a word-wise scan, the
// logger prefix is stripped and the message is dispatched on its first character and cheap prefix checks. Lines that
// carry nothing of interest (most of a real log: tactic timing noise) cost no allocation; the tactic bookkeeping keeps
// string_views into the input until a choice is recorded.

#include "parsers/file_source.h"
#include "parsers/log_build_facts.h"
#include "parsers/log_layer_line.h"
#include "parsers/profile_times.h"
#include "qdq/readers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

namespace
{

constexpr std::uint64_t kProgressStep = 64ull << 20;
constexpr std::uint64_t kReleaseStep = 8ull << 20;
constexpr std::size_t kMaxBadLineWarnings = 3;

// ----------------------------------------------------------------------------------------------------------------
// Small string helpers

//! Prefix test against a string literal: the length is known at compile time (no strlen on the hot path).
template <std::size_t N>
inline bool startsWith(std::string_view s, const char (&literal)[N])
{
    return s.size() >= N - 1 && std::memcmp(s.data(), literal, N - 1) == 0;
}

template <std::size_t N>
inline bool endsWith(std::string_view s, const char (&literal)[N])
{
    return s.size() >= N - 1 && std::memcmp(s.data() + s.size() - (N - 1), literal, N - 1) == 0;
}

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && isSpace(s.front()))
    {
        s.remove_prefix(1);
    }
    while (!s.empty() && isSpace(s.back()))
    {
        s.remove_suffix(1);
    }
    return s;
}

bool isHexDigit(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

bool parseDouble(std::string_view s, double& value)
{
    s = trim(s);
    if (s.empty())
    {
        return false;
    }
    auto result = std::from_chars(s.data(), s.data() + s.size(), value);
    return result.ec == std::errc() && result.ptr == s.data() + s.size();
}

bool parseInt(std::string_view s, std::int64_t& value)
{
    s = trim(s);
    if (s.empty())
    {
        return false;
    }
    auto result = std::from_chars(s.data(), s.data() + s.size(), value);
    return result.ec == std::errc() && result.ptr == s.data() + s.size();
}

//! "8502" -> "8.5.2", "101601" -> "10.16.1", "8510" -> "8.5.10". Empty when not a version number.
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

enum class Severity
{
    kNone,
    kVerbose,
    kInfo,
    kWarning,
    kError,
};

struct Prefixed
{
    bool prefixed = false;
    bool trt = false;
    Severity severity = Severity::kNone;
    std::string_view message;
};

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

// ----------------------------------------------------------------------------------------------------------------
// The ONNX parser's lines

//! "(-1, 1, 28, 28)" or "()" into dims; false when the text is not a dims list.
bool parseDimsList(std::string_view text, std::vector<std::int64_t>& dims)
{
    dims.clear();
    if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    {
        return false;
    }
    text = text.substr(1, text.size() - 2);
    while (!text.empty())
    {
        while (!text.empty() && (text.front() == ' ' || text.front() == ','))
        {
            text.remove_prefix(1);
        }
        if (text.empty())
        {
            break;
        }
        std::size_t end = 0;
        while (end < text.size() && text[end] != ',')
        {
            ++end;
        }
        std::int64_t value = 0;
        if (!parseInt(trim(text.substr(0, end)), value))
        {
            return false;
        }
        dims.push_back(value);
        text.remove_prefix(end);
    }
    return true;
}

//! "[a -> (1, 2)[FLOAT]], [optional input, not set], [b -> ()[INT8]], " into tensors. False when the list is cut off
//! or unreadable (the entries read so far are kept).
bool parseTensorList(std::string_view text, std::vector<ParsedTensor>& tensors)
{
    static constexpr std::string_view kOptional = "[optional input, not set]";
    tensors.clear();
    while (true)
    {
        text = trim(text);
        if (text.empty())
        {
            return true;
        }
        if (text.front() != '[')
        {
            return false;
        }
        if (text.starts_with(kOptional))
        {
            tensors.emplace_back();
            text.remove_prefix(kOptional.size());
        }
        else
        {
            const std::size_t arrow = text.find(" -> (");
            if (arrow == std::string_view::npos)
            {
                return false;
            }
            ParsedTensor tensor;
            tensor.name = std::string(text.substr(1, arrow - 1));
            text.remove_prefix(arrow + 4);
            const std::size_t dimsEnd = text.find(')');
            if (dimsEnd == std::string_view::npos)
            {
                tensors.push_back(std::move(tensor));
                return false;
            }
            tensor.dimsKnown = parseDimsList(text.substr(0, dimsEnd + 1), tensor.dims);
            text.remove_prefix(dimsEnd + 1);
            const std::size_t close = text.find("]]");
            if (text.empty() || text.front() != '[' || close == std::string_view::npos)
            {
                tensors.push_back(std::move(tensor));
                return false;
            }
            tensor.type = std::string(text.substr(1, close - 1));
            text.remove_prefix(close + 2);
            tensors.push_back(std::move(tensor));
        }
        text = trim(text);
        if (!text.empty() && text.front() == ',')
        {
            text.remove_prefix(1);
        }
    }
}

// ----------------------------------------------------------------------------------------------------------------
// The parser

struct EngineBlock
{
    std::vector<EngineLayer> layers;
    std::vector<std::string> bindings;
    std::vector<IoTensor> ioTensors; //!< TensorRT 11 `I/O Tensors:` (FORMATS-trt11.md T3)
    std::vector<std::pair<std::string, std::string>> engineMetadata; //!< TensorRT 11.1 `Engine Metadata:` (T4)
    WriterEvidence writer;
    LayerListForm form = LayerListForm::kUnknown;
    std::uint64_t line = 0;
    bool namesOnly = false;
    std::size_t badRecords = 0;
};

struct RunnerResult
{
    std::string_view runner;
    std::string_view tactic;
    std::string_view tacticName;
    double time = 0.0;
    bool hasTime = false;
};

class BuildLogParser
{
public:
    BuildLogParser(const std::string& path, const Limits& limits) : mLimits(limits)
    {
        mLog.sourcePath = path;
        mLog.engine.sourcePath = path;
        mLog.profile.sourcePath = path;
    }

    void run(std::string_view data, MappedFile* mapped, const ProgressCallback& progress);
    BuildLog take() { return std::move(mLog); }

private:
    SourceLocation at(std::uint64_t line) const
    {
        SourceLocation where;
        where.path = mLog.sourcePath;
        where.line = line;
        return where;
    }
    void warn(std::uint64_t line, std::string message) { mLog.warnings.push_back({at(line), std::move(message)}); }

    void checkBytes(std::string_view line, std::uint64_t lineStart, std::uint64_t lineNo);
    void handleLine(std::string_view line, std::uint64_t lineNo);
    void handleContinuation(std::string_view line, std::uint64_t lineNo);
    void handleMessage(const Prefixed& prefixed, std::uint64_t lineNo);
    bool handleOptionLine(const Prefixed& prefixed, std::uint64_t lineNo);
    bool handleProfileLine(const Prefixed& prefixed, std::uint64_t lineNo);
    //! Refuses a row whose times are not times (NaN, infinite, negative, absurd): parsers/profile_times.h.
    void checkProfileTimes(std::string_view name, const double (&values)[4], bool withMedian,
                           std::uint64_t lineNo) const;
    void handleTactic(std::string_view message, std::uint64_t lineNo);
    bool handleFallback(std::string_view message, std::uint64_t lineNo);
    void addEvent(OptimizerEventKind kind, std::string_view pass, std::string_view subject, std::string_view object,
                  std::string_view detail, std::uint64_t lineNo);
    void setVersion(std::string version, int priority, std::uint64_t lineNo);

    // The per-runner tables are bounded so that a log without the usual resets cannot make lookups quadratic.
    static constexpr std::size_t kMaxTacticTable = 1024;
    void rememberTacticName(std::string_view tactic, std::string_view name)
    {
        if (mTacticNames.size() >= kMaxTacticTable)
        {
            mTacticNames.clear();
        }
        mTacticNames.emplace_back(tactic, name);
    }
    void rememberRunnerResult(const RunnerResult& result)
    {
        if (mRunnerResults.size() >= kMaxTacticTable)
        {
            mRunnerResults.clear();
        }
        mRunnerResults.push_back(result);
    }

    bool handleNodeTensors(std::string_view message, std::uint64_t lineNo);
    void parserLineWarning(std::uint64_t lineNo, std::string message);

    bool handleElevenBlocks(std::string_view text, std::uint64_t lineNo);
    bool handleBindingLines(std::string_view text, std::uint64_t lineNo);
    void readL2CacheLayers(std::string_view message, std::uint64_t lineNo);
    void openBlock(LayerListForm form, std::uint64_t lineNo);
    void closeBlock();
    void addLayer(EngineLayer layer);
    void finish(std::string_view data);

    const Limits& mLimits;
    BuildLog mLog;

    std::uint64_t mRecognized = 0;
    bool mSawStart = false;
    std::uint64_t mCommandLineLine = 0;
    BuildFactState mFacts;
    int mVersionPriority = 0;
    std::string mCurrentPass;

    // Options blocks.
    std::vector<std::pair<std::string, std::string>>* mOptions = nullptr;

    // Engine layer lists.
    std::vector<EngineBlock> mBlocks;
    bool mInBlock = false;
    bool mInBindings = false;
    bool mIoTensorLines = false;    //!< the bindings list is TensorRT 11's `I/O Tensors:` block
    bool mInEngineMetadata = false; //!< inside TensorRT 11.1's `Engine Metadata:` block
    bool mNamesOnlyNext = false;
    EngineBlock mBlock;

    // Pasted layer-info JSON fragments.
    bool mLooksLikeJson = false;
    std::string mPendingJsonName;
    std::uint64_t mPendingJsonLine = 0;
    std::vector<EngineLayer> mSalvaged;

    // --dumpProfile table.
    enum class ProfileState
    {
        kNone,
        kHeader,
        kRows,
    };
    ProfileState mProfileState = ProfileState::kNone;
    bool mProfileNameLast = false;
    std::size_t mProfileTables = 0;
    //! Rows of a --dumpProfile table pasted without its "=== Profile" title and header (a common excerpt in bug
    //! reports): the profile when the log has no table of its own.
    std::vector<ProfileEntry> mHeaderlessRows;
    bool mHeaderlessHasMedian = false;
    bool takeHeaderlessProfileRow(std::string_view text, std::uint64_t lineNo);

    // Tactic selection (views into the input).
    std::string_view mTimingLayer;
    std::string_view mTimingRunner;
    std::vector<std::pair<std::string_view, std::string_view>> mTacticNames; // tactic id -> kernel name
    std::vector<RunnerResult> mRunnerResults;

    // ONNX parser lines: the nodes whose outputs line has not been seen yet (a node's inputs and outputs lines
    // follow its `Parsing node` line; an If node's outputs line follows the nodes of its branches). Only lines that
    // start with the name of one of the last few is looked at further.
    static constexpr std::size_t kOpenNodesLooked = 4;
    static constexpr std::size_t kMaxOpenNodes = 256;
    std::vector<std::size_t> mOpenNodes;
    std::size_t mParserLineWarnings = 0;

    // Byte checks.
    std::uint64_t mBadBytes = 0;
    std::uint64_t mBadLines = 0;
    std::uint64_t mFirstBadLine = 0;
    std::uint64_t mFirstBadByte = 0;
};

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

void BuildLogParser::openBlock(LayerListForm form, std::uint64_t lineNo)
{
    closeBlock();
    mBlock = EngineBlock{};
    mBlock.form = form;
    mBlock.line = lineNo;
    mBlock.namesOnly = mNamesOnlyNext;
    mNamesOnlyNext = false;
    mInBlock = true;
    mInBindings = false;
}

void BuildLogParser::closeBlock()
{
    if (mInBlock || mInBindings)
    {
        if (!mBlock.layers.empty())
        {
            mBlocks.push_back(std::move(mBlock));
        }
        mBlock = EngineBlock{};
    }
    mInBlock = false;
    mInBindings = false;
}

void BuildLogParser::addLayer(EngineLayer layer)
{
    if (mBlock.layers.size() >= mLimits.maxGraphNodes)
    {
        throw InputError(at(layer.line), "the engine layer list has more than " +
                                             std::to_string(mLimits.maxGraphNodes) +
                                             " layers, over the graph size limit (raise it with --max-graph-nodes)");
    }
    mBlock.layers.push_back(std::move(layer));
    ++mRecognized;
}

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
        // A blank line ends a bindings list and a names-only layer list (bindings may still follow). Record lists
        // stay open: IEngineInspector programs print a blank line between per-layer records.
        mInBindings = false;
        mInEngineMetadata = false;
        if (mInBlock && mBlock.form != LayerListForm::kLogLine && mBlock.form != LayerListForm::kDetailed)
        {
            mInBlock = false;
            mBlock.form = LayerListForm::kNamesOnly;
            if (!mBlock.layers.empty())
            {
                mBlocks.push_back(std::move(mBlock));
            }
            mBlock = EngineBlock{};
        }
        return;
    }
    if (startsWith(text, "Layer(") && (mInBlock || text.find(", Tactic: ") != std::string_view::npos))
    {
        if (!mInBlock || mBlock.form == LayerListForm::kNamesOnly)
        {
            openBlock(LayerListForm::kLogLine, lineNo);
        }
        EngineLayer layer;
        layer.line = lineNo;
        std::string why;
        if (parseLogLayerLine(text, layer, why))
        {
            addLayer(std::move(layer));
        }
        else
        {
            ++mBlock.badRecords;
            warn(lineNo, "engine layer line not understood (" + why + "); skipped");
        }
        return;
    }
    if (startsWith(text, "Name: ") && text.find(", LayerType: ") != std::string_view::npos)
    {
        if (!mInBlock || mBlock.form == LayerListForm::kLogLine)
        {
            openBlock(LayerListForm::kDetailed, lineNo);
        }
        mBlock.form = LayerListForm::kDetailed;
        EngineLayer layer;
        layer.line = lineNo;
        std::string why;
        if (parseLayerInfoRecord(text, layer, why))
        {
            if (mBlock.writer.trtMajor == 0 && text.find("Datatype: ") != std::string_view::npos &&
                text.find(", Format: ") != std::string_view::npos)
            {
                // `Datatype: Float, Format: (Linear) ...`: a TensorRT 11.x form (FORMATS-trt11.md T1).
                mBlock.writer = {11, lineNo, "Datatype and Format as two keys (a TensorRT 11.x form)"};
            }
            addLayer(std::move(layer));
        }
        else
        {
            ++mBlock.badRecords;
            warn(lineNo, "layer record not understood (" + why + "); skipped");
        }
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
        if (mBlock.namesOnly && mBlock.form != LayerListForm::kLogLine && mBlock.form != LayerListForm::kDetailed)
        {
            mBlock.form = LayerListForm::kNamesOnly;
            EngineLayer layer;
            layer.line = lineNo;
            layer.setName(text);
            addLayer(std::move(layer));
        }
        // Anything else inside a list (excerpt elisions such as "...more") is skipped.
        return;
    }
    // Pasted layer-info JSON: `"Name": "X",` followed by `"LayerType": "T",`.
    if (!mLooksLikeJson && text.size() > 10 && text[0] == '"')
    {
        if (startsWith(text, "\"Name\": \""))
        {
            std::string_view value = text.substr(9);
            std::size_t q = value.rfind('"');
            if (q != std::string_view::npos)
            {
                mPendingJsonName = std::string(value.substr(0, q));
                mPendingJsonLine = lineNo;
                return;
            }
        }
        else if (startsWith(text, "\"LayerType\": \"") && !mPendingJsonName.empty())
        {
            std::string_view value = text.substr(14);
            std::size_t q = value.rfind('"');
            if (q != std::string_view::npos)
            {
                EngineLayer layer;
                layer.setName(mPendingJsonName);
                layer.type = std::string(value.substr(0, q));
                layer.line = mPendingJsonLine;
                mSalvaged.push_back(std::move(layer));
            }
        }
    }
    mPendingJsonName.clear();
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

//! The `Bindings:` list (10.x) and TensorRT 11's `I/O Tensors:` and `Engine Metadata:` blocks after a layer list.
bool BuildLogParser::handleBindingLines(std::string_view text, std::uint64_t lineNo)
{
    if (handleElevenBlocks(text, lineNo))
    {
        return true;
    }
    if (text == "Bindings:" || text == "I/O Tensors:")
    {
        if (mBlocks.empty() && mBlock.layers.empty())
        {
            return true;
        }
        mIoTensorLines = text == "I/O Tensors:";
        if (mInBlock)
        {
            mInBlock = false;
            if (!mBlock.layers.empty())
            {
                mBlocks.push_back(std::move(mBlock));
                mBlock = EngineBlock{};
            }
        }
        mInBindings = !mBlocks.empty();
        if (mInBindings)
        {
            mBlocks.back().bindings.clear();
            mBlocks.back().ioTensors.clear();
            if (mIoTensorLines && mBlocks.back().writer.trtMajor == 0)
            {
                mBlocks.back().writer = {11, lineNo, "an I/O Tensors: block (a TensorRT 11.x form)"};
            }
        }
        return true;
    }
    if (mInBindings)
    {
        mBlocks.back().bindings.emplace_back(text);
        return true;
    }
    return false;
}

//! "The following layers are used for L2 cache management and do not correspond to any layers in the
//! INetworkDefinition: __mye1085_myl0_0, __mye1087_myl0_12" (TensorRT 11.0, FORMATS-trt11.md L5), printed 3 times.
void BuildLogParser::readL2CacheLayers(std::string_view message, std::uint64_t lineNo)
{
    const std::size_t colon = message.rfind(": ");
    if (colon == std::string_view::npos)
    {
        return;
    }
    std::string_view names = message.substr(colon + 2);
    while (!names.empty())
    {
        const std::size_t comma = names.find(',');
        const std::string_view name = trim(names.substr(0, comma));
        if (!name.empty())
        {
            mLog.l2CacheLayers.emplace_back(name);
        }
        names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
    }
    mLog.l2CacheLine = lineNo;
}

//! The lines of TensorRT 11's `I/O Tensors:` block (one tensor a line) and 11.1's `Engine Metadata:` block
//! (FORMATS-trt11.md T3, T4), after their headers. A tensor line that cannot be read is an input error: the engine's
//! inputs and outputs would be silently wrong.
bool BuildLogParser::handleElevenBlocks(std::string_view text, std::uint64_t lineNo)
{
    if (text == "Engine Metadata:")
    {
        mInBindings = false;
        mInEngineMetadata = !mBlocks.empty() && !mInBlock;
        ++mRecognized;
        return true;
    }
    if (mInEngineMetadata)
    {
        const std::size_t colon = text.find(": ");
        if (colon == std::string_view::npos)
        {
            throw InputError(at(lineNo),
                             "an Engine Metadata line is not \"Key: value\": \"" + printable(text, 80) + "\"");
        }
        mBlocks.back().engineMetadata.emplace_back(std::string(text.substr(0, colon)),
                                                   std::string(trim(text.substr(colon + 2))));
        ++mRecognized;
        return true;
    }
    if (mInBindings && mIoTensorLines)
    {
        IoTensor tensor;
        tensor.line = lineNo;
        std::string why;
        if (!parseIoTensorRecord(text, tensor, why))
        {
            throw InputError(at(lineNo),
                             "an I/O Tensors line is not understood (" + why + "): \"" + printable(text, 80) + "\"");
        }
        mBlocks.back().bindings.push_back(tensor.name);
        mBlocks.back().ioTensors.push_back(std::move(tensor));
        ++mRecognized;
        return true;
    }
    return false;
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
    // Rows.
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

void BuildLogParser::handleTactic(std::string_view message, std::uint64_t lineNo)
{
    // ">>>>>>>>>>>>>>> Chose Runner Type: R Tactic: X"
    std::string_view rest = message.substr(message.find("Chose Runner Type: ") + 19);
    std::size_t t = rest.find(" Tactic: ");
    TacticChoice choice;
    std::string_view runner = trim(rest.substr(0, t));
    std::string_view tactic = t == std::string_view::npos ? std::string_view{} : trim(rest.substr(t + 9));
    choice.layer = std::string(mTimingLayer);
    choice.runnerType = std::string(runner);
    choice.tactic = std::string(tactic);
    for (auto it = mRunnerResults.rbegin(); it != mRunnerResults.rend(); ++it)
    {
        if (it->runner == runner && (it->tactic == tactic || tactic.empty()))
        {
            choice.tacticName = std::string(it->tacticName);
            if (it->hasTime)
            {
                choice.timeMs = it->time;
            }
            break;
        }
    }
    choice.line = lineNo;
    mLog.tactics.push_back(std::move(choice));
}

//! Lines that start with a layer or pass name: "<Pass>: Fusing A with B", "<L> Set Tactic Name: K Tactic: X",
//! "<L> (<Runner>[0x..]) profiling completed in S seconds. Fastest Tactic: X Time: T".
bool BuildLogParser::handleFallback(std::string_view message, std::uint64_t lineNo)
{
    // "<Pass>: Fusing A with B" / "QuantizeDoubleInputNodes: fusing X into Y"
    std::size_t k = 0;
    while (k < message.size() && ((message[k] >= 'A' && message[k] <= 'Z') ||
                                  (message[k] >= 'a' && message[k] <= 'z') || isDigit(message[k]) || message[k] == '_'))
    {
        ++k;
    }
    if (k > 0 && k + 2 < message.size() && message[k] == ':' && message[k + 1] == ' ')
    {
        std::string_view pass = message.substr(0, k);
        std::string_view rest = message.substr(k + 2);
        if (startsWith(rest, "Fusing "))
        {
            rest.remove_prefix(7);
            std::size_t with = rest.find(" with ");
            addEvent(OptimizerEventKind::kFuse, pass, rest.substr(0, with),
                     with == std::string_view::npos ? std::string_view{} : rest.substr(with + 6), {}, lineNo);
            return true;
        }
        if (startsWith(rest, "fusing "))
        {
            rest.remove_prefix(7);
            std::size_t into = rest.rfind(" into ");
            addEvent(OptimizerEventKind::kFuse, pass, rest.substr(0, into),
                     into == std::string_view::npos ? std::string_view{} : rest.substr(into + 6), {}, lineNo);
            return true;
        }
        return false;
    }
    // A hexadecimal tactic id may end in a letter ("Set Tactic Name: K Tactic: 0x6986b0c6a136276e", 8.4 and later).
    if (message.empty() || !isHexDigit(message.back()))
    {
        return false;
    }
    // Both remaining forms end in "Tactic: <id>" or "Time: <t>": look at the token before the last one first.
    std::size_t lastSpace = message.rfind(' ');
    if (lastSpace == std::string_view::npos || lastSpace < 6)
    {
        return false;
    }
    std::string_view beforeLast = message.substr(0, lastSpace);
    if (!endsWith(beforeLast, " Tactic:") && !endsWith(beforeLast, " Time:"))
    {
        return false;
    }
    static constexpr std::string_view kSetTactic = " Set Tactic Name: ";
    static constexpr std::string_view kCompleted = " profiling completed in ";
    if (std::size_t s = message.find(kSetTactic); s != std::string_view::npos)
    {
        std::string_view rest = message.substr(s + kSetTactic.size());
        std::size_t t = rest.rfind(" Tactic: ");
        if (t != std::string_view::npos)
        {
            rememberTacticName(trim(rest.substr(t + 9)), trim(rest.substr(0, t)));
        }
        return true;
    }
    if (std::size_t c = message.find(kCompleted); c != std::string_view::npos)
    {
        std::string_view head = message.substr(0, c);
        // head = "<layer> (<Runner>[0x80000009])"
        std::size_t open = head.rfind(" (");
        RunnerResult result;
        if (open != std::string_view::npos && head.back() == ')')
        {
            mTimingLayer = head.substr(0, open);
            std::string_view runner = head.substr(open + 2, head.size() - open - 3);
            result.runner = runner.substr(0, runner.find('['));
        }
        std::string_view tail = message.substr(c);
        std::size_t f = tail.find("Fastest Tactic: ");
        if (f != std::string_view::npos)
        {
            std::string_view rest = tail.substr(f + 16);
            std::size_t time = rest.find(" Time: ");
            result.tactic = trim(rest.substr(0, time));
            if (time != std::string_view::npos)
            {
                result.hasTime = parseDouble(rest.substr(time + 7), result.time);
            }
            for (const auto& [id, name] : mTacticNames)
            {
                if (id == result.tactic)
                {
                    result.tacticName = name;
                }
            }
            rememberRunnerResult(result);
        }
        mTacticNames.clear();
        return true;
    }
    return false;
}

void BuildLogParser::parserLineWarning(std::uint64_t lineNo, std::string message)
{
    if (++mParserLineWarnings <= kMaxBadLineWarnings)
    {
        warn(lineNo, std::move(message));
    }
}

bool BuildLogParser::handleNodeTensors(std::string_view m, std::uint64_t lineNo)
{
    const std::size_t looked = std::min(mOpenNodes.size(), kOpenNodesLooked);
    for (std::size_t k = 0; k < looked; ++k)
    {
        const std::size_t slot = mOpenNodes.size() - 1 - k;
        ParsedOnnxNode& node = mLog.parsedNodes[mOpenNodes[slot]];
        const std::string& name = node.onnxNode;
        if (m.size() <= name.size() + node.opType.size() + 4 || (!name.empty() && m[0] != name[0]) ||
            !m.starts_with(name))
        {
            continue;
        }
        std::string_view rest = m.substr(name.size());
        if (!startsWith(rest, " [") || !rest.substr(2).starts_with(node.opType))
        {
            continue;
        }
        rest.remove_prefix(2 + node.opType.size());
        const bool inputs = startsWith(rest, "] inputs:");
        if (!inputs && !startsWith(rest, "] outputs:"))
        {
            continue;
        }
        rest.remove_prefix(inputs ? 9 : 10);
        std::vector<ParsedTensor>& tensors = inputs ? node.inputs : node.outputs;
        if (!parseTensorList(rest, tensors))
        {
            parserLineWarning(lineNo, std::string(inputs ? "inputs" : "outputs") + " line of ONNX node '" +
                                          printable(name, 256) + "' is cut off or unreadable");
        }
        (inputs ? node.inputsLine : node.outputsLine) = lineNo;
        if (!inputs)
        {
            // Nodes opened after this one (inside an If branch) whose outputs never came are closed with it.
            mOpenNodes.resize(slot);
        }
        return true;
    }
    return false;
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
    switch (m[0])
    {
    case 'T':
        if (startsWith(m, "Tactic: "))
        {
            return; // per-tactic timing noise
        }
        if (startsWith(m, "Tactic Name: "))
        {
            // 8.6+: "Tactic Name: K Tactic: 0x.. Time: t"
            std::string_view rest = m.substr(13);
            std::size_t t = rest.find(" Tactic: ");
            if (t != std::string_view::npos)
            {
                std::string_view id = rest.substr(t + 9);
                id = id.substr(0, id.find(' '));
                rememberTacticName(id, rest.substr(0, t));
            }
            return;
        }
        if (startsWith(m, "TensorRT version: "))
        {
            std::string_view v = trim(m.substr(18));
            setVersion(v.find('.') != std::string_view::npos ? std::string(v) : decodeVersionNumber(v), 2, lineNo);
            return;
        }
        if (startsWith(m, "Trying to load shared library libnvinfer_builder_resource"))
        {
            std::size_t so = m.find(".so.");
            if (so != std::string_view::npos)
            {
                setVersion(std::string(trim(m.substr(so + 4))), 1, lineNo);
            }
            return;
        }
        if (startsWith(m, "The profiling verbosity was set to ProfilingVerbosity::kLAYER_NAMES_ONLY"))
        {
            mNamesOnlyNext = true;
            return;
        }
        break;
    case '-':
        if (startsWith(m, "--------------- Timing Runner: "))
        {
            std::string_view rest = trim(m.substr(31));
            std::size_t open = rest.rfind(" (");
            if (open != std::string_view::npos && rest.back() == ')')
            {
                mTimingLayer = rest.substr(0, open);
                std::string_view runner = rest.substr(open + 2, rest.size() - open - 3);
                mTimingRunner = runner.substr(0, runner.find('['));
            }
            else
            {
                mTimingLayer = rest;
                mTimingRunner = {};
            }
            mTacticNames.clear();
            return;
        }
        break;
    case '*':
        if (startsWith(m, "*************** Autotuning "))
        {
            mRunnerResults.clear();
            return;
        }
        break;
    case '>':
        if (m.find("Chose Runner Type: ") != std::string_view::npos)
        {
            handleTactic(m, lineNo);
            return;
        }
        break;
    case 'F':
        if (startsWith(m, "Fastest Tactic: "))
        {
            std::string_view rest = m.substr(16);
            std::size_t time = rest.find(" Time: ");
            RunnerResult result;
            result.runner = mTimingRunner;
            result.tactic = trim(rest.substr(0, time));
            if (time != std::string_view::npos)
            {
                result.hasTime = parseDouble(rest.substr(time + 7), result.time);
            }
            for (const auto& [id, name] : mTacticNames)
            {
                if (id == result.tactic)
                {
                    result.tacticName = name;
                }
            }
            rememberRunnerResult(result);
            return;
        }
        if (startsWith(m, "Fusing "))
        {
            std::string_view rest = m.substr(7);
            std::size_t with = rest.find(" with ");
            addEvent(OptimizerEventKind::kFuse, {}, rest.substr(0, with),
                     with == std::string_view::npos ? std::string_view{} : rest.substr(with + 6), {}, lineNo);
            return;
        }
        break;
    case '=':
        if (startsWith(m, "=============== Computing "))
        {
            mRunnerResults.clear();
            if (startsWith(m, "=============== Computing costs for "))
            {
                mTimingLayer = trim(m.substr(36));
            }
            return;
        }
        if (startsWith(m, "=== Profile ("))
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
            return;
        }
        if (startsWith(m, "=== ") && !prefixed.trt)
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
            return;
        }
        break;
    case 'I':
        if (startsWith(m, "Importing initializer: "))
        {
            mLog.initializers.push_back({std::string(trim(m.substr(23))), lineNo});
            return;
        }
        break;
    case 'P':
        if (startsWith(m, "Parsing node: "))
        {
            std::string_view rest = trim(m.substr(14));
            ParsedOnnxNode node;
            std::size_t open = rest.rfind(" [");
            if (open != std::string_view::npos && rest.back() == ']')
            {
                node.onnxNode = std::string(rest.substr(0, open));
                node.opType = std::string(rest.substr(open + 2, rest.size() - open - 3));
            }
            else
            {
                node.onnxNode = std::string(rest);
            }
            node.line = lineNo;
            mLog.parsedNodes.push_back(std::move(node));
            if (mOpenNodes.size() >= kMaxOpenNodes)
            {
                mOpenNodes.erase(mOpenNodes.begin(), mOpenNodes.begin() + kMaxOpenNodes / 2);
            }
            mOpenNodes.push_back(mLog.parsedNodes.size() - 1);
            return;
        }
        break;
    case 'R':
        if (startsWith(m, "Registering layer: "))
        {
            std::string_view rest = trim(m.substr(19));
            RegisteredLayer layer;
            std::size_t f = rest.find(" for ONNX node: ");
            if (f != std::string_view::npos)
            {
                layer.trtLayer = std::string(rest.substr(0, f));
                layer.onnxNode = std::string(rest.substr(f + 16));
            }
            else
            {
                std::size_t r = rest.rfind(" required by ");
                layer.trtLayer = std::string(rest.substr(0, r));
            }
            layer.line = lineNo;
            mLog.registeredLayers.push_back(std::move(layer));
            return;
        }
        if (startsWith(m, "Running: "))
        {
            std::string_view rest = trim(m.substr(9));
            std::size_t on = rest.find(" on ");
            std::string_view pass = rest.substr(0, on);
            mCurrentPass.assign(pass);
            addEvent(OptimizerEventKind::kRunning, pass,
                     on == std::string_view::npos ? std::string_view{} : rest.substr(on + 4), {}, {}, lineNo);
            return;
        }
        if (startsWith(m, "Removing "))
        {
            addEvent(OptimizerEventKind::kRemove, mCurrentPass, m.substr(9), {}, {}, lineNo);
            return;
        }
        if (startsWith(m, "Retargeting "))
        {
            std::string_view rest = m.substr(12);
            std::size_t to = rest.rfind(" to ");
            addEvent(OptimizerEventKind::kRetarget, {}, rest.substr(0, to),
                     to == std::string_view::npos ? std::string_view{} : rest.substr(to + 4), {}, lineNo);
            return;
        }
        break;
    case 'S':
        if (startsWith(m, "Swapping "))
        {
            std::string_view rest = m.substr(9);
            std::size_t with = rest.find(" with ");
            addEvent(OptimizerEventKind::kSwap, mCurrentPass, rest.substr(0, with),
                     with == std::string_view::npos ? std::string_view{} : rest.substr(with + 6), {}, lineNo);
            return;
        }
        if (startsWith(m, "Swap the layer type of "))
        {
            std::string_view rest = m.substr(23);
            std::size_t from = rest.rfind(" from ");
            std::size_t to = from == std::string_view::npos ? from : rest.find(" to ", from);
            addEvent(OptimizerEventKind::kSwapLayerType, mCurrentPass, rest.substr(0, from),
                     to == std::string_view::npos ? std::string_view{} : rest.substr(to + 4),
                     to == std::string_view::npos ? std::string_view{} : rest.substr(from + 6, to - from - 6), lineNo);
            return;
        }
        if (startsWith(m, "Setting dynamic range for "))
        {
            mLog.implicitInt8Marker = true;
            return;
        }
        if (startsWith(m, "Starting Calibration"))
        {
            mLog.implicitInt8Marker = true;
            return;
        }
        break;
    case 'C':
        if (startsWith(m, "Convert layer type of "))
        {
            std::string_view rest = m.substr(22);
            std::size_t from = rest.rfind(" from ");
            std::size_t to = from == std::string_view::npos ? from : rest.find(" to ", from);
            addEvent(OptimizerEventKind::kSwapLayerType, mCurrentPass, rest.substr(0, from),
                     to == std::string_view::npos ? std::string_view{} : rest.substr(to + 4),
                     to == std::string_view::npos ? std::string_view{} : rest.substr(from + 6, to - from - 6), lineNo);
            return;
        }
        if (startsWith(m, "Calibrator won't be used in explicit precision mode"))
        {
            mLog.explicitPrecisionMarker = true;
            return;
        }
        if (startsWith(m, "Calibration completed") || startsWith(m, "Calibrated batch "))
        {
            mLog.implicitInt8Marker = true;
            return;
        }
        break;
    case 'E':
        if (startsWith(m, "Eliminating "))
        {
            std::string_view rest = m.substr(12);
            if (startsWith(rest, "concatenation "))
            {
                addEvent(OptimizerEventKind::kEliminate, {}, rest.substr(14), {}, "concatenation", lineNo);
            }
            else if (startsWith(rest, "slice "))
            {
                rest.remove_prefix(6);
                std::size_t by = rest.find(" by ");
                addEvent(OptimizerEventKind::kEliminate, {}, rest.substr(0, by), {},
                         by == std::string_view::npos ? std::string_view("slice") : rest.substr(by + 1), lineNo);
            }
            else
            {
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
            return;
        }
        if (trim(m) == "Engine Layer Information:")
        {
            openBlock(LayerListForm::kLogLine, lineNo);
            return;
        }
        break;
    case 'L':
        if (trim(m) == "Layers:")
        {
            openBlock(LayerListForm::kUnknown, lineNo);
            return;
        }
        break;
    case 'M':
        if (startsWith(m, "Marking "))
        {
            std::string_view rest = trim(m.substr(8));
            std::size_t as = rest.rfind(" as output: ");
            if (as != std::string_view::npos)
            {
                mLog.networkOutputs.push_back(
                    {std::string(rest.substr(0, as)), std::string(trim(rest.substr(as + 12))), lineNo});
                mOpenNodes.clear();
                return;
            }
        }
        if (startsWith(m, "Merging layers: "))
        {
            std::string_view rest = m.substr(16);
            std::size_t bar = rest.find(" || ");
            addEvent(OptimizerEventKind::kMerge, {}, rest.substr(0, bar),
                     bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 4), {}, lineNo);
            return;
        }
        break;
    case 'G':
        if (startsWith(m, "Generating copy for "))
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
            return;
        }
        // trtexec's performance summary: "GPU Compute Time: min = 0.15 ms, max = 0.54 ms, mean = 0.16 ms, ..."
        if (startsWith(m, "GPU Compute Time: "))
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
            return;
        }
        break;
    case 'Q':
        if (startsWith(m, "QDQ graph optimizer") || startsWith(m, "QDQ optimization pass"))
        {
            mCurrentPass.clear();
            addEvent(OptimizerEventKind::kQdqPhase, {}, {}, {}, trim(m), lineNo);
            return;
        }
        break;
    case 'O':
        if (startsWith(m, "Original: ") && endsWith(m, " layers"))
        {
            mCurrentPass.clear();
            addEvent(OptimizerEventKind::kLayerCount, {}, "Original", m.substr(10, m.size() - 17), {}, lineNo);
            return;
        }
        break;
    case 'A':
        if (startsWith(m, "Adding network input: "))
        {
            // "x with dtype: float32, dimensions: (-1, 1, 28, 28)"
            std::string_view rest = trim(m.substr(22));
            ParsedNetworkInput input;
            input.line = lineNo;
            std::size_t with = rest.rfind(" with dtype: ");
            input.name = std::string(rest.substr(0, with));
            if (with != std::string_view::npos)
            {
                std::string_view typeAndDims = rest.substr(with + 13);
                std::size_t comma = typeAndDims.find(", dimensions: ");
                input.dtype = std::string(trim(typeAndDims.substr(0, comma)));
                if (comma != std::string_view::npos)
                {
                    input.dimsKnown = parseDimsList(trim(typeAndDims.substr(comma + 14)), input.dims);
                }
            }
            mLog.networkInputs.push_back(std::move(input));
            mOpenNodes.clear();
            return;
        }
        if (startsWith(m, "After ") && endsWith(m, " layers"))
        {
            std::size_t colon = m.rfind(": ");
            if (colon != std::string_view::npos)
            {
                mCurrentPass.clear();
                addEvent(OptimizerEventKind::kLayerCount, {}, m.substr(0, colon),
                         m.substr(colon + 2, m.size() - colon - 2 - 7), {}, lineNo);
                return;
            }
        }
        if (startsWith(m, "Adding reformat layer: "))
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
            return;
        }
        break;
    default:
        break;
    }
    if (startsWith(m, "Loaded shared library libnvinfer_builder_resource"))
    {
        std::size_t so = m.find(".so.");
        if (so != std::string_view::npos)
        {
            setVersion(std::string(trim(m.substr(so + 4))), 1, lineNo);
        }
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

bool sameNames(const EngineBlock& a, const EngineBlock& b)
{
    if (a.layers.size() != b.layers.size())
    {
        return false;
    }
    for (std::size_t i = 0; i < a.layers.size(); ++i)
    {
        if (a.layers[i].name != b.layers[i].name)
        {
            return false;
        }
    }
    return true;
}

void BuildLogParser::finish(std::string_view /*data*/)
{
    closeBlock();
    readCommandLineTyping(mCommandLineLine, mLog);
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
    if (!mBlocks.empty())
    {
        // Keep the last list; a names-only re-print of an engine already listed in detail keeps the detailed one.
        std::size_t chosen = mBlocks.size() - 1;
        if (mBlocks[chosen].form == LayerListForm::kNamesOnly)
        {
            for (std::size_t i = chosen; i-- > 0;)
            {
                if (sameNames(mBlocks[i], mBlocks[chosen]))
                {
                    chosen = i;
                    break;
                }
            }
        }
        bool distinct = false;
        for (std::size_t i = 0; i < mBlocks.size(); ++i)
        {
            if (!sameNames(mBlocks[i], mBlocks[chosen]))
            {
                distinct = true;
            }
        }
        EngineBlock& block = mBlocks[chosen];
        for (std::size_t i = mBlocks.size(); block.bindings.empty() && i-- > 0;)
        {
            if (i != chosen && sameNames(mBlocks[i], block) && !mBlocks[i].bindings.empty())
            {
                block.bindings = mBlocks[i].bindings;
            }
        }
        if (distinct)
        {
            ReaderWarning warning{
                at(block.line),
                std::to_string(mBlocks.size()) +
                    " different engine layer lists found (several builds in one log?); using the one at line " +
                    std::to_string(block.line)};
            mLog.warnings.push_back(warning);
            mLog.engine.warnings.push_back(warning);
        }
        mLog.hasEngineBlock = true;
        mLog.engine.form = block.form == LayerListForm::kUnknown ? LayerListForm::kNamesOnly : block.form;
        mLog.engine.layers = std::move(block.layers);
        mLog.engine.bindings = std::move(block.bindings);
        mLog.engine.ioTensors = std::move(block.ioTensors);
        mLog.engine.engineMetadata = std::move(block.engineMetadata);
        mLog.engine.writer = block.writer;
        mLog.engine.assignOptimizationProfiles();
    }
    else if (!mSalvaged.empty())
    {
        mRecognized += mSalvaged.size();
        std::uint64_t line = mSalvaged.front().line;
        ReaderWarning warning{at(line),
                              "only a fragment of layer-info JSON pasted into the file was found; " +
                                  std::to_string(mSalvaged.size()) +
                                  " layer records (name and type only) were salvaged and the layer list is incomplete"};
        mLog.warnings.push_back(warning);
        mLog.engine.warnings.push_back(warning);
        mLog.hasEngineBlock = true;
        mLog.engine.form = LayerListForm::kDetailed;
        mLog.engine.layers = std::move(mSalvaged);
    }
    if (mBadLines > kMaxBadLineWarnings)
    {
        warn(mFirstBadLine, std::to_string(mBadLines) + " lines hold invalid UTF-8 or NUL bytes (" +
                                std::to_string(mBadBytes) + " bytes; the first at byte " +
                                std::to_string(mFirstBadByte) + ")");
    }
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
    if (!mSawStart)
    {
        warn(0, "only fragments of a build log were recognized (no trtexec header or builder start): an excerpt; "
                "facts may be incomplete");
    }
}

} // namespace

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
