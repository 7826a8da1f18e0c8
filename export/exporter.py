"""``zoo export --tflite``: a trained run directory -> a checked TFLite export directory.

`export_run` is a pipeline of named stages::

    read_run            the finished run, its task's data, the Keras float model's predictions
    convert_models      TFLite models (sequence, or step + head + stream), builtin ops only
    write_artifacts     models, test set, normalization and the model card's first part
    check_litert        accuracy on the whole test split with ai-edge-litert (device_bench.py's
                        code path) against the Keras float model; the stream model's agreement
    check_tflite_micro  smallest arena (bisection) and agreement under the tflite-micro
                        interpreter, for the models TFLite Micro runs (not fp16 / "dynamic")
    write_c_sources     C arrays and, for a step export, the C++ streaming loop
    finish              the card (json and md); an export that passed its accuracy check
                        replaces ``out``, one that failed it goes to ``OUT.failed`` instead

The files are those of `zoo.export.exportdir.ExportDirectory`; the card is a
`zoo.export.exportdir.ModelCard`. Everything is built in a staging directory beside ``out``
(`zoo.core.storage`) and swapped in only when every stage has passed: a failed or interrupted
export never replaces a good one.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zoo.export import device_runtime
from zoo.export.card import card_markdown, on_sequences, versus_float
from zoo.export.card_schema import (FORMS, AccuracyCheck, DataUsed, Frontend, MicroCheck,
                                   ModelBytes, ModelCard, ModelOps, SingleStepCheck, StatePart,
                                   StateQuantization, StepIO, StreamCheck, TensorQuantization)
from zoo.export.exportdir import MARKER, ExportDirectory
from zoo.export.int8_gate import agreement_drop, same_command, source_command, widest_range
from zoo.export.quantize import CALIBRATED, MODES, accuracy_drop_advice
from zoo.export.sources import ExportSource, frontend_entry, read_run
from zoo.core import storage

__all__ = ["export_run", "export_run_with", "export_source", "ExportOptions", "ExportDirError",
           "AccuracyDropError", "FORMS", "frontend_entry"]
_log = logging.getLogger(__name__)


class ExportDirError(storage.StorageError):
    """The output directory cannot be used (exists, or is not an export)."""


def check_backend() -> None:
    """The converter reads TensorFlow graphs: under another Keras backend the conversion fails
    deep inside (JAX: a pytree error of ``jax2tf``), so say what to do before starting."""
    import keras

    if keras.backend.backend() != "tensorflow":
        raise ValueError(f"exporting to TFLite needs Keras's TensorFlow backend; this process runs "
                         f"{keras.backend.backend()!r}: set KERAS_BACKEND=tensorflow (a model "
                         "trained under JAX loads there as it is)")


class AccuracyDropError(RuntimeError):
    """The quantized model lost more accuracy than allowed; the export is kept for inspection
    in ``OUT.failed`` (never in ``out``: a failed export does not replace a good one).
    ``summary``: the loss alone (the accuracies and the bar), without where the export was kept
    or what to do, for a caller that words those itself (`zoo export --form c`)."""

    def __init__(self, message: str, summary: str | None = None, inspect: str | None = None,
                 command: str | None = None):
        super().__init__(message)
        self.summary = summary or message
        self.inspect = inspect  # the command that makes this export again (to keep and read it)
        self.command = command  # the command to try next


@dataclass(frozen=True)
class ExportOptions:
    """What `export_run` does besides the run and the output folder (checked on creation)."""

    quantize: str = "none"
    form: str = "sequence"
    unroll: bool = False
    data_dir: str | Path | None = None  # None: where the run found its data
    max_drop: float = 1.0  # accuracy points the TFLite model may lose
    allow_drop: bool = False  # report a larger drop without raising AccuracyDropError
    overwrite: bool = False
    per_tensor: bool = True
    calibration_sequences: int = 200
    calibration_pairs: int = 1000
    micro: bool = True
    micro_sequences: int | None = 200
    stream: bool = True  # step form: also the two-signature stream.tflite
    # Step form: convert in this process, not a child (a step model has no WHILE loop for the
    # calibrator to crash on, TF #75140); saves the child's TensorFlow import (tests).
    in_process: bool = False

    def __post_init__(self):
        if self.quantize not in MODES:
            raise ValueError(f"unknown --quantize {self.quantize!r}; valid: {', '.join(MODES)}")
        if self.form not in FORMS:
            raise ValueError(f"unknown --form {self.form!r}; valid: {', '.join(FORMS)}")
        if self.unroll and self.form == "step":
            raise ValueError("--unroll applies to --form sequence (a step model has no loop)")
        check_export_numbers(self)

    @property
    def calibrated(self) -> bool:
        return self.quantize in CALIBRATED

    @property
    def micro_runs_it(self) -> bool:
        """Whether TFLite Micro has kernels for this mode (not fp16 weights or hybrid ones)."""
        return self.quantize in ("none",) + CALIBRATED

    def default_out(self, run_dir) -> Path:
        unroll = "-unroll" if self.unroll else ""
        return Path(run_dir) / f"export-{self.form}-{self.quantize}{unroll}"


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_export_numbers(opts: ExportOptions) -> None:
    """The numeric options, before anything is read or written: a NaN ``max_drop`` compares
    false with every drop (so nothing would ever fail, and the card would hold a bare NaN), a
    negative one fails every export, and zero calibration pairs made the converter fall back to
    a float model whose card said int8."""
    drop = opts.max_drop
    if isinstance(drop, bool) or not isinstance(drop, (int, float)) or not math.isfinite(drop) \
            or drop < 0:
        raise ValueError(f"invalid --max-drop {drop!r}; valid: a number of accuracy points >= 0 "
                         "(default 1.0)")
    for flag, value in (("--calibration-pairs", opts.calibration_pairs),
                        ("calibration_sequences", opts.calibration_sequences)):
        if not _is_count(value):
            raise ValueError(f"invalid {flag} {value!r}; valid: an integer >= 1")
    if opts.micro_sequences is not None and not _is_count(opts.micro_sequences):
        raise ValueError(f"invalid micro_sequences {opts.micro_sequences!r}; valid: an integer "
                         ">= 1, or None for all")


@dataclass
class _Converted:
    """What `convert_models` made: the TFLite models (and for the step form the two-signature
    stream model and the calibration pairs, reused by the single-step TFLM check)."""

    models: dict
    ops: dict
    calibration: str | None = None
    stream: bytes | None = None
    pairs: tuple | None = None  # (x_t [P, d], h_prev [P, D])
    state_scales: list | None = None  # step form: each state part's factor in the vector


def export_run(run_dir, out=None, *, quantize: str = "none", form: str = "sequence",
               unroll: bool = False, **options) -> ModelCard:
    """Export the run in ``run_dir`` to ``out`` (default ``RUN_DIR/export-FORM-QUANTIZE``) and
    return the model card as written (its sections read by attribute: ``card.accuracy.tflite``).

    ``out`` is locked meanwhile (the real directory: symlinks resolved); an existing export
    there is replaced (``overwrite=True``) only once the new one is complete and has passed its
    accuracy check. ``options``: the other fields of `ExportOptions`.

    Raises:
        ExportDirError: ``out`` may not be written.
        zoo.export.quantize.ConversionCrashed: the converter crashed or failed.
        AccuracyDropError: (after writing the export to ``OUT.failed``, ``out`` untouched) the
            TFLite accuracy is more than ``max_drop`` points below the Keras float model's,
            unless ``allow_drop``.
    """
    return export_run_with(run_dir, out,
                           ExportOptions(quantize=quantize, form=form, unroll=unroll, **options))


def export_run_with(run_dir, out, opts: ExportOptions) -> ModelCard:
    """`export_run` with its options already made (and so checked): ``zoo export`` builds them
    once from its flags and hands them down, to here or to the C export's step export."""
    check_backend()
    out = Path(out) if out else opts.default_out(run_dir)
    # The run's lock, shared, for the whole export: `zoo train --overwrite` cannot replace the
    # model it reads meanwhile (the card would describe one model and sit in the other's run).
    with storage.shared(run_dir):
        return export_source(lambda: read_run(Path(run_dir), opts.data_dir), out, opts)


