// Root causes and savings (src/advice, docs/savings.md): groups the findings of a report under the causes that one
// change to the model fixes, gives every engine layer's time to one root cause, estimates what fixing each saves,
// and orders the findings by it.
#pragma once

#include "qdq/analysis.h"

namespace qdq
{

//! Fills report.causes and each finding's savingMs, savingBasis, rootCause and symptom, and reorders
//! report.findings by root cause. The savings of a report add up to at most the engine's time.
void attributeRootCauses(Report& report, const Inputs& inputs);

} // namespace qdq
