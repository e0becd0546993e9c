//! The GPU's settings as a C struct, with their defaults, checked and
//! turned into a `GpuConfig`.

use std::ffi::c_char;

use pm4core::gpu::{GpuConfig, WaitPolling};
use pm4core::packet::private::{PrivatePacketEntry, PrivatePackets};
use pm4core::processor::{HostCommand, ProcessorConfig, UnknownPacketPolicy};
use pm4core::GpuFamily;

use crate::args::{nanos, slice, text, to_nanos, Out};
use crate::error::{boundary, pm4_status, Error};

/// `pm4_gpu_config.mode`: a pool of worker threads runs queues as work
/// arrives.
pub const PM4_MODE_THREADED: u32 = 0;
/// `pm4_gpu_config.mode`: nothing runs unless the caller drives the GPU
/// (`pm4_gpu_run_*`); the same calls give the same interleaving, memory and
/// callbacks on every run.
pub const PM4_MODE_DETERMINISTIC: u32 = 1;

/// `pm4_gpu_config.unknown_packet_policy`: report an unknown packet and
/// skip it by its length.
pub const PM4_UNKNOWN_PACKET_SKIP: u32 = 0;
/// Report an unknown packet and stop its submission.
pub const PM4_UNKNOWN_PACKET_STOP: u32 = 1;

/// `pm4_host_command_entry.action`: present a frame (the `flip` callback).
pub const PM4_HOST_COMMAND_FLIP: u32 = 0;
/// Push a debug marker; the payload after the code dword is its text.
pub const PM4_HOST_COMMAND_PUSH_MARKER: u32 = 1;
/// Pop a debug marker.
pub const PM4_HOST_COMMAND_POP_MARKER: u32 = 2;
/// Save the context registers on the context stack.
pub const PM4_HOST_COMMAND_CONTEXT_PUSH: u32 = 3;
/// Restore the context registers saved by the last push.
pub const PM4_HOST_COMMAND_CONTEXT_POP: u32 = 4;
/// Hand the payload to the `host_command` callback.
pub const PM4_HOST_COMMAND_CUSTOM: u32 = 5;

/// The first body dword of a host-command NOP: this signature ORed with the
/// 16-bit code.
pub const PM4_HOST_COMMAND_SIGNATURE: u32 = 0x504D_0000;

/// One host-command code the emulator registers: a NOP whose first body
/// dword is `PM4_HOST_COMMAND_SIGNATURE | code` does `action`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_host_command_entry {
    pub code: u16,
    /// One of `PM4_HOST_COMMAND_*`.
    pub action: u32,
}

/// One entry of an embedder-private packet classifier: a packet whose
/// header ANDed with `header_mask` equals `header_value` (and, when
/// `match_body` is nonzero, whose first body dword ANDed with `body_mask`
/// equals `body_value`) reaches the `private_packet` callback with `code`
/// and `name` (the payload after the first body dword when `match_body` is
/// set, else the whole body), not the NOP or unknown-packet callbacks. The
/// first matching entry wins; pads and register writes are never matched.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_private_packet_class {
    /// NUL-terminated name (the disassembler shows it).
    pub name: *const c_char,
    pub code: u32,
    pub header_mask: u32,
    pub header_value: u32,
    pub match_body: u8,
    pub body_mask: u32,
    pub body_value: u32,
}

