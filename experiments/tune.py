"""``zoo tune``: a search for the most accurate model that fits a device budget, on your data.

1. The data is read once (classes, window shape, the held-out groups).
2. Every configuration of the space (`search_space`: cells x units x rank x samples per step x
   QAT) is priced by the cost model (`zoo.experiments.cost_model`, fitted to measured C costs);
   only those whose predicted cost fits every budget stay (`fitting`). None fits: one line
   naming the cheapest configuration's cost, before anything trains. A prediction is checked
   raised by the model's worst leave-one-out error (`CostModel.guarded`), so that what fits
   as predicted also fits as measured.
3. Ray Tune trains the ones that fit, in a seeded random order, each an ordinary run directory
   under ``OUT/trials/``, scored on held-out whole groups (the task's ``val_fraction``); ASHA
   stops the weak ones early; the search ends `search_minutes` into ``--time-budget``, which is
   the whole command's: the rest is kept for step 5. The Tune experiment lives in
   ``OUT/_tune``: ``--resume`` restores it (`Tuner.restore`), finished trials are not rerun and
   an interrupted one resumes from its run directory's last epoch.
4. ``OUT/frontier.csv`` and ``OUT/frontier.png``: accuracy (+- its binomial standard error on
   the held-out windows) against predicted cost, the non-dominated set marked.
5. The most accurate trial is retrained on all the data (``OUT/best``, for the epochs at which
   its held-out accuracy peaked), exported as an int8 step model (``OUT/best-int8``) and as C
   (``OUT/best-c``), and its cost measured on ``--target`` by zoo profile's engine (`measure_best`) beside the
   predicted one in ``OUT/best-cost.json`` and the frontier table.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import logging
import math
import os
import random
import time
from pathlib import Path

from zoo.experiments import cost_model

_log = logging.getLogger(__name__)
BUDGET_KEYS = ("flash_bytes", "ram_bytes", "instructions_per_second", "instructions_per_window")
UNITS = (16, 32, 48, 64, 80, 96, 128)
RANKS = (4, 8, 16, 32)
FRAMES = (1, 2, 4, 8)
MODELS = ("sirnn", "fastgrnn", "gru")
PLAN = "tune.json"
METRIC = "val_accuracy"


# ---------------------------------------------------------------------------------- budget
def parse_budget(text: str) -> dict[str, int]:
    """``KEY=VALUE[,KEY=VALUE...]`` -> {key: positive int}; ValueError in one line naming the
    key or value at fault and what is valid."""
    budget = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--budget {item!r}: expected KEY=VALUE, KEY one of "
                             f"{', '.join(BUDGET_KEYS)}")
        if key not in BUDGET_KEYS:
            raise ValueError(f"--budget: unknown key {key!r}; valid keys: "
                             f"{', '.join(BUDGET_KEYS)}")
        try:
            number = float(value.replace("_", ""))
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number <= 0 or number != int(number):
            raise ValueError(f"--budget {key}={value!r}: the value must be a positive whole "
                             "number (bytes or instructions)")
        budget[key] = int(number)
    if not budget:
        raise ValueError(f"--budget: give at least one KEY=VALUE, KEY one of "
                         f"{', '.join(BUDGET_KEYS)}")
    return budget


# ------------------------------------------------------------------------------ the space
@dataclasses.dataclass(frozen=True)
class Candidate:
    """One configuration of the search: a cell, its size and rank, samples per step, QAT."""

    model: str
    units: int
    rank: int | None
    frames_per_step: int
    qat: bool

    @property
    def label(self) -> str:
        rank = f" r{self.rank}" if self.rank else ""
        return f"{self.model} u{self.units}{rank} f{self.frames_per_step}{' qat' if self.qat else ''}"

    @property
    def slug(self) -> str:
        return self.label.replace(" ", "_")

    def model_options(self) -> dict:
        """The model options of this configuration (the windows recipes' own for the rest)."""
        options: dict = {"units": self.units}
        if self.model == "sirnn":
            options.update(rank=self.rank, state_clip=1.0, state_quant_bits=8)
            if self.qat:
                options.update(qat="int8", qat_percentile=98.0)
            else:
                options["qat"] = None
        elif self.model == "fastgrnn":
            options.update(u_rank=self.rank, qat="int8" if self.qat else None)
        elif self.model == "gru":
            options.update(qat="int8" if self.qat else None,
                           step_graph="lean" if self.qat else "keras")
        return options


def search_space(steps: int, models=MODELS, units=UNITS, ranks=RANKS, frames=FRAMES,
                 qat=(True, False)) -> list[Candidate]:
    """Every configuration: ``frames`` limited to divisors of the window's ``steps``, ranks
    below the units (a GRU has no rank)."""
    out = []
    for model, size, frame, q in itertools.product(models, units, frames, qat):
        if steps % frame:
            continue
        for rank in (ranks if model in ("sirnn", "fastgrnn") else (None,)):
            if rank is None or rank < size:
                out.append(Candidate(model, size, rank, frame, q))
    return out


def shape_of(candidate: Candidate, window: tuple[int, int], classes: int,
             window_seconds: float | None) -> cost_model.Shape:
    steps, channels = window
    k = candidate.frames_per_step
    return cost_model.Shape(channels * k, steps // k, classes, window_seconds)


def price(candidates, model: cost_model.CostModel, window, classes, window_seconds) -> list:
    """``[(candidate, predicted cost)]``."""
    return [(c, model.predict(c.model, c.model_options(), shape_of(c, window, classes,
                                                                   window_seconds)))
            for c in candidates]


def fits(cost: dict, budget: dict) -> bool:
    """Whether a (guarded) ``cost`` is within every key of ``budget``."""
    return all(cost[key] is not None and cost[key] <= limit for key, limit in budget.items())


def fitting(priced: list, budget: dict, model: cost_model.CostModel | None = None) -> list:
    """The priced configurations within ``budget`` (their predictions raised by ``model``'s
    worst leave-one-out error, `CostModel.guarded`, when given); ValueError (one line) when
    none is, naming for each budget key the cheapest configuration's predicted cost."""
    if "instructions_per_second" in budget and priced and \
            priced[0][1]["instructions_per_second"] is None:
        raise ValueError("--budget instructions_per_second: the window's length in seconds is "
                         "not known; give --sampling-rate HZ (samples per second)")
    guard = model.guarded if model is not None else (lambda cost: cost)
    kept = [(c, cost) for c, cost in priced if fits(guard(cost), budget)]
    if not kept:
        cheapest = []
        for key, limit in budget.items():
            c, cost = min(priced, key=lambda pair: pair[1][key])
            cheapest.append(f"{key}={limit:,} is below the cheapest configuration's "
                            f"({c.label}: {cost[key]:,} predicted, "
                            f"{round(guard(cost)[key]):,} with the model's worst error)")
        raise ValueError("--budget: no configuration fits: " + "; ".join(cheapest))
    return kept


# -------------------------------------------------------------------------------- the data
@dataclasses.dataclass(frozen=True)
class DataFacts:
    """What the search needs to know of the data: its window (steps, channels), classes, the
    held-out windows of the default split and a window's seconds (None: unknown)."""

    window: tuple[int, int]
    classes: int
    val_windows: int
    window_seconds: float | None
    task_options: dict


def read_data(task: str, data_dir, sampling_rate: float | None = None) -> DataFacts:
    """Load the data once (the split the trials use: the task's own ``val_fraction``, 0.2 of
    the groups for windows, 0.1 of the speakers for audio_folder): `DataFacts`."""
    from zoo.training.tasks import get_task

    options = {}
    base = get_task(task, **options)
    options.update(base.options_from_data(data_dir))
    loaded = get_task(task, **options)
    data = loaded.load(data_dir)
    window = tuple(int(v) for v in data.train.x.shape[1:])
    # a clip's seconds (audio_folder), else the task's own window length, else the rate's
    seconds = loaded.options().get("clip_seconds") or loaded.window_seconds
    if sampling_rate and task == "windows":
        seconds = window[0] / sampling_rate
    return DataFacts(window, loaded.num_classes, len(data.val), seconds, options)


# ------------------------------------------------------------------------------ training
def train_config(candidate: Candidate, facts: DataFacts, task: str, epochs: int,
                 backend: str, val_fraction: float | None = None, seed: int = 0) -> dict:
    """The trial's (or the retrain's) settings: the task's SiRNN recipe schedule (Adam lr 1e-2,
    cosine, batch 128, clipnorm 1) with this candidate's model, no early stopping (ASHA
    stops trials), ``epochs`` epochs."""
    from zoo.experiments.trials import base_config

    task_options = dict(facts.task_options)
    if task == "windows":  # audio_folder's recurrent step reads one feature frame
        task_options["frames_per_step"] = candidate.frames_per_step
    if val_fraction is not None:
        task_options["val_fraction"] = val_fraction
    config = base_config(task, "sirnn", None, {"backend": backend})
    config.update(model=candidate.model, model_options=candidate.model_options(),
                  epochs=epochs, early_stopping_patience=0, seed=seed,
                  task_options=task_options, recipe=None)
    if task == "windows":
        config["monitor"] = "val_accuracy"
    return config


def run_trial(params: dict, plan: dict) -> None:
    """Ray Tune's trainable: train (or resume) one candidate's run directory, reporting the
    held-out accuracy after each committed epoch (ASHA stops it there when it lags)."""
    import keras
    from ray import tune

    from zoo.training.config import TrainConfig
    from zoo.training.runs import train_or_reuse
    from zoo.training.rundir import RunDirectory

    trial = plan["trials"][params["index"]]
    run_dir = Path(trial["run_dir"])
    best = {"accuracy": 0.0, "epoch": 0}
    # resumed after a kill: the epochs committed before it count towards its best
    for epoch, accuracy in enumerate(_history(run_dir), start=1):
        if accuracy > best["accuracy"]:
            best.update(accuracy=accuracy, epoch=epoch)

    class Report(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            accuracy = float((logs or {}).get(METRIC, 0.0))
            if accuracy > best["accuracy"]:
                best.update(accuracy=accuracy, epoch=epoch + 1)
            tune.report({METRIC: accuracy, "best_val_accuracy": best["accuracy"],
                         "best_epoch": best["epoch"], "epoch": epoch + 1})

    config = TrainConfig.from_dict(trial["config"])
    finished = RunDirectory(run_dir).is_finished()
    train_or_reuse(config, run_dir, data_dir=plan["data_dir"], callbacks=[Report()])
    if finished:  # reused as it was: report its recorded history once
        history = _history(run_dir)
        tune.report({METRIC: history[-1], "best_val_accuracy": best["accuracy"],
                     "best_epoch": best["epoch"], "epoch": len(history)})


def _history(run_dir: Path) -> list[float]:
    """The held-out accuracy of each committed epoch of a run (its ``history.csv``; [] when
    it has none yet)."""
    path = Path(run_dir) / "history.csv"
    if not path.is_file():
        return []
    with open(path) as f:
        return [float(row[METRIC]) for row in csv.DictReader(f)]


# ------------------------------------------------------------------------------ the search
# What the search leaves of --time-budget for retraining the best on all the data, exporting it
# and measuring it (step 5): a tenth, at least two minutes, never more than half. A 15-minute
# search finished in 17 when the search had the whole budget.
FINISH_SHARE, FINISH_MINUTES = 0.1, 2.0


def search_minutes(time_budget: float) -> float:
    """The minutes the search may train within a whole command's ``time_budget``."""
    reserve = min(max(FINISH_SHARE * time_budget, FINISH_MINUTES), time_budget / 2)
    return time_budget - reserve


def make_plan(args, facts: DataFacts, kept: list, budget: dict) -> dict:
    """The search's plan (``OUT/tune.json``): the budget, the data and every trial that fits,
    in a seeded random order (a time budget then samples the whole space, not one corner)."""
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    order = list(kept)
    random.Random(args.seed).shuffle(order)
    out = Path(args.out).resolve()
    trials = [{"label": c.label, "candidate": dataclasses.asdict(c), "predicted": cost,
               "run_dir": str(out / "trials" / f"{i:03d}-{c.slug}"),
               "config": train_config(c, facts, args.task, args.epochs, backend)}
              for i, (c, cost) in enumerate(order)]
    return {"task": args.task, "data_dir": str(Path(args.data_dir).resolve()),
            "budget": budget, "target": args.target, "epochs": args.epochs,
            "time_budget_minutes": args.time_budget,
            "search_minutes": round(search_minutes(args.time_budget), 3), "backend": backend,
            "facts": dataclasses.asdict(facts), "trials": trials}


def _progress(tune, plan: dict, deadline: float):
    """One quiet line per finished trial: trial, config, predicted cost, accuracy, time left."""
    key = next(iter(plan["budget"]))

    class Progress(tune.Callback):
        done = 0

        def on_trial_complete(self, iteration, trials, trial, **info):
            Progress.done += 1
            spec = plan["trials"][trial.config["index"]]
            result = trial.last_result or {}
            left = max(0.0, deadline - time.time()) / 60
            stopped = "" if result.get("epoch", 0) >= plan["epochs"] else " (stopped early)"
            _log.info(f"trial {Progress.done}/{len(plan['trials'])} {spec['label']}: "
                      f"{spec['predicted'][key]:,} {key.replace('_', ' ')} (predicted), "
                      f"{100 * result.get('best_val_accuracy', 0):.2f} % held out"
                      f"{stopped}; {left:.0f} min left")

        def on_trial_error(self, iteration, trials, trial, **info):
            _log.warning(f"trial {plan['trials'][trial.config['index']]['label']} failed "
                         f"(its log: {trial.local_path})")

    return Progress()


def search(plan: dict, out: Path, *, address=None, resume=False, cpus_per_trial=1,
           max_concurrent=None):
    """Run (or, with ``resume``, restore) the Tune experiment in ``OUT/_tune``; the ResultGrid."""
    from zoo.experiments.engine import QUIET_ENV, require_ray, thread_env

    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    tune = require_ray()
    import ray
    from ray.tune.schedulers import ASHAScheduler

    env = {"env_vars": thread_env(max(1, int(cpus_per_trial)), plan["backend"])}
    repo = str(Path(__file__).resolve().parents[1])
    if address is None:
        env["env_vars"]["PYTHONPATH"] = os.pathsep.join(
            p for p in (repo, os.environ.get("PYTHONPATH")) if p)
    ray.init(address=address or "local", include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR, runtime_env=env)
    try:
        trainable = tune.with_resources(tune.with_parameters(run_trial, plan=plan),
                                        {"cpu": cpus_per_trial})
        storage, name = str((out / "_tune").resolve()), "search"
        minutes = plan.get("search_minutes", plan["time_budget_minutes"])  # older plans
        deadline = time.time() + 60 * minutes
        callbacks = [_progress(tune, plan, deadline)]
        if resume:
            tuner = tune.Tuner.restore(str(Path(storage) / name), trainable=trainable,
                                       resume_unfinished=True, resume_errored=True,
                                       restart_errored=False)
            tuner._local_tuner._run_config.callbacks = callbacks  # progress lines again
        else:
            # max_t past the last epoch: ASHA never cuts a trial at its final report, before
            # its run directory is finished
            scheduler = ASHAScheduler(time_attr="epoch", max_t=plan["epochs"] + 1,
                                      grace_period=max(1, plan["epochs"] // 4),
                                      reduction_factor=3)
            tuner = tune.Tuner(
                trainable,
                param_space={"index": tune.grid_search(list(range(len(plan["trials"]))))},
                tune_config=tune.TuneConfig(metric=METRIC, mode="max", scheduler=scheduler,
                                            max_concurrent_trials=max_concurrent,
                                            time_budget_s=60 * minutes,
                                            reuse_actors=False),
                run_config=tune.RunConfig(name=name, storage_path=storage, verbose=0,
                                          callbacks=callbacks))
        return tuner.fit()
    finally:
        ray.shutdown()


# ---------------------------------------------------------------------------- the frontier
def frontier_rows(plan: dict, results) -> list[dict]:
    """One row per trial that reported: its configuration, held-out accuracy +- its binomial
    standard error, epochs, predicted costs; ``non_dominated`` marks the frontier (no other
    trial at least as accurate and at most as costly, one of them strictly)."""
    n = plan["facts"]["val_windows"]
    rows = []
    for result in results:
        metrics = result.metrics or {}
        if "best_val_accuracy" not in metrics:
            continue
        spec = plan["trials"][result.config["index"]]
        p = float(metrics["best_val_accuracy"])
        rows.append({"trial": result.config["index"], "config": spec["label"],
                     **spec["candidate"], "accuracy": round(100 * p, 2),
                     "accuracy_se": round(100 * math.sqrt(p * (1 - p) / max(n, 1)), 2),
                     "best_epoch": int(metrics["best_epoch"]), "epochs": int(metrics["epoch"]),
                     **{f"predicted_{k}": v for k, v in spec["predicted"].items()},
                     "run_dir": spec["run_dir"]})
    key = f"predicted_{next(iter(plan['budget']))}"
    for row in rows:
        row["non_dominated"] = not any(
            o["accuracy"] >= row["accuracy"] and o[key] <= row[key]
            and (o["accuracy"] > row["accuracy"] or o[key] < row[key]) for o in rows)
    return sorted(rows, key=lambda r: r[key])


def write_frontier_csv(rows: list[dict], path: Path, best: dict | None = None) -> None:
    """``frontier.csv``: the rows, the best's measured costs in ``measured_*`` columns."""
    measured = {f"measured_{k}": v for k, v in (best or {}).get("measured", {}).items()
                if k in BUDGET_KEYS or k == "instructions_per_step"}
    columns = list(rows[0]) + list(measured) + ["best"]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            is_best = best is not None and row["trial"] == best["trial"]
            writer.writerow({**row, **(measured if is_best else {}), "best": is_best})


def plot_frontier(rows: list[dict], budget: dict, path: Path, best: dict | None = None,
                  target: str = "cortex-m4") -> None:
    """``frontier.png``: held-out accuracy (+- standard error) against the predicted cost of
    the budget's first key, the non-dominated trials joined, the budget as a line."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = next(iter(budget))
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    for model, marker in zip(MODELS, "osd"):
        mine = [r for r in rows if r["model"] == model]
        if mine:
            ax.errorbar([r[f"predicted_{key}"] for r in mine], [r["accuracy"] for r in mine],
                        yerr=[r["accuracy_se"] for r in mine], fmt=marker, alpha=0.7,
                        capsize=2, label=model)
    front = sorted((r for r in rows if r["non_dominated"]), key=lambda r: r[f"predicted_{key}"])
    ax.plot([r[f"predicted_{key}"] for r in front], [r["accuracy"] for r in front], "k--",
            lw=1, label="non-dominated")
    for r in front:
        ax.annotate(r["config"], (r[f"predicted_{key}"], r["accuracy"]), fontsize=7,
                    xytext=(3, -9), textcoords="offset points")
    ax.axvline(budget[key], color="red", lw=1, label=f"budget {budget[key]:,}")
    if best and "measured" in best and key in best["measured"]:
        ax.plot([best["measured"][key]], [best["accuracy"]], "r*", ms=12,
                label="best, measured cost")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_title(f"zoo tune: {len(rows)} trials within {key.replace('_', ' ')} "
                 f"{budget[key]:,}", fontsize=10)
    ax.set_xlabel(f"{key.replace('_', ' ')} (predicted, {target})")
    ax.set_ylabel("held-out accuracy (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -------------------------------------------------------------------------------- the best
def finish_best(plan: dict, row: dict, out: Path) -> dict:
    """Retrain ``row``'s configuration on all the data (``OUT/best``, for its best epoch count),
    export it (``OUT/best-int8``, ``OUT/best-c``) and measure its cost: the best's summary."""
    from zoo.export.c_backend.command import export_c
    from zoo.export.exporter import export_run
    from zoo.export.profile import ProfileError
    from zoo.export.profile.counting import MeasurementError
    from zoo.training.config import TrainConfig
    from zoo.training.runs import train_or_reuse

    spec = plan["trials"][row["trial"]]
    config = {**spec["config"], "epochs": max(1, row["best_epoch"]),
              "task_options": {**spec["config"]["task_options"], "val_fraction": 0.0}}
    train_or_reuse(TrainConfig.from_dict(config), out / "best", data_dir=plan["data_dir"])
    export_run(out / "best", out / "best-int8", quantize="int8", form="step",
               allow_drop=True, overwrite=True, data_dir=plan["data_dir"])
    export_c(out / "best-int8", out / "best-c", overwrite=True, allow_drop=True)
    try:
        measured = measure_best(out / "best-c", plan["target"])
    except (ProfileError, MeasurementError) as err:  # e.g. no cross toolchain: the rest stands
        _log.warning(f"the best's cost was not measured: {err}")
        measured = {"error": str(err)}
    seconds = plan["facts"]["window_seconds"]
    if seconds and "instructions_per_window" in measured:
        measured["instructions_per_second"] = round(measured["instructions_per_window"] / seconds)
    within = {k: measured.get(k) is not None and measured[k] <= v
              for k, v in plan["budget"].items()}
    best = {"trial": row["trial"], "config": row["config"], "accuracy": row["accuracy"],
            "accuracy_se": row["accuracy_se"], "epochs": config["epochs"],
            "predicted": spec["predicted"], "measured": measured, "within_budget": within}
    (out / "best-cost.json").write_text(json.dumps(best, indent=1) + "\n")
    return best


def measure_best(c_dir: Path, target: str) -> dict:
    """The C export's figures on ``target``, measured by zoo profile's engine (a fresh QEMU
    count, bit-exact checked against the host build). ProfileError naming the missing tools."""
    import tempfile

    from zoo.export.profile import ProfileError
    from zoo.export.profile.engine import missing_tools, profile_export
    from zoo.export.profile.targets import targets_named

    chosen = targets_named([target])
    missing = missing_tools(chosen)
    if missing:
        raise ProfileError(missing)
    with tempfile.TemporaryDirectory(prefix="zoo-tune-profile-") as tmp:
        figures = profile_export(c_dir, chosen, Path(tmp))["targets"][target]
    return {"target": target, **figures, "measured_by": f"zoo profile ({target})"}


# ------------------------------------------------------------------------------ the command
def prepare(args) -> tuple[dict, Path]:
    """The plan: read back from ``OUT/tune.json`` with ``--resume``, else priced and written
    (ValueError for a budget nothing fits or an OUT that holds another search)."""
    out = Path(args.out)
    plan_file = out / PLAN
    if args.resume:
        if not plan_file.is_file():
            raise ValueError(f"--resume: {out} holds no search ({PLAN}); start one without "
                             "--resume")
        return json.loads(plan_file.read_text()), out
    if plan_file.is_file() or (out / "_tune").exists():
        raise ValueError(f"--out {out} holds a search already: --resume to continue it, or "
                         "give a new folder")
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"--out {out} exists and is not empty; give a new folder")
    budget = parse_budget(args.budget)
    model = cost_model.fit(target=args.target)
    facts = read_data(args.task, args.data_dir, args.sampling_rate)
    frames = FRAMES if args.task == "windows" else (1,)
    space = search_space(facts.window[0], models=args.models or MODELS, frames=frames)
    if args.task == "audio_folder":
        _log.info("audio_folder: the cost is the recurrent model's; the front end's "
                  "(features of each frame) is not priced")
    kept = fitting(price(space, model, facts.window, facts.classes, facts.window_seconds),
                   budget, model)
    _log.info(f"{len(kept)} of {len(space)} configurations fit the budget "
              f"({', '.join(f'{k}={v:,}' for k, v in budget.items())}) by the cost model")
    plan = make_plan(args, facts, kept, budget)
    out.mkdir(parents=True, exist_ok=True)
    plan_file.write_text(json.dumps(plan, indent=1) + "\n")
    return plan, out


def run_tune(args) -> int:
    """``zoo tune``: search, frontier, best (module doc). 2 for a refused budget or folder."""
    import sys

    try:
        plan, out = prepare(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"zoo tune: error: {err}", file=sys.stderr)
        return 2
    results = search(plan, out, address=args.address, resume=args.resume,
                     cpus_per_trial=args.cpus_per_trial, max_concurrent=args.max_concurrent)
    rows = frontier_rows(plan, results)
    if not rows:
        print("zoo tune: no trial finished an epoch within the time budget; give more "
              "--time-budget (and --resume)", file=sys.stderr)
        return 1
    best_row = max(rows, key=lambda r: (r["accuracy"], -r[f"predicted_{next(iter(plan['budget']))}"]))
    write_frontier_csv(rows, out / "frontier.csv")
    best = None
    if not args.no_best:
        best = finish_best(plan, best_row, out)
    write_frontier_csv(rows, out / "frontier.csv", best)
    plot_frontier(rows, plan["budget"], out / "frontier.png", best, plan["target"])
    print(summary_line(plan, rows, best_row, best, out))
    return 0


def summary_line(plan: dict, rows: list, row: dict, best: dict | None, out: Path) -> str:
    """What the search gave, in a few lines."""
    lines = [f"{len(rows)} trials; frontier: {out / 'frontier.csv'}, {out / 'frontier.png'}",
             f"best: {row['config']}, {row['accuracy']:.2f} ± {row['accuracy_se']:.2f} % held "
             f"out (epoch {row['best_epoch']})"]
    if best:
        for key, limit in plan["budget"].items():
            measured = best["measured"].get(key)
            verdict = ("not measured" if measured is None
                       else "within" if best["within_budget"][key] else "OVER")
            shown = "n/a" if measured is None else f"{measured:,}"
            lines.append(f"  {key}: predicted {best['predicted'][key]:,}, measured {shown} "
                         f"(budget {limit:,}: {verdict})")
        lines.append(f"  run {out / 'best'}, int8 step {out / 'best-int8'}, C {out / 'best-c'}")
    return "\n".join(lines)
