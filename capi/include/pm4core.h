/*
 * pm4core: the PS5 (gfx10.3) GPU front-end command processor, for C, C++ and C#.
 *
 * Conventions:
 * - Every name starts with pm4_ (PM4_ for constants).
 * - Objects are opaque handles made by a _new (or another maker) and released
 *   by a _free; freeing NULL, or a handle already freed, does nothing. A handle
 *   is a number, not a pointer: one this library did not make, one freed, or
 *   one of another kind answers PM4_STATUS_INVALID_HANDLE.
 * - Every call returns a pm4_status and writes its outputs only on success
 *   (the one exception: PM4_STATUS_BUFFER_TOO_SMALL writes the size needed).
 *   A failure leaves a message on the calling thread (pm4_last_error_message)
 *   naming the function and saying what and where.
 * - Every pointer argument is checked: NULL where something is needed is
 *   PM4_STATUS_NULL_ARGUMENT; a length whose byte size overflows is
 *   PM4_STATUS_INVALID_ARGUMENT.
 * - No panic crosses the boundary: it is answered as PM4_STATUS_PANIC.
 * - Every callback takes void *user_data first. A callback must not let a
 *   C++ exception (or a longjmp) leave it: it would cross Rust frames, which
 *   is undefined behaviour. Catch everything inside the callback.
 * - Each function says on which threads it may be called ("Threads:").
 * - Durations are in nanoseconds.
 */

#ifndef PM4CORE_H
#define PM4CORE_H

/* Generated from capi/src by cbindgen (cargo run -p pm4core-capi-gen-header); do not edit.
   pm4core's C ABI: see the conventions above and README.md, "From C and C++". */

#include <stddef.h>
#include <stdint.h>

/**
 * The version of the ABI this header describes: the layouts of its
 * structs and the signatures of its functions. A library whose
 * `pm4_version` gives another `abi` is not compatible with this header.
 */
#define PM4_ABI_VERSION 1

/**
 * `pm4_cache_action.kind`: ACQUIRE_MEM.
 */
#define PM4_CACHE_ACQUIRE_MEM 0

/**
 * `pm4_cache_action.kind`: SURFACE_SYNC (gfx7).
 */
#define PM4_CACHE_SURFACE_SYNC 1

/**
 * `pm4_cache_action.kind`: the cache bits of a release.
 */
#define PM4_CACHE_RELEASE 2

/**
 * `pm4_marker.kind`: push a debug marker (`text`).
 */
#define PM4_MARKER_PUSH 0

/**
 * `pm4_marker.kind`: pop a debug marker.
 */
#define PM4_MARKER_POP 1

/**
 * `pm4_marker.kind`: set a debug marker (`text`).
 */
#define PM4_MARKER_SET 2

/**
 * `pm4_marker.kind`: a driver trace point (`id`).
 */
#define PM4_MARKER_TRACE_POINT 3

/**
 * `pm4_marker.kind`: a comment packet's text (`text`).
 */
#define PM4_MARKER_COMMENT 4

/**
 * `pm4_marker.kind`: a hint marker (`id`).
 */
#define PM4_MARKER_HINT 5

/**
 * `pm4_gpu_config.mode`: a pool of worker threads runs queues as work
 * arrives.
 */
#define PM4_MODE_THREADED 0

/**
 * `pm4_gpu_config.mode`: nothing runs unless the caller drives the GPU
 * (`pm4_gpu_run_*`); the same calls give the same interleaving, memory and
 * callbacks on every run.
 */
#define PM4_MODE_DETERMINISTIC 1

/**
 * `pm4_gpu_config.unknown_packet_policy`: report an unknown packet and
 * skip it by its length.
 */
#define PM4_UNKNOWN_PACKET_SKIP 0

/**
 * Report an unknown packet and stop its submission.
 */
#define PM4_UNKNOWN_PACKET_STOP 1

/**
 * `pm4_host_command_entry.action`: present a frame (the `flip` callback).
 */
#define PM4_HOST_COMMAND_FLIP 0

/**
 * Push a debug marker; the payload after the code dword is its text.
 */
#define PM4_HOST_COMMAND_PUSH_MARKER 1

/**
 * Pop a debug marker.
 */
#define PM4_HOST_COMMAND_POP_MARKER 2

/**
 * Save the context registers on the context stack.
 */
#define PM4_HOST_COMMAND_CONTEXT_PUSH 3

/**
 * Restore the context registers saved by the last push.
 */
#define PM4_HOST_COMMAND_CONTEXT_POP 4

/**
 * Hand the payload to the `host_command` callback.
 */
#define PM4_HOST_COMMAND_CUSTOM 5

/**
 * The first body dword of a host-command NOP: this signature ORed with the
 * 16-bit code.
 */
#define PM4_HOST_COMMAND_SIGNATURE 1347223552

/**
 * `*state` of the `pm4_gpu_run_*` calls: no queue has work.
 */
#define PM4_RUN_IDLE 0

/**
 * Every queue with work waits on something only the host can change.
 */
#define PM4_RUN_STALLED 1

/**
 * Work is left that can run (`pm4_gpu_run_slices` ran out of slices).
 */
#define PM4_RUN_RUNNING 2

/**
 * The submission id written when there is none.
 */
#define PM4_NO_SUBMISSION UINT64_MAX

/**
 * Number of queues: 0 is graphics, 1 + pipe * 8 + queue is compute queue
 * `queue` (0..8) of pipe `pipe` (0..7).
 */
#define PM4_QUEUE_COUNT 57

/**
 * The graphics queue.
 */
#define PM4_QUEUE_GRAPHICS 0

/**
 * A memory callback succeeded.
 */
#define PM4_MEMORY_OK 0

/**
 * A memory callback met a byte that is not mapped.
 */
#define PM4_MEMORY_UNMAPPED 1

/**
 * A memory callback met mapped bytes that refuse the access.
 */
#define PM4_MEMORY_PROTECTION 2

/**
 * `PM4_STAGE_*`: the pixel shader stage.
 */
#define PM4_STAGE_PS 0

/**
 * The vertex shader stage (legacy, non-NGG pipelines).
 */
#define PM4_STAGE_VS 1

/**
 * The ES stage (merged ES+GS, or NGG geometry).
 */
#define PM4_STAGE_ES 2

/**
 * The LS stage (merged LS+HS).
 */
#define PM4_STAGE_LS 3

/**
 * The compute stage.
 */
#define PM4_STAGE_CS 4

/**
 * `pm4_wait.kind`: nothing (the field is unused).
 */
#define PM4_WAIT_NONE 0

/**
 * WAIT_REG_MEM(64) whose compare is false (on memory or a register).
 */
#define PM4_WAIT_REG_MEM 1

/**
 * ATOMIC_MEM loop whose compare has not succeeded.
 */
#define PM4_WAIT_ATOMIC_LOOP 2

/**
 * REWIND whose VALID bit is not set.
 */
#define PM4_WAIT_REWIND 3

/**
 * MEM_SEMAPHORE wait on a zero semaphore.
 */
#define PM4_WAIT_MEM_SEMAPHORE 4

/**
 * SET_PREDICATION waiting for final ZPASS data.
 */
#define PM4_WAIT_PREDICATION 5

/**
 * WAIT_ON_CE_COUNTER: the constant engine has not produced yet.
 */
#define PM4_WAIT_CE_COUNTER 6

/**
 * WAIT_ON_DE_COUNTER_DIFF on the constant engine.
 */
#define PM4_WAIT_DE_COUNTER_DIFF 7

/**
 * What a call answers. `PM4_STATUS_OK` (0) is success; every other status
 * leaves a message for `pm4_last_error_message` on the calling thread.
 */
