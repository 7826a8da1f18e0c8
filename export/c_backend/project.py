"""The C export folder: a self-contained C99 project from an int8 step export.

    zoo_model.h   the API: zoo_reset, zoo_push (raw floats), zoo_push_q (int8), zoo_logits,
                  zoo_predict; the state in a caller-owned zoo_state_t
    zoo_model.c   weights, tables and quantization constants as const arrays, one function per
                  model (step, head), the state feedback
    zoo_int8.h    TFLite's int8 kernel arithmetic (shared by every export)
    main.c        zoo_app: windows of raw float32 features in, one line of int8 logits each out
    Makefile      `make` (host cc, -std=c99 -Wall -Wextra -Werror -O2) and
                  `make CC=arm-none-eabi-gcc CPU=cortex-m4` (the library object)
    README.md     how to use it, with its flash and RAM figures

The step and head models are the export's own (their scales and zero points are used as they
are: nothing is recalibrated), so the C code computes what they compute.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from export.c_backend.emit import Emitted, c_array, emit_model
from export.c_backend.graph import Graph, UnsupportedGraph, read_graph
from export.c_backend.plan import lower

C_FILES = ("zoo_model.h", "zoo_model.c", "zoo_int8.h", "main.c", "Makefile", "README.md")
RUNTIMES = ("tflite-micro", "litert")  # the runtime whose int8 arithmetic the C code matches
# TFLite Micro's kernels rescale with gemmlowp's two roundings. LiteRT's builtin
# FULLY_CONNECTED rounds once (its other int8 kernels agree with TFLite Micro): measured op by
# op, the same FULLY_CONNECTED differs in ~1 % of outputs by one LSB between the runtimes.
# "litert" means LiteRT's builtin kernels; its default XNNPACK delegate rescales ADD and MUL its
# own way as well (one LSB in rare elements; see docs/c_backend.md).
SINGLE_ROUNDING = {"tflite-micro": 0, "litert": 1}


class CExportError(ValueError):
    """The export cannot become C (not an int8 step export, an op without a C kernel ...)."""


@dataclass
class _Quant:
    scale: np.float32
    zero_point: int

    @classmethod
    def of(cls, graph: Graph, index: int) -> "_Quant":
        t = graph.tensor(index)
        return cls(t.scale, t.zero_point)

    def same(self, other: "_Quant") -> bool:
        return self.scale == other.scale and self.zero_point == other.zero_point


def requant_table(src: _Quant, dst: _Quant) -> np.ndarray:
    """int8 -> int8 table of quantize(dequantize(q, src), dst), in float32 as the zoo's Python
    and C++ loops compute it (NumPy's round half to even)."""
    q = np.arange(-128, 128, dtype=np.int8)
    real = (q.astype(np.float32) - np.float32(src.zero_point)) * np.float32(src.scale)
    back = np.round(real / np.float32(dst.scale)) + np.float32(dst.zero_point)
    return np.clip(back, -128, 127).astype(np.int8)


def read_step_export(export_dir: Path) -> dict:
    """The card of an int8 step export, with its files checked; `CExportError` otherwise."""
    card_path = export_dir / "model_card.json"
    try:
        card = json.loads(card_path.read_text())
    except (OSError, ValueError) as err:
        raise CExportError(f"{card_path}: cannot read the export's model card ({err}); the C "
                           "backend compiles a `zoo export --form step --quantize int8` "
                           "folder") from None
    if card.get("form") != "step" or card.get("quantize") != "int8":
        raise CExportError(f"{export_dir}: form {card.get('form')!r}, quantize "
                           f"{card.get('quantize')!r}; the C backend needs an int8 step export "
                           "(--form step --quantize int8)")
    for key in ("step", "head"):
        if not (export_dir / card["files"][key]).is_file():
            raise CExportError(f"{export_dir / card['files'][key]}: missing")
    return card


def write_c_project(step_export: Path, out: Path, runtime: str = "tflite-micro") -> dict:
    """Write the C project of the int8 step export ``step_export`` into ``out`` (a folder that
    exists); returns its summary (files, bytes, scratch) for the model card."""
    step_export, out = Path(step_export), Path(out)
    if runtime not in RUNTIMES:
        raise CExportError(f"unknown runtime {runtime!r} to match; valid: {', '.join(RUNTIMES)}")
    card = read_step_export(step_export)
    step_bytes = (step_export / card["files"]["step"]).read_bytes()
    head_bytes = (step_export / card["files"]["head"]).read_bytes()
    try:
        step_g, head_g = read_graph(step_bytes), read_graph(head_bytes)
        step = emit_model("step", lower(step_g, step_bytes, runtime))
        head = emit_model("head", lower(head_g, head_bytes, runtime))
    except UnsupportedGraph as err:
        raise CExportError(f"{step_export}: {err}") from None
    norm = _normalization(step_export, card)
    io = _io(card, step_g, head_g)
    sources = {
        "zoo_model.h": _header(card, io),
        "zoo_model.c": _model_c(card, io, step, head, norm, runtime),
        "zoo_int8.h": resources.files("export.c_backend").joinpath(
            "templates/zoo_int8.h").read_text(),
        "main.c": resources.files("export.c_backend").joinpath("templates/main.c").read_text(),
        "Makefile": resources.files("export.c_backend").joinpath(
            "templates/Makefile").read_text(),
    }
    summary = _summary(card, io, step, head, runtime)
    sources["README.md"] = _readme(card, summary)
    for name, text in sources.items():
        (out / name).write_text(text)
    return summary


def _normalization(export_dir: Path, card: dict):
    name = card.get("normalization")
    if not name:
        return None
    data = json.loads((export_dir / name).read_text())
    return np.asarray(data["mean"], np.float32), np.asarray(data["std"], np.float32)


def _io(card: dict, step_g: Graph, head_g: Graph) -> dict:
    sio = card["step_io"]
    x_idx, h_idx = step_g.inputs[sio["x"]], step_g.inputs[sio["h"]]
    ho_idx = step_g.outputs[sio.get("h_out", 0)]
    x, h_in, h_out = (_Quant.of(step_g, i) for i in (x_idx, h_idx, ho_idx))
    head_in, logits = _Quant.of(head_g, head_g.inputs[0]), _Quant.of(head_g, head_g.outputs[0])
    return dict(x_pos=sio["x"], h_pos=sio["h"], x=x, h_in=h_in, h_out=h_out, head_in=head_in,
                logits=logits, units=step_g.tensor(h_idx).size, features=step_g.tensor(x_idx).size,
                classes=head_g.tensor(head_g.outputs[0]).size)


def _summary(card: dict, io: dict, step: Emitted, head: Emitted, runtime: str) -> dict:
    tables = (0 if io["h_out"].same(io["h_in"]) else 256) + \
             (0 if io["h_in"].same(io["head_in"]) else 256)
    return {"files": list(C_FILES), "const_bytes": step.const_bytes + head.const_bytes + tables,
            "state_bytes": io["units"], "step_scratch_bytes": step.scratch_bytes,
            "head_scratch_bytes": head.scratch_bytes, "bit_exact_with": runtime,
            "feedback": "direct" if io["h_out"].same(io["h_in"]) else "table",
            "timesteps": card["timesteps"], "features": io["features"], "units": io["units"],
            "classes": io["classes"]}


def _f32(v) -> str:
    text = repr(float(np.float32(v)))
    return text + ("f" if ("." in text or "e" in text) else ".0f")


def _header(card: dict, io: dict) -> str:
    return f"""/* zoo_model.h: {card.get('model')} on {card.get('task')}, int8, generated by `zoo export --form c`.
 * Bit-exact with the export's step.tflite + head.tflite under TensorFlow Lite Micro. No heap,
 * no interpreter, no libm; float is used only to quantize raw input features (zoo_push).
 *
 *   zoo_state_t s;  zoo_reset(&s);
 *   for each sample t: zoo_push(&s, x_t);        (ZOO_FEATURES raw floats)
 *   int c = zoo_predict(&s, logits);             (ZOO_CLASSES int8 logits, class index)
 */
#ifndef ZOO_MODEL_H_
#define ZOO_MODEL_H_

#include <stdint.h>

#define ZOO_TIMESTEPS {card['timesteps']} /* samples per window the model was trained on */
#define ZOO_FEATURES {io['features']}
#define ZOO_UNITS {io['units']}     /* int8 state size */
#define ZOO_CLASSES {io['classes']}
/* real logit = ZOO_LOGIT_SCALE * (int8 logit - ZOO_LOGIT_ZERO_POINT) */
#define ZOO_LOGIT_SCALE {_f32(io['logits'].scale)}
#define ZOO_LOGIT_ZERO_POINT ({io['logits'].zero_point})

/* The recurrent state: owned by the caller, one per stream. */
typedef struct {{
  int8_t h[ZOO_UNITS];
}} zoo_state_t;

extern const char *const zoo_class_names[ZOO_CLASSES];

/* h = 0, before the first sample of a window. */
void zoo_reset(zoo_state_t *s);
/* One sample of raw features: normalized and quantized as the export's step model expects. */
void zoo_push(zoo_state_t *s, const float x[ZOO_FEATURES]);
/* One sample already quantized (zoo_quantize_input): the pure-integer path. */
void zoo_push_q(zoo_state_t *s, const int8_t xq[ZOO_FEATURES]);
/* Raw features -> the step model's int8 input. */
void zoo_quantize_input(const float x[ZOO_FEATURES], int8_t xq[ZOO_FEATURES]);
/* The head on the current state: int8 logits; returns the arg max (the first on ties). */
int zoo_predict(const zoo_state_t *s, int8_t logits[ZOO_CLASSES]);

#endif /* ZOO_MODEL_H_ */
"""


def _model_c(card: dict, io: dict, step: Emitted, head: Emitted, norm, runtime: str) -> str:
    names = card.get("class_names") or [str(i) for i in range(io["classes"])]
    names_c = ", ".join(json.dumps(str(n)) for n in names)
    rounding = SINGLE_ROUNDING[runtime]
    parts = [f"/* zoo_model.c: generated by `zoo export --form c` from step.tflite + head.tflite "
             f"({card.get('model')} on {card.get('task')}), bit-exact with {runtime}. */",
             '#include "zoo_model.h"',
             f"/* {runtime}'s FULLY_CONNECTED rounds {'once' if rounding else 'twice'}. */",
             f"#define ZOO_FC_SINGLE_ROUNDING {rounding}",
             f"#define ZOO_MAX_FC_IN {max(step.max_fc_in, head.max_fc_in, 4)}",
             '#include "zoo_int8.h"', "",
             f"const char *const zoo_class_names[ZOO_CLASSES] = {{{names_c}}};", ""]
    parts += [step.constants, head.constants]
    feedback, head_in = _feedback_code(io)
    parts += [feedback, step.function, head.function, _input_code(io, norm),
              _api_code(io, head_in)]
    return "\n".join(parts)


def _feedback_code(io: dict) -> tuple[str, str]:
    """Tables for the state feedback and the head's input, when quantizations differ."""
    text = []
    if not io["h_out"].same(io["h_in"]):
        text.append("/* h_t and h_{t-1} are quantized differently: requantize every step. */")
        text.append(c_array("zoo_feedback_table", "int8_t", requant_table(io["h_out"], io["h_in"])))
    head_in = "s->h"
    if not io["h_in"].same(io["head_in"]):
        text.append(c_array("zoo_head_in_table", "int8_t", requant_table(io["h_in"], io["head_in"])))
        head_in = "hq"
    return "\n".join(text), head_in


def _input_code(io: dict, norm) -> str:
    x = io["x"]
    lines = []
    if norm is not None:
        lines.append(c_array_f32("zoo_mean", norm[0]))
        lines.append(c_array_f32("zoo_std", norm[1]))
        normalize = "(x[j] - zoo_mean[j]) / zoo_std[j]"
    else:
        normalize = "x[j]"
    lines.append(f"""/* Rounds half to even, as NumPy's np.round in the zoo's Python runtimes and nearbyint in
 * its C++: adding and subtracting 1.5 * 2^23 leaves the float rounded to an integer in the
 * default rounding mode, without libm. */
static float zoo_round_even(float v) {{
  const float magic = 12582912.0f;
  if (v >= 8388608.0f || v <= -8388608.0f) return v;
  return (v + magic) - magic;
}}

void zoo_quantize_input(const float x[ZOO_FEATURES], int8_t xq[ZOO_FEATURES]) {{
  int j;
  for (j = 0; j < ZOO_FEATURES; ++j) {{
    const float v = {normalize};
    float q = zoo_round_even(v / {_f32(x.scale)}) + {float(x.zero_point)!r}f;
    if (!(q >= -128.0f)) q = -128.0f; /* NaN goes to -128 too */
    if (q > 127.0f) q = 127.0f;
    xq[j] = (int8_t)q;
  }}
}}
""")
    return "\n".join(lines)


def c_array_f32(name: str, values) -> str:
    body = ", ".join(_f32(v) for v in np.asarray(values, np.float32))
    return f"static const float {name}[{len(values)}] = {{{body}}};\n"


def _api_code(io: dict, head_in: str) -> str:
    step_args = ["xq", "s->h"] if io["x_pos"] == 0 else ["s->h", "xq"]
    feedback = ("zoo_copy_s8(ZOO_UNITS, h_t, s->h);" if io["h_out"].same(io["h_in"])
                else "zoo_table_s8(ZOO_UNITS, h_t, zoo_feedback_table + 128, s->h);")
    requant_head = ("" if head_in == "s->h" else
                    "  int8_t hq[ZOO_UNITS];\n"
                    "  zoo_table_s8(ZOO_UNITS, s->h, zoo_head_in_table + 128, hq);\n")
    return f"""void zoo_reset(zoo_state_t *s) {{
  int i;
  for (i = 0; i < ZOO_UNITS; ++i) s->h[i] = (int8_t)({io['h_in'].zero_point});
}}

void zoo_push_q(zoo_state_t *s, const int8_t xq[ZOO_FEATURES]) {{
  ZOO_ALIGNED int8_t h_t[ZOO_UNITS];
  zoo_step_run({step_args[0]}, {step_args[1]}, h_t);
  {feedback}
}}

void zoo_push(zoo_state_t *s, const float x[ZOO_FEATURES]) {{
  int8_t xq[ZOO_FEATURES];
  zoo_quantize_input(x, xq);
  zoo_push_q(s, xq);
}}

int zoo_predict(const zoo_state_t *s, int8_t logits[ZOO_CLASSES]) {{
  int c, best = 0;
{requant_head}  zoo_head_run({head_in}, logits);
  for (c = 1; c < ZOO_CLASSES; ++c) {{
    if (logits[c] > logits[best]) best = c;
  }}
  return best;
}}
"""


def _readme(card: dict, summary: dict) -> str:
    return f"""# {card.get('model')} on {card.get('task')}: int8 C (generated by `zoo export --form c`)

Plain C99, no heap, no interpreter, no libm. Bit-exact with this export's `step.tflite` +
`head.tflite` under TensorFlow Lite Micro (the zoo's tests check every window of the test split).

```sh
make                      # zoo_app with the host cc (-std=c99 -Wall -Wextra -Werror -O2)
./zoo_app WINDOWS.f32     # N windows of {summary['timesteps']} x {summary['features']} raw float32 features -> int8 logits per line
make CC=arm-none-eabi-gcc CPU=cortex-m4   # zoo_model.o for a Cortex-M4 (ZOO_USE_ARM_DSP on)
```

```c
#include "zoo_model.h"
zoo_state_t s;
zoo_reset(&s);
for (int t = 0; t < ZOO_TIMESTEPS; ++t) zoo_push(&s, window[t]);   /* raw features */
int8_t logits[ZOO_CLASSES];
int c = zoo_predict(&s, logits);
```

| memory | bytes |
|---|---|
| constants (weights, biases, tables; flash) | {summary['const_bytes']} |
| state (`zoo_state_t`, RAM, one per stream) | {summary['state_bytes']} |
| scratch of one step (stack) | {summary['step_scratch_bytes']} + {summary['units']} (h_t) |
| scratch of the head (stack) | {summary['head_scratch_bytes']} |

State feedback: {summary['feedback']} ({'h_t has h_{t-1}' + "'s scale and zero point" if summary['feedback'] == 'direct' else 'a 256-byte requantization table'}).
Code size depends on the compiler: `size zoo_model.o`.
"""
