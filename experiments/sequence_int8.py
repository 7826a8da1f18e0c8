"""The one-invoke int8 sequence model (`zoo.export.sequence_int8`) checked and timed: bit-exactness
against the step loop on the export's test windows, the requantize and identity ops it holds,
the smallest arenas, and latency beside the float Keras LSTM of nearest accuracy.

    python -m zoo.experiments.sequence_int8 EXPORT_DIR [--lstm RUN_DIR] [--data-dir DIR] ...

(Split from export/sequence_int8.py, which keeps the flatbuffer surgery: this is the experiment
built on it.)
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
from pathlib import Path

import numpy as np

from zoo.export.flatbuffer import read_model, write_model
from zoo.export.sequence_int8 import (OUT_NAME, Built, build_from_export, build_sequence,
                                  identity_exact, op_names, requantize_exact, requantize_ops)
from zoo.core import logs
from zoo.core.flags import int_in, program_name

__all__ = ["load_test_split", "loop_logits", "SequenceRunner", "compare", "interleaved_latency",
           "lstm_reference", "available_runtimes", "smallest_arena_or_none", "build_and_check",
           "percentiles", "main", "Built", "build_sequence", "build_from_export", "op_names",
           "requantize_ops", "requantize_exact", "identity_exact", "read_model", "write_model"]
_log = logging.getLogger(__name__)


def percentiles(seconds) -> dict:
    """Median, p90 and p99 of a list of durations, in microseconds."""
    s = sorted(seconds)
    pick = lambda p: s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]
    return {"median_us": 1e6 * statistics.median(s), "p90_us": 1e6 * pick(90),
            "p99_us": 1e6 * pick(99)}


# ------------------------------------------------------------------------------ test windows
def load_test_split(export_dir: Path, data_dir=None):
    """``(x, y, raw)`` of the export's test split: ``x`` normalised as the export's model
    expects (its ``normalization.json``), ``raw`` un-normalised (for a reference model with its
    own normalization). With ``data_dir`` the split comes from the zoo's task loader (the
    shipped exports carry no ``testset.npz``); else from the export's ``testset.npz``."""
    from zoo.training.tasks.base import Normalization

    from zoo.export.device_bench import load_testset, read_export_card

    card = read_export_card(str(export_dir))
    norm = Normalization.load(Path(export_dir) / (card.normalization or "normalization.json"))
    if data_dir is None:
        x, y = load_testset(str(export_dir), card)
        if x is None:
            raise ValueError(f"{export_dir} has no test set; pass --data-dir")
        return x, np.asarray(y), x * norm.std + norm.mean
    raw, y = _load_task_test(card, data_dir)
    return norm.apply(raw), y, raw


def _load_task_test(card, data_dir):
    from zoo.training.tasks import get_task

    try:
        task = get_task(card.task, **(card.task_options or {}))
        data = task.load(data_dir, seed=0)
    except ValueError:
        # The run's validation options may name subjects a data subset lacks (the shipped
        # runs hold out subjects 3, 11, 19, 26 of the full data); the test split does not
        # depend on them, so the task's defaults load the same test windows.
        data = get_task(card.task).load(data_dir, seed=0)
    return np.asarray(data.test.x, np.float32), np.asarray(data.test.y)


# ------------------------------------------------------------------------------ runtimes
def _step_loop(export_dir: Path, runtime: str):
    from zoo.export.card_schema import read_export_card
    from zoo.export.device_runtime import StepModel

    card = read_export_card(str(export_dir))
    return StepModel(str(export_dir), card, runtime, 1)


def loop_logits(loop, xq_windows) -> np.ndarray:
    """int8 logits of the step loop (`device_runtime.StepModel.run_prepared`: the step model
    invoked T times, its state fed back, then the head) for quantized windows [N, T, 1, d]."""
    return np.concatenate([loop.run_prepared(xq)[0] for xq in xq_windows])


