//! Type-3 packet opcodes (IT_OPCODE, header bits \[15:8\]).
//!
//! [`Opcode`] is an open newtype: every byte value is representable, and
//! the names below are the gfx10.3 opcode map (plus the gfx7 forms that still
//! appear in PS5 streams). Names follow the AMD/Mesa spelling without the
//! `PKT3_` prefix.
//!
//! Which opcodes a family's command processor has is data here too:
//! [`Opcode::exists_on`] and [`Opcode::compute_only_on`] give gfx7's
//! opcode map against gfx10.3's (packets.md §2, its gfx7 column).

use std::fmt;

use crate::regs::db::GpuFamily;
use crate::regs::RegisterSpace;

/// A type-3 packet opcode.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Opcode(pub u8);

macro_rules! opcodes {
    ($($name:ident = $value:literal,)*) => {
        impl Opcode {
            $(
                #[allow(missing_docs)]
                pub const $name: Opcode = Opcode($value);
            )*
        }

        /// Name of each opcode value; `None` where the gfx10.3 map has none.
        const NAMES: [Option<&str>; 256] = {
            let mut names = [None; 256];
            $( names[$value] = Some(stringify!($name)); )*
            names
        };
    };
}

opcodes! {
    NOP = 0x10,
    SET_BASE = 0x11,
    CLEAR_STATE = 0x12,
    INDEX_BUFFER_SIZE = 0x13,
    DISPATCH_DIRECT = 0x15,
    DISPATCH_INDIRECT = 0x16,
    INDIRECT_BUFFER_END = 0x17,
    INDIRECT_BUFFER_CNST_END = 0x19,
    ATOMIC_GDS = 0x1D,
    ATOMIC_MEM = 0x1E,
    OCCLUSION_QUERY = 0x1F,
    SET_PREDICATION = 0x20,
    REG_RMW = 0x21,
    COND_EXEC = 0x22,
    PRED_EXEC = 0x23,
    DRAW_INDIRECT = 0x24,
    DRAW_INDEX_INDIRECT = 0x25,
    INDEX_BASE = 0x26,
    DRAW_INDEX_2 = 0x27,
    CONTEXT_CONTROL = 0x28,
    INDEX_TYPE = 0x2A,
    DRAW_INDIRECT_MULTI = 0x2C,
    DRAW_INDEX_AUTO = 0x2D,
    DRAW_INDEX_IMMD = 0x2E,
    NUM_INSTANCES = 0x2F,
    DRAW_INDEX_MULTI_AUTO = 0x30,
    INDIRECT_BUFFER_PRIV = 0x32,
    INDIRECT_BUFFER_CONST = 0x33,
    STRMOUT_BUFFER_UPDATE = 0x34,
    DRAW_INDEX_OFFSET_2 = 0x35,
    DRAW_PREAMBLE = 0x36,
    WRITE_DATA = 0x37,
    DRAW_INDEX_INDIRECT_MULTI = 0x38,
    MEM_SEMAPHORE = 0x39,
    DRAW_INDEX_MULTI_INST = 0x3A,
    COPY_DW = 0x3B,
    WAIT_REG_MEM = 0x3C,
    MEM_WRITE = 0x3D,
    INDIRECT_BUFFER = 0x3F,
    COPY_DATA = 0x40,
    CP_DMA = 0x41,
    PFP_SYNC_ME = 0x42,
    SURFACE_SYNC = 0x43,
    ME_INITIALIZE = 0x44,
    COND_WRITE = 0x45,
    EVENT_WRITE = 0x46,
    EVENT_WRITE_EOP = 0x47,
    EVENT_WRITE_EOS = 0x48,
    RELEASE_MEM = 0x49,
    PREAMBLE_CNTL = 0x4A,
    DISPATCH_MESH_INDIRECT_MULTI = 0x4C,
    DISPATCH_TASKMESH_GFX = 0x4D,
    DMA_DATA = 0x50,
    CONTEXT_REG_RMW = 0x51,
    GFX_CNTX_UPDATE = 0x52,
    BLK_CNTX_UPDATE = 0x53,
    PERFMON_CONTROL = 0x54,
    INCR_UPDT_STATE = 0x55,
    ONE_REG_WRITE = 0x57,
    ACQUIRE_MEM = 0x58,
    REWIND = 0x59,
    INTERRUPT = 0x5A,
    GEN_PDEPTE = 0x5B,
    INDIRECT_BUFFER_PASID = 0x5C,
    PRIME_UTCL2 = 0x5D,
    LOAD_UCONFIG_REG = 0x5E,
    LOAD_SH_REG = 0x5F,
    LOAD_CONFIG_REG = 0x60,
    LOAD_CONTEXT_REG = 0x61,
    LOAD_COMPUTE_STATE = 0x62,
    LOAD_SH_REG_INDEX = 0x63,
    LOAD_UCONFIG_REG_INDEX = 0x64,
    SET_CONFIG_REG = 0x68,
    SET_CONTEXT_REG = 0x69,
    SET_CONTEXT_REG_INDEX = 0x6A,
    SET_VGPR_REG_DI_MULTI = 0x71,
    SET_SH_REG_DI = 0x72,
    SET_CONTEXT_REG_INDIRECT = 0x73,
    SET_SH_REG_DI_MULTI = 0x74,
    GFX_PIPE_LOCK = 0x75,
    SET_SH_REG = 0x76,
    SET_SH_REG_OFFSET = 0x77,
    SET_QUEUE_REG = 0x78,
    SET_UCONFIG_REG = 0x79,
    SET_UCONFIG_REG_INDEX = 0x7A,
    FORWARD_HEADER = 0x7C,
    SCRATCH_RAM_WRITE = 0x7D,
    SCRATCH_RAM_READ = 0x7E,
    LOAD_CONST_RAM = 0x80,
    WRITE_CONST_RAM = 0x81,
    DUMP_CONST_RAM = 0x83,
    INCREMENT_CE_COUNTER = 0x84,
    INCREMENT_DE_COUNTER = 0x85,
    WAIT_ON_CE_COUNTER = 0x86,
    WAIT_ON_DE_COUNTER = 0x87,
    WAIT_ON_DE_COUNTER_DIFF = 0x88,
    SWITCH_BUFFER = 0x8B,
    DISPATCH_DRAW_PREAMBLE = 0x8C,
    DISPATCH_DRAW = 0x8D,
    GET_LOD_STATS = 0x8E,
    DRAW_MULTI_PREAMBLE_GFX101 = 0x8F,
    FRAME_CONTROL = 0x90,
    INDEX_ATTRIBUTES_INDIRECT = 0x91,
    WAIT_FOR_WRITE_CONFIRM = 0x92,
    WAIT_REG_MEM64 = 0x93,
    COND_PREEMPT = 0x94,
    HDP_FLUSH = 0x95,
    COPY_DATA_RB = 0x96,
    INVALIDATE_TLBS = 0x98,
    AQL_PACKET_GFX101 = 0x99,
    DMA_DATA_FILL_MULTI = 0x9A,
    SET_SH_REG_INDEX = 0x9B,
    DRAW_INDIRECT_COUNT_MULTI = 0x9C,
    DRAW_INDEX_INDIRECT_COUNT_MULTI = 0x9D,
    DUMP_CONST_RAM_OFFSET = 0x9E,
    LOAD_CONTEXT_REG_INDEX = 0x9F,
    SET_RESOURCES = 0xA0,
    MAP_PROCESS = 0xA1,
    MAP_QUEUES = 0xA2,
    UNMAP_QUEUES = 0xA3,
    QUERY_STATUS = 0xA4,
    RUN_LIST = 0xA5,
    MAP_PROCESS_VM = 0xA6,
    DISPATCH_TASK_STATE_INIT = 0xA9,
    DISPATCH_TASKMESH_DIRECT_ACE = 0xAA,
    CONTEXT_PUSH = 0xAB,
    CONTEXT_POP = 0xAC,
    DISPATCH_TASKMESH_INDIRECT_MULTI_ACE = 0xAD,
    EXECUTE_INDIRECT = 0xAE,
    BUILD_UNTYPED_SRD = 0xAF,
    DRAW_MULTI_PREAMBLE = 0xFE,
    AQL_PACKET = 0xFF,
}

