// rill chat: an interactive conversation in the terminal, rendered with the model's chat template.
#include <editline/readline.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "model_flags.h"
#include "sampling_flags.h"
#include "session_flags.h"
#include "runtime/session/chat.h"
#include "runtime/base/error.h"

namespace rill::cli {
namespace {

struct ChatFlags {
    ModelFlags model;
    std::string system;
    std::string template_file;
    int max_tokens = 1024;
    SessionFlags session;
    SamplingFlags sampling;
};

const char* kHelp =
    "Commands:\n"
    "  /help            this list\n"
    "  /reset           forget the conversation (the system prompt stays)\n"
    "  /system TEXT     set the system prompt (and start over)\n"
    "  /save FILE       save the conversation as JSON\n"
    "  /load FILE       load a conversation saved with /save\n"
    "  /exit            quit (Ctrl-D works too)\n"
    "End a line with \\ to continue on the next one, or wrap several lines in \"\"\".\n"
    "Ctrl-C stops the answer being written; the conversation goes on.\n";

// Reads one message; multi-line with a trailing backslash or a block between """ lines.
// Returns false at end of input.
bool read_message(std::string& message) {
    message.clear();
    bool block = false;
    for (;;) {
        clear_interrupt();
        const char* prompt = message.empty() && !block ? "> " : ". ";
        char* raw = readline(prompt);
        if (raw == nullptr) {
            if (take_interrupt()) {  // Ctrl-C at the prompt: drop the line, keep chatting
                std::printf("\n");
                message.clear();
                block = false;
                continue;
            }
            return !message.empty();
        }
        std::string line(raw);
        std::free(raw);
        if (line == "\"\"\"") {
            if (block) return true;
            block = true;
            continue;
        }
        if (block) {
            message += line + "\n";
            continue;
        }
        if (!line.empty() && line.back() == '\\') {
            line.pop_back();
            message += line + "\n";
            continue;
        }
        message += line;
        if (!message.empty()) add_history(message.c_str());
        return true;
    }
}

int chat(const ChatFlags& f) {
    const auto model = load_model(f.model.path, f.model.load_options());
    const Vocab vocab = load_vocab(model->file);
    Session session(*model, f.session.options_for(*model));

    ChatConfig config;
    config.template_source = f.template_file.empty() ? model->file.get_string("tokenizer.chat_template").value_or("")
                                                     : read_text_file(f.template_file);
    config.system = f.system;
    config.sampling = f.sampling.resolved();
    config.max_reply_tokens = f.max_tokens;
    Chat conversation(session, vocab, config);

    std::fprintf(stderr, "rill chat: %s, %d layers, context %d tokens, %s. /help for commands, Ctrl-D to quit.\n",
                 model->hp.arch.c_str(), model->hp.n_layer, session.n_ctx(),
                 thread_summary(session.n_threads(), session.n_threads_batch()).c_str());
    if (!conversation.has_template())
        std::fprintf(stderr, "This model has no chat template: using a plain \"User: / Assistant:\" transcript.\n");
    const std::atomic<bool>& interrupted = interrupt_flag();

    std::string message;
    while (read_message(message)) {
        if (message.empty()) continue;
        if (message[0] == '/') {
            const size_t space = message.find(' ');
            const std::string command = message.substr(0, space);
            const std::string arg = space == std::string::npos ? "" : message.substr(space + 1);
            try {
                if (command == "/exit" || command == "/quit") break;
                if (command == "/help") {
                    std::printf("%s", kHelp);
                } else if (command == "/reset") {
                    conversation.reset();
                    std::printf("(conversation cleared)\n");
                } else if (command == "/system") {
                    conversation.set_system(arg);
                    conversation.reset();
                    std::printf(arg.empty() ? "(system prompt removed; conversation cleared)\n"
                                            : "(system prompt set; conversation cleared)\n");
                } else if (command == "/save") {
                    if (arg.empty()) throw Error("/save needs a file name");
                    std::ofstream out(arg);
                    out << conversation.to_json().dump(2) << "\n";
                    if (!out) throw Error(arg + ": cannot write");
                    std::printf("(saved %zu messages to %s)\n", conversation.messages().size(), arg.c_str());
                } else if (command == "/load") {
                    if (arg.empty()) throw Error("/load needs a file name");
                    nlohmann::json saved;
                    try {
                        saved = nlohmann::json::parse(read_text_file(arg));
                    } catch (const nlohmann::json::exception& e) {
                        throw Error(arg + ": not JSON: " + e.what());
                    }
                    conversation.from_json(saved);
                    std::printf("(loaded %zu messages from %s)\n", conversation.messages().size(), arg.c_str());
                } else {
                    std::printf("unknown command %s; /help lists them\n", command.c_str());
                }
            } catch (const Error& e) {
                std::printf("error: %s\n", e.what());
            }
            continue;
        }

        clear_interrupt();
        try {
            const ChatReply reply = conversation.send(
                message,
                [](std::string_view text) {
                    std::fwrite(text.data(), 1, text.size(), stdout);
                    std::fflush(stdout);
                },
                &interrupted);
            std::printf("\n");
            std::fflush(stdout);
            if (reply.dropped_messages > 0)
                std::fprintf(stderr, "(the context was full: the %d oldest messages were dropped, the system prompt kept)\n",
                             reply.dropped_messages);
            std::fprintf(stderr, "[%d tokens, %.1f t/s | prompt %d tokens, %d reused from earlier turns%s]\n",
                         reply.generated, reply.generated * 1000.0 / std::max(reply.decode_ms, 1e-9), reply.prompt_tokens,
                         reply.reused_tokens, reply.cancelled ? " | stopped by Ctrl-C" : reply.hit_limit ? " | length limit" : "");
        } catch (const Error& e) {
            std::printf("\nerror: %s\n", e.what());
        }
        clear_interrupt();
    }
    std::printf("\n");
    return 0;
}

}  // namespace

Action add_chat(CLI::App& app) {
    auto f = std::make_shared<ChatFlags>();
    CLI::App* cmd = app.add_subcommand("chat", "Chat with a model in the terminal");
    cmd->footer("Example:\n  rill chat -m model.gguf --system \"You are a concise assistant.\"\n"
                "The model's own chat template formats the conversation; answers stream as they are written.");
    f->model.add_to(*cmd);
    cmd->add_option("--system", f->system, "system prompt");
    cmd->add_option("--template", f->template_file, "use this Jinja chat template file instead of the model's")
        ->check(CLI::ExistingFile);
    cmd->add_option("-n,--max-tokens", f->max_tokens, "longest answer in tokens")->capture_default_str()->check(CLI::Range(1, 1 << 24));
    f->sampling.add_to(*cmd);
    f->session.add_to(*cmd);
    return [f] { return chat(*f); };
}

}  // namespace rill::cli
