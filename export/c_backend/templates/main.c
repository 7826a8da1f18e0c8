/* zoo_app: runs the generated int8 model over windows of raw features.
 *
 *   zoo_app WINDOWS.f32          N windows of ZOO_TIMESTEPS x ZOO_FEATURES little-endian float32
 *                                -> one line per window: the ZOO_CLASSES int8 logits
 *   zoo_app --int8 WINDOWS.i8    the same with already-quantized int8 inputs (zoo_push_q)
 *   zoo_app --state ...          append " | " and the final int8 state to every line
 *   zoo_app --bench N ...        time N passes over the windows instead (per window and step)
 *
 * Exit status 0, or 2 with a message on a file that cannot be read (a directory, say), an empty
 * file or one that is not whole windows, or a bad option (--bench 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zoo_args.h"
#include "zoo_model.h"

#define ZOO_WINDOW (ZOO_TIMESTEPS * ZOO_FEATURES)

/* The whole file, read in chunks (no ftell: on a directory it returns LONG_MAX, and a pipe has
 * no size). NULL with a message on a file that cannot be read, is empty, or is not whole
 * windows; *count is the number of items of `item` bytes. */
static void *read_file(const char *path, size_t item, size_t *count) {
  FILE *f = fopen(path, "rb");
  size_t size = 0, capacity = 1 << 16, got;
  char *data, *grown;
  if (!f) {
    fprintf(stderr, "%s: cannot open the file\n", path);
    return NULL;
  }
  data = malloc(capacity);
  while (data && (got = fread(data + size, 1, capacity - size, f)) > 0) {
    size += got;
    if (size == capacity) {
      grown = capacity <= ((size_t)-1) / 2 ? realloc(data, capacity * 2) : NULL;
      if (!grown) free(data);
      data = grown;
      capacity *= 2;
    }
  }
  if (!data || ferror(f)) {
    fprintf(stderr, "%s: cannot read the file (%s)\n", path,
            data ? "not a regular file, or a read error" : "out of memory");
    free(data);
    fclose(f);
    return NULL;
  }
  fclose(f);
  if (size == 0 || size % (item * ZOO_WINDOW) != 0) {
    fprintf(stderr, "%s: %lu bytes is %s windows of %d x %d values of %u bytes\n", path,
            (unsigned long)size, size ? "not a whole number of" : "an empty file: no",
            ZOO_TIMESTEPS, ZOO_FEATURES, (unsigned)item);
    free(data);
    return NULL;
  }
  *count = size / item;
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
  int quantized = 0, show_state = 0, a, c;
  long bench = 0, i;
  size_t count, n, w;
  const char *path = NULL;
  void *data;
  zoo_state_t s;
  int8_t logits[ZOO_CLASSES];
  for (a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--int8") == 0) quantized = 1;
    else if (strcmp(argv[a], "--state") == 0) show_state = 1;
    else if (strcmp(argv[a], "--bench") == 0) {
      if (!zoo_int_option(argc, argv, &a, "--bench", 1, 1000000000L, &bench)) return 2;
    } else if (argv[a][0] == '-' && argv[a][1] == '-') {
      fprintf(stderr, "unknown option %s (valid: --int8, --state, --bench N)\n", argv[a]);
      return 2;
    } else if (path) {
      fprintf(stderr, "one WINDOWS file, got %s and %s\n", path, argv[a]);
      return 2;
    } else {
      path = argv[a];
    }
  }
  if (!path) {
    fprintf(stderr, "usage: %s [--int8] [--state] [--bench N] WINDOWS\n", argv[0]);
    return 2;
  }
  data = read_file(path, quantized ? 1 : sizeof(float), &count);
  if (!data) return 2;
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
