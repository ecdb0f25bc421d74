// The only place that calls Graphviz: DOT text in, SVG out, through libgvc in-process.
//
// Plugins: gvContext() loads Graphviz's layout and render plugins at run time (ltdl) from the plugin folder named in
// its config file: on Debian 12 /usr/lib/x86_64-linux-gnu/graphviz/config6a, which libgvc6's postinst writes
// (`libgvc6-config-update -c`). The dot layout comes from libgvplugin_dot_layout and the SVG renderer from
// libgvplugin_core, both in libgvc6 itself; no `graphviz` package (the dot binary) is needed. When the config file
// is missing, gvLayout fails with "Layout type: \"dot\" not recognized": renderDot then throws and says so. Graphviz
// keeps global state and is not thread-safe, so calls are serialized here.
#include "qdq/graph.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <mutex>
#include <stdexcept>

namespace qdq::graph
{

namespace
{

std::mutex& graphvizMutex()
{
    static std::mutex mutex;
    return mutex;
}

//! Graphviz's own messages, collected instead of printed (qdq-doctor's modules never print).
std::string& graphvizMessages()
{
    static std::string messages;
    return messages;
}

int collectMessage(char* message)
{
    if (message != nullptr && graphvizMessages().size() < 4096)
    {
        graphvizMessages() += message;
    }
    return 0;
}

GVC_t* context()
{
    // One context for the process: creating one reads the plugin config each time.
    static GVC_t* gvc = []
    {
        agseterrf(collectMessage);
        agseterr(AGWARN);
        return gvContext();
    }();
    return gvc;
}

struct GraphCloser
{
    GVC_t* gvc;
    Agraph_t* graph;
    bool laidOut = false;
    ~GraphCloser()
    {
        if (laidOut)
        {
            gvFreeLayout(gvc, graph);
        }
        if (graph != nullptr)
        {
            agclose(graph);
        }
    }
};

} // namespace

std::string renderDot(const std::string& dot, const std::string& layout, const std::string& format)
{
    std::lock_guard<std::mutex> lock(graphvizMutex());
    graphvizMessages().clear();
    GVC_t* gvc = context();
    if (gvc == nullptr)
    {
        throw std::runtime_error("Graphviz: cannot create a libgvc context");
    }
    GraphCloser closer{gvc, agmemread(dot.c_str())};
    if (closer.graph == nullptr)
    {
        throw std::runtime_error("Graphviz: cannot parse the DOT text: " + graphvizMessages());
    }
    if (gvLayout(gvc, closer.graph, layout.c_str()) != 0)
    {
        throw std::runtime_error("Graphviz: layout \"" + layout +
                                 "\" failed (are libgvc6's plugins configured? "
                                 "`libgvc6-config-update -c` writes their config): " +
                                 graphvizMessages());
    }
    closer.laidOut = true;
    char* data = nullptr;
    unsigned int length = 0;
    if (gvRenderData(gvc, closer.graph, format.c_str(), &data, &length) != 0 || data == nullptr)
    {
        if (data != nullptr)
        {
            gvFreeRenderData(data);
        }
        throw std::runtime_error("Graphviz: rendering " + format + " failed: " + graphvizMessages());
    }
    std::string result(data, length);
    gvFreeRenderData(data);
    return result;
}

} // namespace qdq::graph
