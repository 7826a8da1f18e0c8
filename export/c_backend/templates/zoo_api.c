void zoo_reset(zoo_state_t *s) {
  int i;
  for (i = 0; i < ZOO_UNITS; ++i) s->h[i] = (int8_t)(${h_zero_point});
}

void zoo_push_q(zoo_state_t *s, const int8_t xq[ZOO_FEATURES]) {
  ZOO_ALIGNED int8_t h_t[ZOO_UNITS];
  zoo_step_run(${step_first}, ${step_second}, h_t);
  ${feedback}
}

void zoo_push(zoo_state_t *s, const float x[ZOO_FEATURES]) {
  int8_t xq[ZOO_FEATURES];
  zoo_quantize_input(x, xq);
  zoo_push_q(s, xq);
}

int zoo_predict(const zoo_state_t *s, int8_t logits[ZOO_CLASSES]) {
  int c, best = 0;
${requant_head}  zoo_head_run(${head_in}, logits);
  for (c = 1; c < ZOO_CLASSES; ++c) {
    if (logits[c] > logits[best]) best = c;
  }
  return best;
}
