// The simulator's layer passes, each in a file of its own; pass_registry.cpp lists them in the order they run.
#pragma once

#include "src/simulation/simulation_state.h"

namespace qdq::simulation
{

//! topological_order_pass.cpp: state.order and state.position.
void topologicalOrder(SimulationState& s);
//! dead_layer_pass.cpp: nodes that reach no network output are folded (they build no layer).
void removeDeadNodes(SimulationState& s);
//! constant_folding_pass.cpp: state.constant and state.folded.
void foldConstants(SimulationState& s);
//! layer_formation_pass.cpp: the Myelin regions seeded before any other layer (they take the shuffles and
//! pointwise ops around their seeds first).
void seedMyelinRegions(SimulationState& s);
//! layer_formation_pass.cpp: every other node that is not a Q/DQ or folded becomes part of a layer.
void formLayers(SimulationState& s);
//! qdq_placement_pass.cpp: each Q/DQ node joins the layer its fate gives it, or becomes a layer of its own.
void placeQdqNodes(SimulationState& s);
//! sibling_merge_pass.cpp: sibling convs on one input become one `A || B` layer.
void mergeSiblingConvs(SimulationState& s);
//! layer_order_pass.cpp: each layer's node list in graph order, the layers in the model's order, eliminated and
//! merged layers dropped.
void orderLayers(SimulationState& s);
//! precision_pass.cpp: each layer's input and output precision.
void finishPrecisions(SimulationState& s);
//! io_reformat_pass.cpp: reformats at the FP32 network inputs and outputs of an FP16 build.
void addIoReformats(SimulationState& s);

} // namespace qdq::simulation
