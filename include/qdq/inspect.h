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
    std::map<std::string, std::size_t> layersByPrecision;   //!< by the precision of the layer's first output
    std::size_t qdqOriginLayers = 0;                        //!< layers with Origin: QDQ
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
