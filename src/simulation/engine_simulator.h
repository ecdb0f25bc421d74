// The engine simulator's layer builder: the layer list TensorRT will build, from the model's graph and the predicted
// fate of every Q/DQ node (src/simulation/qdq_propagation.cpp).
#pragma once

#include "qdq/analysis.h"

namespace qdq::simulation
{

//! The simulator's first stage (src/simulation/qdq_propagation.cpp): the fate of every Q/DQ node, no layers yet.
//! buildPredictedLayers only reads prediction.qdq, so another thread may read it while the layers are built.
Prediction predictQdqFates(const OnnxGraph& graph, const SimulationOptions& options);

//! Fills prediction.layers (and prediction.eliminated) from the graph and prediction.qdq.
void buildPredictedLayers(const OnnxGraph& graph, const SimulationOptions& options, Prediction& prediction);

} // namespace qdq::simulation
