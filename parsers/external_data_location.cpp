#include "parsers/external_data_location.h"

#include <algorithm>
#include <system_error>

namespace qdq
{

namespace fs = std::filesystem;

ResolvedExternalLocation resolveExternalDataLocation(const fs::path& modelFolder, const std::string& location)
{
    ResolvedExternalLocation result;
    if (location.empty())
    {
        result.refused = "is empty";
        return result;
    }
    if (location.front() == '/' || location.front() == '\\' || fs::path(location).is_absolute())
    {
        result.refused = "is an absolute path";
        return result;
    }
    // Both separators count: a Windows exporter's "..\\weights.bin" leaves the folder just as "../weights.bin" does.
    for (std::size_t start = 0; start <= location.size();)
    {
        std::size_t end = location.find_first_of("/\\", start);
        if (end == std::string::npos)
        {
            end = location.size();
        }
        if (end - start == 2 && location.compare(start, 2, "..") == 0)
        {
            result.refused = "contains a '..' component";
            return result;
        }
        start = end + 1;
    }
    std::error_code error;
    const fs::path folder = fs::weakly_canonical(fs::absolute(modelFolder, error), error);
    if (!error)
    {
        result.resolved = fs::weakly_canonical(fs::absolute(modelFolder / location, error), error);
    }
    if (error)
    {
        result.resolved.clear();
        result.unresolvable = true;
        return result;
    }
    const auto mismatch = std::mismatch(folder.begin(), folder.end(), result.resolved.begin(), result.resolved.end());
    if (mismatch.first != folder.end())
    {
        result.refused = "resolves outside the model's folder (through a symbolic link)";
        result.resolved.clear();
    }
    return result;
}

} // namespace qdq
