/* kws_frontend.h: the zoo's integer log-mel front ends for 16 kHz int16 audio (plain C99: no
 * heap, no libm, no float). One call per 10 ms hop turns the last 400 samples (25 ms) into 32
 * log2 mel energies in Q8. Two implementations of this header, one per feature set:
 * kws_frontend.c (features int_logmel, bit-exact with training/tasks/int_frontend.py) and
 * kws_frontend_q15.c (int_logmel_q15, about half the instructions on a Cortex-M4, bit-exact
 * with training/tasks/int_frontend_q15.py); the export writes the one its model was trained on
 * as kws_frontend.c (the zoo's tests compile both and compare on real clips).
 *
 *   pre-emphasis 0.97 -> Q15 Hamming window -> 512-point real FFT (a 256-point complex radix-2
 *   FFT, Q15 twiddles, int32 data, int64 products) -> power (uint64) -> 32 mel triangles
 *   (python_speech_features' filters in Q12) -> log2 in Q8 (table of 65 + interpolation).
 *
 * ln(filter energy of the float front end) ~ (L / 256 - 17) ln 2, for both.
 * Assumes two's complement and arithmetic right shifts of negative values (gcc, clang, armcc). */
#ifndef KWS_FRONTEND_H_
#define KWS_FRONTEND_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* C linkage from C++ (an Arduino sketch, say) */
#endif

#define KWS_FRAME 400   /* samples per frame (25 ms at 16 kHz) */
#define KWS_HOP 160     /* samples per hop (10 ms) */
#define KWS_FILTERS 32  /* mel filters: features per frame */
#define KWS_BINS 257    /* bins of the 512-point real FFT */
#define KWS_LOG_Q 8     /* the output is log2(energy) * 2^8 */
#define KWS_BLOCK 80    /* samples per block of the q15 front end's scale (a hop is 2) */
#define KWS_BLOCKS (KWS_FRAME / KWS_BLOCK)

/* L[32] of one frame x[0..399]; prev is the sample before x[0] (0 at the start of a stream).
 * Uses about 4 KB of stack (the FFT's work buffers and the power spectrum). */
void kws_frontend_frame(const int16_t x[KWS_FRAME], int16_t prev, int16_t out[KWS_FILTERS]);

/* The first stages, for benchmarks: P[k] >> 6 of the frame, P[k] = |2 X[k]|^2, as its low and
 * high 32-bit words (q15: |X[k]|^2 at the frame's own scale in lo[], hi[] zero). */
void kws_power_spectrum(const int16_t x[KWS_FRAME], int16_t prev, uint32_t lo[KWS_BINS],
                        uint32_t hi[KWS_BINS]);
/* log2(e) in Q8 (0 for e <= 1). */
int16_t kws_log2_q8(uint64_t e);

/* A stream of samples -> a frame every KWS_HOP samples once KWS_FRAME have arrived. */
typedef struct {
  int16_t window[KWS_FRAME]; /* the last KWS_FRAME samples, oldest first (q15: pre-emphasized) */
  int16_t prev;              /* the sample before window[0] (q15: the last sample pushed) */
  int32_t filled;            /* samples in window[] (the frame is complete at KWS_FRAME) */
  uint16_t bits[KWS_BLOCKS]; /* q15 only: per block, the OR of its magnitudes (the scale) */
} kws_stream_t;

void kws_stream_reset(kws_stream_t *s);
/* Push one sample; returns 1 and writes out[] when it completes a frame, else 0. */
int kws_stream_push(kws_stream_t *s, int16_t sample, int16_t out[KWS_FILTERS]);
/* Push n <= KWS_HOP samples (so at most one frame completes): 1 with out[] written when one
 * does, else 0; -1 (nothing pushed) when n > KWS_HOP. */
int kws_stream_write(kws_stream_t *s, const int16_t *samples, int n, int16_t out[KWS_FILTERS]);

#ifdef __cplusplus
}
#endif

#endif /* KWS_FRONTEND_H_ */
