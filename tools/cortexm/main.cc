// Instruction-count driver for the zoo's step models (TFLM + CMSIS-NN, Cortex-M build): int8, and
// TFLite's 16x8 mode (int16 activations and state, int8 weights), chosen by the state tensor's type.
// usage: app MODEL PART N      MODEL = sirnn|gru (int8) or sirnn16 (16x8), PART = step|head|loop
//                              (loop = step's input/feedback copying without Invoke), N = iterations
//        app MODEL print T     prints h_out after each of T steps and the head's logits
// x is filled from one LCG: int8 inputs take its top 8 bits, int16 inputs its top 16 (each uniform
// over the tensor's whole range); h starts at its zero point (0.0).
// The int8 path is the original driver's code (its head-only loop written out as the loop the
// compiler made of it), so its counts (step, loop, head) stay the same to the instruction; the
// 16x8 path (run16) is a copy of it on int16 data.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "sirnn_step.cc"
#include "sirnn_head.cc"
#include "gru_step.cc"
#include "gru_head.cc"
#include "sirnn16_step.cc"
#include "sirnn16_head.cc"

alignas(16) static uint8_t step_arena[16 * 1024];
alignas(16) static uint8_t head_arena[8 * 1024];
static uint32_t lcg = 12345u;
static int8_t next_x() { lcg = lcg * 1664525u + 1013904223u; return (int8_t)(lcg >> 24); }
static int16_t next_x16() { lcg = lcg * 1664525u + 1013904223u; return (int16_t)(lcg >> 16); }

