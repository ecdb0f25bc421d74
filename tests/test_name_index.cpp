// NameIndex: the open-addressing name -> id index behind the ONNX graph's tensor and node look-ups.
#include "qdq/name_index.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace qdq
{
namespace
{

TEST(NameIndex, FindsEveryNameAfterGrowingAndKeepsTheFirstId)
{
    std::vector<std::string> names;
    NameIndex index;
    const auto nameOf = [&](std::uint32_t id) -> const std::string& { return names[id]; };
    EXPECT_EQ(index.find("anything", nameOf), NameIndex::kNone); // empty index
    for (int i = 0; i < 5000; ++i)
    {
        names.push_back("/model/layer" + std::to_string(i) + "/Conv_output_0");
        const auto id = static_cast<std::uint32_t>(names.size() - 1);
        ASSERT_EQ(index.insert(names.back(), id, nameOf), id);
    }
    EXPECT_EQ(index.size(), 5000u);
    // A second insert of a known name returns the first id and adds nothing.
    EXPECT_EQ(index.insert("/model/layer17/Conv_output_0", 9999, nameOf), 17u);
    EXPECT_EQ(index.size(), 5000u);
    for (std::uint32_t id = 0; id < names.size(); ++id)
    {
        ASSERT_EQ(index.find(names[id], nameOf), id);
    }
    EXPECT_EQ(index.find("/model/layer5000/Conv_output_0", nameOf), NameIndex::kNone);
    EXPECT_EQ(index.find("", nameOf), NameIndex::kNone);
}

TEST(NameIndex, CopiesLookUpThroughTheirOwnNames)
{
    std::vector<std::string> names = {"a", "b", ""};
    NameIndex index;
    index.reserve(3);
    auto nameOf = [&](std::uint32_t id) -> const std::string& { return names[id]; };
    for (std::uint32_t id = 0; id < names.size(); ++id)
    {
        index.insert(names[id], id, nameOf);
    }
    NameIndex copy = index;
    std::vector<std::string> copiedNames = names;
    names.clear(); // the original names are gone: the copy must not need them
    auto copiedNameOf = [&](std::uint32_t id) -> const std::string& { return copiedNames[id]; };
    EXPECT_EQ(copy.find("b", copiedNameOf), 1u);
    EXPECT_EQ(copy.find("", copiedNameOf), 2u);
    EXPECT_EQ(copy.find("c", copiedNameOf), NameIndex::kNone);
}

} // namespace
} // namespace qdq
