# The streaming KWS pipeline on a Cortex-M4 (instruction counts under qemu-arm, flash and RAM):
#   python -m zoo.export.c_backend.kws --export EXPORT --out K      (a KWS C folder, any prefix:
#   kws_main.c / the package's min_kws.c use the names before prefixes, mapped by $(B)/kws-names/profile_names.h,
#   which PYTHON writes with the zoo package: python -m zoo.export.c_backend.driver_names K ...)
#   make -f kws.mk K=<that folder> [B=build-m4 OPT=-O2]         -> $(B)/kws.elf, $(B)/min-kws.elf
#   python kws_measure.py $(B)/kws.elf                          instructions per hop
#   make -f kws.mk K=... sizes                                  flash / RAM (minus empty.elf)
K ?=
B ?= build-m4
OPT ?= -O2
CPU ?= -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16
CC := arm-none-eabi-gcc
CXX := arm-none-eabi-g++
PYTHON ?= $(firstword $(wildcard $(abspath ../../.venv/bin/python)) python3)
NAMES := $(PYTHON) -m zoo.export.c_backend.driver_names
KWS_SRCS = $(K)/kws_frontend.c $(K)/kws_frontend_tables.c $(K)/kws_model_io.c $(K)/kws_input.c $(if $(K),$(K)/$(shell $(NAMES) $(K) --print source))
K_NAMES := $(B)/kws-names
HARNESS := ../../export/profile/harness
FLAGS := $(CPU) -std=c99 -ffunction-sections -fdata-sections -DZOO_USE_ARM_DSP -I$(K) -I$(abspath $(K_NAMES))
LINK := $(CXX) $(CPU) -nostartfiles -Wl,--gc-sections
all: $(B)/kws.elf $(B)/min-kws.elf libinsncount.so
$(K_NAMES)/profile_names.h: $(K)/c_check.json
	@mkdir -p $(@D)
	$(NAMES) $(K) --print names-header > $@
$(B)/kws-syscalls.o: syscalls.cc newlib_stubs.h
	@mkdir -p $(B); $(CXX) $(CPU) -O2 -fno-exceptions -fno-rtti -c $< -o $@
$(B)/kws.elf: kws_main.c $(KWS_SRCS) $(K_NAMES)/profile_names.h $(B)/kws-syscalls.o
	@mkdir -p $(B)/kws
	cd $(B)/kws && for s in $(abspath $(KWS_SRCS)) $(abspath kws_main.c); do $(CC) $(FLAGS) -I$(abspath $(K)) $(OPT) -c $$s || exit 1; done
	$(LINK) $(B)/kws/*.o $(B)/kws-syscalls.o -lc -lgcc -lnosys -o $@
$(B)/kws-empty.elf: empty.c $(B)/kws-syscalls.o
	$(CC) $(CPU) -Os -ffunction-sections -fdata-sections -c empty.c -o $(B)/kws-empty.o
	$(LINK) $(B)/kws-empty.o $(B)/kws-syscalls.o -lc -lgcc -lnosys -o $@
$(B)/min-kws.elf: $(HARNESS)/min_kws.c $(KWS_SRCS) $(K_NAMES)/profile_names.h $(B)/kws-syscalls.o
	@mkdir -p $(B)/min
	cd $(B)/min && for s in $(abspath $(KWS_SRCS)) $(abspath $(HARNESS)/min_kws.c); do $(CC) $(FLAGS) -I$(abspath $(K)) -Os -fstack-usage -c $$s || exit 1; done
	$(LINK) $(B)/min/*.o $(B)/kws-syscalls.o -lc -lgcc -lnosys -o $@
libinsncount.so: ../../export/profile/harness/insncount.c
	gcc -O2 -shared -fPIC -fvisibility=hidden -o $@ $<
sizes: $(B)/kws-empty.elf $(B)/min-kws.elf
	arm-none-eabi-size $^
	cat $(B)/min/*.su | sort -t'	' -k2 -n -r | head -8
.PHONY: all sizes
