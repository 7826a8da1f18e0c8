"""Length generalisation on 003's regular languages: accuracy at the longest training length L and
at the test length (default 2L) of runs trained on lengths <= L.

    python -m zoo.experiments.analysis.lengths runs/tomita4-lstm runs/tomita4-fastrnn ...

prints one markdown row per run. Strings are fresh draws (seed ``split_seed + 1000``), half
accepted and half rejected, all of exactly the length in the column.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from zoo.core.flags import int_in


def length_accuracy(run_dir, n: int = 1000) -> dict:
    """``{"model", "task", "L", "test_length", "acc_L", "acc_test", "parameters"}`` of a run.

    Args:
        run_dir: a finished `zoo train` run on a regular-language task.
        n: strings per length.
    """
    from zoo.training.evaluate import load_run
    from zoo.training.tasks import get_task
    from zoo.training.tasks.regular import RegularLanguage

    record, model, norm = load_run(run_dir)
    config = record.config
    task = get_task(config.task, **config.task_options)  # the options it resolved to
    if not isinstance(task, RegularLanguage):
        raise ValueError(f"{run_dir}: task {config.task!r} is not a regular-language task")
    o = task.options()
    out = {"model": config.model, "task": task.name, "L": o["max_length"],
           "test_length": o["test_length"], "parameters": int(model.count_params())}
    for key, length in (("acc_L", o["max_length"]), ("acc_test", o["test_length"])):
        split = task.sample(n, [length], [o["split_seed"] + 1000, length])
        pred = model.predict(norm.apply(split.x), batch_size=256, verbose=0).argmax(-1)
        out[key] = float(np.mean(pred == split.y))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("run_dirs", nargs="+", help="runs on regular-language tasks")
    parser.add_argument("--n", type=int_in(1), default=1000,
                        help="strings per length (default 1000)")
    args = parser.parse_args(argv)
    print("| task | model | parameters | L | acc. at L (%) | test length | acc. at test length (%) |")
    print("|---|---|---|---|---|---|---|")
    for run in args.run_dirs:
        try:
            r = length_accuracy(Path(run), args.n)
        except (ValueError, FileNotFoundError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"| {r['task']} | {r['model']} | {r['parameters']:,} | {r['L']} | "
              f"{100 * r['acc_L']:.1f} | {r['test_length']} | {100 * r['acc_test']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
