/* kws_frontend.c: see kws_frontend.h. Every step is the integer operation of
 * training/tasks/int_frontend.py, in the same order where rounding depends on it. */
#include "kws_frontend.h"

#define KWS_NFFT 512
#define KWS_HALF 256
#define KWS_PREEMPH_Q15 31785 /* round(0.97 * 2^15) */
#define KWS_POWER_SHIFT 6
#define KWS_LOG_TABLE_BITS 6

/* kws_frontend_tables.c (generated from the formulas in int_frontend.py; a test checks it). */
extern const int16_t kws_window_q15[KWS_FRAME];
extern const int32_t kws_cos_q15[KWS_BINS];
extern const int32_t kws_sin_q15[KWS_BINS];
extern const uint8_t kws_bitrev[KWS_HALF];
extern const uint16_t kws_mel_start[KWS_FILTERS];
extern const uint16_t kws_mel_len[KWS_FILTERS];
extern const uint16_t kws_mel_weights[];
extern const uint32_t kws_log2_table[(1 << KWS_LOG_TABLE_BITS) + 1];

/* (a c + b s + 2^14) >> 15 with int64 products (SMULL / SMLAL on a Cortex-M4): the reference
 * rounds each twiddle product once, so does this. */
static int32_t kws_rot15(int32_t a, int32_t c, int32_t b, int32_t s) {
  return (int32_t)(((int64_t)a * c + (int64_t)b * s + (1 << 14)) >> 15);
}

/* 256-point complex FFT in place, decimation in time; the input is in bit-reversed order.
 * |values| stay below 2^25 (|input| < 2^16.5, one bit of growth per stage). Stages 1 and 2 and
 * the j = 0 and j = half / 2 butterflies of the others have the twiddles 1 or -i, which the Q15
 * tables hold exactly (1 is 2^15), so they are done without products: the general formula's
 * bits. */
static void kws_fft256(int32_t *re, int32_t *im) {
  int half, start, j;
  for (start = 0; start < KWS_HALF; start += 4) {
    int32_t *r = re + start, *i = im + start;
    const int32_t r0 = r[0] + r[1], i0 = i[0] + i[1], r1 = r[0] - r[1], i1 = i[0] - i[1];
    const int32_t r2 = r[2] + r[3], i2 = i[2] + i[3], r3 = r[2] - r[3], i3 = i[2] - i[3];
    r[0] = r0 + r2, i[0] = i0 + i2, r[2] = r0 - r2, i[2] = i0 - i2;
    r[1] = r1 + i3, i[1] = i1 - r3, r[3] = r1 - i3, i[3] = i1 + r3; /* W = -i: t = (i3, -r3) */
  }
  for (half = 4; half < KWS_HALF; half *= 2) {
    const int stride = KWS_NFFT / (2 * half);
    for (start = 0; start < KWS_HALF; start += 2 * half) { /* j = 0: W = 1 */
      const int a = start, b = start + half;
      const int32_t tr = re[b], ti = im[b];
      re[b] = re[a] - tr, im[b] = im[a] - ti, re[a] += tr, im[a] += ti;
    }
    for (start = half / 2; start < KWS_HALF; start += 2 * half) { /* j = half / 2: W = -i */
      const int a = start, b = start + half;
      const int32_t tr = im[b], ti = -re[b];
      re[b] = re[a] - tr, im[b] = im[a] - ti, re[a] += tr, im[a] += ti;
    }
    for (j = 1; j < half; ++j) {
      const int32_t c = kws_cos_q15[j * stride], s = kws_sin_q15[j * stride];
      if (j == half / 2) continue;
      for (start = j; start < KWS_HALF; start += 2 * half) {
        const int a = start, b = start + half;
        const int32_t tr = kws_rot15(re[b], c, im[b], s);  /* (re + i im)(c - i s) */
        const int32_t ti = kws_rot15(im[b], c, re[b], -s);
        re[b] = re[a] - tr, im[b] = im[a] - ti, re[a] += tr, im[a] += ti;
      }
    }
  }
}

