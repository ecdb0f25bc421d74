// Where a TensorRT 11 layer structure depends on the GPU (src/simulation/gpu_dependent_structure.h).
#include "src/simulation/gpu_dependent_structure.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace qdq::simulation
{
namespace
{

bool hasCnnOps(const OnnxGraph& graph)
{
    static constexpr std::array<std::string_view, 4> kOps = {"Conv", "ConvTranspose", "MaxPool", "AveragePool"};
    return std::any_of(graph.nodes.begin(), graph.nodes.end(),
                       [](const OnnxNode& node)
                       { return std::find(kOps.begin(), kOps.end(), node.opType) != kOps.end(); });
}

//! What the build's GPU suggests, as far as the two real builds go.
std::string forTheGpu(const Prediction& prediction)
{
    if (!prediction.options.gpu || !prediction.options.gpu->known())
    {
        return " The build's GPU is not known (--gpu names it).";
    }
    const TargetGpu& gpu = *prediction.options.gpu;
    const std::string cc = std::to_string(gpu.ccMajor) + "." + std::to_string(gpu.ccMinor);
    if (gpu.ccMajor >= 10)
    {
        return " The build's GPU (compute capability " + cc +
               ") is a Blackwell like the B200: expect the single Myelin graph rather than the layers listed here "
               "(a guess).";
    }
    if (gpu.ccMajor == 9)
    {
        return " The build's GPU (compute capability " + cc +
               ") is a Hopper like the H100: the layers listed here "
               "follow that build (a guess).";
    }
    return " The build's GPU (compute capability " + cc +
           ") is neither of the two: no TensorRT 11 build on it is in the data (a guess either way).";
}

} // namespace

std::string gpuDependentStructureNote(const Prediction& prediction, const OnnxGraph& graph)
{
    if (prediction.options.trtMajor < 11 || !hasCnnOps(graph))
    {
        return {};
    }
    return "guess: on TensorRT 11 the layer structure of a convolutional network depends on the GPU. The TensorRT "
           "Cookbook's MNIST CNN (2 Conv+Relu, 2 MaxPool, 2 Gemm), built with the same trtexec command, became one "
           "Myelin graph on a B200 with 11.0 (its convolutions Myelin `correlation` kernels, its pooling `maxpool` "
           "kernels: wili-65535/trt-samples-for-hackathon-cn@6373fd2 "
           "cookbook/07-Tool/trtexec/model-trained-exportLayerInfo.log), and Cask convolution and pooling layers "
           "followed by one Myelin graph for the Gemm tail on an H100 with 11.1 (same file @9bbf180). The two builds "
           "differ in GPU and in TensorRT minor version at once, so which of the two decides is not known; the "
           "layers predicted here follow the H100 form." +
           forTheGpu(prediction);
}

} // namespace qdq::simulation
