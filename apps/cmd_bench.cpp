// rill bench: prompt and decode speed in llama-bench's terms, set against the machine's memory bandwidth
// and, if asked, against llama.cpp itself run alternately on the same model.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "kv_flags.h"
#include "model_flags.h"
#include "session_flags.h"
#include "runtime/plan/bandwidth.h"
#include "runtime/plan/budget.h"
#include "runtime/base/error.h"
#include "runtime/plan/plan.h"
#include "runtime/make/quant_mix.h"
#include "svg_plot.h"
#include "machine_threads.h"
#include "runtime/session/session.h"
#include "simd/gemv.h"
#include "simd/peak_flops.h"

namespace rill::cli {
namespace {

using Clock = std::chrono::steady_clock;
using ordered_json = nlohmann::ordered_json;

constexpr int kMaxTokens = 1 << 20;

struct BenchFlags {
    ModelFlags model;
    std::string prompt_list = "512";
    std::string gen_list = "128";
    std::string thread_list;  // empty: every core
    int repetitions = 5;
    std::string output = "md";
    bool vs_llamacpp = false;
    std::string llama_bench_path;
    KvFlags kv;
    std::string gemm = "auto";
    int ubatch = 512;  // llama-bench's default micro-batch, so pp rows compare like with like
    std::string sweep;  // "threads" or "ctx"
    std::string plot_path;
    std::string depth_list = "0,512,1024,2048";
    std::string n_depth_list = "0";  // -d: every pp and tg row at each of these depths
};

// One kind of row: a prompt of n_prompt tokens (pp) or n_gen single-token decode steps (tg).
struct BenchTest {
    int n_prompt = 0;
    int n_gen = 0;
    int depth = 0;  // tokens already in the context before the timed part (llama-bench's -d)
    std::string name() const {
        return (n_prompt > 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen)) +
               (depth > 0 ? " @ d" + std::to_string(depth) : "");
    }
    int n_tokens() const { return n_prompt > 0 ? n_prompt : n_gen; }
};

struct RowResult {
    BenchTest test;
    int n_threads = 0;
    std::vector<double> seconds;   // per repetition
    std::vector<double> ttft_ms;   // per repetition
    std::vector<double> llama_ts;  // llama.cpp's tokens/s, one per repetition (with --vs-llamacpp)
    double bandwidth_gbps = 0;
    std::vector<double> bandwidth_samples;  // tg rows: the read bandwidth probed right before each repetition
    uint64_t bytes_per_token = 0;  // tg rows only
    double flops = 0;               // pp rows only: per prompt
    double peak_gflops = 0;         // pp rows only: measured at this thread count
    std::string gemm;               // the GEMM backend asked for
    ordered_json gemm_choices;      // per weight type: the backend a batch of this row's size took, and why
    std::string type_k, type_v;     // the KV cache's types, as llama-bench names them
    double peak_rss_mb = 0;
};

struct ModelSummary {
    std::string filename, type;
    uint64_t size = 0, n_params = 0;
    double load_ms = 0;
};

// How to run llama.cpp's llama-bench: directly, or through the shared peer script's `bench` command.
struct LlamaBench {
    std::string path;
    bool via_peer_script = false;
};

// ---- flag parsing ----

std::vector<int> parse_int_list(const std::string& list, const std::string& flag, int min, int max, const char* what) {
    std::vector<int> values;
    size_t start = 0;
    while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, comma - start);
        size_t used = 0;
        long long value = -1;
        try {
            value = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (item.empty() || used != item.size())
            throw CLI::ValidationError(flag, "'" + item + "' is not " + what + " (expected a comma list of whole numbers, like " +
                                                 (min == 0 ? "128,512" : "1,2") + ")");
        if (value < min || value > max)
            throw CLI::ValidationError(flag, std::to_string(value) + " is out of range (" + std::to_string(min) + " to " +
                                                 std::to_string(max) + ")");
        values.push_back(int(value));
        start = comma + 1;
    }
    return values;
}

// ---- statistics, as llama-bench computes them ----

double mean(const std::vector<double>& v) {
    double sum = 0;
    for (const double x : v) sum += x;
    return v.empty() ? 0 : sum / double(v.size());
}

double sample_stddev(const std::vector<double>& v) {
    if (v.size() < 2) return 0;
    const double m = mean(v);
    double squares = 0;
    for (const double x : v) squares += (x - m) * (x - m);
    return std::sqrt(squares / double(v.size() - 1));
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t mid = v.size() / 2;
    return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

std::vector<double> tokens_per_second(const RowResult& row) {
    std::vector<double> ts;
    for (const double s : row.seconds) ts.push_back(row.test.n_tokens() / std::max(s, 1e-12));
    return ts;
}

std::vector<double> pair_ratios(const RowResult& row) {
    const std::vector<double> ts = tokens_per_second(row);
    std::vector<double> ratios;
    for (size_t i = 0; i < std::min(ts.size(), row.llama_ts.size()); ++i) ratios.push_back(ts[i] / row.llama_ts[i]);
    return ratios;
}

// ---- the model's description, in llama-bench's words ----

std::string parameter_label(uint64_t n) {
    char buf[32];
    if (n >= 1000000000) std::snprintf(buf, sizeof buf, "%.1fB", double(n) / 1e9);
    else if (n >= 1000000) std::snprintf(buf, sizeof buf, "%.0fM", double(n) / 1e6);
    else if (n >= 1000) std::snprintf(buf, sizeof buf, "%.0fK", double(n) / 1e3);
    else std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)n);
    return buf;
}

