/* Instruction-count driver for the streaming KWS pipeline (zoo.export.c_backend.kws: the integer
 * front end + a C-backend step model + posteriors + recognizer), the protocol of c_main.c:
 * `app kws PART N`, counted by QEMU's plugin (kws_measure.py: per hop = (count(2N) - count(N)) / N).
 *   PART hop:      N hops of the whole pipeline (160 new samples each: 400-sample frame, front
 *                  end, int8 input map, one step, the head, posteriors, recognizer)
 *   PART frontend: N hops of the front end only (kws_stream_write of 160 samples)
 *   PART loop:     the samples alone (the driver's own cost)
 *   PART frame / power: N calls of kws_frontend_frame / kws_power_spectrum on one frame
 *   PART print:    N hops of the pipeline, printing each hop's 32 features and int8 logits, so
 *                  tests/export/test_kws_c.py checks the Cortex-M build against the reference
 * Samples: a 440 Hz square wave plus pseudo-random noise, so every stage does its usual work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kws_frontend.h"
#include "kws_input.h"
#include "kws_recognizer.h"
#include "profile_names.h" /* the export's header, its names as zoo_* (names before prefixes) */

static unsigned lcg = 12345u;
static int16_t next_sample(unsigned n) {
  lcg = lcg * 1664525u + 1013904223u;
  return (int16_t)((((n / 18) & 1) ? 3000 : -3000) + (int16_t)(lcg >> 16) / 16);
}

int main(int argc, char **argv) {
  static kws_stream_t stream;
  static zoo_state_t state;
  static kws_recognizer_t rec;
  int16_t l[KWS_FILTERS];
  int8_t xq[KWS_FILTERS], logits[ZOO_CLASSES];
  uint8_t post[ZOO_CLASSES];
  int n, hop, i, part, score, sum = 0;
  unsigned t = 0;
  if (argc < 4) { printf("usage\n"); return 2; }
  part = strcmp(argv[2], "hop") == 0 || strcmp(argv[2], "print") == 0 ? 2
       : strcmp(argv[2], "frontend") == 0 ? 1 : 0;
  n = atoi(argv[3]);
  kws_stream_reset(&stream);
  zoo_reset(&state);
  rec.window = 50, rec.threshold = 160, rec.suppression = 100, rec.min_count = 5;
  rec.last_class = rec.last_hop = -1;
  for (i = 0; i < KWS_FRAME - KWS_HOP; ++i) kws_stream_push(&stream, next_sample(t++), l);
  if (strcmp(argv[2], "frame") == 0 || strcmp(argv[2], "power") == 0) {
    static uint32_t lo[KWS_BINS], hi[KWS_BINS];
    for (hop = 0; hop < n; ++hop) {
      stream.window[hop % KWS_FRAME] ^= (int16_t)hop; /* keep the calls' work */
      if (argv[2][0] == 'f') kws_frontend_frame(stream.window, 0, l), sum += l[hop % 32];
      else kws_power_spectrum(stream.window, 0, lo, hi), sum += (int)lo[hop % 257];
    }
    printf("done %s %s n=%d checksum=%d\n", argv[1], argv[2], n, sum);
    return 0;
  }
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
    sum += kws_recognize(&rec, hop, post, &score);
    if (argv[2][0] == 'p') {
      printf("hop %d:", hop);
      for (i = 0; i < KWS_FILTERS; ++i) printf(" %d", l[i]);
      printf(" |");
      for (i = 0; i < ZOO_CLASSES; ++i) printf(" %d", logits[i]);
      printf("\n");
    }
  }
  printf("done %s %s n=%d checksum=%d\n", argv[1], argv[2], n, sum);
  return 0;
}
