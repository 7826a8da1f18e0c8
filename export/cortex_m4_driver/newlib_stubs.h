// The newlib hooks both runtimes share (syscalls.cc: qemu-arm user mode; sys_semihost.cc: the
// MPS2/MPS3 board models): no files, a fixed heap. Each runtime adds its own entry point, _exit and _write.
#pragma once
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <sys/stat.h>
extern "C" {
int main(int, char**);
void __libc_init_array(void);
void* __dso_handle = nullptr;
void _init(void) {}
void _fini(void) {}
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
}  // extern "C"
