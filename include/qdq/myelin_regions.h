// Myelin regions of an engine: the parts TensorRT handed to its Myelin compiler, with the kernels it listed for
// each, the ONNX nodes they execute, the precision their GEMMs ran in and their time. Read from the layer list and
// the correlation; used by diagnose's report and by the myelin-gemm-ran-float rule.
//
// Two forms exist in real layer lists (../shared/realdata/FORMATS.md):
// - one layer per region, named `{ForeignNode[first...last]}` with LayerType "Myelin" (8.x, and 10.x without
//   --profilingVerbosity=detailed; NVIDIA/TensorRT issue 2308);
// - with detailed verbosity in 10.x, Myelin's own kernels as layers (LayerType kgen, gemm, fusion, shape_call,
//   signal, wait, ...) whose names end in `_myl<graph>_<kernel>` or `_myl<graph>` (ivit-simple-mlp-qdq-trt10-myelin,
//   lix-engine-analysis-dmt-fp16). The graph number groups the kernels of one region.
#pragma once

#include "qdq/analysis.h"

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
    std::vector<std::string_view> onnxNodes;        //!< ONNX nodes the region executes, sorted, unique
    std::vector<std::string_view> qdqNodes;         //!< the Q/DQ nodes among them (absorbed by the region)
    std::vector<MyelinGemm> gemms;                  //!< GEMM kernels (kernel form only)
    std::optional<double> timeMs;                   //!< the region's layers' profile times summed
    std::map<Precision, double> gemmMsByPrecision;  //!< with a profile
    std::map<Precision, std::size_t> gemmsByPrecision;
    std::string precision;      //!< "INT8", "FP16", "INT8 and FP32 (2 GEMMs)", "FP16 in/out" ...
    std::string precisionBasis; //!< how precision was told: GEMM kernels, or the region's tensors
    //! Attention in the region (with the model): "fused (...)", "not fused (...)", or empty when the region holds no
    //! Softmax between two MatMuls or its kernels are not listed.
    std::string attention;
};

//! The Myelin regions of the engine, in engine order. correlation must be the one of plan.
//! graph: the model, when given, tells which regions hold attention (a Softmax fed by a MatMul and feeding one).
std::vector<MyelinRegion> findMyelinRegions(const EnginePlan& plan, const Correlation& correlation,
                                            const OnnxGraph* graph = nullptr);

//! The Myelin graph a kernel layer belongs to ("myl0" from "__myl_MulMinMaxRounCast_myl0_1" or "..._bb1_5_myl0"), or
//! empty when the name has no such suffix.
std::string_view myelinGraphOf(std::string_view layerName);

//! Whether a layer is Myelin's: LayerType "Myelin", a `{ForeignNode[` name, a `__myl_` tactic, or a kernel name with a
//! `_myl<N>` suffix.
bool isMyelinLayer(const EngineLayer& layer);

} // namespace qdq
