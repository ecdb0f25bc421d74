// The engine simulator's Myelin pass: which parts of the graph TensorRT hands to Myelin as
// {ForeignNode[first...last]} regions, which Q/DQ nodes a region consumes, which of its MatMuls run in the quantized
// type, and whether each attention block fuses. The layer builder (engine_simulator.cpp) calls it first, before
// the layers of its other passes take the nodes.
#pragma once

#include "qdq/analysis.h"
#include "qdq/attention_pattern.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qdq::simulation
{

//! What the layer builder knows that the Myelin pass reads. The vectors are the builder's and change as it builds.
struct BuilderState
{
    const OnnxGraph& graph;
    const SimulationOptions& options;
    const std::vector<std::uint32_t>& position;    //!< node -> topological position
    const std::vector<std::uint32_t>& layerOf;     //!< node -> its layer, or kNoLayer
    const std::vector<bool>& folded;               //!< node runs at build time or vanishes
    const std::vector<bool>& constant;             //!< tensor id -> known at build time
    const std::vector<const PredictedQdq*>& qdqOf; //!< node -> its predicted fate, for Q/DQ nodes
};

constexpr std::uint32_t kNoLayer = 0xFFFFFFFFu;

//! One region, before the builder makes it a layer.
struct GrownMyelinRegion
{
    std::vector<std::uint32_t> members; //!< node indices in topological order (consumed Q/DQ nodes included)
    std::string name;                   //!< {ForeignNode[first...last]}
    std::string guess;                  //!< why its extent is a guess
    bool int8Input = false;             //!< it reads a quantized tensor from outside
    bool int8Output = false;            //!< it writes a quantized tensor for a layer outside
};

//! What makes a graph a transformer for the Myelin pass, found once per prediction: its attention blocks
//! (findAttentionBlocks) and whether it has a LayerNorm or a GELU.
struct TransformerParts
{
    std::vector<AttentionBlock> attention;
    bool layerNormOrGelu = false;
};

//! Whether node is (part of) a LayerNorm (the op, or written out with a normalization ReduceMean) or a GELU (the op,
//! or its Erf form).
bool isLayerNormOrGelu(const OnnxGraph& graph, const OnnxNode& node);
//! Whether some node is.
bool hasLayerNormOrGelu(const OnnxGraph& graph);

//! Whether TensorRT compiles the model's transformer parts with Myelin and runs their Q/DQ inside the regions:
//! TensorRT 10 and later (or an unknown version) on a graph with an attention block, a LayerNorm or a GELU.
bool compilesTransformerWithMyelin(const TransformerParts& parts, const SimulationOptions& options);

class MyelinPass
{
public:
    explicit MyelinPass(const BuilderState& state);

    //! Takes the graph's transformer parts; call once the builder's order and constants are known.
    void prepare(TransformerParts parts);

    //! TensorRT 8.5 and later make Myelin regions (and an unknown version, taken as the latest).
    bool makesRegions() const;
    //! TensorRT 10 runs an unquantized Gemm/MatMul in Myelin.
    bool usesMyelinForGemm() const;
    //! Whether node starts a region in the builder's first pass (before any other layer is made).
    bool seedsFirstPass(const OnnxNode& node) const;
    //! A Myelin seed that is not a Softmax: what the builder's later passes may still start a region from.
    bool seedsLater(const OnnxNode& node) const;
    //! Whether a region may take node now.
    bool eligible(const OnnxNode& node) const;
    //! TensorRT 10.15 and later hand an unquantized Gemm/MatMul and the float ops around it to one region.
    bool takesGemm(const OnnxNode& node) const;
    bool transformerMode() const { return mTransformer; }

    //! Grows the region of seed over the nodes it may take, keeps it convex; no members when there is none.
    GrownMyelinRegion grow(const OnnxNode& seed);

    //! After the layers are built: the attention blocks, the quantized and float MatMuls of the regions, and the
    //! fate of each Q/DQ node a region took (fused into the region's kernels).
    void report(Prediction& prediction) const;
    //! Each attention block's verdict, with why it is not fused (empty exactly when it is).
    void reportAttention(Prediction& prediction, const std::vector<std::uint32_t>& layerOf) const;

private:
    bool seeds(const OnnxNode& node) const;
    bool isQuantizedRegionEdge(const OnnxNode& node) const;
    bool qdqEligible(const OnnxNode& node) const;
    void keepConvex(std::vector<std::uint32_t>& members, std::uint32_t mark);
    void describe(GrownMyelinRegion& region) const;
    std::string attentionReason(const AttentionBlock& block) const;

    BuilderState mState;
    bool mTransformer = false;
    std::vector<AttentionBlock> mAttention;
    std::vector<bool> mAttentionSoftmax;               //!< by node: the Softmax of an attention block
    std::vector<std::uint32_t> mRegionMark;            //!< per node while a region is grown
    static constexpr std::uint32_t kCutFromRegion = 1; //!< left out of a region for convexity (marks are >= 2)
    std::uint32_t mRegionCounter = 0;
};

} // namespace qdq::simulation
