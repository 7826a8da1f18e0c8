# tflm_int16_sub.py [--models N] [--batches B]: why the int16x8 C++ loop (built against
# ../shared/tflm, tflite-micro 90b983c) and the Python tflite-micro wheel (8f6596d) disagree in a
# few windows (docs/device.md): the first op that differs is the int16 SUB, and here it is alone.
#
# Single-op int16x8 SUB models (TFLite 16x8, random input ranges) are run on random int16 inputs
# by the wheel and by the library (a small C++ driver linked against it), and both are compared
# with a NumPy transcription of TFLite Micro's reference SUB (sub_common.cc + reference/sub.h:
# left shift 15, each input and the output rescaled by
# MultiplyByQuantizedMultiplierSmallerThanOneExp, gemmlowp's double rounding) with its three rescale multipliers computed two ways: from float32
# ratios (``static_cast<double>(input->params.scale / twice_max_input_scale)``, 90b983c's code,
# tflite-micro #1536) or from double ratios (tflite-micro #1501, the cast fix that #1536 reverted).
# Needs g++, ../shared/tflm, TensorFlow and the tflite-micro wheel. Prints the counts.
import argparse
import subprocess
import tempfile
from pathlib import Path

import numpy as np

TFLM = Path(__file__).resolve().parents[2] / "shared" / "tflm"
N = 4096
DRIVER = r"""
#include <cstdio>
#include <cstring>
#include <vector>
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
static std::vector<char> slurp(const char* p) {
  FILE* f = fopen(p, "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  std::vector<char> b(n); if (fread(b.data(), 1, n, f) != (size_t)n) n = 0; fclose(f); return b; }
alignas(16) static uint8_t arena[1 << 20];
int main(int argc, char** argv) {  // model a.bin b.bin out.bin
  auto model = slurp(argv[1]); auto a = slurp(argv[2]); auto b = slurp(argv[3]);
  tflite::MicroMutableOpResolver<1> ops; ops.AddSub();
  tflite::MicroInterpreter interp(tflite::GetModel(model.data()), ops, arena, sizeof(arena));
  if (interp.AllocateTensors() != kTfLiteOk) return 1;
  memcpy(interp.input(0)->data.raw, a.data(), a.size());
  memcpy(interp.input(1)->data.raw, b.data(), b.size());
  if (interp.Invoke() != kTfLiteOk) return 1;
  FILE* f = fopen(argv[4], "wb"); fwrite(interp.output(0)->data.raw, 1, interp.output(0)->bytes, f);
  fclose(f); return 0; }
"""


