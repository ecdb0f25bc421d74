// Interns the tensor names of a graph's nodes, in node order, on a second thread while the ONNX reader decodes the
// nodes that follow (parsers/onnx_reader.cpp). Interning waits on a cache miss per new name (the tensor table is far
// larger than the CPU cache); on the 500,000-node bench model it was the reader's largest single cost.
#pragma once

#include "qdq/onnx_graph.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace qdq::onnx_detail
{

//! Fills graph.nodeInputIds/nodeOutputIds and their start arrays, one node at a time, from the names given to
//! addNode. Ids come out exactly as interning on the calling thread would give them: the names are interned in the
//! order they were added, and the calling thread calls drain() before it interns anything itself (an initializer, a
//! value info) or reads the tensor table.
class NodeTensorInterner
{
public:
    //! threaded: use a second thread (worth it for large graphs only; small ones intern inline).
    NodeTensorInterner(OnnxGraph& graph, bool threaded);
    ~NodeTensorInterner(); //!< stops the thread; names not yet interned are dropped (the read failed)
    NodeTensorInterner(const NodeTensorInterner&) = delete;
    NodeTensorInterner& operator=(const NodeTensorInterner&) = delete;

    void addNode(std::span<const std::string_view> inputs, std::span<const std::string_view> outputs);
    //! Waits until every node added so far is interned; rethrows what the thread failed with (bad_alloc). While the
    //! thread is still behind, the calling thread runs meanwhile, a slice of other work at a time, until it returns
    //! false (nothing left to do) or the thread has caught up.
    void drain(const std::function<bool()>& meanwhile = {});

private:
    //! Names of a run of nodes, copied: the reader's node bytes are reused for the next node.
    struct Batch
    {
        std::string names;
        std::vector<std::uint32_t> lengths; //!< per name; 0 for an omitted optional input
        std::vector<std::uint32_t> counts;  //!< per node: inputs, then outputs
        void clear()
        {
            names.clear();
            lengths.clear();
            counts.clear();
        }
    };

    void internNames(std::span<const std::string_view> names, std::vector<std::uint32_t>& ids,
                     std::vector<std::uint32_t>& starts);
    void internBatch(const Batch& batch);
    void submit();
    void run();

    OnnxGraph& mGraph;
    const bool mThreaded;
    std::unique_ptr<Batch> mFilling;
    std::mutex mMutex;
    std::condition_variable mWork;
    std::condition_variable mIdle;
    std::deque<std::unique_ptr<Batch>> mQueue;
    std::vector<std::unique_ptr<Batch>> mSpare;
    bool mBusy = false;
    bool mStop = false;
    std::exception_ptr mFailure;
    std::thread mThread;
};

} // namespace qdq::onnx_detail
