# insncount.py: executed-instruction counts of the Cortex-M drivers under QEMU with the
# libinsncount.so plugin (insncount.c, `make libinsncount.so`), for measure.py, kws_measure.py,
# c_cards.py and c_frontier.py (one protocol, one owner).
#
# Every driver is run as `DRIVER MODEL PART N`: it runs PART (a step, a head, the driver's own
# loop, ...) N times and prints `done MODEL PART n=N`; the plugin prints `insns: COUNT` at exit.
# Per call = (count(2N) - count(N)) / N, so start-up (AllocateTensors, table set-up) cancels.
import os, re, subprocess

PLUGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libinsncount.so")


def count(elf, model, part, n, machine=None):
    """Instructions the whole program executes running PART N times. qemu-arm (linux-user,
    -cpu cortex-a15 running the Cortex-M Thumb-2 binary), or with MACHINE qemu-system-arm -M
    MACHINE (a real M-profile CPU model, semihosting arguments)."""
    if machine is None:
        cmd = ["qemu-arm", "-cpu", "cortex-a15", "-plugin", PLUGIN, "-d", "plugin", str(elf),
               model, part, str(n)]
    else:
        cmd = ["qemu-system-arm", "-M", machine, "-nographic", "-semihosting-config",
               f"enable=on,target=native,arg=app,arg={model},arg={part},arg={n}",
               "-plugin", PLUGIN, "-d", "plugin", "-kernel", str(elf)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    found = re.search(r"insns: (\d+)", out)
    if not found or f"done {model} {part} n={n}" not in out:
        raise SystemExit(f"no instruction count from {' '.join(cmd)}: {out[-500:]}")
    return int(found.group(1))


def per_call(elf, model, part, n, machine=None):
    """Instructions per run of PART: (count(2N) - count(N)) / N."""
    return (count(elf, model, part, 2 * n, machine) - count(elf, model, part, n, machine)) / n
