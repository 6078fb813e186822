//! Architectural state of one CPU, as plain data.
//!
//! Everything here is what the architecture defines; caches (TLB, decoded blocks, lazy
//! flags) live in the CPU beside this struct. Firmware traps and tests read and write
//! this state directly, so RFLAGS is kept materialized whenever `Cpu::run` returns.

/// General-purpose registers in encoding order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reg {
    Rax = 0,
    Rcx,
    Rdx,
    Rbx,
    Rsp,
    Rbp,
    Rsi,
    Rdi,
    R8,
    R9,
    R10,
    R11,
    R12,
    R13,
    R14,
    R15,
}

/// Segment registers in encoding order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Seg {
    Es = 0,
    Cs,
    Ss,
    Ds,
    Fs,
    Gs,
}

/// A segment register with its hidden descriptor cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    pub selector: u16,
    pub base: u64,
    /// Byte-granular limit (already scaled when G=1).
    pub limit: u32,
    /// Descriptor attribute bits: bits 0..8 = access byte (type, S, DPL, P),
    /// bits 8..12 = AVL, L, D/B, G (descriptor bits 52..56).
    pub attr: u16,
}

impl Segment {
    /// A real-mode style segment: base = selector * 16, 64 KiB limit, present data RW.
    pub fn real_mode(selector: u16) -> Self {
        Segment {
            selector,
            base: (selector as u64) << 4,
            limit: 0xFFFF,
            attr: 0x93,
        }
    }
    pub fn dpl(&self) -> u8 {
        ((self.attr >> 5) & 3) as u8
    }
    pub fn present(&self) -> bool {
        self.attr & 0x80 != 0
    }
    /// D/B bit: 32-bit default operand size (code) or 32-bit stack (SS).
    pub fn db(&self) -> bool {
        self.attr & 0x400 != 0
    }
    /// L bit: 64-bit code segment.
    pub fn long(&self) -> bool {
        self.attr & 0x200 != 0
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DescriptorTable {
    pub base: u64,
    pub limit: u16,
}

/// The architectural register file.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuState {
    /// RAX..R15 in encoding order (index with `Reg as usize`).
    pub gpr: [u64; 16],
    pub rip: u64,
    pub rflags: u64,
    /// ES, CS, SS, DS, FS, GS (index with `Seg as usize`).
    pub seg: [Segment; 6],
    pub ldtr: Segment,
    pub tr: Segment,
    pub gdtr: DescriptorTable,
    pub idtr: DescriptorTable,
    pub cr0: u64,
    pub cr2: u64,
    pub cr3: u64,
    pub cr4: u64,
    pub cr8: u64,
    pub efer: u64,
    pub dr: [u64; 8],
    /// Current privilege level (equal to CS.RPL outside of transitions).
    pub cpl: u8,
    /// CPU is in HLT until an interrupt (or NMI/reset) arrives.
    pub halted: bool,
}

impl CpuState {
    /// State after RESET/INIT: real mode at F000:FFF0 with CS base FFFF0000.
    pub fn at_reset() -> Self {
        let mut seg = [Segment::real_mode(0); 6];
        seg[Seg::Cs as usize] = Segment {
            selector: 0xF000,
            base: 0xFFFF_0000,
            limit: 0xFFFF,
            attr: 0x9B,
        };
        let mut gpr = [0u64; 16];
        // EDX holds the processor signature after reset (family 6).
        gpr[Reg::Rdx as usize] = crate::exec::cpuid::SIGNATURE as u64;
        CpuState {
            gpr,
            rip: 0xFFF0,
            rflags: 0x2,
            seg,
            ldtr: Segment {
                selector: 0,
                base: 0,
                limit: 0xFFFF,
                attr: 0x82,
            },
            tr: Segment {
                selector: 0,
                base: 0,
                limit: 0xFFFF,
                attr: 0x8B,
            },
            gdtr: DescriptorTable {
                base: 0,
                limit: 0xFFFF,
            },
            idtr: DescriptorTable {
                base: 0,
                limit: 0x3FF,
            },
            cr0: 0x6000_0010,
            cr2: 0,
            cr3: 0,
            cr4: 0,
            cr8: 0,
            efer: 0,
            dr: [0, 0, 0, 0, 0, 0, 0xFFFF_0FF0, 0x400],
            cpl: 0,
            halted: false,
        }
    }

    pub fn reg(&self, r: Reg) -> u64 {
        self.gpr[r as usize]
    }
    pub fn set_reg(&mut self, r: Reg, v: u64) {
        self.gpr[r as usize] = v;
    }
    pub fn seg(&self, s: Seg) -> &Segment {
        &self.seg[s as usize]
    }
    /// Load a segment register the real-mode way (base = selector << 4).
    pub fn load_seg_real(&mut self, s: Seg, selector: u16) {
        let seg = &mut self.seg[s as usize];
        seg.selector = selector;
        seg.base = (selector as u64) << 4;
    }
    pub fn protected_mode(&self) -> bool {
        self.cr0 & 1 != 0
    }
    pub fn long_mode_active(&self) -> bool {
        self.efer & (1 << 10) != 0
    }
}
