// R09 conv-act-pool-blocked: Conv -> [BN] -> Relu -> MaxPool did not become one ConvActPool layer.
#include "qdq/layer_names.h"
#include "qdq/patterns.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;

//! The layer name executes a Q/DQ node by any exporter's naming (its weight quantizer, for a quantized conv).
bool namesQdq(const std::string& name)
{
    const auto tokens = parseLayerName(name).tokens;
    return std::any_of(tokens.begin(), tokens.end(),
                       [](const std::string& token) { return qdqNameKind(token) != QdqNameKind::kNone; });
}

bool isPoolingLayer(const EngineLayer& layer)
{
    return layer.type.find("Pooling") != std::string::npos || layer.type == "maxpool";
}

//! Conv -> [BN, Q/DQ] -> activation -> [Q/DQ] -> MaxPool, walked back from the pool.
struct PoolChain
{
    const OnnxNode* conv = nullptr;
    const OnnxNode* activation = nullptr;
    std::vector<const OnnxNode*> between;        //!< Q/DQ between the activation and the pool
    std::vector<const OnnxNode*> insideEpilogue; //!< Q/DQ between the conv and the activation
};

//! Walks back: Q/DQ, then the activation, BN, the conv. Each walk takes at most kMostSteps nodes: a graph the reader
//! accepts may hold a cycle (q: b -> a, dq: a -> b), and a real chain is a few nodes.
std::optional<PoolChain> chainBefore(const OnnxGraph& graph, const OnnxNode& pool)
{
    constexpr std::size_t kMostSteps = 64;
    PoolChain chain;
    const OnnxNode* node = producerOf(graph, pool.inputs[0]);
    while (node != nullptr && isQdq(*node) && !node->inputs.empty() && chain.between.size() < kMostSteps)
    {
        chain.between.push_back(node);
        node = producerOf(graph, node->inputs[0]);
    }
    if (node == nullptr || !isActivation(node->opType) || node->inputs.empty())
    {
        return std::nullopt;
    }
    chain.activation = node;
    node = producerOf(graph, chain.activation->inputs[0]);
    for (std::size_t step = 0; node != nullptr && (isQdq(*node) || node->opType == "BatchNormalization") &&
                               !node->inputs.empty() && step < kMostSteps;
         ++step)
    {
        if (isQdq(*node))
        {
            chain.insideEpilogue.push_back(node);
        }
        node = producerOf(graph, node->inputs[0]);
    }
    if (node == nullptr || node->opType != "Conv")
    {
        return std::nullopt;
    }
    chain.conv = node;
    return chain;
}

//! What keeps the chain from fusing, the fixes and the edits that make them.
struct Blockers
{
    std::vector<std::string> causes;
    std::vector<std::string> fixes;
    std::vector<FixEdit> edits;
    std::vector<std::string> nodes;
};

//! Q/DQ inside the chain: each Q with the DQ right after it is one pair to remove.
void addQdqBlocker(const OnnxGraph& graph, const PoolChain& chain, Blockers& blockers)
{
    if (chain.between.empty() && chain.insideEpilogue.empty())
    {
        return;
    }
    std::vector<std::string> names;
    for (const auto* q : chain.insideEpilogue)
    {
        names.push_back(q->name);
    }
    for (const auto* q : chain.between)
    {
        names.push_back(q->name);
    }
    blockers.nodes.insert(blockers.nodes.end(), names.begin(), names.end());
    std::vector<const OnnxNode*> pairs = chain.insideEpilogue;
    pairs.insert(pairs.end(), chain.between.begin(), chain.between.end());
    for (const OnnxNode* q : pairs)
    {
        if (!isQuantize(*q) || q->outputs.empty())
        {
            continue;
        }
        for (const OnnxNode* dq : consumersOf(graph, q->outputs[0]))
        {
            if (isDequantize(*dq))
            {
                blockers.edits.push_back(removeQdqPairEdit(*q, *dq));
            }
        }
    }
    blockers.causes.push_back("Q/DQ " + nameList(names, 4) + " sit between the conv and the MaxPool");
    blockers.fixes.push_back("remove " + nameList(names, 4) +
                             " (MaxPool commutes with Q/DQ, so the Q on its output "
                             "still reaches the conv)");
}

