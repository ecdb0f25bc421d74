// Reformats at the network's FP32 inputs and outputs of a weakly typed FP16 build.

#include "src/simulation/passes.h"

#include "qdq/patterns.h"

namespace qdq::simulation
{

using namespace patterns;

//! Network inputs are FP32: a first layer that reads FP16 (or INT8 without its own Quantize) needs a reformat;
//! likewise an FP16 layer writing a network output.
void addIoReformats(SimulationState& s)
{
    if (!s.options.fp16)
    {
        return;
    }
    std::vector<PredictedLayer> added;
    for (const auto& input : s.graph.graphInputs)
    {
        const std::uint32_t id = s.graph.tensors.find(input);
        auto type = s.graph.tensorType(input);
        if (id == kNone || (type && *type != OnnxDataType::kFloat))
        {
            continue;
        }
        for (std::uint32_t reader : s.consumers(id))
        {
            if (isQdq(s.graph.nodes[reader]) || s.layerOf[reader] == kNone)
            {
                continue;
            }
            PredictedLayer reformat;
            reformat.kind = "Reformat";
            reformat.role = "reformat";
            reformat.name = "Reformatting CopyNode for Network Input " + input;
            reformat.inputPrecision = "FP32";
            reformat.outputPrecision = "FP16";
            reformat.guess = "an FP32 network input read by an FP16 layer is converted; TensorRT may instead "
                             "choose an FP32 kernel for that layer";
            added.push_back(std::move(reformat));
            break;
        }
    }
    for (const auto& output : s.graph.graphOutputs)
    {
        const OnnxNode* producer = producerOf(s.graph, output);
        auto type = s.graph.tensorType(output);
        if (producer == nullptr || isQdq(*producer) || (type && *type != OnnxDataType::kFloat) ||
            s.layerOf[producer->index] == kNone)
        {
            continue;
        }
        PredictedLayer reformat;
        reformat.kind = "Reformat";
        reformat.role = "reformat";
        reformat.name = "Reformatting CopyNode for Network Output " + output;
        reformat.inputPrecision = "FP16";
        reformat.outputPrecision = "FP32";
        reformat.guess = "an FP16 layer writing an FP32 network output is converted; TensorRT may instead "
                         "choose an FP32 kernel for that layer";
        added.push_back(std::move(reformat));
    }
    for (auto& layer : added)
    {
        s.out.layers.push_back(std::move(layer));
    }
}

} // namespace qdq::simulation
