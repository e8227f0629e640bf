/*
 * tokenize.c — `spillway tokenize [-m MODEL] -p TEXT | -f FILE [--json]
 * [--ids] [--no-bos] [--no-special]`: shows how the model's tokenizer
 * splits a text, one "  id -> 'piece'" line per token as llama.cpp's
 * tokenize tool prints them, or just the ids (Python list or JSON array).
 *
 * Defaults match llama.cpp's tool: BOS added when the model asks for it,
 * control tokens such as <start_of_turn> recognised in the text. Pieces
 * are printed with control characters and bytes that are not valid UTF-8
 * escaped (\n, \t, \xE6), so each token stays on one line.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/gen_opts.h"
#include "cli/model_arg.h"

typedef struct tok_opts {
    const char *model, *prompt, *file;
    bool json, ids_only, no_bos, no_special;
} tok_opts;

static void usage(FILE *out) {
    fputs("usage: spillway tokenize [-m FILE] (-p TEXT | -f FILE) [options]\n"
          "  -m FILE        model file (default: the fetched Gemma 3 270M)\n"
          "  -p TEXT        text to tokenize\n"
          "  -f FILE        read the text from FILE (bytes as they are)\n"
          "  --ids          print only the ids, as a Python list\n"
          "  --json         print only the ids, as a JSON array\n"
          "  --no-bos       do not add BOS even if the model asks for it\n"
          "  --no-special   treat <start_of_turn>, <bos> etc. in the text as plain text\n",
          out);
}

/* Returns -1 when parsing went fine, else the exit status to return. */
static int parse_args(int argc, char **argv, tok_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **value = !strcmp(a, "-m") || !strcmp(a, "--model") ? &o->model
                           : !strcmp(a, "-p") || !strcmp(a, "--prompt") ? &o->prompt
                           : !strcmp(a, "-f") || !strcmp(a, "--file") ? &o->file : NULL;
        if (value != NULL) {
            if (++i >= argc) {
                cli_error("%s needs a value (see spillway tokenize --help)", a);
                return CLI_EXIT_USAGE;
            }
            *value = argv[i];
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--ids")) {
            o->ids_only = true;
        } else if (!strcmp(a, "--no-bos")) {
            o->no_bos = true;
        } else if (!strcmp(a, "--no-special")) {
            o->no_special = true;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return CLI_EXIT_OK;
        } else {
            cli_error("tokenize: unknown option '%s' (see spillway tokenize --help)", a);
            return CLI_EXIT_USAGE;
        }
    }
    if (o->json && o->ids_only) {
        cli_error("tokenize: give --ids or --json, not both");
        return CLI_EXIT_USAGE;
    }
    return -1;
}

/* Length of the valid UTF-8 character at s[0..n) of 2-4 bytes, else 0. */
static size_t utf8_char(const unsigned char *s, size_t n) {
    size_t need = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
                : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (need == 0 || need > n)
        return 0;
    for (size_t i = 1; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) ||
        (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] > 0x8F))
        return 0;
    return need;
}

/* Prints a piece between quotes, escaping what would break the line. */
static void print_piece(const char *p, size_t n) {
    const unsigned char *s = (const unsigned char *)p;
    putchar('\'');
    for (size_t i = 0; i < n;) {
        size_t k = s[i] >= 0x80 ? utf8_char(s + i, n - i) : 1;
        if (k > 1) {
            fwrite(s + i, 1, k, stdout);
        } else if (s[i] == '\n') {
            fputs("\\n", stdout);
        } else if (s[i] == '\t') {
            fputs("\\t", stdout);
        } else if (s[i] == '\r') {
            fputs("\\r", stdout);
        } else if (s[i] == '\\' || s[i] == '\'') {
            printf("\\%c", s[i]);
        } else if (s[i] < 0x20 || s[i] >= 0x7F) {
            printf("\\x%02X", s[i]);
        } else {
            putchar(s[i]);
        }
        i += k ? k : 1;
    }
    putchar('\'');
}

static void print_tokens(const sw_model *m, const int32_t *ids, size_t n) {
    char piece[1024];
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        /* The stored text for control tokens (<bos>), the printed bytes
         * for the rest, as llama.cpp's tool shows them. */
        const char *text = sw_token_text(m, ids[i]);
        sw_token_to_piece(m, ids[i], piece, sizeof piece, &len);
        printf("%6d -> ", ids[i]);
        if (len == 0 && text != NULL)
            print_piece(text, strlen(text));
        else
            print_piece(piece, len < sizeof piece ? len : sizeof piece);
        putchar('\n');
    }
}

static void print_ids(const int32_t *ids, size_t n, bool json) {
    putchar('[');
    for (size_t i = 0; i < n; i++)
        printf(i ? (json ? ",%d" : ", %d") : "%d", ids[i]);
    puts("]");
}

static int tokenize_and_print(const sw_model *m, const tok_opts *o, const char *text,
                              size_t len) {
    unsigned flags = (o->no_bos ? 0 : SW_TOK_ADD_BOS) |
                     (o->no_special ? 0 : SW_TOK_PARSE_SPECIAL);
    size_t cap = len + 2, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (ids == NULL) {
        cli_error("out of host memory for %zu token ids", cap);
        return CLI_EXIT_OOM_HOST;
    }
    sw_status st = sw_tokenize(m, text, len, flags, ids, cap, &n);
    if (st == SW_OK && n > cap) { /* cannot happen for Gemma; retry for odd vocabularies */
        int32_t *bigger = realloc(ids, n * sizeof *ids);
        if (bigger == NULL) {
            free(ids);
            cli_error("out of host memory for %zu token ids", n);
            return CLI_EXIT_OOM_HOST;
        }
        ids = bigger;
        cap = n;
        st = sw_tokenize(m, text, len, flags, ids, cap, &n);
    }
    if (st != SW_OK) {
        free(ids);
        return cli_fail(st);
    }
    if (o->json || o->ids_only)
        print_ids(ids, n, o->json);
    else
        print_tokens(m, ids, n);
    free(ids);
    return CLI_EXIT_OK;
}

int cmd_tokenize(int argc, char **argv) {
    tok_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    gen_opts src;
    gen_opts_init(&src);
    src.prompt = o.prompt;
    src.prompt_file = o.file;
    char *text = NULL;
    size_t len = 0;
    rc = gen_opts_read_prompt(&src, &text, &len);
    if (rc != CLI_EXIT_OK)
        return rc;
    sw_model *m = NULL;
    rc = cli_open_model(o.model, &m);
    if (rc == CLI_EXIT_OK)
        rc = tokenize_and_print(m, &o, text, len);
    sw_model_close(m);
    free(text);
    return rc;
}
