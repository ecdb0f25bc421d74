// What one Myelin kernel is (include/qdq/myelin_kernels.h).
#include "qdq/myelin_kernels.h"

#include "qdq/myelin_regions.h"

#include <algorithm>
#include <array>

namespace qdq
{
namespace
{

bool contains(std::string_view text, std::string_view part)
{
    return text.find(part) != std::string_view::npos;
}

//! The marker of a fused-attention kernel in text, or empty.
std::string_view attentionMarkerIn(std::string_view text)
{
    static constexpr std::array<std::string_view, 3> kMarkers = {"_mha", "fmha", "flash_attention"};
    for (std::string_view marker : kMarkers)
    {
        if (contains(text, marker))
        {
            return marker;
        }
    }
    return {};
}

//! Whether a kernel stem is Myelin's own name (`_gemm_mha_v2`, `__myl_Fc`, `__mye5907`) rather than the ONNX node
//! names Myelin gave a kernel (`/blocks.0/attn/MatMul`): Myelin's own names start with '_' and hold no '/'.
bool isOwnKernelName(std::string_view stem)
{
    return stem.starts_with('_') && !contains(stem, "/");
}

//! Whether every '+'-joined part of a kernel stem names an ONNX MatMul or Gemm node (`.../self_attn/MatMul_2`,
//! `.../MatMul_1+.../MatMul`): the last path component starts with the op type, as the PyTorch exporter names nodes.
bool namesOnlyGemmNodes(std::string_view stem)
{
    if (!contains(stem, "/"))
    {
        return false;
    }
    std::size_t start = 0;
    while (start <= stem.size())
    {
        const std::size_t end = std::min(stem.find('+', start), stem.size());
        std::string_view part = stem.substr(start, end - start);
        const std::size_t slash = part.rfind('/');
        part = slash == std::string_view::npos ? part : part.substr(slash + 1);
        if (!part.starts_with("MatMul") && !part.starts_with("Gemm"))
        {
            return false;
        }
        start = end + 1;
    }
    return true;
}

} // namespace

std::string_view myelinKernelStem(std::string_view layerName)
{
    const std::string_view graph = myelinGraphOf(layerName);
    if (graph.empty())
    {
        return layerName;
    }
    const std::size_t graphAt = static_cast<std::size_t>(graph.data() - layerName.data());
    return layerName.substr(0, graphAt - 1); // the '_' before "myl<N>"
}

std::string_view fusedAttentionMarker(const EngineLayer& layer)
{
    const std::string_view stem = myelinKernelStem(layer.baseName());
    if (isOwnKernelName(stem))
    {
        if (const std::string_view marker = attentionMarkerIn(stem); !marker.empty())
        {
            return marker;
        }
    }
    return attentionMarkerIn(layer.tacticName);
}

bool isFusedAttentionKernel(const EngineLayer& layer)
{
    return !fusedAttentionMarker(layer).empty();
}

bool isMyelinGemmKernel(const EngineLayer& layer)
{
    if (layer.type == "gemm" || isFusedAttentionKernel(layer))
    {
        return true;
    }
    const std::string_view stem = myelinKernelStem(layer.baseName());
    if (stem.starts_with("__myl_Fc") && (layer.type.empty() || layer.type == "kgen"))
    {
        return true;
    }
    return layer.type.empty() && namesOnlyGemmNodes(stem);
}

bool isL2CacheLayer(const EngineLayer& layer, const std::vector<std::string>* listedByLog)
{
    if (layer.type == "custom_layer")
    {
        return true;
    }
    return listedByLog != nullptr &&
           std::find(listedByLog->begin(), listedByLog->end(), layer.name) != listedByLog->end();
}

} // namespace qdq
