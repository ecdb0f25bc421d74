// Where the predicted layer structure of a TensorRT 11 build depends on the GPU (src/simulation/predict_report.cpp
// prints it). Internal to src/simulation.
#pragma once

#include "qdq/analysis.h"

#include <string>

namespace qdq::simulation
{

//! A note, marked as a guess, on how a TensorRT 11 build of this graph may be laid out differently on another GPU:
//! the two real 11.x builds of one CNN differ (11.0 on a B200: one Myelin graph; 11.1 on an H100: Cask
//! convolutions and pooling, then a Myelin graph). Empty for other versions and for graphs without convolutions or
//! pooling.
std::string gpuDependentStructureNote(const Prediction& prediction, const OnnxGraph& graph);

} // namespace qdq::simulation