def export_source(read, out: Path, opts: ExportOptions) -> ModelCard:
    """The pipeline of every export: ``read()`` (the `zoo.export.sources.ExportSource`, read once
    ``out`` is locked), then each stage in a staging folder swapped in at the end; returns the
    card as written (see `export_run`, whose errors it raises)."""
    check = functools.partial(check_out, overwrite=opts.overwrite)
    with storage.replacing(storage.real_target(out), MARKER, check=check) as replacement:
        t_start = time.perf_counter()
        run = read()
        _say_source(run, opts)
        converted = convert_models(run, opts)
        export = ExportDirectory(replacement.stage())
        card = write_artifacts(export, run, converted, opts)
        lite_logits = check_litert(export, card, run, converted, opts)
        check_tflite_micro(export, card, run, converted, lite_logits, opts)
        write_c_sources(export, card, run, converted, opts)
        finish(export, card, t_start)
        where = _place(replacement, card, opts)
    _report(card, opts, out, where, run)
    return card


# ---------------------------------------------------------------------------------- stages
def _say_source(run: ExportSource, opts: ExportOptions) -> None:
    accuracy = (f"Keras float accuracy {100 * run.float_accuracy:.2f}%" if run.labelled
                else "no labels (the export is checked against the float model)")
    _log.info(f"{run.title}: {accuracy} ({len(run.x_test)} test sequences); exporting --form "
              f"{opts.form} --quantize {opts.quantize}")


