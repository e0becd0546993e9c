/* Includes the header as C99 and calls every function of the C ABI once
 * (with valid arguments unless the call's point is its failure), checking
 * each status. Built with -std=c99 -Wall -Wextra -Werror -pedantic and run
 * by capi/tests/from_cxx.rs; argv[1] is a directory for the trace it saves.
 * Prints "N passed, 0 failed" (N: the calls checked). */

#include "pm4core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checked = 0;

#define CHECK(call, expected)                                                                      \
    do {                                                                                           \
        pm4_status got_ = (call);                                                                  \
        if (got_ != (expected)) {                                                                  \
            fprintf(stderr, "%s:%d: %s answered %s (%s), expected %s\n", __FILE__, __LINE__,      \
                    #call, pm4_status_str(got_), pm4_last_error_message(),                         \
                    pm4_status_str(expected));                                                     \
            return 1;                                                                              \
        }                                                                                          \
        checked++;                                                                                 \
    } while (0)

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* A command buffer being written. */
typedef struct {
    uint32_t dw[256];
    uint32_t n;
} cmd;

static void packet(cmd *c, uint32_t opcode, const uint32_t *body, uint32_t n) {
    uint32_t i;
    c->dw[c->n++] = 0xC0000000u | ((n - 1) << 16) | (opcode << 8);
    for (i = 0; i < n; i++) c->dw[c->n++] = body[i];
}

static void wait_eq(cmd *c, uint64_t address, uint32_t value) {
    uint32_t b[6];
    b[0] = 3 | (1 << 4); b[1] = (uint32_t)address; b[2] = (uint32_t)(address >> 32);
    b[3] = value; b[4] = 0xFFFFFFFFu; b[5] = 4;
    packet(c, 0x3C, b, 6);
}

static void release_interrupt(cmd *c, uint64_t address, uint32_t value) {
    uint32_t b[7];
    b[0] = 0x28 | (5 << 8); b[1] = (2u << 24) | (1u << 29);
    b[2] = (uint32_t)address; b[3] = (uint32_t)(address >> 32); b[4] = value; b[5] = 0; b[6] = 0;
    packet(c, 0x49, b, 7);
}

/* Guest memory 0..64 KiB behind the callback table: a plain array (one
 * thread drives this deterministic GPU). */
static unsigned char callback_ram[65536];
static int callback_released = 0;

static int32_t cb_read(void *user, uint64_t address, void *out, size_t len) {
    (void)user;
    if (address + len > sizeof callback_ram) return PM4_MEMORY_UNMAPPED;
    memcpy(out, callback_ram + address, len);
    return PM4_MEMORY_OK;
}
static int32_t cb_write(void *user, uint64_t address, const void *data, size_t len) {
    (void)user;
    if (address + len > sizeof callback_ram) return PM4_MEMORY_UNMAPPED;
    memcpy(callback_ram + address, data, len);
    return PM4_MEMORY_OK;
}
static uint8_t cb_is_mapped(void *user, uint64_t address, uint64_t len) {
    (void)user;
    return address + len <= sizeof callback_ram;
}
static int32_t cb_cas32(void *user, uint64_t address, uint32_t expected, uint32_t desired, uint32_t *found) {
    (void)user;
    if (address + 4 > sizeof callback_ram) return PM4_MEMORY_UNMAPPED;
    memcpy(found, callback_ram + address, 4);
    if (*found == expected) memcpy(callback_ram + address, &desired, 4);
    return PM4_MEMORY_OK;
}
static int32_t cb_cas64(void *user, uint64_t address, uint64_t expected, uint64_t desired, uint64_t *found) {
    (void)user;
    if (address + 8 > sizeof callback_ram) return PM4_MEMORY_UNMAPPED;
    memcpy(found, callback_ram + address, 8);
    if (*found == expected) memcpy(callback_ram + address, &desired, 8);
    return PM4_MEMORY_OK;
}
static void cb_release(void *user) {
    (void)user;
    callback_released++;
}

/* What the backend saw. */
typedef struct {
    int draws, dispatches, fences, host_commands, register_calls_ok;
    uint32_t prim;
} seen;

