// What a server and an embedding app need from a session: several streams decoded in one batch with
// each stream's results unchanged, embeddings, saved and restored state, and a stream's text cut at
// stop strings.
#include "catch.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "runtime/session/completion.h"
#include "runtime/base/error.h"
#include "runtime/session/session.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/vocab.h"
#include "batch_pieces.h"
#include "shared_data.h"

using namespace rill;

namespace {

std::unique_ptr<Model> open_model(const std::string& relative) { return load_model(test::shared_path(relative)); }

SessionOptions options(int threads = 2) {
    SessionOptions o;
    o.n_ctx = 128;
    o.n_threads = threads;
    return o;
}

}  // namespace

TEST_CASE("decoding several sessions in one batch gives each the logits it gets alone, bit for bit", "[serving]") {
    for (const char* file : {"golden/synth-llama-A.Q4_0.gguf", "golden/synth-llama-A.Q8_0.gguf", "golden/synth-llama-A.F16.gguf",
                             "golden/synth-llama-A.Q4_K_M.gguf", "models/stories260K/stories260K.gguf"}) {
        INFO(file);
        const auto model = open_model(file);
        // Sessions at different positions, so each row attends over a different history.
        const std::vector<std::vector<int32_t>> prompts = {{1, 5, 9}, {1, 300}, {1, 7, 8, 9, 10, 11, 12}, {1}, {1, 42, 43, 44, 45}};
        std::vector<std::unique_ptr<Session>> alone, together;
        for (const auto& p : prompts) {
            alone.push_back(std::make_unique<Session>(*model, options()));
            together.push_back(std::make_unique<Session>(*model, options()));
            alone.back()->eval(p);
            together.back()->eval(p);
        }
        std::vector<Session*> batch;
        for (auto& s : together) batch.push_back(s.get());
        std::vector<int32_t> next = {20, 21, 22, 23, 24};
        for (int step = 0; step < 3; ++step) {
            const auto rows = Session::eval_together(batch, next);
            for (size_t i = 0; i < batch.size(); ++i) {
                const int32_t one[1] = {next[i]};
                const auto expected = alone[i]->eval(one);
                const size_t n_vocab = expected.size();
                CHECK(test::same_bits(rows.subspan(i * n_vocab, n_vocab), expected));
                CHECK(test::same_bits(batch[i]->last_logits(), expected));
                CHECK(batch[i]->position() == alone[i]->position());
                next[i] = argmax(expected);
            }
        }
    }
}

TEST_CASE("a prompt evaluated in pieces of any size alongside other streams ends as if evaluated one token at a time, bit for bit", "[serving]") {
    for (const char* file : {"golden/synth-llama-A.Q4_K_M.gguf", "golden/synth-llama-A.F16.gguf", "arch/gemma3-A.gguf", "arch/qwen3moe-A.gguf"}) {
        INFO(file);
        const auto model = open_model(file);
        SessionOptions o = options();
        o.n_batch = 16;  // small, so a sliding-window ring wraps within the prompt
        std::vector<int32_t> prompt;
        for (int i = 0; i < 70; ++i) prompt.push_back(1 + (i * 37) % 300);
        Session reference(*model, o);
        for (const int32_t t : prompt) reference.eval(std::span<const int32_t>(&t, 1));
        const std::vector<float> expected(reference.last_logits().begin(), reference.last_logits().end());

        for (const size_t piece : {size_t(1), size_t(5), size_t(16)}) {
            INFO("piece " << piece);
            Session chunked(*model, o), other(*model, o);
            test::read_beside_another(chunked, other, prompt, piece);
            CHECK(chunked.position() == int(prompt.size()));
            CHECK(test::same_bits(chunked.last_logits(), expected));
        }
    }
}

TEST_CASE("a batch piece longer than the micro-batch or past the context is an error", "[serving]") {
    const auto model = open_model("golden/synth-llama-A.Q4_0.gguf");
    SessionOptions o = options();
    o.n_batch = 4;
    Session a(*model, o);
    const int32_t five[] = {1, 2, 3, 4, 5};
    const BatchPiece long_piece[] = {{&a, five, true}};
    CHECK_THROWS_WITH(Session::eval_batch(long_piece), rill::test::contains("longer than the session's micro-batch"));
    o.n_ctx = 3;
    Session small(*model, o);
    const BatchPiece past[] = {{&small, std::span<const int32_t>(five, 4), true}};
    CHECK_THROWS_WITH(Session::eval_batch(past), rill::test::contains("context overflow"));
    CHECK(small.position() == 0);
}

TEST_CASE("a batch with a session twice, a full context or mismatched tokens is an error", "[serving]") {
    const auto model = open_model("golden/synth-llama-A.Q4_0.gguf");
    Session a(*model, options()), b(*model, options());
    Session* twice[] = {&a, &a};
    const int32_t two[] = {1, 2};
    CHECK_THROWS_WITH(Session::eval_together(twice, two), rill::test::contains("appears twice"));
    Session* pair[] = {&a, &b};
    const int32_t one[] = {1};
    CHECK_THROWS_WITH(Session::eval_together(pair, one), rill::test::contains("one token per session"));
    SessionOptions tiny = options();
    tiny.n_ctx = 1;
    Session full(*model, tiny);
    full.eval(one);
    Session* with_full[] = {&a, &full};
    CHECK_THROWS_WITH(Session::eval_together(with_full, two), rill::test::contains("context overflow"));
    CHECK(a.position() == 0);  // nothing was evaluated
}

