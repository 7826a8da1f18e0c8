/* zoo_app: runs the generated int8 model over a file of windows.
 *
 *   zoo_app WINDOWS              one line per window: the ZOO_CLASSES int8 logits
 *   zoo_app --state WINDOWS      and " | " and the final int8 state
 *   zoo_app --bench N WINDOWS    time N passes over the windows instead (per window and step)
 *   zoo_app --help               this usage on stdout, exit status 0
 *
 * WINDOWS says what its numbers are: a 16-byte header, then N windows of ZOO_TIMESTEPS x
 * ZOO_FEATURES values, time-major, little-endian (python -m zoo.export.c_backend.windows writes
 * one from an export's test set):
 *   "ZOOW", then the kind: "RAW " float32 raw features (zoo_push: normalized and quantized here),
 *   "NORM" float32 features already normalized (quantized only), "INT8" the step model's int8
 *   input (zoo_push_q); then T and F as uint32.
 *
 * Exit status 0, or 2 with one line on stderr naming the file and what is wrong: it cannot be
 * read (a directory, say), has no header, windows of another shape, not whole windows, none,
 * a float that is NaN or infinite (naming the window), or a bad option (--bench 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zoo_args.h"
#include "zoo_model.h"

#define ZOO_WINDOW (ZOO_TIMESTEPS * ZOO_FEATURES)
#define ZOO_HEADER 16

enum { ZOO_RAW, ZOO_NORMALIZED, ZOO_INT8 };
static const char *const kKinds[] = {"RAW ", "NORM", "INT8"};

/* The whole file, read in chunks (no ftell: on a directory it returns LONG_MAX, and a pipe has
 * no size). NULL with a message on a file that cannot be read; *size is its byte count. */
static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  size_t capacity = 1 << 16, got;
  unsigned char *data, *grown;
  *size = 0;
  if (!f) {
    fprintf(stderr, "%s: cannot open the file\n", path);
    return NULL;
  }
  data = malloc(capacity);
  while (data && (got = fread(data + *size, 1, capacity - *size, f)) > 0) {
    *size += got;
    if (*size == capacity) {
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
    data = NULL;
  }
  fclose(f);
  return data;
}

static unsigned long le32(const unsigned char *b) {
  return b[0] | (unsigned long)b[1] << 8 | (unsigned long)b[2] << 16 | (unsigned long)b[3] << 24;
}

/* The header's kind (ZOO_RAW ...) and the window count, or -1 with one line on stderr. */
static int check_header(const char *path, const unsigned char *data, size_t size, size_t *n) {
  int kind;
  size_t window_bytes;
  if (size < ZOO_HEADER || memcmp(data, "ZOOW", 4) != 0) {
    fprintf(stderr, "%s: %s; zoo_app reads window files with a 16-byte header that says what "
            "the numbers are (python -m zoo.export.c_backend.windows writes one; README.md)\n",
            path, size ? "no zoo window header (it does not start with ZOOW)" : "an empty file");
    return -1;
  }
  for (kind = 0; kind < 3 && memcmp(data + 4, kKinds[kind], 4) != 0; ++kind) continue;
  if (kind == 3) {
    fprintf(stderr, "%s: window kind '%.4s'; valid: 'RAW ', 'NORM', 'INT8'\n", path, data + 4);
    return -1;
  }
  if (le32(data + 8) != ZOO_TIMESTEPS || le32(data + 12) != ZOO_FEATURES) {
    fprintf(stderr, "%s: windows of %lu x %lu; this model takes %d x %d (timesteps x "
            "features)\n", path, le32(data + 8), le32(data + 12), ZOO_TIMESTEPS, ZOO_FEATURES);
    return -1;
  }
  window_bytes = ZOO_WINDOW * (kind == ZOO_INT8 ? 1 : sizeof(float));
  if (size == ZOO_HEADER || (size - ZOO_HEADER) % window_bytes != 0) {
    fprintf(stderr, "%s: %lu bytes after the header is %s windows of %d x %d %s values\n", path,
            (unsigned long)(size - ZOO_HEADER), size == ZOO_HEADER ? "no" :
            "not a whole number of", ZOO_TIMESTEPS, ZOO_FEATURES, kind == ZOO_INT8 ? "int8" :
            "float32");
    return -1;
  }
  *n = (size - ZOO_HEADER) / window_bytes;
  return kind;
}

/* Float windows: every value finite (zoo_push would quantize NaN to -128), else one line. */
static int check_finite(const char *path, const float *x, size_t n) {
  size_t i;
  for (i = 0; i < n * ZOO_WINDOW; ++i) {
    if (!(x[i] - x[i] == 0.0f)) { /* NaN - NaN and inf - inf are NaN */
      const size_t w = i / ZOO_WINDOW, t = i % ZOO_WINDOW / ZOO_FEATURES;
      fprintf(stderr, "%s: window %lu, step %lu, feature %lu is %s; windows must be finite\n",
              path, (unsigned long)w, (unsigned long)t, (unsigned long)(i % ZOO_FEATURES),
              x[i] != x[i] ? "nan" : (x[i] > 0 ? "inf" : "-inf"));
      return 0;
    }
  }
  return 1;
}

