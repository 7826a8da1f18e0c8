"""Training throughput (sequences/s) of every registered model at equal hidden size, one run.

    python -m training.benchmarks.throughput --data-dir ../shared/data/har --units 80

Each model trains on real HAR-2 batches (128 x 9) with Adam; after warm-up steps (tracing,
compilation) ``--steps`` optimizer steps are timed, repeated ``--repeats`` times, and the median
is reported with its ratio to Keras LSTM measured in the same process.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="har2")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--units", type=int, default=80)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", nargs="+")
    args = parser.parse_args(argv)

    import keras
    import numpy as np

    import zoo
    from training.tasks import get_task
    from training.trainer import loss_and_metrics

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
        for _ in range(3):
            model.train_on_batch(x, y)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            for _ in range(args.steps):
                model.train_on_batch(x, y)
            times.append(time.perf_counter() - start)
        rate = args.steps * len(x) / statistics.median(times)
        rows.append((name, model.count_params(), rate))
        print(f"{name:<20} {model.count_params():>7} params  {rate:8.0f} seq/s", flush=True)
    lstm = dict((n, r) for n, _, r in rows).get("lstm")
    print(f"\n| model | parameters | train seq/s | vs LSTM |\n|---|---|---|---|")
    for name, params, rate in rows:
        ratio = f"{rate / lstm:.2f}x" if lstm else "-"
        print(f"| {name} | {params:,} | {rate:.0f} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
