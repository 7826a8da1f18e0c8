"""The device measurements of ``tools/cortexm`` (issue 43 item 5): the QEMU plugin's output parsed
(a recorded run), the driver arithmetic (counts of N and 2N calls, a window, a second), the
firmware tools' outputs parsed (recorded ``size`` and ``-fstack-usage`` files), MACs from
`zoo.macs` checked against the SiRNN's MAC formula, every script with a ``main()``; and the plugin
counting a program whose loop is 5 instructions (the cross toolchain is required)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORTEXM = REPO / "tools" / "cortexm"


@pytest.fixture(scope="module")
def m():
    """`measurement`, imported as the scripts beside it import it (their folder on sys.path)."""
    sys.path.insert(0, str(CORTEXM))
    try:
        import measurement

        yield measurement
    finally:
        sys.path.remove(str(CORTEXM))


# Recorded from `qemu-arm -cpu cortex-a15 -plugin libinsncount.so -d plugin tiny.elf m loop 100`
# (the driver's stdout, then the plugin's line on stderr), with the program of the test below.
RECORDED_RUN = "done m loop n=100\ninsns: 2982\n"
# `arm-none-eabi-size` of a build (Berkeley format) and a gcc -fstack-usage file, recorded.
RECORDED_SIZE = ("   text\t   data\t    bss\t    dec\t    hex\tfilename\n"
                 "  29450\t   2480\t 262208\t 294138\t  47cfa\ttiny.elf\n")
RECORDED_SU = ("/tmp/kwsc/kws_frontend.c:66:6:kws_power_spectrum\t2120\tstatic\n"
               "/tmp/kwsc/kws_frontend.c:108:9:kws_log2_q8\t12\tstatic\n"
               "/tmp/kwsc/kws_frontend.c:154:5:kws_stream_write.part.0\t24\tstatic\n")


def test_the_plugins_count_is_read_from_a_recorded_run(m):
    assert m.parse_count(RECORDED_RUN, "m", "loop", 100) == 2982


def test_a_run_that_did_not_finish_or_was_not_counted_is_an_error(m):
    with pytest.raises(m.MeasurementError, match="did not finish `m step 100`"):
        m.parse_count(RECORDED_RUN, "m", "step", 100)  # the run of another part
    with pytest.raises(m.MeasurementError, match="did not finish"):
        m.parse_count("insns: 2982\n", "m", "loop", 100)  # crashed before its last line
    with pytest.raises(m.MeasurementError, match="no 'insns: COUNT' line"):
        m.parse_count("done m loop n=100\n", "m", "loop", 100)  # run without the plugin


def test_per_call_cancels_the_start_up_and_the_window_adds_the_head(m):
    # A program of start-up S and c instructions per call: count(N) = S + c N.
    start_up, per, n = 1_234_567, 19_823, 100
    assert m.per_call_of(start_up + per * n, start_up + per * 2 * n, n) == per
    # 128 steps of 19,823 (sirnn.har2's step) and a head of 1,000 per 2.56 s window
    window = m.per_window(19_823, 1_000, 128)
    assert window == 2_538_344 and m.per_second(window, 2.56) == pytest.approx(991_540.6, abs=0.1)


def test_the_firmware_tools_outputs_are_read(m):
    assert m.parse_size(RECORDED_SIZE) == (29450, 2480, 262208)
    assert m.parse_stack_usage(RECORDED_SU) == {"kws_power_spectrum": 2120, "kws_log2_q8": 12,
                                               "kws_stream_write.part.0": 24}
    with pytest.raises(m.MeasurementError, match="not the output of `size`"):
        m.parse_size("arm-none-eabi-size: 'x.elf': No such file\n")


def test_the_kws_table_splits_the_hop_into_front_end_and_model():
    sys.path.insert(0, str(CORTEXM))
    try:
        import kws_measure
    finally:
        sys.path.remove(str(CORTEXM))
    per = {"hop": 78_113.0 + 5.0, "frontend": 52_308.0 + 5.0, "loop": 5.0, "frame": 50_397.0,
           "power": 45_407.0}
    rows = dict(kws_measure.pipeline_rows(per))
    assert rows["front end (kws_stream_write of 160 samples)"] == 52_308
    assert rows["input map + step + head + posteriors + recognizer"] == 78_113 - 52_308
    assert rows["whole pipeline"] == 78_113


@pytest.mark.parametrize("folder, inputs, steps", [("archive/sirnn.har2_gen4", 9, 128),
                                                    ("pretrained/sirnn.har2", 36, 32)])
def test_macs_come_from_zoo_macs(m, folder, inputs, steps):
    """The 1-sample SiRNN (archived) and the installed 4-samples-per-step one."""
    fig = m.keras_figures(REPO / "models" / folder)
    units, rank = fig["model_options"]["units"], fig["model_options"]["rank"]
    # the premultiplied SiRNN: W x, then U = I + V H applied twice (Eq. 9), 2 D r each
    assert fig["macs_per_step"] == inputs * units + 2 * 2 * units * rank
    assert fig["steps_per_window"] == steps


def test_every_script_has_a_main_and_no_hard_coded_macs():
    for path in sorted(CORTEXM.glob("*.py")):
        tree = ast.parse(path.read_text())
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        if path.name != "measurement.py":
            assert "main" in functions, f"{path.name}: no main()"
        assert not any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "MACS" for t in n.targets)
                       for n in tree.body), f"{path.name}: a MACS table beside zoo.macs"


def test_the_plugin_counts_a_loop_of_five_instructions(m, tmp_path):
    """A newlib driver (this folder's syscalls.cc, as main.cc's) whose loop is three NOPs, SUBS
    and BNE: 5 instructions a call, exactly, counted on `zoo.export.profile`'s fixed path. The
    toolchain is required (CI installs it): missing, the test fails naming the packages."""
    assert m.environment_ready() is None, m.environment_ready()
    (tmp_path / "tiny.c").write_text(
        '#include <stdio.h>\n#include <stdlib.h>\n'
        'int main(int argc, char **argv) {\n  int n = atoi(argv[3]);\n'
        '  if (n > 0) __asm__ volatile("1: nop\\n nop\\n nop\\n subs %0, %0, #1\\n bne 1b" : "+r"(n));\n'
        '  printf("done %s %s n=%s\\n", argv[1], argv[2], argv[3]);\n  return 0;\n}\n')
    build = tmp_path / "b"
    m.sh(["make", "-s", "-C", CORTEXM, f"B={build}", f"{build}/syscalls.o"])
    cpu = m.CPU.split()
    m.sh(["arm-none-eabi-gcc", *cpu, "-O2", "-c", tmp_path / "tiny.c", "-o", tmp_path / "tiny.o"])
    m.sh(["arm-none-eabi-g++", *cpu, "-nostartfiles", tmp_path / "tiny.o", build / "syscalls.o",
          "-lc", "-lgcc", "-lnosys", "-o", tmp_path / "tiny.elf"])
    assert m.per_call(tmp_path / "tiny.elf", "m", "loop", 100) == 5.0
    assert m.count(tmp_path / "tiny.elf", "m", "loop", 7) > 35
