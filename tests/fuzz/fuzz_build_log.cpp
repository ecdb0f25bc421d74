// libFuzzer target: the verbose build log reader on arbitrary text.
#include "fuzz_common.h"
#include "qdq/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string path = "fuzz-build.log";
    try
    {
        qdq::BuildLog log = qdq::readBuildLogFromBuffer(qdq::fuzz::asView(data, size), path, qdq::fuzz::fuzzLimits());
        (void)log;
    }
    catch (const qdq::InputError& error)
    {
        qdq::fuzz::checkError(error, path);
    }
    return 0;
}
