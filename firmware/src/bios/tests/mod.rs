//! Trap-level tests: a fake machine (`FakeHost`) and a helper that performs `INT n` the
//! way the CPU and the ROM stub would, then checks what the handler left behind.

mod cpu_boot;
mod disk_tests;
mod fake;
mod hostile_tests;
mod keyboard_tests;
mod post_tests;
mod system_tests;
mod tables_tests;

use aero_cpu::{CpuState, Reg, Seg};

use super::*;
pub use fake::FakeHost;

pub const RAM_SIZE: usize = 16 << 20;
const CALLER_CS: u16 = 0x1000;
const CALLER_IP: u16 = 0x0123;
const STACK_TOP: u16 = 0x7000;

pub struct Rig {
    pub bios: Bios,
    pub cpu: CpuState,
    pub ram: Vec<u8>,
    pub host: FakeHost,
}

/// Result of one simulated INT.
#[derive(Debug, PartialEq, Eq)]
pub enum Ret {
    /// Returned through IRET; FLAGS as popped.
    Iret { flags: u16 },
    /// The service wants to idle and be called again.
    Retry,
    /// The service jumped elsewhere (boot).
    Jumped,
}

impl Rig {
    pub fn new(host: FakeHost) -> Rig {
        Rig::with_config(BiosConfig::new(RAM_SIZE as u64), host)
    }

    pub fn with_config(config: BiosConfig, host: FakeHost) -> Rig {
        let bios = Bios::new(config).unwrap();
        let mut cpu = CpuState::at_reset();
        cpu.cr0 &= !1;
        let ram = vec![0; bios.config.ram_size as usize];
        Rig {
            bios,
            cpu,
            ram,
            host,
        }
    }