// The name llama.cpp gives the file's type: general.file_type when it is one rill knows, else the
// type holding most of the matrices' bytes.
std::string file_type_name(const GgufFile& file) {
    if (const auto file_type = file.get_uint("general.file_type"))
        for (const std::string& name : recipe_names())
            if (find_recipe(name)->file_type == *file_type) return name;
    std::map<std::string, uint64_t> bytes_by_type;
    for (const GgufTensor& t : file.tensors())
        if (t.n_dims >= 2) bytes_by_type[std::string(traits(t.type).name)] += t.n_bytes;
    std::string best = "?";
    uint64_t best_bytes = 0;
    for (const auto& [name, bytes] : bytes_by_type)
        if (bytes > best_bytes) best = name, best_bytes = bytes;
    return best;
}

ModelSummary describe(const Model& model, const std::string& path, double load_ms) {
    ModelSummary s;
    s.filename = path;
    s.size = model.weight_bytes();
    for (const GgufTensor& t : model.file.tensors()) s.n_params += t.n_elements;
    s.type = model.hp.arch + " " + parameter_label(s.n_params) + " " + file_type_name(model.file);
    s.load_ms = load_ms;
    return s;
}

// ---- measurement ----

// The status line on stderr: redrawn in place on a terminal; elsewhere only row starts are logged.
struct StatusLine {
    bool tty = ::isatty(STDERR_FILENO);
    bool drawn = false;

    void show(const std::string& text, bool row_start) {
        if (tty) {
            std::fprintf(stderr, "\r%s\033[K", text.c_str());
            drawn = true;
        } else if (row_start) {
            std::fprintf(stderr, "%s\n", text.c_str());
        }
        std::fflush(stderr);
    }
    void clear() {
        if (drawn) std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
        drawn = false;
    }
    ~StatusLine() { clear(); }  // also when an error unwinds, so the message starts on a clean line
};

// The high-water mark of resident memory, reset after the bandwidth probe so its 512 MiB buffer does
// not hide what the model and session use. Linux (4.0+) resets it on writing 5 to clear_refs.
bool reset_peak_rss() {
    FILE* f = std::fopen("/proc/self/clear_refs", "w");
    if (f == nullptr) return false;
    const bool written = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && written;
}

double peak_rss_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_maxrss) * 1024.0 / 1e6;  // ru_maxrss is in KiB on Linux
}

// Deterministic ids in [0, n_vocab), starting with BOS when the vocabulary has one, as a real prompt does.
std::vector<int32_t> bench_tokens(size_t n, int n_vocab, int32_t bos) {
    std::vector<int32_t> ids(n);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; ++i) {
        state += 0x9e3779b97f4a7c15ull;  // splitmix64
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        ids[i] = int32_t(z % uint64_t(n_vocab));
    }
    if (n > 0 && bos >= 0) ids[0] = bos;
    return ids;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct RepTiming {
    double seconds = 0;
    double ttft_ms = 0;
    uint64_t expert_bytes = 0;  // expert weights the timed tokens read (a mixture of experts)
};

RepTiming run_prompt(Session& session, std::span<const int32_t> prompt, std::span<const int32_t> context) {
    session.reset();
    if (!context.empty()) session.eval(context);
    const auto start = Clock::now();
    session.eval(prompt);
    const double seconds = seconds_since(start);
    return {seconds, seconds * 1e3};
}

RepTiming run_decode(Session& session, std::span<const int32_t> tokens, std::span<const int32_t> context) {
    session.reset();
    if (!context.empty()) session.eval(context);  // untimed: the cache is filled to the row's depth
    session.take_expert_bytes();
    RepTiming timing;
    const auto start = Clock::now();
    for (size_t i = 0; i < tokens.size(); ++i) {
        session.eval(tokens.subspan(i, 1));
        if (i == 0) timing.ttft_ms = seconds_since(start) * 1e3;
    }
    timing.seconds = seconds_since(start);
    timing.expert_bytes = session.take_expert_bytes();
    return timing;
}

// ---- llama.cpp ----

bool is_elf_executable(const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    char magic[4] = {};
    return f && std::fread(magic, 1, 4, f.get()) == 4 && std::memcmp(magic, "\x7f" "ELF", 4) == 0;
}

