"""``zoo export --tflite``: a trained run directory -> a checked TFLite export directory.

Export directory (the contract `export/device_bench.py` reads)::

    model.tflite                 form "sequence": x [1, T, d] -> logits [1, C]
    step.tflite, head.tflite     form "step": (x_t, h_prev) -> h_t and h_T -> logits
    stream.tflite                form "step": the same pair as one model with signatures
                                 "step" and "head" (LiteRT signature runners)
    normalization.json           per-feature mean / std: device code applies (x - mean) / std
    testset.npz                  the task's test split, x already normalised (float32), y (int)
    model_card.json / .md        task, data, accuracy (Keras float vs TFLite, argmax agreement),
                                 parameters, bytes, ops, TFLM arena, state quantization, usage
    model_data.h / .cc, main.cc  TFLM C arrays and the C++ streaming loop (step form)

Every artifact is checked builtin-only and evaluated on the whole test split with ai-edge-litert
(the same code path as device_bench.py), against the Keras float model. Models that TFLite Micro
can run (not "dynamic") are run under the tflite-micro Python interpreter too, with the smallest
arena found by bisection.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np

from export import device_bench
from export.exportdir import FORMS, ExportDirectory, ModelCard
from export.quantize import CALIBRATED, MODES
from training import rundir

__all__ = ["export_run", "ExportDirError", "AccuracyDropError", "FORMS"]

class ExportDirError(RuntimeError):
    """The output directory cannot be used (exists, or is not an export)."""


class AccuracyDropError(RuntimeError):
    """The quantized model lost more accuracy than allowed; the export is written regardless."""


def _prepare_out(out: Path, overwrite: bool) -> None:
    """Refuse an ``out`` that may not be replaced. Nothing is deleted here: the new export is
    built beside ``out`` and swapped in only once it is complete (`rundir.swap_in`)."""
    rundir.recover_swap(out)
    if out.exists() and not out.is_dir():
        raise ExportDirError(f"--out {out} is a file, not a directory; choose another --out")
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise ExportDirError(f"{out} already exists; choose another --out or pass --overwrite")
        if not ExportDirectory(out).has_marker():
            raise ExportDirError(f"{out} was not written by `zoo export` (no "
                                 f"{rundir.EXPORT_MARKER} marker); --overwrite replaces only the "
                                 "zoo's own export directories. Choose another --out.")


def _task_data(config: dict, run_dir: Path, data_dir):
    from training.tasks import get_task

    run = rundir.RunDirectory(run_dir)
    # Nothing of metrics.json goes into the export, but a damaged one means a damaged run: it is
    # named here rather than exported as if the run were whole.
    run.read_metrics()
    task = get_task(config["task"], **(config.get("task_options") or {}))
    if data_dir is None:  # where the run found its data, else the task's default location
        data_dir = run.data_source()
    return task, task.load(data_dir, seed=config.get("seed", 0))


def _predict_all(model, x, limit=None):
    n = len(x) if limit is None else min(limit, len(x))
    return np.stack([model.predict(x[i]) for i in range(n)])


def _quant(details):
    scale, zp = details["quantization"]
    return {"scale": float(scale), "zero_point": int(zp), "dtype": np.dtype(details["dtype"]).name}


def _dtype_quant(details: dict) -> tuple:
    """``(dtype, (scale, zero_point))`` of a tensor's interpreter details, as device_bench's
    quantization helpers take it."""
    return details["dtype"], details["quantization"]


def _step_io(step_path: Path) -> tuple[dict, dict]:
    """(step_io, state_quantization) of a step model: its input order and state quantization."""
    step = device_bench.LiteInterpreter(str(step_path), "litert", None)
    inputs, (out,) = step.inputs, step.outputs
    by_name = {}
    for i, d in enumerate(inputs):
        # Tensor names look like "serving_default_x_t:0".
        key = "x" if "x_t" in d["name"] else "h" if "h_prev" in d["name"] else None
        if key is None:
            raise RuntimeError(f"unexpected step input {d['name']!r}")
        by_name[key] = i
    io = {"x": by_name["x"], "h": by_name["h"], "h_out": 0}
    tied = device_bench.same_quantization(_dtype_quant(inputs[io["h"]]), _dtype_quant(out))
    state = {"x": _quant(inputs[io["x"]]), "h_in": _quant(inputs[io["h"]]), "h_out": _quant(out),
             "tied": bool(tied),
             "feedback": ("direct: copy h_t's bytes into h_prev" if tied else
                          "requantize: h_prev = quantize(dequantize(h_t, h_out), h_in)")}
    return io, state


def _single_step_agreement(step_path: Path, io, arena, pairs_x, pairs_h):
    """Max |LiteRT - TFLM| of one step's raw output (in quantization steps / float units)."""
    from export.micro import quiet_stderr

    lite = device_bench.open_model(str(step_path), "litert", None, None)
    with quiet_stderr():  # the TFLM wrapper prints its input-count probing to fd 2
        micro = device_bench.open_model(str(step_path), "tflite-micro", 1, arena)
    worst, differing, total = 0.0, 0, 0
    for x, h in zip(pairs_x, pairs_h):
        for i, value in ((io["x"], x), (io["h"], h)):
            dtype, quant, _ = lite.input_quant(i)
            q = device_bench.quantize(value[None], dtype, quant)
            lite.set(i, q)
            micro.set(i, q)
        lite.invoke()
        micro.invoke()
        a = lite.get(io["h_out"]).astype(np.float64)
        b = np.asarray(micro.get(io["h_out"])).astype(np.float64)
        worst = max(worst, float(np.abs(a - b).max()))
        differing += int(np.sum(a != b))
        total += a.size
    return {"max_abs_diff": worst, "differing_elements": differing, "elements": total,
            "pairs": len(pairs_x)}


