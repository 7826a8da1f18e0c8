/* zoo_int8.h: TensorFlow Lite's int8 kernel arithmetic in plain C99, written by `zoo export
 * --form c`. Every function reproduces the integer arithmetic of the TFLite Micro reference
 * kernel named beside it (tflite-micro 90b983c, tensorflow/lite/kernels/internal/...), so the
 * generated model is bit-exact with the .tflite models it came from. The multipliers, shifts
 * and ranges are computed at export time exactly as the kernels' Prepare computes them.
 *
 * Assumes two's complement integers with an arithmetic right shift of negative values (every
 * compiler the zoo targets: gcc, clang, arm-none-eabi-gcc, armclang; gemmlowp assumes the same).
 * Define ZOO_USE_ARM_DSP on a Cortex-M with the DSP extension (M4, M7, M33, M55) for dual
 * 16-bit multiply-accumulates in the fully connected layers; the results are the same bits.
 * Cores without SIMD (Cortex-M0+, M3, RISC-V) get their own fully connected rows, two at a
 * time (ZOO_FC_TWO_ROWS), and a core without a 32 x 32 -> 64-bit multiply (Armv6-M: the M0+)
 * a high multiply of 32-bit products only (ZOO_NO_LONG_MULTIPLY); the same bits again. */
#ifndef ZOO_INT8_H_
#define ZOO_INT8_H_

#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE_SIZE__)
#define ZOO_UNROLL _Pragma("GCC unroll 8") /* the row lengths are constants: short loops */
#else
#define ZOO_UNROLL
#endif

#if defined(__GNUC__)
#define ZOO_ALIGNED __attribute__((aligned(4)))
#define ZOO_INLINE static inline __attribute__((always_inline))
#else
#define ZOO_ALIGNED
#define ZOO_INLINE static inline
#endif

#ifndef ZOO_MAX_FC_IN
#define ZOO_MAX_FC_IN 1024 /* the widest FULLY_CONNECTED input (zoo_model.c sets it) */
#endif

#if defined(ZOO_USE_ARM_DSP) && !(defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP)
#error "ZOO_USE_ARM_DSP needs a core with the DSP extension (e.g. -mcpu=cortex-m4)"
#endif

/* Armv6-M (Cortex-M0, M0+, M1) has MULS (32 x 32 -> low 32 bits) only: a 64-bit product is a
 * call to libgcc's __aeabi_lmul, about 35 instructions. */
#if !defined(ZOO_NO_LONG_MULTIPLY) && defined(__ARM_ARCH_6M__)
#define ZOO_NO_LONG_MULTIPLY 1
#endif
/* Cores that do not vectorize the portable dot product (no SIMD for GCC to use): two rows a
 * pass, each input byte loaded once for both. The host keeps the portable form, which GCC
 * vectorizes. */
