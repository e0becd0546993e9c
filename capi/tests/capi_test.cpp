// The C ABI tested as a C++ emulator uses it: memory the emulator owns,
// four submitting threads, a CPU thread writing labels (notified and not),
// interrupts by callback and by poll, a stall resolved by a write, backend
// callbacks reading the queue's registers and calling back into the GPU,
// shutdown with waiters, a callback-table memory, the recorder, the
// disassembler, and every error path answering a status and a message.
//
// Built with the system g++ (-std=c++17 -Wall -Wextra -Werror -pedantic)
// against the static library by capi/tests/from_cxx.rs, and run with a
// directory for its outputs: argv[1]/recorded.pm4t (a trace) and
// argv[1]/recorded.log (the events this backend saw), which the Rust test
// replays. Ends with "capi_test: N passed, M failed"; exits 1 on a failure.

#include "pm4core.h"

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

std::atomic<int> passed{0};
std::atomic<int> failed{0};

void fail(const char *file, int line, const std::string &what) {
    std::fprintf(stderr, "%s:%d: %s\n", file, line, what.c_str());
    failed++;
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) passed++;                                                                        \
        else fail(__FILE__, __LINE__, "CHECK(" #cond ")");                                         \
    } while (0)

// A call that must answer `expected`; on a failure the message is checked
// to name the function and to contain `fragment`.
#define STATUS(call, expected, fragment)                                                           \
    check_status((call), (expected), #call, (fragment), __FILE__, __LINE__)

void check_status(pm4_status got, pm4_status expected, const char *call, const char *fragment,
                  const char *file, int line) {
    if (got != expected) {
        fail(file, line, std::string(call) + " answered " + pm4_status_str(got) + " (" +
                             pm4_last_error_message() + "), expected " + pm4_status_str(expected));
        return;
    }
    if (expected != PM4_STATUS_OK) {
        std::string message = pm4_last_error_message();
        std::string function(call, std::strcspn(call, "("));
        if (pm4_last_error_status() != expected) {
            fail(file, line, std::string(call) + ": pm4_last_error_status is not the status answered");
            return;
        }
        if (message.rfind(function + ": ", 0) != 0) {
            fail(file, line, std::string(call) + ": the message does not name the function: " + message);
            return;
        }
        if (fragment != nullptr && message.find(fragment) == std::string::npos) {
            fail(file, line, std::string(call) + ": the message lacks \"" + fragment + "\": " + message);
            return;
        }
    }
    passed++;
}

#define OK(call) STATUS(call, PM4_STATUS_OK, nullptr)

constexpr uint32_t comp(uint32_t pipe, uint32_t queue) { return 1 + pipe * 8 + queue; }

std::string queue_name(uint32_t q) {
    if (q == 0) return "gfx";
    return "comp" + std::to_string((q - 1) / 8) + "." + std::to_string((q - 1) % 8);
}

uint32_t reg(const char *name) {
    uint32_t index = 0;
    if (pm4_register_index(name, &index) != PM4_STATUS_OK) {
        std::fprintf(stderr, "no register %s: %s\n", name, pm4_last_error_message());
        std::exit(2);
    }
    return index;
}

// PM4 packets, as a guest's driver writes them.
struct Cmd {
    std::vector<uint32_t> dw;

    Cmd &packet(uint32_t opcode, std::initializer_list<uint32_t> body) {
        dw.push_back(0xC0000000u | ((uint32_t(body.size()) - 1) << 16) | (opcode << 8));
        dw.insert(dw.end(), body);
        return *this;
    }
    // WAIT_REG_MEM on memory: function 3 (==) or 5 (>=).
    Cmd &wait_mem(uint64_t address, uint32_t function, uint32_t value) {
        return packet(0x3C, {function | (1u << 4), uint32_t(address), uint32_t(address >> 32), value,
                             0xFFFFFFFFu, 4});
    }
    Cmd &write(uint64_t address, uint32_t value) {
        return packet(0x37, {(5u << 8) | (1u << 20), uint32_t(address), uint32_t(address >> 32), value});
    }
    // RELEASE_MEM at the end of the pipe writing 32-bit `value`, with or
    // without an interrupt.
    Cmd &release(uint64_t address, uint32_t value, bool interrupt) {
        return packet(0x49, {0x28 | (5u << 8), (interrupt ? 2u << 24 : 0u) | (1u << 29),
                             uint32_t(address), uint32_t(address >> 32), value, 0, 0});
    }
    Cmd &set(uint32_t opcode, uint32_t base, uint32_t index, std::initializer_list<uint32_t> values) {
        std::vector<uint32_t> body{index - base};
        body.insert(body.end(), values);
        dw.push_back(0xC0000000u | ((uint32_t(body.size()) - 1) << 16) | (opcode << 8));
        dw.insert(dw.end(), body.begin(), body.end());
        return *this;
    }
    Cmd &set_context(uint32_t index, std::initializer_list<uint32_t> v) { return set(0x69, 0xA000, index, v); }
    Cmd &set_sh(uint32_t index, std::initializer_list<uint32_t> v) { return set(0x76, 0x2C00, index, v); }
    Cmd &set_uconfig(uint32_t index, std::initializer_list<uint32_t> v) { return set(0x79, 0xC000, index, v); }
    Cmd &draw(uint32_t vertices) { return packet(0x2D, {vertices, 2}); }
    Cmd &dispatch(uint32_t x, uint32_t y, uint32_t z) { return packet(0x15, {x, y, z, 1}); }
    uint32_t size() const { return uint32_t(dw.size()); }
};

// Guest RAM the emulator owns, mapped at a guest base of its choosing.
struct GuestRam {
    static constexpr uint64_t base = 0x100000000ull;
    static constexpr size_t size = 16u << 20;
    uint64_t *words;
    pm4_memory *memory = nullptr;

    GuestRam() : words(static_cast<uint64_t *>(std::calloc(size / 8, 8))) {
        pm4_host_mapping mapping{base, words, size};
        if (words == nullptr || pm4_memory_new_host(&mapping, 1, &memory) != PM4_STATUS_OK) {
            std::fprintf(stderr, "guest RAM: %s\n", pm4_last_error_message());
            std::exit(2);
        }
    }
    ~GuestRam() {
        pm4_memory_free(memory);
        std::free(words);
    }
    GuestRam(const GuestRam &) = delete;
    GuestRam &operator=(const GuestRam &) = delete;

    uint32_t *at(uint64_t address) {
        return reinterpret_cast<uint32_t *>(reinterpret_cast<unsigned char *>(words) + (address - base));
    }
    // The guest's own stores: native code, no call to the GPU.
    void store(uint64_t address, uint32_t value) { __atomic_store_n(at(address), value, __ATOMIC_RELEASE); }
    uint32_t load(uint64_t address) { return __atomic_load_n(at(address), __ATOMIC_ACQUIRE); }
    void put(uint64_t address, const Cmd &c) { std::memcpy(at(address), c.dw.data(), c.dw.size() * 4); }
};

// ---------------------------------------------------------------------------
// A renderer with one recorder per queue.

struct Registers {
    uint32_t prim, pgm_lo_ps, user_data_ps, color0_base;
};

struct Renderer;

struct QueueRecorder {
    Renderer *renderer;
    uint32_t queue;
};

struct Renderer {
    Registers r;
    pm4_gpu *gpu = nullptr;
    std::atomic<int> draws{0}, dispatches{0}, fences{0};
    std::atomic<int> register_mismatches{0}, register_checks{0};
    std::atomic<int> recorders_made{0}, recorders_released{0}, shared_released{0};
    std::atomic<int> callbacks_threw{0};
    std::atomic<bool> called_back{false};
    std::atomic<int> callback_stats_status{-1}, callback_registers_status{-1};
    std::string callback_registers_message;
    std::mutex message_lock;
};

void check_draw_registers(Renderer *r, const pm4_draw *d) {
    uint32_t prim = 0, range[4] = {0, 0, 0, 0};
    pm4_program ps{};
    pm4_render_target rt{};
    bool good = pm4_registers_get(d->registers, r->r.prim, &prim) == PM4_STATUS_OK && prim == 4 &&
                d->primitive_type == 4;
    good = good && pm4_registers_read(d->registers, r->r.user_data_ps, range, 4) == PM4_STATUS_OK &&
           range[0] == 1 && range[3] == 4;
    good = good && pm4_registers_program(d->registers, PM4_STAGE_PS, &ps) == PM4_STATUS_OK &&
           ps.address == 0x100000 && ps.user_data_count == 32 && ps.user_data[1] == 2 &&
           d->programs[0] == 0x100000;
    good = good && pm4_registers_render_target(d->registers, 0, &rt) == PM4_STATUS_OK &&
           rt.address == 0x200000;
    r->register_checks++;
    if (!good) r->register_mismatches++;
}

void on_draw(void *user_data, const pm4_draw *d) {
    // A callback catches its own exceptions: none may cross into pm4core.
    try {
        auto *q = static_cast<QueueRecorder *>(user_data);
        Renderer *r = q->renderer;
        if (d->queue != q->queue) r->register_mismatches++;
        r->draws++;
        check_draw_registers(r, d);
        if (!r->called_back.exchange(true)) {
            // Calling back: counters work; the calling queue's processor is
            // out on this very slice.
            pm4_gpu_stats stats;
            r->callback_stats_status = pm4_gpu_get_stats(r->gpu, &stats);
            uint32_t value;
            r->callback_registers_status = pm4_gpu_read_registers(r->gpu, d->queue, r->r.prim, &value, 1);
            std::lock_guard<std::mutex> hold(r->message_lock);
            r->callback_registers_message = pm4_last_error_message();
        }
    } catch (...) {
        static_cast<QueueRecorder *>(user_data)->renderer->callbacks_threw++;
    }
}

void on_dispatch(void *user_data, const pm4_dispatch *d) {
    auto *q = static_cast<QueueRecorder *>(user_data);
    if (d->dims[0] == 8 && d->dims[1] == 8 && d->queue == q->queue) q->renderer->dispatches++;
}

void on_fence(void *user_data, const pm4_fence *) { static_cast<QueueRecorder *>(user_data)->renderer->fences++; }

void on_recorder_release(void *user_data) {
    auto *q = static_cast<QueueRecorder *>(user_data);
    q->renderer->recorders_released++;
    delete q;
}

uint8_t make_queue_backend(void *user_data, uint32_t queue, pm4_backend *out) {
    auto *r = static_cast<Renderer *>(user_data);
    auto *q = new (std::nothrow) QueueRecorder{r, queue};
    if (q == nullptr) return 0;
    r->recorders_made++;
    out->user_data = q;
    out->draw = on_draw;
    out->dispatch = on_dispatch;
    out->fence = on_fence;
    out->release = on_recorder_release;
    return 1;
}

void on_shared_release(void *user_data) { static_cast<Renderer *>(user_data)->shared_released++; }

struct InterruptCount {
    std::atomic<int> count{0};
    std::atomic<uint64_t> last{0};
};

void on_interrupt(void *user_data, const pm4_interrupt *i) {
    auto *c = static_cast<InterruptCount *>(user_data);
    c->count++;
    c->last = i->fence.data;
}

constexpr uint64_t COMMANDS = GuestRam::base + 0x100000;
constexpr uint64_t LABELS = GuestRam::base + 0x1000000 - 0x10000;
constexpr uint32_t FRAMES = 40;

void test_threaded_emulator() {
    GuestRam ram;
    Renderer renderer;
    renderer.r = Registers{reg("VGT_PRIMITIVE_TYPE"), reg("SPI_SHADER_PGM_LO_PS"),
                           reg("SPI_SHADER_USER_DATA_PS_0"), reg("CB_COLOR0_BASE")};
    pm4_backend backend{};
    backend.user_data = &renderer;
    backend.queue_backend = make_queue_backend;
    backend.release = on_shared_release;
    pm4_gpu_config config;
    OK(pm4_gpu_config_default(&config));
    config.workers = 2;
    pm4_gpu *gpu = nullptr;
    OK(pm4_gpu_new(&config, ram.memory, &backend, &gpu));
    renderer.gpu = gpu;

    const uint32_t queues[4] = {PM4_QUEUE_GRAPHICS, comp(0, 0), comp(1, 0), comp(2, 3)};
    auto cpu_label = [](int t) { return LABELS + 0x100 * uint64_t(t); };
    auto fence_label = [](int t) { return LABELS + 0x100 * uint64_t(t) + 8; };
    // Interrupts: the first two queues by callback, the others by poll.
    InterruptCount heard[2];
    OK(pm4_gpu_on_interrupt(gpu, queues[0], on_interrupt, &heard[0]));
    OK(pm4_gpu_on_interrupt(gpu, queues[1], on_interrupt, &heard[1]));
    pm4_interrupts *polled[2] = {nullptr, nullptr};
    OK(pm4_gpu_interrupts(gpu, queues[2], &polled[0]));
    OK(pm4_gpu_interrupts(gpu, queues[3], &polled[1]));

    std::vector<std::thread> submitters;
    std::atomic<int> submit_failures{0}, frames_done{0};
    for (int t = 0; t < 4; t++) {
        submitters.emplace_back([&, t] {
            pm4_submission *last = nullptr;
            for (uint32_t frame = 1; frame <= FRAMES; frame++) {
                Cmd c;
                c.wait_mem(cpu_label(t), 5, frame);
                if (queues[t] == PM4_QUEUE_GRAPHICS) {
                    c.set_uconfig(renderer.r.prim, {4})
                        .set_sh(renderer.r.pgm_lo_ps, {0x1000, 0})
                        .set_sh(renderer.r.user_data_ps, {1, 2, 3, 4})
                        .set_context(renderer.r.color0_base, {0x2000})
                        .draw(3);
                } else {
                    c.dispatch(8, 8, 1);
                }
                c.release(fence_label(t), frame, true);
                uint64_t at = COMMANDS + (uint64_t(t) * FRAMES + frame) * 0x200;
                ram.put(at, c);
                pm4_submission_free(last);
                last = nullptr;
                if (pm4_gpu_submit(gpu, queues[t], at, c.size(), &last) != PM4_STATUS_OK) submit_failures++;
            }
            pm4_submission_report report;
            pm4_status s;
            // Waits with a timeout: a frame that never comes is an answer, not a hang.
            while ((s = pm4_submission_wait_timeout(last, 500000000ull, &report)) == PM4_STATUS_TIMEOUT) {
            }
            if (s == PM4_STATUS_OK) frames_done++;
            pm4_submission_free(last);
        });
    }
    // The CPU thread: stores each label natively; notifies the even frames
    // only (the odd ones the GPU's polling sees).
    std::thread cpu([&] {
        for (uint32_t frame = 1; frame <= FRAMES; frame++) {
            for (int t = 0; t < 4; t++) {
                ram.store(cpu_label(t), frame);
                if (frame % 2 == 0) pm4_gpu_notify_host_write(gpu, cpu_label(t), 4, nullptr);
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    for (auto &s : submitters) s.join();
    cpu.join();
    CHECK(submit_failures == 0);
    CHECK(frames_done == 4);
    for (int t = 0; t < 4; t++) CHECK(ram.load(fence_label(t)) == FRAMES);
    CHECK(renderer.draws == int(FRAMES));
    CHECK(renderer.dispatches == int(3 * FRAMES));
    CHECK(renderer.fences == int(4 * FRAMES));
    CHECK(renderer.register_checks == int(FRAMES));
    CHECK(renderer.register_mismatches == 0);
    CHECK(renderer.callbacks_threw == 0);
    CHECK(renderer.callback_stats_status == PM4_STATUS_OK);
    CHECK(renderer.callback_registers_status == PM4_STATUS_CALLED_FROM_CALLBACK);
    CHECK(renderer.callback_registers_message.rfind("pm4_gpu_read_registers: ", 0) == 0 &&
          renderer.callback_registers_message.find("callback") != std::string::npos);
    for (int i = 0; i < 2; i++) {
        // The listener delivers the last interrupt right after its fence.
        for (int wait = 0; wait < 5000 && heard[i].count < int(FRAMES); wait++)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        CHECK(heard[i].count == int(FRAMES));
        CHECK(heard[i].last == FRAMES);
        int got = 0;
        pm4_interrupt irq;
        uint64_t last = 0, dropped = 1;
        while (pm4_interrupts_poll(polled[i], &irq) == PM4_STATUS_OK) {
            got++;
            CHECK(irq.fence.queue == queues[2 + i] && irq.fence.interrupt);
            last = irq.fence.data;
        }
        CHECK(pm4_last_error_status() == PM4_STATUS_EMPTY);
        CHECK(got == int(FRAMES));
        CHECK(last == FRAMES);
        OK(pm4_interrupts_dropped(polled[i], &dropped));
        CHECK(dropped == 0);
    }

    // A stall: a compute queue waits on a gate nobody has written. It is
    // reported with its wait; the submission's wait times out; a host
    // write resolves it.
    pm4_stalls *stalls = nullptr;
    OK(pm4_gpu_stalls(gpu, &stalls));
    pm4_stall_report *old = nullptr;
    while (pm4_stalls_poll(stalls, &old) == PM4_STATUS_OK) pm4_stall_report_free(old);
    const uint64_t gate = LABELS + 0x1000;
    const uint64_t at = COMMANDS + 0x800000;
    Cmd c;
    c.wait_mem(gate, 3, 1).write(gate + 4, 0x600D);
    ram.put(at, c);
    pm4_submission *waiting = nullptr;
    OK(pm4_gpu_submit(gpu, comp(6, 7), at, c.size(), &waiting));
    bool reported = false;
    for (int tries = 0; tries < 100 && !reported; tries++) {
        pm4_stall_report *report = nullptr;
        if (pm4_stalls_wait(stalls, 100000000ull, &report) != PM4_STATUS_OK) continue;
        size_t count = 0;
        OK(pm4_stall_report_count(report, &count));
        for (size_t i = 0; i < count; i++) {
            pm4_queue_stall q;
            OK(pm4_stall_report_queue(report, i, &q));
            if (q.queue != comp(6, 7)) continue;
            reported = true;
            CHECK(q.has_packet_address && q.packet_address == at);
            CHECK(q.address == at && q.size_dw == c.size());
            CHECK(q.wait.kind == PM4_WAIT_REG_MEM && q.wait.has_address && q.wait.address == gate);
            CHECK(q.wait.function == 3 && q.wait.reference == 1 && q.wait.current == 0);
            char text[2048];
            size_t len = 0;
            OK(pm4_stall_report_text(report, text, sizeof text, &len));
            CHECK(std::strstr(text, "comp6.7") != nullptr && len == std::strlen(text));
        }
        pm4_stall_report_free(report);
    }
    CHECK(reported);
    pm4_submission_report done{};
    STATUS(pm4_submission_wait_timeout(waiting, 20000000ull, &done), PM4_STATUS_TIMEOUT, "did not complete");
    uint32_t one = 1;
    OK(pm4_gpu_write_memory(gpu, gate, &one, 4, nullptr));
    OK(pm4_submission_wait(waiting, &done));
    CHECK(done.waits >= 1 && done.packets == 2);
    CHECK(ram.load(gate + 4) == 0x600D);
    pm4_submission_free(waiting);

    // An un-notified store alone resumes a suspended wait (polling).
    pm4_gpu_stats before{}, after{};
    OK(pm4_gpu_get_stats(gpu, &before));
    const uint64_t quiet = LABELS + 0x2000;
    Cmd q;
    q.wait_mem(quiet, 3, 7).write(quiet + 4, 0x51);
    ram.put(at + 0x1000, q);
    OK(pm4_gpu_submit(gpu, comp(5, 5), at + 0x1000, q.size(), &waiting));
    pm4_queue_status status{};
    for (int i = 0; i < 5000; i++) {
        OK(pm4_gpu_queue_status(gpu, comp(5, 5), &status));
        if (status.suspended) break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    CHECK(status.suspended && status.wait.address == quiet && status.wait.reference == 7);
    ram.store(quiet, 7);
    OK(pm4_submission_wait_timeout(waiting, 10000000000ull, &done));
    CHECK(ram.load(quiet + 4) == 0x51);
    OK(pm4_gpu_get_stats(gpu, &after));
    CHECK(after.poll_wakes > before.poll_wakes);
    CHECK(after.completed == 4 * FRAMES + 2);
    CHECK(after.interrupts == 4 * FRAMES);
    pm4_submission_free(waiting);

    pm4_stalls_free(stalls);
    pm4_interrupts_free(polled[0]);
    pm4_interrupts_free(polled[1]);
    pm4_gpu_free(gpu);
    // Every backend released once: each queue's recorder, and the renderer.
    CHECK(renderer.recorders_made == 6);
    CHECK(renderer.recorders_released == 6);
    CHECK(renderer.shared_released == 1);
}

// ---------------------------------------------------------------------------

void test_shutdown_with_waiters() {
    GuestRam ram;
    pm4_gpu_config config;
    OK(pm4_gpu_config_default(&config));
    config.workers = 2;
    config.stall_report_delay_ns = 3600ull * 1000000000ull; // no report comes
    pm4_gpu *gpu = nullptr;
    OK(pm4_gpu_new(&config, ram.memory, nullptr, &gpu));
    Cmd c;
    c.wait_mem(LABELS, 3, 1);
    ram.put(COMMANDS, c);
    pm4_submission *never = nullptr;
    OK(pm4_gpu_submit(gpu, 0, COMMANDS, c.size(), &never));
    pm4_interrupts *irqs = nullptr;
    OK(pm4_gpu_interrupts(gpu, comp(3, 3), &irqs));
    pm4_stalls *stalls = nullptr;
    OK(pm4_gpu_stalls(gpu, &stalls));

    std::atomic<int> woke{0};
    pm4_status answers[4] = {PM4_STATUS_OK, PM4_STATUS_OK, PM4_STATUS_OK, PM4_STATUS_OK};
    std::vector<std::thread> waiters;
    const uint64_t long_wait = 30ull * 1000000000ull;
    waiters.emplace_back([&] {
        answers[0] = pm4_submission_wait(never, nullptr);
        woke++;
    });
    waiters.emplace_back([&] {
        pm4_interrupt irq;
        answers[1] = pm4_gpu_wait_interrupt(gpu, comp(3, 3), long_wait, &irq);
        woke++;
    });
    waiters.emplace_back([&] {
        pm4_interrupt irq;
        answers[2] = pm4_interrupts_wait(irqs, long_wait, &irq);
        woke++;
    });
    waiters.emplace_back([&] {
        pm4_stall_report *report = nullptr;
        answers[3] = pm4_stalls_wait(stalls, long_wait, &report);
        woke++;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(woke == 0);
    auto start = std::chrono::steady_clock::now();
    OK(pm4_gpu_shutdown(gpu));
    for (auto &w : waiters) w.join();
    auto took = std::chrono::steady_clock::now() - start;
    CHECK(took < std::chrono::seconds(5));
    for (pm4_status s : answers) CHECK(s == PM4_STATUS_SHUT_DOWN);
    STATUS(pm4_submission_poll(never, nullptr), PM4_STATUS_SHUT_DOWN, "shut down");
    // Use after shutdown: a status and a message, every time.
    STATUS(pm4_gpu_submit(gpu, 0, COMMANDS, c.size(), nullptr), PM4_STATUS_SHUT_DOWN, "shut down");
    uint32_t one = 1;
    STATUS(pm4_gpu_write_memory(gpu, LABELS, &one, 4, nullptr), PM4_STATUS_SHUT_DOWN, "shut down");
    STATUS(pm4_gpu_notify_host_write(gpu, LABELS, 4, nullptr), PM4_STATUS_SHUT_DOWN, "shut down");
    STATUS(pm4_gpu_run_until_idle(gpu), PM4_STATUS_SHUT_DOWN, "shut down");
    pm4_interrupts *late = nullptr;
    STATUS(pm4_gpu_interrupts(gpu, 0, &late), PM4_STATUS_SHUT_DOWN, "shut down");
    OK(pm4_gpu_shutdown(gpu)); // again: nothing more to do
    pm4_gpu_stats stats;
    OK(pm4_gpu_get_stats(gpu, &stats)); // counters stay readable
    CHECK(stats.submissions == 1 && stats.completed == 0);
    pm4_submission_free(never);
    pm4_interrupts_free(irqs);
    pm4_stalls_free(stalls);
    pm4_gpu_free(gpu);
}

// ---------------------------------------------------------------------------
// Guest memory behind the emulator's own functions: a page table.

struct PageTable {
    std::mutex lock;
    std::unordered_map<uint64_t, std::vector<unsigned char>> pages; // 4 KiB pages
    std::atomic<int> released{0};

    unsigned char *byte(uint64_t address) {
        auto it = pages.find(address >> 12);
        return it == pages.end() ? nullptr : &it->second[address & 0xFFF];
    }
    bool mapped(uint64_t address, uint64_t len) {
        for (uint64_t a = address & ~0xFFFull; a < address + len; a += 0x1000)
            if (pages.find(a >> 12) == pages.end()) return false;
        return true;
    }
};

int32_t pt_read(void *user, uint64_t address, void *out, size_t len) {
    auto *t = static_cast<PageTable *>(user);
    std::lock_guard<std::mutex> hold(t->lock);
    if (!t->mapped(address, len)) return PM4_MEMORY_UNMAPPED;
    for (size_t i = 0; i < len; i++) static_cast<unsigned char *>(out)[i] = *t->byte(address + i);
    return PM4_MEMORY_OK;
}
int32_t pt_write(void *user, uint64_t address, const void *data, size_t len) {
    auto *t = static_cast<PageTable *>(user);
    std::lock_guard<std::mutex> hold(t->lock);
    if (!t->mapped(address, len)) return PM4_MEMORY_UNMAPPED;
    for (size_t i = 0; i < len; i++) *t->byte(address + i) = static_cast<const unsigned char *>(data)[i];
    return PM4_MEMORY_OK;
}
uint8_t pt_is_mapped(void *user, uint64_t address, uint64_t len) {
    auto *t = static_cast<PageTable *>(user);
    std::lock_guard<std::mutex> hold(t->lock);
    return t->mapped(address, len);
}
template <typename T>
int32_t pt_cas(void *user, uint64_t address, T expected, T desired, T *found) {
    auto *t = static_cast<PageTable *>(user);
    std::lock_guard<std::mutex> hold(t->lock); // one lock: indivisible
    if (!t->mapped(address, sizeof(T))) return PM4_MEMORY_UNMAPPED;
    std::memcpy(found, t->byte(address), sizeof(T));
    if (*found == expected) std::memcpy(t->byte(address), &desired, sizeof(T));
    return PM4_MEMORY_OK;
}
int32_t pt_cas32(void *u, uint64_t a, uint32_t e, uint32_t d, uint32_t *f) { return pt_cas<uint32_t>(u, a, e, d, f); }
int32_t pt_cas64(void *u, uint64_t a, uint64_t e, uint64_t d, uint64_t *f) { return pt_cas<uint64_t>(u, a, e, d, f); }
void pt_release(void *user) { static_cast<PageTable *>(user)->released++; }

void test_callback_memory() {
    PageTable table;
    for (uint64_t page = 0x10; page < 0x20; page++) table.pages[page].assign(4096, 0);
    pm4_memory_callbacks callbacks{};
    callbacks.user_data = &table;
    callbacks.read = pt_read;
    callbacks.write = pt_write;
    callbacks.is_mapped = pt_is_mapped;
    callbacks.cas32 = pt_cas32;
    callbacks.cas64 = pt_cas64;
    callbacks.release = pt_release;
    pm4_memory *memory = nullptr;
    OK(pm4_memory_new_callbacks(&callbacks, &memory));
    pm4_gpu *gpu = nullptr;
    OK(pm4_gpu_new(nullptr, memory, nullptr, &gpu)); // defaults: threaded
    pm4_memory_free(memory);                        // the GPU holds it
    Cmd c;
    c.wait_mem(0x12000, 3, 5).write(0x12010, 0xABCD).release(0x12020, 77, false);
    OK(pm4_gpu_write_memory(gpu, 0x10000, c.dw.data(), c.dw.size() * 4, nullptr));
    pm4_submission *sub = nullptr;
    OK(pm4_gpu_submit(gpu, comp(0, 1), 0x10000, c.size(), &sub));
    uint32_t five = 5;
    // The CPU writes through the emulator's own functions, then notifies.
    CHECK(pt_write(&table, 0x12000, &five, 4) == PM4_MEMORY_OK);
    OK(pm4_gpu_notify_host_write(gpu, 0x12000, 4, nullptr));
    pm4_submission_report done{};
    OK(pm4_submission_wait(sub, &done));
    uint32_t values[5] = {0, 0, 0, 0, 0};
    OK(pm4_gpu_read_memory(gpu, 0x12010, values, sizeof values));
    CHECK(values[0] == 0xABCD && values[4] == 77);
    STATUS(pm4_gpu_read_memory(gpu, 0x30000, values, 4), PM4_STATUS_UNMAPPED, "0x30000");
    pm4_submission_free(sub);
    CHECK(table.released == 0);
    pm4_gpu_free(gpu);
    CHECK(table.released == 1); // the last holder went: released once
}

// ---------------------------------------------------------------------------
// The recorder: a deterministic run recorded from C++; the Rust test
// replays the trace and compares the events with recorded.log.

struct EventLog {
    std::vector<std::string> lines;
};

void log_draw(void *user, const pm4_draw *d) {
    const char *op = nullptr;
    pm4_opcode_name(d->opcode, &op);
    char line[512];
    std::snprintf(line, sizeof line, "%s draw %s count=%u instances=%u first=%u base_vertex=%d first_instance=%u prim=%u",
                  queue_name(d->queue).c_str(), op, d->count, d->instance_count, d->first, d->base_vertex,
                  d->first_instance, d->primitive_type);
    static_cast<EventLog *>(user)->lines.push_back(line);
}
void log_dispatch(void *user, const pm4_dispatch *d) {
    const char *op = nullptr;
    pm4_opcode_name(d->opcode, &op);
    char line[512];
    std::snprintf(line, sizeof line, "%s dispatch %s dims=%u,%u,%u start=%u,%u,%u group=%u,%u,%u",
                  queue_name(d->queue).c_str(), op, d->dims[0], d->dims[1], d->dims[2], d->start[0], d->start[1],
                  d->start[2], d->threads_per_group[0], d->threads_per_group[1], d->threads_per_group[2]);
    static_cast<EventLog *>(user)->lines.push_back(line);
}
void log_fence(void *user, const pm4_fence *f) {
    const char *op = nullptr, *event = nullptr;
    pm4_opcode_name(f->opcode, &op);
    pm4_event_name(f->event_type, &event);
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s fence %s event=%s addr=0x%" PRIx64 " data=0x%" PRIx64 " data_sel=%u int_sel=%u ctxid=0x%x interrupt=%s",
                  queue_name(f->queue).c_str(), op, event, f->address, f->data, f->data_sel, f->int_sel,
                  f->int_ctxid, f->interrupt ? "true" : "false");
    static_cast<EventLog *>(user)->lines.push_back(line);
}

void test_recorder(const std::string &dir) {
    pm4_memory *flat = nullptr, *recording = nullptr;
    OK(pm4_memory_new_flat(0, 0x100000, &flat));
    pm4_recorder *recorder = nullptr;
    OK(pm4_recorder_new(flat, &recorder, &recording));
    OK(pm4_recorder_info(recorder, "description", "recorded from C++ through the C ABI"));
    EventLog log;
    pm4_backend backend{};
    backend.user_data = &log;
    backend.draw = log_draw;
    backend.dispatch = log_dispatch;
    backend.fence = log_fence;
    pm4_gpu_config config;
    OK(pm4_gpu_config_default(&config));
    config.mode = PM4_MODE_DETERMINISTIC;
    pm4_gpu *gpu = nullptr;
    OK(pm4_gpu_new(&config, recording, &backend, &gpu));
    Cmd graphics, compute;
    graphics.set_uconfig(reg("VGT_PRIMITIVE_TYPE"), {4}).draw(3).release(0x8000, 7, true).draw(6);
    compute.wait_mem(0x8000, 3, 7).dispatch(2, 3, 1).wait_mem(0x8010, 3, 1).release(0x8020, 9, false);
    OK(pm4_memory_write(flat, 0x1000, graphics.dw.data(), graphics.dw.size() * 4));
    OK(pm4_memory_write(flat, 0x2000, compute.dw.data(), compute.dw.size() * 4));
    OK(pm4_gpu_submit(gpu, 0, 0x1000, graphics.size(), nullptr));
    OK(pm4_gpu_submit(gpu, comp(0, 0), 0x2000, compute.size(), nullptr));
    uint32_t state = 0;
    pm4_stall_report *report = nullptr;
    OK(pm4_gpu_run_until_stalled(gpu, &state, &report));
    CHECK(state == PM4_RUN_STALLED && report != nullptr);
    pm4_stall_report_free(report);
    OK(pm4_recorder_note(recorder, "the host releases the compute queue"));
    uint32_t one = 1;
    OK(pm4_gpu_write_memory(gpu, 0x8010, &one, 4, nullptr));
    OK(pm4_gpu_run_until_idle(gpu));
    CHECK(log.lines.size() == 5);
    OK(pm4_recorder_save(recorder, (dir + "/recorded.pm4t").c_str()));
    STATUS(pm4_recorder_save(recorder, "/nonexistent-dir/x.pm4t"), PM4_STATUS_IO_ERROR, "/nonexistent-dir/x.pm4t");
    std::ofstream out(dir + "/recorded.log");
    for (const auto &line : log.lines) out << line << "\n";
    pm4_gpu_free(gpu);
    pm4_recorder_free(recorder);
    pm4_memory_free(recording);
    pm4_memory_free(flat);
}

// ---------------------------------------------------------------------------
// Unknown packets with their hex dump, host commands, markers, the
// disassembler.

struct Seen {
    int unknown = 0, host_commands = 0, private_packets = 0;
    std::string dump, private_name;
    std::vector<uint32_t> payload, private_payload;
    uint32_t private_code = 0, private_header = 0;
};

void on_private_packet(void *user, const pm4_private_packet *p) {
    auto *s = static_cast<Seen *>(user);
    s->private_packets++;
    s->private_name.assign(p->name, p->name_len);
    s->private_code = p->code;
    s->private_header = p->header;
    s->private_payload.assign(p->payload, p->payload + p->payload_dw);
}

void on_unknown(void *user, const pm4_unknown_packet *p) {
    auto *s = static_cast<Seen *>(user);
    s->unknown++;
    s->dump.assign(p->dump, p->dump_len);
}
void on_host_command(void *user, const pm4_host_command *c) {
    auto *s = static_cast<Seen *>(user);
    s->host_commands++;
    s->payload.assign(c->payload, c->payload + c->payload_dw);
}

void test_packets_and_disasm() {
    pm4_memory *flat = nullptr;
    OK(pm4_memory_new_flat(0, 0x10000, &flat));
    Seen seen;
    pm4_backend backend{};
    backend.user_data = &seen;
    backend.unknown_packet = on_unknown;
    backend.host_command = on_host_command;
    backend.private_packet = on_private_packet;
    pm4_host_command_entry entry{0x77, PM4_HOST_COMMAND_CUSTOM};
    // The emulator's own present: a NOP with code 0x2A in header bits [7:2].
    pm4_private_packet_class present{"EMU_PRESENT", 0x2A, 0xC000FFFCu, 0xC0001000u | (0x2Au << 2), 0, 0, 0};
    pm4_gpu_config config;
    OK(pm4_gpu_config_default(&config));
    config.mode = PM4_MODE_DETERMINISTIC;
    config.host_commands = &entry;
    config.host_command_count = 1;
    config.private_packets = &present;
    config.private_packet_count = 1;
    pm4_gpu *gpu = nullptr;
    OK(pm4_gpu_new(&config, flat, &backend, &gpu));
    Cmd c;
    c.packet(0x01, {0xDEAD, 0xBEEF}).packet(0x10, {PM4_HOST_COMMAND_SIGNATURE | 0x77, 11, 22}).write(0x8000, 3);
    c.dw.push_back(0xC0001000u | (0x2Au << 2)); // the private present, one payload dword
    c.dw.push_back(5);
    OK(pm4_memory_write(flat, 0x1000, c.dw.data(), c.dw.size() * 4));
    pm4_submission *sub = nullptr;
    OK(pm4_gpu_submit(gpu, 0, 0x1000, c.size(), &sub));
    pm4_submission_report done{};
    OK(pm4_gpu_run_until_complete(gpu, sub, &done));
    CHECK(done.packets == 4);
    CHECK(seen.private_packets == 1 && seen.private_name == "EMU_PRESENT" && seen.private_code == 0x2A);
    CHECK(seen.private_header == (0xC0001000u | (0x2Au << 2)) && seen.private_payload == std::vector<uint32_t>({5}));
    CHECK(seen.unknown == 1 && seen.dump.find(">0x000000001000: c0010100\n") != std::string::npos);
    CHECK(seen.dump.find("0000dead") != std::string::npos);
    CHECK(seen.host_commands == 1 && seen.payload == std::vector<uint32_t>({11, 22}));
    pm4_submission_free(sub);

    char text[4096];
    size_t len = 0;
    OK(pm4_disasm_buffer(c.dw.data(), c.dw.size(), 0x1000, text, sizeof text, &len));
    CHECK(len == std::strlen(text) && std::strstr(text, "WRITE_DATA") != nullptr);
    CHECK(std::strstr(text, "UNKNOWN_0x01") != nullptr);
    size_t needed = 0;
    STATUS(pm4_disasm_buffer(c.dw.data(), c.dw.size(), 0x1000, text, 8, &needed), PM4_STATUS_BUFFER_TOO_SMALL,
           "needs");
    CHECK(needed == len + 1);
    uint32_t packet_dw = 0;
    OK(pm4_disasm_packet(c.dw.data() + 3, c.dw.size() - 3, 0x100C, text, sizeof text, &len, &packet_dw));
    CHECK(packet_dw == 4 && std::strstr(text, "NOP") != nullptr && std::strstr(text, "WRITE_DATA") == nullptr);
    STATUS(pm4_disasm_buffer(c.dw.data(), c.dw.size(), 0x1002, text, sizeof text, &len), PM4_STATUS_INVALID_ARGUMENT,
           "aligned");
    pm4_gpu_free(gpu);
    pm4_memory_free(flat);
}

// ---------------------------------------------------------------------------
// Every error path: a status and a message naming the function.

const pm4_registers *kept_registers = nullptr;
void keep_registers(void *, const pm4_draw *d) { kept_registers = d->registers; }

void test_error_paths() {
    GuestRam ram;
    pm4_gpu *gpu = nullptr;
    pm4_gpu_config config;
    OK(pm4_gpu_config_default(&config));
    config.workers = 1;
    OK(pm4_gpu_new(&config, ram.memory, nullptr, &gpu));
    uint32_t value = 0;
    char buffer[64];

    // NULL handles, buffers and outputs.
    STATUS(pm4_gpu_submit(nullptr, 0, COMMANDS, 4, nullptr), PM4_STATUS_NULL_ARGUMENT, "gpu is NULL");
    STATUS(pm4_gpu_new(nullptr, nullptr, nullptr, &gpu), PM4_STATUS_NULL_ARGUMENT, "memory is NULL");
    STATUS(pm4_gpu_new(nullptr, ram.memory, nullptr, nullptr), PM4_STATUS_NULL_ARGUMENT, "out is NULL");
    STATUS(pm4_gpu_write_memory(gpu, LABELS, nullptr, 4, nullptr), PM4_STATUS_NULL_ARGUMENT, "data is NULL");
    STATUS(pm4_memory_new_flat(0, 4096, nullptr), PM4_STATUS_NULL_ARGUMENT, "out is NULL");
    STATUS(pm4_gpu_get_stats(gpu, nullptr), PM4_STATUS_NULL_ARGUMENT, "out is NULL");
    STATUS(pm4_register_index(nullptr, &value), PM4_STATUS_NULL_ARGUMENT, "name is NULL");
    STATUS(pm4_memory_new_callbacks(nullptr, nullptr), PM4_STATUS_NULL_ARGUMENT, "out is NULL");
    STATUS(pm4_gpu_on_interrupt(gpu, 0, nullptr, nullptr), PM4_STATUS_NULL_ARGUMENT, "callback is NULL");
    CHECK(pm4_last_error_copy(buffer, sizeof buffer, nullptr) == PM4_STATUS_NULL_ARGUMENT);
    // Lengths that overflow.
    STATUS(pm4_memory_read(ram.memory, GuestRam::base, buffer, SIZE_MAX), PM4_STATUS_INVALID_ARGUMENT, "overflows");
    STATUS(pm4_gpu_write_registers(gpu, 0, 0xA000, &value, SIZE_MAX / 2), PM4_STATUS_OUT_OF_RANGE, "register file");
    STATUS(pm4_gpu_notify_host_write(gpu, GuestRam::base, UINT64_MAX, nullptr), PM4_STATUS_OUT_OF_RANGE, "48-bit");
    // Unmapped guest memory, misaligned and out-of-range submissions.
    STATUS(pm4_gpu_submit(gpu, 0, 0x40, 4, nullptr), PM4_STATUS_INVALID_SUBMISSION, "unmapped guest memory at 0x40");
    STATUS(pm4_gpu_submit(gpu, 0, COMMANDS + 2, 4, nullptr), PM4_STATUS_INVALID_SUBMISSION, "not aligned");
    STATUS(pm4_gpu_submit(gpu, 0, (1ull << 48) - 4, 4, nullptr), PM4_STATUS_INVALID_SUBMISSION, "48-bit");
    STATUS(pm4_gpu_write_memory(gpu, 0x1000, &value, 4, nullptr), PM4_STATUS_UNMAPPED, "0x1000");
    STATUS(pm4_gpu_notify_host_write(gpu, 0x1000, 4, nullptr), PM4_STATUS_UNMAPPED, "0x1000");
    STATUS(pm4_memory_read(ram.memory, 0x1000, buffer, 4), PM4_STATUS_UNMAPPED, "0x1000");
    STATUS(pm4_gpu_read_memory(gpu, GuestRam::base + GuestRam::size - 2, buffer, 4), PM4_STATUS_UNMAPPED, "unmapped");
    // Bad queues.
    STATUS(pm4_gpu_submit(gpu, 57, COMMANDS, 4, nullptr), PM4_STATUS_BAD_QUEUE, "queue 57 is out of range");
    pm4_interrupts *irqs = nullptr;
    STATUS(pm4_gpu_interrupts(gpu, 99, &irqs), PM4_STATUS_BAD_QUEUE, "queue 99");
    STATUS(pm4_gpu_read_registers(gpu, 1000, 0, &value, 1), PM4_STATUS_BAD_QUEUE, "queue 1000");
    pm4_queue_status status;
    STATUS(pm4_gpu_queue_status(gpu, UINT32_MAX, &status), PM4_STATUS_BAD_QUEUE, "out of range");
    // Wrong mode.
    uint32_t state = 0;
    STATUS(pm4_gpu_run_slices(gpu, 1, &state, nullptr), PM4_STATUS_WRONG_MODE, "deterministic");

    // Bad settings and tables; a GPU not made releases no backend.
    pm4_gpu *other = nullptr;
    config.mode = 7;
    Renderer unused;
    pm4_backend releasing{};
    releasing.user_data = &unused;
    releasing.release = on_shared_release;
    STATUS(pm4_gpu_new(&config, ram.memory, &releasing, &other), PM4_STATUS_INVALID_ARGUMENT, "config->mode is 7");
    CHECK(unused.shared_released == 0);
    config.mode = PM4_MODE_THREADED;
    config.slice_packets = 0;
    STATUS(pm4_gpu_new(&config, ram.memory, nullptr, &other), PM4_STATUS_INVALID_ARGUMENT, "slice_packets");
    OK(pm4_gpu_config_default(&config));
    config.host_command_count = 2; // with a NULL table
    STATUS(pm4_gpu_new(&config, ram.memory, nullptr, &other), PM4_STATUS_NULL_ARGUMENT, "config->host_commands");
    OK(pm4_gpu_config_default(&config));
    pm4_private_packet_class nameless{nullptr, 1, 0xFFFF00FFu, 0xC0001000u, 0, 0, 0};
    config.private_packets = &nameless;
    config.private_packet_count = 1;
    STATUS(pm4_gpu_new(&config, ram.memory, nullptr, &other), PM4_STATUS_NULL_ARGUMENT,
           "config->private_packets[0].name is NULL");
    CHECK(other == nullptr); // outputs only on success
    pm4_memory_callbacks callbacks{};
    callbacks.read = pt_read;
    callbacks.write = pt_write;
    callbacks.is_mapped = pt_is_mapped;
    callbacks.cas32 = pt_cas32; // cas64 left NULL
    pm4_memory *memory = nullptr;
    STATUS(pm4_memory_new_callbacks(&callbacks, &memory), PM4_STATUS_NULL_ARGUMENT, "callbacks->cas64 is NULL");
    pm4_host_mapping skewed{GuestRam::base, reinterpret_cast<unsigned char *>(ram.words) + 1, 4096};
    STATUS(pm4_memory_new_host(&skewed, 1, &memory), PM4_STATUS_INVALID_ARGUMENT, "modulo 8");
    pm4_host_mapping overlap[2] = {{0x10000, ram.words, 0x2000}, {0x11000, ram.words + 0x1000, 0x1000}};
    STATUS(pm4_memory_new_host(overlap, 2, &memory), PM4_STATUS_INVALID_ARGUMENT, "overlap");
    STATUS(pm4_memory_new_flat(3, 4096, &memory), PM4_STATUS_MISALIGNED, "0x3");
    STATUS(pm4_memory_new_flat(0, 1ull << 40, &memory), PM4_STATUS_INVALID_ARGUMENT, "library memory");
    CHECK(memory == nullptr);
    STATUS(pm4_opcode_name(0x100, nullptr), PM4_STATUS_NULL_ARGUMENT, "name is NULL");
    const char *name = nullptr;
    STATUS(pm4_opcode_name(0x100, &name), PM4_STATUS_INVALID_ARGUMENT, "0x100");

    // Handles: freed, foreign, of another kind.
    Cmd c;
    c.write(LABELS, 1);
    ram.put(COMMANDS, c);
    pm4_submission *sub = nullptr;
    OK(pm4_gpu_submit(gpu, 0, COMMANDS, c.size(), &sub));
    OK(pm4_submission_wait(sub, nullptr));
    pm4_submission_free(sub);
    STATUS(pm4_submission_poll(sub, nullptr), PM4_STATUS_INVALID_HANDLE, "pm4_submission that was freed");
    pm4_submission_free(sub); // freeing again: nothing
    pm4_submission_free(nullptr);
    STATUS(pm4_gpu_submit(reinterpret_cast<pm4_gpu *>(uintptr_t(0x1234)), 0, COMMANDS, 4, nullptr),
           PM4_STATUS_INVALID_HANDLE, "not a pm4_gpu this library made");
    STATUS(pm4_gpu_submit(reinterpret_cast<pm4_gpu *>(ram.memory), 0, COMMANDS, 4, nullptr), PM4_STATUS_INVALID_HANDLE,
           "is a pm4_memory, not a pm4_gpu");
    pm4_stall_report *report = nullptr;
    OK(pm4_gpu_stall_report(gpu, &report));
    CHECK(report == nullptr); // not stalled

    // Registers kept past their callback.
    pm4_memory *flat = nullptr;
    OK(pm4_memory_new_flat(0, 0x10000, &flat));
    pm4_backend backend{};
    backend.draw = keep_registers;
    OK(pm4_gpu_config_default(&config));
    config.mode = PM4_MODE_DETERMINISTIC;
    OK(pm4_gpu_new(&config, flat, &backend, &other));
    Cmd d;
    d.draw(3);
    OK(pm4_memory_write(flat, 0x1000, d.dw.data(), d.dw.size() * 4));
    OK(pm4_gpu_submit(other, 0, 0x1000, d.size(), nullptr));
    OK(pm4_gpu_run_until_idle(other));
    CHECK(kept_registers != nullptr);
    STATUS(pm4_registers_get(kept_registers, 0xC242, &value), PM4_STATUS_INVALID_HANDLE, "valid during its callback");
    STATUS(pm4_registers_get(nullptr, 0xC242, &value), PM4_STATUS_NULL_ARGUMENT, "registers is NULL");
    // A stall report's bounds and a buffer too small.
    Cmd w;
    w.wait_mem(0x8000, 3, 1);
    OK(pm4_memory_write(flat, 0x2000, w.dw.data(), w.dw.size() * 4));
    OK(pm4_gpu_submit(other, 0, 0x2000, w.size(), &sub));
    STATUS(pm4_gpu_run_until_complete(other, sub, nullptr), PM4_STATUS_DEADLOCK, "deadlock: 1 queue waits");
    OK(pm4_gpu_stall_report(other, &report));
    CHECK(report != nullptr);
    pm4_queue_stall q;
    STATUS(pm4_stall_report_queue(report, 1, &q), PM4_STATUS_OUT_OF_RANGE, "entry 1 of a report of 1");
    size_t len = 0;
    STATUS(pm4_stall_report_text(report, buffer, 4, &len), PM4_STATUS_BUFFER_TOO_SMALL, "needs");
    CHECK(len > 4);
    pm4_stall_report_free(report);
    STATUS(pm4_stall_report_count(report, &len), PM4_STATUS_INVALID_HANDLE, "freed");
    pm4_submission_free(sub);
    pm4_gpu_free(other);
    STATUS(pm4_gpu_run_until_idle(other), PM4_STATUS_INVALID_HANDLE, "pm4_gpu that was freed");
    pm4_memory_free(flat);

    pm4_gpu_free(gpu);
    STATUS(pm4_gpu_submit(gpu, 0, COMMANDS, 4, nullptr), PM4_STATUS_INVALID_HANDLE, "pm4_gpu that was freed");
    pm4_gpu_free(gpu); // again: nothing
    pm4_gpu_free(nullptr);
    // The last error message stays until the next failure.
    STATUS(pm4_gpu_shutdown(nullptr), PM4_STATUS_NULL_ARGUMENT, "gpu is NULL");
    pm4_version_info version;
    OK(pm4_version(&version));
    CHECK(std::string(pm4_last_error_message()) == "pm4_gpu_shutdown: gpu is NULL");
    char copy[8];
    CHECK(pm4_last_error_copy(copy, sizeof copy, &len) == PM4_STATUS_BUFFER_TOO_SMALL);
    CHECK(len == std::strlen("pm4_gpu_shutdown: gpu is NULL") + 1);
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: capi_test OUTPUT_DIR\n");
        return 2;
    }
    pm4_version_info version;
    OK(pm4_version(&version));
    CHECK(version.abi == PM4_ABI_VERSION);
    test_error_paths();
    test_packets_and_disasm();
    test_callback_memory();
    test_recorder(argv[1]);
    test_shutdown_with_waiters();
    test_threaded_emulator();
    std::printf("capi_test: %d passed, %d failed\n", passed.load(), failed.load());
    return failed == 0 ? 0 : 1;
}