/// Settings of a GPU. Fill it with `pm4_gpu_config_default` and change
/// what you need. Durations are in nanoseconds.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_gpu_config {
    /// `PM4_MODE_THREADED` (default) or `PM4_MODE_DETERMINISTIC`.
    pub mode: u32,
    /// Threaded mode: worker threads; 0 = the available cores.
    pub workers: u32,
    /// Most packets a queue runs before the next runnable queue's turn (at
    /// least 1; default 64).
    pub slice_packets: u64,
    /// Threaded mode: most packets of a slice that starts while no queue
    /// waits (at least `slice_packets`; default 256).
    pub busy_slice_packets: u64,
    /// Deterministic mode: most packets of a slice while its queue is the
    /// only one with work (0 = `slice_packets`).
    pub lone_slice_packets: u64,
    /// Interrupts kept per queue for the host; when full the oldest is
    /// dropped and counted (default 1024).
    pub interrupt_capacity: u64,
    /// Threaded mode: how long an idle worker polls for work before it
    /// parks (default 50 µs).
    pub worker_spin_ns: u64,
    /// How long a waiting host thread polls before it blocks (default 50 µs).
    pub host_spin_ns: u64,
    /// Threaded mode: nonzero (default) to re-read suspended waits on memory
    /// for the stores nobody notifies (guest code running natively).
    pub wait_polling: u8,
    /// Delay of the first polling round after a queue suspends (default 20 µs).
    pub wait_polling_first_ns: u64,
    /// Longest interval between two polling rounds (default 1 ms).
    pub wait_polling_ceiling_ns: u64,
    /// Threaded mode: a stall is reported once it has lasted this long
    /// (default 1 ms; 0 reports every stall at once).
    pub stall_report_delay_ns: u64,
    /// Threaded mode: a stall lasting this long fails the stalled
    /// submissions with `PM4_STATUS_DEADLOCK`; 0 (default): never, a stall
    /// is only reported.
    pub stall_timeout_ns: u64,
    /// Most buffers on a queue's IB stack at once (default 8).
    pub max_ib_depth: u32,
    /// Most packets one submission may run (stops IB cycles; default 2^26).
    pub work_budget: u64,
    /// `PM4_UNKNOWN_PACKET_SKIP` (default) or `PM4_UNKNOWN_PACKET_STOP`.
    pub unknown_packet_policy: u32,
    /// Render backends writing ZPASS counts (default 16).
    pub render_backends: u32,
    /// Most unknown-packet reports a queue keeps (default 64).
    pub max_unknown_reports: u32,
    /// Nonzero: the `packet` callback sees every packet (off by default).
    pub report_packets: u8,
    /// Nonzero: an indirect buffer whose memory is not mapped is reported
    /// (`skipped_indirect_buffer`) and skipped instead of failing.
    pub skip_unmapped_ibs: u8,
    /// Global data share size in bytes (default 64 KiB).
    pub gds_bytes: u32,
    /// Host-command codes (may be NULL when the count is 0).
    pub host_commands: *const pm4_host_command_entry,
    pub host_command_count: usize,
    /// The embedder-private packet classifier: `private_packet_count`
    /// entries (copied at creation; the names too).
    pub private_packets: *const pm4_private_packet_class,
    pub private_packet_count: usize,
}

fn from_default(config: &GpuConfig) -> pm4_gpu_config {
    let p = &config.processor;
    let polling = config.wait_polling.unwrap_or_default();
    pm4_gpu_config {
        mode: PM4_MODE_THREADED,
        workers: config.workers as u32,
        slice_packets: config.slice_packets,
        busy_slice_packets: config.busy_slice_packets,
        lone_slice_packets: config.lone_slice_packets,
        interrupt_capacity: config.interrupt_capacity as u64,
        worker_spin_ns: to_nanos(config.worker_spin),
        host_spin_ns: to_nanos(config.host_spin),
        wait_polling: u8::from(config.wait_polling.is_some()),
        wait_polling_first_ns: to_nanos(polling.first),
        wait_polling_ceiling_ns: to_nanos(polling.ceiling),
        stall_report_delay_ns: to_nanos(config.stall_report_delay),
        stall_timeout_ns: config.stall_timeout.map_or(0, to_nanos),
        max_ib_depth: p.max_ib_depth as u32,
        work_budget: p.work_budget,
        unknown_packet_policy: match p.unknown_packet_policy {
            UnknownPacketPolicy::Skip => PM4_UNKNOWN_PACKET_SKIP,
            UnknownPacketPolicy::Stop => PM4_UNKNOWN_PACKET_STOP,
        },
        render_backends: p.render_backends,
        max_unknown_reports: p.max_unknown_reports as u32,
        report_packets: u8::from(p.report_packets),
        skip_unmapped_ibs: u8::from(p.skip_unmapped_ibs),
        gds_bytes: p.gds_bytes,
        host_commands: std::ptr::null(),
        host_command_count: 0,
        private_packets: std::ptr::null(),
        private_packet_count: 0,
    }
}

/// The checked settings: the Rust config and whether the GPU is threaded.
pub(crate) struct Settings {
    pub(crate) config: GpuConfig,
    pub(crate) threaded: bool,
}

