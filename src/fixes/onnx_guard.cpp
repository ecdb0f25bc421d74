#include "qdq/onnx_guard.h"

#include <onnx/defs/shape_inference.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace qdq
{

namespace
{

//! The data and weight input of the ops whose inference calls ONNX's convPoolShapeInference (or, for ConvTranspose,
//! its transposed twin) with the kernel taken from the weight; {-1, -1} for other ops.
std::pair<int, int> dataAndWeight(const std::string& domain, const std::string& opType)
{
    if (!domain.empty() && domain != "ai.onnx")
    {
        return {-1, -1};
    }
    if (opType == "Conv" || opType == "ConvInteger" || opType == "ConvTranspose")
    {
        return {0, 1};
    }
    if (opType == "QLinearConv")
    {
        return {0, 3};
    }
    return {-1, -1};
}

//! The rank of input index, or -1 when the input is missing, untyped or without a shape.
int rankOf(const onnx::InferenceContext& context, int index)
{
    if (context.getNumInputs() <= static_cast<std::size_t>(index))
    {
        return -1;
    }
    const onnx::TypeProto* type = context.getInputType(static_cast<std::size_t>(index));
    if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape())
    {
        return -1;
    }
    return type->tensor_type().shape().dim_size();
}

class GuardedSchemaRegistry final : public onnx::ISchemaRegistry
{
public:
    const onnx::OpSchema* GetSchema(const std::string& key, const int maxInclusiveVersion,
                                    const std::string& domain) const override
    {
        const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(key, maxInclusiveVersion, domain);
        const auto [data, weight] = dataAndWeight(domain, key);
        if (schema == nullptr || data < 0 || !schema->has_type_and_shape_inference_function())
        {
            return schema;
        }
        std::lock_guard<std::mutex> lock(mMutex);
        auto& guarded = mGuarded[schema];
        if (!guarded)
        {
            guarded = std::make_unique<onnx::OpSchema>(*schema);
            guarded->TypeAndShapeInferenceFunction(
                [inference = schema->GetTypeAndShapeInferenceFunction(), data = data,
                 weight = weight](onnx::InferenceContext& context)
                {
                    const int dataRank = rankOf(context, data);
                    const int weightRank = rankOf(context, weight);
                    if (dataRank < 0 || weightRank < 0)
                    {
                        // Missing or shapeless: ONNX reads the types unchecked; the checker reports a missing input.
                        if (context.getNumInputs() <= static_cast<std::size_t>(std::max(data, weight)) ||
                            context.getInputType(static_cast<std::size_t>(data)) == nullptr ||
                            context.getInputType(static_cast<std::size_t>(weight)) == nullptr)
                        {
                            return;
                        }
                    }
                    else if (dataRank != weightRank)
                    {
                        fail_shape_inference("the weight has ", weightRank, " dimensions and the input ", dataRank,
                                             ": a convolution's weight has as many as its input");
                    }
                    inference(context);
                });
        }
        return guarded.get();
    }

private:
    mutable std::mutex mMutex;
    mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> mGuarded;
};

} // namespace

onnx::ISchemaRegistry* guardedSchemaRegistry()
{
    static GuardedSchemaRegistry registry;
    return &registry;
}

} // namespace qdq
