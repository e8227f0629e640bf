/*
 * spillway.h — the public C API of Spillway, an inference engine for Gemma
 * models that plans where every byte lives (accelerator, pinned host, host,
 * disk) before anything is allocated.
 *
 * Overview
 *   sw_model    an opened, validated model: a GGUF file or a Hugging Face
 *               folder (config.json + safetensors). Weights stay
 *               memory-mapped; nothing but norm vectors is copied at open.
 *   sw_plan     where every layer, the KV cache and the LM head live
 *               (device, pinned host, host, disk), with predicted memory
 *               per tier and speed; made without loading any weight.
 *   sw_engine   a plan executed: its buffers allocated, weights loaded.
 *   sw_session  one sequence on an engine: its KV rows and position.
 *   sw_sampler  turns logits into a token id (greedy or sampled).
 *   sw_scheduler  many requests over one engine (continuous batching):
 *               each step one forward over all of them, each request
 *               with its own sampling, limits and stop strings.
 *   sw_chat_format  a conversation as the model's chat turns.
 *   devices     what accelerators the build can see (sw_devices_query).
 *   doctor      the machine's measured rates the planner uses, cached
 *               (sw_doctor_run, sw_doctor_save, sw_doctor_load).
 *   errors      every fallible call returns sw_status; on failure one
 *               message for the calling thread is kept by sw_last_error().
 *
 * Example: streaming a greedy continuation (examples/generate.c is this,
 * complete, and is built against the installed library and run by the
 * tests)
 *   sw_model *m;  sw_engine *e;  sw_scheduler *q;  sw_request *r;
 *   if (sw_model_open(path, &m) != SW_OK) { puts(sw_last_error()); return 1; }
 *   sw_plan_options po = sw_plan_options_default();     (cpu, sim, pjrt, cuda)
 *   sw_engine_launch(m, &po, NULL, &e);                  (plan, then load)
 *   int32_t ids[64];  size_t n;
 *   sw_tokenize(m, "Hello", 5, SW_TOK_ADD_BOS, ids, 64, &n);
 *   sw_scheduler_create(e, m, &q);                       (takes e's sequences)
 *   sw_request_options ro = sw_request_options_default();
 *   ro.sampling.temp = 0;  ro.n_predict = 16;
 *   ro.on_token = print_piece;                           (each token's text)
 *   sw_scheduler_submit(q, ids, n, &ro, &r);
 *   for (uint32_t k = 1; k > 0;) sw_scheduler_step(q, &k);  (0: all ended)
 *   sw_request_release(q, r);  sw_scheduler_destroy(q);
 *   sw_engine_destroy(e);  sw_model_close(m);
 * Without a scheduler, a session evaluates tokens directly
 * (sw_session_eval) and a sampler picks from its logits.
 *
 * Lifetimes: a session or scheduler must be destroyed before its engine,
 * an engine before its model (an engine reads the model's mapped weights;
 * sessions use their engine's buffers). Plans are copied by the engine.
 * Thread-safety: a handle may be used from one thread at a time, except a
 * scheduler, which locks itself (see its section). Sessions of one engine
 * share its scratch buffers: evaluate them from one thread (or serialise
 * the calls), or batch them in one sw_engine_eval_batch. Distinct engines,
 * and models, are independent. sw_last_error() is per thread.
 * Ownership: whoever opens/creates closes/destroys; closers accept NULL.
 * Strings returned inside structs are borrowed from the handle and stay
 * valid until it is closed.
 */
#ifndef SPILLWAY_H
#define SPILLWAY_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "spillway_experts.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SW_VERSION_STRING "0.1.0"

/* SW_API marks every public function: the only symbols libspillway.so
 * exports (the library is built with hidden visibility; its internals
 * stay private, so it links beside llama.cpp's ggml, whose gguf_* names
 * Spillway's internals share). */
#if defined(__GNUC__) || defined(__clang__)
#define SW_API __attribute__((visibility("default")))
#else
#define SW_API
#endif

/* The library's version ("0.1.0"), which may differ from the
 * SW_VERSION_STRING a program was compiled against. */
SW_API const char *sw_version(void);

/* ---- errors ------------------------------------------------------------ */

typedef enum sw_status {
    SW_OK = 0,
    SW_ERR_IO,          /* a file could not be opened, read or mapped */
    SW_ERR_FORMAT,      /* a model file is malformed (message names offset) */
    SW_ERR_UNSUPPORTED, /* valid input that this build cannot handle */
    SW_ERR_NO_DEVICE,   /* no accelerator is visible (never "out of memory") */
    SW_ERR_OOM_DEVICE,  /* accelerator memory is short */
    SW_ERR_OOM_HOST,    /* host memory is short */
    SW_ERR_ARG,         /* a caller-supplied argument is invalid */
    SW_ERR_DEVICE       /* the accelerator runtime reported an error */
} sw_status;

/* The calling thread's message for its most recent failure ("" if none).
 * Valid until the thread's next failing call. */
SW_API const char *sw_last_error(void);

/* A short fixed name for a status ("bad model file"). Never NULL. */
SW_API const char *sw_status_name(sw_status status);

/* ---- models -------------------------------------------------------------- */

typedef struct sw_model sw_model;

/* Opens and validates the model at `path`: a GGUF v2/v3 file, or a Hugging
 * Face folder (config.json; model.safetensors or shards listed in
 * model.safetensors.index.json; tokenizer.json when present) for Gemma,
 * Gemma 2, Gemma 3 and the text part of Gemma 3's multimodal checkpoints,
 * translated into the same metadata keys and tensor names. Every count,
 * length, offset and type is checked against the file before use; a bad
 * file gives SW_ERR_FORMAT with a message naming the problem and where.
 * On success *out owns read-only mappings of the files.
 * Errors: SW_ERR_ARG, SW_ERR_IO, SW_ERR_FORMAT, SW_ERR_UNSUPPORTED
 * (architecture, dtype or tokenizer kind), SW_ERR_OOM_HOST. */
SW_API sw_status sw_model_open(const char *path, sw_model **out);

/* Unmaps and frees. Accepts NULL. */
SW_API void sw_model_close(sw_model *model);

/* 1 when the model looks instruction-tuned (tuned to follow chat turns):
 * general.finetune or general.name names the tune ("it", "instruct",
 * "chat"), or the file carries a chat template; else 0 (a base model:
 * chat answers continue the text). */
