#include "qdq/heap_prefault.h"

#include <algorithm>
#include <cstdint>
#include <thread>

#if defined(__GLIBC__) // defined by the C library's headers, included above

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace qdq
{

void startHeapPrefault()
{
#if defined(__GLIBC__) && defined(MADV_POPULATE_WRITE)
    static bool started = false;
    if (started)
    {
        return;
    }
    started = true;
    mallopt(M_MMAP_THRESHOLD, 256 << 20); // large vectors come from the heap too, so they are prefaulted
    mallopt(M_TRIM_THRESHOLD, 1 << 30);   // freed memory stays mapped for the next allocation
    mallopt(M_TOP_PAD, 32 << 20);         // the heap grows ahead of use (32 MiB measured best of 32/64/128)
    std::thread(
        []
        {
            constexpr std::uintptr_t kPage = 4096;
            std::uintptr_t done = (reinterpret_cast<std::uintptr_t>(sbrk(0)) + kPage - 1) & ~(kPage - 1);
            unsigned idleMicroseconds = 100;
            for (;;)
            {
                const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(sbrk(0)) & ~(kPage - 1);
                if (end > done)
                {
                    // In 2 MiB steps, front first: the calling thread works its way up from `done` too.
                    const std::uintptr_t step = std::min<std::uintptr_t>(end - done, 2 << 20);
                    if (madvise(reinterpret_cast<void*>(done), step, MADV_POPULATE_WRITE) != 0)
                    {
                        return; // an older kernel: nothing to gain
                    }
                    done += step;
                    idleMicroseconds = 100;
                }
                else
                {
                    usleep(idleMicroseconds);
                    idleMicroseconds = idleMicroseconds < 5000 ? idleMicroseconds * 2 : idleMicroseconds;
                }
            }
        })
        .detach();
#endif
}

} // namespace qdq
