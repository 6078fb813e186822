//! Random register contents and memory for every service: nothing may panic, and the
//! caller's IRET frame must always come back intact (checked by `Rig::int`).

use aero_cpu::{Reg, Seg};

use super::*;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn rig() -> Rig {
    let mut host = FakeHost::new().with_pc_bus();
    host.add_disk(DiskId::HardDisk(0), 4096, 512);
    host.add_disk(DiskId::Floppy(0), 2880, 512);
    host.add_disk(DiskId::Cdrom(0), 256, 2048);
    let mut rig = Rig::new(host);
    rig.post();
    rig
}

#[test]
fn random_service_calls_never_panic() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut rig = rig();
    // Fill low memory (not the IVT/BDA/stack) with noise so packets and buffers are garbage.
    for b in rig.ram[0x8000..0x20000].iter_mut() {
        *b = rng.next() as u8;
    }
    for round in 0..4000 {
        let vector = [0x13u8, 0x15, 0x16, 0x1A][round % 4];
        let ah = match vector {
            0x13 => [
                0x00, 0x01, 0x02, 0x03, 0x04, 0x08, 0x15, 0x41, 0x42, 0x43, 0x48, 0x4B, 0x18,
            ][rng.next() as usize % 13],
            0x15 => [0x24, 0x86, 0x87, 0x88, 0xC0, 0xE8, 0xE8, 0x4F][rng.next() as usize % 8],
            0x16 => [0x01, 0x02, 0x05, 0x11, 0x12][rng.next() as usize % 5],
            _ => [0x00, 0x02, 0x04, 0xB1, 0xB1, 0xB1][rng.next() as usize % 6],
        };
        let ax = (ah as u64) << 8 | (rng.next() & 0xFF);
        let ax = if ah == 0xE8 {
            0xE800 | [0x20, 0x01][rng.next() as usize % 2]
        } else {
            ax
        };
        rig.set(Reg::Rax, ax);
        for r in [Reg::Rbx, Reg::Rcx, Reg::Rsi, Reg::Rdi] {
            rig.set(r, rng.next() & 0xFFFF_FFFF);
        }
        // Mostly real drives, sometimes anything.
        let dl = if rng.next().is_multiple_of(4) {
            rng.next() & 0xFF
        } else {
            [0x00, 0x80, 0xE0][rng.next() as usize % 3]
        };
        rig.set(Reg::Rdx, (rng.next() & 0xFF00) | dl);
        if ah == 0x86 {
            rig.set(Reg::Rcx, 0);
            rig.host.step_ns = 1 << 40; // any wait is over at once
        }
        if ah == 0xE8 && ax == 0xE820 {
            rig.set(Reg::Rdx, 0x534D_4150);
        }
        rig.seg_real(Seg::Es, (rng.next() & 0xFFFF) as u16);
        rig.seg_real(Seg::Ds, (rng.next() & 0xFFFF) as u16);
        let _ = rig.int(vector);
        rig.bios.state.wait_deadline = None;
    }
    // Keyboard IRQ with every scancode, in random order, twice.
    for _ in 0..512 {
        rig.set(Reg::Rax, rng.next() & 0xFF);
        rig.internal(TrapId::KeyboardIrq);
    }
    // The machine still works afterwards: a plain read succeeds.
    rig.set(Reg::Rax, 0x0201);
    rig.set(Reg::Rcx, 0x0001);
    rig.set(Reg::Rdx, 0x0080);
    rig.set(Reg::Rbx, 0x9000);
    rig.seg_real(Seg::Es, 0);
    assert!(!cf(&rig.int(0x13)));
}
