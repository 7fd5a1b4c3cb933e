// The sampling flags `rill run` and `rill chat` share, with llama.cpp's defaults.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <random>

#include "runtime/session/sampling.h"

namespace rill::cli {

struct SamplingFlags {
    SamplingParams params;
    int64_t seed = -1;  // -1: a random seed, printed so the run can be repeated

    void add_to(CLI::App& cmd) {
        cmd.add_option("--temp", params.temperature, "temperature; 0 is greedy")->capture_default_str()->check(CLI::Range(0.0, 100.0));
        cmd.add_option("--top-k", params.top_k, "keep the k most likely tokens; 0 is off")
            ->capture_default_str()->check(CLI::Range(0, 1 << 30));
        cmd.add_option("--top-p", params.top_p, "keep the most likely tokens up to this total probability; 1 is off")
            ->capture_default_str()->check(CLI::Range(0.0, 1.0));
        cmd.add_option("--min-p", params.min_p, "drop tokens less likely than this × the most likely one; 0 is off")
            ->capture_default_str()->check(CLI::Range(0.0, 1.0));
        cmd.add_option("--repeat-penalty", params.repeat_penalty, "penalise recently seen tokens; 1 is off")
            ->capture_default_str()->check(CLI::Range(0.0, 100.0));
        cmd.add_option("--repeat-last-n", params.repeat_last_n, "how many recent tokens the penalty covers")
            ->capture_default_str()->check(CLI::Range(0, 1 << 20));
        cmd.add_option("--seed", seed, "random seed; the same seed gives the same text (default: random)");
    }

    // The parameters with the seed chosen.
    SamplingParams resolved() const {
        SamplingParams p = params;
        p.seed = seed >= 0 ? uint64_t(seed) : std::random_device{}();
        return p;
    }
};

}  // namespace rill::cli