typedef enum pm4_status {
    /**
     * The call did what it says.
     */
    PM4_STATUS_OK = 0,
    /**
     * A pointer argument that must not be NULL was NULL.
     */
    PM4_STATUS_NULL_ARGUMENT = 1,
    /**
     * An argument is out of its domain (an unknown mode, a zero slice
     * size, a length whose byte size overflows, text that is not UTF-8).
     */
    PM4_STATUS_INVALID_ARGUMENT = 2,
    /**
     * A handle that this library did not make, that was freed, or that is
     * of another kind than the function takes; or a `pm4_registers` used
     * outside the callback it was given to.
     */
    PM4_STATUS_INVALID_HANDLE = 3,
    /**
     * A queue number outside 0..=56.
     */
    PM4_STATUS_BAD_QUEUE = 4,
    /**
     * Guest memory that is not mapped.
     */
    PM4_STATUS_UNMAPPED = 5,
    /**
     * A guest range that runs past the 48-bit address space.
     */
    PM4_STATUS_OUT_OF_RANGE = 6,
    /**
     * A guest address that is not aligned as the access needs.
     */
    PM4_STATUS_MISALIGNED = 7,
    /**
     * Mapped guest memory that refuses the access.
     */
    PM4_STATUS_PROTECTION = 8,
    /**
     * Another guest-memory failure (a mapping overlap, a write limit).
     */
    PM4_STATUS_MEMORY_ERROR = 9,
    /**
     * A submission refused before anything ran (not dword-aligned, past
     * the 48-bit space, or not mapped: the message says which).
     */
    PM4_STATUS_INVALID_SUBMISSION = 10,
    /**
     * The work has not completed yet (a poll).
     */
    PM4_STATUS_PENDING = 11,
    /**
     * A wait ran out of time before the answer came.
     */
    PM4_STATUS_TIMEOUT = 12,
    /**
     * Nothing was queued (a poll of interrupts or stall reports).
     */
    PM4_STATUS_EMPTY = 13,
    /**
     * A caller's buffer is too small; the length needed is written (the
     * one output a failing call writes).
     */
    PM4_STATUS_BUFFER_TOO_SMALL = 14,
    /**
     * The GPU was shut down before the work completed, or the call came
     * after `pm4_gpu_shutdown`.
     */
    PM4_STATUS_SHUT_DOWN = 15,
    /**
     * The call was made from inside one of the GPU's own callbacks, where
     * it would wait for the very slice that called it.
     */
    PM4_STATUS_CALLED_FROM_CALLBACK = 16,
    /**
     * The call exists only in the other mode (threaded or deterministic).
     */
    PM4_STATUS_WRONG_MODE = 17,
    /**
     * Every queue with work waits and nothing can wake them (a run's
     * answer, or a submission failed by a declared deadlock).
     */
    PM4_STATUS_DEADLOCK = 18,
    /**
     * The host aborted the submission (`pm4_gpu_abort`).
     */
    PM4_STATUS_ABORTED = 19,
    /**
     * The command processor stopped the submission (a malformed packet,
     * an unreadable buffer, a budget): the message says what and where.
     */
    PM4_STATUS_PROCESSOR_ERROR = 20,
    /**
     * A backend implementation panicked during the submission.
     */
    PM4_STATUS_BACKEND_PANICKED = 21,
    /**
     * A guest-memory implementation panicked during the submission.
     */
    PM4_STATUS_MEMORY_PANICKED = 22,
    /**
     * A GPU worker thread stopped unexpectedly.
     */
    PM4_STATUS_WORKER_LOST = 23,
    /**
     * A thread could not be started.
     */
    PM4_STATUS_SPAWN_FAILED = 24,
    /**
     * A file could not be written or read.
     */
    PM4_STATUS_IO_ERROR = 25,
    /**
     * A trace could not be written.
     */
    PM4_STATUS_TRACE_ERROR = 26,
    /**
     * The feature is declared in this header but not wired in this build
     * of the library (the message says which).
     */
    PM4_STATUS_UNSUPPORTED = 27,
    /**
     * pm4core panicked (a bug: please report it with the message).
     */
    PM4_STATUS_PANIC = 28,
    /**
     * Another failure; the message says what.
     */
    PM4_STATUS_ERROR = 29,
} pm4_status;

/**
 * A GPU front end: the graphics queue and the 56 compute queues over one
 * guest memory and one backend (opaque).
 */
typedef struct pm4_gpu pm4_gpu;

/**
 * A host write given to the GPU (opaque).
 */
typedef struct pm4_host_write pm4_host_write;

/**
 * A receiver of one queue's interrupts (opaque). Receivers of one queue
 * share its channel: each interrupt goes to exactly one of them (and to
 * one `pm4_gpu_on_interrupt` callback), whichever asks first.
 */
typedef struct pm4_interrupts pm4_interrupts;

/**
 * Guest memory a GPU reads and writes (opaque). Made by
 * `pm4_memory_new_host`, `pm4_memory_new_callbacks`,
 * `pm4_memory_new_flat` or `pm4_recorder_new`; a GPU keeps its own
 * reference, so the handle may be freed once the GPU is made.
 */
typedef struct pm4_memory pm4_memory;

/**
 * A recording (opaque).
 */
typedef struct pm4_recorder pm4_recorder;

/**
 * A queue's register file during a draw or dispatch callback (opaque).
 */
typedef struct pm4_registers pm4_registers;

/**
 * A stall report (opaque): every queue that has work waits and no host
 * write is pending. Read it with `pm4_stall_report_count`,
 * `pm4_stall_report_queue` and `pm4_stall_report_text`.
 */
typedef struct pm4_stall_report pm4_stall_report;

/**
 * A receiver of the GPU's stall reports (opaque).
 */
typedef struct pm4_stalls pm4_stalls;

/**
 * A submission (opaque): its result, once the GPU has run it. Freeing it
 * does not cancel the work.
 */
typedef struct pm4_submission pm4_submission;

/**
 * The library's version.
 */
typedef struct pm4_version_info {
    uint32_t major;
    uint32_t minor;
    uint32_t patch;
    /**
     * The library's `PM4_ABI_VERSION`.
     */
    uint32_t abi;
} pm4_version_info;

/**
 * One host-command code the emulator registers: a NOP whose first body
 * dword is `PM4_HOST_COMMAND_SIGNATURE | code` does `action`.
 */
typedef struct pm4_host_command_entry {
    uint16_t code;
    /**
     * One of `PM4_HOST_COMMAND_*`.
     */
    uint32_t action;
} pm4_host_command_entry;

/**
 * One entry of an embedder-private packet classifier: a packet whose
 * header ANDed with `header_mask` equals `header_value` (and, when
 * `match_body` is nonzero, whose first body dword ANDed with `body_mask`
 * equals `body_value`) reaches the `private_packet` callback with `code`
 * and `name` (the payload after the first body dword when `match_body` is
 * set, else the whole body), not the NOP or unknown-packet callbacks. The
 * first matching entry wins; pads and register writes are never matched.
 */
typedef struct pm4_private_packet_class {
    /**
     * NUL-terminated name (the disassembler shows it).
     */
    const char *name;
    uint32_t code;
    uint32_t header_mask;
    uint32_t header_value;
    uint8_t match_body;
    uint32_t body_mask;
    uint32_t body_value;
} pm4_private_packet_class;

/**
 * Settings of a GPU. Fill it with `pm4_gpu_config_default` and change
 * what you need. Durations are in nanoseconds.
 */
typedef struct pm4_gpu_config {
    /**
     * `PM4_MODE_THREADED` (default) or `PM4_MODE_DETERMINISTIC`.
     */
    uint32_t mode;
    /**
     * Threaded mode: worker threads; 0 = the available cores.
     */
    uint32_t workers;
    /**
     * Most packets a queue runs before the next runnable queue's turn (at
     * least 1; default 64).
     */
    uint64_t slice_packets;
    /**
     * Threaded mode: most packets of a slice that starts while no queue
     * waits (at least `slice_packets`; default 256).
     */
    uint64_t busy_slice_packets;
    /**
     * Deterministic mode: most packets of a slice while its queue is the
     * only one with work (0 = `slice_packets`).
     */
    uint64_t lone_slice_packets;
    /**
     * Interrupts kept per queue for the host; when full the oldest is
     * dropped and counted (default 1024).
     */
    uint64_t interrupt_capacity;
    /**
     * Threaded mode: how long an idle worker polls for work before it
     * parks (default 50 µs).
     */
    uint64_t worker_spin_ns;
    /**
     * How long a waiting host thread polls before it blocks (default 50 µs).
     */
    uint64_t host_spin_ns;
    /**
     * Threaded mode: nonzero (default) to re-read suspended waits on memory
     * for the stores nobody notifies (guest code running natively).
     */
    uint8_t wait_polling;
    /**
     * Delay of the first polling round after a queue suspends (default 20 µs).
     */
    uint64_t wait_polling_first_ns;
    /**
     * Longest interval between two polling rounds (default 1 ms).
     */
    uint64_t wait_polling_ceiling_ns;
    /**
     * Threaded mode: a stall is reported once it has lasted this long
     * (default 1 ms; 0 reports every stall at once).
     */
    uint64_t stall_report_delay_ns;
    /**
     * Threaded mode: a stall lasting this long fails the stalled
     * submissions with `PM4_STATUS_DEADLOCK`; 0 (default): never, a stall
     * is only reported.
     */
    uint64_t stall_timeout_ns;
    /**
     * Most buffers on a queue's IB stack at once (default 8).
     */
    uint32_t max_ib_depth;
    /**
     * Most packets one submission may run (stops IB cycles; default 2^26).
     */
    uint64_t work_budget;
    /**
     * `PM4_UNKNOWN_PACKET_SKIP` (default) or `PM4_UNKNOWN_PACKET_STOP`.
     */
    uint32_t unknown_packet_policy;
    /**
     * Render backends writing ZPASS counts (default 16).
     */
    uint32_t render_backends;
    /**
     * Most unknown-packet reports a queue keeps (default 64).
     */
    uint32_t max_unknown_reports;
    /**
     * Nonzero: the `packet` callback sees every packet (off by default).
     */
    uint8_t report_packets;
    /**
     * Nonzero: an indirect buffer whose memory is not mapped is reported
     * (`skipped_indirect_buffer`) and skipped instead of failing.
     */
    uint8_t skip_unmapped_ibs;
    /**
     * Global data share size in bytes (default 64 KiB).
     */
    uint32_t gds_bytes;
    /**
     * Host-command codes (may be NULL when the count is 0).
     */
    const struct pm4_host_command_entry *host_commands;
    size_t host_command_count;
    /**
     * The embedder-private packet classifier: `private_packet_count`
     * entries (copied at creation; the names too).
     */
    const struct pm4_private_packet_class *private_packets;
    size_t private_packet_count;
} pm4_gpu_config;

