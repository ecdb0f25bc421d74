#include "src/reporters/consistency_report.h"

namespace qdq
{

namespace
{

std::string engineWords(const ConsistencyCheck& check, bool predictionOnly)
{
    if (predictionOnly)
    {
        return "the prediction";
    }
    return check.againstRealEngine ? "the real engine" : "the predicted engine";
}

} // namespace

void writeConsistencyJson(JsonWriter& json, const ConsistencyCheck& check, bool predictionOnly)
{
    json.key("consistency").beginObject();
    json.member("claims_checked", static_cast<std::uint64_t>(check.claimsChecked));
    json.member("engine", predictionOnly ? "predicted" : (check.againstRealEngine ? "real" : "predicted"));
    json.key("contradictions").beginArray();
    for (const auto& contradiction : check.contradictions)
    {
        json.beginObject();
        json.member("kind", contradiction.kind);
        std::vector<std::size_t> findings;
        for (std::size_t f : contradiction.findings)
        {
            findings.push_back(f + 1);
        }
        json.member("findings", findings);
        json.member("message", contradiction.message);
        json.endObject();
    }
    json.endArray();
    json.endObject();
}

std::string consistencyText(const ConsistencyCheck& check, bool predictionOnly)
{
    std::string out = "Consistency: " + std::to_string(check.claimsChecked) + " claim" +
                      (check.claimsChecked == 1 ? "" : "s") + " checked against " + engineWords(check, predictionOnly) +
                      ", ";
    if (check.contradictions.empty())
    {
        return out + "no contradiction.\n";
    }
    out += std::to_string(check.contradictions.size()) + " contradiction" +
           (check.contradictions.size() == 1 ? "" : "s") + " (a defect of qdq-doctor; please report it):\n";
    for (const auto& contradiction : check.contradictions)
    {
        out += "  " + contradiction.kind + ": " + contradiction.message + "\n";
    }
    return out;
}

} // namespace qdq
