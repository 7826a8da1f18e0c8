"""003's regular languages as tasks, checked against regex / counting definitions of each language
(independent of the DFAs the generator uses)."""

import itertools
import re

import numpy as np
import pytest

from zoo.training.tasks import get_task
from zoo.training.tasks.regular import LANGUAGES, kmp_dfa


def tomita3(s: str) -> bool:
    runs = [(m.group()[0], len(m.group())) for m in re.finditer(r"0+|1+", s)]
    return not any(a[0] == "1" and a[1] % 2 and b[0] == "0" and b[1] % 2
                   for a, b in zip(runs, runs[1:]))


ORACLES = {
    "tomita1": lambda s: re.fullmatch("1*", s) is not None,
    "tomita2": lambda s: re.fullmatch("(10)*", s) is not None,
    "tomita3": tomita3,
    "tomita4": lambda s: "000" not in s,
    "tomita5": lambda s: s.count("0") % 2 == 0 and s.count("1") % 2 == 0,
    "tomita6": lambda s: (s.count("0") - s.count("1")) % 3 == 0,
    "tomita7": lambda s: re.fullmatch("0*1*0*1*", s) is not None,
    "dl1": lambda s: s.count("1") == 1,
    "parity": lambda s: s.count("1") % 2 == 1,
    "pattern": lambda s: "101" in s,
}


def decode(x):
    """Strings back from the one-hot, left-padded encoding (asserting the padding is a prefix)."""
    out = []
    for row in x:
        sym = row.argmax(-1)
        assert np.all(row.sum(-1) == 1)
        pad = int((sym == 2).sum())
        assert np.all(sym[:pad] == 2) and np.all(sym[pad:] != 2)
        out.append("".join(map(str, sym[pad:])))
    return out


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_dfa_agrees_with_the_definition_on_every_string_up_to_length_10(name):
    dfa = kmp_dfa("101") if name == "pattern" else LANGUAGES[name][0]
    for n in range(0, 11):
        for bits in itertools.product("01", repeat=n):
            s = "".join(bits)
            assert dfa.accepts(s) == ORACLES[name](s), (name, s)


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_splits_balanced_labelled_and_at_the_right_lengths(name):
    L = 6
    task = get_task(name, max_length=L, n_train=400, n_val=100, n_test=200)
    assert task.input_shape == (2 * L, 3)
    data = task.load(seed=0)
    for split, lengths in ((data.train, range(1, L + 1)), (data.val, range(1, L + 1)),
                           (data.test, [2 * L])):
        strings = decode(split.x)
        assert split.y.mean() == 0.5
        assert [int(ORACLES[name](s)) for s in strings] == split.y.tolist()
        assert {len(s) for s in strings} <= set(lengths)
    assert {len(s) for s in decode(data.test.x)} == {2 * L}
    again = get_task(name, max_length=L, n_train=400, n_val=100, n_test=200).load(seed=0)
    np.testing.assert_array_equal(again.train.x, data.train.x)  # reproducible
    assert not np.array_equal(get_task(name, max_length=L, n_train=400).load(seed=1).train.x,
                              data.train.x[:400])


def test_strings_are_uniform_within_a_length_and_label():
    """parity, length 4, accepted: the 8 strings with an odd number of 1s, ~n/8 each."""
    train = get_task("parity", max_length=4, min_length=4, n_train=4000).load(seed=0).train
    strings = [s for s, y in zip(decode(train.x), train.y) if y == 1]
    counts = {s: strings.count(s) for s in set(strings)}
    assert len(counts) == 8
    expected = len(strings) / 8
    # binomial standard deviation sqrt(n p (1 - p)) ~ 15: 5 sigma
    assert all(abs(c - expected) < 5 * np.sqrt(expected * 7 / 8) for c in counts.values())


def test_options_are_checked():
    with pytest.raises(ValueError, match="min_length"):
        get_task("tomita4", max_length=4, min_length=5)
    with pytest.raises(ValueError, match="pattern"):
        get_task("pattern", pattern="10a")
    with pytest.raises(ValueError, match="unknown option"):
        get_task("parity", length=3)
    assert get_task("pattern", pattern="0110").dfa().accepts("1101100")
    assert get_task("tomita2", max_length=5, test_length=5).input_shape == (5, 3)
