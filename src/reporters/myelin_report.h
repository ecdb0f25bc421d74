// The Myelin regions of an engine (include/qdq/myelin_regions.h) in the text and JSON reports.
#pragma once

#include "qdq/myelin_regions.h"
#include "src/reporters/json_writer.h"

#include <ostream>

namespace qdq
{

//! "Myelin regions: N" and one line per region (the first 20); nothing when the engine has none.
void writeMyelinRegionsText(std::ostream& out, const std::vector<MyelinRegion>& regions, const EnginePlan& plan);
//! "myelin_regions": one object per region with its kernels (layer names), ONNX nodes, GEMMs and precision.
void writeMyelinRegionsJson(JsonWriter& json, const std::vector<MyelinRegion>& regions, const EnginePlan& plan);

} // namespace qdq
