# kws_measure.py ELF [N] [--dscnn DSCNN_ELF]: Cortex-M4 instructions per 10 ms hop of the
# streaming KWS pipeline (kws_main.c under qemu-arm with the instruction-count plugin, as
# measure.py counts the models): per hop = (count(2N) - count(N)) / N, so start-up cancels; the
# driver's own sample loop is subtracted. Prints instructions per hop and per second of audio
# (100 hops). With --dscnn (make dscnn.elf: the DS-CNN under TFLite Micro + CMSIS-NN), the same
# run also counts one DS-CNN window (dscnn_main.cc, per invoke = (count(2M) - count(M)) / M,
# window - loop) and prints the DS-CNN fed by the same front end, answering every 1 s and every
# 10 ms, beside the step model's pipeline, with the ratios.
import sys

import insncount  # the counting protocol (beside this file)

argv = sys.argv[1:]
dscnn_elf = None
if "--dscnn" in argv:
    i = argv.index("--dscnn")
    dscnn_elf = argv[i + 1]
    del argv[i:i + 2]
elf = argv[0]
N = int(argv[1]) if len(argv) > 1 else 200
M = 2  # DS-CNN windows per count: each is tens of millions of instructions


def per_call(part, n, program=elf, model="kws"):
    return insncount.per_call(program, model, part, n)


per = {p: per_call(p, N) for p in ("hop", "frontend", "loop", "frame", "power")}
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
if dscnn_elf:
    window = (per_call("window", M, program=dscnn_elf, model="dscnn")
              - per_call("loop", M, program=dscnn_elf, model="dscnn"))
    print()
    print("| pipeline | instructions / second of audio | / step pipeline |")
    print("|---|---|---|")
    rows = (("step model, a score every 10 ms (the pipeline above)", 100 * hop),
            ("DS-CNN window (one invoke, TFLite Micro + CMSIS-NN)", window),
            ("front end + DS-CNN, a score every 1 s", 100 * fe + window),
            ("front end + DS-CNN, a score every 10 ms", 100 * fe + 100 * window))
    for name, v in rows:
        print(f"| {name} | {v:,.0f} | {v / (100 * hop):.2f} |")