LlamaBench find_llama_bench(const BenchFlags& f) {
    if (!f.llama_bench_path.empty()) {
        struct stat info{};
        // access() alone says yes to root for any file, so the mode bits are checked too.
        if (::stat(f.llama_bench_path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || (info.st_mode & 0111) == 0 ||
            ::access(f.llama_bench_path.c_str(), X_OK) != 0)
            throw CLI::ValidationError("--llama-bench", f.llama_bench_path + " is not executable");
        // A llama-bench binary is run as is; anything else is taken to be the peer script.
        const std::string base = f.llama_bench_path.substr(f.llama_bench_path.find_last_of('/') + 1);
        const bool direct = is_elf_executable(f.llama_bench_path) || base.rfind("llama-bench", 0) == 0;
        return {f.llama_bench_path, !direct};
    }
    const char* env = std::getenv("RILL_SHARED");
    const std::string shared = env != nullptr && *env != '\0' ? env : "../shared";
    const std::string script = shared + "/peers/llamacpp";
    if (::access(script.c_str(), X_OK) != 0)
        throw Error("--vs-llamacpp: no llama.cpp peer at " + script + " (set RILL_SHARED to the shared folder, or pass "
                    "--llama-bench PATH with a llama-bench executable or the peer script)");
    return {script, true};
}

std::string shell_words(const std::vector<std::string>& args) {
    std::string line;
    for (const std::string& a : args) {
        if (!line.empty()) line += ' ';
        if (a.find_first_of(" \t'\"\\$") == std::string::npos) line += a;
        else line += "'" + a + "'";
    }
    return line;
}

// The last part of a program's error output, on one line (rill's errors are one line).
std::string one_line_tail(const std::string& text, size_t max_chars) {
    std::string tail = text.size() > max_chars ? "…" + text.substr(text.size() - max_chars) : text;
    for (char& c : tail)
        if (c == '\n' || c == '\r') c = ' ';
    while (!tail.empty() && tail.back() == ' ') tail.pop_back();
    return tail;
}

struct ProcessOutput {
    int exit_code = 0;
    std::string out, err;
};

// Runs a program with no shell between, stdin from /dev/null, stdout captured, stderr kept aside for
// an error message.
ProcessOutput run_process(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);

    std::unique_ptr<FILE, int (*)(FILE*)> err_file(std::tmpfile(), &std::fclose);
    if (!err_file) throw Error(std::string("cannot create a temporary file: ") + std::strerror(errno));
    const int err_fd = fileno(err_file.get());
    ::fcntl(err_fd, F_SETFD, FD_CLOEXEC);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

    const pid_t pid = ::fork();
    if (pid == 0) {  // only async-signal-safe calls until exec: the parent has other threads
        ::dup2(pipe_fds[1], STDOUT_FILENO);
        ::dup2(err_fd, STDERR_FILENO);
        if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
        ::execv(argv[0], argv.data());
        const char message[] = "exec failed\n";
        [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, message, sizeof message - 1);
        ::_exit(127);
    }
    const int fork_errno = errno;
    ::close(pipe_fds[1]);
    if (null_fd >= 0) ::close(null_fd);
    if (pid < 0) {
        ::close(pipe_fds[0]);
        throw Error("cannot start " + args[0] + ": " + std::strerror(fork_errno));
    }

    ProcessOutput result;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
        if (n > 0) result.out.append(buf, size_t(n));
        else if (n == 0 || errno != EINTR) break;
    }
    ::close(pipe_fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    std::rewind(err_file.get());
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, err_file.get())) > 0) result.err.append(buf, n);
    return result;
}

// One llama-bench run of the same test at the same thread count; returns its tokens/s.
double run_llama_bench(const LlamaBench& llama, const std::string& model_path, const BenchTest& test, int n_threads,
                       KvTypes kv_types, int ubatch) {
    std::vector<std::string> args = {llama.path};
    if (llama.via_peer_script) args.push_back("bench");
    for (const std::string& a : {std::string("-m"), model_path, std::string("-t"), std::to_string(n_threads),
                                 std::string("-r"), std::string("1"), std::string("-o"), std::string("json"),
                                 std::string("-mmp"), std::string("0"), std::string("-ctk"), std::string(kv_type_name(kv_types.k)),
                                 std::string("-ctv"), std::string(kv_type_name(kv_types.v)), std::string("-p"), std::to_string(test.n_prompt), std::string("-n"),
                                 std::to_string(test.n_gen), std::string("-ub"), std::to_string(ubatch)})
        args.push_back(a);
    if (test.depth > 0) {
        args.push_back("-d");
        args.push_back(std::to_string(test.depth));
    }
    const std::string command = shell_words(args);
    const ProcessOutput run = run_process(args);
    if (run.exit_code != 0)
        throw Error("llama-bench failed (exit " + std::to_string(run.exit_code) + "): " + command + ": " +
                    one_line_tail(run.err, 400));
    // The JSON array is the whole of stdout; tolerate stray lines around it.
    const size_t open = run.out.find('['), close = run.out.rfind(']');
    ordered_json parsed;
    if (open != std::string::npos && close != std::string::npos && close > open)
        parsed = ordered_json::parse(run.out.substr(open, close - open + 1), nullptr, false);
    if (!parsed.is_array() || parsed.empty() || !parsed[0].is_object() || !parsed[0].contains("avg_ts") ||
        !parsed[0]["avg_ts"].is_number() || parsed[0]["avg_ts"].get<double>() <= 0)
        throw Error("llama-bench printed no result with avg_ts: " + command + ": output began: " +
                    one_line_tail(run.out.substr(0, 200), 200));
    return parsed[0]["avg_ts"].get<double>();
}