def convert_models(run: ExportSource, opts: ExportOptions) -> _Converted:
    """The TFLite models of the requested form and mode, each checked builtin-only (raises
    `zoo.export.convert.NonBuiltinOpError` naming the ops)."""
    from zoo.export.convert import check_builtin_only, op_names
    from zoo.export.step import for_integer_conversion

    # Integer modes: the quantized state replaces the training-time fake quantization (kept in
    # float modes, where it is part of the model's function); a QAT model's ranges are kept.
    source = for_integer_conversion(run.model) if opts.calibrated else run.model
    converted = (_convert_step if opts.form == "step" else _convert_sequence)(source, run, opts)
    for name, tflite in converted.models.items():
        check_builtin_only(tflite)
        converted.ops[name] = sorted(set(op_names(tflite)))
    return converted


def _convert_sequence(source, run: ExportSource, opts: ExportOptions) -> _Converted:
    from zoo.export.convert import with_batch_size
    from zoo.export.quantize import convert

    calib, note = None, None
    if opts.calibrated:
        x_train = run.x_train
        idx = np.random.default_rng(0).choice(
            len(x_train), size=min(opts.calibration_sequences, len(x_train)), replace=False)
        calib = {run.model.inputs[0].name: x_train[idx]}
        note = f"{len(idx)} training sequences"
    model = convert(with_batch_size(source), opts.quantize, calib, unroll=opts.unroll,
                    per_tensor=opts.per_tensor, form=opts.form)
    return _Converted(models={"model": model}, ops={}, calibration=note)


def _convert_step(source, run: ExportSource, opts: ExportOptions) -> _Converted:
    from zoo.export.convert import check_builtin_only
    from zoo.export.quantize import convert_all
    from zoo.export.step import calibration_pairs, step_models

    xs, hs, h_final, scales = calibration_pairs(
        source, run.x_train, sequences=opts.calibration_sequences, pairs=opts.calibration_pairs,
        scales="auto")
    step, head = step_models(source, scales)
    if opts.calibrated and float(np.ptp(h_final)) == 0.0:
        raise ValueError(f"the float model's final state is constant ({float(h_final.flat[0])}"
                         ") on every calibration sequence: the state collapsed in training "
                         "(the model predicts from the bias alone), so there is no range "
                         "to calibrate. Retrain it (docs/export.md).")
    calib = ({"step": {"x_t": xs, "h_prev": hs}, "head": {"h": h_final}} if opts.calibrated
             else {"step": None, "head": None})
    jobs = {"step": (step, calib["step"]), "head": (head, calib["head"])}
    if opts.stream:
        # The same pair as one file with `step` and `head` signatures, for LiteRT users
        # (TFLite Micro runs a model's first subgraph only, so it keeps the two files).
        jobs["stream"] = ({"step": step, "head": head}, calib if opts.calibrated else None)
    # One child process for the three (one TensorFlow import), unless in_process.
    converted = convert_all(jobs, opts.quantize, per_tensor=opts.per_tensor, form=opts.form,
                            child=False if opts.in_process else None)
    stream = converted.pop("stream", None)
    models = converted
    if stream is not None:
        check_builtin_only(stream)
    note = (f"{len(xs)} (x_t, h_t-1) pairs from float trajectories of {len(h_final)} training "
            "sequences; head: their final states")
    return _Converted(models=models, ops={}, calibration=note, stream=stream, pairs=(xs, hs),
                      state_scales=scales)


