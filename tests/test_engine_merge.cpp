// One engine from several descriptions: the layer-info JSON, the build log's engine block and the profile of one build
// merged layer by layer (engine_merge.h), each fact cited from the file that told it; files of different engines
// refused. On the real data: every folder with several files of one engine reports, from all of them together, at
// least what each file reports alone.
#include "qdq/engine_merge.h"
#include "qdq/load_inputs.h"
#include "qdq/patterns.h"
#include "qdq/readers.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace qdq;
using namespace qdq::test;

namespace
{

// A TensorRT 8.5 log whose engine block has the records the names-only JSON lacks, plus a reformat the JSON does not
// list.
const char* const kLog =
    "&&&& RUNNING TensorRT.trtexec [TensorRT v8502] # trtexec --int8 --onnx=m.onnx --verbose\n"
    "[10/31/2023-17:53:30] [I] TensorRT version: 8.5.2\n"
    "[10/31/2023-17:58:51] [V] [TRT] Engine Layer Information:\n"
    "Layer(Reformat): QuantizeLinear_2, Tactic: 0x00000000000003ea, input (Float[1,3,224,224]) "
    "-> 176 (Int8[1,3,224,224])\n"
    "Layer(Reformat): Reformatting CopyNode for Input Tensor 0 to Conv_9, Tactic: "
    "0x0000000000000000, 176 (Int8[1,3,224,224]) -> r (Int8[1,3:32,224,224])\n"
    "Layer(CaskConvolution): conv1.weight + QuantizeLinear_7 + Conv_9, Tactic: 0x0000000000000461, "
    "r (Int8[1,3:32,224,224]) -> 191 (Float[1,64,112,112])\n";

const char* const kNamesOnlyJson = "{\"Layers\": [\"QuantizeLinear_2\"\n"
                                   ",\"conv1.weight + QuantizeLinear_7 + Conv_9\"\n"
                                   "]\n"
                                   ", \"Bindings\": [\"input\"\n"
                                   ",\"191\"\n"
                                   "]}\n";

struct Written
{
    std::filesystem::path json;
    std::filesystem::path log;
};

Written writeNamesOnlyPair(const std::string& name)
{
    const auto dir = tempDir(name);
    return {writeFile(dir / "layers.json", kNamesOnlyJson), writeFile(dir / "build.log", kLog)};
}

} // namespace

TEST(EngineMerge, NamesOnlyJsonTakesTheLogsRecordsAndCitesTheLog)
{
    const Written files = writeNamesOnlyPair("merge-names-only");
    Inputs inputs = loadFiles({files.json, files.log});
    ASSERT_TRUE(inputs.mergedEngine.has_value());
    const EnginePlan* plan = inputs.engine();
    ASSERT_EQ(plan, &*inputs.mergedEngine);
    // The JSON's two layers in its order, the log's reformat between them where the log lists it.
    ASSERT_EQ(plan->layers.size(), 3u);
    EXPECT_EQ(plan->layers[0].name, "QuantizeLinear_2");
    EXPECT_EQ(plan->layers[1].name, "Reformatting CopyNode for Input Tensor 0 to Conv_9");
    EXPECT_EQ(plan->layers[2].name, "conv1.weight + QuantizeLinear_7 + Conv_9");
    EXPECT_EQ(plan->layers[0].type, "Reformat");
    EXPECT_EQ(plan->layers[2].type, "CaskConvolution");
    ASSERT_EQ(plan->layers[0].outputs.size(), 1u);
    EXPECT_EQ(plan->layers[0].outputs[0].precision, Precision::kINT8);
    EXPECT_EQ(plan->layers[2].tacticValue, "0x0000000000000461");
    EXPECT_EQ(plan->bindings, (std::vector<std::string>{"input", "191"}));
    // Every fact of these layers came from the log: evidence cites its lines.
    const auto [tensorFile, tensorLine] = plan->factSource(0, LayerFact::kTensors);
    EXPECT_EQ(tensorFile, files.log.string());
    EXPECT_EQ(tensorLine, 4u);
    EXPECT_EQ(plan->factSource(2, LayerFact::kRecord).second, 6u);
    EXPECT_EQ(plan->sourcePath, files.log.string());

    Report report = diagnose(inputs);
    EXPECT_EQ(report.correlation.layerTotals().total, 3u);
    EXPECT_EQ(report.correlation.layerTotals().insertedQdq, 1u);
    EXPECT_EQ(report.correlation.layerTotals().insertedReformat, 1u);
    bool noted = false;
    for (const auto& note : report.notes)
    {
        noted = noted ||
                (note.find("merged from") != std::string::npos && note.find(files.json.string()) != std::string::npos &&
                 note.find(files.log.string()) != std::string::npos);
    }
    EXPECT_TRUE(noted);
    for (const auto& finding : report.findings)
    {
        for (const auto& evidence : finding.evidence)
        {
            EXPECT_NE(evidence.file, files.json.string()) << finding.rule << ": " << evidence.text;
        }
    }
}