#if !defined(ZOO_FC_TWO_ROWS) && !defined(ZOO_USE_ARM_DSP) && \
    ((defined(__arm__) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M') || \
     defined(__riscv))
#define ZOO_FC_TWO_ROWS 1
#endif

/* Every operand rescaled here is bounded, |x| < 2^30: the generator checks it for each
 * FULLY_CONNECTED accumulator and MUL product, and ADD/SUB operands stay below 2^29 by
 * construction. Within that bound gemmlowp's high mul is floor((2xm + 2^31) / 2^32) (one
 * SMMULR on a Cortex-M with DSP) and its rounding divide is one add and one shift without
 * overflow: the same bits as gemmlowp's SaturatingRoundingDoublingHighMul and
 * RoundingDivideByPOT (fixedpoint.h), with fewer instructions and no branch. */
#if defined(ZOO_NO_LONG_MULTIPLY) && ZOO_NO_LONG_MULTIPLY
/* The same high mul from four 16 x 16-bit products (Hacker's Delight, 8-2: the high word of a
 * signed 32 x 32 product) plus the rounding bit 2^31 of the low word: every product and sum
 * fits in 32 bits, for any int32 b and |a| < 2^30. */
ZOO_INLINE int32_t zoo_srdhm_32(int32_t a, int32_t b) {
  const int32_t u = a * 2;
  const uint32_t u0 = (uint32_t)u & 0xFFFFu, v0 = (uint32_t)b & 0xFFFFu;
  const int32_t u1 = u >> 16, v1 = b >> 16;
  const uint32_t w0 = u0 * v0;
  const int32_t t = u1 * (int32_t)v0 + (int32_t)(w0 >> 16);
  const int32_t w1 = (int32_t)u0 * v1 + (t & 0xFFFF);
  /* high word + bit 31 of the low word ((w1 << 16) | (w0 & 0xFFFF)): the + 2^31 nudge */
  return u1 * v1 + (t >> 16) + (w1 >> 16) + ((w1 >> 15) & 1);
}
#endif
ZOO_INLINE int32_t zoo_srdhm_bounded(int32_t a, int32_t b) {
#if defined(ZOO_USE_ARM_DSP)
  int32_t r;
  __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(a * 2), "r"(b));
  return r;
#elif defined(ZOO_NO_LONG_MULTIPLY) && ZOO_NO_LONG_MULTIPLY
  return zoo_srdhm_32(a, b);
#else
  return (int32_t)(((int64_t)(a * 2) * b + ((int64_t)1 << 31)) >> 32);
#endif
}
ZOO_INLINE int32_t zoo_rdbpot_bounded(int32_t x, int exponent) {
  if (exponent == 0) return x;
  return (x + (1 << (exponent - 1)) + (x >> 31)) >> exponent;
}

/* RoundingDivideByPOT(x, exponent) + zp in one shift: floor((x + 2^(e-1) - [x < 0] + zp 2^e) / 2^e)
 * is the rounded quotient plus zp exactly, and stays in int32 for |x| < 2^30, |zp| <= 128 and
 * e <= 22 (every rescaled operand here is below 2^30, see above). */
ZOO_INLINE int32_t zoo_rdbpot_zp(int32_t x, int exponent, int32_t zp) {
  if (exponent == 0) return x + zp;
  if (exponent > 22) return zoo_rdbpot_bounded(x, exponent) + zp;
  return (x + ((1 << (exponent - 1)) + zp * (1 << exponent)) + (x >> 31)) >> exponent;
}

/* MultiplyByQuantizedMultiplier (common.cc, double rounding: TFLite Micro's default build). */
ZOO_INLINE int32_t zoo_mbqm(int32_t x, int32_t multiplier, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  return zoo_rdbpot_bounded(zoo_srdhm_bounded((int32_t)((uint32_t)x << left), multiplier), right);
}

/* The same + an output zero point. */
ZOO_INLINE int32_t zoo_mbqm_zp(int32_t x, int32_t multiplier, int shift, int32_t zp) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  return zoo_rdbpot_zp(zoo_srdhm_bounded((int32_t)((uint32_t)x << left), multiplier), right, zp);
}

/* MultiplyByQuantizedMultiplierSmallerThanOneExp (common.h): shift <= 0. */
ZOO_INLINE int32_t zoo_mbqm_small(int32_t x, int32_t multiplier, int shift) {
  return zoo_rdbpot_bounded(zoo_srdhm_bounded(x, multiplier), -shift);
}
ZOO_INLINE int32_t zoo_mbqm_small_zp(int32_t x, int32_t multiplier, int shift, int32_t zp) {
  return zoo_rdbpot_zp(zoo_srdhm_bounded(x, multiplier), -shift, zp);
}

/* The FULLY_CONNECTED rescale. LiteRT's builtin FULLY_CONNECTED rounds once (TFLite's
 * TFLITE_SINGLE_ROUNDING form: one 64-bit product, one rounding shift) where TFLite Micro
 * rounds twice; its other int8 kernels round as TFLite Micro does (measured op by op). */
#if defined(ZOO_FC_SINGLE_ROUNDING) && ZOO_FC_SINGLE_ROUNDING
ZOO_INLINE int32_t zoo_mbqm_fc(int32_t x, int32_t multiplier, int shift) {
  const int total_shift = 31 - shift;
  const int64_t round = (int64_t)1 << (total_shift - 1);
  return (int32_t)(((int64_t)x * multiplier + round) >> total_shift);
}
#define zoo_mbqm_fc_zp(x, multiplier, shift, zp) (zoo_mbqm_fc(x, multiplier, shift) + (zp))
#else
#define zoo_mbqm_fc zoo_mbqm
#define zoo_mbqm_fc_zp zoo_mbqm_zp
#endif

