//! Local APIC in xAPIC mode (MMIO page at 0xFEE00000 by default), one per CPU.
//!
//! Follows the Intel SDM vol. 3A chapter 10 (now 11) "Advanced Programmable Interrupt
//! Controller": ID, version, TPR/APR/PPR, EOI (with EOI broadcast to the IOAPIC for
//! level-triggered vectors), LDR/DFR logical destinations, SVR (software enable, spurious
//! vector), ISR/TMR/IRR, ESR (write to latch), ICR (fixed/NMI/INIT/SIPI IPIs with
//! shorthands), the LVT (timer, thermal, performance, LINT0, LINT1, error), and the timer
//! in one-shot, periodic and TSC-deadline modes with the divide configuration register.
//!
//! The timer's bus clock is 1 GHz (one count per nanosecond before the divider), like
//! QEMU's, so guests calibrate it as usual against the PIT or HPET.
//!
//! Everything that concerns other CPUs or devices is handed to the machine:
//! IPIs ([`LocalApic::take_ipi`]), INIT/SIPI/NMI for this CPU ([`LocalApic::take_init`],
//! [`LocalApic::take_sipi`], [`LocalApic::take_nmi`]) and EOI broadcasts for the IOAPIC
//! ([`LocalApic::take_eoi_broadcast`]). PIC interrupts reach the CPU while
//! [`LocalApic::pic_passthrough`] holds (APIC hardware-disabled, or LINT0 in ExtINT mode).
//! As in QEMU, the BSP's LINT0 starts in ExtINT mode (virtual wire), which firmware would
//! otherwise program, so legacy guests run unchanged. x2APIC is not implemented.

use std::collections::VecDeque;

use super::{Mmio, Timed};

pub const DEFAULT_BASE: u64 = 0xFEE0_0000;
/// Version 0x14 (integrated APIC), 6 LVT entries (max LVT index 5).
const VERSION: u32 = 0x0005_0014;

const REG_ID: u64 = 0x020;
const REG_VERSION: u64 = 0x030;
const REG_TPR: u64 = 0x080;
const REG_APR: u64 = 0x090;
const REG_PPR: u64 = 0x0A0;
const REG_EOI: u64 = 0x0B0;
const REG_RRD: u64 = 0x0C0;
const REG_LDR: u64 = 0x0D0;
const REG_DFR: u64 = 0x0E0;
const REG_SVR: u64 = 0x0F0;
const REG_ISR: u64 = 0x100;
const REG_TMR: u64 = 0x180;
const REG_IRR: u64 = 0x200;
const REG_ESR: u64 = 0x280;
const REG_ICR_LOW: u64 = 0x300;
const REG_ICR_HIGH: u64 = 0x310;
const REG_LVT_TIMER: u64 = 0x320;
const REG_LVT_ERROR: u64 = 0x370;
const REG_TIMER_INITIAL: u64 = 0x380;
const REG_TIMER_CURRENT: u64 = 0x390;
const REG_TIMER_DIVIDE: u64 = 0x3E0;

const LVT_TIMER: usize = 0;
const LVT_LINT0: usize = 3;
const LVT_LINT1: usize = 4;
const LVT_ERROR: usize = 5;
const LVT_MASKED: u32 = 1 << 16;
/// Writable bits per LVT entry: timer, thermal, perf, LINT0, LINT1, error.
const LVT_WRITABLE: [u32; 6] = [
    0x0007_10FF,
    0x0001_07FF,
    0x0001_07FF,
    0x0001_A7FF,
    0x0001_A7FF,
    0x0001_00FF,
];

const SVR_ENABLE: u32 = 1 << 8;
const ESR_SEND_ILLEGAL_VECTOR: u32 = 1 << 5;
const ESR_RECEIVE_ILLEGAL_VECTOR: u32 = 1 << 6;
const ESR_ILLEGAL_REGISTER: u32 = 1 << 7;

const APIC_BASE_BSP: u64 = 1 << 8;
const APIC_BASE_ENABLE: u64 = 1 << 11;
const MAX_QUEUED_IPIS: usize = 16;

/// Delivery mode of an interrupt message or LVT entry (SDM encoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryMode {
    Fixed,
    LowestPriority,
    Smi,
    Nmi,
    Init,
    StartUp,
    ExtInt,
    Reserved,
}

impl DeliveryMode {
    pub fn from_bits(bits: u32) -> DeliveryMode {
        match bits & 7 {
            0 => DeliveryMode::Fixed,
            1 => DeliveryMode::LowestPriority,
            2 => DeliveryMode::Smi,
            4 => DeliveryMode::Nmi,
            5 => DeliveryMode::Init,
            6 => DeliveryMode::StartUp,
            7 => DeliveryMode::ExtInt,
            _ => DeliveryMode::Reserved,
        }
    }
}

/// ICR destination shorthand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shorthand {
    None,
    SelfOnly,
    AllIncludingSelf,
    AllExcludingSelf,
}

