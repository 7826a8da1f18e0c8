"""``zoo profile`` (`zoo.export.profile`): the instruction-count protocol against QEMU on loops of
a known size (Thumb-1 and RV32), one small C export (the session's SiRNN int8 step export)
cross-built for all seven targets once and checked bit for bit against its host build, counts
that reproduce from different paths, the keyword pipeline's hop against the independent
``tools/cortexm`` driver, the --json schema, boards, and the one-line errors.

The cross toolchains and QEMU are required (CI installs them): a missing one fails with the
Debian packages to install, it is not skipped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.export.profile import ProfileError, TargetError, boards, build, counting, engine, profile
from zoo.export.profile.targets import APT_PACKAGES, TARGETS, targets_named

REPO = Path(__file__).resolve().parents[2]
JSON_KEYS = {"instructions_per_step", "instructions_per_window", "instructions_per_second",
             "flash_bytes", "ram_bytes", "bit_exact"}


@pytest.fixture(scope="session")
def tools_present():
    missing = engine.missing_tools(TARGETS.values())
    assert missing is None, missing  # CI installs them: a missing tool is a failure here


@pytest.fixture(scope="session")
def small_c(int8_step, tmp_path_factory, tools_present) -> Path:
    """The C export of the session's SiRNN int8 step export (with its testset.npz)."""
    from zoo.export.c_backend.command import export_c

    out = tmp_path_factory.mktemp("profile") / "sirnn-c"
    export_c(int8_step[0], out, check=False)
    return out


@pytest.fixture(scope="session")
def profiled(small_c, tmp_path_factory) -> dict:
    """`profile_export` of the small export on all seven targets, once."""
    return engine.profile_export(small_c, list(TARGETS.values()), tmp_path_factory.mktemp("w"))


# ------------------------------------------------------------------------ the count protocol
# Thumb-1 inline asm is read in divided syntax: "sub" is the 16-bit flag-setting SUBS
LOOPS = {"cortex-m0plus": '"1: nop\\n nop\\n nop\\n sub %0, #1\\n bne 1b" : "+l"(n)',
         "rv32imc": '"1: nop\\n nop\\n nop\\n addi %0, %0, -1\\n bnez %0, 1b" : "+r"(n)'}


@pytest.mark.parametrize("target", list(LOOPS))
def test_the_plugin_counts_a_loop_of_five_instructions(target, tmp_path, tools_present):
    """A harness whose loop is three NOPs, a decrement and a branch: 5 instructions a call,
    exactly, on the profile's runtime under the fixed path."""
    (tmp_path / "loop.c").write_text(
        '#include "profile_io.h"\nint main(int argc, char **argv) {\n  int n = zp_atoi(argv[3]);\n'
        f'  if (n > 0) __asm__ volatile({LOOPS[target]});\n'
        '  zp_done(argv[1], argv[2], argv[3], 0);\n  return 0;\n}\n')
    harness = build.copy_harness(tmp_path / "harness")
    shutil.copy(tmp_path / "loop.c", harness / "loop.c")
    program = build.Program(tmp_path, (), "loop.c", tmp_path)
    elf = build.build_target(TARGETS[target], program, harness, tmp_path / "b", "-O2")
    qemu = TARGETS[target].qemu
    assert counting.per_call(elf.parent, qemu, "m", "loop", 100) == 5.0
    assert counting.count(elf.parent, qemu, "m", "loop", 7) > 35


def test_a_count_reproduces_from_different_paths(small_c, tmp_path):
    """The same export profiled from two work folders whose paths differ in length (and from a
    process with a different environment): identical counts, to the instruction."""
    m4 = [TARGETS["cortex-m4"]]
    short = engine.profile_export(small_c, m4, tmp_path / "a")["targets"]["cortex-m4"]
    deep = tmp_path / ("a-much-longer-folder-name-" * 3) / "and" / "deeper"
    long = engine.profile_export(small_c, m4, deep)["targets"]["cortex-m4"]
    assert short == long
    assert short["instructions_per_step"] > 0


# ------------------------------------------------------------------------- seven targets
@pytest.mark.slow
def test_every_target_is_bit_exact_with_the_host_build(profiled):
    """Each cross build's logits and final state on the export's test windows are the host
    build's (which zoo export's check compares with TFLite Micro)."""
    assert profiled["check"]["from"] == "test windows"
    for name, figures in profiled["targets"].items():
        assert figures["bit_exact"] is True, (name, figures.get("mismatch"))


def test_the_figures_are_consistent_and_the_m55_says_what_it_is(profiled):
    for name, f in profiled["targets"].items():
        assert JSON_KEYS <= set(f), name
        assert f["instructions_per_step"] > 1000 and f["flash_bytes"] > 1000, name
        assert f["ram_bytes"] == f["static_ram_bytes"] + f["stack_bytes"] > 0, name
        # a window: T steps + the head; a second: the window over its seconds (HAR: 2.56 s)
        assert f["instructions_per_window"] == pytest.approx(  # the step rounded to 0.1
            128 * f["instructions_per_step"] + f["head_instructions"], abs=128 * 0.05 + 1)
        assert f["instructions_per_second"] == pytest.approx(f["instructions_per_window"] / 2.56,
                                                             abs=1)
    assert "no Helium" in profiled["targets"]["cortex-m55"]["note"]
    assert "note" not in profiled["targets"]["cortex-m4"]
    # the DSP path (four MACs in five instructions: a word load, two SXTB16, two SMLAD) is the
    # cheapest; no core without it comes within 1.5x
    m4 = profiled["targets"]["cortex-m4"]["instructions_per_step"]
    for name in ("cortex-m0plus", "cortex-m3", "rv32imc"):
        assert profiled["targets"][name]["instructions_per_step"] > 1.5 * m4, name