//! The MaxPool output also read in float, while the conv is quantized.
void addFloatConsumerBlocker(const OnnxGraph& graph, const OnnxNode& pool, Blockers& blockers)
{
    auto forward = forwardQuantizers(graph, pool.outputs[0], false);
    if (forward.allPaths)
    {
        return;
    }
    std::string floatUser;
    // One scale for the MaxPool output, whichever Q already on it lends it (none if theirs differ too much: then the
    // new pair needs a calibrated scale).
    const OnnxNode* lender = scaleSourceAmong(graph, forward.quantizers);
    for (const OnnxNode* consumer : consumersOf(graph, pool.outputs[0]))
    {
        if (!isQuantize(*consumer))
        {
            if (floatUser.empty())
            {
                floatUser = consumer->name + " (" + consumer->opType + ")";
            }
            // Only where the float reader's result goes on quantized: else its INT8 input would need a DQ of its
            // own.
            if (lender != nullptr && !consumer->outputs.empty() && reachesQuantizer(graph, consumer->outputs[0]))
            {
                blockers.edits.push_back(insertQdqEdit(*consumer, pool.outputs[0], lender->name,
                                                       "the scale of the Q already on the MaxPool output, so "
                                                       "TensorRT merges the two"));
            }
        }
    }
    blockers.causes.push_back("the MaxPool output also feeds " + (floatUser.empty() ? "a float consumer" : floatUser) +
                              " without quantization, so the pool cannot run in the conv's INT8 precision");
    std::string scaleHint;
    if (!forward.quantizers.empty())
    {
        scaleHint = scaleAdviceAmong(graph, forward.quantizers);
    }
    blockers.fixes.push_back("add a Q/DQ pair on " + pool.outputs[0] + " where it enters " +
                             (floatUser.empty() ? std::string("its float consumer") : floatUser) + scaleHint +
                             ", so every consumer of the MaxPool output is quantized with one scale");
}

//! Adds the pool's separate engine layers and the reformats around them to the finding; false when the engine
//! fused the pool with the conv after all.
bool addEngineLayers(const Context& context, const EnginePlan& plan, const OnnxNode& pool, const OnnxNode& conv,
                     Finding& finding)
{
    std::vector<std::size_t> poolLayers;
    for (std::size_t layer : layersOf(context, pool.name))
    {
        bool fusedWithConv = false;
        for (const auto& n : context.correlation.layers[layer].onnxNodes)
        {
            fusedWithConv = fusedWithConv || n == conv.name;
        }
        if (fusedWithConv)
        {
            poolLayers.clear();
            break; // the engine fused them after all
        }
        poolLayers.push_back(layer);
        finding.engineLayers.push_back(plan.layers[layer].name);
    }
    if (layersOf(context, pool.name).size() > 0 && poolLayers.empty())
    {
        return false;
    }
    // Reformats in and out of the separate pooling layer are part of the price.
    std::vector<std::size_t> costly = poolLayers;
    for (std::size_t poolLayer : poolLayers)
    {
        for (const auto& mapping : context.correlation.layers)
        {
            if (mapping.state == LayerState::kInsertedReformat && mapping.reformatTarget == poolLayer)
            {
                costly.push_back(mapping.layer);
                finding.engineLayers.push_back(plan.layers[mapping.layer].name);
            }
        }
        finding.evidence.push_back(
            layerEvidence(context, poolLayer, "LayerType", plan.layers[poolLayer].type + ", separate from the conv"));
    }
    finding.costMs = sumTimes(context, costly);
    return true;
}

class ConvActPoolBlocked final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{"conv-act-pool-blocked",
                                    "R09",
                                    "Conv -> [BN] -> Relu -> MaxPool was not fused into one ConvActPool layer",
                                    Severity::kWarning,
                                    "8.0-10.x",
                                    kNeedsOnnxOrEngine | kReadsCorrelation,
                                    ""};
        return kInfo;
    }