TEST(EngineMerge, MetadataFromTheJsonTensorsFromTheLog)
{
    const auto dir = tempDir("merge-metadata");
    // A 10.x-style detailed record that has Metadata but no tensors (as a layer-info JSON cut down by hand would).
    const auto json = writeFile(dir / "layers.json", "{\"Layers\": [{\n"
                                                     "  \"Name\": \"QuantizeLinear_2\",\n"
                                                     "  \"LayerType\": \"Reformat\",\n"
                                                     "  \"ParameterType\": \"Reformat\",\n"
                                                     "  \"Origin\": \"QDQ\",\n"
                                                     "  \"Metadata\": \"[ONNX Layer: QuantizeLinear_2]\"\n"
                                                     "}],\n"
                                                     "\"Bindings\": [\"input\", \"176\"]}\n");
    const auto log = writeFile(dir / "build.log", kLog);
    Inputs inputs = loadFiles({json, log});
    ASSERT_TRUE(inputs.mergedEngine.has_value());
    const EnginePlan& plan = *inputs.engine();
    ASSERT_EQ(plan.layers.size(), 3u);
    const EngineLayer& q = plan.layers[0];
    EXPECT_EQ(q.origin, "QDQ");
    EXPECT_TRUE(q.hasMetadata);
    ASSERT_EQ(q.inputs.size(), 1u);
    EXPECT_EQ(q.inputs[0].precision, Precision::kFP32);
    EXPECT_EQ(plan.factSource(0, LayerFact::kRecord).first, json.string());
    EXPECT_EQ(plan.factSource(0, LayerFact::kMetadata), (std::pair<std::string_view, std::uint64_t>(json.string(), 1)));
    EXPECT_EQ(plan.factSource(0, LayerFact::kTensors), (std::pair<std::string_view, std::uint64_t>(log.string(), 4)));

    // layerEvidence cites the file of the fact its field names.
    const Correlation correlation;
    const Prediction prediction;
    const AnalysisOptions options;
    const Context context{inputs, correlation, prediction, options};
    const Evidence formats = patterns::layerEvidence(context, 0, "Inputs[0]", "FP32 -> INT8");
    EXPECT_EQ(formats.file, log.string());
    EXPECT_EQ(formats.line, 4u);
    const Evidence metadata = patterns::layerEvidence(context, 0, "Metadata", "[ONNX Layer: QuantizeLinear_2]");
    EXPECT_EQ(metadata.file, json.string());
    const Evidence origin = patterns::layerEvidence(context, 0, "Origin", "QDQ");
    EXPECT_EQ(origin.file, json.string());
}

TEST(EngineMerge, OneFileIsNotMerged)
{
    const Written files = writeNamesOnlyPair("merge-one-file");
    Inputs inputs = loadFiles({files.log});
    EXPECT_FALSE(inputs.mergedEngine.has_value());
    EXPECT_TRUE(inputs.engineMergeNote.empty());
    ASSERT_NE(inputs.engine(), nullptr);
    EXPECT_EQ(inputs.engine()->factSource(0, LayerFact::kTensors).first, files.log.string());
    EXPECT_EQ(inputs.engine()->factSource(0, LayerFact::kTensors).second, 4u);
}

TEST(EngineMerge, OverlapCountsDistinctNamesWithoutTheProfileSuffix)
{
    const NameOverlap overlap = layerNameOverlap({"a", "b", "c [profile 1]", "c"}, {"c", "d", "a", "a"});
    EXPECT_EQ(overlap.first, 3u);
    EXPECT_EQ(overlap.second, 3u);
    EXPECT_EQ(overlap.common, 2u);
    EXPECT_TRUE(overlap.sameEngine());
    EXPECT_FALSE((NameOverlap{10, 12, 4}).sameEngine());
    EXPECT_TRUE((NameOverlap{0, 12, 0}).sameEngine());
}

