// The task graph diagnose runs on: prerequisites first, priority by order of adding, a failure skips what comes after
// it, the first error in the order of adding is rethrown.
#include "src/task_graph.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using qdq::TaskGraph;

TEST(TaskGraph, EachTaskRunsAfterItsPrerequisitesOnEveryThreadCount)
{
    for (unsigned helpers : {0u, 1u, 3u})
    {
        TaskGraph graph;
        std::vector<std::atomic<int>> doneAt(6);
        std::atomic<int> clock{0};
        const auto mark = [&](int task) { return [&, task] { doneAt[task] = ++clock; }; };
        const auto a = graph.add("a", {}, mark(0));
        const auto b = graph.add("b", {}, mark(1));
        const auto c = graph.add("c", {a}, mark(2));
        const auto d = graph.add("d", {a, b}, mark(3));
        const auto e = graph.add("e", {c, d}, mark(4));
        graph.add("f", {e}, mark(5));
        graph.run(helpers);
        EXPECT_LT(doneAt[0], doneAt[2]);
        EXPECT_LT(doneAt[0], doneAt[3]);
        EXPECT_LT(doneAt[1], doneAt[3]);
        EXPECT_LT(doneAt[2], doneAt[4]);
        EXPECT_LT(doneAt[3], doneAt[4]);
        EXPECT_LT(doneAt[4], doneAt[5]);
        EXPECT_EQ(graph.finished().size(), 6u);
    }
}

TEST(TaskGraph, OneThreadTakesReadyTasksInTheOrderAdded)
{
    TaskGraph graph;
    std::string order;
    const auto first = graph.add("first", {}, [&] { order += "1"; });
    graph.add("needs first", {first}, [&] { order += "3"; });
    graph.add("second", {}, [&] { order += "2"; });
    graph.run(0);
    // After "first" the scan starts again from the top: "needs first", added before "second", is ready and goes first.
    EXPECT_EQ(order, "132");
}

TEST(TaskGraph, AFailureSkipsItsDependentsAndIsRethrown)
{
    TaskGraph graph;
    std::vector<std::string> ran;
    const auto reads = graph.add("read", {}, [] { throw std::runtime_error("bad file"); });
    const auto correlates = graph.add("correlate", {reads}, [&] { ran.push_back("correlate"); });
    graph.add("rule", {correlates}, [&] { ran.push_back("rule"); });
    graph.add("independent", {}, [&] { ran.push_back("independent"); });
    try
    {
        graph.run(1);
        FAIL() << "no exception";
    }
    catch (const std::runtime_error& error)
    {
        EXPECT_STREQ(error.what(), "bad file");
    }
    EXPECT_EQ(ran, std::vector<std::string>{"independent"});
    EXPECT_EQ(graph.finished().size(), 4u);
}

TEST(TaskGraph, TheFirstFailureInTheOrderAddedWinsWhateverFinishedFirst)
{
    TaskGraph graph;
    std::atomic<bool> laterThrew{false};
    graph.add("first", {},
              [&]
              {
                  while (!laterThrew)
                  {
                      std::this_thread::yield();
                  }
                  throw std::runtime_error("first");
              });
    graph.add("later", {},
              [&]
              {
                  laterThrew = true;
                  throw std::runtime_error("later");
              });
    try
    {
        graph.run(1);
        FAIL() << "no exception";
    }
    catch (const std::runtime_error& error)
    {
        EXPECT_STREQ(error.what(), "first");
    }
}

TEST(TaskGraph, APrerequisiteAddedLaterIsRefused)
{
    TaskGraph graph;
    EXPECT_THROW(graph.add("a", {0}, [] {}), std::logic_error);
}