def stream_logits(stream_bytes: bytes, x: np.ndarray) -> np.ndarray:
    """Logits of the two-signature ``stream.tflite`` over sequences ``x`` (N, T, d), run the
    way a LiteRT user would: signature runners, the state fed back (requantized only when the
    output and input quantizations differ)."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_content=stream_bytes)
    step, head = interp.get_signature_runner("step"), interp.get_signature_runner("head")
    (x_in, h_in), (h_out,) = ([step.get_input_details()[k] for k in ("x_t", "h_prev")],
                              step.get_output_details().values())
    head_in, (logits_out,) = head.get_input_details()["h"], head.get_output_details().values()
    q = lambda v, d: device_bench.quantize(v, d["dtype"], d["quantization"])
    dq = lambda v, d: device_bench.dequantize(v, d["dtype"], d["quantization"])
    direct_feedback, direct_head = device_bench.state_feedback(
        h_in=_dtype_quant(h_in), h_out=_dtype_quant(h_out), head_in=_dtype_quant(head_in))
    out = []
    for seq in x:
        h = q(np.zeros(h_in["shape"], np.float32), h_in)
        for x_t in seq:
            h_t = step(x_t=q(x_t[None], x_in), h_prev=h)["output_0"]
            h = h_t if direct_feedback else q(dq(h_t, h_out), h_in)
        h = h if direct_head else q(dq(h, h_in), head_in)
        out.append(dq(head(h=h)["output_0"], logits_out)[0])
    return np.stack(out)


def export_run(run_dir, out=None, *, quantize: str = "none", form: str = "sequence",
               unroll: bool = False, **options) -> dict:
    """Export the run in ``run_dir`` to ``out`` (default ``RUN_DIR/export-FORM-QUANTIZE``),
    holding a lock on ``out``; returns the model card as written (`ModelCard.to_dict`). An existing export in ``out``
    is replaced (``overwrite=True``) only once the new one is complete. Options: see
    `_export_run`."""
    out = Path(out) if out else Path(run_dir) / (f"export-{form}-{quantize}"
                                                 f"{'-unroll' if unroll else ''}")
    with rundir.exclusive(out, "export directory"):
        return _export_run(run_dir, out, quantize=quantize, form=form, unroll=unroll, **options)


def _export_run(run_dir, out, *, quantize: str = "none", form: str = "sequence",
                unroll: bool = False, data_dir=None, max_drop: float = 1.0,
                allow_drop: bool = False, overwrite: bool = False, per_tensor: bool = True,
                calibration_sequences: int = 200, calibration_pairs: int = 1000,
                micro: bool = True, micro_sequences: int | None = 200, print_fn=print) -> dict:
    """Export the run in ``run_dir`` to ``out``; returns the model card (a dict).

    Raises `ExportDirError`, `export.quantize.ConversionCrashed`, or `AccuracyDropError` (after
    writing the export) when the TFLite accuracy is more than ``max_drop`` points below the Keras
    float model's, unless ``allow_drop``.
    """
    from export.convert import check_builtin_only, op_names, with_batch_size
    from export.micro import (c_array_sources, quiet_stderr, smallest_arena,
                              streaming_sources)
    from export.quantize import convert
    from export.step import (calibration_pairs as pairs_from, state_size, step_models,
                             without_fake_quant)
    from training.evaluate import load_run

    if quantize not in MODES:
        raise ValueError(f"unknown --quantize {quantize!r}; valid: {', '.join(MODES)}")
    if form not in FORMS:
        raise ValueError(f"unknown --form {form!r}; valid: {', '.join(FORMS)}")
    if unroll and form == "step":
        raise ValueError("--unroll applies to --form sequence (a step model has no loop)")
    run_dir = Path(run_dir)
    out = Path(out)
    _prepare_out(out, overwrite)
    t_start = time.perf_counter()

    config, model, norm = load_run(run_dir)
    task, data = _task_data(config, run_dir, data_dir)
    rundir.check_model_fits_task(model, task, run_dir)
    if task.kind != "classification":
        raise ValueError(f"zoo export checks classification accuracy; task {task.name} is "
                         f"{task.kind}")
    x_train = norm.apply(data.train.x).astype(np.float32)
    x_test, y_test = norm.apply(data.test.x).astype(np.float32), np.asarray(data.test.y)
    keras_logits = model.predict(x_test, batch_size=256, verbose=0)
    keras_pred = keras_logits.argmax(-1)
    float_acc = float(np.mean(keras_pred == y_test))
    timesteps, features = int(x_test.shape[1]), int(x_test.shape[2])
    print_fn(f"{config['model']} on {task.name}: Keras float accuracy {100 * float_acc:.2f}% "
             f"({len(x_test)} test sequences); exporting --form {form} --quantize {quantize}")

    # ---------------------------------------------------------------------- convert
    rng = np.random.default_rng(0)
    # Integer modes: the quantized state replaces the training-time fake quantization (kept in
    # float modes, where it is part of the model's function).
    source = without_fake_quant(model) if quantize in CALIBRATED else model
    calib_note = None
    if form == "sequence":
        calib = None
        if quantize in CALIBRATED:
            idx = rng.choice(len(x_train), size=min(calibration_sequences, len(x_train)),
                             replace=False)
            calib = {model.inputs[0].name: x_train[idx]}
            calib_note = f"{len(idx)} training sequences"
        models = {"model": convert(with_batch_size(source), quantize, calib, unroll=unroll,
                                   per_tensor=per_tensor, form=form)}
    else:
        step, head = step_models(source)
        xs, hs, h_final = pairs_from(source, x_train, sequences=calibration_sequences,
                                     pairs=calibration_pairs)
        calib_note = (f"{len(xs)} (x_t, h_t-1) pairs from float trajectories of "
                      f"{len(h_final)} training sequences; head: their final states")
        if quantize in CALIBRATED and float(np.ptp(h_final)) == 0.0:
            raise ValueError(f"the float model's final state is constant ({float(h_final.flat[0])}"
                             ") on every calibration sequence: the state collapsed in training "
                             "(the model predicts from the bias alone), so there is no range "
                             "to calibrate. Retrain it (docs/export.md).")
        step_calib = {"x_t": xs, "h_prev": hs} if quantize in CALIBRATED else None
        head_calib = {"h": h_final} if quantize in CALIBRATED else None
        models = {"step": convert(step, quantize, step_calib, per_tensor=per_tensor, form=form),
                  "head": convert(head, quantize, head_calib, per_tensor=per_tensor, form=form)}
        # The same pair as one file with `step` and `head` signatures, for LiteRT users
        # (TFLite Micro runs a model's first subgraph only, so it keeps the two files).
        stream = convert({"step": step, "head": head}, quantize,
                         {"step": step_calib, "head": head_calib} if step_calib else None,
                         per_tensor=per_tensor, form=form)
        check_builtin_only(stream)
    ops = {}
    for name, tflite in models.items():
        check_builtin_only(tflite)  # raises NonBuiltinOpError naming the ops
        ops[name] = sorted(set(op_names(tflite)))

    # ------------------------------------------------------------------------ write
    stage = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        staged = ExportDirectory(stage)
        files = staged.write_models(models)
        if form == "step":
            staged.write_stream(stream)
        card = ModelCard(
            form=form, quantize=quantize, unroll=unroll, files=files,
            timesteps=timesteps, features=features,
            state_size=state_size(model),
            classes=int(task.num_classes), class_names=list(task.class_names),
            testset=staged.write_testset(x_test, y_test),
            normalization=staged.write_normalization(norm),
            task=task.name, task_options=task.options(),
            model=config["model"], model_options=config.get("model_options_resolved",
                                                            config.get("model_options")),
            run_dir=str(run_dir.resolve()), parameters=int(model.count_params()),
            data={"source": str(data.source), "train": len(x_train), "test": len(x_test),
                  "calibration": calib_note},
            weights="per-tensor" if per_tensor else "per-channel",
            bytes={name: len(b) for name, b in models.items()},
            total_bytes=sum(len(b) for b in models.values()), ops=ops,
        )
        if form == "step":
            card.step_io, card.state_quantization = _step_io(staged.model("step"))

        # ------------------------------------------------------------- accuracy (LiteRT)
        t0 = time.perf_counter()
        runner = device_bench.open_export(str(stage), card, "litert", 1)
        lite_logits = _predict_all(runner, x_test)
        lite_pred = lite_logits.argmax(-1)
        lite_acc = float(np.mean(lite_pred == y_test))
        drop = 100 * (float_acc - lite_acc)
        card.accuracy = {
            "keras_float": float_acc, "tflite": lite_acc, "drop_points": drop,
            "argmax_agreement": float(np.mean(lite_pred == keras_pred)),
            "max_abs_logit_diff": float(np.abs(lite_logits - keras_logits).max()),
            "runtime": "ai-edge-litert", "test_sequences": len(x_test),
            "max_drop_points": max_drop, "passed": bool(drop <= max_drop),
            "eval_seconds": round(time.perf_counter() - t0, 1)}
        if form == "step":
            t0 = time.perf_counter()
            stream_out = stream_logits(stream, x_test)
            card.stream = {
                "file": staged.stream.name, "bytes": len(stream), "signatures": ["step", "head"],
                "argmax_agreement_with_step_head": float(np.mean(stream_out.argmax(-1)
                                                                 == lite_pred)),
                "max_abs_logit_diff_vs_step_head": float(np.abs(stream_out - lite_logits).max()),
                "accuracy": float(np.mean(stream_out.argmax(-1) == y_test)),
                "eval_seconds": round(time.perf_counter() - t0, 1)}
        print_fn(f"  TFLite ({quantize}, {form}): accuracy {100 * lite_acc:.2f}% "
                 f"(drop {drop:+.2f} points), argmax agreement with Keras "
                 f"{100 * card.accuracy['argmax_agreement']:.2f}%, "
                 f"{card.total_bytes:,} bytes, ops {sorted(set(sum(ops.values(), [])))}")

        # ---------------------------------------------------------------- TFLite Micro
        if micro and quantize in ("none",) + CALIBRATED:
            t0 = time.perf_counter()
            main = "step" if form == "step" else "model"
            card.arena_bytes = smallest_arena(models[main])
            if form == "step":
                card.head_arena_bytes = smallest_arena(models["head"])
            with quiet_stderr():  # the TFLM wrapper prints its input-count probing to fd 2
                tflm = device_bench.open_export(str(stage), card, "tflite-micro", 1)
            micro_logits = _predict_all(tflm, x_test, micro_sequences)
            n = len(micro_logits)
            micro_pred = micro_logits.argmax(-1)
            card.tflite_micro = {
                "arena_bytes": card.arena_bytes, "head_arena_bytes": card.head_arena_bytes,
                "test_sequences": n, "accuracy": float(np.mean(micro_pred == y_test[:n])),
                "litert_accuracy_same_sequences": float(np.mean(lite_pred[:n] == y_test[:n])),
                "argmax_agreement_with_litert": float(np.mean(micro_pred == lite_pred[:n])),
                "max_abs_logit_diff_vs_litert": float(np.abs(micro_logits - lite_logits[:n]).max()),
            }
            if form == "step":
                card.tflite_micro["single_step_vs_litert"] = _single_step_agreement(
                    staged.model("step"), card.step_io, card.arena_bytes, xs[:200], hs[:200])
            card.tflite_micro["seconds"] = round(time.perf_counter() - t0, 1)
            print_fn(f"  TFLite Micro: arena {card.arena_bytes:,} bytes"
                     + (f" (head {card.head_arena_bytes:,})" if form == "step" else "")
                     + f", accuracy {100 * card.tflite_micro['accuracy']:.2f}% on {n} "
                     f"sequences, argmax agreement with LiteRT "
                     f"{100 * card.tflite_micro['argmax_agreement_with_litert']:.2f}%")
        elif micro:
            card.tflite_micro = {"skipped": f"TFLite Micro does not run {quantize} models "
                                               "(float16 weights / hybrid dynamic-range kernels); "
                                               "use --quantize int8, int16x8 or none"}

        # --------------------------------------------------------------- C sources
        if form == "step":
            io_dtype = card.state_quantization["h_in"]["dtype"]
            card.c_sources = staged.write_sources(c_array_sources(
                {"step": models["step"], "head": models["head"]}))
            card.c_sources += staged.write_sources(streaming_sources(
                title=f"{config['model']} on {task.name} ({quantize})", io_dtype=io_dtype,
                card=card, step_ops=ops["step"], head_ops=ops["head"]))
        elif quantize in ("none",) + CALIBRATED:
            card.c_sources = staged.write_sources(c_array_sources({"model": models["model"]}))

        card.export_seconds = round(time.perf_counter() - t_start, 1)
        staged.write_card(card)
        staged.write_marker(atomic=False)
        rundir.swap_in(stage, out)  # the old export (if any) goes only now
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    print_fn(f"  wrote {out}")
    if not card.accuracy["passed"] and not allow_drop:
        raise AccuracyDropError(
            f"{quantize} {form} model: test accuracy {100 * lite_acc:.2f}% is {drop:.2f} points "
            f"below the Keras float model's {100 * float_acc:.2f}% (allowed: {max_drop} points; "
            f"the export is in {out} for inspection). Pass --allow-drop to accept it, or try "
            "int16x8, or retrain with the integer-friendly options (docs/export.md).")
    return card.to_dict()
