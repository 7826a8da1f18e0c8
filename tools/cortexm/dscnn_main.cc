// Instruction-count driver for the DS-CNN (the KWS reference, one 99 x 32 int8 window per
// Invoke) under TFLite Micro + CMSIS-NN on a Cortex-M build, the protocol of main.cc:
//   app dscnn window N   N invokes, each on a window changed in one row (as a stream would)
//   app dscnn loop N     the same input changes without Invoke (the driver's own cost)
//   app dscnn print 1    arena use, the input's size and the logits of one invoke, so
//                        the build can be checked against TFLite Micro on the host
// Counted by kws_measure.py --dscnn: per invoke = (count(2N) - count(N)) / N, window - loop.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "dscnn_window.cc"

#ifndef ARENA
#define ARENA (128 * 1024)
#endif
alignas(16) static uint8_t arena[ARENA];
static uint32_t lcg = 12345u;
static int8_t next_x() { lcg = lcg * 1664525u + 1013904223u; return (int8_t)(lcg >> 24); }

int main(int argc, char** argv) {
  static tflite::MicroMutableOpResolver<5> ops;
  ops.AddReshape(); ops.AddConv2D(); ops.AddDepthwiseConv2D(); ops.AddMean();
  ops.AddFullyConnected();
  static tflite::MicroInterpreter net(tflite::GetModel(dscnn_window_tflite), ops, arena,
                                      sizeof(arena));
  if (net.AllocateTensors() != kTfLiteOk) { printf("AllocateTensors failed\n"); return 1; }
#ifdef MINIMAL  // the smallest program running the model once (flash / RAM figures)
  return net.Invoke() != kTfLiteOk;
#else
  if (argc < 4) { printf("usage: app dscnn window|loop|print N\n"); return 2; }
  TfLiteTensor* x = net.input(0);
  TfLiteTensor* y = net.output(0);
  const int nx = x->bytes, row = nx / 99, n = atoi(argv[3]);
  for (int i = 0; i < nx; i++) x->data.int8[i] = next_x();
  if (strcmp(argv[2], "print") == 0) {
    if (net.Invoke() != kTfLiteOk) { printf("Invoke failed\n"); return 1; }
    printf("arena_used=%u input_bytes=%d\nlogits:", (unsigned)net.arena_used_bytes(), nx);
    for (int i = 0; i < (int)y->bytes; i++) printf(" %d", y->data.int8[i]);
    printf("\ndone dscnn print n=%d\n", n);
    return 0;
  }
  const bool invoke = strcmp(argv[2], "window") == 0;
  int sum = 0;
  for (int t = 0; t < n; t++) {
    // a new frame enters the window: one row of fresh features (the shift is the ring
    // buffer's job on a device and is not counted)
    for (int i = 0; i < row; i++) x->data.int8[(t % 99) * row + i] = next_x();
    if (invoke && net.Invoke() != kTfLiteOk) return 1;
    sum += y->data.int8[t % y->bytes];
  }
  printf("done dscnn %s n=%d checksum=%d\n", argv[2], n, sum);
  return 0;
#endif
}
