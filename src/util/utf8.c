/*
 * utf8.c — strict UTF-8 validation (utf8.h), shared by the GGUF and
 * safetensors readers.
 */
#include "util/utf8.h"

uint64_t utf8_valid_prefix(const uint8_t *s, uint64_t n) {
    uint64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        uint32_t n_cont, cp, min;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            n_cont = 1, cp = c & 0x1Fu, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n_cont = 2, cp = c & 0x0Fu, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n_cont = 3, cp = c & 0x07u, min = 0x10000;
        } else {
            return i;
        }
        if (n - i <= n_cont)
            return i;
        for (uint32_t k = 1; k <= n_cont; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += n_cont + 1;
    }
    return n;
}

/* The bytes of s[0..n) (s[0] not starting a valid sequence) that make up
 * one ill-formed subsequence: the longest prefix of some well-formed
 * sequence (Unicode's "maximal subpart"), at least one byte. */
static uint64_t ill_formed_len(const uint8_t *s, uint64_t n) {
    const uint8_t c = s[0];
    uint8_t lo = 0x80, hi = 0xBF; /* range of the second byte */
    uint32_t n_cont;
    if (c >= 0xC2 && c <= 0xDF) {
        n_cont = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n_cont = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n_cont = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 1;
    }
    uint64_t k = 1;
    while (k <= n_cont && k < n) {
        const uint8_t b = s[k];
        if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80)
            break;
        k++;
    }
    return k;
}

uint64_t utf8_repair(const uint8_t *s, uint64_t n, uint8_t *out) {
    uint64_t i = 0, o = 0;
    while (i < n) {
        const uint64_t ok = utf8_valid_prefix(s + i, n - i);
        for (uint64_t k = 0; k < ok; k++)
            out[o++] = s[i + k];
        i += ok;
        if (i == n)
            break;
        i += ill_formed_len(s + i, n - i);
        out[o++] = 0xEF; /* U+FFFD */
        out[o++] = 0xBF;
        out[o++] = 0xBD;
    }
    return o;
}
