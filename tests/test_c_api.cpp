// The public API as a user sees it: only include/rill.h and include/rill.hpp, linked against
// librill.so, run on stories260K (a real 260K-parameter llama: SentencePiece, 512 tokens, n_embd 64,
// training context 2048, no chat template).
#include "catch.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rill.h"
#include "rill.hpp"

namespace {

using rill::api::Model;
using rill::api::Session;

// RILL_SHARED overrides the build-time folder, as for the other test programs.
std::string model_path() {
    const char* env = std::getenv("RILL_SHARED");
    return std::string(env != nullptr ? env : RILL_SHARED_DIR) + "/models/stories260K/stories260K.gguf";
}

// Its training text starts like this, so greedy generation from it is long, stable prose.
const std::string kPrompt = "Once upon a time";

rill_session_params session_params(int32_t n_ctx) {
    rill_session_params p = rill_session_default_params();
    p.n_ctx = n_ctx;
    return p;
}

rill_generate_params greedy(int32_t max_tokens) {
    rill_generate_params p = rill_generate_default_params();
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    return p;
}

// One rill_generate call through the C API, with every streamed piece kept.
struct Run {
    rill_status status = RILL_ERR_INTERNAL;
    rill_generate_result result{};
    std::vector<std::string> pieces;

    std::string text() const {
        std::string joined;
        for (const std::string& p : pieces) joined += p;
        return joined;
    }
};

int collect(const char* text, size_t length, void* user_data) {
    static_cast<Run*>(user_data)->pieces.emplace_back(text, length);
    return 1;
}

Run generate(rill_session* session, const std::string& prompt, const rill_generate_params& params) {
    Run run;
    run.status = rill_generate(session, prompt.data(), prompt.size(), &params, collect, &run, &run.result);
    return run;
}

std::vector<int32_t> tokenize(rill_model* model, const std::string& text, int add_special) {
    std::vector<int32_t> tokens(text.size() + 8);
    size_t needed = 0;
    REQUIRE(rill_tokenize(model, text.data(), text.size(), add_special, 0, tokens.data(), tokens.size(), &needed) == RILL_OK);
    tokens.resize(needed);
    return tokens;
}

std::vector<float> logits(rill_session* session) {
    const float* data = nullptr;
    size_t n = 0;
    REQUIRE(rill_session_logits(session, &data, &n) == RILL_OK);
    return std::vector<float>(data, data + n);
}

int progress_recorder(float fraction, void* user_data) {
    static_cast<std::vector<float>*>(user_data)->push_back(fraction);
    return 1;
}

}  // namespace

// ---- Loading ---------------------------------------------------------------------------------------

TEST_CASE("loading a missing file fails with RILL_ERR_LOAD, a NULL model and a message naming the path", "[c_api]") {
    const std::string path = "/nonexistent/rill/no-such-model.gguf";
    int dummy = 0;
    rill_model* model = reinterpret_cast<rill_model*>(&dummy);  // must be overwritten with NULL
    char error[512] = "";
    CHECK(rill_model_load(path.c_str(), nullptr, &model, error, sizeof error) == RILL_ERR_LOAD);
    CHECK(model == nullptr);
    CHECK(std::string(error).find(path) != std::string::npos);
}

TEST_CASE("a progress callback sees fractions in [0, 1] that never decrease and end at exactly 1", "[c_api]") {
    for (const int use_mmap : {1, 0}) {
        INFO("use_mmap " << use_mmap);
        std::vector<float> seen;
        rill_model_params params = rill_model_default_params();
        params.use_mmap = use_mmap;
        params.progress = progress_recorder;
        params.progress_user_data = &seen;
        rill_model* model = nullptr;
        REQUIRE(rill_model_load(model_path().c_str(), &params, &model, nullptr, 0) == RILL_OK);
        rill_model_free(model);
        REQUIRE(!seen.empty());
        for (size_t i = 0; i < seen.size(); ++i) {
            CHECK(seen[i] >= 0.0f);
            CHECK(seen[i] <= 1.0f);
            if (i > 0) CHECK(seen[i] >= seen[i - 1]);
        }
        CHECK(seen.back() == 1.0f);  // exact: "done" must be recognisable without a tolerance
    }
}

TEST_CASE("a progress callback that returns 0 cancels the load with RILL_ERR_CANCELLED and no model", "[c_api]") {
    rill_model_params params = rill_model_default_params();
    int calls = 0;
    params.progress = [](float, void* user_data) {
        ++*static_cast<int*>(user_data);
        return 0;
    };
    params.progress_user_data = &calls;
    rill_model* model = nullptr;
    char error[256] = "";
    CHECK(rill_model_load(model_path().c_str(), &params, &model, error, sizeof error) == RILL_ERR_CANCELLED);
    CHECK(model == nullptr);
    CHECK(calls == 1);  // the first refusal ends the load
    CHECK(std::strlen(error) > 0);
}

TEST_CASE("the model reports stories260K's vocabulary size, width, training context and name", "[c_api]") {
    Model model(model_path());
    CHECK(rill_model_n_vocab(model.get()) == 512);
    CHECK(rill_model_n_embd(model.get()) == 64);
    CHECK(rill_model_n_ctx_train(model.get()) == 2048);
    CHECK(std::string(rill_model_name(model.get())) == "llama");  // its general.name
}

TEST_CASE("a session with n_ctx 0 gets the model's training context, capped at 4096", "[c_api]") {
    Model model(model_path());
    Session session(model);
    CHECK(session.n_ctx() == std::min(model.n_ctx_train(), 4096));
    CHECK(session.position() == 0);
}

// ---- Text and tokens ---------------------------------------------------------------------------------

