/* The smallest program that runs a C-backend model once: its size minus empty.c's is what the
 * model costs a firmware's flash and RAM. */
#include "profile_names.h"
int main(void) {
  static M_STATE s;
  int8_t x[M_FEATURES] = {0}, logits[M_CLASSES];
  M_RESET(&s);
  M_PUSH_Q(&s, x);
  return M_PREDICT(&s, logits);
}
