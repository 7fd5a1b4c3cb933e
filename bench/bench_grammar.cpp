// Constrained decoding's cost per generated token: the time to compute the allowed-token mask for a
// nested JSON schema, over large vocabularies, as a generation walks through a valid document.
//   bench_grammar [--vocab FILE.gguf]... [google-benchmark flags]
// Default vocabularies: Llama 3's (128k, ggml-vocab-llama-bpe) and every other large one in
// ../shared/vocab. "mask_fresh" starts a new matcher for every document, as each request does, so
// its states and masks are built as the text reaches them, and computes the whole mask at every
// token (what a random-weight model, whose every free draw misses, costs); "check_sampled" is the
// lazy path's usual step with a trained model: only the sampled token is tested.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/matcher.h"
#include "runtime/session/constrained.h"
#include "runtime/text/tokenizer.h"

namespace {

using namespace rill;

std::string shared_dir() {
    if (const char* env = std::getenv("RILL_SHARED")) return env;
    return RILL_SHARED_DIR;
}

// A nested schema of the kind apps send: objects in objects, arrays, enums, bounded integers, a
// pattern and a format.
const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "pattern": "^[a-z0-9.]+@[a-z0-9]+\\.[a-z]{2,4}$"},
    "address": {"type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "country": {"enum": ["DE", "FR", "US", "JP"]}}, "required": ["street", "city", "zip", "country"]},
    "orders": {"type": "array", "items": {"type": "object", "properties": {
        "id": {"type": "string", "format": "uuid"}, "date": {"type": "string", "format": "date"},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}, "price": {"type": "number", "minimum": 0}},
            "required": ["sku", "qty", "price"]}}}, "required": ["id", "date", "items"]}},
    "vip": {"type": "boolean"}
  },
  "required": ["name", "age", "email", "address", "orders", "vip"]
})";

// A document that validates, as a model would write it (with spaces and newlines).
const char* kDocument = R"({
  "name": "Ada Lovelace, Countess of Lovelace",
  "age": 36,
  "email": "ada.lovelace@analytical.org",
  "address": {"street": "12 St James's Square", "city": "London", "zip": "10001", "country": "FR"},
  "orders": [
    {"id": "123e4567-e89b-12d3-a456-426614174000", "date": "2026-11-30", "items": [{"sku": "BAB-01", "qty": 2, "price": 19.99}, {"sku": "NOTE-G", "qty": 1, "price": 0.5}]},
    {"id": "9b2f0c1e-5d6a-4f3b-8a7c-1e2d3c4b5a69", "date": "2026-12-01", "items": [{"sku": "ENGINE", "qty": 1, "price": 12500}]}
  ],
  "vip": true
})";

struct Fixture {
    Vocab vocab;
    std::shared_ptr<const grammar::TokenTrie> trie;
    std::shared_ptr<const grammar::Grammar> grammar;
    std::vector<std::string> pieces;  // the document's tokens' texts
};

Fixture& fixture(const std::string& path) {
    static std::map<std::string, std::unique_ptr<Fixture>> cache;
    auto& f = cache[path];
    if (!f) {
        f = std::make_unique<Fixture>();
        f->vocab = load_vocab(GgufFile::open(path));
        f->trie = build_vocab_trie(f->vocab);
        f->grammar = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(kSchema))));
        for (const int32_t id : tokenize(f->vocab, kDocument, {.add_special = false})) f->pieces.push_back(token_text(f->vocab, id));
    }
    return *f;
}

void walk(grammar::Matcher& m, const Fixture& f, bool masks) {
    for (const std::string& piece : f.pieces) {
        if (masks) benchmark::DoNotOptimize(m.allowed_tokens(*f.trie).words.data());
        else benchmark::DoNotOptimize(m.can_accept(piece));
        if (!m.accept(piece)) throw std::runtime_error("the document does not fit its schema at '" + piece + "'");
    }
}

// Items are tokens: items_per_second is tokens masked per second; us/token is its inverse.
void report(benchmark::State& state, const Fixture& f, double seconds) {
    const double tokens = double(state.iterations()) * double(f.pieces.size());
    state.SetItemsProcessed(int64_t(tokens));
    state.counters["us/token"] = seconds * 1e6 / tokens;
    state.counters["tokens"] = double(f.pieces.size());
    state.counters["vocab"] = double(f.vocab.size());
}

double seconds_since(std::chrono::steady_clock::time_point t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); }

// A new matcher per document; `masks`: the whole mask at every token, otherwise the sampled token only.
void BM_walk(benchmark::State& state, std::string path, bool masks) {
    const Fixture& f = fixture(path);
    double seconds = 0;
    for (auto _ : state) {
        const auto t = std::chrono::steady_clock::now();
        grammar::Matcher m(f.grammar);
        walk(m, f, masks);
        seconds += seconds_since(t);
    }
    report(state, f, seconds);
}

void BM_trie_build(benchmark::State& state, std::string path) {
    const Fixture& f = fixture(path);
    for (auto _ : state) benchmark::DoNotOptimize(build_vocab_trie(f.vocab).get());
    state.counters["vocab"] = double(f.vocab.size());
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> vocabs;
    std::vector<char*> rest = {argv[0]};
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--vocab" && i + 1 < argc) vocabs.push_back(argv[++i]);
        else rest.push_back(argv[i]);
    }
    if (vocabs.empty())
        for (const char* name : {"llama-bpe", "qwen2", "deepseek-llm", "gpt-2"})
            if (const std::string p = shared_dir() + "/vocab/ggml-vocab-" + name + ".gguf"; std::filesystem::exists(p)) vocabs.push_back(p);
    for (const std::string& path : vocabs) {
        const std::string name = std::filesystem::path(path).stem().string();
        benchmark::RegisterBenchmark(("mask_fresh/" + name).c_str(), BM_walk, path, true)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("check_sampled/" + name).c_str(), BM_walk, path, false)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("trie_build/" + name).c_str(), BM_trie_build, path)->Unit(benchmark::kMillisecond);
    }
    int n = int(rest.size());
    benchmark::Initialize(&n, rest.data());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
