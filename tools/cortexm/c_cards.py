# c_cards.py [--write] [TAG ...]: the C backend's figures for every shipped int8 step tag (or the
# TAGs named), measured here:
# `zoo export models/pretrained/TAG --form c`, the Cortex-M4 firmware cost (make sizes: -Os,
# smallest program running the model once minus an empty one; RAM = state + the deepest stack
# frame chain from -fstack-usage) and instructions per step under qemu-arm (-O2, measure.py's
# protocol: (count(200 steps) - count(100 steps)) / 100 minus the driver's loop). --write puts
# them in each card.json as export.c (zoo.export.ship.record_c_figures; card.json is not among
# the hashed files).
import json, os, subprocess, sys, tempfile

import insncount  # the counting protocol (beside this file)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PRE = os.path.join(REPO, "models", "pretrained")
CPU = "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16".split()

def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout

def measure(tag, work):
    c = os.path.join(work, tag)
    sh(["zoo", "export", os.path.join(PRE, tag), "--tflite", "--form", "c", "--out", c])
    summary = json.load(open(os.path.join(c, "c_check.json")))
    b = os.path.join(work, "build")
    os.makedirs(b, exist_ok=True)
    sh(["make", "-s", "-C", HERE, f"B={b}", f"{b}/syscalls.o", f"{b}/empty.elf"])
    sh(["make", "-s", "-C", HERE, f"B={b}", f"C={c}", f"NAME={tag}", f"{b}/min-c-{tag}.elf", f"{b}/c-{tag}.elf"])
    size = lambda elf: [int(v) for v in sh(["arm-none-eabi-size", elf]).splitlines()[1].split()[:3]]
    empty, mine = size(f"{b}/empty.elf"), size(f"{b}/min-c-{tag}.elf")
    stack = {}
    for line in open(f"{b}/min-zoo_model-{tag}.su"):
        stack[line.split("\t")[0].split(":")[-1]] = int(line.split("\t")[1])
    ram_stack = stack["zoo_push_q"] + stack.get("zoo_step_run", 0)
    elf = f"{b}/c-{tag}.elf"
    per = lambda part: insncount.per_call(elf, "m", part, 100)
    step = per("step") - per("loop")
    return {"const_bytes": summary["const_bytes"], "state_bytes": summary["state_bytes"],
            "cortex_m4_flash_bytes_Os": mine[0] + mine[1] - empty[0] - empty[1],
            "cortex_m4_ram_bytes": mine[2] - empty[2] + ram_stack,
            "cortex_m4_instructions_per_step_O2": round(step, 1),
            "bit_exact_with": summary["bit_exact_with"],
            "measured_by": "python tools/cortexm/c_cards.py (arm-none-eabi-gcc 12.2, qemu-arm 7.2)"}

tags = sorted(t for t in os.listdir(PRE) if os.path.isdir(os.path.join(PRE, t, "export-step-int8")))
named = [a for a in sys.argv[1:] if not a.startswith("--")]
unknown = sorted(set(named) - set(tags))
if unknown:
    sys.exit(f"c_cards.py: no shipped int8 step tag {unknown}; valid: {', '.join(tags)}")
tags = named or tags
with tempfile.TemporaryDirectory() as work:
    print("| tag | C constants (B) | Cortex-M4 flash, -Os (B) | RAM (B) | instructions / step, -O2 |")
    print("|---|---|---|---|---|")
    for tag in tags:
        fig = measure(tag, work)
        print(f"| `{tag}` | {fig['const_bytes']:,} | {fig['cortex_m4_flash_bytes_Os']:,} | "
              f"{fig['cortex_m4_ram_bytes']:,} | {fig['cortex_m4_instructions_per_step_O2']:,.1f} |", flush=True)
        if "--write" in sys.argv:  # through the card type: checked, atomic, under the tag's lock
            from zoo.export.ship import record_c_figures
            record_c_figures(os.path.join(PRE, tag), fig)
