// The counterfactual of one engine layer once the model is fixed (docs/savings.md).
//
// No TensorRT runs here, so a fixed layer's time is read from the engine itself, in order of trust:
// 1. a layer the fix removes (a standalone Quantize/Dequantize, a reformat, a pooling that joins its conv in a
//    ConvActPool layer) saves its measured time;
// 2. a layer whose float activations become INT8 (or FP32 ones FP16) takes the measured time of a layer of the same
//    type, parameters and tensor shapes that already runs in that precision in the same engine;
// 3. without such a layer, it saves the bytes its activations stop moving, at the speed the engine's own
//    memory-bound layers (its Quantize/Dequantize and reformat layers, which copy their input) move bytes.
// A saving never exceeds the layer's own time. Checked against the paired real A100 builds of ResNet-18
// (trex-pt-resnet-a100-qat -> -qat-residual -> -qat-residual-qgap in ../shared/realdata; tests/test_savings.cpp).

#include "src/advice/savings.h"

#include "qdq/patterns.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace qdq::advice
{

namespace
{

std::optional<double> elementBytes(Precision precision)
{
    switch (precision)
    {
    case Precision::kFP32:
    case Precision::kINT32:
        return 4.0;
    case Precision::kFP16:
    case Precision::kBF16:
        return 2.0;
    case Precision::kINT8:
    case Precision::kUINT8:
    case Precision::kFP8:
    case Precision::kBool:
        return 1.0;
    case Precision::kINT4:
    case Precision::kFP4:
        return 0.5;
    case Precision::kINT64:
        return 8.0;
    case Precision::kUnknown:
        break;
    }
    return std::nullopt;
}

//! Elements of a tensor as stored: a vectorized format ("Thirty-two wide channel vectorized") pads the channels
//! (dimension 1) to a multiple of the vector width.
std::optional<double> storedElements(const EngineTensor& tensor)
{
    if (tensor.dimensions.empty())
    {
        return std::nullopt;
    }
    double elements = 1.0;
    for (std::size_t d = 0; d < tensor.dimensions.size(); ++d)
    {
        std::int64_t extent = tensor.dimensions[d];
        if (extent < 0)
        {
            return std::nullopt; // a dynamic dimension
        }
        if (d == 1 && tensor.vectorWidth > 1)
        {
            extent = (extent + tensor.vectorWidth - 1) / tensor.vectorWidth * tensor.vectorWidth;
        }
        elements *= static_cast<double>(extent);
    }
    return elements;
}

std::optional<double> tensorBytes(const EngineTensor& tensor, Precision precision)
{
    auto elements = storedElements(tensor);
    auto size = elementBytes(precision);
    if (!elements || !size)
    {
        return std::nullopt;
    }
    return *elements * *size;
}

//! The precision a tensor takes under the change: INT8 for float activations when quantized, FP16 for FP32 ones
//! when halved; other tensors keep theirs.
Precision changedPrecision(Precision precision, LayerChange change)
{
    if (change == LayerChange::kQuantized && isFloat(precision))
    {
        return Precision::kINT8;
    }
    if (change == LayerChange::kHalved && precision == Precision::kFP32)
    {
        return Precision::kFP16;
    }
    return precision;
}

bool inTargetPrecision(const EngineLayer& layer, LayerChange change)
{
    auto fits = [&](const EngineTensor& tensor) {
        return tensor.precision != Precision::kUnknown &&
               changedPrecision(tensor.precision, change) == tensor.precision;
    };
    return std::all_of(layer.inputs.begin(), layer.inputs.end(), fits) &&
           std::all_of(layer.outputs.begin(), layer.outputs.end(), fits);
}

//! The layer-info keys that decide what a kernel computes (a 1x1 and a 3x3 conv of the same shapes differ).
constexpr std::array<std::string_view, 9> kShapeKeys = {"Kernel",  "Stride",     "Dilation",    "Groups",    "OutMaps",
                                                        "Padding", "PrePadding", "PostPadding", "WindowSize"};

std::string_view fieldValue(const EngineLayer& layer, std::string_view key)
{
    for (const auto& [name, value] : layer.otherFields)
    {
        if (name == key)
        {
            return value;
        }
    }
    return {};
}

void appendDims(std::string& key, const std::vector<EngineTensor>& tensors)
{
    for (const auto& tensor : tensors)
    {
        key += '[';
        for (std::int64_t extent : tensor.dimensions)
        {
            key += std::to_string(extent);
            key += ',';
        }
        key += ']';
    }
    key += '|';
}

//! What a peer must share with the layer: type, parameters and tensor shapes; empty when the layer has no type or a
//! tensor without a shape (no peer can be told apart then).
std::string peerSignature(const EngineLayer& layer)
{
    auto unshaped = [](const EngineTensor& tensor) { return tensor.dimensions.empty(); };
    if (layer.type.empty() || std::any_of(layer.inputs.begin(), layer.inputs.end(), unshaped) ||
        std::any_of(layer.outputs.begin(), layer.outputs.end(), unshaped))
    {
        return {};
    }
    std::string key = layer.type + '|' + layer.parameterType + '|' + layer.activation + '|';
    appendDims(key, layer.inputs);
    appendDims(key, layer.outputs);
    for (std::string_view shapeKey : kShapeKeys)
    {
        key += fieldValue(layer, shapeKey);
        key += '|';
    }
    return key;
}

} // namespace

MemorySpeed fitMemorySpeed(const EnginePlan& plan, const Correlation& correlation)
{
    std::vector<std::pair<double, double>> points; // (bytes, ms)
    for (const auto& mapping : correlation.layers)
    {
        if ((mapping.state != LayerState::kInsertedQdq && mapping.state != LayerState::kInsertedReformat) ||
            !mapping.timeMs || *mapping.timeMs <= 0.0 || mapping.layer >= plan.layers.size())
        {
            continue;
        }
        const EngineLayer& layer = plan.layers[mapping.layer];
        if (layer.type == "NoOp")
        {
            continue;
        }
        if (auto bytes = SavingEstimator::activationBytes(layer); bytes && *bytes > 0.0)
        {
            points.emplace_back(*bytes, *mapping.timeMs);
        }
    }
    MemorySpeed speed;
    if (points.empty())
    {
        return speed;
    }
    double sumX = 0.0, sumY = 0.0;
    for (const auto& [x, y] : points)
    {
        sumX += x;
        sumY += y;
    }
    const double n = static_cast<double>(points.size());
    const double meanX = sumX / n, meanY = sumY / n;
    double covariance = 0.0, variance = 0.0;
    for (const auto& [x, y] : points)
    {
        covariance += (x - meanX) * (y - meanY);
        variance += (x - meanX) * (x - meanX);
    }
    speed.layers = points.size();
    // A line through the points separates the launch overhead from the per-byte cost; with fewer than 3 points or
    // no positive slope, the average cost per byte (overhead included, so it errs towards larger savings) stands in.
    if (points.size() >= 3 && variance > 0.0 && covariance > 0.0)
    {
        speed.msPerByte = covariance / variance;
        speed.overheadMs = std::max(0.0, meanY - speed.msPerByte * meanX);
    }
    else
    {
        speed.msPerByte = sumY / sumX;
    }
    return speed;
}

SavingEstimator::SavingEstimator(const EnginePlan& plan, const Correlation& correlation)
    : mPlan(plan), mCorrelation(correlation), mSpeed(fitMemorySpeed(plan, correlation))
{
}

std::optional<double> SavingEstimator::activationBytes(const EngineLayer& layer)
{
    double total = 0.0;
    for (const auto* tensors : {&layer.inputs, &layer.outputs})
    {
        for (const auto& tensor : *tensors)
        {
            auto bytes = tensorBytes(tensor, tensor.precision);
            if (!bytes)
            {
                return std::nullopt;
            }
            total += *bytes;
        }
    }
    if (layer.inputs.empty() && layer.outputs.empty())
    {
        return std::nullopt;
    }
    return total;
}

const SavingEstimator::PeerIndex& SavingEstimator::peerIndex(LayerChange change) const
{
    std::optional<PeerIndex>& index = change == LayerChange::kHalved ? mHalvedPeers : mQuantizedPeers;
    if (index)
    {
        return *index;
    }
    index.emplace();
    for (const auto& mapping : mCorrelation.layers)
    {
        if (mapping.state != LayerState::kMapped || !mapping.timeMs || mapping.layer >= mPlan.layers.size())
        {
            continue;
        }
        const EngineLayer& layer = mPlan.layers[mapping.layer];
        if (!inTargetPrecision(layer, change))
        {
            continue;
        }
        if (std::string key = peerSignature(layer); !key.empty())
        {
            (*index)[key].emplace_back(*mapping.timeMs, mapping.layer);
        }
    }
    for (auto& [key, peers] : *index)
    {
        std::sort(peers.begin(), peers.end());
    }
    return *index;
}

std::optional<std::size_t> SavingEstimator::findPeer(std::size_t index, LayerChange change) const
{
    const std::string key = peerSignature(mPlan.layers[index]);
    if (key.empty())
    {
        return std::nullopt;
    }
    const PeerIndex& peers = peerIndex(change);
    auto found = peers.find(key);
    if (found == peers.end())
    {
        return std::nullopt;
    }
    // The median peer: one unusually fast or slow kernel does not decide the estimate. The layer itself is not in
    // the index (it is not in the target precision yet).
    const auto& candidates = found->second;
    return candidates[(candidates.size() - 1) / 2].second;
}

//! Whether an FP32 layer's saving under FP16 is better judged from its time than from its tensors' bytes: a Myelin
//! layer (LayerType Myelin, or named {ForeignNode[...]}) that writes FP32.
bool halvesByTime(const EngineLayer& layer)
{
    const bool myelin = layer.type == "Myelin" || layer.name.rfind("{ForeignNode[", 0) == 0;
    return myelin && std::any_of(layer.outputs.begin(), layer.outputs.end(),
                                 [](const EngineTensor& tensor) { return tensor.precision == Precision::kFP32; });
}

LayerSaving SavingEstimator::estimate(std::size_t index, LayerChange change) const
{
    LayerSaving saving;
    if (change == LayerChange::kNothing)
    {
        saving.ms = 0.0;
        saving.basis = LayerSaving::Basis::kNothingToDo;
        saving.confidence = SavingConfidence::kHigh;
        return saving;
    }
    if (change == LayerChange::kKept || index >= mCorrelation.layers.size() || index >= mPlan.layers.size() ||
        !mCorrelation.layers[index].timeMs)
    {
        return saving;
    }
    const double time = *mCorrelation.layers[index].timeMs;
    if (change == LayerChange::kRemoved)
    {
        saving.ms = time;
        saving.basis = LayerSaving::Basis::kRemovedMeasured;
        saving.confidence = SavingConfidence::kHigh;
        return saving;
    }
    const EngineLayer& layer = mPlan.layers[index];
    {
        if (auto peer = findPeer(index, change))
        {
            saving.ms = std::max(0.0, time - mCorrelation.layers[*peer].timeMs.value_or(time));
            saving.basis = LayerSaving::Basis::kPeerLayer;
            saving.peer = *peer;
            saving.confidence = SavingConfidence::kMedium;
            return saving;
        }
    }
    if (change == LayerChange::kHalved && halvesByTime(layer))
    {
        // A Myelin layer's tensors are its region's inputs and outputs only: the traffic between its kernels, most
        // of what an element-wise region moves, is not in the layer list. FP16 halves every tensor's bytes, so a
        // memory-bound region's time about halves: a rough figure (low confidence), not an upper bound, since
        // compute-bound kernels may gain more on tensor cores or less.
        saving.ms = time / 2.0;
        saving.basis = LayerSaving::Basis::kHalvedTime;
        saving.confidence = SavingConfidence::kLow;
        return saving;
    }
    if (!mSpeed.valid())
    {
        return saving;
    }
    double savedBytes = 0.0;
    for (const auto* tensors : {&layer.inputs, &layer.outputs})
    {
        for (const auto& tensor : *tensors)
        {
            auto now = tensorBytes(tensor, tensor.precision);
            auto after = tensorBytes(tensor, changedPrecision(tensor.precision, change));
            if (!now || !after)
            {
                return saving;
            }
            savedBytes += *now - *after;
        }
    }
    saving.ms = std::min(time, std::max(0.0, savedBytes) * mSpeed.msPerByte);
    saving.basis = LayerSaving::Basis::kBytes;
    saving.confidence = SavingConfidence::kLow;
    return saving;
}

} // namespace qdq::advice
