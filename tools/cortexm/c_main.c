/* Instruction-count driver for a `zoo export --form c` model (the C backend), the same
 * protocol as main.cc (TFLite Micro): `app NAME PART N`.
 *   PART step: N steps (zoo_push_q) of a fixed pseudo-random int8 input, state fed back
 *   PART loop: the same input generation without the step (the driver's own cost)
 *   PART head: N zoo_predict calls
 *   PART print: the state after every step and the final logits, as main.cc prints them, so
 *               `cmp` against compare.py checks the C backend bit for bit on the device CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_names.h" /* the export's header, its names as zoo_* (names before prefixes) */

static unsigned lcg = 12345u;
static signed char next_x(void) { lcg = lcg * 1664525u + 1013904223u; return (signed char)(lcg >> 24); }

int main(int argc, char **argv) {
  zoo_state_t s;
  int8_t x[ZOO_FEATURES], logits[ZOO_CLASSES];
  int n, t, i, sum = 0;
  if (argc < 4) { printf("usage\n"); return 2; }
  n = atoi(argv[3]);
  zoo_reset(&s);
  if (strcmp(argv[2], "print") == 0) {
    for (t = 0; t < n; t++) {
      for (i = 0; i < ZOO_FEATURES; i++) x[i] = next_x();
      zoo_push_q(&s, x);
      printf("h%d:", t);
      for (i = 0; i < ZOO_UNITS; i++) printf(" %d", s.h[i]);
      printf("\n");
    }
    zoo_predict(&s, logits);
    printf("logits:");
    for (i = 0; i < ZOO_CLASSES; i++) printf(" %d", logits[i]);
    printf("\n");
    return 0;
  }
  for (t = 0; t < n; t++) {
    if (strcmp(argv[2], "head") == 0) {
      sum += zoo_predict(&s, logits);
      continue;
    }
    for (i = 0; i < ZOO_FEATURES; i++) x[i] = next_x();
    if (strcmp(argv[2], "step") == 0) zoo_push_q(&s, x);
    else s.h[t % ZOO_UNITS] ^= x[0]; /* keep the loop's work */
  }
  for (i = 0; i < ZOO_UNITS; i++) sum += s.h[i];
  printf("done %s %s n=%d checksum=%d\n", argv[1], argv[2], n, sum);
  return 0;
}
