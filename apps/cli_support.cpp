#include "cli_support.h"

#include <signal.h>

#include <fstream>
#include <sstream>

#include "runtime/base/error.h"

namespace rill::cli {
namespace {

// A signal handler can only touch a lock-free atomic: this is the one process-wide flag.
std::atomic<bool> interrupted{false};

void on_signal(int) { interrupted.store(true); }

}  // namespace

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open");
    std::ostringstream s;
    s << in.rdbuf();
    if (in.bad()) throw Error(path + ": read failed");
    return s.str();
}

std::string read_scoring_text(const std::string& path) {
    std::string text = read_text_file(path);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
}

const std::atomic<bool>& interrupt_flag(bool also_sigterm) {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    sigaction(SIGINT, &action, nullptr);
    if (also_sigterm) sigaction(SIGTERM, &action, nullptr);
    return interrupted;
}

void clear_interrupt() { interrupted.store(false); }

bool take_interrupt() { return interrupted.exchange(false); }

std::string join_names(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace rill::cli