TEST_CASE("tokenizing then detokenizing gives back the original text exactly", "[c_api]") {
    Model model(model_path());
    for (const int add_special : {1, 0}) {
        INFO("add_special " << add_special);
        const std::vector<int32_t> tokens = tokenize(model.get(), kPrompt, add_special);
        // SentencePiece encodes a dummy space before the text ("▁Once"); a decoder drops it again at
        // the start of the text, so the round trip is exact with or without BOS.
        char text[256];
        size_t needed = 0;
        REQUIRE(rill_detokenize(model.get(), tokens.data(), tokens.size(), text, sizeof text, &needed) == RILL_OK);
        CHECK(std::string(text) == kPrompt);
        CHECK(needed == kPrompt.size());
    }
}

TEST_CASE("tokenize with add_special puts BOS first on stories260K", "[c_api]") {
    Model model(model_path());
    // The reference encoding of this prompt (shared/models/stories260K/expected/encode_with_bos.tsv).
    CHECK(tokenize(model.get(), kPrompt, 1) == std::vector<int32_t>{1, 403, 407, 261, 378});
    CHECK(tokenize(model.get(), kPrompt, 0) == std::vector<int32_t>{403, 407, 261, 378});
}

TEST_CASE("a token buffer that is too small gives RILL_ERR_BUFFER_TOO_SMALL and the count needed", "[c_api]") {
    Model model(model_path());
    int32_t tokens[2];
    size_t needed = 0;
    CHECK(rill_tokenize(model.get(), kPrompt.data(), kPrompt.size(), 1, 0, tokens, 2, &needed) == RILL_ERR_BUFFER_TOO_SMALL);
    CHECK(needed == 5);  // BOS and four pieces
    size_t counted = 0;
    CHECK(rill_tokenize(model.get(), kPrompt.data(), kPrompt.size(), 1, 0, nullptr, 0, &counted) == RILL_ERR_BUFFER_TOO_SMALL);
    CHECK(counted == 5);
}

TEST_CASE("a text buffer must also hold the NUL: exactly *needed bytes is too small", "[c_api]") {
    Model model(model_path());
    const std::vector<int32_t> tokens = tokenize(model.get(), kPrompt, 1);
    std::vector<char> text(kPrompt.size(), 'x');
    size_t needed = 0;
    CHECK(rill_detokenize(model.get(), tokens.data(), tokens.size(), text.data(), text.size(), &needed) == RILL_ERR_BUFFER_TOO_SMALL);
    CHECK(needed == kPrompt.size());
    text.assign(needed + 1, 'x');
    CHECK(rill_detokenize(model.get(), tokens.data(), tokens.size(), text.data(), text.size(), &needed) == RILL_OK);
    CHECK(text[needed] == '\0');
}

TEST_CASE("a model without a chat template renders the plain User/Assistant transcript", "[c_api]") {
    Model model(model_path());
    const rill_chat_message message{"user", "hi"};
    char text[128];
    size_t needed = 0;
    REQUIRE(rill_apply_chat_template(model.get(), &message, 1, 1, text, sizeof text, &needed) == RILL_OK);
    CHECK(std::string(text) == "User: hi\nAssistant:");
    CHECK(needed == std::strlen(text));
    REQUIRE(rill_apply_chat_template(model.get(), &message, 1, 0, text, sizeof text, &needed) == RILL_OK);
    CHECK(std::string(text) == "User: hi\n");
}

// ---- Generation --------------------------------------------------------------------------------------

TEST_CASE("greedy generation from a reset session repeats its text exactly, and the streamed pieces make that text", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(256));
    const Run first = generate(session.get(), kPrompt, greedy(32));
    REQUIRE(first.status == RILL_OK);
    REQUIRE(rill_session_reset(session.get()) == RILL_OK);
    CHECK(session.position() == 0);
    const Run second = generate(session.get(), kPrompt, greedy(32));
    REQUIRE(second.status == RILL_OK);
    CHECK(!first.text().empty());
    CHECK(second.text() == first.text());
    CHECK(second.result.generated_tokens == first.result.generated_tokens);
    CHECK(second.result.finish_reason == first.result.finish_reason);
}

TEST_CASE("the streamed pieces of a greedy generation join into the text of the argmax tokens, in order", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(256));
    const Run run = generate(session.get(), kPrompt, greedy(32));
    REQUIRE(run.status == RILL_OK);
    CHECK(std::none_of(run.pieces.begin(), run.pieces.end(), [](const std::string& p) { return p.empty(); }));

    // The same greedy decoding by hand: eval, take the argmax, repeat. Prefill and then one token per
    // eval is what generation does too, so the arithmetic and the argmax match exactly.
    session.reset();
    const std::vector<int32_t> prompt = tokenize(model.get(), kPrompt, 1);
    std::vector<int32_t> all = prompt;
    REQUIRE(rill_session_eval(session.get(), prompt.data(), prompt.size()) == RILL_OK);
    for (int i = 0; i < run.result.generated_tokens; ++i) {
        const std::vector<float> l = logits(session.get());
        const int32_t next = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
        if (next == 2) break;  // stories260K's end-of-text token is shown as nothing
        all.push_back(next);
        REQUIRE(rill_session_eval(session.get(), &next, 1) == RILL_OK);
    }
    // The generated text is what the new tokens add to the prompt's text; detokenizing them alone
    // would drop the first one's word-initial space.
    const std::string before = model.detokenize(prompt), after = model.detokenize(all);
    REQUIRE(after.compare(0, before.size(), before) == 0);
    CHECK(run.text() == after.substr(before.size()));
}

