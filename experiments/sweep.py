"""``zoo sweep``: recipe searches, subject cross-validation and the real-scale table as Ray Tune
trials, each trial an ordinary resumable ``zoo train`` run directory.

    # 5-fold subject CV of the shipped HAR-2 SiRNN recipe, baseline vs IMU augmentation:
    zoo sweep cv --task har2 --model sirnn --data-dir ../shared/data/archives/uci_har_train_full.zip \
        --folds 5 --epochs 30 --variant base={} \
        --variant 'imu={"augment": {"rotation": 15, "scale": 0.1, "jitter": 0.05}}' \
        --out bench/sweeps/har2-sirnn --cpus-per-trial 1 --max-concurrent 1
    # the same command again: finished trials are skipped, interrupted ones resume;
    # --report: only the table; --final: the shipping retrain (below)
    zoo sweep realscale --har ... --dsa ... --out bench/realscale       # docs/realscale.md's table

Shipping protocol (``cv ... --final``, the papers' 004 Sec. 4.1 done on subject folds): the
variant and the epoch count are chosen by the cross-validation (highest mean validation accuracy
over the folds, at the epoch where the fold-mean curve peaks); then that variant is retrained on
*all* training subjects for that many epochs (no validation split, no early stopping) and its
run directory is the model to ship, reported beside the CV estimate that chose it. A variant
that fine-tunes another (``"init_from": "variant:NAME"``, e.g. a QAT stage) is retrained from
NAME's retrain, which is planned too, at NAME's own CV epoch, and trained first.

Ray: an embedded local Ray by default (``--num-cpus`` / ``--num-gpus`` what it may use);
``--address auto`` or ``HOST:PORT`` joins a cluster (run directories must then be on storage
every node sees). ``--cpus-per-trial`` / ``--gpus-per-trial`` (fractions share a GPU) set each
trial's reservation. Writes ``<out>/sweep.json`` (the plan of every sweep into ``<out>``),
``<out>/results.md`` and ``<out>/results.json`` (and ``final.md`` with ``--final``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from zoo.core.cv_results import CvResultError
from zoo.experiments.trials import Trial, results_root
from zoo.core.flags import int_in, key_value, number_in, program_name

_log = logging.getLogger(__name__)


def _json_pair(text: str) -> tuple[str, dict]:
    """``NAME=JSON`` (a variant: TrainConfig overrides) -> (name, dict)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=JSON, got {text!r}")
    try:
        overrides = json.loads(value) if value.strip() else {}
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: not JSON ({err})") from None
    if not isinstance(overrides, dict):
        raise argparse.ArgumentTypeError(f"{text!r}: the overrides must be a JSON object")
    return name, overrides


