"""The library a firmware build takes from a C export (issue 48 item 3): the CMake library
(``add_subdirectory`` + ``target_link_libraries``) built on the host, its program's logits equal
to ``zoo_app``'s (itself checked against TFLite Micro: test_c_backend.py); the same library
cross-built with the export's arm-none-eabi toolchain file for a Cortex-M0+ (no DSP
instructions) and a Cortex-M4 (SMLAD, read back with objdump); the Arduino library checked
against the Arduino library specification rev 2.2 and its example sketch compiled as C++ with a
stub ``Serial`` on the host, printing the classes and logits ``zoo_app`` prints.

cmake, make, arm-none-eabi-gcc are required here (CI installs them): a missing one fails in
one line naming its Debian package, it is not skipped."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from zoo.export.c_backend import write_c_project
from zoo.export.c_backend.check import run_app

REPO = Path(__file__).resolve().parents[2]
HAR = REPO / "models" / "archive" / "sirnn.har2_gen1" / "export-step-int8"  # 128 x 9, 2 classes
PACKAGES = {"cmake": "cmake", "make": "make", "cc": "gcc", "c++": "g++",
            "arm-none-eabi-gcc": "gcc-arm-none-eabi",
            "arm-none-eabi-objdump": "binutils-arm-none-eabi"}


def need(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed: apt-get install {PACKAGES[tool]}")


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    need("cc", "make")
    out = tmp_path_factory.mktemp("lib") / "har-c"
    out.mkdir()
    write_c_project(HAR, out, prefix="har")
    done = subprocess.run(["make", "-s", "-C", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def windows() -> np.ndarray:
    """Raw float windows a sensor could give (a HAR window's scale: about +-2)."""
    return np.random.default_rng(3).normal(0, 0.7, (12, 128, 9)).astype(np.float32)


CONSUMER = """cmake_minimum_required(VERSION 3.13)
project(consumer C)
add_subdirectory({export} har)
add_executable(consumer {export}/main.c)
target_link_libraries(consumer PRIVATE har)
"""


def test_a_cmake_project_links_the_library_and_gets_zoo_apps_logits(export, windows, tmp_path):
    need("cmake")
    (tmp_path / "CMakeLists.txt").write_text(CONSUMER.format(export=export.as_posix()))
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", str(tmp_path), "-B", str(build)],
                ["cmake", "--build", str(build)]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "har: the int8 model library, Cortex-M DSP path OFF" in subprocess.run(
        ["cmake", str(build)], capture_output=True, text=True).stdout
    for kind in ("raw", "int8"):
        x = windows if kind == "raw" else np.clip(windows * 40, -128, 127).astype(np.int8)
        mine, mine_state = run_app(build / "consumer", x, kind)
        theirs, their_state = run_app(export / "zoo_app", x, kind)
        assert np.array_equal(mine, theirs) and np.array_equal(mine_state, their_state), kind


@pytest.mark.parametrize("cpu,dsp", [("cortex-m0plus", False), ("cortex-m4", True)])
def test_the_library_cross_builds_with_the_dsp_path_only_where_the_core_has_it(cpu, dsp, export,
                                                                               tmp_path):
    need("cmake", "arm-none-eabi-gcc", "arm-none-eabi-objdump")
    build = tmp_path / cpu
    configure = subprocess.run(
        ["cmake", "-S", str(export), "-B", str(build),
         f"-DCMAKE_TOOLCHAIN_FILE={export / 'cmake' / 'arm-none-eabi.cmake'}", f"-DZOO_CPU={cpu}",
         "-DCMAKE_BUILD_TYPE=Release"], capture_output=True, text=True)
    assert configure.returncode == 0, configure.stdout[-2000:] + configure.stderr[-2000:]
    assert f"Cortex-M DSP path {'ON' if dsp else 'OFF'}" in configure.stdout
    done = subprocess.run(["cmake", "--build", str(build), "--target", "har"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    code = subprocess.run(["arm-none-eabi-objdump", "-d", str(build / "libhar.a")],
                          capture_output=True, text=True, check=True).stdout
    assert "har_push_q" in code and "har_predict" in code
    assert ("smlad" in code) == dsp and ("smmulr" in code) == dsp, cpu
    assert f"-mcpu={cpu}" in (build / "CMakeCache.txt").read_text()


# ---------------------------------------------------------------------------- Arduino library
# Arduino library specification rev 2.2 (arduino.github.io/arduino-cli/library-specification):
# the required fields of library.properties, the allowed categories, the name's characters.
REQUIRED_FIELDS = ("name", "version", "author", "maintainer", "sentence", "paragraph",
                   "category", "url", "architectures")
CATEGORIES = {"Display", "Communication", "Signal Input/Output", "Sensors", "Device Control",
              "Timing", "Data Storage", "Data Processing", "Other"}


def read_properties(path: Path) -> dict:
    fields = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f"{path}: {line!r} is not key=value"
            fields[key] = value
    return fields


def test_the_arduino_library_follows_the_specification(export):
    root = export / "arduino" / "har"
    fields = read_properties(root / "library.properties")
    assert all(fields.get(key) for key in REQUIRED_FIELDS), fields
    assert fields["name"] == "har" and fields["category"] in CATEGORIES
    assert fields["version"].count(".") == 2 and all(p.isdigit() for p in fields["version"].split("."))
    assert fields["architectures"] == "*" and fields["includes"] == "har_model.h"
    assert fields["url"].startswith("https://")
    # recursive layout: the sources in src/ (nothing but the library: no main(), no app)
    src = sorted(p.name for p in (root / "src").iterdir())
    assert src == ["har_model.c", "har_model.h", "zoo_int8.h"]
    for name in src:
        assert (root / "src" / name).read_bytes() == (export / name).read_bytes()
    assert [p.name for p in (root / "examples").iterdir()] == ["har"]
    assert (root / "examples" / "har" / "har.ino").is_file()


ARDUINO_STUB = r"""
/* The host stand-in for the Arduino core the sketch uses: Serial reads stdin, writes stdout. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
struct SerialStub {
  void begin(long) {}
  int available() { int c = getchar(); if (c == EOF) return 0; ungetc(c, stdin); return 1; }
  size_t readBytesUntil(char end, char *buf, size_t max) {
    size_t n = 0; int c;
    while (n < max && (c = getchar()) != EOF && c != end) buf[n++] = (char)c;
    return n;
  }
  void print(const char *s) { fputs(s, stdout); }
  void print(int v) { printf("%d", v); }
  void println(const char *s) { puts(s); }
  void println(int v) { printf("%d\n", v); }
  void println() { putchar('\n'); }
};
extern SerialStub Serial;
"""
ARDUINO_MAIN = r"""
SerialStub Serial;
void setup();
void loop();
int main() {
  setup();
  while (!feof(stdin)) loop();
  return 0;
}
"""


def test_the_arduino_example_prints_zoo_apps_classes_with_a_stub_serial(export, windows,
                                                                        tmp_path):
    need("c++", "cc")
    root = export / "arduino" / "har"
    (tmp_path / "Arduino.h").write_text(ARDUINO_STUB)
    (tmp_path / "arduino_main.cpp").write_text(ARDUINO_MAIN)
    model = tmp_path / "har_model.o"
    subprocess.run(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-c",
                    str(root / "src" / "har_model.c"), "-o", str(model)], check=True)
    sketch = tmp_path / "sketch"
    done = subprocess.run(["c++", "-std=c++11", "-O2", "-Wall", "-Wextra", "-Werror",
                           f"-I{tmp_path}", f"-I{root / 'src'}", "-include", "Arduino.h",
                           "-x", "c++", str(root / "examples" / "har" / "har.ino"), "-x", "none",
                           str(tmp_path / "arduino_main.cpp"), str(model), "-o", str(sketch)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = ["oops, not numbers"] + [", ".join(repr(float(v)) for v in step)
                                     for window in windows for step in window]
    out = subprocess.run([str(sketch)], input="\n".join(lines) + "\n", capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0] == "error: a line is one sample of 9 numbers"
    logits, _ = run_app(export / "zoo_app", windows, "raw")
    names = ["WALKING+WALKING_DOWNSTAIRS+STANDING", "WALKING_UPSTAIRS+SITTING+LAYING"]
    want = [f"class {int(np.argmax(row))} {names[int(np.argmax(row))]} "
            + " ".join(str(v) for v in row) for row in logits]
    assert out[1:] == want


def test_the_export_is_a_zephyr_module_building_its_cmake_library(export):
    import yaml

    module = yaml.safe_load((export / "zephyr" / "module.yml").read_text())
    assert module == {"name": "har", "build": {"cmake": "."}}
    cmake = (export / "CMakeLists.txt").read_text()
    assert "add_library(har STATIC har_model.c)" in cmake
    assert "target_include_directories(har PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})" in cmake
    assert "target_link_libraries(har PUBLIC zephyr_interface)" in cmake


def test_write_c_project_alone_writes_the_check_file_its_readers_need(export):
    """``c_check.json`` (issue: only ``zoo export --form c`` wrote it): `c_names` reads the
    prefix from it (without it, an older export's ``zoo``: file names that are not there), and
    ``zoo profile`` the window's shape. Written, saying no check was run."""
    import json

    from zoo.export.c_backend.names import c_names
    from zoo.export.card_schema import read_export_card

    assert c_names(export) == ("har", "har_model.h", "har_model.c")
    assert all((export / name).is_file() for name in c_names(export)[1:])
    summary = json.loads((export / "c_check.json").read_text())
    card = read_export_card(str(HAR))
    assert (summary["timesteps"], summary["features"]) == (card.timesteps, card.features)
    assert "does not check" in summary["check"]["skipped"]
