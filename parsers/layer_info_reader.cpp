// Layer-information JSON: trtexec --exportLayerInfo (names-only and detailed, TensorRT 8.2 to 11.x), the
// IEngineInspector JSON (whole engine, or one object per layer with "--- Layer N ---" separators) and
// re-serialized (pretty-printed) copies. Streams over the text with the pull tokenizer; copies only what it keeps.
// The TensorRT 11 forms (../shared/realdata/FORMATS-trt11.md section 1): "Datatype" (the precision) and "Format" (the
// layout, "(Linear) Row major linear format", "Format not available due to dynamic shapes") as two keys (J1-J3);
// "Strides", "StrideOrder" and the layer's "Constants" (J5, J6), skipped; "I/O Tensors" objects (J7, J8) in place of
// "Bindings"; "Engine Metadata" (J9).
#include "parsers/file_source.h"
#include "parsers/json_pull.h"
#include "qdq/readers.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace qdq
{

namespace
{
using json::PullParser;
using json::Token;

constexpr std::string_view kWhat = "layer-information JSON (trtexec --exportLayerInfo)";

// Formats repeat throughout a file: keeps one shared copy and the precision of each format seen so far.
class FormatCache
{
public:
    void set(EngineTensor& tensor, std::string_view format)
    {
        for (const auto& [known, precision] : mEntries)
        {
            if (known == format)
            {
                tensor.format = known;
                tensor.precision = precision;
                return;
            }
        }
        tensor.format = SharedText(format);
        tensor.precision = precisionFromFormat(format);
        if (mEntries.size() < 64)
        {
            mEntries.emplace_back(tensor.format, tensor.precision);
        }
    }

    //! A TensorRT 11 "Format": the layout only. Its text names no data type ("(Linear) Row major linear format"), and a
    //! vectorized one no public file shows, so the precision is never taken from it (FORMATS-trt11.md J2, T5).
    SharedText layout(std::string_view format)
    {
        for (const SharedText& known : mLayouts)
        {
            if (known == format)
            {
                return known;
            }
        }
        SharedText text(format);
        if (mLayouts.size() < 64)
        {
            mLayouts.push_back(text);
        }
        return text;
    }

private:
    std::vector<std::pair<SharedText, Precision>> mEntries;
    std::vector<SharedText> mLayouts;
};

// "Thirty-two wide channel vectorized row major Int8 format" -> 32.
int vectorWidthFromFormat(std::string_view format)
{
    std::size_t at = format.find(" wide channel vectorized");
    if (at == std::string_view::npos)
    {
        return 0;
    }
    std::string_view word = format.substr(0, at);
    static constexpr std::pair<std::string_view, int> kWords[] = {
        {"Two", 2}, {"Four", 4}, {"Eight", 8}, {"Sixteen", 16}, {"Thirty-two", 32}, {"Sixty-four", 64}};
    for (const auto& [name, width] : kWords)
    {
        if (word == name)
        {
            return width;
        }
    }
    return 0;
}

class LayerInfoReader
{
public:
    LayerInfoReader(std::string_view text, const std::string& path, const Limits& limits, MappedFile* mapped)
        : mParser(text, path, limits), mLimits(limits), mMapped(mapped)
    {
        mPlan.sourcePath = path;
    }

    EnginePlan read()
    {
        std::string_view text = mParser.input();
        std::size_t pos = json::firstContentOffset(text);
        std::size_t values = 0;
        while (pos < text.size())
        {
            if (text.substr(pos, 3) == "---")
            {
                // IEngineInspector output written per layer: "--- Layer N ---" then one JSON object.
                std::size_t end = text.find('\n', pos);
                pos = end == std::string_view::npos ? text.size() : end + 1;
            }
            else
            {
                bool bareArray = values == 0 && text[pos] == '[';
                if (text[pos] != '{' && !bareArray)
                {
                    if (values == 0)
                    {
                        mParser.fail(pos, "expected '{' at the start of the layer information");
                    }
                    mParser.seek(pos);
                    mParser.expectEndOfInput();
                }
                mParser.seek(pos);
                Token first = mParser.next();
                if (bareArray)
                {
                    // [{layer}, {layer}, ...]: the list alone, as scripts dumping the engine inspector's layers
                    // write it (and TensorRT 11.1's performance-analysis tooling expects).
                    readLayers(first, "the top-level array");
                    mParser.expectEndOfInput();
                    ++values;
                    break;
                }
                readTopObject(first);
                ++values;
                mParser.atEndOfInput();
                pos = mParser.position();
            }
            while (pos < text.size() &&
                   (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\r' || text[pos] == '\t'))
            {
                ++pos;
            }
        }
        if (values == 0)
        {
            mParser.fail(text.size(), "no JSON object found after the \"--- Layer N ---\" separators");
        }
        mParser.checkAllLines();
        finish();
        return std::move(mPlan);
    }

private:
    // A top-level object: {"Layers": [...], "Bindings": [...]} or, in inspector output, one layer object.
    void readTopObject(Token first)
    {
        if (first != Token::kObjectBegin)
        {
            mParser.fail(mParser.tokenOffset(), "expected '{' at the start of the layer information");
        }
        std::size_t start = mParser.tokenOffset();
        EngineLayer single;
        single.line = mParser.lineOf(start);
        mSeenKeys = 0;
        mOtherFields.clear();
        bool sawLayers = false;
        bool sawLayerKey = false;
        for (Token token = mParser.next(); token != Token::kObjectEnd; token = mParser.next())
        {
            std::string_view key = mParser.text();
            std::size_t keyOffset = mParser.tokenOffset();
            if (isLayerListKey(key))
            {
                if (sawLayers)
                {
                    mPlan.warnings.push_back(mParser.warningAt(keyOffset, "a second layer list (\"" + std::string(key) +
                                                                              "\"); its layers are appended"));
                }
                sawLayers = true;
                std::string keyText(key);
                Token value = mParser.next();
                if (value == Token::kObjectBegin && keyText != "Layers")
                {
                    // {"LayerInfo": {"Layers": [...], "Bindings": [...]}}: a whole trtexec export under one key.
                    readLayerListObject();
                }
                else
                {
                    readLayers(value, "\"" + keyText + "\"");
                }
            }
            else if (key == "Bindings")
            {
                readBindings(mParser.next());
            }
            else if (key == "I/O Tensors")
            {
                readIoTensors(mParser.next(), keyOffset);
            }
            else if (key == "Engine Metadata")
            {
                readEngineMetadata(mParser.next());
            }
            else
            {
                sawLayerKey = readLayerMember(single, key, keyOffset) || sawLayerKey;
            }
        }
        if (!sawLayers)
        {
            if (!sawLayerKey)
            {
                mParser.fail(start,
                             "no \"Layers\" array (nor \"layers\" or \"LayerInfo\") and no layer \"Name\": not " +
                                 std::string(kWhat));
            }
            finishLayer(single);
            addLayer(std::move(single), start);
        }
        else if (sawLayerKey)
        {
            mPlan.warnings.push_back(
                mParser.warningAt(start, "layer keys next to \"Layers\" at the top level were ignored"));
        }
    }

    //! The keys a layer list is found under: trtexec's "Layers", and what other writers use.
    static bool isLayerListKey(std::string_view key)
    {
        return key == "Layers" || key == "layers" || key == "LayerInfo";
    }

    // After the '{' of {"Layers": [...], "Bindings": [...]} nested under another key.
    void readLayerListObject()
    {
        for (Token token = mParser.next(); token != Token::kObjectEnd; token = mParser.next())
        {
            std::string keyText(mParser.text());
            if (keyText == "Layers" || keyText == "layers")
            {
                readLayers(mParser.next(), "\"" + keyText + "\"");
            }
            else if (keyText == "Bindings")
            {
                readBindings(mParser.next());
            }
            else if (keyText == "I/O Tensors")
            {
                readIoTensors(mParser.next(), mParser.tokenOffset());
            }
            else if (keyText == "Engine Metadata")
            {
                readEngineMetadata(mParser.next());
            }
            else
            {
                mParser.skipValue(mParser.next());
            }
        }
    }

    void readLayers(Token first, const std::string& what = "\"Layers\"")
    {
        if (first != Token::kArrayBegin)
        {
            mParser.fail(mParser.tokenOffset(),
                         what + " must be an array, found " + std::string(json::tokenDescription(first)));
        }
        for (Token token = mParser.next(); token != Token::kArrayEnd; token = mParser.next())
        {
            std::size_t start = mParser.tokenOffset();
            if (token == Token::kString)
            {
                EngineLayer layer;
                layer.setName(mParser.text());
                layer.line = mParser.lineOf(start);
                mNamesOnly = true;
                addLayer(std::move(layer), start);
            }
            else if (token == Token::kObjectBegin)
            {
                // Read in place at the end of the current chunk: no move of the finished layer.
                EngineLayer& layer = newLayer(start);
                layer.line = mParser.lineOf(start);
                readLayerObject(layer);
                noteLayer(layer, start);
            }
            else
            {
                mPlan.warnings.push_back(mParser.warningAt(start, "an entry of " + what + " is " +
                                                                      std::string(json::tokenDescription(token)) +
                                                                      ", not a name or a layer object; skipped"));
                mParser.skipValue(token);
            }
        }
    }

    void readBindings(Token first)
    {
        if (first != Token::kArrayBegin)
        {
            mPlan.warnings.push_back(mParser.warningAt(mParser.tokenOffset(), "\"Bindings\" is not an array; ignored"));
            mParser.skipValue(first);
            return;
        }
        for (Token token = mParser.next(); token != Token::kArrayEnd; token = mParser.next())
        {
            if (token == Token::kString)
            {
                mPlan.bindings.emplace_back(mParser.text());
            }
            else
            {
                mPlan.warnings.push_back(
                    mParser.warningAt(mParser.tokenOffset(), "a binding is not a string; skipped"));
                mParser.skipValue(token);
            }
        }
    }

    //! The first TensorRT 11.x-only form seen (FORMATS-trt11.md J1, J7): the file was written by TensorRT 11.
    void noteElevenForm(std::size_t offset, std::string_view what)
    {
        if (mPlan.writer.trtMajor == 0)
        {
            mPlan.writer.trtMajor = 11;
            mPlan.writer.line = mParser.lineOf(offset);
            mPlan.writer.what = std::string(what);
        }
    }

    //! A required string member of an "I/O Tensors" entry: anything else is an input error at its line.
    std::string requiredString(Token value, std::string_view key)
    {
        if (value != Token::kString)
        {
            mParser.fail(mParser.tokenOffset(), "\"I/O Tensors\": \"" + std::string(key) + "\" is " +
                                                    std::string(json::tokenDescription(value)) + ", expected a string");
        }
        return std::string(mParser.text());
    }

    //! [1,1,28,28] of "Dimensions", "MinShape", ... in an "I/O Tensors" entry; anything else is an input error.
    std::vector<std::int64_t> requiredShape(Token first, std::string_view key)
    {
        if (first != Token::kArrayBegin)
        {
            mParser.fail(mParser.tokenOffset(), "\"I/O Tensors\": \"" + std::string(key) + "\" is " +
                                                    std::string(json::tokenDescription(first)) + ", expected an array");
        }
        std::vector<std::int64_t> shape;
        for (Token token = mParser.next(); token != Token::kArrayEnd; token = mParser.next())
        {
            std::int64_t value = 0;
            if (token != Token::kNumber || !mParser.integerValue(value))
            {
                mParser.fail(mParser.tokenOffset(), "\"I/O Tensors\": \"" + std::string(key) + "\" holds " +
                                                        std::string(json::tokenDescription(token)) +
                                                        ", expected integers");
            }
            shape.push_back(value);
        }
        return shape;
    }

    //! "ProfileInfo": [{MinShape, OptShape, MaxShape, Format}, ...], one entry per optimization profile (J7, J8).
    void readProfileInfo(Token first, IoTensor& tensor)
    {
        if (first != Token::kArrayBegin)
        {
            mParser.fail(mParser.tokenOffset(), "\"I/O Tensors\": \"ProfileInfo\" of \"" + tensor.name + "\" is " +
                                                    std::string(json::tokenDescription(first)) + ", expected an array");
        }
        for (Token token = mParser.next(); token != Token::kArrayEnd; token = mParser.next())
        {
            if (token != Token::kObjectBegin)
            {
                mParser.fail(mParser.tokenOffset(), "\"I/O Tensors\": a \"ProfileInfo\" entry is " +
                                                        std::string(json::tokenDescription(token)) +
                                                        ", expected an object");
            }
            IoTensor::ProfileShape shape;
            for (Token member = mParser.next(); member != Token::kObjectEnd; member = mParser.next())
            {
                const std::string key(mParser.text());
                Token value = mParser.next();
                if (key == "MinShape" || key == "OptShape" || key == "MaxShape")
                {
                    (key == "MinShape"   ? shape.minShape
                     : key == "OptShape" ? shape.optShape
                                         : shape.maxShape) = requiredShape(value, key);
                }
                else if (key == "Format")
                {
                    shape.format = requiredString(value, key);
                }
                else
                {
                    mParser.skipValue(value);
                }
            }
            tensor.profiles.push_back(std::move(shape));
        }
    }

    //! One "I/O Tensors" object (after its '{'): Name, IOMode, DataType, Dimensions, Location, ProfileInfo.
    IoTensor readIoTensor(std::size_t start)
    {
        IoTensor tensor;
        tensor.line = mParser.lineOf(start);
        bool named = false;
        bool moded = false;
        for (Token member = mParser.next(); member != Token::kObjectEnd; member = mParser.next())
        {
            const std::string key(mParser.text());
            Token value = mParser.next();
            if (key == "Name")
            {
                tensor.name = requiredString(value, key);
                named = true;
            }
            else if (key == "IOMode")
            {
                const std::string mode = requiredString(value, key);
                if (mode != "Input" && mode != "Output")
                {
                    mParser.fail(mParser.tokenOffset(), "\"I/O Tensors\": IOMode \"" + printable(mode, 64) +
                                                            "\" is neither \"Input\" nor \"Output\"");
                }
                tensor.input = mode == "Input";
                moded = true;
            }
            else if (key == "DataType" || key == "Datatype")
            {
                tensor.dataType = requiredString(value, key);
                tensor.precision = precisionFromFormat(tensor.dataType);
            }
            else if (key == "Dimensions")
            {
                tensor.dimensions = requiredShape(value, key);
            }
            else if (key == "Location")
            {
                tensor.location = requiredString(value, key);
            }
            else if (key == "ProfileInfo")
            {
                readProfileInfo(value, tensor);
            }
            else
            {
                mParser.skipValue(value); // IsShapeInferenceIO, and keys of later releases
            }
        }
        if (!named || !moded)
        {
            mParser.fail(start, std::string("\"I/O Tensors\": an entry has no ") + (named ? "\"IOMode\"" : "\"Name\""));
        }
        return tensor;
    }

    //! TensorRT 11's "I/O Tensors" (FORMATS-trt11.md J7): the engine's inputs and outputs, read as its bindings.
    void readIoTensors(Token first, std::size_t keyOffset)
    {
        noteElevenForm(keyOffset, "\"I/O Tensors\" objects (a TensorRT 11.x form)");
        if (first != Token::kArrayBegin)
        {
            mParser.fail(mParser.tokenOffset(), "\"I/O Tensors\" is " + std::string(json::tokenDescription(first)) +
                                                    ", expected an array of tensor objects");
        }
        for (Token token = mParser.next(); token != Token::kArrayEnd; token = mParser.next())
        {
            if (token != Token::kObjectBegin)
            {
                mParser.fail(mParser.tokenOffset(), "an entry of \"I/O Tensors\" is " +
                                                        std::string(json::tokenDescription(token)) +
                                                        ", expected a tensor object");
            }
            IoTensor tensor = readIoTensor(mParser.tokenOffset());
            mPlan.bindings.push_back(tensor.name);
            mPlan.ioTensors.push_back(std::move(tensor));
        }
    }

    //! TensorRT 11.1's "Engine Metadata": {"Multi-Device": "Disabled"} (FORMATS-trt11.md J9).
    void readEngineMetadata(Token first)
    {
        if (first != Token::kObjectBegin)
        {
            mParser.fail(mParser.tokenOffset(), "\"Engine Metadata\" is " + std::string(json::tokenDescription(first)) +
                                                    ", expected an object");
        }
        for (Token token = mParser.next(); token != Token::kObjectEnd; token = mParser.next())
        {
            std::string key(mParser.text());
            mPlan.engineMetadata.emplace_back(std::move(key), mParser.valueText(mParser.next()));
        }
    }

    // After the layer's '{'.
    void readLayerObject(EngineLayer& layer)
    {
        mSeenKeys = 0;
        mOtherFields.clear();
        for (Token token = mParser.next(); token != Token::kObjectEnd; token = mParser.next())
        {
            readLayerMember(layer, mParser.text(), mParser.tokenOffset());
        }
        finishLayer(layer);
    }

    std::string stringMember(Token value, std::string_view key)
    {
        if (value == Token::kString)
        {
            return std::string(mParser.text());
        }
        std::size_t at = mParser.tokenOffset();
        mPlan.warnings.push_back(mParser.warningAt(at, "\"" + std::string(key) + "\" is " +
                                                           std::string(json::tokenDescription(value)) +
                                                           ", expected a string"));
        return mParser.valueText(value);
    }

    void noteDuplicate(std::uint32_t bit, std::string_view key, std::size_t offset)
    {
        if ((mSeenKeys & bit) != 0)
        {
            mPlan.warnings.push_back(mParser.warningAt(offset, "duplicate key \"" + std::string(key) +
                                                                   "\" in a layer; the last value is used"));
        }
        mSeenKeys |= bit;
    }

    enum class LayerKey
    {
        kName,
        kLayerType,
        kInputs,
        kOutputs,
        kParameterType,
        kOrigin,
        kTacticName,
        kTacticValue,
        kPluginType,
        kMetadata,
        kActivation, // Activation, ConvActivation
        kWeights,    // Weights, ConvWeights
        kConstants,  // TensorRT 11 Myelin layers' weights and scalars (FORMATS-trt11.md J6): not inputs; skipped
        kOther,
    };

    static LayerKey classify(std::string_view key)
    {
        static constexpr std::pair<std::string_view, LayerKey> kKeys[] = {
            {"Name", LayerKey::kName},
            {"LayerType", LayerKey::kLayerType},
            {"Inputs", LayerKey::kInputs},
            {"Outputs", LayerKey::kOutputs},
            {"ParameterType", LayerKey::kParameterType},
            {"Origin", LayerKey::kOrigin},
            {"TacticName", LayerKey::kTacticName},
            {"TacticValue", LayerKey::kTacticValue},
            {"PluginType", LayerKey::kPluginType},
            {"Metadata", LayerKey::kMetadata},
            {"Activation", LayerKey::kActivation},
            {"ConvActivation", LayerKey::kActivation},
            {"Weights", LayerKey::kWeights},
            {"ConvWeights", LayerKey::kWeights},
            {"Constants", LayerKey::kConstants},
        };
        // Every known key starts with one of these letters: most other keys ("Kernel", "Stride", "HasBias" ...)
        // are told apart by their first byte alone.
        if (key.empty() || std::string_view("NLIOPTMACW").find(key.front()) == std::string_view::npos)
        {
            return LayerKey::kOther;
        }
        for (const auto& [name, id] : kKeys)
        {
            if (key == name) // compares sizes first
            {
                return id;
            }
        }
        return LayerKey::kOther;
    }

    // Reads the value of one layer member (the key was just read). Returns true for keys that only layers have.
    bool readLayerMember(EngineLayer& layer, std::string_view key, std::size_t keyOffset)
    {
        LayerKey id = classify(key);
        if (id == LayerKey::kOther)
        {
            // The key is copied before the value is read: its view dies with the next token.
            mOtherFields.emplaceWith(key, [&](std::string& out) { mParser.appendValueText(mParser.next(), out); });
            return false;
        }
        std::string keyText(key); // known keys fit the short-string buffer: no allocation
        Token value = mParser.next();
        auto unique = [&](std::uint32_t bit) { noteDuplicate(bit, keyText, keyOffset); };
        switch (id)
        {
        case LayerKey::kName:
            unique(1u << 0);
            layer.name = stringMember(value, keyText);
            return true;
        case LayerKey::kLayerType:
            unique(1u << 1);
            layer.type = stringMember(value, keyText);
            return true;
        case LayerKey::kInputs:
        case LayerKey::kOutputs:
        {
            bool inputs = id == LayerKey::kInputs;
            unique(inputs ? 1u << 2 : 1u << 3);
            mTensors.clear();
            readTensors(value, keyText, mTensors);
            std::vector<EngineTensor>& tensors = inputs ? layer.inputs : layer.outputs;
            tensors.clear();
            tensors.reserve(mTensors.size());
            std::move(mTensors.begin(), mTensors.end(), std::back_inserter(tensors));
            return true;
        }
        case LayerKey::kParameterType:
            unique(1u << 4);
            layer.parameterType = stringMember(value, keyText);
            return true;
        case LayerKey::kOrigin:
            unique(1u << 5);
            layer.origin = stringMember(value, keyText);
            return true;
        case LayerKey::kTacticName:
            unique(1u << 6);
            layer.tacticName = stringMember(value, keyText);
            return true;
        case LayerKey::kTacticValue:
            unique(1u << 7);
            layer.tacticValue = mParser.valueText(value); // "0x..." string or a number
            return true;
        case LayerKey::kPluginType:
            unique(1u << 8);
            layer.pluginType = stringMember(value, keyText);
            return true;
        case LayerKey::kMetadata:
            unique(1u << 9);
            layer.hasMetadata = true;
            layer.metadata = stringMember(value, keyText);
            return true;
        case LayerKey::kActivation:
        {
            std::string activation = stringMember(value, keyText);
            if (layer.activation.empty())
            {
                layer.activation = activation;
            }
            mOtherFields.emplace_back(keyText, activation);
            return true;
        }
        case LayerKey::kWeights:
        {
            // {"Type": "Int8", "Count": 9408}: kept whole in otherFields, Type also as weightsPrecision.
            mOtherFields.emplaceWith(keyText, [&](std::string& out) { mParser.appendValueText(value, out); });
            std::optional<Precision> precision =
                value == Token::kObjectBegin ? weightsTypeOf(mOtherFields.backValue()) : std::optional<Precision>();
            if (precision && !layer.weightsPrecision)
            {
                layer.weightsPrecision = precision;
            }
            return true;
        }
        case LayerKey::kConstants:
            mParser.skipValue(value);
            return true;
        case LayerKey::kOther:
            break;
        }
        return false;
    }

    // "Type" of a compact {"Type":"Int8","Count":9408} object.
    static std::optional<Precision> weightsTypeOf(std::string_view compact)
    {
        static constexpr std::string_view kType = "\"Type\":\"";
        std::size_t at = compact.find(kType);
        if (at == std::string_view::npos)
        {
            return std::nullopt;
        }
        std::size_t start = at + kType.size();
        std::size_t end = compact.find('"', start);
        if (end == std::string_view::npos)
        {
            return std::nullopt;
        }
        return precisionFromFormat(compact.substr(start, end - start));
    }

    void readTensors(Token first, std::string_view key, std::vector<EngineTensor>& tensors)
    {
        if (first != Token::kArrayBegin)
        {
            mPlan.warnings.push_back(mParser.warningAt(
                mParser.tokenOffset(), "\"" + std::string(key) + "\" is not an array of tensors; ignored"));
            mParser.skipValue(first);
            return;
        }
        for (Token token = mParser.next(); token != Token::kArrayEnd; token = mParser.next())
        {
            if (token != Token::kObjectBegin)
            {
                if (token == Token::kString)
                {
                    // Some writers list tensor names only.
                    EngineTensor tensor;
                    tensor.name = mParser.text();
                    tensors.push_back(std::move(tensor));
                    continue;
                }
                mPlan.warnings.push_back(
                    mParser.warningAt(mParser.tokenOffset(), "a tensor entry is not an object; skipped"));
                mParser.skipValue(token);
                continue;
            }
            EngineTensor tensor;
            for (Token member = mParser.next(); member != Token::kObjectEnd; member = mParser.next())
            {
                std::string_view name = mParser.text();
                if (name == "Name")
                {
                    tensor.name = stringMember(mParser.next(), "Name");
                }
                else if (name == "Location")
                {
                    tensor.location = stringMember(mParser.next(), "Location");
                }
                else if (name == "Format/Datatype")
                {
                    Token value = mParser.next();
                    if (value == Token::kString)
                    {
                        mFormats.set(tensor, mParser.text());
                    }
                    else
                    {
                        std::string text = stringMember(value, "Format/Datatype");
                        mFormats.set(tensor, text);
                    }
                }
                else if (name == "Datatype")
                {
                    // TensorRT 11: the precision, alone (FORMATS-trt11.md J1, J4).
                    readDatatype(mParser.next(), tensor);
                }
                else if (name == "Format")
                {
                    std::size_t at = mParser.tokenOffset();
                    Token value = mParser.next();
                    tensor.format = value == Token::kString ? mFormats.layout(mParser.text())
                                                            : mFormats.layout(stringMember(value, "Format"));
                    noteElevenForm(at, "\"Datatype\" and \"Format\" as two keys (a TensorRT 11.x form)");
                }
                else if (name == "Dimensions")
                {
                    readDimensions(mParser.next(), tensor);
                }
                else
                {
                    mParser.skipValue(mParser.next()); // Strides, StrideOrder (TensorRT 11, J5), ...
                }
            }
            if (tensor.vectorWidth == 0)
            {
                tensor.vectorWidth = vectorWidthFromFormat(tensor.format);
            }
            tensors.push_back(std::move(tensor));
        }
    }

    void readDatatype(Token value, EngineTensor& tensor)
    {
        std::size_t at = mParser.tokenOffset();
        std::string text = value == Token::kString ? std::string(mParser.text()) : stringMember(value, "Datatype");
        tensor.precision = precisionFromFormat(text);
        if (tensor.precision == Precision::kUnknown)
        {
            mPlan.warnings.push_back(mParser.warningAt(at, "\"Datatype\" \"" + printable(text, 64) +
                                                               "\" is not a data type qdq-doctor knows; the "
                                                               "tensor's precision is unknown"));
        }
        if (tensor.format.empty())
        {
            tensor.format = mFormats.layout(text); // until a "Format" key replaces it
        }
    }

    void readDimensions(Token first, EngineTensor& tensor)
    {
        if (first != Token::kArrayBegin)
        {
            mPlan.warnings.push_back(
                mParser.warningAt(mParser.tokenOffset(), "\"Dimensions\" is not an array; ignored"));
            mParser.skipValue(first);
            return;
        }
        mDims.clear();
        readDimensionValues(tensor);
        tensor.dimensions.assign(mDims.begin(), mDims.end());
    }

    void readDimensionValues(EngineTensor& tensor)
    {
        for (Token token = mParser.next(); token != Token::kArrayEnd; token = mParser.next())
        {
            std::int64_t value = 0;
            if (token == Token::kNumber)
            {
                if (!mParser.integerValue(value))
                {
                    std::string_view raw = mParser.text();
                    std::string shown = raw.size() > 40 ? std::string(raw.substr(0, 40)) + "..." : std::string(raw);
                    mParser.fail(mParser.tokenOffset(), "dimension " + shown + " is not an integer in range");
                }
                mDims.push_back(value);
            }
            else if (token == Token::kString)
            {
                // A vectorized channel printed as "64:32".
                std::string_view raw = mParser.text();
                std::size_t colon = raw.find(':');
                std::string_view count = raw.substr(0, colon);
                auto result = std::from_chars(count.data(), count.data() + count.size(), value);
                int width = 0;
                bool ok = result.ec == std::errc() && result.ptr == count.data() + count.size();
                if (ok && colon != std::string_view::npos)
                {
                    std::string_view vector = raw.substr(colon + 1);
                    auto widthResult = std::from_chars(vector.data(), vector.data() + vector.size(), width);
                    ok = widthResult.ec == std::errc() && widthResult.ptr == vector.data() + vector.size();
                }
                if (!ok)
                {
                    mPlan.warnings.push_back(mParser.warningAt(
                        mParser.tokenOffset(), "dimension \"" + printable(raw, 64) + "\" is not a number; read as -1"));
                    value = -1;
                }
                mDims.push_back(value);
                if (width > 0)
                {
                    tensor.vectorWidth = width;
                }
            }
            else
            {
                mPlan.warnings.push_back(
                    mParser.warningAt(mParser.tokenOffset(), "a dimension is not a number; read as -1"));
                mParser.skipValue(token);
                mDims.push_back(-1);
            }
        }
    }

    void finishLayer(EngineLayer& layer)
    {
        mSeenKeys = 0;
        // An exact-size copy of the scratch list keeps the model small; the scratch keeps its capacity.
        layer.otherFields = mOtherFields;
        mOtherFields.clear();
        layer.findProfileSuffix();
        mDetailed = true;
    }

    void addLayer(EngineLayer layer, std::size_t offset)
    {
        EngineLayer& added = newLayer(offset);
        added = std::move(layer);
        noteLayer(added, offset);
    }

    //! A new empty layer at the end of the list.
    EngineLayer& newLayer(std::size_t offset)
    {
        if (mLayerCount >= mLimits.maxGraphNodes)
        {
            mParser.fail(offset, "more than " + std::to_string(mLimits.maxGraphNodes) +
                                     " layers (raise the limit with --max-graph-nodes)");
        }
        if (mChunks.empty() || mChunks.back().size() == kChunkSize)
        {
            mChunks.emplace_back();
            mChunks.back().reserve(kChunkSize);
        }
        ++mLayerCount;
        return mChunks.back().emplace_back();
    }

    //! Checks a layer that has been read, and releases the text before it.
    void noteLayer(const EngineLayer& layer, std::size_t offset)
    {
        if (layer.name.empty())
        {
            mPlan.warnings.push_back(mParser.warningAt(offset, "a layer has no name"));
        }
        if (mMapped != nullptr && offset > mReleased + (4u << 20))
        {
            // The text before this layer is not needed again (only error messages may look back, and re-reading a
            // released page of a file mapping is harmless).
            mMapped->releaseBefore(offset);
            mReleased = offset;
        }
    }

    void finish()
    {
        // Layers were collected in chunks (no reallocation while reading); one exact-size vector now, freeing each
        // chunk once moved.
        mPlan.layers.reserve(mLayerCount);
        for (std::vector<EngineLayer>& chunk : mChunks)
        {
            std::move(chunk.begin(), chunk.end(), std::back_inserter(mPlan.layers));
            std::vector<EngineLayer>().swap(chunk);
        }
        mChunks.clear();
        mPlan.assignOptimizationProfiles();
        if (mDetailed)
        {
            mPlan.form = LayerListForm::kDetailed;
        }
        else if (mNamesOnly)
        {
            mPlan.form = LayerListForm::kNamesOnly;
        }
        else
        {
            mPlan.form = LayerListForm::kUnknown;
            SourceLocation where;
            where.path = mParser.path();
            mPlan.warnings.push_back(ReaderWarning{where, "the layer list is empty"});
        }
    }

    static constexpr std::size_t kChunkSize = 4096;

    PullParser mParser;
    std::vector<std::vector<EngineLayer>> mChunks;
    std::size_t mLayerCount = 0;
    FieldList mOtherFields;
    std::vector<EngineTensor> mTensors;
    std::vector<std::int64_t> mDims;
    Limits mLimits;
    MappedFile* mMapped = nullptr;
    std::size_t mReleased = 0;
    EnginePlan mPlan;
    FormatCache mFormats;
    std::uint32_t mSeenKeys = 0;
    bool mNamesOnly = false;
    bool mDetailed = false;
};

EnginePlan readLayerInfoText(std::string_view text, const std::string& path, const Limits& limits, MappedFile* mapped)
{
    std::size_t pos = json::firstContentOffset(text);
    if (text.substr(pos, 3) != "---" || text.size() > limits.maxInputBytes)
    {
        json::requireJsonStart(text, path, "{[", kWhat, limits);
    }
    if (pos < text.size() && text[pos] == '[')
    {
        // A bare array of layer objects is a layer list; an array of profile, timing or device records is not.
        InputKind kind = InputKind::kUnknown;
        try
        {
            kind = detectInputKindFromPrefix(text.substr(0, 256 * 1024), path);
        }
        catch (const InputError&)
        {
        }
        if (kind == InputKind::kProfile || kind == InputKind::kTiming || kind == InputKind::kMetadata)
        {
            SourceLocation where;
            where.path = path;
            where.line = lineOfOffset(text, pos);
            const char* looksLike = kind == InputKind::kProfile  ? "a profile (--exportProfile)"
                                    : kind == InputKind::kTiming ? "a timing (--exportTimes)"
                                                                 : "a TREx device metadata";
            throw InputError(where, std::string("the top level is a JSON array: this looks like ") + looksLike +
                                        " JSON, not " + std::string(kWhat) +
                                        " (a bare array is read as layer-info when its objects are layers)");
        }
    }
    LayerInfoReader reader(text, path, limits, mapped);
    return reader.read();
}
} // namespace

EnginePlan readLayerInfo(const std::string& path, const Limits& limits)
{
    MappedFile file(path, limits);
    return readLayerInfoText(file.bytes(), path, limits, &file);
}

EnginePlan readLayerInfoFromBuffer(std::string_view text, const std::string& pathForMessages, const Limits& limits)
{
    return readLayerInfoText(text, pathForMessages, limits, nullptr);
}

} // namespace qdq
