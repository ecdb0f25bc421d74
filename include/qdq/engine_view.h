// The engine a finding speaks of: the real one when the report has one (the correlation of its layer list), else the
// predicted one (the simulator's plan, src/simulation). A rule that says what TensorRT does (fuses two nodes, runs a
// Q/DQ as its own layer, runs a node in float) asks here instead of deciding from its own pattern, and the report's
// consistency check (src/advice/consistency.cpp) asks the same questions of every finding's claims, so no finding
// contradicts the engine the report shows (the issue "One model of TensorRT").
#pragma once

#include "qdq/analysis.h"
#include "qdq/patterns.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>

namespace qdq
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

    //! Whether some layer of the report's engine runs node (a node TensorRT removed, folded or never built runs in
    //! none).
    bool inEngine(std::string_view node) const
    {
        return predicted() ? predictedLayerOf(node) != nullptr
                           : !patterns::layersOf(mContext, std::string(node)).empty();
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
            if (!mFatesIndexed)
            {
                for (const auto& fate : mContext.prediction.qdq)
                {
                    mFateOfNode.emplace(fate.node, &fate);
                }
                mFatesIndexed = true;
            }
            const auto it = mFateOfNode.find(qdqNode);
            return it != mFateOfNode.end() && it->second->fate == PredictedQdq::Fate::kStandalone;
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

    //! Whether the report's engine runs node's arithmetic quantized. A layer that writes INT8/FP8/INT4/FP4 computes
    //! in that type; a layer that only reads it does so for a node with an accumulator (a Conv, MatMul or Gemm with
    //! a quantized input runs an integer kernel and writes float from its accumulator), while a PointWise layer that
    //! reads INT8 and writes float dequantizes on load and adds, multiplies or activates in float (the fused
    //! DequantizeLinear, reference section 1.8). A MatMul a predicted Myelin region runs on DequantizeLinear outputs
    //! counts as quantized. Without a graph, only the output type decides. A node in no layer runs quantized in none.
    bool runsQuantized(std::string_view node) const
    {
        const OnnxGraph* graph = mContext.graph();
        const OnnxNode* onnxNode = graph != nullptr ? graph->findNode(node) : nullptr;
        const bool weighted = onnxNode != nullptr && accumulates(onnxNode->opType);
        if (!predicted())
        {
            const EnginePlan& plan = *mContext.engine();
            for (std::size_t layer : patterns::layersOf(mContext, std::string(node)))
            {
                const EngineLayer& record = plan.layers[layer];
                if ((!record.outputs.empty() && isQuantized(patterns::outputPrecision(record))) ||
                    (weighted && !record.inputs.empty() && isQuantized(patterns::inputPrecision(record))))
                {
                    return true;
                }
            }
            return false;
        }
        const auto& myelin = mContext.prediction.myelinQuantizedMatMuls;
        if (std::find(myelin.begin(), myelin.end(), node) != myelin.end())
        {
            return true;
        }
        const PredictedLayer* layer = predictedLayerOf(node);
        return layer != nullptr && layer->kind != "Myelin" && (layer->int8Output || (weighted && layer->int8Input));
    }

private:
    //! The ops TensorRT runs as an integer (or FP8) kernel with a float accumulator: with a quantized input they
    //! compute quantized whatever type they write.
    static bool accumulates(std::string_view opType)
    {
        return opType == "Conv" || opType == "ConvTranspose" || opType == "Gemm" || opType == "MatMul";
    }

    const Context& mContext;
    mutable bool mIndexed = false;
    mutable std::unordered_map<std::string_view, const PredictedLayer*> mLayerOfNode;
    mutable bool mFatesIndexed = false;
    mutable std::unordered_map<std::string_view, const PredictedQdq*> mFateOfNode;
};

} // namespace qdq
