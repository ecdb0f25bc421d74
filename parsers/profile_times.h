// The times a layer profile may hold (trtexec --exportProfile JSON, --dumpProfile tables in a log): finite, not
// negative, and below a bound no profile reaches. NaN, Infinity, negative and absurd times (1e308) are input errors,
// never summed into a saving or an engine time. Internal to parsers/.
#pragma once

#include <string>

namespace qdq
{

//! The largest time a profile entry may hold, in ms: 10^9 ms is 11.6 days. trtexec's profile times are totals over
//! the profiling iterations (a few seconds by default, trtexec --duration), so any real one is far below this; the
//! bound itself is this project's choice, not a TensorRT figure.
constexpr double kMostProfileMs = 1e9;

//! Why ms is not a time a profile can hold ("is not a number", "is infinite", "is negative", "is beyond 1e9 ms"), or
//! empty when it is one.
std::string profileTimeProblem(double ms);

} // namespace qdq