impl Opcode {
    /// The opcode's name in the gfx10.3 map, if it has one.
    #[inline]
    pub const fn name(self) -> Option<&'static str> {
        NAMES[self.0 as usize]
    }

    /// True when the gfx10.3 opcode map names this value.
    #[inline]
    pub const fn is_known(self) -> bool {
        self.name().is_some()
    }

    /// Looks an opcode up by its name (`"SET_SH_REG"`), or by `0xNN`.
    pub fn from_name(name: &str) -> Option<Opcode> {
        if let Some(hex) = name.strip_prefix("0x").or_else(|| name.strip_prefix("0X")) {
            return u8::from_str_radix(hex, 16).ok().map(Opcode);
        }
        let name = name.strip_prefix("PKT3_").unwrap_or(name);
        // Common aliases used by other decoders.
        let name = match name {
            "INDIRECT_BUFFER_CIK" => "INDIRECT_BUFFER",
            "INDIRECT_BUFFER_CNST" => "INDIRECT_BUFFER_CONST",
            other => other,
        };
        (0..=255u8).map(Opcode).find(|op| op.name() == Some(name))
    }

    /// The register space the opcode's register offsets are relative to:
    /// the SET_*_REG, LOAD_*_REG and their _INDEX forms, CONTEXT_REG_RMW,
    /// SET_CONTEXT_REG_INDIRECT and SET_SH_REG_OFFSET. The one place that
    /// says which space an opcode writes.
    pub const fn register_space(self) -> Option<RegisterSpace> {
        match self {
            Opcode::SET_CONFIG_REG | Opcode::LOAD_CONFIG_REG => Some(RegisterSpace::CONFIG),
            Opcode::SET_CONTEXT_REG
            | Opcode::SET_CONTEXT_REG_INDEX
            | Opcode::LOAD_CONTEXT_REG
            | Opcode::LOAD_CONTEXT_REG_INDEX
            | Opcode::CONTEXT_REG_RMW
            | Opcode::SET_CONTEXT_REG_INDIRECT => Some(RegisterSpace::CONTEXT),
            Opcode::SET_SH_REG
            | Opcode::SET_SH_REG_INDEX
            | Opcode::LOAD_SH_REG
            | Opcode::LOAD_SH_REG_INDEX
            | Opcode::SET_SH_REG_OFFSET => Some(RegisterSpace::SH),
            Opcode::SET_UCONFIG_REG
            | Opcode::SET_UCONFIG_REG_INDEX
            | Opcode::LOAD_UCONFIG_REG
            | Opcode::LOAD_UCONFIG_REG_INDEX => Some(RegisterSpace::UCONFIG),
            _ => None,
        }
    }

    /// True for the plain register writers (SET_CONFIG/CONTEXT/SH/UCONFIG_REG
    /// and their _INDEX forms): dw0 holds the offset, the values follow.
    pub const fn writes_register_run(self) -> bool {
        matches!(
            self,
            Opcode::SET_CONFIG_REG
                | Opcode::SET_CONTEXT_REG
                | Opcode::SET_CONTEXT_REG_INDEX
                | Opcode::SET_SH_REG
                | Opcode::SET_SH_REG_INDEX
                | Opcode::SET_UCONFIG_REG
                | Opcode::SET_UCONFIG_REG_INDEX
        )
    }

    /// Every named opcode, in numeric order.
    pub fn all_named() -> impl Iterator<Item = Opcode> {
        (0..=255u8).map(Opcode).filter(|op| op.is_known())
    }

    /// True when `family`'s command processor has this opcode: every named
    /// opcode on gfx10.3; on gfx7 the named ones but those gfx7 lacks
    /// ([`GFX7_ABSENT`]). A CP meets an opcode it does not have as it meets
    /// an unnamed one: an unknown packet.
    ///
    /// ```
    /// use pm4core::packet::Opcode;
    /// use pm4core::GpuFamily;
    ///
    /// assert!(Opcode::EVENT_WRITE_EOP.exists_on(GpuFamily::Gfx7));
    /// assert!(!Opcode::SET_UCONFIG_REG_INDEX.exists_on(GpuFamily::Gfx7));
    /// assert!(Opcode::SET_UCONFIG_REG_INDEX.exists_on(GpuFamily::Gfx103));
    /// assert_eq!(Opcode::PRIME_UTCL2.name_on(GpuFamily::Gfx7), None);
    /// ```
    pub const fn exists_on(self, family: GpuFamily) -> bool {
        if !self.is_known() {
            return false;
        }
        match family {
            GpuFamily::Gfx103 => true,
            GpuFamily::Gfx7 => !contains(&GFX7_ABSENT, self),
        }
    }

    /// The opcode's name in `family`'s opcode map: [`Opcode::name`] when
    /// the family has the opcode ([`Opcode::exists_on`]), else `None`.
    pub const fn name_on(self, family: GpuFamily) -> Option<&'static str> {
        if self.exists_on(family) {
            self.name()
        } else {
            None
        }
    }

    /// True when `family`'s CP runs this opcode on compute rings only, so
    /// that a graphics ring meets it as an unknown packet: on gfx7
    /// RELEASE_MEM ("GFX8 [compute ring only]", Mesa `sid.h`), REWIND
    /// ("CIK [compute ring only]") and SET_QUEUE_REG ([`GFX7_COMPUTE_ONLY`]).
    /// Always false on gfx10.3, whose rings differ only in the packets the
    /// compute rings lack (the same on both families: the processor's
    /// graphics-only table).
    pub const fn compute_only_on(self, family: GpuFamily) -> bool {
        match family {
            GpuFamily::Gfx103 => false,
            GpuFamily::Gfx7 => contains(&GFX7_COMPUTE_ONLY, self),
        }
    }
}

