// The registry is a fixed table in static storage, so that the signal handler reads no memory that another thread may
// free: each slot is free, being written, or holds a path to remove.
#include "qdq/interrupt_cleanup.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace qdq
{

namespace
{

constexpr int kSlots = 32;
constexpr std::size_t kPathBytes = 4096;

enum SlotState : int
{
    kFree = 0,
    kWriting = 1,
    kWatchedFile = 2,
    kWatchedFolder = 3,
};

struct Slot
{
    std::atomic<int> state{kFree};
    char path[kPathBytes] = {};
};

Slot gSlots[kSlots];

extern "C" void removeWatchedFilesAndReraise(int signalNumber)
{
    for (Slot& slot : gSlots)
    {
        if (slot.state.load(std::memory_order_acquire) == kWatchedFile)
        {
            ::unlink(slot.path);
        }
    }
    for (Slot& slot : gSlots)
    {
        if (slot.state.load(std::memory_order_acquire) == kWatchedFolder)
        {
            ::rmdir(slot.path); // fails, harmlessly, when something else is still in it
        }
    }
    // End as the signal would have ended the process without this handler.
    std::signal(signalNumber, SIG_DFL);
    std::raise(signalNumber);
}

} // namespace

void removeTemporaryFilesOnInterrupt()
{
    for (int signalNumber : {SIGINT, SIGTERM, SIGHUP})
    {
        struct sigaction action
        {
        };
        struct sigaction previous
        {
        };
        // A signal the process was started to ignore (nohup, a shell's background job) stays ignored.
        if (::sigaction(signalNumber, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN)
        {
            continue;
        }
        action.sa_handler = removeWatchedFilesAndReraise;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_RESETHAND;
        ::sigaction(signalNumber, &action, nullptr);
    }
}

void InterruptCleanup::watch(const std::string& path, bool folder)
{
    release();
    if (path.empty() || path.size() >= kPathBytes || path.find('\0') != std::string::npos)
    {
        return;
    }
    for (int i = 0; i < kSlots; ++i)
    {
        int expected = kFree;
        if (gSlots[i].state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel))
        {
            std::memcpy(gSlots[i].path, path.c_str(), path.size() + 1);
            gSlots[i].state.store(folder ? kWatchedFolder : kWatchedFile, std::memory_order_release);
            mSlot = i;
            return;
        }
    }
}

void InterruptCleanup::release()
{
    if (mSlot >= 0)
    {
        gSlots[mSlot].state.store(kFree, std::memory_order_release);
        mSlot = -1;
    }
}

} // namespace qdq
