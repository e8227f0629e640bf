/*
 * fuzz_tokenizer_json.c — libFuzzer harness for the Hugging Face tokenizer
 * reader (tokenizer_create_from_hf: tokenizer.json, and beside it
 * tokenizer_config.json and config.json).
 *
 * The input is up to three documents separated by NUL bytes (which JSON
 * text never holds): tokenizer.json, then optionally tokenizer_config.json,
 * then optionally config.json. The reader takes a folder, so each is
 * written into a private temporary folder made once (and removed at exit).
 * A refusal must leave no tokenizer and one message; a tokenizer that
 * builds must hold the invariants encoding relies on (special ids in
 * range, every text found by its own id) and must encode a short text of
 * every kind (spaces, newlines, markup, multi-byte and broken UTF-8) with
 * and without special tokens, and a lone space and a lone letter with BOS
 * (the worst cases), into ids in range, within SW_TOKENIZE_MAX_IDS (what
 * the server and the CLI size their buffers by), through a short buffer
 * as through a full one, which decode again. A broken invariant traps.
 * Built as fuzz_tokenizer_json with -fsanitize=fuzzer (tools/fuzz.sh) and
 * as fuzz_tokenizer_json_replay (fuzz_replay.c) for CTest.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

#include "fuzz_common.h"

static const char *const FILES[3] = {"tokenizer.json", "tokenizer_config.json", "config.json"};

static char g_dir[256];
static char g_path[3][300];

/* What a built tokenizer encodes: every path of encode.c and partition.c. */
static const char SAMPLE[] = "Hello world\n\n  two  spaces\t<start_of_turn>user\nh\xc3\xa9 "
                             "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82<bos><eos><unk><pad>"
                             "<|turn><turn|><mask>\xe2\x96\x81<0x41>\xff\xe2\x96 end";

static volatile uint64_t sink;

static void remove_dir(void) {
    for (int i = 0; i < 3; i++)
        unlink(g_path[i]);
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/sw-fuzz-tokjson-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(g_dir) == NULL) {
        perror("fuzz_tokenizer_json: mkdtemp");
        abort();
    }
    for (int i = 0; i < 3; i++)
        snprintf(g_path[i], sizeof g_path[i], "%s/%s", g_dir, FILES[i]);
    atexit(remove_dir);
    return 0;
}

/* Writes data[0..n) as file i; false when it cannot. */
static bool write_part(int i, const uint8_t *data, size_t n) {
    int fd = open(g_path[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return false;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, data + done, n - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fd);
    return done == n;
}

/* Encodes text with flags through the documented protocol (a short buffer
 * first, then one of the full count) and checks and decodes the ids. */
static void encode_check(const tokenizer *t, const char *text, size_t len, unsigned flags) {
    const size_t n_vocab = tokenizer_n_vocab(t), bound = SW_TOKENIZE_MAX_IDS(len);
    int32_t small[4];
    size_t n = 0, n2 = 0, out_len = 0;
    sw_status st = tokenizer_encode(t, text, len, flags, small, 4, &n);
    if (st != SW_OK) { /* a vocabulary without byte fallback for some byte */
        FUZZ_REQUIRE(st == SW_ERR_UNSUPPORTED && sw_last_error()[0] != '\0');
        return;
    }
    FUZZ_REQUIRE(n <= bound); /* what sw_tokenize promises its callers */
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (ids == NULL)
        return;
    FUZZ_REQUIRE(tokenizer_encode(t, text, len, flags, ids, n, &n2) == SW_OK && n2 == n);
    FUZZ_REQUIRE(memcmp(ids, small, (n < 4 ? n : 4) * sizeof *ids) == 0);
    for (size_t i = 0; i < n; i++)
        FUZZ_REQUIRE(ids[i] >= 0 && (size_t)ids[i] < n_vocab);
    FUZZ_REQUIRE(tokenizer_decode(t, ids, n, NULL, 0, &out_len) == SW_OK);
    char *buf = malloc(out_len + 1);
    size_t len2 = 0;
    if (buf != NULL) {
        FUZZ_REQUIRE(tokenizer_decode(t, ids, n, buf, out_len, &len2) == SW_OK);
        FUZZ_REQUIRE(len2 == out_len);
        sink += out_len ? (uint8_t)buf[0] : 0;
    }
    free(buf);
    free(ids);
}

static void check_tokenizer(const tokenizer *t) {
    const size_t n_vocab = tokenizer_n_vocab(t);
    sw_special_tokens sp;
    FUZZ_REQUIRE(n_vocab > 0 && n_vocab <= INT32_MAX);
    tokenizer_special(t, &sp);
    const int32_t special[] = {sp.bos, sp.eos, sp.unk, sp.pad, sp.start_of_turn,
                               sp.end_of_turn};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        FUZZ_REQUIRE(special[i] >= -1 && special[i] < (int64_t)n_vocab);
    FUZZ_REQUIRE(!sp.add_bos || sp.bos >= 0);
    for (int32_t id = 0; id < (int32_t)n_vocab && id < 64; id++) {
        size_t len = 0;
        const char *s = tokenizer_token_text(t, id, &len);
        FUZZ_REQUIRE(s != NULL && len > 0 && s[len] == '\0');
        FUZZ_REQUIRE(tokenizer_find(t, s, len) == id);
    }
    FUZZ_REQUIRE(tokenizer_token_text(t, (int32_t)n_vocab, NULL) == NULL);
    encode_check(t, SAMPLE, sizeof SAMPLE - 1, 0);
    encode_check(t, SAMPLE, sizeof SAMPLE - 1, SW_TOK_ADD_BOS | SW_TOK_PARSE_SPECIAL);
    encode_check(t, "", 0, SW_TOK_ADD_BOS);
    encode_check(t, " ", 1, SW_TOK_ADD_BOS); /* the worst case of SW_TOKENIZE_MAX_IDS */
    encode_check(t, "a", 1, SW_TOK_ADD_BOS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t pos = 0;
    for (int i = 0; i < 3; i++)
        unlink(g_path[i]);
    for (int i = 0; i < 3; i++) { /* part i runs to the next NUL (the last: to the end) */
        const uint8_t *nul = i < 2 ? memchr(data + pos, '\0', size - pos) : NULL;
        const size_t end = nul ? (size_t)(nul - data) : size;
        if (!write_part(i, data + pos, end - pos))
            return 0;
        if (nul == NULL)
            break;
        pos = end + 1;
    }
    tokenizer *t = NULL;
    sw_status st = tokenizer_create_from_hf(g_dir, &t);
    if (st != SW_OK) {
        FUZZ_REQUIRE(t == NULL && sw_last_error()[0] != '\0');
        FUZZ_REQUIRE(st == SW_ERR_FORMAT || st == SW_ERR_UNSUPPORTED ||
                     st == SW_ERR_OOM_HOST);
        return 0;
    }
    check_tokenizer(t);
    tokenizer_destroy(t);
    return 0;
}
