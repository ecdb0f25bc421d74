// Attention blocks written with ONNX primitives, softmax(Q * K^T [scale] [mask]) * V as MatMul -> [Mul/Div] ->
// [Add/Where] -> Softmax -> MatMul, and what TensorRT's fused attention asks of them. Shared by the engine
// simulator's Myelin pass (src/simulation/myelin_pass.cpp) and the transformer rules and fix edits.
//
// Sources of the conditions (each blocker names its own):
//  - TensorRT "Fused Attention" page
//    (https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/transformers-fused-attention.html):
//    the fusion is built from two batched MatMuls and a Softmax; the mask is a boolean mask or an add mask offsetting
//    Q * K^T; the attention scale must be multiplied into Q or K (or sqrt of it into both) before the first MatMul.
//  - NVIDIA Model-Optimizer PR #1289 (FP8 MHA for ViT, https://github.com/NVIDIA/Model-Optimizer/pull/1289): for a
//    quantized attention each MatMul reads its inputs straight from a DequantizeLinear (the K Transpose and the
//    scaling Mul move to the other side of the Q/DQ) and the Softmax output gets its own Q/DQ.
#pragma once

#include "qdq/onnx_graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qdq
{

//! One input of an attention MatMul, traced back to the DequantizeLinear that quantized it.
struct AttentionOperand
{
    static constexpr std::uint32_t kNoNode = 0xFFFFFFFFu;
    std::uint32_t matmul = kNoNode;     //!< the MatMul reading it (node index)
    int input = 0;                      //!< which input of that MatMul
    std::uint32_t dequantize = kNoNode; //!< the DequantizeLinear it comes from, kNoNode when it is float
    //! Nodes between that DequantizeLinear and the MatMul (Transpose, Reshape, a scaling Mul, ...), the MatMul's
    //! producer first; empty when the MatMul reads the DequantizeLinear's output straight.
    std::vector<std::uint32_t> between;
    //! A Mul or Div by a build-time constant on the way back (within a few data-movement ops): the attention scale.
    std::uint32_t scaledBy = kNoNode;

    bool quantized() const { return dequantize != kNoNode; }
    bool readsDequantizeStraight() const { return quantized() && between.empty(); }
};

//! Where the attention scale is applied.
enum class AttentionScale
{
    kNone,      //!< no constant Mul/Div found on Q, K or the scores
    kIntoQuery, //!< into Q before the first MatMul (documented)
    kIntoKey,   //!< into K before the first MatMul (documented)
    kIntoBoth,  //!< sqrt of it into both (documented)
    kOnScores,  //!< on Q * K^T, between the first MatMul and the Softmax (not the documented form)
};
std::string_view attentionScaleName(AttentionScale scale);

//! A condition of fused attention the block does not meet.
struct AttentionBlocker
{
    std::uint32_t node = AttentionOperand::kNoNode;   //!< the node in the way (a Transpose, a scaling Mul, ...)
    std::uint32_t matmul = AttentionOperand::kNoNode; //!< the MatMul it concerns, when one
    std::string reason;                               //!< in words, with its source
};

struct AttentionBlock
{
    std::uint32_t scoresMatMul = AttentionOperand::kNoNode;  //!< Q * K^T (the first batched MatMul, BMM1)
    std::uint32_t softmax = AttentionOperand::kNoNode;       //!< the Softmax
    std::uint32_t contextMatMul = AttentionOperand::kNoNode; //!< probabilities * V (BMM2)
    //! Nodes between BMM1 and the Softmax and between the Softmax and BMM2 (scale, mask, Q/DQ, casts), in order.
    std::vector<std::uint32_t> inner;
    std::uint32_t mask = AttentionOperand::kNoNode; //!< the Add (add mask) or Where (boolean mask), when one
    AttentionScale scale = AttentionScale::kNone;
    AttentionOperand query, key, probabilities, value;
    //! Q/DQ nodes on the scores (between BMM1 and the Softmax): not part of ModelOpt's recipe.
    std::vector<std::uint32_t> scoreQdq;
    //! Reshapes of the scores between BMM1 and the Softmax (a window attention's per-window mask, Swin).
    std::vector<std::uint32_t> scoreReshapes;
    bool quantized = false;                 //!< a DequantizeLinear feeds some attention MatMul input
    bool softmaxOutputQuantized = false;    //!< Softmax -> QuantizeLinear -> DequantizeLinear -> BMM2
    std::vector<AttentionBlocker> blockers; //!< empty when the documented conditions hold
    std::vector<std::string> notes;         //!< what no source settles (a guess), in words

    bool fuses() const { return blockers.empty(); }
    //! Every node of the block: the MatMuls, the Softmax, inner nodes, and the nodes between each MatMul input and its
    //! DequantizeLinear (the DequantizeLinear too).
    std::vector<std::uint32_t> nodes() const;
};

//! Every attention block of the graph, in the order of their Softmax nodes. Linear in the graph's size.
std::vector<AttentionBlock> findAttentionBlocks(const OnnxGraph& graph);

//! One line for a block: "attention /blk/MatMul -> /blk/Softmax -> /blk/MatMul_1: fuses (...)" or the blockers.
std::string describeAttention(const OnnxGraph& graph, const AttentionBlock& block);

} // namespace qdq
