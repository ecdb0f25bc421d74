// R28 tactic-gap: the same fused layer in two builds of one model (implicit vs explicit INT8, QAT vs PTQ, two
// TensorRT versions) runs a different kernel and is slower in the candidate. Found by `qdq-doctor diff`
// (src/diff.cpp), which aligns the two engines; one engine alone shows no gap, so diagnose runs nothing here.
#include "rules/rules.h"

namespace qdq::rules
{

namespace
{

class TacticGap final : public Rule
{
public:
    const RuleInfo& info() const override
    {
        static const RuleInfo kInfo{
            "tactic-gap",
            "R28",
            "The same fused layer runs a different, slower kernel in the candidate build (qdq-doctor diff)",
            Severity::kWarning,
            "8.0-10.x",
            kNeedsOnnxOrEngine,
            "a tactic choice of the build (timing noise, or an output format the candidate's Q/DQ impose): a timing "
            "cache, build options or an output Q/DQ decision, not a graph edit `fix` can make"};
        return kInfo;
    }

    void check(const Context& /*context*/, FindingSink& /*sink*/) const override
    {
        // Needs two engines: qdq-doctor diff reports it per region.
    }
};

} // namespace

std::unique_ptr<Rule> makeTacticGap()
{
    return std::make_unique<TacticGap>();
}

} // namespace qdq::rules