// ---- output ----

std::string format(const char* fmt, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, value);
    return buf;
}

std::string size_label(uint64_t bytes) {
    const double gib = double(bytes) / double(1ull << 30);
    return gib >= 1 ? format("%.2f GiB", gib) : format("%.2f MiB", double(bytes) / double(1ull << 20));
}

std::string params_label(uint64_t n) { return n >= 1000000000 ? format("%.2f B", double(n) / 1e9) : format("%.2f M", double(n) / 1e6); }

ordered_json row_json(const ModelSummary& model, const RowResult& row, bool with_llama) {
    const std::vector<double> ts = tokens_per_second(row);
    std::vector<double> ns;
    for (const double s : row.seconds) ns.push_back(s * 1e9);
    const bool decode = row.test.n_gen > 0;
    const double avg_ts = mean(ts);

    ordered_json j;
    j["model_filename"] = model.filename;
    j["model_type"] = model.type;
    j["model_size"] = model.size;
    j["model_n_params"] = model.n_params;
    j["n_threads"] = row.n_threads;
    j["kernels"] = std::string(simd::kernel_path_name(simd::default_kernel_path()));
    j["n_prompt"] = row.test.n_prompt;
    j["n_gen"] = row.test.n_gen;
    j["n_depth"] = row.test.depth;
    j["avg_ns"] = uint64_t(std::llround(mean(ns)));
    j["stddev_ns"] = uint64_t(std::llround(sample_stddev(ns)));
    j["avg_ts"] = avg_ts;
    j["stddev_ts"] = sample_stddev(ts);
    j["samples_ts"] = ts;
    j["ttft_ms"] = mean(row.ttft_ms);
    j["load_ms"] = model.load_ms;
    j["peak_rss_mb"] = row.peak_rss_mb;
    // Bytes per token describe a decode step; a prompt row reads the weights once for many tokens.
    j["bytes_per_token"] = decode ? ordered_json(row.bytes_per_token) : ordered_json(nullptr);
    const double achieved = double(row.bytes_per_token) * avg_ts / 1e9;
    j["achieved_gbps"] = decode ? ordered_json(achieved) : ordered_json(nullptr);
    // A decode row's share of bandwidth is the median over its repetitions of each one's rate against
    // the probe run just before it: the host's bandwidth drifts by a third within minutes, and a share
    // against one probe at the start measured the drift as much as the kernels.
    std::vector<double> shares;
    for (size_t i = 0; i < std::min(ts.size(), row.bandwidth_samples.size()); ++i)
        shares.push_back(100 * double(row.bytes_per_token) * ts[i] / 1e9 / row.bandwidth_samples[i]);
    j["bandwidth_gbps"] = row.bandwidth_samples.empty() ? row.bandwidth_gbps : median(row.bandwidth_samples);
    if (!row.bandwidth_samples.empty()) j["bandwidth_samples_gbps"] = row.bandwidth_samples;
    j["pct_of_bandwidth"] = !decode ? ordered_json(nullptr)
                          : shares.empty() ? ordered_json(100 * achieved / row.bandwidth_gbps)
                                           : ordered_json(median(shares));
    // A prompt is compute-bound: its floating-point operations per second against the multiply-add
    // peak measured at the same thread count.
    const double gflops = row.flops * avg_ts / double(std::max(1, row.test.n_prompt)) * 1e-9;
    j["gemm"] = row.gemm;
    j["gemm_choices"] = row.gemm_choices;
    j["type_k"] = row.type_k;
    j["type_v"] = row.type_v;
    j["flops_per_prompt"] = decode ? ordered_json(nullptr) : ordered_json(row.flops);
    j["achieved_gflops"] = decode ? ordered_json(nullptr) : ordered_json(gflops);
    j["peak_gflops"] = decode ? ordered_json(nullptr) : ordered_json(row.peak_gflops);
    j["pct_of_peak"] = decode ? ordered_json(nullptr) : ordered_json(100 * gflops / row.peak_gflops);
    if (with_llama) {
        j["llamacpp_avg_ts"] = mean(row.llama_ts);
        j["llamacpp_stddev_ts"] = sample_stddev(row.llama_ts);
        j["llamacpp_samples_ts"] = row.llama_ts;
        j["ratio"] = median(pair_ratios(row));
    }
    return j;
}

