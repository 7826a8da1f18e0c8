/* zoo_args.h: the numeric options of the zoo's C apps (zoo_app, kws_app), written by `zoo export
 * --form c`. One parser for every flag: the whole text must be a decimal integer within the
 * flag's range. strtol with its end pointer and errno, not atoi, which reads "2x" as 2 and wraps
 * "4294967395" to 99 on a 32-bit int. */
#ifndef ZOO_ARGS_H_
#define ZOO_ARGS_H_

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* 1 and *value when text is an optional sign, then decimal digits only, and lo <= it <= hi;
 * else 0 (nothing written). Leading spaces, which strtol would skip, are refused too. */
static int zoo_parse_long(const char *text, long lo, long hi, long *value) {
  const char *digits = text + (text[0] == '-' || text[0] == '+');
  char *end;
  long v;
  if (*digits < '0' || *digits > '9') return 0;
  errno = 0;
  v = strtol(text, &end, 10);
  if (errno == ERANGE || *end != '\0' || v < lo || v > hi) return 0;
  *value = v;
  return 1;
}

/* The value of option `name` from argv[*a + 1] (and *a moves past it), within lo..hi; else one
 * line on stderr naming the option, what it got and what is valid, and 0. */
static int zoo_int_option(int argc, char **argv, int *a, const char *name, long lo, long hi,
                          long *value) {
  const char *text = *a + 1 < argc ? argv[*a + 1] : NULL;
  if (!text || !zoo_parse_long(text, lo, hi, value)) {
    fprintf(stderr, "%s N: N must be an integer %ld..%ld, got %s\n", name, lo, hi,
            text ? text : "nothing");
    return 0;
  }
  ++*a;
  return 1;
}

#endif /* ZOO_ARGS_H_ */
