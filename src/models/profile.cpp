#include "qdq/profile.h"

namespace qdq
{

double Profile::totalAverageMs() const
{
    double total = 0.0;
    for (const ProfileEntry& entry : entries)
    {
        total += entry.averageMs;
    }
    return total;
}

} // namespace qdq
