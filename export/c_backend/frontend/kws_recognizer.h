/* kws_recognizer.h: micro_speech's RecognizeCommands over the per-hop posteriors, in hops and
 * integers (bit-exact with export/kws_stream.py Recognizer). */
#ifndef KWS_RECOGNIZER_H_
#define KWS_RECOGNIZER_H_

#include <stdint.h>

#include "kws_input.h"
#include "zoo_model.h"

#define KWS_MAX_WINDOW 128

/* Set window, threshold, suppression and min_count, zero the rest (static storage does), and
 * last_class = last_hop = -1 before the first hop. RAM: KWS_MAX_WINDOW * ZOO_CLASSES bytes. */
typedef struct {
  int window, threshold, suppression, min_count;
  uint8_t history[KWS_MAX_WINDOW][ZOO_CLASSES];
  int32_t sums[ZOO_CLASSES];
  int32_t count, last_class, last_hop;
} kws_recognizer_t;

/* The class reported at this hop (and its mean score), or -1. */
static inline int kws_recognize(kws_recognizer_t *r, int32_t hop,
                                const uint8_t post[ZOO_CLASSES], int *score) {
  uint8_t *slot = r->history[hop % r->window];
  int c, top = 0, n;
  int32_t mean[ZOO_CLASSES];
  for (c = 0; c < ZOO_CLASSES; ++c) {
    if (r->count >= r->window) r->sums[c] -= slot[c];
    slot[c] = post[c];
    r->sums[c] += post[c];
  }
  if (r->count < r->window) r->count++;
  n = r->count;
  if (n < r->min_count) return -1;
  for (c = 0; c < ZOO_CLASSES; ++c) {
    mean[c] = r->sums[c] / n;
    if (mean[c] > mean[top]) top = c;
  }
  if (mean[top] <= r->threshold || kws_ignored_class[top]) return -1; /* silence, unknown */
  if (top == r->last_class && r->last_hop >= 0 && hop - r->last_hop <= r->suppression) return -1;
  r->last_class = top;
  r->last_hop = hop;
  *score = (int)mean[top];
  return top;
}

#endif /* KWS_RECOGNIZER_H_ */
