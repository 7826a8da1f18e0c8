"""``zoo ship``: a trained run as a pretrained model, ``models/pretrained/<model>.<name>/`` (see
`zoo.pretrained` for the folder, `zoo.pretrained_card.PretrainedCfg` for its card).

    zoo ship bench/realscale/har2/sirnn_clip_q8/seed1 --tag sirnn.har2 \
        --seed-runs bench/realscale/har2/sirnn_clip_q8/seed{0,1,2} \
        --command "python -m zoo.experiments.benchmarks.realscale ... (seed 1)"

Exports the run (int8 streaming step model for single-state cells, or with ``--quantize
int16x8`` TFLite's 16x8 one; else the float sequence model), checks it against the Keras model
on the whole test split (`zoo export`'s checks), copies the run's files and the export (without
its test set: the data stay with the user) into the tag's folder, and writes ``card.json`` with
the metrics, the seeds' subject-CV estimate, the command and the sha256 of every file (the card
type's `to_json`: what every reader reads back through `read_tag_card`). The tag
folder is written as every zoo directory is (`zoo.core.storage.replacing`): locked, built beside
it, swapped in only once complete; an existing folder is replaced only when it is a shipped tag
(its card.json names the tag).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import logging
import os
import shutil
import statistics
import sys
from pathlib import Path

from zoo.export.exportdir import C_ARRAY_FILES, TESTSET_FILE, ModelCard
from zoo.pretrained import pretrained_root, sha256
from zoo.pretrained_card import (C_BACKEND, CARD, CARD_VERSION, CFigures, Cost, Metrics,
                                 PretrainedCfg, PretrainedError, SeedResult, ShippedExport,
                                 TrainingData, check_tag_name, read_tag_card)
from zoo.core import storage
from zoo.core.cv_results import cv_result_files, read_cv_result
from zoo.training.rundir import RunDirectory

_log = logging.getLogger(__name__)

RUN_FILES = RunDirectory.FINAL_FILES
# Left out of the shipped export: the test set (megabytes of the user's data) and the C arrays
# (the .tflite bytes as text, 6x their size; `zoo export` or `xxd -i step.tflite` writes them).
EXPORT_SKIP = (TESTSET_FILE, *C_ARRAY_FILES)


def _shippable(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".")


def _seed_summary(run_dir: Path, record=None) -> SeedResult:
    """One seed's run, read once: its seed, validation subjects, and the validation accuracy of
    its selected epoch and its test accuracy (%, unrounded). ``record``: the run's
    `zoo.training.run_record.RunRecord` when the caller has read it."""
    run = RunDirectory(run_dir)
    record = record or run.record()
    config, metrics = record.config, record.metrics
    with open(run.history, newline="") as f:
        history = list(csv.DictReader(f))
    best_epoch = metrics.required("best_epoch", "a shipped tag's seed")
    return SeedResult(seed=config.seed,
                      val_subjects=(config.task_options_resolved or {}).get("val_subjects"),
                      val_accuracy=100 * float(history[best_epoch - 1]["val_accuracy"]),
                      test_accuracy_visible=100 * metrics.required("test_accuracy",
                                                                   "a shipped tag's seed"))


def cv_summaries(folder) -> list[SeedResult]:
    """A subject CV's results files (``FOLDER/fold<k>.json``, as ``zoo sweep cv`` writes them
    under ``results/<campaign>/<task>/<model>/<variant>/``) as the card's seeds: each fold's
    seed, its validation accuracy at the epoch kept and its visible test accuracy (%, as
    measured). For a tag whose CV folds' run folders are gone but whose results were
    committed; a file without those figures is refused naming it and the key
    (`zoo.core.cv_results`)."""
    files = cv_result_files(folder)
    if not files:
        raise ValueError(f"--cv-results {folder}: no fold*.json results files (zoo sweep cv "
                         "writes them under results/<campaign>/<task>/<model>/<variant>/)")
    summaries = []
    for path in files:
        result = read_cv_result(path)
        if result.summary.val is None or result.summary.test is None:
            missing = "summary.val" if result.summary.val is None else "summary.test"
            raise ValueError(f"{path}: {missing} is null (the fold had no such split); a "
                             "tag's CV needs each fold's validation and test accuracy")
        summaries.append(SeedResult(seed=result.config.get("seed", 0), val_subjects=None,
                                    val_accuracy=float(result.summary.val),
                                    test_accuracy_visible=float(result.summary.test)))
    return summaries


QUANTIZATIONS = ("int8", "int16x8")  # what a shipped integer export may be (`zoo export`'s names)


def _export(run_dir: Path, stage: Path, data_dir, quantize: str = "int8") -> tuple[ModelCard, str]:
    """Export into ``stage`` the best integer form the model has, in ``quantize`` (int8, or
    int16x8: 16-bit activations and state, 8-bit weights): the streaming step model (one state
    vector); else, for a model with no recurrent layer (the DS-CNN), the whole-window model;
    else the float sequence model (Keras's LSTM: two states, and the int8 sequence conversion
    of its loop crashes the converter, TensorFlow #75140)."""
    from zoo.export.exporter import export_run
    from zoo.export.step import StepFormError

    if quantize not in QUANTIZATIONS:
        raise ValueError(f"--quantize {quantize!r}: valid: {', '.join(QUANTIZATIONS)}")
    if _is_recurrent(run_dir):
        folder = f"export-step-{quantize}"
        try:
            return export_run(run_dir, stage / folder, quantize=quantize, form="step",
                              data_dir=data_dir), folder
        except StepFormError as err:  # e.g. LSTM: two states, no step form (any other failure
            # of the step export stops the ship: a float model would go out in its place)
            _log.warning("no %s step export (%s)", quantize, err)
        quantize = "none"
    folder = f"export-sequence-{quantize}"
    _log.warning("shipping the %s sequence model", "float" if quantize == "none" else quantize)
    return export_run(run_dir, stage / folder, quantize=quantize, form="sequence",
                      data_dir=data_dir), folder


def _is_recurrent(run_dir: Path) -> bool:
    from zoo.training.runs import load_keras_model
    from zoo.layers import recurrent_layers

    return bool(recurrent_layers(load_keras_model(RunDirectory(run_dir).model)))


def _card(tag: str, run_dir: Path, export_card: ModelCard, export_name: str, seed_runs,
          command: str, files: dict, cv: list | None = None) -> PretrainedCfg:
    """The tag's card from the run, its seeds (``cv``: `cv_summaries` in their place) and the
    export `zoo export` just checked."""
    record = RunDirectory(run_dir).record()
    config, metrics = record.config, record.metrics
    summaries = (cv or [_seed_summary(Path(r)) for r in seed_runs]
                 or [_seed_summary(run_dir, record)])
    seeds = [s.val_accuracy for s in summaries]
    accuracy = export_card.accuracy
    frames = config.frames_per_step
    settings = config.settings
    return PretrainedCfg(
        version=CARD_VERSION, tag=tag, model=config.model, task=config.task,
        # the raw window: the loader puts the Reshape to the model's frames in front
        input_shape=(export_card.timesteps * frames, export_card.features // frames),
        frames_per_step=frames,
        num_classes=export_card.classes, class_names=export_card.class_names,
        parameters=metrics.required("parameters", "a shipped tag's card"),
        metrics=Metrics(
            val_accuracy_subject_cv_mean=round(statistics.mean(seeds), 2),
            val_accuracy_subject_cv_std=round(statistics.stdev(seeds), 2) if len(seeds) > 1 else None,
            test_accuracy_visible=round(100 * metrics.required("test_accuracy",
                                                               "a shipped tag's card"), 2),
            test_accuracy_visible_seeds=[round(s.test_accuracy_visible, 2) for s in summaries],
            export_accuracy=round(100 * accuracy.tflite, 2),
            export_float_accuracy=round(100 * accuracy.keras_float, 2),
            export_argmax_agreement=round(100 * accuracy.argmax_agreement, 2)),
        export=ShippedExport(folder=export_name, form=export_card.form,
                             quantize=export_card.quantize, bytes=export_card.bytes.to_dict(),
                             total_bytes=export_card.total_bytes,
                             tflite_micro_arena_bytes=export_card.tflite_micro.arena_bytes
                             if export_card.tflite_micro else None),
        cost=signal_cost(config.task, frames, export_card),
        data=TrainingData(task_options=dict(config.task_options_resolved or {}),
                          **{f"{split}_windows": metrics.required(f"data.{split}", "a tag's card")
                             for split in ("train", "val", "test")},
                          source=Path(metrics.required("data.source", "a tag's card")).name,
                          seeds=[dataclasses.replace(s, val_accuracy=round(s.val_accuracy, 2),
                                                     test_accuracy_visible=round(s.test_accuracy_visible, 2))
                                 for s in summaries],
                          seed=config.seed),
        training={k: getattr(settings, k) for k in TRAINING_KEYS}
                 | {"model_options": (None if config.model_options_resolved is None
                                      else dict(config.model_options_resolved)),
                    "best_epoch": metrics.best_epoch, "epochs_run": metrics.epochs_run},
        command=command, files=files)


# Cortex-M4 instructions of the C integer log-mel front end per 10 ms hop (`kws_stream_write` of
# 160 samples, -O2, qemu-arm; tools/cortexm/kws_measure.py, docs/kws.md section 7): a speech
# model's features cost this on top of its steps.
INT_FRONTEND_M4_INSTRUCTIONS_PER_HOP = 52_308


def signal_cost(task_name: str, frames_per_step: int, export_card: ModelCard,
                figures: CFigures | None = None) -> Cost:
    """The tag's `Cost` per second of signal: the task's rate and window, the export's form (a
    step per ``frames_per_step`` rows, or a whole window at once), the front end its features
    need, and the C figures' instructions per step when measured (``tools/cortexm/c_cards.py``
    adds them later through `record_c_figures`)."""
    from zoo.training.tasks import get_task

    task = get_task(task_name)
    if task.rows_per_second is None or task.window_seconds is None:
        raise ValueError(f"task {task_name!r} has no rows_per_second / window_seconds: no cost "
                         "per second of signal to put on its card")
    if export_card.form == "step":
        steps_per_second = task.rows_per_second / frames_per_step
    else:  # the whole window at once, once per window
        steps_per_second = 1 / task.window_seconds
    # A speech model's features come from the zoo's C integer log-mel front end on a device:
    # it feeds the models trained on the float log-mel features at the same int8 accuracy too
    # (docs/kws.md section 7: SiRNN 78.54 % on both).
    frontend = (0.0 if export_card.frontend is None
                else task.rows_per_second * INT_FRONTEND_M4_INSTRUCTIONS_PER_HOP)
    per_step = None if figures is None else figures.cortex_m4_instructions_per_step_O2
    return Cost.derive(window_seconds=task.window_seconds, steps_per_second=steps_per_second,
                       instructions_per_step=per_step, frontend_instructions_per_second=frontend,
                       runtime=None if figures is None else C_BACKEND,
                       measured_by=None if figures is None else figures.measured_by)


# The run's hyperparameters a card records (``training``), as its config has them.
TRAINING_KEYS = ("optimizer", "lr", "batch_size", "epochs", "lr_decay_epochs", "lr_decay_factor",
                 "clipnorm", "early_stopping_patience", "monitor")


def pack(folder: Path, export_name: str) -> dict:
    """Make ``folder`` what ships and return its files' sha256: the model without its optimizer
    state (a trained model needs none; Adam's two moments triple the file), no test set or C
    arrays, none of the zoo's hidden bookkeeping files (markers, lock files; a wheel's package
    data would drop them anyway). Other hidden files are the user's and stay (unlisted)."""
    import keras

    import zoo

    zoo.register_layers()  # whatever imported Keras first in this program

    model_path = RunDirectory(folder).model
    model = keras.saving.load_model(model_path, compile=False)
    stripped = model_path.with_name(f"{model_path.stem}.tmp{model_path.suffix}")
    model.save(stripped)
    os.replace(stripped, model_path)
    for skipped in EXPORT_SKIP:
        (folder / export_name / skipped).unlink(missing_ok=True)
    for hidden in [p for p in folder.rglob(".*") if _bookkeeping(p, folder)]:
        hidden.unlink()
    return {p.relative_to(folder).as_posix(): sha256(p)
            for p in sorted(folder.rglob("*")) if _shippable(p) and p.name != CARD}


def _bookkeeping(path: Path, folder: Path) -> bool:
    """A hidden file the zoo wrote: a marker (but the folder's own, which `_swap_in_tag`
    removes once the folder is in place), a swap tag or one of its lock files."""
    if path == folder / storage.PRETRAINED_MARKER or not path.is_file() or path.is_symlink():
        return False
    return path.name in (*storage.MARKERS, storage.ASIDE_TAG) or storage.is_zoo_lock(path)


def check_tag(tag: str) -> None:
    """``tag`` must be a tag name (it becomes a folder name in --dest); ValueError otherwise."""
    check_tag_name(tag, "--tag")


def _is_shipped(folder: Path, tag: str) -> bool:
    """Whether ``folder`` is a tag the zoo shipped: a real folder whose card.json names ``tag``
    and lists its files (or one `ship` is replacing, with its marker)."""
    if storage.owned(folder, storage.PRETRAINED_MARKER):
        return True
    if folder.is_symlink() or not folder.is_dir() or folder.name != tag:
        return False
    try:
        read_tag_card(folder / CARD)
    except PretrainedError:
        return False
    return True


def _check_tag_folder(final: Path, tag: str) -> None:
    """An existing ``final`` is replaced only when it is a shipped tag (`_is_shipped`)."""
    storage.check_out(final, storage.PRETRAINED_MARKER, True, writer="zoo ship",
                      what="pretrained tag folder", ours=lambda f: _is_shipped(f, tag),
                      option="--tag", foreign=(
                          f"{final} was not written by `zoo ship` (no {CARD} naming {tag}); "
                          "only a shipped tag is replaced. Choose another --tag or --dest, or "
                          "move it away yourself (nothing was changed)."))


def _swap_in_tag(replacement: storage.Replacement, tag: str) -> None:
    """Swap the complete staging folder in for the tag. A shipped tag carries no marker (its
    card names it), so the old folder gets one first (the swap moves aside only what is
    marked) and the new folder loses its own once in place."""
    final = replacement.target
    if _is_shipped(final, tag) and not storage.owned(final, storage.PRETRAINED_MARKER):
        storage.write_marker(final, storage.PRETRAINED_MARKER)
    replacement.swap_in()
    (final / storage.PRETRAINED_MARKER).unlink(missing_ok=True)


def _tag_folder(tag: str, dest) -> Path:
    """``DEST/TAG`` (symlinks resolved), once ``tag`` is checked to be a name."""
    check_tag(tag)
    return storage.real_target((Path(dest) if dest else pretrained_root()) / tag, "--tag")


def repack(tag: str, dest=None) -> PretrainedCfg:
    """Apply `pack` to an already shipped folder and rewrite its card's file list (built in a
    staging copy and swapped in, as `ship` does)."""
    final = _tag_folder(tag, dest)
    if not (final / CARD).is_file():
        raise FileNotFoundError(f"--repack: {final} is not a shipped tag (no {CARD}); shipped "
                                f"in {final.parent}: {', '.join(_shipped_tags(final.parent))}")
    check = functools.partial(_check_tag_folder, tag=tag)
    with storage.replacing(final, storage.PRETRAINED_MARKER, "pretrained tag folder",
                           check=check, option="--dest") as replacement:
        stage = replacement.stage()
        shutil.copytree(final, stage, symlinks=True, dirs_exist_ok=True)
        card = read_tag_card(final / CARD)  # the staging copy holds the same card, named otherwise
        card = card.replace(files=pack(stage, card.export.folder))
        (stage / CARD).write_text(card.to_json())
        _swap_in_tag(replacement, tag)
    return card


def _shipped_tags(dest: Path) -> list[str]:
    """The tags shipped in ``dest``: its folders with a card, but the zoo's hidden ones (a
    killed ship's staging ``.T.partial-PID``, an aside ``.T.old``), which are no tags."""
    return sorted(p.parent.name for p in dest.glob(f"*/{CARD}")
                  if not p.parent.name.startswith(".")) or ["none"]


def ship(run_dir, tag: str, *, seed_runs=(), command: str, data_dir=None, dest=None,
         quantize: str = "int8", keep_as: str | None = None, archive=None,
         cv_results=None) -> PretrainedCfg:
    """Ship the finished run ``run_dir`` as ``DEST/TAG`` with its ``quantize`` export
    (`zoo.core.storage.replacing`: built in a staging folder beside it, swapped in once
    complete; an existing folder is replaced only when it is a shipped tag).

    ``cv_results``: the folder of the recipe's subject-CV results files (`cv_summaries`), the
    card's CV in place of ``seed_runs`` (one or the other).

    ``keep_as``: the generation being replaced moves into ``ARCHIVE/KEEP_AS`` in the same
    step (its card's tag renamed, its files as they were; ``archive`` defaults to the
    ``archive/`` folder beside DEST): copied there complete once the new tag is built, before
    the new one is swapped in. Checked before anything is exported: DEST/TAG must be a shipped
    tag and ARCHIVE/KEEP_AS must not exist.

    Example:

    ```python
    ship("runs/har2-g6", "sirnn.har2", command="zoo train ...", keep_as="sirnn.har2_gen6")
    ```
    """
    final = _tag_folder(tag, dest)
    kept = _keep_target(final, tag, keep_as, archive) if keep_as is not None else None
    run_dir = Path(run_dir)
    if cv_results is not None and seed_runs:
        raise ValueError("--cv-results and --seed-runs both give the card's CV: give one")
    cv = cv_summaries(cv_results) if cv_results is not None else None
    for run in (run_dir, *map(Path, seed_runs)):
        RunDirectory(run).check_finished()
    check = functools.partial(_check_tag_folder, tag=tag)
    with storage.shared(run_dir), \
            storage.replacing(final, storage.PRETRAINED_MARKER, "pretrained tag folder",
                              check=check, option="--dest") as replacement:
        stage = replacement.stage()
        for name in RUN_FILES:
            shutil.copy2(run_dir / name, stage / name)
        export_card, export_name = _export(run_dir, stage, data_dir, quantize)
        files = pack(stage, export_name)
        card = _card(tag, run_dir, export_card, export_name, seed_runs, command, files, cv)
        (stage / CARD).write_text(card.to_json())
        if kept is not None:
            _keep(final, kept)
        _swap_in_tag(replacement, tag)
    size = sum(p.stat().st_size for p in final.rglob("*") if p.is_file())
    _log.info("shipped %s: %s bytes in %s", tag, f"{size:,}", final)
    return card


def _keep_target(final: Path, tag: str, keep_as: str, archive) -> Path:
    """``ARCHIVE/KEEP_AS`` for the tag in ``final``, refused (ValueError) unless ``final`` is a
    shipped tag and the target a new folder."""
    check_tag_name(keep_as, "--keep-as")
    if keep_as == tag:
        raise ValueError(f"--keep-as {keep_as!r} is the tag being shipped; name the generation "
                         f"it replaces, e.g. {tag}_gen2")
    if not _is_shipped(final, tag):
        raise ValueError(f"--keep-as {keep_as}: {final} is not a shipped tag (no valid {CARD}); "
                         "there is no generation to keep")
    folder = Path(archive) if archive else final.parent.parent / "archive"
    target = storage.real_target(folder / keep_as, "--keep-as")
    if os.path.lexists(target):
        raise ValueError(f"--keep-as {keep_as}: {target} already exists; choose another name "
                         "(nothing was changed)")
    return target


def _keep(final: Path, target: Path) -> None:
    """A copy of the shipped tag ``final`` as ``target`` (its card's tag its new folder name,
    every other byte as it was), built beside it and swapped in once complete."""
    check = functools.partial(_check_new_folder, option="--keep-as")
    with storage.replacing(target, storage.PRETRAINED_MARKER, "archived tag folder",
                           check=check, option="--keep-as") as replacement:
        stage = replacement.stage()
        shutil.copytree(final, stage, dirs_exist_ok=True,
                        ignore=lambda d, names: [n for n in names if _bookkeeping(Path(d) / n, final)])
        card = read_tag_card(final / CARD).replace(tag=target.name)
        (stage / CARD).write_text(card.to_json())
        replacement.swap_in()
    (target / storage.PRETRAINED_MARKER).unlink(missing_ok=True)
    _log.info("kept the replaced %s as %s", final.name, target)


def _check_new_folder(target: Path, option: str) -> None:
    if os.path.lexists(target) and (not target.is_dir() or any(target.iterdir())):
        raise storage.StorageError(f"{option} {target} already exists; choose another name")


def record_c_figures(tag_folder, figures) -> PretrainedCfg:
    """Put the C backend's measured figures (a `CFigures`, or its dict as
    ``tools/cortexm/c_cards.py`` measures it) into the card of the shipped tag in
    ``tag_folder`` as ``export.c``, and its cost per step, window and second with them
    (`PretrainedCfg.with_c_figures`): checked as every card is, written atomically under the
    tag's lock. ``card.json`` is not among the hashed files: the tag's files stay as shipped.

    Example:

    ```python
    record_c_figures("models/pretrained/sirnn.har2", {"const_bytes": 6952, ...})
    ```
    """
    folder = storage.real_target(Path(tag_folder), "tag folder")
    if not isinstance(figures, CFigures):
        figures = CFigures.from_dict(figures, "export.c")
    with storage.exclusive(folder, "pretrained tag folder", "tag"):
        card = read_tag_card(folder / CARD).with_c_figures(figures)
        storage.write_text_atomic(folder / CARD, card.to_json())
    return card


PROFILE_MEASURED_BY = "zoo ship --tag {tag} --profile (zoo profile: {cc}, {qemu})"


def profile_records(result: dict) -> dict:
    """``{target: TargetCost}`` from a ``zoo profile`` result (`zoo.export.profile.profile`);
    a target that was not bit-exact with the host build is refused, not recorded."""
    from zoo.pretrained_card import TargetCost

    records = {}
    for name, figures in result["targets"].items():
        if not figures["bit_exact"]:
            raise ValueError(f"zoo profile: {name} is not bit-exact with the host build "
                             f"({figures.get('mismatch')}); nothing recorded")
        records[name] = TargetCost(
            **{k: figures[k] for k in ("instructions_per_step", "instructions_per_window",
                                       "instructions_per_second", "flash_bytes", "ram_bytes",
                                       "bit_exact")},
            frontend_instructions_per_step=figures.get("frontend_instructions_per_hop"),
            note=figures.get("note"))
    return records


def record_profile(tag_folder, result: dict, measured_by: str) -> PretrainedCfg:
    """Put ``zoo profile``'s figures of every target into the card of the shipped tag in
    ``tag_folder`` (``cost.targets``), and its Cortex-M4 figures as ``export.c`` and the
    card's cost (a keyword tag: the model's part of the whole 10 ms hop as the step, the front
    end's as ``frontend_instructions_per_second``, so that per second is the hop end to end).
    Checked, atomic, under the tag's lock; ``card.json`` is not among the hashed files."""
    records = profile_records(result)
    m4 = result["targets"].get("cortex-m4")
    if m4 is None:
        raise ValueError("zoo profile's result has no cortex-m4 figures: the card's cost is "
                         "the Cortex-M4's")
    frontend = m4.get("frontend_instructions_per_hop") or 0.0
    step = round(m4["instructions_per_step"] - frontend, 1)
    c_export = result["c_export"]
    figures = CFigures(const_bytes=c_export["const_bytes"], state_bytes=c_export["state_bytes"],
                       cortex_m4_flash_bytes_Os=m4["flash_bytes"],
                       cortex_m4_ram_bytes=m4["ram_bytes"],
                       cortex_m4_instructions_per_step_O2=step,
                       bit_exact_with=c_export["bit_exact_with"], measured_by=measured_by)
    folder = storage.real_target(Path(tag_folder), "tag folder")
    with storage.exclusive(folder, "pretrained tag folder", "tag"):
        card = read_tag_card(folder / CARD)
        cost = Cost.derive(window_seconds=card.cost.window_seconds,
                           steps_per_second=card.cost.steps_per_second,
                           instructions_per_step=step,
                           frontend_instructions_per_second=(
                               card.cost.steps_per_second * frontend if frontend
                               else card.cost.frontend_instructions_per_second),
                           runtime=C_BACKEND, measured_by=measured_by,
                           targets=records).with_head_from_targets()  # per window: head included
        card = card.replace(export=dataclasses.replace(card.export, c=figures), cost=cost)
        storage.write_text_atomic(folder / CARD, card.to_json())
    return card


def recompute_cost(tag: str, dest=None) -> PretrainedCfg:
    """Re-derive the card's cost totals of the shipped ``tag`` from the card's own measured
    figures (`Cost.with_head_from_targets`: per window and per second with the classifier
    head its Cortex-M4 target measured), nothing re-measured; only ``card.json`` is written
    (checked, atomic, under the tag's lock), never a hashed file. A card without a Cortex-M4
    target is left as it is."""
    folder = storage.real_target(_tag_folder(tag, dest), "tag folder")
    with storage.exclusive(folder, "pretrained tag folder", "tag"):
        card = read_tag_card(folder / CARD)
        cost = card.cost.with_head_from_targets()
        if cost != card.cost:
            card = card.replace(cost=cost)
            storage.write_text_atomic(folder / CARD, card.to_json())
    return card


def profile_tag(tag: str, dest=None) -> PretrainedCfg:
    """``zoo profile`` of the shipped ``tag`` on every target, recorded in its card
    (`record_profile`)."""
    import subprocess

    from zoo.export.profile import profile

    folder = _tag_folder(tag, dest)
    result = profile(str(folder), progress=lambda line: _log.info("  %s", line))
    first = lambda tool: subprocess.run([tool, "--version"], capture_output=True,
                                        text=True).stdout.splitlines()[0]
    measured_by = PROFILE_MEASURED_BY.format(tag=tag, cc=first("arm-none-eabi-gcc"),
                                             qemu=first("qemu-arm"))
    return record_profile(folder, result, measured_by)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("run_dir", nargs="?", help="the run to ship (not with --repack)")
    parser.add_argument("--repack", action="store_true",
                        help="re-pack the already shipped TAG (strip, drop, re-hash) and exit")
    parser.add_argument("--tag", required=True, help="MODEL.TASK, e.g. sirnn.har2")
    parser.add_argument("--seed-runs", nargs="*", default=[],
                        help="the run directories of every seed (the card reports their mean)")
    parser.add_argument("--cv-results", metavar="FOLDER",
                        help="instead of --seed-runs: the recipe's subject-CV results files "
                             "(FOLDER/fold<k>.json of zoo sweep cv), whose validation and test "
                             "accuracies the card reports")
    parser.add_argument("--command", help="the command that trained the run (required to ship)")
    parser.add_argument("--data-dir", help="dataset folder or archive (default: the run's)")
    parser.add_argument("--dest", help="pretrained folder (default: the package's)")
    parser.add_argument("--keep-as", metavar="NAME",
                        help="move the generation this ship replaces into the archive as NAME "
                             "(e.g. sirnn.har2_gen5), in the same step")
    parser.add_argument("--archive", help="where --keep-as puts it (default: the archive/ "
                                          "folder beside --dest's)")
    parser.add_argument("--profile", action="store_true",
                        help="measure the already shipped TAG with zoo profile on every target "
                             "(Cortex-M0+ ... M55, RV32IMC) and write the figures into its card, "
                             "then exit")
    parser.add_argument("--recompute-cost", action="store_true",
                        help="re-derive the already shipped TAG's cost per window and per second "
                             "(the classifier head included) from its card's own measured "
                             "figures, nothing re-measured, then exit")
    parser.add_argument("--quantize", choices=QUANTIZATIONS, default="int8",
                        help="the shipped export's integer form: int8 (default), or int16x8 "
                             "(16-bit activations and state, 8-bit weights; TFLite Micro runs "
                             "it, the zoo's C backend does not)")
    args = parser.parse_args(argv)
    if not (args.repack or args.profile or args.recompute_cost) and (not args.run_dir
                                                                      or not args.command):
        parser.error("shipping a run needs RUN_DIR and --command")
    if args.recompute_cost and (args.repack or args.profile or args.run_dir):
        parser.error("--recompute-cost rewrites an already shipped TAG's card: no RUN_DIR, no "
                     "--repack, no --profile")
    if args.profile and (args.repack or args.run_dir):
        parser.error("--profile measures an already shipped TAG: no RUN_DIR, no --repack")
    if args.repack and args.keep_as:
        parser.error("--keep-as applies to shipping a run, not to --repack")
    from zoo.export.exporter import AccuracyDropError
    from zoo.export.profile.counting import MeasurementError

    try:
        if args.profile:
            card = profile_tag(args.tag, args.dest)
            for name, figures in card.cost.targets.items():
                print(f"{args.tag} {name}: {figures.instructions_per_step:,.1f} instructions / "
                      f"step, {figures.instructions_per_second:,} / s, {figures.flash_bytes:,} B "
                      f"flash, {figures.ram_bytes:,} B RAM")
        elif args.repack:
            repack(args.tag, args.dest)
        elif args.recompute_cost:
            cost = recompute_cost(args.tag, args.dest).cost
            print(f"{args.tag}: {cost.instructions_per_window:,} instructions / window, "
                  f"{cost.instructions_per_second:,} / s (head {cost.head_instructions})")
        else:
            ship(args.run_dir, args.tag, seed_runs=args.seed_runs, command=args.command,
                 data_dir=args.data_dir, dest=args.dest, quantize=args.quantize,
                 keep_as=args.keep_as, archive=args.archive, cv_results=args.cv_results)
    except AccuracyDropError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 3
    except (ValueError, OSError, storage.StorageError, MeasurementError) as err:
        # OSError: e.g. a read-only --dest; MeasurementError: a build or QEMU run of --profile
        # (ValueError: PretrainedError, a bad --tag, an export's CardError among them)
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from zoo.core import logs

    logs.configure()  # run as a script: print the library's messages as `zoo` does
    raise SystemExit(main())
