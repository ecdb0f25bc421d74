#include "parsers/onnx_tensor_interner.h"

namespace qdq::onnx_detail
{

namespace
{
constexpr std::size_t kBatchNodes = 4096; // small enough that the thread starts early, large enough to wake it rarely
}

NodeTensorInterner::NodeTensorInterner(OnnxGraph& graph, bool threaded) : mGraph(graph), mThreaded(threaded)
{
    if (mThreaded)
    {
        mFilling = std::make_unique<Batch>();
        mThread = std::thread([this] { run(); });
    }
}

NodeTensorInterner::~NodeTensorInterner()
{
    if (mThread.joinable())
    {
        {
            std::lock_guard<std::mutex> lock(mMutex);
            mStop = true;
            mQueue.clear();
        }
        mWork.notify_one();
        mThread.join();
    }
}

void NodeTensorInterner::internNames(std::span<const std::string_view> names, std::vector<std::uint32_t>& ids,
                                     std::vector<std::uint32_t>& starts)
{
    for (std::string_view name : names)
    {
        ids.push_back(name.empty() ? OnnxGraph::kNone : mGraph.tensors.intern(name));
    }
    starts.push_back(static_cast<std::uint32_t>(ids.size()));
}

void NodeTensorInterner::addNode(std::span<const std::string_view> inputs, std::span<const std::string_view> outputs)
{
    if (!mThreaded)
    {
        internNames(inputs, mGraph.nodeInputIds, mGraph.nodeInputStart);
        internNames(outputs, mGraph.nodeOutputIds, mGraph.nodeOutputStart);
        return;
    }
    Batch& batch = *mFilling;
    for (auto names : {inputs, outputs})
    {
        batch.counts.push_back(static_cast<std::uint32_t>(names.size()));
        for (std::string_view name : names)
        {
            batch.names.append(name);
            batch.lengths.push_back(static_cast<std::uint32_t>(name.size()));
        }
    }
    if (batch.counts.size() >= 2 * kBatchNodes)
    {
        submit();
    }
}

void NodeTensorInterner::submit()
{
    {
        std::lock_guard<std::mutex> lock(mMutex);
        mQueue.push_back(std::move(mFilling));
        if (!mSpare.empty())
        {
            mFilling = std::move(mSpare.back());
            mSpare.pop_back();
        }
    }
    if (!mFilling)
    {
        mFilling = std::make_unique<Batch>();
    }
    mWork.notify_one();
}

void NodeTensorInterner::drain(const std::function<bool()>& meanwhile)
{
    if (!mThreaded)
    {
        return;
    }
    if (!mFilling->counts.empty())
    {
        submit();
    }
    if (meanwhile)
    {
        for (;;)
        {
            {
                std::lock_guard<std::mutex> lock(mMutex);
                if ((mQueue.empty() && !mBusy) || mFailure)
                {
                    break;
                }
            }
            if (!meanwhile())
            {
                break;
            }
        }
    }
    std::unique_lock<std::mutex> lock(mMutex);
    mIdle.wait(lock, [this] { return (mQueue.empty() && !mBusy) || mFailure; });
    if (mFailure)
    {
        std::rethrow_exception(mFailure);
    }
}

void NodeTensorInterner::internBatch(const Batch& batch)
{
    std::vector<std::string_view> names;
    std::size_t nameAt = 0;
    std::size_t byteAt = 0;
    for (std::size_t i = 0; i < batch.counts.size(); ++i)
    {
        names.clear();
        for (std::uint32_t n = 0; n < batch.counts[i]; ++n, ++nameAt)
        {
            names.emplace_back(batch.names.data() + byteAt, batch.lengths[nameAt]);
            byteAt += batch.lengths[nameAt];
        }
        const bool inputs = i % 2 == 0;
        internNames(names, inputs ? mGraph.nodeInputIds : mGraph.nodeOutputIds,
                    inputs ? mGraph.nodeInputStart : mGraph.nodeOutputStart);
    }
}

void NodeTensorInterner::run()
{
    for (;;)
    {
        std::unique_ptr<Batch> batch;
        {
            std::unique_lock<std::mutex> lock(mMutex);
            mWork.wait(lock, [this] { return mStop || !mQueue.empty(); });
            if (mStop)
            {
                return;
            }
            batch = std::move(mQueue.front());
            mQueue.pop_front();
            mBusy = true;
        }
        try
        {
            if (!mFailure)
            {
                internBatch(*batch);
            }
        }
        catch (...)
        {
            std::lock_guard<std::mutex> lock(mMutex);
            mFailure = std::current_exception();
        }
        batch->clear();
        {
            std::lock_guard<std::mutex> lock(mMutex);
            mBusy = false;
            mSpare.push_back(std::move(batch));
        }
        mIdle.notify_all();
    }
}

} // namespace qdq::onnx_detail