/// Checks `c` and builds the GPU's settings.
///
/// # Safety
///
/// `c.host_commands` and `c.private_packets` point to their counts of
/// entries (or are NULL with a count of 0).
pub(crate) unsafe fn settings(c: &pm4_gpu_config) -> Result<Settings, Error> {
    let threaded = match c.mode {
        PM4_MODE_THREADED => true,
        PM4_MODE_DETERMINISTIC => false,
        other => {
            return Err(Error::invalid(format_args!(
                "config->mode is {other}: neither PM4_MODE_THREADED (0) nor PM4_MODE_DETERMINISTIC (1)"
            )))
        }
    };
    if c.slice_packets == 0 {
        return Err(Error::invalid("config->slice_packets is 0 (at least 1)"));
    }
    if c.busy_slice_packets < c.slice_packets {
        return Err(Error::invalid(format_args!(
            "config->busy_slice_packets ({}) is below slice_packets ({})",
            c.busy_slice_packets, c.slice_packets
        )));
    }
    if c.lone_slice_packets != 0 && c.lone_slice_packets < c.slice_packets {
        return Err(Error::invalid(format_args!(
            "config->lone_slice_packets ({}) is below slice_packets ({}) (0 means slice_packets)",
            c.lone_slice_packets, c.slice_packets
        )));
    }
    if c.max_ib_depth == 0 {
        return Err(Error::invalid("config->max_ib_depth is 0 (the submitted buffer counts: at least 1)"));
    }
    if c.wait_polling != 0 && (c.wait_polling_first_ns == 0 || c.wait_polling_ceiling_ns < c.wait_polling_first_ns) {
        return Err(Error::invalid(format_args!(
            "config->wait_polling_first_ns ({}) must be at least 1 and at most wait_polling_ceiling_ns ({})",
            c.wait_polling_first_ns, c.wait_polling_ceiling_ns
        )));
    }
    let unknown_packet_policy = match c.unknown_packet_policy {
        PM4_UNKNOWN_PACKET_SKIP => UnknownPacketPolicy::Skip,
        PM4_UNKNOWN_PACKET_STOP => UnknownPacketPolicy::Stop,
        other => {
            return Err(Error::invalid(format_args!(
                "config->unknown_packet_policy is {other}: neither PM4_UNKNOWN_PACKET_SKIP (0) nor \
                 PM4_UNKNOWN_PACKET_STOP (1)"
            )))
        }
    };
    // SAFETY: the caller's promise for the host-command table.
    let entries = unsafe { slice(c.host_commands, c.host_command_count, "config->host_commands")? };
    let mut host_commands = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let action = match e.action {
            PM4_HOST_COMMAND_FLIP => HostCommand::Flip,
            PM4_HOST_COMMAND_PUSH_MARKER => HostCommand::PushMarker,
            PM4_HOST_COMMAND_POP_MARKER => HostCommand::PopMarker,
            PM4_HOST_COMMAND_CONTEXT_PUSH => HostCommand::ContextPush,
            PM4_HOST_COMMAND_CONTEXT_POP => HostCommand::ContextPop,
            PM4_HOST_COMMAND_CUSTOM => HostCommand::Custom,
            other => {
                return Err(Error::invalid(format_args!(
                    "config->host_commands[{i}].action is {other}, not a PM4_HOST_COMMAND_* value (0..=5)"
                )))
            }
        };
        host_commands.push((e.code, action));
    }
    // SAFETY: the caller's promise for the classifier table.
    let classes = unsafe { slice(c.private_packets, c.private_packet_count, "config->private_packets")? };
    let mut entries = Vec::with_capacity(classes.len());
    for (i, class) in classes.iter().enumerate() {
        // SAFETY: the caller promises each entry's name is a NUL-terminated
        // string valid for the call (it is copied).
        let name = unsafe { text(class.name, &format!("config->private_packets[{i}].name"))? };
        let mut entry = PrivatePacketEntry::new(name, class.code).header(class.header_mask, class.header_value);
        if class.match_body != 0 {
            entry = entry.first_dword(class.body_mask, class.body_value);
        }
        entries.push(entry);
    }
    let processor = ProcessorConfig {
        max_ib_depth: c.max_ib_depth as usize,
        work_budget: c.work_budget,
        unknown_packet_policy,
        render_backends: c.render_backends,
        host_commands,
        max_unknown_reports: c.max_unknown_reports as usize,
        report_packets: c.report_packets != 0,
        skip_unmapped_ibs: c.skip_unmapped_ibs != 0,
        gds_bytes: c.gds_bytes,
        family: GpuFamily::default(),
        private_packets: PrivatePackets::new(entries),
    };
    let config = GpuConfig {
        processor,
        slice_packets: c.slice_packets,
        busy_slice_packets: c.busy_slice_packets,
        lone_slice_packets: c.lone_slice_packets,
        interrupt_capacity: usize::try_from(c.interrupt_capacity).unwrap_or(usize::MAX),
        workers: c.workers as usize,
        worker_spin: nanos(c.worker_spin_ns),
        host_spin: nanos(c.host_spin_ns),
        wait_polling: (c.wait_polling != 0)
            .then(|| WaitPolling { first: nanos(c.wait_polling_first_ns), ceiling: nanos(c.wait_polling_ceiling_ns) }),
        stall_report_delay: nanos(c.stall_report_delay_ns),
        stall_timeout: (c.stall_timeout_ns != 0).then(|| nanos(c.stall_timeout_ns)),
    };
    Ok(Settings { config, threaded })
}

/// Fills `*out` with the default settings (threaded mode, the available
/// cores, polling of un-notified stores on, stalls reported after 1 ms,
/// never declared deadlocks by themselves).
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_gpu_config_default(out: *mut pm4_gpu_config) -> pm4_status {
    boundary("pm4_gpu_config_default", || {
        let out = Out::new(out, "out")?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(from_default(&GpuConfig::default())) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_command_signature_is_the_processors() {
        assert_eq!(super::PM4_HOST_COMMAND_SIGNATURE, pm4core::processor::HOST_COMMAND_SIGNATURE);
    }
}
