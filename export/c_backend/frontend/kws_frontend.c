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
extern const int16_t kws_cos_q15[KWS_BINS];
extern const int16_t kws_sin_q15[KWS_BINS];
extern const uint8_t kws_bitrev[KWS_HALF];
extern const uint16_t kws_mel_start[KWS_FILTERS];
extern const uint16_t kws_mel_len[KWS_FILTERS];
extern const uint16_t kws_mel_weights[];
extern const uint32_t kws_log2_table[(1 << KWS_LOG_TABLE_BITS) + 1];

/* (a * b + 2^14) >> 15 with an int64 product: one rounding per twiddle product. */
static int32_t kws_round15(int64_t v) { return (int32_t)((v + (1 << 14)) >> 15); }

/* 256-point complex FFT in place, decimation in time; the input is in bit-reversed order.
 * |values| stay below 2^25 (|input| < 2^16.5, one bit of growth per stage). */
static void kws_fft256(int32_t *re, int32_t *im) {
  int half, start, j;
  for (half = 1; half < KWS_HALF; half *= 2) {
    const int stride = KWS_NFFT / (2 * half);
    for (start = 0; start < KWS_HALF; start += 2 * half) {
      for (j = 0; j < half; ++j) {
        const int64_t c = kws_cos_q15[j * stride], s = kws_sin_q15[j * stride];
        const int a = start + j, b = a + half;
        const int32_t tr = kws_round15(re[b] * c + im[b] * s);
        const int32_t ti = kws_round15(im[b] * c - re[b] * s);
        re[b] = re[a] - tr;
        im[b] = im[a] - ti;
        re[a] += tr;
        im[a] += ti;
      }
    }
  }
}

void kws_power_spectrum(const int16_t x[KWS_FRAME], int16_t prev, uint64_t power[KWS_BINS]) {
  int32_t re[KWS_HALF], im[KWS_HALF];
  int n, k;
  for (n = 0; n < KWS_HALF; ++n) re[n] = im[n] = 0;
  for (n = 0; n < KWS_FRAME; ++n) {
    const int32_t before = n ? x[n - 1] : prev;
    const int32_t y = x[n] - ((KWS_PREEMPH_Q15 * before + (1 << 14)) >> 15);
    const int32_t v = (y * kws_window_q15[n] + (1 << 14)) >> 15; /* |y w| < 2^31 */
    const int m = kws_bitrev[n >> 1];
    if (n & 1) im[m] = v; else re[m] = v;
  }
  kws_fft256(re, im);
  for (k = 0; k < KWS_BINS; ++k) {
    const int ka = k & (KWS_HALF - 1), kb = (KWS_HALF - k) & (KWS_HALF - 1);
    const int64_t ar = re[ka], ai = im[ka], br = re[kb], bi = -im[kb]; /* B = conj(Z[N-k]) */
    const int64_t p = ai - bi, q = br - ar;                         /* -i (A - B) */
    const int64_t c = kws_cos_q15[k], s = kws_sin_q15[k];
    const int64_t yr = ar + br + kws_round15(p * c + q * s);         /* 2 X[k] */
    const int64_t yi = ai + bi + kws_round15(q * c - p * s);
    power[k] = (uint64_t)(yr * yr) + (uint64_t)(yi * yi);
  }
}

int16_t kws_log2_q8(uint64_t e) {
  int n = 0, b;
  uint64_t m;
  uint32_t idx, frac, lo, hi, f;
  if (e <= 1) return 0;
  for (b = 32; b > 0; b >>= 1) {
    if ((e >> (n + b)) != 0) n += b;
  }
  m = e << (63 - n);
  idx = (uint32_t)(m >> (63 - KWS_LOG_TABLE_BITS)) & ((1u << KWS_LOG_TABLE_BITS) - 1);
  frac = (uint32_t)(m >> (63 - KWS_LOG_TABLE_BITS - 16)) & 0xFFFFu;
  lo = kws_log2_table[idx];
  hi = kws_log2_table[idx + 1];
  f = lo + (((hi - lo) * frac + (1u << 15)) >> 16);
  return (int16_t)((n << KWS_LOG_Q) + ((f + (1u << (16 - KWS_LOG_Q - 1))) >> (16 - KWS_LOG_Q)));
}

void kws_frontend_frame(const int16_t x[KWS_FRAME], int16_t prev, int16_t out[KWS_FILTERS]) {
  uint64_t power[KWS_BINS];
  int j, k, w = 0;
  kws_power_spectrum(x, prev, power);
  for (j = 0; j < KWS_FILTERS; ++j) {
    const int start = kws_mel_start[j], len = kws_mel_len[j];
    uint64_t e = 0; /* < 2^62.6: P < 2^52.3, >> 6, times at most 81920 of Q12 weight per filter */
    for (k = 0; k < len; ++k) e += (power[start + k] >> KWS_POWER_SHIFT) * kws_mel_weights[w + k];
    w += len;
    out[j] = kws_log2_q8(e);
  }
}

void kws_stream_reset(kws_stream_t *s) {
  s->prev = 0;
  s->filled = 0;
}

int kws_stream_push(kws_stream_t *s, int16_t sample, int16_t out[KWS_FILTERS]) {
  int n;
  s->window[s->filled++] = sample;
  if (s->filled < KWS_FRAME) return 0;
  kws_frontend_frame(s->window, s->prev, out);
  s->prev = s->window[KWS_HOP - 1];
  for (n = 0; n < KWS_FRAME - KWS_HOP; ++n) s->window[n] = s->window[n + KWS_HOP];
  s->filled = KWS_FRAME - KWS_HOP;
  return 1;
}
