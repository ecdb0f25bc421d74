// The HTML report's stylesheet and script (src/reporters/html/), embedded at build time by cmake/embed_text.cmake.
#pragma once

#include <string_view>

namespace qdq::html
{

std::string_view reportCss();
std::string_view reportJs();

} // namespace qdq::html