/**
 * Where a packet sits: the command buffer holding it and its offset.
 */
typedef struct pm4_packet_location {
    /**
     * GPU address of the header dword.
     */
    uint64_t address;
    /**
     * GPU address of the first dword of the buffer (IB) holding it.
     */
    uint64_t buffer;
    /**
     * Size of that buffer in dwords.
     */
    uint32_t buffer_size_dw;
    /**
     * Dword offset of the header in the buffer.
     */
    uint32_t offset_dw;
} pm4_packet_location;

/**
 * The index buffer of an indexed draw.
 */
typedef struct pm4_index_buffer {
    /**
     * Address of the first index the draw fetches.
     */
    uint64_t address;
    /**
     * VGT_INDEX_TYPE: 0 = 16-bit, 1 = 32-bit, 2 = 8-bit.
     */
    uint32_t index_type;
    /**
     * Size of one index in bytes (2, 4 or 1).
     */
    uint32_t index_size;
    /**
     * Indices available from `address` on.
     */
    uint32_t max_indices;
} pm4_index_buffer;

/**
 * One draw (one sub-draw of a multi-draw packet).
 */
typedef struct pm4_draw {
    /**
     * The queue (0 = graphics).
     */
    uint32_t queue;
    /**
     * The draw packet's opcode (`pm4_opcode_name` names it).
     */
    uint32_t opcode;
    struct pm4_packet_location location;
    /**
     * Vertices (auto-indexed) or indices (indexed) per instance.
     */
    uint32_t count;
    uint32_t instance_count;
    /**
     * First index (indexed) or first vertex (indirect non-indexed).
     */
    uint32_t first;
    /**
     * Base vertex (indexed indirect draws).
     */
    int32_t base_vertex;
    uint32_t first_instance;
    /**
     * Sub-draw index inside a multi-draw packet.
     */
    uint32_t draw_index;
    /**
     * Nonzero when `index_buffer` is set (an indexed draw).
     */
    uint8_t has_index_buffer;
    /**
     * Nonzero when `indirect_args` is set (an indirect draw).
     */
    uint8_t has_indirect_args;
    /**
     * Nonzero when `mesh_groups` is set (a mesh dispatch).
     */
    uint8_t has_mesh_groups;
    struct pm4_index_buffer index_buffer;
    uint32_t primitive_type;
    uint32_t draw_initiator;
    /**
     * Address of the indirect argument record.
     */
    uint64_t indirect_args;
    /**
     * Mesh thread-group counts X, Y, Z.
     */
    uint32_t mesh_groups[3];
    /**
     * State groups written since the queue's previous draw (bit set).
     */
    uint32_t changed;
    /**
     * Code addresses of the programs bound to PS, VS, ES and LS (the
     * `PM4_STAGE_*` order; 0 = none).
     */
    uint64_t programs[4];
    /**
     * The queue's registers at the draw, readable with `pm4_registers_*`
     * during this callback only.
     */
    const struct pm4_registers *registers;
} pm4_draw;

/**
 * One compute dispatch.
 */
typedef struct pm4_dispatch {
    uint32_t queue;
    uint32_t opcode;
    struct pm4_packet_location location;
    /**
     * Thread-group counts (end coordinates when `start` is not zero).
     */
    uint32_t dims[3];
    uint32_t start[3];
    uint32_t threads_per_group[3];
    uint32_t initiator;
    /**
     * Nonzero when `indirect_args` is set.
     */
    uint8_t has_indirect_args;
    uint64_t indirect_args;
    /**
     * Code address of the bound compute program (0 = none).
     */
    uint64_t program;
    /**
     * The queue's registers at the dispatch, readable with
     * `pm4_registers_*` during this callback only.
     */
    const struct pm4_registers *registers;
} pm4_dispatch;

/**
 * A non-sampling event (EVENT_WRITE of a flush or control event).
 */
typedef struct pm4_event {
    uint32_t queue;
    uint32_t event_type;
    uint32_t event_index;
    struct pm4_packet_location location;
} pm4_event;

/**
 * A cache or synchronisation action.
 */
typedef struct pm4_cache_action {
    uint32_t queue;
    /**
     * `PM4_CACHE_ACQUIRE_MEM`, `PM4_CACHE_SURFACE_SYNC` or `PM4_CACHE_RELEASE`.
     */
    uint32_t kind;
    /**
     * Range in bytes (`size` = UINT64_MAX: everything); acquire and surface sync.
     */
    uint64_t base;
    uint64_t size;
    uint32_t coher_cntl;
    /**
     * ACQUIRE_MEM's GCR_CNTL.
     */
    uint32_t gcr_cntl;
    /**
     * A release's cache-control bits.
     */
    uint32_t cache_control;
} pm4_cache_action;

/**
 * A fence: a release that retired (data written and/or interrupt raised).
 */
typedef struct pm4_fence {
    uint32_t queue;
    uint32_t opcode;
    uint32_t event_type;
    uint32_t data_sel;
    uint64_t address;
    /**
     * The data written (0 when DATA_SEL wrote nothing).
     */
    uint64_t data;
    uint32_t int_sel;
    uint32_t int_ctxid;
    /**
     * Nonzero when the release raises an interrupt the host should see.
     */
    uint8_t interrupt;
} pm4_fence;

/**
 * A flip request.
 */
typedef struct pm4_flip {
    uint32_t queue;
    /**
     * The marker id (0x777, 0x778, … of the 0x6875 convention, or the
     * host-command code).
     */
    uint32_t kind;
    /**
     * Nonzero when the flip carries a label to write.
     */
    uint8_t has_label;
    uint64_t label_address;
    uint64_t label_value;
    struct pm4_packet_location location;
} pm4_flip;

/**
 * A debug marker or trace point.
 */
typedef struct pm4_marker {
    uint32_t queue;
    /**
     * One of `PM4_MARKER_*`.
     */
    uint32_t kind;
    /**
     * The marker's text (UTF-8, NOT NUL-terminated: print it with
     * `"%.*s", (int)text_len, text`); NULL with `text_len` 0 when none.
     */
    const char *text;
    size_t text_len;
    /**
     * The trace-point or hint id.
     */
    uint32_t id;
} pm4_marker;

/**
 * A NOP carrying a registered host-command code.
 */
typedef struct pm4_host_command {
    uint32_t queue;
    uint32_t code;
    /**
     * The payload after the code dword (valid during the callback).
     */
    const uint32_t *payload;
    size_t payload_dw;
} pm4_host_command;

/**
 * A packet an embedder-private classifier matched (see
 * `pm4_private_packet_class`).
 */
typedef struct pm4_private_packet {
    uint32_t queue;
    /**
     * The matching entry's code.
     */
    uint32_t code;
    /**
     * The matching entry's name (UTF-8, not NUL-terminated).
     */
    const char *name;
    size_t name_len;
    /**
     * The packet's header dword.
     */
    uint32_t header;
    /**
     * The body dwords after the header (valid during the callback).
     */
    const uint32_t *payload;
    size_t payload_dw;
    struct pm4_packet_location location;
} pm4_private_packet;

/**
 * A packet with a known opcode that pm4core decodes but does not emulate.
 */
typedef struct pm4_not_emulated {
    uint32_t queue;
    uint32_t opcode;
    struct pm4_packet_location location;
} pm4_not_emulated;

/**
 * A packet the processor does not know, with its surroundings.
 */
typedef struct pm4_unknown_packet {
    uint32_t queue;
    uint32_t header;
    /**
     * Address of the header.
     */
    uint64_t address;
    uint32_t opcode;
    uint32_t length_dw;
    /**
     * Hex dump: up to 16 dwords before and after the header, one line
     * each, the header's line marked with `>` (UTF-8, not NUL-terminated).
     */
    const char *dump;
    size_t dump_len;
} pm4_unknown_packet;

/**
 * An indirect buffer whose memory is not mapped, skipped because
 * `pm4_gpu_config.skip_unmapped_ibs` is on.
 */
typedef struct pm4_skipped_ib {
    uint32_t queue;
    /**
     * The INDIRECT_BUFFER packet.
     */
    struct pm4_packet_location location;
    /**
     * The buffer it names.
     */
    uint64_t address;
    uint32_t size_dw;
} pm4_skipped_ib;

