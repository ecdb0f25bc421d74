// The layer builders the layer formation pass (layer_formation_pass.cpp) calls: weighted_layers.cpp for convs and
// fully connected layers, other_layers.cpp for everything else.
#pragma once

#include "src/simulation/simulation_state.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qdq::simulation
{

//! weighted_layers.cpp: a weighted op with its epilogue.
void buildWeighted(SimulationState& s, const OnnxNode& weighted);

//! other_layers.cpp
void buildPointwise(SimulationState& s, const OnnxNode& node);
//! Consecutive shuffles are one layer: a Shuffle when one transposes, else a NoOp (a reshape of the same
//! memory); a reshape of (N, C, 1, 1) into a fully connected layer vanishes into it.
void buildShuffle(SimulationState& s, const OnnxNode& node);
//! Concat elimination: producers write into the concatenated tensor. An input that is also read elsewhere, or
//! a network input, is copied ("<tensor> copy").
void buildConcat(SimulationState& s, const OnnxNode& node);
//! A Myelin region on the versions that make them (src/simulation/myelin_pass.cpp).
void buildMyelin(SimulationState& s, const OnnxNode& seed);
void buildSingle(SimulationState& s, const OnnxNode& node);
//! Pointwise nodes that follow `last` with nothing else reading in between join the PointWise layer.
void extendPointwise(SimulationState& s, std::uint32_t layer, const OnnxNode* last, std::vector<std::string>& parts);
//! "PWN(PWN(a, b), c)" of parts a, b, c.
std::string pwnName(const std::vector<std::string>& parts);
//! Parts joined by " + ", those flagged in PWN(...).
std::string joinViews(const std::vector<std::pair<std::string_view, bool>>& parts);

} // namespace qdq::simulation
