// The grammar of TensorRT engine layer names (reference section 4): how ONNX names survive fusion.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qdq
{

struct LayerNameParts
{
    //! Names the layer executes, in order: ONNX node names, weight initializer names, tensor names, parser helper
    //! names; PWN(...) unwrapped, " + " and " || " split, clone/copy suffixes removed.
    std::vector<std::string> tokens;
    bool horizontalMerge = false; //!< contains " || "

    //! `Reformatting CopyNode for Input|Output Tensor N to X` / `Reformatting CopyNode for Network Input X`
    bool reformatCopyNode = false;
    bool reformatOfInput = false;
    std::string reformatTarget; //!< X: the consumer (input) or producer (output) layer, or the network input

    //! `T copy`: a concat-elimination copy of tensor T
    bool tensorCopy = false;
    std::string copiedTensor;

    //! `{ForeignNode[first...last]}`
    bool foreignNode = false;
    std::string rangeFirst;
    std::string rangeLast;
};

LayerNameParts parseLayerName(std::string_view name);

//! Removes TensorRT's suffixes from a token: `_clone_N` (repeated), `_cpy`, `_quantize_scale_node`, and a trailing
//! ` [profile N]`.
std::string stripTrtSuffixes(std::string_view token);

//! For builder-generated helper names (`unsqueeze_node_after_X`, `reshape_before_X`, `reshape_after_X`,
//! `transpose_before_X`, `squeeze_after_X`, `copied_squeeze_after_X`) returns X.
std::optional<std::string> helperSubject(std::string_view token);

//! True for parser-created names such as `(Unnamed Layer* 12) [Shuffle]` and `..._output` tensors of them.
bool isUnnamedLayerToken(std::string_view token);

enum class QdqNameKind
{
    kNone,
    kQuantize,
    kDequantize,
};

//! What a node or tensor name says about Q/DQ when no model tells the op type, by the naming of the common exporters
//! (suffixes `_clone_N`, `_cpy`, `_output_0`, `:0` allowed after each):
//! - PyTorch: `/conv1/QuantizeLinear`, `QuantizeLinear_7`; pytorch-quantization: `/x/_input_quantizer/QuantizeLinear`,
//!   `/x/_weight_quantizer/DequantizeLinear`, TensorRT's `QuantizeLinear_7_quantize_scale_node`;
//! - NVIDIA Model Optimizer and ONNX Runtime quantize_static: `<tensor>_QuantizeLinear`, `<tensor>_DequantizeLinear`
//!   (`onnx::Conv_17856_DequantizeLinear`, `conv.weight_DequantizeLinear`); Paddle2ONNX: `p2o.QuantizeLinear.3`;
//! - tf2onnx: `QuantLinearNode__838`, `DequantLinearNode__839`;
//! - PaddlePaddle operators: `quantize_linear_3`, `dequantize_linear_4` (and their `.tmp_N` outputs);
//! - network API layers: `(Unnamed Layer* 1) [Quantize]`, `[Dequantize]`.
//! When a name holds several markers (`X_DequantizeLinear_Output_QuantizeLinear`), the last one decides. A name that
//! merely contains "quant" is not Q/DQ (`quantized_conv_3`, ONNX Runtime's quantized weight `w_quantized`,
//! `/x/_input_quantizer/Constant`, `QuantizeLinearity`).
QdqNameKind qdqNameKind(std::string_view name);

//! True when a name looks like a Q or DQ node (qdqNameKind).
bool looksLikeQuantizeName(std::string_view name);
bool looksLikeDequantizeName(std::string_view name);

//! ONNX Runtime's quantized weight initializer, `<weight>_quantized` (a weight, not a Q/DQ node).
bool looksLikeQuantizedWeightName(std::string_view name);

} // namespace qdq