SW_API int sw_model_instruction_tuned(const sw_model *model);

/* 1 when model is a Gemma 4 assistant (Gemma4AssistantForCausalLM: a
 * drafter beside its target, sw_draft_options' assistant), else 0. */
SW_API int sw_model_is_assistant(const sw_model *model);

/* The device bytes the assistant takes beside its target's plan for
 * n_seq sequences (its weights and activations): what the target's plan
 * reserves (sw_plan_options.draft_device_bytes). Errors: SW_ERR_ARG (not
 * an assistant), SW_ERR_FORMAT, SW_ERR_OOM_HOST. */
SW_API sw_status sw_assistant_device_bytes(const sw_model *assistant, uint32_t n_seq,
                                           uint64_t *bytes);

/* File name of the default model (real Gemma 3 270M, Q4_K_M). */
#define SW_DEFAULT_MODEL_FILE "gemma-3-270m-q4_k_m.gguf"

/* Where `spillway fetch` puts the default model and where -m points when
 * not given: ${XDG_CACHE_HOME:-$HOME/.cache}/spillway/SW_DEFAULT_MODEL_FILE.
 * Errors: SW_ERR_ARG (neither variable set, or buf too small). */
SW_API sw_status sw_default_model_path(char *buf, size_t cap);

/* The directory part of the above (the cache folder). */
SW_API sw_status sw_cache_dir(char *buf, size_t cap);

typedef struct sw_model_summary {
    const char *path;            /* as given to sw_model_open */
    const char *container;       /* "gguf", or "safetensors" for an HF folder */
    uint32_t container_version;  /* GGUF version: 2 or 3; 0 for an HF folder */
    uint64_t file_bytes;
    const char *architecture;    /* general.architecture, "" if absent */
    const char *name;            /* general.name, "" if absent */
    uint32_t file_type;          /* general.file_type, UINT32_MAX if absent */
    uint64_t n_meta;             /* metadata key/value pairs */
    uint64_t n_tensors;
    uint64_t n_params;           /* sum of tensor element counts */
    uint64_t tensor_bytes;       /* sum of tensor data sizes */
    /* Architecture sizes from ARCH.* keys; 0 when absent. */
    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, n_embd_head, n_ctx_train;
    uint32_t sliding_window;
    const char *tokenizer_model; /* tokenizer.ggml.model, "" if absent */
    uint64_t n_vocab;            /* entries in tokenizer.ggml.tokens, 0 if absent */
} sw_model_summary;

/* Name of a general.file_type value ("Q4_K_M", "BF16", "not stated"). */
SW_API const char *sw_file_type_name(uint32_t file_type);

/* Fills *out. Strings are borrowed from `model`. Errors: SW_ERR_ARG. */
SW_API sw_status sw_model_get_summary(const sw_model *model, sw_model_summary *out);

typedef struct sw_tensor_info {
    const char *name;
    const char *type_name;   /* "Q4_K", "F32", ... */
    uint32_t type;           /* ggml type id */
    uint32_t n_dims;         /* 1..4 */
    uint64_t ne[4];          /* ne[0] is the contiguous dimension; unused = 1 */
    uint64_t n_elements;
    uint64_t n_bytes;
    uint64_t file_offset;    /* absolute byte offset of the data in the file */
} sw_tensor_info;

SW_API size_t sw_model_tensor_count(const sw_model *model);

/* Describes tensor `index` (file order). Errors: SW_ERR_ARG (out of range). */
SW_API sw_status sw_model_tensor_at(const sw_model *model, size_t index, sw_tensor_info *out);

typedef struct sw_meta_info {
    const char *key;
    const char *type_name;   /* "u32", "string", "array" ... */
    const char *elem_type_name; /* arrays: element type name; else "" */
    uint64_t n_items;        /* arrays: element count; else 1 */
} sw_meta_info;

SW_API size_t sw_model_meta_count(const sw_model *model);

/* Describes metadata entry `index` (file order). Errors: SW_ERR_ARG. */
SW_API sw_status sw_model_meta_at(const sw_model *model, size_t index, sw_meta_info *out);

/* Writes metadata entry `index`'s value as JSON text into buf (always
 * NUL-terminated when cap > 0). Arrays longer than max_items are cut and
 * end with the string "...". Returns SW_ERR_ARG on a bad index/buffer; text
 * that does not fit is truncated at a character boundary (not an error). */
SW_API sw_status sw_model_meta_json(const sw_model *model, size_t index, size_t max_items,
                                    char *buf, size_t cap);

/* Dequantizes the whole tensor `index` to f32 into dst (n_elements floats).
 * Errors: SW_ERR_ARG, SW_ERR_UNSUPPORTED ("unsupported tensor type N in
 * tensor X"). */
SW_API sw_status sw_model_tensor_to_f32(const sw_model *model, size_t index, float *dst);

/* ---- tokenizer ------------------------------------------------------------ */

#define SW_TOK_ADD_BOS 1u        /* prepend BOS when the model asks for it */
#define SW_TOK_PARSE_SPECIAL 2u  /* recognise control tokens in the text */

/* An upper bound on the ids sw_tokenize produces for `len` bytes. */
#define SW_TOKENIZE_MAX_IDS(len) (3 * (size_t)(len) + 2)

/* Encodes `len` bytes of text (any bytes; invalid UTF-8 is byte-encoded)
 * into token ids using the model's own vocabulary. Writes at most `cap`
 * ids; *n_ids receives the full count (retry with a larger buffer when it
 * exceeds cap). SW_TOKENIZE_MAX_IDS(len) ids always suffice (len + 2 for
 * valid UTF-8; a broken lead byte can swallow a following U+2581 whose
 * three bytes then fall back to byte tokens). O(len log len).
 * Errors: SW_ERR_ARG, SW_ERR_UNSUPPORTED (no or unknown tokenizer),
 * SW_ERR_FORMAT (a vocabulary that would break that bound). */
SW_API sw_status sw_tokenize(const sw_model *model, const char *text, size_t len,
                             unsigned flags, int32_t *ids, size_t cap, size_t *n_ids);

/* The bytes token `id` stands for when printed: U+2581 becomes a space,
 * byte tokens <0xXX> their byte, control tokens nothing. Writes at most cap
 * bytes (no NUL); *len receives the full length.
 * Errors: SW_ERR_ARG (id out of range), SW_ERR_UNSUPPORTED. */
