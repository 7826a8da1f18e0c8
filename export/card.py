"""``model_card.md``: the model card of an export for people (`zoo.export.exportdir` writes it beside
``model_card.json``, the `ModelCard` of export/card_schema.py that `export/device_bench.py`
reads)."""

from __future__ import annotations

from zoo.export.card_schema import (NORMALIZATION_FILE, TESTSET_FILE, AccuracyCheck, MicroCheck,
                                   ModelCard, StreamCheck)
from zoo.export.exportdir import C_ARRAY_STEM, MAIN_SOURCE

__all__ = ["card_markdown", "on_sequences", "versus_float"]


def _pct(v):
    return "-" if v is None else f"{100 * v:.2f}%"


def on_sequences(n: int | None, total: int | None) -> str:
    """Which test sequences an accuracy is on: ``on all 701 test sequences``, ``on the first 200
    of 701 test sequences`` (TFLite Micro checks a prefix: beside LiteRT's accuracy on all of
    them it would read as a loss or a gain it is not)."""
    if n is None:
        return "on the test sequences"
    if total is None:
        return f"on the first {n} test sequences"
    if n >= total:
        return f"on all {n} test sequences"
    return f"on the first {n} of {total} test sequences"


def versus_float(drop_points: float) -> str:
    """Where the TFLite accuracy stands against the Keras float model's, in words:
    ``0.57 points below the float model``, ``2.00 points above the float model`` (an int8 model
    can be better: a signed "drop -2.00" reads as a loss), or ``the same as the float model``."""
    if drop_points is None:  # no labels (an export of a Keras model's calibration windows)
        return "no labels: compared with the float model only"
    if round(drop_points, 2) == 0:
        return "the same as the float model"
    side = "below" if drop_points > 0 else "above"
    return f"{abs(drop_points):.2f} points {side} the float model"


def card_markdown(card: ModelCard) -> str:
    """The card as Markdown: a headline (starting with FAILED when the accuracy check failed, so
    that a kept-for-inspection export is not mistaken for a good one), the summary table, and how
    to run the export."""
    lines = [_headline(card), ""] + _summary_table(card) + [""] + _running_it(card)
    return "\n".join(lines)


def _headline(card: ModelCard) -> str:
    title = f"{card.model} on {card.task or 'your data'}: {card.form} model, {card.quantize}"
    acc = card.accuracy or AccuracyCheck()
    if acc.passed is not False:  # passed, or a card without the check
        return f"# {title}"
    if acc.drop_points is None:  # no labels: the agreement with the float model
        return (f"# FAILED: {title}: TFLite's class differs from the Keras float model's on "
                f"{acc.agreement_drop_points:.2f}% of the windows (allowed "
                f"{acc.max_drop_points})")
    return (f"# FAILED: {title}: TFLite accuracy {acc.drop_points:.2f} points below the "
            f"Keras float model's (allowed {acc.max_drop_points})")


def _summary_table(card: ModelCard) -> list[str]:
    acc, data = card.accuracy, card.data
    files = ", ".join(f"`{f}` {card.bytes.of(k):,} bytes" for k, f in card.files.items())
    ops = "; ".join(f"{k}: {', '.join(v)}" for k, v in card.ops.items())
    return ["| | |", "|---|---|",
            f"| task | {f'`{card.task}`' if card.task else card.keras_model} "
            f"({card.classes} classes), input {card.timesteps} x "
            f"{card.features} |",
            f"| data | {data.source}: {data.train} training sequences, "
            f"{data.test} test sequences |",
            f"| calibration | {data.calibration or 'none (no calibrated mode)'} |",
            f"| parameters | {card.parameters:,} |",
            f"| files | {files} |",
            f"| ops | {ops} (builtin only) |",
            f"| weights | {card.weights} |",
            f"| Keras float accuracy | {_pct(acc.keras_float)} |",
            f"| TFLite accuracy ({acc.runtime}) | {_pct(acc.tflite)} "
            f"{on_sequences(acc.test_sequences, acc.test_sequences)} "
            f"({versus_float(acc.drop_points)}; allowed drop {acc.max_drop_points} "
            "points) |",
            f"| argmax agreement with Keras | {_pct(acc.argmax_agreement)} |",
            *_micro_rows(card.tflite_micro or MicroCheck(), acc.test_sequences)]


