// The demo sample compiled into the binary (samples/c-resnet-conv-maxpool), so `qdq-doctor demo` needs no file.
#pragma once

#include <string>
#include <vector>

namespace qdq
{

struct EmbeddedFile
{
    std::string name;
    std::string bytes;
};

const std::vector<EmbeddedFile>& embeddedSample();

} // namespace qdq
