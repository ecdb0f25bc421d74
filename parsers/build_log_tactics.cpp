// Build-log reader: tactic selection. "Timing Runner", "Tactic Name", "Fastest Tactic" and "profiling completed"
// lines are remembered as views into the input; a "Chose Runner Type" line records the choice with its kernel name
// and time.

#include "parsers/build_log_parser.h"

#include <string>
#include <string_view>

namespace qdq::buildlog
{

//! 8.6+: "Tactic Name: K Tactic: 0x.. Time: t"
void BuildLogParser::readTacticName(std::string_view m)
{
    std::string_view rest = m.substr(13);
    std::size_t t = rest.find(" Tactic: ");
    if (t != std::string_view::npos)
    {
        std::string_view id = rest.substr(t + 9);
        id = id.substr(0, id.find(' '));
        rememberTacticName(id, rest.substr(0, t));
    }
}

//! "--------------- Timing Runner: <layer> (<Runner>[0x..])"
void BuildLogParser::readTimingRunner(std::string_view m)
{
    std::string_view rest = trim(m.substr(31));
    std::size_t open = rest.rfind(" (");
    if (open != std::string_view::npos && rest.back() == ')')
    {
        mTimingLayer = rest.substr(0, open);
        std::string_view runner = rest.substr(open + 2, rest.size() - open - 3);
        mTimingRunner = runner.substr(0, runner.find('['));
    }
    else
    {
        mTimingLayer = rest;
        mTimingRunner = {};
    }
    mTacticNames.clear();
}

void BuildLogParser::fillFastest(std::string_view rest, RunnerResult& result) const
{
    std::size_t time = rest.find(" Time: ");
    result.tactic = trim(rest.substr(0, time));
    if (time != std::string_view::npos)
    {
        result.hasTime = parseDouble(rest.substr(time + 7), result.time);
    }
    for (const auto& [id, name] : mTacticNames)
    {
        if (id == result.tactic)
        {
            result.tacticName = name;
        }
    }
}

//! "Fastest Tactic: X Time: T" after the tactics of the current runner.
void BuildLogParser::readFastestTactic(std::string_view m)
{
    RunnerResult result;
    result.runner = mTimingRunner;
    fillFastest(m.substr(16), result);
    rememberRunnerResult(result);
}

//! "=============== Computing costs for <layer>" and the other "Computing" headers.
void BuildLogParser::readComputing(std::string_view m)
{
    mRunnerResults.clear();
    if (startsWith(m, "=============== Computing costs for "))
    {
        mTimingLayer = trim(m.substr(36));
    }
}

void BuildLogParser::handleTactic(std::string_view message, std::uint64_t lineNo)
{
    // ">>>>>>>>>>>>>>> Chose Runner Type: R Tactic: X"
    std::string_view rest = message.substr(message.find("Chose Runner Type: ") + 19);
    std::size_t t = rest.find(" Tactic: ");
    TacticChoice choice;
    std::string_view runner = trim(rest.substr(0, t));
    std::string_view tactic = t == std::string_view::npos ? std::string_view{} : trim(rest.substr(t + 9));
    choice.layer = std::string(mTimingLayer);
    choice.runnerType = std::string(runner);
    choice.tactic = std::string(tactic);
    for (auto it = mRunnerResults.rbegin(); it != mRunnerResults.rend(); ++it)
    {
        if (it->runner == runner && (it->tactic == tactic || tactic.empty()))
        {
            choice.tacticName = std::string(it->tacticName);
            if (it->hasTime)
            {
                choice.timeMs = it->time;
            }
            break;
        }
    }
    choice.line = lineNo;
    mLog.tactics.push_back(std::move(choice));
}

//! Lines that start with a layer or pass name: "<Pass>: Fusing A with B", "<L> Set Tactic Name: K Tactic: X",
//! "<L> (<Runner>[0x..]) profiling completed in S seconds. Fastest Tactic: X Time: T".
bool BuildLogParser::handleFallback(std::string_view message, std::uint64_t lineNo)
{
    // "<Pass>: Fusing A with B" / "QuantizeDoubleInputNodes: fusing X into Y"
    std::size_t k = 0;
    while (k < message.size() && ((message[k] >= 'A' && message[k] <= 'Z') ||
                                  (message[k] >= 'a' && message[k] <= 'z') || isDigit(message[k]) || message[k] == '_'))
    {
        ++k;
    }
    if (k > 0 && k + 2 < message.size() && message[k] == ':' && message[k + 1] == ' ')
    {
        return readPassFusing(message.substr(0, k), message.substr(k + 2), lineNo);
    }
    // A hexadecimal tactic id may end in a letter ("Set Tactic Name: K Tactic: 0x6986b0c6a136276e", 8.4 and later).
    if (message.empty() || !isHexDigit(message.back()))
    {
        return false;
    }
    // Both remaining forms end in "Tactic: <id>" or "Time: <t>": look at the token before the last one first.
    std::size_t lastSpace = message.rfind(' ');
    if (lastSpace == std::string_view::npos || lastSpace < 6)
    {
        return false;
    }
    std::string_view beforeLast = message.substr(0, lastSpace);
    if (!endsWith(beforeLast, " Tactic:") && !endsWith(beforeLast, " Time:"))
    {
        return false;
    }
    static constexpr std::string_view kSetTactic = " Set Tactic Name: ";
    static constexpr std::string_view kCompleted = " profiling completed in ";
    if (std::size_t s = message.find(kSetTactic); s != std::string_view::npos)
    {
        std::string_view rest = message.substr(s + kSetTactic.size());
        std::size_t t = rest.rfind(" Tactic: ");
        if (t != std::string_view::npos)
        {
            rememberTacticName(trim(rest.substr(t + 9)), trim(rest.substr(0, t)));
        }
        return true;
    }
    if (std::size_t c = message.find(kCompleted); c != std::string_view::npos)
    {
        readProfilingCompleted(message, c);
        return true;
    }
    return false;
}

//! rest follows "<Pass>: ": "Fusing A with B" or "fusing X into Y"; false for any other pass line.
bool BuildLogParser::readPassFusing(std::string_view pass, std::string_view rest, std::uint64_t lineNo)
{
    if (startsWith(rest, "Fusing "))
    {
        rest.remove_prefix(7);
        std::size_t with = rest.find(" with ");
        addEvent(OptimizerEventKind::kFuse, pass, rest.substr(0, with),
                 with == std::string_view::npos ? std::string_view{} : rest.substr(with + 6), {}, lineNo);
        return true;
    }
    if (startsWith(rest, "fusing "))
    {
        rest.remove_prefix(7);
        std::size_t into = rest.rfind(" into ");
        addEvent(OptimizerEventKind::kFuse, pass, rest.substr(0, into),
                 into == std::string_view::npos ? std::string_view{} : rest.substr(into + 6), {}, lineNo);
        return true;
    }
    return false;
}

//! "<layer> (<Runner>[0x80000009]) profiling completed in S seconds. Fastest Tactic: X Time: T"; completed is the
//! offset of " profiling completed in ".
void BuildLogParser::readProfilingCompleted(std::string_view message, std::size_t completed)
{
    std::string_view head = message.substr(0, completed);
    std::size_t open = head.rfind(" (");
    RunnerResult result;
    if (open != std::string_view::npos && head.back() == ')')
    {
        mTimingLayer = head.substr(0, open);
        std::string_view runner = head.substr(open + 2, head.size() - open - 3);
        result.runner = runner.substr(0, runner.find('['));
    }
    std::string_view tail = message.substr(completed);
    std::size_t f = tail.find("Fastest Tactic: ");
    if (f != std::string_view::npos)
    {
        fillFastest(tail.substr(f + 16), result);
        rememberRunnerResult(result);
    }
    mTacticNames.clear();
}

} // namespace qdq::buildlog
