// The consistency check every report runs (src/advice/consistency.cpp; the issue "One model of TensorRT"): each
// finding's EngineClaims against the engine the report shows (real, else predicted), the findings' advice against
// each other, and the prediction against its own reasons.
#pragma once

#include "qdq/analysis.h"

namespace qdq
{

//! Tests every claim of the report's findings and its prediction; the contradictions found, in words.
ConsistencyCheck checkConsistency(const Report& report, const Inputs& inputs);

//! The prediction's part alone (for `predict`, which has no findings): attention verdicts against their reasons, each
//! Q/DQ node's fate against the layer that runs it. Adds to check.
void checkPredictionConsistency(const Prediction& prediction, ConsistencyCheck& check);

} // namespace qdq
