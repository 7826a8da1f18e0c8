/* kws_frontend_q15.c: the q15 log-mel front end (features int_logmel_q15), the API of
 * kws_frontend.h; a model trained on these features gets this file as kws_frontend.c. Every step
 * is the integer operation of training/tasks/int_frontend_q15.py, in the same order where
 * rounding depends on it. A complex value is one 32-bit word (real part in the low half,
 * imaginary part in the high half): on a core with the DSP extension an add of two is one
 * instruction and a product three; elsewhere plain C computes the same bits. */
#include "kws_frontend.h"

#include <string.h>

#define KWS_NFFT 512
#define KWS_HALF 256
#define KWS_PREEMPH_Q15 31785 /* round(0.97 * 2^15) */
#define KWS_LOG_SCALE_OFFSET 4096

/* kws_frontend_tables.c (generated from the formulas of the NumPy references; a test checks it) */
extern const int16_t kws_window_q15[KWS_FRAME];
extern const uint8_t kws_bitrev[KWS_HALF];
extern const uint16_t kws_mel_start[KWS_FILTERS];
extern const uint16_t kws_mel_len[KWS_FILTERS];
extern const uint16_t kws_mel_weights[];
/* per stage of q = 64, 16, 4 and butterfly i = 1..q-1, the twiddles W256^(i m), W256^(2 i m),
 * W256^(3 i m) (m = 256 / 4q) as (c, s) of c - i s in Q15: 81 triples */
extern const uint32_t kws_fft_twiddle_q15[243];
extern const uint32_t kws_split_twiddle_q15[129]; /* -i W512^k as (c, s), k = 0..128 */

#if defined(__GNUC__)
#define KWS_INLINE static inline __attribute__((always_inline))
#else
#define KWS_INLINE static inline
#endif