def _add_engine_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Ray")
    g.add_argument("--address", help="join this Ray cluster ('auto' or HOST:PORT) instead of "
                   "starting an embedded local one")
    g.add_argument("--num-cpus", type=int_in(1),
                   help="CPUs the embedded Ray may use (default: all)")
    g.add_argument("--num-gpus", type=int_in(0),
                   help="GPUs the embedded Ray may use (default: all)")
    g.add_argument("--cpus-per-trial", type=number_in(0, low_open=True), default=1,
                   help="CPUs each trial reserves; it trains with that many threads (default 1)")
    g.add_argument("--gpus-per-trial", type=number_in(0), default=0,
                   help="GPUs each trial reserves, e.g. 0.25 for four trials per GPU (default 0)")
    g.add_argument("--max-concurrent", type=int_in(1), help="at most this many trials at once")
    g.add_argument("--retries", type=int_in(0), default=0, help="retries of a failed trial")
    g.add_argument("--engine", choices=("ray", "processes"), default="ray",
                   help="ray (default): Ray Tune, local or a cluster; processes: plain local "
                   "worker processes, --max-concurrent at a time (no Ray needed)")
    g.add_argument("--backend", choices=("tensorflow", "jax"),
                   help="Keras backend of the trials (default: $KERAS_BACKEND, else tensorflow)")
    p.add_argument("--report", action="store_true", help="write the table only, train nothing")
    p.add_argument("--dry-run", action="store_true", help="list the trials and stop")


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    from zoo.experiments.benchmarks import realscale

    sub = parser.add_subparsers(dest="table", metavar="KIND", required=True,
                                help="cv (cross-validation of recipe variants) or realscale "
                                     "(the real-scale table)")
    cv = sub.add_parser("cv", help="k-fold subject cross-validation of one or more variants "
                        "of a recipe (and --final: the shipping retrain)", allow_abbrev=False)
    cv.add_argument("--task", required=True, help="a task name (see `zoo list tasks`)")
    cv.add_argument("--model", required=True, help="a model name (see `zoo list models`)")
    cv.add_argument("--label", help="the model's name in the tables (default: --model)")
    cv.add_argument("--recipe", help="recipe YAML (default: the shipped <task>-<model>.yaml)")
    cv.add_argument("--data-dir", help="dataset folder or archive")
    cv.add_argument("--folds", type=int_in(2), default=5,
                    help="subject folds (default 5; at most the training subjects)")
    cv.add_argument("--epochs", type=int_in(1), help="epochs of every run (default: the recipe's)")
    cv.add_argument("--option", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                    help="a model option for every trial, e.g. --option units=8")
    cv.add_argument("--set", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                    help="a training setting for every trial, e.g. --set lr=0.003")
    cv.add_argument("--variant", type=_json_pair, action="append", default=[],
                    metavar="NAME=JSON", help="a variant: TrainConfig overrides as JSON, e.g. "
                    "'imu={\"augment\": {\"rotation\": 15}}' (default: one, base={})")
    cv.add_argument("--final", action="store_true",
                    help="after the CV: retrain the CV's choice on all training subjects "
                    "(a fine-tune stage, init_from variant:NAME, from NAME's retrain, first)")
    cv.add_argument("--final-teacher", action="append", default=[], metavar="RUN_DIR",
                    help="with --final, for a variant that distils: the retrain's teacher (a "
                    "run trained on every training subject; repeat it for an ensemble)")
    cv.add_argument("--out", default="bench/sweeps/cv",
                    help="output folder of the trials (default bench/sweeps/cv)")
    cv.add_argument("--results", help="folder of the per-trial results files, meant to be "
                    "committed (default: results/<the name of --out> in the repository); 'none': "
                    "none")
    _add_engine_arguments(cv)
    rs = sub.add_parser("realscale", help="the real-scale table of docs/realscale.md",
                        allow_abbrev=False)
    realscale.add_table_arguments(rs)
    _add_engine_arguments(rs)


def check_sweep(args) -> None:
    """The usage checks that need neither Keras nor Ray (the dispatcher runs them first): the
    ranges the parser cannot see alone, the --set names and values, the --option ranges, an
    --out through a dangling symlink."""
    from zoo.training.config import check_option_ranges, check_settings
    from zoo.training.rundir import check_no_dangling_link

    check_no_dangling_link(Path(args.out))
    if args.table == "cv":
        names = [n for n, _ in args.variant]
        if len(set(names)) != len(names):
            raise ValueError(f"--variant names must differ: {names}")
        check_settings(dict(args.set), "--set")
        check_option_ranges(dict(args.option), "--option")
        for name, overrides in args.variant:
            check_settings(overrides, f"--variant {name}:")
        if args.final_teacher and not args.final:
            raise ValueError("--final-teacher is the teacher of the --final retrain; add --final")
    _check_resources(args)


