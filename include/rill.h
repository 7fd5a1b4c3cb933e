/* rill's C API: load a GGUF model, open sessions on it, generate text with streaming callbacks.
 *
 * C99. Every handle is opaque. Every call that can fail returns a rill_status; the message that goes
 * with it is kept in the handle the call was made on (rill_model_error, rill_session_error). Calls
 * that create a handle write their message into a caller's buffer instead, since there is no handle
 * yet. No C++ exception crosses this boundary.
 *
 * Threads: a model may be shared by any number of sessions on any threads. A session is used by one
 * thread at a time, except rill_session_cancel, which any thread may call at any time.
 *
 * Text is UTF-8 and passed with an explicit length; returned strings are NUL-terminated too.
 * Functions that fill a caller's buffer report the size they need in *needed (always written) and
 * return RILL_ERR_BUFFER_TOO_SMALL when capacity is less; call again with a larger buffer.
 */
#ifndef RILL_H
#define RILL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RILL_API_VERSION 2

typedef enum rill_status {
    RILL_OK = 0,
    RILL_ERR_INVALID_ARGUMENT = 1, /* a null handle or pointer, an out-of-range value */
    RILL_ERR_LOAD = 2,             /* the file is missing, unreadable, corrupt or unsupported */
    RILL_ERR_CANCELLED = 3,        /* a progress callback or rill_session_cancel stopped the call */
    RILL_ERR_CONTEXT_FULL = 4,     /* the tokens do not fit in the session's context */
    RILL_ERR_BUFFER_TOO_SMALL = 5, /* see *needed */
    RILL_ERR_TEMPLATE = 6,         /* the chat template failed to render */
    RILL_ERR_STATE = 7,            /* a saved state that does not fit this session */
    RILL_ERR_INTERNAL = 8          /* anything else, out of memory included */
} rill_status;

/* Types of the KV cache (llama.cpp's --cache-type-k / --cache-type-v). Q8_0 and Q4_0 are ggml's blocks of
 * 32: Q8_0 takes 34 bytes per 32 values (0.53x F16's memory, log-probs a few thousandths away), Q4_0
 * 18 bytes (0.28x, a larger loss). They need a head size that is a multiple of 32; a model with another
 * gets RILL_ERR_INVALID_ARGUMENT from rill_session_create with a message naming its head size. */
typedef enum rill_kv_type {
    RILL_KV_F16 = 0,
    RILL_KV_F32 = 1,
    RILL_KV_BF16 = 2, /* since API version 2 */
    RILL_KV_Q8_0 = 3, /* since API version 2 */
    RILL_KV_Q4_0 = 4  /* since API version 2 */
} rill_kv_type;
/* For rill_session_params.kv_type_v: the values' own type, t a rill_kv_type. */
#define RILL_KV_V(t) ((int32_t)(t) + 1)

typedef enum rill_finish_reason {
    RILL_FINISH_STOP = 0,      /* an end-of-generation token or a stop string */
    RILL_FINISH_LENGTH = 1,    /* max_tokens, or the context is full */
    RILL_FINISH_CANCELLED = 2  /* rill_session_cancel, or the text callback returned 0 */
} rill_finish_reason;

typedef struct rill_model rill_model;
typedef struct rill_session rill_session;

/* "0.1.0" */
const char* rill_version(void);
/* A short constant name for a status: "ok", "invalid argument", ... */
const char* rill_status_string(rill_status status);

/* ---- Models ---------------------------------------------------------------------------------- */

/* Called with the fraction loaded, 0 to 1. Return 0 to cancel the load. */
typedef int (*rill_progress_fn)(float fraction, void* user_data);

typedef struct rill_model_params {
    int use_mmap;   /* 1 (default): map the file; 0: read it into memory */
    int use_mlock;  /* 1: lock the weights in RAM; default 0 */
    rill_progress_fn progress; /* optional */
    void* progress_user_data;
} rill_model_params;

rill_model_params rill_model_default_params(void);

