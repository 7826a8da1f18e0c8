"""The C export folder: a self-contained C99 project from an int8 step export.

    zoo_model.h   (PREFIX_model.h with --prefix, `names`) the API: zoo_reset, zoo_push (raw floats), zoo_push_q (int8), zoo_logits,
                  zoo_predict; the state in a caller-owned zoo_state_t
    zoo_model.c   weights, tables and quantization constants as const arrays, one function per
                  model (step, head), the state feedback
    zoo_int8.h    TFLite's int8 kernel arithmetic (shared by every export)
    zoo_args.h    the apps' numeric options, parsed whole and range-checked
    main.c        zoo_app: a window file in (raw, normalized or int8 windows: its header says
                  which, `windows`), one line of int8 logits per window out
    Makefile      `make` (host cc, -std=c99 -Wall -Wextra -Werror -O2) and
                  `make CC=arm-none-eabi-gcc CPU=cortex-m4` (the library object)
    README.md     how to use it, with its flash and RAM figures

The step and head models are the export's own (their scales and zero points are used as they
are: nothing is recalibrated), so the C code computes what they compute; their card is read
through `card_schema.read_export_card` and checked against both models first
(`read_checked_graphs`).
Public names start with the export's prefix (`names`: written with ``zoo`` and renamed);
user strings reach the C only octal-escaped (`zoo.export.c_text.c_string`). The fixed C is
text in ``templates/`` (``zoo_model.h``, ``zoo_input.c``, ``zoo_api.c`` with
``${...}`` placeholders; ``zoo_int8.h``, ``zoo_args.h``, ``main.c``, ``Makefile`` copied as
they are); what depends on the models (weights, tables, one function per model) is generated
(`emit`).
"""

from __future__ import annotations

import json
import string
import struct
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from zoo.export import device_checks, device_runtime
from zoo.export.c_backend.emit import Emitted, c_array, emit_model
from zoo.export.tflite_graph import Graph, UnsupportedGraph, read_graph
from zoo.export.c_backend.library import arduino_name, write_library
from zoo.export.c_backend.names import CHECK_FILE, default_prefix, model_files, rename_model
from zoo.export.c_backend.plan import lower
from zoo.export.c_text import c_string, comment_text
from zoo.export.card_schema import (CARD_FILE, ExportFolderError, ModelCard, inside_folder,
                                     read_export_card)

C_FILES = ("zoo_model.h", "zoo_model.c", "zoo_int8.h", "zoo_args.h", "main.c", "Makefile",
           "README.md")
RUNTIMES = ("tflite-micro", "litert")  # the runtime whose int8 arithmetic the C code matches
DEFAULT_RUNTIME = RUNTIMES[0]  # --match's default, written here only
STEP_EXPORT_NAME = "export-step-int8"  # the int8 step export's folder in a run or a shipped tag
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
        """`device_runtime.same_quantization` of two int8 tensors: the one tie rule."""
        return device_runtime.same_quantization((np.int8, (self.scale, self.zero_point)),
                                                (np.int8, (other.scale, other.zero_point)))


def requant_table(src: _Quant, dst: _Quant) -> np.ndarray:
    """int8 -> int8 table of quantize(dequantize(q, src), dst), in float32 as the zoo's Python
    and C++ loops compute it (NumPy's round half to even)."""
    q = np.arange(-128, 128, dtype=np.int8)
    real = (q.astype(np.float32) - np.float32(src.zero_point)) * np.float32(src.scale)
    back = np.round(real / np.float32(dst.scale)) + np.float32(dst.zero_point)
    return np.clip(back, -128, 127).astype(np.int8)


def read_step_export(export_dir: Path, card: ModelCard | None = None) -> ModelCard:
    """The card of an int8 step export (`card_schema.read_export_card`: the schema, the model files
    inside the folder; ``card``: that card, already read by the caller, only checked to be an
    int8 step export's); `CExportError` otherwise."""
    try:
        card = card or read_export_card(str(export_dir))
    except ExportFolderError as err:
        raise CExportError(f"{err} (the C backend compiles a `zoo export --form step --quantize "
                           "int8` folder)") from None
    if card.form != "step" or card.quantize != "int8":
        raise CExportError(f"{export_dir}: form {card.form!r}, quantize {card.quantize!r}; the C "
                           "backend needs an int8 step export (--form step --quantize int8)")
    return card


