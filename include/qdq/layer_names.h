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

//! True when a name looks like a Q or DQ node (`QuantizeLinear`, `DequantizeLinear`, `quantize_scale_node`,
//! `_QuantizeLinear`, `[Quantize]`, `[Dequantize]`).
bool looksLikeQuantizeName(std::string_view name);
bool looksLikeDequantizeName(std::string_view name);

} // namespace qdq