def _check_resources(args) -> None:
    """A trial that asks for more than the embedded Ray has never starts: Tune waits for it for
    ever. Refused here instead (a cluster's size is not known before joining it)."""
    if args.address:
        return
    cpus = args.num_cpus or os.cpu_count() or 1
    if args.cpus_per_trial > cpus:
        where = f"--num-cpus {args.num_cpus}" if args.num_cpus else f"this machine's {cpus} CPUs"
        raise ValueError(f"--cpus-per-trial {args.cpus_per_trial:g} is more than {where}: no "
                         "trial could ever start")
    if args.num_gpus is not None and args.gpus_per_trial > args.num_gpus:
        raise ValueError(f"--gpus-per-trial {args.gpus_per_trial:g} is more than --num-gpus "
                         f"{args.num_gpus}: no trial could ever start")
    if args.gpus_per_trial > 1 and args.gpus_per_trial != int(args.gpus_per_trial):
        raise ValueError(f"--gpus-per-trial {args.gpus_per_trial:g}: a fraction of one GPU "
                         "(<= 1) or a whole number of GPUs")


def check_folds(args, config: dict) -> None:
    """``--folds`` against the training subjects the data holds (fold k holds out nobody when k is
    past the last subject, so each such trial would fail on Ray). Loads the data once (its
    cache). A dry run does not download, and a cluster's workers may see data this machine does
    not: either says so and goes on when the data is not here (a --data-dir typed for a dry run
    must exist)."""
    from zoo.training.config import TrainConfig
    from zoo.training.data.errors import DataNotFoundError
    from zoo.training.data.paths import OFFLINE_ENV
    from zoo.training.tasks import get_task

    if args.report:  # the table is rebuilt from the results files alone: no data needed
        return
    options = {k: v for k, v in TrainConfig.from_dict(config).task_options.items()
               if k not in ("val_subjects", "val_fraction")}
    saved = os.environ.get(OFFLINE_ENV)
    if args.dry_run:
        os.environ[OFFLINE_ENV] = "1"
    try:
        data = get_task(args.task, **{**options, "val_fold": [0, args.folds]}).load(args.data_dir)
    except DataNotFoundError as err:
        if not (args.address or (args.dry_run and args.data_dir is None)):
            raise
        _log.info(f"--folds {args.folds} not checked against the data: "
                  f"{str(err).split('. ')[0]}")
        return
    finally:
        if saved is None:
            os.environ.pop(OFFLINE_ENV, None)
        else:
            os.environ[OFFLINE_ENV] = saved
    # A subject task folds subjects; a user-data task (windows) its groups, or, without groups,
    # each class's windows (which it checked as it loaded).
    kind = "groups" if "train_groups" in data.info else "subjects"
    if f"train_{kind}" not in data.info:
        return
    subjects = sorted(data.info[f"train_{kind}"] + data.info[f"val_{kind}"])
    if args.folds > len(subjects):
        raise ValueError(f"--folds {args.folds}: the training data ({data.source}) holds "
                         f"{len(subjects)} {kind} {subjects}; at most {len(subjects)} folds "
                         f"(each fold holds out at least one of its {kind})")


def plan(args) -> list[Trial]:
    """The sweep's trials (see `zoo.experiments.trials`); ValueError for settings that no trial
    could train with, before Ray starts."""
    from zoo.experiments import trials

    backend = args.backend or os.environ.get("KERAS_BACKEND", "tensorflow")
    if args.table == "realscale":
        args.backend = backend
        return trials.realscale_trials(args)
    overrides = {"backend": backend, **dict(args.set)}
    if args.epochs is not None:
        overrides["epochs"] = args.epochs
    if args.option:
        overrides["model_options"] = dict(args.option)
    base = trials.base_config(args.task, args.model, args.recipe, overrides)
    variants = dict(args.variant) or {"base": {}}
    check_folds(args, base)
    todo = trials.cv_trials(args.task, args.label or args.model, base, variants, args.folds,
                            args.out, args.data_dir, results_dir(args))
    if not args.report:
        preflight(todo)
        if args.final:
            check_final_teachers(todo, args.final_teacher)
    return todo


