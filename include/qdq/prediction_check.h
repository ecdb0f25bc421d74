// Holding a prediction against a real engine: which real layers the simulator got exactly (the same ONNX nodes in one
// layer), and where the two disagree. Used by `diagnose` (facts in the report, not findings), `diff --baseline
// MODEL.onnx` and the tests that measure the simulator on real engines.
#pragma once

#include "qdq/analysis.h"

#include <string>
#include <vector>

namespace qdq
{

//! Compares a prediction (from graph) with the real engine correlated to the same graph.
PredictionCheck checkPrediction(const Prediction& prediction, const OnnxGraph& graph, const EnginePlan& plan,
                                const Correlation& correlation);

} // namespace qdq
