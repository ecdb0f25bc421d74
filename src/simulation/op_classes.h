// Operator classes the engine simulator's passes share (the layer builder and the Myelin pass).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace qdq::simulation
{

inline bool isOneOfOps(std::string_view op, std::initializer_list<std::string_view> ops)
{
    return std::find(ops.begin(), ops.end(), op) != ops.end();
}

inline bool isShuffleOp(std::string_view op)
{
    return isOneOfOps(op, {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"});
}

//! Ops TensorRT runs as pointwise layers (and fuses into PointWise chains).
inline bool isPointwiseOp(std::string_view op)
{
    return isOneOfOps(op, {"Add",   "Sub",      "Mul",         "Div",        "Pow",   "Sqrt",      "Exp",
                           "Log",   "Abs",      "Neg",         "Reciprocal", "Max",   "Min",       "Sum",
                           "Erf",   "Sigmoid",  "Tanh",        "Relu",       "Clip",  "LeakyRelu", "Elu",
                           "Selu",  "Softplus", "HardSigmoid", "HardSwish",  "Gelu",  "Mish",      "PRelu",
                           "Floor", "Ceil",     "Round",       "Sin",        "Cos",   "Not",       "And",
                           "Or",    "Equal",    "Greater",     "Less",       "Where", "Sign",      "ThresholdedRelu"});
}

} // namespace qdq::simulation
