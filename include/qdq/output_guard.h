// No command writes over one of its inputs, --force or not, and no output file of a command lands on another of its
// outputs. Files are the same when their resolved paths are (links followed) or, for files that exist, when they are
// one file on disk (the same device and inode: a hard link).
#pragma once

#include "qdq/load_inputs.h"

#include <string>
#include <sys/types.h>
#include <vector>

namespace qdq
{

class OutputGuard
{
public:
    //! An input file of the command; a folder stands for the artifacts in it that the command reads
    //! (listFolderArtifacts). An empty path or "-" is ignored.
    void addInput(const std::string& path);
    //! Every file InputFiles names.
    void addInputs(const InputFiles& files);

    //! Claims path as an output of the command. Throws InputError naming path when it is one of the inputs or an
    //! output claimed before under another name (the same name claimed again is the same output).
    void claim(const std::string& path);

private:
    struct Known
    {
        std::string given;    //!< as the user wrote it
        std::string lexical;  //!< absolute, normalized, links not followed
        std::string resolved; //!< weakly canonical, absolute
        bool exists = false;
        dev_t device = 0;
        ino_t inode = 0;
    };
    static Known identify(const std::string& path);
    static bool same(const Known& a, const Known& b);

    std::vector<Known> mInputs;
    std::vector<Known> mOutputs;
};

} // namespace qdq
