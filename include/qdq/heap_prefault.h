// A process-level speed trick for `predict`, which reads a large model on one core: the heap's fresh pages are faulted
// in on the second core before the reader and the predictor write to them.
#pragma once

namespace qdq
{

//! Makes glibc grow the main heap in 32 MiB steps (and keep it: no trimming, no separate mappings up to 256 MiB) and
//! starts a detached thread that asks the kernel to map each new stretch of heap writable (MADV_POPULATE_WRITE)
//! while the calling thread is still working at its start. The thread only watches the program break and never
//! touches the memory, so it cannot disturb what the heap holds. Call once, early in main, in a process that ends
//! with _Exit. Does nothing where glibc or MADV_POPULATE_WRITE (Linux 5.14) are missing.
//!
//! Measured on the 500,000-node bench model (2 cores, quiet machine; bench/README.md): `qdq-bench predict`
//! 1.26-1.43 s -> 0.90-1.02 s, `qdq-doctor predict --format json` median 1.04 s (was 1.23-1.30 s), peak RSS
//! 443 -> 526 MiB. 44% of the run had been the kernel clearing and mapping fresh pages.
void startHeapPrefault();

} // namespace qdq
