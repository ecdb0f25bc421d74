// Files registered for removal on interrupt: a child process registers them, is interrupted, and the parent looks at
// what is left and how the child ended.
#include "qdq/interrupt_cleanup.h"
#include "qdq/model_edit.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

using namespace qdq;
using namespace qdq::test;
namespace fs = std::filesystem;

namespace
{

//! Runs body in a child process and returns its wait status. The child never returns into the test framework.
template <class Body>
int inChild(Body body)
{
    const pid_t child = ::fork();
    if (child == 0)
    {
        body();
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return status;
}

} // namespace

TEST(InterruptCleanup, InterruptRemovesTheWatchedFilesAndEndsByTheSignal)
{
    const fs::path dir = tempDir("interrupt");
    const fs::path watched = writeFile(dir / "candidate.onnx", "half a model");
    const fs::path released = writeFile(dir / "finished.onnx", "a whole model");
    for (const int signalNumber : {SIGINT, SIGTERM, SIGHUP})
    {
        writeFile(watched, "half a model");
        const int status = inChild(
            [&]
            {
                ::signal(signalNumber, SIG_DFL); // whatever the test runner was started with
                removeTemporaryFilesOnInterrupt();
                InterruptCleanup candidate(watched.string());
                InterruptCleanup output(released.string());
                output.release();
                ::raise(signalNumber);
            });
        ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << signalNumber << ", status " << status;
        EXPECT_EQ(WTERMSIG(status), signalNumber);
        EXPECT_FALSE(fs::exists(watched)) << "signal " << signalNumber;
        EXPECT_EQ(readFile(released), "a whole model");
    }
}

TEST(InterruptCleanup, AnInterruptedWriteLeavesNoTemporaryFile)
{
    const fs::path dir = tempDir("interrupt-sink");
    const fs::path output = dir / "fixed.onnx";
    const int status = inChild(
        [&]
        {
            ::signal(SIGINT, SIG_DFL);
            removeTemporaryFilesOnInterrupt();
            FileModelSink sink(output.string());
            sink.begin();
            sink.write("a model");
            sink.beginData(); // the model's external data file, written after it
            sink.writeData("half its weights");
            ::raise(SIGINT);
        });
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), SIGINT);
    EXPECT_TRUE(fs::is_empty(dir)) << fs::directory_iterator(dir)->path();
}

// A process started with SIGINT ignored (a background job of a script, nohup) keeps ignoring it.
TEST(InterruptCleanup, AnIgnoredSignalStaysIgnored)
{
    const fs::path dir = tempDir("interrupt-ignored");
    const fs::path watched = writeFile(dir / "candidate.onnx", "half a model");
    const int status = inChild(
        [&]
        {
            ::signal(SIGINT, SIG_IGN);
            removeTemporaryFilesOnInterrupt();
            InterruptCleanup candidate(watched.string());
            ::raise(SIGINT);
        });
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_TRUE(fs::exists(watched));
}

// A watched folder is removed after the watched files in it, and only when they leave it empty.
TEST(InterruptCleanup, AWatchedFolderGoesWhenItsWatchedFilesLeaveItEmpty)
{
    const fs::path dir = tempDir("interrupt-folder");
    const fs::path emptied = dir / "demo";
    const fs::path kept = dir / "kept";
    writeFile(emptied / "model.onnx", "sample");
    writeFile(kept / "model.onnx", "sample");
    writeFile(kept / "user.txt", "someone else's");
    const int status = inChild(
        [&]
        {
            ::signal(SIGTERM, SIG_DFL);
            removeTemporaryFilesOnInterrupt();
            InterruptCleanup firstFolder(emptied.string(), /*folder*/ true);
            InterruptCleanup firstFile((emptied / "model.onnx").string());
            InterruptCleanup secondFolder(kept.string(), /*folder*/ true);
            InterruptCleanup secondFile((kept / "model.onnx").string());
            ::raise(SIGTERM);
        });
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_FALSE(fs::exists(emptied));
    EXPECT_FALSE(fs::exists(kept / "model.onnx"));
    EXPECT_EQ(readFile(kept / "user.txt"), "someone else's");
}