/* On failure *model is NULL and the reason is written to error (if not NULL), truncated to error_size. */
rill_status rill_model_load(const char* path, const rill_model_params* params, rill_model** model, char* error, size_t error_size);
void rill_model_free(rill_model* model);
/* The message of the calling thread's last failed call on this model ("" if none). Valid until that
 * thread's next call on the model. */
const char* rill_model_error(const rill_model* model);

/* These return 0 (or "") for a NULL model. */
int32_t rill_model_n_vocab(const rill_model* model);
int32_t rill_model_n_embd(const rill_model* model);
int32_t rill_model_n_ctx_train(const rill_model* model);
/* general.name, or the file name. */
const char* rill_model_name(const rill_model* model);

/* ---- Text and tokens ------------------------------------------------------------------------- */

/* add_special: BOS and the like as the model asks. parse_special: "<|im_end|>" in the text is a token. */
rill_status rill_tokenize(rill_model* model, const char* text, size_t length, int add_special, int parse_special,
                          int32_t* tokens, size_t capacity, size_t* needed);
/* Writes the text and a NUL; *needed counts the text's bytes without the NUL, so capacity must exceed
 * it. Control tokens are skipped, and SentencePiece's leading space is dropped at the start of the text
 * and after BOS, so tokenize then detokenize gives the original text. */
rill_status rill_detokenize(rill_model* model, const int32_t* tokens, size_t n_tokens, char* text, size_t capacity, size_t* needed);

typedef struct rill_chat_message {
    const char* role; /* "system", "user", "assistant" */
    const char* content;
} rill_chat_message;

/* Renders the conversation with the model's chat template (a plain "User:/Assistant:" transcript if
 * it has none), ending with the assistant's turn opened when add_generation_prompt. */
rill_status rill_apply_chat_template(rill_model* model, const rill_chat_message* messages, size_t n_messages,
                                     int add_generation_prompt, char* text, size_t capacity, size_t* needed);

/* ---- Sessions -------------------------------------------------------------------------------- */

typedef struct rill_session_params {
    int32_t n_ctx;     /* 0 (default): the model's training context, at most 4096 */
    int32_t n_threads; /* 0 (default): every core */
    rill_kv_type kv_type; /* keys and values; default RILL_KV_F16 */
    uint64_t seed;     /* default 0; sampling draws are reproducible for a seed */
    /* Appended in API version 2. The values' own type, making kv_type the keys' alone: 0 (what
     * zero-initialisation and rill_session_default_params give) keeps version 1's meaning, kv_type for
     * both; otherwise RILL_KV_V(t). E.g. 8-bit keys with half-float values:
     *     p.kv_type = RILL_KV_Q8_0; p.kv_type_v = RILL_KV_V(RILL_KV_F16);
     * The field grew the struct: source written for version 1 compiles unchanged, but a program built
     * against version 1's header must be rebuilt before it runs with this library. */
    int32_t kv_type_v;
} rill_session_params;

rill_session_params rill_session_default_params(void);

/* The session keeps a pointer to the model: free sessions before their model. */
rill_status rill_session_create(rill_model* model, const rill_session_params* params, rill_session** session, char* error,
                                size_t error_size);
void rill_session_free(rill_session* session);
const char* rill_session_error(const rill_session* session);

/* Tokens evaluated so far (the position the next token goes to), and the context size; 0 for NULL. */
int32_t rill_session_position(const rill_session* session);
int32_t rill_session_n_ctx(const rill_session* session);
/* Forgets everything evaluated. */
rill_status rill_session_reset(rill_session* session);

/* Appends tokens to the context. Afterwards rill_session_logits gives the last token's logits. */
rill_status rill_session_eval(rill_session* session, const int32_t* tokens, size_t n_tokens);
/* Makes the context hold exactly these tokens, evaluating only what it does not hold yet: the longest
 * prefix already in the context is kept (its keys and values reused) and the rest forgotten, as an app
 * that resends the whole conversation each turn wants. Afterwards rill_session_logits gives the last
 * token's logits; *reused (may be NULL) gets how many tokens were kept. After rill_session_restore the
 * session does not know which tokens its context holds, and the first call evaluates them all. */
