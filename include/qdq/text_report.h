// The text report at a chosen width (renderReportText in analysis.h writes 100 columns).
#pragma once

#include "qdq/analysis.h"

#include <cstddef>
#include <string>

namespace qdq
{

//! The text report, its lines wrapped to `width` columns and long layer names shortened after their first mention
//! (docs/terms.md explains its words). renderReportText(report, inputs) is this at 100 columns, the width of
//! report.txt and of a report written to a pipe.
std::string renderReportText(const Report& report, const Inputs& inputs, std::size_t width);

} // namespace qdq
