// Which nodes TensorRT keeps: those whose outputs reach a network output. The builder's dead-layer removal runs before
// and after fusion in every verbose log here ("After dead-layer removal: 24 layers",
// ../shared/realdata/cookbook-mnist-trt10141/result-02.log:316-317, :538; trex-notebooks-yolo-orin-trt852/trt.out:4645,
// 5736), so a node that reaches none (a BatchNormalization's training-mode outputs, a Q/DQ on a branch nothing reads)
// builds no layer.
#pragma once

#include "qdq/analysis.h"

#include <vector>

namespace qdq::simulation
{

//! By node index: whether some output of the node reaches a network output. Every node counts as live in a graph with
//! no outputs, none that a node writes, or with an If, Loop or Scan node (the reader does not follow the tensors their
//! subgraphs capture).
std::vector<bool> nodesReachingAnOutput(const OnnxGraph& graph);

} // namespace qdq::simulation
