// An open-addressing hash index from names to dense ids. It stores only (hash, id) pairs: the names stay where the
// caller keeps them and are read through a nameOf(id) function, so an index and its names can be copied together
// without dangling pointers. One probe usually touches one slot and one name, where a std::unordered_map of strings
// touches a bucket, a node and a separately allocated key: on graphs with 500,000 nodes that difference is most of
// the cost of linking the graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace qdq
{

class NameIndex
{
public:
    static constexpr std::uint32_t kNone = 0xFFFFFFFFu;

    //! Room for count names without growing.
    void reserve(std::size_t count)
    {
        std::size_t wanted = 16;
        while (wanted < 2 * count)
        {
            wanted *= 2;
        }
        if (wanted > mSlots.size())
        {
            rehash(wanted);
        }
    }

    //! The id stored under name, or kNone.
    template <class NameOf>
    std::uint32_t find(std::string_view name, NameOf&& nameOf) const
    {
        return findHashed(name, hashOf(name), nameOf);
    }

    //! find() for a name whose hashOf() the caller has already computed.
    template <class NameOf>
    std::uint32_t findHashed(std::string_view name, std::uint32_t hash, NameOf&& nameOf) const
    {
        if (mSlots.empty())
        {
            return kNone;
        }
        const std::size_t mask = mSlots.size() - 1;
        for (std::size_t slot = hash & mask;; slot = (slot + 1) & mask)
        {
            const std::uint64_t entry = mSlots[slot];
            if (entry == 0)
            {
                return kNone;
            }
            if (static_cast<std::uint32_t>(entry >> 32) == hash)
            {
                const std::uint32_t id = static_cast<std::uint32_t>(entry) - 1;
                if (std::string_view(nameOf(id)) == name)
                {
                    return id;
                }
            }
        }
    }

    //! Stores id under name unless name is already there; returns the id now stored under name.
    template <class NameOf>
    std::uint32_t insert(std::string_view name, std::uint32_t id, NameOf&& nameOf)
    {
        return insertHashed(name, hashOf(name), id, nameOf);
    }

    //! insert() for a name whose hashOf() the caller has already computed.
    template <class NameOf>
    std::uint32_t insertHashed(std::string_view name, std::uint32_t hash, std::uint32_t id, NameOf&& nameOf)
    {
        if (2 * (mCount + 1) > mSlots.size())
        {
            rehash(mSlots.empty() ? 16 : 2 * mSlots.size());
        }
        const std::size_t mask = mSlots.size() - 1;
        for (std::size_t slot = hash & mask;; slot = (slot + 1) & mask)
        {
            const std::uint64_t entry = mSlots[slot];
            if (entry == 0)
            {
                mSlots[slot] = pack(hash, id);
                ++mCount;
                return id;
            }
            if (static_cast<std::uint32_t>(entry >> 32) == hash)
            {
                const std::uint32_t existing = static_cast<std::uint32_t>(entry) - 1;
                if (std::string_view(nameOf(existing)) == name)
                {
                    return existing;
                }
            }
        }
    }

    std::size_t size() const { return mCount; }

    //! The 32-bit hash the index stores for name.
    static std::uint32_t hashOf(std::string_view name)
    {
        const std::size_t full = std::hash<std::string_view>{}(name);
        return static_cast<std::uint32_t>(full ^ (full >> 32));
    }

private:
    static std::uint64_t pack(std::uint32_t hash, std::uint32_t id)
    {
        return (static_cast<std::uint64_t>(hash) << 32) | (static_cast<std::uint64_t>(id) + 1);
    }

    // Stored hashes make the names unnecessary when growing.
    void rehash(std::size_t slots)
    {
        std::vector<std::uint64_t> old;
        old.swap(mSlots);
        mSlots.assign(slots, 0);
        const std::size_t mask = slots - 1;
        for (std::uint64_t entry : old)
        {
            if (entry == 0)
            {
                continue;
            }
            std::size_t slot = static_cast<std::uint32_t>(entry >> 32) & mask;
            while (mSlots[slot] != 0)
            {
                slot = (slot + 1) & mask;
            }
            mSlots[slot] = entry;
        }
    }

    std::vector<std::uint64_t> mSlots; //!< (hash << 32) | (id + 1); 0 marks an empty slot
    std::size_t mCount = 0;
};

} // namespace qdq