class SequenceRunner:
    """A sequence model (this int8 one, or a float reference) in one runtime, with
    `device_runtime.SequenceModel`'s ``prepare`` / ``predict_prepared`` (so its timing applies),
    returning the raw output (int8 logits here, not dequantized)."""

    def __init__(self, path: Path, runtime: str, arena_bytes: int | None = None):
        from zoo.export.device_runtime import open_model

        self.m = open_model(str(path), runtime, 1, arena_bytes)
        self.dtype, self.quant, self.shape = self.m.input_quant(0)

    def prepare(self, x):
        from zoo.export.device_runtime import quantize

        return quantize(np.asarray(x).reshape(self.shape), self.dtype, self.quant)

    def predict_prepared(self, xq):
        self.m.reset()
        self.m.set(0, xq)
        self.m.invoke()
        return self.m.get(0)


def compare(export_dir: Path, seq_path: Path, x: np.ndarray, y: np.ndarray, runtime: str,
            arena_bytes: int | None = None) -> dict:
    """The one-invoke model against the step loop on every window of ``x`` in ``runtime``: both
    fed the same int8 bytes (x quantized once, with the step model's x_t quantization); their
    raw int8 logits compared element by element."""
    loop = _step_loop(export_dir, runtime)
    seq = SequenceRunner(seq_path, runtime, arena_bytes)
    if seq.quant != tuple(loop.x_quant):
        raise ValueError(f"{seq_path}: input quantization {seq.quant} is not the step model's "
                         f"x_t quantization {loop.x_quant}")
    xq = [loop.prepare(w) for w in x]
    ref = loop_logits(loop, xq)
    got = np.concatenate([seq.predict_prepared(q.reshape(seq.shape)) for q in xq])
    same = np.all(ref == got, axis=1)
    bad = np.flatnonzero(~same)
    return {"runtime": runtime, "windows": len(x), "identical": int(same.sum()),
            "first_mismatch": None if not len(bad) else int(bad[0]),
            "max_abs_diff_lsb": int(np.max(np.abs(ref.astype(int) - got.astype(int)))),
            "accuracy": float(np.mean(np.argmax(got, 1) == y)),
            "loop_accuracy": float(np.mean(np.argmax(ref, 1) == y))}


# ------------------------------------------------------------------------------ latency
def lstm_reference(run_dir: Path, raw_x: np.ndarray, y: np.ndarray, out: Path) -> dict:
    """The stock Keras float LSTM run at ``run_dir`` as a float WHILE sequence model (the
    zoo's converter, static batch 1), written to ``out``; its accuracy on ``raw_x`` normalised
    with the run's own statistics, in ai-edge-litert."""
    from zoo.export.convert import to_tflite, with_batch_size
    from zoo.training.evaluate import load_run

    record, model, norm = load_run(run_dir)
    if record.config.model != "lstm":
        raise ValueError(f"--lstm {run_dir}: a Keras LSTM run expected, got "
                         f"{record.config.model}")
    out.write_bytes(to_tflite(with_batch_size(model, 1)))
    runner = SequenceRunner(out, "litert")
    x = norm.apply(raw_x)
    pred = [int(np.argmax(runner.predict_prepared(runner.prepare(w)))) for w in x]
    from zoo.export.step import recurrent_layers

    return {"path": str(out), "bytes": out.stat().st_size,
            "units": int(recurrent_layers(model)[0].units),
            "accuracy": float(np.mean(np.asarray(pred) == y)), "window": x[0]}


def interleaved_latency(models: dict, reps: int, warmup: int = 5) -> dict:
    """Per-window latency (median / p90 / p99 and min, microseconds) of each model: ``name ->
    (runner, window)``, runner with ``prepare`` / ``predict_prepared`` as in
    `device_bench.benchmark` (the window quantized before timing; the timed call is what a
    caller pays per window: reset, set, invoke(s), get). The models take turns window by window,
    so load from other processes on a shared machine falls on all of them alike; still, a
    longer window is preempted more often, so on a loaded machine the medians penalise the
    slower model and the minimum (the least disturbed window) is reported beside them."""
    import time


    prepared = {name: (runner, runner.prepare(w)) for name, (runner, w) in models.items()}
    for runner, xq in prepared.values():
        for _ in range(warmup):
            runner.predict_prepared(xq)
    times = {name: [] for name in models}
    for _ in range(reps):
        for name, (runner, xq) in prepared.items():
            t0 = time.perf_counter()
            runner.predict_prepared(xq)
            times[name].append(time.perf_counter() - t0)
    return {name: {**percentiles(t), "min_us": 1e6 * min(t)} for name, t in times.items()}


