// R13 residual-precision-mismatch: the residual input of an Add fused into a conv has a precision different from the
// one the Add's consumer needs. TensorRT makes the fused Conv+Add output the precision of the residual input, so an
// INT8 residual feeding a float consumer costs a standalone Dequantize of the residual (and a Quantize later), and a
// float residual feeding a quantized consumer costs a standalone Quantize.
#include "rules/precision_common.h"
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

using namespace patterns;
using namespace precision;

class ResidualPrecisionMismatch final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "residual-precision-mismatch",
            "R13",
            "The residual input of a fused Conv+Add has a different precision from what the Add's consumer needs",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            "the float consumer is no pooling with a quantizer after it to take a scale from (other ops change the "
            "range), or the Add's output is a network output that must stay float"};
        return kInfo;
    }

private:
    //! The conv side of a Add: a quantized weighted op through epilogue ops, possibly behind a Q/DQ pair (R12 form).
    static const OnnxNode* convSide(const OnnxGraph& graph, const std::string& tensor, bool& throughQdq)
    {
        throughQdq = false;
        // A SiLU between the conv and the Add keeps the Add out of the conv (activation-before-residual-add).
        if (const OnnxNode* conv = quantizedWeightedBehind(graph, tensor, false))
        {
            return conv;
        }
        const OnnxNode* dq = producerOf(graph, tensor);
        if (dq != nullptr && isDequantize(*dq) && !dq->inputs.empty())
        {
            const OnnxNode* q = producerOf(graph, dq->inputs[0]);
            if (q != nullptr && isQuantize(*q) && !q->inputs.empty())
            {
                throughQdq = true;
                return quantizedWeightedBehind(graph, q->inputs[0], false);
            }
        }
        return nullptr;
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& add : graph.nodes)
        {
            if ((add.opType != "Add" && add.opType != "Sum") || add.inputs.size() != 2 || add.outputs.empty() ||
                activationInputs(graph, add).size() != 2)
            {
                continue;
            }
            bool qdq[2] = {false, false};
            const OnnxNode* conv[2] = {convSide(graph, add.inputs[0], qdq[0]), convSide(graph, add.inputs[1], qdq[1])};
            if (conv[0] == nullptr && conv[1] == nullptr)
            {
                continue;
            }
            // TensorRT fuses the Add into a conv whose output reaches it directly; a conv behind a Q/DQ pair is the
            // residual side (e.g. a quantized downsample branch). Between two direct convs, the later one fuses.
            bool direct[2] = {conv[0] != nullptr && !qdq[0], conv[1] != nullptr && !qdq[1]};
            std::size_t fused = 0;
            if (direct[0] || direct[1])
            {
                fused = direct[1] ? 1 : 0;
                if (direct[0] && direct[1] && conv[0]->index > conv[1]->index)
                {
                    fused = 0;
                }
            }
            else
            {
                fused = conv[1] != nullptr ? 1 : 0;
                if (conv[0] != nullptr && conv[1] != nullptr && conv[0]->index > conv[1]->index)
                {
                    fused = 0;
                }
            }
            std::size_t residualSide = 1 - fused;
            const std::string& residual = add.inputs[residualSide];
            const OnnxNode* residualDq = feedingDequantize(graph, residual);
            // The Add's output after its fused epilogue (Relu and the like).
            std::string out = add.outputs[0];
            std::vector<std::string> epilogue;
            for (int depth = 0; depth < 4; ++depth)
            {
                auto consumers = consumersOf(graph, out);
                if (consumers.size() != 1 || !isActivation(consumers[0]->opType) || consumers[0]->outputs.empty())
                {
                    break;
                }
                epilogue.push_back(consumers[0]->name);
                out = consumers[0]->outputs[0];
            }
            auto forward = forwardQuantizers(graph, out, false);
            bool outputQuantized = !forward.quantizers.empty() && forward.allPaths;
            if (residualDq != nullptr && !outputQuantized && !qdq[fused])
            {
                reportInt8Residual(context, add, *conv[fused], residual, *residualDq, out, epilogue, sink);
            }
            else if (residualDq == nullptr && outputQuantized && qdq[fused])
            {
                // The conv side is quantized (so residual-input-not-quantized stays silent), the residual is float and
                // the Add's consumers are quantized: the Add cannot produce INT8.
                Finding finding = makeFinding(
                    info(), "Add " + add.name + " has a float residual input " + residual + " while its output " + out +
                                " is quantized by " + forward.quantizers[0]->name +
                                ": the Add's output takes the precision of its residual input, so it is float and " +
                                forward.quantizers[0]->name + " runs as a standalone Quantize.");
                finding.onnxNodes = {add.name, conv[fused]->name, forward.quantizers[0]->name};
                finding.evidence.push_back(nodeEvidence(context, add,
                                                        "input " + std::to_string(residualSide) + " (" + residual +
                                                            ") float; output quantized by " +
                                                            forward.quantizers[0]->name));
                finding.fix = "insert QuantizeLinear -> DequantizeLinear on tensor " + residual + " (input " +
                              std::to_string(residualSide) + " of " + add.name + ") with a scale calibrated for it (" +
                              forward.quantizers[0]->name + scaleSuffix(graph, *forward.quantizers[0]) +
                              " after the Add measures the sum)";
                // The Q after the Add measures the sum, not the residual: the other input can widen or cancel it,
                // so the residual needs a calibrated scale; fix lists the edit as skipped with this reason.
                FixEdit edit = insertQdqEdit(add, residual, std::string(),
                                             "calibrate this tensor: " + forward.quantizers[0]->name +
                                                 " after the Add measures the sum, not the residual " + residual);
                edit.consumers = {{add.name, static_cast<std::uint32_t>(residualSide)}};
                finding.edits.push_back(std::move(edit));
                attachLayers(context, add.name, finding, {});
                sink.add(std::move(finding));
            }
        }
    }

    void reportInt8Residual(const Context& context, const OnnxNode& add, const OnnxNode& conv,
                            const std::string& residual, const OnnxNode& residualDq, const std::string& out,
                            const std::vector<std::string>& epilogue, FindingSink& sink) const
    {
        const OnnxGraph& graph = *context.graph();
        FloatEnds ends = floatEnds(graph, out, false);
        std::vector<std::string> users;
        std::vector<std::string> fixes;
        std::vector<FixEdit> edits;
        for (std::size_t i = 0; i < ends.users.size(); ++i)
        {
            users.push_back(ends.users[i]->opType + " " + ends.users[i]->name);
            const bool keepsInputRange = ends.users[i]->opType == "MaxPool" || ends.users[i]->opType == "GlobalMaxPool";
            fixes.push_back("insert QuantizeLinear -> DequantizeLinear on tensor " + ends.userTensors[i] + " before " +
                            ends.users[i]->name +
                            (keepsInputRange ? std::string() : std::string(" with a scale calibrated for it")));
            // The scale: the next quantizer after the float consumer, where the consumer passes its input's range
            // on: a max pooling commutes with quantization (reference 1.3: the documented commuting op), so the Q
            // after it fits its input. An average pooling narrows the range (a channel's mean is at most its largest
            // value): a Q after it would clip the input, which then needs a calibrated scale; the edit goes in
            // without one and fix lists it as skipped with that reason. Other consumers (a Softmax maps any range to
            // [0, 1]) get no edit.
            const OnnxNode& user = *ends.users[i];
            const OnnxNode* after = user.outputs.empty() ? nullptr : quantizeDownstream(graph, user.outputs[0]);
            if (keepsInputRange && after != nullptr)
            {
                edits.push_back(insertQdqEdit(user, ends.userTensors[i], after->name,
                                              "the scale of the next quantizer downstream (" + after->name +
                                                  "), the one TensorRT can fuse into the conv"));
            }
            else if (after != nullptr && isAveragePooling(graph, user))
            {
                edits.push_back(insertQdqEdit(user, ends.userTensors[i], std::string(),
                                              "calibrate this tensor: " + after->name + " after " + user.opType + " " +
                                                  user.name +
                                                  " measures its output, whose range differs, so "
                                                  "its scale would clip " +
                                                  ends.userTensors[i]));
            }
        }
        for (const auto& output : ends.outputs)
        {
            users.push_back("network output " + output);
        }
        bool onlyOutputs = ends.users.empty();
        Finding finding = makeFinding(
            info(), "Add " + add.name + " (fused into " + conv.name + ") has an INT8 residual input " + residual +
                        " (from " + residualDq.name + ") but its output " + out + " feeds " + nameList(users, 3) +
                        " in float: the fused Conv+Add must output float, so TensorRT dequantizes the residual in a "
                        "standalone Dequantize layer" +
                        (onlyOutputs ? "." : " and quantizes again after the float consumer."));
        finding.onnxNodes = {add.name, conv.name, residualDq.name};
        finding.onnxNodes.insert(finding.onnxNodes.end(), epilogue.begin(), epilogue.end());
        for (const OnnxNode* user : ends.users)
        {
            finding.onnxNodes.push_back(user->name);
        }
        finding.evidence.push_back(nodeEvidence(context, add,
                                                "residual " + residual + " DQ-fed by " + residualDq.name + "; output " +
                                                    out + " not quantized"));
        finding.fix = onlyOutputs ? "the output must be float; remove the Q/DQ on the residual input " + residual +
                                        " of " + add.name + " (or accept the standalone Dequantize)"
                                  : nameList(fixes, 3) +
                                        " (e.g. quantize the pooling input) so the fused Conv+Add emits INT8 and the "
                                        "standalone Dequantize of the residual disappears";
        if (!onlyOutputs && edits.size() == ends.users.size())
        {
            // All or nothing: with one reader left float the Conv+Add still writes float. Where a reader's input
            // needs calibrating, only those edits go in, for the report to say so.
            const auto unscaled = [](const FixEdit& edit) { return edit.scaleFrom.empty(); };
            if (std::any_of(edits.begin(), edits.end(), unscaled))
            {
                edits.erase(std::remove_if(edits.begin(), edits.end(), [&](const FixEdit& e) { return !unscaled(e); }),
                            edits.end());
            }
            finding.edits = std::move(edits);
        }
        attachLayers(context, add.name, finding, {});
        sink.add(std::move(finding));
    }

    static void attachLayers(const Context& context, const std::string& addNode, Finding& finding,
                             std::vector<std::size_t> costly)
    {
        const EnginePlan* plan = context.engine();
        if (plan == nullptr)
        {
            return;
        }
        for (std::size_t layer : layersOf(context, addNode))
        {
            finding.engineLayers.push_back(plan->layers[layer].name);
            for (const auto& input : plan->layers[layer].inputs)
            {
                if (auto producer = producerLayer(*plan, input.name); producer && isStandaloneQdq(context, *producer))
                {
                    addUnique(costly, *producer);
                }
            }
            for (const auto& output : plan->layers[layer].outputs)
            {
                for (std::size_t consumer : consumerLayers(*plan, output.name))
                {
                    if (isStandaloneQdq(context, consumer))
                    {
                        addUnique(costly, consumer);
                    }
                }
            }
        }
        for (std::size_t layer : costly)
        {
            finding.engineLayers.push_back(plan->layers[layer].name);
            finding.evidence.push_back(layerEvidence(context, layer, "Origin",
                                                     plan->layers[layer].type + " " +
                                                         precisionText(inputPrecision(plan->layers[layer])) + " -> " +
                                                         precisionText(outputPrecision(plan->layers[layer]))));
        }
        finding.costMs = sumTimes(context, costly);
    }

    //! The float consumers of the fused layer's output, and the Quantize layers that follow them; true when a
    //! Quantize reads the output directly.
    static bool floatConsumersOf(const Context& context, const EngineLayer& layer,
                                 std::vector<std::size_t>& floatConsumers, std::vector<std::size_t>& requantize)
    {
        const EnginePlan& plan = *context.engine();
        bool directQuantize = false;
        for (std::size_t consumer : consumerLayers(plan, layer.outputs[0].name))
        {
            if (isStandaloneQuantize(context, consumer))
            {
                directQuantize = true;
                continue;
            }
            if (isInsertedReformat(context, consumer))
            {
                continue;
            }
            floatConsumers.push_back(consumer);
            for (const auto& output : plan.layers[consumer].outputs)
            {
                for (std::size_t next : consumerLayers(plan, output.name))
                {
                    if (isStandaloneQuantize(context, next))
                    {
                        requantize.push_back(next);
                    }
                }
            }
        }
        return directQuantize;
    }

    //! Engine: a fused Conv+Add with float output whose residual comes from a standalone Dequantize, and whose output
    //! feeds a float layer (not directly a Quantize).
    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan& plan = *context.engine();
        for (std::size_t index = 0; index < plan.layers.size(); ++index)
        {
            const EngineLayer& layer = plan.layers[index];
            if (!isResidualLayer(layer) || layer.outputs.empty() || !isFloat(outputPrecision(layer)) ||
                !isQuantized(inputPrecision(layer)))
            {
                continue;
            }
            std::optional<std::size_t> dequantize;
            std::string residual;
            for (std::size_t input = 1; input < layer.inputs.size(); ++input)
            {
                auto producer = producerLayer(plan, layer.inputs[input].name);
                if (producer && isStandaloneDequantize(context, *producer))
                {
                    dequantize = producer;
                    residual = plan.layers[*producer].inputs[0].name;
                }
            }
            if (!dequantize)
            {
                continue;
            }
            std::vector<std::size_t> floatConsumers;
            std::vector<std::size_t> requantize;
            const bool directQuantize = floatConsumersOf(context, layer, floatConsumers, requantize);
            if (floatConsumers.empty() || directQuantize)
            {
                continue;
            }
            std::string add = tokenWith(layer, "Add");
            std::vector<std::string> consumers = layerNames(context, floatConsumers);
            const EngineLayer& dq = plan.layers[*dequantize];
            Finding finding = makeFinding(
                info(),
                "The residual input of " + add + " (fused into \"" + layer.name + "\") is INT8 (" + residual +
                    ") but the fused layer outputs " + precisionText(outputPrecision(layer)) +
                    " because its consumer " + nameList(consumers, 2) +
                    " runs in float: TensorRT dequantizes the residual with the standalone \"" + dq.name + "\"" +
                    (requantize.empty() ? std::string(".")
                                        : " and quantizes again with \"" + plan.layers[requantize[0]].name + "\"."));
            finding.onnxNodes.push_back(add);
            for (std::size_t l : {*dequantize, floatConsumers.front()})
            {
                for (const auto& node : context.correlation.layers[l].onnxNodes)
                {
                    finding.onnxNodes.emplace_back(node);
                }
            }
            finding.engineLayers.push_back(layer.name);
            finding.engineLayers.push_back(dq.name);
            finding.engineLayers.insert(finding.engineLayers.end(), consumers.begin(), consumers.end());
            std::vector<std::size_t> costly = {*dequantize};
            for (std::size_t q : requantize)
            {
                finding.engineLayers.push_back(plan.layers[q].name);
                costly.push_back(q);
            }
            finding.evidence.push_back(
                layerEvidence(context, *dequantize, "Origin",
                              dq.type + (dq.origin.empty() ? "" : " (Origin: " + dq.origin + ")") + " " +
                                  precisionText(inputPrecision(dq)) + " -> " + precisionText(outputPrecision(dq))));
            finding.evidence.push_back(layerEvidence(
                context, index, "Outputs[0]", layer.outputs[0].name + " " + precisionText(outputPrecision(layer))));
            finding.evidence.push_back(
                layerEvidence(context, floatConsumers.front(), "Inputs[0]",
                              plan.layers[floatConsumers.front()].type + " reads " +
                                  precisionText(inputPrecision(plan.layers[floatConsumers.front()]))));
            finding.costMs = sumTimes(context, costly);
            finding.fix = "in the ONNX model, insert QuantizeLinear -> DequantizeLinear on the input of " +
                          nameList(consumers, 2) + " (the output of " + add +
                          " and its activation) so the fused Conv+Add emits INT8 and \"" + dq.name + "\"" +
                          (requantize.empty() ? std::string() : " and \"" + plan.layers[requantize[0]].name + "\"") +
                          " disappear";
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeResidualPrecisionMismatch()
{
    return std::make_unique<ResidualPrecisionMismatch>();
}

} // namespace qdq::rules