# --------------------------------------------------------------------- keyword pipeline
@pytest.mark.slow
def test_a_keyword_hop_is_the_whole_pipeline_as_the_cortexm_driver_counts_it(tmp_path,
                                                                             tools_present):
    """A keyword export's hop (front end, input map, step, head, posteriors, recognizer) on a
    Cortex-M4 against ``tools/cortexm/kws_main.c`` built by kws.mk on newlib (another harness,
    another runtime, the same work): within 1 %; the hop's parts add up."""
    from zoo.export.c_backend.command import export_c

    c_dir = tmp_path / "kws-c"
    export_c(REPO / "models" / "archive" / "sirnn.google12_testset" / "export-step-int8", c_dir,
             check=False)
    fig = engine.profile_export(c_dir, [TARGETS["cortex-m4"]], tmp_path / "w")
    m4 = fig["targets"]["cortex-m4"]
    assert fig["kws"] and m4["bit_exact"]
    assert m4["instructions_per_step"] == pytest.approx(
        m4["frontend_instructions_per_hop"] + m4["model_instructions_per_hop"], abs=0.2)
    assert m4["instructions_per_second"] == pytest.approx(100 * m4["instructions_per_step"], abs=5)
    b = tmp_path / "driver"
    done = subprocess.run(["make", "-s", "-C", str(REPO / "tools" / "cortexm"), "-f", "kws.mk",
                           f"K={c_dir}", f"B={b}", f"PYTHON={sys.executable}", f"{b}/kws.elf"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1000:]
    sys.path.insert(0, str(REPO / "tools" / "cortexm"))
    try:
        import measurement
    finally:
        sys.path.remove(str(REPO / "tools" / "cortexm"))
    hop = (measurement.per_call(b / "kws.elf", "kws", "hop", 100)
           - measurement.per_call(b / "kws.elf", "kws", "loop", 100))
    assert m4["instructions_per_step"] == pytest.approx(hop, rel=0.01)


# ------------------------------------------------------------------------------ the CLI
def zoo(*args, env=None):
    return subprocess.run([sys.executable, "-m", "edge_rnn_zoo.cli", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=600)


def test_json_has_the_documented_schema_and_the_board_says_it_fits(small_c):
    done = zoo("profile", small_c, "--target", "cortex-m0plus", "--board", "samd21", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result["targets"]) == {"cortex-m0plus"}
    figures = result["targets"]["cortex-m0plus"]
    assert JSON_KEYS <= set(figures) and figures["bit_exact"] is True
    assert isinstance(figures["instructions_per_step"], float)
    assert all(isinstance(figures[k], int) for k in JSON_KEYS - {"instructions_per_step",
                                                                 "bit_exact"})
    board = result["board"]
    assert board["fits"] and board["flash_fits"] and board["ram_fits"]
    assert board["step_ms_lower_bound"] == pytest.approx(
        1e3 * figures["instructions_per_step"] / 48e6)
    assert "zoo profile: cortex-m0plus: counting" in done.stderr  # progress on stderr


def test_the_table_and_a_board_too_small():
    figures = {"instructions_per_step": 80_000.0, "instructions_per_second": 3_125_000,
               "flash_bytes": 9_620, "ram_bytes": 40_000}
    small = boards.Board("tiny", "a tiny part", "cortex-m0plus", 48_000_000, 8_192, 32_768)
    verdict = boards.fit(small, figures)
    assert not verdict["fits"] and not verdict["flash_fits"] and not verdict["ram_fits"]
    external = boards.board_named("esp32c3")
    assert boards.fit(external, figures)["flash_fits"] is None  # external flash: not judged
    assert boards.fit(external, figures)["fits"]
    from edge_rnn_zoo.profile_cli import _board_line

    line = _board_line(verdict)
    assert "does NOT fit" in line and "lower bound" in line and "instructions are not cycles" in line


def test_every_board_names_a_known_target():
    for board in boards.boards().values():
        assert board.target in TARGETS, board


def test_bad_target_bad_board_and_missing_tools_are_one_line(small_c, tmp_path):
    for args, words in ((("--target", "cortex-m9"), "valid targets are cortex-m0plus"),
                        (("--board", "uno"), "valid boards are nano33ble")):
        done = zoo("profile", small_c, *args)
        assert done.returncode == 2 and done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr
    done = zoo("profile", "sirnn.har9", "--target", "cortex-m4", "-q")  # a tag not installed
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr  # zoo.pretrained.resolve_tag's line
    assert "no tag 'sirnn.har9' installed; valid: " in done.stderr and "sirnn.har2" in done.stderr
    done = zoo("profile", "sirnn.har2_gen1", "--target", "cortex-m4", "-q")  # an archived tag
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "moved to models/archive; the job's tag is now sirnn.har2" in done.stderr
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}
    done = zoo("profile", small_c, "--target", "rv32imc", env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith(f"apt-get install {APT_PACKAGES}")
    assert "riscv64-unknown-elf-gcc" in done.stderr and "qemu-riscv32" in done.stderr
    with pytest.raises(TargetError, match="valid targets"):
        targets_named(["m4"])
    with pytest.raises(ProfileError, match="not a tag name"):
        profile("no/such/folder", ["cortex-m4"])
