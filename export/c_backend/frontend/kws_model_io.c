/* kws_model_io.c: the front end's output into the model, the model's logits into posteriors
 * (integers only; the constants are the export's kws_input.c). See kws_input.h. */
#include "kws_input.h"

void kws_model_input(const int16_t l[KWS_FILTERS], int8_t xq[KWS_FILTERS]) {
  const int64_t round = (int64_t)1 << (kws_input_shift - 1);
  int j;
  for (j = 0; j < KWS_FILTERS; ++j) {
    const int64_t d = (int64_t)l[j] - kws_input_offset[j];
    int64_t v = kws_input_zero_point + ((d * kws_input_mul[j] + round) >> kws_input_shift);
    if (v < -128) v = -128;
    if (v > 127) v = 127;
    xq[j] = (int8_t)v;
  }
}

void kws_posteriors(int n, const int8_t *logits, uint8_t *post) {
  uint32_t e[64], total = 0; /* n <= 64 classes (the generator checks) */
  int c, max = logits[0];
  for (c = 1; c < n; ++c) {
    if (logits[c] > max) max = logits[c];
  }
  for (c = 0; c < n; ++c) total += e[c] = kws_exp_table[max - logits[c]];
  for (c = 0; c < n; ++c) post[c] = (uint8_t)((255u * e[c] + total / 2) / total);
}