TEST_CASE("a stop string ends generation just before it with RILL_FINISH_STOP and is never streamed", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(256));
    const Run free_run = generate(session.get(), kPrompt, greedy(32));
    REQUIRE(free_run.status == RILL_OK);
    const std::string full = free_run.text();
    REQUIRE(full.size() >= 16);
    // Six bytes from the middle of the text; the cut is at their first occurrence, which may be earlier.
    const std::string stop = full.substr(full.size() / 2, 6);
    const size_t cut = full.find(stop);

    session.reset();
    rill_generate_params params = greedy(32);
    const char* stops[] = {"this never appears in a story about Lily", stop.c_str()};
    params.stop = stops;
    params.n_stop = 2;
    const Run stopped = generate(session.get(), kPrompt, params);
    REQUIRE(stopped.status == RILL_OK);
    INFO("full text: '" << full << "', stop: '" << stop << "'");
    CHECK(stopped.text() == full.substr(0, cut));
    CHECK(stopped.result.finish_reason == RILL_FINISH_STOP);
    CHECK(stopped.result.generated_tokens <= free_run.result.generated_tokens);
}

TEST_CASE("max_tokens ends generation with RILL_FINISH_LENGTH after exactly that many tokens", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(256));
    // Greedy stories260K writes well past 8 tokens from this prompt before any end-of-text token.
    const Run run = generate(session.get(), kPrompt, greedy(8));
    REQUIRE(run.status == RILL_OK);
    CHECK(run.result.finish_reason == RILL_FINISH_LENGTH);
    CHECK(run.result.generated_tokens == 8);
    CHECK(run.result.prompt_tokens == 5);  // BOS and four pieces, as the tokenizer test shows
    CHECK(run.result.prefill_ms >= 0.0);
    CHECK(run.result.decode_ms >= 0.0);
}

TEST_CASE("a json_schema holds sampled output to JSON that validates, ending where the schema is complete", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(512));
    rill_generate_params params = rill_generate_default_params();
    params.max_tokens = 200;
    params.json_schema = R"({"type": "object", "properties": {"name": {"enum": ["Lily", "Tom"]}, "age": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["name", "age"]})";
    const Run run = generate(session.get(), kPrompt, params);
    REQUIRE(run.status == RILL_OK);
    const std::string text = run.text();
    INFO(text);
    CHECK(run.result.finish_reason == RILL_FINISH_STOP);
    // The shape, read without a JSON library: the two keys in order, a listed name, one digit.
    CHECK((text.find("\"Lily\"") != std::string::npos || text.find("\"Tom\"") != std::string::npos));
    const size_t age = text.find("\"age\"");
    REQUIRE(age != std::string::npos);
    CHECK(text.find_first_of("123456789", age) != std::string::npos);
    CHECK(text.front() == '{');
    CHECK(text.back() == '}');
}

TEST_CASE("a GBNF grammar holds greedy output to it", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(256));
    rill_generate_params params = greedy(64);
    params.grammar = "root ::= (\"yes\" | \"no\") \".\"";
    const Run run = generate(session.get(), kPrompt, params);
    REQUIRE(run.status == RILL_OK);
    CHECK((run.text() == "yes." || run.text() == "no."));
    CHECK(run.result.finish_reason == RILL_FINISH_STOP);
}

TEST_CASE("an invalid grammar or schema gives RILL_ERR_INVALID_ARGUMENT naming what is wrong", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(256));
    rill_generate_params params = greedy(8);
    params.grammar = "root ::= undefined-rule";
    CHECK(generate(session.get(), kPrompt, params).status == RILL_ERR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(rill_session_error(session.get())), rill::test::contains("'undefined-rule' is used but never defined"));
    params.grammar = nullptr;
    params.json_schema = R"({"type": "array", "uniqueItems": true})";
    CHECK(generate(session.get(), kPrompt, params).status == RILL_ERR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(rill_session_error(session.get())), rill::test::contains("'uniqueItems' is not supported"));
    params.grammar = "root ::= \"a\"";
    CHECK(generate(session.get(), kPrompt, params).status == RILL_ERR_INVALID_ARGUMENT);
}

TEST_CASE("every token whose text was shown is in the context afterwards, so two calls continue as one", "[c_api]") {
    Model model(model_path());
    Session split(model, session_params(256)), whole(model, session_params(256));
    const Run first = generate(split.get(), kPrompt, greedy(8));
    REQUIRE(first.status == RILL_OK);
    CHECK(split.position() == 5 + 8);
    // An empty prompt continues where the context ends.
    const Run second = generate(split.get(), "", greedy(8));
    REQUIRE(second.status == RILL_OK);
    CHECK(second.result.prompt_tokens == 0);
    const Run once = generate(whole.get(), kPrompt, greedy(16));
    CHECK(first.text() + second.text() == once.text());
}

TEST_CASE("an empty prompt on an empty context is an error", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    CHECK(generate(session.get(), "", greedy(4)).status == RILL_ERR_INVALID_ARGUMENT);
}

TEST_CASE("a cancel that arrives before the prompt is evaluated ends with RILL_OK and RILL_FINISH_CANCELLED", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    rill_session_cancel(session.get());
    const Run run = generate(session.get(), kPrompt, greedy(4));
    CHECK(run.status == RILL_OK);
    CHECK(run.result.finish_reason == RILL_FINISH_CANCELLED);
    CHECK(run.result.generated_tokens == 0);
    CHECK(run.pieces.empty());
    CHECK(generate(session.get(), kPrompt, greedy(4)).result.finish_reason == RILL_FINISH_LENGTH);  // the cancel is spent
}

TEST_CASE("a generation that fills the context ends with RILL_FINISH_LENGTH", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(16));
    const Run run = generate(session.get(), kPrompt, greedy(100));
    REQUIRE(run.status == RILL_OK);
    CHECK(run.result.finish_reason == RILL_FINISH_LENGTH);
    CHECK(run.result.generated_tokens < 100);
    CHECK(session.position() <= session.n_ctx());
}

