// Merging the descriptions of one engine (layer-info JSON, build log engine block, profile) layer by layer.
#include "qdq/engine_merge.h"

#include "qdq/myelin_profile.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace qdq
{

namespace
{

std::string_view withoutProfileSuffix(std::string_view name)
{
    EngineLayer probe;
    if (name.empty() || name.back() != ']')
    {
        return name;
    }
    probe.setName(name);
    return name.substr(0, probe.profileSuffixAt);
}

std::vector<std::string_view> layerNames(const EnginePlan& plan)
{
    std::vector<std::string_view> names;
    names.reserve(plan.layers.size());
    for (const auto& layer : plan.layers)
    {
        names.push_back(layer.name);
    }
    return names;
}

std::vector<std::string_view> entryNames(const Profile& profile)
{
    std::vector<std::string_view> names;
    names.reserve(profile.entries.size());
    for (const auto& entry : profile.entries)
    {
        names.push_back(entry.name);
    }
    return names;
}

//! How much of a layer's record a file tells: a type first, then the keys a detailed record adds.
int recordScore(const EngineLayer& layer)
{
    return (layer.type.empty() ? 0 : 8) + (layer.parameterType.empty() ? 0 : 2) + (layer.origin.empty() ? 0 : 2) +
           (layer.weightsPrecision ? 1 : 0) + (layer.otherFields.empty() ? 0 : 1);
}

//! How much a file tells of a layer's tensors: each tensor, its precision, its format text, its location.
int tensorScore(const EngineLayer& layer)
{
    int score = 0;
    for (const auto* tensors : {&layer.inputs, &layer.outputs})
    {
        for (const auto& tensor : *tensors)
        {
            score += 1 + (tensor.precision != Precision::kUnknown ? 4 : 0) + (tensor.format.empty() ? 0 : 1) +
                     (tensor.location.empty() ? 0 : 1) + (tensor.dimensions.empty() ? 0 : 1);
        }
    }
    return score;
}

int tacticScore(const EngineLayer& layer)
{
    return (layer.tacticName.empty() ? 0 : 2) + (layer.tacticValue.empty() ? 0 : 1);
}

int metadataScore(const EngineLayer& layer)
{
    return layer.hasMetadata && !layer.metadata.empty() ? 1 : 0;
}

struct Side
{
    const EngineLayer* layer = nullptr;
    std::uint32_t file = 0;
};

//! The merged layer: a (from first) and b (from second, may be absent).
EngineLayer mergeLayer(const Side& a, const Side& b)
{
    if (b.layer == nullptr)
    {
        EngineLayer only = *a.layer;
        only.factSources.clear();
        for (LayerFact fact : {LayerFact::kRecord, LayerFact::kTensors, LayerFact::kTactic, LayerFact::kMetadata})
        {
            only.factSources.push_back(FactSource{fact, a.file, a.layer->line});
        }
        return only;
    }
    // Ties go to the first file (the layer-info JSON): the JSON's long format names and keys are the richer text.
    const auto pick = [&](int scoreA, int scoreB) { return scoreB > scoreA ? b : a; };
    const Side record = pick(recordScore(*a.layer), recordScore(*b.layer));
    const Side other = record.layer == a.layer ? b : a;
    EngineLayer merged = *record.layer;
    merged.setName(a.layer->name);
    const EngineLayer& rest = *other.layer;
    // Empty fields of the record filled from the other file.
    if (merged.type.empty())
    {
        merged.type = rest.type;
    }
    if (merged.parameterType.empty())
    {
        merged.parameterType = rest.parameterType;
    }
    if (merged.origin.empty())
    {
        merged.origin = rest.origin;
    }
    if (!merged.weightsPrecision)
    {
        merged.weightsPrecision = rest.weightsPrecision;
    }
    if (merged.activation.empty())
    {
        merged.activation = rest.activation;
    }
    if (merged.pluginType.empty())
    {
        merged.pluginType = rest.pluginType;
    }
    if (merged.otherFields.empty())
    {
        merged.otherFields = rest.otherFields;
    }
    merged.factSources.clear();
    merged.factSources.push_back(FactSource{LayerFact::kRecord, record.file, record.layer->line});

    const auto choose = [&](int recordValue, int otherValue) { return otherValue > recordValue ? other : record; };
    const Side tensors = choose(tensorScore(*record.layer), tensorScore(rest));
    if (tensors.layer != record.layer)
    {
        merged.inputs = tensors.layer->inputs;
        merged.outputs = tensors.layer->outputs;
    }
    merged.factSources.push_back(FactSource{LayerFact::kTensors, tensors.file, tensors.layer->line});
    const Side tactic = choose(tacticScore(*record.layer), tacticScore(rest));
    if (tactic.layer != record.layer)
    {
        merged.tacticName = tactic.layer->tacticName;
        merged.tacticValue = tactic.layer->tacticValue;
    }
    merged.factSources.push_back(FactSource{LayerFact::kTactic, tactic.file, tactic.layer->line});
    const Side metadata = choose(metadataScore(*record.layer), metadataScore(rest));
    if (metadata.layer != record.layer)
    {
        merged.hasMetadata = metadata.layer->hasMetadata;
        merged.metadata = metadata.layer->metadata;
    }
    merged.factSources.push_back(FactSource{LayerFact::kMetadata, metadata.file, metadata.layer->line});
    return merged;
}

int formRank(LayerListForm form)
{
    switch (form)
    {
    case LayerListForm::kDetailed:
        return 3;
    case LayerListForm::kLogLine:
        return 2;
    case LayerListForm::kNamesOnly:
        return 1;
    case LayerListForm::kUnknown:
        break;
    }
    return 0;
}

[[noreturn]] void refuse(const std::string& firstPath, const std::string& secondPath, const NameOverlap& overlap)
{
    SourceLocation where;
    where.path = secondPath;
    throw InputError(where, firstPath + " and " + secondPath + " describe different engines: they share " +
                                std::to_string(overlap.common) + " of " + std::to_string(overlap.first) + " and " +
                                std::to_string(overlap.second) +
                                " layer names (diagnose reads the files of one build; run diff to compare two)");
}

//! "trt.out (86 layer records, tensors)" for the note: what each file of a merged plan told.
std::string describeMerge(const EnginePlan& plan)
{
    struct Told
    {
        std::size_t records = 0, tensors = 0, tactics = 0, metadata = 0, names = 0;
    };
    std::vector<Told> told(plan.mergedFrom.size());
    for (const auto& layer : plan.layers)
    {
        for (const FactSource& source : layer.factSources)
        {
            if (source.file >= told.size())
            {
                continue;
            }
            Told& file = told[source.file];
            switch (source.fact)
            {
            case LayerFact::kRecord:
                file.records += layer.type.empty() ? 0 : 1;
                file.names += 1;
                break;
            case LayerFact::kTensors:
                file.tensors += layer.inputs.empty() && layer.outputs.empty() ? 0 : 1;
                break;
            case LayerFact::kTactic:
                file.tactics += layer.tacticName.empty() && layer.tacticValue.empty() ? 0 : 1;
                break;
            case LayerFact::kMetadata:
                file.metadata += layer.hasMetadata ? 1 : 0;
                break;
            }
        }
    }
    std::string text;
    for (std::size_t i = 0; i < told.size(); ++i)
    {
        std::vector<std::string> parts;
        if (told[i].records > 0)
        {
            parts.push_back(std::to_string(told[i].records) + " layer types");
        }
        if (told[i].tensors > 0)
        {
            parts.push_back(std::to_string(told[i].tensors) + " tensor lists");
        }
        if (told[i].tactics > 0)
        {
            parts.push_back(std::to_string(told[i].tactics) + " tactics");
        }
        if (told[i].metadata > 0)
        {
            parts.push_back(std::to_string(told[i].metadata) + " Metadata");
        }
        if (parts.empty())
        {
            parts.push_back("layer names");
        }
        text += (i == 0 ? "" : (i + 1 == told.size() ? " and " : ", ")) + plan.mergedFrom[i] + " (";
        for (std::size_t p = 0; p < parts.size(); ++p)
        {
            text += (p == 0 ? "" : ", ") + parts[p];
        }
        text += ")";
    }
    return text;
}

} // namespace

bool NameOverlap::sameEngine() const
{
    const std::size_t shorter = std::min(first, second);
    return shorter == 0 || 2 * common >= shorter;
}

NameOverlap layerNameOverlap(const std::vector<std::string_view>& first, const std::vector<std::string_view>& second)
{
    std::unordered_set<std::string_view> a;
    a.reserve(first.size());
    for (std::string_view name : first)
    {
        a.insert(withoutProfileSuffix(name));
    }
    std::unordered_set<std::string_view> b;
    b.reserve(second.size());
    for (std::string_view name : second)
    {
        b.insert(withoutProfileSuffix(name));
    }
    NameOverlap overlap;
    overlap.first = a.size();
    overlap.second = b.size();
    for (std::string_view name : b)
    {
        overlap.common += a.count(name);
    }
    return overlap;
}

EnginePlan mergeEnginePlans(const EnginePlan& first, const EnginePlan& second)
{
    EnginePlan merged;
    merged.mergedFrom = {first.sourcePath, second.sourcePath};
    merged.form = formRank(second.form) > formRank(first.form) ? second.form : first.form;
    merged.bindings = first.bindings.empty() ? second.bindings : first.bindings;

    // second's layers by name (full name, then base name), each taken once, in order.
    std::unordered_map<std::string_view, std::vector<std::size_t>> byName;
    std::unordered_map<std::string_view, std::vector<std::size_t>> byBaseName;
    byName.reserve(second.layers.size());
    for (std::size_t j = 0; j < second.layers.size(); ++j)
    {
        byName[second.layers[j].name].push_back(j);
        byBaseName[second.layers[j].baseName()].push_back(j);
    }
    std::unordered_map<std::string_view, std::size_t> nextByName;
    std::unordered_map<std::string_view, std::size_t> nextByBaseName;
    std::vector<bool> taken(second.layers.size(), false);
    const auto takeFrom = [&](auto& index, auto& next, std::string_view name) -> std::optional<std::size_t>
    {
        auto found = index.find(name);
        if (found == index.end())
        {
            return std::nullopt;
        }
        std::size_t& cursor = next[name];
        while (cursor < found->second.size() && taken[found->second[cursor]])
        {
            ++cursor;
        }
        if (cursor == found->second.size())
        {
            return std::nullopt;
        }
        taken[found->second[cursor]] = true;
        return found->second[cursor++];
    };
    std::vector<std::optional<std::size_t>> match(first.layers.size());
    std::vector<std::size_t> firstOf(second.layers.size(), std::string::npos);
    for (std::size_t i = 0; i < first.layers.size(); ++i)
    {
        match[i] = takeFrom(byName, nextByName, first.layers[i].name);
        if (!match[i])
        {
            match[i] = takeFrom(byBaseName, nextByBaseName, first.layers[i].baseName());
        }
        if (match[i])
        {
            firstOf[*match[i]] = i;
        }
    }
    // second's unmatched layers go after the first-list layer matched by the layer they follow in second.
    std::vector<std::vector<std::size_t>> after(first.layers.size() + 1);
    std::size_t slot = 0;
    for (std::size_t j = 0; j < second.layers.size(); ++j)
    {
        if (firstOf[j] != std::string::npos)
        {
            slot = firstOf[j] + 1;
        }
        else
        {
            after[slot].push_back(j);
        }
    }

    merged.layers.reserve(first.layers.size() + after.size());
    std::vector<std::size_t> recordsFrom(2, 0);
    const auto add = [&](EngineLayer layer)
    {
        for (const FactSource& source : layer.factSources)
        {
            if (source.fact == LayerFact::kRecord && !layer.type.empty())
            {
                ++recordsFrom[source.file];
            }
        }
        merged.layers.push_back(std::move(layer));
    };
    for (std::size_t j : after[0])
    {
        add(mergeLayer(Side{&second.layers[j], 1}, Side{}));
    }
    for (std::size_t i = 0; i < first.layers.size(); ++i)
    {
        add(mergeLayer(Side{&first.layers[i], 0}, match[i] ? Side{&second.layers[*match[i]], 1} : Side{}));
        for (std::size_t j : after[i + 1])
        {
            add(mergeLayer(Side{&second.layers[j], 1}, Side{}));
        }
    }
    merged.sourcePath = recordsFrom[1] > recordsFrom[0] ? second.sourcePath : first.sourcePath;
    merged.layers.shrink_to_fit();
    return merged;
}

void mergeEngineDescriptions(Inputs& inputs)
{
    inputs.mergedEngine.reset();
    inputs.engineMergeNote.clear();
    const EnginePlan* json = inputs.layerInfo && !inputs.layerInfo->layers.empty() ? &*inputs.layerInfo : nullptr;
    const EnginePlan* log =
        inputs.buildLog && inputs.buildLog->hasEngineBlock && !inputs.buildLog->engine.layers.empty()
            ? &inputs.buildLog->engine
            : nullptr;
    if (json != nullptr && log != nullptr)
    {
        const NameOverlap overlap = layerNameOverlap(layerNames(*json), layerNames(*log));
        if (!overlap.sameEngine())
        {
            refuse(json->sourcePath, log->sourcePath, overlap);
        }
        inputs.mergedEngine = mergeEnginePlans(*json, *log);
    }
    if (inputs.profile && !inputs.profile->entries.empty())
    {
        // The profile names the engine's layers too; one of another build would time none of them.
        const auto check = [&](const EnginePlan& described)
        {
            NameOverlap overlap = layerNameOverlap(layerNames(described), entryNames(*inputs.profile));
            if (!overlap.sameEngine())
            {
                // Myelin kernels the list does not name but whose region it has are the engine's too
                // (include/qdq/myelin_profile.h): a profile of another build of the same network differs in them.
                const auto kernels = attributeMyelinKernelTimes(described, *inputs.profile,
                                                                profileEntriesNamingLayers(described, *inputs.profile));
                std::unordered_set<std::string_view> names;
                for (const MyelinKernelTime& kernel : kernels)
                {
                    names.insert(inputs.profile->entries[kernel.entry].name);
                }
                overlap.common += names.size();
            }
            if (!overlap.sameEngine())
            {
                refuse(described.sourcePath, inputs.profile->sourcePath, overlap);
            }
        };
        if (json != nullptr)
        {
            check(*json);
        }
        if (log != nullptr)
        {
            check(*log);
        }
    }
    if (inputs.mergedEngine)
    {
        inputs.engineMergeNote = "engine layers merged from " + describeMerge(*inputs.mergedEngine);
        if (const Profile* times = inputs.timings())
        {
            inputs.engineMergeNote += "; times from " + times->sourcePath;
        }
    }
}

} // namespace qdq
