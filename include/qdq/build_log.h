// A TensorRT verbose build log (trtexec --verbose, Python/C++ loggers), streamed. Every event keeps its line number.
#pragma once

#include "qdq/diagnostics.h"
#include "qdq/engine_plan.h"
#include "qdq/profile.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qdq
{

//! One entry of a parser node's `inputs:` / `outputs:` line: `[name -> (dims)[TYPE]]`. `[optional input, not set]`
//! is an entry with an empty name.
struct ParsedTensor
{
    std::string name;
    std::vector<std::int64_t> dims; //!< -1 for a dynamic dimension
    bool dimsKnown = false;
    std::string type; //!< element type as printed: FLOAT, HALF, INT8, INT32, INT64, BOOL, ...; empty when absent
};

//! `Parsing node: X [OpType]`, with the `X [OpType] inputs: [...]` and `X [OpType] outputs: [...]` lines that follow
//! it (the ONNX parser's view of the node).
struct ParsedOnnxNode
{
    std::string onnxNode;
    std::string opType;
    std::uint64_t line = 0;
    std::vector<ParsedTensor> inputs;
    std::vector<ParsedTensor> outputs;
    std::uint64_t inputsLine = 0;  //!< 0 when the log has no inputs line for the node
    std::uint64_t outputsLine = 0; //!< 0 when the log has no outputs line (cut off, or the import failed)
};

//! `Adding network input: x with dtype: float32, dimensions: (-1, 1, 28, 28)`
struct ParsedNetworkInput
{
    std::string name;
    std::string dtype; //!< as printed: float32, float16, int8, int32, bool, ...
    std::vector<std::int64_t> dims;
    bool dimsKnown = false;
    std::uint64_t line = 0;
};

//! `Importing initializer: conv1.weight`
struct ParsedInitializer
{
    std::string name;
    std::uint64_t line = 0;
};

//! `Marking y_3 as output: y`
struct ParsedNetworkOutput
{
    std::string trtTensor;  //!< TensorRT's tensor name (y_3)
    std::string onnxTensor; //!< the ONNX tensor it stands for (y)
    std::uint64_t line = 0;
};

//! `Registering layer: L for ONNX node: N`
struct RegisteredLayer
{
    std::string trtLayer;
    std::string onnxNode;
    std::uint64_t line = 0;
};

enum class OptimizerEventKind
{
    kRunning,   //!< `Running: Pass on X` (target may be empty: 8.2 `Running: Pass`)
    kFuse,      //!< `Pass: Fusing A with B`, `QuantizeDoubleInputNodes: fusing X into Y`
    kRemove,    //!< `Removing X`
    kSwap,      //!< `Swapping A with B`
    kEliminate, //!< `Eliminating X which duplicates (Q) Y`, `Eliminating concatenation X`, `Eliminating slice X ...`
    kMerge,     //!< `Merging layers: A || B`
    kSwapLayerType, //!< `Swap the layer type of X from A to B`, `Convert layer type of X from A to B`
    kGenerateCopy,  //!< `Generating copy for T to U because ...`
    kRetarget,      //!< `Retargeting T to U`
    kQdqPhase,      //!< `QDQ graph optimizer ...` / `QDQ optimization pass` banners
    kLayerCount,    //!< `Original: N layers`, `After X: N layers`
    kAddReformat,   //!< `Adding reformat layer: ...`
};

struct OptimizerEvent
{
    OptimizerEventKind kind = OptimizerEventKind::kRunning;
    std::string pass;    //!< pass name when known (ConstWeightsQuantizeFusion, QDQToCopy, ...)
    std::string subject; //!< A / X / T
    std::string object;  //!< B / Y / U, or the new layer type for kSwapLayerType, or the count for kLayerCount
    std::string detail;  //!< from-type for kSwapLayerType, reason for kGenerateCopy, phase text, ...
    std::uint64_t line = 0;
};

struct TacticChoice
{
    std::string layer;      //!< layer / node name being timed
    std::string runnerType; //!< CaskConvolution, Reformat, ...
    std::string tactic;     //!< fastest / chosen tactic id as printed
    std::string tacticName; //!< kernel name when printed
    std::optional<double> timeMs;
    std::uint64_t line = 0;
};

//! `[E]`/`ERROR`/`[W]`/`WARNING` lines.
struct LogMessage
{
    std::string text;
    std::uint64_t line = 0;
};

//! A line that tells whether the network was built weakly or strongly typed.
struct TypingEvidence
{
    bool stronglyTyped = false;
    std::string what; //!< the evidence in words: "trtexec command line with --stronglyTyped", ...
    std::uint64_t line = 0;
};

//! `ForeignNode {ForeignNode[a...b]} metadata: [ONNX Layer: a][ONNX Layer: b]` (10.x): the ONNX nodes of a Myelin
//! region, printed before the region is timed.
struct LoggedMyelinRegion
{
    std::string name; //!< {ForeignNode[a...b]}
    std::vector<std::string> onnxNodes;
    std::uint64_t line = 0;
};

//! Myelin's tuning of one op of a region (10.x): ` (foreignNode) Autotuning op X: [ONNX Layer: ...]`, then its
//! "Sorted table of all evaluated tactics" (fastest first: tactic_id, cost in ms, cost/fastest_cost, ...,
//! kernel_name, tactic_hash, ...).
struct MyelinOpTuning
{
    std::string op;
    std::vector<std::string> onnxNodes;
    std::string fastestKernel; //!< kernel_name of the table's first row; empty when the log has no table
    std::optional<double> fastestMs;
    std::size_t tacticsTimed = 0; //!< rows of the table
    std::uint64_t line = 0;
};

//! One engine build of a 10.x builder that tries several backend strategies (`Building graph using backend strategy
//! N`), with the verdict the log gives it.
struct BackendStrategy
{
    int id = 0;
    std::uint64_t line = 0;
    std::optional<double> estimatedTime; //!< "estimated inference time (X)" of the verdict (the log prints no unit)
    bool kept = false;                   //!< "Use backend strategy N ... as the initial choice"
    bool skipped = false;                //!< "Skip backend strategy N since ... is not faster"
};

//! What a log says about the engine it built, verbose or not (trtexec's and the builder's info lines).
struct BuildSummary
{
    std::optional<double> engineSizeMiB;          //!< "Created engine with size: 6.3747 MiB"
    std::optional<double> buildSeconds;           //!< "Engine built in 13.8436 sec."
    std::optional<double> generationSeconds;      //!< the last "Engine generation completed in X seconds."
    std::size_t engineGenerations = 0;            //!< "Engine generation completed" lines (one per build)
    std::optional<std::uint64_t> activationBytes; //!< the last "Total Activation Memory: N bytes"
    std::optional<std::uint64_t> weightsBytes;    //!< the last "Total Weights Memory: N bytes"
    std::optional<double> throughputQps;          //!< "Throughput: X qps" (inference run)
    std::optional<int> onnxOpset;                 //!< the ONNX parser's "Opset version:    17" (info level)
    std::string onnxProducer; //!< "Producer name:" and "Producer version:" joined: "pytorch 2.10.0a0+..."
    std::uint64_t compilerBackendBuildLine = 0;     //!< first "Compiler backend is used during engine build."
    std::uint64_t compilerBackendExecutionLine = 0; //!< first "Compiler backend is used during engine execution."
    std::uint64_t myelinOffloadAllLine = 0;         //!< "... all operators supported by Myelin will be offloaded"
};

struct BuildLog
{
    std::string sourcePath;
    std::uint64_t lineCount = 0;
    std::uint64_t byteCount = 0;
    std::uint64_t verboseLines = 0; //!< logger lines at verbose severity: 0 for a log written without --verbose

    std::optional<std::string> trtVersion;                         //!< "8.5.2", "10.16.0" ...
    std::vector<std::pair<std::string, std::string>> modelOptions; //!< === Model Options ===
    std::vector<std::pair<std::string, std::string>> buildOptions; //!< === Build Options ===
    std::vector<std::pair<std::string, std::string>> deviceInfo;   //!< === Device Information ===
    std::string commandLine; //!< from `&&&& RUNNING TensorRT.trtexec [TensorRT vNNNN] # cmd`

    bool explicitPrecisionMarker = false; //!< `Calibrator won't be used in explicit precision mode`
    bool implicitInt8Marker = false;      //!< `Setting dynamic range for ...` / `Calibration: Dynamic` etc.

    //! The ONNX parser's lines, in log order (a log may hold several parses: log_graph.h takes the first).
    std::vector<ParsedNetworkInput> networkInputs;
    std::vector<ParsedInitializer> initializers;
    std::vector<ParsedOnnxNode> parsedNodes;
    std::vector<ParsedNetworkOutput> networkOutputs;
    std::vector<RegisteredLayer> registeredLayers;
    std::vector<OptimizerEvent> events;
    std::vector<TacticChoice> tactics;

    //! Final engine layer list: `Engine Layer Information:` Layer(...) lines or the 10.x detailed `Layers:` records,
    //! or `--dumpLayerInfo` output. Empty (hasEngineBlock == false) for a failed build.
    bool hasEngineBlock = false;
    EnginePlan engine;

    //! --dumpProfile table, when present.
    bool hasProfileTable = false;
    Profile profile;

    //! trtexec's end-to-end "GPU Compute Time: ... mean = X ms" (the last one in the log), when printed.
    std::optional<double> gpuComputeMeanMs;
    std::uint64_t gpuComputeLine = 0;

    std::vector<LogMessage> errors; //!< error lines, tactic skips left out
    //! "Error[9]: ... Skipping tactic 0x... due to exception ..." lines: tactics TensorRT tried and left out while
    //! timing. They do not fail a build.
    std::vector<LogMessage> tacticSkips;
    //! The first line that says an engine was built ("Engine built in", "Created engine with size", "&&&& PASSED");
    //! 0 when none does.
    std::uint64_t passedLine = 0;
    //! "UNSUPPORTED_STATE: Skipping tactic N due to insufficient memory on requested size of B ..." warnings: tactics
    //! left out because the workspace pool was too small for them.
    std::vector<LogMessage> memorySkips;
    //! "For layer X a non-conforming implementation was chosen than was requested ...": layers (text: X) whose
    //! requested precision TensorRT ignored because another ran faster (8.0 to 10.x, verbose).
    std::vector<LogMessage> nonConformingLayers;

    //! What tells the typing: the trtexec command line first, then the options block and trtexec's warnings.
    std::vector<TypingEvidence> typingEvidence;
    BuildSummary summary;
    std::vector<BackendStrategy> backendStrategies;
    std::vector<LoggedMyelinRegion> myelinRegions;
    std::vector<MyelinOpTuning> myelinOps;

    //! The typing the log tells: a strongly typed line wins; null when no line tells.
    const TypingEvidence* typing() const
    {
        const TypingEvidence* weak = nullptr;
        for (const auto& evidence : typingEvidence)
        {
            if (evidence.stronglyTyped)
            {
                return &evidence;
            }
            weak = weak != nullptr ? weak : &evidence;
        }
        return weak;
    }
    //! TensorRT 11's "The following layers are used for L2 cache management and do not correspond to any layers in the
    //! INetworkDefinition: a, b" (FORMATS-trt11.md L5): the names, and the line of the first such message.
    std::vector<std::string> l2CacheLayers;
    std::uint64_t l2CacheLine = 0;
    std::vector<LogMessage> warningsInLog; //!< TensorRT's own warnings ([W])
    std::vector<ReaderWarning> warnings;   //!< the reader's warnings about the file
};

//! Progress callback for long reads: bytes done, bytes total (0 when unknown).
using ProgressCallback = std::function<void(std::uint64_t done, std::uint64_t total)>;

} // namespace qdq
