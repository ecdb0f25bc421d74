// What the simulator's layer passes share: the graph and options they read, the prediction they fill, and what one
// pass leaves for the next (the topological order, each node's layer, the nodes folded at build time). The passes
// themselves are listed, in their order, in src/simulation/pass_registry.cpp.
#pragma once

#include "qdq/analysis.h"
#include "src/simulation/myelin_pass.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace qdq::simulation
{

constexpr std::uint32_t kNone = 0xFFFFFFFFu;

//! A conv layer a horizontal merge may join (sibling_merge_pass.cpp).
struct SiblingCandidate
{
    std::uint32_t layer;
    std::uint32_t conv;
    std::string epilogue; //!< op types fused after the conv, in order
};

struct SimulationState
{
    SimulationState(const OnnxGraph& graph, const SimulationOptions& options, Prediction& out,
                    std::optional<TransformerParts> transformer);
    SimulationState(const SimulationState&) = delete;
    SimulationState& operator=(const SimulationState&) = delete;

    const OnnxGraph& graph;
    const SimulationOptions& options;
    Prediction& out;
    std::vector<std::uint32_t> order;                                //!< topological order of node indices
    std::vector<std::uint32_t> position;                             //!< node -> position in order
    std::vector<std::uint32_t> layerOf;                              //!< node -> predicted layer, or kNone
    std::vector<std::vector<std::uint32_t>> layerNodes;              //!< layer -> its nodes, until the layer order pass
    std::vector<bool> folded;                                        //!< node runs at build time or vanishes
    std::vector<bool> constant;                                      //!< tensor id -> known at build time
    std::vector<const PredictedQdq*> qdqOf;                          //!< node -> its predicted fate, for Q/DQ nodes
    std::vector<std::pair<std::uint32_t, std::uint32_t>> mergedInto; //!< a duplicate Q -> the twin it merged into
    std::vector<SiblingCandidate> siblingCandidates;
    std::vector<PredictedLayer> copies;          //!< Concat input copies, added after the Q/DQ nodes are placed
    const OnnxNode* pendingPad = nullptr;        //!< a Pad the next conv layer takes
    std::optional<TransformerParts> transformer; //!< given by the caller, else found by the Myelin seed pass
    MyelinPass myelin{BuilderState{graph, options, position, layerOf, folded, constant, qdqOf}};

    // ---- graph questions every pass asks ----------------------------------------------------------------------

    bool constantTensor(std::uint32_t id) const { return id != kNone && id < constant.size() && constant[id]; }
    std::span<const std::uint32_t> consumers(std::uint32_t tensor) const;
    bool isNetworkOutput(std::uint32_t tensor) const;
    //! The only consumer of tensor, when exactly one node reads it and it is not a network output.
    const OnnxNode* soleConsumer(std::uint32_t tensor) const;
    std::uint32_t firstOutput(const OnnxNode& node) const;
    //! The sole reader of tensor, looking through a Q -> DQ pair that sits alone on it.
    const OnnxNode* consumerThroughQdq(std::uint32_t tensor) const;
    //! The non-constant inputs of a node (tensor ids).
    std::vector<std::uint32_t> activationInputs(const OnnxNode& node) const;
    //! The ONNX parser folds a BatchNormalization into the conv before it only when its scale, bias, mean and
    //! variance are initializers; computed ones (even an Identity of an initializer) make it a Scale layer of its own.
    bool batchNormFoldable(const OnnxNode& node) const;
    //! A zero Pad whose only reader is a Conv or ConvTranspose (no Q/DQ between them).
    bool foldsIntoConv(const OnnxNode& node) const;
    //! TensorRT 10 runs an unquantized Gemm/MatMul in Myelin.
    bool usesMyelinForGemm() const { return myelin.usesMyelinForGemm(); }

    //! The name TensorRT gives the layer of a Quantize node: TensorRT 8.0 appends "_quantize_scale_node" (the
    //! profile in NVIDIA/TensorRT#1293: "QuantizeLinear_151_quantize_scale_node", "layer2.2.conv1.weight +
    //! QuantizeLinear_156_quantize_scale_node + Conv_158 + Relu_160"); the 8.2 engine of
    //! ../shared/realdata/trex-tests-mobilenet-qat-2022-04 and later ones write the node's name ("QuantizeLinear_2").
    std::string quantizeLayerName(const OnnxNode& q) const;
    bool namesQuantizeScaleNodes() const { return options.trtMajor == 8 && options.trtMinor < 2; }

    // ---- layers -----------------------------------------------------------------------------------------------

    std::uint32_t newLayer(PredictedLayer layer);
    void assign(std::uint32_t layer, const OnnxNode& node);
};

} // namespace qdq::simulation
