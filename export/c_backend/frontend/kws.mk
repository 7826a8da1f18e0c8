# kws_app: streaming keyword spotting (integer front end + the int8 model), `make -f kws.mk`.
#   make -f kws.mk                                   kws_app with the host compiler
#   make -f kws.mk CC=arm-none-eabi-gcc CPU=cortex-m4 kws_lib.o for a Cortex-M
CC ?= cc
CFLAGS ?= -std=c99 -Wall -Wextra -Werror -O2
LIB_SRCS := kws_frontend.c kws_frontend_tables.c kws_model_io.c kws_input.c zoo_model.c
ifdef CPU
TARGET_FLAGS := -mcpu=$(CPU) -mthumb -ffunction-sections -fdata-sections
all: $(LIB_SRCS:.c=.o)
else
all: kws_app
endif

%.o: %.c kws_frontend.h kws_input.h zoo_model.h zoo_int8.h
	$(CC) $(CFLAGS) $(TARGET_FLAGS) -c $< -o $@

kws_app: kws_app.c kws_audio.c $(LIB_SRCS) kws_audio.h kws_frontend.h kws_input.h kws_recognizer.h \
         zoo_args.h zoo_model.h zoo_int8.h
	$(CC) $(CFLAGS) kws_app.c kws_audio.c $(LIB_SRCS) -o $@

clean:
	rm -f kws_app $(LIB_SRCS:.c=.o)

.PHONY: all clean