// The 16x8 model: the int8 path below with int16 tensors (all of h, x, h_out, head in/out).
static int __attribute__((noinline)) run16(const char* model, const char* part, int n,
                                           tflite::MicroInterpreter& step, tflite::MicroInterpreter& head) {
  TfLiteTensor* h = step.input(0);
  TfLiteTensor* x = step.input(1);
  TfLiteTensor* h_out = step.output(0);
  TfLiteTensor* hin = head.input(0);
  TfLiteTensor* logits = head.output(0);
  if (x->type != kTfLiteInt16 || h_out->type != kTfLiteInt16 || hin->type != kTfLiteInt16 ||
      logits->type != kTfLiteInt16) { printf("mixed tensor types\n"); return 1; }
  const int nh = h->bytes / 2, nx = x->bytes / 2;   // elements
  for (int i = 0; i < nh; i++) h->data.i16[i] = (int16_t)h->params.zero_point;  // h0 = 0.0
  if (strcmp(part, "print") == 0) {
    printf("arena_used step=%u head=%u nh=%d nx=%d\n", (unsigned)step.arena_used_bytes(),
           (unsigned)head.arena_used_bytes(), nh, nx);
    for (int t = 0; t < n; t++) {
      for (int i = 0; i < nx; i++) x->data.i16[i] = next_x16();
      if (step.Invoke() != kTfLiteOk) { printf("Invoke failed\n"); return 1; }
      printf("h%d:", t);
      for (int i = 0; i < nh; i++) printf(" %d", h_out->data.i16[i]);
      printf("\n");
      memcpy(h->data.i16, h_out->data.i16, 2 * nh);
    }
    memcpy(hin->data.i16, h->data.i16, 2 * nh);
    if (head.Invoke() != kTfLiteOk) { printf("head Invoke failed\n"); return 1; }
    printf("logits:");
    for (int i = 0; i < (int)logits->bytes / 2; i++) printf(" %d", logits->data.i16[i]);
    printf("\n");
    return 0;
  }
  const int mode = strcmp(part, "step") == 0 ? 0 : strcmp(part, "head") == 0 ? 1 : 2;
  int sum = 0;
  if (mode == 1 && n > 0) {
    int t = 0;
    do {
      if (head.Invoke() != kTfLiteOk) return 1;
    } while (++t < n);
  }
  for (int t = 0; t < n && mode != 1; t++) {
    for (int i = 0; i < nx; i++) x->data.i16[i] = next_x16();
    if (mode == 0 && step.Invoke() != kTfLiteOk) return 1;
    memcpy(h->data.i16, h_out->data.i16, 2 * nh);
  }
  for (int i = 0; i < nh; i++) sum += h->data.i16[i];
  printf("done %s %s n=%d checksum=%d\n", model, part, n, sum);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4) { printf("usage\n"); return 2; }
  const bool gru = strcmp(argv[1], "gru") == 0;
  const bool s16 = strcmp(argv[1], "sirnn16") == 0;
  const char* part = argv[2];
  const int n = atoi(argv[3]);
  static tflite::MicroMutableOpResolver<11> ops;
  ops.AddAdd(); ops.AddFullyConnected(); ops.AddMinimum(); ops.AddMul(); ops.AddRelu();
  ops.AddSub(); ops.AddLogistic(); ops.AddSplit(); ops.AddStridedSlice(); ops.AddTanh();
  ops.AddQuantize();  // 16x8 step: an int16 -> int16 requantisation before the state clip
  static tflite::MicroInterpreter step(
      tflite::GetModel(gru ? gru_step_tflite : s16 ? sirnn16_step_tflite : sirnn_step_tflite),
      ops, step_arena, sizeof(step_arena));
  static tflite::MicroInterpreter head(
      tflite::GetModel(gru ? gru_head_tflite : s16 ? sirnn16_head_tflite : sirnn_head_tflite),
      ops, head_arena, sizeof(head_arena));
  if (step.AllocateTensors() != kTfLiteOk || head.AllocateTensors() != kTfLiteOk) {
    printf("AllocateTensors failed\n"); return 1;
  }
  if (step.input(0)->type == kTfLiteInt16) return run16(argv[1], part, n, step, head);
  if (step.input(0)->type != kTfLiteInt8) { printf("unsupported state type\n"); return 1; }
  TfLiteTensor* h = step.input(0);   // model_card step_io: h = input 0, x = input 1
  TfLiteTensor* x = step.input(1);
  TfLiteTensor* h_out = step.output(0);
  TfLiteTensor* hin = head.input(0);
  TfLiteTensor* logits = head.output(0);
  const int nh = h->bytes, nx = x->bytes;
  memset(h->data.int8, (int8_t)h->params.zero_point, nh);  // h0 = 0.0
  if (strcmp(part, "print") == 0) {
    printf("arena_used step=%u head=%u nh=%d nx=%d\n", (unsigned)step.arena_used_bytes(),
           (unsigned)head.arena_used_bytes(), nh, nx);
    for (int t = 0; t < n; t++) {
      for (int i = 0; i < nx; i++) x->data.int8[i] = next_x();
      if (step.Invoke() != kTfLiteOk) { printf("Invoke failed\n"); return 1; }
      printf("h%d:", t);
      for (int i = 0; i < nh; i++) printf(" %d", h_out->data.int8[i]);
      printf("\n");
      memcpy(h->data.int8, h_out->data.int8, nh);
    }
    memcpy(hin->data.int8, h->data.int8, nh);
    if (head.Invoke() != kTfLiteOk) { printf("head Invoke failed\n"); return 1; }
    printf("logits:");
    for (int i = 0; i < (int)logits->bytes; i++) printf(" %d", logits->data.int8[i]);
    printf("\n");
    return 0;
  }
  const int mode = strcmp(part, "step") == 0 ? 0 : strcmp(part, "head") == 0 ? 1 : 2;
  int sum = 0;
  if (mode == 1 && n > 0) {  // the head alone: the loop the compiler made of the original driver's
    int t = 0;
    do {
      if (head.Invoke() != kTfLiteOk) return 1;
    } while (++t < n);
  }
  for (int t = 0; t < n && mode != 1; t++) {
    for (int i = 0; i < nx; i++) x->data.int8[i] = next_x();
    if (mode == 0 && step.Invoke() != kTfLiteOk) return 1;
    memcpy(h->data.int8, h_out->data.int8, nh);
  }
  for (int i = 0; i < nh; i++) sum += h->data.int8[i];
  printf("done %s %s n=%d checksum=%d\n", argv[1], part, n, sum);
  return 0;
}
