#include "qdq/reformat_walks.h"

#include "qdq/layer_names.h"
#include "qdq/patterns.h"

#include <algorithm>
#include <set>

namespace qdq::patterns
{

namespace
{

//! Reformat chains are short (one or two layers in every real engine); the bound only guards against a cycle in a
//! malformed layer list.
constexpr std::size_t kMaxReformatsInARow = 16;

//! Tensors the builder names for its reformats: "Reformatted Input Tensor 0 to QuantizeLinear_341" (the reformat's
//! output, read by QuantizeLinear_341) and "Reformatted Output Tensor 0 to X" (X's output, which the reformat turns
//! into the model's tensor); trex-tests-mobilenet-qat-2022-04 graph.json, layers 6-7 and 28-29.
bool isBuilderTensorName(const std::string& tensor)
{
    return tensor.rfind("Reformatted Input Tensor ", 0) == 0 || tensor.rfind("Reformatted Output Tensor ", 0) == 0;
}

} // namespace

bool isBuilderInserted(const Context& context, std::size_t layer)
{
    if (layer < context.correlation.layers.size())
    {
        return context.correlation.layers[layer].state == LayerState::kInsertedReformat;
    }
    const EnginePlan* plan = context.engine();
    if (plan == nullptr || layer >= plan->layers.size())
    {
        return false;
    }
    const LayerNameParts parts = parseLayerName(plan->layers[layer].name);
    return parts.reformatCopyNode || parts.tensorCopy;
}

ReformatSource sourceThroughReformats(const Context& context, const std::string& tensor)
{
    ReformatSource source;
    source.tensor = tensor;
    source.modelTensor = tensor;
    const EnginePlan* plan = context.engine();
    if (plan == nullptr)
    {
        return source;
    }
    std::vector<std::string> chain{tensor}; // from the asked tensor back to the source
    source.producer = producerLayer(*plan, tensor);
    while (source.producer && isBuilderInserted(context, *source.producer) &&
           !plan->layers[*source.producer].inputs.empty() && source.reformats.size() < kMaxReformatsInARow)
    {
        source.reformats.push_back(*source.producer);
        source.tensor = plan->layers[*source.producer].inputs[0].name;
        chain.push_back(source.tensor);
        source.producer = producerLayer(*plan, source.tensor);
    }
    auto named =
        std::find_if(chain.rbegin(), chain.rend(), [](const std::string& t) { return !isBuilderTensorName(t); });
    source.modelTensor = named != chain.rend() ? *named : source.tensor;
    return source;
}

std::vector<ReformatReader> readersThroughReformats(const Context& context, const std::string& tensor)
{
    std::vector<ReformatReader> readers;
    const EnginePlan* plan = context.engine();
    if (plan == nullptr)
    {
        return readers;
    }
    struct Pending
    {
        std::string tensor;
        std::vector<std::size_t> reformats;
    };
    std::vector<Pending> pending{{tensor, {}}};
    std::set<std::size_t> seen;
    for (std::size_t next = 0; next < pending.size(); ++next)
    {
        const Pending current = pending[next];
        for (std::size_t consumer : consumerLayers(*plan, current.tensor))
        {
            const EngineLayer& layer = plan->layers[consumer];
            if (isBuilderInserted(context, consumer))
            {
                if (current.reformats.size() < kMaxReformatsInARow && seen.insert(consumer).second)
                {
                    for (const auto& output : layer.outputs)
                    {
                        Pending further{output.name, current.reformats};
                        further.reformats.push_back(consumer);
                        pending.push_back(std::move(further));
                    }
                }
                continue;
            }
            for (std::size_t input = 0; input < layer.inputs.size(); ++input)
            {
                if (layer.inputs[input].name == current.tensor)
                {
                    readers.push_back({consumer, input, current.tensor, current.reformats});
                }
            }
        }
    }
    return readers;
}

} // namespace qdq::patterns
