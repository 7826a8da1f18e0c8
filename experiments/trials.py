"""What a sweep trains: one trial = one ordinary ``zoo train`` run directory.

A trial is a `Trial`: a frozen dataclass of plain values (it pickles, so the process engine's
spawned workers and Ray's get it as it is; ``sweep.json`` records it as `Trial.to_dict`)::

    Trial(task, label, variant, fold, folds, config=TrainConfig.to_dict(),
          run_dir=absolute path, data_dir=absolute path or None,
          result=absolute path of its results file, or None,
          parent=the variant NAME of its ``"init_from": "variant:NAME"``, or None)

Because each trial *is* a run directory, a sweep inherits the run directory's guarantees: a
finished run is reused, an interrupted one resumes from its last committed epoch, and one that
another process is training is refused by its lock. Re-running the same sweep is how it resumes.

Layout: ``<out>/<task>/<label>/<variant>/fold<k>`` for the cross-validation and
``<out>/<task>/<label>/final-<variant>-e<epochs>`` for the retrain on all training subjects
(``final-<variant>-e<epochs>-from-<parent>-e<epochs>`` for a fine-tune stage, retrained from its
parent's retrain: `final_trial`).

Results files: a finished CV trial's summary (its validation curve, test accuracy, size, time)
is also written to ``<results>/<task>/<label>/<variant>/fold<k>.json`` with the settings that made
it: a few hundred bytes meant to be committed (the repository's ``results/``, `results_root`:
kept out of the installed package), so a campaign spread
over several machines and days keeps every result, and the tables can be rebuilt from those
files alone. A trial whose results file holds the same settings counts as done. The file's
keys and types are its typed record's, `zoo.core.cv_results.CvResult` (in the core, since
``zoo ship --cv-results`` in the export layer reads these files too).
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import os
from pathlib import Path

# The CV runs train the whole budget (no early stopping), so every fold has a validation
# accuracy for every epoch and the epoch count can be chosen on the mean curve (shipping
# protocol, docs/realscale.md).
CV_OVERRIDES = {"early_stopping_patience": 0}
# The variant name of the real-scale table's trials (they have no results files).
REALSCALE = "realscale"


@dataclasses.dataclass(frozen=True)
class Trial:
    """One trial of a sweep: one ``zoo train`` run directory and what it is in the study.

    ``fold`` is the CV fold (the seed for the real-scale table; None for the shipping retrain);
    ``config`` a `zoo.training.config.TrainConfig` as a dict (frozen means the fields: change a
    setting with ``dataclasses.replace(trial, config={**trial.config, ...})``, never in place).
    Paths are absolute strings, so a trial means the same in any worker's working folder.
    """

    task: str
    label: str
    variant: str
    fold: int | None
    folds: int
    config: dict
    run_dir: str
    data_dir: str | None = None
    result: str | None = None  # its results file (`record_result`), if it has one
    # The variant of this sweep whose run it starts from ("init_from": "variant:NAME"; the
    # config holds that run's directory): what `--final` chains on. Not a setting, so not in
    # the results files (`portable`), which match as they did before it existed.
    parent: str | None = None

    def to_dict(self) -> dict:
        """The trial as ``sweep.json`` records it: the fields in order. A real-scale trial's
        entry has no ``result`` (it never had one; its plans stay byte for byte as written), and
        a trial that starts from no other variant has no ``parent`` (the same)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.variant == REALSCALE and self.result is None:
            del data["result"]
        if self.parent is None:
            del data["parent"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Trial:
        """A trial from its ``sweep.json`` entry (`to_dict`); keys it does not know are left."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @property
    def settings(self):
        """``config`` typed: a `zoo.training.config.TrainConfig` (a copy; settings a plan
        predates at their defaults). The readers of a trial's settings read them here."""
        from zoo.training.config import TrainConfig

        return TrainConfig.from_dict(self.config)

    @property
    def name(self) -> str:
        """``task / label / variant / fold k`` (``final`` for the shipping retrain)."""
        fold = "final" if self.fold is None else f"fold {self.fold}"
        return f"{self.task} / {self.label} / {self.variant} / {fold}"


def results_root() -> Path:
    """The repository's ``results/`` folder, where campaigns commit their per-trial files: beside
    ``pyproject.toml`` in a checkout (an editable install), else ``results/`` in the working
    directory. It is not part of the package: a wheel carries no results (issue 51)."""
    checkout = Path(__file__).resolve().parents[1]
    return checkout / "results" if (checkout / "pyproject.toml").is_file() else Path("results")


def slug(text: str) -> str:
    """A folder name for a label (``sirnn clip+q8`` -> ``sirnn_clip_q8``)."""
    out = "".join(c if c.isalnum() or c in "-._" else "_" for c in text.replace("=", ""))
    return "_".join(part for part in out.split("_") if part)


def absolute(path) -> str | None:
    """``path`` made absolute (trials run in other processes, maybe other machines' cwd)."""
    return None if path is None else str(Path(path).expanduser().resolve())


def merge(base: dict, overrides: dict) -> dict:
    """``base`` with ``overrides`` applied; ``model_options`` / ``task_options`` merge key by key
    (so a variant can change one model option without restating the others)."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if key in ("model_options", "task_options") and isinstance(value, dict):
            out[key] = {**out.get(key, {}), **value}
        else:
            out[key] = copy.deepcopy(value)
    return out


def base_config(task: str, model: str, recipe: str | None, overrides: dict) -> dict:
    """The resolved settings every trial of a study starts from: defaults < recipe (the shipped
    ``<task>-<model>.yaml`` unless ``recipe`` says otherwise) < ``overrides``. ValueError for
    an invalid setting or an unknown model option, before any trial is planned."""
    from zoo.training.config import TrainConfig, resolve
    from zoo.registry import check_options

    config = merge(resolve(task, model, recipe, {}).to_dict(), overrides)
    check_options(model, TrainConfig.from_dict(config).model_options)
    return config


def cv_trials(task: str, label: str, base: dict, variants: dict[str, dict], folds: int,
              out, data_dir, results=None) -> list[Trial]:
    """One trial per (variant, fold): validation = fold k of ``folds`` of the training subjects
    (``val_fold=[k, folds]``), seed k, the whole epoch budget. Fold-major order, so that the
    variants of a fold finish together and a partial sweep still gives paired folds."""
    from zoo.training.config import TrainConfig

    trials = []
    for fold in range(folds):
        for variant, overrides in variants.items():
            # invalid settings fail here, before Ray starts
            given = TrainConfig.from_dict(merge(merge(base, {**CV_OVERRIDES, "seed": fold}),
                                                overrides))
            parent = _variant_name(given.init_from)
            config = dataclasses.replace(
                given, init_from=_init_from(given.init_from, variants, out, task, label, fold),
                distill=_distill(given.distill, task, fold),
                task_options={**{k: v for k, v in given.task_options.items()
                                 if k not in ("val_subjects", "val_fraction")},
                              "val_fold": [fold, folds]}).to_dict()
            where = Path(task) / slug(label) / slug(variant) / f"fold{fold}"
            trials.append(Trial(task=task, label=label, variant=variant, fold=fold, folds=folds,
                                config=config, run_dir=absolute(Path(out) / where),
                                data_dir=absolute(data_dir),
                                result=(absolute(Path(results) / where.with_suffix(".json"))
                                        if results else None),
                                parent=parent))
    return trials


def _variant_name(value) -> str | None:
    """NAME of an ``init_from`` of ``variant:NAME``; None for anything else."""
    if isinstance(value, str) and value.startswith("variant:"):
        return value.split(":", 1)[1]
    return None


def _init_from(value, variants, out, task: str, label: str, fold: int):
    """``init_from`` of a trial: ``variant:NAME`` is the same fold's run of variant NAME of this
    sweep (e.g. a QAT fine-tune of each fold's float model); anything else as given."""
    name = _variant_name(value)
    if name is None:
        return value
    if name not in variants:
        raise ValueError(f"init_from {value!r}: no variant {name!r} in this sweep; valid: "
                         f"{', '.join('variant:' + v for v in variants)}")
    return absolute(Path(out) / task / slug(label) / slug(name) / f"fold{fold}")


def _distill(value, task: str, fold: int | None):
    """``distill`` of a trial: each teacher path with ``{fold}`` filled in with the trial's fold
    (each fold's student learns from the teacher trained on the same fold's subjects), made
    absolute (trials run in other processes) and checked to be a finished run of ``task`` now,
    before any trial starts; unset stays unset."""
    if not value:
        return value
    from zoo.training.config import check_distill
    from zoo.training.distill import FOLD, check_teacher_runs

    paths = [absolute(p if fold is None else p.replace(FOLD, str(fold)))
             for p in check_distill(value)["teacher"]]
    if fold is None and any(FOLD in p for p in paths):
        raise ValueError(f"distill teacher {value['teacher']}: the shipping retrain has no fold "
                         f"to fill {FOLD} in with; give a run directory")
    resolved = {**value, "teacher": paths if isinstance(value["teacher"], list) else paths[0]}
    check_teacher_runs(resolved, task)
    return resolved


def final_trial(cv_trial: Trial, epochs: int, out, teacher=None,
                parent: Trial | None = None) -> Trial:
    """The shipping retrain of a CV variant: every training subject (no validation split, hence
    no early stopping), ``epochs`` epochs (chosen by the CV), seed 0.

    A fine-tune stage (``"init_from": "variant:NAME"``: fold k's trial starts from fold k's run
    of NAME) starts from ``parent``, NAME's own shipping retrain (`final_trial` of NAME's CV
    trial), not from one fold's run of NAME, which never saw that fold's validation subjects.
    Its run directory names the chain (``final-<variant>-e<epochs>-from-<NAME>-e<epochs>``):
    a finished run is reused by its name alone, so a retrain from another parent must not have
    the same one. Such a stage without ``parent`` is refused (ValueError), as is a ``parent``
    that is not the variant it starts from (`_final_init_from`).

    A distilled variant's CV trials learn from teachers chosen for their folds (``{fold}``), so
    its retrain on every subject needs its own ``teacher`` (a run directory or a list, e.g. the
    teacher sweep's own ``final-...`` run; ``zoo sweep cv --final --final-teacher``): without
    one it is refused (ValueError) rather than trained from fold k's teacher."""
    from zoo.training.config import TrainConfig

    given = TrainConfig.from_dict(merge(cv_trial.config, {"epochs": epochs, "seed": 0,
                                                          "early_stopping_patience": 0}))
    config = dataclasses.replace(
        given, init_from=_final_init_from(cv_trial, parent),
        distill=_final_distill(cv_trial, teacher),
        task_options={**{k: v for k, v in given.task_options.items()
                         if k not in ("val_subjects", "val_fold")},
                      "val_fraction": 0.0}).to_dict()
    name = f"final-{slug(cv_trial.variant)}-e{epochs}"
    if parent is not None:
        name += "-from-" + Path(parent.run_dir).name.removeprefix("final-")
    return dataclasses.replace(
        cv_trial, fold=None, config=config, result=None,
        run_dir=absolute(Path(out) / cv_trial.task / slug(cv_trial.label) / name),
        parent=parent.variant if parent is not None else cv_trial.parent)


def parent_of(trial: Trial, plan: list[Trial]) -> str | None:
    """The variant of ``plan`` whose same-fold run ``trial`` starts from (``"init_from":
    "variant:NAME"``), or None. A trial planned now says so (`Trial.parent`); one read from a
    ``sweep.json`` written before it could is matched by its ``init_from``, which is then the
    run directory of another variant's trial of the same task, label and fold."""
    init_from = trial.settings.init_from
    if trial.parent is not None or not init_from or trial.fold is None:
        return trial.parent
    return next((t.variant for t in plan
                 if (t.task, t.label, t.fold) == (trial.task, trial.label, trial.fold)
                 and t.variant != trial.variant and t.run_dir == init_from),
                None)


def _final_init_from(cv_trial: Trial, parent: Trial | None):
    """``init_from`` of the shipping retrain: ``parent``'s run for a fine-tune stage of another
    variant, else the CV trial's own (a run outside the sweep, or none). A trial read from a
    plan recorded before `Trial.parent` existed does not say whether it is a stage: it takes
    ``parent`` on trust when it has an ``init_from`` (`parent_of` finds it)."""
    stage_of, init_from = cv_trial.parent, cv_trial.settings.init_from
    if parent is None:
        if stage_of is not None:
            raise ValueError(
                f"variant {cv_trial.variant} fine-tunes each fold's run of variant {stage_of} "
                f"(init_from variant:{stage_of}); its shipping retrain must start from "
                f"{stage_of}'s own retrain on every training subject, not from fold "
                f"{cv_trial.fold}'s run: plan that one and pass it as parent (zoo sweep cv "
                "--final does)")
        return init_from
    if parent.fold is not None:
        raise ValueError(f"parent {parent.name}: a shipping retrain (fold None) is needed, "
                         "not a CV fold's run")
    if not init_from or stage_of not in (None, parent.variant):
        starts = f"variant {stage_of}'s runs" if stage_of else init_from or "scratch"
        raise ValueError(f"parent {parent.variant}: variant {cv_trial.variant} starts from "
                         f"{starts}, not from variant {parent.variant}'s")
    return parent.run_dir


def _final_distill(cv_trial: Trial, teacher):
    """``distill`` of the shipping retrain: the CV trial's options with ``teacher``."""
    distill = cv_trial.settings.distill
    if not distill:
        if teacher is not None:
            raise ValueError(f"final teacher {teacher}: variant {cv_trial.variant} does not "
                             "distil (no distill setting)")
        return distill
    if teacher is None:
        raise ValueError(
            f"variant {cv_trial.variant} distils, its CV trials from teachers chosen per fold "
            f"(fold {cv_trial.fold}: {distill['teacher']}); the shipping retrain on every "
            "training subject needs its teacher named: --final-teacher RUN_DIR (e.g. the "
            "teacher sweep's final-<variant>-e<epochs> run, or the same run again if every "
            "fold had the same teacher)")
    return _distill({**distill, "teacher": teacher}, cv_trial.task, None)


def realscale_trials(args) -> list[Trial]:
    """The real-scale table (`zoo.experiments.benchmarks.realscale`) as trials, in its order and its
    run-directory layout, so the runs of the former ``--shard`` processes are reused."""
    from zoo.experiments.benchmarks import realscale

    trials = []
    for task, label, seed in realscale.grid(args):
        data = args.har if task == "har2" else args.dsa
        trials.append(Trial(task=task, label=label, variant=REALSCALE, fold=seed,
                            folds=realscale.FOLDS[task],
                            config=realscale.run_config(task, label, seed, args).to_dict(),
                            run_dir=absolute(realscale.run_dir_of(Path(args.out), task, label,
                                                                  seed)),
                            data_dir=absolute(data)))
    return trials


def summarise(run_dir) -> dict:
    """One finished run: its validation curve, the validation accuracy of the model it kept
    (the best epoch with early stopping, else the last), test accuracy (None: a run without a
    test split, e.g. of the windows task), size and time."""
    from zoo.training.rundir import RunDirectory

    run = RunDirectory(run_dir)
    metrics = run.record().metrics
    with open(run.history, newline="") as f:
        history = list(csv.DictReader(f))
    curve = [100 * float(row["val_accuracy"]) for row in history if row.get("val_accuracy")]
    needed = {name: metrics.required(name, "the sweep's summary")
              for name in ("parameters", "training_seconds", "epochs_run", "best_epoch")}
    return {"val": curve[needed["best_epoch"] - 1] if curve else None, "curve": curve,
            "test": 100 * metrics.test_accuracy if metrics.test else None,
            "parameters": needed["parameters"],
            "seconds": needed["training_seconds"], "epochs": needed["epochs_run"],
            "best_epoch": needed["best_epoch"]}


def is_finished(trial: Trial) -> bool:
    """Its run directory holds a finished run, or its results file holds its settings."""
    from zoo.training.rundir import RunDirectory

    return RunDirectory(trial.run_dir).is_finished() or recorded(trial) is not None


def portable(config: dict, run_dir) -> dict:
    """``config`` without this machine's paths, so that a results file written on one machine
    (a GPU lease, a cluster node, another clone) still matches the same trial on another: the
    recipe by its file name (its settings are in ``config`` already; the path is provenance) and
    an ``init_from`` inside the sweep folder (``variant:NAME``) relative to that folder, the
    ``distill`` teachers (usually another sweep's runs) relative to it as well (``../...``);
    a setting the file predates at its default."""
    from zoo.training.config import recipe_name, with_defaults

    out = with_defaults(config)
    out["recipe"] = recipe_name(out.get("recipe"))
    sweep_folder = Path(run_dir).parents[3]  # run_dir = <out>/<task>/<label>/<variant>/fold<k>
    parent = out.get("init_from")
    if parent and Path(parent).is_absolute() and Path(parent).is_relative_to(sweep_folder):
        out["init_from"] = Path(parent).relative_to(sweep_folder).as_posix()
    distill = out.get("distill")
    if isinstance(distill, dict) and "teacher" in distill:
        out["distill"] = {**distill, "teacher": _relative_to(distill["teacher"], sweep_folder)}
    return out


def _relative_to(paths, folder: Path):
    """Each absolute path of ``paths`` (one or a list) relative to ``folder``, ``..`` allowed:
    two clones that keep their sweeps side by side name a teacher alike."""
    def one(path):
        if not (isinstance(path, str) and Path(path).is_absolute()):
            return path
        return Path(os.path.relpath(path, folder)).as_posix()
    return [one(p) for p in paths] if isinstance(paths, list) else one(paths)


def recorded(trial: Trial) -> dict | None:
    """The summary in ``trial``'s results file (as `summarise` gives it) when that file holds
    ``trial``'s settings; a damaged file is a `zoo.core.cv_results.CvResultError` naming it and
    the key at fault."""
    from zoo.core.cv_results import read_cv_result

    path = trial.result
    if not path or not Path(path).is_file():
        return None
    result = read_cv_result(path)
    same = portable(dict(result.config), trial.run_dir) == portable(trial.config, trial.run_dir)
    return result.summary.to_dict() if same else None


def result_of(trial: Trial) -> dict | None:
    """``trial``'s summary: from its finished run directory, else from its results file."""
    from zoo.training.rundir import RunDirectory

    if RunDirectory(trial.run_dir).is_finished():
        return summarise(trial.run_dir)
    return recorded(trial)


def record_result(trial: Trial) -> None:
    """Write ``trial``'s results file from its finished run directory (nothing without one)."""
    from zoo.core.cv_results import CvResult, FoldSummary
    from zoo.core.storage import write_json_atomic
    from zoo.training.rundir import RunDirectory

    if not trial.result or not RunDirectory(trial.run_dir).is_finished():
        return
    result = CvResult(task=trial.task, label=trial.label, variant=trial.variant,
                      fold=trial.fold, folds=trial.folds,
                      config=portable(trial.config, trial.run_dir),
                      summary=FoldSummary.from_dict(summarise(trial.run_dir), trial.run_dir))
    Path(trial.result).parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(Path(trial.result), result.to_dict())