TEST_CASE("returning 0 from the text callback stops generation with RILL_FINISH_CANCELLED", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(256));
    int calls = 0;
    const rill_generate_params params = greedy(32);
    rill_generate_result result{};
    const rill_status status = rill_generate(
        session.get(), kPrompt.data(), kPrompt.size(), &params,
        [](const char*, size_t, void* user_data) {
            ++*static_cast<int*>(user_data);
            return 0;
        },
        &calls, &result);
    REQUIRE(status == RILL_OK);
    CHECK(calls == 1);
    CHECK(result.finish_reason == RILL_FINISH_CANCELLED);
    CHECK(result.generated_tokens < 32);
}

TEST_CASE("rill_session_cancel from another thread stops a running generation with RILL_FINISH_CANCELLED", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(512));

    // A 260K model can write 400 tokens faster than a thread wakes up, so the generating thread waits
    // in its first callback until the other thread has called cancel: the cancel then lands mid-run
    // every time instead of racing the end of the generation.
    struct Shared {
        std::mutex mutex;
        std::condition_variable changed;
        bool first_piece = false, cancelled = false, finished = false;
        int pieces = 0;
    } shared;

    std::thread canceller([&] {
        std::unique_lock<std::mutex> lock(shared.mutex);
        shared.changed.wait(lock, [&] { return shared.first_piece || shared.finished; });
        if (shared.finished) return;
        rill_session_cancel(session.get());
        shared.cancelled = true;
        shared.changed.notify_all();
    });

    const rill_generate_params params = greedy(400);
    rill_generate_result result{};
    const rill_status status = rill_generate(
        session.get(), kPrompt.data(), kPrompt.size(), &params,
        [](const char*, size_t, void* user_data) {
            auto& s = *static_cast<Shared*>(user_data);
            std::unique_lock<std::mutex> lock(s.mutex);
            if (++s.pieces == 1) {
                s.first_piece = true;
                s.changed.notify_all();
                s.changed.wait(lock, [&] { return s.cancelled; });
            }
            return 1;
        },
        &shared, &result);
    {
        std::lock_guard<std::mutex> lock(shared.mutex);
        shared.finished = true;
    }
    shared.changed.notify_all();
    canceller.join();

    REQUIRE(status == RILL_OK);
    CHECK(shared.cancelled);
    CHECK(result.finish_reason == RILL_FINISH_CANCELLED);
    CHECK(result.generated_tokens < 400);
    // "Keeps what was generated in the context": the prompt and every token generated before the stop.
    CHECK(session.position() >= result.prompt_tokens);
}

TEST_CASE("a cancel requested while idle stops the next eval with RILL_ERR_CANCELLED, and only that one", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    const std::vector<int32_t> tokens = tokenize(model.get(), kPrompt, 1);
    rill_session_cancel(session.get());
    CHECK(rill_session_eval(session.get(), tokens.data(), tokens.size()) == RILL_ERR_CANCELLED);
    CHECK(std::strlen(rill_session_error(session.get())) > 0);
    session.reset();
    CHECK(rill_session_eval(session.get(), tokens.data(), tokens.size()) == RILL_OK);
    CHECK(session.position() == int32_t(tokens.size()));
}

TEST_CASE("logits after eval have n_vocab entries and greedy generation picks their argmax", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    const std::vector<int32_t> prompt = tokenize(model.get(), kPrompt, 1);
    REQUIRE(rill_session_eval(session.get(), prompt.data(), prompt.size()) == RILL_OK);
    CHECK(session.position() == int32_t(prompt.size()));
    const std::vector<float> l = logits(session.get());
    REQUIRE(l.size() == size_t(model.n_vocab()));
    CHECK(std::all_of(l.begin(), l.end(), [](float x) { return std::isfinite(x); }));
    const int32_t argmax = int32_t(std::max_element(l.begin(), l.end()) - l.begin());

    // The generated piece is what the argmax token adds to the prompt's text (detokenizing it alone
    // would drop its word-initial space). An exact tie for the maximum would make this ambiguous;
    // with float logits of a trained model that does not happen for this prompt.
    std::vector<int32_t> extended = prompt;
    extended.push_back(argmax);
    const std::string before = model.detokenize(prompt), after = model.detokenize(extended);
    REQUIRE(after.compare(0, before.size(), before) == 0);

    session.reset();
    const Run run = generate(session.get(), kPrompt, greedy(1));
    REQUIRE(run.status == RILL_OK);
    CHECK(run.result.generated_tokens == 1);
    CHECK(run.text() == after.substr(before.size()));
}

TEST_CASE("an embedding has n_embd values of unit length and is the same for the same text", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    std::vector<float> a(size_t(model.n_embd())), b(a.size()), c(a.size());
    size_t needed = 0;
    REQUIRE(rill_embed(session.get(), kPrompt.data(), kPrompt.size(), a.data(), a.size(), &needed) == RILL_OK);
    CHECK(needed == 64);
    CHECK(session.position() == 0);  // the context was scratch and is left reset
    double norm = 0;
    for (const float x : a) norm += double(x) * x;
    // Scaled to unit length in float: the error is a few float roundings (~1e-7 each) over 64 terms,
    // so 1e-5 leaves two orders of magnitude of room.
    CHECK(std::fabs(std::sqrt(norm) - 1.0) < 1e-5);

    REQUIRE(rill_embed(session.get(), kPrompt.data(), kPrompt.size(), b.data(), b.size(), &needed) == RILL_OK);
    CHECK(a == b);  // exact: the same tokens through the same session take the same arithmetic

    const std::string other = "The dog ran to the park";
    REQUIRE(rill_embed(session.get(), other.data(), other.size(), c.data(), c.size(), &needed) == RILL_OK);
    CHECK(c != a);
}