    fn push16(&mut self, v: u16) {
        let sp = (self.cpu.reg(Reg::Rsp) as u16).wrapping_sub(2);
        self.cpu.set_reg(Reg::Rsp, sp as u64);
        let at = self.cpu.seg(Seg::Ss).base as usize + sp as usize;
        self.ram[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }

    fn pop16(&mut self) -> u16 {
        let sp = self.cpu.reg(Reg::Rsp) as u16;
        let at = self.cpu.seg(Seg::Ss).base as usize + sp as usize;
        self.cpu.set_reg(Reg::Rsp, sp.wrapping_add(2) as u64);
        u16::from_le_bytes([self.ram[at], self.ram[at + 1]])
    }

    pub fn set(&mut self, r: Reg, v: u64) {
        self.cpu.set_reg(r, v);
    }
    pub fn get(&self, r: Reg) -> u64 {
        self.cpu.reg(r)
    }
    pub fn ah(&self) -> u8 {
        (self.get(Reg::Rax) >> 8) as u8
    }
    pub fn seg_real(&mut self, s: Seg, sel: u16) {
        self.cpu.load_seg_real(s, sel);
    }

    /// Enter the stub of `trap` the way the ROM does (after `push dx; push ax; out`).
    fn enter_stub(&mut self, id: TrapId) -> Result<TrapOutcome, FirmwareError> {
        self.push16(self.cpu.reg(Reg::Rdx) as u16);
        self.push16(self.cpu.reg(Reg::Rax) as u16);
        self.cpu.load_seg_real(Seg::Cs, 0xF000);
        self.cpu.rip = self.bios.layout().trap_return[&id.code()] as u64;
        self.bios.handle_trap(
            id.code() as u32,
            &mut self.cpu,
            &mut self.ram,
            &mut self.host,
        )
    }

    /// `INT vector` from CALLER_CS:CALLER_IP with the current registers.
    pub fn int(&mut self, vector: u8) -> Ret {
        self.cpu.load_seg_real(Seg::Ss, 0);
        self.cpu.set_reg(Reg::Rsp, STACK_TOP as u64);
        self.push16(self.cpu.rflags as u16);
        self.push16(CALLER_CS);
        self.push16(CALLER_IP);
        let outcome = self.enter_stub(TrapId::Int(vector)).unwrap();
        assert_eq!(outcome, TrapOutcome::Resume);
        let layout = self.bios.layout().clone();
        if self.cpu.rip == layout.idle_reenter as u64 {
            // The stub entry was pushed for the re-entry; AX/DX must be the caller's.
            let entry = self.pop16();
            assert_eq!(Some(&entry), layout.trap_entry.get(&(vector as u16)));
            return Ret::Retry;
        }
        if self.cpu.rip != layout.trap_return[&(vector as u16)] as u64 {
            return Ret::Jumped;
        }
        let ip = self.pop16();
        let cs = self.pop16();
        let flags = self.pop16();
        assert_eq!((cs, ip), (CALLER_CS, CALLER_IP), "IRET frame damaged");
        assert_eq!(
            self.cpu.reg(Reg::Rsp),
            STACK_TOP as u64,
            "stack not balanced"
        );
        Ret::Iret { flags }
    }

    /// An internal trap (POST, keyboard IRQ) with the current registers.
    pub fn internal(&mut self, id: TrapId) -> TrapOutcome {
        self.cpu.load_seg_real(Seg::Ss, 0);
        self.cpu.set_reg(Reg::Rsp, STACK_TOP as u64);
        let out = self.enter_stub(id).unwrap();
        assert_eq!(self.cpu.reg(Reg::Rsp), STACK_TOP as u64);
        out
    }

    pub fn post(&mut self) {
        assert_eq!(self.internal(TrapId::Post), TrapOutcome::Resume);
    }
}

pub fn cf(ret: &Ret) -> bool {
    matches!(ret, Ret::Iret { flags } if flags & 1 != 0)
}

pub fn zf(ret: &Ret) -> bool {
    matches!(ret, Ret::Iret { flags } if flags & 0x40 != 0)
}

#[test]
fn writes_from_outside_the_stubs_are_ignored() {
    let mut rig = Rig::new(FakeHost::new());
    rig.cpu.load_seg_real(Seg::Cs, 0x2000);
    rig.cpu.rip = 0x100;
    rig.cpu.set_reg(Reg::Rsp, 0x7000);
    let before = rig.cpu.clone();
    let out = rig
        .bios
        .handle_trap(0x13, &mut rig.cpu, &mut rig.ram, &mut rig.host)
        .unwrap();
    assert_eq!(out, TrapOutcome::Ignored);
    assert_eq!(rig.cpu, before);
    let out = rig
        .bios
        .handle_trap(0xDEAD, &mut rig.cpu, &mut rig.ram, &mut rig.host)
        .unwrap();
    assert_eq!(out, TrapOutcome::Ignored);
}

#[test]
fn stack_outside_ram_is_an_error_not_a_panic() {
    let mut rig = Rig::new(FakeHost::new());
    rig.ram.truncate(0x1000);
    rig.cpu.load_seg_real(Seg::Ss, 0);
    rig.cpu.set_reg(Reg::Rsp, 0x7000);
    rig.cpu.load_seg_real(Seg::Cs, 0xF000);
    rig.cpu.rip = rig.bios.layout().trap_return[&0x13] as u64;
    let r = rig
        .bios
        .handle_trap(0x13, &mut rig.cpu, &mut rig.ram, &mut rig.host);
    assert!(matches!(r, Err(FirmwareError::GuestMemory { .. })));
    // POST with a tiny RAM errors out too (IVT fits, BDA/EBDA do not).
    let mut rig = Rig::new(FakeHost::new());
    rig.ram.truncate(0x7100);
    rig.cpu.load_seg_real(Seg::Ss, 0);
    rig.cpu.set_reg(Reg::Rsp, 0x7000);
    rig.push16(0);
    rig.push16(0);
    rig.cpu.load_seg_real(Seg::Cs, 0xF000);
    rig.cpu.rip = rig.bios.layout().trap_return[&0x100] as u64;
    let r = rig
        .bios
        .handle_trap(0x100, &mut rig.cpu, &mut rig.ram, &mut rig.host);
    assert!(r.is_err());
}

#[test]
fn protected_mode_callers_are_refused() {
    let mut rig = Rig::new(FakeHost::new());
    rig.cpu.cr0 |= 1;
    rig.cpu.load_seg_real(Seg::Ss, 0);
    rig.cpu.set_reg(Reg::Rsp, 0x7000);
    rig.cpu.load_seg_real(Seg::Cs, 0xF000);
    rig.cpu.rip = rig.bios.layout().trap_return[&0x13] as u64;
    let r = rig
        .bios
        .handle_trap(0x13, &mut rig.cpu, &mut rig.ram, &mut rig.host);
    assert_eq!(r, Err(FirmwareError::UnsupportedMode));
}
