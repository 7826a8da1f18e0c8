"""The cost model's measured points (`zoo.experiments.cost_model`), in its one package-data file
``experiments/cost_data/points.json``: the Cortex-M4 C cost of the given runs, and the
frontier's recorded measurements copied in.

    python -m zoo.experiments.cost_points [--data-dir DATA] RUN_DIR ...
    python -m zoo.experiments.cost_points --frontier experiments/results/frontier

Each run is exported (int8 step, then C, in a temporary folder) and measured by ``zoo profile``'s
engine (`zoo.export.profile.engine.profile_export`, on the Cortex-M4); its entry holds the model,
its options, the step's input width, the classes and the measured figures. ``--frontier`` copies
the variants of ``har2_device.json`` and ``dsa19_device.json`` (48-128 units, measured by
tools/cortexm) into the same file, so that the cost model reads only its own file; the small
runs (16-32 units, several samples per step) are where a fit on the large ones alone
under-predicted a 16-unit SiRNN by a third.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

POINTS = Path(__file__).resolve().parent / "cost_data" / "points.json"
# (file, input width per sample, classes) of the frontier's recorded measurements
FRONTIER_FILES = (("har2_device.json", 9, 2), ("dsa19_device.json", 45, 19))
CELL_MODELS = {"IRNNCell": "sirnn", "FastGRNNCell": "fastgrnn", "GRUCell": "gru"}


def measure_run(run_dir: Path, work: Path, data_dir=None) -> dict:
    """The entry of one run: its configuration and its Cortex-M4 cost measured by zoo profile."""
    from zoo.export.c_backend.command import export_c
    from zoo.export.exporter import export_run
    from zoo.export.profile.engine import profile_export
    from zoo.export.profile.targets import targets_named
    from zoo.training.evaluate import load_run

    record, model, _ = load_run(run_dir)
    config = record.config
    task = config.make_task()
    steps, width = task.input_shape
    step, c_dir = work / f"{run_dir.name}-int8", work / f"{run_dir.name}-c"
    export_run(run_dir, step, quantize="int8", form="step", allow_drop=True, micro=False,
               data_dir=data_dir)
    export_c(step, c_dir, allow_drop=True)
    figures = profile_export(c_dir, targets_named(["cortex-m4"]),
                             work / f"{run_dir.name}-profile")["targets"]["cortex-m4"]
    options = {k: v for k, v in config.settings.model_options.items() if v is not None}
    return {"model": config.model, "options": options, "input_width": int(width),
            "classes": task.num_classes, "steps_per_window": int(steps),
            "parameters": int(model.count_params()), "target": "cortex-m4",
            **{k: figures[k] for k in ("instructions_per_step", "head_instructions",
                                       "instructions_per_window", "flash_bytes", "ram_bytes")},
            "measured_by": "zoo profile (cortex-m4)"}


def frontier_entries(folder: Path) -> dict:
    """The frontier files' measured variants (`FRONTIER_FILES` in ``folder``) as entries named
    ``FILE/VARIANT``; a variant without a C export or of another cell is left out."""
    entries = {}
    for name, width, classes in FRONTIER_FILES:
        path = Path(folder) / name
        if not path.is_file():
            raise FileNotFoundError(f"--frontier {folder}: no {name} there")
        for key, fig in json.loads(path.read_text())["variants"].items():
            if "c_export_error" in fig or fig.get("cell") not in CELL_MODELS:
                continue
            entries[f"{path.stem}/{key}"] = {
                "model": CELL_MODELS[fig["cell"]], "options": fig["model_options"],
                "input_width": width * int(fig.get("frames_per_step") or 1),
                "classes": classes, "target": "cortex-m4",
                "instructions_per_step": fig["cortex_m4_instructions_per_step_O2"],
                "head_instructions": fig.get("cortex_m4_head_instructions_O2"),
                "flash_bytes": fig["cortex_m4_flash_bytes_Os"],
                "ram_bytes": fig["cortex_m4_ram_bytes"],
                "measured_by": f"tools/cortexm, recorded in {name}"}
    return entries


def _write(data: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("runs", nargs="*", type=Path, help="finished run directories")
    parser.add_argument("--data-dir", help="the runs' data (a windows run needs it to export)")
    parser.add_argument("--frontier", type=Path,
                        help="a folder holding har2_device.json and dsa19_device.json: their "
                             "variants are copied into the points file")
    parser.add_argument("--out", type=Path, default=POINTS, help="the points file (merged)")
    args = parser.parse_args(argv)
    if not args.runs and args.frontier is None:
        parser.error("give RUN_DIR ... or --frontier FOLDER")
    data = json.loads(args.out.read_text()) if args.out.is_file() else {"points": {}}
    if args.frontier is not None:
        entries = frontier_entries(args.frontier)
        data["points"].update(entries)
        _write(data, args.out)
        print(f"{len(entries)} frontier points copied from {args.frontier}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for run in args.runs:
            entry = measure_run(run, Path(tmp), args.data_dir)
            data["points"][run.name] = entry
            _write(data, args.out)
            print(f"{run.name}: {entry['instructions_per_step']:,} instructions / step, "
                  f"{entry['flash_bytes']:,} B flash, {entry['ram_bytes']:,} B RAM", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
