// rill template: render a chat template for a conversation, as Hugging Face's apply_chat_template does.
#include <cstdio>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "model_flags.h"
#include "runtime/text/chat_template.h"
#include "runtime/base/error.h"
#include "runtime/text/vocab.h"

namespace rill::cli {
namespace {

struct TemplateFlags {
    std::string model;
    std::string template_file;
    std::string messages_file;
    bool no_generation_prompt = false;
    std::string bos, eos;
    bool bos_set = false, eos_set = false;
};

int run_template(const TemplateFlags& f) {
    ChatTemplateInput input;
    std::string source;
    if (!f.model.empty()) {
        const GgufFile file = GgufFile::open(f.model);
        const auto t = file.get_string("tokenizer.chat_template");
        if (!t) throw Error(f.model + ": the model has no chat template (metadata 'tokenizer.chat_template')");
        source = *t;
        const Vocab vocab = load_vocab(file);
        if (vocab.bos >= 0) input.bos_token = vocab.tokens[size_t(vocab.bos)];
        if (vocab.eos >= 0) input.eos_token = vocab.tokens[size_t(vocab.eos)];
    } else {
        source = read_text_file(f.template_file);
    }
    if (f.bos_set) input.bos_token = f.bos;
    if (f.eos_set) input.eos_token = f.eos;

    nlohmann::ordered_json doc;  // keeps keys in file order, as Python does for tojson
    try {
        doc = nlohmann::ordered_json::parse(read_text_file(f.messages_file));
    } catch (const nlohmann::json::exception& e) {
        throw Error(f.messages_file + ": not valid JSON: " + e.what());
    }
    // Either a bare array of messages or an object like the OpenAI request: {"messages": [...], "tools": [...]}.
    if (doc.is_array()) {
        input.messages = doc;
    } else if (doc.is_object() && doc.contains("messages")) {
        input.messages = doc["messages"];
        if (doc.contains("tools")) input.tools = doc["tools"];
        for (const auto& [key, value] : doc.items())
            if (key != "messages" && key != "tools" && key != "add_generation_prompt") input.extra[key] = value;
    } else {
        throw Error(f.messages_file + ": expected an array of messages or an object with \"messages\"");
    }
    if (!input.messages.is_array()) throw Error(f.messages_file + ": \"messages\" must be an array");
    input.add_generation_prompt = !f.no_generation_prompt;
    const std::string text = render_chat_template(source, input);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
}

}  // namespace

Action add_template(CLI::App& app) {
    auto f = std::make_shared<TemplateFlags>();
    CLI::App* cmd = app.add_subcommand("template", "Render a chat template for a conversation (as Hugging Face does)");
    cmd->footer("Example:\n  echo '[{\"role\":\"user\",\"content\":\"Hi\"}]' > m.json\n"
                "  rill template -m model.gguf --messages m.json\n"
                "The messages file is an array of {role, content}, or an object with \"messages\" (and \"tools\").");
    auto* model = cmd->add_option("-m,--model", f->model, "take the template, BOS and EOS from this GGUF")->check(CLI::ExistingFile);
    auto* tmpl = cmd->add_option("--template", f->template_file, "a Jinja template file")->check(CLI::ExistingFile);
    model->excludes(tmpl);
    cmd->add_option("--messages", f->messages_file, "JSON file with the conversation")->required()->check(CLI::ExistingFile);
    cmd->add_flag("--no-generation-prompt", f->no_generation_prompt, "do not open the assistant's turn at the end");
    cmd->add_option("--bos", f->bos, "text of bos_token (default: the model's)")->each([f](const std::string&) { f->bos_set = true; });
    cmd->add_option("--eos", f->eos, "text of eos_token (default: the model's)")->each([f](const std::string&) { f->eos_set = true; });
    cmd->callback([cmd] {
        if (cmd->count("--model") + cmd->count("--template") == 0)
            throw CLI::RequiredError("one of --model or --template");
    });
    return [f] { return run_template(*f); };
}

}  // namespace rill::cli
