"""The q15 log-mel front end (``features: int_logmel_q15``): the NumPy reference of
``export/c_backend/frontend/kws_frontend_q15.c``, a cheaper twin of `int_frontend` for
microcontrollers with dual 16-bit arithmetic (Cortex-M4 and up).

The same geometry and the same output units as `zoo.training.tasks.int_frontend` (400-sample
frames every 160 samples, pre-emphasis 0.97, Hamming window, 512-point FFT, the same 32 mel
triangles in Q12, ``L`` = log2 of the filter energy in Q8 with ``ln(energy) ~ (L / 256 - 17)
ln 2``), so `int_frontend.log_mel` and `int_frontend.InputMap` apply unchanged. What differs is
the arithmetic: each complex value is two int16 halves of one 32-bit word, so that an add is one
SIMD instruction and a complex product three (SMUAD, SMUSDX, PKHTB). A frame is scaled to its
own peak first (block floating point), which keeps about 13 bits for every frame, loud or quiet.
Per frame of int16 samples ``x[0..399]`` and the sample before it, ``prev``:

1. pre-emphasis   ``y[n] = (x[n] - ((31785 * x[n-1] + 2^14) >> 15)) >> 1``  (int16)
2. block scale    ``s = 3 + msb(OR_n (y[n] ^ (y[n] >> 15)))`` (3 for a silent frame): the
                  leading bit of the largest magnitude (ones' complement for negative y), so
                  that the next step's values stay within 2^13; a stream keeps the OR of each
                  80-sample block as the samples arrive (a frame is 5 blocks, a hop 2)
3. window         ``v[n] = (y[n] * w[n] + 2^(s-1)) >> s``, w = round(2^15 hamming(400)) (int16)
4. FFT            ``z[m] = v[2m] + i v[2m+1]`` (zero past m = 199), a 256-point radix-4
                  decimation-in-frequency FFT in four stages, each dividing by 4: per butterfly
                  of a, b, c, d the halving adds ``t0 = (a + c) >> 1``, ``t1 = (a - c) >> 1``,
                  ``t2 = (b + d) >> 1``, ``t3 = (b - d) >> 1``, then ``(t0 + t2) >> 1`` and the
                  products of ``t0 - t2``, ``t1 - i t3``, ``t1 + i t3`` by their twiddles
                  ``c - i s`` (Q15): ``((re c + im s) >> 16, (im c - re s) >> 16)``, or ``>> 1``
                  where the twiddle is 1; the output in bit-reversed order
5. real split     ``A = Z[k]``, ``B = conj Z[256 - k]``: ``E = (A + B) >> 1``, the product of
                  ``A - B`` by ``-i W512^k`` as above, ``X[k] = E + that``,
                  ``X[256 - k] = conj(E - that)``, k = 0..128 (k = 128 written twice: the second)
6. power          ``P[k] = Re(X)^2 + Im(X)^2`` (< 2^30, one SMUAD)
7. mel            ``E[j] = sum_k P[k] * W[j, k]``, W = round(2^12 psf filters) (uint64)
8. log            ``L[j] = log2(E[j])`` in Q8 (`int_frontend`'s table), moved to the units of
                  `int_frontend` by the frame's scale: ``max(0, L + 512 s - 4096)``; 0 for
                  ``E <= 1``

Every int16 value in between stays in range by construction (the halving adds never overflow;
the plain adds and differences are bounded by 2^14.5 because each stage divides by 4 what the
butterfly's four inputs can add up to; the tests check it at full scale).
"""

from __future__ import annotations

import numpy as np

from zoo.training.tasks.int_frontend_tables import (FILTERS, FRAME, HALF, PREEMPH_Q15, Tables,
                                                    log2_q8, tables)

TWIDDLES = 384                  # W512^k for k = 0..383 (the FFT's W256^e is W512^(2e))
STAGES = (64, 16, 4)            # the quarters q of the stages with twiddles (the last: all 1)
LOG_SCALE_OFFSET = 4096         # L = log2(E) + 512 s - 4096: int_frontend's units (docstring)


def _q15(v: np.ndarray) -> np.ndarray:
    """Q15 with 1 clipped to 32767 (the twiddles 1 are never multiplied: they are ``>> 1``)."""
    return np.clip(np.round(v * 32768.0), -32767, 32767).astype(np.int64)


def twiddles() -> tuple[np.ndarray, np.ndarray]:
    """(c, s) of ``W512^k = c - i s`` for k = 0..383 (Q15), the FFT's table."""
    k = np.arange(TWIDDLES)
    return _q15(np.cos(np.pi * k / HALF)), _q15(np.sin(np.pi * k / HALF))