TEST_CASE("an embedding buffer shorter than n_embd gives RILL_ERR_BUFFER_TOO_SMALL and n_embd", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    float small[8];
    size_t needed = 0;
    CHECK(rill_embed(session.get(), kPrompt.data(), kPrompt.size(), small, 8, &needed) == RILL_ERR_BUFFER_TOO_SMALL);
    CHECK(needed == size_t(model.n_embd()));
}

TEST_CASE("set_tokens evaluates only what the context does not hold and ends with the logits a fresh session gives", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(128));
    const std::vector<int32_t> first = tokenize(model.get(), "Once upon a time there was a dog", 1);
    std::vector<int32_t> second(first.begin(), first.end() - 2);
    for (const int32_t t : tokenize(model.get(), " cat who sat", 0)) second.push_back(t);
    size_t reused = 99;
    REQUIRE(rill_session_set_tokens(session.get(), first.data(), first.size(), &reused) == RILL_OK);
    CHECK(reused == 0);
    REQUIRE(rill_session_set_tokens(session.get(), second.data(), second.size(), &reused) == RILL_OK);
    CHECK(reused == first.size() - 2);
    CHECK(session.position() == int32_t(second.size()));
    CHECK(session.tokens() == second);
    // The same tokens again keep all but the last, whose logits are evaluated anew.
    REQUIRE(rill_session_set_tokens(session.get(), second.data(), second.size(), &reused) == RILL_OK);
    CHECK(reused == second.size() - 1);

    // A fresh session reads the whole prompt as one batch (GEMM), the reusing one its last tokens on
    // the decode kernels: both float32 with exact weights (stories260K is F32), differing only in
    // summation order, so their log-probs agree within the 2e-4 test_prefill states for the two paths.
    Session fresh(model, session_params(128));
    fresh.eval(second);
    const auto log_softmax = [](std::vector<float> v) {
        const float top = *std::max_element(v.begin(), v.end());
        double sum = 0;
        for (const float x : v) sum += std::exp(double(x) - top);
        for (float& x : v) x = float(double(x) - top - std::log(sum));
        return v;
    };
    const std::vector<float> a = log_softmax(logits(session.get())), b = log_softmax(logits(fresh.get()));
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
    CHECK(worst < 2e-4);
}

TEST_CASE("generate with reuse_prefix takes the whole conversation, reuses its prefix and writes what a fresh session writes", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(256));
    rill_generate_params p = greedy(12);
    p.reuse_prefix = 1;
    const Run turn1 = generate(session.get(), kPrompt, p);
    REQUIRE(turn1.status == RILL_OK);
    CHECK(turn1.result.cached_tokens == 0);
    const std::string conversation = kPrompt + turn1.text() + " Then";
    const Run turn2 = generate(session.get(), conversation, p);
    REQUIRE(turn2.status == RILL_OK);
    CHECK(turn2.result.cached_tokens >= turn1.result.prompt_tokens);
    CHECK(turn2.result.prompt_tokens == int32_t(tokenize(model.get(), conversation, 1).size()));

    Session fresh(model, session_params(256));
    const Run alone = generate(fresh.get(), conversation, greedy(12));
    CHECK(turn2.text() == alone.text());
}

TEST_CASE("after a restore the context's tokens are unknown, and set_tokens evaluates them all again", "[c_api]") {
    Model model(model_path());
    Session original(model, session_params(64));
    const std::vector<int32_t> prompt = tokenize(model.get(), kPrompt, 1);
    original.eval(prompt);
    size_t needed = 0;
    rill_session_save(original.get(), nullptr, 0, &needed);
    std::vector<uint8_t> state(needed);
    REQUIRE(rill_session_save(original.get(), state.data(), state.size(), &needed) == RILL_OK);
    Session restored(model, session_params(64));
    REQUIRE(rill_session_restore(restored.get(), state.data(), state.size()) == RILL_OK);
    const int32_t* tokens = nullptr;
    size_t n = 0;
    CHECK(rill_session_tokens(restored.get(), &tokens, &n) == RILL_ERR_STATE);
    size_t reused = 99;
    REQUIRE(rill_session_set_tokens(restored.get(), prompt.data(), prompt.size(), &reused) == RILL_OK);
    CHECK(reused == 0);
    CHECK(restored.tokens() == prompt);
}

TEST_CASE("set_tokens refuses no tokens, ids outside the vocabulary and more than the context, and keeps the context", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(16));
    const std::vector<int32_t> prompt = tokenize(model.get(), kPrompt, 1);
    session.eval(prompt);
    CHECK(rill_session_set_tokens(session.get(), prompt.data(), 0, nullptr) == RILL_ERR_INVALID_ARGUMENT);
    const std::vector<int32_t> bad = {1, 403, 100000};
    CHECK(rill_session_set_tokens(session.get(), bad.data(), bad.size(), nullptr) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(std::string(rill_session_error(session.get())).find("100000") != std::string::npos);
    const std::vector<int32_t> long_one(20, 403);
    CHECK(rill_session_set_tokens(session.get(), long_one.data(), long_one.size(), nullptr) == RILL_ERR_CONTEXT_FULL);
    CHECK(session.tokens() == prompt);
}