SW_API sw_status sw_token_to_piece(const sw_model *model, int32_t id, char *buf, size_t cap,
                                   size_t *len);

/* Decodes ids to text (the inverse of sw_tokenize: pieces concatenated,
 * byte tokens reassembled, control tokens skipped). Writes at most cap
 * bytes; *len receives the full length. Errors: SW_ERR_ARG,
 * SW_ERR_UNSUPPORTED (no vocabulary). */
SW_API sw_status sw_detokenize(const sw_model *model, const int32_t *ids, size_t n, char *buf,
                               size_t cap, size_t *len);

/* The vocabulary entry as stored ("▁the", "<0x0A>", "<start_of_turn>"), or
 * NULL when id is out of range. Borrowed from the model. */
SW_API const char *sw_token_text(const sw_model *model, int32_t id);

/* Number of tokens in the vocabulary (0 without a tokenizer). */
SW_API size_t sw_vocab_size(const sw_model *model);

/* Special token ids (-1 when the model has none). */
typedef struct sw_special_tokens {
    int32_t bos, eos, unk, pad;
    int32_t start_of_turn, end_of_turn;
    int add_bos;                 /* the model asks for BOS */
} sw_special_tokens;
SW_API sw_status sw_model_special_tokens(const sw_model *model, sw_special_tokens *out);

/* ---- engines, sessions and batches ----------------------------------------
 *
 * An engine executes one plan (see "plans" below) exactly: it allocates
 * what the plan lists, where it lists it, and nothing else, then runs
 * forwards over batches of tokens. A session is one sequence: its KV cache
 * rows and its position; an engine serves up to the plan's n_seq sessions
 * at once, and one forward may mix prefill chunks and decode steps of
 * several sessions (each streamed layer crosses the link once per forward,
 * whatever the batch holds).
 *
 *   sw_plan_options po = sw_plan_options_default();
 *   po.backend = "sim"; po.device_mem_bytes = 64ull << 20; po.n_seq = 4;
 *   sw_engine *e = NULL;
 *   if (sw_engine_launch(model, &po, NULL, &e) != SW_OK)      (plan + load)
 *       fprintf(stderr, "%s\n", sw_last_error());
 *   sw_session *a, *b;  sw_session_create(e, &a);  sw_session_create(e, &b);
 *   sw_session_eval(a, prompt, n, logits, 0);       (one session alone)
 *   sw_batch_item items[2] = {{a, tok_a, 1}, {b, tok_b, 1}};
 *   sw_engine_eval_batch(e, items, 2, logits2);      (both in one forward)
 */

typedef struct sw_engine sw_engine;
typedef struct sw_session sw_session;

/* Progress of long work: done of total (tokens, or bytes when loading). */
typedef void (*sw_progress_fn)(void *user, size_t done, size_t total);

typedef struct sw_engine_options {
    sw_progress_fn load_progress; /* weight loading progress (bytes) */
    void *load_progress_user;
    const char *expert_trace;     /* a file for each forward's expert routing, a JSON
                                   * line per (forward, layer, token); NULL: none */
    uint32_t device;              /* which of the backend's devices the engine runs
                                   * on: cuda:N, the PJRT client's Nth (sim: a label,
                                   * each engine its own card); 0: the first. The
                                   * plan's budget is the caller's to fit it. A
                                   * split names its own (sw_engine_launch_split) */
} sw_engine_options;

SW_API sw_engine_options sw_engine_options_default(void);

/* Which allocation failed when an engine could not be made, so the caller
 * can plan again with what the machine really had. */
typedef struct sw_alloc_failure {
    char tier[16];           /* "device", "pinned" or "host"; "" when none failed */
    char purpose[48];        /* the plan buffer: "ring slot 1", "kv layer 5" */
    uint64_t bytes;          /* what was asked for */
    uint64_t obtained_bytes; /* that tier's bytes allocated before the refusal */
} sw_alloc_failure;

typedef struct sw_plan sw_plan;
typedef struct sw_plan_options sw_plan_options;

/* Executes `plan` for `model`: creates its backend (by name, as the plan
 * says), allocates exactly the plan's buffers, loads resident weights
 * (progress through opt->load_progress), converts weights (--weights) and
 * fills the pinned copy of streamed layers, and starts the ring. The plan
 * is copied; it must have been made for this model (SW_ERR_ARG otherwise)
 * and from a file (a catalog plan cannot run). `model` must outlive the
 * engine. Never re-plans: when a buffer cannot be had, fails with
 * SW_ERR_OOM_DEVICE / SW_ERR_OOM_HOST and, when failure is not NULL,
 * says which buffer, how many bytes and on which tier.
 * Errors: those, SW_ERR_ARG, SW_ERR_UNSUPPORTED (a backend this build
 * cannot run, a tensor type), SW_ERR_FORMAT, SW_ERR_NO_DEVICE,
 * SW_ERR_DEVICE. */
SW_API sw_status sw_engine_create(const sw_model *model, const sw_plan *plan,
                                  const sw_engine_options *opt, sw_engine **out,
                                  sw_alloc_failure *failure);

/* Plans and creates: sw_plan_create + sw_engine_create, and when the
 * device refuses memory the plan counted on (another process took it),
 * plans again with the device budget cut to what could be had, at most 3
 * times; each retry is said in sw_engine_notes(). On failure the message
 * is the planner's (what is short, by how much, what would fit). opt may
 * be NULL. Errors: as sw_plan_create and sw_engine_create. */
SW_API sw_status sw_engine_launch(const sw_model *model, const sw_plan_options *plan_opt,
                                  const sw_engine_options *opt, sw_engine **out);

/* One plan over several devices (a pipeline; `--device-mem A,B,...`): the
 * layers in contiguous ranges, one per device, each device with the budget
 * device_mem_bytes[d] (sizes; required), device_ids[d] the backend's
 * device it runs on (NULL: 0, 1, ...), every other option as plan_opt's;
 * then an engine per device, each executing its range's plan exactly, the
 * first driving the rest. The engine returned is used as any other;
 * sw_engine_n_devices and sw_engine_device_report say what each device
 * did, sw_engine_print_plan prints the split. No re-plan on a refusal.
 * An expert cache (plan_opt->experts) is sized on each device that keeps
 * experts on the host. Errors: as sw_engine_launch, SW_ERR_ARG (1 or more
 * than 8 devices, a device named twice, a drafter's bytes or a fraction in
 * plan_opt), SW_ERR_OOM_DEVICE naming the device that is short. */
