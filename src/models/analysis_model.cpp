#include "qdq/analysis.h"

#include <cstdlib>

namespace qdq
{

const EnginePlan* Inputs::engine() const
{
    if (mergedEngine)
    {
        return &*mergedEngine;
    }
    if (layerInfo && !layerInfo->layers.empty())
    {
        return &*layerInfo;
    }
    if (buildLog && buildLog->hasEngineBlock)
    {
        return &buildLog->engine;
    }
    if (layerInfo)
    {
        return &*layerInfo;
    }
    if (planFromProfile)
    {
        return &*planFromProfile;
    }
    return nullptr;
}

void Inputs::deriveMissingPlan()
{
    planFromProfile.reset();
    const Profile* times = timings();
    if (engine() != nullptr || times == nullptr)
    {
        return;
    }
    EnginePlan plan;
    plan.sourcePath = times->sourcePath;
    plan.form = LayerListForm::kNamesOnly;
    for (const auto& entry : times->entries)
    {
        EngineLayer layer;
        layer.setName(entry.name);
        layer.line = entry.line;
        plan.layers.push_back(std::move(layer));
    }
    planFromProfile = std::move(plan);
}

const Profile* Inputs::timings() const
{
    if (profile)
    {
        return &*profile;
    }
    if (buildLog && buildLog->hasProfileTable)
    {
        return &buildLog->profile;
    }
    return nullptr;
}

std::string Inputs::trtVersion() const
{
    if (buildLog && buildLog->trtVersion)
    {
        return *buildLog->trtVersion;
    }
    for (const auto& source : sources)
    {
        if (source.trtVersion)
        {
            return *source.trtVersion;
        }
    }
    // The 11.x-only forms of a layer list tell the major alone (../shared/realdata/FORMATS-trt11.md J1, J7, T1, T3).
    for (const EnginePlan* plan : {layerInfo ? &*layerInfo : nullptr, buildLog ? &buildLog->engine : nullptr})
    {
        if (plan != nullptr && plan->writer.trtMajor != 0)
        {
            return std::to_string(plan->writer.trtMajor);
        }
    }
    return {};
}

int Inputs::trtMajor() const
{
    std::string version = trtVersion();
    return version.empty() ? 0 : std::atoi(version.c_str());
}

std::string_view layerStateName(LayerState state)
{
    switch (state)
    {
    case LayerState::kMapped:
        return "mapped";
    case LayerState::kInsertedQdq:
        return "inserted_qdq";
    case LayerState::kInsertedReformat:
        return "inserted_reformat";
    case LayerState::kDropped:
        return "dropped";
    case LayerState::kUnattributed:
        break;
    }
    return "unattributed";
}

std::string_view qdqStateName(QdqState state)
{
    switch (state)
    {
    case QdqState::kFused:
        return "fused";
    case QdqState::kStandalone:
        return "standalone";
    case QdqState::kFolded:
        return "folded";
    case QdqState::kEliminated:
        return "eliminated";
    case QdqState::kUnknown:
        break;
    }
    return "unknown";
}

std::string_view mappingEvidenceName(MappingEvidence evidence)
{
    switch (evidence)
    {
    case MappingEvidence::kMetadata:
        return "metadata";
    case MappingEvidence::kBuildLog:
        return "build-log";
    case MappingEvidence::kNameGrammar:
        return "name-grammar";
    case MappingEvidence::kTensorNames:
        return "tensor-names";
    case MappingEvidence::kNameOnly:
        return "layer-name-only";
    case MappingEvidence::kNone:
        break;
    }
    return "none";
}

std::string_view severityName(Severity severity)
{
    switch (severity)
    {
    case Severity::kInfo:
        return "info";
    case Severity::kWarning:
        return "warning";
    case Severity::kError:
        return "error";
    }
    return "warning";
}

std::uint32_t NodeLayerIndex::idOf(std::string_view node) const
{
    if (mGraph != nullptr)
    {
        return mGraph->nodeIndex(node);
    }
    return mIndex.find(node, [this](std::uint32_t id) -> const std::string& { return mNames[id]; });
}

std::span<const std::size_t> NodeLayerIndex::find(const std::string& node) const
{
    return layersOf(mGraph != nullptr ? mGraph->nodeIndex(node) : idOf(node));
}

void NodeLayerIndex::add(std::string_view node, std::size_t layer)
{
    if (mGraph != nullptr)
    {
        const std::uint32_t id = mGraph->nodeIndex(node);
        if (id != OnnxGraph::kNone)
        {
            mPending.emplace_back(id, layer);
        }
        return;
    }
    const auto id = mIndex.insert(node, static_cast<std::uint32_t>(mNames.size()),
                                  [this](std::uint32_t known) -> const std::string& { return mNames[known]; });
    if (id == mNames.size())
    {
        mNames.emplace_back(node);
    }
    mPending.emplace_back(id, layer);
}

void NodeLayerIndex::finish()
{
    // A counting sort by id: stable, so each node's layers keep the order they were added in.
    const std::size_t ids = mGraph != nullptr ? mGraph->nodes.size() : mNames.size();
    mStart.assign(ids + 1, 0);
    for (const auto& [id, layer] : mPending)
    {
        ++mStart[id + 1];
    }
    for (std::size_t i = 0; i < ids; ++i)
    {
        mStart[i + 1] += mStart[i];
    }
    mLayers.assign(mPending.size(), 0);
    std::vector<std::uint32_t> fill(mStart.begin(), mStart.end() - 1);
    for (const auto& [id, layer] : mPending)
    {
        mLayers[fill[id]++] = layer;
    }
    std::vector<std::pair<std::uint32_t, std::size_t>>().swap(mPending);
}

Correlation::LayerTotals Correlation::layerTotals() const
{
    LayerTotals totals;
    totals.total = layers.size();
    for (const auto& layer : layers)
    {
        switch (layer.state)
        {
        case LayerState::kMapped:
            totals.mapped++;
            break;
        case LayerState::kInsertedQdq:
            totals.insertedQdq++;
            break;
        case LayerState::kInsertedReformat:
            totals.insertedReformat++;
            break;
        case LayerState::kDropped:
            totals.dropped++;
            break;
        case LayerState::kUnattributed:
            totals.unattributed++;
            break;
        }
    }
    return totals;
}

Correlation::QdqTotals Correlation::qdqTotals() const
{
    QdqTotals totals;
    totals.total = qdqNodes.size();
    for (const auto& node : qdqNodes)
    {
        switch (node.state)
        {
        case QdqState::kFused:
            totals.fused++;
            break;
        case QdqState::kStandalone:
            totals.standalone++;
            break;
        case QdqState::kFolded:
            totals.folded++;
            break;
        case QdqState::kEliminated:
            totals.eliminated++;
            break;
        case QdqState::kUnknown:
            totals.unknown++;
            break;
        }
    }
    return totals;
}

} // namespace qdq