TEST_CASE("a saved state restored into a fresh session gives the same logits and the same greedy continuation", "[c_api]") {
    Model model(model_path());
    Session original(model, session_params(128));
    const std::vector<int32_t> prompt = tokenize(model.get(), kPrompt, 1);
    REQUIRE(rill_session_eval(original.get(), prompt.data(), prompt.size()) == RILL_OK);

    size_t needed = 0;
    REQUIRE(rill_session_save(original.get(), nullptr, 0, &needed) == RILL_ERR_BUFFER_TOO_SMALL);
    std::vector<uint8_t> state(needed);
    REQUIRE(rill_session_save(original.get(), state.data(), state.size(), &needed) == RILL_OK);
    CHECK(needed == state.size());

    Session restored(model, session_params(128));
    REQUIRE(rill_session_restore(restored.get(), state.data(), state.size()) == RILL_OK);
    CHECK(restored.position() == original.position());
    CHECK(logits(restored.get()) == logits(original.get()));  // exact: the state carries the logits' bytes

    const Run a = generate(original.get(), ", there was", greedy(16));
    const Run b = generate(restored.get(), ", there was", greedy(16));
    REQUIRE(a.status == RILL_OK);
    REQUIRE(b.status == RILL_OK);
    CHECK(!a.text().empty());
    CHECK(b.text() == a.text());
    CHECK(b.result.finish_reason == a.result.finish_reason);
}

TEST_CASE("restoring bytes that are not a saved state fails with RILL_ERR_STATE and a message", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    const std::string garbage = "this is not a rill session state, just some bytes";
    CHECK(rill_session_restore(session.get(), garbage.data(), garbage.size()) == RILL_ERR_STATE);
    CHECK(std::strlen(rill_session_error(session.get())) > 0);
    CHECK(session.position() == 0);
}

// ---- KV cache types ----------------------------------------------------------------------------------

namespace {
// A golden model: head size 64, so every KV type fits it (stories260K's is 8).
std::string golden_path() {
    const char* env = std::getenv("RILL_SHARED");
    return std::string(env != nullptr ? env : RILL_SHARED_DIR) + "/golden/synth-llama-A.Q8_0.gguf";
}

std::vector<float> logits_after(Model& model, rill_session_params params, const std::vector<int32_t>& tokens) {
    Session session(model, params);
    REQUIRE(rill_session_eval(session.get(), tokens.data(), tokens.size()) == RILL_OK);
    return logits(session.get());
}
}  // namespace

TEST_CASE("a session takes BF16, Q8_0 and Q4_0 keys and values, each type of its own", "[c_api][kv]") {
    Model model(golden_path());
    const std::vector<int32_t> tokens = {1, 20, 30, 40};
    rill_session_params f16 = session_params(64);
    const std::vector<float> reference = logits_after(model, f16, tokens);
    for (const rill_kv_type k : {RILL_KV_F32, RILL_KV_BF16, RILL_KV_Q8_0, RILL_KV_Q4_0})
        for (const rill_kv_type v : {RILL_KV_F16, RILL_KV_Q8_0}) {
            INFO("kv_type " << int(k) << ", kv_type_v RILL_KV_V(" << int(v) << ")");
            rill_session_params p = session_params(64);
            p.kv_type = k;
            p.kv_type_v = RILL_KV_V(v);
            const std::vector<float> l = logits_after(model, p, tokens);
            REQUIRE(l.size() == reference.size());
            // The same model's logits rounded differently, not garbage: within a tenth of their spread
            // (q4_0 keys move them by about 1 of 30 here; precision is test_kv_cache.cpp's business).
            double worst = 0;
            for (size_t i = 0; i < l.size(); ++i) worst = std::max(worst, double(std::abs(l[i] - reference[i])));
            const auto [low, high] = std::minmax_element(reference.begin(), reference.end());
            INFO("max |Δ logit| " << worst << " of a spread of " << (*high - *low));
            CHECK(worst < 0.1 * double(*high - *low));
        }
}

TEST_CASE("kv_type_v left zero keeps kv_type for keys and values, as before the field existed", "[c_api][kv]") {
    CHECK(rill_session_default_params().kv_type_v == 0);
    Model model(golden_path());
    const std::vector<int32_t> tokens = {1, 20, 30, 40};
    rill_session_params zero = session_params(64), both = session_params(64), split = session_params(64);
    zero.kv_type = both.kv_type = split.kv_type = RILL_KV_Q8_0;
    both.kv_type_v = RILL_KV_V(RILL_KV_Q8_0);
    split.kv_type_v = RILL_KV_V(RILL_KV_F16);
    const std::vector<float> a = logits_after(model, zero, tokens);
    CHECK(a == logits_after(model, both, tokens));
    CHECK(a != logits_after(model, split, tokens));
}

TEST_CASE("a quantized KV type on a model whose head size is not a multiple of 32 gives RILL_ERR_INVALID_ARGUMENT naming it", "[c_api][kv]") {
    Model model(model_path());  // stories260K: head size 8
    for (const bool values_only : {false, true}) {
        rill_session_params p = session_params(64);
        if (values_only) p.kv_type_v = RILL_KV_V(RILL_KV_Q4_0);
        else p.kv_type = RILL_KV_Q8_0;
        rill_session* s = nullptr;
        char error[256] = "";
        CHECK(rill_session_create(model.get(), &p, &s, error, sizeof error) == RILL_ERR_INVALID_ARGUMENT);
        CHECK(s == nullptr);
        CHECK_THAT(error, rill::test::contains(values_only ? "q4_0" : "q8_0") && rill::test::contains("head size is 8"));
    }
}

TEST_CASE("an unknown kv_type or kv_type_v gives RILL_ERR_INVALID_ARGUMENT naming the field", "[c_api][kv]") {
    Model model(golden_path());
    for (const bool value_field : {false, true}) {
        rill_session_params p = session_params(64);
        if (value_field) p.kv_type_v = RILL_KV_V(5);
        else p.kv_type = static_cast<rill_kv_type>(5);
        rill_session* s = nullptr;
        char error[256] = "";
        CHECK(rill_session_create(model.get(), &p, &s, error, sizeof error) == RILL_ERR_INVALID_ARGUMENT);
        CHECK(s == nullptr);
        CHECK_THAT(error, rill::test::contains(value_field ? "kv_type_v" : "kv_type is not a rill_kv_type"));
    }
}

