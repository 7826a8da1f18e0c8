/* The smallest program that runs the keyword pipeline once (front end, input map, step, head,
 * posteriors, recognizer): its size minus empty.c's is what it costs a firmware. */
#include "kws_frontend.h"
#include "kws_input.h"
#include "kws_recognizer.h"
#include "profile_names.h"
int main(void) {
  static kws_stream_t stream;
  static zoo_state_t state;
  static kws_recognizer_t rec;
  int16_t l[KWS_FILTERS];
  int8_t xq[KWS_FILTERS], logits[ZOO_CLASSES];
  uint8_t post[ZOO_CLASSES];
  int i, score = 0;
  rec.window = 50, rec.threshold = 160, rec.suppression = 100, rec.min_count = 1;
  rec.last_class = rec.last_hop = -1;
  kws_stream_reset(&stream);
  zoo_reset(&state);
  for (i = 0; i < KWS_FRAME - 1; ++i) kws_stream_push(&stream, (int16_t)i, l);
  if (!kws_stream_push(&stream, 0, l)) return 1;
  kws_model_input(l, xq);
  zoo_push_q(&state, xq);
  zoo_predict(&state, logits);
  kws_posteriors(ZOO_CLASSES, logits, post);
  return kws_recognize(&rec, 0, post, &score) + score;
}
