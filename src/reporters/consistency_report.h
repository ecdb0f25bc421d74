// The consistency check's result (include/qdq/consistency.h) as the reports show it: one JSON member and one text
// line (plus one line a contradiction).
#pragma once

#include "qdq/analysis.h"
#include "src/reporters/json_writer.h"

#include <string>

namespace qdq
{

//! "consistency": {"claims_checked", "engine", "contradictions": [{"kind", "findings", "message"}]}; findings are
//! 1-based, as the text numbers them.
void writeConsistencyJson(JsonWriter& json, const ConsistencyCheck& check, bool predictionOnly);

//! "Consistency: 12 claims checked against the predicted engine, no contradiction." and one line a contradiction.
std::string consistencyText(const ConsistencyCheck& check, bool predictionOnly);

} // namespace qdq