ZOO_INLINE int8_t zoo_clamp_s8(int32_t v, int32_t lo, int32_t hi) {
#if defined(ZOO_USE_ARM_DSP)
  if (lo == -128 && hi == 127) { /* no fused activation: one SSAT */
    int32_t r;
    __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(v));
    return (int8_t)r;
  }
#endif
  return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}

ZOO_INLINE void zoo_copy_s8(int n, const int8_t *in, int8_t *out) {
  int i;
  for (i = 0; i < n; ++i) out[i] = in[i];
}

/* Any int8 -> int8 op of one input (LOGISTIC, TANH, RELU, MUL / MINIMUM by a constant ...):
 * its 256 outputs, computed at export time by running the TFLite op itself. table points at
 * the entry of input 0 (the array's element 128). */
ZOO_INLINE void zoo_table_s8(int n, const int8_t *in, const int8_t *table, int8_t *out) {
  int i;
  ZOO_UNROLL
  for (i = 0; i < n; ++i) out[i] = table[in[i]];
}

/* The FULLY_CONNECTED dot products: portable, and on a Cortex-M with DSP four MACs per word of
 * weights (SXTB16 + SMLAD). */
#if defined(ZOO_USE_ARM_DSP)
ZOO_INLINE uint32_t zoo_sxtb16(uint32_t v) {
  uint32_t r;
  __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(v));
  return r;
}
ZOO_INLINE uint32_t zoo_sxtb16_ror8(uint32_t v) {
  uint32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}
ZOO_INLINE uint32_t zoo_load32(const void *p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}
/* acc + the four MACs of a word of int8 weights w with x as expanded pairs (xa, xb). One asm
 * block, so that the compiler keeps each word's two unpacked halves in one scratch register
 * instead of scheduling the SXTB16s early and spilling them. */
ZOO_INLINE int32_t zoo_mac4(uint32_t w, uint32_t xa, uint32_t xb, int32_t acc) {
  uint32_t t;
  __asm__("sxtb16 %[t], %[w]\n\t"
          "smlad %[acc], %[t], %[xa], %[acc]\n\t"
          "sxtb16 %[t], %[w], ror #8\n\t"
          "smlad %[acc], %[t], %[xb], %[acc]"
          : [acc] "+r"(acc), [t] "=&r"(t)
          : [w] "r"(w), [xa] "r"(xa), [xb] "r"(xb));
  return acc;
}
#endif

ZOO_INLINE int32_t zoo_dot_s8(const int8_t *x, const int8_t *w, int n_in) {
  int32_t acc = 0;
  int d;
  for (d = 0; d < n_in; ++d) acc += (int32_t)x[d] * (int32_t)w[d];
  return acc;
}

/* Two rows (w and w + stride) against x: acc[0], acc[1] start at their biases. Not inlined
 * in Thumb-1 (Cortex-M0+): with eight registers the loop needs them all, 10 instructions per
 * two MACs on its own instead of 15 when the rescale around it competes for them (measured). */
#if defined(__GNUC__) && defined(__thumb__) && !defined(__thumb2__)
#define ZOO_DOT2_INLINE static __attribute__((noinline, unused))
#else
#define ZOO_DOT2_INLINE ZOO_INLINE
#endif
ZOO_DOT2_INLINE void zoo_dot2_s8(const int8_t *x, const int8_t *w, int stride, int n_in,
                              int32_t *acc) {
  const int8_t *w1 = w + stride;
  int32_t a0 = acc[0], a1 = acc[1];
  int d;
  for (d = 0; d < n_in; ++d) {
    const int32_t xd = x[d];
    a0 += xd * w[d];
    a1 += xd * w1[d];
  }
  acc[0] = a0;
  acc[1] = a1;
}

#if defined(ZOO_USE_ARM_DSP)
/* x as int16 pairs in the order SXTB16 takes bytes from a word of weights: (x0, x2), (x1, x3),
 * (x4, x6), ... and zeros up to `stride`, so a row of weights needs no unpacking of x. */
