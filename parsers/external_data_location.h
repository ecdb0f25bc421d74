// Where an ONNX external data location leads, under the one rule that the ONNX reader and the model writer both
// apply: only files inside the model's own folder are opened. A location that is absolute, has a '..' component, or
// resolves outside the folder through a symbolic link is refused (ONNX's own loader refuses the first two as well).
// Internal to parsers/ and src/.
#pragma once

#include <filesystem>
#include <string>

namespace qdq
{

struct ResolvedExternalLocation
{
    //! Why the location is not followed ("is an absolute path", "contains a '..' component", "resolves outside the
    //! model's folder (through a symbolic link)"); empty when it is followed.
    std::string refused;
    //! The file the location names, inside the model's folder (set when not refused; it may not exist).
    std::filesystem::path resolved;
    //! The path could not be resolved at all (a file system error): neither refused nor resolved.
    bool unresolvable = false;
};

//! Resolves a non-empty, NUL-free external data location against modelFolder (the folder of the model file, "." for
//! a bare file name).
ResolvedExternalLocation resolveExternalDataLocation(const std::filesystem::path& modelFolder,
                                                     const std::string& location);

} // namespace qdq
