"""measure.py: executed-instruction counts per Invoke of the zoo's HAR-2 step / head models under
TensorFlow Lite Micro (main.cc's MODEL names), beside the C backend's, with `measurement`'s
protocol; MACs per step and steps per window from the tags' Keras models (`zoo.macs`).

    measure.py user ELF [--models sirnn,gru] [--c sirnn=C_ELF,gru=C_ELF]   qemu-arm
    measure.py system ELF MACHINE [...]                                   qemu-system-arm -M MACHINE
    measure.py c LABEL=MODEL:C_ELF,...                                     C backend builds only

MODEL sirnn / gru are the int8 exports built into main.cc (Makefile SIRNN=, GRU=), sirnn16 the
16x8 one (SIRNN16=); ``--tags`` names the shipped tags they were built from (the Makefile's
defaults by default), whose Keras models give the MACs and the steps per window. With
``--models``, also the cost of one window: steps per window x net step + head. With ``--c``, the
C backend's drivers (c_main.c, ``make c-app``) of the same models side by side: instructions per
step and the ratio TFLM / C."""

import argparse
from pathlib import Path

import measurement

N = 100
TAGS = {"sirnn": "sirnn.har2", "gru": "gru.har2"}  # the Makefile's defaults (sirnn16: name it)


def tag_folder(tag: str) -> Path:
    """An installed tag's folder, or an archived generation's (by name, as the Makefile finds
    them); an unknown name lists the installed tags."""
    from zoo.pretrained import archive_root, get_pretrained_cfg, pretrained_root

    if (archive_root() / tag).is_dir() and not (pretrained_root() / tag).is_dir():
        return archive_root() / tag
    get_pretrained_cfg(tag)  # ValueError naming the installed tags
    return pretrained_root() / tag


def pairs(text: str, sep: str = "=") -> dict:
    out = {}
    for item in filter(None, text.split(",")):
        key, found, value = item.partition(sep)
        if not found:
            raise argparse.ArgumentTypeError(f"{item!r}: expected KEY{sep}VALUE")
        out[key] = value
    return out


def model_figures(tags: dict, models) -> dict:
    """{model: (MACs per step, steps per window, head MACs)} from each tag's Keras model."""
    out = {}
    for model in models:
        if model not in tags:
            raise SystemExit(f"measure.py: name the tag {model} was built from: --tags {model}=TAG")
        fig = measurement.keras_figures(tag_folder(tags[model]))
        units = fig["model_options"].get("units", 0)
        out[model] = (fig["macs_per_step"], fig["steps_per_window"], 2 * units)  # head: units x 2
    return out


def net_counts(elf, model: str, machine=None) -> dict:
    """Per call of step, loop and head; ``net``: step minus the driver's loop."""
    per = {p: measurement.per_call(elf, model, p, N, machine) for p in ("step", "loop", "head")}
    return {**per, "net": per["step"] - per["loop"]}


def c_only(items: dict, figures: dict) -> None:
    print("| build | model | C instructions / step | C instructions / MAC | C head / invoke |")
    print("|---|---|---|---|---|")
    for label, spec in items.items():
        model, path = spec.split(":", 1)
        per = net_counts(path, model)
        print(f"| {label} | {model} | {per['net']:,.1f} | {per['net'] / figures[model][0]:.2f} | "
              f"{per['head']:,.1f} |", flush=True)


def tflm(elf, machine, models, figures, window: bool) -> None:
    print(f"| model | instructions / step ({'net' if window else 'int8, net'}) | raw step | loop "
          "overhead | MACs / step | instructions / MAC | head instructions / invoke |")
    print("|---|---|---|---|---|---|---|")
    per = {m: net_counts(elf, m, machine) for m in models}
    for m in models:
        p, macs = per[m], figures[m][0]
        print(f"| {m} | {p['net']:,.1f} | {p['step']:,.2f} | {p['loop']:,.2f} | {macs:,} | "
              f"{p['net'] / macs:.2f} | {p['head']:,.1f} |", flush=True)
    if window:
        first = measurement.per_window(per[models[0]]["net"], per[models[0]]["head"], figures[models[0]][1])
        print()
        print(f"| model | steps / window | instructions / window (steps x net step + head) | "
              f"MACs / window | relative to {models[0]} |")
        print("|---|---|---|---|---|")
        for m in models:
            macs, steps, head_macs = figures[m]
            w = measurement.per_window(per[m]["net"], per[m]["head"], steps)
            print(f"| {m} | {steps} | {w:,.1f} | {steps * macs + head_macs:,} | {w / first:.3f} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("mode", choices=("user", "system", "c"))
    p.add_argument("target", help="the TFLM driver's ELF (user, system) or LABEL=MODEL:C_ELF,... (c)")
    p.add_argument("machine", nargs="?", help="qemu-system-arm -M MACHINE (mode system)")
    p.add_argument("--models", type=lambda t: t.split(","), help="models to count, and the window table")
    p.add_argument("--c", type=pairs, default={}, help="MODEL=C_ELF,...: the C backend beside TFLM")
    p.add_argument("--tags", type=pairs, default={}, help="MODEL=TAG,...: the tags the ELF was built "
                   f"from (default {', '.join(f'{k}={v}' for k, v in TAGS.items())})")
    args = p.parse_args(argv)
    if args.mode == "system" and not args.machine:
        p.error("mode system needs MACHINE (e.g. mps2-an386)")
    tags = {**TAGS, **args.tags}
    measurement.ensure_plugin()
    if args.mode == "c":
        items = pairs(args.target)
        c_only(items, model_figures(tags, {s.split(":", 1)[0] for s in items.values()}))
        return
    models = args.models or ["sirnn", "gru"]
    figures = model_figures(tags, set(models) | set(args.c))
    tflm(args.target, args.machine if args.mode == "system" else None, models, figures, bool(args.models))
    if args.c:
        print()
        print("| model | TFLM + CMSIS-NN instructions / step | C backend instructions / step | "
              "TFLM / C | C instructions / MAC | C head / invoke |")
        print("|---|---|---|---|---|---|")
    for model, c_elf in args.c.items():
        t, c = net_counts(args.target, model), net_counts(c_elf, model)
        print(f"| {model} | {t['net']:,.1f} | {c['net']:,.1f} | {t['net'] / c['net']:.2f} | "
              f"{c['net'] / figures[model][0]:.2f} | {c['head']:,.1f} |", flush=True)


if __name__ == "__main__":
    main()