/**
 * A backend: what the GPU calls for each effect of a queue's packets. A
 * NULL entry is the default (nothing; no clock; no own backend). Every
 * callback takes `user_data` first.
 *
 * Threads: a queue's calls come in its packet order, on the GPU worker
 * running the queue (threaded mode) or on the thread driving the GPU
 * (deterministic mode). With `queue_backend` NULL (or answering 0), every
 * queue's calls go to this one backend, never two at once (one lock). A
 * backend that gives each queue its own (`queue_backend` fills `*out` and
 * returns nonzero) has each queue's calls go to that queue's backend with
 * no lock: queues on different workers call their backends in parallel.
 *
 * A callback may call back into its GPU (submit, write memory, notify,
 * read counters, shut down): what would wait for the calling slice itself
 * answers `PM4_STATUS_CALLED_FROM_CALLBACK` (see each function's
 * "Threads" line). A callback must not let a C++ exception (or a longjmp)
 * leave it: catch everything inside.
 */
typedef struct pm4_backend {
    /**
     * Passed first to every callback.
     */
    void *user_data;
    void (*draw)(void *user_data, const struct pm4_draw *draw);
    void (*dispatch)(void *user_data, const struct pm4_dispatch *dispatch);
    void (*event)(void *user_data, const struct pm4_event *event);
    void (*cache_action)(void *user_data, const struct pm4_cache_action *action);
    /**
     * A release that retired (RELEASE_MEM, EVENT_WRITE_EOP/EOS).
     */
    void (*fence)(void *user_data, const struct pm4_fence *fence);
    void (*flip)(void *user_data, const struct pm4_flip *flip);
    void (*marker)(void *user_data, const struct pm4_marker *marker);
    /**
     * A NOP with a host-command code registered in
     * `pm4_gpu_config.host_commands` as `PM4_HOST_COMMAND_CUSTOM`.
     */
    void (*host_command)(void *user_data, const struct pm4_host_command *command);
    /**
     * A packet the config's private-packet classifier matched. NULL: it
     * goes to `host_command` with the entry's code and the payload.
     */
    void (*private_packet)(void *user_data, const struct pm4_private_packet *packet);
    void (*not_emulated)(void *user_data, const struct pm4_not_emulated *packet);
    /**
     * A packet pm4core does not know, with its hex dump.
     */
    void (*unknown_packet)(void *user_data, const struct pm4_unknown_packet *packet);
    void (*skipped_indirect_buffer)(void *user_data, const struct pm4_skipped_ib *ib);
    /**
     * Every packet decoded, when `pm4_gpu_config.report_packets` is on.
     */
    void (*packet)(void *user_data,
                   uint32_t queue,
                   uint32_t header,
                   const struct pm4_packet_location *location);
    /**
     * The GPU clock for timestamps: write it to `*clock` and return
     * nonzero, or return 0 for the processor's own deterministic counter.
     */
    uint8_t (*gpu_clock)(void *user_data, uint64_t *clock);
    /**
     * Asked once per queue at its first slice: fill `*out` with that
     * queue's own backend and return nonzero, or return 0 to have the
     * queue's calls come to this backend. `*out` starts zeroed. The
     * filled backend's own `queue_backend` is not used.
     */
    uint8_t (*queue_backend)(void *user_data, uint32_t queue, struct pm4_backend *out);
    /**
     * Called once when the GPU no longer uses this backend (when the GPU
     * goes; for a queue's own backend, likewise). Not called when
     * `pm4_gpu_new` fails: the backend then stays the caller's.
     */
    void (*release)(void *user_data);
} pm4_backend;

/**
 * Counters of a GPU over its lifetime.
 */
typedef struct pm4_gpu_stats {
    uint64_t submissions;
    uint64_t completed;
    uint64_t failed;
    uint64_t aborted;
    uint64_t host_writes;
    uint64_t host_write_errors;
    uint64_t host_notifications;
    uint64_t slices;
    uint64_t packets;
    uint64_t dwords;
    /**
     * Suspended queues woken to re-check their wait.
     */
    uint64_t wakes;
    /**
     * Polling rounds over suspended waits, and the waits they woke.
     */
    uint64_t poll_rounds;
    uint64_t poll_wakes;
    uint64_t stalls;
    uint64_t stalls_dropped;
    uint64_t interrupts;
    uint64_t interrupts_dropped;
} pm4_gpu_stats;

/**
 * Why a queue waits.
 */
typedef struct pm4_wait {
    /**
     * One of `PM4_WAIT_*`.
     */
    uint32_t kind;
    /**
     * Nonzero when `address` is the guest address whose change may end
     * the wait.
     */
    uint8_t has_address;
    /**
     * Nonzero when the wait polls register `register_index` (WAIT_REG_MEM
     * on a register).
     */
    uint8_t has_register;
    /**
     * Nonzero for WAIT_REG_MEM64.
     */
    uint8_t is_64;
    uint64_t address;
    uint32_t register_index;
    /**
     * WAIT_REG_MEM's compare function (0 always, 1 <, 2 <=, 3 ==, 4 !=,
     * 5 >=, 6 >); ATOMIC_MEM's loop compares for equality.
     */
    uint32_t function;
    /**
     * The reference (ATOMIC_MEM: the compare value).
     */
    uint64_t reference;
    uint64_t mask;
    /**
     * The value read at the last check.
     */
    uint64_t current;
    /**
     * Constant-engine and drawing-engine counters (the counter waits).
     */
    uint32_t ce;
    uint32_t de;
    uint32_t diff;
} pm4_wait;

/**
 * What one queue is doing.
 */
typedef struct pm4_queue_status {
    /**
     * The submission it runs, or `PM4_NO_SUBMISSION`.
     */
    uint64_t running;
    /**
     * Nonzero when that submission waits (`wait` says on what).
     */
    uint8_t suspended;
    struct pm4_wait wait;
    /**
     * Submissions queued behind it.
     */
    uint64_t queued;
} pm4_queue_status;

/**
 * Counters of one queue's command processor.
 */
typedef struct pm4_processor_stats {
    /**
     * Packets decoded (executed or skipped), dwords consumed.
     */
    uint64_t packets;
    uint64_t dwords;
    /**
     * Draw packets (a multi-draw packet counts once) and dispatches.
     */
    uint64_t draws;
    uint64_t dispatches;
    /**
     * Releases that retired; times a packet suspended the queue.
     */
    uint64_t fences;
    uint64_t waits;
    /**
     * Packets skipped by predication (and runs skipped by COND_EXEC).
     */
    uint64_t skipped;
    /**
     * Type-0 packets, type-2 fillers, unknown packets.
     */
    uint64_t type0;
    uint64_t type2;
    uint64_t unknown;
} pm4_processor_stats;

/**
 * One range of guest memory the emulator mapped at a host address.
 */
typedef struct pm4_host_mapping {
    /**
     * Guest (GPU virtual) address of the first byte.
     */
    uint64_t guest_base;
    /**
     * Host address of the first byte.
     */
    void *host;
    /**
     * Bytes mapped.
     */
    size_t len;
} pm4_host_mapping;

/**
 * Guest memory reached through the emulator's own functions (the
 * translate-and-copy form). Every entry except `release` is required.
 *
 * The emulator's side of the contract:
 * - `read` and `write` of a naturally aligned 4 or 8 bytes are one access
 *   of that width (never torn: an atomic or volatile load or store);
 *   `write` is a release store and `read` an acquire load (on x86-64
 *   every plain aligned load and store already is);
 * - `cas32` and `cas64` are indivisible and acquire-release: when the
 *   value at `address` equals `expected` they store `desired`; either way
 *   they write the value found to `*found` and return `PM4_MEMORY_OK`;
 * - each returns `PM4_MEMORY_OK`, `PM4_MEMORY_UNMAPPED` or
 *   `PM4_MEMORY_PROTECTION`; a write that fails writes nothing at or
 *   after the failing byte;
 * - `is_mapped` returns nonzero when every byte of the range is mapped;
 * - they are called from the GPU's worker threads, several at once: they
 *   must be thread-safe, must not call any `pm4_` function, and must not
 *   throw a C++ exception;
 * - `release` (may be NULL) is called once when the memory is no longer
 *   used by anything (the last GPU or handle holding it is gone); never
 *   when `pm4_memory_new_callbacks` fails (the table stays the caller's).
 */
