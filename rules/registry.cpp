// The explicit rule list, in catalogue order (reference section 5). One line per rule.
#include "rules/rules.h"

namespace qdq
{

namespace rules
{
// Declared here rather than in rules/rules.h (which every rule includes): rules/myelin_body_ran_fp16.cpp.
std::unique_ptr<Rule> makeMyelinBodyRanFp16();
} // namespace rules

const std::vector<std::unique_ptr<Rule>>& allRules()
{
    static const std::vector<std::unique_ptr<Rule>> rules = []
    {
        std::vector<std::unique_ptr<Rule>> list;
        list.push_back(rules::makeNonzeroZeroPoint());              // R01
        list.push_back(rules::makeInvalidScale());                  // R02
        list.push_back(rules::makePerChannelActivation());          // R03
        list.push_back(rules::makeWeightAxis());                    // R04
        list.push_back(rules::makeWeightedOpInputNotQuantized());   // R05
        list.push_back(rules::makeWeightQdqNotFoldable());          // R06
        list.push_back(rules::makeInt8ConvFloatOutput());           // R07
        list.push_back(rules::makeQdqInsideConvEpilogue());         // R08
        list.push_back(rules::makeConvActPoolBlocked());            // R09
        list.push_back(rules::makeQdqBetweenPadAndConv());          // R10
        list.push_back(rules::makeResidualInputNotQuantized());     // R11
        list.push_back(rules::makeQdqBetweenConvAndAdd());          // R12
        list.push_back(rules::makeResidualPrecisionMismatch());     // R13
        list.push_back(rules::makeActivationBeforeResidualAdd());   // R14
        list.push_back(rules::makeInt8OpWithoutOutputQ());          // R15
        list.push_back(rules::makeConcatQuantizeHoisted());         // R16
        list.push_back(rules::makeConcatScaleMismatch());           // R17
        list.push_back(rules::makeConcatMixedPrecision());          // R18
        list.push_back(rules::makeRequantizeBeforeSplit());         // R19
        list.push_back(rules::makeStandaloneQdq());                 // R20
        list.push_back(rules::makeMaxPoolScaleMismatch());          // R21
        list.push_back(rules::makePluginWrappedInQdq());            // R22
        list.push_back(rules::makeIoReformat());                    // R23
        list.push_back(rules::makeFp32Island());                    // R24
        list.push_back(rules::makeConvTransposeEpilogueNotFused()); // R25
        list.push_back(rules::makeHorizontalMergeLost());           // R26
        list.push_back(rules::makeDepthwiseActNotFused());          // R27
        list.push_back(rules::makeTacticGap());                     // R28 (found by diff)
        list.push_back(rules::makeRefitScaleGroup());               // R29
        list.push_back(rules::makeNoInt8Implementation());          // R30
        list.push_back(rules::makeFanoutScaleMismatch());           // R31
        list.push_back(rules::makeQuantizedBias());                 // R32
        list.push_back(rules::makeInt8WeightInitializer());         // R33
        // Model checks added by qdq-doctor (no catalogue id).
        list.push_back(rules::makeQuantizedOpNotImportable());
        list.push_back(rules::makeBatchNormNotFolded());
        // Engine lints added by qdq-doctor (no catalogue id): why INT8 did not pay off.
        list.push_back(rules::makeKernelWithoutTensorCores());
        list.push_back(rules::makeDepthwiseConvOnCudaCores());
        list.push_back(rules::makeChannelsNotAligned());
        list.push_back(rules::makeReformatConversion());
        list.push_back(rules::makeCopyNotEliminated());
        list.push_back(rules::makeInt8SlowerThanFp16());
        // Non-Q/DQ costs seen in real engines (issue 30).
        list.push_back(rules::makeMyelinHeadDominates());
        list.push_back(rules::makeExplicitPadLayer());
        list.push_back(rules::makeInputLayoutTranspose());
        // Transformers (issue 28): Myelin regions, then Q/DQ placement around attention.
        list.push_back(rules::makeMyelinGemmRanFloat());
        list.push_back(rules::makeAttentionOperandNotDequantized());
        list.push_back(rules::makeSoftmaxOutputNotQuantized());
        list.push_back(rules::makeAttentionScaleAfterMatmul());
        list.push_back(rules::makeQdqOnAttentionScores());
        // Quantized types beyond INT8: FP8, INT4, FP4, MXFP8 (issue 27 item 6).
        list.push_back(rules::makeQuantizedTypeNotOnGpu());
        list.push_back(rules::makeQuantizedTypeNeedsNewerTensorRt());
        list.push_back(rules::makeInt4NotWeightOnly());
        list.push_back(rules::makeBlockQuantizationShape());
        // TensorRT 11 (issue 37): an FP32 graph under strong typing.
        list.push_back(rules::makeFp32GraphStronglyTyped());
        // Its weakly typed twin: a Myelin region that ran FP16 with its Q/DQ unused.
        list.push_back(rules::makeMyelinBodyRanFp16());
        return list;
    }();
    return rules;
}

} // namespace qdq
