// The Myelin regions of an engine in the text and JSON reports (src/reporters/myelin_report.h).
#include "src/reporters/myelin_report.h"

#include "qdq/diagnostics.h"
#include "qdq/patterns.h"

#include <algorithm>
#include <string>

namespace qdq
{
namespace
{

constexpr std::size_t kRegionsShown = 20;

std::string kindsText(const MyelinRegion& region)
{
    std::string text;
    for (const auto& [kind, count] : region.kernelKinds)
    {
        text += (text.empty() ? "" : ", ") + kind + " " + std::to_string(count);
    }
    return text;
}

} // namespace

void writeMyelinRegionsText(std::ostream& out, const std::vector<MyelinRegion>& regions, const EnginePlan& plan)
{
    if (regions.empty())
    {
        return;
    }
    out << "Myelin:        " << regions.size() << " region" << (regions.size() == 1 ? "" : "s")
        << " compiled by Myelin (precision from their GEMM kernels, else their tensors)\n";
    for (std::size_t i = 0; i < regions.size() && i < kRegionsShown; ++i)
    {
        const MyelinRegion& region = regions[i];
        out << "  " << printable(region.id, 160) << ": ";
        if (region.kernelsListed)
        {
            out << region.layers.size() << " kernels (" << kindsText(region) << "), ";
        }
        out << region.onnxNodes.size() << " ONNX nodes, " << region.qdqNodes.size() << " Q/DQ absorbed; "
            << printable(region.precision, 200);
        if (region.timeMs)
        {
            out << "; " << patterns::formatMs(*region.timeMs);
        }
        if (!region.attention.empty())
        {
            out << "; attention " << printable(region.attention, 300);
        }
        for (const auto& gemm : region.gemms)
        {
            const Precision p = gemm.precision;
            if (!gemm.quantizedNodes.empty() && p != Precision::kINT8 && p != Precision::kFP8)
            {
                out << "; " << printable(plan.layers[gemm.layer].name, 160) << " ran " << precisionName(p)
                    << " with quantized inputs";
            }
        }
        out << "\n";
    }
    if (regions.size() > kRegionsShown)
    {
        out << "  " << regions.size() - kRegionsShown << " more regions (see --format json)\n";
    }
}

void writeMyelinRegionsJson(JsonWriter& json, const std::vector<MyelinRegion>& regions, const EnginePlan& plan)
{
    json.key("myelin_regions").beginArray();
    for (const auto& region : regions)
    {
        json.beginObject().member("id", region.id).key("kernels_listed").value(region.kernelsListed);
        json.key("layers").beginArray();
        for (std::size_t layer : region.layers)
        {
            json.value(plan.layers[layer].name);
        }
        json.endArray();
        json.key("kernel_kinds").beginObject();
        for (const auto& [kind, count] : region.kernelKinds)
        {
            json.member(kind, std::uint64_t{count});
        }
        json.endObject();
        json.key("onnx_nodes").beginArray();
        for (std::string_view node : region.onnxNodes)
        {
            json.value(node);
        }
        json.endArray();
        json.key("qdq_nodes").beginArray();
        for (std::string_view node : region.qdqNodes)
        {
            json.value(node);
        }
        json.endArray();
        json.key("gemms").beginArray();
        for (const auto& gemm : region.gemms)
        {
            json.beginObject().member("layer", plan.layers[gemm.layer].name);
            json.member("precision", precisionName(gemm.precision)).member("evidence", gemm.precisionEvidence);
            json.key("quantized_nodes").beginArray();
            for (std::string_view node : gemm.quantizedNodes)
            {
                json.value(node);
            }
            json.endArray().endObject();
        }
        json.endArray();
        json.member("precision", region.precision).member("precision_basis", region.precisionBasis);
        json.member("attention", region.attention).key("attention_fused");
        if (region.attentionFused)
        {
            json.value(*region.attentionFused);
        }
        else
        {
            json.null();
        }
        json.key("attention_kernels").beginArray();
        for (std::size_t layer : region.attentionKernels)
        {
            json.value(plan.layers[layer].name);
        }
        json.endArray();
        json.member("time_ms", region.timeMs ? std::optional<double>(roundMs(*region.timeMs)) : std::nullopt);
        json.endObject();
    }
    json.endArray();
}

} // namespace qdq
