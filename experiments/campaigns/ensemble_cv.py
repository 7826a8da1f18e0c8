"""The validation accuracy of an ensemble of CV runs, fold by fold: each fold's members (run
directories with a ``{fold}`` placeholder, e.g. a distillation teacher of ``zoo sweep cv``) score
that fold's validation subjects, and the ensemble is the mean of their softmax probabilities,
as `zoo.training.distill` averages its teachers (at temperature 1).

    python -m zoo.experiments.campaigns.ensemble_cv --data-dir DATA --folds 5 \\
        bench/sweeps/har2-levers-baselines/har2/gru/rot35_e30/fold{fold} \\
        bench/sweeps/har2-levers/har2/sirnn/rot35_e30/fold{fold}

Each member's own accuracy is printed beside it: it equals the validation accuracy its results
file records for the model kept, which checks that the split is the one the run validated on.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from zoo.core.flags import int_in


def fold_probabilities(run_dir: str, data_dir) -> tuple[np.ndarray, np.ndarray]:
    """(softmax probabilities, labels) of one run on its own validation split."""
    import keras

    from zoo.training.evaluate import load_run

    record, model, norm = load_run(run_dir)
    val = record.config.make_task().load(data_dir, seed=record.config.seed).val
    logits = model.predict(norm.apply(val.x).astype("float32"), batch_size=256, verbose=0)
    return np.asarray(keras.ops.softmax(logits, axis=-1)), val.y


def ensemble_cv(members: list[str], folds: int, data_dir) -> list[dict]:
    """Per fold: each member's validation accuracy and the ensemble's (percent)."""
    rows = []
    for fold in range(folds):
        probs, labels = [], None
        for member in members:
            p, y = fold_probabilities(member.format(fold=fold), data_dir)
            if labels is not None and not np.array_equal(y, labels):
                raise SystemExit(f"{member.format(fold=fold)}: another validation split than "
                                 f"{members[0].format(fold=fold)} (a different fold or task)")
            probs.append(p)
            labels = y
        members_acc = [100 * float(np.mean(p.argmax(-1) == labels)) for p in probs]
        ensemble = 100 * float(np.mean(np.mean(probs, axis=0).argmax(-1) == labels))
        rows.append({"fold": fold, "members": members_acc, "ensemble": ensemble})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("members", nargs="+", help="run directories with {fold}")
    parser.add_argument("--folds", type=int_in(2), required=True, help="the sweeps' --folds")
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args(argv)
    rows = ensemble_cv(args.members, args.folds, args.data_dir)
    print("| fold | " + " | ".join(f"member {i + 1} %" for i in range(len(args.members)))
          + " | ensemble % |")
    print("|---|" + "---|" * (len(args.members) + 1))
    for r in rows:
        print(f"| {r['fold']} | " + " | ".join(f"{a:.2f}" for a in r["members"])
              + f" | {r['ensemble']:.2f} |")
    columns = list(zip(*[r["members"] for r in rows])) + [[r["ensemble"] for r in rows]]
    print("| mean ± sd | " + " | ".join(f"{statistics.mean(c):.2f} ± {statistics.stdev(c):.2f}"
                                         for c in columns) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