# ------------------------------------------------------------------ refused before any fold
def preflight(todo: list[Trial]) -> None:
    """What a trial's ``zoo train`` refuses before its first epoch, checked for every trial
    now, before Ray starts (and by ``--dry-run``), not once the other variants' folds have
    trained: the monitored quantity and mixup against the task, the model built with its
    options (the layers' own checks: ``state_quant_bits`` without ``state_clip``...), an
    ``init_from`` run from outside the sweep against that model, and each distinct set of
    teachers loaded (`zoo.training.distill.load_teachers`: a finished run of the task, one
    output per class, the task's inputs). ValueError naming the trial."""
    from zoo.training import augment, distill, trainer
    from zoo.training.config import TrainConfig
    from zoo.training.tasks import get_task
    from zoo.training.warm_start import warm_start_weights

    built, taught = set(), set()
    for trial in todo:
        config = TrainConfig.from_dict(trial.config)
        try:
            task = get_task(config.task, **config.task_options)
            from_data = getattr(task, "options_from_data", None)
            if from_data is not None and trial.data_dir is not None:
                # A user-data task (windows) takes its shape and classes from the data, as
                # the trainer does; without them its model cannot be built.
                task = get_task(config.task, **{**config.task_options,
                                                **from_data(trial.data_dir)})
            if trial.variant not in built:  # the folds of a variant differ in seed and split
                built.add(trial.variant)
                trainer.check_monitor(config, task)
                augment.check_mixup(config.augment, task)
                probe = trainer.build_model(config, task)
                if config.init_from and trial.parent is None:  # not a run of this sweep
                    warm_start_weights(probe, config.init_from)
            teachers = json.dumps(config.distill, sort_keys=True)
            if config.distill and teachers not in taught:
                taught.add(teachers)
                distill.load_teachers(config.distill, task)
        except (ValueError, TypeError, FileNotFoundError) as err:
            raise ValueError(f"{trial.name}: {err}") from None


def check_final_teachers(todo: list[Trial], teacher: list[str]) -> None:
    """``--final``'s teacher, checked before any fold trains: given exactly when a variant
    distils (the CV may choose it, and its retrain then needs one), and loaded against the
    task of the retrain (every training subject) as the retrain will load it."""
    from zoo.training import distill
    from zoo.training.tasks import get_task

    distilling = sorted({t.variant for t in todo if t.settings.distill})
    if teacher and not distilling:
        raise ValueError(f"--final-teacher {' '.join(teacher)}: no variant distils (no distill "
                         "setting), so no retrain would learn from it; leave it out")
    if distilling and not teacher:
        raise ValueError(
            f"variant(s) {', '.join(distilling)} distil, each fold from its own teacher; if the "
            "CV chooses one, its --final retrain on every training subject needs its teacher "
            "named: add --final-teacher RUN_DIR (checked now, before any fold trains)")
    for variant in distilling:
        settings = next(t for t in todo if t.variant == variant).settings
        options = {k: v for k, v in settings.task_options.items()
                   if k not in ("val_subjects", "val_fold")}
        task = get_task(settings.task, **{**options, "val_fraction": 0.0})
        try:
            distill.load_teachers({**settings.distill, "teacher": teacher}, task)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"--final-teacher (the retrain of variant {variant}): {err}") \
                from None


def results_dir(args) -> Path | None:
    """Where a CV sweep's results files go (`zoo.experiments.trials`)."""
    if args.results == "none":
        return None
    if args.results:
        return Path(args.results)
    return results_root() / Path(args.out).resolve().name


def execute(todo: list[Trial], args) -> int:
    """Train the unfinished trials of ``todo`` (Ray or local processes); 1 if any failed."""
    from zoo.experiments import engine, trials

    for t in todo:  # results files of runs finished before there were any
        if t.result and trials.recorded(t) is None:
            trials.record_result(t)
    left = [t for t in todo if not trials.is_finished(t)]
    _log.info(f"{len(todo) - len(left)} of {len(todo)} trials already finished (reused); "
              f"{len(left)} to run")
    if not left or args.report:
        return 0
    backend = left[0].settings.backend
    if args.engine == "processes":
        failed = engine.run_processes(left, max_concurrent=args.max_concurrent or 1,
                                      threads=max(1, int(args.cpus_per_trial)),
                                      backend=backend)
    else:
        failed = engine.run(left, out=args.out, address=args.address, num_cpus=args.num_cpus,
                            num_gpus=args.num_gpus, cpus_per_trial=args.cpus_per_trial,
                            gpus_per_trial=args.gpus_per_trial,
                            max_concurrent=args.max_concurrent, retries=args.retries,
                            backend=backend)
    for run_dir in failed:
        _log.info(f"failed: {run_dir} (its log: {run_dir}.log)")
    return 1 if failed else 0


