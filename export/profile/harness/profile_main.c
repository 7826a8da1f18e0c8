/* The profile harness of a C-backend export (`zoo profile`): `app NAME PART N`, the same source
 * on every target (host, Cortex-M, RISC-V), counted under QEMU with the insncount plugin:
 *   PART step:  N steps (push_q) of a fixed pseudo-random int8 input, the state fed back
 *   PART loop:  the same input generation without the step (the harness's own cost)
 *   PART head:  N predict calls
 *   PART check: the check windows (profile_windows.h, int8) through reset, T push_q and
 *               predict each; prints every window's logits and final state, so the cross build
 *               is compared with the host build line for line.
 * profile_names.h (zoo.export.c_backend.driver_names) includes the export's header and
 * defines the names before prefixes (zoo_push_q, ZOO_FEATURES ...) as the export's. */
#include "profile_io.h"
#include "profile_names.h"
#include "profile_windows.h"

static unsigned lcg = 12345u;
static int8_t next_x(void) {
  lcg = lcg * 1664525u + 1013904223u;
  return (int8_t)(lcg >> 24);
}

static void print_values(const char *label, const int8_t *v, int n) {
  int i;
  zp_puts(label);
  for (i = 0; i < n; ++i) zp_puts(" "), zp_putint(v[i]);
}

static long check(void) {
  static zoo_state_t s;
  int8_t logits[ZOO_CLASSES];
  long sum = 0;
  int w, t;
  for (w = 0; w < PROFILE_WINDOWS; ++w) {
    zoo_reset(&s);
    for (t = 0; t < ZOO_TIMESTEPS; ++t) zoo_push_q(&s, profile_windows[w] + t * ZOO_FEATURES);
    sum += zoo_predict(&s, logits);
    zp_puts("window "), zp_putint(w);
    print_values(" logits", logits, ZOO_CLASSES);
    print_values(" state", s.h, ZOO_UNITS);
    zp_puts("\n");
  }
  return sum;
}

int main(int argc, char **argv) {
  static zoo_state_t s;
  int8_t x[ZOO_FEATURES], logits[ZOO_CLASSES];
  int n, t, i;
  long sum = 0;
  if (argc < 4) return 2;
  n = zp_atoi(argv[3]);
  zoo_reset(&s);
  if (zp_same(argv[2], "check")) {
    sum = check();
  } else {
    for (t = 0; t < n; ++t) {
      if (zp_same(argv[2], "head")) {
        sum += zoo_predict(&s, logits);
        continue;
      }
      for (i = 0; i < ZOO_FEATURES; ++i) x[i] = next_x();
      if (zp_same(argv[2], "step")) zoo_push_q(&s, x);
      else s.h[t % ZOO_UNITS] ^= x[0]; /* keep the loop's work */
    }
    for (i = 0; i < ZOO_UNITS; ++i) sum += s.h[i];
  }
  zp_done(argv[1], argv[2], argv[3], sum);
  return 0;
}
