// The simulator's layer passes in the order they run, as ONNX Runtime lists its graph transformers: each pass is a
// function in a file of its own (passes.h) and reads what the passes before it left in the SimulationState.
#pragma once

#include "src/simulation/simulation_state.h"

#include <span>
#include <string_view>

namespace qdq::simulation
{

struct LayerPass
{
    std::string_view name;      //!< stable: docs/simulator.md names the passes by it
    std::string_view file;      //!< where it lives
    std::string_view reference; //!< what documents the TensorRT behaviour it follows
    bool (*applies)(const SimulationState&);
    void (*run)(SimulationState&);
};

//! The passes, in order.
std::span<const LayerPass> layerPasses();

//! Runs every pass that applies, in order.
void runLayerPasses(SimulationState& state);

} // namespace qdq::simulation
