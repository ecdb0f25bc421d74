// The model's graph rebuilt from a verbose build log: the ONNX parser prints every node it imports (`Parsing node:
// X [Op]`, its inputs and outputs with shapes and element types), the initializers it imports, the network inputs and
// the outputs it marks. That is the whole graph but for the values of initializers and Constant nodes (weights,
// scales, zero points) and the nodes' attributes (docs/log-graph.md).
#pragma once

#include "qdq/build_log.h"
#include "qdq/limits.h"
#include "qdq/onnx_graph.h"

#include <optional>
#include <string>
#include <string_view>

namespace qdq
{

//! The graph of the first model the log's parser lines describe, as an ordinary OnnxGraph (rebuiltFromLog set,
//! sourcePath the log's), or nullopt when the log has no `Parsing node` line. A second parse in the log, a parse cut
//! off mid-graph, and lines that name unknown tensors give warnings (OnnxGraph::warnings) naming the line; more
//! nodes than limits.maxGraphNodes is an InputError.
std::optional<OnnxGraph> rebuildGraphFromLog(const BuildLog& log, const Limits& limits = {});

//! Whether the log holds a whole parse: network inputs added before the first node, every node's outputs line, and
//! the outputs marked. diagnose uses a rebuilt graph only then (an excerpt's or a cut-off parse's graph would make
//! the model's rules judge a part as the whole).
bool logGraphComplete(const BuildLog& log);

//! Reads the log (readBuildLog) and rebuilds its graph.
std::optional<OnnxGraph> rebuildGraphFromLog(const std::string& logPath, const Limits& limits = {});
//! Same, on a log held in memory (tests, fuzzing).
std::optional<OnnxGraph> rebuildGraphFromLogText(std::string_view text, const std::string& pathForMessages,
                                                 const Limits& limits = {});

} // namespace qdq
