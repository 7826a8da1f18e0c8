"""Every kernel of the C backend's ``zoo_int8.h`` against a NumPy oracle of TensorFlow Lite's
reference arithmetic (issue 43 item 5).

The oracle is written here from TFLite's reference kernels and gemmlowp, not from the zoo's
emitter (``export/c_backend/arith.py``): gemmlowp's ``SaturatingRoundingDoublingHighMul`` and
``RoundingDivideByPOT`` (fixedpoint.h), ``MultiplyByQuantizedMultiplier`` in TFLite Micro's double
rounding and in ``TFLITE_SINGLE_ROUNDING`` (LiteRT's FULLY_CONNECTED), and the int8 reference
ops FullyConnected (per tensor and per channel), AddElementwise, SubElementwise, MulElementwise,
minimum / maximum, with input offsets (-zero point), output offsets and activation ranges. The
Cortex-M helpers (SXTB16, SMLAD, the expanded pairs) follow the Armv7E-M instruction
definitions. Each kernel meets random inputs within the range its header documents and the
edges: saturation, rounding ties (positive and negative), zero points and offsets at -128 / 127.

One harness (``c_kernels/zoo_int8_harness.c``) runs every case; it is built for the host (double
and single rounding, and with the paths of cores without SIMD or a 64-bit multiply forced on:
``ZOO_NO_LONG_MULTIPLY``, ``ZOO_FC_TWO_ROWS``), and under QEMU for a Cortex-M4 with the DSP path
at -O2 and -Os, a Cortex-M0+ (both of those paths, chosen by the header itself) and an RV32IMC
(two rows). The cross toolchains are required: a missing one fails with the packages to install
(CI installs them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "export" / "c_backend" / "templates"
HARNESS = Path(__file__).parent / "c_kernels" / "zoo_int8_harness.c"
SYSCALLS = REPO / "tools" / "cortexm" / "syscalls.cc"
RT_RISCV = REPO / "export" / "profile" / "harness" / "rt_riscv.c"
M4 = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
ARM_TOOLS = ["arm-none-eabi-gcc", "arm-none-eabi-g++", "qemu-arm"]
APT_PACKAGES = ("gcc-arm-none-eabi libnewlib-arm-none-eabi gcc-riscv64-unknown-elf "
                "picolibc-riscv64-unknown-elf qemu-user")

SCALAR = ["srdhm_bounded", "rdbpot_bounded", "rdbpot_zp", "mbqm", "mbqm_zp", "mbqm_small",
          "mbqm_small_zp", "mbqm_fc", "mbqm_fc_zp", "clamp_s8", "addsub_in", "fc_out"]
ARRAYS = ["copy_s8", "table_s8", "min_s8", "max_s8", "dot_s8", "addsub_s8_add", "addsub_s8_sub",
          "add_s8", "sub_s8", "mul_s8", "fc_s8", "fc_s8_pc", "fc_rows"]
DSP = ["sxtb16", "sxtb16_ror8", "mac4", "load32", "expand_s8", "dot4_dsp", "dot1_dsp"]
NO_LONG_MULTIPLY = ["srdhm_32", "srdhm_v20"]  # built only with ZOO_NO_LONG_MULTIPLY
KERNELS = SCALAR + ARRAYS + DSP + NO_LONG_MULTIPLY + ["dot2_s8"]
# the builds that lack a kernel ("skip" lines), and only those
LACKING = {**{k: {"host", "host-single-rounding", "host-32-bit", "cortex-m0plus-O2",
                  "rv32imc-O2"} for k in DSP},
           **{k: {"host", "host-single-rounding", "cortex-m4-O2", "cortex-m4-Os", "rv32imc-O2"}
              for k in NO_LONG_MULTIPLY}}
BOUND = 1 << 30  # |operand| < 2^30 wherever zoo_int8.h rescales (its header)


# ---------------------------------------------------------------- the oracle: gemmlowp, TFLite
def wrap32(x):
    return (np.asarray(x, np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)


def srdhm(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul: (a b + nudge) / 2^31, truncated toward zero."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    t = a * b + np.where(a * b >= 0, 1 << 30, 1 - (1 << 30))
    q = np.where(t >= 0, t // (1 << 31), -(-t // (1 << 31)))
    return np.where((a == b) & (a == -(1 << 31)), (1 << 31) - 1, q)


def rdbpot(x, e):
    """gemmlowp RoundingDivideByPOT: x / 2^e, rounded half away from zero."""
    x, e = np.asarray(x, np.int64), np.asarray(e, np.int64)
    mask = (np.int64(1) << e) - 1
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0))


def mbqm(x, m, s):
    """TFLite MultiplyByQuantizedMultiplier, two roundings (TFLite Micro's default build)."""
    x, s = np.asarray(x, np.int64), np.asarray(s, np.int64)
    return rdbpot(srdhm(wrap32(x << np.maximum(s, 0)), m), np.maximum(-s, 0))


def mbqm_single(x, m, s):
    """The same under TFLITE_SINGLE_ROUNDING: (x m + 2^(30 - s)) >> (31 - s)."""
    x, m, s = (np.asarray(v, np.int64) for v in (x, m, s))
    return (x * m + (np.int64(1) << (30 - s))) >> (31 - s)


def mbqm_small(x, m, s):
    """MultiplyByQuantizedMultiplierSmallerThanOneExp (s <= 0)."""
    return rdbpot(srdhm(x, m), -np.asarray(s, np.int64))


def clamp(v, lo, hi):
    return np.minimum(np.maximum(np.asarray(v, np.int64), lo), hi)


def fully_connected(x, w, bias, zx, m, s, zp, lo, hi, single):
    """reference_integer_ops::FullyConnected(PerChannel): sum((x - zx) w) + bias, rescaled (per
    row when m, s are arrays), + the output offset, clamped."""
    acc = (x.astype(np.int64) - zx) @ w.astype(np.int64).T + bias
    return clamp((mbqm_single if single else mbqm)(acc, m, s) + zp, lo, hi)


def add_sub(a, b, off_a, m_a, s_a, off_b, m_b, s_b, m_o, s_o, zp, lo, hi, subtract):
    """integer_ops AddElementwise / reference SubElementwise: inputs + offsets, << 20, rescaled
    each, summed (or subtracted), rescaled, + the output offset, clamped."""
    va = mbqm_small((off_a + a.astype(np.int64)) << 20, m_a, s_a)
    vb = mbqm_small((off_b + b.astype(np.int64)) << 20, m_b, s_b)
    return clamp(mbqm_small(va - vb if subtract else va + vb, m_o, s_o) + zp, lo, hi)


def sxtb16(v, ror8=False):
    """SXTB16 (Armv7E-M): bytes 0 and 2 (1 and 3 after ROR #8) sign-extended into halfwords."""
    u = np.asarray(v, np.int64) % (1 << 32)
    if ror8:
        u = (u >> 8) | ((u & 0xFF) << 24)
    lo, hi = (u & 0xFF), (u >> 16) & 0xFF
    lo, hi = np.where(lo > 127, lo - 256, lo), np.where(hi > 127, hi - 256, hi)
    return wrap32((lo & 0xFFFF) | (hi & 0xFFFF) << 16)


def halves(v):
    """The signed low and high halfwords of int32 words."""
    u = np.asarray(v, np.int64) % (1 << 32)
    lo, hi = u & 0xFFFF, u >> 16
    return np.where(lo > 32767, lo - 65536, lo), np.where(hi > 32767, hi - 65536, hi)


def pack(lo, hi):
    return wrap32((np.asarray(lo, np.int64) & 0xFFFF) | (np.asarray(hi, np.int64) & 0xFFFF) << 16)


def mac4(w, xa, xb, acc):
    """Two SMLADs: acc + w0 xa.lo + w2 xa.hi + w1 xb.lo + w3 xb.hi (wrapping, as SMLAD)."""
    u = np.asarray(w, np.int64) % (1 << 32)
    wb = [(u >> (8 * k)) & 0xFF for k in range(4)]
    wb = [np.where(b > 127, b - 256, b) for b in wb]
    (al, ah), (bl, bh) = halves(xa), halves(xb)
    return wrap32(np.asarray(acc, np.int64) + wb[0] * al + wb[2] * ah + wb[1] * bl + wb[3] * bh)


def dot_pairs(pairs, w_row):
    """A row of int8 weights against x as expanded pairs (xa, xb per word of weights)."""
    total = 0
    for k in range(len(w_row) // 4):
        (al, ah), (bl, bh) = halves(pairs[2 * k]), halves(pairs[2 * k + 1])
        w4 = w_row[4 * k:4 * k + 4].astype(np.int64)
        total += w4[0] * al + w4[2] * ah + w4[1] * bl + w4[3] * bh
    return total


# ---------------------------------------------------------------- the cases
class Cases:
    """Kernel cases: the payload words, and the expected output under double / single rounding."""

    def __init__(self):
        self.items = []  # (kernel, payload, expected double, expected single)

    def add(self, kernel, payload, expected, single=None):
        payload = [int(v) for v in wrap32(np.asarray(payload, np.int64).reshape(-1))]
        expected = np.asarray(expected, np.int64).reshape(-1)
        self.items.append((kernel, payload, expected,
                           expected if single is None else np.asarray(single, np.int64).reshape(-1)))

    def header(self) -> str:
        words = []
        for kernel, payload, _, _ in self.items:
            words += [KERNELS.index(kernel), len(payload), *payload]
        ids = "\n".join(f"#define K_{k.upper()} {i}" for i, k in enumerate(KERNELS))
        text = [str(w) if w != -(1 << 31) else "(-2147483647 - 1)" for w in words]
        body = ",\n".join(",".join(text[i:i + 16]) for i in range(0, len(text), 16))
        return (f"{ids}\n#define ZOO_CASE_WORDS {len(words)}\n"
                f"static const int32_t zoo_cases[{len(words)}] = {{{body}}};\n")


def bounded(rng, n, limit=BOUND):
    """Random int32 within (-limit, limit), with the extremes and small values."""
    edges = np.array([0, 1, -1, limit - 1, -(limit - 1), 2, -2], np.int64)
    return np.concatenate([edges, rng.integers(-limit + 1, limit, n - len(edges))])


def multipliers(rng, n):
    """Quantized multipliers: [2^30, 2^31) as QuantizeMultiplier makes them, with both ends."""
    edges = np.array([1 << 30, (1 << 31) - 1, (1 << 30) + 1], np.int64)
    both = np.concatenate([edges, rng.integers(1 << 30, 1 << 31, max(n - len(edges), 1))])
    return both[:n] if n >= len(edges) else rng.permutation(both)[:n]


def ties(exponents):
    """(x, e) pairs with x = (2k + 1) 2^(e - 1), exactly half way for a divide by 2^e, both
    signs, the largest within |x| < 2^30."""
    x, e = [], []
    for exp in exponents:
        for v in [(2 * k + 1) << (exp - 1) for k in range(-3, 3)] + [(BOUND - 1) >> exp << exp
                                                                     | 1 << (exp - 1)]:
            if abs(v) < BOUND:
                x.append(v)
                e.append(exp)
    return np.array(x, np.int64), np.array(e, np.int64)


def scalar_cases(c: Cases, rng):
    n = 600
    a, b = bounded(rng, n), np.concatenate([multipliers(rng, n // 2),
                                             rng.integers(-(1 << 31), 1 << 31, n - n // 2)])
    b[:3] = [-(1 << 31), (1 << 31) - 1, 0]
    c.add("srdhm_bounded", np.stack([a, b], 1), srdhm(a, b))
    tie_x, tie_e = ties(range(1, 31))
    x, e = np.concatenate([bounded(rng, n), tie_x]), np.concatenate([rng.integers(0, 32, n), tie_e])
    c.add("rdbpot_bounded", np.stack([x, e], 1), rdbpot(x, e))
    zp = rng.integers(-128, 129, len(x))
    zp[:4] = [-128, 127, 128, 0]
    c.add("rdbpot_zp", np.stack([x, e, zp], 1), rdbpot(x, e) + zp)
    m, s = multipliers(rng, n), rng.integers(-31, 31, n)
    s[:4] = [-31, 30, 0, -1]
    x = rng.integers(-BOUND + 1, BOUND, n) >> np.maximum(s, 0)  # |x << left| < 2^30
    x[4:10] = [0, 1, -1, (BOUND - 1) >> max(int(s[4]), 0), -((BOUND - 1) >> max(int(s[5]), 0)), 3]
    m[10:20], s[10:20], x[10:20] = 1 << 30, 0, np.arange(-5, 5) * 2 + 1  # ties of the high mul
    zp = rng.integers(-128, 128, n)
    zp[:2] = [-128, 127]
    c.add("mbqm", np.stack([x, m, s], 1), mbqm(x, m, s))
    c.add("mbqm_zp", np.stack([x, m, s, zp], 1), mbqm(x, m, s) + zp)
    c.add("mbqm_fc", np.stack([x, m, s], 1), mbqm(x, m, s), mbqm_single(x, m, s))
    c.add("mbqm_fc_zp", np.stack([x, m, s, zp], 1), mbqm(x, m, s) + zp,
          mbqm_single(x, m, s) + zp)
    s_small = -np.abs(s)
    x_small = bounded(rng, n)
    c.add("mbqm_small", np.stack([x_small, m, s_small], 1), mbqm_small(x_small, m, s_small))
    c.add("mbqm_small_zp", np.stack([x_small, m, s_small, zp], 1),
          mbqm_small(x_small, m, s_small) + zp)
    v = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 200), [-129, -128, 127, 128, 0]])
    lo = rng.integers(-128, 0, len(v))
    hi = np.maximum(lo, rng.integers(-10, 128, len(v)))
    lo[:3], hi[:3] = -128, 127
    c.add("clamp_s8", np.stack([v, lo, hi], 1), clamp(v, lo, hi))
    v = rng.integers(-255, 256, n)
    v[:4] = [-255, 255, 0, -1]
    ma, sa = multipliers(rng, n), -rng.integers(0, 12, n)
    ma[10:20], sa[10:20] = 1 << 30, 0  # the larger input's multiplier: exactly 2^19 v
    c.add("addsub_in", np.stack([v, ma, sa], 1), mbqm_small(v << 20, ma, sa))
    acc = bounded(rng, n) >> np.maximum(s, 0)
    pc = rng.integers(0, 2, n)
    lo = rng.integers(-128, 1, n)
    hi = np.maximum(lo, rng.integers(0, 128, n))
    lo[:3], hi[:3] = -128, 127
    c.add("fc_out", np.stack([acc, m, s, pc, zp, lo, hi], 1),
          clamp(mbqm(acc, m, s) + zp, lo, hi), clamp(mbqm_single(acc, m, s) + zp, lo, hi))


def int8(rng, shape, edges=True):
    v = rng.integers(-128, 128, shape)
    if edges and v.size >= 4:
        v.reshape(-1)[:4] = [-128, 127, 0, -1]
    return v


def elementwise_cases(c: Cases, rng):
    for n in (1, 7, 256):
        x = int8(rng, n)
        c.add("copy_s8", [n, *x], x)
        table = int8(rng, 256)
        x = np.arange(-128, 128) if n == 256 else x
        c.add("table_s8", [n, *table, *x], table[x + 128])
        w = int8(rng, n)
        c.add("dot_s8", [n, *x, *w], [int(np.dot(x.astype(np.int64), w))])
        for sa, sb in ((1, 1), (1, 0), (0, 1)):
            a, b = int8(rng, n if sa else 1), int8(rng, n if sb else 1)
            fa, fb = np.broadcast_to(a, n), np.broadcast_to(b, n)
            c.add("min_s8", [n, sa, sb, *a, *b], np.minimum(fa, fb))
            c.add("max_s8", [n, sa, sb, *a, *b], np.maximum(fa, fb))


def arithmetic_cases(c: Cases, rng):
    for trial in range(12):
        n = [1, 5, 64][trial % 3]
        sa, sb = [(1, 1), (1, 0), (0, 1)][trial % 3]
        a, b = int8(rng, n if sa else 1), int8(rng, n if sb else 1)
        fa, fb = np.broadcast_to(a, n), np.broadcast_to(b, n)
        # input offsets are -zero point: 128 and -127 at the extremes
        off_a, off_b = [(128, -127), (-127, 128)][trial] if trial < 2 else \
            (int(v) for v in rng.integers(-127, 129, 2))
        m_a, m_b, m_o = rng.permutation(multipliers(rng, 8))[:3]
        s_a, s_b = -rng.integers(0, 4, 2)
        if trial % 4 == 0:
            m_a, s_a = 1 << 30, 0  # the input with the larger scale
        s_o = -int(rng.integers(14, 24))
        zp = [-128, 127][trial % 2] if trial < 4 else int(rng.integers(-128, 128))
        lo, hi = (-128, 127) if trial % 3 else (zp if zp < 127 else -128, 127)
        params = [off_a, m_a, s_a, off_b, m_b, s_b, m_o, s_o, zp, lo, hi]
        for kernel, subtract in (("addsub_s8_add", 0), ("addsub_s8_sub", 1), ("add_s8", 0),
                                 ("sub_s8", 1)):
            c.add(kernel, [n, sa, sb, *params, *a, *b],
                  add_sub(fa, fb, *params, subtract=subtract))
        m, s = int(multipliers(rng, 1)[0]), int(rng.integers(-20, 14))
        prod = (off_a + fa.astype(np.int64)) * (off_b + fb)
        c.add("mul_s8", [n, sa, sb, off_a, off_b, m, s, zp, lo, hi, 0, 0, 0, 0, *a, *b],
              clamp(mbqm(prod, m, s) + zp, lo, hi))


FC_SHAPES = [(9, 12, 80), (16, 16, 16), (80, 80, 7), (1, 4, 3), (33, 36, 5), (300, 300, 2)]


def fc_case(c: Cases, rng, shape, per_channel, kernel, trial):
    n_in, stride, n_out = shape
    x = int8(rng, n_in)
    w = np.zeros((n_out, stride), np.int64)
    w[:, :n_in] = rng.integers(-127, 128, (n_out, n_in))
    zx = [-128, 127, int(rng.integers(-128, 128))][trial % 3]
    zp = [127, -128, int(rng.integers(-128, 128))][trial % 3]
    lo, hi = [(-128, 127), (max(zp, -128), 127), (-100, 90)][trial % 3]
    nm = n_out if per_channel else 1
    m, s = rng.permutation(multipliers(rng, max(nm, 8)))[:nm], rng.integers(-12, 3, nm)
    dot = (x.astype(np.int64) - zx) @ w[:, :n_in].T
    bias = rng.integers(-(1 << 20), 1 << 20, n_out)
    left_room = (BOUND - 1) >> np.max(np.maximum(s, 0))
    bias = np.clip(bias, -left_room - dot + 1, left_room - dot - 1)  # |acc << left| < 2^30
    folded = bias - zx * w.sum(axis=1)  # the C kernel's bias: the input zero point folded in
    args = [n_in, stride, n_out, per_channel, zp, lo, hi, *x, *w.reshape(-1), *folded, *m, *s]
    ms, ss = (m, s) if per_channel else (m[0], s[0])
    c.add(kernel, args, fully_connected(x, w[:, :n_in], bias, zx, ms, ss, zp, lo, hi, False),
          fully_connected(x, w[:, :n_in], bias, zx, ms, ss, zp, lo, hi, True))


def fc_cases(c: Cases, rng):
    for trial, shape in enumerate(FC_SHAPES):
        fc_case(c, rng, shape, 0, "fc_s8", trial)
        fc_case(c, rng, shape, 1, "fc_s8_pc", trial)
        fc_case(c, rng, shape, trial % 2, "fc_rows", trial)


def no_simd_cases(c: Cases, rng):
    """The high mul of 32-bit products (any int32 b, |a| < 2^30), the one of an ADD / SUB input
    v 2^20 (|v| < 2^9) and the two-row dot product."""
    n = 600
    a = bounded(rng, n)
    b = np.concatenate([multipliers(rng, n // 2), rng.integers(-(1 << 31), 1 << 31, n - n // 2)])
    b[:3] = [-(1 << 31), (1 << 31) - 1, 0]
    a[10:20], b[10:20] = np.arange(-5, 5) * 2 + 1, 1 << 30  # ties: the nudge's carry
    c.add("srdhm_32", np.stack([a, b], 1), srdhm(a, b))
    v = rng.integers(-511, 512, n)
    v[:4] = [-511, 511, 0, -1]
    c.add("srdhm_v20", np.stack([v, b], 1), srdhm(v << 20, b))
    for n_in, stride in ((1, 4), (16, 16), (36, 36), (80, 80), (9, 12)):
        x, w = int8(rng, n_in), int8(rng, 2 * stride).reshape(2, stride)
        bias = rng.integers(-(1 << 24), 1 << 24, 2)
        c.add("dot2_s8", [n_in, stride, *x, *w.reshape(-1), *bias],
              bias + w[:, :n_in] @ x.astype(np.int64))


def dsp_cases(c: Cases, rng):
    v = rng.integers(-(1 << 31), 1 << 31, 300)
    v[:4] = [0, -1, 0x7F807F80, -0x7F7F7F80]
    c.add("sxtb16", v, sxtb16(v))
    c.add("sxtb16_ror8", v, sxtb16(v, ror8=True))
    w, xa, xb = (rng.integers(-(1 << 31), 1 << 31, 300) for _ in range(3))
    xa[:2], xb[:2], w[:2] = pack(-128, -128), pack(127, -128), [0x80808080, 0x7F7F7F7F]
    acc = rng.integers(-(1 << 31), 1 << 31, 300)
    acc[:2] = [(1 << 31) - 1, -(1 << 31)]  # SMLAD wraps
    c.add("mac4", np.stack([w, xa, xb, acc], 1), mac4(w, xa, xb, acc))
    data = int8(rng, 40)
    offsets = np.arange(0, 36)
    le = np.frombuffer(data.astype(np.int8).tobytes(), np.uint8).astype(np.int64)
    words = [le[o] | le[o + 1] << 8 | le[o + 2] << 16 | le[o + 3] << 24 for o in offsets]
    c.add("load32", [40, *data, *offsets], wrap32(words))
    for n_in, stride in ((9, 12), (16, 16), (1, 4), (80, 80), (30, 32)):
        x = int8(rng, n_in)
        xp = np.concatenate([x, np.zeros(stride - n_in, np.int64)]).reshape(-1, 4)
        pairs = np.stack([pack(xp[:, 0], xp[:, 2]), pack(xp[:, 1], xp[:, 3])], 1).reshape(-1)
        c.add("expand_s8", [n_in, stride, *x], pairs)
    for stride in (4, 12, 80):
        pairs = rng.integers(-(1 << 31), 1 << 31, stride // 2)
        pairs[0] = pack(-128, 127)
        for rows, kernel in ((4, "dot4_dsp"), (1, "dot1_dsp")):
            w = int8(rng, rows * stride).reshape(rows, stride)
            bias = rng.integers(-(1 << 24), 1 << 24, rows)
            c.add(kernel, [stride, *pairs, *w.reshape(-1), *bias],
                  wrap32([int(bias[r]) + int(dot_pairs(pairs, w[r])) for r in range(rows)]))


@pytest.fixture(scope="module")
def cases() -> Cases:
    rng = np.random.default_rng(43)
    c = Cases()
    for make in (scalar_cases, elementwise_cases, arithmetic_cases, fc_cases, dsp_cases,
                 no_simd_cases):
        make(c, rng)
    return c


# ---------------------------------------------------------------- the builds
def host_build(folder: Path, single: bool, defines=()) -> list[str]:
    exe = folder / f"harness-host{'-single' if single else ''}{'-32' if defines else ''}"
    cmd = ["cc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2",
           f"-DZOO_FC_SINGLE_ROUNDING={int(single)}", *defines, f"-I{TEMPLATES}", f"-I{folder}",
           str(HARNESS), "-o", str(exe)]
    return [cmd], [str(exe)]


def arm_build(folder: Path, cpu: list[str], opt: str, dsp: bool) -> list[str]:
    tag = f"{cpu[0].split('=')[1]}{opt}"
    exe, obj, sys_obj = folder / f"harness-{tag}.elf", folder / f"h{tag}.o", folder / f"sys{tag}.o"
    flags = [*cpu, "-std=c99", "-Wall", "-Wextra", "-Werror", opt,
             *(["-DZOO_USE_ARM_DSP"] if dsp else []), "-DZOO_FC_SINGLE_ROUNDING=0",
             f"-I{TEMPLATES}", f"-I{folder}"]
    return ([["arm-none-eabi-gcc", *flags, "-c", str(HARNESS), "-o", str(obj)],
             ["arm-none-eabi-g++", *cpu, "-O2", "-fno-exceptions", "-fno-rtti",
              f"-I{SYSCALLS.parent}", "-c", str(SYSCALLS), "-o", str(sys_obj)],
             ["arm-none-eabi-g++", *cpu, "-nostartfiles", "-Wl,--gc-sections", str(obj),
              str(sys_obj), "-lc", "-lgcc", "-lnosys", "-o", str(exe)]],
            ["qemu-arm", "-cpu", "cortex-a15", str(exe)])


def rv32_build(folder: Path) -> list[str]:
    """The harness on picolibc's printf (its stdout a stream over the profile runtime's write
    system call) and `zoo.export.profile`'s RV32 runtime (entry point, write, exit)."""
    from zoo.export.profile.targets import PICOLIBC_INCLUDE, PICOLIBC_LIB, TARGETS

    (folder / "stdout_rv.c").write_text(
        "#include <stdio.h>\nvoid zp_write(const char *p, int n);\n"
        "static int zp_putc(char c, FILE *f) { (void)f; zp_write(&c, 1); return (unsigned char)c; }\n"
        "static FILE zp_out = FDEV_SETUP_STREAM(zp_putc, NULL, NULL, _FDEV_SETUP_WRITE);\n"
        "FILE *const stdout = &zp_out;\n")
    cpu = list(TARGETS["rv32imc"].flags)
    exe = folder / "harness-rv32imc.elf"
    flags = [*cpu, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2",
             "-DZOO_FC_SINGLE_ROUNDING=0", f"-I{TEMPLATES}", f"-I{folder}"]
    return ([["riscv64-unknown-elf-gcc", *flags, "-nostdlib", "-nostartfiles",
              "-Wl,--gc-sections", str(HARNESS), str(folder / "stdout_rv.c"), str(RT_RISCV),
              f"-L{PICOLIBC_LIB}", "-lc", "-lgcc", "-o", str(exe)]],
            ["qemu-riscv32", str(exe)])


M0PLUS = ["-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft"]
BUILDS = {"host": (lambda f: host_build(f, False), ["cc"]),
          "host-single-rounding": (lambda f: host_build(f, True), ["cc"]),
          "host-32-bit": (lambda f: host_build(f, False, ("-DZOO_NO_LONG_MULTIPLY=1",
                                                          "-DZOO_FC_TWO_ROWS=1")), ["cc"]),
          "cortex-m4-O2": (lambda f: arm_build(f, M4, "-O2", True), ARM_TOOLS),
          "cortex-m4-Os": (lambda f: arm_build(f, M4, "-Os", True), ARM_TOOLS),
          "cortex-m0plus-O2": (lambda f: arm_build(f, M0PLUS, "-O2", False), ARM_TOOLS),
          "rv32imc-O2": (lambda f: rv32_build(f), ["riscv64-unknown-elf-gcc", "qemu-riscv32"])}


@pytest.fixture(scope="module")
def results(cases, tmp_path_factory):
    """build -> the harness's output per case (a list of ints, or None for "skip")."""
    folder = tmp_path_factory.mktemp("zoo_int8")
    (folder / "cases.h").write_text(cases.header())
    out = {}
    for name, (make, tools) in BUILDS.items():
        missing = [t for t in tools if shutil.which(t) is None]
        assert not missing, (f"{name}: missing {', '.join(missing)}; apt-get install "
                             f"{APT_PACKAGES}")
        commands, run = make(folder)
        for cmd in commands:
            done = subprocess.run(cmd, capture_output=True, text=True)
            assert done.returncode == 0, (name, done.stderr[-2000:])
        lines = subprocess.run(run, capture_output=True, text=True, check=True,
                               timeout=120).stdout.splitlines()
        assert len(lines) == len(cases.items), (name, len(lines))
        out[name] = [None if line.split()[1:] == ["skip"] else [int(v) for v in line.split()[1:]]
                     for line in lines]
    return out


def test_every_kernel_of_zoo_int8_h_has_cases(cases):
    header = (TEMPLATES / "zoo_int8.h").read_text()
    import re

    defined = set(re.findall(r"^(?:ZOO_(?:DOT2_)?INLINE [a-z0-9_]+ |#define )zoo_([a-z0-9_]+)\(", header,
                             re.M)) | set(re.findall(r"^#define zoo_([a-z0-9_]+) ", header, re.M))
    tested = {k for k, _, _, _ in cases.items} | {"addsub_s8"}
    tested = {k.replace("addsub_s8_add", "addsub_s8").replace("addsub_s8_sub", "addsub_s8")
              for k in tested}
    assert defined == tested, (sorted(defined - tested), sorted(tested - defined))


@pytest.mark.parametrize("build", list(BUILDS))
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_equals_the_numpy_oracle_of_tflites_arithmetic(kernel, build, cases, results):
    got = results[build]
    single = build == "host-single-rounding"
    checked = 0
    for index, (name, payload, double_want, single_want) in enumerate(cases.items):
        if name != kernel:
            continue
        if got[index] is None:  # only where the header leaves the kernel out
            assert build in LACKING.get(kernel, ()), (kernel, build)
            return
        assert build not in LACKING.get(kernel, ()), (kernel, build, "built where it should not be")
        want = single_want if single else double_want
        assert np.array_equal(np.asarray(got[index]), want), (
            kernel, build, index, payload[:16], np.flatnonzero(np.asarray(got[index]) != want)[:8])
        checked += 1
    assert checked > 0
