"""The C source of one lowered model: its constants and one function that runs it.

    static void zoo_<name>_run(const int8_t *in0, ..., int8_t *out0)

reads the model's inputs in the model's input order, writes its (single) output, and keeps every
intermediate tensor in one stack array whose places are reused once a tensor's last reader ran.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zoo.export.c_backend.plan import Kernel, Plan
from zoo.export.c_text import comment_text

ALIGN = 4  # every scratch tensor starts on a word: the DSP path loads int8 four at a time


@dataclass
class Emitted:
    constants: str     # the const arrays (flash)
    function: str      # the run function
    scratch_bytes: int
    const_bytes: int
    max_fc_in: int     # the widest FULLY_CONNECTED input, padded (sizes the DSP path's buffer)


def emit_model(name: str, plan: Plan) -> Emitted:
    offsets, scratch = _plan_memory(plan)
    ref = _Refs(name, plan, offsets)
    consts, body = [], []
    for n, kernel in enumerate(plan.kernels):
        decls, call = _EMITTERS[kernel.kind](ref, kernel, f"{name}_k{n}")
        consts.extend(decls)
        # the tensor's name is the model author's text (a Keras layer name): comment-safe only
        note = comment_text(f"{kernel.note}: {plan.graph.tensor(kernel.out).name}")
        body.append(f"    /* {note} */\n    {call}")
    consts.extend(ref.const_decls)
    args = ", ".join([f"const int8_t *in{k}" for k in range(len(plan.graph.inputs))]
                     + ["int8_t *out0"])
    scratch_decl = (f"    ZOO_ALIGNED int8_t scratch[{scratch}];\n" if scratch else "")
    copy = ref.output_copy()
    function = (f"static void zoo_{name}_run({args}) {{\n{scratch_decl}"
                + "\n".join(body) + "\n" + copy + "}\n")
    const_text = "\n".join(consts)
    widest = max([_aligned(k.params["n_in"]) for k in plan.kernels if k.kind == "fc"] or [0])
    return Emitted(const_text, function, scratch, _count_bytes(const_text), widest)


def _count_bytes(text: str) -> int:
    sizes = {"int8_t": 1, "int32_t": 4}
    total = 0
    for line in text.splitlines():
        if line.startswith("static const"):
            ctype = line.split()[2]
            count = int(line.split("[", 1)[1].split("]", 1)[0])
            total += sizes[ctype] * count
    return total


# ------------------------------------------------------------------------------ memory plan
def _root(plan: Plan, index: int) -> tuple[int, int]:
    """(base tensor, element offset) of a tensor, following views down to a real buffer."""
    offset = 0
    while index in plan.views:
        view = plan.views[index]
        offset += view.offset
        index = view.base
    return index, offset


def _plan_memory(plan: Plan) -> tuple[dict[int, int], int]:
    """Scratch offsets of the tensors the kernels write (graph output and inputs excluded)."""
    graph = plan.graph
    last_use, first_def = {}, {}
    for pos, k in enumerate(plan.kernels):
        first_def.setdefault(k.out, pos)
        for i in k.inputs:
            last_use[_root(plan, i)[0]] = pos
    for out in graph.outputs:
        last_use[_root(plan, out)[0]] = len(plan.kernels)
    offsets, live, top = {}, [], 0
    for pos, k in enumerate(plan.kernels):
        live = [(o, n, t) for (o, n, t) in live if last_use.get(t, pos) >= pos]
        if k.out in graph.outputs and k.out not in graph.inputs:
            continue  # written straight to out0
        size = _aligned(graph.tensor(k.out).size)
        offsets[k.out] = _first_fit(live, size)
        live.append((offsets[k.out], size, k.out))
        top = max(top, offsets[k.out] + size)
    return offsets, top


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _first_fit(live, size) -> int:
    offset = 0
    for o, n, _ in sorted(live):
        if offset + size <= o:
            return offset
        offset = max(offset, o + n)
    return offset


# ------------------------------------------------------------------------------ references
class _Refs:
    """C expressions for tensors: graph inputs, the output, scratch places, views, constants."""

    def __init__(self, name: str, plan: Plan, offsets: dict[int, int]):
        self.name, self.plan, self.offsets = name, plan, offsets
        self.const_decls: list[str] = []
        self._const_names: dict[int, str] = {}

    def __call__(self, index: int) -> str:
        graph = self.plan.graph
        base, offset = _root(self.plan, index)
        if graph.tensor(base).is_const:
            return self.constant(base) + (f" + {offset}" if offset else "")
        if base in graph.inputs:
            expr = f"in{graph.inputs.index(base)}"
        elif base in graph.outputs and base not in self.offsets:
            expr = "out0"
        else:
            expr = f"scratch + {self.offsets[base]}" if self.offsets[base] else "scratch"
        return f"({expr} + {offset})" if offset else expr

    def shared(self, cname: str, ctype: str, values) -> str:
        """A const array declared once however many kernels read it (e.g. the same weights
        in two FULLY_CONNECTED ops)."""
        if cname not in self._const_names.values():
            self.const_decls.append(c_array(cname, ctype, values))
            self._const_names[cname] = cname
        return cname

    def constant(self, index: int) -> str:
        if index not in self._const_names:
            t = self.plan.graph.tensor(index)
            cname = f"zoo_{self.name}_c{index}"
            self.const_decls.append(c_array(cname, "int8_t", t.data.reshape(-1)))
            self._const_names[index] = cname
        return self._const_names[index]

    def output_copy(self) -> str:
        """Copies the output when it is a view or a place in scratch (not written to out0)."""
        out = self.plan.graph.outputs[0]
        if self(out) == "out0":
            return ""
        n = self.plan.graph.tensor(out).size
        return f"    zoo_copy_s8({n}, {self(out)}, out0);\n"


def c_array(name: str, ctype: str, values: np.ndarray, per_line: int = 16) -> str:
    values = np.asarray(values).reshape(-1)
    rows = [", ".join(str(int(v)) for v in values[i:i + per_line])
            for i in range(0, len(values), per_line)]
    body = ",\n    ".join(rows)
    return f"static const {ctype} {name}[{len(values)}] ZOO_ALIGNED = {{\n    {body}}};\n"


# ------------------------------------------------------------------------------ kernels
def _table(ref, k: Kernel, cname: str):
    n = ref.plan.graph.tensor(k.out).size
    decl = c_array(f"zoo_{cname}_table", "int8_t", k.params["table"])
    return [decl], f"zoo_table_s8({n}, {ref(k.inputs[0])}, zoo_{cname}_table + 128, {ref(k.out)});"


def _fc(ref, k: Kernel, cname: str):
    p = k.params
    stride = _aligned(p["n_in"])
    w = np.zeros((p["n_out"], stride), np.int8)
    w[:, :p["n_in"]] = p["weights"]
    weights = ref.shared(f"zoo_{ref.name}_w{p['weights_tensor']}", "int8_t", w)
    decls = [c_array(f"zoo_{cname}_b", "int32_t", p["bias"])]
    lo, hi = p["act"]
    args = f"{p['n_in']}, {stride}, {p['n_out']}, {weights}, zoo_{cname}_b"
    if len(p["multipliers"]) == 1:
        m, s = p["multipliers"][0]
        call = (f"zoo_fc_s8({ref(k.inputs[0])}, {args}, {m}, {s}, {p['out_zp']}, {lo}, {hi}, "
                f"{ref(k.out)});")
    else:
        decls.append(c_array(f"zoo_{cname}_m", "int32_t", [m for m, _ in p["multipliers"]]))
        decls.append(c_array(f"zoo_{cname}_s", "int8_t", [s for _, s in p["multipliers"]]))
        call = (f"zoo_fc_s8_pc({ref(k.inputs[0])}, {args}, zoo_{cname}_m, zoo_{cname}_s, "
                f"{p['out_zp']}, {lo}, {hi}, {ref(k.out)});")
    return decls, call


def _add(ref, k: Kernel, cname: str):
    p = k.params
    lo, hi = p["act"]
    fn = "zoo_sub_s8" if k.kind == "sub" else "zoo_add_s8"
    return [], (f"{fn}({p['n']}, {ref(k.inputs[0])}, {p['a_step']}, {ref(k.inputs[1])}, "
                f"{p['b_step']}, {p['off_a']}, {p['m1']}, {p['s1']}, {p['off_b']}, {p['m2']}, "
                f"{p['s2']}, {p['mo']}, {p['so']}, {p['out_zp']}, {lo}, {hi}, {ref(k.out)});")


def _mul(ref, k: Kernel, cname: str):
    p = k.params
    lo, hi = p["act"]
    return [], (f"zoo_mul_s8({p['n']}, {ref(k.inputs[0])}, {p['a_step']}, {ref(k.inputs[1])}, "
                f"{p['b_step']}, {p['off_a']}, {p['off_b']}, {p['m']}, {p['shift']}, "
                f"{p['out_zp']}, {lo}, {hi}, {ref(k.out)});")


def _minmax(ref, k: Kernel, cname: str):
    p = k.params
    return [], (f"zoo_{k.kind}_s8({p['n']}, {ref(k.inputs[0])}, {p['a_step']}, "
                f"{ref(k.inputs[1])}, {p['b_step']}, {ref(k.out)});")


def _concat(ref, k: Kernel, cname: str):
    out, offset, copies = ref(k.out), 0, []
    for index, size in zip(k.inputs, k.params["sizes"]):
        place = f"{out} + {offset}" if offset else out
        copies.append(f"zoo_copy_s8({size}, {ref(index)}, {place});")
        offset += size
    return [], "\n    ".join(copies)


_EMITTERS = {"table": _table, "fc": _fc, "add": _add, "sub": _add, "mul": _mul,
             "min": _minmax, "max": _minmax, "concat": _concat}
