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
#include "qdq/myelin_region.h"

#include <string_view>
#include <vector>

namespace qdq
{

//! The Myelin regions of the engine, in engine order. correlation must be the one of plan.
//! graph: the model, when given, tells which regions hold attention (a Softmax fed by a MatMul and feeding one).
//! correlate() calls it once and keeps the result in Correlation::myelinRegions, which the rules and the reporters
//! read.
std::vector<MyelinRegion> findMyelinRegions(const EnginePlan& plan, const Correlation& correlation,
                                            const OnnxGraph* graph = nullptr);

//! The Myelin graph a kernel layer belongs to ("myl0" from "__myl_MulMinMaxRounCast_myl0_1" or "..._bb1_5_myl0"), or
//! empty when the name has no such suffix.
std::string_view myelinGraphOf(std::string_view layerName);

//! Whether a layer is Myelin's: LayerType "Myelin", a `{ForeignNode[` name, a `__myl_` tactic, or a kernel name with a
//! `_myl<N>` suffix.
bool isMyelinLayer(const EngineLayer& layer);

} // namespace qdq
