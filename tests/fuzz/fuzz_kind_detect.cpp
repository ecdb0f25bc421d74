// libFuzzer target: content-based kind detection on an arbitrary file prefix.
#include "fuzz_common.h"
#include "qdq/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string path = "fuzz-input";
    try
    {
        qdq::InputKind kind = qdq::detectInputKindFromPrefix(qdq::fuzz::asView(data, size), path);
        if (qdq::inputKindName(kind).empty())
        {
            __builtin_trap();
        }
    }
    catch (const qdq::InputError& error)
    {
        qdq::fuzz::checkError(error, path);
    }
    return 0;
}
