#include "parsers/profile_times.h"

#include <cmath>

namespace qdq
{

std::string profileTimeProblem(double ms)
{
    if (std::isnan(ms))
    {
        return "is not a number (NaN)";
    }
    if (std::isinf(ms))
    {
        return "is infinite";
    }
    if (ms < 0.0)
    {
        return "is negative";
    }
    if (ms > kMostProfileMs)
    {
        return "is beyond 1e9 ms (11.6 days), more than any profile holds";
    }
    return {};
}

} // namespace qdq