TEST_CASE("a state saved with Q8_0 keys and F16 values does not restore into an all-Q8_0 session", "[c_api][kv]") {
    Model model(golden_path());
    rill_session_params split = session_params(64), q8 = session_params(64);
    split.kv_type = q8.kv_type = RILL_KV_Q8_0;
    split.kv_type_v = RILL_KV_V(RILL_KV_F16);
    Session source(model, split), target(model, q8);
    const int32_t tokens[] = {1, 2, 3};
    REQUIRE(rill_session_eval(source.get(), tokens, 3) == RILL_OK);
    const std::vector<uint8_t> state = source.save();
    CHECK(rill_session_restore(target.get(), state.data(), state.size()) == RILL_ERR_STATE);
    CHECK_THAT(rill_session_error(target.get()), rill::test::contains("q8_0 K / f16 V"));
}

TEST_CASE("a state saved with F32 keys and values does not restore into an F16 session", "[c_api]") {
    Model model(model_path());
    rill_session_params f32 = session_params(64);
    f32.kv_type = RILL_KV_F32;
    Session source(model, f32), target(model, session_params(64));
    const std::vector<int32_t> prompt = tokenize(model.get(), kPrompt, 1);
    REQUIRE(rill_session_eval(source.get(), prompt.data(), prompt.size()) == RILL_OK);
    const std::vector<uint8_t> state = source.save();
    CHECK(rill_session_restore(target.get(), state.data(), state.size()) == RILL_ERR_STATE);
}

// ---- Misuse ------------------------------------------------------------------------------------------

