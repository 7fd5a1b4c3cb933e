// Tokenizer speed on one core, in MB/s of input text: byte-level BPE with the Llama 3 vocabulary
// (and the others for comparison) over English prose.
//   bench_tokenizer [--text FILE] [google-benchmark flags]
// Default text: the license texts Debian ships in /usr/share/common-licenses (about 300 KB of English).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/text/tokenizer.h"

namespace {

std::string shared_dir() {
    if (const char* env = std::getenv("RILL_SHARED")) return env;
    return RILL_SHARED_DIR;
}

std::string read_all(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string english_text(const std::string& file) {
    if (!file.empty()) return read_all(file);
    std::string text;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/share/common-licenses"))
        if (entry.is_regular_file()) text += read_all(entry.path());
    return text;
}

void BM_tokenize(benchmark::State& state, const std::string& vocab_name, const std::string* text) {
    const rill::Vocab vocab = rill::load_vocab(rill::GgufFile::open(shared_dir() + "/vocab/ggml-vocab-" + vocab_name + ".gguf"));
    size_t n_tokens = 0;
    for (auto _ : state) {
        const auto ids = rill::tokenize(vocab, *text, {.add_special = false});
        n_tokens = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text->size()));
    state.counters["tokens"] = double(n_tokens);
    state.counters["bytes/token"] = double(text->size()) / double(std::max<size_t>(n_tokens, 1));
}

}  // namespace

int main(int argc, char** argv) {
    std::string file;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--text") file = argv[i + 1];
    static const std::string text = english_text(file);
    for (const char* name : {"llama-bpe", "gpt-2", "qwen2", "llama-spm", "bert-bge"}) {
        if (!std::filesystem::exists(shared_dir() + "/vocab/ggml-vocab-" + name + ".gguf")) continue;
        benchmark::RegisterBenchmark((std::string("tokenize/") + name).c_str(), BM_tokenize, std::string(name), &text)
            ->Unit(benchmark::kMillisecond);
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    return 0;
}
