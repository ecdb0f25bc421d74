// The HTML report of `diagnose` and `diff` (docs/html-report.md): one self-contained file, its CSS, JavaScript and
// pictures inline, that loads nothing from the network. The data is one JSON blob the page's script renders: summary
// and charts, findings with their pictures, the engine graph (pan, zoom, search), the layer table; for `diff` the
// regions side by side. Deterministic: the same report gives the same bytes.
#pragma once

#include "qdq/analysis.h"
#include "qdq/diff.h"

#include <cstddef>
#include <string>
#include <vector>

namespace qdq
{

//! Pictures drawn by Graphviz that the page shows inline (SVG text, as graph::renderDot writes it).
struct HtmlPictures
{
    //! One entry per finding, in report order; "" for a finding without a picture. May be shorter than the findings.
    std::vector<std::string> findings;
};

//! The most finding pictures drawn (as `diagnose -o` draws finding-NN-*.svg) and the most bytes of pictures the page
//! carries; the pictures past either limit are left out, and the page says so.
constexpr std::size_t kHtmlMaxFindingPictures = 100;
constexpr std::size_t kHtmlMaxPictureBytes = 3u << 20;

//! The picture of one finding (graph::buildFindingGraph, rendered to SVG); "" when it names nothing drawable or
//! Graphviz fails.
std::string findingPictureSvg(const Inputs& inputs, const Report& report, const Finding& finding);

//! Draws the pictures of the first kHtmlMaxFindingPictures findings.
HtmlPictures drawFindingPictures(const Inputs& inputs, const Report& report);

//! The report of one diagnosis. Without an engine layer list the graph and the table show the layers predicted from
//! the model (qdq-doctor predict).
std::string renderReportHtml(const Report& report, const Inputs& inputs, const HtmlPictures& pictures,
                             const std::string& toolVersion);

//! The report of a diff: totals, the regions side by side with their deltas and findings, and the diff picture
//! (diffSvg, "" for none).
std::string renderDiffHtml(const DiffReport& report, const Inputs& baseline, const Inputs& candidate,
                           const std::string& diffSvg, const std::string& toolVersion);

//! Text made safe inside HTML text and attribute values: & < > " ' as character references.
std::string htmlEscape(std::string_view text);

//! SVG text made fit to sit inline in an HTML page: the XML declaration, DOCTYPE and comments before <svg> dropped,
//! and id attributes renamed data-id (several pictures in one page would repeat Graphviz's node1, edge1 ...).
std::string inlineSvg(std::string_view svg);

} // namespace qdq