# ------------------------------------------------------------------------------ command line
def available_runtimes() -> list[str]:
    """The installed runtimes among the two this model is checked in, LiteRT and TFLite Micro
    (tflite-runtime is not part of this stack: it stopped at TensorFlow 2.14)."""
    from zoo.export.device_runtime import missing_runtime

    return [name for name in ("litert", "tflite-micro") if missing_runtime(name) is None]


def smallest_arena_or_none(blob: bytes, runtime: str) -> int | None:
    """The smallest TFLite Micro arena for ``blob`` under tflite-micro; None elsewhere."""
    if runtime != "tflite-micro":
        return None
    from zoo.export.micro import smallest_arena

    return smallest_arena(blob)


def build_and_check(args) -> dict:
    """Build, check against the step loop in every runtime, time; the report as a dict. Each
    check is logged at INFO as it finishes."""
    from zoo.export.micro import quiet_stderr

    say = _log.info
    export_dir = Path(args.export_dir)
    out = Path(args.out) if args.out else export_dir / OUT_NAME
    built = build_from_export(export_dir, keep_identity_ops=args.keep_identity_ops)
    blob = built.tflite
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(blob)
    report = {"export_dir": str(export_dir), "out": str(out), "bytes": len(blob),
              "ops": op_names(blob), "runtimes": available_runtimes()}
    say(f"{out}: {len(blob):,} bytes, ops {', '.join(report['ops'])}")
    arena = None
    if "tflite-micro" in report["runtimes"]:
        arena = report["tflm_arena_bytes"] = smallest_arena_or_none(blob, "tflite-micro")
        say(f"  TFLite Micro: smallest arena {arena:,} bytes")
    report["requantize"] = _check_requantize(blob, report["runtimes"], say)
    report["dropped"] = _check_dropped(built.dropped, report["runtimes"], say)
    x, y, raw = load_test_split(export_dir, args.data_dir)
    report["agreement"] = {}
    for runtime in report["runtimes"]:
        with quiet_stderr():  # the TFLM wrapper prints its input-count probing to fd 2
            r = compare(export_dir, out, x, y, runtime, arena)
        report["agreement"][runtime] = r
        say(f"  {runtime}: logits identical to the step loop on {r['identical']}/"
            f"{r['windows']} test windows (max |diff| {r['max_abs_diff_lsb']} LSB); "
            f"accuracy {100 * r['accuracy']:.2f}% (step loop {100 * r['loop_accuracy']:.2f}%)")
    if args.reps:
        report["latency"] = _latency(args, export_dir, out, arena, x, y, raw, say)
    return report


def _check_requantize(blob, runtimes, say) -> list:
    checks = []
    for op in requantize_ops(blob):
        for runtime in runtimes:
            r = {**op, "runtime": runtime, **requantize_exact(op["in"], op["out"], runtime)}
            checks.append(r)
            say(f"  QUANTIZE in {op['subgraph']} ({op['in'][0]:.9g}, {op['in'][1]}) -> "
                f"({op['out'][0]:.9g}, {op['out'][1]}), {runtime}: "
                f"{256 - r['differ']}/256 int8 values as the step loop requantizes them")
    return checks


def _check_dropped(dropped, runtimes, say) -> list:
    checks = []
    for op in dropped:
        for runtime in runtimes:
            r = {**op, "runtime": runtime, **identity_exact(op, runtime)}
            checks.append(r)
            bound = "" if op["constant"] is None else f" against {op['constant']}"
            say(f"  left out {op['op']}{bound} in {op['subgraph']} (scale "
                f"{op['quant'][0]:.9g}, zero point {op['quant'][1]}): {runtime} returns "
                f"{256 - r['differ']}/256 int8 values unchanged")
    return checks