static void on_draw(void *user, const pm4_draw *d) {
    seen *s = (seen *)user;
    uint32_t value = 0, range[4];
    pm4_program program;
    pm4_render_target rt;
    pm4_viewport vp;
    pm4_scissor sc;
    pm4_depth_target depth;
    int ok = 1;
    s->draws++;
    ok &= pm4_registers_get(d->registers, 0xC242 /* VGT_PRIMITIVE_TYPE */, &value) == PM4_STATUS_OK;
    s->prim = value;
    ok &= pm4_registers_read(d->registers, 0xA000, range, 4) == PM4_STATUS_OK;
    ok &= pm4_registers_program(d->registers, PM4_STAGE_PS, &program) == PM4_STATUS_OK;
    ok &= pm4_registers_render_target(d->registers, 0, &rt) == PM4_STATUS_OK;
    ok &= pm4_registers_viewport(d->registers, 0, &vp) == PM4_STATUS_OK;
    ok &= pm4_registers_scissor(d->registers, 0, &sc) == PM4_STATUS_OK;
    ok &= pm4_registers_depth(d->registers, &depth) == PM4_STATUS_OK;
    s->register_calls_ok += ok;
}
static void on_dispatch(void *user, const pm4_dispatch *d) {
    (void)d;
    ((seen *)user)->dispatches++;
}
static void on_fence(void *user, const pm4_fence *f) {
    (void)f;
    ((seen *)user)->fences++;
}
static void on_host_command(void *user, const pm4_host_command *c) {
    (void)c;
    ((seen *)user)->host_commands++;
}
static int listened = 0;
static void on_interrupt(void *user, const pm4_interrupt *i) {
    (void)user;
    (void)i;
    listened++;
}

#define LABEL 0x8000u

