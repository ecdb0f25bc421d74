// Files a command is still writing (a fixed model's candidate, a report under its temporary name), removed when the
// process is interrupted: Ctrl-C during `fix` of a large model used to leave a hidden candidate of hundreds of MB in
// the user's folder, because destructors do not run when a signal ends the process.
#pragma once

#include <string>

namespace qdq
{

//! Installs handlers for SIGINT, SIGTERM and SIGHUP that remove every file registered below and then end the process
//! by the same signal, as if no handler had been installed (the exit status a shell sees is unchanged). Call once,
//! early in main. Only the files are removed: nothing else is done in the handler (it is async-signal-safe).
void removeTemporaryFilesOnInterrupt();

//! Registers a file to remove on interrupt while it lives; release() or destruction unregisters it (the file is not
//! removed then: its owner renames or removes it). At most 32 files are registered at once and a path may be at most
//! 4,095 bytes; a file beyond that is simply not removed on interrupt.
class InterruptCleanup
{
public:
    InterruptCleanup() = default;
    explicit InterruptCleanup(const std::string& path, bool folder = false) { watch(path, folder); }
    ~InterruptCleanup() { release(); }
    InterruptCleanup(const InterruptCleanup&) = delete;
    InterruptCleanup& operator=(const InterruptCleanup&) = delete;

    //! Starts watching path (releasing the file watched before). A folder is removed after the files, and only when
    //! they have left it empty.
    void watch(const std::string& path, bool folder = false);
    //! Stops watching; the file is left as it is.
    void release();

private:
    int mSlot = -1;
};

} // namespace qdq