def write_artifacts(export: ExportDirectory, run: ExportSource, converted: _Converted,
                    opts: ExportOptions) -> ModelCard:
    """The models, test set and normalization; returns the card with what they determine."""
    from zoo.export.step import state_size

    models = converted.models
    files = export.write_models(models)
    if converted.stream is not None:
        export.write_stream(converted.stream)
    card = ModelCard(
        form=opts.form, quantize=opts.quantize, unroll=opts.unroll, files=files,
        timesteps=int(run.x_test.shape[1]), features=int(run.x_test.shape[2]),
        state_size=state_size(run.model), classes=run.classes, class_names=list(run.class_names),
        testset=export.write_testset(run.x_test, run.y_test),
        normalization=export.write_normalization(run.norm),
        task=run.task, task_options=run.task_options, model=run.name,
        model_options=run.model_options, run_dir=run.run_dir,
        parameters=int(run.model.count_params()),
        data=DataUsed(source=run.data_source, train=len(run.x_train), test=len(run.x_test),
                      calibration=converted.calibration),
        weights="per-tensor" if opts.per_tensor else "per-channel",
        bytes=ModelBytes(**{name: len(b) for name, b in models.items()}),
        total_bytes=sum(len(b) for b in models.values()), ops=ModelOps(**converted.ops),
        **run.card_fields)
    if opts.form == "step":
        card.step_io, card.state_quantization = _step_io(export.model("step"))
        layout = _state_layout(run.model, converted.state_scales)
        if layout is not None:
            card.step_io.state_layout = layout
    card.frontend = None if run.frontend is None else Frontend.from_dict(run.frontend)
    return card


def _state_layout(model, scales: list | None) -> list[StatePart] | None:
    """Where each recurrent layer's states lie in the step model's one state vector, and the
    factor each is held at (`zoo.export.step.state_scales`), for more than one part (an LSTM's h
    and c, stacked layers); None for a single state."""
    from zoo.export.step import step_chain

    layout = step_chain(model).state_layout
    if len(layout) == 1:
        return None
    return [StatePart(**part, scale=scale)
            for part, scale in zip(layout, scales or [1.0] * len(layout))]


def check_litert(export: ExportDirectory, card: ModelCard, run: ExportSource, converted: _Converted,
                 opts: ExportOptions) -> np.ndarray:
    """``card.accuracy`` (and ``card.stream``): the export on the whole test split with
    ai-edge-litert, state fed back as device_bench.py does it. Returns the LiteRT logits."""
    t0 = time.perf_counter()
    lite_logits = _predict_all(device_runtime.open_export(str(export.root), card, "litert", 1),
                               run.x_test)
    lite_pred, keras_pred = lite_logits.argmax(-1), run.keras_logits.argmax(-1)
    agreement = float(np.mean(lite_pred == keras_pred))
    acc = card.accuracy = AccuracyCheck(
        keras_float=run.float_accuracy, tflite=None, drop_points=None,
        argmax_agreement=agreement,
        max_abs_logit_diff=float(np.abs(lite_logits - run.keras_logits).max()),
        runtime="ai-edge-litert", test_sequences=len(run.x_test),
        max_drop_points=opts.max_drop, passed=True,
        eval_seconds=round(time.perf_counter() - t0, 1))
    if run.labelled:
        acc.tflite = float(np.mean(lite_pred == run.y_test))
        acc.drop_points = 100 * (run.float_accuracy - acc.tflite)
        acc.passed = bool(acc.drop_points <= opts.max_drop)
    else:  # no labels: the agreement is what is known (it bounds the drop from above)
        acc.labels = "none given: the export is compared with the float model only"
        acc.agreement_drop_points = agreement_drop(agreement)
        acc.passed = bool(acc.agreement_drop_points <= opts.max_drop)
    if converted.stream is not None:
        card.stream = _stream_agreement(export, converted.stream, run, lite_logits)
    ops = sorted(set(sum(converted.ops.values(), [])))
    every = on_sequences(len(run.x_test), len(run.x_test))
    scored = (f"accuracy {100 * acc.tflite:.2f}% {every} "
              f"({versus_float(acc.drop_points)}), " if run.labelled
              else f"{every}, no labels: ")
    _log.info(f"  TFLite ({opts.quantize}, {opts.form}): {scored}argmax agreement with Keras "
              f"{100 * agreement:.2f}%, {card.total_bytes:,} bytes, ops {ops}")
    return lite_logits


