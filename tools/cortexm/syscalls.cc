// Minimal runtime for running Cortex-M (Thumb-2) code under qemu-arm *user mode*:
// entry point + newlib hooks implemented with Linux EABI syscalls (svc 0, r7 = number).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cerrno>
#include <sys/stat.h>
extern "C" {
int main(int, char**);
void __libc_init_array(void);
void* __dso_handle = nullptr;
void _init(void) {}
void _fini(void) {}
static inline long sys3(long n, long a, long b, long c) {
  register long r0 __asm__("r0") = a; register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c; register long r7 __asm__("r7") = n;
  __asm__ volatile("svc 0" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r7) : "memory");
  return r0;
}
void _exit(int code) { for (;;) sys3(248 /*exit_group*/, code, 0, 0); }
int _write(int fd, const char* p, int n) { return (int)sys3(4 /*write*/, fd, (long)p, n); }
int _read(int, char*, int) { return 0; }
int _close(int) { return -1; }
int _lseek(int, int, int) { return 0; }
int _isatty(int fd) { return fd < 3; }
int _fstat(int, struct stat* st) { st->st_mode = S_IFCHR; return 0; }
int _getpid(void) { return 1; }
int _kill(int, int) { errno = EINVAL; return -1; }
alignas(8) static uint8_t heap[256 * 1024];
static size_t heap_used = 0;
void* _sbrk(ptrdiff_t inc) {
  if (heap_used + inc > sizeof(heap)) { errno = ENOMEM; return (void*)-1; }
  void* p = heap + heap_used; heap_used += inc; return p;
}
void start_c(int argc, char** argv) { __libc_init_array(); exit(main(argc, argv)); }
__attribute__((naked, noreturn)) void _start(void) {
  __asm__ volatile("ldr r0, [sp]\n add r1, sp, #4\n bl start_c\n b .\n");
}
}
