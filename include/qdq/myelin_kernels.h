// What one Myelin kernel is, told from its layer record: a GEMM, a fused-attention kernel, or neither. Used by
// findMyelinRegions (include/qdq/myelin_regions.h) on layer lists with types (--profilingVerbosity=detailed) and on
// names-only lists, where the name is all there is.
//
// Real names this reads (../shared/realdata):
// - fused attention: `_gemm_mha_v2_myl8_133`, LayerType kgen, TacticName `_gemm_mha_v2_0x0f9cc545...`, Metadata
//   naming the two attention MatMuls and the Softmax (lix-engine-analysis-dmt-fp16/layers_tofp16.json, TensorRT 10);
//   `_gemm_mha_v2_myl56_8` in the names-only list of repo-isaacpruett-rtdetr-r50-myelin-trt10/rtdetr.layer_info.json;
// - GEMMs: LayerType gemm (`/fc2/Gemm_myl0_4`, ivit-simple-mlp-qdq-trt10-myelin), kgen `__myl_Fc_myl0_7` (TensorRT 11,
//   FORMATS-trt11.md Q3), and in a names-only list the kernels named after ONNX MatMul/Gemm nodes
//   (`/model/encoder/encoder_0/layers_0/self_attn/MatMul_2_myl56_4`, `..._MatMul_1+..._MatMul_myl56_6`).
#pragma once

#include "qdq/engine_plan.h"

#include <string_view>

namespace qdq
{

//! The kernel's name without Myelin's `_myl<graph>_<kernel>` (or `_myl<graph>`) suffix: "_gemm_mha_v2" from
//! "_gemm_mha_v2_myl56_8"; the name itself when it has no such suffix.
std::string_view myelinKernelStem(std::string_view layerName);

//! The fused-attention marker in a kernel's own name or in its tactic, or empty. Markers: `_mha` (a maintainer in
//! NVIDIA/TensorRT#3243: "If the MHA is fused, there should be kernel names with `_mha` in the profile"; Myelin's
//! `_gemm_mha_v2`, seen in real engines, in NVIDIA/TensorRT#4167 and #3620), `fmha` and `flash_attention` (the fused
//! attention kernels TensorRT's own plugins ship: `fmha_v2_flash_attention_fp16_64_32_S_qkv_64_sm80`,
//! NVIDIA/TensorRT plugin/multiHeadFlashAttentionPlugin and plugin/bertQKVToContextPlugin). A name of ONNX nodes
//! (a kernel Myelin named after the node it runs, such as `/blocks.0/attn/MatMul_myl0_3`) is the user's, so only its
//! tactic counts: a node called `mha_proj` is not a fused kernel.
std::string_view fusedAttentionMarker(const EngineLayer& layer);

//! Whether the kernel is a fused-attention kernel (fusedAttentionMarker is not empty).
bool isFusedAttentionKernel(const EngineLayer& layer);

//! Whether the Myelin kernel runs a GEMM: LayerType gemm; a kgen `__myl_Fc...` kernel (a fully connected layer:
//! FORMATS-trt11.md Q3); a fused-attention kernel (its two batched GEMMs); and in a layer list without types, a kernel
//! named after ONNX MatMul or Gemm nodes only.
bool isMyelinGemmKernel(const EngineLayer& layer);

//! Whether the layer is one of the L2-cache management kernels the TensorRT 11 builder inserts (LayerType
//! `custom_layer`, `__mye1085_myl0_0`), which TensorRT says "do not correspond to any layers in the
//! INetworkDefinition" (../shared/realdata/cookbook11-mnist-fp32-trtexec-b200/result-04.log:143; FORMATS-trt11.md
//! J10, L5). listedByLog: the names that log line lists, when a build log was given.
bool isL2CacheLayer(const EngineLayer& layer, const std::vector<std::string>* listedByLog = nullptr);

} // namespace qdq
