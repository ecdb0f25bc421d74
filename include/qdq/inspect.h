// `qdq-doctor inspect`: what a file is and what it holds, in one summary per file.
#pragma once

#include "qdq/readers.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qdq
{

struct FileSummary
{
    std::string path;
    InputKind kind = InputKind::kUnknown;
    std::optional<std::string> trtVersion;
    std::optional<std::size_t> layers;   //!< engine layers (layer-info, profile entries, build-log engine block)
    std::optional<std::size_t> qdqNodes; //!< QuantizeLinear + DequantizeLinear (ONNX)
    std::optional<double> timeMs;        //!< sum of per-layer average times (profiles, log profile tables)
    std::map<std::string, std::size_t> layersByType;
    std::map<std::string, std::size_t> layersByPrecision; //!< by the precision of the layer's first output
    std::size_t qdqOriginLayers = 0;                      //!< layers with Origin: QDQ
    //! Layers that run quantize ops by their names: Q/DQ nodes, network-API `[Quantize]`/`[Dequantize]` and TensorRT's
    //! DynamicQuantize (`{ForeignNode[(Unnamed Layer* 0) [DynamicQuantize]]}`, FP8/FP4 with block scales).
    std::size_t quantizeOpLayers = 0;
    std::string form;                                       //!< names-only / detailed / log-lines ...
    std::vector<std::pair<std::string, std::string>> facts; //!< other kind-specific facts, in a fixed order
    std::vector<std::string> warnings;

    //! A build log's ONNX graph, rebuilt from its parser lines (log_graph.h); absent for a log without them.
    struct RebuiltGraph
    {
        std::size_t nodes = 0;
        std::size_t tensors = 0;
        std::size_t initializers = 0;
        std::size_t constantNodes = 0;
        std::size_t inputs = 0;
        std::size_t outputs = 0;
        std::size_t qdqNodes = 0;
        std::map<std::string, std::size_t> operators;
        std::vector<std::string> warnings;
    };
    std::optional<RebuiltGraph> rebuiltGraph;

    //! What a build log holds besides its layers: the build mode it tells, what TensorRT 10.x/11.x printed about the
    //! compiler backend and Myelin, the backend strategies tried, tactic skips and the build summary (a log written
    //! without --verbose still has most of these).
    struct LogContents
    {
        std::string buildMode;    //!< describeBuildMode of the log alone
        std::string typing;       //!< "strong" / "weak"
        std::string typingSource; //!< the line that told it, or why it was assumed
        bool typingAssumed = true;
        std::uint64_t verboseLines = 0;
        bool layerList = false;
        bool profileTable = false;
        std::size_t parsedOnnxNodes = 0;
        std::size_t tacticSkips = 0;
        std::size_t memorySkips = 0;
        std::vector<std::string> nonConformingLayers; //!< layers whose requested precision was ignored
        std::size_t errors = 0;
        std::uint64_t compilerBackendBuildLine = 0;
        std::uint64_t compilerBackendExecutionLine = 0;
        std::uint64_t myelinOffloadAllLine = 0;
        std::size_t myelinRegions = 0;              //!< distinct {ForeignNode[...]} regions with a metadata line
        std::vector<std::string> myelinKernels;     //!< "op: kernel (N tactics timed, fastest X ms)"
        std::vector<std::string> backendStrategies; //!< "4 (line 511): kept, estimated time 0.22528"
        BuildSummary summary;
        std::optional<double> gpuComputeMeanMs;
    };
    std::optional<LogContents> logContents;
};

struct InspectOptions
{
    Limits limits;
    ProgressCallback progress;
};

//! Reads one file (kind from content) and summarizes it. Throws InputError when the file cannot be read.
FileSummary inspectFile(const std::string& path, const InspectOptions& options);

std::string renderInspectText(const std::vector<FileSummary>& summaries);
std::string renderInspectJson(const std::vector<FileSummary>& summaries);

} // namespace qdq
