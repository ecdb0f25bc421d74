// The engine a finding speaks of: the real one when the report has one (the correlation of its layer list), else the
// predicted one (the simulator's plan, src/simulation). A rule that says what TensorRT does (fuses two nodes, runs a
// Q/DQ as its own layer) asks here instead of deciding from its own pattern, so it never contradicts the engine the
// report shows (the issue "One model of TensorRT").
#pragma once

#include "qdq/analysis.h"
#include "qdq/patterns.h"

#include <string>

#include <string_view>
#include <unordered_map>

namespace qdq::rules
{

class EngineView
{
public:
    explicit EngineView(const Context& context) : mContext(context) {}

    //! Whether the report's engine is the predicted one (no layer list given).
    bool predicted() const { return mContext.engine() == nullptr; }

    //! Whether nodes a and b run in one layer of the report's engine. Unknown nodes run in no layer.
    bool sameLayer(std::string_view a, std::string_view b) const
    {
        if (!predicted())
        {
            for (std::size_t layer : patterns::layersOf(mContext, std::string(a)))
            {
                for (const auto& node : mContext.correlation.layers[layer].onnxNodes)
                {
                    if (node == b)
                    {
                        return true;
                    }
                }
            }
            return false;
        }
        const PredictedLayer* layer = predictedLayerOf(a);
        return layer != nullptr && layer == predictedLayerOf(b);
    }

    //! The predicted layer that runs node, or nullptr. The node -> layer index is built on the first question (one
    //! pass over the plan), so a rule with no candidate pays nothing.
    const PredictedLayer* predictedLayerOf(std::string_view node) const
    {
        if (!mIndexed)
        {
            for (const auto& layer : mContext.prediction.layers)
            {
                for (const auto& name : layer.onnxNodes)
                {
                    mLayerOfNode.emplace(name, &layer);
                }
            }
            mIndexed = true;
        }
        const auto it = mLayerOfNode.find(node);
        return it == mLayerOfNode.end() ? nullptr : it->second;
    }

    //! Whether the report's engine runs the Q/DQ node as a layer of its own (a standalone Quantize/Dequantize).
    //! Predicted: its fate is standalone; real: the correlation's Q/DQ state says so.
    bool runsStandalone(std::string_view qdqNode) const
    {
        if (predicted())
        {
            const PredictedQdq* fate = mContext.prediction.find(qdqNode);
            return fate != nullptr && fate->fate == PredictedQdq::Fate::kStandalone;
        }
        for (std::size_t layer : patterns::layersOf(mContext, std::string(qdqNode)))
        {
            if (mContext.correlation.layers[layer].state == LayerState::kInsertedQdq)
            {
                return true;
            }
        }
        return false;
    }

private:
    const Context& mContext;
    mutable bool mIndexed = false;
    mutable std::unordered_map<std::string_view, const PredictedLayer*> mLayerOfNode;
};

} // namespace qdq::rules