class GraphModel:
    """A read `Graph` with the runtime interface `device_checks.check_card_fits_models` reads:
    ``inputs``, ``outputs``, ``input_quant(i)``, ``output_quant(i)``."""

    def __init__(self, graph: Graph):
        self.graph, self.inputs, self.outputs = graph, graph.inputs, graph.outputs

    def _quant(self, index: int):
        t = self.graph.tensor(index)
        scale = float(t.scales[0]) if t.scales is not None and len(t.scales) else 0.0
        return t.dtype, (scale, t.zero_point), tuple(t.shape)

    def input_quant(self, i: int):
        return self._quant(self.inputs[i])

    def output_quant(self, i: int):
        return self._quant(self.outputs[i])


def read_checked_graphs(step_export: Path, card: ModelCard) -> dict:
    """Model name -> (bytes, `Graph`) of the step and head models, each file structurally
    checked first and the card checked against both (sizes, dtypes, scales, byte counts,
    sha256 where a shipped tag lists them): one line naming the file and field otherwise."""
    models = {}
    try:
        device_checks.check_files_sha256(str(step_export))
        for name in ("step", "head"):
            path = step_export / card.files.of(name)
            device_checks.check_tflite(str(path))
            data = path.read_bytes()
            try:
                models[name] = data, read_graph(data)
            except (IndexError, KeyError, TypeError, ValueError, struct.error) as err:
                if isinstance(err, UnsupportedGraph):
                    raise
                raise CExportError(f"{path}: damaged TFLite model ({type(err).__name__}: "
                                   f"{err})") from None
        device_checks.check_card_fits_models(
            str(step_export), card, {k: GraphModel(g) for k, (_, g) in models.items()})
        for name, (_, graph) in models.items():
            _check_ops(card, name, graph, step_export)
    except ExportFolderError as err:
        raise CExportError(str(err)) from None
    except UnsupportedGraph as err:
        raise CExportError(f"{step_export}: {err}") from None
    return models


def _check_ops(card: ModelCard, name: str, graph: Graph, step_export: Path) -> None:
    """The card's ``ops`` (the exporter's sorted builtin op names of each model) against the
    model's own: another cell's model (a GRU's gates under a SiRNN card) differs here."""
    want = card.ops.of(name) if card.ops is not None else None
    got = sorted({op.kind for op in graph.ops})
    if want is not None and sorted(want) != got:
        raise CExportError(f"{step_export / CARD_FILE}: ops.{name} is {want}, but "
                           f"{step_export / card.files.of(name)} holds {got}; the card does not "
                           "belong to this model")


