// SARIF 2.1.0 output of `diagnose` (docs/sarif.md): what code-scanning services read. One rule per slug, one result
// per finding, located in the artifact files the finding rests on.
#pragma once

#include "qdq/analysis.h"

#include <string>

namespace qdq
{

//! The SARIF log of one diagnosis: one run whose tool is qdq-doctor (toolVersion), every registered rule (id = slug,
//! helpUri = docs/rules/<slug>.md), the input files as artifacts, a result per finding (level from the severity,
//! the model's nodes as logical locations, evidence lines as regions) and the report's notes as notifications.
//! Deterministic: the same report gives the same bytes.
std::string renderReportSarif(const Report& report, const Inputs& inputs, const std::string& toolVersion);

} // namespace qdq
