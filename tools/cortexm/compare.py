"""compare.py MODEL T [EXPORT_DIR]: runs the same input sequence through the x86 tflite-micro
Python interpreter and prints the same lines as ``app.elf MODEL print T`` (main.cc): MODEL
sirnn|gru (the int8 exports of sirnn.har2 / gru.har2) or sirnn16 (the 16x8 export of
sirnn.har2_int16x8); EXPORT_DIR names another export folder (e.g.
models/archive/sirnn.har2_gen1/export-step-int8), to match a binary built with SIRNN=... /
GRU=... / SIRNN16=...."""

import argparse
import os

import numpy as np

EXPORTS = {"sirnn": "sirnn.har2/export-step-int8", "gru": "gru.har2/export-step-int8",
           "sirnn16": "sirnn.har2_int16x8/export-step-int16x8"}


class Lcg:
    """main.cc's input generator: int8 inputs take the LCG's top 8 bits, int16 its top 16."""

    def __init__(self, bits: int):
        self.state, self.bits = 12345, bits

    def __call__(self) -> int:
        self.state = (self.state * 1664525 + 1013904223) & 0xFFFFFFFF
        v = self.state >> (32 - self.bits)
        return v - (1 << self.bits) if v >= 1 << (self.bits - 1) else v


def main(argv=None):
    from tflite_micro.python.tflite_micro import runtime

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("model", choices=sorted(EXPORTS))
    p.add_argument("steps", type=int)
    p.add_argument("export_dir", nargs="?")
    args = p.parse_args(argv)
    d = args.export_dir or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "../../models/pretrained", EXPORTS[args.model])
    step = runtime.Interpreter.from_file(os.path.join(d, "step.tflite"))
    head = runtime.Interpreter.from_file(os.path.join(d, "head.tflite"))
    hd, xd = step.get_input_details(0), step.get_input_details(1)
    dt = np.dtype(hd["dtype"])
    if dt not in (np.int8, np.int16) or np.dtype(xd["dtype"]) != dt:
        raise SystemExit(f"{d}: expected int8 or int16 state and input, got {hd['dtype']}, {xd['dtype']}")
    next_x, nx = Lcg(8 * dt.itemsize), int(np.prod(xd["shape"]))
    h = np.full(hd["shape"], hd["quantization_parameters"]["zero_points"][0], dt)
    for t in range(args.steps):
        x = np.array([next_x() for _ in range(nx)], dt).reshape(xd["shape"])
        step.set_input(h, 0)
        step.set_input(x, 1)
        step.invoke()
        h = step.get_output(0).copy()
        print(f"h{t}: " + " ".join(str(int(v)) for v in h.reshape(-1)))
    head.set_input(h.reshape(head.get_input_details(0)["shape"]), 0)
    head.invoke()
    print("logits: " + " ".join(str(int(v)) for v in head.get_output(0).reshape(-1)))


if __name__ == "__main__":
    main()