TEST_CASE("null handles and pointers give RILL_ERR_INVALID_ARGUMENT without crashing", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    rill_model* m = model.get();
    rill_session* s = session.get();
    int32_t tokens[8];
    char text[64];
    float floats[64];
    size_t needed = 0;
    const float* logits_ptr = nullptr;

    rill_model* no_model = m;
    CHECK(rill_model_load(nullptr, nullptr, &no_model, text, sizeof text) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(no_model == nullptr);
    CHECK(rill_model_load(model_path().c_str(), nullptr, nullptr, text, sizeof text) == RILL_ERR_INVALID_ARGUMENT);

    CHECK(rill_tokenize(nullptr, "a", 1, 1, 0, tokens, 8, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_tokenize(m, nullptr, 3, 1, 0, tokens, 8, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_detokenize(nullptr, tokens, 0, text, sizeof text, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_detokenize(m, nullptr, 3, text, sizeof text, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_apply_chat_template(nullptr, nullptr, 0, 1, text, sizeof text, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_apply_chat_template(m, nullptr, 2, 1, text, sizeof text, &needed) == RILL_ERR_INVALID_ARGUMENT);
    const rill_chat_message half{"user", nullptr};
    CHECK(rill_apply_chat_template(m, &half, 1, 1, text, sizeof text, &needed) == RILL_ERR_INVALID_ARGUMENT);

    rill_session* no_session = s;
    CHECK(rill_session_create(nullptr, nullptr, &no_session, text, sizeof text) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(no_session == nullptr);
    CHECK(rill_session_create(m, nullptr, nullptr, text, sizeof text) == RILL_ERR_INVALID_ARGUMENT);

    CHECK(rill_session_reset(nullptr) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_session_eval(nullptr, tokens, 1) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_session_eval(s, nullptr, 3) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_session_logits(nullptr, &logits_ptr, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_session_logits(s, nullptr, nullptr) == RILL_ERR_INVALID_ARGUMENT);
    const rill_generate_params params = greedy(4);
    CHECK(rill_generate(nullptr, "a", 1, &params, nullptr, nullptr, nullptr) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_generate(s, nullptr, 3, &params, nullptr, nullptr, nullptr) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_embed(nullptr, "a", 1, floats, 64, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_embed(s, nullptr, 3, floats, 64, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_session_save(nullptr, text, sizeof text, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_session_restore(nullptr, text, sizeof text) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(rill_session_restore(s, nullptr, 16) == RILL_ERR_INVALID_ARGUMENT);

    // These have no status to return; they must simply not crash.
    rill_session_cancel(nullptr);
    rill_session_free(nullptr);
    rill_model_free(nullptr);
    CHECK(rill_model_error(nullptr) != nullptr);
    CHECK(rill_session_error(nullptr) != nullptr);

    // The failures above left the session usable.
    const Run run = generate(s, kPrompt, greedy(2));
    CHECK(run.status == RILL_OK);
}

TEST_CASE("out-of-range values give RILL_ERR_INVALID_ARGUMENT with a message", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    const int32_t outside[] = {1, 512};  // n_vocab is 512
    CHECK(rill_session_eval(session.get(), outside, 2) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(std::strlen(rill_session_error(session.get())) > 0);
    CHECK(session.position() == 0);

    char text[64];
    size_t needed = 0;
    CHECK(rill_detokenize(model.get(), outside, 2, text, sizeof text, &needed) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(std::strlen(rill_model_error(model.get())) > 0);

    rill_generate_params params = greedy(-1);
    CHECK(rill_generate(session.get(), "a", 1, &params, nullptr, nullptr, nullptr) == RILL_ERR_INVALID_ARGUMENT);
    params = greedy(4);
    params.n_stop = 1;  // with stop still NULL
    CHECK(rill_generate(session.get(), "a", 1, &params, nullptr, nullptr, nullptr) == RILL_ERR_INVALID_ARGUMENT);

    rill_session_params bad_kv = session_params(64);
    bad_kv.kv_type = static_cast<rill_kv_type>(7);
    rill_session* s = nullptr;
    CHECK(rill_session_create(model.get(), &bad_kv, &s, text, sizeof text) == RILL_ERR_INVALID_ARGUMENT);
    CHECK(s == nullptr);
    CHECK(std::strlen(text) > 0);
}

TEST_CASE("a prompt longer than the context gives RILL_ERR_CONTEXT_FULL and leaves the session usable", "[c_api]") {
    Model model(model_path());
    Session session(model, session_params(16));
    std::string long_prompt;
    for (int i = 0; i < 10; ++i) long_prompt += kPrompt + " ";  // about 40 tokens
    const Run too_long = generate(session.get(), long_prompt, greedy(4));
    CHECK(too_long.status == RILL_ERR_CONTEXT_FULL);
    CHECK(std::strlen(rill_session_error(session.get())) > 0);
    CHECK(too_long.pieces.empty());
    CHECK(session.position() == 0);

    const Run fits = generate(session.get(), kPrompt, greedy(4));
    CHECK(fits.status == RILL_OK);
    CHECK(fits.result.generated_tokens == 4);
}

TEST_CASE("rill_version and rill_status_string give constant text", "[c_api]") {
    CHECK(std::string(rill_version()) == "0.1.0");
    CHECK(std::string(rill_status_string(RILL_OK)) == "ok");
    CHECK(std::string(rill_status_string(RILL_ERR_INVALID_ARGUMENT)) == "invalid argument");
    CHECK(rill_status_string(static_cast<rill_status>(99)) != nullptr);
}

// ---- The C++ wrapper ---------------------------------------------------------------------------------

TEST_CASE("the C++ wrapper throws rill::api::Error carrying the status and the library's message", "[cpp_api]") {
    const std::string path = "/nonexistent/rill/no-such-model.gguf";
    try {
        Model missing(path);
        FAIL("loading a missing file did not throw");
    } catch (const rill::api::Error& e) {
        CHECK(e.status() == RILL_ERR_LOAD);
        CHECK(std::string(e.what()).find(path) != std::string::npos);
    }

    Model model(model_path());
    Session session(model, session_params(64));
    try {
        session.restore({1, 2, 3, 4});
        FAIL("restoring garbage did not throw");
    } catch (const rill::api::Error& e) {
        CHECK(e.status() == RILL_ERR_STATE);
        CHECK(std::strlen(e.what()) > 0);
    }
    try {
        session.eval({1, 600});
        FAIL("evaluating a token outside the vocabulary did not throw");
    } catch (const rill::api::Error& e) {
        CHECK(e.status() == RILL_ERR_INVALID_ARGUMENT);
    }
}

TEST_CASE("the C++ wrapper's progress callback can cancel a load", "[cpp_api]") {
    std::vector<float> seen;
    try {
        Model model(model_path(), [&](float fraction) {
            seen.push_back(fraction);
            return false;
        });
        FAIL("a refusing progress callback did not stop the load");
    } catch (const rill::api::Error& e) {
        CHECK(e.status() == RILL_ERR_CANCELLED);
    }
    CHECK(seen.size() == 1);

    Model loaded(model_path(), [](float) { return true; });
    CHECK(loaded.n_vocab() == 512);
}

TEST_CASE("an exception thrown by a C++ text callback stops generation and comes out of generate", "[cpp_api]") {
    Model model(model_path());
    Session session(model, session_params(64));
    int calls = 0;
    CHECK_THROWS_AS(session.generate(kPrompt, greedy(16),
                                     [&](std::string_view) -> bool {
                                         ++calls;
                                         throw std::logic_error("from the callback");
                                     }),
                    std::logic_error);
    CHECK(calls == 1);
    // The session is left consistent: it can generate again.
    session.reset();
    const rill_generate_result result = session.generate(kPrompt, greedy(4));
    CHECK(result.generated_tokens == 4);
}

TEST_CASE("the C++ wrapper gives the same tokens, text, logits, embeddings and states as the C calls", "[cpp_api]") {
    Model model(model_path());
    CHECK(model.name() == "llama");
    const std::vector<int32_t> tokens = model.tokenize(kPrompt);
    CHECK(tokens == tokenize(model.get(), kPrompt, 1));
    CHECK(model.detokenize(tokens) == kPrompt);
    CHECK(model.apply_chat_template({{"user", "hi"}}) == "User: hi\nAssistant:");

    // Long enough that every first buffer guess in the wrapper is exercised against a real size.
    std::string story;
    for (int i = 0; i < 200; ++i) story += "Lily and her mom went to the park. ";
    const std::vector<int32_t> story_tokens = model.tokenize(story, false);
    CHECK(story_tokens.size() > 1000);
    CHECK(model.detokenize(story_tokens) == story);

    Session session(model, session_params(64));
    session.eval(tokens);
    CHECK(session.position() == int32_t(tokens.size()));
    const std::vector<float> l = session.logits();
    CHECK(l == logits(session.get()));

    const std::vector<uint8_t> state = session.save();
    Session other(model, session_params(64));
    other.restore(state);
    CHECK(other.logits() == l);

    std::string streamed;
    const rill_generate_result result = other.generate(", there", greedy(8), [&](std::string_view piece) {
        streamed += piece;
        return true;
    });
    CHECK(result.generated_tokens == 8);
    CHECK(!streamed.empty());

    const std::vector<float> e = session.embed(kPrompt);
    CHECK(e.size() == size_t(model.n_embd()));
    CHECK(session.position() == 0);
}

TEST_CASE("a moved-from wrapper owns nothing and the moved-to one works", "[cpp_api]") {
    Model first(model_path());
    Model second(std::move(first));
    CHECK(first.get() == nullptr);
    CHECK(second.n_vocab() == 512);
    Session a(second, session_params(32));
    Session b(std::move(a));
    CHECK(a.get() == nullptr);
    CHECK(b.n_ctx() == 32);
}