void kws_power_spectrum(const int16_t x[KWS_FRAME], int16_t prev, uint32_t lo[KWS_BINS],
                        uint32_t hi[KWS_BINS]) {
  int32_t re[KWS_HALF], im[KWS_HALF];
  int n, k;
  int32_t before = prev;
  for (n = KWS_FRAME / 2; n < KWS_HALF; ++n) re[kws_bitrev[n]] = im[kws_bitrev[n]] = 0;
  for (n = 0; n < KWS_FRAME; n += 2) { /* z[n / 2] = v[n] + i v[n + 1], in bit-reversed order */
    const int32_t x0 = x[n], x1 = x[n + 1];
    const int32_t y0 = x0 - ((KWS_PREEMPH_Q15 * before + (1 << 14)) >> 15);
    const int32_t y1 = x1 - ((KWS_PREEMPH_Q15 * x0 + (1 << 14)) >> 15);
    const int m = kws_bitrev[n >> 1];
    re[m] = (y0 * kws_window_q15[n] + (1 << 14)) >> 15; /* |y w| < 2^31 */
    im[m] = (y1 * kws_window_q15[n + 1] + (1 << 14)) >> 15;
    before = x1;
  }
  kws_fft256(re, im);
  for (k = 0; k < KWS_BINS; ++k) {
    const int ka = k & (KWS_HALF - 1), kb = (KWS_HALF - k) & (KWS_HALF - 1);
    const int32_t ar = re[ka], ai = im[ka], br = re[kb], bi = -im[kb]; /* B = conj(Z[N-k]) */
    const int32_t p = ai - bi, q = br - ar;                            /* -i (A - B) */
    const int32_t c = kws_cos_q15[k], s = kws_sin_q15[k];
    const int32_t yr = ar + br + kws_rot15(p, c, q, s);                /* 2 X[k], < 2^25.7 */
    const int32_t yi = ai + bi + kws_rot15(q, c, p, -s);
    const uint64_t power = (uint64_t)((int64_t)yr * yr + (int64_t)yi * yi) >> KWS_POWER_SHIFT;
    lo[k] = (uint32_t)power;         /* P >> 6 < 2^46.3: its two words */
    hi[k] = (uint32_t)(power >> 32); /* < 2^14.3 */
  }
}

/* The index of the leading one of v > 0 (CLZ where the compiler has it: the same number). */
static int kws_msb32(uint32_t v) {
#if defined(__GNUC__)
  return 31 - __builtin_clz(v);
#else
  int n = 0, b;
  for (b = 16; b > 0; b >>= 1) {
    if ((v >> (n + b)) != 0) n += b;
  }
  return n;
#endif
}

int16_t kws_log2_q8(uint64_t e) {
  const uint32_t e_hi = (uint32_t)(e >> 32);
  int n;
  uint32_t top, idx, frac, lo, hi, f;
  if (e <= 1) return 0;
  n = e_hi ? 32 + kws_msb32(e_hi) : kws_msb32((uint32_t)e);
  /* top = the high word of e << (63 - n): the leading one at bit 31, then the fraction */
  top = n >= 31 ? (uint32_t)(e >> (n - 31)) : (uint32_t)e << (31 - n);
  idx = (top >> (31 - KWS_LOG_TABLE_BITS)) & ((1u << KWS_LOG_TABLE_BITS) - 1);
  frac = (top >> (31 - KWS_LOG_TABLE_BITS - 16)) & 0xFFFFu;
  lo = kws_log2_table[idx];
  hi = kws_log2_table[idx + 1];
  f = lo + (((hi - lo) * frac + (1u << 15)) >> 16);
  return (int16_t)((n << KWS_LOG_Q) + ((f + (1u << (16 - KWS_LOG_Q - 1))) >> (16 - KWS_LOG_Q)));
}

void kws_frontend_frame(const int16_t x[KWS_FRAME], int16_t prev, int16_t out[KWS_FILTERS]) {
  uint32_t lo[KWS_BINS], hi[KWS_BINS];
  int j, k, w = 0;
  kws_power_spectrum(x, prev, lo, hi);
  for (j = 0; j < KWS_FILTERS; ++j) {
    /* E = sum (P >> 6) W < 2^62.6 (the tests check the bound), as a 64-bit sum of the low
     * words' products (UMLAL) plus 2^32 times a 32-bit sum of the high words' (< 2^14.3 times
     * at most 81920 of Q12 weight per filter: < 2^31): the same integer, fewer instructions. */
    const int start = kws_mel_start[j], len = kws_mel_len[j];
    uint64_t e = 0;
    uint32_t e_hi = 0;
    for (k = 0; k < len; ++k) {
      const uint32_t wk = kws_mel_weights[w + k];
      e += (uint64_t)lo[start + k] * wk;
      e_hi += hi[start + k] * wk;
    }
    w += len;
    out[j] = kws_log2_q8(e + ((uint64_t)e_hi << 32));
  }
}

void kws_stream_reset(kws_stream_t *s) {
  s->prev = 0;
  s->filled = 0;
}

int kws_stream_push(kws_stream_t *s, int16_t sample, int16_t out[KWS_FILTERS]) {
  return kws_stream_write(s, &sample, 1, out);
}

int kws_stream_write(kws_stream_t *s, const int16_t *samples, int n, int16_t out[KWS_FILTERS]) {
  int i, j, frame = 0;
  if (n > KWS_HOP) return -1;
  for (i = 0; i < n; ++i) {
    s->window[s->filled++] = samples[i];
    if (s->filled == KWS_FRAME) { /* at most once: frames are KWS_HOP >= n samples apart */
      kws_frontend_frame(s->window, s->prev, out);
      s->prev = s->window[KWS_HOP - 1];
      for (j = 0; j < KWS_FRAME - KWS_HOP; ++j) s->window[j] = s->window[j + KWS_HOP];
      s->filled = KWS_FRAME - KWS_HOP;
      frame = 1;
    }
  }
  return frame;
}
