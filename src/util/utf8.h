/*
 * utf8.h — strict UTF-8 validation for names and strings read from files.
 */
#ifndef SW_UTIL_UTF8_H
#define SW_UTIL_UTF8_H

#include <stdint.h>

/* Length of the longest valid UTF-8 prefix of s[0..n): n when all of it is
 * valid. Rejects overlong forms, surrogates and code points past U+10FFFF
 * (json-c lets the first two through). */
uint64_t utf8_valid_prefix(const uint8_t *s, uint64_t n);

/* Copies s[0..n) to out with each ill-formed subsequence (Unicode's
 * maximal subpart, as Python's errors="replace" and WHATWG decoders take
 * it) replaced by U+FFFD; returns the bytes written, at most 3 * n. */
uint64_t utf8_repair(const uint8_t *s, uint64_t n, uint8_t *out);

#endif