const fn contains(list: &[Opcode], op: Opcode) -> bool {
    let mut i = 0;
    while i < list.len() {
        if list[i].0 == op.0 {
            return true;
        }
        i += 1;
    }
    false
}

/// The named opcodes gfx7's command processor does not have (packets.md
/// §2, gfx7 column "no", "gfx6 only", "VI+" or "gfx9+"; and the gfx9+
/// kernel and queue-management packets the column leaves empty): gfx6
/// leftovers, the gfx8/gfx9 additions (the _INDEX loaders and writers,
/// DUMP_CONST_RAM_OFFSET, WAIT_REG_MEM64, PRIME_UTCL2, FRAME_CONTROL), and
/// everything gfx10 brought (mesh and task, dispatch-draw, PERFMON_CONTROL,
/// WAIT_FOR_WRITE_CONFIRM, CONTEXT_PUSH/POP, the gfx10.1/10.3 encodings).
pub const GFX7_ABSENT: [Opcode; 44] = [
    Opcode::DRAW_INDEX_IMMD,
    Opcode::INDIRECT_BUFFER_PRIV,
    Opcode::DRAW_INDEX_MULTI_INST,
    Opcode::MEM_WRITE,
    Opcode::DISPATCH_MESH_INDIRECT_MULTI,
    Opcode::DISPATCH_TASKMESH_GFX,
    Opcode::PERFMON_CONTROL,
    Opcode::ONE_REG_WRITE,
    Opcode::PRIME_UTCL2,
    Opcode::LOAD_SH_REG_INDEX,
    Opcode::LOAD_UCONFIG_REG_INDEX,
    Opcode::SET_CONTEXT_REG_INDEX,
    Opcode::SET_UCONFIG_REG_INDEX,
    Opcode::WAIT_ON_DE_COUNTER,
    Opcode::DISPATCH_DRAW_PREAMBLE,
    Opcode::DISPATCH_DRAW,
    Opcode::DRAW_MULTI_PREAMBLE_GFX101,
    Opcode::FRAME_CONTROL,
    Opcode::WAIT_FOR_WRITE_CONFIRM,
    Opcode::WAIT_REG_MEM64,
    Opcode::COND_PREEMPT,
    Opcode::HDP_FLUSH,
    Opcode::COPY_DATA_RB,
    Opcode::INVALIDATE_TLBS,
    Opcode::AQL_PACKET_GFX101,
    Opcode::DMA_DATA_FILL_MULTI,
    Opcode::DUMP_CONST_RAM_OFFSET,
    Opcode::LOAD_CONTEXT_REG_INDEX,
    Opcode::SET_RESOURCES,
    Opcode::MAP_PROCESS,
    Opcode::MAP_QUEUES,
    Opcode::UNMAP_QUEUES,
    Opcode::QUERY_STATUS,
    Opcode::RUN_LIST,
    Opcode::MAP_PROCESS_VM,
    Opcode::DISPATCH_TASK_STATE_INIT,
    Opcode::DISPATCH_TASKMESH_DIRECT_ACE,
    Opcode::CONTEXT_PUSH,
    Opcode::CONTEXT_POP,
    Opcode::DISPATCH_TASKMESH_INDIRECT_MULTI_ACE,
    Opcode::EXECUTE_INDIRECT,
    Opcode::BUILD_UNTYPED_SRD,
    Opcode::DRAW_MULTI_PREAMBLE,
    Opcode::AQL_PACKET,
];

/// The opcodes gfx7 runs on compute rings only (packets.md §2: RELEASE_MEM
/// "compute ring only", REWIND "compute only on CIK", SET_QUEUE_REG a
/// compute-queue register write). The gfx10-only packets that are also
/// compute-only there are absent on gfx7 altogether.
pub const GFX7_COMPUTE_ONLY: [Opcode; 3] = [Opcode::RELEASE_MEM, Opcode::REWIND, Opcode::SET_QUEUE_REG];

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "UNKNOWN_{:#04x}", self.0),
        }
    }
}

impl fmt::Debug for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({:#04x})", self, self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for op in Opcode::all_named() {
            let name = op.name().unwrap();
            assert_eq!(Opcode::from_name(name), Some(op), "{name}");
        }
        assert_eq!(Opcode::from_name("INDIRECT_BUFFER_CIK"), Some(Opcode::INDIRECT_BUFFER));
        assert_eq!(Opcode::from_name("0x3c"), Some(Opcode::WAIT_REG_MEM));
        assert_eq!(Opcode(0x01).to_string(), "UNKNOWN_0x01");
        assert_eq!(Opcode::WAIT_REG_MEM.to_string(), "WAIT_REG_MEM");
    }
}
