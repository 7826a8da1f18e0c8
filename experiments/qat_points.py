"""Which rounding of an int8 step costs accuracy: each quantization point alone, and all but it.

    zoo bench qat-points bench/sweeps/har2-levers/har2/sirnn/rot35_e30/fold2

The run's cell is run in its QAT graph (`zoo.qat`) on the run's validation split (people the run
did not train on), with only some of its tensors rounded to their int8 grids; the rest stay
float. The fixed points (the state's grid ``[0, state_clip]``, which a float model trained with
``state_quant_bits=8`` rounds too) are kept in every row, so the row "fixed" is that float model
and the row "all" is the QAT graph as an int8 export computes it. A float run is put into its
QAT graph as a QAT fine-tune starts (`zoo.training.warm_start`: its weights, the ranges calibrated on
its training windows), so the table is the post-training quantization of that run, point by
point; a QAT run is shown with its trained ranges. It plays the part of TFLite's quantization
debugger for a step that the converter sees as one graph per step.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path

import numpy as np

from zoo.core import logs
from zoo.core.flags import number_in

_log = logging.getLogger(__name__)


@dataclasses.dataclass
class Row:
    name: str
    points: tuple[str, ...]
    weights: bool
    accuracy: float


def qat_twin(run_dir: Path, config, task, model, x_train: np.ndarray,
             percentile: float | None = None):
    """``model`` when it trains with QAT; else its QAT twin (``config``: the run's
    `zoo.training.run_record.RunConfig`) with its weights and the ranges
    calibrated on ``x_train`` (as a QAT fine-tune of the run starts), at ``percentile`` of each
    tensor (None: the twin's ``qat_percentile``)."""
    import dataclasses

    from zoo.training.trainer import build_model
    from zoo.training.warm_start import warm_start_weights
    from zoo import qat

    if qat.qat_cells(model):
        return model
    settings = config.settings
    settings = dataclasses.replace(settings, model_options={**settings.model_options,
                                                            "qat": "int8"})
    twin = build_model(settings, task)  # as the fine-tune builds it
    twin.set_weights(warm_start_weights(twin, run_dir))
    qat.calibrate_ranges(twin, qat.tracking_sample(x_train, config.seed), percentile)
    return twin


def point_rows(model, x: np.ndarray, y: np.ndarray) -> list[Row]:
    """The accuracy on ``(x, y)`` of ``model``'s QAT cell with: its fixed points only
    ("fixed"), its weights too ("weights"), each tracked point alone ("only P") and every
    point and the weights but one ("all but P"), and everything ("all")."""
    from zoo import qat

    cells = qat.qat_cells(model)
    if len(cells) != 1:
        raise ValueError(f"{model.name}: one QAT cell expected, found {len(cells)}")
    q = cells[0].quant_points
    fixed = tuple(n for n in q.names if n in q.fixed)
    tracked = [n for n in q.names if n not in q.fixed]
    plan = [("fixed", fixed, False), ("weights", fixed, True)]
    plan += [(f"only {n}", fixed + (n,), False) for n in tracked]
    plan += [(f"all but {n}", tuple(m for m in q.names if m != n), True) for n in tracked]
    plan += [("all but weights", tuple(q.names), False), ("all", tuple(q.names), True)]
    rows = []
    for name, points, weights in plan:
        with qat.only_points(cells[0], points, weights):
            model.make_predict_function(force=True)  # re-traced with these points
            predicted = model.predict(x, batch_size=512, verbose=0).argmax(-1)
        rows.append(Row(name, points, weights, 100 * float(np.mean(predicted == y))))
        _log.info(f"{name}: {rows[-1].accuracy:.2f}%")
    model.make_predict_function(force=True)
    return rows


def run_rows(run_dir: Path, data_dir=None, percentile: float | None = None) -> list[Row]:
    """`point_rows` of the run in ``run_dir`` on its validation split (a float run's twin
    calibrated at ``percentile``)."""
    from zoo.training.evaluate import load_run_with_data
    from zoo import qat

    if percentile is not None:
        qat.check_percentile(percentile)  # before the run and its data are loaded
    record, model, norm, task, data = load_run_with_data(run_dir, data_dir, need_val=True)
    if percentile is not None and qat.qat_cells(model):
        raise ValueError(f"{run_dir} trained with QAT: its ranges are its own; --percentile "
                         "calibrates a float run's twin")
    x_train = norm.apply(data.train.x).astype(np.float32)
    twin = qat_twin(Path(run_dir), record.config, task, model, x_train, percentile)
    return point_rows(twin, norm.apply(data.val.x).astype(np.float32), np.asarray(data.val.y))


def table(rows: list[Row]) -> str:
    base = rows[0].accuracy
    lines = ["| rounded | val % | against fixed only (points) |", "|---|---|---|"]
    lines += [f"| {r.name} | {r.accuracy:.2f} | {r.accuracy - base:+.2f} |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="zoo bench qat-points",
                                     description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("run", type=Path, help="a finished run with a validation split "
                        "(e.g. a `zoo sweep cv` trial) of a cell that has a QAT graph")
    parser.add_argument("--data-dir", help="dataset (default: where the run found its data)")
    parser.add_argument("--percentile", type=number_in(50.0, 100.0, low_open=True),
                        help="a float run's ranges at this percentile of each tensor "
                        "(default 99.99, the qat_percentile default)")
    args = parser.parse_args(argv)
    from zoo.training.rundir import RunDirectory

    try:  # a run that is not one, or data not found (DataNotFoundError), in one line
        RunDirectory(args.run).check_finished()
        rows = run_rows(args.run, args.data_dir, args.percentile)
    except (FileNotFoundError, ValueError) as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2
    print(table(rows))
    return 0


if __name__ == "__main__":
    logs.configure()
    raise SystemExit(main())
