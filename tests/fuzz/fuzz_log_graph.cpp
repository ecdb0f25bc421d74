// libFuzzer target: the build log reader's parser lines rebuilt into an ONNX graph (log_graph.h), then the checks
// every reader's graph gets: each node's tensors resolve, Q/DQ entries point at Q/DQ nodes.
#include "fuzz_common.h"
#include "qdq/log_graph.h"
#include "qdq/readers.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string path = "fuzz-log-graph.log";
    try
    {
        const qdq::Limits limits = qdq::fuzz::fuzzLimits();
        qdq::BuildLog log = qdq::readBuildLogFromBuffer(qdq::fuzz::asView(data, size), path, limits);
        auto graph = qdq::rebuildGraphFromLog(log, limits);
        if (!graph)
        {
            return 0;
        }
        if (!graph->rebuiltFromLog || graph->sourcePath != path || graph->nodes.size() > log.parsedNodes.size())
        {
            std::abort();
        }
        for (const auto& node : graph->nodes)
        {
            for (const auto& input : node.inputs)
            {
                (void)graph->producer(input);
                (void)graph->tensorType(input);
            }
        }
        for (const auto& parameters : graph->qdq)
        {
            if (parameters.node >= graph->nodes.size() ||
                graph->nodes[parameters.node].qdqKind == qdq::OnnxNode::QdqKind::kNone)
            {
                std::abort();
            }
        }
    }
    catch (const qdq::InputError& error)
    {
        qdq::fuzz::checkError(error, path);
    }
    return 0;
}
