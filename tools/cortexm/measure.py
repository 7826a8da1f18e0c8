# measure.py MODE ELF [MACHINE] [--c sirnn=C_ELF,gru=C_ELF] [--models sirnn,sirnn16]: executed-instruction
# counts per Invoke of the zoo's HAR-2 step/head models (main.cc's MODEL names; default sirnn,gru,
# the int8 ones; sirnn16 is the 16x8 export). With --models, also the cost of one 128-sample
# window: steps per window x net step + head (sirnn, gru: 128 steps; sirnn16: 4 samples a step, 32).
# MODE user: qemu-arm (linux-user, -cpu cortex-a15 running the Cortex-M Thumb-2 binary); MODE system: qemu-system-arm -M MACHINE (a real M-profile CPU model).
# Per invoke = (count(2N) - count(N)) / N, so set-up (AllocateTensors etc.) cancels; the
# step figure also subtracts the driver's per-step input/feedback copying ("loop").
# measure.py c LABEL=MODEL:C_ELF,...: only C backend builds (e.g. before / after a kernel change), side by side.
# With --c, the same counts for the C backend's drivers (c_main.c, `make c-app`) of the same
# models, in the same run, side by side: instructions per step and the ratio TFLM / C.
import sys

import insncount  # the counting protocol (beside this file)

argv = sys.argv[1:]
c_elfs = {}
if "--c" in argv:
    i = argv.index("--c")
    c_elfs = dict(item.split("=", 1) for item in argv[i + 1].split(","))
    del argv[i:i + 2]
models, window = ("sirnn", "gru"), False
if "--models" in argv:
    i = argv.index("--models")
    models, window = tuple(argv[i + 1].split(",")), True
    del argv[i:i + 2]
if argv[0] == "c":  # measure.py c LABEL=MODEL:C_ELF,...: C backend builds only, side by side
    mode, elf, c_only = "user", None, [item.split("=", 1) for item in argv[1].split(",")]
else:
    mode, elf, c_only = argv[0], argv[1], None
machine = argv[2] if len(argv) > 2 else None
N = 100
MACS = {"sirnn": 5840, "gru": 21360, "sirnn16": 8000}   # zoo.macs.cell_macs_per_step; head: 80*2 = 160
STEPS = {"sirnn": 128, "gru": 128, "sirnn16": 32}   # steps per 128-sample window
def count(model, part, n, elf=elf):
    return insncount.count(elf, model, part, n, machine if mode == "system" else None)
if c_only:
    print("| build | model | C instructions / step | C instructions / MAC | C head / invoke |")
    print("|---|---|---|---|---|")
    for label, spec in c_only:
        model, path = spec.split(":", 1)
        c = {p: (count(model, p, N, path), count(model, p, 2 * N, path)) for p in ("step", "loop", "head")}
        per = {p: (b - a) / N for p, (a, b) in c.items()}
        net = per["step"] - per["loop"]
        print(f"| {label} | {model} | {net:,.1f} | {net / MACS[model]:.2f} | {per['head']:,.1f} |", flush=True)
    sys.exit(0)
print(f"| model | instructions / step ({'net' if window else 'int8, net'}) | raw step | loop overhead | MACs / step | instructions / MAC | head instructions / invoke |")
print("|---|---|---|---|---|---|---|")
win = {}
for model in models:
    c = {p: (count(model, p, N), count(model, p, 2 * N)) for p in ("step", "loop", "head")}
    per = {p: (b - a) / N for p, (a, b) in c.items()}
    net = per["step"] - per["loop"]
    win[model] = (net, per["head"])
    print(f"| {model} | {net:,.1f} | {per['step']:,.2f} | {per['loop']:,.2f} | {MACS[model]:,} | "
          f"{net / MACS[model]:.2f} | {per['head']:,.1f} |", flush=True)
    print(f"<!-- raw {model}: " + ", ".join(f"{p} N={N}:{a} 2N={b}" for p, (a, b) in c.items()) + " -->", flush=True)
if window:
    print()
    print(f"| model | steps / window | instructions / window (steps x net step + head) | MACs / window | relative to {models[0]} |")
    print("|---|---|---|---|---|")
    first = STEPS[models[0]] * win[models[0]][0] + win[models[0]][1]
    for model in models:
        w = STEPS[model] * win[model][0] + win[model][1]
        print(f"| {model} | {STEPS[model]} | {w:,.1f} | {STEPS[model] * MACS[model] + 160:,} | {w / first:.3f} |", flush=True)
if c_elfs:
    print()
    print("| model | TFLM + CMSIS-NN instructions / step | C backend instructions / step | TFLM / C | C instructions / MAC | C head / invoke |")
    print("|---|---|---|---|---|---|")
for model, c_elf in c_elfs.items():
    per = {}
    for name, path in (("tflm", elf), ("c", c_elf)):
        c = {p: (count(model, p, N, path), count(model, p, 2 * N, path)) for p in ("step", "loop", "head")}
        per[name] = {p: (b - a) / N for p, (a, b) in c.items()}
    net = {k: v["step"] - v["loop"] for k, v in per.items()}
    print(f"| {model} | {net['tflm']:,.1f} | {net['c']:,.1f} | {net['tflm'] / net['c']:.2f} | "
          f"{net['c'] / MACS[model]:.2f} | {per['c']['head']:,.1f} |", flush=True)
