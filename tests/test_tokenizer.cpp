// The SentencePiece tokenizer against stories260K's expected encodings and llama.cpp's Llama 2 vectors.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "runtime/vocab.h"
#include "shared_data.h"

using namespace rill;

namespace {

std::vector<std::string> split_cases(const std::string& text, const std::string& separator) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t hit; (hit = text.find(separator, start)) != std::string::npos; start = hit + separator.size()) {
        std::string item = text.substr(start, hit - start);
        out.push_back(item);
    }
    return out;
}

}  // namespace

TEST_CASE("stories260K encodes every expected prompt exactly, BOS and dummy prefix included", "[tokenizer]") {
    const GgufFile g = GgufFile::open(test::shared_path("models/stories260K/stories260K.gguf"));
    const Vocab vocab = load_vocab(g);
    std::istringstream lines(test::read_text(test::shared_path("models/stories260K/expected/encode_with_bos.tsv")));
    int cases = 0;
    for (std::string line; std::getline(lines, line);) {
        const size_t tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
        REQUIRE(tab2 != std::string::npos);
        const std::string text = line.substr(0, tab1);
        const auto expected = test::parse_ints(line.substr(tab2 + 1));
        INFO("text: '" << text << "'");
        const auto ids = tokenize(vocab, text, true);
        CHECK(std::vector<int>(ids.begin(), ids.end()) == expected);
        ++cases;
    }
    CHECK(cases >= 5);
}

TEST_CASE("the Llama 2 SentencePiece vocabulary reproduces llama.cpp's test vectors", "[tokenizer]") {
    const std::string base = test::shared_path("vocab/ggml-vocab-llama-spm.gguf");
    const Vocab vocab = load_vocab(GgufFile::open(base));
    // Each input is followed by a line "__ggml_vocab_test__"; each output is one line of ids.
    const auto inputs = split_cases(test::read_text(base + ".inp"), "\n__ggml_vocab_test__\n");
    std::istringstream out_lines(test::read_text(base + ".out"));
    int matched = 0, total = 0;
    for (const std::string& input : inputs) {
        std::string line;
        std::getline(out_lines, line);
        const auto expected = test::parse_ints(line);
        const auto ids = tokenize(vocab, input, false);
        ++total;
        if (std::vector<int>(ids.begin(), ids.end()) == expected) ++matched;
        else UNSCOPED_INFO("mismatch on '" << input << "'");
    }
    CHECK(total == 46);
    CHECK(matched == total);
}

TEST_CASE("decoding drops SentencePiece's leading space only right after BOS", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("models/stories260K/stories260K.gguf")));
    const auto ids = tokenize(vocab, "Once upon", false);
    REQUIRE(!ids.empty());
    CHECK(token_text(vocab, ids[0], true) == "Once");
    CHECK(token_text(vocab, ids[0], false) == " Once");
    CHECK(token_text(vocab, vocab.bos) == "");  // control tokens print nothing
}

TEST_CASE("byte-fallback tokens decode to their bytes", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("models/stories260K/stories260K.gguf")));
    const auto ids = tokenize(vocab, "é", false);  // not in the 512-token vocabulary: falls back to bytes
    std::string text;
    for (const int32_t id : ids) text += token_text(vocab, id);
    CHECK(text == " é");
}

TEST_CASE("the golden models' tokenizer check matches llama.cpp", "[tokenizer]") {
    const std::string base = test::shared_path("golden/synth-llama-A.Q8_0");
    const auto golden = nlohmann::json::parse(test::read_text(base + ".golden.json"));
    const Vocab vocab = load_vocab(GgufFile::open(base + ".gguf"));
    const auto ids = tokenize(vocab, golden["tokenizer_check"]["text"].get<std::string>(), false);
    CHECK(ids == golden["tokenizer_check"]["llamacpp_tokens"].get<std::vector<int32_t>>());
}

TEST_CASE("a byte-level BPE vocabulary is refused for text with a clear message", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("vocab/ggml-vocab-gpt-2.gguf")));
    CHECK_THROWS_WITH(tokenize(vocab, "hello", false), Catch::Contains("tokenizer model 'gpt2' is not supported yet"));
}
