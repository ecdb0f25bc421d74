// libFuzzer target: the profile JSON reader (--exportProfile) on arbitrary text.
#include "fuzz_common.h"
#include "qdq/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string path = "fuzz-profile.json";
    try
    {
        qdq::Profile profile = qdq::readProfileFromBuffer(qdq::fuzz::asView(data, size), path, qdq::fuzz::fuzzLimits());
        (void)profile;
    }
    catch (const qdq::InputError& error)
    {
        qdq::fuzz::checkError(error, path);
    }
    return 0;
}
