/* kws_app: streaming keyword spotting on a 16 kHz mono int16 recording (a .wav file, or raw
 * little-endian int16 samples for any other name).
 *
 *   kws_app [options] AUDIO
 *     --features        print each frame's 32 log2 mel energies (Q8) and nothing else
 *     --quiet           print the detections only
 *     --instances K     K staggered copies of the recurrent state (1..8, default 1)
 *     --period P        hops between resets of each copy (default 99: the 1 s training window)
 *     --window N        hops averaged by the recognizer (1..128, default 50)
 *     --threshold S     mean posterior (0..255) a keyword must exceed (default 160)
 *     --suppression N   hops before the same keyword may be reported again (default 100)
 *     --min-count N     hops of history before the first report (default 5)
 *
 * Per 10 ms hop: "frame T logits <int8 x C> post <uint8 x C>"; per detection:
 * "detect T CLASS NAME SCORE". Exit status 2 with a message on bad options or input.
 * Bit-exact with export/kws_stream.py (StreamReference + Recognizer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static uint32_t le32(const unsigned char *b) {
  return b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* Positions f at the first sample of a .wav file's data chunk (16 kHz, mono, 16-bit PCM). */
static void skip_wav_header(FILE *f, const char *path) {
  unsigned char h[12], c[8], fmt[16];
  int have_fmt = 0;
  if (fread(h, 1, 12, f) != 12 || memcmp(h, "RIFF", 4) || memcmp(h + 8, "WAVE", 4)) {
    fprintf(stderr, "%s: not a RIFF/WAVE file\n", path);
    exit(2);
  }
  while (fread(c, 1, 8, f) == 8) {
    uint32_t size = le32(c + 4);
    if (!memcmp(c, "data", 4)) {
      if (!have_fmt) break;
      return;
    }
    if (!memcmp(c, "fmt ", 4) && size >= 16) {
      if (fread(fmt, 1, 16, f) != 16) break;
      const unsigned tag = fmt[0] | fmt[1] << 8; /* PCM, or WAVE_FORMAT_EXTENSIBLE */
      if ((tag != 1 && tag != 0xFFFE) || fmt[2] != 1 || fmt[3] != 0 || le32(fmt + 4) != 16000 ||
          fmt[14] != 16 || fmt[15] != 0) {
        fprintf(stderr, "%s: expected 16000 Hz, 1 channel, 16-bit PCM\n", path);
        exit(2);
      }
      have_fmt = 1;
      size -= 16;
    }
    if (fseek(f, (long)(size + (size & 1)), SEEK_CUR) != 0) break;
  }
  fprintf(stderr, "%s: truncated header (no fmt or data chunk)\n", path);
  exit(2);
}

int main(int argc, char **argv) {
  int a, c, k, n, features = 0, quiet = 0, instances = 1, period = 99, offsets[KWS_MAX_INSTANCES];
  const char *path = NULL;
  static kws_recognizer_t rec;
  static kws_stream_t stream;
  static zoo_state_t states[KWS_MAX_INSTANCES];
  unsigned char raw[2 * KWS_HOP];
  int32_t hop = 0;
  FILE *f;
  rec.window = 50, rec.threshold = 160, rec.suppression = 100, rec.min_count = 5;
  for (a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--features") == 0) features = 1;
    else if (strcmp(argv[a], "--quiet") == 0) quiet = 1;
    else if (arg(argc, argv, &a, "--instances", 1, KWS_MAX_INSTANCES, &instances)) continue;
    else if (arg(argc, argv, &a, "--period", 1, 1 << 20, &period)) continue;
    else if (arg(argc, argv, &a, "--window", 1, KWS_MAX_WINDOW, &rec.window)) continue;
    else if (arg(argc, argv, &a, "--threshold", 0, 255, &rec.threshold)) continue;
    else if (arg(argc, argv, &a, "--suppression", 0, 1 << 30, &rec.suppression)) continue;
    else if (arg(argc, argv, &a, "--min-count", 1, KWS_MAX_WINDOW, &rec.min_count)) continue;
    else if (argv[a][0] == '-' && argv[a][1] == '-') {
      fprintf(stderr, "unknown option %s\n", argv[a]);
      return 2;
    } else path = argv[a];
  }
  if (!path || instances > period) {
    fprintf(stderr, "usage: %s [--features] [--quiet] [--instances K<=period] [--period P] "
            "[--window N] [--threshold S] [--suppression N] [--min-count N] AUDIO\n", argv[0]);
    return 2;
  }
  if (!(f = fopen(path, "rb"))) {
    fprintf(stderr, "%s: cannot open\n", path);
    return 2;
  }
  n = (int)strlen(path);
  if (n > 4 && (strcmp(path + n - 4, ".wav") == 0 || strcmp(path + n - 4, ".WAV") == 0)) {
    skip_wav_header(f, path);
  }
  rec.last_class = -1, rec.last_hop = -1;
  kws_stream_reset(&stream);
  for (k = 0; k < instances; ++k) {
    offsets[k] = k * period / instances;
    zoo_reset(&states[k]);
  }
  while ((n = (int)fread(raw, 2, KWS_HOP, f)) > 0) {
    int16_t samples[KWS_HOP], l[KWS_FILTERS];
    int8_t xq[KWS_FILTERS], logits[ZOO_CLASSES];
    uint8_t post[ZOO_CLASSES];
    int best = 0, best_age = -1, top, score = 0;
    for (a = 0; a < n; ++a) samples[a] = (int16_t)(raw[2 * a] | raw[2 * a + 1] << 8);
    /* each read of KWS_HOP samples completes at most one frame */
    if (kws_stream_write(&stream, samples, n, l) != 1) continue;
    if (features) {
      printf("frame %ld", (long)hop);
      for (c = 0; c < KWS_FILTERS; ++c) printf(" %d", l[c]);
      printf("\n");
      ++hop;
      continue;
    }
    kws_model_input(l, xq);
    for (k = 0; k < instances; ++k) {
      const int age = hop >= offsets[k] ? (int)((hop - offsets[k]) % period) : (int)hop;
      if (hop >= offsets[k] && age == 0) zoo_reset(&states[k]);
      zoo_push_q(&states[k], xq);
      if (age > best_age) best_age = age, best = k;
    }
    zoo_predict(&states[best], logits);
    kws_posteriors(ZOO_CLASSES, logits, post);
    if (!quiet) {
      printf("frame %ld logits", (long)hop);
      for (c = 0; c < ZOO_CLASSES; ++c) printf(" %d", logits[c]);
      printf(" post");
      for (c = 0; c < ZOO_CLASSES; ++c) printf(" %d", post[c]);
      printf("\n");
    }
    top = kws_recognize(&rec, hop, post, &score);
    if (top >= 0) printf("detect %ld %d %s %d\n", (long)hop, top, zoo_class_names[top], score);
    ++hop;
  }
  fclose(f);
  return 0;
}
