/* Minimal QEMU (7.2, plugin API v1) instruction counter: counts every executed guest
 * instruction with a per-instruction inline add (exact even if a TB exits early). */
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#define EXPORT __attribute__((visibility("default")))
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb; struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void *);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *, enum qemu_plugin_op, void *, uint64_t);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void *);
void qemu_plugin_outs(const char *);
EXPORT int qemu_plugin_version = 1;
static uint64_t insn_count;
static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  size_t n = qemu_plugin_tb_n_insns(tb);
  for (size_t i = 0; i < n; i++)
    qemu_plugin_register_vcpu_insn_exec_inline(qemu_plugin_tb_get_insn(tb, i),
                                               QEMU_PLUGIN_INLINE_ADD_U64, &insn_count, 1);
}
static void at_exit(qemu_plugin_id_t id, void *p) {
  char buf[64]; snprintf(buf, sizeof buf, "insns: %" PRIu64 "\n", insn_count);
  qemu_plugin_outs(buf);
}
EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
  qemu_plugin_register_atexit_cb(id, at_exit, NULL);
  return 0;
}
