/* The smallest runtime for RV32 code under qemu-riscv32 *user mode*: an entry point (the global
 * pointer set for the linker's relaxations) and Linux system calls (ecall, a7 = number) for the
 * harness's output and exit. memcpy and the like come from picolibc's libc.a, as in a
 * firmware; nothing else of libc is linked. */
#include <stddef.h>

int main(int argc, char **argv);

static long zp_sys3(long n, long a, long b, long c) {
  register long a0 __asm__("a0") = a;
  register long a1 __asm__("a1") = b;
  register long a2 __asm__("a2") = c;
  register long a7 __asm__("a7") = n;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
  return a0;
}

void zp_write(const char *p, int n) { zp_sys3(64 /* write */, 1, (long)p, n); }

void zp_exit(int code) {
  for (;;) zp_sys3(94 /* exit_group */, code, 0, 0);
}

void zp_start_c(int argc, char **argv) { zp_exit(main(argc, argv)); }

__attribute__((naked, noreturn)) void _start(void) {
  __asm__ volatile(".option push\n.option norelax\nla gp, __global_pointer$\n.option pop\n"
                   "lw a0, 0(sp)\naddi a1, sp, 4\ncall zp_start_c\n1: j 1b\n");
}