typedef struct pm4_memory_callbacks {
    /**
     * Passed first to every callback.
     */
    void *user_data;
    /**
     * Copies guest bytes `[address, address + len)` into `out`.
     */
    int32_t (*read)(void *user_data, uint64_t address, void *out, size_t len);
    /**
     * Copies `len` bytes from `data` to guest memory at `address`.
     */
    int32_t (*write)(void *user_data, uint64_t address, const void *data, size_t len);
    /**
     * Nonzero when every byte of `[address, address + len)` is mapped.
     */
    uint8_t (*is_mapped)(void *user_data, uint64_t address, uint64_t len);
    /**
     * 32-bit compare-exchange at the 4-byte aligned `address`.
     */
    int32_t (*cas32)(void *user_data,
                     uint64_t address,
                     uint32_t expected,
                     uint32_t desired,
                     uint32_t *found);
    /**
     * 64-bit compare-exchange at the 8-byte aligned `address`.
     */
    int32_t (*cas64)(void *user_data,
                     uint64_t address,
                     uint64_t expected,
                     uint64_t desired,
                     uint64_t *found);
    /**
     * Called once when the memory is dropped (may be NULL).
     */
    void (*release)(void *user_data);
} pm4_memory_callbacks;

/**
 * A program bound to a stage and its user-data registers.
 */
typedef struct pm4_program {
    /**
     * Code address from PGM_LO/HI (0 = nothing bound).
     */
    uint64_t address;
    /**
     * User-data registers (USER_DATA_0..): 32 for graphics stages, 16 for
     * compute (`user_data_count`).
     */
    uint32_t user_data[32];
    uint32_t user_data_count;
} pm4_program;

/**
 * A colour target's base state (CB_COLORn_*).
 */
typedef struct pm4_render_target {
    uint32_t index;
    /**
     * Byte address: (BASE << 8) | (BASE_EXT << 40).
     */
    uint64_t address;
    uint32_t info;
    uint32_t view;
    uint32_t attrib;
    uint32_t attrib2;
    uint32_t attrib3;
} pm4_render_target;

/**
 * One viewport's transform and depth range.
 */
typedef struct pm4_viewport {
    float x_scale;
    float x_offset;
    float y_scale;
    float y_offset;
    float z_scale;
    float z_offset;
    float z_min;
    float z_max;
} pm4_viewport;

/**
 * A scissor rectangle: top-left inclusive, bottom-right exclusive.
 */
typedef struct pm4_scissor {
    uint32_t left;
    uint32_t top;
    uint32_t right;
    uint32_t bottom;
} pm4_scissor;

/**
 * The depth target.
 */
typedef struct pm4_depth_target {
    /**
     * DB_Z_INFO.
     */
    uint32_t z_info;
    /**
     * Read base address: (DB_Z_READ_BASE << 8) | (HI << 40).
     */
    uint64_t address;
    /**
     * DB_DEPTH_SIZE_XY.
     */
    uint32_t size_xy;
} pm4_depth_target;

/**
 * A release with an interrupt select, as the host receives it.
 */
typedef struct pm4_interrupt {
    /**
     * Position among all interrupts of the GPU (every queue), from 0.
     */
    uint64_t sequence;
    /**
     * The submission whose packet raised it.
     */
    uint64_t submission;
    /**
     * The fence (`fence.queue` is the queue).
     */
    struct pm4_fence fence;
} pm4_interrupt;

/**
 * One waiting queue of a stall.
 */
typedef struct pm4_queue_stall {
    uint32_t queue;
    /**
     * The submission that waits, its command buffer and size.
     */
    uint64_t submission;
    uint64_t address;
    uint32_t size_dw;
    /**
     * Nonzero when `packet_address` is the waiting packet's address.
     */
    uint8_t has_packet_address;
    /**
     * Nonzero when the constant engine waits too (`constant_engine`).
     */
    uint8_t constant_engine_waits;
    uint64_t packet_address;
    /**
     * What the drawing engine waits on.
     */
    struct pm4_wait wait;
    struct pm4_wait constant_engine;
    /**
     * Submissions queued behind it on the same queue.
     */
    uint64_t queued;
} pm4_queue_stall;

/**
 * What one submission did.
 */
typedef struct pm4_submission_report {
    /**
     * The submission's number (from 0, in submit order, per GPU).
     */
    uint64_t id;
    uint32_t queue;
    uint32_t size_dw;
    /**
     * The command buffer.
     */
    uint64_t address;
    /**
     * Packets decoded, dwords consumed.
     */
    uint64_t packets;
    uint64_t dwords;
    /**
     * Times a packet suspended the queue.
     */
    uint64_t waits;
    /**
     * Releases that retired.
     */
    uint64_t fences;
    uint64_t draws;
    uint64_t dispatches;
    /**
     * Scheduler slices it took.
     */
    uint64_t slices;
} pm4_submission_report;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The library's version and ABI version; an embedder that loads the
 * library at run time compares `abi` with its header's `PM4_ABI_VERSION`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_version(struct pm4_version_info *out);

/**
 * A short description of `status` (static, NUL-terminated; never NULL).
 *
 * Threads: any. From a callback: yes.
 */
const char *pm4_status_str(enum pm4_status status);

/**
 * The status of the last call that failed on this thread
 * (`PM4_STATUS_OK` if none has). A successful call does not change it.
 *
 * Threads: any. From a callback: yes.
 */
enum pm4_status pm4_last_error_status(void);

/**
 * The message of the last call that failed on this thread: the function's
 * name, then what went wrong and where (`pm4_gpu_submit: submission of 4
 * dwords at 0x40 on gfx refused: unmapped guest memory at 0x40 …`). Empty
 * if no call has failed. The pointer stays valid until the next call that
 * fails on this thread; never NULL.
 *
 * Threads: any. From a callback: yes.
 */
const char *pm4_last_error_message(void);

/**
 * Copies the last error's message (as `pm4_last_error_message`) into
 * `out[..cap]`, NUL-terminated, its length without the NUL to `*len`.
 * A buffer too small answers `PM4_STATUS_BUFFER_TOO_SMALL` with the size
 * needed in `*len` (and leaves the last error as it was).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out .. out + cap` is valid for writes; `len` for a write.
 */
enum pm4_status pm4_last_error_copy(char *out, size_t cap, size_t *len);

/**
 * The VGT_EVENT_TYPE name of `event_type` (`"BOTTOM_OF_PIPE_TS"` for
 * 0x28; `"0x3f"` for a type the register database does not name) to
 * `*name`: static, NUL-terminated, as the disassembler and the recording
 * backend's log write it. `PM4_STATUS_INVALID_ARGUMENT` above 63 (EVENT_TYPE
 * is 6 bits).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `name` is valid for a write.
 */
enum pm4_status pm4_event_name(uint32_t event_type, const char **name);

/**
 * The gfx10.3 name of type-3 opcode `opcode` (`"DRAW_INDEX_AUTO"`, or
 * `"UNKNOWN_0x01"`) to `*name`: static, NUL-terminated.
 * `PM4_STATUS_INVALID_ARGUMENT` above 0xFF.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `name` is valid for a write.
 */
enum pm4_status pm4_opcode_name(uint32_t opcode, const char **name);

/**
 * Fills `*out` with the default settings (threaded mode, the available
 * cores, polling of un-notified stores on, stalls reported after 1 ms,
 * never declared deadlocks by themselves).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_gpu_config_default(struct pm4_gpu_config *out);

/**
 * Disassembles `count` dwords at `dwords`, placed at guest address `base`
 * (dword-aligned), into `out[..cap]` as text (one line per packet with its
 * address, raw dwords and decoded fields; register writes named; malformed
 * packets marked), NUL-terminated; the length without the NUL goes to
 * `*len`. Indirect buffers are shown, not followed. A buffer too small
 * answers `PM4_STATUS_BUFFER_TOO_SMALL` with the size needed in `*len`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `dwords .. dwords + count` is valid for reads; `out .. out + cap` for
 * writes; `len` for a write.
 */
enum pm4_status pm4_disasm_buffer(const uint32_t *dwords,
                                  size_t count,
                                  uint64_t base,
                                  char *out,
                                  size_t cap,
                                  size_t *len);

/**
 * Disassembles the one packet at the start of `dwords[..count]` (placed at
 * guest `address`) into `out[..cap]`, as `pm4_disasm_buffer` does;
 * `*packet_dw` (unless NULL) gets the packet's length in dwords, so a
 * caller can step through a buffer. A packet longer than `count` is shown
 * truncated (and `*packet_dw` is its full length); a type-1 header is one
 * dword shown as such. `count` 0 is `PM4_STATUS_INVALID_ARGUMENT`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * As `pm4_disasm_buffer`; `packet_dw` is NULL or valid for a write.
 */
enum pm4_status pm4_disasm_packet(const uint32_t *dwords,
                                  size_t count,
                                  uint64_t address,
                                  char *out,
                                  size_t cap,
                                  size_t *len,
                                  uint32_t *packet_dw);

/**
 * Makes a GPU over `memory` (the GPU keeps its own reference: the memory
 * handle may be freed afterwards) calling `backend`'s callbacks (copied;
 * NULL: no callbacks). `config` NULL takes the defaults
 * (`pm4_gpu_config_default`: threaded). Writes the handle to `*out`. On
 * failure the backend's `release` is not called.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `config` and `backend` are NULL or valid; `out` is valid for a write.
 * The backend's callbacks (and those of the per-queue backends its
 * `queue_backend` gives) may be called from the GPU's worker threads and
 * stay valid, with their `user_data`, until their `release` is called (or,
 * with no `release`, until `pm4_gpu_free` has returned).
 */
