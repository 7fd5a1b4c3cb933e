// Decode throughput of several streams in one batch (Session::eval_together), without HTTP: what
// rill serve --parallel N can reach at best. Rounds alternate over the batch sizes, so a noisy host
// slows them all alike; medians per size and the ratio to one stream are printed.
//   bench_batch_decode MODEL.gguf [threads=2] [steps=64] [rounds=5] [sizes=1,2,4,8]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/session/session.h"

using namespace rill;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Tokens per second over `steps` batched decode steps of n streams, after a short prompt each.
double run(const Model& model, const SessionOptions& options, int n, int steps) {
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<Session*> batch;
    std::vector<int32_t> tokens;
    for (int i = 0; i < n; ++i) {
        sessions.push_back(std::make_unique<Session>(model, options));
        const int32_t prompt[] = {1, 100 + i, 200 + i, 300 + i};
        sessions.back()->eval(prompt);
        batch.push_back(sessions.back().get());
        tokens.push_back(400 + i);
    }
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
        const auto logits = Session::eval_together(batch, tokens);
        const size_t n_vocab = logits.size() / size_t(n);
        for (int i = 0; i < n; ++i)
            tokens[size_t(i)] = int32_t(std::max_element(logits.begin() + long(size_t(i) * n_vocab), logits.begin() + long(size_t(i + 1) * n_vocab)) -
                                        (logits.begin() + long(size_t(i) * n_vocab)));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return double(n) * steps / seconds;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_batch_decode MODEL.gguf [threads=2] [steps=64] [rounds=5] [sizes=1,2,4,8]\n");
        return 2;
    }
    LoadOptions load;
    load.use_mmap = false;  // this VM ages mapped pages; anonymous memory keeps decode steady
    const auto model = load_model(argv[1], load);
    SessionOptions options;
    options.n_threads = argc > 2 ? std::atoi(argv[2]) : 2;
    options.n_ctx = 512;
    const int steps = argc > 3 ? std::atoi(argv[3]) : 64;
    const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
    std::vector<int> sizes;
    std::stringstream list(argc > 5 ? argv[5] : "1,2,4,8");
    for (std::string item; std::getline(list, item, ',');) sizes.push_back(std::atoi(item.c_str()));

    std::vector<std::vector<double>> tps(sizes.size()), ratio(sizes.size());
    run(*model, options, sizes.back(), 4);  // warm-up
    for (int r = 0; r < rounds; ++r) {
        std::vector<double> round;
        for (const int n : sizes) round.push_back(run(*model, options, n, steps));
        for (size_t i = 0; i < sizes.size(); ++i) {
            tps[i].push_back(round[i]);
            ratio[i].push_back(round[i] / round[0]);
        }
    }
    std::printf("| streams | tokens/s (median of %d) | ratio to %d stream%s (median) |\n|---:|---:|---:|\n", rounds, sizes[0], sizes[0] == 1 ? "" : "s");
    for (size_t i = 0; i < sizes.size(); ++i) std::printf("| %d | %.1f | %.2f |\n", sizes[i], median(tps[i]), median(ratio[i]));
    return 0;
}
