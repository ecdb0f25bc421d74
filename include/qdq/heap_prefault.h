// A process-level speed trick for the commands that read large models (predict, diagnose, fix): the heap's fresh
// pages are faulted in on the second core before the reader and the predictor write to them.
#pragma once

namespace qdq
{

//! Makes glibc grow the main heap in 32 MiB steps (and keep it: no trimming, no separate mappings up to 256 MiB) and
//! starts a detached thread that asks the kernel to map each new stretch of heap writable (MADV_POPULATE_WRITE)
//! while the calling thread is still working at its start. The thread only watches the program break and never
//! touches the memory, so it cannot disturb what the heap holds. Call once, early in main, in a process that ends
//! with _Exit. Does nothing where glibc or MADV_POPULATE_WRITE (Linux 5.14) are missing.
//!
//! Measured on the 500,000-node bench model (`qdq-doctor predict --format json layers.onnx`, 2 cores, quiet
//! machine): 1.26-1.30 s -> 1.00-1.01 s, peak RSS 447 -> 530 MiB; 44% of the run was in the kernel clearing and
//! mapping fresh pages, now largely on the other core.
void startHeapPrefault();

} // namespace qdq
