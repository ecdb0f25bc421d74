// The 10.x/11.x lines of a build log that tell how the engine was built (log_build_facts.h).
//
// Every form read here is quoted from a real log of ../shared/realdata or from trtexec's source:
// - trtexec's typing lines: NVIDIA/TensorRT samples/common/sampleOptions.cpp (10.x). BuildOptions::parse warns
//   "Weakly-typed networks have been deprecated in TensorRT. ..." when --fp16, --bf16, --int8, --fp8, --int4 or --best
//   is set, and "Invalid usage, setting <mode> mode is not allowed if graph is strongly typed. Disabling
//   BuilderFlag::k<MODE>." when one of them comes with --stronglyTyped; printPrecision writes "Precision: Strongly
//   Typed" in the Build Options block of a --stronglyTyped build. The warning is line 2 of
//   cookbook-mnist-trt10141/result-02.log (10.14.1, --fp16).
// - "Compiler backend is used during engine build." / "... during engine execution.", "Engine generation completed
//   in X seconds.", "Total Activation Memory: N bytes", "Total Weights Memory: N bytes": cookbook-mnist-trt10141
//   (result-02.log lines 1361 and 2772-2789, the non-verbose result-04.log lines 132-142) and
//   cookbook-profilingverbosity-trt1016. In every real log the build line comes right after the first Myelin runner
//   is timed ("Timing Runner: {ForeignNode[...]} (Myelin[0x80000023])"), so the compiler backend is read as Myelin,
//   TensorRT's graph compilation and execution backend (NVIDIA/TensorRT#2576, a maintainer's answer). That reading
//   is an inference from the logs: no NVIDIA page defines the line.
// - Backend strategies: result-02.log (BuilderOptimizationLevel 5) builds the network three times: "Building graph
//   using backend strategy 4" (line 511), "Use backend strategy 4 with estimated inference time (0.22528) as the
//   initial choice." (2800), "Skip backend strategy 3since its estimated inference time (0.257024) is not faster than
//   the previous engine with estimated inference time (0.22528)." (4195; no space before "since" in the log), and its
//   one engine layer list is strategy 4's engine.
// - Myelin: "ForeignNode {ForeignNode[node_conv2d...node_relu]} metadata: [ONNX Layer: node_conv2d][ONNX Layer:
//   node_relu]" and " (foreignNode) Autotuning op node_linear: [ONNX Layer: node_linear]" followed by " (foreignNode)
//   Sorted table of all evaluated tactics:", its header "tactic_id, cost(in ms), cost/fastest_cost,
//   prediction_correlation, kernel_name, tactic_hash, tunable_parameter" and rows fastest first (result-02.log lines
//   1358-1368). "... all operators supported by Myelin will be offloaded to Myelin." (line 2812).
// - "UNSUPPORTED_STATE: Skipping tactic 0 due to insufficient memory on requested size of 2688 detected for tactic
//   0x0000000000000000." (result-02.log line 2883, a build whose workspace pool was 1 KiB).
// - "For layer {ForeignNode[node_conv2d...node_relu]} a non-conforming implementation was chosen than was requested
//   i.e. requested layer computation precision and output precision types were ignored because it resulted in faster
//   network performance. ..." (result-02.log line 4159; the same sentence in the 8.0.3 and 8.4.1 cookbook logs).
// - "Throughput: 1995.29 qps" in trtexec's performance summary (fuzzylabs-alexnet-fp16-trt10 excerpt line 166).

#include "parsers/log_build_facts.h"

#include <charconv>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>