SW_API sw_status sw_engine_launch_split(const sw_model *model, const sw_plan_options *plan_opt,
                                        const uint64_t *device_mem_bytes,
                                        const uint32_t *device_ids, size_t n_devices,
                                        const sw_engine_options *opt, sw_engine **out);

SW_API void sw_engine_destroy(sw_engine *engine);

/* The plan being executed (borrowed; valid while the engine lives). */
SW_API const sw_plan *sw_engine_plan(const sw_engine *engine);

/* The context length, vocabulary size, sessions and tokens per forward
 * the engine was planned for. */
SW_API uint32_t sw_engine_n_ctx(const sw_engine *engine);
SW_API uint32_t sw_engine_n_vocab(const sw_engine *engine);
SW_API uint32_t sw_engine_n_seq(const sw_engine *engine);
SW_API uint32_t sw_engine_n_batch(const sw_engine *engine);   /* prefill chunk per session */
SW_API uint32_t sw_engine_max_tokens(const sw_engine *engine); /* tokens in one forward */

/* What the engine did and what its plan predicted: --report. */
typedef struct sw_report {
           uint64_t device_budget_bytes;   /* 0 without a device */
           uint64_t plan_device_bytes;     /* the plan's device total */
           uint64_t peak_device_bytes;     /* accounted high-water mark */
           uint64_t peak_host_rss_bytes;   /* process peak resident set */
           uint64_t bytes_to_device;       /* weights streamed + activations */
           double copy_busy_s;             /* time the link was busy */
           double copy_stall_s;            /* compute waiting for copies */
           uint64_t n_prefill_tokens, n_decode_tokens;
    double prefill_tokens_per_s, decode_tokens_per_s;   /* measured */
    double pred_prefill_tokens_per_s, pred_decode_tokens_per_s;
    uint32_t n_replans;             /* device refused memory; re-planned */
    uint64_t plan_pinned_bytes;     /* the plan's pinned tier */
    uint64_t pinned_bytes;          /* allocated: streamed layers' copy, expert staging */
    int pinned_locked;              /* 1: page-locked; 0: refused (sw_engine_notes) or none */
    uint64_t converted_bytes;       /* host bytes of --weights conversions (+ staging) */
    uint64_t n_forwards;            /* forward passes run */
    uint64_t peak_device_driver_bytes; /* cuda: the driver's peak (cudaMemGetInfo,
                                     * granularity included); 0 elsewhere */
    sw_expert_report experts;       /* the expert cache (spillway_experts.h) */
} sw_report;

SW_API sw_status sw_engine_report(const sw_engine *engine, sw_report *out);

/* Prints the engine's plan (table, or JSON when json != 0); a split's
 * engine prints the split (`spillway plan --device-mem A,B` prints the
 * same). */
SW_API sw_status sw_engine_print_plan(const sw_engine *engine, FILE *out, int json);

/* The same text into buf, as sw_plan_format. */
SW_API sw_status sw_engine_format_plan(const sw_engine *engine, int json, char *buf, size_t cap,
                                       size_t *len);

/* One device of an engine: what `--report` says per device. */
typedef struct sw_engine_device {
    uint32_t device;                   /* the backend's device number (cuda:N) */
    uint32_t first_layer, end_layer;   /* the layers it holds: [first, end) */
    uint64_t budget_bytes, plan_bytes, peak_bytes;
    uint64_t bytes_to_device;          /* over the link from the host */
    uint64_t peer_bytes;               /* device to device from the one before */
    int peer_in;                       /* 1: its input comes device to device */
    double busy_s;                     /* seconds its forwards computed */
} sw_engine_device;

/* Devices the engine drives: 0 on the cpu backend, 1 for one device, N for
 * a split. Device d's figures: SW_ERR_ARG when there is no device d. */
SW_API uint32_t sw_engine_n_devices(const sw_engine *engine);
SW_API sw_status sw_engine_device_report(const sw_engine *engine, uint32_t d,
                                         sw_engine_device *out);

/* Human-readable notes of what happened at load (re-plans, a refused page
 * lock); "" if none. */
SW_API const char *sw_engine_notes(const sw_engine *engine);

/* A sequence: takes one of the engine's n_seq KV slots, at position 0.
 * Errors: SW_ERR_ARG (every slot taken: the message says -np), SW_ERR_OOM_HOST. */
SW_API sw_status sw_session_create(sw_engine *engine, sw_session **out);
/* Frees the slot. Accepts NULL. */
SW_API void sw_session_destroy(sw_session *session);

/* Progress of a long evaluation (done of total tokens). */
SW_API void sw_session_set_progress(sw_session *session, sw_progress_fn fn, void *user);

/* Appends n tokens to the session alone (in prefill chunks of n_batch) and
 * computes logits: none when logits is NULL; the last token's (n_vocab
 * floats) when all_logits is 0; every token's (n * n_vocab floats) when 1.
 * Errors: SW_ERR_ARG (context full: message says by how much; bad id). */
SW_API sw_status sw_session_eval(sw_session *session, const int32_t *ids, size_t n,
                                 float *logits, int all_logits);

/* Tokens evaluated so far (the next position). */
SW_API uint32_t sw_session_pos(const sw_session *session);

/* Forgets everything from position pos on (pos <= current; 0 always works).
 * Errors: SW_ERR_ARG (with sliding-window layers, at most n_batch tokens
 * can be dropped unless pos is 0). */
SW_API sw_status sw_session_truncate(sw_session *session, uint32_t pos);

/* One token of a batch: appended to `session` at its next position (items
 * of one session take consecutive positions in item order); logits != 0
 * asks for this token's logits. */
typedef struct sw_batch_item {
    sw_session *session;
    int32_t token;
    int logits;
} sw_batch_item;

/* One forward over n items of any of the engine's sessions (at most
 * sw_engine_max_tokens() items, at most n_batch per session). logits gets
 * one row of n_vocab floats per item that asked, in item order (it may be
 * NULL when none asked). Per-session causal and sliding-window masks: a
 * token sees only its own sequence. Results are bit-identical to
 * evaluating each session alone. Errors: SW_ERR_ARG (a foreign session,
 * too many tokens, a full context, a bad id: nothing is evaluated),
 * backend errors. */
