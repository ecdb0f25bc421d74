// quantized-op-not-importable: the model is quantized with integer ops (ONNX Runtime's QOperator format, its dynamic
// quantization, or its 4-bit MatMulNBits) instead of QuantizeLinear/DequantizeLinear. TensorRT's ONNX parser has no
// importer for them: it logs "No importer registered for op: QLinearConv. Attempting to import as plugin." and fails
// ("Plugin not found").
#include "qdq/patterns.h"
#include "rules/build_mode_advice.h"
#include "rules/rules.h"

#include <map>

namespace qdq::rules
{

namespace
{

using namespace patterns;

enum class Scheme
{
    kStatic,     //!< QOperator format: QLinearConv, QLinearAdd, QGemm, ...
    kDynamic,    //!< scales computed at run time: DynamicQuantizeLinear, ConvInteger, MatMulInteger, ...
    kWeightOnly, //!< ONNX Runtime's block-quantized weights: MatMulNBits, MatMulBnb4, GatherBlockQuantized
};

Scheme schemeOf(std::string_view op)
{
    if (op == "MatMulNBits" || op == "MatMulBnb4" || op == "GatherBlockQuantized")
    {
        return Scheme::kWeightOnly;
    }
    if (op == "DynamicQuantizeLinear" || op == "ConvInteger" || op == "MatMulInteger" ||
        op == "DynamicQuantizeMatMul" || op == "DynamicQuantizeLSTM" || op == "MatMulIntegerToFloat")
    {
        return Scheme::kDynamic;
    }
    return Scheme::kStatic;
}

class QuantizedOpNotImportable final : public ModelOrBuildLogRule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "quantized-op-not-importable",
            "",
            "The model is quantized with integer ops (QLinearConv, ConvInteger, QGemm, ...) that TensorRT's ONNX "
            "parser cannot import; it takes quantization only as QuantizeLinear/DequantizeLinear",
            Severity::kError,
            "8.0-10.x",
            kNeedsOnnxOrEngine,
            "dynamic quantization and 4-bit weights need a re-quantization of the float model in QDQ format; fix "
            "rewrites only the QOperator ops (QLinearConv, QLinearMatMul, QLinearAdd, QGemm, ...)"};
        return kInfo;
    }