def record_plan(out: Path, todo: list[Trial]) -> None:
    """Add this sweep's trials to ``<out>/sweep.json``. Several sweeps may share one ``--out`` (a
    campaign script runs its SiRNN, GRU and LSTM sweeps side by side): each replaces its own
    earlier entries (by run directory) and keeps the others', so the plan holds every trial of
    the folder, and ``argv`` lists each command once. A lock makes the read-modify-write whole."""
    import fcntl

    from zoo.core.storage import write_json_atomic

    out.mkdir(parents=True, exist_ok=True)
    path = out / "sweep.json"
    with open(out / ".sweep.json.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        plan = json.loads(path.read_text()) if path.is_file() else {}
        mine = {t.run_dir for t in todo}
        trials = ([t for t in plan.get("trials", []) if t["run_dir"] not in mine]
                  + [t.to_dict() for t in todo])
        commands = plan.get("argvs") or ([plan["argv"]] if plan.get("argv") else [])
        commands = [c for c in commands if c != sys.argv] + [sys.argv]
        write_json_atomic(path, {"argv": sys.argv, "argvs": commands, "trials": trials})


def write(out: Path, name: str, text: str, data=None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(text)
    if data is not None:
        (out / f"{name}.json").write_text(json.dumps(data, indent=1, default=str))


def report_cv(todo: list[Trial], out: Path) -> tuple[str, list[dict]]:
    from zoo.experiments import tables

    rows = tables.cv_rows(todo)
    text = tables.cv_table(rows)
    paired = tables.paired_table(rows)
    if paired:
        text += "\n" + paired
    write(out, "results", text, rows)
    return text, rows


def run_final(todo: list[Trial], rows: list[dict], args) -> int:
    """The shipping retrain of each (task, model)'s CV choice, then ``final.md`` (printed). A
    choice that fine-tunes another variant retrains after that variant's retrain (`plan_final`):
    one `execute` round per stage, parents first, so a round starts only from finished runs."""
    from zoo.experiments import tables

    try:
        chains = plan_final(todo, rows, args.out, args.final_teacher or None)
    except (ValueError, FileNotFoundError) as err:
        print(f"zoo sweep cv --final: error: {err}", file=sys.stderr)
        return 2
    if not chains:
        _log.info("--final: no variant has all its planned folds finished yet; run the CV first")
        return 1
    code = 0
    for depth in range(max(map(len, chains))):
        stage = list({c[depth][1].run_dir: c[depth][1]
                      for c in chains if len(c) > depth}.values())  # each run once
        if code:  # a run they would start from failed
            _log.info(f"--final: {len(stage)} fine-tune stage(s) not started: the retrain they "
                      "start from failed")
            break
        code = execute(stage, args)
    text = tables.final_table([pair for chain in chains for pair in chain])
    write(Path(args.out), "final", text)
    print(text)
    return code


def plan_final(todo: list[Trial], rows: list[dict], out, teacher=None) -> list[list]:
    """The shipping retrains of the CV's choices (`tables.best_variants` of the CV ``rows``):
    one chain of (CV row, final `Trial`) per (task, model), parents first (`final_chain`);
    [] when no variant has its CV complete. ValueError for a retrain that cannot be planned."""
    from zoo.experiments import tables

    return [final_chain(row, rows, todo, out, teacher) for row in tables.best_variants(rows)]


def final_chain(row: dict, rows: list[dict], todo: list[Trial], out, teacher=None) -> list:
    """``row``'s variant's shipping retrain, preceded by the retrains it starts from: a variant
    with ``"init_from": "variant:NAME"`` fine-tunes NAME's retrain on every training subject
    (not fold 0's run of NAME), and NAME is retrained too, at NAME's own CV epoch, recursively.
    Root first; a parent's row copy says ``child`` (the variant that starts from it).
    ``teacher`` goes to the variants that distil (`trials.final_trial`)."""
    from zoo.experiments import trials

    lineage = [row]  # the choice, its parent, the parent's parent...
    while (name := trials.parent_of(_cv_trial(todo, lineage[-1]), todo)) is not None:
        lineage.append(_parent_row(rows, lineage, name))
    chain, parent = [], None
    stages = lineage[::-1]
    for stage, child in zip(stages, stages[1:] + [None]):
        cv = _cv_trial(todo, stage)
        # The final teacher is for a variant that distils; any other retrains without one.
        parent = trials.final_trial(cv, stage["epoch"], out,
                                    teacher if cv.settings.distill else None, parent=parent)
        chain.append(({**stage, "child": child["variant"]} if child else stage, parent))
    return chain


def _cv_trial(todo: list[Trial], row: dict) -> Trial:
    """The first planned CV trial of ``row``'s (task, label, variant): the settings of its
    retrain (what differs by fold, the retrain replaces)."""
    return next(t for t in todo if t.fold is not None
                and (t.task, t.label, t.variant) == (row["task"], row["label"], row["variant"]))


def _parent_row(rows: list[dict], lineage: list[dict], name: str) -> dict:
    """The CV row of variant ``name``, which ``lineage[-1]``'s variant fine-tunes; ValueError
    when its CV is not complete (its retrain needs its CV epoch) or the chain loops."""
    child = lineage[-1]
    if any(r["variant"] == name for r in lineage):
        raise ValueError(f"variant {child['variant']}: its init_from chain loops back to "
                         f"variant {name}")
    parent = next(r for r in rows if (r["task"], r["label"], r["variant"])
                  == (child["task"], child["label"], name))
    if len(parent["runs"]) < parent["planned"] or parent["epoch"] is None:
        raise ValueError(
            f"variant {child['variant']} fine-tunes variant {name} (init_from variant:{name}), "
            f"whose CV has {len(parent['runs'])} of {parent['planned']} folds done: its "
            f"shipping retrain starts from {name}'s own, at {name}'s CV epoch; finish {name}'s "
            "CV first (the same command without --final)")
    return parent


def run_sweep(args) -> int:
    """Plan, train what is not finished, print the table (the trials, with --dry-run)."""
    try:
        todo = plan(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"zoo sweep {args.table}: error: {err}", file=sys.stderr)
        return 2
    if args.dry_run:
        for t in todo:
            print(f"{t.task} / {t.label} / {t.variant} / fold {t.fold} -> {t.run_dir}")
        return 0
    out = Path(args.out)
    record_plan(out, todo)
    try:  # a damaged results file (another machine's, edited): one line naming it and the key
        code = execute(todo, args)
        if args.table == "realscale":
            from zoo.experiments.benchmarks import realscale

            print(realscale.report(args))
            return code
        text, rows = report_cv(todo, out)
    except CvResultError as err:
        print(f"zoo sweep {args.table}: error: {err}", file=sys.stderr)
        return 2
    print(text)
    if args.final and not args.report:
        code = run_final(todo, rows, args) or code
    return code


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=program_name("zoo.experiments.sweep"),
                                     description=__doc__.split("\n")[0], allow_abbrev=False)
    add_sweep_arguments(parser)
    args = parser.parse_args(argv)
    try:
        check_sweep(args)
    except ValueError as err:
        parser.error(str(err))
    return run_sweep(args)


if __name__ == "__main__":
    from zoo.core import logs

    logs.configure()  # run as a script (the campaign scripts): progress as `zoo sweep` prints it
    raise SystemExit(main())
