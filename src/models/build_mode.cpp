// The build mode: which TensorRT version built (or will build) the engine, and whether the network is weakly or
// strongly typed. Every command resolves it once, from the inputs and the command line, and every report shows it.
//
// Sources for the facts used here:
// - "Precision Control" (TensorRT 10.x and 11.0 docs) and the 10.12 / 11.0 release notes: weak typing was deprecated
//   in 10.12 and removed in 11.0; from 11.0 every network is strongly typed and --fp16, --int8, --best and --bf16 no
//   longer exist. Before 11.0, trtexec builds strongly typed only with --stronglyTyped.
// - ../shared/realdata/cookbook-mnist-trt10141/result-02.log: a 10.14 weakly typed build prints "Weakly-typed networks
//   have been deprecated" and "Precision: FP32+FP16" with --fp16 on its command line.
#include "qdq/analysis.h"
#include "qdq/diagnostics.h"
#include "qdq/predict.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>

namespace qdq
{
namespace
{

// The TensorRT releases whose behaviour qdq-doctor follows: 8.x, 10.x and 11.x (there is no 9.x TensorRT release in
// ../shared or in the documentation these rules follow); another version is an input error, not a silent guess.
constexpr int kKnownMajors[] = {8, 10, 11};

bool knownMajor(int major)
{
    return std::find(std::begin(kKnownMajors), std::end(kKnownMajors), major) != std::end(kKnownMajors);
}
// The first release whose networks are always strongly typed (TensorRT 11.0 release notes).
constexpr int kStrongTypingOnlyMajor = 11;
// The newest 11.x minor with real files in ../shared/realdata (11.1.0: cookbook111-*; FORMATS-trt11.md).
constexpr int kNewestCheckedMinor = 1;

struct Version
{
    int major = 0;
    int minor = 0;
};

Version parseVersion(const std::string& text)
{
    Version version;
    version.major = std::atoi(text.c_str());
    const auto dot = text.find('.');
    version.minor = dot == std::string::npos ? 0 : std::atoi(text.c_str() + dot + 1);
    return version;
}

bool hasFlag(const std::string& commandLine, const char* flag)
{
    return commandLine.find(flag) != std::string::npos;
}

//! The weak-typing flags a build log's options or command line name (unchanged from the simulator's first form).
void readPrecisionFlags(const BuildLog& log, SimulationOptions& options)
{
    for (const auto& [key, value] : log.buildOptions)
    {
        if (key == "Precision")
        {
            options.fp16 = value.find("FP16") != std::string::npos || value.find("BF16") != std::string::npos;
            options.int8 = value.find("INT8") != std::string::npos;
            options.precisionSource = log.sourcePath + " (Build Options: Precision: " + value + ")";
            return;
        }
    }
    if (!log.commandLine.empty())
    {
        const std::string& cmd = log.commandLine;
        const bool best = hasFlag(cmd, "--best");
        options.fp16 = best || hasFlag(cmd, "--fp16");
        options.int8 = best || hasFlag(cmd, "--int8");
        options.precisionSource = log.sourcePath + " (command line)";
    }
}

//! The typing a build log tells: its version (11.x is always strong), else the evidence the reader found
//! (log_build_facts.h): a strongly typed line (--stronglyTyped on the command line, "Precision: Strongly Typed" in
//! the options block) wins over the weak ones (a trtexec command line without it, the 10.12+ deprecation warning).
void readTyping(const BuildLog& log, SimulationOptions& options)
{
    if (options.trtMajor >= kStrongTypingOnlyMajor)
    {
        options.typing = Typing::kStrong;
        options.typingSource = log.sourcePath + ": TensorRT " + std::to_string(options.trtMajor) +
                               ", which builds every network strongly typed";
        options.typingAssumed = false;
        return;
    }
    const TypingEvidence* evidence = log.typing();
    if (evidence == nullptr)
    {
        return;
    }
    options.typing = evidence->stronglyTyped ? Typing::kStrong : Typing::kWeak;
    options.typingSource =
        log.sourcePath + (evidence->line != 0 ? ":" + std::to_string(evidence->line) : "") + ": " + evidence->what;
    options.typingAssumed = false;
}

//! Where a version known only by its major came from: the 11.x-only forms of a layer list (WriterEvidence).
std::string writerEvidenceText(const Inputs& inputs)
{
    const EnginePlan* plans[] = {inputs.layerInfo ? &*inputs.layerInfo : nullptr,
                                 inputs.buildLog ? &inputs.buildLog->engine : nullptr};
    for (const EnginePlan* plan : plans)
    {
        if (plan != nullptr && plan->writer.trtMajor != 0)
        {
            return plan->sourcePath + ":" + std::to_string(plan->writer.line) + ": " + plan->writer.what;
        }
    }
    return "the inputs";
}

//! Under strong typing no flag picks a precision: the float parts run in the graph's own type, which the
//! simulator reads from the model (an FP32 model: FP32).
void dropPrecisionFlags(SimulationOptions& options)
{
    options.fp16 = false;
    options.int8 = true;
    options.precisionSource = "strongly typed: each tensor keeps the model's type (Q/DQ decide the quantized parts)";
}

//! --trt-version read and checked: a version of a known major (8.x, 10.x, 11.x, any minor).
SimulationOptions checkedRequestedVersion(const std::string& requested)
{
    SimulationOptions parsed;
    applyTrtVersion(requested, parsed);
    if (!knownMajor(parsed.trtMajor))
    {
        throw InputError(SourceLocation{"--trt-version"},
                         "qdq-doctor knows TensorRT 8.x, 10.x and 11.x, not '" + printable(requested, 64) + "'");
    }
    return parsed;
}

void applyRequestedVersion(const Inputs& inputs, const std::string& requested, SimulationOptions& options)
{
    const SimulationOptions parsed = checkedRequestedVersion(requested);
    const std::string told = inputs.trtVersion();
    if (!told.empty())
    {
        const Version fromInputs = parseVersion(told);
        const bool minorGiven = requested.find('.') != std::string::npos;
        const bool minorTold = told.find('.') != std::string::npos;
        if (fromInputs.major != parsed.trtMajor || (minorGiven && minorTold && fromInputs.minor != parsed.trtMinor))
        {
            throw InputError(SourceLocation{"--trt-version"}, "TensorRT " + printable(requested, 64) + " contradicts " +
                                                                  options.versionSource +
                                                                  ", which was built with TensorRT " + printable(told));
        }
        if (minorGiven && !minorTold)
        {
            // The inputs told the major only (11.x forms): the option adds the minor.
            options.trtMinor = parsed.trtMinor;
            options.trtMinorKnown = true;
            options.versionSource += ", minor from --trt-version " + printable(requested, 64);
        }
        return; // the inputs' version is the more precise one
    }
    options.trtMajor = parsed.trtMajor;
    options.trtMinor = parsed.trtMinor;
    options.versionSource = "--trt-version " + printable(requested, 64);
}

//! A log without a version whose command line builds weakly typed (it names a precision flag) cannot be a TensorRT 11
//! build: 11.0 removed --fp16, --int8, --best and --bf16 (TensorRT 11.0 release notes, "Migrating from TensorRT 10.x to
//! 11.x"). A command line that merely lacks --stronglyTyped is an 11.x one too (the flag is a no-op there).
void refuseWeakLogOnStrongOnlyVersion(const Inputs& inputs, const SimulationOptions& options)
{
    const std::string& cmd = inputs.buildLog ? inputs.buildLog->commandLine : std::string();
    for (const char* flag : {"--fp16", "--int8", "--best", "--bf16"})
    {
        if (hasFlag(cmd, flag))
        {
            throw InputError(SourceLocation{"--trt-version"},
                             "TensorRT " + std::to_string(options.trtMajor) + " has no weak typing and no " + flag +
                                 ", but " + inputs.buildLog->sourcePath + "'s trtexec command line names " + flag +
                                 ": that build is an older, weakly typed one");
        }
    }
}

void applyRequestedTyping(Typing requested, SimulationOptions& options)
{
    const char* option = requested == Typing::kStrong ? "--strongly-typed" : "--weakly-typed";
    if (requested == Typing::kWeak && options.trtMajor >= kStrongTypingOnlyMajor)
    {
        throw InputError(SourceLocation{option}, "TensorRT " + std::to_string(options.trtMajor) + " (" +
                                                     options.versionSource +
                                                     ") has no weak typing: every network is strongly typed");
    }
    if (!options.typingAssumed && options.typing != requested)
    {
        throw InputError(SourceLocation{option}, std::string(option) + " contradicts " + options.typingSource + " (" +
                                                     std::string(typingName(options.typing)) + ")");
    }
    options.typing = requested;
    options.typingSource = option;
    options.typingAssumed = false;
}

} // namespace

void checkBuildModeRequest(const BuildModeRequest& request)
{
    if (!request.trtVersion.empty())
    {
        const SimulationOptions parsed = checkedRequestedVersion(request.trtVersion);
        if (request.typing == Typing::kWeak && parsed.trtMajor >= kStrongTypingOnlyMajor)
        {
            throw InputError(SourceLocation{"--weakly-typed"}, "TensorRT " + std::to_string(parsed.trtMajor) +
                                                                   " has no weak typing: every network is strongly "
                                                                   "typed (--trt-version " +
                                                                   printable(request.trtVersion, 64) + ")");
        }
    }
    if (!request.gpu.empty())
    {
        parseGpuOption(request.gpu);
    }
}

std::string_view typingName(Typing typing)
{
    return typing == Typing::kStrong ? "strongly typed" : "weakly typed";
}

SimulationOptions simulationOptionsFor(const Inputs& inputs)
{
    SimulationOptions options;
    options.precisionSource = "default (--int8 --fp16)";
    options.typingSource = "assumed: no build log tells it; pass --strongly-typed, or --trt-version 11, where every "
                           "network is strongly typed";
    const std::string version = inputs.trtVersion();
    if (!version.empty())
    {
        const Version parsed = parseVersion(version);
        options.trtMajor = parsed.major;
        options.trtMinor = parsed.minor;
        options.trtMinorKnown = version.find('.') != std::string::npos;
        options.versionSource =
            inputs.buildLog && inputs.buildLog->trtVersion ? inputs.buildLog->sourcePath : std::string("the inputs");
        for (const auto& source : inputs.sources)
        {
            if (source.trtVersion && *source.trtVersion == version && !inputs.buildLog)
            {
                options.versionSource = source.path;
                break;
            }
        }
        if (!options.trtMinorKnown)
        {
            options.versionSource = writerEvidenceText(inputs);
        }
    }
    if (inputs.buildLog)
    {
        readPrecisionFlags(*inputs.buildLog, options);
        readTyping(*inputs.buildLog, options);
    }
    else if (options.trtMajor >= kStrongTypingOnlyMajor)
    {
        // A layer list of TensorRT 11 alone (its version from its 11.x forms): strongly typed, never an assumed weak
        // build (TensorRT 11.0 release notes: weak typing is gone).
        options.typing = Typing::kStrong;
        options.typingSource = options.versionSource + ": TensorRT " + std::to_string(options.trtMajor) +
                               ", which builds every network strongly typed";
        options.typingAssumed = false;
    }
    if (options.stronglyTyped())
    {
        dropPrecisionFlags(options);
    }
    options.gpu = gpuFromInputs(inputs); // the log's device lines, else kernel names (qdq/target_gpu.h)
    return options;
}

SimulationOptions resolveBuildMode(const Inputs& inputs, const BuildModeRequest& request)
{
    checkBuildModeRequest(request);
    SimulationOptions options = simulationOptionsFor(inputs);
    if (!request.trtVersion.empty())
    {
        applyRequestedVersion(inputs, request.trtVersion, options);
        if (options.trtMajor >= kStrongTypingOnlyMajor && !options.typingAssumed && options.typing == Typing::kWeak)
        {
            refuseWeakLogOnStrongOnlyVersion(inputs, options);
        }
        if (options.trtMajor >= kStrongTypingOnlyMajor && (options.typingAssumed || options.typing == Typing::kWeak))
        {
            options.typing = Typing::kStrong;
            options.typingSource = "TensorRT " + std::to_string(options.trtMajor) +
                                   " builds every network strongly typed (" + options.versionSource + ")";
            options.typingAssumed = false;
        }
    }
    if (request.typing)
    {
        applyRequestedTyping(*request.typing, options);
    }
    if (options.stronglyTyped())
    {
        dropPrecisionFlags(options);
    }
    if (!request.gpu.empty())
    {
        // --gpu, checked against the inputs (qdq/target_gpu.h); without it the GPU the inputs tell is already in
        // options (reading it again scanned every kernel name a second time: about 1% of a 100,000-layer diagnose).
        options.gpu = resolveTargetGpu(inputs, request.gpu);
    }
    return options;
}

std::string describeBuildMode(const SimulationOptions& mode)
{
    std::string text = "TensorRT ";
    if (mode.trtMajor == 0)
    {
        text += "version unknown (simulated as 10.x)";
    }
    else
    {
        text += std::to_string(mode.trtMajor) + "." + (mode.trtMinorKnown ? std::to_string(mode.trtMinor) : "x") +
                " (" + mode.versionSource + ")";
        if (mode.trtMajor == kStrongTypingOnlyMajor && mode.trtMinor > kNewestCheckedMinor)
        {
            // The TensorRT 11 files the rules were checked on are 11.0 and 11.1 (../shared/realdata/FORMATS-trt11.md).
            text += " (newer than 11." + std::to_string(kNewestCheckedMinor) +
                    ", the newest TensorRT whose files qdq-doctor's rules were checked on: its advice is unverified "
                    "there)";
        }
    }
    text += ", " + std::string(typingName(mode.typing));
    if (!mode.stronglyTyped())
    {
        text += std::string(mode.int8 ? " --int8" : "") + (mode.fp16 ? " --fp16" : "");
        if (!mode.int8 && !mode.fp16)
        {
            text += " (FP32)";
        }
    }
    text += " (" + mode.typingSource + ")";
    if (mode.gpu)
    {
        text += ", GPU " + mode.gpu->describe();
    }
    return text;
}

const SimulationOptions& Context::buildMode() const
{
    static const SimulationOptions kDefault = [] { return simulationOptionsFor(Inputs{}); }();
    return mode != nullptr ? *mode : kDefault;
}

} // namespace qdq
