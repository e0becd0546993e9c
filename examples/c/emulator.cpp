// How a C++ emulator embeds pm4core through its C ABI (the twin of
// examples/emulator.rs): it owns its guest RAM and hands the GPU the
// mapping, its CPU thread writes labels straight into that RAM and
// notifies, four host threads submit to the graphics queue and several
// compute queues, interrupts arrive per queue, waits have timeouts, and a
// stall is reported and then resolved by a CPU write.
//
// Build (see README.md, "From C and C++"):
//   cargo build --release -p pm4core-capi
//   g++ -std=c++17 -O2 -pthread examples/c/emulator.cpp -o emulator
//       $(PKG_CONFIG_PATH=capi pkg-config --cflags --libs pm4core-static)   (one line)
//   ./emulator

#include "pm4core.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

// Guest RAM: 64 MiB at guest address 0x1_0000_0000, owned by the emulator.
constexpr uint64_t RAM_BASE = 0x100000000ull;
constexpr size_t RAM_SIZE = 64u << 20;
// Where command buffers go, and where labels live.
constexpr uint64_t COMMANDS = RAM_BASE + 0x100000;
constexpr uint64_t LABELS = RAM_BASE + 0x1000000;
// Submitted frames per host thread.
constexpr uint32_t FRAMES = 50;

// A failed call ends the example with the library's message.
void check(pm4_status status, const char *what) {
    if (status != PM4_STATUS_OK) {
        std::fprintf(stderr, "%s: %s (%s)\n", what, pm4_status_str(status), pm4_last_error_message());
        std::exit(1);
    }
}

constexpr uint32_t compute(uint32_t pipe, uint32_t queue) { return 1 + pipe * 8 + queue; }

const char *queue_name(uint32_t q) {
    static char names[PM4_QUEUE_COUNT][16];
    if (q == 0) return "gfx";
    std::snprintf(names[q], sizeof names[q], "comp%u.%u", (q - 1) / 8, (q - 1) % 8);
    return names[q];
}

// The emulator's renderer: counts what it is asked to do (a real one would
// record Vulkan commands). The GPU asks it once per queue for that queue's
// own recorder, which it then calls on the worker running the queue, with
// no lock: queues record in parallel and share only these totals.
struct Renderer {
    std::atomic<uint64_t> draws{0}, dispatches{0}, fences{0}, callback_errors{0};
};

// One queue's recorder.
struct QueueRecorder {
    Renderer *renderer;
    uint32_t queue;
    void record_draw(const pm4_draw *d) {
        if (d->queue != queue) throw std::logic_error("a draw of another queue");
        renderer->draws++;
    }
};

// Callbacks are C functions: each catches its own exceptions, since none
// may cross pm4core's (Rust) frames.
void on_draw(void *user_data, const pm4_draw *d) {
    auto *q = static_cast<QueueRecorder *>(user_data);
    try {
        q->record_draw(d);
    } catch (const std::exception &e) {
        q->renderer->callback_errors++;
        std::fprintf(stderr, "draw callback: %s\n", e.what());
    }
}
void on_dispatch(void *user_data, const pm4_dispatch *) { static_cast<QueueRecorder *>(user_data)->renderer->dispatches++; }
void on_fence(void *user_data, const pm4_fence *) { static_cast<QueueRecorder *>(user_data)->renderer->fences++; }
void on_release(void *user_data) { delete static_cast<QueueRecorder *>(user_data); }

uint8_t queue_backend(void *user_data, uint32_t queue, pm4_backend *out) {
    out->user_data = new QueueRecorder{static_cast<Renderer *>(user_data), queue};
    out->draw = on_draw;
    out->dispatch = on_dispatch;
    out->fence = on_fence;
    out->release = on_release;
    return 1;
}

// Writes PM4 packets into guest RAM, like the guest's driver does.
struct CommandWriter {
    std::vector<uint32_t> words;
    CommandWriter &packet(uint32_t opcode, std::initializer_list<uint32_t> body) {
        words.push_back(0xC0000000u | ((uint32_t(body.size()) - 1) << 16) | (opcode << 8));
        words.insert(words.end(), body);
        return *this;
    }
    // WAIT_REG_MEM: until the dword at `address` is >= `value`.
    CommandWriter &wait_ge(uint64_t address, uint32_t value) {
        return packet(0x3C, {5 | (1u << 4), uint32_t(address), uint32_t(address >> 32), value, ~0u, 4});
    }
    CommandWriter &write(uint64_t address, uint32_t value) {
        return packet(0x37, {(5u << 8) | (1u << 20), uint32_t(address), uint32_t(address >> 32), value});
    }
    // RELEASE_MEM at the end of the pipe: writes `value`, raises an interrupt.
    CommandWriter &release_interrupt(uint64_t address, uint32_t value) {
        return packet(0x49, {0x28 | (5u << 8), (2u << 24) | (1u << 29), uint32_t(address), uint32_t(address >> 32),
                             value, 0, 0});
    }
    // Stores the buffer at guest `address` in the emulator's RAM; returns
    // its size in dwords.
    uint32_t store(unsigned char *ram, uint64_t address) const {
        std::memcpy(ram + (address - RAM_BASE), words.data(), words.size() * 4);
        return uint32_t(words.size());
    }
};

} // namespace

