#include "qdq/engine_plan.h"

#include "qdq/myelin_regions.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <ostream>
#include <string_view>
#include <unordered_set>

namespace qdq
{

const std::string& SharedText::emptyString()
{
    static const std::string kEmpty;
    return kEmpty;
}

std::ostream& operator<<(std::ostream& out, const SharedText& text)
{
    return out << text.str();
}

namespace
{
// Calls visit(group, name) for each "[ONNX Layer: NAME]" of Metadata text, group counting the U+001E-separated
// groups. Items within a group are separated by U+001F. A NAME may itself hold ']', so each item ends at the last ']'
// before the next "[ONNX Layer: " (or the end of its item).
template <class Visit>
void forEachMetadataNode(std::string_view text, Visit&& visit)
{
    static constexpr std::string_view kPrefix = "[ONNX Layer: ";
    std::size_t group = 0;
    std::size_t itemStart = 0;
    while (itemStart <= text.size())
    {
        // A plain loop: find_first_of with a two-byte set calls memchr once per character.
        std::size_t itemEnd = itemStart;
        while (itemEnd < text.size() && text[itemEnd] != '\x1e' && text[itemEnd] != '\x1f')
        {
            ++itemEnd;
        }
        std::string_view item = text.substr(itemStart, itemEnd - itemStart);
        std::size_t at = item.find(kPrefix);
        while (at != std::string_view::npos)
        {
            std::size_t start = at + kPrefix.size();
            std::size_t nextAt = item.find(kPrefix, start);
            std::string_view region =
                item.substr(start, (nextAt == std::string_view::npos ? item.size() : nextAt) - start);
            std::size_t close = region.rfind(']');
            std::string_view name = close == std::string_view::npos ? region : region.substr(0, close);
            if (!name.empty())
            {
                visit(group, name);
            }
            at = nextAt;
        }
        if (itemEnd < text.size() && text[itemEnd] == '\x1e')
        {
            ++group;
        }
        itemStart = itemEnd + 1;
    }
}
} // namespace

void EngineLayer::findProfileSuffix()
{
    static constexpr std::string_view kMarker = " [profile ";
    std::string_view fullName = name;
    profileSuffixAt = std::string::npos;
    optimizationProfile = 0;
    if (fullName.empty() || fullName.back() != ']')
    {
        return;
    }
    std::size_t at = fullName.rfind(kMarker);
    if (at == std::string_view::npos)
    {
        return;
    }
    std::string_view digits = fullName.substr(at + kMarker.size(), fullName.size() - 1 - at - kMarker.size());
    int profile = 0;
    auto result = std::from_chars(digits.data(), digits.data() + digits.size(), profile);
    if (digits.empty() || result.ec != std::errc() || result.ptr != digits.data() + digits.size() || profile < 0)
    {
        return;
    }
    profileSuffixAt = at;
    optimizationProfile = profile;
}

std::vector<MetadataGroup> EngineLayer::metadataGroups() const
{
    std::vector<MetadataGroup> groups;
    std::size_t current = static_cast<std::size_t>(-1);
    forEachMetadataNode(metadata,
                        [&](std::size_t group, std::string_view node)
                        {
                            if (groups.empty() || group != current)
                            {
                                groups.emplace_back();
                                current = group;
                            }
                            groups.back().onnxNodes.emplace_back(node);
                        });
    return groups;
}

std::vector<std::string> EngineLayer::metadataOnnxNodes() const
{
    const std::vector<std::string_view> names = metadataOnnxNodeViews();
    return std::vector<std::string>(names.begin(), names.end());
}

std::vector<std::string_view> EngineLayer::metadataOnnxNodeViews() const
{
    std::vector<std::string_view> names;       // views into metadata
    std::unordered_set<std::string_view> seen; // only for long lists: a linear search is cheaper for a few names
    forEachMetadataNode(metadata,
                        [&](std::size_t, std::string_view node)
                        {
                            if (names.size() < 16)
                            {
                                if (std::find(names.begin(), names.end(), node) == names.end())
                                {
                                    names.push_back(node);
                                }
                                return;
                            }
                            if (seen.empty())
                            {
                                seen.insert(names.begin(), names.end());
                            }
                            if (seen.insert(node).second)
                            {
                                names.push_back(node);
                            }
                        });
    return names;
}

TensorIndex::TensorIndex(const std::vector<EngineLayer>& layers) : mLayerCount(layers.size())
{
    const auto nameOf = [this](std::uint32_t id) { return mNames[id]; };
    std::vector<std::size_t> lastReader; // by tensor: the last layer recorded as reading it
    const auto intern = [&](std::string_view name)
    {
        const std::uint32_t id = mIndex.insert(name, static_cast<std::uint32_t>(mNames.size()), nameOf);
        if (id == mNames.size())
        {
            mNames.push_back(name);
            mProducer.push_back(std::string::npos);
            lastReader.push_back(std::string::npos);
        }
        return id;
    };
    std::vector<std::pair<std::uint32_t, std::size_t>> reads; // (tensor, layer) in layer order, a layer once
    for (std::size_t i = 0; i < layers.size(); ++i)
    {
        for (const auto& output : layers[i].outputs)
        {
            std::size_t& producer = mProducer[intern(output.name)];
            if (producer == std::string::npos)
            {
                producer = i; // the first writer, as a linear search would find
            }
        }
        for (const auto& input : layers[i].inputs)
        {
            const std::uint32_t id = intern(input.name);
            if (lastReader[id] != i)
            {
                lastReader[id] = i;
                reads.emplace_back(id, i);
            }
        }
    }
    // Consumers grouped by tensor, in layer order: count, prefix sums, fill.
    mStart.assign(mNames.size() + 1, 0);
    for (const auto& [id, layer] : reads)
    {
        ++mStart[id + 1];
    }
    for (std::size_t id = 0; id < mNames.size(); ++id)
    {
        mStart[id + 1] += mStart[id];
    }
    std::vector<std::uint32_t> fill(mStart.begin(), mStart.end() - 1);
    mConsumers.resize(reads.size());
    for (const auto& [id, layer] : reads)
    {
        mConsumers[fill[id]++] = layer;
    }
}

std::uint32_t TensorIndex::idOf(std::string_view tensor) const
{
    return mIndex.find(tensor, [this](std::uint32_t id) { return mNames[id]; });
}

std::optional<std::size_t> TensorIndex::producer(std::string_view tensor) const
{
    const std::uint32_t id = idOf(tensor);
    if (id == NameIndex::kNone || mProducer[id] == std::string::npos)
    {
        return std::nullopt;
    }
    return mProducer[id];
}

std::span<const std::size_t> TensorIndex::consumers(std::string_view tensor) const
{
    const std::uint32_t id = idOf(tensor);
    if (id == NameIndex::kNone)
    {
        return {};
    }
    return std::span<const std::size_t>(mConsumers).subspan(mStart[id], mStart[id + 1] - mStart[id]);
}

std::pair<std::string_view, std::uint64_t> EnginePlan::factSource(std::size_t layer, LayerFact fact) const
{
    if (layer >= layers.size())
    {
        return {sourcePath, 0};
    }
    const EngineLayer& entry = layers[layer];
    if (mergedFrom.empty() || entry.factSources.empty())
    {
        return {sourcePath, entry.line};
    }
    const FactSource* record = nullptr;
    for (const FactSource& source : entry.factSources)
    {
        if (source.file >= mergedFrom.size())
        {
            continue;
        }
        if (source.fact == fact)
        {
            return {mergedFrom[source.file], source.line};
        }
        if (source.fact == LayerFact::kRecord)
        {
            record = &source;
        }
    }
    if (record != nullptr)
    {
        return {mergedFrom[record->file], record->line};
    }
    return {sourcePath, entry.line};
}

const TensorIndex& EnginePlan::tensorIndex() const
{
    if (!mTensorIndex.index || mTensorIndex.index->layerCount() != layers.size())
    {
        mTensorIndex.index = std::make_unique<TensorIndex>(layers);
    }
    return *mTensorIndex.index;
}

namespace
{
//! N of a " [profile N]" inside a Myelin kernel name (`node_conv2d [profile 1]_myl1_2`), else 0.
int profileInsideName(std::string_view name)
{
    static constexpr std::string_view kMarker = " [profile ";
    const std::size_t at = name.find(kMarker);
    if (at == std::string_view::npos)
    {
        return 0;
    }
    const std::size_t start = at + kMarker.size();
    const std::size_t close = name.find(']', start);
    int profile = 0;
    if (close == std::string_view::npos || close + 4 >= name.size() || name.substr(close + 1, 4) != "_myl")
    {
        return 0;
    }
    auto result = std::from_chars(name.data() + start, name.data() + close, profile);
    return result.ec == std::errc() && result.ptr == name.data() + close && profile > 0 ? profile : 0;
}
} // namespace

int EnginePlan::optimizationProfiles() const
{
    int highest = -1;
    for (const EngineLayer& layer : layers)
    {
        highest = std::max(highest, layer.optimizationProfile);
    }
    return highest == std::numeric_limits<int>::max() ? highest : highest + 1;
}

void EnginePlan::assignOptimizationProfiles()
{
    std::unordered_map<std::string_view, int> graphProfile;
    for (EngineLayer& layer : layers)
    {
        if (layer.optimizationProfile == 0)
        {
            layer.optimizationProfile = profileInsideName(layer.name);
        }
        if (layer.optimizationProfile > 0)
        {
            if (const std::string_view graph = myelinGraphOf(layer.baseName()); !graph.empty())
            {
                int& profile = graphProfile[graph];
                profile = std::max(profile, layer.optimizationProfile);
            }
        }
    }
    if (graphProfile.empty())
    {
        return;
    }
    for (EngineLayer& layer : layers)
    {
        if (layer.optimizationProfile == 0)
        {
            if (auto found = graphProfile.find(myelinGraphOf(layer.baseName())); found != graphProfile.end())
            {
                layer.optimizationProfile = found->second;
            }
        }
    }
}

} // namespace qdq
