# measure.py MODE ELF [MACHINE]: executed-instruction counts per Invoke of the zoo's HAR-2
# int8 step/head models. MODE user: qemu-arm (linux-user, -cpu cortex-a15 running the
# Cortex-M Thumb-2 binary); MODE system: qemu-system-arm -M MACHINE (a real M-profile CPU model).
# Per invoke = (count(2N) - count(N)) / N, so set-up (AllocateTensors etc.) cancels; the
# step figure also subtracts the driver's per-step input/feedback copying ("loop").
import os, re, subprocess, sys
mode, elf = sys.argv[1], sys.argv[2]
machine = sys.argv[3] if len(sys.argv) > 3 else None
N = 100
PLUGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libinsncount.so")
MACS = {"sirnn": 5840, "gru": 21360}   # zoo.macs.cell_macs_per_step; head: 80*2 = 160
def count(model, part, n):
    if mode == "user":
        cmd = ["qemu-arm", "-cpu", "cortex-a15", "-plugin", PLUGIN, "-d", "plugin", elf, model, part, str(n)]
    else:
        cmd = ["qemu-system-arm", "-M", machine, "-nographic", "-semihosting-config",
               f"enable=on,target=native,arg=app,arg={model},arg={part},arg={n}",
               "-plugin", PLUGIN, "-d", "plugin", "-kernel", elf]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    txt = r.stdout + r.stderr
    m = re.search(r"insns: (\d+)", txt)
    if not m or f"done {model} {part} n={n}" not in txt:
        raise SystemExit(f"no count for {cmd}: {txt[-500:]}")
    return int(m.group(1))
print(f"| model | instructions / step (int8, net) | raw step | loop overhead | MACs / step | instructions / MAC | head instructions / invoke |")
print("|---|---|---|---|---|---|---|")
for model in ("sirnn", "gru"):
    c = {p: (count(model, p, N), count(model, p, 2 * N)) for p in ("step", "loop", "head")}
    per = {p: (b - a) / N for p, (a, b) in c.items()}
    net = per["step"] - per["loop"]
    print(f"| {model} | {net:,.1f} | {per['step']:,.2f} | {per['loop']:,.2f} | {MACS[model]:,} | "
          f"{net / MACS[model]:.2f} | {per['head']:,.1f} |", flush=True)
    print(f"<!-- raw {model}: " + ", ".join(f"{p} N={N}:{a} 2N={b}" for p, (a, b) in c.items()) + " -->", flush=True)
