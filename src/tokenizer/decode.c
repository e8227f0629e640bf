/*
 * decode.c — ids back to bytes: one token's piece, a whole sequence, and
 * streaming UTF-8 reassembly for printing while generating.
 *
 * Pieces follow llama.cpp's token_to_piece for SentencePiece vocabularies:
 * NORMAL tokens print their text with U+2581 as ' ', USER_DEFINED tokens
 * their text verbatim, BYTE tokens ("<0xE6>") their byte, CONTROL and
 * UNKNOWN tokens nothing (or their text when asked for "special" pieces),
 * anything else nothing. Byte tokens may leave partial or invalid UTF-8 in
 * a piece; decoding keeps bytes exact and leaves repair to the printer.
 */
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"

/* The byte a "<0xXX>" token stands for: up to two hex digits from offset
 * 3, as llama.cpp's strtol(text.substr(3, 2), 16) reads them. */
static unsigned char byte_value(const char *text, size_t len) {
    unsigned v = 0;
    for (size_t i = 3; i < 5 && i < len; i++) {
        char c = text[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d == 16u)
            break;
        v = v * 16 + d;
    }
    return (unsigned char)v;
}

static void put(char *dst, size_t cap, size_t *n, char c) {
    if (*n < cap)
        dst[*n] = c;
    (*n)++;
}

/* Writes id's piece (at most cap bytes) to dst and returns its full length.
 * `special`: control/unknown tokens print their text. `lstrip`: drop one
 * leading space (llama.cpp's remove_space for add_space_prefix models). */
static size_t write_piece(const tokenizer *t, int32_t id, bool special, bool lstrip, char *dst,
                          size_t cap) {
    const char *s = tok_text(t, id);
    size_t len = t->text_len[id], n = 0;
    uint8_t a = t->attr[id];
    bool unescape;
    if ((a & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN)) && !special)
        return 0;
    if (a & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN | TOK_ATTR_USER_DEFINED)) {
        unescape = false;
    } else if (a & TOK_ATTR_NORMAL) {
        unescape = true;
    } else if (a & TOK_ATTR_BYTE) {
        unsigned char b = byte_value(s, len);
        if (!(lstrip && b == ' '))
            put(dst, cap, &n, (char)b);
        return n;
    } else {
        return 0; /* unused or undefined */
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (unescape && c == '\xe2' && i + 2 < len && s[i + 1] == '\x96' && s[i + 2] == '\x81') {
            c = ' ';
            i += 2;
        }
        if (lstrip && n == 0 && c == ' ') {
            lstrip = false; /* only the first byte may be dropped */
            continue;
        }
        lstrip = false;
        put(dst, cap, &n, c);
    }
    return n;
}

static sw_status check_id(const tokenizer *t, int32_t id) {
    if (t == NULL)
        return sw_errorf(SW_ERR_ARG, "token_to_piece: no tokenizer");
    if (id < 0 || (uint32_t)id >= t->n_vocab)
        return sw_errorf(SW_ERR_ARG, "token id %d is out of range (vocabulary of %u)", id,
                         t->n_vocab);
    return SW_OK;
}

sw_status tokenizer_token_to_piece(const tokenizer *t, int32_t id, char *buf, size_t cap,
                                   size_t *len) {
    sw_status st = check_id(t, id);
    if (st != SW_OK)
        return st;
    if (len == NULL || (buf == NULL && cap > 0))
        return sw_errorf(SW_ERR_ARG, "token_to_piece: NULL argument");
    *len = write_piece(t, id, false, false, buf, cap);
    return SW_OK;
}

sw_status tokenizer_token_to_piece_special(const tokenizer *t, int32_t id, char *buf,
                                           size_t cap, size_t *len) {
    sw_status st = check_id(t, id);
    if (st != SW_OK)
        return st;
    if (len == NULL || (buf == NULL && cap > 0))
        return sw_errorf(SW_ERR_ARG, "token_to_piece: NULL argument");
    *len = write_piece(t, id, true, false, buf, cap);
    return SW_OK;
}

size_t tokenizer_max_piece_bytes(const tokenizer *t) {
    return t ? t->max_piece : 0;
}

sw_status tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, char *buf,
                           size_t cap, size_t *len) {
    if (t == NULL || len == NULL || (ids == NULL && n > 0) || (buf == NULL && cap > 0))
        return sw_errorf(SW_ERR_ARG, "detokenize: NULL argument");
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint32_t)ids[i] >= t->n_vocab)
            return sw_errorf(SW_ERR_ARG, "detokenize: ids[%zu] = %d is out of range "
                             "(vocabulary of %u)", i, ids[i], t->n_vocab);
        size_t room = total < cap ? cap - total : 0;
        bool lstrip = i == 0 && t->add_space_prefix;
        total += write_piece(t, ids[i], false, lstrip, room ? buf + total : NULL, room);
    }
    *len = total;
    return SW_OK;
}

/* ---- streaming UTF-8 ---------------------------------------------------- */

/* Length of the character a lead byte starts (2..4), 0 for a byte that
 * cannot start a multi-byte character (ASCII, continuation, C0/C1, F5+). */
static size_t utf8_need(unsigned char c) {
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF)
        return 3;
    if (c >= 0xF0 && c <= 0xF4)
        return 4;
    return 0;
}

/* May c follow the pending bytes p[0..k)? The second byte's range depends
 * on the lead (no overlongs, no surrogates, nothing past U+10FFFF). */
static bool utf8_continues(const unsigned char *p, size_t k, unsigned char c) {
    if (c < 0x80 || c > 0xBF)
        return false;
    if (k != 1)
        return true;
    switch (p[0]) {
    case 0xE0: return c >= 0xA0;
    case 0xED: return c <= 0x9F;
    case 0xF0: return c >= 0x90;
    case 0xF4: return c <= 0x8F;
    }
    return true;
}

size_t utf8_stream_feed(utf8_stream *s, const char *in, size_t n, char *out) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (s->n_pending > 0 && !utf8_continues(s->pending, s->n_pending, c))
            m += utf8_stream_flush(s, out + m); /* can never complete: pass through */
        if (s->n_pending == 0) {
            if (utf8_need(c) == 0)
                out[m++] = (char)c;
            else
                s->pending[s->n_pending++] = c;
            continue;
        }
        s->pending[s->n_pending++] = c;
        if (s->n_pending == utf8_need(s->pending[0]))
            m += utf8_stream_flush(s, out + m);
    }
    return m;
}

size_t utf8_stream_flush(utf8_stream *s, char *out) {
    size_t m = s->n_pending;
    memcpy(out, s->pending, m);
    s->n_pending = 0;
    return m;
}
