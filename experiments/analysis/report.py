"""``zoo analyze``: every measurement of this package on one trained model, as a report."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np

from zoo.experiments.analysis import gradients, memory, stability, truncation
from zoo.experiments.analysis.equilibrium import irnn_report
from zoo.experiments.analysis.stepper import CellStepper, flatten_steps
from zoo.core import storage
from zoo.irnn import IRNNCell

_log = logging.getLogger(__name__)

DEFAULTS = {"jacobian_sequences": 16, "sensitivity_sequences": 64, "max_sequences": 2000,
            "epsilons": (1.0, 0.1, 0.01), "regime_tolerance": 0.01, "ridge": 1e-3, "folds": 5,
            "seed": 0}


def _subsample(n: int, size: int, rng) -> np.ndarray:
    return np.sort(rng.choice(n, size=min(size, n), replace=False))


def _jacobian_part(stepper, x_sub, options) -> tuple[dict, dict]:
    """Stability and gradients-through-time from the Jacobians along ``x_sub``'s trajectories."""
    n, steps = x_sub.shape[:2]
    traj = stepper.trajectory(x_sub)
    x_rows, state_rows = flatten_steps(traj, x_sub)
    j_state, j_input = stepper.jacobians(x_rows, state_rows)
    stab = {"contraction": stability.contraction_report(j_state, options["regime_tolerance"]),
            "recurrence": stability.recurrence_report(stepper.cell, steps),
            "input_lipschitz": float(stability.spectral_norms(j_input).max())}
    if "memory_factor" not in stab["recurrence"] and stab["recurrence"].get("sigma_max"):
        # Not an Elman step: 002's z is the step's Lipschitz constant, measured on visited states.
        stab["recurrence"]["memory_factor_measured"] = stability.memory_factor(
            stab["contraction"]["max"], steps)
    if isinstance(stepper.cell, IRNNCell):
        stab["irnn"] = irnn_report(stepper.cell, x_rows, state_rows)
    curve = gradients.state_gradient_curve(j_state.reshape(n, steps, *j_state.shape[1:]))
    return stab, gradients.gradient_report(curve)


def _zero_step_norm(stepper) -> float:
    """||f(0, 0)||: the state one step from zero with a zero input (the biases' drive)."""
    _, new = stepper.step(np.zeros((1, stepper.rnn.input.shape[-1]), "float32"),
                          stepper.initial_states(1))
    return float(np.linalg.norm(np.asarray(stepper.pack(new), dtype=np.float64)))


def _truncation_part(stepper, x, y, kind, stab, options) -> dict:
    steps = x.shape[1]
    result = truncation.truncated_scores(stepper, x, y, kind, truncation.window_grid(steps))
    h_full = result.pop("h_full")
    lam = stab["contraction"]["max"]
    b_x = float(np.linalg.norm(x, axis=-1).max())
    head = stepper.head_matrix()
    l_f = None if head is None else float(np.linalg.norm(head, 2))
    b_s = truncation.state_bound(lam, stab["input_lipschitz"], b_x, _zero_step_norm(stepper))
    result.update({
        "metric": "mse" if kind == "regression" else "accuracy",
        "smallest_k_within_0.5": truncation.smallest_window(result, kind, 0.5),
        "lambda": lam, "L_x": stab["input_lipschitz"], "B_x": b_x, "L_f": l_f,
        "state_bound": b_s,
        "lemma1_bound": None if b_s is None else [float(lam ** k * b_s) for k in result["k"]],
        "k_eps": {str(eps): (truncation.window_bound(lam, l_f, b_s, eps) if l_f else None)
                  for eps in options["epsilons"]},
    })
    return result, h_full


def _memory_part(h_final: np.ndarray, x: np.ndarray, options: dict) -> dict:
    """The ridge probe from h_T to x_{T-l+1} by lag l, next to the same probe from the last
    input alone: autocorrelated inputs (sensor signals) make x_{T-l} predictable without any
    memory, and the baseline curve shows how much."""
    probe = dict(ridge=options["ridge"], folds=options["folds"], seed=options["seed"])
    r2 = memory.memory_curve(h_final, x, **probe)
    baseline = memory.memory_curve(x[:, -1], x, **probe)
    return {"r2_by_lag": [float(v) for v in r2],
            "baseline_last_input_r2_by_lag": [float(v) for v in baseline],
            "ridge": options["ridge"], "folds": options["folds"],
            "last_lag_r2_above_0.5": _last_above(r2, 0.5)}


