"""The accuracy x device-cost frontier (issue 28 item 3, redrawn for issue 50 item 3):
subject-CV accuracy against the Cortex-M4 cost of each graph per window and per second of
signal (issue 43 item 2: a step of a model that reads k samples at once covers k samples), as a
table (docs/frontier.md, docs/frontier_<task>.md) and a plot (docs/img/frontier_<task>.png,
drawn by `zoo.experiments.frontier_plot`: labels on the non-dominated points, the issue's goal).

Three inputs, all committed:

- the device JSON (``results/frontier/har2_device.json`` in the repository, written by
  ``tools/cortexm/c_frontier.py``): per graph variant its MACs per step, Cortex-M4 instructions per
  step (-O2), flash (-Os) and RAM of its C export, measured on a tiny run of that graph (the cost
  of a graph does not depend on how well it was trained);
- the per-trial CV results files of ``zoo sweep cv`` (``results/<study>/<task>/
  <label>/<variant>/fold<k>.json``): the validation accuracy at the CV epoch, mean ± sd over the
  folds done (`zoo.experiments.tables.cv_rows`, the sweep's own table code);
- the installed tags' cards (`zoo.pretrained_card`): their C figures (``export.c``), the cost of
  the graphs the device JSON has not measured (a model reading several samples per step).

A CV variant is joined to the device variant with the same graph: the same model, the same
graph-defining options (units, rank, premultiply, QAT, state clip, FastGRNN ranks, the GRU's
step graph) and samples per step (the task option ``frames_per_step``), the model's registered
defaults filling what a config leaves out, so augmentation or learning-rate variants share
their graph's cost. Per window = per step x steps per window (window samples / samples per
step), plus the head once where it was measured; per second = per window / the window's
seconds (the task's rate). Variants without CV results yet are in the table with '-' and not in
the plot; rerun when the campaign has finished:

    zoo bench frontier            # HAR-2; --task dsa19 for DSA-19 (python -m zoo.experiments.frontier)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from zoo.core.cv_results import cv_result_files, read_cv_result
from zoo.experiments.benchmarks.realscale import mean_sd
from zoo.experiments.frontier_plot import Goal, key_table, plotted, write_plot
from zoo.experiments.trials import Trial, results_root

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def defaults(task: str) -> dict:
    """Each path option's default for ``task``: the device JSON and campaign folders of its
    name under results/ (``-int8``: `zoo bench fold-int8`'s per-fold files), its page and plot
    (HAR-2's page is docs/frontier.md, another task's docs/frontier_<task>.md)."""
    page = "frontier.md" if task == "har2" else f"frontier_{task}.md"
    return {"device": results_root() / "frontier" / f"{task}_device.json",
            "results": [results_root() / f"{task}-campaign"],
            "int8_results": [results_root() / f"{task}-campaign-int8"],
            "doc": REPO / "docs" / page, "plot": REPO / "docs" / "img" / f"frontier_{task}.png"}

# The options that change the exported step graph (and so its cost); the rest is training.
GRAPH_OPTIONS = ("units", "rank", "premultiply", "qat", "state_clip", "w_rank", "u_rank",
                 "step_graph")
# Issue 50's goals, drawn on the plot: the corner of fewer instructions per window (and flash
# bytes), at least the CV accuracy.
GOALS = {
    "har2": Goal(per_window=250_000, flash=8_192, accuracy=96.5, text=(
        "Issue 50's goal for HAR-2: a shipped model at >= 96.5 % (int8, subject CV) for <= "
        "250,000 Cortex-M4 instructions per 2.56 s window and <= 8 KB (8,192 B) of flash (the "
        "shaded corner of the plot).")),
    "dsa19": Goal(per_window=500_000, flash=None, accuracy=90.0, text=(
        "Issue 50's goal for DSA-19: >= 90 % (subject CV) for <= 500,000 Cortex-M4 "
        "instructions per 5 s window (the shaded corner of the plot; no flash bound).")),
}
TASK_NAMES = {"har2": "HAR-2", "dsa19": "DSA-19"}


def graph_key(model: str, options: dict, frames_per_step: int = 1) -> tuple:
    """What identifies a step graph: the model, its graph options (defaults filled in) and
    the samples it reads per step."""
    from zoo.registry import get_model_entry

    resolved = {**get_model_entry(model).options(), **options}
    return (model, *((name, resolved[name]) for name in GRAPH_OPTIONS if name in resolved),
            ("frames_per_step", frames_per_step))


def frames_of(config_or_figures: dict) -> int:
    """Samples per step of a CV config or a device variant (1 unless it says otherwise)."""
    from zoo.training.tasks.frames import frames_per_step_of

    return frames_per_step_of(config_or_figures if config_or_figures.get("frames_per_step")
                              else config_or_figures.get("task_options"))


def signal(task: str) -> tuple[int, float]:
    """(samples per window, seconds per window) of ``task`` (`zoo.training.tasks`)."""
    from zoo.training.tasks import get_task

    t = get_task(task)
    return t.window_shape[0], t.window_seconds


def card_variants(task: str, root: Path | None = None) -> dict[str, dict]:
    """Device variants from the installed tags of ``task`` that carry C figures (their cards'
    ``export.c``), keyed ``card: TAG``: the graphs the device JSON has not measured."""
    from zoo.pretrained import get_pretrained_cfg, list_pretrained

    variants = {}
    for tag in list_pretrained(root=root):
        card = get_pretrained_cfg(tag, root)
        c = card.export.c
        if card.task != task or c is None:
            continue
        variants[f"card: {tag}"] = {
            "model": card.model, "model_options": card.training.get("model_options") or {},
            "frames_per_step": card.frames_per_step, "parameters": card.parameters,
            "cortex_m4_instructions_per_step_O2": c.cortex_m4_instructions_per_step_O2,
            # the head once per window, where the card has it (zoo ship --profile)
            "cortex_m4_head_instructions_O2": card.cost.head_instructions,
            "cortex_m4_flash_bytes_Os": c.cortex_m4_flash_bytes_Os,
            "cortex_m4_ram_bytes": c.cortex_m4_ram_bytes, "const_bytes": c.const_bytes,
            "shipped": True, "source": f"models/pretrained/{tag}/card.json (export.c)",
            "bit_exact_with": c.bit_exact_with, "commands": [c.measured_by],
            "export_check": {"drop_points": card.metrics.export_drop_points,
                             "test_sequences": card.data.test_windows}}
    return variants


def earlier_generations(device: dict[str, dict]) -> list[str]:
    """The shipped device variants named after an installed tag whose card is now another
    graph: the tag's earlier generation, measured when it was the one shipped."""
    def key_of(fig):
        return graph_key(fig["model"], fig.get("model_options", {}), frames_of(fig))

    return [key for key, fig in device.items()
            if fig.get("shipped") and f"card: {key}" in device
            and key_of(device[f"card: {key}"]) != key_of(fig)]


def describe(model: str, options: dict, frames_per_step: int = 1) -> str:
    """A short name of a graph: ``sirnn 80u r16 premultiply QAT`` (``... 4/step`` when a step
    reads 4 samples)."""
    from zoo.registry import get_model_entry

    o = {**get_model_entry(model).options(), **options}
    words = [model, f"{o['units']}u"]
    if o.get("rank") is not None:
        words.append(f"r{o['rank']}")
    if "premultiply" in o:
        words.append("premultiply" if o["premultiply"] else "lean")
    if o.get("step_graph", "keras") != "keras":  # the GRU's lean step graph
        words.append(o["step_graph"])
    if o.get("w_rank") or o.get("u_rank"):
        words.append(f"W r{o.get('w_rank')} U r{o.get('u_rank')}")
    if o.get("qat"):
        words.append(f"QAT {o['qat']}")
    if frames_per_step > 1:
        words.append(f"{frames_per_step}/step")
    return " ".join(words)


def load_device(path: Path) -> dict[str, dict]:
    """The device JSON's variants (key -> figures); a clear error for a missing or bad file."""
    return read_device(path)[0]


# A device variant's figures that are numbers (or null: not measured), and those the tables
# read from every variant with a C export.
_NUMBERS = ("parameters", "macs_per_step", "cortex_m4_instructions_per_step_O2",
            "cortex_m4_flash_bytes_Os", "cortex_m4_ram_bytes", "cortex_m4_head_instructions_O2",
            "const_bytes")


def read_device(path: Path) -> tuple[dict[str, dict], dict]:
    """(variants, toolchain) of the device JSON, each variant checked for what the table, the
    plot and the document read: FileNotFoundError or ValueError naming the file and the
    variant's field, never a traceback from deep in the table."""
    path = Path(path)
    if not path.is_file():
        what = "is a folder, not a" if path.is_dir() else "no"
        raise FileNotFoundError(f"{path}: {what} device JSON; make it with "
                                "tools/cortexm/c_frontier.py")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a device JSON (JSON error: {err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("variants"), dict):
        raise ValueError(f"{path}: expected an object with 'variants' (key -> figures)")
    if not isinstance(data.get("toolchain", {}), dict):
        raise ValueError(f"{path}: 'toolchain' must be an object (cc, qemu, cpu)")
    for key, fig in data["variants"].items():
        _check_figures(fig, f"{path}: variant {key!r}")
    return data["variants"], data.get("toolchain", {})


def _check_figures(fig, where: str) -> None:
    from zoo.registry import get_model_entry

    if not isinstance(fig, dict):
        raise ValueError(f"{where}: expected an object of figures, got {type(fig).__name__}")
    if not isinstance(fig.get("model"), str) or not isinstance(fig.get("model_options", {}),
                                                                dict):
        raise ValueError(f"{where}: needs 'model' (a model name) and 'model_options' (an object)")
    try:
        get_model_entry(fig["model"])
    except ValueError as err:  # an unknown model, the valid ones listed
        raise ValueError(f"{where}: {err}") from None
    for name in _NUMBERS:
        value = fig.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"{where}: {name} must be a number (or null), got {value!r}")
    if "c_export_error" in fig:
        return
    ops = fig.get("step_ops")
    if not (isinstance(fig.get("source"), str) and isinstance(ops, dict)
            and isinstance(ops.get("histogram"), dict) and isinstance(ops.get("count"), int)):
        raise ValueError(f"{where}: needs 'source' and 'step_ops' (count, histogram), or "
                         "'c_export_error'")


def check_outputs(doc: Path, plot: Path) -> None:
    """``--doc`` and ``--plot`` checked before anything is drawn or written: files (not folders)
    whose folders exist or can be made, the plot in a format matplotlib writes (a name without
    one would be written elsewhere, as NAME.png)."""
    from matplotlib.figure import Figure

    for option, path in (("--doc", doc), ("--plot", plot)):
        if path.is_dir():
            raise ValueError(f"{option} {path} is a folder; name a file in it")
        blocked = next((parent for parent in path.parents
                        if parent.exists() and not parent.is_dir()), None)
        if blocked is not None:
            raise ValueError(f"{option} {path}: {blocked} is a file, not a folder")
    formats = Figure().canvas.get_supported_filetypes()
    if plot.suffix.lstrip(".").lower() not in formats:
        raise ValueError(f"--plot {plot}: name an image file, one of "
                         f"{', '.join('.' + f for f in sorted(formats))} (e.g. frontier.png)")


def results_trials(results: Path, task: str) -> list[dict]:
    """Trials (as `zoo.experiments.trials` makes them) for every planned fold of every variant that
    has a results file under ``results/<task>/<label>/<variant>/``; a fold without a file is a
    planned fold not done yet. The run directory named is the results file's own stem, which is
    no run, so `result_of` reads the results file."""
    trials = []
    for variant_dir in sorted(Path(results).glob(f"{task}/*/*")):
        done = {r.fold: r for r in map(read_cv_result, cv_result_files(variant_dir))}
        if not done:
            continue
        folds = max(r.folds for r in done.values())
        first = next(iter(done.values()))
        for fold in range(folds):
            result = done.get(fold, first)
            path = result.path if fold in done else variant_dir / f"fold{fold}.json"
            trials.append(Trial(task=task, label=first.label, variant=first.variant,
                                fold=fold, folds=folds, config=dict(result.config),
                                run_dir=str(path.with_suffix("")), result=str(path)))
    return trials


def cv_by_graph(results_dirs: list[Path], task: str) -> list[dict]:
    """`zoo.experiments.tables.cv_rows` of every results tree, each row with its graph key."""
    from zoo.experiments.tables import cv_rows
    from zoo.training.tasks.frames import frames_per_step_of

    rows = []
    for results in results_dirs:
        trials = results_trials(results, task)
        settings = {(t.label, t.variant): t.settings for t in trials}
        for row in cv_rows(trials):
            config = settings[(row["label"], row["variant"])]
            frames = frames_per_step_of(config.task_options)
            rows.append({**row, "study": Path(results).name,
                         "graph": graph_key(config.model, config.model_options, frames),
                         "describe": describe(config.model, config.model_options, frames)})
    return rows


def int8_drops(results_dirs: list[Path], task: str) -> dict[tuple, list[float]]:
    """(label, variant) -> each fold's int8 step model's drop below its Keras model on the fold's
    validation subjects (points), from ``zoo bench fold-int8`` results files."""
    drops: dict[tuple, list[float]] = {}
    for results in results_dirs:
        for path in sorted(Path(results).glob(f"{task}/*/*/fold*.json")):
            data = _read_json(path, "fold-int8 results file")
            if "drop" not in data:
                raise ValueError(f"{path}: not a fold-int8 results file (no 'drop')")
            drops.setdefault(path.parts[-3:-1], []).append(float(data["drop"]))
    return drops


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a {what} (JSON error: {err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a {what} (a JSON {type(data).__name__}, not an object)")
    return data


def frontier_rows(device: dict[str, dict], cv: list[dict],
                  drops: dict[tuple, list[float]] | None = None, task: str = "har2") -> list[dict]:
    """One row per CV variant (with its graph's device figures, or none measured), then one per
    device variant that no CV variant uses; each with its instructions per window and per
    second (`signal`); sorted by instructions per window. Where two device variants share a
    graph (a shipped tag and a 1-epoch run of it), CV rows take the shipped one and the other
    stays a row of its own."""
    by_graph: dict[tuple, str] = {}  # one device variant per graph: a shipped tag first
    for key, fig in sorted(device.items(), key=lambda item: (not item[1].get("shipped"), item[0])):
        by_graph.setdefault(graph_key(fig["model"], fig.get("model_options", {}), frames_of(fig)),
                            key)
    used, rows = set(), []
    for r in cv:
        key = by_graph.get(r["graph"])
        used.add(key)
        accuracy = r["val_at_epoch"]
        rows.append({"graph": r["describe"], "device_key": key, "device": device.get(key, {}),
                     "frames": r["graph"][-1][1],
                     "cv": f"{r['study']}: {r['label']} / {r['variant']}",
                     "accuracy": accuracy, "folds": r["folds"], "planned": r["planned"],
                     "epoch": r["epoch"], "drops": (drops or {}).get((r["label"], r["variant"]), []),
                     "parameters": r["runs"][0]["parameters"] if r["runs"] else None})
    for key, fig in device.items():
        if key not in used:
            rows.append({"graph": describe(fig["model"], fig.get("model_options", {}),
                                           frames_of(fig)),
                         "device_key": key, "device": fig, "frames": frames_of(fig), "cv": "-",
                         "accuracy": [],
                         "folds": [], "planned": 0, "epoch": None, "parameters": None,
                         "drops": []})
    samples, seconds = signal(task)
    for r in rows:
        per_step = r["device"].get("cortex_m4_instructions_per_step_O2")
        head = r["device"].get("cortex_m4_head_instructions_O2") or 0  # an older card: none
        r["per_window"] = None if per_step is None else per_step * samples / r["frames"] + head
        r["per_second"] = None if per_step is None else r["per_window"] / seconds
    inf = float("inf")
    return sorted(rows, key=lambda r: (r["per_window"] or inf, r["graph"], r["cv"]))


def _int(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def int8_drop(fig: dict, drops: list[float]) -> str:
    """The int8 step model's drop: per CV fold (mean ± sd, worst) where fold-int8 measured it,
    else for a shipped tag its export check on the visible test subjects; a tiny run's drop
    says nothing about a trained model."""
    if drops:
        return f"{mean_sd(drops)}, worst {max(drops):.2f} ({len(drops)} folds)"
    check = fig.get("export_check") or {}
    if not fig.get("shipped") or check.get("drop_points") is None:
        return "-"
    return f"{check['drop_points']:.2f} (shipped, {check.get('test_sequences')} test windows)"


def frontier_table(rows: list[dict]) -> str:
    lines = ["| graph | device variant | CV variant | params | MACs / step | M4 instructions / step "
             "(-O2) | / window | / second | flash (-Os, B) | RAM (B) | step ops | CV val % at the "
             "CV epoch (mean ± sd) | folds | int8 drop (points) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fig = r["device"]
        params = fig.get("parameters", r["parameters"])
        ops = fig.get("step_ops", {}).get("count")
        folds = f"{len(r['folds'])} / {r['planned']}" if r["planned"] else "-"
        note = " (no C export)" if "c_export_error" in fig else ""
        lines.append(
            f"| {r['graph']} | {r['device_key'] or '-'}{note} | {r['cv']} | {_int(params)} | "
            f"{_int(fig.get('macs_per_step'))} | {_int(fig.get('cortex_m4_instructions_per_step_O2'))} | "
            f"{_int(r['per_window'])} | {_int(r['per_second'])} | "
            f"{_int(fig.get('cortex_m4_flash_bytes_Os'))} | {_int(fig.get('cortex_m4_ram_bytes'))} | "
            f"{_int(ops)} | {mean_sd(r['accuracy'])} | {folds} | {int8_drop(fig, r['drops'])} |")
    return "\n".join(lines) + "\n"


def device_table(device: dict[str, dict]) -> str:
    """Every measured graph with what made it: source, step ops, C constants, the commands."""
    lines = ["| device variant | source | step ops | C constants (B) | head instructions (-O2) | "
             "C = TFLite Micro (test windows, logits / states) | commands |",
             "|---|---|---|---|---|---|---|"]
    for key, fig in sorted(device.items()):
        if "c_export_error" in fig:
            lines.append(f"| {key} | `{fig['source']}` | no C export: "
                         f"{fig['c_export_error'].splitlines()[-1][:200]} | - | - | - | "
                         f"{'; '.join(f'`{c}`' for c in fig.get('commands', []))} |")
            continue
        if "step_ops" not in fig:  # an installed tag's card: its figures, no op list
            lines.append(f"| {key} | `{fig['source']}` | - | {_int(fig['const_bytes'])} | - | "
                         f"bit-exact with {fig.get('bit_exact_with')} (the card) | "
                         f"{'; '.join(f'`{c}`' for c in fig.get('commands', []))} |")
            continue
        ops = ", ".join(f"{n} {name}" for name, n in fig["step_ops"]["histogram"].items())
        check = fig.get("c_check", {})
        exact = (f"{check['identical_logits']} / {check['identical_states']} of {check['windows']}"
                 if "windows" in check else check.get("skipped", "-"))
        weights = fig["step_ops"].get("fc_weights")
        ops += f" (FC weights {weights})" if weights else ""
        lines.append(f"| {key} | `{fig['source']}` | {fig['step_ops']['count']}: {ops} | "
                     f"{_int(fig['const_bytes'])} | {_int(fig.get('cortex_m4_head_instructions_O2'))} "
                     f"| {exact} | {'; '.join(f'`{c}`' for c in fig.get('commands', []))} |")
    return "\n".join(lines) + "\n"


def document(rows, device, toolchain: dict, plot: Path | None, doc: Path, args) -> str:
    points = len(plotted(rows))
    link = Path(os.path.relpath(Path(plot).resolve(), Path(doc).resolve().parent)).as_posix()
    image = (f"![frontier]({link})\n\n{key_table(rows)}\n"
             if plot and points else "(no variant has both CV results and a measured cost yet: "
                                     "no plot)\n\n")
    sources = ", ".join(f"`{_shown(p)}`" for p in args.results)
    samples, seconds = signal(args.task)
    return (
        f"# The accuracy x device-cost frontier ({TASK_NAMES.get(args.task, args.task)})\n\n"
        "Issue 28 item 3, redrawn for issue 50. Subject-CV validation accuracy (at the CV epoch, "
        "mean ± sd over the folds done) against what the int8 C export of the same graph costs "
        "a Cortex-M4: instructions per step (`-O2`, qemu-arm + the instruction-count plugin) "
        "and, since a step may read several samples (`frames_per_step`), per window of signal "
        f"({samples} samples, {seconds:g} s: per step x {samples} / samples per step, plus the "
        "head once where it was measured; an installed tag's card gives no head) and per "
        "second (issue 43 item 2; the plot's axis, per second on top), flash (`-Os`, "
        "the smallest program running the model once minus an empty one) and RAM "
        "([cortexm.md](cortexm.md), [c_backend.md](c_backend.md)). The zoo's point is the upper "
        f"left corner. {GOALS[args.task].text if args.task in GOALS else ''} The plot shows one "
        "point per graph, its best CV variant (filled squares: int8 QAT graphs, hollow circles: "
        "float graphs); the points no other point beats on both axes of a panel and the shipped "
        "tags' graphs are labelled (\"sirnn.har2's graph\": that graph's best CV variant, which "
        "need not be the tag's own recipe; its card has its CV), the others carry their number "
        "in the key below it; the table after the key lists every variant.\n\n"
        "A graph's cost hardly depends on its training (only through its scales: compare a "
        "shipped tag with the 1-epoch run of the same graph below): each was measured on a "
        f"1-epoch or CV run of that graph (`tools/cortexm/frontier_{args.task}.sh`; those reading "
        f"k samples per step: `tools/cortexm/frontier_frames.sh {args.task}`), on "
        "the shipped tag, or is an installed tag's own C figures (`card: TAG`, its card's "
        "`export.c`), and joined to every CV variant with the same graph (model, units, "
        "rank, premultiply, QAT, state clip, samples per step). Accuracy: the CV results files in "
        f"{sources}; a variant without them yet shows '-' and is not plotted. 'int8 drop' is "
        "per CV fold where `zoo bench fold-int8` measured it (the int8 step model below its "
        "Keras model on the fold's validation subjects), else for a shipped tag (its export "
        "check on the visible test subjects).\n\n"
        f"Regenerate (after the campaign, or new device figures): `{_command(args)}`\n\n"
        f"{image}{frontier_table(rows)}\n"
        "## How each cost was measured\n\n"
        f"Device JSON `{_shown(args.device)}`, toolchain: {toolchain.get('cc', '?')}; "
        f"{toolchain.get('qemu', '?')}; `{toolchain.get('cpu', '?')}`"
        f"{'; exports made by ' + toolchain['zoo_code'] if toolchain.get('zoo_code') else ''}. Per variant, the step "
        "graph's ops and the C backend's export check:\n\n"
        f"{device_table(device)}{_per_channel_note(device)}")


def _per_channel_note(device: dict[str, dict]) -> str:
    """Which graphs have per-channel FC weights (a kernel of their own in the C backend)."""
    keys = [k for k, fig in sorted(device.items())
            if fig.get("step_ops", {}).get("fc_weights") == "per-channel"]
    if not keys:
        return ""
    return (f"\nPer-channel FULLY_CONNECTED weights in the int8 step model of {', '.join(keys)}: "
            "the C backend runs them with its per-channel kernel "
            "(`zoo_fc_s8_pc`, a multiplier and shift per output row).\n")


def _command(args) -> str:
    """The command that writes this page: the options that differ from the task's defaults."""
    words, default = ["zoo bench frontier"], defaults(args.task)
    if args.task != "har2":
        words.append(f"--task {args.task}")
    for name in ("device", "results", "int8_results", "doc", "plot"):
        value = getattr(args, name)
        shown = [_shown(v) for v in value] if isinstance(value, list) else [_shown(value)]
        if shown != [_shown(v) for v in (default[name] if isinstance(default[name], list)
                                         else [default[name]])]:
            words.append(" ".join([f"--{name.replace('_', '-')}", *shown]))
    return " ".join(words)


def _shown(path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="zoo bench frontier", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--task", default="har2",
                   help="the task whose frontier is drawn (default har2); the paths below "
                        "default to its own")
    p.add_argument("--device", type=Path,
                   help="device JSON (default results/frontier/<task>_device.json)")
    p.add_argument("--results", type=Path, nargs="+",
                   help="CV results folders (default results/<task>-campaign)")
    p.add_argument("--int8-results", type=Path, nargs="*",
                   help="`zoo bench fold-int8` results folders (default "
                        "results/<task>-campaign-int8; none: the option alone)")
    p.add_argument("--doc", type=Path, help="the page written (default docs/frontier.md for "
                                            "har2, else docs/frontier_<task>.md)")
    p.add_argument("--plot", type=Path, help="the plot written, an image file (default "
                                             "docs/img/frontier_<task>.png)")
    args = p.parse_args(argv)
    for name, value in defaults(args.task).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    try:  # every input and output checked before the plot is drawn or anything written
        check_outputs(args.doc, args.plot)
        device, toolchain = read_device(args.device)
        device.update(card_variants(args.task))
        for key in earlier_generations(device):
            device[key] = {**device[key], "earlier_generation": True}
        rows = frontier_rows(device, cv_by_graph([r for r in args.results if r.is_dir()],
                                                 args.task),
                             int8_drops([r for r in args.int8_results if r.is_dir()], args.task),
                             args.task)
        text = document(rows, device, toolchain, args.plot, args.doc, args)
        for missing in (r for r in args.results if not r.is_dir()):
            print(f"note: {missing}: no such results folder (no CV accuracy from it yet)")
        drawn = write_plot(rows, args.plot, GOALS.get(args.task, Goal(None, None, None, "")),
                           seconds=signal(args.task)[1],
                           title=f"{TASK_NAMES.get(args.task, args.task)} frontier")
        args.doc.parent.mkdir(parents=True, exist_ok=True)
        args.doc.write_text(text)
    except (ValueError, OSError) as err:  # FileNotFoundError included; a full disk, read-only
        print(f"{p.prog}: error: {err}", file=sys.stderr)
        return 2
    print(frontier_table(rows))
    print(f"wrote {args.doc} ({len(rows)} rows) and {args.plot} ({drawn} points)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