def _micro_rows(micro: MicroCheck, total: int | None) -> list[str]:
    if micro.arena_bytes is not None:
        arena = f"{micro.arena_bytes:,} bytes"
        if micro.head_arena_bytes:
            arena += f" (head {micro.head_arena_bytes:,})"
        return [f"| TFLite Micro arena (smallest that works) | {arena} |",
                f"| TFLite Micro accuracy | {_pct(micro.accuracy)} "
                f"{on_sequences(micro.test_sequences, total)} (LiteRT "
                f"{_pct(micro.litert_accuracy_same_sequences)} on the same "
                f"{micro.test_sequences}; argmax agreement "
                f"{_pct(micro.argmax_agreement_with_litert)}) |"]
    if micro.skipped:
        return [f"| TFLite Micro | {micro.skipped} |"]
    return []


def _running_it(card: ModelCard) -> list[str]:
    lines = ["## Running it", "",
             f"Inputs are normalised per feature with `{NORMALIZATION_FILE}` "
             f"(`x = (raw - mean) / std`) before quantization; `{TESTSET_FILE}` is already "
             "normalised.", ""]
    if card.frontend is not None:  # a speech model: the features a device computes
        features = card.frontend.features
        kind = {"logmel": "the float log-mel filterbank",
                "int_logmel": "the integer log-mel front end",
                "int_logmel_q15": "the q15 integer log-mel front end"}.get(features, features)
        lines += [f"The inputs are {kind} of the audio (`frontend` in `model_card.json`, step by "
                  f"step; reference: {card.frontend.reference_code}).", ""]
    if card.form == "step":
        lines += _step_usage(card) + (_stream_usage(card.stream) if card.stream is not None
                                      else [])
    return lines + ["```bash",
                    "python export/device_bench.py EXPORT_DIR            # latency, accuracy",
                    "python export/device_bench.py EXPORT_DIR --runtime tflite-micro", "```", ""]


def _step_usage(card: ModelCard) -> list[str]:
    io, sq = card.step_io, card.state_quantization
    return [f"`{card.files.step}` takes x_t at input {io.x} and h_prev at input {io.h} "
            f"(the converter orders inputs alphabetically) and returns h_t at output "
            f"{io.h_out}; start from h_0 = 0, invoke once per sample, then run "
            f"`{card.files.head}` on the final state.", "",
            f"State quantization: h_prev {sq.h_in.dtype} scale {sq.h_in.scale:.6g}"
            f" zero point {sq.h_in.zero_point}; h_t scale {sq.h_out.scale:.6g} "
            f"zero point {sq.h_out.zero_point}. Feedback: **{sq.feedback}**. "
            "x_t is quantized with scale "
            f"{sq.x.scale:.6g}, zero point {sq.x.zero_point}.", "",
            f"`{MAIN_SOURCE}` is the TFLite Micro streaming loop (with "
            f"`{C_ARRAY_STEM}.h/.cc`).", ""]


def _stream_usage(stream: StreamCheck) -> list[str]:
    return [f"`{stream.file}` ({stream.bytes:,} bytes) is the same pair as one model with "
            "signatures `step` (inputs `x_t`, `h_prev`) and `head` (input `h`), for LiteRT's "
            "signature runners; over the test split its logits differ from the two files' by at "
            f"most {stream.max_abs_logit_diff_vs_step_head:.3g} (argmax agreement "
            f"{_pct(stream.argmax_agreement_with_step_head)}):", "",
            "```python",
            "from ai_edge_litert.interpreter import Interpreter",
            f"m = Interpreter(model_path=\"{stream.file}\")",
            "step, head = m.get_signature_runner(\"step\"), m.get_signature_runner(\"head\")",
            "h = h0                                   # quantized zeros",
            "for x_t in xq:                           # quantized, normalised samples",
            "    h = step(x_t=x_t[None], h_prev=h)[\"output_0\"]   # requantize if not tied",
            "logits = head(h=h)[\"output_0\"]",
            "```", ""]
