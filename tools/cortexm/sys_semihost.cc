// Bare-metal Cortex-M runtime for qemu-system-arm (MPS2/MPS3 boards): vector table, reset
// handler, newlib hooks over Arm semihosting (bkpt 0xab). argv comes from SYS_GET_CMDLINE.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <sys/stat.h>
#include "newlib_stubs.h"
extern "C" {
extern uint32_t __bss_start__, __bss_end__, __stack_top;
static inline int semi(int op, const void* arg) {
  register int r0 __asm__("r0") = op; register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}
void _exit(int code) {
  uint32_t args[2] = {0x20026 /*ADP_Stopped_ApplicationExit*/, (uint32_t)code};
  for (;;) semi(0x18 /*SYS_EXIT*/, code == 0 ? (const void*)0x20026 : (const void*)args);
}
int _write(int fd, const char* p, int n) {
  // Semihosting handles 1/2 are not preopened: SYS_WRITE0 through a bounce buffer instead.
  (void)fd;
  static char buf[257];
  int done = 0;
  while (done < n) {
    int k = n - done > 256 ? 256 : n - done;
    memcpy(buf, p + done, k); buf[k] = 0;
    semi(0x04 /*SYS_WRITE0*/, buf);
    done += k;
  }
  return n;
}
static char cmdline[256];
static char* argv_buf[16];
void Reset_Handler(void) {
  *(volatile uint32_t*)0xE000ED88 |= (0xFu << 20);  // CPACR: enable CP10/CP11 (FPU/MVE)
  __asm__ volatile("dsb\n isb");
  for (uint32_t* p = &__bss_start__; p < &__bss_end__; ++p) *p = 0;
  __libc_init_array();
  uint32_t blk[2] = {(uint32_t)cmdline, sizeof(cmdline) - 1};
  int argc = 0;
  if (semi(0x15 /*SYS_GET_CMDLINE*/, blk) == 0) {
    char* s = cmdline;
    while (*s && argc < 15) {
      while (*s == ' ') *s++ = 0;
      if (!*s) break;
      argv_buf[argc++] = s;
      while (*s && *s != ' ') s++;
    }
  }
  exit(main(argc, argv_buf));
}
void Fault_Handler(void) { _write(1, "FAULT\n", 6); _exit(99); }
__attribute__((section(".vectors"), used)) const void* vectors[16] = {
    &__stack_top, (void*)Reset_Handler, (void*)Fault_Handler, (void*)Fault_Handler,
    (void*)Fault_Handler, (void*)Fault_Handler, (void*)Fault_Handler, 0, 0, 0, 0,
    (void*)Fault_Handler, (void*)Fault_Handler, 0, (void*)Fault_Handler, (void*)Fault_Handler};
}