TEST(EngineMerge, LayerInfoOfAnotherEngineIsRefusedNamingBothFiles)
{
    const auto dir = tempDir("merge-refused");
    const auto json = writeFile(dir / "other.json", "{\"Layers\": [\"Conv_100\", \"Relu_101\", \"Add_102\"],\n"
                                                    "\"Bindings\": [\"x\", \"y\"]}\n");
    const auto log = writeFile(dir / "build.log", kLog);
    try
    {
        loadFiles({json, log});
        FAIL() << "expected an InputError";
    }
    catch (const InputError& error)
    {
        EXPECT_NE(error.message().find(json.string()), std::string::npos) << error.message();
        EXPECT_NE(error.message().find(log.string()), std::string::npos) << error.message();
        EXPECT_NE(error.message().find("describe different engines"), std::string::npos) << error.message();
    }
    // The CLI exits 2 with that message.
    CommandResult cli = runCli({"diagnose", json.string(), log.string()});
    EXPECT_EQ(cli.exitStatus, 2);
    EXPECT_NE(cli.err.find("describe different engines"), std::string::npos) << cli.err;
}

TEST(EngineMerge, ProfileOfAnotherEngineIsRefused)
{
    const auto dir = tempDir("merge-profile-refused");
    const auto log = writeFile(dir / "build.log", kLog);
    const auto profile =
        writeFile(dir / "profile.json", "[\n  { \"count\" : 1 }\n"
                                        ", { \"name\" : \"Conv_100\", \"timeMs\" : 1, \"averageMs\" : 1, "
                                        "\"medianMs\" : 1, \"percentage\" : 50 }\n"
                                        ", { \"name\" : \"Relu_101\", \"timeMs\" : 1, \"averageMs\" : 1, "
                                        "\"medianMs\" : 1, \"percentage\" : 50 }\n]\n");
    EXPECT_THROW(loadFiles({log, profile}), InputError);
}

// ---------------------------------------------------------------------------------------------------------------
// Real data.

namespace
{

using FindingKey = std::tuple<std::string, std::vector<std::string>>;

//! The findings' keys, fallback explanations (Finding::fallbackGroup) left out: more files give them better
//! evidence, so they regroup or give way to another rule's finding; fallbackLayersNamed checks those.
std::set<FindingKey> findingKeys(const Report& report)
{
    std::set<FindingKey> keys;
    for (const auto& finding : report.findings)
    {
        if (!finding.fallbackGroup.empty())
        {
            continue;
        }
        std::vector<std::string> layers = finding.engineLayers;
        std::sort(layers.begin(), layers.end());
        keys.emplace(finding.rule, layers);
    }
    return keys;
}

void expectAccountingAddsUp(const Report& report, const Inputs& inputs, const std::string& what)
{
    auto layers = report.correlation.layerTotals();
    EXPECT_EQ(layers.total,
              layers.mapped + layers.insertedQdq + layers.insertedReformat + layers.dropped + layers.unattributed)
        << what;
    EXPECT_EQ(layers.total, inputs.engine() == nullptr ? 0u : inputs.engine()->layers.size()) << what;
    auto qdq = report.correlation.qdqTotals();
    EXPECT_EQ(qdq.total, qdq.fused + qdq.standalone + qdq.folded + qdq.eliminated + qdq.unknown) << what;
}

//! Every layer a fallback explanation of alone names is named by some finding of together.
void expectFallbackLayersNamed(const Report& alone, const Report& together, const std::string& what)
{
    std::set<std::string> named;
    for (const auto& finding : together.findings)
    {
        named.insert(finding.engineLayers.begin(), finding.engineLayers.end());
    }
    for (const auto& finding : alone.findings)
    {
        for (const auto& layer : finding.fallbackGroup.empty() ? std::vector<std::string>{} : finding.engineLayers)
        {
            EXPECT_TRUE(named.count(layer) > 0) << what << ": " << finding.rule << " on \"" << layer << "\" lost";
        }
    }
}

//! Whether `keys` holds a finding of key's rule that names every layer key names. With more files a finding may name
//! more layers than one file alone gives it: the tensor types a names-only list lacks let batchnorm-not-folded name
//! the INT8 convs that write float for the BatchNormalization layers too (trex-notebooks-yolo-orin-trt852).
bool reportedWithItsLayers(const std::set<FindingKey>& keys, const FindingKey& key)
{
    return keys.count(key) != 0 ||
           std::any_of(keys.begin(), keys.end(),
                       [&](const FindingKey& other)
                       {
                           return std::get<0>(other) == std::get<0>(key) &&
                                  std::includes(std::get<1>(other).begin(), std::get<1>(other).end(),
                                                std::get<1>(key).begin(), std::get<1>(key).end());
                       });
}

std::string describeKey(const FindingKey& key)
{
    std::string text = std::get<0>(key) + " on";
    for (const auto& layer : std::get<1>(key))
    {
        text += " \"" + layer + "\"";
    }
    return text;
}

} // namespace

