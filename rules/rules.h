// One factory per rule; each rule lives in rules/<slug with underscores>.cpp and documents itself in
// docs/rules/<slug>.md. The list in rules/registry.cpp is the catalogue.
#pragma once

#include "qdq/analysis.h"

#include <memory>

namespace qdq::rules
{

std::unique_ptr<Rule> makeNonzeroZeroPoint();
std::unique_ptr<Rule> makeInvalidScale();
std::unique_ptr<Rule> makePerChannelActivation();
std::unique_ptr<Rule> makeWeightAxis();
std::unique_ptr<Rule> makeWeightedOpInputNotQuantized();
std::unique_ptr<Rule> makeWeightQdqNotFoldable();
std::unique_ptr<Rule> makeInt8WeightInitializer();
std::unique_ptr<Rule> makeStandaloneQdq();
std::unique_ptr<Rule> makeResidualInputNotQuantized();
std::unique_ptr<Rule> makeConvActPoolBlocked();
std::unique_ptr<Rule> makeQdqInsideConvEpilogue();
std::unique_ptr<Rule> makeQdqBetweenConvAndAdd();
std::unique_ptr<Rule> makeQuantizedBias();
std::unique_ptr<Rule> makeQuantizedOpNotImportable();
std::unique_ptr<Rule> makeInt8ConvFloatOutput();
std::unique_ptr<Rule> makeResidualPrecisionMismatch();
std::unique_ptr<Rule> makeActivationBeforeResidualAdd();
std::unique_ptr<Rule> makeInt8OpWithoutOutputQ();
std::unique_ptr<Rule> makePluginWrappedInQdq();
std::unique_ptr<Rule> makeIoReformat();
std::unique_ptr<Rule> makeFp32Island();
std::unique_ptr<Rule> makeFp32GraphStronglyTyped();
std::unique_ptr<Rule> makeConvTransposeEpilogueNotFused();
std::unique_ptr<Rule> makeConcatQuantizeHoisted();
std::unique_ptr<Rule> makeConcatScaleMismatch();
std::unique_ptr<Rule> makeConcatMixedPrecision();
std::unique_ptr<Rule> makeRequantizeBeforeSplit();
std::unique_ptr<Rule> makeMaxPoolScaleMismatch();
std::unique_ptr<Rule> makeHorizontalMergeLost();
std::unique_ptr<Rule> makeFanoutScaleMismatch();
std::unique_ptr<Rule> makeKernelWithoutTensorCores();
std::unique_ptr<Rule> makeDepthwiseConvOnCudaCores();
std::unique_ptr<Rule> makeChannelsNotAligned();
std::unique_ptr<Rule> makeReformatConversion();
std::unique_ptr<Rule> makeCopyNotEliminated();
std::unique_ptr<Rule> makeInt8SlowerThanFp16();
std::unique_ptr<Rule> makeTacticGap();
std::unique_ptr<Rule> makeNoInt8Implementation();
std::unique_ptr<Rule> makeQdqBetweenPadAndConv();
std::unique_ptr<Rule> makeDepthwiseActNotFused();
std::unique_ptr<Rule> makeRefitScaleGroup();
std::unique_ptr<Rule> makeBatchNormNotFolded();
std::unique_ptr<Rule> makeMyelinHeadDominates();
std::unique_ptr<Rule> makeMyelinGemmRanFloat();
std::unique_ptr<Rule> makeExplicitPadLayer();
std::unique_ptr<Rule> makeInputLayoutTranspose();
std::unique_ptr<Rule> makeAttentionOperandNotDequantized();
std::unique_ptr<Rule> makeSoftmaxOutputNotQuantized();
std::unique_ptr<Rule> makeAttentionScaleAfterMatmul();
std::unique_ptr<Rule> makeQdqOnAttentionScores();
std::unique_ptr<Rule> makeQuantizedTypeNotOnGpu();
std::unique_ptr<Rule> makeQuantizedTypeNeedsNewerTensorRt();
std::unique_ptr<Rule> makeInt4NotWeightOnly();
std::unique_ptr<Rule> makeBlockQuantizationShape();

} // namespace qdq::rules
