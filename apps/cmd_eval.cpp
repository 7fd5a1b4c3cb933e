// rill eval: the logits of every position of a given token sequence, for cross-checks against references.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "model_flags.h"
#include "session_flags.h"
#include "runtime/base/error.h"
#include "runtime/session/sampling.h"
#include "runtime/session/session.h"

namespace rill::cli {
namespace {

struct EvalFlags {
    ModelFlags model;
    std::string tokens;
    std::string out;
    SessionFlags session{.kv = {.both = "f32", .k = "", .v = ""}};  // exact keys and values for evaluation
};

std::vector<int32_t> parse_ids(const std::string& list) {
    std::vector<int32_t> ids;
    size_t start = 0;
    while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, comma - start);
        size_t used = 0;
        long long id = -1;
        try {
            id = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (item.empty() || used != item.size() || id < 0 || id > INT32_MAX)
            throw CLI::ValidationError("--tokens", "'" + item + "' is not a token id (expected a list like 1,2,3)");
        ids.push_back(int32_t(id));
        start = comma + 1;
    }
    return ids;
}

int eval(const EvalFlags& f) {
    const std::vector<int32_t> ids = parse_ids(f.tokens);
    const auto model = load_model(f.model.path, f.model.load_options());
    SessionOptions options = f.session.options_for(*model, false);
    if (options.n_ctx == 0) options.n_ctx = std::max<int>(int(ids.size()), std::min(model->hp.n_ctx_train, 4096));
    Session session(*model, options);
    const std::span<const float> logits = session.eval(ids, true);

    std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(f.out.c_str(), "wb"), &std::fclose);
    if (!out) throw Error(f.out + ": cannot open for writing");
    if (std::fwrite(logits.data(), sizeof(float), logits.size(), out.get()) != logits.size() || std::fflush(out.get()) != 0)
        throw Error(f.out + ": write failed");
    const int n_vocab = model->hp.n_vocab;
    std::printf("{\"n_tokens\":%zu,\"n_vocab\":%d,\"argmax_last\":%d}\n", ids.size(), n_vocab,
                argmax(logits.subspan(logits.size() - size_t(n_vocab))));
    return 0;
}

}  // namespace

Action add_eval(CLI::App& app) {
    auto f = std::make_shared<EvalFlags>();
    CLI::App* cmd = app.add_subcommand("eval", "Evaluate token ids as one prompt and write the logits of every position");
    cmd->footer(
        "The ids are used as given (no BOS is added). The output file holds n_tokens rows of n_vocab\n"
        "little-endian float32 logits; a JSON summary line goes to stdout.\n"
        "Example:\n  rill eval -m model.gguf --tokens 1,403,407 --out logits.f32");
    f->model.add_to(*cmd);
    cmd->add_option("--tokens", f->tokens, "comma-separated token ids, e.g. 1,2,3")->required();
    cmd->add_option("--out", f->out, "where to write the logits")->required();
    f->session.add_to(*cmd, "context length (default: enough for the tokens)");
    return [f] { return eval(*f); };
}

}  // namespace rill::cli