TEST_CASE("a session truncated to all it holds keeps it all, and continues as if never truncated", "[serving]") {
    const auto model = open_model("models/stories260K/stories260K.gguf");
    const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
    Session session(*model, options(1));
    session.eval(prompt);
    CHECK(session.truncate(int(prompt.size())) == int(prompt.size()));
    CHECK(session.truncate(3) == 3);
    const auto again = session.eval(std::span(prompt).subspan(3));
    Session fresh(*model, options(1));
    CHECK(test::same_bits(again, fresh.eval(prompt)));
}

TEST_CASE("an embedding has n_embd unit-norm values and is the same for the same text", "[serving]") {
    const auto model = open_model("models/stories260K/stories260K.gguf");
    Session session(*model, options());
    const std::vector<int32_t> tokens = {1, 400, 401, 402};
    const auto first = session.embed(tokens);
    REQUIRE(first.size() == size_t(model->hp.n_embd));
    double norm = 0;
    for (const float v : first) norm += double(v) * v;
    CHECK(std::sqrt(norm) == Approx(1.0).margin(1e-6));  // float rounding of 64 values
    session.eval(tokens);  // a session in use gives the same embedding: embed starts from position 0
    CHECK(session.embed(tokens) == first);
    CHECK(session.position() == 0);
    const std::vector<int32_t> other = {1, 100, 101};
    CHECK(session.embed(other) != first);
}

TEST_CASE("a saved state restored into a new session continues with the same logits", "[serving]") {
    const auto model = open_model("golden/synth-llama-A.Q4_K_M.gguf");
    Session original(*model, options());
    const std::vector<int32_t> prompt = {1, 10, 20, 30};
    original.eval(prompt);
    const std::vector<uint8_t> state = original.save_state();
    Session restored(*model, options(1));
    restored.load_state(state);
    CHECK(restored.position() == original.position());
    CHECK(test::same_bits(restored.last_logits(), original.last_logits()));
    const int32_t next[] = {40};
    const auto copy = [](std::span<const float> s) { return std::vector<float>(s.begin(), s.end()); };
    CHECK(copy(restored.eval(next)) == copy(original.eval(next)));
}

TEST_CASE("a damaged or foreign session state is an error naming what is wrong", "[serving]") {
    const auto model = open_model("golden/synth-llama-A.Q4_0.gguf");
    Session session(*model, options());
    const int32_t prompt[] = {1, 2, 3};
    session.eval(prompt);
    std::vector<uint8_t> state = session.save_state();
    Session target(*model, options());
    CHECK_THROWS_WITH(target.load_state(std::span(state).first(20)), rill::test::contains("truncated"));
    auto wrong_magic = state;
    wrong_magic[0] = 'X';
    CHECK_THROWS_WITH(target.load_state(wrong_magic), rill::test::contains("not a rill session state"));
    auto extra = state;
    extra.push_back(0);
    CHECK_THROWS_WITH(target.load_state(extra), rill::test::contains("bytes of data"));
    const auto stories = open_model("models/stories260K/stories260K.gguf");
    Session foreign(*stories, options());
    CHECK_THROWS_WITH(foreign.load_state(state), rill::test::contains("another model"));
    CHECK(target.position() == 0);
}

TEST_CASE("a completion stops before a stop string and never shows part of one", "[serving]") {
    const auto model = open_model("models/stories260K/stories260K.gguf");
    const Vocab vocab = load_vocab(model->file);
    Session session(*model, options());
    const std::vector<int32_t> prompt = tokenize(vocab, "Once upon a time");
    // The greedy text without stops, then again with a stop string taken from its middle.
    auto run = [&](CompletionSettings settings, std::vector<std::string>* pieces) {
        session.reset();
        settings.sampling.temperature = 0;
        Completion c(vocab, settings, prompt);
        auto logits = session.eval(prompt);
        std::string text;
        for (;;) {
            std::string piece;
            const int32_t t = c.step(logits, piece);
            if (pieces) pieces->push_back(piece);
            text += piece;
            if (t < 0) break;
            const int32_t one[] = {t};
            logits = session.eval(one);
        }
        return std::make_pair(text, c.reason());
    };
    CompletionSettings plain;
    plain.max_tokens = 40;
    const auto [full, full_reason] = run(plain, nullptr);
    CHECK(full_reason == FinishReason::Length);
    REQUIRE(full.size() > 30);
    const std::string stop = full.substr(20, 6);
    CompletionSettings with_stop = plain;
    with_stop.stops = {"never appears", stop};
    std::vector<std::string> pieces;
    const auto [cut, cut_reason] = run(with_stop, &pieces);
    CHECK(cut_reason == FinishReason::Stop);
    CHECK(cut == full.substr(0, full.find(stop)));
    std::string shown;
    for (const auto& p : pieces) {
        shown += p;
        CHECK(shown.find(stop) == std::string::npos);
    }
}

TEST_CASE("the presence and frequency penalties lower a recent token's logit as OpenAI defines them", "[serving][sampling]") {
    SamplingParams p;
    p.temperature = 0;
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.25f;
    Sampler sampler(p);
    // Token 0 leads by 0.9; seen twice it loses 0.5 + 2 × 0.25 = 1.0 and token 1 wins.
    const std::vector<float> logits = {2.0f, 1.1f, 0.0f};
    CHECK(sampler.sample(logits) == 0);
    sampler.accept(0);
    CHECK(sampler.sample(logits) == 0);  // once: loses 0.75, still ahead by 0.15
    sampler.accept(0);
    CHECK(sampler.sample(logits) == 1);
}
