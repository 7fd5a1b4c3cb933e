// The SentencePiece tokenizer against stories260K's expected encodings and llama.cpp's Llama 2 vectors.
#include "catch.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "runtime/base/error.h"
#include "runtime/text/pretokenize.h"
#include "runtime/text/tokenizer.h"
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
        const auto ids = tokenize(vocab, text, {.add_special = true});
        CHECK(std::vector<int>(ids.begin(), ids.end()) == expected);
        ++cases;
    }
    CHECK(cases >= 5);
}

// llama.cpp's own vectors: each input is followed by a line "__ggml_vocab_test__", each output is one
// line of ids (add_special false, parse_special false).
struct VectorSet {
    std::vector<std::string> inputs;
    std::vector<std::vector<int>> outputs;
};

VectorSet read_vectors(const std::string& base) {
    VectorSet set;
    set.inputs = split_cases(test::read_text(base + ".inp"), "\n__ggml_vocab_test__\n");
    std::istringstream out_lines(test::read_text(base + ".out"));
    for (std::string line; std::getline(out_lines, line);) set.outputs.push_back(test::parse_ints(line));
    return set;
}

const char* const kVectorSets[] = {"llama-spm", "llama-bpe", "phi-3", "gpt-2", "deepseek-coder", "deepseek-llm",
                                   "falcon", "mpt", "refact", "starcoder", "bert-bge"};

TEST_CASE("every vocabulary with llama.cpp test vectors reproduces all 46 of them", "[tokenizer]") {
    for (const char* name : kVectorSets) {
        const std::string base = test::shared_path(std::string("vocab/ggml-vocab-") + name + ".gguf");
        const Vocab vocab = load_vocab(GgufFile::open(base));
        const VectorSet set = read_vectors(base);
        REQUIRE(set.inputs.size() == 46);
        int matched = 0;
        for (size_t i = 0; i < set.inputs.size(); ++i) {
            const auto ids = tokenize(vocab, set.inputs[i], {.add_special = false});
            if (std::vector<int>(ids.begin(), ids.end()) == set.outputs[i]) ++matched;
            else UNSCOPED_INFO(name << ": mismatch on case " << i << " '" << set.inputs[i] << "'");
        }
        INFO(name);
        CHECK(matched == 46);
    }
}

// Qwen3.5's vocabulary (pre-tokenizer "qwen35": Qwen2's expression with combining marks kept in words).
TEST_CASE("Qwen3.5's vocabulary reproduces all 50 of llama.cpp's vectors and round-trips them", "[tokenizer]") {
    const std::string base = test::shared_path("vocab/ggml-vocab-qwen35.gguf");
    const Vocab vocab = load_vocab(GgufFile::open(base));
    const VectorSet set = read_vectors(base);
    REQUIRE(set.inputs.size() == 50);
    for (size_t i = 0; i < set.inputs.size(); ++i) {
        INFO("case " << i << " '" << set.inputs[i] << "'");
        const auto ids = tokenize(vocab, set.inputs[i], {.add_special = false});
        CHECK(std::vector<int>(ids.begin(), ids.end()) == set.outputs[i]);
        CHECK(detokenize(vocab, ids) == set.inputs[i]);
    }
}

// Gemma 4's vocabulary (tokenizer model "gemma4": BPE over text with spaces written as U+2581, byte tokens).
TEST_CASE("Gemma 4's vocabulary reproduces all 46 of llama.cpp's vectors and round-trips them", "[tokenizer]") {
    const std::string base = test::shared_path("vocab/ggml-vocab-gemma-4.gguf");
    const Vocab vocab = load_vocab(GgufFile::open(base));
    CHECK(vocab.kind == TokenizerKind::BytePairs);
    CHECK(vocab.pre == "gemma4");
    const VectorSet set = read_vectors(base);
    REQUIRE(set.inputs.size() == 46);
    for (size_t i = 0; i < set.inputs.size(); ++i) {
        INFO("case " << i << " '" << set.inputs[i] << "'");
        const auto ids = tokenize(vocab, set.inputs[i], {.add_special = false});
        CHECK(std::vector<int>(ids.begin(), ids.end()) == set.outputs[i]);
        CHECK(detokenize(vocab, ids) == set.inputs[i]);
    }
}

