// libFuzzer target: the ONNX reader on arbitrary bytes. Any exception other than InputError, any sanitizer report,
// a hang or a large allocation is a bug.
#include "fuzz_common.h"
#include "qdq/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string path = "fuzz.onnx";
    try
    {
        qdq::OnnxGraph graph =
            qdq::readOnnxFromBuffer(qdq::fuzz::asView(data, size), path, {}, qdq::fuzz::fuzzLimits());
        (void)graph;
    }
    catch (const qdq::InputError& error)
    {
        qdq::fuzz::checkError(error, path);
    }
    return 0;
}
