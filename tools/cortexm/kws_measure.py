# kws_measure.py ELF [N]: Cortex-M4 instructions per 10 ms hop of the streaming KWS pipeline
# (kws_main.c under qemu-arm with the instruction-count plugin, as measure.py counts the models):
# per hop = (count(2N) - count(N)) / N, so start-up cancels; the driver's own sample loop is
# subtracted. Prints instructions per hop and per second of audio (100 hops).
import os, re, subprocess, sys

elf = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200
PLUGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libinsncount.so")


def count(part, n):
    cmd = ["qemu-arm", "-cpu", "cortex-a15", "-plugin", PLUGIN, "-d", "plugin", elf, "kws", part,
           str(n)]
    txt = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = txt.stdout + txt.stderr
    m = re.search(r"insns: (\d+)", out)
    if not m or f"done kws {part} n={n}" not in out:
        raise SystemExit(f"no count for {cmd}: {out[-500:]}")
    return int(m.group(1))


per = {p: (count(p, 2 * N) - count(p, N)) / N for p in ("hop", "frontend", "loop", "frame", "power")}
hop, fe = per["hop"] - per["loop"], per["frontend"] - per["loop"]
print("| part | instructions / hop | per second of audio (100 hops) |")
print("|---|---|---|")
rows = (("  of which kws_power_spectrum (window, FFT, power)", per["power"]),
        ("  of which kws_frontend_frame (+ mel, log2)", per["frame"]),
        ("front end (kws_stream_write of 160 samples)", fe),
        ("input map + step + head + posteriors + recognizer", hop - fe),
        ("whole pipeline", hop))
for name, v in rows:
    print(f"| {name} | {v:,.0f} | {100 * v:,.0f} |")
