"""Regular-language recognition over {0, 1} (003 Sec. 5; the Tomita grammars), generated in numpy.

Languages (label 1 = the string is in the language):

- ``tomita1`` 1*;  ``tomita2`` (10)*;  ``tomita3`` no odd-length run of 1s immediately followed by
  an odd-length run of 0s (runs are maximal);  ``tomita4`` no ``000``;  ``tomita5`` even number of
  0s and even number of 1s;  ``tomita6`` #0 - #1 = 0 (mod 3);  ``tomita7`` 0*1*0*1*;
- ``dl1`` exactly one 1 (003's D_L1);  ``parity`` an odd number of 1s;  ``pattern`` contains the
  substring ``pattern`` (option, default ``101``).

Each language is a DFA. Strings of a given length and label are drawn *uniformly* among all such
strings by counting accepting (or rejecting) paths of the DFA, so positives and negatives are
balanced (half each) even where one class is rare (tomita1 has one positive per length).

Splits and options:

- ``train`` (``n_train``, from the load seed) and ``val`` (``n_val``, from ``split_seed``):
  lengths uniform in ``[min_length, max_length]`` (L = ``max_length``), among the lengths where
  the drawn label exists.
- ``test`` (``n_test``, from ``split_seed``): every string of length exactly ``test_length``
  (default 2L): the length-generalisation test. `RegularLanguage.sample` draws any other length
  (e.g. exactly L) for a table at L and at 2L.

Encoding: ``x`` is (N, T, 3) with T = max(L, test_length): one-hot symbol 0 / symbol 1 / padding,
left-padded, so every string ends at the last step (where the model classifies). The
normalisation is the identity.
"""

from __future__ import annotations

import numpy as np

from zoo.training.tasks.base import (Normalization, Split, Task, TaskData, check_generated_size,
                                 register_task)

PAD = 2


class DFA:
    """A complete DFA over {0, 1}: ``delta[q, s]`` the next state, ``accept[q]``, start 0."""

    def __init__(self, delta, accept):
        self.delta = np.asarray(delta, dtype=np.int64)
        self.accept = np.asarray(accept, dtype=bool)
        if self.delta.shape != (len(self.accept), 2):
            raise ValueError(f"delta must be (states, 2), got {self.delta.shape}")

    def accepts(self, string) -> bool:
        q = 0
        for s in string:
            q = self.delta[q, int(s)]
        return bool(self.accept[q])

    def path_counts(self, length: int, label: int) -> np.ndarray:
        """``counts[l, q]``: strings of length l leading from q to a state of class ``label``
        (float64: only ratios are used, exact for lengths < 53)."""
        counts = np.zeros((length + 1, len(self.accept)))
        counts[0] = self.accept if label else ~self.accept
        for l in range(1, length + 1):
            counts[l] = counts[l - 1][self.delta].sum(axis=1)
        return counts

    def sample(self, rng, length: int, label: int, counts: np.ndarray) -> np.ndarray:
        """A uniform string of ``length`` with ``label`` (``counts`` from `path_counts`)."""
        out, q = np.empty(length, dtype=np.int64), 0
        for i in range(length):
            remaining = length - i - 1
            weights = counts[remaining][self.delta[q]]
            s = int(rng.random() * weights.sum() >= weights[0])
            out[i], q = s, self.delta[q, s]
        return out


def kmp_dfa(pattern: str) -> DFA:
    """The DFA of "contains ``pattern``" (Knuth-Morris-Pratt automaton; state = matched prefix
    length, ``len(pattern)`` absorbing and accepting)."""
    m = len(pattern)
    delta = np.zeros((m + 1, 2), dtype=np.int64)
    for q in range(m + 1):
        for s in (0, 1):
            if q == m:
                delta[q, s] = m
                continue
            text = pattern[:q] + str(s)
            k = min(len(text), m)
            while k > 0 and text[len(text) - k:] != pattern[:k]:
                k -= 1
            delta[q, s] = k
    return DFA(delta, [q == m for q in range(m + 1)])


DEAD = -1  # placeholder in the tables below, replaced by the last state


def _dfa(table, accept) -> DFA:
    """A DFA from a table whose ``DEAD`` entries go to an extra rejecting sink."""
    n = len(table)
    delta = [[n if t == DEAD else t for t in row] for row in table] + [[n, n]]
    return DFA(delta, list(accept) + [False])