namespace qdq
{

namespace
{

bool startsWith(std::string_view text, std::string_view prefix)
{
    return text.substr(0, prefix.size()) == prefix;
}

std::string_view trimmed(std::string_view text)
{
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    {
        text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '.' || text.back() == ','))
    {
        text.remove_suffix(1);
    }
    return text;
}

//! The number at the start of text ("0.22528) as ...", "8.33141 seconds."): nullopt when there is none.
std::optional<double> leadingNumber(std::string_view text)
{
    text = trimmed(text);
    double value = 0.0;
    const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (result.ec != std::errc() || result.ptr == text.data())
    {
        return std::nullopt;
    }
    return value;
}

std::optional<std::uint64_t> leadingCount(std::string_view text)
{
    text = trimmed(text);
    std::uint64_t value = 0;
    const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (result.ec != std::errc() || result.ptr == text.data())
    {
        return std::nullopt;
    }
    return value;
}

//! "[ONNX Layer: a][ONNX Layer: b]" into {a, b}. A separator may stand between the entries: the layer-info JSON of
//! 10.x joins them with U+001E or U+001F, which a text dump prints as is (FORMATS.md section 2b).
std::vector<std::string> onnxLayers(std::string_view text)
{
    static constexpr std::string_view kOpen = "[ONNX Layer: ";
    std::vector<std::string> names;
    std::size_t at = text.find(kOpen);
    while (at != std::string_view::npos)
    {
        const std::size_t start = at + kOpen.size();
        const std::size_t next = text.find(kOpen, start);
        std::string_view entry = text.substr(start, next == std::string_view::npos ? text.npos : next - start);
        const std::size_t close = entry.rfind(']');
        names.emplace_back(close == std::string_view::npos ? trimmed(entry) : entry.substr(0, close));
        at = next;
    }
    return names;
}

void addTyping(BuildLog& log, bool stronglyTyped, std::string what, std::uint64_t lineNo)
{
    log.typingEvidence.push_back({stronglyTyped, std::move(what), lineNo});
}

bool readTypingWarning(std::string_view m, std::uint64_t lineNo, BuildLog& log)
{
    if (startsWith(m, "Weakly-typed networks have been deprecated"))
    {
        addTyping(log, false,
                  "trtexec's warning \"Weakly-typed networks have been deprecated\" (printed for --fp16, --bf16, "
                  "--int8, --fp8, --int4 or --best without --stronglyTyped)",
                  lineNo);
        return true;
    }
    if (startsWith(m, "Invalid usage, setting ") && m.find("not allowed if graph is strongly typed") != m.npos)
    {
        addTyping(log, true, "trtexec's warning \"" + std::string(trimmed(m)) + "\" (--stronglyTyped was set)", lineNo);
        return true;
    }
    return false;
}

//! "Building graph using backend strategy N", "Use backend strategy N with estimated inference time (X) ...",
//! "Skip backend strategy Nsince its estimated inference time (X) is not faster ...".
bool readBackendStrategy(std::string_view m, std::uint64_t lineNo, BuildLog& log, BuildFactState& state)
{
    static constexpr std::string_view kBuilding = "Building graph using backend strategy ";
    static constexpr std::string_view kUse = "Use backend strategy ";
    static constexpr std::string_view kSkip = "Skip backend strategy ";
    if (startsWith(m, kBuilding))
    {
        const auto id = leadingCount(m.substr(kBuilding.size()));
        BackendStrategy strategy;
        strategy.id = id ? static_cast<int>(*id) : -1;
        strategy.line = lineNo;
        log.backendStrategies.push_back(strategy);
        return true;
    }
    const bool use = startsWith(m, kUse);
    if (!use && !startsWith(m, kSkip))
    {
        return false;
    }
    const auto id = leadingCount(m.substr(use ? kUse.size() : kSkip.size()));
    const std::size_t open = m.find("estimated inference time (");
    const std::optional<double> estimate =
        open == std::string_view::npos ? std::nullopt : leadingNumber(m.substr(open + 26));
    for (auto it = log.backendStrategies.rbegin(); it != log.backendStrategies.rend(); ++it)
    {
        if (id && it->id == static_cast<int>(*id))
        {
            it->estimatedTime = estimate;
            it->kept = use;
            it->skipped = !use;
            break;
        }
    }
    if (use)
    {
        // A later "Use backend strategy M" replaces the engine kept so far (a guess: the real log keeps its first).
        for (auto& strategy : log.backendStrategies)
        {
            strategy.kept = id && strategy.id == static_cast<int>(*id);
        }
        state.keptBuild = log.summary;
    }
    else if (state.keptBuild)
    {
        // The memory and time lines of the build not kept give way to the kept build's; the counts stay.
        BuildSummary kept = *state.keptBuild;
        kept.engineGenerations = log.summary.engineGenerations;
        kept.compilerBackendBuildLine = log.summary.compilerBackendBuildLine;
        kept.compilerBackendExecutionLine = log.summary.compilerBackendExecutionLine;
        kept.myelinOffloadAllLine = log.summary.myelinOffloadAllLine;
        kept.onnxOpset = log.summary.onnxOpset;
        kept.onnxProducer = log.summary.onnxProducer;
        log.summary = std::move(kept);
    }
    return true;
}

//! " (foreignNode) ..." lines of Myelin's own autotuning.
bool readMyelinTuningLine(std::string_view m, std::uint64_t lineNo, BuildLog& log, BuildFactState& state)
{
    static constexpr std::string_view kTag = "(foreignNode)";
    std::string_view text = m;
    while (!text.empty() && text.front() == ' ')
    {
        text.remove_prefix(1);
    }
    if (!startsWith(text, kTag))
    {
        state.inMyelinTable = false;
        return false;
    }
    text = trimmed(text.substr(kTag.size()));
    static constexpr std::string_view kAutotuning = "Autotuning op ";
    if (startsWith(text, kAutotuning))
    {
        MyelinOpTuning op;
        const std::string_view rest = text.substr(kAutotuning.size());
        const std::size_t colon = rest.find(": [ONNX Layer: ");
        op.op = std::string(rest.substr(0, colon));
        if (colon != std::string_view::npos)
        {
            op.onnxNodes = onnxLayers(rest.substr(colon + 2));
        }
        op.line = lineNo;
        log.myelinOps.push_back(std::move(op));
        state.inMyelinTable = false;
        return true;
    }
    if (startsWith(text, "Sorted table of all evaluated tactics"))
    {
        state.inMyelinTable = true;
        return true;
    }
    if (!state.inMyelinTable || log.myelinOps.empty() || startsWith(text, "tactic_id"))
    {
        return true;
    }
    // "30, 0.0134048, 1.00000, 1.35264, sm80_xmma_gemm_..., 0x2c5964633a5ce,": most rows are only counted (a table
    // may have hundreds); the first, the fastest, is split into its fields.
    const std::size_t comma = text.find(',');
    if (comma == std::string_view::npos || !leadingCount(text.substr(0, comma)))
    {
        state.inMyelinTable = false;
        return true;
    }
    MyelinOpTuning& op = log.myelinOps.back();
    if (op.tacticsTimed++ > 0)
    {
        return true;
    }
    std::string_view fields[5];
    std::size_t count = 0;
    std::size_t start = 0;
    while (count < 5 && start <= text.size())
    {
        const std::size_t end = text.find(',', start);
        fields[count++] = trimmed(text.substr(start, end == std::string_view::npos ? text.npos : end - start));
        if (end == std::string_view::npos)
        {
            break;
        }
        start = end + 1;
    }
    if (count == 5)
    {
        op.fastestMs = leadingNumber(fields[1]);
        op.fastestKernel = std::string(fields[4]);
    }
    return true;
}

bool readMyelinRegion(std::string_view m, std::uint64_t lineNo, BuildLog& log)
{
    static constexpr std::string_view kHead = "ForeignNode {ForeignNode[";
    if (!startsWith(m, kHead))
    {
        return false;
    }
    // A region of a second optimization profile is named "{ForeignNode[...]} [profile 1]" (cookbook 10.16 log).
    const std::size_t end = m.find(" metadata:");
    if (end == std::string_view::npos)
    {
        return false;
    }
    LoggedMyelinRegion region;
    region.name = std::string(m.substr(12, end - 12));
    region.onnxNodes = onnxLayers(m.substr(end));
    region.line = lineNo;
    log.myelinRegions.push_back(std::move(region));
    return true;
}

//! The summary lines every log has, verbose or not.
bool readSummaryLine(std::string_view m, std::uint64_t lineNo, BuildLog& log)
{
    BuildSummary& summary = log.summary;
    if (startsWith(m, "Compiler backend is used during engine "))
    {
        const bool execution = m.find("execution") != std::string_view::npos;
        std::uint64_t& line = execution ? summary.compilerBackendExecutionLine : summary.compilerBackendBuildLine;
        line = line == 0 ? lineNo : line;
        return true;
    }
    // Only a line that carries its number counts: trtexec's verbose glossary after the performance summary starts
    // with the same words ("Throughput: the observed throughput computed by ...", fuzzylabs excerpt line 180).
    static constexpr std::string_view kSeconds = "Engine generation completed in ";
    static constexpr std::string_view kActivation = "Total Activation Memory: ";
    static constexpr std::string_view kWeights = "Total Weights Memory: ";
    static constexpr std::string_view kSize = "Created engine with size: ";
    static constexpr std::string_view kBuilt = "Engine built in ";
    static constexpr std::string_view kThroughput = "Throughput: ";
    if (startsWith(m, kSeconds) && leadingNumber(m.substr(kSeconds.size())))
    {
        summary.generationSeconds = leadingNumber(m.substr(kSeconds.size()));
        ++summary.engineGenerations;
        return true;
    }
    for (const auto& [prefix, bytes] :
         {std::pair{kActivation, &summary.activationBytes}, std::pair{kWeights, &summary.weightsBytes}})
    {
        if (startsWith(m, prefix) && leadingCount(m.substr(prefix.size())) && m.find(" bytes") != m.npos)
        {
            *bytes = leadingCount(m.substr(prefix.size()));
            return true;
        }
    }
    for (const auto& [prefix, unit, value] :
         {std::tuple{kSize, std::string_view(" MiB"), &summary.engineSizeMiB},
          std::tuple{kBuilt, std::string_view(" sec"), &summary.buildSeconds},
          std::tuple{kThroughput, std::string_view(" qps"), &summary.throughputQps}})
    {
        if (startsWith(m, prefix) && leadingNumber(m.substr(prefix.size())) && m.find(unit) != m.npos)
        {
            *value = leadingNumber(m.substr(prefix.size()));
            return true;
        }
    }
    // The ONNX parser's model header, at info level (result-02.log lines 170-172, result-04.log lines 119-121).
    if (startsWith(m, "Opset version:"))
    {
        const auto opset = leadingCount(m.substr(14));
        summary.onnxOpset = opset ? std::optional<int>(static_cast<int>(*opset)) : summary.onnxOpset;
        return true;
    }
    if (startsWith(m, "Producer name:") || startsWith(m, "Producer version:"))
    {
        const std::string_view value = trimmed(m.substr(m.find(':') + 1));
        if (startsWith(m, "Producer name:"))
        {
            summary.onnxProducer = std::string(value); // each parse of a log with several builds starts afresh
        }
        else if (!value.empty())
        {
            summary.onnxProducer += (summary.onnxProducer.empty() ? "" : " ") + std::string(value);
        }
        return true;
    }
    if (startsWith(m, "InternalBuildFlags::") &&
        m.find("all operators supported by Myelin will be offloaded to Myelin") != std::string_view::npos)
    {
        summary.myelinOffloadAllLine = summary.myelinOffloadAllLine == 0 ? lineNo : summary.myelinOffloadAllLine;
        return true;
    }
    return false;
}

} // namespace

