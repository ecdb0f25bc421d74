// myelin-body-ran-fp16: the weakly typed twin of fp32-graph-strongly-typed. A `--best` / `--fp16 --int8` build
// (TensorRT 8.x-10.x) whose Myelin region absorbed the model's Q/DQ but ran every kernel in FP16: no tensor of the
// region is quantized, so INT8 could not win there. Sources: ../shared/docs/tensorrt-10-11.md section 4 (a body Myelin
// compiled under implicit INT8 ran FP16, NVIDIA/TensorRT#3186) and section 1 (weakly typed builds let the builder pick
// float over the Q/DQ's type, NVIDIA/TensorRT#3987, where the maintainers' answer was --stronglyTyped). That the same
// holds for a 10.x Myelin region with explicit Q/DQ is read from the engine's own tensors, not from a document.
#include "qdq/myelin_regions.h"
#include "rules/kernel_common.h"
#include "rules/rules.h"

#include <string>

namespace qdq::rules
{

namespace
{

using namespace patterns;

//! Whether the region's kernels ran in half precision with no quantized tensor: every tensor typed is FP16/BF16 or an
//! integer index type, at least one is FP16/BF16.
bool ranHalfOnly(const EnginePlan& plan, const MyelinRegion& region)
{
    bool half = false;
    for (std::size_t index : region.layers)
    {
        const EngineLayer& layer = plan.layers[index];
        for (const auto* tensors : {&layer.inputs, &layer.outputs})
        {
            for (const EngineTensor& tensor : *tensors)
            {
                if (isQuantized(tensor.precision) || tensor.precision == Precision::kFP32)
                {
                    return false;
                }
                half = half || tensor.precision == Precision::kFP16 || tensor.precision == Precision::kBF16;
            }
        }
    }
    return half;
}

class MyelinBodyRanFp16 final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "myelin-body-ran-fp16",
            "",
            "A weakly typed --best / --fp16 --int8 build ran a Myelin region that absorbed the model's Q/DQ entirely "
            "in FP16: its Q/DQ were unused and INT8 could not win there",
            Severity::kWarning,
            "8.x-10.x (weakly typed)",
            kNeedsEngine | kReadsCorrelation,
            "a strongly typed build (--stronglyTyped in 10.x, every 11.x build), where the Q/DQ decide the quantized "
            "parts"};
        return kInfo;
    }

    void check(const Context& context, FindingSink& sink) const override
    {
        const EnginePlan* plan = context.engine();
        const SimulationOptions& mode = context.buildMode();
        if (plan == nullptr || mode.stronglyTyped() || !mode.int8 || !mode.fp16)
        {
            return;
        }
        for (const MyelinRegion& region : context.correlation.myelinRegions)
        {
            if (!region.qdqNodes.empty() && !region.layers.empty() && ranHalfOnly(*plan, region))
            {
                sink.add(describe(context, region));
            }
        }
    }

private:
    Finding describe(const Context& context, const MyelinRegion& region) const
    {
        const EnginePlan& plan = *context.engine();
        const SimulationOptions& mode = context.buildMode();
        Finding finding = makeFinding(info(), "");
        finding.engineLayers = layerNames(context, region.layers);
        finding.onnxNodes.assign(region.onnxNodes.begin(), region.onnxNodes.end());
        finding.costMs = region.timeMs;
        std::vector<std::string> qdq(region.qdqNodes.begin(), region.qdqNodes.end());
        for (std::size_t index : region.layers)
        {
            if (finding.evidence.size() >= 3)
            {
                break;
            }
            const EngineLayer& layer = plan.layers[index];
            finding.evidence.push_back(layerEvidence(context, index, "Datatype",
                                                     (layer.type.empty() ? std::string("layer") : layer.type) + " " +
                                                         std::string(precisionName(inputPrecision(layer))) + " -> " +
                                                         std::string(precisionName(outputPrecision(layer)))));
        }
        const std::string time = region.timeMs ? ", " + formatMs(*region.timeMs) : std::string();
        finding.message = "Myelin region " + region.id + " (" + std::to_string(region.layers.size()) + " kernels" +
                          time + ") absorbed the Q/DQ nodes " + nameList(qdq, 4) +
                          " but ran every kernel in FP16 and none in INT8: the build is weakly typed (" +
                          mode.precisionSource +
                          "), so the builder chose FP16 kernels for the region and its Q/DQ were unused "
                          "(../shared/docs/tensorrt-10-11.md sections 1 and 4; NVIDIA/TensorRT#3186, #3987).";
        const std::string& command = context.inputs.buildLog ? context.inputs.buildLog->commandLine : std::string();
        const bool best = command.find("--best") != std::string::npos;
        finding.fix = mode.trtMajor == 8
                          ? "build with TensorRT 10 strongly typed (--stronglyTyped), where the Q/DQ decide the "
                            "region's INT8 kernels (TensorRT 8.x Myelin had no INT8 path: NVIDIA/TensorRT#3186)"
                          : std::string("build strongly typed: --stronglyTyped in place of ") +
                                (best ? "--best" : "--fp16 --int8") +
                                ", so each tensor keeps the type the Q/DQ give it and the region's GEMMs run INT8 "
                                "(the maintainers' answer in NVIDIA/TensorRT#3987); the unquantized part then runs "
                                "in the graph's float type, so make it FP16 in the graph (`qdq-doctor fix "
                                "--autocast fp16`)";
        return finding;
    }
};

} // namespace

std::unique_ptr<Rule> makeMyelinBodyRanFp16()
{
    return std::make_unique<MyelinBodyRanFp16>();
}

} // namespace qdq::rules
