"""c_frontier.py --out JSON [--work DIR] KEY=SOURCE ...: the Cortex-M4 cost of C exports, for
the accuracy x device-cost frontier (issue 28 item 3, docs/frontier.md). SOURCE is a `zoo train`
run directory (exported first: `zoo export RUN --quantize int8 --form step --allow-drop`) or a
shipped tag's folder (its own int8 step models); then `zoo export STEP --form c` and
`measurement.c_firmware`: flash = the smallest program running the model once minus an empty one
(-Os), RAM = its data + bss + the deepest stack chain (-fstack-usage), instructions per step
under qemu-arm (-O2, net of the driver's loop) and per window (steps per window x step + head).
MACs per step: zoo.macs on the run's Keras model. Each KEY's figures are merged into JSON (other
keys kept) with the commands that made them."""
import argparse
import json
import sys
import tempfile
from pathlib import Path

import measurement

HERE = Path(__file__).resolve().parent


def zoo(*args):
    try:
        measurement.sh([sys.executable, "-m", "edge_rnn_zoo.cli", *map(str, args)])
    except measurement.MeasurementError as err:
        raise SystemExit(str(err)) from None
    return "zoo " + " ".join(map(str, args))


def step_ops(step_tflite):
    from zoo.export.flatbuffer import builtin_name, read_model

    model = read_model(Path(step_tflite).read_bytes())
    graph = model.subgraphs[0]
    ops = [builtin_name(model.operatorCodes[op.opcodeIndex]) for op in graph.operators]
    # per-channel FC weights take the C backend's one-row kernel, not the four-row DSP one
    scales = {len(graph.tensors[op.inputs[1]].quantization.scale)
              for op, name in zip(graph.operators, ops) if name == "FULLY_CONNECTED"}
    return {"count": len(ops), "histogram": {name: ops.count(name) for name in sorted(set(ops))},
            "fc_weights": "per-tensor" if scales <= {1} else "per-channel"}


def measure(key, source, work):
    from zoo.export.card_schema import read_export_card

    source = Path(source).resolve()
    commands, shipped = [], (source / "export-step-int8").is_dir()
    shown = source.relative_to(HERE.parent.parent) if source.is_relative_to(HERE.parent.parent) else source
    fig = {"source": str(shown), "shipped": shipped, **measurement.keras_figures(source)}
    step, c_dir = (source if shipped else work / f"{key}-step"), work / f"{key}-c"
    try:  # a shipped tag: `--form c` takes its own step models
        if not shipped:
            args = ["export", source, "--quantize", "int8", "--form", "step", "--allow-drop",
                    "--out", step, "--overwrite"]
            try:
                commands.append(zoo(*args))
            except SystemExit as failed:  # e.g. its TFLite Micro stage crashed: without it
                fig["step_export_failure"] = str(failed)[-300:]
                commands.append(zoo(*args, "--no-micro"))
        commands.append(zoo("export", step, "--form", "c", "--allow-drop", "--out", c_dir, "--overwrite"))
    except SystemExit as refused:  # a graph the C backend does not take: say so, keep the MACs
        return {**fig, "c_export_error": str(refused)[-600:], "commands": commands}
    check = json.loads((c_dir / "c_check.json").read_text())
    accuracy = read_export_card(str(c_dir)).accuracy
    fig = {**fig, "step_ops": step_ops(c_dir / "step.tflite"),
           "export_check": {k: getattr(accuracy, k) for k in
                            ("keras_float", "tflite", "drop_points", "argmax_agreement", "test_sequences")},
           "const_bytes": check["const_bytes"], "state_bytes": check["state_bytes"],
           "c_check": check["check"],
           **measurement.c_firmware(c_dir, key, work / "build")}
    if fig["steps_per_window"]:
        fig["cortex_m4_instructions_per_window_O2"] = round(measurement.per_window(
            fig["cortex_m4_instructions_per_step_O2"], fig["cortex_m4_head_instructions_O2"],
            fig["steps_per_window"]), 1)
    commands.append(f"make sizes/c-app B=BUILD C={c_dir.name} NAME={key} (tools/cortexm); qemu-arm "
                    "-cpu cortex-a15 -plugin libinsncount.so: (count(200) - count(100)) / 100, step - loop")
    fig["commands"] = commands
    return fig


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    p.add_argument("--out", required=True, type=Path, help="the device JSON (keys merged into it)")
    p.add_argument("--work", type=Path, help="exports and builds (default: a temporary folder)")
    p.add_argument("items", nargs="+", metavar="KEY=SOURCE")
    args = p.parse_args(argv)
    measurement.ensure_plugin()
    items = []
    for item in args.items:
        if "=" not in item:
            p.error(f"{item!r}: expected KEY=SOURCE (a run directory or a shipped tag's folder)")
        items.append(item.split("=", 1))
    with tempfile.TemporaryDirectory() as tmp:
        work = (args.work or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        for key, source in items:
            fig = measure(key, source, work)
            data = json.loads(args.out.read_text()) if args.out.is_file() else {}
            data.setdefault("variants", {})[key] = fig
            data["toolchain"] = {**measurement.toolchain(), "script": "tools/cortexm/c_frontier.py"}
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            if "c_export_error" in fig:
                print(f"{key}: {fig['macs_per_step']:,} MACs, no C export: {fig['c_export_error']}")
                continue
            print(f"{key}: {fig['macs_per_step']:,} MACs, {fig['cortex_m4_instructions_per_step_O2']:,.1f} "
                  f"instructions / step, {fig['cortex_m4_flash_bytes_Os']:,} B flash, "
                  f"{fig['cortex_m4_ram_bytes']:,} B RAM, {fig['step_ops']['count']} step ops", flush=True)


if __name__ == "__main__":
    main()