private:
    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& pool : graph.nodes)
        {
            if (pool.opType != "MaxPool" || pool.inputs.empty() || pool.outputs.empty())
            {
                continue;
            }
            const std::optional<PoolChain> chain = chainBefore(graph, pool);
            if (!chain)
            {
                continue;
            }
            const OnnxNode& conv = *chain->conv;
            const OnnxNode* activation = chain->activation;
            bool convQuantized = !conv.inputs.empty() && feedingDequantize(graph, conv.inputs[0]) != nullptr;
            Blockers blockers;
            blockers.nodes = {conv.name, activation->name, pool.name};
            addQdqBlocker(graph, *chain, blockers);
            if (!activation->outputs.empty() && consumersOf(graph, activation->outputs[0]).size() > 1)
            {
                blockers.causes.push_back(activation->name +
                                          " has more than one consumer, so its output must be written out");
                blockers.fixes.push_back("keep " + activation->name + " single-consumer");
            }
            if (convQuantized)
            {
                addFloatConsumerBlocker(graph, pool, blockers);
            }
            if (blockers.causes.empty())
            {
                continue;
            }
            Finding finding = makeFinding(
                info(), "Conv " + conv.name + " -> " + activation->name + " -> MaxPool " + pool.name +
                            " cannot fuse into one ConvActPool layer: " + nameList(blockers.causes, 3) + ".");
            finding.onnxNodes = blockers.nodes;
            finding.evidence.push_back(nodeEvidence(context, pool, nameList(blockers.causes, 3)));
            finding.fix = nameList(blockers.fixes, 3);
            finding.edits = std::move(blockers.edits);
            if (const EnginePlan* plan = context.engine())
            {
                if (!addEngineLayers(context, *plan, pool, conv, finding))
                {
                    continue;
                }
            }
            sink.add(std::move(finding));
        }
    }

    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& pool = plan.layers[index];
            if (!isPoolingLayer(pool) || !layerNameHas(pool, "MaxPool") || layerNameHas(pool, "Conv") ||
                pool.inputs.empty())
            {
                continue;
            }
            auto producer = producerLayer(plan, pool.inputs[0].name);
            std::vector<std::size_t> extra;
            // At most kMostLayers: a layer list may hold a cycle of layers that execute no node.
            constexpr std::size_t kMostLayers = 64;
            while (producer && context.correlation.layers[*producer].state != LayerState::kMapped &&
                   extra.size() < kMostLayers)
            {
                extra.push_back(*producer); // reformats or Q/DQ between conv and pool
                const auto& inputs = plan.layers[*producer].inputs;
                producer = inputs.empty() ? std::nullopt : producerLayer(plan, inputs[0].name);
            }
            if (!producer || !(layerNameHas(plan.layers[*producer], "Conv") ||
                               plan.layers[*producer].type.find("Convolution") != std::string::npos))
            {
                continue;
            }
            const EngineLayer& conv = plan.layers[*producer];
            // Conv-Act-Pool fusion is an INT8 kernel: a float engine keeping conv and pool apart is not a lost fusion.
            bool quantizedConv = isQuantized(inputPrecision(conv)) ||
                                 (conv.weightsPrecision && isQuantized(*conv.weightsPrecision)) || namesQdq(conv.name);
            if (!quantizedConv)
            {
                continue;
            }
            std::vector<std::size_t> costly = {index};
            costly.insert(costly.end(), extra.begin(), extra.end());
            // Reformats right after the pool are part of the price.
            for (const auto& output : pool.outputs)
            {
                for (std::size_t consumer : consumerLayers(plan, output.name))
                {
                    if (context.correlation.layers[consumer].state == LayerState::kInsertedReformat)
                    {
                        costly.push_back(consumer);
                    }
                }
            }
            Finding finding = makeFinding(
                info(),
                "\"" + conv.name + "\" and \"" + pool.name + "\" run as separate layers (" +
                    std::string(precisionName(outputPrecision(conv))) +
                    " between them): the Conv-Act-Pool fusion "
                    "was likely lost. Typical causes: Q/DQ between the activation and the MaxPool, or a MaxPool output "
                    "that also feeds an unquantized consumer (e.g. a float residual input).");
            finding.likely = true;
            finding.engineLayers = layerNames(context, costly);
            finding.engineLayers.insert(finding.engineLayers.begin(), conv.name);
            for (const auto& mapping : {context.correlation.layers[*producer], context.correlation.layers[index]})
            {
                finding.onnxNodes.insert(finding.onnxNodes.end(), mapping.onnxNodes.begin(), mapping.onnxNodes.end());
            }
            finding.evidence.push_back(
                layerEvidence(context, *producer, "Outputs[0]",
                              conv.outputs.empty() ? "" : conv.outputs[0].name + " " + conv.outputs[0].format));
            finding.evidence.push_back(layerEvidence(context, index, "LayerType", pool.type));
            finding.costMs = sumTimes(context, costly);
            finding.fix = "keep Q/DQ out of the Conv -> Relu -> MaxPool chain, quantize only the MaxPool output (the "
                          "next conv's input), and quantize every other consumer of the MaxPool output with the same "
                          "scale (the residual Add input in ResNet), so TensorRT builds one ConvActPool layer";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeConvActPoolBlocked()
{
    return std::make_unique<ConvActPoolBlocked>();
}

} // namespace qdq::rules