SW_API sw_status sw_engine_eval_batch(sw_engine *engine, const sw_batch_item *items, size_t n,
                                      float *logits);

/* ---- sampling -------------------------------------------------------------- */

typedef struct sw_sampler_options {
    float temp;          /* 0: greedy (argmax; lowest id wins ties) */
    int top_k;           /* 0: off */
    float top_p;         /* 1: off */
    float min_p;         /* 0: off */
    uint64_t seed;       /* same seed + same logits = same choice */
} sw_sampler_options;

SW_API sw_sampler_options sw_sampler_options_default(void);

typedef struct sw_sampler sw_sampler;
/* Errors: SW_ERR_ARG (temp < 0 or infinite, top_p outside (0,1], min_p outside
 * [0,1), top_k < 0, n_vocab 0),
 * SW_ERR_OOM_HOST. n_vocab sizes the scratch. */
SW_API sw_status sw_sampler_create(const sw_sampler_options *opt, uint32_t n_vocab,
                                   sw_sampler **out);
SW_API void sw_sampler_destroy(sw_sampler *sampler);
/* Picks the next token from logits (n_vocab floats; not modified). */
SW_API int32_t sw_sampler_sample(sw_sampler *sampler, const float *logits);

/* ---- chat turns ------------------------------------------------------------
 *
 * A conversation as the model's chat markup, chosen by its vocabulary:
 * Gemma 1-3's <start_of_turn>role\n...<end_of_turn>\n, where a system
 * text is folded into the next user turn followed by a blank line (they
 * have no system role), and Gemma 4's <|turn>role\n...<turn|>\n with a
 * system turn of its own. Tokenize the text with SW_TOK_PARSE_SPECIAL (and
 * SW_TOK_ADD_BOS at the start of a conversation). */
typedef struct sw_chat_message {
    const char *role;        /* "system", "user", "assistant" (or "model") */
    const char *content;
    size_t len;              /* bytes of content */
} sw_chat_message;

enum {
    SW_CHAT_OPEN_REPLY = 1u << 0,   /* end by opening the model's reply */
    SW_CHAT_CLOSE_REPLY = 1u << 1   /* begin by closing a model reply left open
                                       (the next turn of a live conversation) */
};

/* The n messages' markup into buf: at most cap - 1 bytes and a NUL
 * (nothing when cap is 0); *len gets the full length. A system message
 * with no user message after it becomes a user turn (Gemma 1-3).
 * Errors: SW_ERR_ARG (a role other than the above, NULL content). */
SW_API sw_status sw_chat_format(const sw_model *model, const sw_chat_message *msgs, size_t n,
                                unsigned flags, char *buf, size_t cap, size_t *len);

/* ---- scheduling many requests (continuous batching) -----------------------
 *
 * What `spillway batch` and `serve` run on: requests (prompt tokens, their
 * own sampling, n_predict, stop strings) queue on a scheduler, which owns
 * all of an engine's sequences. Each sw_scheduler_step() is one forward:
 * one decode token for every running request, then prompt chunks (at most
 * n_batch tokens per request, the forward's capacity in all) of requests
 * in prefill, oldest first; a request that ends frees its sequence for the
 * oldest queued one at the next step. A request ends at an end-of-turn or
 * end-of-sequence token (not part of its text), after n_predict output
 * tokens, when its sequence's context is full, or when its text reaches
 * one of its stop strings (the text is cut where the first one starts).
 *
 * Threads: every call may come from any thread: the scheduler locks
 * itself, and a step leaves the lock while its forward runs, so submits,
 * cancels and reads go on meanwhile. Steps must not overlap (one stepping
 * thread). on_token runs inside the step, under the lock: it must not
 * call the scheduler.
 * Lifetime: create the scheduler while none of the engine's sessions
 * exist; destroy it before the engine. A request lives until
 * sw_request_release(), also after it ends (its text stays readable). */
typedef struct sw_scheduler sw_scheduler;
typedef struct sw_request sw_request;

typedef enum sw_request_state {
    SW_REQ_QUEUED,     /* waiting for a free sequence */
    SW_REQ_PREFILL,    /* its prompt is being evaluated */
    SW_REQ_DECODE,     /* generating */
    SW_REQ_DONE        /* ended: sw_request_info.finish says why */
} sw_request_state;

typedef enum sw_finish {
    SW_FINISH_NONE = 0,   /* not ended */
    SW_FINISH_EOG,        /* an end-of-turn or end-of-sequence token */
    SW_FINISH_LIMIT,      /* n_predict output tokens */
    SW_FINISH_CONTEXT,    /* the sequence's context is full */
    SW_FINISH_STOP,       /* a stop string (cut from the text) */
    SW_FINISH_CANCELLED,  /* sw_request_cancel(), or sw_scheduler_end_all() */
    SW_FINISH_ERROR       /* its forward failed, or it could not start */
} sw_finish;

/* "eog", "limit", "context", "stop", "cancelled", "error" ("" for NONE). */
SW_API const char *sw_finish_name(sw_finish finish);

/* One output token: its id and its text piece (len bytes, not
 * NUL-terminated), as sampled: before a stop string cuts the text. */
typedef void (*sw_token_fn)(void *user, sw_request *request, int32_t id, const char *piece,
                            size_t len);

typedef struct sw_request_options {
    sw_sampler_options sampling;
    long n_predict;               /* output tokens at most; -1: no limit */
    const char *const *stop;      /* n_stop stop strings, none empty (copied) */
    size_t n_stop;
    sw_token_fn on_token;         /* NULL: none */
    void *user;                   /* passed to on_token */
    int keep_sequence;            /* 1: when it ends, its sequence (KV rows) stays
                                   * for sw_scheduler_continue until released */
    int draft_max;                /* drafts per verify (sw_scheduler_set_draft):
                                   * -1 the scheduler's, 0 none, up to SW_DRAFT_MAX */
    int logprobs;                 /* -1: none; 0..SW_LOGPROBS_MAX: each output token's
                                   * log-probability and this many alternatives
                                   * (sw_request_logprobs) */
    const struct sw_grammar *grammar; /* NULL; else output kept to it (spillway_grammar.h) */
} sw_request_options;

#define SW_LOGPROBS_MAX 20

