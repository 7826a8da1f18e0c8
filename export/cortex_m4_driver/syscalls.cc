// Minimal runtime for running Cortex-M (Thumb-2) code under qemu-arm *user mode*:
// entry point + newlib hooks implemented with Linux EABI syscalls (svc 0, r7 = number).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cerrno>
#include <sys/stat.h>
#include "newlib_stubs.h"
extern "C" {
static inline long sys3(long n, long a, long b, long c) {
  register long r0 __asm__("r0") = a; register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c; register long r7 __asm__("r7") = n;
  __asm__ volatile("svc 0" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r7) : "memory");
  return r0;
}
void _exit(int code) { for (;;) sys3(248 /*exit_group*/, code, 0, 0); }
int _write(int fd, const char* p, int n) { return (int)sys3(4 /*write*/, fd, (long)p, n); }
void start_c(int argc, char** argv) { __libc_init_array(); exit(main(argc, argv)); }
__attribute__((naked, noreturn)) void _start(void) {
  __asm__ volatile("ldr r0, [sp]\n add r1, sp, #4\n bl start_c\n b .\n");
}
}
