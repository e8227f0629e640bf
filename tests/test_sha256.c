/*
 * test_sha256.c — SHA-256 against the FIPS 180-4 / NIST example vectors,
 * the padding boundaries (55, 56, 63, 64 ... bytes), streaming updates split
 * at every offset, and sha256_file on a temporary file.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/sha256.h"

static void hex_of(const void *data, size_t n, char out[65]) {
    sha256_ctx c;
    uint8_t d[32];
    sha256_init(&c);
    sha256_update(&c, data, n);
    sha256_final(&c, d);
    sha256_hex(d, out);
}

static void check_vector(const char *msg, const char *want) {
    char got[65];
    hex_of(msg, strlen(msg), got);
    SW_CHECK(strcmp(got, want) == 0, "sha256(\"%.20s...\" len %zu) = %s, want %s",
             msg, strlen(msg), got, want);
}

static void test_nist_vectors(void) {
    check_vector("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_vector("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_vector("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", /* 448 bits */
                 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    check_vector("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn" /* 896 bits */
                 "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                 "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

/* One million 'a', fed in uneven pieces so the buffering path is used. */
static void test_million_a(void) {
    static char a[1000000];
    sha256_ctx c;
    uint8_t d[32];
    char got[65];
    memset(a, 'a', sizeof a);
    hex_of(a, sizeof a, got);
    SW_CHECK(strcmp(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
             "one million 'a' (one shot): %s", got);
    sha256_init(&c);
    for (size_t off = 0, step = 1; off < sizeof a; off += step, step = step * 3 % 1013 + 1)
        sha256_update(&c, a + off, off + step <= sizeof a ? step : sizeof a - off);
    sha256_final(&c, d);
    sha256_hex(d, got);
    SW_CHECK(strcmp(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
             "one million 'a' (uneven pieces): %s", got);
}

/* Lengths around the 56-byte padding limit and the 64-byte block size; the
 * expected values come from an independent implementation (Python hashlib). */
static void test_padding_boundaries(void) {
    static const struct { size_t n; const char *hex; } v[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
    };
    char a[128], got[65];
    memset(a, 'a', sizeof a);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        hex_of(a, v[i].n, got);
        SW_CHECK(strcmp(got, v[i].hex) == 0, "%zu x 'a': %s, want %s", v[i].n, got, v[i].hex);
    }
}

/* A 200-byte message split into two or three updates at every offset must
 * hash the same as one update. */
static void test_split_updates(void) {
    uint8_t msg[200];
    char want[65], got[65];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)i;
    hex_of(msg, sizeof msg, want);
    SW_CHECK(strcmp(want, "1901da1c9f699b48f6b2636e65cbf73abf99d0441ef67f5c540a42f7051dec6f") == 0,
             "bytes 0..199: %s", want);
    int bad = 0;
    for (size_t i = 0; i <= sizeof msg; i++) {
        for (size_t j = i; j <= sizeof msg; j++) {
            sha256_ctx c;
            uint8_t d[32];
            sha256_init(&c);
            sha256_update(&c, msg, i);
            sha256_update(&c, msg + i, j - i);
            sha256_update(&c, NULL, 0);
            sha256_update(&c, msg + j, sizeof msg - j);
            sha256_final(&c, d);
            sha256_hex(d, got);
            if (strcmp(got, want) != 0 && bad++ < 5)
                SW_CHECK(0, "split at %zu,%zu: %s, want %s", i, j, got, want);
        }
    }
    SW_CHECK(bad == 0, "%d split positions disagree with the one-shot hash", bad);
}

static void test_file(void) {
    char path[] = "/tmp/sw_test_sha256_XXXXXX";
    uint8_t d[32];
    char got[65];
    FILE *f = NULL;
    int fd = mkstemp(path);
    SW_CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
    if (fd < 0)
        return;
    f = fdopen(fd, "wb");
    for (int i = 0; i < 300000 && f != NULL; i++) /* 300 KB: several read chunks */
        fputc('a', f);
    SW_CHECK(f != NULL && fclose(f) == 0, "writing %s failed", path);
    SW_CHECK_OK(sha256_file(path, d, NULL, NULL));
    sha256_hex(d, got);
    char want[65];
    static char a[300000];
    memset(a, 'a', sizeof a);
    hex_of(a, sizeof a, want);
    SW_CHECK(strcmp(got, want) == 0, "sha256_file: %s, want %s", got, want);
    remove(path);

    sw_status st = sha256_file(path, d, NULL, NULL); /* now missing */
    SW_CHECK(st == SW_ERR_IO, "missing file: status %s", sw_status_name(st));
    SW_CHECK(strstr(sw_last_error(), path) != NULL, "message names the path: %s",
             sw_last_error());
}

int main(void) {
    test_nist_vectors();
    test_million_a();
    test_padding_boundaries();
    test_split_updates();
    test_file();
    return sw_check_finish("test_sha256");
}