def sub_model(range1: float, range2: float, seed: int) -> bytes:
    import tensorflow as tf

    spec = [tf.TensorSpec([1, N], tf.float32)] * 2
    f = tf.function(lambda a, b: a - b, input_signature=spec)
    rng = np.random.default_rng(seed)

    def representative():
        for _ in range(50):
            yield [rng.uniform(-range1, range1, (1, N)).astype(np.float32),
                   rng.uniform(-range2, range2, (1, N)).astype(np.float32)]

    c = tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f)
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    c.representative_dataset = representative
    c.target_spec.supported_ops = [
        tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    c.inference_input_type = c.inference_output_type = tf.int16
    return c.convert()


def rounding_doubling_high_mul(a, b: int):  # gemmlowp SaturatingRoundingDoublingHighMul
    ab = a.astype(np.int64) * np.int64(b)
    q = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    return np.where(q >= 0, q // (1 << 31), -((-q) // (1 << 31)))  # C division: toward zero


def rounding_divide_by_pot(x, exponent: int):  # gemmlowp RoundingDivideByPOT
    mask = (1 << exponent) - 1
    return (x >> exponent) + ((x & mask) > (mask >> 1) + (x < 0))


def quantize_multiplier(m: float) -> tuple[int, int]:  # QuantizeMultiplier, TfLiteRound
    q, shift = np.frexp(m)
    fixed = int(np.floor(q * (1 << 31) + 0.5))
    return (fixed // 2, int(shift) + 1) if fixed == 1 << 31 else (fixed, int(shift))


def reference_sub(a, b, s1, s2, so, zo, double: bool):
    """TFLite Micro's int16 SUB, the multipliers from float32 or from double ratios."""
    if double:
        twice = 2 * max(float(np.float32(s1)), float(np.float32(s2)))
        ratios = (float(np.float32(s1)) / twice, float(np.float32(s2)) / twice,
                  twice / ((1 << 15) * float(np.float32(so))))
    else:
        twice = np.float32(2) * max(np.float32(s1), np.float32(s2))
        ratios = (float(np.float32(s1) / twice), float(np.float32(s2) / twice),
                  float(twice / (np.float32(1 << 15) * np.float32(so))))
    (q1, e1), (q2, e2), (qo, eo) = map(quantize_multiplier, ratios)

    def rescale(x, q, e):
        return rounding_divide_by_pot(rounding_doubling_high_mul(x, q), -e)

    raw = rescale(a.astype(np.int64) << 15, q1, e1) - rescale(b.astype(np.int64) << 15, q2, e2)
    return np.clip(rescale(raw, qo, eo) + zo, -32768, 32767).astype(np.int16)


def main() -> None:
    from tflite_micro.python.tflite_micro import runtime
    import tensorflow as tf

    p = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    p.add_argument("--models", type=int, default=12)
    p.add_argument("--batches", type=int, default=8)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tflm-sub16-"))
    (work / "drive.cc").write_text(DRIVER)
    subprocess.run(["g++", "-O2", "-std=c++17", "-DTF_LITE_STATIC_MEMORY", f"-I{TFLM}/include",
                    str(work / "drive.cc"), str(TFLM / "lib" / "libtensorflow-microlite.a"),
                    "-o", str(work / "drive")], check=True)
    rng = np.random.default_rng(11)
    counts = dict.fromkeys(["outputs", "library != wheel", "library != float32 multipliers",
                            "wheel != double multipliers", "wheel != float32 multipliers",
                            "largest |library - wheel| (LSB)"], 0)
    for m in range(args.models):
        model = work / "sub.tflite"
        model.write_bytes(sub_model(*np.exp(rng.uniform(-4, 2, 2)), seed=100 + m))
        details = tf.lite.Interpreter(model_path=str(model))
        (s1, _), (s2, _) = (d["quantization"] for d in details.get_input_details())
        so, zo = details.get_output_details()[0]["quantization"]
        wheel_model = runtime.Interpreter.from_file(str(model), arena_size=1 << 20)
        for _ in range(args.batches):
            a, b = rng.integers(-32768, 32768, (2, 1, N)).astype(np.int16)
            wheel_model.set_input(a, 0)
            wheel_model.set_input(b, 1)
            wheel_model.invoke()
            wheel = wheel_model.get_output(0).reshape(-1)
            a.tofile(work / "a.bin")
            b.tofile(work / "b.bin")
            subprocess.run([str(work / "drive"), str(model), str(work / "a.bin"),
                            str(work / "b.bin"), str(work / "o.bin")], check=True)
            library = np.fromfile(work / "o.bin", np.int16)
            single = reference_sub(a.ravel(), b.ravel(), s1, s2, so, zo, double=False)
            double = reference_sub(a.ravel(), b.ravel(), s1, s2, so, zo, double=True)
            counts["outputs"] += library.size
            counts["library != wheel"] += int(np.sum(library != wheel))
            counts["largest |library - wheel| (LSB)"] = max(
                counts["largest |library - wheel| (LSB)"],
                int(np.abs(library.astype(np.int32) - wheel).max()))
            counts["library != float32 multipliers"] += int(np.sum(library != single))
            counts["wheel != double multipliers"] += int(np.sum(wheel != double))
            counts["wheel != float32 multipliers"] += int(np.sum(wheel != single))
    for name, value in counts.items():
        print(f"{name}: {value:,}")


if __name__ == "__main__":
    main()