/* Lanes of a packed word: the low and the high int16. */
KWS_INLINE int32_t kws_lo(uint32_t a) { return (int16_t)(a & 0xFFFFu); }
KWS_INLINE int32_t kws_hi(uint32_t a) { return (int16_t)(a >> 16); }
KWS_INLINE uint32_t kws_pack(int32_t lo, int32_t hi) {
  return (uint32_t)(uint16_t)lo | ((uint32_t)(uint16_t)hi << 16);
}

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#define KWS_OP2(name, insn)                                                  \
  KWS_INLINE uint32_t name(uint32_t a, uint32_t b) {                         \
    uint32_t r;                                                              \
    __asm__(insn " %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));                  \
    return r;                                                                \
  }
KWS_OP2(kws_shadd16, "shadd16") /* ((a + b) >> 1) per lane */
KWS_OP2(kws_shsub16, "shsub16") /* ((a - b) >> 1) per lane */
KWS_OP2(kws_sadd16, "sadd16")   /* a + b per lane (in range: see int_frontend_q15.py) */
KWS_OP2(kws_ssub16, "ssub16")   /* a - b per lane */
KWS_OP2(kws_ssax, "ssax")       /* (a.lo + b.hi, a.hi - b.lo): a - i b */
KWS_OP2(kws_sasx, "sasx")       /* (a.lo - b.hi, a.hi + b.lo): a + i b */
KWS_INLINE int32_t kws_smuad(uint32_t a, uint32_t b) { /* a.lo b.lo + a.hi b.hi */
  int32_t r;
  __asm__("smuad %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
KWS_INLINE int32_t kws_smusdx(uint32_t a, uint32_t b) { /* a.lo b.hi - a.hi b.lo */
  int32_t r;
  __asm__("smusdx %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
KWS_INLINE int32_t kws_smlabb(uint32_t a, uint32_t b, int32_t acc) { /* a.lo b.lo + acc */
  int32_t r;
  __asm__("smlabb %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
  return r;
}
KWS_INLINE int32_t kws_smlatt(uint32_t a, uint32_t b, int32_t acc) { /* a.hi b.hi + acc */
  int32_t r;
  __asm__("smlatt %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
  return r;
}
/* (lo's low half, hi's low half): PKHBT, the pack of two int16 */
KWS_INLINE uint32_t kws_pkhbt(int32_t lo, int32_t hi) {
  uint32_t r;
  __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
  return r;
}
/* (hi's high half, lo >> 16): PKHTB */
KWS_INLINE uint32_t kws_pkhtb(int32_t hi, int32_t lo) {
  uint32_t r;
  __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(hi), "r"(lo));
  return r;
}
#else
KWS_INLINE uint32_t kws_shadd16(uint32_t a, uint32_t b) {
  return kws_pack((kws_lo(a) + kws_lo(b)) >> 1, (kws_hi(a) + kws_hi(b)) >> 1);
}
KWS_INLINE uint32_t kws_shsub16(uint32_t a, uint32_t b) {
  return kws_pack((kws_lo(a) - kws_lo(b)) >> 1, (kws_hi(a) - kws_hi(b)) >> 1);
}
KWS_INLINE uint32_t kws_sadd16(uint32_t a, uint32_t b) {
  return kws_pack(kws_lo(a) + kws_lo(b), kws_hi(a) + kws_hi(b));
}
KWS_INLINE uint32_t kws_ssub16(uint32_t a, uint32_t b) {
  return kws_pack(kws_lo(a) - kws_lo(b), kws_hi(a) - kws_hi(b));
}
KWS_INLINE uint32_t kws_ssax(uint32_t a, uint32_t b) {
  return kws_pack(kws_lo(a) + kws_hi(b), kws_hi(a) - kws_lo(b));
}
KWS_INLINE uint32_t kws_sasx(uint32_t a, uint32_t b) {
  return kws_pack(kws_lo(a) - kws_hi(b), kws_hi(a) + kws_lo(b));
}
KWS_INLINE int32_t kws_smuad(uint32_t a, uint32_t b) {
  return kws_lo(a) * kws_lo(b) + kws_hi(a) * kws_hi(b);
}
KWS_INLINE int32_t kws_smusdx(uint32_t a, uint32_t b) {
  return kws_lo(a) * kws_hi(b) - kws_hi(a) * kws_lo(b);
}
KWS_INLINE int32_t kws_smlabb(uint32_t a, uint32_t b, int32_t acc) {
  return kws_lo(a) * kws_lo(b) + acc;
}
KWS_INLINE int32_t kws_smlatt(uint32_t a, uint32_t b, int32_t acc) {
  return kws_hi(a) * kws_hi(b) + acc;
}
KWS_INLINE uint32_t kws_pkhtb(int32_t hi, int32_t lo) {
  return ((uint32_t)hi & 0xFFFF0000u) | ((uint32_t)(lo >> 16) & 0xFFFFu);
}
KWS_INLINE uint32_t kws_pkhbt(int32_t lo, int32_t hi) { return kws_pack(lo, hi); }
#endif

/* (a.lo, -a.hi): the conjugate (|a.hi| < 2^15, see int_frontend_q15.py) */
KWS_INLINE uint32_t kws_conj(uint32_t a) {
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
  uint32_t r;
  __asm__("pkhbt %0, %1, %2" : "=r"(r) : "r"(a), "r"(kws_ssub16(0, a)));
  return r;
#else
  return kws_pack(kws_lo(a), -kws_hi(a));
#endif
}

/* Two int16 of an array as one packed word (the first in the low half; one LDR). */
KWS_INLINE uint32_t kws_load2(const int16_t *p) {
  uint32_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

/* u (c - i s) / 2, the halves of ((re c + im s) >> 16, (im c - re s) >> 16); w = (c, s). */
KWS_INLINE uint32_t kws_cmul(uint32_t u, uint32_t w) {
  return kws_pkhtb(kws_smusdx(w, u), kws_smuad(u, w));
}

/* The radix-4 decimation-in-frequency butterfly on p[0], p[q], p[2q], p[3q]: halving sums and
 * differences, then (t0 + t2) / 2 and the products of t0 - t2, t1 - i t3, t1 + i t3 by their
 * twiddles, to p[0], p[q], p[2q], p[3q] (the output in bit-reversed order). */
#define KWS_BUTTERFLY_SUMS(p, q)                                             \
  const uint32_t a = p[0], b = p[q], c = p[2 * (q)], d = p[3 * (q)];         \
  const uint32_t t0 = kws_shadd16(a, c), t1 = kws_shsub16(a, c);             \
  const uint32_t t2 = kws_shadd16(b, d), t3 = kws_shsub16(b, d);             \
  p[0] = kws_shadd16(t0, t2)

/* Every twiddle 1: the products halve (the first butterfly of a group, the last stage). */
KWS_INLINE void kws_butterfly_1(uint32_t *p, int q) {
  KWS_BUTTERFLY_SUMS(p, q);
  p[q] = kws_shadd16(kws_ssub16(t0, t2), 0);
  p[2 * q] = kws_shadd16(kws_ssax(t1, t3), 0);
  p[3 * q] = kws_shadd16(kws_sasx(t1, t3), 0);
}

KWS_INLINE void kws_butterfly(uint32_t *p, int q, uint32_t w1, uint32_t w2, uint32_t w3) {
  KWS_BUTTERFLY_SUMS(p, q);
  p[q] = kws_cmul(kws_ssub16(t0, t2), w2);
  p[2 * q] = kws_cmul(kws_ssax(t1, t3), w1);
  p[3 * q] = kws_cmul(kws_sasx(t1, t3), w3);
}

/* One stage of q-point quarters (q a constant where it is inlined: immediate offsets). */
KWS_INLINE void kws_fft_stage(uint32_t *z, const int q, const uint32_t *twiddles) {
  int start, i;
  for (start = 0; start < KWS_HALF; start += 4 * q) {
    const uint32_t *w = twiddles;
    uint32_t *p = z + start;
    kws_butterfly_1(p, q);
    for (i = 1; i < q; ++i, w += 3) kws_butterfly(p + i, q, w[0], w[1], w[2]);
  }
}

/* 256-point FFT in place, natural order in, bit-reversed order out; each stage divides by 4. */
static void kws_fft256_q15(uint32_t *z) {
  int start;
  kws_fft_stage(z, 64, kws_fft_twiddle_q15);
  kws_fft_stage(z, 16, kws_fft_twiddle_q15 + 3 * 63);
  kws_fft_stage(z, 4, kws_fft_twiddle_q15 + 3 * (63 + 15));
  for (start = 0; start < KWS_HALF; start += 4) kws_butterfly_1(z + start, 1);
}

/* Step 1 for one sample: (x - round(0.97 prev)) >> 1, an int16. */
KWS_INLINE int32_t kws_emphasis(int32_t x, int32_t prev) {
  return (x - (kws_smlabb((uint32_t)prev, KWS_PREEMPH_Q15, 1 << 14) >> 15)) >> 1;
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

/* Step 2: s from the OR of the frame's y ^ (y >> 15). */
static int kws_block_shift(uint32_t bits) { return bits ? 3 + kws_msb32(bits) : 3; }

/* Steps 3-6 on the pre-emphasized frame y with its shift s: P[k] = |X[k]|^2, k = 0..256. */
static void kws_power_from(const int16_t y[KWS_FRAME], int s, uint32_t p[KWS_BINS]) {
  uint32_t z[KWS_HALF];
  const int32_t round = 1 << (s - 1);
  int n, k;
  for (n = 0; n < KWS_FRAME / 2; ++n) { /* z[m] = (v[2m], v[2m + 1]) */
    const uint32_t yy = kws_load2(y + 2 * n), ww = kws_load2(kws_window_q15 + 2 * n);
    z[n] = kws_pkhbt(kws_smlabb(yy, ww, round) >> s, kws_smlatt(yy, ww, round) >> s);
  }
  for (n = KWS_FRAME / 2; n < KWS_HALF; ++n) z[n] = 0;
  kws_fft256_q15(z);
  { /* k = 0: -i W^0 = -i, whose product halves (d.hi, -d.lo) */
    const uint32_t a = z[0], b = kws_conj(a); /* Z[256] is Z[0] */
    const uint32_t e = kws_shadd16(a, b), d = kws_ssub16(a, b);
    const uint32_t r = kws_pack(kws_hi(d) >> 1, (-kws_lo(d)) >> 1);
    const uint32_t lo = kws_sadd16(e, r), hi = kws_ssub16(e, r);
    p[0] = (uint32_t)kws_smuad(lo, lo), p[KWS_HALF] = (uint32_t)kws_smuad(hi, hi);
  }
  for (k = 1; k <= KWS_HALF / 2; ++k) {
    const uint32_t a = z[kws_bitrev[k]], b = kws_conj(z[kws_bitrev[KWS_HALF - k]]);
    const uint32_t e = kws_shadd16(a, b), d = kws_ssub16(a, b);
    const uint32_t r = kws_cmul(d, kws_split_twiddle_q15[k]);
    const uint32_t lo = kws_sadd16(e, r), hi = kws_ssub16(e, r);
    p[k] = (uint32_t)kws_smuad(lo, lo);
    p[KWS_HALF - k] = (uint32_t)kws_smuad(hi, hi); /* |conj(e - r)|^2; k = 128: this one */
  }
}

/* Steps 7-8: L[j] of the power spectrum of a frame of shift s. */
static void kws_log_mel(const uint32_t p[KWS_BINS], int s, int16_t out[KWS_FILTERS]) {
  int j, k, w = 0;
  for (j = 0; j < KWS_FILTERS; ++j) {
    const int start = kws_mel_start[j], len = kws_mel_len[j];
    uint64_t e = 0; /* P < 2^30 times at most 81920 of Q12 weight per filter: < 2^46.4 */
    int32_t level;
    for (k = 0; k < len; ++k) e += (uint64_t)p[start + k] * kws_mel_weights[w + k];
    w += len;
    level = kws_log2_q8(e) + 512 * s - KWS_LOG_SCALE_OFFSET;
    out[j] = (int16_t)(e <= 1 || level < 0 ? 0 : level);
  }
}

/* Steps 1-2 of a frame of raw samples: y and s. */
static int kws_emphasized(const int16_t x[KWS_FRAME], int16_t prev, int16_t y[KWS_FRAME]) {
  uint32_t bits = 0;
  int32_t before = prev, n;
  for (n = 0; n < KWS_FRAME; ++n) {
    const int32_t v = kws_emphasis(x[n], before);
    bits |= (uint32_t)(v ^ (v >> 31)), y[n] = (int16_t)v, before = x[n]; /* v is an int16 */
  }
  return kws_block_shift(bits);
}

void kws_power_spectrum(const int16_t x[KWS_FRAME], int16_t prev, uint32_t lo[KWS_BINS],
                        uint32_t hi[KWS_BINS]) {
  int16_t y[KWS_FRAME];
  int k;
  kws_power_from(y, kws_emphasized(x, prev, y), lo); /* P at the frame's own scale */
  for (k = 0; k < KWS_BINS; ++k) hi[k] = 0;
}

int16_t kws_log2_q8(uint64_t e) {
  extern const uint32_t kws_log2_table[65];
  const uint32_t e_hi = (uint32_t)(e >> 32);
  int n;
  uint32_t top, idx, frac, lo, hi, f;
  if (e <= 1) return 0;
  n = e_hi ? 32 + kws_msb32(e_hi) : kws_msb32((uint32_t)e);
  /* top = the high word of e << (63 - n): the leading one at bit 31, then the fraction */
  top = n >= 31 ? (uint32_t)(e >> (n - 31)) : (uint32_t)e << (31 - n);
  idx = (top >> 25) & 63u;
  frac = (top >> 9) & 0xFFFFu;
  lo = kws_log2_table[idx];
  hi = kws_log2_table[idx + 1];
  f = lo + (((hi - lo) * frac + (1u << 15)) >> 16);
  return (int16_t)((n << KWS_LOG_Q) + ((f + (1u << (16 - KWS_LOG_Q - 1))) >> (16 - KWS_LOG_Q)));
}

void kws_frontend_frame(const int16_t x[KWS_FRAME], int16_t prev, int16_t out[KWS_FILTERS]) {
  int16_t y[KWS_FRAME];
  uint32_t p[KWS_BINS];
  const int s = kws_emphasized(x, prev, y);
  kws_power_from(y, s, p);
  kws_log_mel(p, s, out);
}

/* The stream keeps the pre-emphasized samples y in window[] (prev: the last raw sample) and
 * the OR of y ^ (y >> 15) of each 80-sample block in bits[], so a frame's s costs 5 ORs. */
void kws_stream_reset(kws_stream_t *s) {
  int b;
  s->prev = 0;
  s->filled = 0;
  for (b = 0; b < KWS_BLOCKS; ++b) s->bits[b] = 0;
}

int kws_stream_push(kws_stream_t *s, int16_t sample, int16_t out[KWS_FILTERS]) {
  return kws_stream_write(s, &sample, 1, out);
}

/* A frame from the stream's window: out[], then the window moves on by a hop. */
static void kws_stream_frame(kws_stream_t *s, int16_t out[KWS_FILTERS]) {
  uint32_t p[KWS_BINS], bits = 0;
  int b, shift;
  for (b = 0; b < KWS_BLOCKS; ++b) bits |= s->bits[b];
  shift = kws_block_shift(bits);
  kws_power_from(s->window, shift, p);
  kws_log_mel(p, shift, out);
  memmove(s->window, s->window + KWS_HOP, (KWS_FRAME - KWS_HOP) * sizeof s->window[0]);
  for (b = 0; b < KWS_BLOCKS; ++b) s->bits[b] = b + 2 < KWS_BLOCKS ? s->bits[b + 2] : 0;
  s->filled = KWS_FRAME - KWS_HOP;
}

int kws_stream_write(kws_stream_t *s, const int16_t *samples, int n, int16_t out[KWS_FILTERS]) {
  int i = 0, frame = 0;
  int32_t prev = s->prev;
  if (n > KWS_HOP) return -1;
  while (i < n) { /* the samples up to the end of the current block, then its OR */
    const int block = s->filled / KWS_BLOCK, room = (block + 1) * KWS_BLOCK - s->filled;
    const int count = room < n - i ? room : n - i;
    int16_t *y = s->window + s->filled;
    uint32_t bits = s->bits[block];
    int j;
    for (j = 0; j < count; ++j) {
      const int32_t x = samples[i + j], v = kws_emphasis(x, prev);
      bits |= (uint32_t)(v ^ (v >> 31)), y[j] = (int16_t)v, prev = x; /* v is an int16 */
    }
    s->bits[block] = (uint16_t)bits, s->filled += count, i += count;
    if (s->filled == KWS_FRAME) { /* at most once: frames are KWS_HOP >= n samples apart */
      kws_stream_frame(s, out);
      frame = 1;
    }
  }
  s->prev = (int16_t)prev;
  return frame;
}
