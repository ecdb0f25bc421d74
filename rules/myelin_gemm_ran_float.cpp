// myelin-gemm-ran-float: a GEMM that TensorRT compiled with Myelin ran in a float type although the model quantized
// it: a GEMM kernel of a Myelin region whose ONNX nodes include Q/DQ (10.x layer lists with Myelin's kernels), or, in
// TensorRT 8.x with implicit INT8, a Myelin region holding MatMul/Gemm nodes, since 8.x's Myelin had no INT8 path
// (docs/rules/myelin-gemm-ran-float.md).
#include "qdq/myelin_regions.h"
#include "rules/kernel_common.h"
#include "rules/rules.h"

#include <string>

namespace qdq::rules
{

namespace
{

using namespace patterns;

std::vector<std::string> views(const std::vector<std::string_view>& names)
{
    return {names.begin(), names.end()};
}

bool ranInFloat(Precision precision)
{
    return precision == Precision::kFP32 || precision == Precision::kFP16 || precision == Precision::kBF16;
}

//! The inputs of the ONNX MatMul/Gemm among nodes that no DequantizeLinear feeds (weights included): the tensors to
//! quantize. Empty without the model.
std::vector<std::string> floatInputsOf(const OnnxGraph* graph, const std::vector<std::string_view>& nodes)
{
    std::vector<std::string> result;
    if (graph == nullptr)
    {
        return result;
    }
    for (std::string_view name : nodes)
    {
        const OnnxNode* node = graph->findNode(name);
        if (node == nullptr || (node->opType != "MatMul" && node->opType != "Gemm"))
        {
            continue;
        }
        for (std::size_t i = 0; i < node->inputs.size() && i < 2; ++i)
        {
            const OnnxNode* producer = graph->producer(node->inputs[i]);
            if (producer == nullptr || producer->opType != "DequantizeLinear")
            {
                result.push_back(node->name + " input " + std::to_string(i) + " (" + node->inputs[i] + ")");
            }
        }
    }
    return result;
}

//! Whether the region executes a MatMul or Gemm: by op type with the model, else by the node names.
bool holdsMatrixMultiply(const Context& context, const MyelinRegion& region)
{
    for (std::string_view name : region.onnxNodes)
    {
        if (const OnnxGraph* graph = context.graph())
        {
            const OnnxNode* node = graph->findNode(name);
            if (node != nullptr && (node->opType == "MatMul" || node->opType == "Gemm"))
            {
                return true;
            }
        }
        else if (name.find("MatMul") != std::string_view::npos || name.find("Gemm") != std::string_view::npos)
        {
            return true;
        }
    }
    return false;
}

class MyelinGemmRanFloat final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "myelin-gemm-ran-float",
            "",
            "A GEMM compiled by Myelin ran in FP32/FP16 although the model quantized it (part of its inputs has no "
            "Q/DQ, or TensorRT 8.x implicit INT8, where Myelin had no INT8 path)",
            Severity::kWarning,
            "8.x-11.x",
            kNeedsEngine | kReadsCorrelation,
            "the missing activation quantizer needs a calibrated scale (or, in 8.x, explicit Q/DQ or TensorRT 10)"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan* plan = context.engine();
        if (plan == nullptr)
        {
            return;
        }
        for (const MyelinRegion& region : context.correlation.myelinRegions)
        {
            for (const MyelinGemm& gemm : region.gemms)
            {
                if (!gemm.quantizedNodes.empty() && ranInFloat(gemm.precision))
                {
                    sink.add(describeKernel(context, region, gemm));
                }
            }
            if (!region.kernelsListed && implicitInt8OnEight(context) && holdsMatrixMultiply(context, region))
            {
                sink.add(describeImplicitRegion(context, region));
            }
        }
    }

private:
    //! TensorRT 8.x asked for INT8 with no Q/DQ in the network: implicit (calibrated) INT8.
    static bool implicitInt8OnEight(const Context& context)
    {
        const SimulationOptions& mode = context.buildMode();
        return mode.trtMajor == 8 && mode.int8 && !mode.stronglyTyped() && context.correlation.qdqNodes.empty();
    }