int main(int argc, char **argv) {
    pm4_version_info version;
    pm4_status last;
    char message[512];
    size_t len = 0, count = 0, woken = 0;
    const char *name = NULL;
    uint32_t index = 0, workers = 7, state = 9, packet_dw = 0, regs[2] = {0, 0}, one = 1;
    uint64_t id = 0, dropped = 0, aborted = 0, host_ram_words[512];
    pm4_gpu_config config;
    pm4_memory *flat = NULL, *host = NULL, *callbacks = NULL, *recording = NULL;
    pm4_recorder *recorder = NULL;
    pm4_gpu *gpu = NULL;
    pm4_submission *sub = NULL, *stuck = NULL, *other = NULL;
    pm4_host_write *write = NULL;
    pm4_interrupts *irqs = NULL;
    pm4_stalls *stalls = NULL;
    pm4_stall_report *report = NULL;
    pm4_queue_stall qs;
    pm4_queue_status status;
    pm4_submission_report done;
    pm4_interrupt irq;
    pm4_gpu_stats stats;
    pm4_processor_stats queue_stats;
    pm4_host_mapping mapping;
    pm4_memory_callbacks table;
    pm4_host_command_entry host_command;
    pm4_backend backend;
    seen s;
    cmd c, c2, c3;
    uint32_t body[4];
    unsigned char *trace = NULL;
    char path[4096], text[8192];

    if (argc < 2) {
        fprintf(stderr, "usage: every_function DIR\n");
        return 2;
    }
    memset(&s, 0, sizeof s);

    /* Versions, statuses, names. */
    CHECK(pm4_version(&version), PM4_STATUS_OK);
    EXPECT(version.abi == PM4_ABI_VERSION);
    EXPECT(strcmp(pm4_status_str(PM4_STATUS_TIMEOUT), "timed out") == 0);
    CHECK(pm4_opcode_name(0x2D, &name), PM4_STATUS_OK);
    EXPECT(strcmp(name, "DRAW_INDEX_AUTO") == 0);
    CHECK(pm4_event_name(0x28, &name), PM4_STATUS_OK);
    EXPECT(strcmp(name, "BOTTOM_OF_PIPE_TS") == 0);
    CHECK(pm4_event_name(64, &name), PM4_STATUS_INVALID_ARGUMENT);
    CHECK(pm4_register_index("VGT_PRIMITIVE_TYPE", &index), PM4_STATUS_OK);
    EXPECT(index == 0xC242);
    CHECK(pm4_register_index("NO_SUCH_REGISTER", &index), PM4_STATUS_INVALID_ARGUMENT);
    last = pm4_last_error_status();
    EXPECT(last == PM4_STATUS_INVALID_ARGUMENT);
    EXPECT(strstr(pm4_last_error_message(), "NO_SUCH_REGISTER") != NULL);
    CHECK(pm4_last_error_copy(message, sizeof message, &len), PM4_STATUS_OK);
    EXPECT(len == strlen(message) && strncmp(message, "pm4_register_index:", 19) == 0);

    /* Memory of each kind. */
    CHECK(pm4_memory_new_flat(0, 0x10000, &flat), PM4_STATUS_OK);
    memset(host_ram_words, 0, sizeof host_ram_words);
    mapping.guest_base = 0x100000;
    mapping.host = host_ram_words;
    mapping.len = sizeof host_ram_words;
    CHECK(pm4_memory_new_host(&mapping, 1, &host), PM4_STATUS_OK);
    memset(&table, 0, sizeof table);
    table.read = cb_read;
    table.write = cb_write;
    table.is_mapped = cb_is_mapped;
    table.cas32 = cb_cas32;
    table.cas64 = cb_cas64;
    table.release = cb_release;
    CHECK(pm4_memory_new_callbacks(&table, &callbacks), PM4_STATUS_OK);
    CHECK(pm4_memory_write(host, 0x100010, &one, 4), PM4_STATUS_OK);
    EXPECT(((uint32_t *)host_ram_words)[4] == 1);
    CHECK(pm4_memory_read(callbacks, 0x20, regs, 8), PM4_STATUS_OK);
    CHECK(pm4_recorder_new(flat, &recorder, &recording), PM4_STATUS_OK);
    CHECK(pm4_recorder_info(recorder, "description", "every function from C99"), PM4_STATUS_OK);
    CHECK(pm4_recorder_note(recorder, "start"), PM4_STATUS_OK);

    /* A deterministic GPU over the recording, with a backend. */
    CHECK(pm4_gpu_config_default(&config), PM4_STATUS_OK);
    config.mode = PM4_MODE_DETERMINISTIC;
    host_command.code = 0x42;
    host_command.action = PM4_HOST_COMMAND_CUSTOM;
    config.host_commands = &host_command;
    config.host_command_count = 1;
    memset(&backend, 0, sizeof backend);
    backend.user_data = &s;
    backend.draw = on_draw;
    backend.dispatch = on_dispatch;
    backend.fence = on_fence;
    backend.host_command = on_host_command;
    CHECK(pm4_gpu_new(&config, recording, &backend, &gpu), PM4_STATUS_OK);
    CHECK(pm4_gpu_workers(gpu, &workers), PM4_STATUS_OK);
    EXPECT(workers == 0);
    CHECK(pm4_gpu_interrupts(gpu, 0, &irqs), PM4_STATUS_OK);
    CHECK(pm4_gpu_stalls(gpu, &stalls), PM4_STATUS_OK);
    CHECK(pm4_gpu_on_interrupt(gpu, 1, on_interrupt, NULL), PM4_STATUS_OK);

    /* Graphics: wait for the label, set state, draw, dispatch, a host
     * command, release with an interrupt. */
    c.n = 0;
    wait_eq(&c, LABEL, 1);
    body[0] = 0x242; body[1] = 4;                       /* VGT_PRIMITIVE_TYPE = 4 */
    packet(&c, 0x79, body, 2);
    body[0] = 3; body[1] = 2;                           /* DRAW_INDEX_AUTO 3 vertices */
    packet(&c, 0x2D, body, 2);
    body[0] = 2; body[1] = 1; body[2] = 1; body[3] = 1; /* DISPATCH_DIRECT 2x1x1 */
    packet(&c, 0x15, body, 4);
    body[0] = PM4_HOST_COMMAND_SIGNATURE | 0x42; body[1] = 7;
    packet(&c, 0x10, body, 2);
    release_interrupt(&c, LABEL + 8, 5);
    CHECK(pm4_memory_write(flat, 0x1000, c.dw, c.n * 4), PM4_STATUS_OK);
    CHECK(pm4_gpu_submit(gpu, 0, 0x1000, c.n, &sub), PM4_STATUS_OK);
    CHECK(pm4_gpu_run_until_stalled(gpu, &state, &report), PM4_STATUS_OK);
    EXPECT(state == PM4_RUN_STALLED && report != NULL);
    CHECK(pm4_stall_report_count(report, &count), PM4_STATUS_OK);
    EXPECT(count == 1);
    CHECK(pm4_stall_report_queue(report, 0, &qs), PM4_STATUS_OK);
    EXPECT(qs.queue == 0 && qs.has_packet_address && qs.packet_address == 0x1000);
    EXPECT(qs.wait.kind == PM4_WAIT_REG_MEM && qs.wait.address == LABEL && qs.wait.reference == 1);
    CHECK(pm4_stall_report_text(report, text, sizeof text, &len), PM4_STATUS_OK);
    EXPECT(strstr(text, "stall: 1 queue waits") != NULL);
    pm4_stall_report_free(report);
    CHECK(pm4_gpu_stall_report(gpu, &report), PM4_STATUS_OK);
    EXPECT(report != NULL);
    pm4_stall_report_free(report);
    CHECK(pm4_gpu_queue_status(gpu, 0, &status), PM4_STATUS_OK);
    EXPECT(status.suspended && status.wait.address == LABEL);
    CHECK(pm4_submission_poll(sub, &done), PM4_STATUS_PENDING);
    CHECK(pm4_submission_wait_timeout(sub, 0, &done), PM4_STATUS_TIMEOUT);
    CHECK(pm4_gpu_write_memory(gpu, LABEL, &one, 4, &write), PM4_STATUS_OK);
    CHECK(pm4_host_write_poll(write), PM4_STATUS_OK);
    CHECK(pm4_host_write_wait(write, 0), PM4_STATUS_OK);
    CHECK(pm4_gpu_notify_host_write(gpu, LABEL, 4, &woken), PM4_STATUS_OK);
    CHECK(pm4_gpu_run_slices(gpu, 1, &state, NULL), PM4_STATUS_OK);
    CHECK(pm4_gpu_run_until_complete(gpu, sub, &done), PM4_STATUS_OK);
    EXPECT(done.draws == 1 && done.dispatches == 1 && done.fences == 1);
    CHECK(pm4_submission_wait(sub, &done), PM4_STATUS_OK);
    CHECK(pm4_submission_id(sub, &id), PM4_STATUS_OK);
    EXPECT(id == 0);
    EXPECT(s.draws == 1 && s.dispatches == 1 && s.fences == 1 && s.host_commands == 1);
    EXPECT(s.register_calls_ok == 1 && s.prim == 4);
    CHECK(pm4_interrupts_poll(irqs, &irq), PM4_STATUS_OK);
    EXPECT(irq.fence.address == LABEL + 8 && irq.fence.data == 5 && irq.submission == 0);
    CHECK(pm4_interrupts_wait(irqs, 1000, &irq), PM4_STATUS_TIMEOUT);
    CHECK(pm4_interrupts_dropped(irqs, &dropped), PM4_STATUS_OK);
    CHECK(pm4_gpu_wait_interrupt(gpu, 0, 0, &irq), PM4_STATUS_TIMEOUT);
    CHECK(pm4_stalls_poll(stalls, &report), PM4_STATUS_EMPTY);
    CHECK(pm4_stalls_wait(stalls, 1000, &report), PM4_STATUS_TIMEOUT);
    CHECK(pm4_stalls_dropped(stalls, &dropped), PM4_STATUS_OK);

    /* Compute queue 1: a release the listener thread hears. */
    c3.n = 0;
    release_interrupt(&c3, LABEL + 16, 9);
    CHECK(pm4_memory_write(flat, 0x3000, c3.dw, c3.n * 4), PM4_STATUS_OK);
    CHECK(pm4_gpu_submit(gpu, 1, 0x3000, c3.n, &other), PM4_STATUS_OK);
    CHECK(pm4_gpu_run_until_idle(gpu), PM4_STATUS_OK);

    /* A stall nobody resolves: declared a deadlock. */
    c2.n = 0;
    wait_eq(&c2, LABEL + 4, 1);
    CHECK(pm4_memory_write(flat, 0x2000, c2.dw, c2.n * 4), PM4_STATUS_OK);
    CHECK(pm4_gpu_submit(gpu, 0, 0x2000, c2.n, &stuck), PM4_STATUS_OK);
    CHECK(pm4_gpu_run_until_idle(gpu), PM4_STATUS_DEADLOCK);
    CHECK(pm4_gpu_declare_deadlock(gpu, &report), PM4_STATUS_OK);
    EXPECT(report != NULL);
    pm4_stall_report_free(report);
    CHECK(pm4_submission_poll(stuck, NULL), PM4_STATUS_DEADLOCK);
    CHECK(pm4_gpu_abort(gpu, 0, &aborted), PM4_STATUS_OK);
    EXPECT(aborted == PM4_NO_SUBMISSION);

    /* Registers and memory from the host side. */
    regs[0] = 0x11; regs[1] = 0x22;
    CHECK(pm4_gpu_write_registers(gpu, 0, 0xA000, regs, 2), PM4_STATUS_OK);
    regs[0] = regs[1] = 0;
    CHECK(pm4_gpu_read_registers(gpu, 0, 0xA000, regs, 2), PM4_STATUS_OK);
    EXPECT(regs[0] == 0x11 && regs[1] == 0x22);
    CHECK(pm4_gpu_read_memory(gpu, LABEL + 8, regs, 4), PM4_STATUS_OK);
    EXPECT(regs[0] == 5);
    CHECK(pm4_gpu_get_stats(gpu, &stats), PM4_STATUS_OK);
    EXPECT(stats.completed == 2 && stats.interrupts == 2);
    CHECK(pm4_gpu_processor_stats(gpu, 0, &queue_stats), PM4_STATUS_OK);
    EXPECT(queue_stats.draws == 1 && queue_stats.dispatches == 1 && queue_stats.fences == 1);

    /* The trace. */
    CHECK(pm4_recorder_finish(recorder, NULL, 0, &len), PM4_STATUS_BUFFER_TOO_SMALL);
    trace = (unsigned char *)malloc(len);
    EXPECT(trace != NULL);
    CHECK(pm4_recorder_finish(recorder, trace, len, &len), PM4_STATUS_OK);
    EXPECT(len > 16 && memcmp(trace, "PM4T", 4) == 0);
    free(trace);
    snprintf(path, sizeof path, "%s/every_function.pm4t", argv[1]);
    CHECK(pm4_recorder_save(recorder, path), PM4_STATUS_OK);

    /* Disassembly. */
    CHECK(pm4_disasm_buffer(c.dw, c.n, 0x1000, text, sizeof text, &len), PM4_STATUS_OK);
    EXPECT(strstr(text, "WAIT_REG_MEM") != NULL && strstr(text, "DRAW_INDEX_AUTO") != NULL);
    CHECK(pm4_disasm_packet(c.dw, c.n, 0x1000, text, sizeof text, &len, &packet_dw), PM4_STATUS_OK);
    EXPECT(packet_dw == 7 && strstr(text, "WAIT_REG_MEM") != NULL && strstr(text, "DRAW") == NULL);

    /* Shut down and free everything. */
    CHECK(pm4_gpu_shutdown(gpu), PM4_STATUS_OK);
    CHECK(pm4_gpu_submit(gpu, 0, 0x1000, c.n, NULL), PM4_STATUS_SHUT_DOWN);
    pm4_submission_free(sub);
    pm4_submission_free(stuck);
    pm4_submission_free(other);
    pm4_host_write_free(write);
    pm4_interrupts_free(irqs);
    pm4_stalls_free(stalls);
    pm4_recorder_free(recorder);
    pm4_gpu_free(gpu);
    EXPECT(listened == 1);
    pm4_memory_free(recording);
    pm4_memory_free(flat);
    pm4_memory_free(host);
    pm4_memory_free(callbacks);
    EXPECT(callback_released == 1);
    printf("every function: %d passed, 0 failed\n", checked);
    return 0;
}
