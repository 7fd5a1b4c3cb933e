#include "runtime/text/chat_template.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "runtime/base/error.h"
#include "runtime/text/jinja/parser.h"
#include "runtime/text/jinja/render.h"
#include "runtime/text/jinja/value.h"

namespace rill {

namespace {

std::tm time_for(const std::string& today) {
    std::tm tm{};
    if (today.empty()) {
        const std::time_t now = std::time(nullptr);
        localtime_r(&now, &tm);
        return tm;
    }
    int y = 0;
    unsigned m = 0, d = 0;
    char tail = 0;
    if (std::sscanf(today.c_str(), "%4d-%2u-%2u%c", &y, &m, &d, &tail) != 3)
        throw Error("chat template: the date '" + today + "' is not YYYY-MM-DD");
    const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{m}, std::chrono::day{d}};
    if (!ymd.ok()) throw Error("chat template: the date '" + today + "' does not exist");
    const std::chrono::sys_days days{ymd};
    tm.tm_year = y - 1900;
    tm.tm_mon = static_cast<int>(m) - 1;
    tm.tm_mday = static_cast<int>(d);
    tm.tm_wday = static_cast<int>(std::chrono::weekday{days}.c_encoding());
    tm.tm_yday = static_cast<int>((days - std::chrono::sys_days{std::chrono::year{y} / std::chrono::January / 1}).count());
    tm.tm_isdst = 0;
    return tm;
}

// Python's datetime.now().strftime(format), which hands the format to the C library as this does.
std::string format_time(const std::tm& tm, const std::string& format) {
    if (format.empty()) return "";
    for (std::size_t size = 256; size <= (std::size_t{1} << 20); size *= 4) {
        std::string out(size, '\0');
        const std::size_t n = std::strftime(out.data(), out.size(), format.c_str(), &tm);
        if (n > 0) {
            out.resize(n);
            return out;
        }
    }
    return "";  // the format produces nothing, e.g. "%p" in some locales
}

}  // namespace

std::string render_chat_template(const std::string& source, const ChatTemplateInput& input) {
    const jinja::Template parsed = jinja::parse(source);
    const std::tm now = time_for(input.today);

    std::vector<std::pair<std::string, jinja::Value>> vars;
    try {
        vars.emplace_back("messages", jinja::from_json(input.messages.is_null() ? nlohmann::ordered_json::array()
                                                                                : input.messages));
        if (!input.tools.is_null()) vars.emplace_back("tools", jinja::from_json(input.tools));
        vars.emplace_back("add_generation_prompt", jinja::boolean(input.add_generation_prompt));
        vars.emplace_back("bos_token", jinja::string(input.bos_token));
        vars.emplace_back("eos_token", jinja::string(input.eos_token));
        if (!input.extra.is_null() && !input.extra.is_object())
            throw jinja::Failure("the extra variables must be a JSON object");
        for (const auto& [name, value] : input.extra.items()) vars.emplace_back(name, jinja::from_json(value));
    } catch (const jinja::Failure& f) {
        throw Error(std::string("chat template input: ") + f.what());
    }
    // The two functions transformers adds to the template's globals.
    vars.emplace_back("raise_exception", jinja::callable("raise_exception", [](jinja::CallArgs& a) -> jinja::Value {
                          const std::string message = a.positional.empty() ? "" : jinja::to_str(a.positional[0]);
                          throw jinja::Failure("TemplateError: " + message);
                      }));
    vars.emplace_back("strftime_now", jinja::callable("strftime_now", [now](jinja::CallArgs& a) {
                          if (a.positional.size() != 1 || !a.positional[0].is(jinja::Kind::String))
                              throw jinja::Failure("strftime_now() takes one format string");
                          return jinja::string(format_time(now, a.positional[0].str()));
                      }));
    return jinja::render(parsed, vars);
}

}  // namespace rill
