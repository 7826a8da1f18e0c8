"""The C export's public names (issue 48: ``--prefix``, two models in one program), the user
strings it writes into C (issue 52: no label or name reaches the compiler as code, under any
-std), and installed tags by name (issue 51: `zoo.pretrained.resolve_tag`).

Checked against independent things: TFLite Micro's Python interpreter (the zoo's streaming loop,
`check.reference`) for the logits and states of both models, linked into one program by their
CMake libraries (``add_subdirectory`` + ``target_link_libraries``), the NumPy reference of the
integer front end (`stream_log_mel_q8`), ``nm`` for the symbols an object exports, and the
labels' own UTF-8 bytes for what the program prints."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from zoo.export import device_runtime
from zoo.export.c_backend import CExportError, c_names, check, write_c_project
from zoo.export.c_backend.kws import write_kws_project
from zoo.export.c_backend.names import PrefixError, check_prefix, default_prefix
from zoo.export.card_schema import read_export_card
from zoo.export.kws_stream import stream_log_mel_q8

REPO = Path(__file__).resolve().parents[2]
ARCHIVE = REPO / "models" / "archive"
HAR = ARCHIVE / "sirnn.har2_gen1" / "export-step-int8"          # 2 classes, 128 x 9
DSA = ARCHIVE / "sirnn.dsa19_gen1" / "export-step-int8"         # 19 classes
WORDS = ARCHIVE / "sirnn.google12_testset" / "export-step-int8"  # keywords, 99 x 32

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="compiles with the host cc")


@pytest.mark.parametrize("bad,why", [("9lives", "not a C identifier"), ("har-2", "not a C "
                                     "identifier"), ("", "not a C identifier"),
                                     ("int", "C keyword"), ("static", "C keyword"),
                                     ("__har", "reserved"), ("_Har", "reserved"),
                                     ("h\u00e4r", "not a C identifier")])
def test_a_prefix_that_is_not_a_usable_c_identifier_is_one_line_saying_what_is_valid(bad, why):
    with pytest.raises(PrefixError) as err:
        check_prefix(bad)
    assert why in str(err.value) and "valid: a C identifier" in str(err.value)
    assert "\n" not in str(err.value)


def test_the_default_prefix_is_made_from_the_name():
    assert default_prefix("sirnn.har2") == "sirnn_har2"
    assert default_prefix("har2-GRU run") == "har2_gru_run"
    assert default_prefix("2024-run") == "m_2024_run"  # a leading digit
    assert default_prefix("int") == "m_int"
    assert check_prefix("_har") == "_har" and check_prefix("Har2") == "Har2"


def test_an_export_without_a_prefix_is_an_older_one_named_zoo(tmp_path):
    assert c_names(tmp_path) == ("zoo", "zoo_model.h", "zoo_model.c")
    (tmp_path / "c_check.json").write_text(json.dumps({"check": {}}))
    assert c_names(tmp_path) == ("zoo", "zoo_model.h", "zoo_model.c")
    (tmp_path / "c_check.json").write_text(json.dumps({"prefix": "har"}))
    assert c_names(tmp_path) == ("har", "har_model.h", "har_model.c")


# --------------------------------------------------------------------- two models, one program
TWO_MODELS_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>

#include "activity_model.h"
#include "words_model.h"
#include "kws_frontend.h"   /* the words export's: words_kws_... */
#include "kws_recognizer.h"

static unsigned char *read_all(const char *path, long *n) {
  static unsigned char buf[3][1 << 20];
  static int used = 0;
  FILE *f = fopen(path, "rb");
  *n = (long)fread(buf[used], 1, sizeof buf[0], f);
  fclose(f);
  return buf[used++];
}

int main(int argc, char **argv) {
  long n, i, t, c;
  const int8_t *a, *w;
  const int16_t *audio;
  activity_state_t as;
  words_state_t ws;
  words_kws_stream_t stream;
  static words_kws_recognizer_t rec; /* linked in: the recognizer's names are the words' */
  int8_t la[ACTIVITY_CLASSES], lw[WORDS_CLASSES];
  int16_t l[WORDS_KWS_FILTERS];
  (void)argc;
  a = (const int8_t *)read_all(argv[1], &n);
  for (i = 0; i < n / (ACTIVITY_TIMESTEPS * ACTIVITY_FEATURES); ++i) {
    activity_reset(&as);
    for (t = 0; t < ACTIVITY_TIMESTEPS; ++t)
      activity_push_q(&as, a + (i * ACTIVITY_TIMESTEPS + t) * ACTIVITY_FEATURES);
    activity_predict(&as, la);
    printf("A");
    for (c = 0; c < ACTIVITY_CLASSES; ++c) printf(" %d", la[c]);
    printf(" |");
    for (c = 0; c < ACTIVITY_UNITS; ++c) printf(" %d", as.h[c]);
    printf("\n");
  }
  w = (const int8_t *)read_all(argv[2], &n);
  for (i = 0; i < n / (WORDS_TIMESTEPS * WORDS_FEATURES); ++i) {
    words_reset(&ws);
    for (t = 0; t < WORDS_TIMESTEPS; ++t)
      words_push_q(&ws, w + (i * WORDS_TIMESTEPS + t) * WORDS_FEATURES);
    words_predict(&ws, lw);
    printf("W");
    for (c = 0; c < WORDS_CLASSES; ++c) printf(" %d", lw[c]);
    printf(" |");
    for (c = 0; c < WORDS_UNITS; ++c) printf(" %d", ws.h[c]);
    printf("\n");
  }
  audio = (const int16_t *)read_all(argv[3], &n);
  words_kws_stream_reset(&stream);
  for (i = 0; i < n / 2; ++i) {
    if (!words_kws_stream_push(&stream, audio[i], l)) continue;
    printf("F");
    for (c = 0; c < WORDS_KWS_FILTERS; ++c) printf(" %d", l[c]);
    printf("\n");
  }
  rec.window = 1, rec.min_count = 1, rec.threshold = 255, rec.last_class = rec.last_hop = -1;
  return words_kws_recognize(&rec, 0, (const uint8_t *)lw, (int *)&c) >= 0;
}
"""