int main() {
    // The emulator's guest RAM (an mmap in a real emulator), 8-byte aligned.
    auto *ram = static_cast<unsigned char *>(std::calloc(RAM_SIZE, 1));
    if (ram == nullptr) return 1;
    auto label = [ram](uint64_t address) { return reinterpret_cast<uint32_t *>(ram + (address - RAM_BASE)); };
    pm4_host_mapping mapping{RAM_BASE, ram, RAM_SIZE};
    pm4_memory *memory = nullptr;
    check(pm4_memory_new_host(&mapping, 1, &memory), "mapping guest RAM");

    Renderer renderer;
    pm4_backend backend{};
    backend.user_data = &renderer;
    backend.queue_backend = queue_backend;
    pm4_gpu_config config;
    check(pm4_gpu_config_default(&config), "default settings");
    config.workers = 2;
    pm4_gpu *gpu = nullptr;
    check(pm4_gpu_new(&config, memory, &backend, &gpu), "making the GPU");
    pm4_memory_free(memory); // the GPU keeps its own reference
    uint32_t workers = 0;
    check(pm4_gpu_workers(gpu, &workers), "workers");
    std::printf("GPU: %u workers over %zu MiB of emulator-owned guest RAM at %#llx\n", workers, RAM_SIZE >> 20,
                static_cast<unsigned long long>(RAM_BASE));

    // Each host thread owns one queue and one label the CPU advances: frame
    // N waits until the CPU says "N", draws or dispatches, and releases.
    const uint32_t queues[4] = {PM4_QUEUE_GRAPHICS, compute(0, 0), compute(1, 0), compute(2, 3)};
    auto cpu_label = [](int t) { return LABELS + 0x100 * uint64_t(t); };
    auto fence_label = [](int t) { return LABELS + 0x100 * uint64_t(t) + 8; };
    pm4_interrupts *interrupts[4];
    for (int t = 0; t < 4; t++) check(pm4_gpu_interrupts(gpu, queues[t], &interrupts[t]), "interrupt receiver");

    std::vector<std::thread> submitters;
    uint64_t packets[4] = {0, 0, 0, 0};
    for (int t = 0; t < 4; t++) {
        submitters.emplace_back([&, t] {
            pm4_submission *last = nullptr;
            for (uint32_t frame = 1; frame <= FRAMES; frame++) {
                CommandWriter cmd;
                cmd.wait_ge(cpu_label(t), frame);
                if (queues[t] == PM4_QUEUE_GRAPHICS) cmd.packet(0x2D, {3, 2});  // DRAW_INDEX_AUTO
                else cmd.packet(0x15, {8, 8, 1, 1});                            // DISPATCH_DIRECT
                cmd.release_interrupt(fence_label(t), frame);
                uint64_t at = COMMANDS + (uint64_t(t) * FRAMES + frame) * 0x100;
                uint32_t size = cmd.store(ram, at);
                pm4_submission_free(last);
                last = nullptr;
                check(pm4_gpu_submit(gpu, queues[t], at, size, &last), "submit");
            }
            // Waits with a timeout: a frame that never comes is an answer, not a hang.
            pm4_submission_report report;
            pm4_status status;
            while ((status = pm4_submission_wait_timeout(last, 500000000ull, &report)) == PM4_STATUS_TIMEOUT)
                std::printf("%s: last frame not done after 500 ms, waiting on\n", queue_name(queues[t]));
            check(status, "the last frame");
            packets[t] = report.packets;
            pm4_submission_free(last);
        });
    }
    // The CPU thread: advances every label frame by frame, writing guest RAM
    // directly and telling the GPU which bytes it wrote.
    std::thread cpu([&] {
        for (uint32_t frame = 1; frame <= FRAMES; frame++) {
            for (int t = 0; t < 4; t++) {
                __atomic_store_n(label(cpu_label(t)), frame, __ATOMIC_RELEASE);
                check(pm4_gpu_notify_host_write(gpu, cpu_label(t), 4, nullptr), "notify");
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    for (int t = 0; t < 4; t++) {
        submitters[t].join();
        std::printf("%s: %u frames, last frame ran %llu packets\n", queue_name(queues[t]), FRAMES,
                    static_cast<unsigned long long>(packets[t]));
    }
    cpu.join();

    for (int t = 0; t < 4; t++) {
        pm4_interrupt irq;
        uint32_t got = 0;
        uint64_t last = 0;
        while (pm4_interrupts_poll(interrupts[t], &irq) == PM4_STATUS_OK) {
            got++;
            last = irq.fence.data;
        }
        std::printf("%s: %u interrupts, last fence value %llu\n", queue_name(queues[t]), got,
                    static_cast<unsigned long long>(last));
        if (got != FRAMES || __atomic_load_n(label(fence_label(t)), __ATOMIC_ACQUIRE) != FRAMES) return 1;
        pm4_interrupts_free(interrupts[t]);
    }

    // A stall: a compute queue waits for a label nobody has written yet. It
    // is reported on its own channel, the wait times out instead of failing,
    // and a CPU write resolves it.
    pm4_stalls *stalls = nullptr;
    check(pm4_gpu_stalls(gpu, &stalls), "stall receiver");
    pm4_stall_report *report = nullptr;
    int earlier = 0;
    while (pm4_stalls_poll(stalls, &report) == PM4_STATUS_OK) {
        earlier++;
        pm4_stall_report_free(report);
    }
    std::printf("%d stalls were reported while queues waited for the CPU (not errors)\n", earlier);
    const uint64_t gate = LABELS + 0x1000;
    CommandWriter cmd;
    cmd.wait_ge(gate, 1).write(gate + 4, 0x600D);
    const uint64_t at = COMMANDS + 0x800000;
    uint32_t size = cmd.store(ram, at);
    pm4_submission *waiting = nullptr;
    check(pm4_gpu_submit(gpu, compute(6, 7), at, size, &waiting), "submit");
    check(pm4_stalls_wait(stalls, 10000000000ull, &report), "the stall report");
    char text[1024];
    size_t len = 0;
    check(pm4_stall_report_text(report, text, sizeof text, &len), "the report's text");
    std::printf("stall reported: %s\n", text);
    pm4_queue_stall stall;
    check(pm4_stall_report_queue(report, 0, &stall), "the waiting queue");
    std::printf("  %s waits at packet %#llx on %#llx for %llu (it holds %llu)\n", queue_name(stall.queue),
                static_cast<unsigned long long>(stall.packet_address),
                static_cast<unsigned long long>(stall.wait.address),
                static_cast<unsigned long long>(stall.wait.reference),
                static_cast<unsigned long long>(stall.wait.current));
    pm4_stall_report_free(report);
    pm4_submission_report done;
    if (pm4_submission_wait_timeout(waiting, 20000000ull, &done) != PM4_STATUS_TIMEOUT) return 1;
    std::printf("the wait timed out (the submission still waits for the CPU)\n");
    __atomic_store_n(label(gate), 1u, __ATOMIC_RELEASE);
    check(pm4_gpu_notify_host_write(gpu, gate, 4, nullptr), "notify");
    check(pm4_submission_wait(waiting, &done), "the resolved submission");
    std::printf("after the CPU wrote the gate: %llu packets, %llu waits\n",
                static_cast<unsigned long long>(done.packets), static_cast<unsigned long long>(done.waits));
    pm4_submission_free(waiting);
    pm4_stalls_free(stalls);
    if (__atomic_load_n(label(gate + 4), __ATOMIC_ACQUIRE) != 0x600D) return 1;

    pm4_gpu_stats stats;
    check(pm4_gpu_get_stats(gpu, &stats), "counters");
    std::printf("totals: %llu submissions, %llu draws, %llu dispatches, %llu fences, %llu interrupts, "
                "%llu notifications, %llu wakes, %llu stalls\n",
                static_cast<unsigned long long>(stats.completed), static_cast<unsigned long long>(renderer.draws),
                static_cast<unsigned long long>(renderer.dispatches), static_cast<unsigned long long>(renderer.fences),
                static_cast<unsigned long long>(stats.interrupts),
                static_cast<unsigned long long>(stats.host_notifications), static_cast<unsigned long long>(stats.wakes),
                static_cast<unsigned long long>(stats.stalls));
    pm4_gpu_free(gpu); // shuts down, joins the workers, releases every recorder
    std::free(ram);     // only now: the GPU no longer uses the mapping
    return stats.completed == uint64_t(FRAMES) * 4 + 1 && renderer.callback_errors == 0 ? 0 : 1;
}
