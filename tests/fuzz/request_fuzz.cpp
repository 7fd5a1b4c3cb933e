// libFuzzer harness: a request body as a client sends it, through the server's own parsing and
// validation for each endpoint that takes one (chat completions, completions, embeddings, and
// llama-server's /apply-template, /tokenize, /detokenize and slot file names), without a socket. The served model is stories260K with a real chat template (Qwen2.5's, which renders tools
// and system prompts), so chat bodies reach the template engine and the tokenizer as they do in serving.
// The only acceptable outcome of a bad body is an ApiError with a 4xx status (a rill::Error from the
// tokenizer or template is answered 400 too); any other exception or a crash is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/serve_extras.h"
#include "apps/serve_openai.h"
#include "runtime/base/error.h"
#include "runtime/model/model.h"
#include "runtime/text/vocab.h"

namespace {

std::string shared_dir() {
    const char* env = std::getenv("RILL_SHARED");
    return env ? env : RILL_SHARED_DIR;
}

struct Served {
    std::unique_ptr<rill::Model> model;
    rill::Vocab vocab;
    std::unique_ptr<rill::serve::ServedModel> served;

    Served() {
        model = rill::load_model(shared_dir() + "/models/stories260K/stories260K.gguf");
        vocab = rill::load_vocab(model->file);
        std::ifstream cases(shared_dir() + "/chat-templates/cases.json");
        std::stringstream text;
        text << cases.rdbuf();
        const auto all = nlohmann::json::parse(text.str());
        // A small context, so the context-length checks are reached by bodies a fuzzer can write.
        served = std::make_unique<rill::serve::ServedModel>(
            rill::serve::ServedModel{*model, vocab, "stories", all.at("Qwen-Qwen2.5-7B-Instruct").at("template").get<std::string>(), 256});
    }
};

template <typename Parse>
void expect_answer_or_4xx(Parse parse) {
    try {
        parse();
    } catch (const rill::serve::ApiError& e) {
        if (e.status < 400 || e.status > 499 || e.message.empty()) std::abort();
    } catch (const rill::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const Served s;
    const rill::serve::ServedModel& served = *s.served;
    nlohmann::ordered_json body;
    try {
        body = rill::serve::parse_body(std::string(reinterpret_cast<const char*>(data), size));
    } catch (const rill::serve::ApiError& e) {
        if (e.status != 400) std::abort();
        return 0;
    }
    expect_answer_or_4xx([&] { (void)rill::serve::parse_chat_request(body, served); });
    expect_answer_or_4xx([&] { (void)rill::serve::parse_completion_request(body, served); });
    bool base64 = false;
    expect_answer_or_4xx([&] { (void)rill::serve::parse_embedding_inputs(body, served, base64); });
    expect_answer_or_4xx([&] { (void)rill::serve::apply_template(body, served); });
    expect_answer_or_4xx([&] { (void)rill::serve::tokenize_response(body, served).dump(); });
    expect_answer_or_4xx([&] { (void)rill::serve::detokenize_response(body, served).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace); });
    expect_answer_or_4xx([&] { (void)rill::serve::slot_filename(body); });
    return 0;
}