    Finding describeKernel(const Context& context, const MyelinRegion& region, const MyelinGemm& gemm) const
    {
        const EngineLayer& layer = context.engine()->layers[gemm.layer];
        const LayerMapping& mapping = context.correlation.layers[gemm.layer];
        Finding finding = makeFinding(info(), "");
        finding.engineLayers = {layer.name};
        finding.costMs = mapping.timeMs;
        finding.onnxNodes.assign(mapping.onnxNodes.begin(), mapping.onnxNodes.end());
        finding.evidence.push_back(layerEvidence(context, gemm.layer, "LayerType",
                                                 "gemm kernel of Myelin region " + region.id + ", " +
                                                     std::string(precisionName(gemm.precision)) + " (" +
                                                     gemm.precisionEvidence + ")"));
        finding.evidence.push_back(layerEvidence(
            context, gemm.layer, "Metadata", "names the quantized nodes " + nameList(views(gemm.quantizedNodes), 4)));
        const std::vector<std::string> floatInputs = floatInputsOf(context.graph(), mapping.onnxNodes);
        finding.message = "GEMM kernel \"" + layer.name + "\" of Myelin region " + region.id + " ran " +
                          std::string(precisionName(gemm.precision)) + " (" + gemm.precisionEvidence +
                          ") although it executes the quantized nodes " + nameList(views(gemm.quantizedNodes), 4) +
                          ": TensorRT runs a matrix multiply in INT8 only when both its inputs come from a "
                          "DequantizeLinear";
        finding.message += floatInputs.empty() ? "." : "; float input(s): " + nameList(floatInputs, 4) + ".";
        finding.fix = floatInputs.empty()
                          ? "quantize the GEMM's activation input as well (a QuantizeLinear/DequantizeLinear pair on "
                            "the tensor it reads, with a calibrated scale)"
                          : "add a QuantizeLinear/DequantizeLinear pair (calibrated scale) on " +
                                nameList(floatInputs, 4) + " so the GEMM reads INT8 on both inputs";
        return finding;
    }

    Finding describeImplicitRegion(const Context& context, const MyelinRegion& region) const
    {
        const std::size_t index = region.layers.front();
        const EngineLayer& layer = context.engine()->layers[index];
        Finding finding = makeFinding(info(), "");
        finding.engineLayers = {layer.name};
        finding.costMs = region.timeMs;
        finding.onnxNodes.assign(region.onnxNodes.begin(), region.onnxNodes.end());
        finding.likely = true;
        finding.evidence.push_back(
            layerEvidence(context, index, "Name", "Myelin region, " + region.precision + ", holds a MatMul/Gemm"));
        finding.message = "Myelin region \"" + layer.name + "\" holds matrix multiplies but ran " + region.precision +
                          ": TensorRT " + std::to_string(context.buildMode().trtMajor) +
                          ".x builds with implicit INT8 (" + context.buildMode().precisionSource +
                          "): Myelin did not support INT8 PTQ (maintainers in NVIDIA/TensorRT#2323 and #2441), and "
                          "its attention fusion does not support implicit quantization (#3243), so this part of the "
                          "network ran in float while only the layers TensorRT builds itself ran INT8.";
        finding.fix = "quantize explicitly: Q/DQ before both batched GEMMs of each attention and before the residual "
                      "Add, as the maintainers advise in NVIDIA/TensorRT#3243 (Myelin then runs quantized MatMuls in "
                      "INT8, as the i8i8 GEMM kernel of ../shared/realdata/ivit-simple-mlp-qdq-trt10-myelin shows)";
        return finding;
    }
};

} // namespace

std::unique_ptr<Rule> makeMyelinGemmRanFloat()
{
    return std::make_unique<MyelinGemmRanFloat>();
}

} // namespace qdq::rules