LANGUAGES = {
    # name: (DFA, description); rows are [next on 0, next on 1]
    "tomita1": (_dfa([[DEAD, 0]], [True]), "Tomita 1: 1*"),
    "tomita2": (_dfa([[DEAD, 1], [0, DEAD]], [True, False]), "Tomita 2: (10)*"),
    # q0 free, q1 odd run of 1s, q2 odd 0s after odd 1s, q3 even 0s after odd 1s.
    "tomita3": (_dfa([[0, 1], [2, 0], [3, DEAD], [2, 1]], [True, True, False, True]),
                "Tomita 3: no odd run of 0s right after an odd run of 1s"),
    "tomita4": (_dfa([[1, 0], [2, 0], [DEAD, 0]], [True, True, True]), "Tomita 4: no 000"),
    # state = 2 * (#0 mod 2) + (#1 mod 2)
    "tomita5": (DFA([[2, 1], [3, 0], [0, 3], [1, 2]], [True, False, False, False]),
                "Tomita 5: even number of 0s and of 1s"),
    # state = (#0 - #1) mod 3
    "tomita6": (DFA([[1, 2], [2, 0], [0, 1]], [True, False, False]),
                "Tomita 6: #0 - #1 = 0 (mod 3)"),
    "tomita7": (_dfa([[0, 1], [2, 1], [2, 3], [DEAD, 3]], [True] * 4), "Tomita 7: 0*1*0*1*"),
    "dl1": (_dfa([[0, 1], [1, DEAD]], [False, True]), "D_L1 (003): exactly one 1"),
    "parity": (DFA([[0, 1], [1, 0]], [False, True]), "parity (003): an odd number of 1s"),
}


class RegularLanguage(Task):
    """Recognise a regular language over {0, 1}; see the module docstring for the splits."""

    DEFAULTS = {"max_length": 16, "min_length": 1, "test_length": None, "n_train": 4000,
                "n_val": 500, "n_test": 1000, "split_seed": 1}
    class_names = ["reject", "accept"]
    paper_split = ("generated: train / val lengths in [min_length, max_length], test at "
                   "test_length (default 2 max_length); half positives, half negatives")

    def dfa(self) -> DFA:
        return LANGUAGES[self.name][0]

    def _validate(self):
        o = self._options
        for key in ("max_length", "min_length", "n_train", "n_val", "n_test"):
            low = 1 if key in ("max_length", "min_length", "n_train") else 0
            if not isinstance(o[key], int) or o[key] < low:
                raise ValueError(f"option {key} must be an integer >= {low}, got {o[key]!r}")
        if o["min_length"] > o["max_length"]:
            raise ValueError(f"option min_length={o['min_length']} exceeds "
                             f"max_length={o['max_length']}")
        if o["test_length"] is None:
            o["test_length"] = 2 * o["max_length"]
        if not isinstance(o["test_length"], int) or not 1 <= o["test_length"] <= 1000:
            raise ValueError(f"option test_length must be an integer in 1..1000, got "
                             f"{o['test_length']!r}")
        check_generated_size(self, o["n_train"] + o["n_val"] + o["n_test"],
                             "n_train, n_val, n_test and max_length")

    @property
    def input_shape(self):
        return (max(self._options["max_length"], self._options["test_length"]), 3)

    def sample(self, n: int, lengths, seed) -> Split:
        """``n`` strings, half accepted and half rejected, each of a length drawn uniformly from
        ``lengths`` among those where its label exists; encoded as in the module docstring."""
        rng = np.random.default_rng(seed)
        dfa, steps = self.dfa(), self.input_shape[0]
        lengths = [int(l) for l in lengths]
        if max(lengths) > steps:
            raise ValueError(f"length {max(lengths)} exceeds the task's sequence length {steps}")
        counts = {c: dfa.path_counts(max(lengths), c) for c in (0, 1)}
        x = np.zeros((n, steps, 3), dtype=np.float32)
        y = (np.arange(n) % 2).astype(np.int64)
        rng.shuffle(y)
        for i, label in enumerate(y):
            valid = [l for l in lengths if counts[label][l, 0] > 0]
            if not valid:
                raise ValueError(f"{self.name}: no {'accepted' if label else 'rejected'} string "
                                 f"of length {lengths}")
            length = valid[rng.integers(len(valid))]
            string = dfa.sample(rng, length, label, counts[label])
            x[i, :steps - length, PAD] = 1.0
            x[i, np.arange(steps - length, steps), string] = 1.0
        return Split(x, y)

    def _load(self, data_dir, *, seed: int) -> TaskData:
        o = self._options
        train_lengths = range(o["min_length"], o["max_length"] + 1)
        train = self.sample(o["n_train"], train_lengths, [seed, 0])
        val = self.sample(o["n_val"], train_lengths, [o["split_seed"], 1])
        test = self.sample(o["n_test"], [o["test_length"]], [o["split_seed"], 2])
        return TaskData(train, val, test, Normalization.identity(3),
                        source=f"generated (seed={seed}, split_seed={o['split_seed']})",
                        info={"language": self.description})


for _name, (_, _description) in LANGUAGES.items():
    register_task(_name)(type(f"Language_{_name}", (RegularLanguage,),
                              {"description": _description}))


@register_task("pattern")
class PatternMatching(RegularLanguage):
    """Strings that contain ``pattern`` (003 Sec. 5, pattern matching)."""

    DEFAULTS = {**RegularLanguage.DEFAULTS, "pattern": "101"}
    description = "pattern matching (003): contains the substring `pattern` (default 101)"

    def _validate(self):
        p = self._options["pattern"]
        if not isinstance(p, str) or not p or set(p) - {"0", "1"}:
            raise ValueError(f"option pattern must be a non-empty string of 0s and 1s, got {p!r} "
                             "(quote it on the command line: --task-option \"pattern='0110'\")")
        super()._validate()

    def dfa(self) -> DFA:
        return kmp_dfa(self._options["pattern"])
