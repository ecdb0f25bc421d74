// R11 residual-input-not-quantized: the Add after a quantized conv has a float residual input, so the fused
// Conv+Add cannot emit INT8 and a separate Quantize follows (or the Add runs in float).
#include "qdq/layer_names.h"
#include "qdq/patterns.h"
#include "qdq/reformat_walks.h"
#include "rules/precision_common.h"
#include "rules/rules.h"

#include <algorithm>
#include <map>
#include <set>

namespace qdq::rules
{

namespace
{

using namespace patterns;
using precision::precisionText;

std::string addToken(const EngineLayer& layer)
{
    for (const auto& token : parseLayerName(layer.name).tokens)
    {
        if (token.find("Add") != std::string::npos)
        {
            return token;
        }
    }
    return layer.name;
}

//! Which input of add is the shortcut: the one with the shorter way back (in nodes, Q/DQ included) to the nearest
//! tensor both inputs come from. -1 when no common ancestor lies within 64 nodes of each, or both ways are as long.
int shortcutSide(const OnnxGraph& graph, const OnnxNode& add)
{
    const auto distances = [&graph](const std::string& start)
    {
        std::map<std::string, int> distance{{start, 0}};
        std::vector<std::string> frontier{start};
        for (std::size_t i = 0; i < frontier.size() && distance.size() < 64; ++i)
        {
            const std::string tensor = frontier[i];
            const OnnxNode* producer = producerOf(graph, tensor);
            if (producer == nullptr)
            {
                continue;
            }
            for (const auto& input : producer->inputs)
            {
                if (!input.empty() && !isConstantTensor(graph, input) &&
                    distance.emplace(input, distance[tensor] + 1).second)
                {
                    frontier.push_back(input);
                }
            }
        }
        return distance;
    };
    const auto left = distances(add.inputs[0]);
    const auto right = distances(add.inputs[1]);
    int best = -1;
    int bestTotal = 0;
    for (const auto& [tensor, fromLeft] : left)
    {
        auto it = right.find(tensor);
        if (it == right.end())
        {
            continue;
        }
        const int total = fromLeft + it->second;
        if (best < 0 || total < bestTotal)
        {
            bestTotal = total;
            best = fromLeft < it->second ? 0 : it->second < fromLeft ? 1 : -2;
        }
    }
    return best < 0 ? -1 : best;
}

//! " (after N builder reformat(s))" when the walk passed any.
std::string throughReformats(std::size_t reformats)
{
    return reformats == 0 ? std::string() : " (after " + std::to_string(reformats) + " builder reformat(s))";
}

void addOnce(std::vector<std::string>& names, const std::string& name)
{
    if (std::find(names.begin(), names.end(), name) == names.end())
    {
        names.push_back(name);
    }
}

//! The Q with the largest per-tensor scale among those that quantize node's output (through activations), or nullptr.
const OnnxNode* widestQuantizerAfter(const OnnxGraph& graph, const OnnxNode& node)
{
    if (node.outputs.empty())
    {
        return nullptr;
    }
    const OnnxNode* widest = nullptr;
    double widestScale = 0.0;
    for (const OnnxNode* q : forwardQuantizers(graph, node.outputs[0], true).quantizers)
    {
        const auto scale = perTensorScale(graph, *q);
        if (scale && (widest == nullptr || *scale > widestScale))
        {
            widest = q;
            widestScale = *scale;
        }
    }
    return widest;
}

//! The conv that writes a float residual tensor: a convolution or GEMM layer, not itself a Conv+Add, with an INT8
//! input and a float output. It runs INT8-in / float-out because a float residual reads its output (the Q/DQ that
//! quantizes the tensor for the next conv cannot fuse into it while the Add reads the float value), so the finding
//! that explains the float residual names it too; int8-conv-float-output leaves it to this rule.
std::optional<std::size_t> floatResidualWriter(const EnginePlan& plan, const ReformatSource& source)
{
    if (!source.producer)
    {
        return std::nullopt;
    }
    const EngineLayer& writer = plan.layers[*source.producer];
    if (!precision::isWeightedLayer(writer) || precision::isResidualLayer(writer) || writer.inputs.empty() ||
        !isQuantized(inputPrecision(writer)) || !isFloat(outputPrecision(writer)))
    {
        return std::nullopt;
    }
    return source.producer;
}

//! The engine-only reading of the rule: which fused Conv+Add each standalone Quantize (with the builder reformats
//! before it) belongs to and why, the Conv+Add layers with a float residual, and the convs that write that residual.
class EngineResiduals
{
public:
    explicit EngineResiduals(const Context& context) : mContext(context), mPlan(*context.engine()) {}

