/* zoo_app: runs the generated int8 model over windows of raw features.
 *
 *   zoo_app WINDOWS.f32          N windows of ZOO_TIMESTEPS x ZOO_FEATURES little-endian float32
 *                                -> one line per window: the ZOO_CLASSES int8 logits
 *   zoo_app --int8 WINDOWS.i8    the same with already-quantized int8 inputs (zoo_push_q)
 *   zoo_app --state ...          append " | " and the final int8 state to every line
 *   zoo_app --bench N ...        time N passes over the windows instead (per window and step)
 *
 * Exit status 0, or 2 with a message on a missing file or a size that is not whole windows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zoo_model.h"

#define ZOO_WINDOW (ZOO_TIMESTEPS * ZOO_FEATURES)

static void *read_file(const char *path, size_t item, size_t *count) {
  FILE *f = fopen(path, "rb");
  long bytes;
  void *data;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (bytes = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  data = malloc(bytes > 0 ? (size_t)bytes : 1);
  if (data && fread(data, 1, (size_t)bytes, f) != (size_t)bytes) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *count = (size_t)bytes / item;
  if (data && (size_t)bytes % (item * ZOO_WINDOW) != 0) {
    fprintf(stderr, "%s: %ld bytes is not a whole number of windows of %d x %d values of %u "
            "bytes\n", path, bytes, ZOO_TIMESTEPS, ZOO_FEATURES, (unsigned)item);
    exit(2);
  }
  return data;
}

static int run_window(zoo_state_t *s, const void *window, int quantized, int8_t *logits) {
  int t;
  zoo_reset(s);
  for (t = 0; t < ZOO_TIMESTEPS; ++t) {
    if (quantized) {
      zoo_push_q(s, (const int8_t *)window + t * ZOO_FEATURES);
    } else {
      zoo_push(s, (const float *)window + t * ZOO_FEATURES);
    }
  }
  return zoo_predict(s, logits);
}

static double seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

int main(int argc, char **argv) {
  int quantized = 0, show_state = 0, bench = 0, a, c, i;
  size_t count, n, w;
  const char *path = NULL;
  void *data;
  zoo_state_t s;
  int8_t logits[ZOO_CLASSES];
  for (a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--int8") == 0) quantized = 1;
    else if (strcmp(argv[a], "--state") == 0) show_state = 1;
    else if (strcmp(argv[a], "--bench") == 0 && a + 1 < argc) bench = atoi(argv[++a]);
    else path = argv[a];
  }
  if (!path) {
    fprintf(stderr, "usage: %s [--int8] [--state] [--bench N] WINDOWS\n", argv[0]);
    return 2;
  }
  data = read_file(path, quantized ? 1 : sizeof(float), &count);
  if (!data) {
    fprintf(stderr, "%s: cannot read the file\n", path);
    return 2;
  }
  n = count / ZOO_WINDOW;
  if (bench > 0) {
    double t0 = seconds(), elapsed;
    volatile int sink = 0;
    for (i = 0; i < bench; ++i) {
      for (w = 0; w < n; ++w) {
        const char *win = (const char *)data + w * ZOO_WINDOW * (quantized ? 1 : sizeof(float));
        sink += run_window(&s, win, quantized, logits);
      }
    }
    elapsed = seconds() - t0;
    printf("windows %lu per_window_us %.3f per_step_us %.4f\n", (unsigned long)(n * bench),
           1e6 * elapsed / (double)(n * bench), 1e6 * elapsed / (double)(n * bench * ZOO_TIMESTEPS));
    free(data);
    return sink < 0;
  }
  for (w = 0; w < n; ++w) {
    const char *win = (const char *)data + w * ZOO_WINDOW * (quantized ? 1 : sizeof(float));
    run_window(&s, win, quantized, logits);
    for (c = 0; c < ZOO_CLASSES; ++c) printf(c ? " %d" : "%d", logits[c]);
    if (show_state) {
      printf(" |");
      for (c = 0; c < ZOO_UNITS; ++c) printf(" %d", s.h[c]);
    }
    printf("\n");
  }
  free(data);
  return 0;
}
