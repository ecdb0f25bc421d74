// Constant folding: what TensorRT computes at build time, and the ops that vanish at parse time.

#include "src/simulation/op_classes.h"
#include "src/simulation/passes.h"

#include "qdq/patterns.h"

namespace qdq::simulation
{

using namespace patterns;

namespace
{

//! Ops that need no layer: they vanish at parse or build time.
bool isEliminatedOp(std::string_view op)
{
    return isOneOfOps(op, {"Identity", "Dropout", "Constant"});
}

} // namespace

//! Constant folding: a node whose inputs are all constant, or Shape/Size, runs at build time, and Identity/Dropout
//! vanish.
void foldConstants(SimulationState& s)
{
    s.constant.assign(s.graph.tensors.names.size(), false);
    for (std::size_t id = 0; id < s.constant.size(); ++id)
    {
        s.constant[id] = id < s.graph.tensors.constant.size() && s.graph.tensors.constant[id] != kNone;
    }
    for (std::uint32_t node : s.order)
    {
        const OnnxNode& n = s.graph.nodes[node];
        bool allConstant = true;
        bool anyInput = false;
        for (std::uint32_t input : s.graph.inputIds(node))
        {
            if (input == kNone)
            {
                continue;
            }
            anyInput = true;
            allConstant = allConstant && s.constant[input];
        }
        // Shape and Size give build-time values (patterns::readsShapeOnly): what only computes on them (Gather,
        // Cast, Unsqueeze, Concat of the dims, Swin's and ShuffleNet's Reshape shapes and Slice starts) folds too.
        const bool constantNode =
            n.opType == "Constant" || readsShapeOnly(n.opType) || (anyInput && allConstant && !n.isCustomDomain());
        if (constantNode)
        {
            for (std::uint32_t output : s.graph.outputIds(node))
            {
                if (output != kNone)
                {
                    s.constant[output] = true;
                }
            }
            if (!isQdq(n))
            {
                s.folded[node] = true;
            }
        }
        else if (isEliminatedOp(n.opType))
        {
            s.folded[node] = true;
        }
    }
}

} // namespace qdq::simulation
