/* The smallest program that runs a C-backend model once (for flash / RAM figures: its `size`
 * minus that of empty.c's is what the model costs a firmware). */
#include "zoo_names.h" /* the export's header, its names as zoo_* (names before prefixes) */
int main(void) {
  static zoo_state_t s;
  int8_t x[ZOO_FEATURES] = {0}, logits[ZOO_CLASSES];
  zoo_reset(&s);
  zoo_push_q(&s, x);
  return zoo_predict(&s, logits);
}
