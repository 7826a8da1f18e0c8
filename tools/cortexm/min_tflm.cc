// The smallest program that runs the same step + head models once under TFLite Micro with
// CMSIS-NN kernels (for flash / RAM figures, as min_c.c for the C backend).
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include STEP_SRC  // the models as C arrays (make models), e.g. "sirnn_step.cc"
#include HEAD_SRC
alignas(16) static uint8_t step_arena[ARENA];
alignas(16) static uint8_t head_arena[HEAD_ARENA];
int main() {
  static tflite::MicroMutableOpResolver<OPS> ops;
  RESOLVER
  static tflite::MicroInterpreter step(tflite::GetModel(MODEL_step_tflite), ops, step_arena, sizeof(step_arena));
  static tflite::MicroInterpreter head(tflite::GetModel(MODEL_head_tflite), ops, head_arena, sizeof(head_arena));
  if (step.AllocateTensors() != kTfLiteOk || head.AllocateTensors() != kTfLiteOk) return 1;
  if (step.Invoke() != kTfLiteOk) return 1;
  return head.Invoke() != kTfLiteOk;
}
