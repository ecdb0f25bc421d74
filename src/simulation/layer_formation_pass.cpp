// Layer formation: every node that is not a Q/DQ, folded or already in a Myelin region becomes part of a layer.

#include "src/simulation/layer_formation.h"
#include "src/simulation/op_classes.h"
#include "src/simulation/passes.h"

#include "qdq/patterns.h"

namespace qdq::simulation
{

using namespace patterns;

namespace
{

void buildFrom(SimulationState& s, const OnnxNode& node)
{
    if (isWeighted(s.graph, node))
    {
        buildWeighted(s, node);
    }
    else if (isShuffleOp(node.opType))
    {
        buildShuffle(s, node);
    }
    else if (node.opType == "Concat")
    {
        buildConcat(s, node);
    }
    else if (s.myelin.makesRegions() && s.myelin.seedsLater(node) && s.myelin.eligible(node))
    {
        buildMyelin(s, node);
    }
    else if (isPointwiseOp(node.opType))
    {
        buildPointwise(s, node);
    }
    else
    {
        buildSingle(s, node);
    }
}

} // namespace

void seedMyelinRegions(SimulationState& s)
{
    // Myelin regions first: they take the shuffles and pointwise ops around their seeds before those become
    // layers of their own. A region cut for convexity leaves its rest to a later seed or to ordinary layers.
    s.myelin.prepare(s.transformer ? std::move(*s.transformer)
                                   : TransformerParts{findAttentionBlocks(s.graph), hasLayerNormOrGelu(s.graph)});
    if (!s.myelin.makesRegions())
    {
        return;
    }
    for (std::uint32_t node : s.order)
    {
        const OnnxNode& n = s.graph.nodes[node];
        if (s.myelin.seedsFirstPass(n))
        {
            buildMyelin(s, n);
        }
    }
}

void formLayers(SimulationState& s)
{
    // A zero Pad read only by a convolution waits for it: the conv's layer takes it (Padding + Convolution).
    std::vector<std::uint32_t> deferredPads;
    for (std::uint32_t node : s.order)
    {
        const OnnxNode& n = s.graph.nodes[node];
        if (s.layerOf[node] != kNone || s.folded[node] || isQdq(n))
        {
            continue;
        }
        if (s.foldsIntoConv(n))
        {
            deferredPads.push_back(node);
            continue;
        }
        buildFrom(s, n);
    }
    for (std::uint32_t node : deferredPads)
    {
        if (s.layerOf[node] == kNone) // its conv went another way (a Myelin region)
        {
            buildSingle(s, s.graph.nodes[node]);
        }
    }
}

} // namespace qdq::simulation
