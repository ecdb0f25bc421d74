// ONNX Runtime's QOperator ops (QLinearConv, QLinearMatMul, com.microsoft QLinearAdd, QGemm, ...) rewritten in the
// QDQ format TensorRT imports: each quantized input behind a DequantizeLinear, the float op, a QuantizeLinear on the
// output. Used by `fix` for the quantized-op-not-importable finding (docs/fix.md).
#pragma once

#include "qdq/model_edit.h"
#include "qdq/onnx_graph.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace qdq
{

struct QuantizedOpRewrite
{
    //! The DequantizeLinear nodes, the float op, then the QuantizeLinear (when the op's output is quantized), to be
    //! inserted in this order where the quantized op was. The float op keeps the quantized op's name; the
    //! QuantizeLinear writes the op's output tensor, so its readers are unchanged.
    std::vector<NewNode> nodes;
    //! A float bias (QLinearConv's or QGemm's INT32 bias, dequantized), when the op has one.
    std::vector<NewInitializer> initializers;
    std::string floatOp; //!< "Conv", "MatMul", "Add", ...
};

//! Returns a name not used in the model or by earlier calls, from a base name.
using FreshNameFn = std::function<std::string(const std::string& base)>;

//! The rewrite of node `node`, or nullopt with `why` set when it has none: the op is not one of the QOperator ops with
//! a float equivalent, a scale or zero point is not a constant, a per-channel scale sits where DequantizeLinear
//! cannot express it, the bias' values were not read, the op set is older than 13 for per-channel scales, ...
//! Names of new nodes and tensors start with namePrefix.
std::optional<QuantizedOpRewrite> rewriteQuantizedOp(const OnnxGraph& graph, std::uint32_t node,
                                                     const std::string& namePrefix, const FreshNameFn& freshName,
                                                     std::string& why);

} // namespace qdq
