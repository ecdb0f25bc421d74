// The engine simulator's layer builder: the layer list TensorRT will build, from the model's graph and the predicted
// fate of every Q/DQ node (src/simulation/qdq_propagation.cpp).
#pragma once

#include "qdq/analysis.h"
#include "src/simulation/myelin_pass.h"

namespace qdq::simulation
{

//! The simulator's first stage (src/simulation/qdq_propagation.cpp): the fate of every Q/DQ node, no layers yet.
//! buildPredictedLayers only reads prediction.qdq, so another thread may read it while the layers are built.
Prediction predictQdqFates(const OnnxGraph& graph, const SimulationOptions& options);

//! Fills prediction.layers (and prediction.eliminated) from the graph and prediction.qdq.
void buildPredictedLayers(const OnnxGraph& graph, const SimulationOptions& options, Prediction& prediction);
//! Same, with the graph's transformer parts already found (FirstStages).
void buildPredictedLayers(const OnnxGraph& graph, const SimulationOptions& options, Prediction& prediction,
                          TransformerParts transformer);

//! The Q/DQ fates (predictQdqFates) and the transformer parts the Myelin pass reads: both read only the graph, so on
//! a large graph with a Softmax the attention search runs on a second thread meanwhile.
struct FirstStages
{
    Prediction prediction;
    TransformerParts transformer;
};
FirstStages runFirstStages(const OnnxGraph& graph, const SimulationOptions& options);

//! The strong-typing pass (src/simulation/strong_typing.cpp): the element type of every tensor as the graph gives it
//! (value_info, initializers, Cast `to`, a DQ's scale type, ...), inferred where the model does not say; by tensor id.
std::vector<OnnxDataType> inferTensorTypes(const OnnxGraph& graph, const std::vector<std::uint32_t>& order);
//! "FP32", "FP16", "BF16" for a float element type; "" for another.
std::string_view strongTypeName(OnnxDataType type);
//! Under strong typing: each layer's float input and output precision is its tensors' type in the graph (an FP32
//! model runs FP32, an FP16 one FP16, a Cast converts); the quantized sides stay as the Q/DQ decided. order: the
//! nodes in topological order.
void applyStrongTyping(const OnnxGraph& graph, const std::vector<std::uint32_t>& order, Prediction& prediction);

} // namespace qdq::simulation
