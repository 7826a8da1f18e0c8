"""More measured points for the cost model (`zoo.experiments.cost_model`): the Cortex-M4 C cost
of the given runs, merged into ``experiments/results/cost_model/points.json``.

    python -m zoo.experiments.cost_points [--data-dir DATA] RUN_DIR ...

Each run is exported (int8 step, then C, in a temporary folder) and measured with
`zoo.export.c_cost.measure_c_cost`; its entry holds the model, its options, the step's input
width, the classes and the measured figures. The frontier files cover 48-128 units; these add
small models (16-32 units, several samples per step), where a fit on the large ones alone
under-predicted a 16-unit SiRNN by a third.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

POINTS = Path(__file__).resolve().parent / "results" / "cost_model" / "points.json"


def measure_run(run_dir: Path, work: Path, data_dir=None) -> dict:
    """The entry of one run: its configuration and measured cost."""
    from zoo.export.c_backend.command import export_c
    from zoo.export.c_cost import measure_c_cost
    from zoo.export.exporter import export_run
    from zoo.training.evaluate import load_run
    from zoo.training.tasks import get_task

    config, model, _ = load_run(run_dir)
    task = get_task(config["task"], **config["task_options"])
    steps, width = task.input_shape
    step, c_dir = work / f"{run_dir.name}-int8", work / f"{run_dir.name}-c"
    export_run(run_dir, step, quantize="int8", form="step", allow_drop=True, micro=False,
               data_dir=data_dir)
    export_c(step, c_dir, allow_drop=True)
    cost = measure_c_cost(c_dir, "cortex-m4", steps_per_window=steps)
    options = {k: v for k, v in config["model_options"].items() if v is not None}
    return {"model": config["model"], "options": options, "input_width": int(width),
            "classes": task.num_classes, "steps_per_window": int(steps),
            "parameters": int(model.count_params()), **cost}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("runs", nargs="+", type=Path, help="finished run directories")
    parser.add_argument("--data-dir", help="the runs' data (a windows run needs it to export)")
    parser.add_argument("--out", type=Path, default=POINTS, help="the points file (merged)")
    args = parser.parse_args(argv)
    data = json.loads(args.out.read_text()) if args.out.is_file() else {"points": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for run in args.runs:
            entry = measure_run(run, Path(tmp), args.data_dir)
            data["points"][run.name] = entry
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            print(f"{run.name}: {entry['instructions_per_step']:,} instructions / step, "
                  f"{entry['flash_bytes']:,} B flash, {entry['ram_bytes']:,} B RAM", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