    //! Each standalone Quantize layer (with the builder reformats before it) is charged to one fused Conv+Add: the
    //! one that produced its input, else the one that uses its input as the residual.
    void chargeStandaloneQuantizes()
    {
        for (const auto& mapping : mContext.correlation.layers)
        {
            if (mapping.state != LayerState::kInsertedQdq)
            {
                continue;
            }
            const EngineLayer& q = mPlan.layers[mapping.layer];
            // Only Quantize layers (INT8 output) are charged: a standalone Dequantize next to a Conv+Add comes from
            // the Add's float output precision (residual-precision-mismatch), not from a float residual.
            if (q.inputs.empty() || !isQuantized(outputPrecision(q)))
            {
                continue;
            }
            // The builder may put reformats between the Conv+Add and the Quantize (the TRT 8.2 MobileNetV2 engine
            // of trex-tests-mobilenet-qat-2022-04: "Reformatting CopyNode for Input Tensor 0 to QuantizeLinear_390"
            // turns the chw32 FP32 output of Add_387 into the linear FP32 its Scale-layer Quantize reads). They
            // carry the same data, so the walk looks through them and the Add explains them too.
            const ReformatSource source = sourceThroughReformats(mContext, q.inputs[0].name);
            std::vector<std::size_t> explained = source.reformats;
            explained.push_back(mapping.layer);
            if (source.producer && isConvAdd(*source.producer))
            {
                auto& charged = mChargedTo[*source.producer];
                charged.insert(charged.end(), explained.begin(), explained.end());
                mReasons[*source.producer].push_back("\"" + q.name + "\" requantizes its output " + source.modelTensor +
                                                     throughReformats(source.reformats.size()));
                continue;
            }
            for (const ReformatReader& reader : readersThroughReformats(mContext, source.tensor))
            {
                if (reader.layer != mapping.layer && reader.input != 0 && isConvAdd(reader.layer))
                {
                    auto& charged = mChargedTo[reader.layer];
                    charged.insert(charged.end(), explained.begin(), explained.end());
                    charged.insert(charged.end(), reader.reformats.begin(), reader.reformats.end());
                    mReasons[reader.layer].push_back("its residual input " + source.modelTensor +
                                                     " is also quantized separately by \"" + q.name + "\"" +
                                                     throughReformats(source.reformats.size()));
                    nameWriter(reader.layer, source);
                    break;
                }
            }
        }
    }

    //! A float residual input to a fused Conv+Add whose other input is INT8.
    void addFloatResiduals()
    {
        for (std::size_t layer = 0; layer < mPlan.layers.size(); ++layer)
        {
            if (!isConvAdd(layer))
            {
                continue;
            }
            const EngineLayer& l = mPlan.layers[layer];
            if (!isQuantized(l.inputs[0].precision) || !isFloat(l.inputs[1].precision))
            {
                continue;
            }
            const ReformatSource residual = sourceThroughReformats(mContext, l.inputs[1].name);
            const std::string residualIs = "its residual input " + l.inputs[1].name + " is " +
                                           std::string(precisionName(l.inputs[1].precision)) +
                                           " while the conv input is INT8";
            if (isQuantized(outputPrecision(l)))
            {
                // Float residual with an INT8 output: the output scale cannot follow the residual.
                mReasons[layer].push_back(residualIs);
                if (auto producer = producerLayer(mPlan, l.inputs[1].name); producer && isStandalone(*producer))
                {
                    mChargedTo[layer].push_back(*producer);
                }
            }
            else if (mChargedTo.count(layer) == 0)
            {
                // No standalone Quantize next to it (the float result goes on to a float layer), but the fused layer
                // writes float for the same reason. Not where a standalone Dequantize writes the float residual: the
                // model quantizes it, and the float output dequantized it (residual-precision-mismatch, the last
                // block of trex-pt-resnet-a100-qat-residual).
                if (residual.producer && isStandalone(*residual.producer))
                {
                    continue;
                }
                mReasons[layer].push_back(residualIs + ", so the fused layer writes " +
                                          precisionText(outputPrecision(l)));
            }
            mChargedTo[layer];
            nameWriter(layer, residual);
        }
    }