std::string csv_field(const ordered_json& value) {
    if (value.is_null()) return "";
    if (!value.is_string()) return value.dump();
    std::string quoted = "\"";
    for (const char c : value.get<std::string>()) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

void print_csv(const std::vector<ordered_json>& rows) {
    if (rows.empty()) return;
    std::string header;
    for (const auto& [key, value] : rows[0].items())
        if (!value.is_array()) header += (header.empty() ? "" : ",") + key;
    std::printf("%s\n", header.c_str());
    for (const ordered_json& row : rows) {
        std::string line;
        bool first = true;
        for (const auto& [key, value] : row.items()) {
            if (value.is_array()) continue;
            // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) about a literal + a temporary string.
            if (!first) line += ',';
            line += csv_field(value);
            first = false;
        }
        std::printf("%s\n", line.c_str());
    }
}

void print_markdown(const ModelSummary& model, const std::vector<RowResult>& rows, const std::vector<ordered_json>& json,
                    bool with_llama, bool peak_rss_reset) {
    // tg rows are bound by memory bandwidth, pp rows by compute: each shows its own rate and limit.
    std::vector<std::string> header = {"model", "size", "params", "threads", "test", "t/s", "ttft ms", "achieved", "% of limit"};
    if (with_llama) header.insert(header.end(), {"llama.cpp t/s", "ratio"});
    std::vector<std::vector<std::string>> cells;
    for (size_t i = 0; i < rows.size(); ++i) {
        const ordered_json& j = json[i];
        const bool decode = rows[i].test.n_gen > 0;
        std::vector<std::string> line = {
            model.type, size_label(model.size), params_label(model.n_params), std::to_string(rows[i].n_threads),
            rows[i].test.name(),
            format("%.2f", j["avg_ts"].get<double>()) + " ± " + format("%.2f", j["stddev_ts"].get<double>()),
            format("%.2f", j["ttft_ms"].get<double>()),
            decode ? format("%.2f GB/s", j["achieved_gbps"].get<double>()) : format("%.1f GFLOP/s", j["achieved_gflops"].get<double>()),
            decode ? format("%.1f%% BW", j["pct_of_bandwidth"].get<double>()) : format("%.1f%% peak", j["pct_of_peak"].get<double>())};
        if (with_llama) {
            line.push_back(format("%.2f", j["llamacpp_avg_ts"].get<double>()) + " ± " +
                           format("%.2f", j["llamacpp_stddev_ts"].get<double>()));
            line.push_back(format("%.2f", j["ratio"].get<double>()) + "×");
        }
        cells.push_back(line);
    }
    // Widths in characters, not bytes: "±" and "×" are two bytes each in UTF-8.
    const auto width = [](const std::string& s) {
        size_t n = 0;
        for (const char c : s) n += (uint8_t(c) & 0xc0) != 0x80;
        return n;
    };
    std::vector<size_t> widths;
    for (const std::string& h : header) widths.push_back(width(h));
    for (const auto& line : cells)
        for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], width(line[c]));
    const auto print_line = [&](const std::vector<std::string>& line) {
        std::string out = "|";
        for (size_t c = 0; c < line.size(); ++c) {
            const std::string pad(widths[c] - width(line[c]), ' ');
            out += " " + (c == 0 ? line[c] + pad : pad + line[c]) + " |";  // the model name left, numbers right
        }
        std::printf("%s\n", out.c_str());
    };
    print_line(header);
    std::string rule = "|";
    for (size_t c = 0; c < header.size(); ++c)
        rule += " " + (c == 0 ? std::string(widths[c], '-') : std::string(widths[c] - 1, '-') + ":") + " |";
    std::printf("%s\n", rule.c_str());
    for (const auto& line : cells) print_line(line);

    std::string bandwidths, peaks;
    double peak = 0;
    int last_threads = -1;
    for (const RowResult& row : rows) {
        peak = std::max(peak, row.peak_rss_mb);
        if (row.n_threads == last_threads) continue;
        last_threads = row.n_threads;
        const std::string at = " at " + std::to_string(row.n_threads) + (row.n_threads == 1 ? " thread" : " threads");
        std::vector<double> probes;
        for (const RowResult& other : rows)
            if (other.n_threads == row.n_threads) probes.insert(probes.end(), other.bandwidth_samples.begin(), other.bandwidth_samples.end());
        const auto [low, high] = std::minmax_element(probes.begin(), probes.end());
        const std::string spread = probes.empty() ? "" : format(" (%.1f", *low) + format("-%.1f before tg repetitions)", *high);
        bandwidths += (bandwidths.empty() ? "" : ", ") + format("%.2f GB/s", row.bandwidth_gbps) + at + spread;
        if (row.peak_gflops > 0) peaks += (peaks.empty() ? "" : ", ") + format("%.1f GFLOP/s", row.peak_gflops) + at;
    }
    std::printf("\nmeasured read bandwidth %s%s | kernels %s | gemm %s | load %.1f ms | peak RSS %.1f MB%s\n", bandwidths.c_str(),
                peaks.empty() ? "" : (" | measured f32 FMA peak " + peaks).c_str(),
                std::string(simd::kernel_path_name(simd::default_kernel_path())).c_str(),
                rows.empty() ? "auto" : rows[0].gemm.c_str(), model.load_ms, peak,
                peak_rss_reset ? "" : " (includes the 512 MiB bandwidth probe)");
}

// ---- the sweep's picture ----

