"""The constants and tables of the integer log-mel front ends (`zoo.training.tasks.int_frontend`
and `zoo.training.tasks.int_frontend_q15`), computed from their formulas: what the generated C
file ``kws_frontend_tables.c`` holds, and the log2 both front ends end with."""

from __future__ import annotations

import dataclasses

import numpy as np

from zoo.training.data.audio import FbankFrontend

FRAME, HOP, NFFT, FILTERS = 400, 160, 512, 32
BINS = NFFT // 2 + 1
HALF = NFFT // 2                       # the complex FFT's length
PREEMPH_Q15 = 31785                    # round(0.97 * 2^15)
POWER_SHIFT, MEL_Q, LOG_Q = 6, 12, 8   # P >> 6, filter weights in Q12, log2 in Q8
LOG_TABLE_BITS = 6                     # 2^6 intervals of the log2(1 + f) table
ENERGY_OFFSET_LOG2 = 2 + 9 - POWER_SHIFT + MEL_Q  # E = 2^17 psf energy (P = 4|X|^2, psf /512)


def _q15(v: np.ndarray, lo: int = -32768, hi: int = 32767) -> np.ndarray:
    return np.clip(np.round(v * 32768.0), lo, hi).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class Tables:
    """The constant tables of the C file ``kws_frontend_tables.c``, computed from their formulas."""

    window: np.ndarray    # (400,) Q15 Hamming
    cos: np.ndarray       # (257,) Q15 cos(pi k / 256), 1 as 32768: a product by 1 is exact
    sin: np.ndarray       # (257,) Q15 sin(pi k / 256)
    mel_start: np.ndarray  # (32,) first bin of each filter
    mel_len: np.ndarray    # (32,) bins of each filter
    mel_weights: np.ndarray  # (sum of mel_len,) Q12 weights, filter after filter
    log2_table: np.ndarray   # (65,) Q16 log2(1 + i / 64)
    bitrev: np.ndarray       # (256,) 8-bit reversal

    def dense_mel(self) -> np.ndarray:
        out = np.zeros((FILTERS, BINS), np.int64)
        pos = 0
        for j in range(FILTERS):
            s, n = int(self.mel_start[j]), int(self.mel_len[j])
            out[j, s:s + n] = self.mel_weights[pos:pos + n]
            pos += n
        return out


def tables() -> Tables:
    k = np.arange(BINS)
    fb = np.round(FbankFrontend().filterbank() * (1 << MEL_Q)).astype(np.int64)
    starts, lens, weights = [], [], []
    for row in fb:
        nz = np.flatnonzero(row)
        s, e = (int(nz[0]), int(nz[-1]) + 1) if len(nz) else (0, 0)
        starts.append(s)
        lens.append(e - s)
        weights.extend(row[s:e].tolist())
    bits = np.arange(HALF)
    rev = np.zeros(HALF, np.int64)
    for b in range(8):
        rev |= ((bits >> b) & 1) << (7 - b)
    i = np.arange((1 << LOG_TABLE_BITS) + 1)
    return Tables(window=_q15(np.hamming(FRAME)), cos=_q15(np.cos(np.pi * k / HALF), hi=32768),
                  sin=_q15(np.sin(np.pi * k / HALF), hi=32768), mel_start=np.array(starts),
                  mel_len=np.array(lens), mel_weights=np.array(weights, np.int64),
                  log2_table=np.round(np.log2(1 + i / (1 << LOG_TABLE_BITS)) * 65536).astype(np.int64),
                  bitrev=rev)


def log2_q8(e: np.ndarray, t: Tables) -> np.ndarray:
    """``log2(e)`` in Q8 for uint64 ``e`` (0 for e <= 1), the C code's table and shifts."""
    e = np.asarray(e, np.uint64)
    n = np.zeros(e.shape, np.int64)
    for b in (32, 16, 8, 4, 2, 1):             # the leading bit's index, as the C binary search
        up = (e >> np.uint64(n + b).astype(np.uint64)) != 0
        n = np.where(up, n + b, n)
    m = e << (63 - n).astype(np.uint64)
    idx = ((m >> np.uint64(63 - LOG_TABLE_BITS)) & np.uint64((1 << LOG_TABLE_BITS) - 1)).astype(np.int64)
    frac = ((m >> np.uint64(63 - LOG_TABLE_BITS - 16)) & np.uint64(0xFFFF)).astype(np.int64)
    lo, hi = t.log2_table[idx], t.log2_table[idx + 1]
    f = lo + (((hi - lo) * frac + (1 << 15)) >> 16)
    out = (n << LOG_Q) + ((f + (1 << (16 - LOG_Q - 1))) >> (16 - LOG_Q))
    return np.where(e <= 1, 0, out).astype(np.int16)
