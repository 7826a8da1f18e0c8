/* The profile harness of a keyword-spotting C export (`zoo profile`): the whole 10 ms hop that
 * kws_app runs (instances 1), `app NAME PART N`, the same source on every target:
 *   PART hop:      N hops: 160 new samples through the integer front end (kws_stream_write),
 *                  the int8 input map, one step, the head, the posteriors and the recognizer,
 *                  the state reset every 99 hops (the 1 s training window), as kws_app does
 *   PART frontend: N hops of the front end only
 *   PART loop:     the samples alone (the harness's own cost)
 *   PART check:    N hops of the pipeline, printing each hop's 32 features and int8 logits, so
 *                  the cross build is compared with the host build line for line
 * Samples: a 440 Hz square wave plus pseudo-random noise, so every stage does its usual work.
 * profile_names.h defines the names before prefixes (kws_*, KWS_*, zoo_*) as the export's. */
#include "kws_frontend.h"
#include "kws_input.h"
#include "kws_recognizer.h"
#include "profile_io.h"
#include "profile_names.h"

static unsigned lcg = 12345u;
static int16_t next_sample(unsigned n) {
  lcg = lcg * 1664525u + 1013904223u;
  return (int16_t)((((n / 18) & 1) ? 3000 : -3000) + (int16_t)(lcg >> 16) / 16);
}

static void print_hop(int hop, const int16_t *l, const int8_t *logits) {
  int i;
  zp_puts("hop "), zp_putint(hop), zp_puts(":");
  for (i = 0; i < KWS_FILTERS; ++i) zp_puts(" "), zp_putint(l[i]);
  zp_puts(" |");
  for (i = 0; i < ZOO_CLASSES; ++i) zp_puts(" "), zp_putint(logits[i]);
  zp_puts("\n");
}

int main(int argc, char **argv) {
  static kws_stream_t stream;
  static zoo_state_t state;
  static kws_recognizer_t rec;
  int16_t l[KWS_FILTERS] = {0};
  int8_t xq[KWS_FILTERS], logits[ZOO_CLASSES];
  uint8_t post[ZOO_CLASSES];
  int n, hop, i, part, score;
  long sum = 0;
  unsigned t = 0;
  if (argc < 4) return 2;
  part = zp_same(argv[2], "hop") || zp_same(argv[2], "check") ? 2
       : zp_same(argv[2], "frontend") ? 1 : 0;
  n = zp_atoi(argv[3]);
  kws_stream_reset(&stream);
  zoo_reset(&state);
  rec.window = 50, rec.threshold = 160, rec.suppression = 100, rec.min_count = 5;
  rec.last_class = rec.last_hop = -1;
  for (i = 0; i < KWS_FRAME - KWS_HOP; ++i) kws_stream_push(&stream, next_sample(t++), l);
  for (hop = 0; hop < n; ++hop) {
    int16_t samples[KWS_HOP];
    for (i = 0; i < KWS_HOP; ++i) samples[i] = next_sample(t++);
    if (part == 0) {
      sum += samples[hop % KWS_HOP];
      continue;
    }
    if (kws_stream_write(&stream, samples, KWS_HOP, l) == 1) sum += l[0];
    if (part < 2) continue;
    kws_model_input(l, xq);
    if (hop % 99 == 0) zoo_reset(&state);
    zoo_push_q(&state, xq);
    zoo_predict(&state, logits);
    kws_posteriors(ZOO_CLASSES, logits, post);
    score = 0;
    sum += kws_recognize(&rec, hop, post, &score) + score;
    if (argv[2][0] == 'c') print_hop(hop, l, logits);
  }
  zp_done(argv[1], argv[2], argv[3], sum);
  return 0;
}
