// The Myelin regions of an engine as data (found by findMyelinRegions, include/qdq/myelin_regions.h, and kept in
// Correlation::myelinRegions).
#pragma once

#include "qdq/precision.h"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

struct MyelinGemm
{
    std::size_t layer = 0; //!< index in the engine plan
    Precision precision = Precision::kUnknown;
    std::string precisionEvidence;                //!< "input tensor Int8", "tactic sm86_xmma_gemm_f32f32_tf32f32_..."
    std::vector<std::string_view> quantizedNodes; //!< the Q/DQ nodes the kernel's metadata names (weights, inputs)
};

struct MyelinRegion
{
    std::string id;                  //!< "myl0" (kernel form), or the `{ForeignNode[...]}` layer name
    bool kernelsListed = false;      //!< kernels are layers (detailed verbosity), else one ForeignNode layer
    std::vector<std::size_t> layers; //!< engine layers of the region, in engine order
    std::map<std::string, std::size_t> kernelKinds; //!< LayerType -> count ("kgen" 3, "gemm" 2)
    //! ONNX nodes the region executes, once each: in the model's order, or by name without the model the correlation
    //! was made with
    std::vector<std::string_view> onnxNodes;
    std::vector<std::string_view> qdqNodes;        //!< the Q/DQ nodes among them (absorbed by the region)
    std::vector<MyelinGemm> gemms;                 //!< GEMM kernels (kernel form only)
    std::optional<double> timeMs;                  //!< the region's layers' profile times summed
    std::map<Precision, double> gemmMsByPrecision; //!< with a profile
    std::map<Precision, std::size_t> gemmsByPrecision;
    std::string precision;      //!< "INT8", "FP16", "INT8 and FP32 (2 GEMMs)", "FP16 in/out" ...
    std::string precisionBasis; //!< how precision was told: GEMM kernels, or the region's tensors
    //! The region's fused-attention kernels (include/qdq/myelin_kernels.h: `_gemm_mha_v2_myl56_8`), in engine order.
    std::vector<std::size_t> attentionKernels;
    //! Whether attention fused: true when the region holds a fused-attention kernel; false when the model shows an
    //! attention (a Softmax between two MatMuls) that the region runs without one; unset when nothing tells.
    std::optional<bool> attentionFused;
    //! Attention in the region, for people: "fused (kernel ...)", "not fused: ...", or empty when attentionFused is
    //! unset.
    std::string attention;
};

} // namespace qdq
