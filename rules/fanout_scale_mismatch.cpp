// R31 fanout-scale-mismatch: one tensor reaches several QuantizeLinear nodes (through ops a Q moves across) whose
// scales differ. TensorRT merges duplicate Qs only when they are identical (HorizontalMergeQNodes); the producer can
// fuse one output Q, the others run as standalone Quantize/Scale layers.
#include "rules/rules.h"
#include "rules/scale_walks.h"

#include <algorithm>

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace walks;

class FanoutScaleMismatch final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "fanout-scale-mismatch",
            "R31",
            "One tensor is quantized by several Qs with different scales, so only one can fuse and the others run as "
            "standalone Quantize layers",
            Severity::kWarning,
            "8.4-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation | kReadsModelValues,
            ""};
        return kInfo;
    }

private:
    //! Qs reached without crossing a MaxPool decide (all of them when none is); a mismatch that exists only across
    //! a MaxPool is maxpool-scale-mismatch's.
    static std::vector<const ReachedQ*> decidingQs(const std::vector<ReachedQ>& reached)
    {
        std::vector<const ReachedQ*> considered;
        for (const auto& r : reached)
        {
            if (r.direct)
            {
                considered.push_back(&r);
            }
        }
        if (considered.empty())
        {
            for (const auto& r : reached)
            {
                considered.push_back(&r);
            }
        }
        return considered;
    }

    //! The fix: one scale for every Q of the fan-out, the largest; and the edit that sets it.
    static void addOneScaleFix(const OnnxGraph& graph, const std::string& tensor,
                               const std::vector<const ReachedQ*>& considered,
                               const std::vector<std::optional<double>>& scales, const std::vector<std::string>& qNames,
                               Finding& finding)
    {
        double largest = 0.0;
        for (const auto& scale : scales)
        {
            largest = scale ? std::max(largest, *scale) : largest;
        }
        std::vector<const OnnxNode*> qNodes;
        for (const ReachedQ* r : considered)
        {
            qNodes.push_back(r->q);
        }
        const std::string recalibrate = recalibrationAdvice(graph, qNodes);
        finding.fix = recalibrate.empty()
                          ? "use one scale for every Q of " + tensor + ": share a single Q/DQ between " +
                                nameList(qNames, 4) + " or calibrate them as one group (the largest scale, " +
                                formatScale(largest) +
                                ", covers all ranges), as NVIDIA's yolov7 QAT rules and Model Optimizer's Concat "
                                "grouping do"
                          : "one scale for every Q of " + tensor + " needs calibration: " + recalibrate;
        // The edit: every Q of the fan-out (with its DQs) takes the largest scale, the first Q holding it.
        const ReachedQ* largestQ = nullptr;
        for (std::size_t i = 0; i < considered.size(); ++i)
        {
            largestQ = largestQ == nullptr && scales[i] && *scales[i] == largest ? considered[i] : largestQ;
        }
        if (largestQ != nullptr && std::all_of(scales.begin(), scales.end(), [](const auto& s) { return s; }))
        {
            finding.edits.push_back(
                setScaleEdit(qNames, largestQ->q->name,
                             "the largest of the fan-out's scales: it covers every Q's range, and identical Qs "
                             "are merged into one"));
        }
    }

    //! The build log's merges of equal Qs.
    static void addMergeEvidence(const Context& context, const std::vector<std::string>& qNames, Finding& finding)
    {
        for (const OptimizerEvent* event : logEvents(context, OptimizerEventKind::kEliminate))
        {
            if (event->detail == "Q" &&
                std::find(qNames.begin(), qNames.end(), stripTrtSuffixes(event->object)) != qNames.end())
            {
                finding.evidence.push_back(logEvidence(context, *event,
                                                       "Eliminating " + event->subject + " which duplicates (Q) " +
                                                           event->object + " (only equal Qs merge)"));
            }
        }
    }

    void checkTensor(const Context& context, const std::string& tensor, const OnnxNode* producer,
                     FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        auto reached = reachedQuantizers(graph, tensor, {});
        if (reached.size() < 2)
        {
            return;
        }
        const std::vector<const ReachedQ*> considered = decidingQs(reached);
        std::vector<std::optional<double>> scales;
        for (const ReachedQ* r : considered)
        {
            scales.push_back(perTensorScale(graph, *r->q));
        }
        if (considered.size() < 2 || allScalesEqual(scales))
        {
            return;
        }
        std::vector<std::string> described;
        std::vector<std::string> qNames;
        for (const ReachedQ* r : considered)
        {
            std::string via = r->path.empty() ? std::string() : " via " + nameList(r->path, 2);
            described.push_back(withScale(graph, *r->q) + via);
            qNames.push_back(r->q->name);
        }
        std::string from = producer != nullptr ? producer->opType + " " + producer->name : "the network input";
        Finding finding = makeFinding(
            info(),
            "Tensor " + tensor + " (output of " + from + ") is quantized by " + std::to_string(considered.size()) +
                " Qs with different scales: " + nameList(described, 4) +
                ". TensorRT moves them onto the tensor and merges only identical ones, so only one can fuse into " +
                (producer != nullptr ? producer->name : std::string("the producer")) +
                " and the others likely run as standalone Quantize (or Scale) layers.");
        finding.likely = true;
        if (producer != nullptr)
        {
            finding.onnxNodes.push_back(producer->name);
        }
        finding.onnxNodes.insert(finding.onnxNodes.end(), qNames.begin(), qNames.end());
        if (producer != nullptr)
        {
            finding.evidence.push_back(
                nodeEvidence(context, *producer, "output " + tensor + " reaches " + nameList(described, 4)));
        }
        addOneScaleFix(graph, tensor, considered, scales, qNames, finding);
        attachEngine(context, qNames, finding);
        addMergeEvidence(context, qNames, finding);
        sink.add(std::move(finding));
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& input : graph.graphInputs)
        {
            checkTensor(context, input, nullptr, sink);
        }
        for (const auto& node : graph.nodes)
        {
            if (isQdq(node) || movesQ(node) || node.opType == "Constant")
            {
                continue;
            }
            for (const auto& output : node.outputs)
            {
                checkTensor(context, output, &node, sink);
            }
        }
    }

    //! A Quantize TensorRT cloned after the merge pass: "<Q>_clone_<n>", made by SplitQAcrossPrecedingFanIn, which
    //! runs after HorizontalMergeQNodes (`trex-notebooks-yolo-orin-trt852/trt.out`: the merges at lines 5212-5224,
    //! the splits at 5227-5228), so it was never offered for merging and says nothing about its scale.
    static bool isPostMergeClone(const std::string& name)
    {
        const std::size_t at = name.rfind("_clone_");
        return at != std::string::npos && at + 7 < name.size() &&
               std::all_of(name.begin() + static_cast<std::ptrdiff_t>(at + 7), name.end(),
                           [](char c) { return c >= '0' && c <= '9'; });
    }

    //! Engine only: two or more standalone Quantize layers reading the same tensor. Equal Qs would have been merged
    //! (HorizontalMergeQNodes), so their scales likely differ; a clone made after that pass does not count.
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        std::map<std::string, std::vector<std::size_t>> byInput;
        std::vector<std::string> order;
        for (const auto& mapping : context.correlation.layers)
        {
            const EngineLayer& layer = plan.layers[mapping.layer];
            if (mapping.state != LayerState::kInsertedQdq || layer.inputs.empty() ||
                !isQuantized(outputPrecision(layer)) || isPostMergeClone(layer.name))
            {
                continue;
            }
            auto& list = byInput[layer.inputs[0].name];
            if (list.empty())
            {
                order.push_back(layer.inputs[0].name);
            }
            list.push_back(mapping.layer);
        }
        for (const auto& tensor : order)
        {
            const auto& layers = byInput[tensor];
            if (layers.size() < 2)
            {
                continue;
            }
            auto names = layerNames(context, layers);
            auto producer = producerLayer(plan, tensor);
            Finding finding = makeFinding(
                info(), "Tensor " + tensor +
                            (producer ? " (output of \"" + plan.layers[*producer].name + "\")" : std::string()) +
                            " is quantized by " + std::to_string(layers.size()) + " separate Quantize layers (" +
                            nameList(names, 4) + "): TensorRT merges identical Qs, so their scales likely differ.");
            finding.likely = true;
            finding.engineLayers = names;
            for (std::size_t layer : layers)
            {
                std::string token = singleToken(plan.layers[layer]);
                if (!token.empty())
                {
                    finding.onnxNodes.push_back(token);
                }
                finding.evidence.push_back(
                    layerEvidence(context, layer, "Inputs[0]",
                                  tensor + " " + std::string(precisionName(inputPrecision(plan.layers[layer]))) +
                                      " -> " + std::string(precisionName(outputPrecision(plan.layers[layer])))));
            }
            finding.costMs = sumTimes(context, layers);
            finding.fix = "in the ONNX model, give every Q of " + tensor + " (" + nameList(finding.onnxNodes, 4) +
                          ") one scale (share one Q/DQ or calibrate them as a group) so TensorRT merges them into one";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeFanoutScaleMismatch()
{
    return std::make_unique<FanoutScaleMismatch>();
}

} // namespace qdq::rules
