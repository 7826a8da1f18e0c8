# Runs the same input sequence through the x86 tflite-micro Python interpreter and prints
# the same lines as `app.elf MODEL print T`.
import os, sys

import numpy as np
from tflite_micro.python.tflite_micro import runtime
model, T = sys.argv[1], int(sys.argv[2])
d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../models/pretrained",
                 f"{model}.har2/export-step-int8/")
step = runtime.Interpreter.from_file(d + "step.tflite")
head = runtime.Interpreter.from_file(d + "head.tflite")
hd = step.get_input_details(0); xd = step.get_input_details(1)
nh = int(np.prod(hd["shape"])); nx = int(np.prod(xd["shape"]))
lcg = 12345
def next_x():
    global lcg
    lcg = (lcg * 1664525 + 1013904223) & 0xFFFFFFFF
    v = lcg >> 24
    return v - 256 if v > 127 else v
h = np.full(hd["shape"], hd["quantization_parameters"]["zero_points"][0], np.int8)
for t in range(T):
    x = np.array([next_x() for _ in range(nx)], np.int8).reshape(xd["shape"])
    step.set_input(h, 0); step.set_input(x, 1); step.invoke()
    h = step.get_output(0).copy()
    print(f"h{t}: " + " ".join(str(int(v)) for v in h.reshape(-1)))
head.set_input(h.reshape(head.get_input_details(0)["shape"]), 0); head.invoke()
print("logits: " + " ".join(str(int(v)) for v in head.get_output(0).reshape(-1)))