// Measured tokens/s per test against threads or depth, with what the plan predicts and the ceiling
// the profile's bandwidth (tg) or multiply-add peak (pp) allows: both lines come from the same
// profile, so the prediction never sits above its own ceiling.
void write_plot(const BenchFlags& f, const ModelSummary& model, const ModelShape& shape, const std::vector<RowResult>& rows,
                const MachineProfile& profile) {
    const bool by_threads = f.sweep == "threads";
    Plot plot;
    plot.title = model.type + (by_threads ? ": speed by thread count" : ": decode speed as the context fills");
    plot.subtitle = profile.cpu + ", " + std::string(simd::kernel_path_name(simd::default_kernel_path())) + " kernels, " +
                    size_label(model.size) + "; mean of " + std::to_string(f.repetitions) + " runs per point";
    plot.x_label = by_threads ? "threads" : "tokens already in the context";
    plot.y_label = "tokens per second";
    plot.integer_x = by_threads;
    const KvTypes kv = f.kv.types();
    struct Palette {
        const char* measured;
        const char* light;
    };
    const Palette palettes[] = {{"#1f5fa8", "#8fb4dd"}, {"#c0392b", "#eba39b"}, {"#2e8b57", "#9fd5b5"}, {"#7b3fa0", "#c6a6dc"}};
    // One group of lines per test kind: by threads each pp/tg test; by context the one tg test.
    std::vector<std::string> kinds;
    for (const RowResult& r : rows) {
        const std::string kind = by_threads ? r.test.name() : "tg" + std::to_string(r.test.n_gen);
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    }
    for (size_t k = 0; k < kinds.size(); ++k) {
        const Palette& color = palettes[k % std::size(palettes)];
        PlotSeries measured{kinds[k] + " measured", color.measured, false, true, {}};
        PlotSeries predicted{kinds[k] + " predicted", color.measured, true, false, {}};
        PlotSeries ceiling{"", color.light, true, false, {}};
        for (const RowResult& r : rows) {
            const std::string kind = by_threads ? r.test.name() : "tg" + std::to_string(r.test.n_gen);
            if (kind != kinds[k]) continue;
            const double x = by_threads ? r.n_threads : r.test.depth;
            measured.points.push_back({x, mean(tokens_per_second(r))});
            if (r.test.n_gen > 0) {
                const int position = r.test.depth + r.test.n_gen / 2;
                predicted.points.push_back({x, predict_decode(shape, profile, r.n_threads, position, kv).tokens_per_second});
                ceiling.label = kinds[k] + " ceiling: bandwidth";
                ceiling.points.push_back({x, profile.read_bandwidth(r.n_threads) * 1e9 / double(r.bytes_per_token)});
            } else {
                predicted.points.push_back({x, predict_prefill(shape, profile, r.n_threads, r.test.n_prompt, f.ubatch).tokens_per_second});
                ceiling.label = kinds[k] + " ceiling: FMA peak";
                ceiling.points.push_back({x, profile.peak(r.n_threads) * 1e9 / (r.flops / r.test.n_prompt)});
            }
        }
        plot.series.push_back(ceiling);
        plot.series.push_back(predicted);
        plot.series.push_back(measured);
    }
    std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(f.plot_path.c_str(), "w"), &std::fclose);
    const std::string svg = render_svg(plot);
    if (!out || std::fwrite(svg.data(), 1, svg.size(), out.get()) != svg.size())
        throw Error("cannot write the plot to " + f.plot_path + ": " + std::strerror(errno));
}

// ---- the command ----

