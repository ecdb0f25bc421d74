// R02 invalid-scale: a Q/DQ scale that is zero, negative or not finite, or that is not a build-time constant.
#include "qdq/patterns.h"
#include "qdq/quantized_types.h"
#include "rules/rules.h"
#include "rules/weight_paths.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace qdq::rules
{

namespace
{

using namespace patterns;

bool mentionsScale(const std::string& text)
{
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return lower.find("scale coefficients must all be positive") != std::string::npos ||
           lower.find("scaleallpositive") != std::string::npos ||
           (lower.find("scale") != std::string::npos &&
            (lower.find("initializer") != std::string::npos || lower.find("constant") != std::string::npos) &&
            (lower.find("quantize") != std::string::npos || lower.find("q/dq") != std::string::npos));
}

class InvalidScale final : public ModelOrBuildLogRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "invalid-scale",
            "R02",
            "A Q/DQ scale is zero, negative or not finite, or is computed at run time instead of being a build-time "
            "constant",
            Severity::kError,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsModelValues,
            "a valid scale comes from calibration data: re-calibrate the quantizer"};
        return kInfo;
    }

private:
    //! Build-log lines about scales.
    static std::vector<Evidence> logEvidence(const Context& context)
    {
        return buildLogErrorEvidence(context, mentionsScale);
    }

    //! Block scales TensorRT computes or dequantizes itself: the scales output of a dynamic block quantizer
    //! (trt::TRT_FP4DynamicQuantize, TRT_MXFP8DynamicQuantize), or NVFP4's FP8 block scales behind a DQ (double
    //! quantization). TensorRT's DynamicQuantize layer writes its block scales at run time for the DQ that follows it
    //! ("DynamicQuantize" operator page; NVIDIA/Model-Optimizer export_onnx.py writes these patterns).
    static bool isComputedBlockScale(const OnnxGraph& graph, const std::string& scaleName)
    {
        const OnnxNode* producer = producerOf(graph, scaleName);
        return producer != nullptr && (isDynamicBlockQuantize(*producer) || isDequantize(*producer));
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        auto log = logEvidence(context);
        // One finding per scale tensor: a Q and its DQ usually share the scale.
        std::map<std::string, std::vector<const OnnxNode*>> badValues;
        std::map<std::string, std::vector<const OnnxNode*>> notConstant;
        std::vector<std::string> order;
        for (const auto& parameters : graph.qdq)
        {
            const OnnxNode& node = graph.nodes[parameters.node];
            if (node.inputs.size() < 2 || node.inputs[1].empty())
            {
                continue; // a missing scale is a malformed model, not this rule
            }
            const std::string& scaleName = node.inputs[1];
            if (!parameters.scaleIsConstant && isComputedBlockScale(graph, scaleName))
            {
                continue;
            }
            if (!parameters.scaleIsConstant)
            {
                if (notConstant[scaleName].empty() && badValues.count(scaleName) == 0)
                {
                    order.push_back(scaleName);
                }
                notConstant[scaleName].push_back(&node);
                continue;
            }
            // Values unknown (external data not available): nothing to judge.
            if (badIndices(parameters).empty())
            {
                continue;
            }
            if (badValues[scaleName].empty() && notConstant.count(scaleName) == 0)
            {
                order.push_back(scaleName);
            }
            badValues[scaleName].push_back(&node);
        }
        for (const auto& scaleName : order)
        {
            if (auto found = badValues.find(scaleName); found != badValues.end())
            {
                reportBadValues(context, scaleName, found->second, log, sink);
            }
            else
            {
                reportNotConstant(context, scaleName, notConstant[scaleName], log, sink);
            }
        }
        reportBelowHalfPrecision(context, sink);
    }

    //! 2^-24, the smallest positive FP16 value (a subnormal; IEEE 754 binary16): a smaller scale rounds to 0 in FP16.
    static constexpr double kSmallestHalf = 5.9604644775390625e-08;

    //! Activation quantizers with a positive per-tensor scale below kSmallestHalf, one finding for the model (info):
    //! valid for TensorRT as it stands, but such a tensor's whole INT8 range is below 127 x 2^-24 (7.6e-6), which is
    //! what a calibration that saw it (nearly) zero gives (yolov8lite-qat-convs: 7.87e-09 = 1e-6 / 127, the amax floor
    //! of ../shared/models/gen_qdq_models.py), and the scale itself rounds to 0 where Q/DQ scales become FP16
    //! (NVIDIA ModelOpt folds them into FP16 for FP16 graphs, Model-Optimizer PR #1289,
    //! ../shared/docs/tensorrt-10-11.md): then TensorRT rejects it as a zero scale. Weights are left out: a tiny
    //! per-channel weight scale is a nearly dead channel, which the weights keep as they are.
    void reportBelowHalfPrecision(const Context& context, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        std::vector<const OnnxNode*> nodes;
        std::vector<std::string> described;
        for (const auto& parameters : graph.qdq)
        {
            const OnnxNode& node = graph.nodes[parameters.node];
            const bool tiny = parameters.scaleIsConstant && parameters.scale.size() == 1 && parameters.scale[0] > 0.0 &&
                              parameters.scale[0] < kSmallestHalf;
            if (!tiny || !isQuantize(node) || weights::quantizesWeight(graph, node))
            {
                continue;
            }
            nodes.push_back(&node);
            described.push_back(node.name + " (" + weights::formatValue(parameters.scale[0]) + ")");
        }
        if (nodes.empty())
        {
            return;
        }
        Finding finding = makeFinding(
            info(), std::to_string(nodes.size()) +
                        " activation quantizer(s) have a scale below 2^-24 (5.96e-08), "
                        "the smallest FP16 value: " +
                        nameList(described, 6) +
                        ". Their tensors' whole INT8 range is below 7.6e-06: likely dead on the calibration data "
                        "(such scales are what a calibration that saw them (nearly) zero gives); and where the "
                        "scales are converted to FP16 they round to 0, which TensorRT rejects.");
        finding.severity = Severity::kInfo;
        for (const OnnxNode* node : nodes)
        {
            finding.onnxNodes.push_back(node->name);
            finding.evidence.push_back(nodeEvidence(context, *node, "scale " + node->inputs[1] + " below 2^-24"));
        }
        finding.fix = "check the calibration of these tensors (a branch that is dead on the calibration data, or "
                      "weights that make it vanish) and re-calibrate; keep their scales FP32 if the network's Q/DQ "
                      "scales are converted to FP16";
        sink.add(std::move(finding));
    }

    static std::vector<std::size_t> badIndices(const QdqParameters& parameters)
    {
        std::vector<std::size_t> bad;
        for (std::size_t i = 0; i < parameters.scale.size(); ++i)
        {
            double value = parameters.scale[i];
            if (!(value > 0.0) || !std::isfinite(value))
            {
                bad.push_back(i);
            }
        }
        return bad;
    }

    static std::string nodeNames(const std::vector<const OnnxNode*>& nodes)
    {
        std::vector<std::string> names;
        for (const OnnxNode* node : nodes)
        {
            names.push_back(node->opType + " " + node->name);
        }
        return nameList(names, 3);
    }

    void reportBadValues(const Context& context, const std::string& scaleName,
                         const std::vector<const OnnxNode*>& nodes, const std::vector<Evidence>& log,
                         FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const QdqParameters& parameters = *graph.qdqOf(nodes.front()->index);
        auto bad = badIndices(parameters);
        std::string where;
        std::vector<double> values;
        for (std::size_t i = 0; i < bad.size() && i < 6; ++i)
        {
            where += (i == 0 ? "" : ", ") + std::to_string(bad[i]);
        }
        for (std::size_t index : bad)
        {
            values.push_back(parameters.scale[index]);
        }
        if (bad.size() > 6)
        {
            where += " and " + std::to_string(bad.size() - 6) + " more";
        }
        const bool perChannel = parameters.scale.size() > 1;
        bool weight = false;
        for (const OnnxNode* node : nodes)
        {
            weight = weight || weights::quantizesWeight(graph, *node);
        }
        double smallestPositive = 0.0;
        for (double value : parameters.scale)
        {
            if (value > 0.0 && std::isfinite(value) && (smallestPositive == 0.0 || value < smallestPositive))
            {
                smallestPositive = value;
            }
        }
        std::string message =
            nodeNames(nodes) + (nodes.size() == 1 ? " has " : " have ") +
            (perChannel ? std::to_string(bad.size()) + " of " + std::to_string(parameters.scale.size()) +
                              " per-channel scale values (channel " + where + ") "
                        : std::string("a scale ")) +
            weights::formatValues(values) + " in " + scaleName +
            " that TensorRT rejects: scales must be positive and finite (`Scale coefficients must all be positive`).";
        if (weight && perChannel)
        {
            message += " A zero weight scale usually means a channel whose weights are all zero (amax 0).";
        }
        Finding finding = makeFinding(info(), message);
        for (const OnnxNode* node : nodes)
        {
            finding.onnxNodes.push_back(node->name);
            finding.evidence.push_back(
                nodeEvidence(context, *node, "scale " + scaleName + " = " + weights::formatValues(parameters.scale)));
        }
        finding.evidence.insert(finding.evidence.end(), log.begin(), log.end());
        finding.fix =
            "replace the non-positive values of " + scaleName +
            (smallestPositive > 0.0 ? " with a small positive value (e.g. the smallest positive scale of the tensor, " +
                                          weights::formatValue(smallestPositive) + ")"
                                    : " with a small positive value") +
            "; NVIDIA ModelOpt does this with replace_zero_scale_with_smallest_nonzero, and clamping amax to "
            "a minimum during calibration avoids it";
        sink.add(std::move(finding));
    }

    void reportNotConstant(const Context& context, const std::string& scaleName,
                           const std::vector<const OnnxNode*>& nodes, const std::vector<Evidence>& log,
                           FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        const OnnxNode* producer = producerOf(graph, scaleName);
        const bool foldable = weights::isConstantComputed(graph, scaleName);
        std::string origin =
            producer != nullptr
                ? "computed by " + producer->opType + " " + producer->name
                : (isGraphInput(graph, scaleName) ? "a network input" : "not produced by any node or initializer");
        Finding finding = makeFinding(
            info(), nodeNames(nodes) + (nodes.size() == 1 ? " takes its scale " : " take their scale ") + scaleName +
                        " from " + origin + (foldable ? " (from constants only)" : "") +
                        ": TensorRT needs Q/DQ scales to be build-time constants (an initializer or a Constant node).");
        std::vector<std::string> names;
        for (const OnnxNode* node : nodes)
        {
            names.push_back(node->name);
            finding.onnxNodes.push_back(node->name);
            finding.evidence.push_back(
                nodeEvidence(context, *node, "input 1 (scale) " + scaleName + " is not constant"));
        }
        if (producer != nullptr)
        {
            finding.onnxNodes.push_back(producer->name);
        }
        finding.evidence.insert(finding.evidence.end(), log.begin(), log.end());
        finding.fix = foldable ? "constant-fold the scale subgraph into an initializer (e.g. polygraphy surgeon "
                                 "sanitize --fold-constants, or onnxsim) so " +
                                     nameList(names, 3) + " read " + scaleName + " as a constant"
                               : "replace " + scaleName + " with a constant scale (calibrate it) on " +
                                     nameList(names, 3) + "; TensorRT does not take Q/DQ scales computed at run time";
        sink.add(std::move(finding));
    }

    void checkLog(const Context& context, FindingSink& sink) const override
    {
        auto lines = logEvidence(context);
        if (lines.empty())
        {
            return;
        }
        Finding finding =
            makeFinding(info(), "The TensorRT build log reports a Q/DQ scale error (\"" + lines.front().text +
                                    "\"): a scale of the model is zero/negative or not a constant.");
        finding.evidence = lines;
        finding.fix = "make every Q/DQ scale a positive constant (clamp zero scales to the smallest positive value); "
                      "run qdq-doctor on the ONNX model to list the nodes";
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeInvalidScale()
{
    return std::make_unique<InvalidScale>();
}

} // namespace qdq::rules
