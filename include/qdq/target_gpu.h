// The GPU a build targets: from --gpu, the build log's device lines, or (a lower bound) the engine's kernel names.
// Sources in src/models/target_gpu.cpp.
#pragma once

#include <optional>
#include <string>

namespace qdq
{

struct Inputs;

//! The GPU a build targets, as far as the inputs or the command line tell.
struct TargetGpu
{
    int ccMajor = 0; //!< compute capability; 0 when unknown
    int ccMinor = 0;
    std::string name;   //!< "NVIDIA H100 80GB HBM3", "H100", "sm89": as told
    std::string source; //!< "build.log:12 (Compute Capability: 8.9)", "--gpu", "layers.json (TacticName sm90_...)"
    //! Only a lower bound: kernel names such as sm90_xmma_... run on that architecture and later ones.
    bool lowerBound = false;

    bool known() const { return ccMajor > 0; }
    bool atLeast(int major, int minor) const { return ccMajor > major || (ccMajor == major && ccMinor >= minor); }
    std::string describe() const; //!< "NVIDIA A100 (compute capability 8.0, from build.log:7)"
};

//! The GPU the --gpu option names: "sm89", "sm_90", "8.9", "90", or a product name qdq-doctor knows ("H100", "A100",
//! "L4", "RTX 4090", "B200", "Orin", ...). Throws InputError naming --gpu for anything else.
TargetGpu parseGpuOption(const std::string& text);

//! The GPU the inputs tell: the build log's device lines, else the highest smNN_ in the engine's kernel names (a
//! lower bound). Unset when neither tells.
std::optional<TargetGpu> gpuFromInputs(const Inputs& inputs);

//! The GPU for a command: --gpu when given (an input error when a build log's device contradicts it), else the
//! inputs'. Unset when nothing tells.
std::optional<TargetGpu> resolveTargetGpu(const Inputs& inputs, const std::string& gpuOption);

} // namespace qdq
