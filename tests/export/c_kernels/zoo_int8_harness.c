/* zoo_int8_harness.c: every kernel of export/c_backend/templates/zoo_int8.h run on the cases of
 * cases.h (written by tests/export/test_zoo_int8_kernels.py), one output line per case:
 * "<case index> <int32 values...>", or "<case index> skip" for a kernel this build lacks (the
 * Cortex-M DSP helpers on the host). The same file builds for the host and, with
 * -DZOO_USE_ARM_DSP, for a Cortex-M4 run under qemu-arm; for a Cortex-M0+ (its 32-bit high
 * multiply, ZOO_NO_LONG_MULTIPLY, and two rows a pass, ZOO_FC_TWO_ROWS) and an RV32IMC (two
 * rows) the same. The test compares every line with its NumPy oracle of TFLite's reference
 * arithmetic.
 *
 * A case in zoo_cases[]: kernel id, payload length, payload (int32 words). Scalar kernels take
 * tuples and give one value per tuple; the others are described beside their runners. */
#include <stdio.h>

#include "zoo_int8.h"
#include "cases.h" /* zoo_cases[], ZOO_CASE_WORDS, the kernel ids K_... */

#define MAX_OUT 4096
static int32_t out[MAX_OUT];
static int8_t a8[MAX_OUT], b8[MAX_OUT], c8[MAX_OUT];

static void to_s8(const int32_t *p, int n, int8_t *dst) {
  int i;
  for (i = 0; i < n; ++i) dst[i] = (int8_t)p[i];
}

static int from_s8(const int8_t *src, int n) {
  int i;
  for (i = 0; i < n; ++i) out[i] = src[i];
  return n;
}

/* Kernels of one int32 result per tuple of `arity` words. */
static int scalar(int id, const int32_t *p, int len) {
  int i, n = 0;
  for (i = 0; i < len; n++) {
    const int32_t *t = p + i;
    switch (id) {
      case K_SRDHM_BOUNDED: out[n] = zoo_srdhm_bounded(t[0], t[1]); i += 2; break;
      case K_RDBPOT_BOUNDED: out[n] = zoo_rdbpot_bounded(t[0], t[1]); i += 2; break;
      case K_RDBPOT_ZP: out[n] = zoo_rdbpot_zp(t[0], t[1], t[2]); i += 3; break;
      case K_MBQM: out[n] = zoo_mbqm(t[0], t[1], t[2]); i += 3; break;
      case K_MBQM_ZP: out[n] = zoo_mbqm_zp(t[0], t[1], t[2], t[3]); i += 4; break;
      case K_MBQM_SMALL: out[n] = zoo_mbqm_small(t[0], t[1], t[2]); i += 3; break;
      case K_MBQM_SMALL_ZP: out[n] = zoo_mbqm_small_zp(t[0], t[1], t[2], t[3]); i += 4; break;
      case K_MBQM_FC: out[n] = zoo_mbqm_fc(t[0], t[1], t[2]); i += 3; break;
      case K_MBQM_FC_ZP: out[n] = zoo_mbqm_fc_zp(t[0], t[1], t[2], t[3]); i += 4; break;
      case K_CLAMP_S8: out[n] = zoo_clamp_s8(t[0], t[1], t[2]); i += 3; break;
      case K_ADDSUB_IN: out[n] = zoo_addsub_in(t[0], t[1], t[2]); i += 3; break;
#if defined(ZOO_NO_LONG_MULTIPLY) && ZOO_NO_LONG_MULTIPLY
      case K_SRDHM_32: out[n] = zoo_srdhm_32(t[0], t[1]); i += 2; break;
      case K_SRDHM_V20: out[n] = zoo_srdhm_v20(t[0], t[1]); i += 2; break;
#endif
      case K_FC_OUT: { /* acc, multiplier, shift, per_channel, zp, lo, hi */
        const int8_t shift = (int8_t)t[2];
        out[n] = zoo_fc_out(t[0], &t[1], &shift, t[3], 0, t[4], t[5], t[6]);
        i += 7;
        break;
      }
      default: return -1;
    }
  }
  return n;
}