def write_c_project(step_export: Path, out: Path, runtime: str = DEFAULT_RUNTIME,
                    card: ModelCard | None = None, prefix: str | None = None) -> dict:
    """Write the C project of the int8 step export ``step_export`` into ``out`` (a folder that
    exists); returns its summary (files, bytes, scratch, prefix) for the model card. ``card``:
    the export's card when the caller has read it (`read_step_export`); ``prefix``: the public
    names' (`names.check_prefix`; default `names.default_prefix` of the export's name).

    Also writes the summary as ``c_check.json``, with a ``check`` saying none was run: its
    readers (`names.c_names`: the prefix, hence the file names; ``zoo profile``: timesteps,
    features, bytes) need it in every C project. ``zoo export --form c`` rewrites it with the
    bit-exactness check it runs."""
    step_export, out = Path(step_export), Path(out)
    prefix = prefix or default_prefix(source_name(step_export))
    if runtime not in RUNTIMES:
        raise CExportError(f"unknown runtime {runtime!r} to match; valid: {', '.join(RUNTIMES)}")
    card = read_step_export(step_export, card)
    models = read_checked_graphs(step_export, card)
    (step_bytes, step_g), (head_bytes, head_g) = models["step"], models["head"]
    try:
        step = emit_model("step", lower(step_g, step_bytes, runtime))
        head = emit_model("head", lower(head_g, head_bytes, runtime))
    except UnsupportedGraph as err:
        raise CExportError(f"{step_export}: {err}") from None
    norm = read_normalization(step_export, card)
    io = _io(card, step_g, head_g)
    sources = {
        "zoo_model.h": _header(card, io),
        "zoo_model.c": _model_c(card, io, step, head, norm, runtime),
        **{name: resources.files("zoo.export.c_backend").joinpath(f"templates/{name}").read_text()
           for name in ("zoo_int8.h", "zoo_args.h", "main.c", "Makefile")},
    }
    summary = _summary(card, io, step, head, runtime)
    summary["prefix"] = prefix
    sources["README.md"] = _readme(card, summary)
    for name, text in sources.items():
        (out / rename_model(name, prefix)).write_text(
            text if name == "zoo_int8.h" else rename_model(text, prefix))
    summary["files"] = [rename_model(name, prefix) for name in summary["files"]]
    summary["library_files"] = write_library(out, prefix, [model_files(prefix)[1]], card)
    unchecked = {**summary, "check": {"skipped": "written by write_c_project, which does not "
                                                 "check (zoo export --form c does)"}}
    (out / CHECK_FILE).write_text(json.dumps(unchecked, indent=1) + "\n")
    return summary


def source_name(source: Path) -> str:
    """The name a default prefix is made from: a tag's, run's or export's folder name (the
    folder holding an ``export-step-int8``), a ``.keras`` file's stem."""
    source = Path(source).resolve()
    if source.suffix == ".keras":
        return source.stem
    return source.parent.name if source.name == STEP_EXPORT_NAME else source.name


def read_normalization(export_dir: Path, card: ModelCard):
    """(mean, std) float32 of the export's normalization file (`load_normalization`: finite,
    std > 0 in float32, one per feature), or None when the card names none."""
    from zoo.training.artifacts import load_normalization

    if not card.normalization:
        return None
    path = Path(inside_folder(str(export_dir), card.normalization, str(export_dir / CARD_FILE)))
    try:
        norm = load_normalization(path, card.features)
    except (ValueError, OSError) as err:  # ArtifactError, a damaged JSON, a folder of that name
        raise CExportError(str(err)) from None
    return norm.mean, norm.std


def _io(card: ModelCard, step_g: Graph, head_g: Graph) -> dict:
    sio = card.step_io
    x_idx, h_idx = step_g.inputs[sio.x], step_g.inputs[sio.h]
    ho_idx = step_g.outputs[sio.h_out]
    x, h_in, h_out = (_Quant.of(step_g, i) for i in (x_idx, h_idx, ho_idx))
    head_in, logits = _Quant.of(head_g, head_g.inputs[0]), _Quant.of(head_g, head_g.outputs[0])
    return dict(x_pos=sio.x, h_pos=sio.h, x=x, h_in=h_in, h_out=h_out, head_in=head_in,
                logits=logits, units=step_g.tensor(h_idx).size, features=step_g.tensor(x_idx).size,
                classes=head_g.tensor(head_g.outputs[0]).size)


def _summary(card: ModelCard, io: dict, step: Emitted, head: Emitted, runtime: str) -> dict:
    tables = (0 if io["h_out"].same(io["h_in"]) else 256) + \
             (0 if io["h_in"].same(io["head_in"]) else 256)
    return {"files": list(C_FILES), "const_bytes": step.const_bytes + head.const_bytes + tables,
            "state_bytes": io["units"], "step_scratch_bytes": step.scratch_bytes,
            "head_scratch_bytes": head.scratch_bytes, "bit_exact_with": runtime,
            "feedback": "direct" if io["h_out"].same(io["h_in"]) else "table",
            "timesteps": card.timesteps, "features": io["features"], "units": io["units"],
            "classes": io["classes"]}


def _f32(v) -> str:
    text = repr(float(np.float32(v)))
    return text + ("f" if ("." in text or "e" in text) else ".0f")