    //! One finding per Conv+Add charged or named above.
    std::vector<Finding> findings(const RuleInfo& info)
    {
        std::vector<Finding> result;
        for (auto& [layer, explained] : mChargedTo)
        {
            std::sort(explained.begin(), explained.end());
            explained.erase(std::unique(explained.begin(), explained.end()), explained.end());
            result.push_back(findingFor(info, layer, explained));
        }
        return result;
    }

private:
    bool isConvAdd(std::size_t layer) const
    {
        const EngineLayer& l = mPlan.layers[layer];
        return l.inputs.size() >= 2 && layerNameHas(l, "Add") &&
               (layerNameHas(l, "Conv") || layerNameHas(l, "Gemm") || l.type.find("Conv") != std::string::npos);
    }

    bool isStandalone(std::size_t layer) const
    {
        return mContext.correlation.layers[layer].state == LayerState::kInsertedQdq;
    }

    //! Names the conv that writes convAdd's float residual (not charged: it stays, writing INT8 once fixed).
    void nameWriter(std::size_t convAdd, const ReformatSource& residual)
    {
        auto writer = floatResidualWriter(mPlan, residual);
        auto& named = mWriters[convAdd];
        if (writer && std::find(named.begin(), named.end(), *writer) == named.end())
        {
            named.push_back(*writer);
            mReasons[convAdd].push_back("\"" + mPlan.layers[*writer].name + "\" writes the residual " +
                                        residual.modelTensor + " in " +
                                        precisionText(outputPrecision(mPlan.layers[*writer])) +
                                        " from an INT8 input because the Add reads it unquantized");
        }
    }

    Finding findingFor(const RuleInfo& info, std::size_t layer, const std::vector<std::size_t>& explained)
    {
        const EngineLayer& l = mPlan.layers[layer];
        const std::string add = addToken(l);
        Finding finding = makeFinding(info, "The residual input of " + add + " (fused into \"" + l.name +
                                                "\") is likely not quantized: " + nameList(mReasons[layer], 3) + ".");
        finding.likely = true;
        finding.engineLayers.push_back(l.name);
        finding.onnxNodes.push_back(add);
        for (std::size_t other : explained)
        {
            finding.engineLayers.push_back(mPlan.layers[other].name);
            finding.evidence.push_back(layerEvidence(
                mContext, other, "Origin",
                mPlan.layers[other].type +
                    (mPlan.layers[other].origin.empty() ? "" : " (Origin: " + mPlan.layers[other].origin + ")")));
        }
        finding.evidence.push_back(layerEvidence(
            mContext, layer, "Inputs[1]", l.inputs[1].name + " " + std::string(precisionName(l.inputs[1].precision))));
        for (std::size_t writer : mWriters[layer])
        {
            const EngineLayer& w = mPlan.layers[writer];
            addOnce(finding.engineLayers, w.name);
            finding.evidence.push_back(layerEvidence(mContext, writer, "Outputs[0]",
                                                     precisionText(inputPrecision(w)) + " -> " + w.outputs[0].name +
                                                         " " + precisionText(outputPrecision(w)) + ", the residual"));
        }
        finding.costMs = sumTimes(mContext, explained);
        finding.fix = "in the ONNX model, insert QuantizeLinear -> DequantizeLinear on the residual (identity) input "
                      "of " +
                      add +
                      ", with the same scale as the Q/DQ that quantizes that tensor for the next conv, so the fused "
                      "Conv+Add emits INT8 and the standalone Quantize (with the reformats before it) disappears";
        if (auto floatReader = onlyFloatReader(layer))
        {
            // The model-side condition read off the engine: the output goes on in float only (the last block before
            // a float GlobalAveragePool), so an INT8 residual would only add a standalone Dequantize.
            const EngineLayer& reader = mPlan.layers[*floatReader];
            finding.message += " Its output goes on in float only (to \"" + reader.name +
                               "\"), so the fused layer writes float whatever its residual is.";
            finding.fix = "in the ONNX model, quantize the residual (identity) input of " + add +
                          " only together with the input of \"" + reader.name +
                          "\" (a QuantizeLinear -> DequantizeLinear with a scale calibrated for it), as "
                          "trex-pt-resnet-a100-qat-residual-qgap does for its GlobalAveragePool: quantized alone, the "
                          "residual leaves the fused Conv+Add writing float for that consumer, and TensorRT "
                          "dequantizes the INT8 residual in a standalone Dequantize layer "
                          "(residual-precision-mismatch; `fix` refuses that edit alone)";
        }
        return finding;
    }