int bench(const BenchFlags& f) {
    const std::vector<int> prompts = parse_int_list(f.prompt_list, "-p,--n-prompt", 0, kMaxTokens, "a prompt length");
    const std::vector<int> gens = parse_int_list(f.gen_list, "-n,--n-gen", 0, kMaxTokens, "a token count");
    std::vector<int> threads = f.thread_list.empty() ? std::vector<int>{} : parse_int_list(f.thread_list, "-t,--threads", 1, 1024, "a thread count");
    if (f.sweep == "threads" && threads.empty())
        for (int t = 1; t <= default_thread_count(); ++t) threads.push_back(t);
    std::vector<BenchTest> tests;
    if (f.sweep == "ctx") {
        // Decode speed as the context fills: the first -n value at each depth.
        const int n_gen = gens.empty() || gens[0] == 0 ? 128 : gens[0];
        for (const int d : parse_int_list(f.depth_list, "--depths", 0, kMaxTokens, "a context depth")) tests.push_back({0, n_gen, d});
    } else {
        const std::vector<int> depths = parse_int_list(f.n_depth_list, "-d,--n-depth", 0, kMaxTokens, "a context depth");
        for (const int d : depths)
            for (const int p : prompts)
                if (p > 0) tests.push_back({p, 0, d});
        for (const int d : depths)
            for (const int n : gens)
                if (n > 0) tests.push_back({0, n, d});
    }
    if (tests.empty()) throw CLI::ValidationError("-p/-n", "nothing to run: every -p and -n value is 0");
    if (!f.plot_path.empty() && f.sweep.empty())
        throw CLI::ValidationError("--plot", "draws a sweep: add --sweep threads or --sweep ctx");
    const KvTypes kv_types = f.kv.types();
    // Found before the model loads, so a missing peer fails at once.
    const bool with_llama = f.vs_llamacpp || !f.llama_bench_path.empty();
    const std::optional<LlamaBench> llama = with_llama ? std::optional(find_llama_bench(f)) : std::nullopt;

    StatusLine status;
    status.show("bench: loading " + f.model.path, true);
    const auto load_start = Clock::now();
    const auto model = load_model(f.model.path, f.model.load_options());
    const ModelSummary summary = describe(*model, f.model.path, seconds_since(load_start) * 1e3);
    // Without -t, each row runs at the thread count the plan chose for its phase (machine_threads.h).
    std::optional<ThreadChoice> auto_threads;
    if (threads.empty()) {
        auto_threads = choose_threads(*model, 0);
        threads = {auto_threads->decode};
        if (auto_threads->prefill != auto_threads->decode) threads.push_back(auto_threads->prefill);
    }
    const ModelShape shape = shape_of(*model);
    const int n_vocab = model->hp.n_vocab;
    const auto bos_id = model->file.get_uint("tokenizer.ggml.bos_token_id");
    const int32_t bos = bos_id && *bos_id < uint64_t(n_vocab) ? int32_t(*bos_id) : -1;

    std::vector<RowResult> rows;
    bool peak_rss_reset = true;
    bool llama_started = false;
    const bool any_prompt = std::any_of(tests.begin(), tests.end(), [](const BenchTest& b) { return b.n_prompt > 0; });
    for (const int t : threads) {
        const auto runs_at = [&](const BenchTest& b) {
            return !auto_threads || t == (b.n_prompt > 0 ? auto_threads->prefill : auto_threads->decode);
        };
        status.show("bench: measuring memory bandwidth with " + std::to_string(t) + (t == 1 ? " thread" : " threads"), true);
        const double bandwidth = measure_read_bandwidth(t);
        if (any_prompt) status.show("bench: measuring multiply-add peak with " + std::to_string(t) + (t == 1 ? " thread" : " threads"), true);
        const double peak_gflops = any_prompt ? simd::measure_peak_gflops(t) : 0;
        peak_rss_reset = reset_peak_rss() && peak_rss_reset;
        for (const BenchTest& test : tests) {
            if (!runs_at(test)) continue;
            RowResult row;
            row.test = test;
            row.n_threads = t;
            row.bandwidth_gbps = bandwidth;
            if (test.n_gen > 0) row.bytes_per_token = decode_bytes_per_token(shape, test.depth + test.n_gen / 2, kv_types).total();
            if (test.n_prompt > 0) row.flops = prompt_flops(shape, test.n_prompt);
            row.peak_gflops = test.n_prompt > 0 ? peak_gflops : 0;
            row.gemm = f.gemm;
            row.type_k = std::string(kv_type_name(kv_types.k));
            row.type_v = std::string(kv_type_name(kv_types.v));
            const std::string label = "bench " + test.name() + " t=" + std::to_string(t);

            SessionOptions options;
            options.n_ctx = test.depth + std::max(test.n_prompt, test.n_gen) + 16;
            options.n_threads = t;
            options.n_batch = f.ubatch;
            options.kv_types = kv_types;
            options.gemm = parse_gemm_backend(f.gemm);
            if (options.gemm == GemmBackend::Auto) options.gemm_table = calibrated_gemm_table(*model, t);
            // A decode step is one token; a prompt row's batches are ubatch tokens (the last may be shorter).
            row.gemm_choices = gemm_choices_json(*model, options, test.n_prompt > 0 ? std::min(test.n_prompt, f.ubatch) : 1);
            Session session(*model, options);
            const std::vector<int32_t> tokens = bench_tokens(size_t(test.depth + test.n_tokens()), n_vocab, bos);
            const std::span<const int32_t> context = std::span<const int32_t>(tokens).first(size_t(test.depth));
            const std::span<const int32_t> all = std::span<const int32_t>(tokens).subspan(size_t(test.depth));

            // An untimed warm-up faults in the weights and scratch and wakes the thread pool.
            status.show(label + " warm-up", true);
            if (test.n_prompt > 0) run_prompt(session, all.first(std::min<size_t>(all.size(), 32)), {});
            else run_decode(session, all.first(std::min<size_t>(all.size(), 4)), {});

            // With llama.cpp, rill and llama.cpp take turns rep by rep: the host is shared and its load
            // drifts, so each ratio compares two runs made moments apart, never distant ones.
            uint64_t expert_bytes = 0;
            for (int rep = 0; rep < f.repetitions; ++rep) {
                const std::string of = " rep " + std::to_string(rep + 1) + "/" + std::to_string(f.repetitions);
                if (test.n_gen > 0) {
                    // The probe's 512 MiB would otherwise count as the row's peak memory.
                    row.peak_rss_mb = std::max(row.peak_rss_mb, peak_rss_mb());
                    status.show(label + of + ": memory bandwidth", false);
                    row.bandwidth_samples.push_back(measure_read_bandwidth(t));
                    reset_peak_rss();
                }
                status.show(label + of, false);
                const RepTiming timing = test.n_prompt > 0 ? run_prompt(session, all, context) : run_decode(session, all, context);
                row.seconds.push_back(timing.seconds);
                row.ttft_ms.push_back(timing.ttft_ms);
                expert_bytes += timing.expert_bytes;
                if (llama) {
                    const bool first = !llama_started && llama->via_peer_script;
                    status.show("llama.cpp " + test.name() + " t=" + std::to_string(t) + of +
                                    (first ? " (the peer installs and builds llama-bench on its first run)" : ""),
                                first);
                    row.llama_ts.push_back(run_llama_bench(*llama, f.model.path, test, t, kv_types, f.ubatch));
                    llama_started = true;
                }
            }
            // A mixture of experts: GB/s from the experts the router really chose, not the expectation.
            if (test.n_gen > 0 && shape.hp.n_expert > 0)
                row.bytes_per_token = row.bytes_per_token - expected_expert_bytes(shape) +
                                      expert_bytes / (uint64_t(f.repetitions) * uint64_t(test.n_gen));
            row.peak_rss_mb = std::max(row.peak_rss_mb, peak_rss_mb());
            rows.push_back(std::move(row));
        }
    }
    status.clear();

    if (!f.plot_path.empty()) write_plot(f, summary, shape, rows, obtain_machine_profile(false));

    std::vector<ordered_json> json;
    for (const RowResult& row : rows) json.push_back(row_json(summary, row, llama.has_value()));
    if (f.output == "json") {
        std::printf("%s\n", ordered_json(json).dump(2).c_str());
    } else if (f.output == "csv") {
        print_csv(json);
    } else {
        print_markdown(summary, rows, json, llama.has_value(), peak_rss_reset);
    }
    std::fflush(stdout);
    return 0;
}

}  // namespace

