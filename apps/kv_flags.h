// The KV cache type flags of every command that runs or plans a model: --kv-type for keys and values
// together, and llama.cpp's --cache-type-k / -ctk and --cache-type-v / -ctv for each alone.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "runtime/base/error.h"
#include "runtime/compute/kv_cache.h"

namespace rill::cli {

struct KvFlags {
    std::string both = "f16";
    std::string k, v;  // empty: as `both`

    void add_to(CLI::App& cmd) {
        const CLI::Validator type_name(
            [](std::string& name) -> std::string {
                try {
                    parse_kv_type(name);
                    return {};
                } catch (const Error& e) {
                    return e.what();
                }
            },
            "TYPE");
        cmd.add_option("--kv-type", both,
                       "KV cache type of keys and values: f16, f32 (exact), bf16, q8_0 (ggml's 8-bit blocks: 0.53x f16's "
                       "memory per token, log-probs a few thousandths off) or q4_0 (0.28x, a larger loss); q8_0 and q4_0 "
                       "need a head size that is a multiple of 32")
            ->capture_default_str()->check(type_name);
        cmd.add_option("--cache-type-k", k, "the keys' type alone, as llama.cpp's --cache-type-k / -ctk (overrides --kv-type)")
            ->check(type_name);
        cmd.add_option("--cache-type-v", v, "the values' type alone, as llama.cpp's --cache-type-v / -ctv (overrides --kv-type)")
            ->check(type_name);
    }

    KvTypes types() const {
        KvTypes t = parse_kv_type(both);
        if (!k.empty()) t.k = parse_kv_type(k);
        if (!v.empty()) t.v = parse_kv_type(v);
        return t;
    }
    std::string label() const { return kv_types_label(types()); }
};

// llama.cpp's -ctk and -ctv spelled out. CLI11 takes only one-letter short names and would read "-ctk"
// as -c (the context size) with the value "tk", so main() rewrites these two words before parsing.
inline const char* spell_out_kv_flag(const char* arg) {
    const std::string_view a(arg);
    if (a == "-ctk") return "--cache-type-k";
    if (a == "-ctv") return "--cache-type-v";
    return arg;
}

}  // namespace rill::cli