    //! The one kind of reader a Conv+Add's output has when it goes on in float only: float layers (through builder
    //! reformats) that are no standalone Q/DQ, no other Conv+Add and read no INT8. The first such reader, or nullopt
    //! when any reader is quantized or the output is a network output.
    std::optional<std::size_t> onlyFloatReader(std::size_t layer) const
    {
        const EngineLayer& l = mPlan.layers[layer];
        if (l.outputs.empty() || precision::isBinding(mPlan, l.outputs[0].name))
        {
            return std::nullopt;
        }
        std::optional<std::size_t> first;
        for (const ReformatReader& reader : readersThroughReformats(mContext, l.outputs[0].name))
        {
            const EngineLayer& r = mPlan.layers[reader.layer];
            if (isStandalone(reader.layer) || isConvAdd(reader.layer) || reader.input >= r.inputs.size() ||
                isQuantized(r.inputs[reader.input].precision) || isQuantized(outputPrecision(r)))
            {
                return std::nullopt;
            }
            first = first ? first : std::optional<std::size_t>(reader.layer);
        }
        return first;
    }

    const Context& mContext;
    const EnginePlan& mPlan;
    std::map<std::size_t, std::vector<std::size_t>> mChargedTo; //!< Conv+Add -> the layers its fix removes
    std::map<std::size_t, std::vector<std::string>> mReasons;   //!< Conv+Add -> why, in words
    std::map<std::size_t, std::vector<std::size_t>> mWriters;   //!< Conv+Add -> the convs writing its residual
};

class ResidualInputNotQuantized final : public ModelOrEngineRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "residual-input-not-quantized",
            "R11",
            "The residual (identity) input of an Add after a quantized conv is not quantized, so the fused Conv+Add "
            "cannot produce INT8",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine | kReadsCorrelation,
            ""};
        return kInfo;
    }