TEST(RealDataEngineMerge, YoloLayerInfoProfileAndLogReportWhatTheLogAloneReports)
{
    REQUIRE_SHARED();
    const auto dir = realdata("trex-notebooks-yolo-orin-trt852");
    Inputs logOnly = loadFiles({dir / "trt.out"});
    Report alone = diagnose(logOnly);
    Inputs all = loadFiles({dir / "layer_info.json", dir / "profile.json", dir / "trt.out"});
    ASSERT_TRUE(all.mergedEngine.has_value());
    Report together = diagnose(all);
    expectAccountingAddsUp(together, all, "yolo, all three");

    const auto aloneKeys = findingKeys(alone);
    const auto togetherKeys = findingKeys(together);
    ASSERT_GE(aloneKeys.size(), 10u);
    for (const auto& key : aloneKeys)
    {
        EXPECT_TRUE(togetherKeys.count(key)) << "lost with all three files: " << describeKey(key);
    }
    expectFallbackLayersNamed(alone, together, "all three files");
    for (const char* slug : {"fp32-island", "standalone-qdq", "conv-act-pool-blocked"})
    {
        EXPECT_TRUE(std::any_of(together.findings.begin(), together.findings.end(),
                                [&](const Finding& finding) { return finding.rule == slug; }))
            << slug;
    }
    // The two Quantize layers reading layer2.1's and layer3.1's outputs are a Q and a clone that
    // SplitQAcrossPrecedingFanIn made after the merge pass (trt.out:5212-5228): no sign of unequal scales, so no
    // fanout-scale-mismatch (the issue "One model of TensorRT", defect 7).
    EXPECT_FALSE(std::any_of(together.findings.begin(), together.findings.end(),
                             [](const Finding& finding) { return finding.rule == "fanout-scale-mismatch"; }));
    // The times are the profile JSON's; the standalone Quantize layers are the log's Reformat records.
    ASSERT_NE(all.timings(), nullptr);
    EXPECT_EQ(all.timings()->sourcePath, (dir / "profile.json").string());
    const auto standalone = std::find_if(together.findings.begin(), together.findings.end(),
                                         [](const Finding& finding) { return finding.rule == "standalone-qdq"; });
    ASSERT_NE(standalone, together.findings.end());
    ASSERT_TRUE(standalone->costMs.has_value());
    EXPECT_GT(*standalone->costMs, 0.0);
    EXPECT_EQ(standalone->engineLayers.size(), 12u);
    ASSERT_FALSE(standalone->evidence.empty());
    EXPECT_EQ(standalone->evidence[0].file, (dir / "trt.out").string());
    EXPECT_GT(standalone->evidence[0].line, 12745u);
    EXPECT_EQ(standalone->evidence[0].text.find("unknown"), std::string::npos) << standalone->evidence[0].text;
    EXPECT_NE(standalone->evidence[0].text.find("INT8"), std::string::npos) << standalone->evidence[0].text;
    double profileMs = 0.0;
    for (const auto& mapping : together.correlation.layers)
    {
        if (mapping.state == LayerState::kInsertedQdq)
        {
            ASSERT_TRUE(mapping.timeMs.has_value());
            profileMs += *mapping.timeMs;
        }
    }
    EXPECT_NEAR(*standalone->costMs, profileMs, 1e-6);
}