def _stream_agreement(export: ExportDirectory, stream: bytes, run: ExportSource,
                      lite_logits: np.ndarray) -> StreamCheck:
    """The two-signature stream model against the step / head pair, over the test split."""
    t0 = time.perf_counter()
    stream_out = device_runtime.stream_logits(stream, run.x_test)
    return StreamCheck(
        file=export.stream.name, bytes=len(stream), signatures=["step", "head"],
        argmax_agreement_with_step_head=float(np.mean(stream_out.argmax(-1)
                                                      == lite_logits.argmax(-1))),
        max_abs_logit_diff_vs_step_head=float(np.abs(stream_out - lite_logits).max()),
        accuracy=_accuracy(stream_out, run.y_test),
        eval_seconds=round(time.perf_counter() - t0, 1))


def check_tflite_micro(export: ExportDirectory, card: ModelCard, run: ExportSource,
                       converted: _Converted, lite_logits: np.ndarray,
                       opts: ExportOptions) -> None:
    """``card.tflite_micro`` and the arenas: the smallest arena of each model, and the first
    ``micro_sequences`` test sequences under the tflite-micro interpreter against LiteRT."""
    from zoo.export.micro import smallest_arenas

    if not opts.micro:
        return
    if not opts.micro_runs_it:
        card.tflite_micro = MicroCheck(skipped=f"TFLite Micro does not run {opts.quantize} "
                                       "models (float16 weights / hybrid dynamic-range "
                                       "kernels); use --quantize int8, int16x8 or none")
        return
    t0, step = time.perf_counter(), opts.form == "step"
    arenas = smallest_arenas({name: converted.models[name]
                              for name in (("step", "head") if step else ("model",))})
    card.arena_bytes = arenas["step" if step else "model"]
    if step:
        card.head_arena_bytes = arenas["head"]
    tflm = device_runtime.open_export(str(export.root), card, "tflite-micro", 1)
    micro_logits = _predict_all(tflm, run.x_test, opts.micro_sequences)
    micro = card.tflite_micro = MicroCheck(arena_bytes=card.arena_bytes,
                                           head_arena_bytes=card.head_arena_bytes,
                                           **_agreement(micro_logits, lite_logits, run.y_test))
    if step:
        xs, hs = converted.pairs
        micro.single_step_vs_litert = _single_step_agreement(
            export.model("step"), card.step_io, card.arena_bytes, xs[:200], hs[:200])
    micro.seconds = round(time.perf_counter() - t0, 1)
    # The accuracy on a prefix is not comparable with LiteRT's on the whole split (the prefix
    # can be easier or harder): LiteRT's on the same sequences is printed beside it.
    scored = (f", accuracy {100 * micro.accuracy:.2f}% "
              f"{on_sequences(micro.test_sequences, len(run.x_test))} (LiteRT "
              f"{100 * micro.litert_accuracy_same_sequences:.2f}% on the same "
              f"{micro.test_sequences})" if run.labelled
              else f", {on_sequences(micro.test_sequences, len(run.x_test))}")
    _log.info(f"  TFLite Micro: arena {card.arena_bytes:,} bytes"
              + (f" (head {card.head_arena_bytes:,})" if step else "")
              + f"{scored}, argmax agreement with LiteRT "
              f"{100 * micro.argmax_agreement_with_litert:.2f}%")


