/* kws_app: streaming keyword spotting on a 16 kHz recording: a WAV file (integer PCM or float,
 * 1 to 8 channels mixed to mono; kws_audio.h), or raw little-endian int16 mono samples; which
 * one is decided by the file's content.
 *
 *   kws_app [options] AUDIO
 *     --features        print each frame's 32 log2 mel energies (Q8) and nothing else
 *     --quiet           print the detections only
 *     --instances K     K staggered copies of the recurrent state (1..8, default 1)
 *     --period P        hops between resets of each copy (1..1048576, default 99: the 1 s
 *                       training window)
 *     --window N        hops averaged by the recognizer (1..128, default 50)
 *     --threshold S     mean posterior (0..255) a keyword must exceed (default 160)
 *     --suppression N   hops before the same keyword may be reported again (0..2^30, default
 *                       100)
 *     --min-count N     hops of history before the first report (default 5)
 *     --help            the usage on stdout, exit status 0
 *
 * Per 10 ms hop: "frame T logits <int8 x C> post <uint8 x C>"; per detection:
 * "detect T CLASS NAME SCORE". Exit status 2 with one line on stderr on bad options or input
 * (numbers are parsed whole and range-checked: zoo_args.h; audio: kws_audio.h), before any
 * output.
 * Bit-exact with export/kws_stream.py (StreamReference + Recognizer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kws_audio.h"
#include "kws_frontend.h"
#include "kws_input.h"
#include "kws_recognizer.h"
#include "zoo_args.h"
#include "zoo_model.h"

#define KWS_MAX_INSTANCES 8

/* Option `name` at argv[*a]: 1 with its value (zoo_args.h: the whole text, within lo..hi), 0 when
 * argv[*a] is another option; exits with status 2 on a bad value. */
static int arg(int argc, char **argv, int *a, const char *name, long lo, long hi, int *value) {
  long v;
  if (strcmp(argv[*a], name) != 0) return 0;
  if (!zoo_int_option(argc, argv, a, name, lo, hi, &v)) exit(2);
  *value = (int)v;
  return 1;
}

typedef struct {
  int features, quiet, instances, period;
  const char *path;
} kws_options_t;

static const char kUsage[] =
    "usage: %s [options] AUDIO\n"
    "streaming keyword spotting on a 16 kHz recording (a WAV file, or raw int16 mono samples)\n"
    "  --features        print each frame's 32 log2 mel energies (Q8) and nothing else\n"
    "  --quiet           print the detections only\n"
    "  --instances K     K staggered copies of the recurrent state (1..8, default 1)\n"
    "  --period P        hops between resets of each copy (1..1048576, default 99)\n"
    "  --window N        hops averaged by the recognizer (1..128, default 50)\n"
    "  --threshold S     mean posterior (0..255) a keyword must exceed (default 160)\n"
    "  --suppression N   hops before the same keyword is reported again (default 100)\n"
    "  --min-count N     hops of history before the first report (1..128, default 5)\n"
    "  --help            this text\n";

/* The options into o and r: 1, or 0 after one line on stderr (--help: the usage, exit 0). */
static int parse_options(int argc, char **argv, kws_options_t *o, kws_recognizer_t *r) {
  int a;
  o->features = 0, o->quiet = 0, o->instances = 1, o->period = 99, o->path = NULL;
  r->window = 50, r->threshold = 160, r->suppression = 100, r->min_count = 5;
  for (a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
      printf(kUsage, argv[0]);
      exit(0);
    } else if (strcmp(argv[a], "--features") == 0) o->features = 1;
    else if (strcmp(argv[a], "--quiet") == 0) o->quiet = 1;
    else if (arg(argc, argv, &a, "--instances", 1, KWS_MAX_INSTANCES, &o->instances)) continue;
    else if (arg(argc, argv, &a, "--period", 1, 1 << 20, &o->period)) continue;
    else if (arg(argc, argv, &a, "--window", 1, KWS_MAX_WINDOW, &r->window)) continue;
    else if (arg(argc, argv, &a, "--threshold", 0, 255, &r->threshold)) continue;
    else if (arg(argc, argv, &a, "--suppression", 0, 1 << 30, &r->suppression)) continue;
    else if (arg(argc, argv, &a, "--min-count", 1, KWS_MAX_WINDOW, &r->min_count)) continue;
    else if (argv[a][0] == '-' && argv[a][1] == '-') {
      fprintf(stderr, "unknown option %s (valid: --features, --quiet, --instances, --period, "
              "--window, --threshold, --suppression, --min-count, --help)\n", argv[a]);
      return 0;
    } else if (o->path) {
      fprintf(stderr, "one AUDIO file, got %s and %s\n", o->path, argv[a]);
      return 0;
    } else o->path = argv[a];
  }
  if (o->instances > o->period) {
    fprintf(stderr, "--instances %d is more than --period %d: K copies of the state are "
            "staggered over the period\n", o->instances, o->period);
    return 0;
  }
  if (!o->path) {
    fprintf(stderr, "usage: %s [--features] [--quiet] [--instances K<=period] [--period P] "
            "[--window N] [--threshold S] [--suppression N] [--min-count N] AUDIO\n", argv[0]);
    return 0;
  }
  return 1;
}