enum pm4_status pm4_gpu_new(const struct pm4_gpu_config *config,
                            struct pm4_memory *memory,
                            const struct pm4_backend *backend,
                            struct pm4_gpu **out);

/**
 * Shuts the GPU down (as `pm4_gpu_shutdown`), waits for calls in progress
 * on it to return, and frees it: when it returns (called outside the
 * GPU's callbacks), no callback of this GPU runs any more, the listener
 * threads are joined, and the backends' `release` callbacks were called.
 * A no-op for NULL or a freed handle. Handles of its submissions stay
 * valid (their waits answer `PM4_STATUS_SHUT_DOWN`) until freed.
 *
 * Threads: any. From a callback: yes; the GPU then goes when the callback's
 * slice has ended.
 */
void pm4_gpu_free(struct pm4_gpu *gpu);

/**
 * Stops the GPU: submissions not completed end with
 * `PM4_STATUS_SHUT_DOWN` (running ones at a packet boundary), every
 * waiting host thread wakes (submission waits, interrupt and stall waits,
 * runs), the interrupt and stall channels close, the workers are joined
 * (unless called from a callback, where they stop on their own).
 * Idempotent. Later calls that give the GPU work answer
 * `PM4_STATUS_SHUT_DOWN`; memory, counters and registers stay readable.
 *
 * Threads: any. From a callback: yes.
 */
enum pm4_status pm4_gpu_shutdown(struct pm4_gpu *gpu);

/**
 * Worker threads (0 in deterministic mode) to `*workers`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `workers` is valid for a write.
 */
enum pm4_status pm4_gpu_workers(struct pm4_gpu *gpu, uint32_t *workers);

/**
 * Submits `size_dw` dwords of PM4 packets at guest `address` to `queue`
 * (0..=56); it starts after every earlier submission to that queue.
 * Checked first: `address` dword-aligned, the buffer inside the 48-bit
 * space and mapped (`PM4_STATUS_INVALID_SUBMISSION` saying which, with
 * nothing run). Writes a submission handle to `*out` unless `out` is NULL
 * (no handle wanted). A GPU over a recorder's memory records the
 * submission.
 *
 * Threads: any. From a callback: yes (deterministic mode queues it after
 * the callback's packet).
 *
 * # Safety
 *
 * `out` is NULL or valid for a write.
 */
enum pm4_status pm4_gpu_submit(struct pm4_gpu *gpu,
                               uint32_t queue,
                               uint64_t address,
                               uint32_t size_dw,
                               struct pm4_submission **out);

/**
 * Writes `len` bytes from `data` to guest memory as the host. Threaded
 * mode: written at once, then the overlapping waits wake (as
 * `pm4_gpu_notify_host_write`). Deterministic mode: ordered with
 * submissions (applied when every earlier submission has run as far as
 * it can, before any later one starts). Writes a handle to `*out` unless
 * NULL (`pm4_host_write_wait` says when it is applied). A range outside
 * the 48-bit space or not mapped is an error at once. A GPU over a
 * recorder's memory records the write.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `data .. data + len` is valid for reads; `out` is NULL or valid for a
 * write.
 */
enum pm4_status pm4_gpu_write_memory(struct pm4_gpu *gpu,
                                     uint64_t address,
                                     const void *data,
                                     size_t len,
                                     struct pm4_host_write **out);

/**
 * Reads `len` bytes of the GPU's guest memory at `address` into `out`.
 *
 * Threads: any. From a backend callback: yes.
 *
 * # Safety
 *
 * `out .. out + len` is valid for writes.
 */
enum pm4_status pm4_gpu_read_memory(struct pm4_gpu *gpu, uint64_t address, void *out, size_t len);

/**
 * The host (the CPU, a DMA engine, a file read) wrote guest bytes
 * `[address, address + len)` directly: wakes the waits that watch them
 * and drops cached decodes of the range; `*woken` (unless NULL) gets how
 * many queues woke. Notification is by guest address. A store nobody
 * notifies is still seen in threaded mode by the GPU's polling
 * (`wait_polling`), later. On a GPU over a recorder's memory the range's
 * bytes are recorded as a host write at this point.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `woken` is NULL or valid for a write.
 */
enum pm4_status pm4_gpu_notify_host_write(struct pm4_gpu *gpu,
                                          uint64_t address,
                                          uint64_t len,
                                          size_t *woken);

/**
 * Runs until no queue can run and every host operation made before the
 * call is applied (deterministic mode: on this thread; threaded: blocks
 * until the workers get there). `*state` gets `PM4_RUN_IDLE` or
 * `PM4_RUN_STALLED`; `*report` (unless NULL) the stall report, or NULL
 * when idle.
 *
 * Threads: any. From a callback: no (`PM4_STATUS_CALLED_FROM_CALLBACK`).
 *
 * # Safety
 *
 * `state` is valid for a write; `report` is NULL or valid for a write.
 */
enum pm4_status pm4_gpu_run_until_stalled(struct pm4_gpu *gpu,
                                          uint32_t *state,
                                          struct pm4_stall_report **report);

/**
 * `pm4_gpu_run_until_stalled` with a stall answered as
 * `PM4_STATUS_DEADLOCK` (its message is the report; nothing is
 * cancelled: a host write and another run may resolve it).
 *
 * Threads: any. From a callback: no (`PM4_STATUS_CALLED_FROM_CALLBACK`).
 */
enum pm4_status pm4_gpu_run_until_idle(struct pm4_gpu *gpu);

/**
 * Deterministic mode: runs at most `max_slices` scheduler steps on this
 * thread. `*state` gets `PM4_RUN_RUNNING` when work that can run is left,
 * else as `pm4_gpu_run_until_stalled`. Threaded mode:
 * `PM4_STATUS_WRONG_MODE`.
 *
 * Threads: any. From a callback: no (`PM4_STATUS_CALLED_FROM_CALLBACK`).
 *
 * # Safety
 *
 * `state` is valid for a write; `report` is NULL or valid for a write.
 */
enum pm4_status pm4_gpu_run_slices(struct pm4_gpu *gpu,
                                   uint64_t max_slices,
                                   uint32_t *state,
                                   struct pm4_stall_report **report);

/**
 * The current stall, if every queue with work waits and nothing else can
 * run (a snapshot): `*report` gets a report handle, or NULL when the GPU is
 * not stalled.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `report` is valid for a write.
 */
enum pm4_status pm4_gpu_stall_report(struct pm4_gpu *gpu, struct pm4_stall_report **report);

/**
 * The embedder decides the current stall will not resolve: every
 * suspended submission fails with `PM4_STATUS_DEADLOCK` and its queue goes
 * on. `*report` (unless NULL) gets the report, or NULL when the GPU was
 * not stalled (nothing happened).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `report` is NULL or valid for a write.
 */
enum pm4_status pm4_gpu_declare_deadlock(struct pm4_gpu *gpu, struct pm4_stall_report **report);

/**
 * Stops the submission `queue` runs (between packets); its handle answers
 * `PM4_STATUS_ABORTED` and the queue goes on. `*aborted` (unless NULL)
 * gets its id, or `PM4_NO_SUBMISSION` when none ran.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `aborted` is NULL or valid for a write.
 */
enum pm4_status pm4_gpu_abort(struct pm4_gpu *gpu, uint32_t queue, uint64_t *aborted);

/**
 * The GPU's counters.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_gpu_get_stats(struct pm4_gpu *gpu, struct pm4_gpu_stats *out);

/**
 * What `queue` is doing.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_gpu_queue_status(struct pm4_gpu *gpu,
                                     uint32_t queue,
                                     struct pm4_queue_status *out);

/**
 * `queue`'s processor counters, between two of its slices (a queue never
 * used has all zero).
 *
 * Threads: any. From a callback: not for the calling queue, nor for a
 * queue another worker runs at that moment
 * (`PM4_STATUS_CALLED_FROM_CALLBACK`).
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_gpu_processor_stats(struct pm4_gpu *gpu,
                                        uint32_t queue,
                                        struct pm4_processor_stats *out);

/**
 * Reads `count` registers of `queue` from `start` on into `out`, between
 * two of its slices (waits for a running slice to end).
 *
 * Threads: any. From a callback: not for the calling queue, nor for a
 * queue another worker runs at that moment
 * (`PM4_STATUS_CALLED_FROM_CALLBACK`): a draw or dispatch callback reads
 * its own queue's registers with `pm4_registers_*`.
 *
 * # Safety
 *
 * `out .. out + count` is valid for writes.
 */
enum pm4_status pm4_gpu_read_registers(struct pm4_gpu *gpu,
                                       uint32_t queue,
                                       uint32_t start,
                                       uint32_t *out,
                                       size_t count);

