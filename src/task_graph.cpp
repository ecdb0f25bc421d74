#include "src/task_graph.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace qdq
{

TaskGraph::TaskId TaskGraph::add(std::string name, std::vector<TaskId> after, std::function<void()> work)
{
    for (TaskId prerequisite : after)
    {
        if (prerequisite >= mTasks.size())
        {
            // Only earlier tasks can be prerequisites: the graph cannot have a cycle.
            throw std::logic_error("task '" + name + "' comes after a task not added yet");
        }
    }
    Task task;
    task.name = std::move(name);
    task.after = std::move(after);
    task.work = std::move(work);
    mTasks.push_back(std::move(task));
    return mTasks.size() - 1;
}

TaskGraph::Task* TaskGraph::takeReadyTask()
{
    // A linear scan: diagnose has about 60 tasks, each taking far longer than the scan.
    for (Task& task : mTasks)
    {
        if (task.state != State::kWaiting)
        {
            continue;
        }
        bool ready = true;
        bool blocked = false;
        for (TaskId prerequisite : task.after)
        {
            const State state = mTasks[prerequisite].state;
            blocked = blocked || state == State::kFailed || state == State::kSkipped;
            ready = ready && state == State::kDone;
        }
        if (blocked)
        {
            task.state = State::kSkipped;
            mFinished.push_back(task.name);
            --mUnfinished;
            continue; // later tasks that come after it see it skipped in this same scan
        }
        if (ready)
        {
            task.state = State::kRunning;
            return &task;
        }
    }
    return nullptr;
}

void TaskGraph::work()
{
    std::unique_lock<std::mutex> lock(mMutex);
    while (mUnfinished > 0)
    {
        Task* task = takeReadyTask();
        if (task == nullptr)
        {
            if (mUnfinished == 0)
            {
                break;
            }
            mChanged.wait(lock);
            continue;
        }
        lock.unlock();
        std::exception_ptr error;
        try
        {
            task->work();
        }
        catch (...)
        {
            error = std::current_exception();
        }
        lock.lock();
        task->state = error ? State::kFailed : State::kDone;
        task->error = error;
        mFinished.push_back(task->name);
        --mUnfinished;
        mChanged.notify_all();
    }
    mChanged.notify_all();
}

void TaskGraph::run(unsigned helpers)
{
    mUnfinished = mTasks.size();
    std::vector<std::thread> threads;
    threads.reserve(helpers);
    for (unsigned i = 0; i < helpers; ++i)
    {
        threads.emplace_back([this] { work(); });
    }
    work();
    for (auto& thread : threads)
    {
        thread.join();
    }
    for (const Task& task : mTasks)
    {
        if (task.error)
        {
            std::rethrow_exception(task.error);
        }
    }
}

} // namespace qdq