TEST_CASE("Gemma 4 falls back to byte tokens, starts with BOS and ends turns at <turn|>, <eos> and <|tool_response>", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("vocab/ggml-vocab-gemma-4.gguf")));
    const std::string text = "a\x04\x06 b \xf4\x8f\xbf\xbd";  // these characters have no token of their own
    const auto ids = tokenize(vocab, text, {.add_special = true});
    REQUIRE(ids.size() >= 3);
    CHECK(ids.front() == vocab.bos);
    CHECK(std::find(ids.begin(), ids.end(), vocab.find("<0x04>")) != ids.end());
    CHECK(std::find(ids.begin(), ids.end(), vocab.find("<0xF4>")) != ids.end());
    CHECK(detokenize(vocab, ids) == text);
    for (const char* end : {"<eos>", "<turn|>", "<|tool_response>"}) {
        INFO(end);
        CHECK(vocab.is_end_of_generation(vocab.find(end)));
    }
    CHECK_FALSE(vocab.is_end_of_generation(vocab.find("</s>")));
    CHECK_FALSE(vocab.is_end_of_generation(vocab.find("<|turn>")));
    // The tool-call markers are user-defined: read from plain text and always printed.
    const std::string call = "<|tool_call>call:f{a:<|\"|>x<|\"|>}<tool_call|>";
    const auto call_ids = tokenize(vocab, call, {.add_special = false});
    CHECK(call_ids.front() == vocab.find("<|tool_call>"));
    CHECK(detokenize(vocab, call_ids) == call);
    // <|tool_response> is a control token: only parse-special reads it, and it prints only when asked.
    const auto response = tokenize(vocab, "<|tool_response>", {.add_special = false, .parse_special = true});
    CHECK(response == std::vector<int32_t>{vocab.find("<|tool_response>")});
    CHECK(tokenize(vocab, "<|tool_response>", {.add_special = false}).size() > 1);
    CHECK(detokenize(vocab, response).empty());
}

TEST_CASE("byte-level BPE detokenizes every test string back to itself", "[tokenizer]") {
    for (const char* name : {"llama-bpe", "gpt-2", "deepseek-coder", "deepseek-llm", "falcon", "mpt", "refact", "starcoder"}) {
        const std::string base = test::shared_path(std::string("vocab/ggml-vocab-") + name + ".gguf");
        const Vocab vocab = load_vocab(GgufFile::open(base));
        for (const std::string& input : read_vectors(base).inputs) {
            INFO(name << ": '" << input << "'");
            CHECK(detokenize(vocab, tokenize(vocab, input, {.add_special = false})) == input);
        }
    }
}

TEST_CASE("the vocabularies without test vectors load and round-trip text", "[tokenizer]") {
    for (const char* name : {"baichuan", "gpt-neox"}) {
        INFO(name);
        const Vocab vocab = load_vocab(GgufFile::open(test::shared_path(std::string("vocab/ggml-vocab-") + name + ".gguf")));
        const std::string text = "Hello world, 2024! Ünïcödé 你好 🙂";
        const auto ids = tokenize(vocab, text, {.add_special = false});
        CHECK_FALSE(ids.empty());
        CHECK(detokenize(vocab, ids) == (vocab.kind == TokenizerKind::SentencePiece ? text : text));
    }
}

TEST_CASE("decoding drops SentencePiece's leading space only right after BOS", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("models/stories260K/stories260K.gguf")));
    const auto ids = tokenize(vocab, "Once upon", {.add_special = false});
    REQUIRE(!ids.empty());
    CHECK(token_text(vocab, ids[0], true) == "Once");
    CHECK(token_text(vocab, ids[0], false) == " Once");
    CHECK(token_text(vocab, vocab.bos) == "");  // control tokens print nothing
}

TEST_CASE("byte-fallback tokens decode to their bytes", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("models/stories260K/stories260K.gguf")));
    const auto ids = tokenize(vocab, "é", {.add_special = false});  // not in the 512-token vocabulary: falls back to bytes
    std::string text;
    for (const int32_t id : ids) text += token_text(vocab, id);
    CHECK(text == " é");
}

TEST_CASE("the golden models' tokenizer check matches llama.cpp", "[tokenizer]") {
    const std::string base = test::shared_path("golden/synth-llama-A.Q8_0");
    const auto golden = nlohmann::json::parse(test::read_text(base + ".golden.json"));
    const Vocab vocab = load_vocab(GgufFile::open(base + ".gguf"));
    const auto ids = tokenize(vocab, golden["tokenizer_check"]["text"].get<std::string>(), {.add_special = false});
    CHECK(ids == golden["tokenizer_check"]["llamacpp_tokens"].get<std::vector<int32_t>>());
}