/* copy / table / min / max / dot: [n, ...]. */
static int elementwise(int id, const int32_t *p) {
  const int n = p[0];
  switch (id) {
    case K_COPY_S8: /* n, in[n] */
      to_s8(p + 1, n, a8);
      zoo_copy_s8(n, a8, b8);
      return from_s8(b8, n);
    case K_TABLE_S8: { /* n, table[256], in[n] */
      int8_t table[256];
      to_s8(p + 1, 256, table);
      to_s8(p + 257, n, a8);
      zoo_table_s8(n, a8, table + 128, b8);
      return from_s8(b8, n);
    }
    case K_MIN_S8:
    case K_MAX_S8: { /* n, a_step, b_step, a[n or 1], b[n or 1] */
      const int na = p[1] ? n : 1, nb = p[2] ? n : 1;
      to_s8(p + 3, na, a8);
      to_s8(p + 3 + na, nb, b8);
      if (id == K_MIN_S8) zoo_min_s8(n, a8, p[1], b8, p[2], c8);
      else zoo_max_s8(n, a8, p[1], b8, p[2], c8);
      return from_s8(c8, n);
    }
    case K_DOT_S8: /* n, x[n], w[n] */
      to_s8(p + 1, n, a8);
      to_s8(p + 1 + n, n, b8);
      out[0] = zoo_dot_s8(a8, b8, n);
      return 1;
    default: return -1;
  }
}

/* ADD / SUB / MUL: n, a_step, b_step, 11 parameters, a[n or 1], b[n or 1]. */
static int arithmetic(int id, const int32_t *p) {
  const int n = p[0], sa = p[1], sb = p[2], na = sa ? n : 1, nb = sb ? n : 1;
  const int32_t *q = p + 3; /* off_a m_a s_a off_b m_b s_b m_out s_out zp lo hi (ADD/SUB);
                               off_a off_b m s zp lo hi (MUL) */
  to_s8(p + 14, na, a8);
  to_s8(p + 14 + na, nb, b8);
  switch (id) {
    case K_ADDSUB_S8_ADD:
      zoo_addsub_s8(n, a8, sa, b8, sb, q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9],
                    q[10], 0, c8);
      break;
    case K_ADDSUB_S8_SUB:
      zoo_addsub_s8(n, a8, sa, b8, sb, q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9],
                    q[10], 1, c8);
      break;
    case K_ADD_S8:
      zoo_add_s8(n, a8, sa, b8, sb, q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9],
                 q[10], c8);
      break;
    case K_SUB_S8:
      zoo_sub_s8(n, a8, sa, b8, sb, q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9],
                 q[10], c8);
      break;
    case K_MUL_S8:
      zoo_mul_s8(n, a8, sa, b8, sb, q[0], q[1], q[2], q[3], q[4], q[5], q[6], c8);
      break;
    default: return -1;
  }
  return from_s8(c8, n);
}

/* FULLY_CONNECTED: n_in, stride, n_out, per_channel, zp, lo, hi, x[n_in], w[n_out * stride],
 * bias[n_out], multiplier[n_out or 1], shift[n_out or 1]. */
static int fully_connected(int id, const int32_t *p) {
  static int8_t w[MAX_OUT * 4], shift[MAX_OUT];
  const int n_in = p[0], stride = p[1], n_out = p[2], pc = p[3], nm = pc ? n_out : 1;
  const int32_t *bias = p + 7 + n_in + n_out * stride, *m = bias + n_out;
  int8_t y[MAX_OUT];
  to_s8(p + 7, n_in, a8);
  to_s8(p + 7 + n_in, n_out * stride, w);
  to_s8(m + nm, nm, shift);
  switch (id) {
    case K_FC_S8: zoo_fc_s8(a8, n_in, stride, n_out, w, bias, m[0], shift[0], p[4], p[5], p[6], y);
      break;
    case K_FC_S8_PC: zoo_fc_s8_pc(a8, n_in, stride, n_out, w, bias, m, shift, p[4], p[5], p[6], y);
      break;
    case K_FC_ROWS:
      zoo_fc_rows(a8, n_in, stride, n_out, w, bias, m, shift, pc, p[4], p[5], p[6], y);
      break;
    default: return -1;
  }
  return from_s8(y, n_out);
}

