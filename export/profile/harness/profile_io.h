/* profile_io.h: the harnesses' output without a libc (numbers and words through the runtime's
 * write system call) and their argument parsing: the same code on every target. */
#ifndef PROFILE_IO_H_
#define PROFILE_IO_H_

void zp_write(const char *p, int n);

static void zp_puts(const char *s) {
  int n = 0;
  while (s[n]) ++n;
  zp_write(s, n);
}

static void zp_putint(long v) {
  char buf[24];
  int i = (int)sizeof buf;
  unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
  do {
    buf[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) buf[--i] = '-';
  zp_write(buf + i, (int)sizeof buf - i);
}

static int zp_same(const char *a, const char *b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

/* A decimal count (leading zeros allowed: the profiler pads N and 2N to one width, so that
 * the two runs' argument strings, and so their stacks, have the same length). */
static int zp_atoi(const char *s) {
  int v = 0;
  while (*s >= '0' && *s <= '9') v = 10 * v + (*s++ - '0');
  return v;
}

/* A word in 8 hex digits: shifts and masks only, the same instructions whatever its value. */
static void zp_puthex(unsigned long v) {
  char buf[8];
  int i;
  for (i = 0; i < 8; ++i) buf[i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15u];
  zp_write(buf, 8);
}

/* "done NAME PART n=N checksum=C": the line the profiler checks before it trusts a count. N is
 * echoed as given (the profiler pads N and 2N to one width) and C in hex, so that the line costs
 * the same instructions in the runs of N and 2N calls (a decimal conversion divides, and a
 * division without hardware, libgcc's on an M0+, takes a number of instructions that depends
 * on the value: 0.74 instructions a call, measured on a 5-instruction loop). */
static void zp_done(const char *name, const char *part, const char *n, long checksum) {
  zp_puts("done ");
  zp_puts(name);
  zp_puts(" ");
  zp_puts(part);
  zp_puts(" n=");
  zp_puts(n);
  zp_puts(" checksum=");
  zp_puthex((unsigned long)checksum);
  zp_puts("\n");
}

#endif /* PROFILE_IO_H_ */
