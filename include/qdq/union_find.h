// Disjoint sets over 0..count-1, for grouping things that are joined pairwise (diff regions, collapsed graph chains,
// Concats sharing Q/DQ nodes, overlapping scale groups). A set's root is its smallest member, so results do not depend
// on the order of the joins.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace qdq
{

class UnionFind
{
public:
    explicit UnionFind(std::size_t count) : mParent(count), mSize(count, 1)
    {
        std::iota(mParent.begin(), mParent.end(), 0);
    }

    std::size_t find(std::size_t x)
    {
        while (mParent[x] != x)
        {
            mParent[x] = mParent[mParent[x]];
            x = mParent[x];
        }
        return x;
    }

    //! Joins the sets of a and b.
    void unite(std::size_t a, std::size_t b) { uniteUpTo(a, b, mParent.size()); }

    //! Joins the sets of a and b unless the joined set would have more than maxSize members.
    void uniteUpTo(std::size_t a, std::size_t b, std::size_t maxSize)
    {
        a = find(a);
        b = find(b);
        if (a != b && mSize[a] + mSize[b] <= maxSize)
        {
            const std::size_t root = std::min(a, b);
            const std::size_t other = std::max(a, b);
            mParent[other] = root;
            mSize[root] += mSize[other];
        }
    }

private:
    std::vector<std::size_t> mParent;
    std::vector<std::size_t> mSize;
};

} // namespace qdq
