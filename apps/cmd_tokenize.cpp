// rill tokenize / rill detokenize: text to token ids and back, with the model's own tokenizer.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "model_flags.h"
#include "runtime/base/error.h"
#include "runtime/text/tokenizer.h"

namespace rill::cli {
namespace {

struct TokenizeFlags {
    ModelFlags model;
    std::string text;
    std::string file;
    bool no_bos = false;
    bool parse_special = false;
};

struct DetokenizeFlags {
    ModelFlags model;
    std::vector<std::string> ids;
    bool keep_special = false;
};

// Vocabulary-only GGUFs have no tensors, so these commands read the vocabulary alone.
Vocab open_vocab(const ModelFlags& m) { return load_vocab(GgufFile::open(m.path, m.load_options())); }

int run_tokenize(const TokenizeFlags& f) {
    std::string text = f.text;
    if (!f.file.empty()) {
        std::ifstream in(f.file, std::ios::binary);
        if (!in) throw Error(f.file + ": cannot open");
        std::ostringstream s;
        s << in.rdbuf();
        text = s.str();
    }
    const Vocab vocab = open_vocab(f.model);
    const auto ids = tokenize(vocab, text, {.add_special = !f.no_bos, .parse_special = f.parse_special});
    std::string line;
    for (const int32_t id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
    std::printf("%s\n", line.c_str());
    return 0;
}

int run_detokenize(const DetokenizeFlags& f) {
    const Vocab vocab = open_vocab(f.model);
    std::vector<int32_t> ids;
    for (const std::string& item : f.ids) {
        // Accept "1 2 3", "1,2,3" or a mix.
        std::string normalised = item;
        for (char& c : normalised)
            if (c == ',') c = ' ';
        std::istringstream in(normalised);
        for (std::string word; in >> word;) {
            size_t used = 0;
            long long id = -1;
            try {
                id = std::stoll(word, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != word.size() || id < 0 || id >= vocab.size())
                throw CLI::ValidationError("IDS", "'" + word + "' is not a token id of this vocabulary (0.." +
                                                      std::to_string(vocab.size() - 1) + ")");
            ids.push_back(int32_t(id));
        }
    }
    const std::string text = detokenize(vocab, ids, {.skip_special = !f.keep_special});
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    return 0;
}

}  // namespace

Action add_tokenize(CLI::App& app) {
    auto f = std::make_shared<TokenizeFlags>();
    CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text, space-separated on one line");
    cmd->footer("Examples:\n  rill tokenize -m model.gguf \"Hello world\"\n"
                "  rill tokenize -m model.gguf --parse-special \"<|im_start|>user\"   control tokens become their ids");
    f->model.add_to(*cmd);
    auto* text = cmd->add_option("TEXT", f->text, "the text (or use -f)");
    cmd->add_option("-f,--file", f->file, "read the text from a file")->excludes(text)->check(CLI::ExistingFile);
    cmd->add_flag("--no-bos", f->no_bos, "do not add BOS/EOS even if the model asks for them");
    cmd->add_flag("--parse-special", f->parse_special, "read control tokens written in the text as those tokens");
    return [f] { return run_tokenize(*f); };
}

Action add_detokenize(CLI::App& app) {
    auto f = std::make_shared<DetokenizeFlags>();
    CLI::App* cmd = app.add_subcommand("detokenize", "Print the text that token ids stand for");
    cmd->footer("Example:\n  rill detokenize -m model.gguf 9906 1917");
    f->model.add_to(*cmd);
    cmd->add_option("IDS", f->ids, "token ids, separated by spaces or commas")->required();
    cmd->add_flag("--keep-special", f->keep_special, "print control tokens such as <|im_end|> instead of dropping them");
    return [f] { return run_detokenize(*f); };
}

}  // namespace rill::cli
