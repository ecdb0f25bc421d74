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

struct TextReportOptions
{
    std::size_t width = 100;
    //! Every finding in full (message, each evidence's text, fix) and how each saving is estimated; the default
    //! gives a symptom of a listed cause, and an info finding with nothing to do, one line.
    bool details = false;
};
std::string renderReportText(const Report& report, const Inputs& inputs, const TextReportOptions& options);

} // namespace qdq