namespace
{

//! Files of the manifest that describe an engine, by folder: kind (as detected from content) -> files.
std::map<std::string, std::map<InputKind, std::vector<std::string>>> engineFilesByFolder()
{
    std::map<std::string, std::map<InputKind, std::vector<std::string>>> folders;
    for (const ManifestEntry& entry : manifestEntries())
    {
        const std::string path = realdata(entry.path()).string();
        const InputKind kind = detectInputKind(path);
        if (kind == InputKind::kLayerInfo || kind == InputKind::kProfile || kind == InputKind::kBuildLog)
        {
            folders[entry.folder][kind].push_back(path);
        }
    }
    return folders;
}

} // namespace

TEST(RealDataEngineMerge, EveryFolderTogetherReportsWhatEachFileReportsAlone)
{
    REQUIRE_SHARED();
    std::size_t sets = 0;
    std::set<std::string> merged;
    for (const auto& [folder, kinds] : engineFilesByFolder())
    {
        // One file of each kind per set (diagnose takes one build log): every build log in turn.
        const auto& logs =
            kinds.count(InputKind::kBuildLog) ? kinds.at(InputKind::kBuildLog) : std::vector<std::string>{};
        std::vector<std::vector<std::string>> choices;
        for (std::size_t l = 0; l < std::max<std::size_t>(logs.size(), 1); ++l)
        {
            std::vector<std::string> set;
            for (InputKind kind : {InputKind::kLayerInfo, InputKind::kProfile})
            {
                if (kinds.count(kind))
                {
                    set.push_back(kinds.at(kind).front());
                }
            }
            if (!logs.empty())
            {
                set.push_back(logs[l]);
            }
            if (set.size() >= 2)
            {
                choices.push_back(set);
            }
        }
        for (const auto& set : choices)
        {
            std::vector<std::filesystem::path> paths(set.begin(), set.end());
            std::string what = folder + ":";
            for (const auto& path : paths)
            {
                what += " " + path.filename().string();
            }
            Inputs all = loadFiles(paths);
            Report together = diagnose(all);
            expectAccountingAddsUp(together, all, what);
            if (all.mergedEngine)
            {
                merged.insert(folder);
            }
            const auto togetherKeys = findingKeys(together);
            for (const auto& path : paths)
            {
                Inputs one = loadFiles({path});
                Report alone = diagnose(one);
                for (const auto& key : findingKeys(alone))
                {
                    EXPECT_TRUE(reportedWithItsLayers(togetherKeys, key))
                        << what << ": " << describeKey(key) << " (found in " << path.filename() << " alone)";
                }
                expectFallbackLayersNamed(alone, together, what);
            }
            ++sets;
        }
    }
    EXPECT_GE(sets, 15u);
    // The folders whose layer-info JSON and build log are merged.
    EXPECT_TRUE(merged.count("trex-notebooks-yolo-orin-trt852"));
    EXPECT_TRUE(merged.count("cookbook-mnist-trt8600"));
    EXPECT_TRUE(merged.count("fuzzylabs-alexnet-fp16-trt10"));
}

TEST(RealDataEngineMerge, LayerInfoOfOneEngineWithTheLogOfAnotherIsRefused)
{
    REQUIRE_SHARED();
    const auto json = realdata("trex-notebooks-yolo-orin-trt852/layer_info.json");
    const auto log = realdata("cookbook-mnist-trt8600/result-02.log");
    try
    {
        loadFiles({json, log});
        FAIL() << "expected an InputError";
    }
    catch (const InputError& error)
    {
        EXPECT_NE(error.message().find(json.string()), std::string::npos) << error.message();
        EXPECT_NE(error.message().find(log.string()), std::string::npos) << error.message();
        EXPECT_NE(error.message().find("describe different engines"), std::string::npos) << error.message();
    }
    CommandResult cli = runCli({"diagnose", json.string(), log.string()});
    EXPECT_EQ(cli.exitStatus, 2);
    EXPECT_NE(cli.err.find("describe different engines"), std::string::npos) << cli.err;
    // The other way round too, and a profile of a third engine.
    EXPECT_THROW(loadFiles({realdata("cookbook-mnist-trt8600/modelInformation.log"),
                            realdata("trex-notebooks-yolo-orin-trt852/trt.out")}),
                 InputError);
    EXPECT_THROW(loadFiles({realdata("trex-notebooks-yolo-orin-trt852/layer_info.json"),
                            realdata("detr-r50-int8-implicit/detr-profile.json")}),
                 InputError);
}
