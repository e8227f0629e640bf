/*
 * size.c — sizes as people write them ("512M", "8GiB", "1.5G", "8GB",
 * "80%") and as plans print them ("12.0 GiB").
 *
 * Units without "i" and with one letter (K M G T) are binary, as llama.cpp
 * and most GPU tools mean them; two-letter "KB MB GB TB" are decimal. All
 * arithmetic is exact integer arithmetic (no floating point), so "1.5G" is
 * exactly 1610612736 bytes and a percentage rounds down.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "plan/plan_api.h"
#include "util/error.h"

#define MAX_FRAC_DIGITS 6  /* keeps (remainder * unit) below 2^64 in mul_div */

typedef struct unit {
    const char *name;
    uint64_t bytes;
} unit;

static const unit units[] = {
    {"", 1}, {"b", 1},
    {"k", 1ull << 10}, {"kib", 1ull << 10}, {"kb", 1000ull},
    {"m", 1ull << 20}, {"mib", 1ull << 20}, {"mb", 1000000ull},
    {"g", 1ull << 30}, {"gib", 1ull << 30}, {"gb", 1000000000ull},
    {"t", 1ull << 40}, {"tib", 1ull << 40}, {"tb", 1000000000000ull},
};

/* a * b / d rounded down, or false on overflow. d > 0, and the remainder
 * product (a % d) * b must fit: callers keep d and b small enough. */
static bool mul_div(uint64_t a, uint64_t b, uint64_t d, uint64_t *out) {
    uint64_t q = a / d, r = a % d;
    if (b != 0 && q > UINT64_MAX / b)
        return false;
    uint64_t hi = q * b;
    if (b != 0 && r > UINT64_MAX / b)
        return false;
    uint64_t lo = r * b / d;
    if (hi > UINT64_MAX - lo)
        return false;
    *out = hi + lo;
    return true;
}

/* Digits with an optional fraction: *mant = all digits as one integer,
 * *scale = 10^(fraction digits). Returns the text after the number. */
static const char *parse_number(const char *s, uint64_t *mant, uint64_t *scale, bool *ok) {
    uint64_t m = 0, p = 1;
    int n_int = 0, n_frac = 0;
    *ok = false;
    for (; isdigit((unsigned char)*s); s++, n_int++) {
        if (m > (UINT64_MAX - 9) / 10)
            return s;
        m = m * 10 + (uint64_t)(*s - '0');
    }
    if (*s == '.') {
        for (s++; isdigit((unsigned char)*s); s++, n_frac++) {
            if (n_frac == MAX_FRAC_DIGITS || m > (UINT64_MAX - 9) / 10)
                return s;
            m = m * 10 + (uint64_t)(*s - '0');
            p *= 10;
        }
    }
    *ok = n_int + n_frac > 0;
    *mant = m;
    *scale = p;
    return s;
}

static sw_status parse_percent(const char *s, uint64_t mant, uint64_t scale, uint64_t whole,
                               uint64_t *out) {
    if (whole == 0)
        return sw_errorf(SW_ERR_ARG, "size '%s': a percentage needs a known total", s);
    if (mant == 0 || mant > 100 * scale)
        return sw_errorf(SW_ERR_ARG, "size '%s': a percentage must be above 0 and at most 100",
                         s);
    if (!mul_div(whole, mant, 100 * scale, out) || *out == 0)
        return sw_errorf(SW_ERR_ARG, "size '%s' is 0 bytes of %llu", s,
                         (unsigned long long)whole);
    return SW_OK;
}

sw_status plan_parse_size(const char *s, uint64_t whole, uint64_t *out) {
    uint64_t mant = 0, scale = 1;
    bool ok;
    char suffix[8];
    if (s == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "plan_parse_size: NULL argument");
    const char *rest = parse_number(s, &mant, &scale, &ok);
    if (!ok)
        return sw_errorf(SW_ERR_ARG, "size '%s' is not a number with an optional unit "
                         "(512M, 8G, 8GiB, 8GB, 1.5G, 80%%)", s);
    if (!strcmp(rest, "%"))
        return parse_percent(s, mant, scale, whole, out);
    size_t n = strlen(rest);
    if (n >= sizeof suffix)
        return sw_errorf(SW_ERR_ARG, "size '%s': unknown unit '%s'", s, rest);
    size_t k = 0;
    for (; k < n && k + 1 < sizeof suffix; k++)
        suffix[k] = (char)tolower((unsigned char)rest[k]);
    suffix[k] = '\0';
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(suffix, units[i].name) != 0)
            continue;
        if (!mul_div(mant, units[i].bytes, scale, out))
            return sw_errorf(SW_ERR_ARG, "size '%s' is too large", s);
        if (*out == 0)
            return sw_errorf(SW_ERR_ARG, "size '%s' is 0 bytes; give a positive size", s);
        return SW_OK;
    }
    return sw_errorf(SW_ERR_ARG, "size '%s': unknown unit '%s' (B, K/M/G/T = KiB/MiB/GiB/TiB, "
                     "KB/MB/GB/TB = powers of 1000, or %%)", s, rest);
}

void plan_format_size(uint64_t bytes, char *buf, size_t cap) {
    const double k = 1024.0;
    if (bytes >= (1ull << 40))
        snprintf(buf, cap, "%.1f TiB", (double)bytes / (k * k * k * k));
    else if (bytes >= (1ull << 30))
        snprintf(buf, cap, "%.1f GiB", (double)bytes / (k * k * k));
    else if (bytes >= (1ull << 20))
        snprintf(buf, cap, "%.1f MiB", (double)bytes / (k * k));
    else if (bytes >= (1ull << 10))
        snprintf(buf, cap, "%.1f KiB", (double)bytes / k);
    else
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
}