/* One output token's log-probability: log-softmax of the model's logits
 * row that produced it (as `spillway perplexity` scores text: before
 * temperature and the other sampling settings), and the n_top most likely
 * tokens of that row, the likeliest first. */
typedef struct sw_token_logprob {
    int32_t id;
    float logprob;
    uint32_t text_offset;         /* where its piece starts in the request's text */
    uint32_t n_top;
    int32_t top_id[SW_LOGPROBS_MAX];
    float top_logprob[SW_LOGPROBS_MAX];
} sw_token_logprob;

/* Default sampling, n_predict -1, no stop strings, no callback, the
 * scheduler's drafts, no logprobs. */
SW_API sw_request_options sw_request_options_default(void);

typedef struct sw_request_info {
    sw_request_state state;
    sw_finish finish;
    size_t n_prompt, n_fed;       /* prompt tokens, and those evaluated */
    size_t n_generated;           /* output tokens (the end token not counted) */
    size_t text_len;              /* bytes of text so far (sw_request_text) */
    /* seconds on a monotonic clock; 0 until it happens: queued, given a
     * sequence, first token sampled, ended */
    double t_submitted, t_started, t_first, t_end;
} sw_request_info;

typedef struct sw_scheduler_stats {
    size_t n_queued, n_running;
    uint64_t n_forwards;
    uint32_t last_forward_tokens;
    uint64_t prompt_tokens, generated_tokens;   /* evaluated / output, all requests */
    uint64_t decode_tokens;       /* tokens of forwards that were all decode ... */
    double decode_s;              /* ... and the time they took */
    /* KV rows held by running requests, of all sequences' contexts */
    uint64_t kv_used_tokens, kv_capacity_tokens;
    /* speculative decoding: verifies (a sequence's drafts in a forward),
     * drafts put in them, drafts the verifier kept, and tokens output by
     * them (kept drafts plus one each; fewer where a request ended
     * within a verify) */
    uint64_t verify_forwards, drafted_tokens, accepted_tokens, verify_tokens;
} sw_scheduler_stats;

/* Takes every sequence of engine (model: the engine's, for token pieces
 * and end tokens). Errors: SW_ERR_ARG (a session of the engine exists),
 * SW_ERR_OOM_HOST. */
SW_API sw_status sw_scheduler_create(sw_engine *engine, const sw_model *model,
                                     sw_scheduler **out);
/* Ends every request and frees the scheduler and every request not yet
 * released. Accepts NULL. */
SW_API void sw_scheduler_destroy(sw_scheduler *sched);

/* Queues the prompt ids (n of them: 1 to the engine's context; copied).
 * Errors: SW_ERR_ARG (an empty or overlong prompt, an id outside the
 * vocabulary, an empty stop string, bad sampling options),
 * SW_ERR_OOM_HOST. */
SW_API sw_status sw_scheduler_submit(sw_scheduler *sched, const int32_t *ids, size_t n,
                                     const sw_request_options *opt, sw_request **out);

/* Queues ids as the next turn of `prev`: a request that ended (not
 * cancelled or failed) with keep_sequence and is not yet released. They
 * go on its sequence after everything it holds (and after its last
 * sampled token, unless that was an end-of-turn or end-of-sequence token,
 * which the caller's next text closes), so only the new tokens are
 * evaluated, and run at the next step. prev keeps its text and info until
 * released. Errors: SW_ERR_ARG (prev cannot be continued, the tokens do
 * not fit its context: the message says how many it holds), as
 * sw_scheduler_submit otherwise. */
SW_API sw_status sw_scheduler_continue(sw_scheduler *sched, sw_request *prev,
                                       const int32_t *ids, size_t n,
                                       const sw_request_options *opt, sw_request **out);

/* One forward, as above; *n_tokens (may be NULL) gets its tokens: 0 when
 * no request is queued or running (nothing was done). A failed forward
 * ends the requests in it with SW_FINISH_ERROR and returns its error. */
SW_API sw_status sw_scheduler_step(sw_scheduler *sched, uint32_t *n_tokens);

/* Ends every queued and running request with `finish` (CANCELLED or
 * ERROR): on shutdown, or after a failed forward. */
SW_API void sw_scheduler_end_all(sw_scheduler *sched, sw_finish finish);

SW_API void sw_scheduler_get_stats(sw_scheduler *sched, sw_scheduler_stats *out);

/* ---- speculative decoding ------------------------------------------------
 *
 * A decoding request may put k drafts behind its last token: the target
 * evaluates all k+1 in its one forward (each streamed layer crosses the
 * link once for them all), keeps the drafts its own sampling agrees with
 * plus one token of its own, and rewinds its sequence over the rest. With
 * greedy sampling the output is exactly the output without drafts; with
 * temperature, rejection sampling leaves its distribution unchanged.
 * Drafts come from the sequence's own earlier n-grams (prompt lookup: no
 * second model; it pays where the output quotes its input) or from a
 * draft model: a second engine over a smaller model with the target's
 * vocabulary, with its own KV, generating k tokens per verify. */
#define SW_DRAFT_MAX 16

typedef struct sw_draft_options {
    int ngram;                    /* 1: n-gram drafts */
    uint32_t ngram_min, ngram_max;/* suffix lengths matched, longest first */
    sw_engine *engine;            /* a draft model's engine (NULL: none): as many
                                   * sequences as the target's and a forward size
                                   * of at least its; the scheduler takes them */
    const sw_model *model;        /* that engine's model */
    const sw_model *assistant;    /* a Gemma 4 assistant for the target, drafting
                                   * over the target's own caches (NULL: none) */
    uint32_t draft_max;           /* drafts per verify (1..SW_DRAFT_MAX); 0: the
                                   * cost model's best for the target's plan and
                                   * the drafter's cost, at SW_DRAFT_ACCEPTANCE */
} sw_draft_options;

/* The acceptance rate the default draft length is chosen for. */
#define SW_DRAFT_ACCEPTANCE 0.7

/* No drafter; n-grams of 2 to 4 tokens; draft_max 0 (the cost model's). */
SW_API sw_draft_options sw_draft_options_default(void);

/* Sets the scheduler's drafter (the options are copied; the draft engine
 * is borrowed: destroy the scheduler first). Requests draft with it
 * unless their draft_max is 0. Call it before the first request runs.
 * Errors: SW_ERR_ARG (bad lengths, two drafters, a draft engine with too
 * few sequences, a vocabulary that differs from the target's, an
 * assistant that is not the target's, requests running), SW_ERR_OOM_HOST,
 * the device's allocation error (an assistant's weights). */
