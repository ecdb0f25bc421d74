// The lines of TensorRT 10.x and 11.x build logs that tell how the engine was built, verbose or not: the typing
// (trtexec's command line, options block and warnings), the compiler backend, Myelin's regions and kernels, the
// backend strategies of optimization levels that try several, and the build summary. The build-log reader hands
// each logger line to readBuildFactLine.
#pragma once

#include "qdq/build_log.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace qdq
{

//! What readBuildFactLine keeps between lines.
struct BuildFactState
{
    bool inMyelinTable = false;
    //! The summary of the build whose backend strategy was kept ("Use backend strategy N ..." follows that build):
    //! put back when a later strategy's build is not kept, so that the summary describes the engine the log lists.
    std::optional<BuildSummary> keptBuild;
};

//! Reads one logger message (prefix stripped) into log when it is one of the lines above; false otherwise.
bool readBuildFactLine(std::string_view message, std::uint64_t lineNo, BuildLog& log, BuildFactState& state);

//! A `=== Build Options ===` entry that tells the typing: 10.x trtexec prints `Precision: Strongly Typed` for a
//! --stronglyTyped build.
void readOptionTyping(std::string_view key, std::string_view value, std::uint64_t lineNo, BuildLog& log);

//! The trtexec command line's typing (with or without --stronglyTyped), put first among the evidence. Called once the
//! whole log is read; commandLineLine is the line it came from (0 when unknown).
void readCommandLineTyping(std::uint64_t commandLineLine, BuildLog& log);

} // namespace qdq
