/* The smallest complete use of rill's C API: load a model, render a one-message chat, generate a
 * short greedy reply streamed to stdout.
 *
 *   simple MODEL.gguf [PROMPT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rill.h>

/* user_data is an int that says whether the progress line is still open, so an error starts a new line. */
static int show_progress(float fraction, void* user_data) {
    int* line_open = user_data;
    fprintf(stderr, "\rloading %3d%%", (int)(fraction * 100.0f + 0.5f));
    *line_open = fraction < 1.0f;
    if (!*line_open) fputc('\n', stderr);
    return 1;
}

static int print_text(const char* text, size_t length, void* user_data) {
    (void)user_data;
    fwrite(text, 1, length, stdout);
    fflush(stdout); /* show each piece as it comes, not when the buffer fills */
    return 1;
}

static const char* finish_name(rill_finish_reason reason) {
    switch (reason) {
        case RILL_FINISH_STOP: return "stop";
        case RILL_FINISH_LENGTH: return "length";
        case RILL_FINISH_CANCELLED: return "cancelled";
    }
    return "?";
}

/* Renders the chat into a malloc'd string, growing the buffer once if the first guess is short. */
static rill_status render_chat(rill_model* model, const char* prompt, char** out) {
    rill_chat_message message;
    size_t capacity = strlen(prompt) + 64, needed = 0;
    char* text = malloc(capacity);
    rill_status status;
    message.role = "user";
    message.content = prompt;
    *out = NULL;
    if (text == NULL) return RILL_ERR_INTERNAL;
    status = rill_apply_chat_template(model, &message, 1, 1, text, capacity, &needed);
    if (status == RILL_ERR_BUFFER_TOO_SMALL) {
        char* bigger = realloc(text, needed + 1); /* needed leaves out the NUL */
        if (bigger == NULL) {
            free(text);
            return RILL_ERR_INTERNAL;
        }
        text = bigger;
        status = rill_apply_chat_template(model, &message, 1, 1, text, needed + 1, &needed);
    }
    if (status != RILL_OK) {
        free(text);
        return status;
    }
    *out = text;
    return RILL_OK;
}

int main(int argc, char** argv) {
    const char* prompt = argc > 2 ? argv[2] : "Tell me a story.";
    char error[512] = "";
    rill_model_params model_params = rill_model_default_params();
    rill_session_params session_params = rill_session_default_params();
    rill_generate_params generate_params = rill_generate_default_params();
    rill_generate_result result;
    rill_model* model = NULL;
    rill_session* session = NULL;
    char* chat = NULL;
    rill_status status;
    int exit_code = 1;
    int progress_line_open = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [PROMPT]\n", argv[0]);
        return 2;
    }

    model_params.progress = show_progress;
    model_params.progress_user_data = &progress_line_open;
    status = rill_model_load(argv[1], &model_params, &model, error, sizeof error);
    if (status != RILL_OK) {
        if (progress_line_open) fputc('\n', stderr);
        fprintf(stderr, "error: %s: %s\n", rill_status_string(status), error);
        return 1;
    }

    session_params.n_ctx = 256;
    session_params.seed = 0;
    status = rill_session_create(model, &session_params, &session, error, sizeof error);
    if (status != RILL_OK) {
        fprintf(stderr, "error: %s: %s\n", rill_status_string(status), error);
        goto done;
    }

    status = render_chat(model, prompt, &chat);
    if (status != RILL_OK) {
        fprintf(stderr, "error: %s: %s\n", rill_status_string(status), rill_model_error(model));
        goto done;
    }

    generate_params.temperature = 0.0f;
    generate_params.max_tokens = 32;
    status = rill_generate(session, chat, strlen(chat), &generate_params, print_text, NULL, &result);
    fputc('\n', stdout);
    if (status != RILL_OK) {
        fprintf(stderr, "error: %s: %s\n", rill_status_string(status), rill_session_error(session));
        goto done;
    }
    fprintf(stderr, "finish: %s, prompt tokens: %d, generated tokens: %d\n", finish_name(result.finish_reason),
            (int)result.prompt_tokens, (int)result.generated_tokens);
    exit_code = 0;

done:
    free(chat);
    rill_session_free(session); /* sessions before their model */
    rill_model_free(model);
    return exit_code;
}