SW_API sw_status sw_scheduler_set_draft(sw_scheduler *sched, const sw_draft_options *opt);
/* The drafts per verify the scheduler uses (the cost model's choice when
 * draft_max was 0); 0 without a drafter. */
SW_API uint32_t sw_scheduler_draft_max(const sw_scheduler *sched);

/* Ends the request (SW_FINISH_CANCELLED) if it has not ended: at once when
 * queued, at the next step when running. */
SW_API void sw_request_cancel(sw_scheduler *sched, sw_request *request);
SW_API void sw_request_get_info(sw_scheduler *sched, const sw_request *request,
                                sw_request_info *out);
/* Why the request ended with SW_FINISH_ERROR: the status of the failure
 * (SW_ERR_OOM_HOST when it could not start or its text could not grow;
 * a failed forward's error) and, when message is not NULL, its message,
 * borrowed until the request is released. SW_OK and "" for a request
 * that has not ended, ended otherwise, or was ended by
 * sw_scheduler_end_all. */
SW_API sw_status sw_request_error(sw_scheduler *sched, const sw_request *request,
                                  const char **message);
/* Copies up to cap of the request's output tokens' log-probabilities from
 * token `from` into out (requests made with logprobs >= 0); returns how
 * many. A stop string that cut the text leaves the records of the tokens
 * it cut: those whose text_offset is at or past the text's end. */
SW_API size_t sw_request_logprobs(sw_scheduler *sched, const sw_request *request, size_t from,
                                  sw_token_logprob *out, size_t cap);
/* Copies up to cap bytes of the request's text from byte `from` into buf
 * (no NUL added); returns how many. */
SW_API size_t sw_request_text(sw_scheduler *sched, const sw_request *request, size_t from,
                              char *buf, size_t cap);
/* The caller is done with the request: cancelled if still going, freed
 * once it has ended. Accepts NULL. */
SW_API void sw_request_release(sw_scheduler *sched, sw_request *request);

/* ---- perplexity and KL divergence ----------------------------------------
 *
 * llama-perplexity's measurement on an engine: the text's tokens cut into
 * chunks of n_ctx, each evaluated from an empty cache with BOS in place of
 * its first token, every position of the second half scored on the next
 * token. With a base — the log-probabilities another run saved, in
 * llama.cpp's own file format, so either tool reads the other's — also the
 * KL divergence to it, how often the top token is the base's, and the RMS
 * of the change in the next token's probability.
 *
 *   sw_perplexity_options po = sw_perplexity_options_default();
 *   po.save_base = "f32.kld";                 (on an --cpu-dots f32 engine)
 *   sw_perplexity(engine, model, ids, n_ids, &po, &res);
 *   po.save_base = NULL; po.kld_base = "f32.kld";   (on the engine to judge)
 *   sw_perplexity(engine2, model, NULL, 0, &po, &res);  (tokens from the base)
 */
typedef struct sw_perplexity_options {
    uint32_t n_ctx;          /* chunk length; 0: min(engine's context, 512) */
    uint32_t n_chunks;       /* at most this many; 0: all the text holds */
    const char *save_base;   /* write these log-probabilities here (or NULL) */
    const char *kld_base;    /* compare against this base; its tokens are used */
    sw_progress_fn progress; /* after each chunk: done, total (chunks) */
    void *progress_user;
} sw_perplexity_options;

SW_API sw_perplexity_options sw_perplexity_options_default(void);

typedef struct sw_perplexity_result {
    uint32_t n_ctx, n_chunks;
    uint64_t n_scored;            /* positions scored */
    double ppl, ppl_unc;          /* exp(mean negative log-likelihood) +- */
    /* with a base */
    int has_base;
    double ppl_base;              /* the base's perplexity on the same tokens */
    double ln_ratio, ln_ratio_unc;/* mean ln(PPL / PPL(base)) +- */
    double kld_mean, kld_unc;     /* KL(base || this), mean over positions +- */
    double kld_median, kld_p99, kld_max;
    double same_top, same_top_unc;/* share of positions with the base's argmax */
    double dp_rms, dp_rms_unc;    /* RMS of p(next token) - p_base(next token) */
} sw_perplexity_result;

/* Runs the measurement on `engine` (any backend and plan; it needs one free
 * session and a context of at least the chunk length). With opt->kld_base
 * the tokens, chunk length and chunk count come from the base and `tokens`
 * may be NULL; otherwise the text's tokens (with BOS first, as sw_tokenize
 * gives) must make at least two chunks. Progress after each chunk.
 * Errors: SW_ERR_ARG (too few tokens, a base made for another vocabulary
 * or a longer context, both save_base and kld_base: the message says what
 * to change), SW_ERR_IO and
 * SW_ERR_FORMAT (the base file: not one, truncated), SW_ERR_OOM_HOST, and
 * the engine's. */
SW_API sw_status sw_perplexity(sw_engine *engine, const sw_model *model, const int32_t *tokens,
                               size_t n_tokens, const sw_perplexity_options *opt,
                               sw_perplexity_result *out);

/* ---- plans ---------------------------------------------------------------- */

/* A plan says where every byte of a model and its workload would live
 * (device, pinned host, host, disk) and how fast it would run, computed
 * without loading any weights. `spillway plan` prints one.
 *
 *   sw_plan_options o = sw_plan_options_default();
 *   o.backend = "sim"; o.device_mem_bytes = 512ull << 20;
 *   sw_plan *p = NULL;
 *   sw_status st = sw_plan_create(NULL, "gemma3-27b", &o, &p);  (catalog)
 *   if (st == SW_OK) sw_plan_print(p, stdout, 0);
 *   else fprintf(stderr, "%s\n", sw_last_error());  (OOM: what would fit)
 *   sw_plan_destroy(p);
 */