#if defined(ZOO_USE_ARM_DSP)
/* The Cortex-M helpers. */
static int dsp(int id, const int32_t *p, int len) {
  int i, n = 0;
  switch (id) {
    case K_SXTB16:
      for (i = 0; i < len; ++i) out[n++] = (int32_t)zoo_sxtb16((uint32_t)p[i]);
      return n;
    case K_SXTB16_ROR8:
      for (i = 0; i < len; ++i) out[n++] = (int32_t)zoo_sxtb16_ror8((uint32_t)p[i]);
      return n;
    case K_MAC4: /* (w, xa, xb, acc) tuples */
      for (i = 0; i + 4 <= len; i += 4)
        out[n++] = zoo_mac4((uint32_t)p[i], (uint32_t)p[i + 1], (uint32_t)p[i + 2], p[i + 3]);
      return n;
    case K_LOAD32: { /* nbytes, bytes[nbytes], offsets... : the word at each offset */
      static int8_t bytes[MAX_OUT];
      to_s8(p + 1, p[0], bytes);
      for (i = 1 + p[0]; i < len; ++i) out[n++] = (int32_t)zoo_load32(bytes + p[i]);
      return n;
    }
    case K_EXPAND_S8: { /* n_in, stride, x[n_in] -> stride / 2 pair words */
      static uint32_t pairs[MAX_OUT];
      to_s8(p + 2, p[0], a8);
      zoo_expand_s8(a8, p[0], p[1], pairs);
      for (i = 0; i < p[1] / 2; ++i) out[n++] = (int32_t)pairs[i];
      return n;
    }
    case K_DOT4_DSP:
    case K_DOT1_DSP: { /* stride, pairs[stride / 2], w[rows * stride], bias[rows] */
      static int8_t w[MAX_OUT];
      const int stride = p[0], rows = id == K_DOT4_DSP ? 4 : 1;
      const uint32_t *pairs = (const uint32_t *)(p + 1);
      to_s8(p + 1 + stride / 2, rows * stride, w);
      if (id == K_DOT4_DSP) {
        zoo_dot4_dsp(pairs, w, stride, p + 1 + stride / 2 + 4 * stride, out);
        return 4;
      }
      out[0] = zoo_dot1_dsp(pairs, w, stride, p[1 + stride / 2 + stride]);
      return 1;
    }
    default: return -1;
  }
}
#endif

/* The runner of kernel `id`: its output count, or -1 for a kernel this build lacks. */
static int run_case(int id, const int32_t *p, int len) {
  switch (id) {
    case K_COPY_S8: case K_TABLE_S8: case K_MIN_S8: case K_MAX_S8: case K_DOT_S8:
      return elementwise(id, p);
    case K_ADDSUB_S8_ADD: case K_ADDSUB_S8_SUB: case K_ADD_S8: case K_SUB_S8: case K_MUL_S8:
      return arithmetic(id, p);
    case K_FC_S8: case K_FC_S8_PC: case K_FC_ROWS:
      return fully_connected(id, p);
    case K_DOT2_S8: { /* n_in, stride, x[n_in], w[2 * stride], bias[2] */
      static int8_t w2[MAX_OUT];
      const int n_in = p[0], stride = p[1];
      to_s8(p + 2, n_in, a8);
      to_s8(p + 2 + n_in, 2 * stride, w2);
      out[0] = p[2 + n_in + 2 * stride], out[1] = p[3 + n_in + 2 * stride];
      zoo_dot2_s8(a8, w2, stride, n_in, out);
      return 2;
    }
    case K_SXTB16: case K_SXTB16_ROR8: case K_MAC4: case K_LOAD32: case K_EXPAND_S8:
    case K_DOT4_DSP: case K_DOT1_DSP:
#if defined(ZOO_USE_ARM_DSP)
      return dsp(id, p, len);
#else
      return -1;
#endif
    default:
      return scalar(id, p, len);
  }
}

int main(void) {
  int pos = 0, index = 0;
  while (pos < ZOO_CASE_WORDS) {
    const int len = zoo_cases[pos + 1];
    const int n = run_case(zoo_cases[pos], zoo_cases + pos + 2, len);
    int i;
    printf("%d", index);
    if (n < 0) printf(" skip");
    for (i = 0; i < n; ++i) printf(" %ld", (long)out[i]);
    printf("\n");
    pos += 2 + len;
    ++index;
  }
  return 0;
}