/* One hop's frame l: every instance steps; the oldest one's logits, posteriors, detection. */
static void run_hop(const kws_options_t *o, int32_t hop, const int16_t l[KWS_FILTERS],
                    const int offsets[], zoo_state_t states[], kws_recognizer_t *rec) {
  int8_t xq[KWS_FILTERS], logits[ZOO_CLASSES];
  uint8_t post[ZOO_CLASSES];
  int best = 0, best_age = -1, top, score = 0, k, c;
  kws_model_input(l, xq);
  for (k = 0; k < o->instances; ++k) {
    const int age = hop >= offsets[k] ? (int)((hop - offsets[k]) % o->period) : (int)hop;
    if (hop >= offsets[k] && age == 0) zoo_reset(&states[k]);
    zoo_push_q(&states[k], xq);
    if (age > best_age) best_age = age, best = k;
  }
  zoo_predict(&states[best], logits);
  kws_posteriors(ZOO_CLASSES, logits, post);
  if (!o->quiet) {
    printf("frame %ld logits", (long)hop);
    for (c = 0; c < ZOO_CLASSES; ++c) printf(" %d", logits[c]);
    printf(" post");
    for (c = 0; c < ZOO_CLASSES; ++c) printf(" %d", post[c]);
    printf("\n");
  }
  top = kws_recognize(rec, hop, post, &score);
  if (top >= 0) printf("detect %ld %d %s %d\n", (long)hop, top, zoo_class_names[top], score);
}

int main(int argc, char **argv) {
  static kws_recognizer_t rec;
  static kws_stream_t stream;
  static zoo_state_t states[KWS_MAX_INSTANCES];
  kws_options_t o;
  kws_audio_t audio;
  int offsets[KWS_MAX_INSTANCES], k, c, n;
  int32_t hop = 0;
  if (!parse_options(argc, argv, &o, &rec)) return 2;
  if (!kws_audio_open(&audio, o.path)) {
    kws_audio_close(&audio);
    return 2;
  }
  rec.last_class = -1, rec.last_hop = -1;
  kws_stream_reset(&stream);
  for (k = 0; k < o.instances; ++k) {
    offsets[k] = k * o.period / o.instances;
    zoo_reset(&states[k]);
  }
  for (;;) {
    int16_t samples[KWS_HOP], l[KWS_FILTERS];
    if ((n = kws_audio_read(&audio, samples, KWS_HOP)) <= 0) break;
    /* each read of KWS_HOP samples completes at most one frame */
    if (kws_stream_write(&stream, samples, n, l) != 1) continue;
    if (o.features) {
      printf("frame %ld", (long)hop);
      for (c = 0; c < KWS_FILTERS; ++c) printf(" %d", l[c]);
      printf("\n");
    } else {
      run_hop(&o, hop, l, offsets, states, &rec);
    }
    ++hop;
  }
  kws_audio_close(&audio);
  if (n == 0 && audio.frame == 0) fprintf(stderr, "%s: no samples\n", o.path);
  return n < 0 || audio.frame == 0 ? 2 : 0;
}
