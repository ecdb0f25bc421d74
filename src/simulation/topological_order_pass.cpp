// The first layer pass: the nodes in topological order, graph order kept where the graph is sorted.

#include "src/simulation/passes.h"

namespace qdq::simulation
{

void topologicalOrder(SimulationState& s)
{
    const std::size_t count = s.graph.nodes.size();
    std::vector<std::uint32_t> pending(count, 0);
    for (std::size_t i = 0; i < count; ++i)
    {
        for (std::uint32_t input : s.graph.inputIds(i))
        {
            const OnnxNode* producer = input == kNone ? nullptr : s.graph.producerOf(input);
            if (producer != nullptr && producer->index != i)
            {
                ++pending[i];
            }
        }
    }
    s.order.clear();
    s.order.reserve(count);
    std::vector<std::uint32_t> ready;
    for (std::size_t i = count; i-- > 0;)
    {
        if (pending[i] == 0)
        {
            ready.push_back(static_cast<std::uint32_t>(i));
        }
    }
    // Nodes become ready in graph order where the graph is sorted: a stack fed in reverse keeps that order.
    std::vector<std::uint32_t> released;
    while (!ready.empty())
    {
        std::uint32_t node = ready.back();
        ready.pop_back();
        s.order.push_back(node);
        released.clear();
        for (std::uint32_t output : s.graph.outputIds(node))
        {
            if (output == kNone)
            {
                continue;
            }
            for (std::uint32_t consumer : s.graph.consumersOf(output))
            {
                if (consumer != node && pending[consumer] > 0)
                {
                    // A consumer reading two outputs of this node counts each input once.
                    for (std::uint32_t input : s.graph.inputIds(consumer))
                    {
                        if (input == output && pending[consumer] > 0)
                        {
                            if (--pending[consumer] == 0)
                            {
                                released.push_back(consumer);
                            }
                        }
                    }
                }
            }
        }
        std::sort(released.rbegin(), released.rend());
        ready.insert(ready.end(), released.begin(), released.end());
    }
    s.position.assign(count, kNone);
    for (std::size_t i = 0; i < s.order.size(); ++i)
    {
        s.position[s.order[i]] = static_cast<std::uint32_t>(i);
    }
    // Nodes on a cycle are never ready; they keep graph order at the end.
    for (std::size_t i = 0; i < count; ++i)
    {
        if (s.position[i] == kNone)
        {
            s.position[i] = static_cast<std::uint32_t>(s.order.size());
            s.order.push_back(static_cast<std::uint32_t>(i));
        }
    }
}

} // namespace qdq::simulation
