// What a fix saves, layer by layer: the counterfactual of one engine layer once the model is fixed (docs/savings.md).
// Internal to src/advice.
#pragma once

#include "qdq/analysis.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qdq::advice
{

//! What a root cause's fix does to one layer it owns.
enum class LayerChange
{
    kRemoved,   //!< the layer disappears (a standalone Q/DQ, a reformat, a pooling that fuses into its conv)
    kQuantized, //!< the layer's float activations become INT8 (a conv that writes INT8, a residual read in INT8)
    kHalved,    //!< the layer's FP32 activations become FP16 (a float island under --fp16 or an FP16 graph)
    kKept,      //!< nothing the fix changes in this layer is known: no saving counted
    kNothing,   //!< the finding asks for no change (an info finding, the Quantize of a float network input)
};

//! One layer's expected saving and where the number comes from.
struct LayerSaving
{
    std::optional<double> ms; //!< unset: not estimated
    SavingConfidence confidence = SavingConfidence::kNone;
    enum class Basis
    {
        kNone,
        kRemovedMeasured, //!< the layer's own measured time
        kPeerLayer,       //!< the measured time of a same-shape layer in the target precision
        kBytes,           //!< the bytes it stops moving, at the engine's memory speed
        kHalvedTime,      //!< half its measured time: an FP32 region whose inner traffic the layer list hides
        kNothingToDo,
    } basis = Basis::kNone;
    std::size_t peer = 0; //!< with kPeerLayer: the peer's layer index
};

//! The engine's memory speed, fitted on its own memory-bound layers (standalone Q/DQ and reformats): time =
//! overheadMs + bytes x msPerByte.
struct MemorySpeed
{
    double msPerByte = 0.0;
    double overheadMs = 0.0;
    std::size_t layers = 0; //!< how many layers the fit used; 0 = no fit
    bool valid() const { return layers > 0 && msPerByte > 0.0; }
    double gigabytesPerSecond() const { return valid() ? 1e-6 / msPerByte : 0.0; }
};

//! Estimates layer savings on one engine: the fit and the peer look-ups are made once.
class SavingEstimator
{
public:
    SavingEstimator(const EnginePlan& plan, const Correlation& correlation);

    LayerSaving estimate(std::size_t layer, LayerChange change) const;
    const MemorySpeed& memorySpeed() const { return mSpeed; }

    //! Bytes the layer's activation tensors hold (vectorized channels padded), or unset when a shape or type is not
    //! known.
    static std::optional<double> activationBytes(const EngineLayer& layer);

private:
    //! A layer of the same type, parameters and tensor shapes whose tensors are all in the precision the change
    //! gives, with a measured time.
    std::optional<std::size_t> findPeer(std::size_t layer, LayerChange change) const;

    //! The layers that already run in the target precision, by shape signature, with their times sorted: built on
    //! the first look-up, so that a 100,000-layer engine is scanned once, not once per estimated layer.
    using PeerIndex = std::unordered_map<std::string, std::vector<std::pair<double, std::size_t>>>;
    const PeerIndex& peerIndex(LayerChange change) const;

    const EnginePlan& mPlan;
    const Correlation& mCorrelation;
    MemorySpeed mSpeed;
    mutable std::optional<PeerIndex> mQuantizedPeers;
    mutable std::optional<PeerIndex> mHalvedPeers;
};

//! Layers that are memory-bound by construction: a Quantize/Dequantize or a reformat copies its input to its output.
MemorySpeed fitMemorySpeed(const EnginePlan& plan, const Correlation& correlation);

} // namespace qdq::advice
