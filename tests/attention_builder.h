// Hand-built attention blocks for the attention matcher and the Myelin pass tests: softmax(Q * K^T) * V with the
// attention scale's square root multiplied into Q and K, quantized as NVIDIA Model-Optimizer's recipe places the
// Q/DQ (PR #1289: a DequantizeLinear straight before each MatMul input, a Q/DQ after the Softmax), and the variants
// that take one condition away.
#pragma once

#include "graph_builder.h"

#include <string>

namespace qdq::test
{

struct AttentionShape
{
    bool quantized = true;                    //!< Q/DQ before every MatMul input (ModelOpt's placement)
    bool softmaxOutputQuantized = true;       //!< a Q/DQ between the Softmax and the second MatMul
    bool keyTransposeAfterDequantize = false; //!< K's Transpose between its DequantizeLinear and the first MatMul
    bool scaleOnScores = false;               //!< the scale multiplies Q * K^T instead of Q and K
};

//! Adds one attention reading graph inputs prefix_q, prefix_k, prefix_v ([1, 2, 4, 8]) and writing a graph output;
//! returns the output tensor. Nodes are named prefix/MatMul, prefix/Softmax, prefix/MatMul_1, prefix/k_transpose,
//! prefix/scale_q, prefix/scale_k, prefix/scale_scores, prefix/{q,k,v,p}_qdq/{QuantizeLinear,DequantizeLinear}.
inline std::string addAttention(GraphBuilder& g, const std::string& prefix, const AttentionShape& shape,
                                bool asOutput = true)
{
    const auto quantize = [&](const std::string& name, const std::string& tensor)
    { return shape.quantized ? g.qdq(prefix + "/" + name, tensor) : tensor; };
    std::string q = g.input(prefix + "_q", {1, 2, 4, 8});
    std::string k = g.input(prefix + "_k", {1, 2, 4, 8});
    std::string v = g.input(prefix + "_v", {1, 2, 4, 8});
    const float rootScale = 0.5946f; // sqrt(1 / sqrt(8))
    if (!shape.scaleOnScores)
    {
        q = g.node("Mul", prefix + "/scale_q", {q, g.weight(prefix + "/root_scale_q", {}, rootScale)});
    }
    std::string keyT;
    if (shape.keyTransposeAfterDequantize)
    {
        std::string scaledK = shape.scaleOnScores ? k
                                                  : g.node("Mul", prefix + "/scale_k",
                                                           {k, g.weight(prefix + "/root_scale_k", {}, rootScale)});
        keyT = g.node("Transpose", prefix + "/k_transpose", {quantize("k_qdq", scaledK)});
        g.intsAttribute(prefix + "/k_transpose", "perm", {0, 1, 3, 2});
    }
    else
    {
        keyT = g.node("Transpose", prefix + "/k_transpose", {k});
        g.intsAttribute(prefix + "/k_transpose", "perm", {0, 1, 3, 2});
        if (!shape.scaleOnScores)
        {
            keyT = g.node("Mul", prefix + "/scale_k", {keyT, g.weight(prefix + "/root_scale_k", {}, rootScale)});
        }
        keyT = quantize("k_qdq", keyT);
    }
    std::string scores = g.node("MatMul", prefix + "/MatMul", {quantize("q_qdq", q), keyT});
    if (shape.scaleOnScores)
    {
        scores = g.node("Mul", prefix + "/scale_scores", {scores, g.weight(prefix + "/scale", {}, 0.3536f)});
    }
    std::string probabilities = g.node("Softmax", prefix + "/Softmax", {scores});
    g.intAttribute(prefix + "/Softmax", "axis", -1);
    if (shape.softmaxOutputQuantized)
    {
        probabilities = quantize("p_qdq", probabilities);
    }
    std::string context = g.node("MatMul", prefix + "/MatMul_1", {probabilities, quantize("v_qdq", v)});
    if (asOutput)
    {
        g.output(context, {1, 2, 4, 8});
    }
    return context;
}

} // namespace qdq::test
