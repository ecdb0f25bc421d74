// R22 plugin-wrapped-in-qdq: DQ -> plugin (custom-domain op) -> Q. TensorRT never fuses Q/DQ into a plugin and does
// not move them across it, so the plugin sees float and the Q/DQ run as standalone layers (or the build fails when the
// plugin only supports INT8).
#include "rules/precision_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace precision;

class PluginWrappedInQdq final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "plugin-wrapped-in-qdq",
            "R22",
            "A plugin sits between DequantizeLinear and QuantizeLinear: TensorRT never fuses Q/DQ into plugins",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "the plugin is not in the model (an engine alone names it); fix unwraps a model's plugin only when asked "
            "by --rules, since its code must then take INT8 with the scales listed"};
        return kInfo;
    }

private:
    //! The DQs feeding the plugin and the Qs reading its outputs.
    static void wrappingQdq(const OnnxGraph& graph, const OnnxNode& node, std::vector<const OnnxNode*>& dqs,
                            std::vector<const OnnxNode*>& qs)
    {
        for (const auto& input : node.inputs)
        {
            const OnnxNode* producer = input.empty() ? nullptr : producerOf(graph, input);
            if (producer != nullptr && isDequantize(*producer))
            {
                dqs.push_back(producer);
            }
        }
        for (const auto& output : node.outputs)
        {
            for (const OnnxNode* consumer : consumersOf(graph, output))
            {
                if (isQuantize(*consumer))
                {
                    qs.push_back(consumer);
                }
            }
        }
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& node : graph.nodes)
        {
            if (!isCustomOp(node))
            {
                continue;
            }
            std::vector<const OnnxNode*> dqs;
            std::vector<const OnnxNode*> qs;
            wrappingQdq(graph, node, dqs, qs);
            if (dqs.empty() && qs.empty())
            {
                continue;
            }
            std::vector<std::string> names;
            std::vector<std::string> scales;
            for (const OnnxNode* dq : dqs)
            {
                names.push_back(dq->name);
                if (auto scale = perTensorScale(graph, *dq))
                {
                    scales.push_back("input scale " + formatScale(*scale) + " (from " + dq->name + ")");
                }
            }
            for (const OnnxNode* q : qs)
            {
                names.push_back(q->name);
                if (auto scale = perTensorScale(graph, *q))
                {
                    scales.push_back("output scale " + formatScale(*scale) + " (from " + q->name + ")");
                }
            }
            std::string domain = node.domain.empty() ? std::string() : " (domain " + node.domain + ")";
            Finding finding = makeFinding(
                info(), "Plugin " + node.name + " [" + node.opType + domain + "] is wrapped in Q/DQ (" +
                            nameList(names, 4) +
                            "): TensorRT does not fuse Q/DQ into plugins, so the plugin gets float data and " +
                            nameList(names, 4) +
                            " run as standalone layers (or the build fails if the plugin only accepts INT8).");
            finding.onnxNodes = {node.name};
            finding.onnxNodes.insert(finding.onnxNodes.end(), names.begin(), names.end());
            finding.evidence.push_back(nodeEvidence(context, node, "custom-domain op between " + nameList(names, 4)));
            finding.fix = unwrapFix(node, dqs, qs, scales);
            FixEdit edit;
            edit.kind = FixEdit::Kind::kUnwrapPlugin;
            edit.nodes = {node.name};
            edit.nodes.insert(edit.nodes.end(), names.begin(), names.end());
            finding.edits.push_back(std::move(edit));
            addEngineLayers(context, node, names, finding);
            sink.add(std::move(finding));
        }
    }

    static std::string unwrapFix(const OnnxNode& node, const std::vector<const OnnxNode*>& dqs,
                                 const std::vector<const OnnxNode*>& qs, const std::vector<std::string>& scales)
    {
        std::string removed;
        if (!dqs.empty())
        {
            std::vector<std::string> dqNames;
            for (const OnnxNode* dq : dqs)
            {
                dqNames.push_back(dq->name);
            }
            removed += "delete " + nameList(dqNames, 3) + " before " + node.name;
        }
        if (!qs.empty())
        {
            std::vector<std::string> qNames;
            for (const OnnxNode* q : qs)
            {
                qNames.push_back(q->name);
            }
            removed +=
                std::string(removed.empty() ? "" : " and ") + "delete " + nameList(qNames, 3) + " after " + node.name;
        }
        return "make it Q -> " + node.name + " -> DQ: " + removed + "; pass " +
               (scales.empty() ? std::string("the removed scales") : nameList(scales, 4)) +
               " to the plugin as attributes so it (de)quantizes internally, and declare kINT8 inputs/outputs in "
               "supportsFormatCombination (TensorRT 10: also setOutputType kINT8)";
    }

    //! The plugin's layers and the standalone Q/DQ layers next to it (the cost).
    static void addEngineLayers(const Context& context, const OnnxNode& node, const std::vector<std::string>& names,
                                Finding& finding)
    {
        const EnginePlan* plan = context.engine();
        if (plan == nullptr)
        {
            return;
        }
        std::vector<std::size_t> costly;
        for (const auto& name : names)
        {
            for (std::size_t layer : layersOf(context, name))
            {
                if (isStandaloneQdq(context, layer))
                {
                    addUnique(costly, layer);
                }
            }
        }
        for (std::size_t layer : layersOf(context, node.name))
        {
            finding.engineLayers.push_back(plan->layers[layer].name);
        }
        for (std::size_t layer : costly)
        {
            finding.engineLayers.push_back(plan->layers[layer].name);
            finding.evidence.push_back(layerEvidence(context, layer, "", "standalone Q/DQ next to the plugin"));
        }
        finding.costMs = sumTimes(context, costly);
    }

    static bool isPluginLayer(const EngineLayer& layer)
    {
        return layer.type.find("Plugin") != std::string::npos || !layer.pluginType.empty();
    }

    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            if (!isPluginLayer(layer))
            {
                continue;
            }
            std::vector<std::size_t> around;
            for (const auto& input : layer.inputs)
            {
                auto producer = producerLayer(plan, input.name);
                if (producer && isStandaloneDequantize(context, *producer))
                {
                    around.push_back(*producer);
                }
            }
            for (const auto& output : layer.outputs)
            {
                for (std::size_t consumer : consumerLayers(plan, output.name))
                {
                    if (isStandaloneQuantize(context, consumer))
                    {
                        around.push_back(consumer);
                    }
                }
            }
            if (around.empty())
            {
                continue;
            }
            std::vector<std::string> names = layerNames(context, around);
            std::string io = precisionText(inputPrecision(layer)) + " -> " + precisionText(outputPrecision(layer));
            Finding finding =
                makeFinding(info(), "Plugin layer \"" + layer.name + "\"" +
                                        (layer.pluginType.empty() ? "" : " (" + layer.pluginType + ")") + " runs " +
                                        io + " between the standalone Q/DQ layers " + nameList(names, 4) +
                                        ": TensorRT does not fuse Q/DQ into plugins.");
            finding.engineLayers = {layer.name};
            finding.engineLayers.insert(finding.engineLayers.end(), names.begin(), names.end());
            finding.onnxNodes.assign(context.correlation.layers[index].onnxNodes.begin(),
                                     context.correlation.layers[index].onnxNodes.end());
            for (std::size_t l : around)
            {
                for (const auto& node : context.correlation.layers[l].onnxNodes)
                {
                    finding.onnxNodes.emplace_back(node);
                }
                finding.evidence.push_back(layerEvidence(context, l, "",
                                                         plan.layers[l].type + " " +
                                                             precisionText(inputPrecision(plan.layers[l])) + " -> " +
                                                             precisionText(outputPrecision(plan.layers[l]))));
            }
            finding.evidence.push_back(layerEvidence(context, index, "", layer.type + " " + io));
            finding.costMs = sumTimes(context, around);
            finding.fix =
                "in the ONNX model, remove the DequantizeLinear before and the QuantizeLinear after the plugin "
                "(Q -> plugin -> DQ), pass their scales to the plugin as attributes, and declare kINT8 I/O in "
                "supportsFormatCombination (TensorRT 10: setOutputType kINT8)";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makePluginWrappedInQdq()
{
    return std::make_unique<PluginWrappedInQdq>();
}

} // namespace qdq::rules
