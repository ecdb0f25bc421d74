// Root causes and savings (src/advice, docs/savings.md): groups the findings of a report under the causes that one
// change to the model fixes, gives every engine layer's time to one root cause, estimates what fixing each saves,
// and orders the findings by it.
#pragma once

#include "qdq/analysis.h"

#include <optional>
#include <string>
#include <vector>

namespace qdq
{

//! Fills report.causes and each finding's savingMs, savingBasis, rootCause and symptom, and reorders
//! report.findings by root cause. The savings of a report add up to at most the engine's time.
void attributeRootCauses(Report& report, const Inputs& inputs);

//! One of the layers that take the most time: what it is and which root cause owns it.
struct LayerTimeShare
{
    std::size_t layer = 0;
    double ms = 0.0;
    std::string kind;                 //!< layerKind: convolution, pooling, myelin, quantize/dequantize, ...
    std::string precision;            //!< layerPrecisionLabel
    std::optional<std::size_t> cause; //!< index in Report::causes, unset when no finding names the layer
};

//! Where the time goes: the `count` layers with the largest measured time, largest first (ties in engine order).
//! Empty without a profile.
std::vector<LayerTimeShare> largestLayers(const Report& report, const Inputs& inputs, std::size_t count);

//! Pairs of findings whose edits contradict each other (two scales for one Q/DQ node or one inserted pair, a pair
//! one finding removes and another rescales), each in words; empty when the report's advice is one plan.
std::vector<std::string> adviceConflicts(const Report& report, const Inputs& inputs);

} // namespace qdq
