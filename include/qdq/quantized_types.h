// The quantized types beyond INT8 that a Q/DQ model can hold (FP8 E4M3, INT4 block-wise weights, NVFP4, MXFP8), what
// TensorRT documents about them (which GPUs and releases have them, what it accepts for block quantization), and the
// GPU a build targets. Model facts here; the rules that judge them live in rules/, one per file.
//
// Sources (each fact below names its own):
// - TensorRT "Working with Quantized Types" (10.11-11.x): INT8, FP8 and FP4 quantize activations and weights; INT4 is
//   weight-only.
// - TensorRT "Quantization Schemes": MXFP8 is dynamic per-block quantization, block 32, E8M0 scales, output FP8E4M3.
// - TensorRT operator pages "Quantize" and "DynamicQuantize" and the IQuantizeLayer/IDequantizeLayer API: block
//   quantization's scale has the input's rank and shape except the blocked axis (the last or second to last), divided
//   by the block size; DynamicQuantize blocks 16 elements for FP4 and 32 for MXFP8 along the last or second to last
//   axis, whose extent the block size must divide.
// - TensorRT-RTX support matrix: FP8 on compute capability 8.9 and later, FP4 GEMM on Blackwell only, INT4 weight-only
//   GEMM from 8.6 (none on 7.5). Torch-TensorRT's quantization guide: FP4 needs Blackwell and TensorRT >= 10.8.
// - TensorRT CHANGELOG.md (NVIDIA/TensorRT): 10.0 added INT4 quantization, 10.8 the FLOAT4E2M1 type in the ONNX
//   parser, 10.12 ModelOpt's custom MXFP8 quantization ops.
// - NVIDIA/Model-Optimizer modelopt/torch/quantization/export_onnx.py: the ops ModelOpt writes
//   (trt::TRT_FP4DynamicQuantize(x, scale) -> (x_fp4, block_scales_fp8) with axis, block_size, scale_type;
//   trt::TRT_MXFP8DynamicQuantize(x) -> (x_fp8, block_scales_e8m0) with axis, block_size, output_dtype;
//   trt::TRT_MXFP8DequantizeLinear and trt::DequantizeLinear with axis and block_size).
// - ONNX operator changelog: QuantizeLinear/DequantizeLinear took the FLOAT8 types in opset 19, INT4/UINT4 and
//   block_size in opset 21, FLOAT4E2M1 in opset 23.
#pragma once

#include "qdq/diagnostics.h"
#include "qdq/onnx_graph.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

//! A quantized type as TensorRT names it. MXFP8 is FP8 with E8M0 block scales computed at run time. INT32 is ONNX
//! Runtime's quantized bias (a DQ of an INT32 constant), which TensorRT does not import (rule quantized-bias).
enum class QuantizedType
{
    kUnknown,
    kInt8,
    kFp8,
    kInt4,
    kFp4,
    kMxfp8,
    kInt32,
};
//! "INT8", "FP8", "INT4", "FP4", "MXFP8", "INT32", "unknown"
std::string_view quantizedTypeLabel(QuantizedType type);

//! The quantized type of an ONNX element type; kUnknown for a float or another type.
QuantizedType quantizedTypeOfElement(OnnxDataType type);

//! The quantized type a Q/DQ node (graph.qdq entry) stands for: the zero point's type, a Q's output_dtype, a
//! TensorRT-domain op's type, the DQ's constant or typed input, or its producing Q. A DQ that dequantizes the block
//! scales of another DQ (NVFP4's double quantization) takes that DQ's type. kInt8 when the model does not say (ONNX
//! then means uint8; exporters for TensorRT write int8).
QuantizedType quantizedTypeOfQdq(const OnnxGraph& graph, std::size_t nodeIndex);

//! Whether the node is one of the dynamic block quantizers (trt::TRT_FP4DynamicQuantize, TRT_MXFP8DynamicQuantize).
bool isDynamicBlockQuantize(const OnnxNode& node);

//! Q/DQ nodes per quantized type, in QuantizedType order, types with none left out.
struct QuantizedTypeCount
{
    QuantizedType type = QuantizedType::kUnknown;
    std::size_t nodes = 0;
};
std::vector<QuantizedTypeCount> countQuantizedTypes(const OnnxGraph& graph);

//! What a type needs from the GPU and the TensorRT release (sources in the file comment).
struct QuantizedTypeNeeds
{
    int minCcMajor = 0; //!< compute capability; 0: any GPU TensorRT runs on
    int minCcMinor = 0;
    std::string gpuSource; //!< the page that says so
    bool gpuGuess = false; //!< no TensorRT page says so: the rules mark their finding as likely
    int minTrtMajor = 0;   //!< 0: any release qdq-doctor knows
    int minTrtMinor = 0;
    std::string trtSource;
};
QuantizedTypeNeeds needsOf(QuantizedType type);

//! Notes on Q/DQ types the model's opset does not have (FP8 before 19, INT4/UINT4 or block_size before 21, FP4 before
//! 23), naming the file and the node. The rest of the model can still be analysed.
std::vector<ReaderWarning> quantizedTypeOpsetNotes(const OnnxGraph& graph);

//! What libonnx 1.12's checker cannot cover in this model (element types 17-23 and TensorRT-domain Q/DQ ops it has no
//! schema for), in words for fix's notes; empty when it covers everything.
std::vector<std::string> quantizedTypesUncheckedByOnnx(const OnnxGraph& graph);

} // namespace qdq