/**
 * Writes `count` registers of `queue` from `start` on (host set-up,
 * between two of its slices); the queue re-checks a register wait after.
 *
 * Threads: any. From a callback: as `pm4_gpu_read_registers`.
 *
 * # Safety
 *
 * `values .. values + count` is valid for reads.
 */
enum pm4_status pm4_gpu_write_registers(struct pm4_gpu *gpu,
                                        uint32_t queue,
                                        uint32_t start,
                                        const uint32_t *values,
                                        size_t count);

/**
 * Makes guest memory over host mappings the emulator owns: every GPU
 * access goes straight to the emulator's bytes, each aligned dword or
 * qword as one atomic access, nothing copied. Mappings may come in any
 * order; zero-length ones are ignored. Writes the handle to `*out`.
 *
 * Checked: each guest range lies in the 48-bit space, each host range is
 * not NULL and does not wrap, guest and host addresses agree modulo 8,
 * guest ranges do not overlap (`PM4_STATUS_INVALID_ARGUMENT` naming the
 * mapping otherwise).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `mappings` points to `count` mappings (may be NULL when `count` is 0);
 * `out` is valid for a write. For every mapping, for as long as the memory
 * or any GPU made over it exists (until the last is freed and
 * `pm4_gpu_free` has returned): `host .. host + len` stays one allocation
 * valid for reads and writes (not freed, unmapped or made read-only).
 * The emulator's native guest code may keep using plain loads and stores
 * on those bytes.
 */
enum pm4_status pm4_memory_new_host(const struct pm4_host_mapping *mappings,
                                    size_t count,
                                    struct pm4_memory **out);

/**
 * Makes guest memory reached through the emulator's own functions (see
 * `pm4_memory_callbacks` for their contract). The table is copied. A NULL
 * required entry is `PM4_STATUS_NULL_ARGUMENT` naming it. Writes the handle
 * to `*out`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `callbacks` points to a valid table; `out` is valid for a write. The
 * callbacks and `user_data` stay valid until `release` is called (or, with
 * no `release`, until the memory and every GPU over it are freed).
 */
enum pm4_status pm4_memory_new_callbacks(const struct pm4_memory_callbacks *callbacks,
                                         struct pm4_memory **out);

/**
 * Makes `size` bytes of zeroed guest memory at guest address `base`,
 * allocated and owned by the library (for tools and tests; an emulator
 * usually hands the GPU its own memory with `pm4_memory_new_host`).
 * `base` must be a multiple of 8 and `size` at most 16 GiB
 * (`PM4_STATUS_INVALID_ARGUMENT` above: a larger allocation that the host
 * cannot give would end the process). Writes the handle to `*out`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_memory_new_flat(uint64_t base, uint64_t size, struct pm4_memory **out);

/**
 * Reads `len` guest bytes at `address` into `out`.
 *
 * Threads: any. From a backend callback: yes (not from a memory callback).
 *
 * # Safety
 *
 * `out .. out + len` is valid for writes (may be NULL when `len` is 0).
 */
enum pm4_status pm4_memory_read(struct pm4_memory *memory, uint64_t address, void *out, size_t len);

/**
 * Writes `len` bytes from `data` to guest memory at `address`, as the CPU
 * would: a GPU over this memory is not told (call
 * `pm4_gpu_notify_host_write`, or let its polling see the change).
 *
 * Threads: any. From a backend callback: yes (not from a memory callback).
 *
 * # Safety
 *
 * `data .. data + len` is valid for reads (may be NULL when `len` is 0).
 */
enum pm4_status pm4_memory_write(struct pm4_memory *memory,
                                 uint64_t address,
                                 const void *data,
                                 size_t len);

/**
 * Frees a memory handle (a no-op for NULL, and for a handle already
 * freed). A GPU made over the memory keeps using it; the memory itself
 * goes (and a callback table's `release` is called) when nothing holds
 * it any more.
 *
 * Threads: any. From a callback: yes.
 */
void pm4_memory_free(struct pm4_memory *memory);

/**
 * Starts a recording over `inner`: writes the recording handle to
 * `*recorder` and, to `*memory`, a memory to make the GPU over (it goes to
 * `inner` and remembers what it served). A GPU over that memory records
 * each `pm4_gpu_submit`, `pm4_gpu_write_memory` and
 * `pm4_gpu_notify_host_write` (the notified bytes as a host write at that
 * point) in call order; a CPU store nobody notifies is not in the trace.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `recorder` and `memory` are valid for writes.
 */
enum pm4_status pm4_recorder_new(struct pm4_memory *inner,
                                 struct pm4_recorder **recorder,
                                 struct pm4_memory **memory);

/**
 * Sets an `INFO` key of the trace (`description`, `producer`, …).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `key` and `value` are NUL-terminated strings.
 */
enum pm4_status pm4_recorder_info(struct pm4_recorder *recorder,
                                  const char *key,
                                  const char *value);

/**
 * Adds a note for people at this point of the trace.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `note` is a NUL-terminated string.
 */
enum pm4_status pm4_recorder_note(struct pm4_recorder *recorder, const char *note);

/**
 * Writes the trace so far into `out[..cap]`, its length to `*len`; a
 * buffer too small answers `PM4_STATUS_BUFFER_TOO_SMALL` with the size
 * needed in `*len` (call with `cap` 0 to learn it). Drive the GPU to the
 * point to record first (`pm4_gpu_run_until_idle`).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out .. out + cap` is valid for writes; `len` is valid for a write.
 */
enum pm4_status pm4_recorder_finish(struct pm4_recorder *recorder,
                                    uint8_t *out,
                                    size_t cap,
                                    size_t *len);

/**
 * Writes the trace so far to the file `path` (replaced if it exists).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `path` is a NUL-terminated string.
 */
enum pm4_status pm4_recorder_save(struct pm4_recorder *recorder, const char *path);

/**
 * Frees a recording handle (a no-op for NULL or a freed handle); its
 * memory keeps working for the GPUs over it.
 *
 * Threads: any. From a callback: yes.
 */
void pm4_recorder_free(struct pm4_recorder *recorder);

/**
 * Reads register `index` (an absolute dword index, 0..0x10000; unwritten
 * registers read 0) into `*value`.
 *
 * Threads: inside the draw or dispatch callback that was given `registers`.
 *
 * # Safety
 *
 * `value` is valid for a write.
 */
enum pm4_status pm4_registers_get(const struct pm4_registers *registers,
                                  uint32_t index,
                                  uint32_t *value);

/**
 * Reads `count` registers from `start` on into `out`.
 *
 * Threads: inside the draw or dispatch callback that was given `registers`.
 *
 * # Safety
 *
 * `out .. out + count` is valid for writes.
 */
enum pm4_status pm4_registers_read(const struct pm4_registers *registers,
                                   uint32_t start,
                                   uint32_t *out,
                                   size_t count);

/**
 * The program bound to `stage` (`PM4_STAGE_*`) and its user data.
 *
 * Threads: inside the draw or dispatch callback that was given `registers`.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_registers_program(const struct pm4_registers *registers,
                                      uint32_t stage,
                                      struct pm4_program *out);

/**
 * Colour target `index` (0..8).
 *
 * Threads: inside the draw or dispatch callback that was given `registers`.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_registers_render_target(const struct pm4_registers *registers,
                                            uint32_t index,
                                            struct pm4_render_target *out);

/**
 * Viewport `index` (0..16).
 *
 * Threads: inside the draw or dispatch callback that was given `registers`.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_registers_viewport(const struct pm4_registers *registers,
                                       uint32_t index,
                                       struct pm4_viewport *out);

/**
 * Viewport scissor `index` (0..16).
 *
 * Threads: inside the draw or dispatch callback that was given `registers`.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_registers_scissor(const struct pm4_registers *registers,
                                      uint32_t index,
                                      struct pm4_scissor *out);

/**
 * The depth target's state.
 *
 * Threads: inside the draw or dispatch callback that was given `registers`.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_registers_depth(const struct pm4_registers *registers,
                                    struct pm4_depth_target *out);

/**
 * The absolute dword index of the gfx10.3 register named `name` (as AMD's
 * register database spells it: `"CB_COLOR0_BASE"`), for
 * `pm4_registers_get` and the command buffers an emulator writes.
 * `PM4_STATUS_INVALID_ARGUMENT` when no register has that name.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `name` is a NUL-terminated string; `index` is valid for a write.
 */
enum pm4_status pm4_register_index(const char *name, uint32_t *index);