def _template(name: str, **values) -> str:
    """The C template ``templates/NAME`` with its ``${...}`` placeholders filled
    (`string.Template`: a placeholder left without a value is a KeyError, not C)."""
    text = resources.files("zoo.export.c_backend").joinpath(f"templates/{name}").read_text()
    return string.Template(text).substitute(values)


def _header(card: ModelCard, io: dict) -> str:
    return _template("zoo_model.h", model=comment_text(card.model),
                     task=comment_text(card.task or "your data"), timesteps=card.timesteps,
                     features=io["features"], units=io["units"], classes=io["classes"],
                     logit_scale=_f32(io["logits"].scale),
                     logit_zero_point=io["logits"].zero_point)


def _model_c(card: ModelCard, io: dict, step: Emitted, head: Emitted, norm, runtime: str) -> str:
    names = card.class_names or [str(i) for i in range(io["classes"])]
    if len(names) != io["classes"]:
        raise CExportError(f"{CARD_FILE}: class_names has {len(names)} names, but the head "
                           f"model gives {io['classes']} logits")
    try:  # octal-escaped bytes: no label can end its string under any -std (issue 52)
        names_c = ", ".join(c_string(str(n)) for n in names)
    except ValueError as err:
        raise CExportError(f"{CARD_FILE}: {err}") from None
    rounding = SINGLE_ROUNDING[runtime]
    parts = [f"/* zoo_model.c: generated by `zoo export --form c` from step.tflite + head.tflite "
             f"({comment_text(card.model)} on {comment_text(card.task or 'your data')}), bit-exact "
             f"with {runtime}. */",
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
    lines.append(_template("zoo_input.c", normalize=normalize, x_scale=_f32(x.scale),
                           x_zero_point=f"{float(x.zero_point)!r}f"))
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
    return _template("zoo_api.c", h_zero_point=io["h_in"].zero_point, step_first=step_args[0],
                     step_second=step_args[1], feedback=feedback, requant_head=requant_head,
                     head_in=head_in)


def _readme(card: ModelCard, summary: dict) -> str:
    prefix = summary["prefix"]
    return f"""# {card.model} on {card.task or 'your data'}: int8 C (generated by `zoo export --form c`)

Plain C99, no heap, no interpreter, no libm. Bit-exact with this export's `step.tflite` +
`head.tflite` under TensorFlow Lite Micro (the zoo's tests check every window of the test split).

```sh
make                      # zoo_app with the host cc (-std=c99 -Wall -Wextra -Werror -O2)
python -m zoo.export.c_backend.windows . --out test.zoow   # testset.npz as a window file
./zoo_app test.zoow       # one line of int8 logits per window
make CC=arm-none-eabi-gcc CPU=cortex-m4   # zoo_model.o for a Cortex-M4 (ZOO_USE_ARM_DSP on)
```

`zoo_app` reads window files that say what their numbers are: a 16-byte header (`ZOOW`; the
kind, `RAW ` raw float32 features, `NORM` float32 normalized with `normalization.json`, or
`INT8` the step model's input; then {summary['timesteps']} and {summary['features']} as
uint32 little-endian), then N windows of {summary['timesteps']} x {summary['features']} values,
time-major, little-endian. A file without the header, of another shape, or with a NaN or
infinite value is refused (`zoo.export.c_backend.windows`).

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

## In your firmware

`CMakeLists.txt` is the static library `{prefix}` (`zoo_model.c`; the Cortex-M DSP path from
the target core, or `-D{prefix.upper()}_ARM_DSP=ON/OFF`): `add_subdirectory(path/to/this/folder
{prefix})` and `target_link_libraries(your_app PRIVATE {prefix})` in plain CMake, ESP-IDF, the
Pico SDK or Zephyr (`zephyr/module.yml`). `cmake/arm-none-eabi.cmake` builds it bare-metal
(`-DZOO_CPU=cortex-m4`). `arduino/{arduino_name(prefix)}` is an Arduino library (copy it into your
sketchbook's `libraries/`, or PlatformIO's `lib/`) whose example reads windows over the serial
port and prints the class.
"""
