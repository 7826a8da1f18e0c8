"""kws_measure.py ELF [N] [--dscnn DSCNN_ELF]: Cortex-M4 instructions per 10 ms hop of the
streaming KWS pipeline (kws_main.c under qemu-arm with the instruction-count plugin,
`measurement`'s protocol): per hop = (count(2N) - count(N)) / N, so start-up cancels; the
driver's own sample loop is subtracted. Prints instructions per hop and per second of audio
(100 hops). With --dscnn (make dscnn.elf: the DS-CNN under TFLite Micro + CMSIS-NN), the same
run also counts one DS-CNN window (dscnn_main.cc, per invoke = (count(2M) - count(M)) / M,
window - loop) and prints the DS-CNN fed by the same front end, answering every 1 s and every
10 ms, beside the step model's pipeline, with the ratios."""

import argparse

import measurement

HOPS_PER_SECOND = 100
M = 2  # DS-CNN windows per count: each is tens of millions of instructions


def pipeline_rows(per: dict) -> list[tuple[str, float]]:
    """(part, instructions per hop) of the pipeline from the driver's per-call counts."""
    hop, fe = per["hop"] - per["loop"], per["frontend"] - per["loop"]
    return [("  of which kws_power_spectrum (window, FFT, power)", per["power"]),
            ("  of which kws_frontend_frame (+ mel, log2)", per["frame"]),
            ("front end (kws_stream_write of 160 samples)", fe),
            ("input map + step + head + posteriors + recognizer", hop - fe),
            ("whole pipeline", hop)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("elf", help="$(B)/kws.elf of kws.mk")
    p.add_argument("n", nargs="?", type=int, default=200, help="hops per count (default 200)")
    p.add_argument("--dscnn", help="$(B)/dscnn.elf of the Makefile")
    args = p.parse_args(argv)
    measurement.ensure_plugin()
    per = {part: measurement.per_call(args.elf, "kws", part, args.n)
           for part in ("hop", "frontend", "loop", "frame", "power")}
    rows = pipeline_rows(per)
    print("| part | instructions / hop | per second of audio (100 hops) |")
    print("|---|---|---|")
    for name, v in rows:
        print(f"| {name} | {v:,.0f} | {HOPS_PER_SECOND * v:,.0f} |")
    if args.dscnn:
        per_window = lambda part: measurement.per_call(args.dscnn, "dscnn", part, M)
        window = per_window("window") - per_window("loop")
        hop, fe = rows[-1][1], rows[2][1]
        print()
        print("| pipeline | instructions / second of audio | / step pipeline |")
        print("|---|---|---|")
        for name, v in (("step model, a score every 10 ms (the pipeline above)", 100 * hop),
                        ("DS-CNN window (one invoke, TFLite Micro + CMSIS-NN)", window),
                        ("front end + DS-CNN, a score every 1 s", 100 * fe + window),
                        ("front end + DS-CNN, a score every 10 ms", 100 * fe + 100 * window)):
            print(f"| {name} | {v:,.0f} | {v / (100 * hop):.2f} |")


if __name__ == "__main__":
    main()
