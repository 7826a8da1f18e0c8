/* kws_input.h: a model's side of the KWS pipeline, generated per export (kws_input.c) by
 * `zoo.export.c_backend.kws.write_kws_project`: the integer map from the front end's log2 energies
 * to the step model's int8 input, and the exp table of the integer softmax. Bit-exact with
 * training/tasks/int_frontend.py (InputMap) and export/kws_stream.py (Posteriors). */
#ifndef KWS_INPUT_H_
#define KWS_INPUT_H_

#include <stdint.h>

#include "kws_frontend.h"

#ifdef __cplusplus
extern "C" { /* C linkage from C++ (an Arduino sketch, say) */
#endif

/* xq[j] = clamp(zp + (((L[j] - offset[j]) * mul[j] + 2^(shift-1)) >> shift), -128, 127) */
extern const int32_t kws_input_offset[KWS_FILTERS];
extern const int32_t kws_input_mul[KWS_FILTERS];
extern const int32_t kws_input_shift;
extern const int32_t kws_input_zero_point;
/* round(65535 exp(-logit_scale d)), d = 0..255 */
extern const uint16_t kws_exp_table[256];
/* 1 for the classes the recognizer never reports (the model's _silence_ and _unknown_, by name;
 * a user's own words have none), 0 for the others; one entry per class. */
extern const uint8_t kws_ignored_class[];

void kws_model_input(const int16_t l[KWS_FILTERS], int8_t xq[KWS_FILTERS]);
/* uint8 posteriors of n int8 logits: p_c = (255 e_c + sum / 2) / sum, e_c = table[max - l_c]. */
void kws_posteriors(int n, const int8_t *logits, uint8_t *post);

#ifdef __cplusplus
}
#endif

#endif /* KWS_INPUT_H_ */