ZOO_INLINE void zoo_expand_s8(const int8_t *x, int n_in, int stride, uint32_t *pairs) {
  int d;
  for (d = 0; d + 4 <= n_in; d += 4) { /* whole words: one load, two SXTB16 */
    const uint32_t v = zoo_load32(x + d);
    pairs[d / 2] = zoo_sxtb16(v);
    pairs[d / 2 + 1] = zoo_sxtb16_ror8(v);
  }
  for (; d < stride; d += 4) { /* the last partial word and the zero padding */
    const int32_t x0 = d < n_in ? x[d] : 0, x1 = d + 1 < n_in ? x[d + 1] : 0;
    const int32_t x2 = d + 2 < n_in ? x[d + 2] : 0, x3 = d + 3 < n_in ? x[d + 3] : 0;
    pairs[d / 2] = (uint32_t)(uint16_t)x0 | ((uint32_t)(uint16_t)x2 << 16);
    pairs[d / 2 + 1] = (uint32_t)(uint16_t)x1 | ((uint32_t)(uint16_t)x3 << 16);
  }
}

/* Four rows at once: each pair of x words is loaded once for the four rows, each word of
 * weights is four MACs (two SXTB16, two SMLAD); the rows are `stride` bytes apart, so one
 * pointer with constant offsets walks all four. The accumulators start at the biases. */
