"""Training throughput (sequences/s) of every registered model at equal hidden size, one run.

    python -m zoo.experiments.benchmarks.throughput --data-dir ../shared/data/har --units 80
    KERAS_BACKEND=jax python -m zoo.experiments.benchmarks.throughput --data-dir ... --compare-cpu

Each model trains on real HAR-2 batches (128 x 9) with Adam; after warm-up steps (tracing,
compilation) ``--steps`` optimizer steps are timed, repeated ``--repeats`` times, and the median
is reported with its ratio to Keras LSTM measured in the same process.

``--compare-cpu`` measures the same models again in a child process that sees no GPU (same
machine, backend and batches) and prints both rates and their ratio in one table: the
GPU-vs-CPU comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from zoo.training.config import MAX_UNITS
from zoo.core.flags import int_in


def measure(args) -> dict:
    """{"device": ..., "rows": [{"model", "parameters", "seq_per_s"}]} for this process's device."""
    import keras

    import zoo
    from zoo.training.tasks import get_task
    from zoo.training.provenance import gpu_names
    from zoo.training.trainer import loss_and_metrics

    task = get_task(args.task)
    data = task.load(args.data_dir)
    x = data.normalization.apply(data.train.x).astype("float32")[: args.batch_size]
    y = data.train.y[: args.batch_size]
    rows = []
    for name in args.models or zoo.list_models():
        keras.utils.set_random_seed(0)
        model = zoo.create_model(name, task.input_shape, task.num_classes, units=args.units)
        loss, metrics = loss_and_metrics(task.kind)
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss, metrics=metrics)
        rate = _steps_per_second(model, x, y, args.steps, args.repeats) * len(x)
        rows.append({"model": name, "parameters": model.count_params(), "seq_per_s": rate})
        print(f"{name:<20} {model.count_params():>7} params  {rate:8.0f} seq/s", flush=True)
    device = ", ".join(gpu_names()) or f"CPU ({os.cpu_count()} cores)"
    return {"device": device, "backend": keras.backend.backend(), "rows": rows}


def _steps_per_second(model, x, y, steps: int, repeats: int) -> float:
    for _ in range(3):  # tracing and compilation stay out of the timing
        model.train_on_batch(x, y)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    return steps / statistics.median(times)


def measure_on_cpu(argv: list[str]) -> dict:
    """The same measurement in a child process from which every GPU is hidden."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cpu.json")
        child = [a for a in argv if a != "--compare-cpu"] + ["--json", out]
        subprocess.run([sys.executable, "-m", "zoo.experiments.benchmarks.throughput", *child],
                       env=env, check=True)
        with open(out) as f:
            return json.load(f)


def table(result: dict) -> str:
    lstm = {r["model"]: r["seq_per_s"] for r in result["rows"]}.get("lstm")
    lines = [f"{result['device']}, backend {result['backend']}", "",
             "| model | parameters | train seq/s | vs LSTM |", "|---|---|---|---|"]
    for r in result["rows"]:
        ratio = f"{r['seq_per_s'] / lstm:.2f}x" if lstm else "-"
        lines.append(f"| {r['model']} | {r['parameters']:,} | {r['seq_per_s']:.0f} | {ratio} |")
    return "\n".join(lines)


def comparison_table(here: dict, cpu: dict) -> str:
    cpu_rates = {r["model"]: r["seq_per_s"] for r in cpu["rows"]}
    lines = [f"here: {here['device']}; cpu: {cpu['device']}; backend {here['backend']}", "",
             "| model | parameters | here seq/s | CPU seq/s | here / CPU |", "|---|---|---|---|---|"]
    for r in here["rows"]:
        c = cpu_rates[r["model"]]
        lines.append(f"| {r['model']} | {r['parameters']:,} | {r['seq_per_s']:.0f} | {c:.0f} | "
                     f"{r['seq_per_s'] / c:.2f}x |")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--task", default="har2")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--units", type=int_in(1, MAX_UNITS), default=80)
    parser.add_argument("--batch-size", type=int_in(1), default=128)
    parser.add_argument("--steps", type=int_in(1), default=10)
    parser.add_argument("--repeats", type=int_in(1), default=3)
    parser.add_argument("--models", nargs="+")
    parser.add_argument("--json", help="also write the measurement here")
    parser.add_argument("--compare-cpu", action="store_true",
                        help="measure again with every GPU hidden and print both side by side")
    args = parser.parse_args(argv)

    result = measure(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    print()
    print(comparison_table(result, measure_on_cpu(argv)) if args.compare_cpu else table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
