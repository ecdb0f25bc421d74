// libFuzzer target: the layer-info JSON reader (--exportLayerInfo) on arbitrary text.
#include "fuzz_common.h"
#include "qdq/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string path = "fuzz-layers.json";
    try
    {
        qdq::EnginePlan plan =
            qdq::readLayerInfoFromBuffer(qdq::fuzz::asView(data, size), path, qdq::fuzz::fuzzLimits());
        (void)plan;
    }
    catch (const qdq::InputError& error)
    {
        qdq::fuzz::checkError(error, path);
    }
    return 0;
}
