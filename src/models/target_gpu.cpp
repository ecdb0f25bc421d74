// The GPU a build targets: from --gpu, the build log's device lines, or the engine's kernel names.
//
// Sources: trtexec prints "=== Device Information ===" with "Selected Device: <name>" and "Compute Capability: X.Y"
// (../shared/realdata/cookbook-mnist-trt10141/result-02.log: NVIDIA RTX 6000 Ada Generation, 8.9). TensorRT's kernel
// names start with the architecture they were compiled for (sm80_xmma_..., sm90_xmma_... in
// ../shared/realdata/trex-pt-resnet-a100-qat and ivit-simple-mlp-qdq-trt10-myelin; cutlass3x_sm100_... in
// lix-engine-analysis-dmt-fp16): such a kernel runs on that architecture and later ones, so the name bounds the GPU
// from below only (the A100 engines list sm80 kernels; the RTX 6000 Ada (8.9) log of cookbook-mnist-trt10141 lists
// sm50 to sm80 kernels, none sm89). Compute capabilities of the named products: NVIDIA's "CUDA GPUs - Compute
// Capability" page (developer.nvidia.com/cuda-gpus).
#include "qdq/target_gpu.h"
#include "qdq/analysis.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace qdq
{

namespace
{

struct KnownGpu
{
    const char* name; //!< upper case, without "NVIDIA " and spaces
    int major;
    int minor;
};

// Longest names first where one name starts another ("RTX6000ADA" before "RTX6000"; "H100" is unambiguous).
constexpr KnownGpu kKnownGpus[] = {
    {"GB200", 10, 0},   {"B200", 10, 0},   {"B100", 10, 0},   {"RTXPRO6000", 12, 0}, {"RTX5090", 12, 0},
    {"RTX5080", 12, 0}, {"GH200", 9, 0},   {"H200", 9, 0},    {"H100", 9, 0},        {"H20", 9, 0},
    {"L40S", 8, 9},     {"L40", 8, 9},     {"L4", 8, 9},      {"RTX6000ADA", 8, 9},  {"RTX4090", 8, 9},
    {"RTX4080", 8, 9},  {"RTX4070", 8, 9}, {"A100", 8, 0},    {"A30", 8, 0},         {"A40", 8, 6},
    {"A10G", 8, 6},     {"A10", 8, 6},     {"A6000", 8, 6},   {"RTX3090", 8, 6},     {"RTX3080", 8, 6},
    {"ORIN", 8, 7},     {"XAVIER", 7, 2},  {"T4", 7, 5},      {"RTX2080", 7, 5},     {"V100", 7, 0},
    {"P100", 6, 0},     {"GTX1080", 6, 1}, {"GTX1070", 6, 1},
};

std::string squeezeUpper(std::string_view text)
{
    std::string result;
    for (char c : text)
    {
        if (std::isalnum(static_cast<unsigned char>(c)))
        {
            result += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
    }
    if (result.rfind("NVIDIA", 0) == 0)
    {
        result.erase(0, 6);
    }
    if (result.rfind("GEFORCE", 0) == 0)
    {
        result.erase(0, 7);
    }
    if (result.rfind("JETSON", 0) == 0)
    {
        result.erase(0, 6);
    }
    if (result.rfind("TESLA", 0) == 0)
    {
        result.erase(0, 5);
    }
    if (result.rfind("AGX", 0) == 0)
    {
        result.erase(0, 3);
    }
    return result;
}

//! "89" -> 8.9, "90" -> 9.0, "100" -> 10.0, "120" -> 12.0; false for anything else.
bool splitDigits(std::string_view digits, int& major, int& minor)
{
    if (digits.size() < 2 || digits.size() > 3 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    {
        return false;
    }
    major = std::atoi(std::string(digits.substr(0, digits.size() - 1)).c_str());
    minor = digits.back() - '0';
    return major >= 3;
}

//! "8.9" -> 8.9; false for anything else.
bool splitDotted(std::string_view text, int& major, int& minor)
{
    const auto dot = text.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 >= text.size())
    {
        return false;
    }
    const std::string_view left = text.substr(0, dot);
    const std::string_view right = text.substr(dot + 1);
    const auto digits = [](std::string_view part) {
        return std::all_of(part.begin(), part.end(),
                           [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    };
    if (!digits(left) || !digits(right) || left.size() > 2 || right.size() > 1)
    {
        return false;
    }
    major = std::atoi(std::string(left).c_str());
    minor = std::atoi(std::string(right).c_str());
    return major >= 3;
}

bool fromProductName(std::string_view text, TargetGpu& gpu)
{
    const std::string squeezed = squeezeUpper(text);
    for (const KnownGpu& known : kKnownGpus)
    {
        if (squeezed.rfind(known.name, 0) == 0)
        {
            gpu.ccMajor = known.major;
            gpu.ccMinor = known.minor;
            return true;
        }
    }
    return false;
}

//! The architecture an engine kernel name was compiled for: a token "smNN" (or "smNNa") followed by '_' at the start
//! of the name or after '_' ("sm90_xmma_gemm_...", "cutlass3x_sm100_tensorop_..."), the highest if several. False
//! when the name has none.
bool kernelArchitecture(std::string_view kernel, int& major, int& minor)
{
    bool found = false;
    for (std::size_t at = kernel.find("sm"); at != std::string_view::npos; at = kernel.find("sm", at + 2))
    {
        if (at != 0 && kernel[at - 1] != '_')
        {
            continue;
        }
        std::size_t end = at + 2;
        while (end < kernel.size() && std::isdigit(static_cast<unsigned char>(kernel[end])))
        {
            ++end;
        }
        const std::string_view digits = kernel.substr(at + 2, end - at - 2);
        if (end < kernel.size() && std::isalpha(static_cast<unsigned char>(kernel[end])))
        {
            ++end; // sm90a_
        }
        int tokenMajor = 0;
        int tokenMinor = 0;
        if (end < kernel.size() && kernel[end] == '_' && splitDigits(digits, tokenMajor, tokenMinor) &&
            (!found || tokenMajor > major || (tokenMajor == major && tokenMinor > minor)))
        {
            major = tokenMajor;
            minor = tokenMinor;
            found = true;
        }
    }
    return found;
}

std::optional<TargetGpu> gpuFromLog(const BuildLog& log)
{
    TargetGpu gpu;
    std::string capability;
    for (const auto& [key, value] : log.deviceInfo)
    {
        if (key == "Selected Device")
        {
            gpu.name = value;
        }
        else if (key == "Compute Capability")
        {
            capability = value;
        }
    }
    if (!splitDotted(capability, gpu.ccMajor, gpu.ccMinor) && !(!gpu.name.empty() && fromProductName(gpu.name, gpu)))
    {
        return std::nullopt;
    }
    gpu.source = log.sourcePath + " (Device Information: " +
                 (capability.empty() ? "Selected Device " + gpu.name : "Compute Capability " + capability) + ")";
    return gpu;
}

std::optional<TargetGpu> gpuFromKernelNames(const Inputs& inputs)
{
    const EnginePlan* plan = inputs.engine();
    if (plan == nullptr)
    {
        return std::nullopt;
    }
    TargetGpu best;
    for (const EngineLayer& layer : plan->layers)
    {
        int major = 0;
        int minor = 0;
        if (kernelArchitecture(layer.tacticName, major, minor) &&
            (major > best.ccMajor || (major == best.ccMajor && minor > best.ccMinor)))
        {
            best.ccMajor = major;
            best.ccMinor = minor;
            best.source = plan->sourcePath + " (TacticName " + printable(layer.tacticName, 96) + " of layer '" +
                          printable(layer.name, 128) + "')";
        }
    }
    if (!best.known())
    {
        return std::nullopt;
    }
    best.lowerBound = true;
    return best;
}

std::string capabilityText(const TargetGpu& gpu)
{
    return std::to_string(gpu.ccMajor) + "." + std::to_string(gpu.ccMinor);
}

} // namespace

std::string TargetGpu::describe() const
{
    const std::string capability =
        "compute capability " + capabilityText(*this) + (lowerBound ? " or later" : std::string());
    if (name.empty()) // kernel names tell no product name
    {
        return capability + " (from " + source + ")";
    }
    return name + " (" + capability + ", from " + source + ")";
}

TargetGpu parseGpuOption(const std::string& text)
{
    TargetGpu gpu;
    gpu.name = printable(text, 64);
    gpu.source = "--gpu";
    std::string lower;
    for (char c : text)
    {
        if (c != '_' && c != ' ')
        {
            lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    std::string_view digits = lower;
    if (digits.rfind("sm", 0) == 0)
    {
        digits.remove_prefix(2);
        if (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back())))
        {
            digits.remove_suffix(1); // sm90a
        }
    }
    if (splitDotted(digits, gpu.ccMajor, gpu.ccMinor) || splitDigits(digits, gpu.ccMajor, gpu.ccMinor) ||
        fromProductName(text, gpu))
    {
        return gpu;
    }
    throw InputError(SourceLocation{"--gpu"},
                     "'" + printable(text, 64) +
                         "' names no GPU qdq-doctor knows: give the compute capability (sm89, sm_90, 8.9) or a "
                         "product name such as A100, L4, H100, B200, RTX 4090, Orin");
}

std::optional<TargetGpu> gpuFromInputs(const Inputs& inputs)
{
    if (inputs.buildLog)
    {
        if (auto gpu = gpuFromLog(*inputs.buildLog))
        {
            return gpu;
        }
    }
    return gpuFromKernelNames(inputs);
}

std::optional<TargetGpu> resolveTargetGpu(const Inputs& inputs, const std::string& gpuOption)
{
    std::optional<TargetGpu> told = gpuFromInputs(inputs);
    if (gpuOption.empty())
    {
        return told;
    }
    TargetGpu requested = parseGpuOption(gpuOption);
    if (told)
    {
        const bool contradicts = told->lowerBound
                                     ? !requested.atLeast(told->ccMajor, told->ccMinor)
                                     : requested.ccMajor != told->ccMajor || requested.ccMinor != told->ccMinor;
        if (contradicts)
        {
            throw InputError(SourceLocation{"--gpu"}, "--gpu " + printable(gpuOption, 64) + " (compute capability " +
                                                          capabilityText(requested) + ") contradicts " +
                                                          told->describe());
        }
    }
    return requested;
}

} // namespace qdq
