// Profile rows of Myelin kernels that name no layer of the layer list, attributed to the Myelin region (and engine
// layer) they ran in, so that the engine's time is not left in "unmatched profile entries".
//
// A profile's rows are the engine's layer names, Myelin's kernels included (`__mye258_0_myl4_0`,
// `node_linear_myl4_1`, `__myl_DivTopk_myl4_4`: FORMATS-trt11.md P3, from
// wili-65535/trt-samples-for-hackathon-cn@9bbf180:cookbook/07-Tool/trtexec/result-11.log). The kernel set changes
// from build to build of one network while its Cask layers keep their names: the cookbook's two 11.1 profiles of the
// MNIST CNN share the Cask layers and the Myelin graph `myl4`, and none of its kernel names (`node_linear_myl4_0`,
// `__myl_MulSum_myl4_1` ... against `node_linear_myl4_1`, `node_linear_1_2_myl4_2` ...; same file, lines 22-35).
// A layer list may also show a region as one `{ForeignNode[...]}` layer while the profile times its kernels.
#pragma once

#include "qdq/engine_plan.h"
#include "qdq/profile.h"

#include <cstddef>
#include <vector>

namespace qdq
{

struct MyelinKernelTime
{
    enum class Match
    {
        kSameKernel, //!< a layer of the same Myelin graph with the same kernel stem (`node_linear_myl4_1` -> `_myl4_0`)
        kSameGraph,  //!< the first layer of the same Myelin graph (`_myl4_`): no layer with the kernel's stem
        kRegionByOrder, //!< the k-th `{ForeignNode[...]}` layer for the k-th Myelin graph the profile times (a guess)
    };
    std::size_t entry = 0; //!< index in Profile::entries
    std::size_t layer = 0; //!< index in EnginePlan::layers
    Match match = Match::kSameGraph;
};

//! The rows of profile that no layer of plan names (matched[i] false) and that are Myelin kernels (a `_myl<N>_<k>`
//! suffix), each with the engine layer that takes its time: a layer of the same Myelin graph (with the same kernel
//! stem when one has it), or, when the plan lists no kernel of that graph and shows its regions as `{ForeignNode[...]}`
//! layers, the region in the same place of the engine order (only when the profile times as many graphs as the plan
//! has such layers). L2-cache `custom_layer` layers never take a row's time. matched: one flag per profile entry.
std::vector<MyelinKernelTime> attributeMyelinKernelTimes(const EnginePlan& plan, const Profile& profile,
                                                         const std::vector<bool>& matched);

//! matched for attributeMyelinKernelTimes: whether each profile entry names a layer of plan (the full name, or the
//! name without a trailing " [profile N]").
std::vector<bool> profileEntriesNamingLayers(const EnginePlan& plan, const Profile& profile);

} // namespace qdq
