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