static int run_window(zoo_state_t *s, const unsigned char *window, int kind, int8_t *logits) {
  int t;
  zoo_reset(s);
  for (t = 0; t < ZOO_TIMESTEPS; ++t) {
    if (kind == ZOO_INT8) {
      zoo_push_q(s, (const int8_t *)window + t * ZOO_FEATURES);
    } else if (kind == ZOO_RAW) {
      zoo_push(s, (const float *)window + t * ZOO_FEATURES);
    } else {
      int8_t xq[ZOO_FEATURES];
      zoo_quantize_normalized((const float *)window + t * ZOO_FEATURES, xq);
      zoo_push_q(s, xq);
    }
  }
  return zoo_predict(s, logits);
}

static double seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

/* --bench: N passes over the n windows, timed. */
static int bench(const unsigned char *windows, size_t n, size_t window_bytes, int kind,
                 long reps) {
  double t0 = seconds(), elapsed;
  volatile int sink = 0;
  zoo_state_t s;
  int8_t logits[ZOO_CLASSES];
  size_t w;
  long i;
  for (i = 0; i < reps; ++i) {
    for (w = 0; w < n; ++w) sink += run_window(&s, windows + w * window_bytes, kind, logits);
  }
  elapsed = seconds() - t0;
  printf("windows %lu per_window_us %.3f per_step_us %.4f\n", (unsigned long)(n * reps),
         1e6 * elapsed / (double)(n * reps), 1e6 * elapsed / (double)(n * reps * ZOO_TIMESTEPS));
  return sink < 0;
}

static const char kUsage[] =
    "usage: %s [--state] [--bench N] WINDOWS\n"
    "runs the int8 model over a window file (python -m zoo.export.c_backend.windows writes one)\n"
    "  WINDOWS      a 16-byte header (ZOOW, the kind RAW / NORM / INT8, T and F as uint32), then\n"
    "               N windows of %d x %d values: one line of %d int8 logits per window\n"
    "  --state      also the final int8 state (after \" | \")\n"
    "  --bench N    time N passes over the windows instead (1..1000000000)\n"
    "  --help       this text\n";

/* The options: 1, or 0 after one line on stderr (--help: the usage, exit status 0). */
static int parse_options(int argc, char **argv, int *show_state, long *reps, const char **path) {
  int a;
  for (a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
      printf(kUsage, argv[0], ZOO_TIMESTEPS, ZOO_FEATURES, ZOO_CLASSES);
      exit(0);
    } else if (strcmp(argv[a], "--state") == 0) *show_state = 1;
    else if (strcmp(argv[a], "--bench") == 0) {
      if (!zoo_int_option(argc, argv, &a, "--bench", 1, 1000000000L, reps)) return 0;
    } else if (argv[a][0] == '-' && argv[a][1] == '-') {
      fprintf(stderr, "unknown option %s (valid: --state, --bench N, --help; what the windows "
              "hold is in the file's header)\n", argv[a]);
      return 0;
    } else if (*path) {
      fprintf(stderr, "one WINDOWS file, got %s and %s\n", *path, argv[a]);
      return 0;
    } else {
      *path = argv[a];
    }
  }
  if (!*path) fprintf(stderr, "usage: %s [--state] [--bench N] WINDOWS\n", argv[0]);
  return *path != NULL;
}

int main(int argc, char **argv) {
  int show_state = 0, kind = -1, c, status = 2;
  long reps = 0;
  size_t size = 0, n = 0, w, window_bytes;
  const char *path = NULL;
  unsigned char *data;
  zoo_state_t s;
  int8_t logits[ZOO_CLASSES];
  if (!parse_options(argc, argv, &show_state, &reps, &path)) return 2;
  if (!(data = read_file(path, &size))) return 2;
  if ((kind = check_header(path, data, size, &n)) < 0 ||
      (kind != ZOO_INT8 && !check_finite(path, (const float *)(data + ZOO_HEADER), n))) {
    free(data);
    return 2;
  }
  window_bytes = ZOO_WINDOW * (kind == ZOO_INT8 ? 1 : sizeof(float));
  if (reps > 0) {
    status = bench(data + ZOO_HEADER, n, window_bytes, kind, reps);
    free(data);
    return status;
  }
  for (w = 0; w < n; ++w) {
    run_window(&s, data + ZOO_HEADER + w * window_bytes, kind, logits);
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
