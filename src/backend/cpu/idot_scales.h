/*
 * idot_scales.h — the 6-bit sub-block scales and mins of Q4_K and Q5_K,
 * unpacked for the integer dots (internal to backend/cpu). Layout as in
 * quant/dequant_k.c: j<4: sc = s[j]&63, mn = s[j+4]&63; j>=4: low 4 bits
 * from the nibbles of s[j+4], high 2 bits from the top of s[j-4] (sc) and
 * s[j] (mn).
 */
#ifndef SW_BACKEND_CPU_IDOT_SCALES_H
#define SW_BACKEND_CPU_IDOT_SCALES_H

#include <stdint.h>

static inline void idot_k4_scales(const uint8_t s[12], int sc[8], int mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (s[j + 8] & 15) | (s[j] >> 6) << 4;
        mn[j + 4] = (s[j + 8] >> 4) | (s[j + 4] >> 6) << 4;
    }
}

#endif