@pytest.fixture(scope="module")
def two_exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("two")
    (root / "activity").mkdir()
    write_c_project(HAR, root / "activity", prefix="activity")
    write_kws_project(WORDS, root / "words", prefix="words")
    return root


TWO_MODELS_CMAKE = """cmake_minimum_required(VERSION 3.13)
project(two_models C)
add_subdirectory(activity)
add_subdirectory(words)
add_executable(two_models main.c)
target_link_libraries(two_models PRIVATE activity words)
target_compile_options(two_models PRIVATE -Wall -Wextra -Werror)
"""


def _compile(root: Path, out: Path) -> Path:
    """The two exports' CMake libraries (add_subdirectory + target_link_libraries) and main.c."""
    if shutil.which("cmake") is None:
        pytest.fail("cmake is not installed: apt-get install cmake")
    (root / "CMakeLists.txt").write_text(TWO_MODELS_CMAKE)
    for cmd in (["cmake", "-S", str(root), "-B", str(out)], ["cmake", "--build", str(out)]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out / "two_models"


def _reference(export_dir: Path, xq: np.ndarray):
    card = read_export_card(str(export_dir))
    model = device_runtime.StepModel(str(export_dir), card, "tflite-micro", 1)
    return check.reference(model, xq)


def _rows(lines: list[str], mark: str):
    logits, states = [], []
    for line in lines:
        if line.startswith(mark + " "):
            left, _, right = line[2:].partition("|")
            logits.append([int(v) for v in left.split()])
            states.append([int(v) for v in right.split()])
    return np.asarray(logits, np.int8), np.asarray(states, np.int8)


def test_an_activity_and_a_keyword_model_link_into_one_program_both_bit_exact(two_exports,
                                                                             tmp_path):
    rng = np.random.default_rng(48)
    xa = rng.integers(-128, 128, (6, 128, 9), dtype=np.int8)
    xw = rng.integers(-128, 128, (4, 99, 32), dtype=np.int8)
    audio = rng.integers(-8000, 8000, 8000, dtype=np.int16)  # 0.5 s: 48 frames
    (two_exports / "main.c").write_text(TWO_MODELS_MAIN)
    program = _compile(two_exports, tmp_path / "build")
    files = [tmp_path / name for name in ("a.s8", "w.s8", "audio.raw")]
    for path, data in zip(files, (xa, xw, audio.astype("<i2"))):
        path.write_bytes(data.tobytes())
    done = subprocess.run([str(program), *map(str, files)], capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    lines = done.stdout.splitlines()
    for mark, export_dir, x in (("A", HAR, xa), ("W", WORDS, xw)):
        c_logits, c_states = _rows(lines, mark)
        ref_logits, ref_states = _reference(export_dir, x)  # TFLite Micro
        assert np.array_equal(c_logits, ref_logits), mark
        assert np.array_equal(c_states, ref_states), mark
    features = np.asarray([[int(v) for v in line.split()[1:]] for line in lines
                           if line.startswith("F ")], np.int16)
    assert features.shape == (48, 32)
    assert np.array_equal(features, stream_log_mel_q8(audio))


def test_every_symbol_an_export_defines_starts_with_its_prefix(two_exports, tmp_path):
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) is not installed")
    for folder, prefix, names in (("activity", "activity", ["activity_model.c"]),
                                  ("words", "words", ["words_model.c", "kws_frontend.c",
                                                      "kws_frontend_tables.c", "kws_model_io.c",
                                                      "kws_input.c"])):
        for name in names:
            obj = tmp_path / f"{folder}-{name}.o"
            subprocess.run(["cc", "-std=c99", "-O2", "-c", str(two_exports / folder / name),
                            "-o", str(obj)], check=True)
            table = subprocess.run(["nm", "-g", "--defined-only", str(obj)], check=True,
                                   capture_output=True, text=True).stdout
            symbols = [line.split()[-1] for line in table.splitlines() if line.strip()]
            assert symbols and all(s.startswith(prefix + "_") for s in symbols), (name, symbols)


LEGACY_DRIVER = """#include "zoo_names.h"
int main(void) {
  static kws_stream_t stream;
  static zoo_state_t state;
  int16_t l[KWS_FILTERS] = {0};
  int8_t xq[KWS_FILTERS], logits[ZOO_CLASSES];
  kws_stream_reset(&stream);
  zoo_reset(&state);
  kws_model_input(l, xq);
  zoo_push_q(&state, xq);
  return zoo_predict(&state, logits) + kws_stream_push(&stream, 0, l);
}
"""


def test_the_names_header_maps_every_public_name_a_driver_uses(two_exports, tmp_path):
    """tools/cortexm's drivers and zoo profile's harnesses are written in the names before
    prefixes: the names header must define every prefixed name the export's headers declare
    (read from the headers the export wrote, not from the renaming rule), and a driver in the
    old names then compiles and links against the prefixed export."""
    import re

    from zoo.export.c_backend.driver_names import names_header

    words = two_exports / "words"
    header = names_header(words)
    defined = dict(re.findall(r"^#define (\w+) (\w+)$", header, re.M))
    declared = set()
    for name in ("words_model.h", "kws_frontend.h", "kws_input.h", "kws_recognizer.h"):
        declared |= {t for t in re.findall(r"\b(?:words|WORDS)_\w+\b(?!\.\w)",  # not files
                                           (words / name).read_text()) if not t.endswith("_H_")}
    assert declared and declared <= set(defined.values()), declared - set(defined.values())
    assert defined["zoo_push_q"] == "words_push_q"
    assert defined["kws_stream_write"] == "words_kws_stream_write"
    assert defined["KWS_FILTERS"] == "WORDS_KWS_FILTERS"
    assert "export/kws_stream.py" in (words / "kws_input.h").read_text()  # a file: kept
    (tmp_path / "zoo_names.h").write_text(header)
    (tmp_path / "driver.c").write_text(LEGACY_DRIVER)
    sources = [tmp_path / "driver.c", *(words / n for n in ("words_model.c", "kws_frontend.c",
               "kws_frontend_tables.c", "kws_model_io.c", "kws_input.c"))]
    done = subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", f"-I{tmp_path}", f"-I{words}",
                           *map(str, sources), "-o", str(tmp_path / "driver")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    legacy = tmp_path / "legacy"
    write_kws_project(WORDS, legacy, prefix="zoo")
    assert c_names(legacy)[0] == "zoo"
    assert "#define" not in names_header(legacy)  # the old names are the export's own


# ------------------------------------------------------------------ hostile labels (issue 52)
HOSTILE = [
    'x??/",0};__attribute__((constructor)) static void pwn(void){puts("PWNED");}'
    ' static const char *const zz[]={"',   # ??/ is a backslash under -trigraphs
    'quote " and \\ backslash', "*/ int injected_by_label; /*", "new\nline\r\x1b[31m",
    "\U0001F642 wave", "tab\tbell\x07", "??=define PWNED 1", "%s%n%x", "", "\u00fcml\u00e4ut",
    "\\", '"', "??'??!??-??(??)??<??>", "/* open", "line\\\nsplice", "0\x7f\x01", "sitting",
    "trailing ?", "ok",
]


def _hostile_export(tmp_path: Path, labels, model: str = "sirnn") -> Path:
    card = dataclasses.replace(read_export_card(str(DSA)), class_names=list(labels), model=model)
    out = tmp_path / "c"
    out.mkdir()
    write_c_project(DSA, out, card=card, prefix="dsa")
    return out


PRINT_LABELS = r"""
#include <stdio.h>
#include <string.h>
#include "dsa_model.h"
int main(void) {
  int c;
  for (c = 0; c < DSA_CLASSES; ++c) {
    fwrite(dsa_class_names[c], 1, strlen(dsa_class_names[c]), stdout);
    fputc(0, stdout);
  }
  return 0;
}
"""


@pytest.mark.parametrize("std", ["-std=c99", "-std=gnu99", "-std=c11"])
def test_hostile_labels_print_back_byte_identical_and_nothing_else_runs(std, tmp_path):
    assert len(HOSTILE) == 19
    out = _hostile_export(tmp_path, HOSTILE, model="sirnn */ int injected_by_model; /* ??/")
    (out / "labels.c").write_text(PRINT_LABELS)
    program = tmp_path / "labels"
    flags = [std, "-trigraphs", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2"]
    done = subprocess.run(["cc", *flags, str(out / "labels.c"), str(out / "dsa_model.c"),
                           "-o", str(program)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    printed = subprocess.run([str(program)], capture_output=True, check=True).stdout
    assert printed == b"".join(label.encode("utf-8") + b"\0" for label in HOSTILE)
    symbols = subprocess.run(["nm", str(program)], capture_output=True, text=True).stdout
    assert "pwn" not in symbols and "injected" not in symbols


def test_the_generated_c_holds_no_user_text_the_compiler_could_read(tmp_path):
    out = _hostile_export(tmp_path, HOSTILE, model="m */ evil(); /*")
    for name in ("dsa_model.c", "dsa_model.h"):
        text = (out / name).read_text()
        assert "??" not in text and "evil();" not in text and "*/ evil" not in text, name


def test_a_label_with_a_nul_character_is_refused_naming_it(tmp_path):
    labels = ["fine"] * 18 + ["bad\0label"]
    with pytest.raises(CExportError) as err:
        _hostile_export(tmp_path, labels)
    assert "'bad\\x00label'" in str(err.value) and "NUL" in str(err.value)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------- tags by name (issue 51)
def test_resolve_tag_finds_installed_tags_and_says_where_an_archived_one_went():
    from zoo.pretrained import list_pretrained, pretrained_root, resolve_tag

    assert resolve_tag("sirnn.har2") == pretrained_root() / "sirnn.har2"
    assert resolve_tag("archive/sirnn.har2_gen1") == ARCHIVE / "sirnn.har2_gen1"
    for archived, now in (("sirnn.har2_gen1", "sirnn.har2"), ("gru.dsa19_gen2", "gru.dsa19"),
                          ("sirnn.google12_testset", "sirnn.kws12")):
        with pytest.raises(ValueError) as err:
            resolve_tag(archived)
        assert str(err.value).startswith(f"{archived} moved to models/archive; the job's tag is "
                                         f"now {now} ")
    with pytest.raises(ValueError) as err:
        resolve_tag("sirnn.har3")
    assert str(err.value) == f"no tag 'sirnn.har3' installed; valid: {', '.join(list_pretrained())}"


def test_the_experiments_default_tags_resolve():
    from zoo.experiments.c_bench import SHIPPED_IMU
    from zoo.experiments.kws_long_recordings import TAGS
    from zoo.pretrained import resolve_tag

    for tag in [*SHIPPED_IMU, *TAGS]:
        assert (resolve_tag(tag) / "export-step-int8" / "model_card.json").is_file(), tag


def _zoo(capsys, *argv):
    from edge_rnn_zoo.cli import main

    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.slow  # 26 s on the shared machine (the table generation of the whole export)
def test_zoo_export_takes_an_installed_tag_by_name_with_a_prefix(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))  # no check: the app's tests
    code, _, err = _zoo(capsys, "export", "sirnn.har2", "--form", "c", "--prefix", "har",
                        "--out", tmp_path / "c")
    assert code == 0, err
    assert c_names(tmp_path / "c") == ("har", "har_model.h", "har_model.c")
    header = (tmp_path / "c" / "har_model.h").read_text()
    for name in ("#define HAR_CLASSES 2", "} har_state_t;", "void har_push(har_state_t *s",
                 "#ifndef HAR_MODEL_H_", "extern const char *const har_class_names[HAR_CLASSES]"):
        assert name in header, name
    assert "zoo_" not in header and "ZOO_" not in header


@pytest.mark.parametrize("argv,line", [
    (["export", "sirnn.har2_gen1", "--form", "c"], "zoo export: error: sirnn.har2_gen1: no such "
     "file or folder; sirnn.har2_gen1 moved to models/archive; the job's tag is now sirnn.har2"),
    (["export", "sirnn.har2", "--form", "c", "--prefix", "int"], "zoo export: error: --prefix "
     "'int' is a C keyword; valid: a C identifier"),
    (["export", "sirnn.har2", "--form", "c", "--prefix", "2x"], "zoo export: error: --prefix "
     "'2x' is not a C identifier; valid: a C identifier"),
    (["export", "sirnn.har2", "--form", "step", "--prefix", "har"], "zoo export: error: --prefix "
     "names the C code's symbols; it applies to --form c"),
    (["eval", "gru.har2_qat"], "zoo eval: error: gru.har2_qat: no such file or folder; "
     "gru.har2_qat moved to models/archive; the job's tag is now gru.har2"),
    (["eval", "nothing.here"], "zoo eval: error: nothing.here: no such file or folder; no tag "
     "'nothing.here' installed; valid: dscnn.kws12, "),
])
def test_a_tag_or_prefix_that_cannot_be_used_is_one_line(argv, line, capsys):
    code, out, err = _zoo(capsys, *argv)
    assert code == 2 and out == "" and err.startswith(line) and err.count("\n") == 1, err


def test_zoo_device_build_takes_a_tag_by_name(capsys):
    from zoo.export.device_build import main

    assert main(["sirnn.dsa19_gen3", "--tflm", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("device_build: error: sirnn.dsa19_gen3: no such file or folder; "
                          "sirnn.dsa19_gen3 moved to models/archive; the job's tag is now "
                          "sirnn.dsa19") and err.count("\n") == 1


def test_zoo_eval_takes_an_installed_tag_as_its_run():
    from argparse import Namespace

    from edge_rnn_zoo.train_cli import check_eval
    from zoo.pretrained import pretrained_root

    args = Namespace(run_dir="gru.har2", data_dir=None)
    check_eval(args)
    assert args.run_dir == str(pretrained_root() / "gru.har2")


def test_tensor_names_in_the_generated_comments_cannot_close_them(tmp_path):
    from zoo.export.c_backend.emit import emit_model
    from zoo.export.c_backend.plan import lower
    from zoo.export.c_backend.project import read_checked_graphs

    card = read_export_card(str(HAR))
    data, graph = read_checked_graphs(HAR, card)["step"]
    for tensor in graph.tensors:  # a Keras layer name is the model author's text
        tensor.name = "dense */ int injected_by_tensor = 1; /* ??/ \\"
    emitted = emit_model("step", lower(graph, data, "tflite-micro"))
    assert "*/ int injected" not in emitted.function and "??" not in emitted.function
    assert "/* FULLY_CONNECTED: dense _/ int injected_by_tensor _ 1_ /_ __/ _ */" in \
        emitted.function


def test_the_cxx_loops_title_stays_in_its_comment():
    from zoo.export.device_sources import device_sources

    card = read_export_card(str(HAR))
    texts = device_sources(title="m\n#error injected ??/\nx (int8)", io_dtype="int8", card=card,
                           step_ops=["FULLY_CONNECTED"], head_ops=["FULLY_CONNECTED"])
    for name, text in texts.items():
        assert "#error injected" not in text and "??/" not in text, name
    assert next(iter(texts.values())).startswith(
        "// Generated by `zoo export` for m__error injected __/_x (int8).")