def _agreement(micro_logits: np.ndarray, lite_logits: np.ndarray, y: np.ndarray | None) -> dict:
    """TFLite Micro's logits on the first n test sequences against LiteRT's on the same (the
    keys of `MicroCheck` they fill)."""
    n = len(micro_logits)
    micro_pred, lite_pred = micro_logits.argmax(-1), lite_logits[:n].argmax(-1)
    return {"test_sequences": n, "accuracy": _accuracy(micro_logits, y),
            "litert_accuracy_same_sequences": _accuracy(lite_logits[:n], y),
            "argmax_agreement_with_litert": float(np.mean(micro_pred == lite_pred)),
            "max_abs_logit_diff_vs_litert": float(np.abs(micro_logits - lite_logits[:n]).max())}


def _accuracy(logits: np.ndarray, y: np.ndarray | None) -> float | None:
    """Accuracy of ``logits`` against the first ``len(logits)`` labels (None without labels)."""
    return None if y is None else float(np.mean(logits.argmax(-1) == y[:len(logits)]))


def write_c_sources(export: ExportDirectory, card: ModelCard, run: ExportSource, converted: _Converted,
                    opts: ExportOptions) -> None:
    """``card.c_sources``: the models as C arrays (the modes TFLite Micro runs) and, for a step
    export, the C++ streaming loop with its host self-test and Makefile."""
    from zoo.export.micro import c_array_sources, streaming_sources

    models, ops = converted.models, converted.ops
    if opts.form == "step":
        card.c_sources = export.write_sources(c_array_sources(
            {"step": models["step"], "head": models["head"]}))
        card.c_sources += export.write_sources(streaming_sources(
            title=f"{run.title} ({opts.quantize})",
            io_dtype=card.state_quantization.h_in.dtype, card=card,
            step_ops=ops["step"], head_ops=ops["head"]))
    elif opts.micro_runs_it:
        card.c_sources = export.write_sources(c_array_sources({"model": models["model"]}))


def finish(export: ExportDirectory, card: ModelCard, t_start: float) -> None:
    """The card (json and md): the staging directory (marked as the zoo's since it was made)
    is a complete export."""
    card.export_seconds = round(time.perf_counter() - t_start, 1)
    export.write_card(card, card_markdown(card))


# ---------------------------------------------------------------------------------- helpers
def failed_path(out: Path) -> Path:
    """Where an export that failed its accuracy check is kept: ``OUT.failed`` beside ``out``."""
    return Path(out).with_name(f"{Path(out).name}.failed")


def _place(replacement: storage.Replacement, card: ModelCard, opts: ExportOptions) -> Path:
    """Swap the complete export in the staging folder into ``out`` if it passed its accuracy
    check (or ``allow_drop``); otherwise into ``OUT.failed``, so that a good export in ``out``
    is never replaced by a failed one. If ``OUT.failed`` is in use or is a user's folder, the
    failed export stays in the staging folder. Returns where the export is."""
    if card.accuracy.passed or opts.allow_drop:
        replacement.swap_in()
        return replacement.target
    failed = failed_path(replacement.target)
    try:
        with storage.replacing(failed, MARKER) as failed_replacement:
            failed_replacement.swap_in(replacement.staging)  # only an earlier failed export
            return failed
    except storage.StorageError:
        return replacement.staging


