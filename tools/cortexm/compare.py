# Runs the same input sequence through the x86 tflite-micro Python interpreter and prints
# the same lines as `app.elf MODEL print T` (main.cc): MODEL sirnn|gru (the int8 exports of
# sirnn.har2 / gru.har2) or sirnn16 (the 16x8 export of sirnn.har2_int16x8); an optional third
# argument names another export folder (e.g. models/pretrained/sirnn.har2_gen1/export-step-int8),
# to match a binary built with SIRNN=... / GRU=... / SIRNN16=....
import os, sys

import numpy as np
from tflite_micro.python.tflite_micro import runtime
model, T = sys.argv[1], int(sys.argv[2])
EXPORTS = {"sirnn": "sirnn.har2/export-step-int8", "gru": "gru.har2/export-step-int8",
           "sirnn16": "sirnn.har2_int16x8/export-step-int16x8"}
if len(sys.argv) > 3:
    d = sys.argv[3].rstrip("/") + "/"
else:
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../models/pretrained",
                     EXPORTS[model]) + "/"
step = runtime.Interpreter.from_file(d + "step.tflite")
head = runtime.Interpreter.from_file(d + "head.tflite")
hd = step.get_input_details(0); xd = step.get_input_details(1)
dt = np.dtype(hd["dtype"])
assert dt in (np.int8, np.int16) and np.dtype(xd["dtype"]) == dt, (hd["dtype"], xd["dtype"])
bits = 8 * dt.itemsize   # int8 inputs: the LCG's top 8 bits; int16: its top 16 (main.cc next_x)
nh = int(np.prod(hd["shape"])); nx = int(np.prod(xd["shape"]))
lcg = 12345
def next_x():
    global lcg
    lcg = (lcg * 1664525 + 1013904223) & 0xFFFFFFFF
    v = lcg >> (32 - bits)
    return v - (1 << bits) if v >= 1 << (bits - 1) else v
h = np.full(hd["shape"], hd["quantization_parameters"]["zero_points"][0], dt)
for t in range(T):
    x = np.array([next_x() for _ in range(nx)], dt).reshape(xd["shape"])
    step.set_input(h, 0); step.set_input(x, 1); step.invoke()
    h = step.get_output(0).copy()
    print(f"h{t}: " + " ".join(str(int(v)) for v in h.reshape(-1)))
head.set_input(h.reshape(head.get_input_details(0)["shape"]), 0); head.invoke()
print("logits: " + " ".join(str(int(v)) for v in head.get_output(0).reshape(-1)))