/// An IPI written to the ICR that the machine must route to other CPUs (IPIs aimed only at
/// this CPU with fixed delivery are handled internally and not reported).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipi {
    pub vector: u8,
    pub mode: DeliveryMode,
    pub logical: bool,
    pub level_assert: bool,
    pub level_triggered: bool,
    pub shorthand: Shorthand,
    pub destination: u8,
}

/// A 256-bit vector register (IRR, ISR, TMR).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct VectorSet([u32; 8]);

impl VectorSet {
    fn set(&mut self, vector: u8, on: bool) {
        let word = &mut self.0[usize::from(vector >> 5)];
        let bit = 1u32 << (vector & 31);
        if on {
            *word |= bit;
        } else {
            *word &= !bit;
        }
    }
    fn contains(&self, vector: u8) -> bool {
        self.0[usize::from(vector >> 5)] & (1 << (vector & 31)) != 0
    }
    fn highest(&self) -> Option<u8> {
        (0..8).rev().find_map(|word| {
            let bits = self.0[word];
            (bits != 0).then(|| (word as u8) * 32 + (31 - bits.leading_zeros() as u8))
        })
    }
    fn word(&self, index: usize) -> u32 {
        self.0.get(index).copied().unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimerMode {
    OneShot,
    Periodic,
    TscDeadline,
}

/// One CPU's local APIC.
#[derive(Clone, Debug)]
pub struct LocalApic {
    apic_base_msr: u64,
    id: u8,
    tpr: u8,
    ldr: u32,
    dfr: u32,
    svr: u32,
    irr: VectorSet,
    isr: VectorSet,
    tmr: VectorSet,
    esr_pending: u32,
    esr: u32,
    icr_low: u32,
    icr_high: u32,
    lvt: [u32; 6],
    lint_levels: [bool; 2],
    timer_initial: u32,
    timer_divide_reg: u32,
    /// Time the current count run started and the count at that moment.
    timer_base_ns: u64,
    timer_base_count: u32,
    timer_armed: bool,
    tsc_deadline_ns: Option<u64>,
    now_ns: u64,
    nmi_pending: bool,
    init_pending: bool,
    sipi_vector: Option<u8>,
    ipis: VecDeque<Ipi>,
    eoi_broadcasts: VectorSet,
}

impl LocalApic {
    /// The local APIC of the CPU with `apic_id`; `bsp` marks the bootstrap processor.
    pub fn new(apic_id: u8, bsp: bool) -> LocalApic {
        let mut lapic = LocalApic {
            apic_base_msr: DEFAULT_BASE | APIC_BASE_ENABLE | if bsp { APIC_BASE_BSP } else { 0 },
            id: apic_id,
            tpr: 0,
            ldr: 0,
            dfr: 0xFFFF_FFFF,
            svr: 0xFF,
            irr: VectorSet::default(),
            isr: VectorSet::default(),
            tmr: VectorSet::default(),
            esr_pending: 0,
            esr: 0,
            icr_low: 0,
            icr_high: 0,
            lvt: [LVT_MASKED; 6],
            lint_levels: [false; 2],
            timer_initial: 0,
            timer_divide_reg: 0,
            timer_base_ns: 0,
            timer_base_count: 0,
            timer_armed: false,
            tsc_deadline_ns: None,
            now_ns: 0,
            nmi_pending: false,
            init_pending: false,
            sipi_vector: None,
            ipis: VecDeque::new(),
            eoi_broadcasts: VectorSet::default(),
        };
        if bsp {
            lapic.lvt[LVT_LINT0] = 0x700; // ExtINT, unmasked: virtual wire mode
        }
        lapic
    }

    pub fn id(&self) -> u8 {
        self.id
    }

    /// The IA32_APIC_BASE MSR value.
    pub fn apic_base_msr(&self) -> u64 {
        self.apic_base_msr
    }

    /// Physical base of the MMIO page.
    pub fn mmio_base(&self) -> u64 {
        self.apic_base_msr & 0x000F_FFFF_FFFF_F000
    }

    /// WRMSR IA32_APIC_BASE: relocation and the global enable (x2APIC bit ignored).
    pub fn set_apic_base_msr(&mut self, value: u64) {
        let bsp = self.apic_base_msr & APIC_BASE_BSP;
        self.apic_base_msr = (value & (0x000F_FFFF_FFFF_F000 | APIC_BASE_ENABLE)) | bsp;
        if !self.hardware_enabled() {
            // A globally disabled APIC loses its state, as after a reset.
            let fresh = LocalApic::new(self.id, bsp != 0);
            *self = LocalApic {
                apic_base_msr: self.apic_base_msr,
                now_ns: self.now_ns,
                ..fresh
            };
            self.lvt[LVT_LINT0] = LVT_MASKED;
        }
    }

    fn hardware_enabled(&self) -> bool {
        self.apic_base_msr & APIC_BASE_ENABLE != 0
    }

    fn software_enabled(&self) -> bool {
        self.hardware_enabled() && self.svr & SVR_ENABLE != 0
    }

    /// Legacy PIC interrupts go straight to the CPU (INTA to the 8259).
    pub fn pic_passthrough(&self) -> bool {
        let lint0 = self.lvt[LVT_LINT0];
        !self.hardware_enabled()
            || (lint0 & LVT_MASKED == 0
                && DeliveryMode::from_bits(lint0 >> 8) == DeliveryMode::ExtInt)
    }

    /// Physical or logical destination match (flat or cluster model) for routed messages.
    pub fn matches_destination(&self, destination: u8, logical: bool) -> bool {
        if !logical {
            return destination == 0xFF || destination == self.id;
        }
        let ldr = (self.ldr >> 24) as u8;
        if self.dfr >> 28 == 0xF {
            ldr & destination != 0
        } else {
            // Cluster model: high nibble is the cluster (15 = broadcast), low nibble a mask.
            let same_cluster = destination >> 4 == 0xF || destination >> 4 == ldr >> 4;
            same_cluster && (destination & ldr & 0x0F) != 0
        }
    }

    /// A fixed or lowest-priority interrupt routed to this CPU (from the IOAPIC, MSI or an
    /// IPI): latches `vector` in IRR, recording the trigger mode in TMR.
    pub fn deliver_fixed(&mut self, vector: u8, level_triggered: bool) {
        if vector < 16 {
            self.report_error(ESR_RECEIVE_ILLEGAL_VECTOR);
            return;
        }
        if !self.software_enabled() {
            tracing::debug!(
                vector,
                "lapic: fixed interrupt dropped while software-disabled"
            );
            return;
        }
        self.irr.set(vector, true);
        self.tmr.set(vector, level_triggered);
    }

    /// A non-fixed message routed to this CPU.
    pub fn deliver(&mut self, mode: DeliveryMode, vector: u8, level_triggered: bool) {
        match mode {
            DeliveryMode::Fixed | DeliveryMode::LowestPriority => {
                self.deliver_fixed(vector, level_triggered)
            }
            DeliveryMode::Nmi => self.nmi_pending = true,
            DeliveryMode::Init => self.init_pending = true,
            DeliveryMode::StartUp => self.sipi_vector = Some(vector),
            DeliveryMode::Smi => tracing::warn!("lapic: SMI not supported, ignored"),
            DeliveryMode::ExtInt | DeliveryMode::Reserved => {
                tracing::debug!(?mode, "lapic: message mode ignored")
            }
        }
    }

    /// LINT0/LINT1 input pin level (pin 0 or 1), handled per its LVT entry.
    pub fn set_lint(&mut self, pin: u8, level: bool) {
        let index = match pin {
            0 => LVT_LINT0,
            1 => LVT_LINT1,
            _ => return,
        };
        let Some(previous) = self.lint_levels.get_mut(usize::from(pin)) else {
            return;
        };
        let rising = level && !*previous;
        *previous = level;
        let entry = self.lvt[index];
        if entry & LVT_MASKED != 0 {
            return;
        }
        let level_triggered = entry & (1 << 15) != 0;
        match DeliveryMode::from_bits(entry >> 8) {
            DeliveryMode::Fixed if rising || (level_triggered && level) => {
                self.deliver_fixed(entry as u8, level_triggered)
            }
            DeliveryMode::Nmi if rising => self.nmi_pending = true,
            DeliveryMode::Init if rising => self.init_pending = true,
            _ => {} // ExtINT: see pic_passthrough
        }
    }

    fn ppr(&self) -> u8 {
        let isrv = self.isr.highest().unwrap_or(0);
        if self.tpr & 0xF0 >= isrv & 0xF0 {
            self.tpr
        } else {
            isrv & 0xF0
        }
    }

    /// The vector the CPU would take now (IRR above the processor priority), if any.
    pub fn pending_vector(&self) -> Option<u8> {
        if !self.software_enabled() {
            return None;
        }
        let vector = self.irr.highest()?;
        (vector & 0xF0 > self.ppr() & 0xF0).then_some(vector)
    }

    /// Interrupt acknowledge: moves the highest deliverable vector from IRR to ISR and
    /// returns it, or the spurious vector when nothing is deliverable any more.
    pub fn acknowledge(&mut self) -> u8 {
        match self.pending_vector() {
            Some(vector) => {
                self.irr.set(vector, false);
                self.isr.set(vector, true);
                vector
            }
            None => self.svr as u8,
        }
    }

    /// An NMI for this CPU (LINT1 or an NMI IPI) arrived since the last call.
    pub fn take_nmi(&mut self) -> bool {
        std::mem::take(&mut self.nmi_pending)
    }

    /// An INIT for this CPU arrived since the last call.
    pub fn take_init(&mut self) -> bool {
        std::mem::take(&mut self.init_pending)
    }

    /// A start-up IPI's vector (the CPU starts at `vector << 12`).
    pub fn take_sipi(&mut self) -> Option<u8> {
        self.sipi_vector.take()
    }

    /// The next IPI the machine must route.
    pub fn take_ipi(&mut self) -> Option<Ipi> {
        self.ipis.pop_front()
    }

    /// A level-triggered vector was EOI'd: the IOAPIC clears its remote IRR for it.
    pub fn take_eoi_broadcast(&mut self) -> Option<u8> {
        let vector = self.eoi_broadcasts.highest()?;
        self.eoi_broadcasts.set(vector, false);
        Some(vector)
    }

    /// The task priority register (MOV from CR8 reads `tpr() >> 4` in 64-bit mode).
    pub fn tpr(&self) -> u8 {
        self.tpr
    }

    /// Sets the task priority (MOV to CR8 writes `cr8 << 4`).
    pub fn set_tpr(&mut self, value: u8) {
        self.tpr = value;
    }

    /// WRMSR IA32_TSC_DEADLINE, converted by the machine to virtual ns (0 disarms).
    pub fn set_tsc_deadline_ns(&mut self, deadline_ns: u64) {
        self.tsc_deadline_ns = (deadline_ns != 0).then_some(deadline_ns);
    }

    fn report_error(&mut self, bit: u32) {
        self.esr_pending |= bit;
        let entry = self.lvt[LVT_ERROR];
        if entry & LVT_MASKED == 0 {
            let vector = entry as u8;
            if vector >= 16 && self.software_enabled() {
                self.irr.set(vector, true);
                self.tmr.set(vector, false);
            }
        }
    }

    fn timer_mode(&self) -> TimerMode {
        match (self.lvt[LVT_TIMER] >> 17) & 3 {
            1 => TimerMode::Periodic,
            2 => TimerMode::TscDeadline,
            _ => TimerMode::OneShot,
        }
    }

    fn timer_divisor(&self) -> u64 {
        let code = (self.timer_divide_reg & 3) | ((self.timer_divide_reg >> 1) & 4);
        if code == 7 { 1 } else { 2 << code }
    }

    /// Count at `now` and the virtual time of the next expiry, for the count-down modes.
    fn timer_state(&self, now: u64) -> (u32, Option<u64>) {
        if !self.timer_armed || self.timer_mode() == TimerMode::TscDeadline {
            return (0, None);
        }
        let divisor = self.timer_divisor();
        let ticks = now.saturating_sub(self.timer_base_ns) / divisor;
        let base_count = u64::from(self.timer_base_count);
        let first_expiry = self.timer_base_ns.saturating_add(base_count * divisor);
        if ticks < base_count {
            return ((base_count - ticks) as u32, Some(first_expiry));
        }
        match self.timer_mode() {
            TimerMode::Periodic if self.timer_initial != 0 => {
                let initial = u64::from(self.timer_initial);
                let into_period = (ticks - base_count) % initial;
                let periods_done = (ticks - base_count) / initial + 1;
                let next =
                    first_expiry.saturating_add(periods_done.saturating_mul(initial * divisor));
                ((initial - into_period) as u32, Some(next))
            }
            _ => (0, None),
        }
    }

    /// Restarts counting from the current count (after a divide change).
    fn rebase_timer(&mut self) {
        let (count, _) = self.timer_state(self.now_ns);
        if self.timer_armed && count > 0 {
            self.timer_base_ns = self.now_ns;
            self.timer_base_count = count;
        }
    }

    fn fire_timer(&mut self) {
        let entry = self.lvt[LVT_TIMER];
        if entry & LVT_MASKED == 0 {
            self.deliver_fixed(entry as u8, false);
        }
    }

    fn read_register(&self, register: u64) -> u32 {
        match register {
            REG_ID => u32::from(self.id) << 24,
            REG_VERSION => VERSION,
            REG_TPR => u32::from(self.tpr),
            REG_APR => 0,
            REG_PPR => u32::from(self.ppr()),
            REG_RRD => 0,
            REG_LDR => self.ldr,
            REG_DFR => self.dfr,
            REG_SVR => self.svr,
            0x100..=0x170 => self.isr.word(((register - REG_ISR) >> 4) as usize),
            0x180..=0x1F0 => self.tmr.word(((register - REG_TMR) >> 4) as usize),
            0x200..=0x270 => self.irr.word(((register - REG_IRR) >> 4) as usize),
            REG_ESR => self.esr,
            REG_ICR_LOW => self.icr_low,
            REG_ICR_HIGH => self.icr_high,
            0x320..=REG_LVT_ERROR => self.lvt[((register - REG_LVT_TIMER) >> 4) as usize],
            REG_TIMER_INITIAL => self.timer_initial,
            REG_TIMER_CURRENT => self.timer_state(self.now_ns).0,
            REG_TIMER_DIVIDE => self.timer_divide_reg,
            _ => 0,
        }
    }

    fn write_register(&mut self, register: u64, value: u32) {
        match register {
            REG_ID => self.id = (value >> 24) as u8,
            REG_TPR => self.tpr = value as u8,
            REG_EOI => self.eoi(),
            REG_LDR => self.ldr = value & 0xFF00_0000,
            REG_DFR => self.dfr = value | 0x0FFF_FFFF,
            REG_SVR => self.write_svr(value),
            REG_ESR => {
                // A write latches the errors collected since the previous write.
                self.esr = std::mem::take(&mut self.esr_pending);
            }
            REG_ICR_LOW => {
                self.icr_low = value & 0x000C_CFFF;
                self.send_ipi();
            }
            REG_ICR_HIGH => self.icr_high = value & 0xFF00_0000,
            0x320..=REG_LVT_ERROR => {
                self.write_lvt(((register - REG_LVT_TIMER) >> 4) as usize, value)
            }
            REG_TIMER_INITIAL => {
                self.timer_initial = value;
                self.timer_base_ns = self.now_ns;
                self.timer_base_count = value;
                self.timer_armed = value != 0 && self.timer_mode() != TimerMode::TscDeadline;
            }
            REG_TIMER_DIVIDE => {
                self.rebase_timer();
                self.timer_divide_reg = value & 0xB;
            }
            REG_VERSION | REG_APR | REG_PPR | REG_RRD | REG_TIMER_CURRENT | 0x100..=0x270 => {}
            _ => self.report_error(ESR_ILLEGAL_REGISTER),
        }
    }

    fn write_svr(&mut self, value: u32) {
        self.svr = value & 0x3FF;
        if self.svr & SVR_ENABLE == 0 {
            for entry in &mut self.lvt {
                *entry |= LVT_MASKED;
            }
        }
    }

    fn write_lvt(&mut self, index: usize, value: u32) {
        let Some(&writable) = LVT_WRITABLE.get(index) else {
            return;
        };
        let mut value = value & writable;
        if self.svr & SVR_ENABLE == 0 {
            value |= LVT_MASKED; // masks stay set while software-disabled
        }
        let old_mode = self.timer_mode();
        self.lvt[index] = value;
        let new_mode = self.timer_mode();
        let deadline_switch =
            (old_mode == TimerMode::TscDeadline) != (new_mode == TimerMode::TscDeadline);
        if index == LVT_TIMER && deadline_switch {
            // Entering or leaving TSC-deadline mode disarms the timer (SDM 10.5.4.1);
            // one-shot <-> periodic keeps counting.
            self.timer_armed = false;
            self.tsc_deadline_ns = None;
        }
    }

    fn eoi(&mut self) {
        let Some(vector) = self.isr.highest() else {
            return;
        };
        self.isr.set(vector, false);
        if self.tmr.contains(vector) {
            self.eoi_broadcasts.set(vector, true);
        }
    }

    fn send_ipi(&mut self) {
        let low = self.icr_low;
        let ipi = Ipi {
            vector: low as u8,
            mode: DeliveryMode::from_bits(low >> 8),
            logical: low & (1 << 11) != 0,
            level_assert: low & (1 << 14) != 0,
            level_triggered: low & (1 << 15) != 0,
            shorthand: match (low >> 18) & 3 {
                0 => Shorthand::None,
                1 => Shorthand::SelfOnly,
                2 => Shorthand::AllIncludingSelf,
                _ => Shorthand::AllExcludingSelf,
            },
            destination: (self.icr_high >> 24) as u8,
        };
        if matches!(ipi.mode, DeliveryMode::Fixed | DeliveryMode::LowestPriority) && ipi.vector < 16
        {
            self.report_error(ESR_SEND_ILLEGAL_VECTOR);
            return;
        }
        if ipi.mode == DeliveryMode::Init && ipi.level_triggered && !ipi.level_assert {
            return; // INIT level de-assert: no effect on modern processors
        }
        let to_self = match ipi.shorthand {
            Shorthand::SelfOnly | Shorthand::AllIncludingSelf => true,
            Shorthand::AllExcludingSelf => false,
            Shorthand::None => self.matches_destination(ipi.destination, ipi.logical),
        };
        if to_self {
            self.deliver(ipi.mode, ipi.vector, false);
        }
        let to_others = match ipi.shorthand {
            Shorthand::SelfOnly => false,
            Shorthand::None => ipi.logical || ipi.destination != self.id,
            _ => true,
        };
        if to_others {
            if self.ipis.len() >= MAX_QUEUED_IPIS {
                self.ipis.pop_front();
                tracing::warn!("lapic: IPI queue overflow, oldest IPI dropped");
            }
            self.ipis.push_back(ipi);
        }
    }
}

impl Mmio for LocalApic {
    fn mmio_read(&mut self, offset: u64, size: u8) -> u64 {
        let register = offset & 0xFF0;
        let value = u64::from(self.read_register(register));
        // Narrow reads see part of the 32-bit register; bytes 4–15 of a slot read as 0.
        let shift = (offset & 0xF) * 8;
        if shift >= 32 {
            0
        } else {
            (value >> shift) & super::size_mask(size)
        }
    }

    fn mmio_write(&mut self, offset: u64, size: u8, value: u64) {
        if offset & 0xF != 0 || size < 4 {
            tracing::debug!(offset, size, "lapic: non-dword write ignored");
            return;
        }
        self.write_register(offset & 0xFF0, value as u32);
    }
}

impl Timed for LocalApic {
    fn advance(&mut self, now_ns: u64) {
        if now_ns <= self.now_ns {
            return;
        }
        let previous = self.now_ns;
        if let (_, Some(expiry)) = self.timer_state(previous)
            && expiry <= now_ns
        {
            if self.timer_mode() == TimerMode::OneShot {
                self.timer_armed = false;
            }
            self.fire_timer();
        }
        if let Some(deadline) = self.tsc_deadline_ns
            && self.timer_mode() == TimerMode::TscDeadline
            && deadline <= now_ns
        {
            self.tsc_deadline_ns = None;
            self.fire_timer();
        }
        self.now_ns = now_ns;
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        if self.lvt[LVT_TIMER] & LVT_MASKED != 0 {
            return None;
        }
        match self.timer_mode() {
            TimerMode::TscDeadline => self.tsc_deadline_ns,
            _ => self.timer_state(self.now_ns).1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(apic: &mut LocalApic, reg: u64) -> u32 {
        apic.mmio_read(reg, 4) as u32
    }

    fn write(apic: &mut LocalApic, reg: u64, value: u32) {
        apic.mmio_write(reg, 4, u64::from(value));
    }

    fn enabled() -> LocalApic {
        let mut apic = LocalApic::new(0, true);
        write(&mut apic, REG_SVR, 0x1FF);
        apic
    }

    #[test]
    fn reset_values() {
        let mut apic = LocalApic::new(2, false);
        assert_eq!(read(&mut apic, REG_ID), 0x0200_0000);
        assert_eq!(read(&mut apic, REG_VERSION), 0x0005_0014);
        assert_eq!(read(&mut apic, REG_DFR), 0xFFFF_FFFF);
        assert_eq!(read(&mut apic, REG_SVR), 0xFF);
        assert_eq!(read(&mut apic, 0x350), LVT_MASKED);
        assert_eq!(apic.apic_base_msr(), 0xFEE0_0800);
        assert!(!apic.pic_passthrough(), "AP: LINT0 masked");
        let bsp = LocalApic::new(0, true);
        assert_eq!(bsp.apic_base_msr(), 0xFEE0_0900);
        assert!(bsp.pic_passthrough(), "BSP starts in virtual wire mode");
        assert_eq!(apic.mmio_read(REG_VERSION, 1), 0x14);
        assert_eq!(apic.mmio_read(REG_VERSION + 2, 2), 0x0005);
    }

    #[test]
    fn priority_tpr_ppr_and_eoi() {
        let mut apic = enabled();
        apic.deliver_fixed(0x41, false);
        apic.deliver_fixed(0x82, false);
        assert_eq!(apic.pending_vector(), Some(0x82));
        assert_eq!(apic.acknowledge(), 0x82);
        assert_eq!(read(&mut apic, REG_PPR), 0x80);
        assert_eq!(
            apic.pending_vector(),
            None,
            "0x41 is below the in-service class"
        );
        apic.deliver_fixed(0x85, false);
        assert_eq!(apic.pending_vector(), None, "same class as in service");
        write(&mut apic, REG_EOI, 0);
        assert_eq!(read(&mut apic, REG_ISR + 0x40), 0);
        assert_eq!(apic.acknowledge(), 0x85);
        write(&mut apic, REG_EOI, 0);
        write(&mut apic, REG_TPR, 0x50);
        assert_eq!(read(&mut apic, REG_PPR), 0x50);
        assert_eq!(apic.pending_vector(), None, "TPR blocks class 4");
        assert_eq!(apic.acknowledge(), 0xFF, "spurious vector");
        write(&mut apic, REG_TPR, 0x30);
        assert_eq!(apic.acknowledge(), 0x41);
        assert_eq!(read(&mut apic, REG_IRR + 0x20), 0);
        assert_eq!(read(&mut apic, REG_ISR + 0x20), 1 << 1);
    }

    #[test]
    fn cr8_view_of_tpr() {
        let mut apic = enabled();
        apic.deliver_fixed(0x51, false);
        apic.set_tpr(0x5 << 4);
        assert_eq!(read(&mut apic, REG_TPR), 0x50);
        assert_eq!(apic.pending_vector(), None);
        apic.set_tpr(0x4 << 4);
        assert_eq!(apic.tpr() >> 4, 4);
        assert_eq!(apic.pending_vector(), Some(0x51));
    }

    #[test]
    fn level_triggered_eoi_broadcasts() {
        let mut apic = enabled();
        apic.deliver_fixed(0x30, true);
        assert_eq!(read(&mut apic, REG_TMR + 0x10), 1 << 16);
        assert_eq!(apic.acknowledge(), 0x30);
        write(&mut apic, REG_EOI, 0);
        assert_eq!(apic.take_eoi_broadcast(), Some(0x30));
        assert_eq!(apic.take_eoi_broadcast(), None);
        apic.deliver_fixed(0x31, false);
        apic.acknowledge();
        write(&mut apic, REG_EOI, 0);
        assert_eq!(
            apic.take_eoi_broadcast(),
            None,
            "edge vectors do not broadcast"
        );
    }

    #[test]
    fn software_disabled_drops_and_masks() {
        let mut apic = LocalApic::new(0, true);
        apic.deliver_fixed(0x40, false);
        assert_eq!(apic.pending_vector(), None);
        write(&mut apic, REG_LVT_TIMER, 0x20);
        assert_eq!(read(&mut apic, REG_LVT_TIMER), LVT_MASKED | 0x20);
        write(&mut apic, REG_SVR, 0x1FF);
        write(&mut apic, REG_SVR, 0x0FF);
        assert_eq!(
            read(&mut apic, 0x350) & LVT_MASKED,
            LVT_MASKED,
            "disable masks LINT0"
        );
        assert!(!apic.pic_passthrough());
    }

    #[test]
    fn timer_one_shot_expiry() {
        let mut apic = enabled();
        write(&mut apic, REG_TIMER_DIVIDE, 0x3); // divide by 16
        write(&mut apic, REG_LVT_TIMER, 0xEF);
        write(&mut apic, REG_TIMER_INITIAL, 1000);
        assert_eq!(apic.next_deadline_ns(), Some(16_000));
        apic.advance(8_000);
        assert_eq!(read(&mut apic, REG_TIMER_CURRENT), 500);
        apic.advance(15_999);
        assert_eq!(apic.pending_vector(), None);
        apic.advance(16_000);
        assert_eq!(read(&mut apic, REG_TIMER_CURRENT), 0);
        assert_eq!(apic.pending_vector(), Some(0xEF));
        assert_eq!(apic.next_deadline_ns(), None);
        apic.acknowledge();
        write(&mut apic, REG_EOI, 0);
        apic.advance(100_000);
        assert_eq!(apic.pending_vector(), None, "one-shot fires once");
    }

    #[test]
    fn timer_periodic_and_divide_by_one() {
        let mut apic = enabled();
        write(&mut apic, REG_TIMER_DIVIDE, 0xB); // divide by 1
        write(&mut apic, REG_LVT_TIMER, (1 << 17) | 0x30);
        write(&mut apic, REG_TIMER_INITIAL, 250);
        apic.advance(250);
        assert_eq!(apic.acknowledge(), 0x30);
        write(&mut apic, REG_EOI, 0);
        assert_eq!(apic.next_deadline_ns(), Some(500));
        apic.advance(600);
        assert_eq!(read(&mut apic, REG_TIMER_CURRENT), 150);
        assert_eq!(apic.acknowledge(), 0x30);
        write(&mut apic, REG_EOI, 0);
        assert_eq!(apic.next_deadline_ns(), Some(750));
        // Masked timer: no deadline, no interrupt, but the count keeps running.
        write(&mut apic, REG_LVT_TIMER, (1 << 17) | LVT_MASKED | 0x30);
        assert_eq!(apic.next_deadline_ns(), None);
        apic.advance(2_000);
        assert_eq!(apic.pending_vector(), None);
        assert_eq!(read(&mut apic, REG_TIMER_CURRENT), 250);
        // Writing 0 stops the timer.
        write(&mut apic, REG_TIMER_INITIAL, 0);
        assert_eq!(read(&mut apic, REG_TIMER_CURRENT), 0);
    }

    #[test]
    fn mode_switches_and_arming() {
        let mut apic = enabled();
        write(&mut apic, REG_TIMER_DIVIDE, 0xB);
        write(&mut apic, REG_LVT_TIMER, 0x40);
        write(&mut apic, REG_TIMER_INITIAL, 100);
        write(&mut apic, REG_LVT_TIMER, (1 << 17) | 0x40);
        apic.advance(50);
        assert_eq!(
            read(&mut apic, REG_TIMER_CURRENT),
            50,
            "one-shot -> periodic keeps counting"
        );
        write(&mut apic, REG_LVT_TIMER, (2 << 17) | 0x40);
        assert_eq!(
            read(&mut apic, REG_TIMER_CURRENT),
            0,
            "TSC-deadline disarms"
        );
        write(&mut apic, REG_TIMER_INITIAL, 100);
        assert_eq!(
            read(&mut apic, REG_TIMER_CURRENT),
            0,
            "initial count ignored in TSC-deadline mode"
        );
        assert_eq!(apic.next_deadline_ns(), None);
    }

    #[test]
    fn divide_change_keeps_current_count() {
        let mut apic = enabled();
        write(&mut apic, REG_TIMER_DIVIDE, 0x0); // by 2
        write(&mut apic, REG_LVT_TIMER, 0x40);
        write(&mut apic, REG_TIMER_INITIAL, 100);
        apic.advance(100);
        assert_eq!(read(&mut apic, REG_TIMER_CURRENT), 50);
        write(&mut apic, REG_TIMER_DIVIDE, 0x1); // by 4
        assert_eq!(apic.next_deadline_ns(), Some(100 + 50 * 4));
    }

    #[test]
    fn tsc_deadline_mode() {
        let mut apic = enabled();
        write(&mut apic, REG_LVT_TIMER, (2 << 17) | 0x50);
        apic.set_tsc_deadline_ns(5_000);
        assert_eq!(apic.next_deadline_ns(), Some(5_000));
        apic.advance(4_999);
        assert_eq!(apic.pending_vector(), None);
        apic.advance(5_000);
        assert_eq!(apic.pending_vector(), Some(0x50));
        assert_eq!(apic.next_deadline_ns(), None);
    }

    #[test]
    fn icr_self_ipi_and_remote_ipis() {
        let mut apic = enabled();
        write(&mut apic, REG_ICR_LOW, (1 << 18) | 0x61);
        assert_eq!(apic.pending_vector(), Some(0x61));
        assert_eq!(apic.take_ipi(), None, "self IPI stays local");
        // INIT then SIPI to APIC 1.
        write(&mut apic, REG_ICR_HIGH, 0x0100_0000);
        write(&mut apic, REG_ICR_LOW, 0x0000_4500);
        write(&mut apic, REG_ICR_LOW, 0x0000_8500); // INIT de-assert: ignored
        write(&mut apic, REG_ICR_LOW, 0x0000_4608);
        let init = apic.take_ipi().expect("INIT");
        assert_eq!(
            (init.mode, init.destination, init.level_assert),
            (DeliveryMode::Init, 1, true)
        );
        let sipi = apic.take_ipi().expect("SIPI");
        assert_eq!((sipi.mode, sipi.vector), (DeliveryMode::StartUp, 0x08));
        assert_eq!(apic.take_ipi(), None);
        assert_eq!(
            read(&mut apic, REG_ICR_LOW) & (1 << 12),
            0,
            "delivery status idle"
        );
        // All-excluding-self NMI.
        write(&mut apic, REG_ICR_LOW, (3 << 18) | 0x400);
        assert_eq!(
            apic.take_ipi().map(|i| i.shorthand),
            Some(Shorthand::AllExcludingSelf)
        );
        assert!(!apic.take_nmi());
        // Illegal vector.
        write(&mut apic, REG_ICR_LOW, (1 << 18) | 0x05);
        write(&mut apic, REG_ESR, 0);
        assert_eq!(read(&mut apic, REG_ESR), ESR_SEND_ILLEGAL_VECTOR);
        write(&mut apic, REG_ESR, 0);
        assert_eq!(read(&mut apic, REG_ESR), 0);
    }

    #[test]
    fn logical_destinations() {
        let mut apic = enabled();
        write(&mut apic, REG_LDR, 0x0400_0000);
        assert!(apic.matches_destination(0x06, true));
        assert!(!apic.matches_destination(0x01, true));
        write(&mut apic, REG_DFR, 0x0FFF_FFFF); // cluster model
        write(&mut apic, REG_LDR, 0x2100_0000);
        assert!(apic.matches_destination(0x21, true));
        assert!(apic.matches_destination(0xF1, true));
        assert!(!apic.matches_destination(0x11, true));
        assert!(apic.matches_destination(0xFF, false));
        assert!(!apic.matches_destination(0x03, false));
    }

    #[test]
    fn lint_pins() {
        let mut apic = enabled();
        write(&mut apic, 0x360, 0x400); // LINT1: NMI
        apic.set_lint(1, true);
        assert!(apic.take_nmi());
        apic.set_lint(1, true);
        assert!(!apic.take_nmi(), "edge only");
        write(&mut apic, 0x350, 0x700);
        assert!(apic.pic_passthrough());
        write(&mut apic, 0x350, 0x10700);
        assert!(!apic.pic_passthrough());
        apic.set_apic_base_msr(0xFEE0_0000);
        assert!(
            apic.pic_passthrough(),
            "globally disabled APIC passes the PIC through"
        );
        assert_eq!(apic.mmio_base(), 0xFEE0_0000);
    }

    #[test]
    fn bogus_accesses_are_harmless() {
        let mut apic = enabled();
        for offset in (0..0x1000).step_by(4) {
            apic.mmio_write(offset, 4, 0xFFFF_FFFF);
            apic.mmio_read(offset, 8);
            apic.mmio_write(offset, 1, 0xFF);
        }
        apic.advance(u64::MAX);
        let _ = apic.next_deadline_ns();
        let _ = apic.acknowledge();
        apic.set_lint(7, true);
    }
}