def analyze_model(model, x: np.ndarray, y: np.ndarray, kind: str = "classification",
                  **options) -> dict:
    """Every measurement on ``model`` with the (normalised) sequences ``x`` and targets ``y``.

    Args:
        model: ``input -> recurrent layer -> head`` (as `zoo.create_model` builds it).
        x: (n, T, d) float32 inputs, normalised as the model was trained.
        y: class ids (n,) (or (n, T) for per-step heads: the last step is scored) or regression
            targets.
        kind: the task kind: ``"classification"``, ``"regression"`` or ``"sequence"``.
        **options: see ``DEFAULTS``: ``jacobian_sequences`` (sequences whose every step gets a
            Jacobian), ``sensitivity_sequences``, ``max_sequences`` (cap on the sequences for
            truncation and the memory probe), ``epsilons`` (output tolerances for k(eps)),
            ``regime_tolerance``, ``ridge``, ``folds``, ``seed``.

    Returns:
        A JSON-ready dict with ``stability``, ``gradients``, ``truncation``, ``memory`` and
        ``seconds`` (time per part).
    """
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown analysis option(s) {unknown}; valid: {sorted(DEFAULTS)}")
    options = {**DEFAULTS, **options}
    if x.ndim != 3 or len(x) != len(y):
        raise ValueError(f"x must be (n, T, d) with one target per sequence, got x {x.shape}, "
                         f"y {np.shape(y)}")
    y_last = y[:, -1] if kind == "sequence" else y
    kind = "classification" if kind == "sequence" else kind
    rng = np.random.default_rng(options["seed"])
    stepper = CellStepper(model)
    seconds, out = {}, {"sequences": int(len(x)), "timesteps": int(x.shape[1]),
                        "state_dim": stepper.state_dim, "cell": type(stepper.cell).__name__,
                        "state_clip": getattr(stepper.cell, "state_clip", None)}

    start = time.perf_counter()
    x_jac = x[_subsample(len(x), options["jacobian_sequences"], rng)]
    out["stability"], out["gradients"] = _jacobian_part(stepper, x_jac, options)
    seconds["jacobians"] = time.perf_counter() - start

    start = time.perf_counter()
    x_sens = x[_subsample(len(x), options["sensitivity_sequences"], rng)]
    sens = gradients.input_sensitivity(stepper, x_sens).mean(axis=0)
    out["gradients"]["input_sensitivity_by_lag"] = [float(v) for v in sens]
    out["gradients"]["input_sensitivity_lag_below_1pct"] = gradients.first_lag_below(sens, 0.01)
    seconds["input_sensitivity"] = time.perf_counter() - start

    start = time.perf_counter()
    keep = _subsample(len(x), options["max_sequences"], rng)
    out["truncation"], h_final = _truncation_part(stepper, x[keep], y_last[keep], kind,
                                                  out["stability"], options)
    seconds["truncation"] = time.perf_counter() - start

    start = time.perf_counter()
    out["memory"] = _memory_part(h_final, x[keep], options)
    seconds["memory"] = time.perf_counter() - start
    out["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    return out


def _last_above(curve: np.ndarray, level: float) -> int | None:
    above = np.nonzero(curve > level)[0]
    return int(above[-1]) + 1 if len(above) else None


# ----------------------------------------------------------------------------- run directories


def load_validation(run_dir: Path, data_dir=None):
    """(`zoo.training.run_record.RunConfig`, model, x_val normalised, y_val, task kind) of a
    finished run."""
    from zoo.training.evaluate import load_run
    from zoo.training.rundir import RunDirectory

    record, model, norm = load_run(run_dir)
    config = record.config
    source = RunDirectory(run_dir).recorded_data_source(record) or ""
    if data_dir is None and source and not source.startswith("generated"):
        if not Path(source).exists():
            raise FileNotFoundError(f"{run_dir}: the run's data source {source} does not exist; "
                                    "pass --data-dir with the dataset the run was trained on")
        data_dir = source
    task = config.make_task()
    data = task.load(data_dir, seed=config.seed)
    split = data.val if len(data.val) else data.test
    if not len(data.val):
        print(f"note: {run_dir} has no validation split (val_fraction 0): using the test split")
    return config, model, norm.apply(split.x).astype("float32"), split.y, task.kind


def analyze_run(run_dir, out_dir=None, data_dir=None, **options) -> dict:
    """Analyse a `zoo train` run directory and write report.md, report.json and plots.

    Args:
        run_dir: a finished run (model.keras, config.yaml, normalization.json, metrics.json).
        out_dir: where the report goes (default ``RUN_DIR/analysis``); created, and never
            written into when it already holds files other than a previous report.
        data_dir: the dataset (default: where the run found its data, `RunDirectory.data_source`).
        **options: `analyze_model` options.

    Example:

    >>> report = analyze_run("runs/har2-fastrnn")  # writes runs/har2-fastrnn/analysis/
    """
    run_dir = Path(run_dir)
    out_dir = Path(out_dir) if out_dir else run_dir / "analysis"
    _check_out_dir(out_dir)
    start = time.perf_counter()
    # The run's lock, shared, until the report is written into it: `zoo train --overwrite`
    # cannot replace the model meanwhile (docs/reliability.md).
    with storage.shared(run_dir):
        return _analyze(run_dir, out_dir, data_dir, start, options)


def _analyze(run_dir: Path, out_dir: Path, data_dir, start: float, options: dict) -> dict:
    """`analyze_run`'s work, once the run is locked."""
    from zoo.experiments.analysis.plots import write_plots
    from zoo.experiments.analysis.markdown import render, summary

    config, model, x, y, kind = load_validation(run_dir, data_dir)
    _log.info(f"analysing {config.model} on {config.task}: {len(x)} validation sequences")
    result = analyze_model(model, x, y, kind, **options)
    result.update({"run_dir": str(run_dir), "model": config.model, "task": config.task,
                   "model_options": dict(config.model_options)})
    result["seconds"]["total"] = round(time.perf_counter() - start, 2)
    out_dir.mkdir(parents=True, exist_ok=True)
    result["plots"] = write_plots(result, out_dir)
    (out_dir / "report.json").write_text(json.dumps(result, indent=1))
    (out_dir / "report.md").write_text(render(result))
    for line in summary(result):
        _log.info(line)
    _log.info(f"report: {out_dir / 'report.md'} ({result['seconds']['total']:.1f}s)")
    return result


_REPORT_FILES = {"report.md", "report.json"}


def _check_out_dir(out_dir: Path) -> None:
    """Refuse a non-empty folder that is not a previous report (never overwrite user files)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"--out {out_dir} exists and is not a folder")
    if out_dir.is_dir():
        names = {p.name for p in out_dir.iterdir()}
        if names and not (names & _REPORT_FILES and
                          all(n in _REPORT_FILES or n.endswith(".png") for n in names)):
            raise FileExistsError(f"--out {out_dir} holds other files ({', '.join(sorted(names))});"
                                  " choose an empty or new folder")