def _report(card: ModelCard, opts: ExportOptions, out: Path, where: Path,
            run: ExportSource | None = None) -> None:
    """``wrote OUT``, or AccuracyDropError saying where the failed export was kept instead, the
    layer whose range is widest and a command to try next."""
    acc = card.accuracy
    if acc.passed or opts.allow_drop:
        _log.info(f"  wrote {out}")
        return
    kept = (f"the export is in {failed_path(out)} for inspection" if where.name.endswith(".failed")
            else f"the export is in {where} for inspection ({failed_path(out)} is not the zoo's "
                 "or in use); the next export to the same --out removes it")
    if acc.tflite is not None:
        summary = (f"{opts.quantize} {opts.form} model: test accuracy {100 * acc.tflite:.2f}% "
                   f"is {acc.drop_points:.2f} points below the Keras float model's "
                   f"{100 * acc.keras_float:.2f}% (allowed: {opts.max_drop} points")
    else:  # no labels: the windows whose class the quantized model changed
        summary = (f"{opts.quantize} {opts.form} model: its class agrees with the Keras float "
                   f"model's on {100 * acc.argmax_agreement:.2f}% of the "
                   f"{acc.test_sequences} calibration windows, "
                   f"{acc.agreement_drop_points:.2f} points lost (allowed: {opts.max_drop} "
                   "points")
    widest = widest_range(run.model, run.x_test) if run is not None else None
    command = source_command(run, opts) if run is not None else None
    raise AccuracyDropError(
        f"{summary}; {out} is unchanged and {kept})"
        + (f"; widest int8 range: {widest}" if widest else "")
        + (f". Try `{command}`, " if command else ". ")
        + "pass --accept-int8-loss (--allow-drop) to accept it, or "
        f"{accuracy_drop_advice(opts.quantize) if not command else ''}retrain with the "
        "integer-friendly options (docs/export.md).", summary=summary + ")"
        + (f"; widest int8 range: {widest}" if widest else ""),
        inspect=same_command(run, opts) if run is not None else None, command=command)


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse an export ``out`` that may not be written (`storage.check_out`: reads only)."""
    storage.check_out(out, MARKER, overwrite, writer="zoo export", what="export directory",
                      error=ExportDirError)


def _predict_all(model, x, limit=None):
    n = len(x) if limit is None else min(limit, len(x))
    return np.stack([model.predict(x[i]) for i in range(n)])


def _quant(details) -> TensorQuantization:
    scale, zp = details["quantization"]
    return TensorQuantization(scale=float(scale), zero_point=int(zp),
                              dtype=np.dtype(details["dtype"]).name)


def _dtype_quant(details: dict) -> tuple:
    """``(dtype, (scale, zero_point))`` of a tensor's interpreter details, as device_bench's
    quantization helpers take it."""
    return details["dtype"], details["quantization"]


def _step_io(step_path: Path) -> tuple[StepIO, StateQuantization]:
    """(step_io, state_quantization) of a step model: its input order and state quantization."""
    step = device_runtime.LiteInterpreter(str(step_path), "litert", None)
    inputs, (out,) = step.inputs, step.outputs
    by_name = {}
    for i, d in enumerate(inputs):
        # Tensor names look like "serving_default_x_t:0".
        key = "x" if "x_t" in d["name"] else "h" if "h_prev" in d["name"] else None
        if key is None:
            raise RuntimeError(f"unexpected step input {d['name']!r}")
        by_name[key] = i
    io = StepIO(x=by_name["x"], h=by_name["h"], h_out=0)
    tied = device_runtime.same_quantization(_dtype_quant(inputs[io.h]), _dtype_quant(out))
    state = StateQuantization(
        x=_quant(inputs[io.x]), h_in=_quant(inputs[io.h]), h_out=_quant(out), tied=bool(tied),
        feedback=("direct: copy h_t's bytes into h_prev" if tied else
                  "requantize: h_prev = quantize(dequantize(h_t, h_out), h_in)"))
    return io, state


def _single_step_agreement(step_path: Path, io: StepIO, arena, pairs_x,
                           pairs_h) -> SingleStepCheck:
    """Max |LiteRT - TFLM| of one step's raw output (in quantization steps / float units)."""
    lite = device_runtime.open_model(str(step_path), "litert", None, None)
    micro = device_runtime.open_model(str(step_path), "tflite-micro", 1, arena)
    worst, differing, total = 0.0, 0, 0
    for x, h in zip(pairs_x, pairs_h):
        for i, value in ((io.x, x), (io.h, h)):
            dtype, quant, _ = lite.input_quant(i)
            q = device_runtime.quantize(value[None], dtype, quant)
            lite.set(i, q)
            micro.set(i, q)
        lite.invoke()
        micro.invoke()
        a = lite.get(io.h_out).astype(np.float64)
        b = np.asarray(micro.get(io.h_out)).astype(np.float64)
        worst = max(worst, float(np.abs(a - b).max()))
        differing += int(np.sum(a != b))
        total += a.size
    return SingleStepCheck(max_abs_diff=worst, differing_elements=differing, elements=total,
                           pairs=len(pairs_x))

