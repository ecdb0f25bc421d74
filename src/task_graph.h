// A small task graph: named tasks, each run once the tasks it comes after are done, by the calling thread and a fixed
// number of helpers. diagnose is written as one (src/diagnose.cpp): what runs after what reads top-down where the
// tasks are added.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace qdq
{

class TaskGraph
{
public:
    using TaskId = std::size_t;

    //! Adds a task that runs after every task in `after` is done. Tasks are taken in the order they were added among
    //! those ready, so the order of adding is also the priority.
    TaskId add(std::string name, std::vector<TaskId> after, std::function<void()> work);

    //! Runs every task on the calling thread and `helpers` more. A task whose prerequisite threw is skipped, and so
    //! are its dependents. Then rethrows the exception of the first task (in the order added) that threw.
    void run(unsigned helpers);

    //! The names of the tasks in the order they finished (run or skipped), for tests.
    const std::vector<std::string>& finished() const { return mFinished; }

private:
    enum class State
    {
        kWaiting,
        kRunning,
        kDone,
        kFailed,
        kSkipped
    };
    struct Task
    {
        std::string name;
        std::vector<TaskId> after;
        std::function<void()> work;
        State state = State::kWaiting;
        std::exception_ptr error;
    };

    //! The first waiting task whose prerequisites are done, marked running; or none. Skips the tasks whose
    //! prerequisite failed or was skipped. Called with mMutex held.
    Task* takeReadyTask();
    void work();

    std::vector<Task> mTasks;
    std::vector<std::string> mFinished;
    std::mutex mMutex;
    std::condition_variable mChanged;
    std::size_t mUnfinished = 0;
};

} // namespace qdq
