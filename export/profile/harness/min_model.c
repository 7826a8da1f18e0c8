/* The smallest program that runs a C-backend model once: its size minus empty.c's is what the
 * model costs a firmware's flash and RAM. */
#include "profile_names.h"
int main(void) {
  static zoo_state_t s;
  int8_t x[ZOO_FEATURES] = {0}, logits[ZOO_CLASSES];
  zoo_reset(&s);
  zoo_push_q(&s, x);
  return zoo_predict(&s, logits);
}