private:
    //! The op type of the parser's failure line "While parsing node number 3 [QLinearConv -> "y"]:", or "".
    static std::string_view failedOpType(std::string_view text)
    {
        const std::size_t at = text.find("While parsing node number");
        const std::size_t open = at == std::string_view::npos ? at : text.find('[', at);
        const std::size_t arrow = open == std::string_view::npos ? open : text.find(" -> ", open);
        return arrow == std::string_view::npos ? std::string_view() : text.substr(open + 1, arrow - open - 1);
    }

    static bool failsOnIntegerOp(const std::string& text)
    {
        const std::string_view op = failedOpType(text);
        return !op.empty() && isIntegerOpName(op);
    }

    static std::string fixFor(const Context& context, bool staticOps, bool dynamicOps, bool weightOnly)
    {
        std::string fix;
        if (staticOps || dynamicOps)
        {
            fix =
                std::string(staticOps ? "qdq-doctor fix rewrites each QOperator op as DequantizeLinear -> float op -> "
                                        "QuantizeLinear with the same scales; or "
                                      : "") +
                "re-quantize the float model in QDQ format: ONNX Runtime quantize_static(..., "
                "quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, "
                "extra_options={\"ActivationSymmetric\": True, \"QuantizeBias\": False}), or NVIDIA ModelOpt "
                "(python -m modelopt.onnx.quantization), which writes TensorRT's Q/DQ placement";
        }
        if (dynamicOps)
        {
            fix += "; TensorRT has no dynamic INT8 (scales computed at run time): calibrate static scales as above, "
                   "or build the float model in FP16" +
                   std::string(precisionFlagsApply(context) ? " (--fp16)" + assumedTypingNote(context)
                                                            : " (strongly typed: an FP16 model, e.g. `qdq-doctor fix "
                                                              "--autocast fp16` of the float model)");
        }
        if (weightOnly)
        {
            fix += std::string(fix.empty() ? "" : "; ") +
                   "for 4-bit weights, export them as an INT4 initializer behind a blocked DequantizeLinear (opset "
                   "21, block_size; NVIDIA ModelOpt int4_awq), which TensorRT 10 imports";
        }
        return fix;
    }

    //! A build log without the model: the parser's error names the op it stopped at.
    void checkLog(const Context& context, FindingSink& sink) const override
    {
        std::vector<Evidence> lines = buildLogErrorEvidence(context, failsOnIntegerOp);
        if (lines.empty())
        {
            return;
        }
        const std::string failedOp(failedOpType(lines.front().text));
        const Scheme scheme = schemeOf(failedOp);
        Finding finding = makeFinding(
            info(), "The TensorRT build log shows the ONNX parser failing at a " + failedOp + " node (\"" +
                        lines.front().text +
                        "\"): TensorRT has no importer for this integer op of ONNX Runtime's quantized formats, so no "
                        "engine is built. TensorRT takes quantization only as QuantizeLinear/DequantizeLinear around "
                        "float ops; give the ONNX model to list every such node.");
        finding.evidence = std::move(lines);
        finding.fix =
            fixFor(context, scheme == Scheme::kStatic, scheme == Scheme::kDynamic, scheme == Scheme::kWeightOnly);
        sink.add(std::move(finding));
    }

    void checkGraph(const Context& context, FindingSink& sink) const override
    {
        const OnnxGraph& graph = *context.graph();
        // One finding for the model: the quantizer wrote every op the same way, so the fix is one setting.
        Finding finding = makeFinding(info(), "");
        std::map<std::string, int> countByOp; // "QLinearAdd (com.microsoft)" -> count, sorted for a stable message
        bool schemes[3] = {false, false, false};
        const OnnxNode* first = nullptr;
        for (const auto& node : graph.nodes)
        {
            if (!isOperatorFormatQuantized(node))
            {
                continue;
            }
            if (first == nullptr)
            {
                first = &node;
            }
            std::string op =
                node.domain.empty() || node.domain == "ai.onnx" ? node.opType : node.opType + " (" + node.domain + ")";
            ++countByOp[op];
            schemes[static_cast<int>(schemeOf(node.opType))] = true;
            if (schemeOf(node.opType) == Scheme::kStatic)
            {
                // fix rewrites it as DequantizeLinear -> float op -> QuantizeLinear (or says why it cannot).
                FixEdit edit;
                edit.kind = FixEdit::Kind::kRewriteQuantizedOp;
                edit.nodes = {node.name};
                finding.edits.push_back(std::move(edit));
            }
            finding.onnxNodes.push_back(node.name);
            finding.evidence.push_back(nodeEvidence(context, node, "op " + op + ": TensorRT has no importer for it"));
        }
        if (first == nullptr)
        {
            return;
        }
        std::string ops;
        for (const auto& [op, count] : countByOp)
        {
            ops += (ops.empty() ? "" : ", ") + std::to_string(count) + " " + op;
        }
        std::string moved;
        if (schemes[static_cast<int>(Scheme::kStatic)])
        {
            // QOperator models run MaxPool, Flatten, ... on the uint8 tensors between the ops: fix rewrites them in
            // QDQ form too. (Looked for only here: the walk back is not paid on models without such ops.)
            std::map<std::string, int> movedBy; // op type -> count
            for (const auto& node : graph.nodes)
            {
                if (isCommuting(node.opType) && node.opType != "Concat" && !node.isCustomDomain() &&
                    !node.inputs.empty() && quantizingSource(graph, node.inputs[0]) != nullptr)
                {
                    FixEdit edit;
                    edit.kind = FixEdit::Kind::kRewriteQuantizedOp;
                    edit.nodes = {node.name};
                    finding.edits.push_back(std::move(edit));
                    ++movedBy[node.opType];
                }
            }
            for (const auto& [op, count] : movedBy)
            {
                moved += (moved.empty() ? " Between them, " : ", ") + std::to_string(count) + " " + op;
            }
            moved += moved.empty() ? "" : " run on the quantized integer tensors.";
        }
        std::string format = schemes[static_cast<int>(Scheme::kStatic)]    ? "ONNX Runtime's QOperator format"
                             : schemes[static_cast<int>(Scheme::kDynamic)] ? "ONNX Runtime's dynamic quantization"
                                                                           : "ONNX Runtime's 4-bit weight format";
        finding.message =
            "The model is quantized in " + format + " (" + ops +
            "): TensorRT's ONNX parser has no importer for these ops. It stops at the first, " + first->name + " (" +
            first->opType + "): \"No importer registered for op: " + first->opType +
            ". Attempting to import as plugin.\", then \"Plugin not found\". TensorRT takes quantization only as "
            "QuantizeLinear/DequantizeLinear around float ops." +
            moved;
        finding.fix =
            fixFor(context, schemes[static_cast<int>(Scheme::kStatic)], schemes[static_cast<int>(Scheme::kDynamic)],
                   schemes[static_cast<int>(Scheme::kWeightOnly)]);
        for (auto& line : buildLogErrorEvidence(context, failsOnIntegerOp))
        {
            finding.evidence.push_back(std::move(line));
        }
        sink.add(std::move(finding));
    }
};

} // namespace

std::unique_ptr<Rule> makeQuantizedOpNotImportable()
{
    return std::make_unique<QuantizedOpNotImportable>();
}

} // namespace qdq::rules
