"""The cores ``zoo profile`` builds for: the cross compiler and its flags, and how QEMU runs the
result in user mode (Thumb code for any Cortex-M runs under ``qemu-arm -cpu cortex-a15``: the
same instruction stream; qemu-arm 7.2's M-profile CPU models do not start in user mode).

A Cortex-M55 build here has neither Helium (MVE) nor the low-overhead loops (LE, DLS) of
Armv8.1-M: an A-profile CPU runs neither, and a real M-profile M55 needs
``qemu-system-arm -M mps3-an547``. Its count is an upper bound of an M55's, said in the output.
"""

from __future__ import annotations

from dataclasses import dataclass

APT_PACKAGES = ("gcc-arm-none-eabi libnewlib-arm-none-eabi gcc-riscv64-unknown-elf "
                "picolibc-riscv64-unknown-elf qemu-user")
PICOLIBC = "/usr/lib/picolibc/riscv64-unknown-elf"
PICOLIBC_INCLUDE = f"{PICOLIBC}/include"
PICOLIBC_LIB = f"{PICOLIBC}/lib/rv32im/ilp32"  # the rv32imc multilib's (gcc -print-multi-directory)


@dataclass(frozen=True)
class Target:
    """One core: ``flags`` select it (and its float ABI), ``dsp`` whether the export's
    ``ZOO_USE_ARM_DSP`` path (SMLAD, SXTB16, SMMULR, SSAT) is built, ``qemu`` the user-mode
    emulator's command before the program, ``note`` what the figure is not (None: the core's own
    build)."""

    name: str
    arch: str  # "arm" or "riscv": the runtime (rt_<arch>.c) and the tools' prefix
    flags: tuple[str, ...]
    dsp: bool
    qemu: tuple[str, ...]
    core: str
    note: str | None = None

    @property
    def cc(self) -> str:
        return "arm-none-eabi-gcc" if self.arch == "arm" else "riscv64-unknown-elf-gcc"

    @property
    def size(self) -> str:
        return "arm-none-eabi-size" if self.arch == "arm" else "riscv64-unknown-elf-size"

    @property
    def defines(self) -> tuple[str, ...]:
        return ("-DZOO_USE_ARM_DSP",) if self.dsp else ()

    @property
    def libs(self) -> tuple[str, ...]:
        """The libraries a program links: libc for memcpy and the like (newlib's; picolibc's
        for RISC-V) and libgcc (soft float, division)."""
        lib_path = () if self.arch == "arm" else (f"-L{PICOLIBC_LIB}",)
        return (*lib_path, "-lc", "-lgcc")

    @property
    def tools(self) -> tuple[str, ...]:
        """The programs this target needs on PATH."""
        return (self.cc, self.size, self.qemu[0])


_ARM_QEMU = ("qemu-arm", "-cpu", "cortex-a15")
TARGETS = {t.name: t for t in (
    Target("cortex-m0plus", "arm", ("-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft"), False,
           _ARM_QEMU, "Armv6-M: no DSP, no 64-bit multiply-accumulate"),
    Target("cortex-m3", "arm", ("-mcpu=cortex-m3", "-mthumb", "-mfloat-abi=soft"), False,
           _ARM_QEMU, "Armv7-M without DSP"),
    Target("cortex-m4", "arm", ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                                "-mfpu=fpv4-sp-d16"), True, _ARM_QEMU, "Armv7E-M, DSP path"),
    Target("cortex-m7", "arm", ("-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard",
                                "-mfpu=fpv5-d16"), True, _ARM_QEMU, "Armv7E-M, DSP path"),
    Target("cortex-m33", "arm", ("-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard"), True,
           _ARM_QEMU, "Armv8-M Mainline, DSP path"),
    Target("cortex-m55", "arm", ("-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard",
                                 "-fno-branch-count-reg"), True, _ARM_QEMU,
           "Armv8.1-M, DSP path",
           note="no Helium: built without MVE and without low-overhead loops (LE/DLS), which "
                "qemu-arm user mode cannot run; Helium needs qemu-system-arm -M mps3-an547. An "
                "upper bound on a Cortex-M55's instructions"),
    Target("rv32imc", "riscv", ("-march=rv32imc", "-mabi=ilp32", "-isystem", PICOLIBC_INCLUDE),
           False, ("qemu-riscv32",), "RV32IMC (e.g. ESP32-C3)"),
)}


class TargetError(ValueError):
    """An unknown target name."""


def targets_named(names) -> list[Target]:
    """The targets of ``names`` (all, in table order, when empty); an unknown one is a
    `TargetError` of one line listing the valid names."""
    if not names:
        return list(TARGETS.values())
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise TargetError(f"--target {unknown[0]!r}: valid targets are {', '.join(TARGETS)}")
    return [TARGETS[n] for n in dict.fromkeys(names)]
