// Internal to the build-log reader (parsers/build_log_*.cpp): the streaming parser of TensorRT verbose build logs,
// its state and the string helpers its message handlers share. Not a public header.
//
// One pass over the bytes: lines are found with memchr, checked for NUL/invalid UTF-8 with a word-wise scan, the
// logger prefix is stripped and the message is dispatched on its first character and cheap prefix checks
// (build_log_reader.cpp). Lines that carry nothing of interest (most of a real log: tactic timing noise) cost no
// allocation; the tactic bookkeeping keeps string_views into the input until a choice is recorded. The handlers of
// each topic live in a file of their own: build_log_messages.cpp (version lines, optimizer events),
// build_log_onnx_lines.cpp (the ONNX parser's lines), build_log_tactics.cpp (tactic selection),
// build_log_engine_block.cpp (engine layer lists and the blocks after them), build_log_profile.cpp (--dumpProfile
// tables and trtexec's options blocks).

#pragma once

#include "parsers/file_source.h"
#include "parsers/log_build_facts.h"
#include "qdq/readers.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qdq::buildlog
{

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

inline bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

inline std::string_view trim(std::string_view s)
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

inline bool isHexDigit(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

inline bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

inline bool parseDouble(std::string_view s, double& value)
{
    s = trim(s);
    if (s.empty())
    {
        return false;
    }
    auto result = std::from_chars(s.data(), s.data() + s.size(), value);
    return result.ec == std::errc() && result.ptr == s.data() + s.size();
}

inline bool parseInt(std::string_view s, std::int64_t& value)
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
std::string decodeVersionNumber(std::string_view digits);

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

    // The line loop and the dispatch (build_log_reader.cpp).
    void checkBytes(std::string_view line, std::uint64_t lineStart, std::uint64_t lineNo);
    void handleLine(std::string_view line, std::uint64_t lineNo);
    void handleContinuation(std::string_view line, std::uint64_t lineNo);
    void handleLooseLine(std::string_view text, std::uint64_t lineNo);
    void handleMessage(const Prefixed& prefixed, std::uint64_t lineNo);
    //! The messages told apart by their first character; false when the message is none of them.
    bool dispatchKeyed(const Prefixed& prefixed, std::uint64_t lineNo);
    bool dispatchT(std::string_view m, std::uint64_t lineNo);
    bool dispatchF(std::string_view m, std::uint64_t lineNo);
    bool dispatchEquals(const Prefixed& prefixed, std::uint64_t lineNo);
    bool dispatchR(std::string_view m, std::uint64_t lineNo);
    bool dispatchS(std::string_view m, std::uint64_t lineNo);
    bool dispatchC(std::string_view m, std::uint64_t lineNo);
    bool dispatchE(std::string_view m, std::uint64_t lineNo);
    bool dispatchM(std::string_view m, std::uint64_t lineNo);
    bool dispatchG(std::string_view m, std::uint64_t lineNo);
    bool dispatchA(std::string_view m, std::uint64_t lineNo);
    //! Messages recognized anywhere in the line, or by the build-fact and fallback readers.
    void handleUnkeyed(std::string_view m, std::uint64_t lineNo);
    void finish(std::string_view data);
    void checkRecognized() const;

    // Version lines and optimizer events (build_log_messages.cpp).
    void setVersion(std::string version, int priority, std::uint64_t lineNo);
    void readVersionLine(std::string_view m, std::uint64_t lineNo);
    void readBuilderResourceLibrary(std::string_view m, std::uint64_t lineNo);
    void addEvent(OptimizerEventKind kind, std::string_view pass, std::string_view subject, std::string_view object,
                  std::string_view detail, std::uint64_t lineNo);
    void readFusing(std::string_view m, std::uint64_t lineNo);
    void readRunning(std::string_view m, std::uint64_t lineNo);
    void readRetargeting(std::string_view m, std::uint64_t lineNo);
    void readSwapping(std::string_view m, std::uint64_t lineNo);
    //! "Swap the layer type of L from A to B" and "Convert layer type of L from A to B": rest is "L from A to B".
    void readLayerTypeChange(std::string_view rest, std::uint64_t lineNo);
    void readEliminating(std::string_view m, std::uint64_t lineNo);
    void readMerging(std::string_view m, std::uint64_t lineNo);
    void readGeneratingCopy(std::string_view m, std::uint64_t lineNo);
    void readGpuComputeTime(std::string_view m, std::uint64_t lineNo);
    void readQdqPhase(std::string_view m, std::uint64_t lineNo);
    void readOriginalLayerCount(std::string_view m, std::uint64_t lineNo);
    bool readAfterLayerCount(std::string_view m, std::uint64_t lineNo);
    void readAddingReformat(std::string_view m, std::uint64_t lineNo);

    // --dumpProfile tables and trtexec's options blocks (build_log_profile.cpp).
    void readOptionsTitle(std::string_view m);
    bool handleOptionLine(const Prefixed& prefixed, std::uint64_t lineNo);
    void readProfileTitle(std::string_view m, std::uint64_t lineNo);
    bool handleProfileLine(const Prefixed& prefixed, std::uint64_t lineNo);
    bool readProfileHeader(std::string_view text, std::uint64_t lineNo);
    bool readProfileRow(std::string_view text, std::uint64_t lineNo);
    //! Refuses a row whose times are not times (NaN, infinite, negative, absurd): parsers/profile_times.h.
    void checkProfileTimes(std::string_view name, const double (&values)[4], bool withMedian,
                           std::uint64_t lineNo) const;
    void adoptHeaderlessProfile();

    // Tactic selection (build_log_tactics.cpp).
    void readTacticName(std::string_view m);
    void readTimingRunner(std::string_view m);
    void readFastestTactic(std::string_view m);
    void readComputing(std::string_view m);
    void handleTactic(std::string_view message, std::uint64_t lineNo);
    bool handleFallback(std::string_view message, std::uint64_t lineNo);
    bool readPassFusing(std::string_view pass, std::string_view rest, std::uint64_t lineNo);
    void readProfilingCompleted(std::string_view message, std::size_t completed);
    //! "X Time: T" after "Fastest Tactic: ": the tactic, its time and the kernel name a "Tactic Name" line gave it.
    void fillFastest(std::string_view rest, RunnerResult& result) const;

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

    // The ONNX parser's lines (build_log_onnx_lines.cpp).
    bool handleNodeTensors(std::string_view message, std::uint64_t lineNo);
    void parserLineWarning(std::uint64_t lineNo, std::string message);
    void readParsingNode(std::string_view m, std::uint64_t lineNo);
    void readRegisteringLayer(std::string_view m, std::uint64_t lineNo);
    bool readMarkingOutput(std::string_view m, std::uint64_t lineNo);
    void readNetworkInput(std::string_view m, std::uint64_t lineNo);

    // Engine layer lists and the blocks after them (build_log_engine_block.cpp).
    void endListsAtBlankLine();
    void readLayerLine(std::string_view text, std::uint64_t lineNo);
    void readLayerRecord(std::string_view text, std::uint64_t lineNo);
    void readNamesOnlyLayer(std::string_view text, std::uint64_t lineNo);
    //! `"Name": "X",` then `"LayerType": "T",` of layer-info JSON pasted into a log; true when the line is taken.
    bool readPastedJsonLine(std::string_view text, std::uint64_t lineNo);
    bool handleElevenBlocks(std::string_view text, std::uint64_t lineNo);
    bool handleBindingLines(std::string_view text, std::uint64_t lineNo);
    void readL2CacheLayers(std::string_view message, std::uint64_t lineNo);
    void openBlock(LayerListForm form, std::uint64_t lineNo);
    void closeBlock();
    void addLayer(EngineLayer layer);
    std::size_t chooseEngineBlock() const;
    void adoptEngineBlock();
    void adoptSalvagedLayers();

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

} // namespace qdq::buildlog