bool readBuildFactLine(std::string_view message, std::uint64_t lineNo, BuildLog& log, BuildFactState& state)
{
    if (message.empty())
    {
        return false;
    }
    if (readMyelinTuningLine(message, lineNo, log, state))
    {
        return true;
    }
    switch (message.front())
    {
    case 'W':
    case 'I':
        return readTypingWarning(message, lineNo, log) || readSummaryLine(message, lineNo, log);
    case 'B':
    case 'U':
    case 'S':
        if (startsWith(message, "UNSUPPORTED_STATE: Skipping tactic ") &&
            message.find("due to insufficient memory") != std::string_view::npos)
        {
            log.memorySkips.push_back({std::string(trimmed(message)), lineNo});
            return true;
        }
        return readBackendStrategy(message, lineNo, log, state);
    case 'F':
        if (startsWith(message, "For layer ") &&
            message.find(" a non-conforming implementation was chosen") != message.npos)
        {
            const std::string_view rest = message.substr(10);
            log.nonConformingLayers.push_back(
                {std::string(rest.substr(0, rest.find(" a non-conforming implementation"))), lineNo});
            return true;
        }
        return readMyelinRegion(message, lineNo, log);
    default:
        return readSummaryLine(message, lineNo, log);
    }
}

void readOptionTyping(std::string_view key, std::string_view value, std::uint64_t lineNo, BuildLog& log)
{
    if (key == "Precision" && trimmed(value) == "Strongly Typed")
    {
        addTyping(log, true, "Build Options: Precision: Strongly Typed", lineNo);
    }
}

void readCommandLineTyping(std::uint64_t commandLineLine, BuildLog& log)
{
    if (log.commandLine.empty())
    {
        return;
    }
    const bool strong = log.commandLine.find("--stronglyTyped") != std::string::npos;
    if (!strong && log.trtVersion && std::atoi(log.trtVersion->c_str()) >= 11)
    {
        return; // from 11.0 every network is strongly typed and --stronglyTyped is a no-op (build_mode.cpp)
    }
    TypingEvidence evidence{
        strong, strong ? "trtexec command line with --stronglyTyped" : "trtexec command line without --stronglyTyped",
        commandLineLine};
    log.typingEvidence.insert(log.typingEvidence.begin(), std::move(evidence));
}

} // namespace qdq