rill_status rill_session_set_tokens(rill_session* session, const int32_t* tokens, size_t n_tokens, size_t* reused);
/* The tokens the context holds, in order; valid until the next call on the session. RILL_ERR_STATE
 * after rill_session_restore, until the context is reset or set again. */
rill_status rill_session_tokens(const rill_session* session, const int32_t** tokens, size_t* n_tokens);
/* The last evaluated token's logits, n_vocab of them; valid until the next call on the session.
 * RILL_ERR_INVALID_ARGUMENT before anything was evaluated. */
rill_status rill_session_logits(rill_session* session, const float** logits, size_t* n_vocab);

/* Called with each new piece of text: whole UTF-8 characters, never part of a stop string. Return 0
 * to stop generating. */
typedef int (*rill_text_fn)(const char* text, size_t length, void* user_data);

typedef struct rill_generate_params {
    int32_t max_tokens;      /* default 256 */
    float temperature;       /* default 0.8; 0: greedy */
    int32_t top_k;           /* default 40; 0: off */
    float top_p;             /* default 0.95; 1: off */
    float min_p;             /* default 0.05; 0: off */
    float repeat_penalty;    /* default 1 (off) */
    float presence_penalty;  /* default 0 */
    float frequency_penalty; /* default 0 */
    int32_t penalty_last_n;  /* default 64: how many recent tokens the penalties look at */
    const char* const* stop; /* stop strings; generation ends before the first one, which is not shown */
    size_t n_stop;
    /* Constrained output (at most one of the two; NULL: free text). The text follows the grammar and
     * ends, with RILL_FINISH_STOP, where the grammar allows nothing more. An invalid grammar or an
     * unsupported schema keyword gives RILL_ERR_INVALID_ARGUMENT naming what is wrong. */
    const char* grammar;     /* GBNF, llama.cpp's grammar format, start rule `root` */
    const char* json_schema; /* a JSON Schema (as JSON text): the output is JSON that validates against it */
    /* 0 (default): the prompt is appended to the context. 1: the prompt is the whole conversation so
     * far (tokenized with BOS): the context keeps the longest prefix it shares with it and evaluates
     * only the rest, as rill_session_set_tokens does; result->cached_tokens says how many were kept. */
    int32_t reuse_prefix;
} rill_generate_params;

typedef struct rill_generate_result {
    int32_t prompt_tokens;
    int32_t generated_tokens;
    rill_finish_reason finish_reason;
    double prefill_ms; /* evaluating the prompt */
    double decode_ms;  /* the generated tokens after the first */
    int32_t cached_tokens; /* prompt tokens whose keys and values the context already held (reuse_prefix) */
} rill_generate_result;

rill_generate_params rill_generate_default_params(void);

/* Appends the prompt to the session's context (tokenized with special tokens parsed, and with BOS if
 * the context is empty), then samples tokens with the session's seeded sampler, streaming text to
 * on_text. Every token whose text was shown ends up in the context, so a later call continues after
 * it; an empty prompt continues from where the context ends. A cancelled generation (also during the
 * prompt) returns RILL_OK with finish_reason RILL_FINISH_CANCELLED and keeps what was evaluated in
 * the context. A prompt that does not fit gives RILL_ERR_CONTEXT_FULL and changes nothing. result may
 * be NULL. */
rill_status rill_generate(rill_session* session, const char* prompt, size_t prompt_length, const rill_generate_params* params,
                          rill_text_fn on_text, void* user_data, rill_generate_result* result);

/* Asks the session's running (or next) rill_generate or rill_session_eval to stop at its next token.
 * Safe from any thread. */
void rill_session_cancel(rill_session* session);

/* A sentence embedding of the text: the final hidden states, mean-pooled and scaled to unit length,
 * n_embd floats. Uses the session's context as scratch and leaves it reset. */
rill_status rill_embed(rill_session* session, const char* text, size_t length, float* embedding, size_t capacity, size_t* needed);

/* The session's context (keys, values, position, last logits) as bytes, to restore later into a
 * session of the same model and KV type with at least this context. */
rill_status rill_session_save(rill_session* session, void* buffer, size_t capacity, size_t* needed);
rill_status rill_session_restore(rill_session* session, const void* buffer, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* RILL_H */