def stage_twiddles() -> np.ndarray:
    """The C file's FFT table: per stage of ``STAGES`` and butterfly i = 1..q-1, the twiddle
    words of its three products in the order they are used, shape (81, 3, 2): (c, s)."""
    c, s = twiddles()
    rows = []
    for q in STAGES:
        stride = 2 * (HALF // (4 * q))  # W256^(i m) = W512^(2 i m), m = 256 / 4q
        for i in range(1, q):
            rows.append([(c[mult * i * stride], s[mult * i * stride]) for mult in (1, 2, 3)])
    return np.array(rows, np.int64)


def split_twiddles() -> tuple[np.ndarray, np.ndarray]:
    """(c, s) of ``-i W512^k = c - i s`` for k = 0..128 (Q15): ``c = -sin, s = cos``."""
    k = np.arange(HALF // 2 + 1)
    return _q15(-np.sin(np.pi * k / HALF)), _q15(np.cos(np.pi * k / HALF))


def _cmul(re, im, c, s):
    """The product by ``c - i s`` halved, as SMUAD / SMUSDX >> 16 compute it."""
    return (re * c + im * s) >> 16, (im * c - re * s) >> 16


def _block_shift(y: np.ndarray) -> np.ndarray:
    """``s = 3 + msb(OR of y ^ (y >> 15))`` per frame (3 for a silent one), shape y.shape[:-1]."""
    bits = np.bitwise_or.reduce(y ^ (y >> 15), axis=-1)
    msb = np.zeros(bits.shape, np.int64)
    for b in (8, 4, 2, 1):
        up = (bits >> (msb + b)) != 0
        msb = np.where(up, msb + b, msb)
    return 3 + msb


def windowed(frames: np.ndarray, prev: np.ndarray, t: Tables) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-3: (v of shape (..., 400), the block shift s of each frame)."""
    x = frames.astype(np.int64)
    before = np.concatenate([np.asarray(prev, np.int64)[..., None], x[..., :-1]], axis=-1)
    y = (x - ((PREEMPH_Q15 * before + (1 << 14)) >> 15)) >> 1
    s = _block_shift(y)[..., None]
    return (y * t.window + (1 << (s - 1))) >> s, s[..., 0]


def fft256(re: np.ndarray, im: np.ndarray, c: np.ndarray, s: np.ndarray):
    """Step 4 over the last axis (natural order in, bit-reversed order out), int64 lanes."""
    n, stride = HALF, 2
    while n > 1:
        q = n // 4
        shape = re.shape[:-1] + (HALF // n, 4, q)
        r, j = re.reshape(shape), im.reshape(shape)
        (ar, br, cr, dr), (ai, bi, ci, di) = np.moveaxis(r, -2, 0), np.moveaxis(j, -2, 0)
        t0r, t0i, t1r, t1i = (ar + cr) >> 1, (ai + ci) >> 1, (ar - cr) >> 1, (ai - ci) >> 1
        t2r, t2i, t3r, t3i = (br + dr) >> 1, (bi + di) >> 1, (br - dr) >> 1, (bi - di) >> 1
        outs = {0: ((t0r + t2r) >> 1, (t0i + t2i) >> 1)}
        i = np.arange(q)
        for slot, mult, (ur, ui) in ((1, 2, (t0r - t2r, t0i - t2i)), (2, 1, (t1r + t3i, t1i - t3r)),
                                     (3, 3, (t1r - t3i, t1i + t3r))):
            _check_int16(ur, ui)
            e = mult * i * stride
            pr, pi = _cmul(ur, ui, c[e], s[e])
            outs[slot] = (np.where(i == 0, ur >> 1, pr), np.where(i == 0, ui >> 1, pi))
        re = np.stack([outs[k][0] for k in range(4)], axis=-2).reshape(re.shape)
        im = np.stack([outs[k][1] for k in range(4)], axis=-2).reshape(im.shape)
        n, stride = q, stride * 4
    return re, im


def _check_int16(*arrays) -> None:
    for a in arrays:  # the C code's plain 16-bit adds wrap: the bound must hold (docstring)
        if a.size and (a.min() < -32768 or a.max() > 32767):
            raise OverflowError(f"q15 front end: a 16-bit lane left int16 ({a.min()}..{a.max()})")


def power_spectrum(frames: np.ndarray, prev: np.ndarray, t: Tables | None = None):
    """(``P[k]`` int64 of shape (..., 257), the block shift s of each frame) of int16 frames
    (..., 400) with their previous samples (steps 1-6)."""
    t = t or tables()
    v, shift = windowed(frames, prev, t)
    v = np.concatenate([v, np.zeros(v.shape[:-1] + (2 * HALF - FRAME,), np.int64)], axis=-1)
    zr, zi = fft256(v[..., 0::2], v[..., 1::2], *twiddles())
    zr, zi = zr[..., t.bitrev], zi[..., t.bitrev]     # natural order
    k = np.arange(HALF // 2 + 1)
    ar, ai = zr[..., k], zi[..., k]
    br, bi = zr[..., (HALF - k) % HALF], -zi[..., (HALF - k) % HALF]  # conj Z[256 - k]
    er, ei, dr, di = (ar + br) >> 1, (ai + bi) >> 1, ar - br, ai - bi
    c, s = split_twiddles()
    rr, ri = _cmul(dr, di, c, s)
    rr, ri = np.where(k == 0, di >> 1, rr), np.where(k == 0, (-dr) >> 1, ri)  # -i W^0 = -i
    xr = np.zeros(zr.shape[:-1] + (HALF + 1,), np.int64)
    xi = np.zeros_like(xr)
    xr[..., k], xi[..., k] = er + rr, ei + ri
    xr[..., HALF - k], xi[..., HALF - k] = er - rr, ri - ei
    _check_int16(dr, di, xr, xi)
    return xr * xr + xi * xi, shift


def frames_log_mel_q8(frames: np.ndarray, prev: np.ndarray, t: Tables | None = None) -> np.ndarray:
    """int16 ``L[..., 32]`` of int16 frames (..., 400) whose previous samples are ``prev``."""
    t = t or tables()
    p, shift = power_spectrum(frames, prev, t)
    w = t.dense_mel()
    e = np.stack([np.sum(p * w[j], axis=-1) for j in range(FILTERS)], axis=-1)  # < 2^63
    level = log2_q8(e.astype(np.uint64), t).astype(np.int64) + 512 * shift[..., None] - LOG_SCALE_OFFSET
    return np.where(e <= 1, 0, np.maximum(level, 0)).astype(np.int16)