TEST_CASE("control tokens in text become their ids only with parse-special", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("vocab/ggml-vocab-llama-bpe.gguf")));
    const std::string text = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
    const auto parsed = tokenize(vocab, text, {.add_special = false, .parse_special = true});
    REQUIRE(parsed.size() >= 4);
    CHECK(parsed.front() == vocab.find("<|start_header_id|>"));
    CHECK(parsed.back() == vocab.find("<|eot_id|>"));
    CHECK(vocab.is_end_of_generation(parsed.back()));
    const auto plain = tokenize(vocab, text, {.add_special = false, .parse_special = false});
    CHECK(std::find(plain.begin(), plain.end(), vocab.find("<|eot_id|>")) == plain.end());
    CHECK(detokenize(vocab, plain) == text);  // as plain text it round-trips
}

TEST_CASE("BOS is added as the model's metadata asks, and only with add_special", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("vocab/ggml-vocab-llama-bpe.gguf")));
    CHECK(tokenize(vocab, "Hi", {.add_special = true}).front() == 128000);
    CHECK(tokenize(vocab, "Hi", {.add_special = false}).front() != 128000);
    CHECK(tokenize(vocab, "", {.add_special = true}) == std::vector<int32_t>{128000});
}

TEST_CASE("detokenizing drops control tokens unless asked to keep them", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("vocab/ggml-vocab-llama-bpe.gguf")));
    const auto ids = tokenize(vocab, "<|begin_of_text|>Hello<|eot_id|>", {.add_special = false, .parse_special = true});
    CHECK(detokenize(vocab, ids) == "Hello");
    CHECK(detokenize(vocab, ids, {.skip_special = false}) == "<|begin_of_text|>Hello<|eot_id|>");
}

TEST_CASE("SentencePiece detokenizing drops the dummy-prefix space of the first word only", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("vocab/ggml-vocab-llama-spm.gguf")));
    CHECK(detokenize(vocab, tokenize(vocab, "Hello world", {.add_special = true})) == "Hello world");
    CHECK(detokenize(vocab, tokenize(vocab, "Hello world", {.add_special = false})) == "Hello world");
    CHECK(detokenize(vocab, tokenize(vocab, " Hello", {.add_special = false})) == " Hello");
}

TEST_CASE("an unknown pre-tokenizer is an error naming the supported ones", "[tokenizer]") {
    CHECK_THROWS_WITH(PreTokenizer("no-such-pre"), rill::test::contains("pre-tokenizer 'no-such-pre'") &&
                                                       rill::test::contains("supported: default, llama-bpe"));
}

// No vocabulary of these families has llama.cpp vectors; llama.cpp gives their names Llama 3's split.
TEST_CASE("LFM2's and Nemotron-H's pre-tokenizers split llama-bpe's 46 vector strings as Llama 3's does", "[tokenizer]") {
    const VectorSet set = read_vectors(test::shared_path("vocab/ggml-vocab-llama-bpe.gguf"));
    const PreTokenizer llama3("llama-bpe");
    for (const char* name : {"lfm2", "pixtral"}) {
        const PreTokenizer pre(name);
        int same = 0;
        for (const std::string& text : set.inputs) same += pre.split(text) == llama3.split(text);
        INFO(name);
        CHECK(same == 46);
    }
}

TEST_CASE("invalid UTF-8 in the text is tokenized as U+FFFD, never rejected", "[tokenizer]") {
    const Vocab vocab = load_vocab(GgufFile::open(test::shared_path("vocab/ggml-vocab-gpt-2.gguf")));
    const auto ids = tokenize(vocab, std::string("a\xff" "b\xe2\x82"), {.add_special = false});
    CHECK(detokenize(vocab, ids) == "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("a streamed UTF-8 character is held back until its last byte arrives", "[tokenizer]") {
    Utf8Stream s;
    CHECK(s.push("a\xc3") == "a");
    CHECK(s.push("\xa9") == "\xc3\xa9");
    CHECK(s.push("\xf0\x9f") == "");
    CHECK(s.push("\x99") == "");
    CHECK(s.push("\x82!") == "\xf0\x9f\x99\x82!");
    CHECK(s.push("\xe4") == "");
    CHECK(s.flush() == "\xe4");  // whatever is left comes out at the end
    CHECK(s.push("\x80x") == "\x80x");  // a stray continuation byte is not held forever
}