def _latency(args, export_dir, out, arena, x, y, raw, say) -> dict:
    from zoo.export.micro import quiet_stderr

    refs = {}
    for n, run_dir in enumerate(args.lstm or []):
        ref = lstm_reference(Path(run_dir), raw, y,
                             out.with_name(f"{out.stem}.lstm-reference-{n}.tflite"))
        name = f"lstm{ref['units']}_float" + ("" if n == 0 else f"_{n}")
        refs[name] = ref
        say(f"  reference {name}: Keras float LSTM-{ref['units']} WHILE model ({run_dir}), "
            f"{ref['bytes']:,} bytes, accuracy {100 * ref['accuracy']:.2f}% (LiteRT)")
    result = {"reps": args.reps,
              "references": {k: {f: v for f, v in r.items() if f != "window"}
                             for k, r in refs.items()}}
    for runtime in available_runtimes():
        with quiet_stderr():  # the TFLM wrapper prints its input-count probing to fd 2
            models = {"sequence_int8": (SequenceRunner(out, runtime, arena), x[0]),
                      "step_loop_int8": (_step_loop(export_dir, runtime), x[0])}
            for name, ref in refs.items():
                models[name] = (SequenceRunner(Path(ref["path"]), runtime,
                                               _lstm_arena(ref, runtime)), ref["window"])
        t = result[runtime] = interleaved_latency(models, args.reps)
        line = ", ".join(f"{k} {v['median_us']:.0f} / {v['p90_us']:.0f}" for k, v in t.items())
        say(f"  {runtime} per window (median / p90 us, {args.reps} interleaved reps): {line}")
        result[runtime + " ratios"] = _ratios(t, refs, runtime, say)
    return result


def _ratios(timing: dict, refs: dict, runtime: str, say) -> dict:
    """Per-window time of the int8 one-invoke model and of the int8 step loop over each float
    LSTM's, of the medians and of the minima (below 1: faster than the LSTM)."""
    out = {}
    for name in refs:
        for ours in ("sequence_int8", "step_loop_int8"):
            for stat in ("median_us", "min_us"):
                out[f"{ours} / {name} ({stat[:-3]})"] = timing[ours][stat] / timing[name][stat]
        say(f"  {runtime}: int8 one-invoke / {name} = "
            f"{out[f'sequence_int8 / {name} (median)']:.2f} (medians), "
            f"{out[f'sequence_int8 / {name} (min)']:.2f} (minima); int8 step loop / {name} "
            f"= {out[f'step_loop_int8 / {name} (median)']:.2f} (medians)")
    return out


def _lstm_arena(ref, runtime):
    if runtime == "tflite-micro" and "arena" not in ref:
        ref["arena"] = smallest_arena_or_none(Path(ref["path"]).read_bytes(), runtime)
    return ref.get("arena") if runtime == "tflite-micro" else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=program_name("zoo.experiments.sequence_int8"),
                                     description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("export_dir", help="a `zoo export --form step --quantize int8` folder")
    parser.add_argument("--out", help=f"the model to write (default EXPORT_DIR/{OUT_NAME})")
    parser.add_argument("--data-dir", help="dataset folder for the test split (the zoo's task "
                                           "loader); default: the export's testset.npz")
    parser.add_argument("--lstm", action="append", metavar="RUN_DIR",
                        help="a Keras LSTM run directory: time its float WHILE model beside the "
                             "int8 one, in the same runtimes and run (repeatable)")
    parser.add_argument("--keep-identity-ops", action="store_true",
                        help="copy every op of the step, also int8 clamps that change no value")
    parser.add_argument("--reps", type=int_in(0), default=200,
                        help="timed windows per model (0: none)")
    parser.add_argument("--json", help="also write the report here")
    args = parser.parse_args(argv)
    from zoo.export.device_checks import BenchError

    try:
        report = build_and_check(args)
    except (ValueError, FileNotFoundError, BenchError) as err:
        print(f"sequence_int8: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(report, indent=1, default=float))
    exact = all(r["identical"] == r["windows"] for r in report["agreement"].values())
    return 0 if exact else 1


if __name__ == "__main__":
    logs.configure()  # run as a script: the checks, as `zoo bench sequence-int8` prints them
    raise SystemExit(main())