Action add_bench(CLI::App& app) {
    auto f = std::make_shared<BenchFlags>();
    CLI::App* cmd = app.add_subcommand("bench", "Measure prompt and decode speed, like llama-bench, against memory bandwidth");
    cmd->footer(
        "Examples:\n"
        "  rill bench -m model.gguf                         pp512 and tg128 on every core, 5 repetitions\n"
        "  rill bench -m model.gguf -p 0 -n 64,256 -t 1,2 -o json\n"
        "  rill bench -m model.gguf -r 3 --vs-llamacpp      llama.cpp's llama-bench in alternate runs\n"
        "  rill bench -m model.gguf -p 512 -n 0 -d 0,4096   the prompt after 4096 tokens already in the context\n"
        "  rill bench -m model.gguf --sweep threads --plot threads.svg\n"
        "  rill bench -m model.gguf -n 64 --sweep ctx --depths 0,1024,2048,4096 --plot ctx.svg\n"
        "Columns: t/s is tokens per second, mean ± sample stddev over the repetitions (pp: prompt tokens\n"
        "evaluated as one batch; tg: tokens decoded one at a time). ttft ms is the whole prompt (pp) or the\n"
        "first decode step (tg). GB/s is the bytes a decode step must read (weights plus KV cache at the\n"
        "mean position) times t/s; % of BW is the median over repetitions of each one's GB/s against the\n"
        "read bandwidth probed right before it, at the same thread count.");
    f->model.add_to(*cmd);
    cmd->add_option("-p,--n-prompt", f->prompt_list, "prompt lengths, comma-separated; each gives a ppN row (0: none)")
        ->capture_default_str();
    cmd->add_option("-n,--n-gen", f->gen_list, "decode lengths, comma-separated; each gives a tgN row (0: none)")
        ->capture_default_str();
    cmd->add_option("-t,--threads", f->thread_list,
                    "thread counts, comma-separated (default: the plan's counts from the cached machine profile, decode "
                    "for tg rows and prompt for pp rows; without a profile, every core)");
    cmd->add_option("-d,--n-depth", f->n_depth_list,
                    "context depths, comma-separated, as llama-bench's -d: each row runs after that many tokens are "
                    "already in the cache (filled untimed), so pp rows include attention over them")
        ->capture_default_str();
    cmd->add_option("-r,--repetitions", f->repetitions, "timed repetitions of each row")
        ->capture_default_str()->check(CLI::Range(1, 1000));
    cmd->add_option("-o,--output", f->output, "output format: md, json or csv")
        ->capture_default_str()->check(CLI::IsMember({"md", "json", "csv"}));
    cmd->add_flag("--vs-llamacpp", f->vs_llamacpp,
                  "also run llama.cpp's llama-bench on each row, alternating with rill, and report the speed ratio");
    cmd->add_option("--llama-bench", f->llama_bench_path,
                    "llama-bench executable or the llama.cpp peer script to compare with (implies --vs-llamacpp; "
                    "default: peers/llamacpp in $RILL_SHARED or ../shared)")
        ->check(CLI::ExistingFile);
    f->kv.add_to(*cmd);
    cmd->add_option("--sweep", f->sweep,
                    "threads: every row at 1, 2, … up to every core (or the -t list); ctx: the first -n row at each "
                    "--depths context depth")
        ->check(CLI::IsMember({"threads", "ctx"}));
    cmd->add_option("--depths", f->depth_list, "context depths for --sweep ctx, comma-separated")->capture_default_str();
    cmd->add_option("--plot", f->plot_path,
                    "write the sweep as an SVG chart: measured t/s, the plan's prediction, and the bandwidth or FMA-peak ceiling");
    SessionFlags::add_prompt_flags(*cmd, f->gemm, f->ubatch);
    return [f] { return bench(*f); };
}

}  // namespace rill::cli