struct sw_plan_options {
    const char *backend;       /* "cpu", "sim", "cuda", "pjrt"; NULL: the first
                                * device backend this build runs that sees a
                                * device, else cpu (a note says which) */
    uint64_t device_mem_bytes; /* device budget; 0 = the device's free memory
                                * (required for "sim": its capacity) */
    double device_mem_fraction;/* instead of bytes: this share (0, 1] of the
                                * device's total memory (--device-mem 80%);
                                * a device that reports none refuses it */
    uint64_t host_mem_bytes;   /* host budget; 0 = MemAvailable. Capped by
                                * MemAvailable except for "sim", where it is
                                * taken as given (rehearsing another machine) */
    uint32_t n_ctx;            /* 0 = min(model's, 4096), as the engine */
    uint32_t n_batch;          /* prefill chunk; 0 = 64 (capped at n_ctx) */
    uint32_t n_seq;            /* sequences served at once (-np); 0 = 1; KV is
                                * planned for n_seq x n_ctx */
    int n_threads;             /* sizes host scratch; 0 = all cores */
    const char *kv_type;       /* "f16" (default: llama.cpp's, half of f32),
                                * "bf16", "f32" (default with cpu_dots
                                * "f32": the reference path keeps f32) */
    const char *cpu_dots;      /* host matmuls over block-quantized weights:
                                * "q8" (default: activations rounded to 8
                                * bits per block, integer dots, as llama.cpp)
                                * or "f32" (f32 activations: the exact math
                                * of the reference implementations, slower) */
    const char *weights;       /* catalog models: "f32", "f16", "bf16", "q8_0",
                                * "q4_k_m" (NULL = q4_k_m); model files: "bf16",
                                * "f16" or "q8_0", which the engine converts
                                * at load (NULL = as stored) */
    const char *place;         /* --place SPEC; NULL */
    int n_gpu_layers;          /* -ngl: first N layers resident; -1 = planner */
    int n_cpu_moe;             /* -ncmoe: the experts of the first N layers on the
                                * host (Gemma 4's experts); 0 = the planner's */
    double sim_link_Bps;       /* sim: link cap; 0 = host memcpy speed */
    int default_rates;         /* 1: ignore doctor's cache, use the defaults */
    uint64_t draft_device_bytes; /* a drafter's device bytes, taken off the budget
                                  * before the model is placed (the drafter row) */
    const char *drafter;       /* the drafter's name for that row; NULL: "drafter" */
    sw_expert_options experts; /* the expert cache (spillway_experts.h) */
};

SW_API sw_plan_options sw_plan_options_default(void);

/* Plans `model` (an opened file) or, when model is NULL, the catalog model
 * `catalog_name` ("gemma3-27b", "gemma-2-9b", ...). Exactly one of the two.
 * Reads the machine (devices, /proc/meminfo, doctor's cache), never the
 * weights. Errors: SW_ERR_OOM_DEVICE / SW_ERR_OOM_HOST (nothing fits: the
 * message names the tier, the bytes missing and changes that would fit),
 * SW_ERR_ARG (bad option, unknown catalog name, pins that cannot hold),
 * SW_ERR_NO_DEVICE (cuda asked for, none visible), SW_ERR_UNSUPPORTED,
 * SW_ERR_FORMAT. *out is NULL on failure. */
SW_API sw_status sw_plan_create(const sw_model *model, const char *catalog_name,
                                const sw_plan_options *opt, sw_plan **out);

/* Prints the plan: a table for people, or JSON (json != 0). */
SW_API sw_status sw_plan_print(const sw_plan *plan, FILE *out, int json);

/* The same text into buf: at most cap - 1 bytes and a NUL (nothing when
 * cap is 0); *len gets the full length (call again with len + 1 bytes
 * when it did not fit). Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
SW_API sw_status sw_plan_format(const sw_plan *plan, int json, char *buf, size_t cap,
                                size_t *len);

/* The headline numbers of a plan. */
typedef struct sw_plan_summary {
    uint64_t device_bytes, pinned_bytes, host_bytes;   /* planned per tier */
    uint32_t n_resident, n_streamed, n_host;           /* layers */
    double prefill_tokens_per_s, decode_tokens_per_s;  /* predicted */
    char weights[16];    /* --weights value the plan converts with ("bf16-dequant"), "" if none */
    uint32_t n_ctx;      /* the context it resolved (-c 0: the model's default) */
} sw_plan_summary;

SW_API sw_status sw_plan_get_summary(const sw_plan *plan, sw_plan_summary *out);

SW_API void sw_plan_destroy(sw_plan *plan);

/* The cost model of speculative decoding. A forward of n_tokens (1 to the
 * plan's largest) takes about sw_plan_forward_seconds: the plan's decode
 * and prefill predictions, linear between (weights crossing the link or
 * read from host memory once per forward, compute per token). With k
 * drafts per verify each kept with probability `acceptance`, and each
 * draft costing draft_s (0 for n-grams), decode yields
 * sw_plan_speculative_tokens_per_s; sw_plan_best_draft_max is the k in
 * 1..k_max that yields most. */
SW_API double sw_plan_forward_seconds(const sw_plan *plan, uint32_t n_tokens);
SW_API double sw_plan_speculative_tokens_per_s(const sw_plan *plan, uint32_t k,
                                               double acceptance, double draft_s);
SW_API uint32_t sw_plan_best_draft_max(const sw_plan *plan, double acceptance, double draft_s,
                                       uint32_t k_max);
/* One draft step of a drafter reading `bytes` of weights beside the plan
 * (a Gemma 4 assistant): at the device's memory rate where the plan
 * reserved it on the device, else the host's. */
SW_API double sw_plan_drafter_seconds(const sw_plan *plan, uint64_t bytes);

/* ---- sizes ---------------------------------------------------------------- */

/* Parses a size: "512M", "8G", "8GiB" (binary units), "8GB" (decimal),
 * plain bytes, or "80%" of `whole` (whole > 0 required for percentages).
 * Errors: SW_ERR_ARG with a message saying what was wrong. */
SW_API sw_status sw_parse_size(const char *text, uint64_t whole, uint64_t *out);

/* Parses a bandwidth: "16GB/s", "500MB/s", "2GiB/s" (bytes per second), or
 * a size alone, read per second ("2G" = 2 GiB/s). */
SW_API sw_status sw_parse_rate(const char *text, uint64_t *bytes_per_s);

/* Parses a percentage "80%" (0 < p <= 100) into 0.8. Errors: SW_ERR_ARG. */
SW_API sw_status sw_parse_fraction(const char *text, double *out);

/* ---- devices and doctor: spillway_doctor.h -------------------------------- */

#include "spillway_doctor.h"

#ifdef __cplusplus
}
#endif

#endif /* SPILLWAY_H */