/**
 * A receiver of `queue`'s interrupts. Writes the handle to `*out`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_gpu_interrupts(struct pm4_gpu *gpu,
                                   uint32_t queue,
                                   struct pm4_interrupts **out);

/**
 * Takes the next interrupt if one is queued: `PM4_STATUS_EMPTY` when none
 * is, `PM4_STATUS_SHUT_DOWN` once the GPU is shut down and none is left.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_interrupts_poll(struct pm4_interrupts *interrupts, struct pm4_interrupt *out);

/**
 * Waits at most `timeout_ns` for the next interrupt: `PM4_STATUS_TIMEOUT`
 * when none came, `PM4_STATUS_SHUT_DOWN` once the GPU is shut down and
 * none is left (shutdown ends the wait at once).
 *
 * Threads: any. From a callback: yes (it blocks the calling worker).
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_interrupts_wait(struct pm4_interrupts *interrupts,
                                    uint64_t timeout_ns,
                                    struct pm4_interrupt *out);

/**
 * Interrupts of the queue dropped because its channel was full.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `dropped` is valid for a write.
 */
enum pm4_status pm4_interrupts_dropped(struct pm4_interrupts *interrupts, uint64_t *dropped);

/**
 * Frees an interrupt receiver (a no-op for NULL or a freed handle).
 *
 * Threads: any. From a callback: yes.
 */
void pm4_interrupts_free(struct pm4_interrupts *interrupts);

/**
 * Waits at most `timeout_ns` for the next interrupt of `queue`, as
 * `pm4_interrupts_wait` on a receiver made for the call.
 *
 * Threads: any. From a callback: yes (it blocks the calling worker).
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_gpu_wait_interrupt(struct pm4_gpu *gpu,
                                       uint32_t queue,
                                       uint64_t timeout_ns,
                                       struct pm4_interrupt *out);

/**
 * Calls `callback(user_data, &interrupt)` for each interrupt of `queue`,
 * in completion order, on a thread the library starts for this call
 * ("pm4-irq-QUEUE"); the callback may call any `pm4_` function (it is not
 * a GPU callback: waiting and driving are allowed). The thread ends when
 * the GPU shuts down (after the interrupts left are delivered); it is
 * joined by `pm4_gpu_free`. The callback shares the queue's channel with
 * its receivers: each interrupt goes to one of them.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `callback` and `user_data` stay valid until `pm4_gpu_free` has returned;
 * the callback must not let a C++ exception leave it.
 */
enum pm4_status pm4_gpu_on_interrupt(struct pm4_gpu *gpu,
                                     uint32_t queue,
                                     void (*callback)(void *user_data,
                                                      const struct pm4_interrupt *interrupt),
                                     void *user_data);

/**
 * A receiver of the stall reports: threaded mode reports each stall that
 * lasts `stall_report_delay_ns` once. Writes the handle to `*out`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_gpu_stalls(struct pm4_gpu *gpu, struct pm4_stalls **out);

/**
 * Takes the next stall report if one is queued (`PM4_STATUS_EMPTY` if
 * not; `PM4_STATUS_SHUT_DOWN` after shutdown). Writes a report handle to
 * `*out` (free it with `pm4_stall_report_free`).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_stalls_poll(struct pm4_stalls *stalls, struct pm4_stall_report **out);

/**
 * Waits at most `timeout_ns` for the next stall report
 * (`PM4_STATUS_TIMEOUT` when none came; shutdown ends the wait with
 * `PM4_STATUS_SHUT_DOWN`).
 *
 * Threads: any. From a callback: yes (it blocks the calling worker).
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_stalls_wait(struct pm4_stalls *stalls,
                                uint64_t timeout_ns,
                                struct pm4_stall_report **out);

/**
 * Stall reports dropped because 64 were left unread.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `dropped` is valid for a write.
 */
enum pm4_status pm4_stalls_dropped(struct pm4_stalls *stalls, uint64_t *dropped);

/**
 * Frees a stall receiver (a no-op for NULL or a freed handle).
 *
 * Threads: any. From a callback: yes.
 */
void pm4_stalls_free(struct pm4_stalls *stalls);

/**
 * The number of waiting queues in a report.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `count` is valid for a write.
 */
enum pm4_status pm4_stall_report_count(struct pm4_stall_report *report, size_t *count);

/**
 * Waiting queue `index` of a report (in queue order).
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is valid for a write.
 */
enum pm4_status pm4_stall_report_queue(struct pm4_stall_report *report,
                                       size_t index,
                                       struct pm4_queue_stall *out);

/**
 * The report as text (`stall: 1 queue waits and no host write is
 * pending`, then a line per queue), NUL-terminated, into `out[..cap]`;
 * its length (without the NUL) goes to `*len`. A buffer too small answers
 * `PM4_STATUS_BUFFER_TOO_SMALL` with the size needed in `*len`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out .. out + cap` is valid for writes; `len` is valid for a write.
 */
enum pm4_status pm4_stall_report_text(struct pm4_stall_report *report,
                                      char *out,
                                      size_t cap,
                                      size_t *len);

/**
 * Frees a stall report (a no-op for NULL or a freed handle).
 *
 * Threads: any. From a callback: yes.
 */
void pm4_stall_report_free(struct pm4_stall_report *report);

/**
 * The submission's id to `*id`.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `id` is valid for a write.
 */
enum pm4_status pm4_submission_id(struct pm4_submission *submission, uint64_t *id);

/**
 * The final result if the submission has completed: `PM4_STATUS_OK` with
 * `*out` (unless NULL) filled, the failure's status (`PM4_STATUS_PROCESSOR_ERROR`,
 * `PM4_STATUS_DEADLOCK`, `PM4_STATUS_ABORTED`, `PM4_STATUS_SHUT_DOWN`, …)
 * with its message, or `PM4_STATUS_PENDING` while it runs. Never blocks.
 *
 * Threads: any. From a callback: yes.
 *
 * # Safety
 *
 * `out` is NULL or valid for a write.
 */
enum pm4_status pm4_submission_poll(struct pm4_submission *submission,
                                    struct pm4_submission_report *out);

/**
 * Blocks until the submission completes, fails or is cancelled, and
 * answers as `pm4_submission_poll`. A stall does not end the wait (the
 * host may still write the label); shutdown does. Deterministic mode: this
 * never drives the GPU (another thread must, or use
 * `pm4_gpu_run_until_complete`).
 *
 * Threads: any. From a callback: not while the submission is pending
 * (`PM4_STATUS_CALLED_FROM_CALLBACK`; `pm4_submission_wait_timeout` works
 * there).
 *
 * # Safety
 *
 * `out` is NULL or valid for a write.
 */
enum pm4_status pm4_submission_wait(struct pm4_submission *submission,
                                    struct pm4_submission_report *out);

/**
 * `pm4_submission_wait` for at most `timeout_ns`: `PM4_STATUS_TIMEOUT`
 * when the time ran out first.
 *
 * Threads: any. From a callback: yes (it blocks the calling worker).
 *
 * # Safety
 *
 * `out` is NULL or valid for a write.
 */
enum pm4_status pm4_submission_wait_timeout(struct pm4_submission *submission,
                                            uint64_t timeout_ns,
                                            struct pm4_submission_report *out);

/**
 * Deterministic mode: drives the GPU on this thread until `submission`
 * completes and answers as `pm4_submission_wait`; a stall first answers
 * `PM4_STATUS_DEADLOCK` (nothing cancelled: a host write and another call
 * may resolve it). Threaded mode: as `pm4_submission_wait`.
 *
 * Threads: any. From a callback: no (`PM4_STATUS_CALLED_FROM_CALLBACK`).
 *
 * # Safety
 *
 * `out` is NULL or valid for a write.
 */
enum pm4_status pm4_gpu_run_until_complete(struct pm4_gpu *gpu,
                                           struct pm4_submission *submission,
                                           struct pm4_submission_report *out);

/**
 * Frees a submission handle (a no-op for NULL or a freed handle); the
 * submission itself runs on.
 *
 * Threads: any. From a callback: yes.
 */
void pm4_submission_free(struct pm4_submission *submission);

/**
 * `PM4_STATUS_OK` once the write is in guest memory, the refusal's status
 * when the memory refused it or the GPU shut down first,
 * `PM4_STATUS_PENDING` while a deterministic GPU has not reached it.
 *
 * Threads: any. From a callback: yes.
 */
enum pm4_status pm4_host_write_poll(struct pm4_host_write *write);

/**
 * Blocks until the write is applied or refused, answering as
 * `pm4_host_write_poll`; `timeout_ns` bounds the wait
 * (`PM4_STATUS_TIMEOUT`; `UINT64_MAX` waits as long as it takes).
 *
 * Threads: any. From a callback: with a pending write only with a finite
 * timeout (a write a deterministic GPU applies after the calling slice
 * answers `PM4_STATUS_CALLED_FROM_CALLBACK` without one).
 */
enum pm4_status pm4_host_write_wait(struct pm4_host_write *write, uint64_t timeout_ns);

/**
 * Frees a host-write handle (a no-op for NULL or a freed handle).
 *
 * Threads: any. From a callback: yes.
 */
void pm4_host_write_free(struct pm4_host_write *write);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* PM4CORE_H */