private:
    //! The quantized weighted op whose output (through epilogue ops) is tensor, or nullptr.
    static const OnnxNode* quantizedConvBehind(const OnnxGraph& graph, const std::string& tensor)
    {
        const OnnxNode* producer = producerOf(graph, tensor);
        for (int depth = 0; producer != nullptr && depth < 6; ++depth)
        {
            if (isWeighted(graph, *producer))
            {
                return !producer->inputs.empty() && feedingDequantize(graph, producer->inputs[0]) != nullptr ? producer
                                                                                                             : nullptr;
            }
            if (!isEpilogue(producer->opType) || producer->inputs.empty())
            {
                return nullptr;
            }
            producer = producerOf(graph, producer->inputs[0]);
        }
        return nullptr;
    }

    //! The scale advice for a Q/DQ on the residual: the scale to copy (from), why, and the hint for the fix text.
    struct ResidualScale
    {
        std::string hint;
        std::string from;
        std::string reason;
    };

    static ResidualScale residualScale(const OnnxGraph& graph, const OnnxNode& node, const std::string& residual)
    {
        auto existing = forwardQuantizers(graph, residual, false);
        ResidualScale scale;
        std::string whyNoScale;
        if (const OnnxNode* lender =
                existing.quantizers.empty() ? nullptr : scaleSourceAmong(graph, existing.quantizers, &whyNoScale))
        {
            char buffer[64];
            std::snprintf(buffer, sizeof(buffer), "%.8g", perTensorScale(graph, *lender).value_or(0.0));
            scale.hint = " with the scale of " + lender->name + " (" + buffer + ") so TensorRT can merge the two";
            scale.from = lender->name;
            scale.reason = existing.quantizers.size() > 1
                               ? "the largest scale of the Qs already on " + residual +
                                     " (the one fanout-scale-mismatch gives them all), so TensorRT merges them"
                               : "the scale of the Q already on " + residual + ", so TensorRT merges the two";
        }
        else if (!existing.quantizers.empty())
        {
            scale.hint = " with a calibrated scale (" + whyNoScale + ")";
            scale.reason = residual + " needs a calibrated scale: " + whyNoScale;
        }
        else
        {
            // No quantizer reads the residual. The Add's output quantizers measure the sum, which the other input
            // can widen or cancel: their scale says nothing of the residual's range (borrowed, it clipped the
            // negative half of RegNet's projection shortcuts, docs/fix.md), so the residual needs calibrating.
            const OnnxNode* widest = widestQuantizerAfter(graph, node);
            const std::string after = widest == nullptr ? std::string()
                                                        : " (the quantizers after the Add, such as " + widest->name +
                                                              ", measure the sum, not this input)";
            scale.hint = " with a scale calibrated for it" + after;
            scale.reason = "no quantizer reads " + residual + ": calibrate this tensor" + after;
        }
        return scale;
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        for (const auto& node : graph.nodes)
        {
            if (node.opType != "Add" || node.inputs.size() != 2)
            {
                continue;
            }
            const OnnxNode* conv[2] = {quantizedConvBehind(graph, node.inputs[0]),
                                       quantizedConvBehind(graph, node.inputs[1])};
            bool quantized[2] = {feedingDequantize(graph, node.inputs[0]) != nullptr,
                                 feedingDequantize(graph, node.inputs[1]) != nullptr};
            if ((conv[0] == nullptr && conv[1] == nullptr) || quantized[0] || quantized[1])
            {
                continue; // no conv to fuse with, or the residual is already quantized
            }
            if (isConstantLike(graph, node.inputs[0]) || isConstantLike(graph, node.inputs[1]))
            {
                continue; // a bias-like Add, not a residual (also an Identity of an initializer, ConvNeXt's Linear)
            }
            // TensorRT fuses the Add into the conv on one side; the other input is the residual. When both sides
            // come from convs (downsample blocks), the residual is the shortcut: the shorter way back to where the
            // two branches fork (quantizing it lets the main branch's conv take the Add, as the residual recipe of
            // the real A100 ResNet engines does); without a fork in reach, the later conv is taken as fused.
            std::size_t fusedSide = conv[1] != nullptr ? 1 : 0;
            if (conv[0] != nullptr && conv[1] != nullptr)
            {
                const int shortcut = shortcutSide(graph, node);
                fusedSide = shortcut >= 0                     ? static_cast<std::size_t>(1 - shortcut)
                            : conv[0]->index > conv[1]->index ? 0
                                                              : 1;
            }
            std::size_t residualSide = 1 - fusedSide;
            const std::string& residual = node.inputs[residualSide];
            const OnnxNode* residualProducer = producerOf(graph, residual);
            const ResidualScale scale = residualScale(graph, node, residual);
            Finding finding = makeFinding(
                info(),
                "Add " + node.name + " follows the quantized " + conv[fusedSide]->opType + " " + conv[fusedSide]->name +
                    " but its residual input " + residual +
                    (residualProducer ? " (from " + residualProducer->name + ")" : std::string()) +
                    " is not quantized: the fused Conv+Add cannot emit INT8, so a separate Quantize or a float Add "
                    "follows.");
            finding.onnxNodes = {node.name, conv[fusedSide]->name};
            if (residualProducer != nullptr)
            {
                finding.onnxNodes.push_back(residualProducer->name);
            }
            finding.evidence.push_back(
                nodeEvidence(context, node,
                             "input " + std::to_string(residualSide) + " (" + residual + ") has no DequantizeLinear"));
            finding.fix = "insert QuantizeLinear -> DequantizeLinear on tensor " + residual + " (input " +
                          std::to_string(residualSide) + " of " + node.name + ")" + scale.hint +
                          "; keep the conv-side input of the Add unquantized";
            // The edit pays only when the Add's result goes on quantized (somewhere: the next block's float residual
            // is another finding's edit): with a float result only (a network output, a float head) the fused
            // Conv+Add writes float anyway and an INT8 residual would need its own DQ.
            // Without a scale to copy, the edit still goes in the report: fix lists it as skipped, with the reason.
            const FloatTail tail = node.outputs.empty() ? FloatTail{} : floatTail(graph, node);
            if (!tail.users.empty() && reachesQuantizer(graph, node.outputs[0]))
            {
                adviseWithTail(graph, tail, node, residual, residualSide, scale, finding);
            }
            else if (!node.outputs.empty() && reachesQuantizer(graph, node.outputs[0]))
            {
                finding.edits.push_back(insertQdqEdit(node, residual, scale.from, scale.reason));
                // insertQdqEdit lists every input of the Add that reads the residual; only this one is meant.
                finding.edits.back().consumers = {{node.name, static_cast<std::uint32_t>(residualSide)}};
            }
            attachEngineCost(context, node.name, finding);
            sink.add(std::move(finding));
        }
    }

    //! Where the Add's output (after its activations, the epilogue TensorRT fuses) goes on in float: the consumers
    //! that read it without a Q, leaving out the residual inputs of other Adds after quantized convs (this rule's
    //! edit for those Adds quantizes them).
    struct FloatTail
    {
        std::string tensor;
        std::vector<std::string> users; //!< "GlobalAveragePool /avgpool/GlobalAveragePool", or "network output X"
        std::vector<std::string> userTensors;
        std::vector<const OnnxNode*> userNodes; //!< nullptr for a network output
    };

    static FloatTail floatTail(const OnnxGraph& graph, const OnnxNode& add)
    {
        // The same walk as residual-precision-mismatch's, the warning `fix` sees when it tries the edit alone.
        FloatTail tail;
        tail.tensor = add.outputs[0];
        for (int depth = 0; depth < 4; ++depth)
        {
            auto consumers = consumersOf(graph, tail.tensor);
            if (consumers.size() != 1 || !isActivation(consumers[0]->opType) || consumers[0]->outputs.empty())
            {
                break;
            }
            tail.tensor = consumers[0]->outputs[0];
        }
        const precision::FloatEnds ends = precision::floatEnds(graph, tail.tensor, false);
        for (std::size_t i = 0; i < ends.users.size(); ++i)
        {
            const OnnxNode& user = *ends.users[i];
            if (user.opType == "Add" && user.inputs.size() == 2 &&
                (quantizedConvBehind(graph, user.inputs[0]) != nullptr ||
                 quantizedConvBehind(graph, user.inputs[1]) != nullptr))
            {
                continue;
            }
            tail.users.push_back(user.opType + " " + user.name);
            tail.userTensors.push_back(ends.userTensors[i]);
            tail.userNodes.push_back(&user);
        }
        for (const auto& output : ends.outputs)
        {
            tail.users.push_back("network output " + output);
            tail.userTensors.push_back(output);
            tail.userNodes.push_back(nullptr);
        }
        return tail;
    }

    //! The Add whose output goes on in float (the last residual block before a float pooling): quantizing its
    //! residual alone leaves the fused Conv+Add writing float and adds a standalone Dequantize of the residual, the
    //! residual-precision-mismatch warning `fix` refuses the edit for. The residual is advised only together with a
    //! Q/DQ on each float consumer's input, as residual-precision-mismatch makes them (a max pooling takes the scale
    //! of the Q after it, an average pooling needs a calibrated one); where a consumer has no such edit (a network
    //! output, a Softmax), the Add is left float, said so, with no edit and as info.
    static void adviseWithTail(const OnnxGraph& graph, const FloatTail& tail, const OnnxNode& add,
                               const std::string& residual, std::size_t residualSide, const ResidualScale& scale,
                               Finding& finding)
    {
        std::vector<FixEdit> paired;
        for (std::size_t i = 0; i < tail.userNodes.size(); ++i)
        {
            const OnnxNode* user = tail.userNodes[i];
            const OnnxNode* after = user == nullptr || user->outputs.empty()
                                        ? nullptr
                                        : precision::quantizeDownstream(graph, user->outputs[0]);
            if (after != nullptr && (user->opType == "MaxPool" || user->opType == "GlobalMaxPool"))
            {
                paired.push_back(insertQdqEdit(*user, tail.userTensors[i], after->name,
                                               "the scale of the next quantizer downstream (" + after->name + ")"));
            }
            else if (after != nullptr && isAveragePooling(graph, *user))
            {
                paired.push_back(insertQdqEdit(*user, tail.userTensors[i], std::string(),
                                               "calibrate this tensor: " + after->name + " after " + user->opType +
                                                   " " + user->name + " measures its output, whose range differs, " +
                                                   "so its scale would clip " + tail.userTensors[i]));
            }
            else
            {
                paired.clear();
                break;
            }
        }
        finding.message += " Its output " + tail.tensor + " goes on in float (to " + nameList(tail.users, 3) +
                           "), so the fused Conv+Add writes float whatever its residual is.";
        finding.evidence.back().text += "; its output " + tail.tensor + " reaches " + tail.users.front() + " in float";
        const std::string alone = "quantized alone, the residual " + residual + " leaves the fused Conv+Add writing " +
                                  "float for " + nameList(tail.users, 3) +
                                  ", and TensorRT dequantizes the INT8 residual in a standalone Dequantize layer "
                                  "(residual-precision-mismatch; `fix` refuses that edit alone)";
        if (paired.empty())
        {
            finding.severity = Severity::kInfo;
            finding.fix = "leave the residual " + residual + " of " + add.name + " float: " + alone;
            return;
        }
        finding.fix = "insert QuantizeLinear -> DequantizeLinear on tensor " + residual + " (input " +
                      std::to_string(residualSide) + " of " + add.name + ")" + scale.hint +
                      " only together with QuantizeLinear -> DequantizeLinear on " + tail.userTensors.front() +
                      " before " + tail.users.front() + " (calibrated where the consumer changes the range): " + alone;
        finding.edits.push_back(insertQdqEdit(add, residual, scale.from, scale.reason));
        finding.edits.back().consumers = {{add.name, static_cast<std::uint32_t>(residualSide)}};
        for (FixEdit& edit : paired)
        {
            finding.edits.push_back(std::move(edit));
        }
    }

    //! With engine artifacts too: the cost is that of standalone Q/DQ layers next to the Add's layer.
    static void attachEngineCost(const Context& context, const std::string& addNode, Finding& finding)
    {
        const EnginePlan* plan = context.engine();
        if (plan == nullptr)
        {
            return;
        }
        std::vector<std::size_t> costly;
        for (std::size_t layer : layersOf(context, addNode))
        {
            finding.engineLayers.push_back(plan->layers[layer].name);
            // Standalone Q/DQ layers reading the fused layer's output, or reading the residual tensor it uses.
            std::vector<std::string> tensors;
            for (const auto& output : plan->layers[layer].outputs)
            {
                tensors.push_back(output.name);
            }
            for (std::size_t input = 1; input < plan->layers[layer].inputs.size(); ++input)
            {
                tensors.push_back(sourceThroughReformats(context, plan->layers[layer].inputs[input].name).tensor);
            }
            for (const auto& tensor : tensors)
            {
                // Through builder reformats too: a Quantize reading a reformatted copy of the tensor.
                for (const ReformatReader& reader : readersThroughReformats(context, tensor))
                {
                    if (context.correlation.layers[reader.layer].state != LayerState::kInsertedQdq)
                    {
                        continue;
                    }
                    for (std::size_t reformat : reader.reformats)
                    {
                        costly.push_back(reformat);
                        addOnce(finding.engineLayers, plan->layers[reformat].name);
                    }
                    costly.push_back(reader.layer);
                    addOnce(finding.engineLayers, plan->layers[reader.layer].name);
                    finding.evidence.push_back(layerEvidence(context, reader.layer, "",
                                                             "standalone " + plan->layers[reader.layer].type +
                                                                 " reading " + tensor +
                                                                 throughReformats(reader.reformats.size())));
                }
            }
        }
        std::sort(costly.begin(), costly.end());
        costly.erase(std::unique(costly.begin(), costly.end()), costly.end());
        finding.costMs = sumTimes(context, costly);
    }

    void checkEngine(const Context& context, FindingSink& sink) const override
    {
        EngineResiduals residuals(context);
        residuals.chargeStandaloneQuantizes();
        residuals.addFloatResiduals();
        for (Finding& finding : residuals.findings(info()))
        {
            sink.add(std::move(finding));
        }
    }
};

} // namespace

std::unique_ptr<Rule> makeResidualInputNotQuantized()
{
    return std::make_unique<ResidualInputNotQuantized>();
}

} // namespace qdq::rules