ZOO_INLINE void zoo_dot4_dsp(const uint32_t *pairs, const int8_t *w, int stride,
                             const int32_t *bias, int32_t *acc) {
  int32_t a0 = bias[0], a1 = bias[1], a2 = bias[2], a3 = bias[3];
  const int words = stride / 4;
  int k;
  ZOO_UNROLL
  for (k = 0; k < words; ++k) {
    const uint32_t xa = pairs[2 * k], xb = pairs[2 * k + 1];
    const int8_t *wk = w + 4 * k;
    const uint32_t v0 = zoo_load32(wk), v1 = zoo_load32(wk + stride);
    const uint32_t v2 = zoo_load32(wk + 2 * stride), v3 = zoo_load32(wk + 3 * stride);
    a0 = zoo_mac4(v0, xa, xb, a0);
    a1 = zoo_mac4(v1, xa, xb, a1);
    a2 = zoo_mac4(v2, xa, xb, a2);
    a3 = zoo_mac4(v3, xa, xb, a3);
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = a2;
  acc[3] = a3;
}

/* One row: the remainder of n_out / 4. */
ZOO_INLINE int32_t zoo_dot1_dsp(const uint32_t *pairs, const int8_t *w, int stride,
                                int32_t bias) {
  int32_t a = bias;
  const int words = stride / 4;
  int k;
  for (k = 0; k < words; ++k) {
    a = zoo_mac4(zoo_load32(w + 4 * k), pairs[2 * k], pairs[2 * k + 1], a);
  }
  return a;
}
#endif

/* The rescale of output row o: one multiplier and shift for every row (per-tensor weights; the
 * output zero point folded into the rounding), or row o's own (per_channel: per-channel weights,
 * as the converter stores a QAT graph's; the zero point added after, which measured fewer
 * instructions with shifts that vary by row). The same bits either way (zoo_rdbpot_zp). */
ZOO_INLINE int8_t zoo_fc_out(int32_t acc, const int32_t *multiplier, const int8_t *shift,
                             int per_channel, int o, int32_t out_zp, int32_t lo, int32_t hi) {
  if (per_channel) {
    return zoo_clamp_s8(zoo_mbqm_fc(acc, multiplier[o], shift[o]) + out_zp, lo, hi);
  }
  return zoo_clamp_s8(zoo_mbqm_fc_zp(acc, multiplier[0], shift[0], out_zp), lo, hi);
}
#define ZOO_FC_OUT(acc, o) zoo_fc_out((acc), multiplier, shift, per_channel, (o), out_zp, lo, hi)

/* FULLY_CONNECTED, both forms: the one implementation of zoo_fc_s8 and zoo_fc_s8_pc, which
 * call it with per_channel a constant (always inlined: each form compiles to its own loops). */
ZOO_INLINE void zoo_fc_rows(const int8_t *x, int n_in, int stride, int n_out, const int8_t *w,
                            const int32_t *bias, const int32_t *multiplier, const int8_t *shift,
                            int per_channel, int32_t out_zp, int32_t lo, int32_t hi, int8_t *y) {
  int o = 0;
#if defined(ZOO_USE_ARM_DSP)
  uint32_t pairs[ZOO_MAX_FC_IN / 2]; /* stride <= ZOO_MAX_FC_IN, a multiple of 4 */
  zoo_expand_s8(x, n_in, stride, pairs);
  const int n4 = n_out - n_out % 4;
  for (; o < n4; o += 4) {
    int32_t acc[4];
    zoo_dot4_dsp(pairs, w + o * stride, stride, bias + o, acc);
#if defined(__OPTIMIZE_SIZE__) /* one rescale in the code, not four */
    {
      int r;
      for (r = 0; r < 4; ++r) y[o + r] = ZOO_FC_OUT(acc[r], o + r);
    }
#else
    y[o] = ZOO_FC_OUT(acc[0], o);
    y[o + 1] = ZOO_FC_OUT(acc[1], o + 1);
    y[o + 2] = ZOO_FC_OUT(acc[2], o + 2);
    y[o + 3] = ZOO_FC_OUT(acc[3], o + 3);
#endif
  }
  for (o = n4; o < n_out; ++o) { /* the n_out % 4 rows left */
    const int32_t acc = zoo_dot1_dsp(pairs, w + o * stride, stride, bias[o]);
    y[o] = ZOO_FC_OUT(acc, o);
  }
#elif defined(ZOO_FC_TWO_ROWS) && ZOO_FC_TWO_ROWS
  int8_t xc[ZOO_MAX_FC_IN] ZOO_ALIGNED; /* y may be x's buffer: x is read whole first */
  int d;
  for (d = 0; d < n_in; ++d) xc[d] = x[d];
  for (; o + 2 <= n_out; o += 2) {
    int32_t acc[2];
    acc[0] = bias[o], acc[1] = bias[o + 1];
    zoo_dot2_s8(xc, w + o * stride, stride, n_in, acc);
    y[o] = ZOO_FC_OUT(acc[0], o);
    y[o + 1] = ZOO_FC_OUT(acc[1], o + 1);
  }
  if (o < n_out) y[o] = ZOO_FC_OUT(zoo_dot_s8(xc, w + o * stride, n_in) + bias[o], o);
#else
  /* A private copy of x: the compiler then knows y does not alias it and vectorizes the
   * constant-length rows (GCC -O2 does, for lengths that are a multiple of 16). */
  int8_t xc[ZOO_MAX_FC_IN] ZOO_ALIGNED;
  int d;
  for (d = 0; d < n_in; ++d) xc[d] = x[d];
  for (; o < n_out; ++o) {
    const int32_t acc = zoo_dot_s8(xc, w + o * stride, n_in) + bias[o];
    y[o] = ZOO_FC_OUT(acc, o);
  }
#endif
}
#undef ZOO_FC_OUT

/* FULLY_CONNECTED (reference integer_ops/fully_connected.h), batch 1, weights symmetric,
 * per-tensor: one multiplier and shift. bias already holds bias - input_zero_point * sum(weights
 * row): the same integer as TFLite's sum((x - zx) * w) + bias. Rows are `stride` bytes (n_in
 * padded with zeros to a word). */
ZOO_INLINE void zoo_fc_s8(const int8_t *x, int n_in, int stride, int n_out, const int8_t *w,
                          const int32_t *bias, int32_t multiplier, int shift, int32_t out_zp,
                          int32_t lo, int32_t hi, int8_t *y) {
  const int8_t shift8 = (int8_t)shift;
  zoo_fc_rows(x, n_in, stride, n_out, w, bias, &multiplier, &shift8, 0, out_zp, lo, hi, y);
}

/* The same with one multiplier and shift per output row (per-channel weights). */
ZOO_INLINE void zoo_fc_s8_pc(const int8_t *x, int n_in, int stride, int n_out, const int8_t *w,
                             const int32_t *bias, const int32_t *multiplier, const int8_t *shift,
                             int32_t out_zp, int32_t lo, int32_t hi, int8_t *y) {
  zoo_fc_rows(x, n_in, stride, n_out, w, bias, multiplier, shift, 1, out_zp, lo, hi, y);
}

/* An ADD / SUB input v (= offset + int8 value) shifted left by 20 and rescaled. The
 * multiplier 2^30 with shift 0 (the input whose scale is the larger of the two) is v * 2^19
 * exactly: gemmlowp's high mul of an even x by 2^30 is x / 2. */
#if defined(ZOO_NO_LONG_MULTIPLY) && ZOO_NO_LONG_MULTIPLY
/* The high mul of v 2^20 by b for |v| < 2^9 (an ADD / SUB input: offset + int8) in two 32-bit
 * products: (v b 2^21 + 2^31) / 2^32 = floor((v b + 2^10) / 2^11), b split at bit 11. */
ZOO_INLINE int32_t zoo_srdhm_v20(int32_t v, int32_t b) {
  return v * (b >> 11) + ((v * (b & 0x7FF) + (1 << 10)) >> 11);
}
#endif
ZOO_INLINE int32_t zoo_addsub_in(int32_t v, int32_t multiplier, int shift) {
  if (multiplier == (1 << 30) && shift == 0) return v * (1 << 19);
#if defined(ZOO_NO_LONG_MULTIPLY) && ZOO_NO_LONG_MULTIPLY
  return zoo_rdbpot_bounded(zoo_srdhm_v20(v, multiplier), -shift);
#else
  return zoo_mbqm_small(v * (1 << 20), multiplier, shift);
#endif
}

/* ADD / SUB (reference integer_ops/add.h AddFunc, reference/sub.h): both inputs shifted left by
 * 20 bits and rescaled to a common scale, summed, rescaled to the output. a_step / b_step are 1
 * for a full tensor, 0 to broadcast a single element. */
ZOO_INLINE void zoo_addsub_s8(int n, const int8_t *a, int a_step, const int8_t *b, int b_step,
                              int32_t off_a, int32_t m_a, int s_a, int32_t off_b, int32_t m_b,
                              int s_b, int32_t m_out, int s_out, int32_t out_zp, int32_t lo,
                              int32_t hi, int subtract, int8_t *out) {
  int i;
  ZOO_UNROLL
  for (i = 0; i < n; ++i) {
    const int32_t va = zoo_addsub_in(off_a + a[i * a_step], m_a, s_a);
    const int32_t vb = zoo_addsub_in(off_b + b[i * b_step], m_b, s_b);
    const int32_t raw = subtract ? va - vb : va + vb;
    out[i] = zoo_clamp_s8(zoo_mbqm_small_zp(raw, m_out, s_out, out_zp), lo, hi);
  }
}
#define zoo_add_s8(n, a, as, b, bs, oa, ma, sa, ob, mb, sb, mo, so, zp, lo, hi, out) \
  zoo_addsub_s8(n, a, as, b, bs, oa, ma, sa, ob, mb, sb, mo, so, zp, lo, hi, 0, out)
#define zoo_sub_s8(n, a, as, b, bs, oa, ma, sa, ob, mb, sb, mo, so, zp, lo, hi, out) \
  zoo_addsub_s8(n, a, as, b, bs, oa, ma, sa, ob, mb, sb, mo, so, zp, lo, hi, 1, out)

/* MUL (reference integer_ops/mul.h MulElementwise). */
ZOO_INLINE void zoo_mul_s8(int n, const int8_t *a, int a_step, const int8_t *b, int b_step,
                           int32_t off_a, int32_t off_b, int32_t multiplier, int shift,
                           int32_t out_zp, int32_t lo, int32_t hi, int8_t *out) {
  int i;
  for (i = 0; i < n; ++i) {
    const int32_t prod = (off_a + a[i * a_step]) * (off_b + b[i * b_step]);
    out[i] = zoo_clamp_s8(zoo_mbqm_zp(prod, multiplier, shift, out_zp), lo, hi);
  }
}

/* MINIMUM / MAXIMUM (reference maximum_minimum.h): a compare of the raw int8 values. */
ZOO_INLINE void zoo_min_s8(int n, const int8_t *a, int a_step, const int8_t *b, int b_step,
                           int8_t *out) {
  int i;
  for (i = 0; i < n; ++i) out[i] = a[i * a_step] < b[i * b_step] ? a[i * a_step] : b[i * b_step];
}
ZOO_INLINE void zoo_max_s8(int n, const int8_t *a, int a_step, const int8_t *b, int b_step,
                           int8_t *out) {
  int i;
  for (i = 0; i < n; ++i) out[i] = a[i * a_step] > b[i * b_step] ? a[i * a_step] : b[i * b_step];
}

#endif /* ZOO_INT8_H_ */
