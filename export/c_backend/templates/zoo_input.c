/* -ffast-math (also -Ofast) lets the compiler assume float arithmetic is associative: it folds
 * (v + magic) - magic below to v, so raw features are no longer rounded as the TFLite model's
 * quantization rounds them (and NaN inputs are no longer caught). The integer path would still
 * be bit-exact, but zoo_push would silently disagree with the model (measured with the shipped
 * sirnn.har2: the model's logits on 21 of 701 HAR test windows instead of 701): refuse. */
#if defined(__FAST_MATH__)
#error "zoo_model.c needs IEEE float rounding to quantize inputs as the model does: build it without -ffast-math / -Ofast (add -fno-fast-math)"
#endif

/* Rounds half to even, as NumPy's np.round in the zoo's Python runtimes and nearbyint in
 * its C++: adding and subtracting 1.5 * 2^23 leaves the float rounded to an integer in the
 * default rounding mode, without libm. */
static float zoo_round_even(float v) {
  const float magic = 12582912.0f;
  if (v >= 8388608.0f || v <= -8388608.0f) return v;
  return (v + magic) - magic;
}

/* One normalized feature as the step model's int8 input. */
ZOO_INLINE int8_t zoo_quantize_one(float v) {
  float q = zoo_round_even(v / ${x_scale}) + ${x_zero_point};
  if (!(q >= -128.0f)) q = -128.0f; /* NaN goes to -128 too */
  if (q > 127.0f) q = 127.0f;
  return (int8_t)q;
}

void zoo_quantize_input(const float x[ZOO_FEATURES], int8_t xq[ZOO_FEATURES]) {
  int j;
  for (j = 0; j < ZOO_FEATURES; ++j) xq[j] = zoo_quantize_one(${normalize});
}

void zoo_quantize_normalized(const float x[ZOO_FEATURES], int8_t xq[ZOO_FEATURES]) {
  int j;
  for (j = 0; j < ZOO_FEATURES; ++j) xq[j] = zoo_quantize_one(x[j]);
}
