"""The keyword-spotting table in one run: int8 exports of the ``google12_testset`` runs, their
accuracy (float and int8), size, TFLite Micro arena and latency (LiteRT and TFLite Micro) next to
the published TinyML KWS anchors, plus a Pareto plot.

    python -m zoo.experiments.kws_bench runs/kws/selection_rnn.json runs/kws/selection_dscnn.json \\
        --out bench/kws --plot bench/kws/kws_pareto.png

``selection.json`` is written by ``zoo.experiments.benchmarks.kws``. Recurrent models are exported as
streaming step models (``--form step``: one feature frame per invoke), the DS-CNN as a sequence
model (one 99-frame window per invoke). Every run (seed) is exported and scored; latency is timed
on the first run of each model. Per-second cost: a step model pays 99 step invokes per second of
audio (the per-step median x 99 is printed next to the measured Python loop over 99 invokes,
which adds interpreter round trips); the DS-CNN pays one window per second when it answers once a
second and 100 windows when it answers every 10 ms.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from pathlib import Path

import numpy as np

from zoo.export import device_bench, device_runtime
from zoo.export.card_schema import ModelCard, read_export_card
from zoo.export.exportdir import ExportDirectory
from zoo.core import logs
from zoo.core.flags import int_in
from zoo.training.rundir import RunDirectory

FRAMES = 99
# Published anchors: name, int8 bytes, accuracy %, note.
ANCHORS = [
    ("FastGRNN, Google-12 (Kusupati et al. 2018)", 5.5 * 1024, 92.10, "5.5 KB model"),
    ("MLPerf Tiny DS-CNN int8 (reference)", 53936, 90.0, "90 % is the target, not a score"),
    ("Arm ML-zoo DS-CNN-S int8", 47616, 93.11, ""),
    ("iRNN K=5, Google-12 (Kag et al. 2020)", None, 94.71, "float"),
]


def frontend_cost_us(repeats: int = 30) -> dict:
    """Median host cost of the numpy front end per frame (one 1 s clip, divided by 99)."""
    from zoo.training.data.audio import FbankFrontend

    fe = FbankFrontend()
    clip = np.random.default_rng(0).integers(-3000, 3000, (1, fe.clip_samples)).astype(np.int16)
    fe(clip)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fe(clip)
        times.append(time.perf_counter() - t0)
    per_clip = statistics.median(times) * 1e6
    return {"per_clip_us": per_clip, "per_frame_us": per_clip / fe.num_frames,
            "runtime": "numpy (this host), batch of one 1 s clip"}


def export_one(run_dir: str, out: Path, form: str, reuse: bool = False) -> ModelCard:
    """int8 export of ``run_dir`` into ``out`` (or, with ``reuse``, the export already there when
    its card names the same run, form and int8)."""
    from zoo.export.exporter import export_run

    export = ExportDirectory(out)
    if reuse and export.has_card():
        card = read_export_card(str(export.root))
        if (card.run_dir == str(Path(run_dir).resolve()) and card.form == form
                and card.quantize == "int8" and card.frontend is not None):
            return card

    with logs.quieted():  # the table is this script's output, not the export's progress
        return export_run(run_dir, out, quantize="int8", form=form, allow_drop=True,
                          overwrite=True)  # its frontend entry: zoo.export.sources.frontend_entry


def time_export(out: Path, runs: int) -> dict:
    """Median latency (us) per invoke on LiteRT and TFLite Micro, 1 thread, of the export in
    ``out``."""
    export = ExportDirectory(out)
    card = read_export_card(str(export.root))
    example = export.read_testset(card)[0][0]
    timings = {}
    for runtime in ("litert", "tflite-micro"):
        model = device_runtime.open_export(str(out), card, runtime, 1)
        r = device_bench.benchmark(model, card.form, example, runs, warmup=10)
        per_seq = r["per_sequence"]["median_us"]
        if card.form == "step":
            step = r["per_step"]["median_us"]
            timings[runtime] = {"per_frame_us": step, "per_second_us": step * FRAMES,
                                "python_loop_99_us": per_seq}
        else:
            timings[runtime] = {"per_window_us": per_seq, "per_second_us": per_seq,
                                "every_10ms_per_second_us": 100 * per_seq}
    return timings


def _mean_sd(values):
    vals = [100 * v for v in values]
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return f"{statistics.mean(vals):.2f} ± {sd:.2f} (n={len(vals)})"


def table(rows: dict, fe: dict) -> str:
    head = ("| model | params | float acc % (all runs) | int8 acc % (LiteRT, exported runs) | int8 bytes | TFLM arena B | "
            "per frame us LiteRT / TFLM | per second us LiteRT / TFLM |")
    lines = [head, "|" + "---|" * 8]
    for name, r in rows.items():
        t = r["timing"]
        if r["form"] == "step":
            frame = f"{t['litert']['per_frame_us']:.1f} / {t['tflite-micro']['per_frame_us']:.1f}"
            arena = f"{r['arena']:,} + head {r['head_arena']:,}"
        else:
            frame = (f"window {t['litert']['per_window_us']:.0f} / "
                     f"{t['tflite-micro']['per_window_us']:.0f}")
            arena = f"{r['arena']:,}"
        sec = f"{t['litert']['per_second_us']:.0f} / {t['tflite-micro']['per_second_us']:.0f}"
        if r["form"] == "sequence":
            sec += (f" (every 10 ms: {t['litert']['every_10ms_per_second_us']:.0f} / "
                    f"{t['tflite-micro']['every_10ms_per_second_us']:.0f})")
        lines.append(f"| {name} (lr {r['lr']:g}) | {r['params']:,} | {_mean_sd(r['float'])} | {_mean_sd(r['int8'])}"
                     f" | {r['bytes']:,} | {arena} | {frame} | {sec} |")
    for name, size, acc, note in ANCHORS:
        size_txt = f"{size:,.0f}" if size else "-"
        lines.append(f"| *{name}* (published{'; ' + note if note else ''}) | - | "
                     f"{acc:.2f} | - | {size_txt} | - | - | - |")
    lines.append("\nTFLite Micro vs LiteRT (int8), on the first test sequences (mean over runs):\n")
    lines.append("| model | sequences | TFLM acc % | LiteRT acc % (same) | argmax agreement % |")
    lines.append("|---|---|---|---|---|")
    for name, r in rows.items():
        m = lambda k: 100 * statistics.mean(r[k])
        lines.append(f"| {name} | {r['tflm_sequences']} | {m('int8_tflm'):.2f} | "
                     f"{m('int8_litert_same'):.2f} | {m('tflm_agreement'):.2f} |")
    lines.append(f"\nFront end (numpy on this host): {fe['per_frame_us']:.1f} us per frame "
                 f"({fe['per_clip_us']:.0f} us per 1 s clip of 99 frames).")
    return "\n".join(lines)


def pareto_plot(rows: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, r in rows.items():
        acc = [100 * v for v in r["int8"]]
        ax.errorbar(r["bytes"], statistics.mean(acc), yerr=statistics.stdev(acc) if len(acc) > 1
                    else 0, fmt="o", capsize=3, label=f"{name} (ours, int8)")
    for name, size, acc, _ in ANCHORS:
        if size:
            ax.plot(size, acc, "x", markersize=9, label=f"{name} (published)")
    ax.set_xscale("log")
    ax.set_xlabel("int8 model bytes (log)")
    ax.set_ylabel("Google-12 test accuracy %")
    ax.set_title("KWS: accuracy vs bytes (ours: ~1,566 training clips; published: 22,246)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="KWS table: int8 exports, accuracy, bytes, arena, "
                                            "latency, next to the published anchors",
                                            allow_abbrev=False)
    p.add_argument("selection", nargs="+",
                   help="selection files from zoo.experiments.benchmarks.kws (a later file's models "
                        "replace an earlier one's)")
    p.add_argument("--out", default="bench/kws")
    p.add_argument("--plot", default=None, help="write the Pareto plot (png) here")
    p.add_argument("--runs", type=int_in(1), default=200, help="timed invokes per runtime")
    p.add_argument("--jobs", type=int_in(1), default=3, help="exports in parallel processes")
    p.add_argument("--all-seeds", action="store_true",
                   help="export every run (seed); by default only the first run of each model "
                        "is exported, and the float column still covers every run")
    p.add_argument("--skip", nargs="*", default=[], help="models of the selection to leave out")
    p.add_argument("--reuse", action="store_true",
                   help="keep an export already in --out when its card names the same run")
    return p


def _selection(args) -> dict:
    selection = {}
    for path in args.selection:
        if not Path(path).is_file():
            raise SystemExit(f"error: no such selection file: {path} (zoo.experiments.benchmarks.kws "
                             "writes one per model family into its --out folder)")
        try:
            selection.update(json.loads(Path(path).read_text()))
        except (ValueError, TypeError) as error:
            raise SystemExit(f"error: {path} is not a selection file (a JSON object of models "
                             f"written by zoo.experiments.benchmarks.kws): {error}") from None
    for name in args.skip:
        selection.pop(name, None)
    return selection


def _form(model: str) -> str:
    # The DS-CNN has no state. The zoo's step export needs one state vector, and Keras's LSTM
    # carries two (h, c); its int8 sequence export crashes the converter (TF bug #75140), so the
    # LSTM is left out with --skip lstm.
    return "sequence" if model in ("dscnn", "lstm") else "step"


def export_all(selection: dict, args, out: Path) -> dict[str, list[dict]]:
    """model name -> the cards of its exported runs (every seed with --all-seeds, else the
    first), exported in ``args.jobs`` parallel processes."""
    exported_runs = {name: sel["runs"] if args.all_seeds else sel["runs"][:1]
                     for name, sel in selection.items()}
    jobs = [(run, out / f"{name}-{i}", _form(selection[name]["model"]), args.reuse)
            for name, runs in exported_runs.items() for i, run in enumerate(runs)]
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:  # CPU-bound conversions
        exported = pool.starmap(export_one, jobs, chunksize=1)
    cards, start = {}, 0
    for name, runs in exported_runs.items():
        cards[name], start = exported[start:start + len(runs)], start + len(runs)
    return cards


def table_row(name: str, sel: dict, cards: list[ModelCard], args, out: Path) -> dict:
    """One model's row: sizes of its first export, accuracies of every export, the float
    accuracy of every run (seed) as `zoo train` measured it, and the first export's latency."""
    first = cards[0]
    micro = [c.tflite_micro for c in cards]
    return {
        "form": _form(sel["model"]), "params": first.parameters,
        "bytes": first.total_bytes, "arena": first.arena_bytes,
        "head_arena": first.head_arena_bytes,
        "float": [RunDirectory(r).record().metrics.required("test_accuracy", "the KWS table")
                  for r in sel["runs"]],
        "int8": [c.accuracy.tflite for c in cards],
        "int8_tflm": [m.accuracy for m in micro],
        "int8_litert_same": [m.litert_accuracy_same_sequences for m in micro],
        "tflm_agreement": [m.argmax_agreement_with_litert for m in micro],
        "tflm_sequences": micro[0].test_sequences,
        "timing": time_export(out / f"{name}-0", args.runs), "lr": sel["lr"]}


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    selection, out = _selection(args), Path(args.out)
    cards = export_all(selection, args, out)
    rows = {}
    for name, sel in selection.items():
        rows[name] = table_row(name, sel, cards[name], args, out)
        print(f"{name}: {json.dumps({k: v for k, v in rows[name].items() if k != 'timing'})}",
              flush=True)
    fe = frontend_cost_us()
    (out / "results.json").write_text(json.dumps({"rows": rows, "frontend": fe}, indent=1))
    print(table(rows, fe))
    if args.plot:
        pareto_plot(rows, Path(args.plot))
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
