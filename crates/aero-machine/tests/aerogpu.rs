//! AeroGPU as the machine's display function, driven by a real guest: a boot sector that
//! enters 32-bit protected mode and acts as a minimal driver through PCI configuration
//! cycles and MMIO — find A3A0:0001 by scanning bus 0, check MAGIC/ABI_VERSION, submit
//! through a ring in guest RAM, take the fence interrupt through the PIC, the IOAPIC's ISA
//! pin and its PIRQ pin (GSI 16–19), show a framebuffer and a hardware cursor through
//! scanout 0, wait for vblanks and give the screen back to the VGA. The guest reports each
//! step on COM1 (the firmware logs elsewhere).

use aero_machine::{BootDevice, Frame, Machine, MachineConfig, RunEvent};
use aero_protocol::ABI_VERSION_U32;
use aero_protocol::cmd::Opcode;
use aero_protocol::pci::{self, Format, reg};
use aero_protocol::ring::{RING_MAGIC, RingHeader, SUBMIT_FLAG_PRESENT, SubmitDesc};
use aero_protocol::writer::CmdStreamWriter;
use aero_storage::MemoryDisk;
use iced_x86::BlockEncoderOptions;
use iced_x86::code_asm::*;

/// Where things are in guest memory. The boot sector loads image bytes 0x200.. to 0x7E00,
/// so an address `a` in that range comes from image offset `a - 0x7C00`.
const BODY: u64 = 0x8000;
const RING: u64 = 0x9000;
const RING_SIZE: u32 = 0x200;
const ENTRIES: u32 = 4;
const NOP_STREAM: u64 = 0x9400;
const PRESENT_STREAM: u64 = 0x9500;
const FENCE_PAGE: u64 = 0xA000;
const IDT: u64 = 0xA800;
const IDTR: u64 = 0xB000;
const LOADED_END: u64 = 0x7E00 + 32 * 512;
const _: () = assert!(
    IDTR + 6 <= LOADED_END,
    "the IDT descriptor must be in the loaded sectors"
);
/// Guest variables.
const VAR_BAR0: u64 = 0x5000;
const VAR_IRQ_LINE: u64 = 0x5004;
const VAR_PIC_COUNT: u64 = 0x5008;
const VAR_APIC_COUNT: u64 = 0x500C;
const VAR_IRQ_SEEN: u64 = 0x5010;
/// The scanout framebuffer, filled by the guest.
const FB: u32 = 0x10_0000;
const FB_W: u32 = 64;
const FB_H: u32 = 48;
/// A 4x4 cursor whose hotspot (1, 1) sits at (10, 5).
const CURSOR_FB: u32 = 0x11_0000;
const CURSOR_DIM: u32 = 4;
const CURSOR_X: u32 = 10;
const CURSOR_Y: u32 = 5;
const CURSOR_HOT: u32 = 1;
const APIC_VECTOR: u32 = 0x41;
const PIC_BASE: u32 = 0x20;
const VBLANKS_TO_WAIT: u32 = 30;

fn image_offset(gpa: u64) -> usize {
    (gpa - 0x7C00) as usize
}

/// The GDT (null, flat code 0x08, flat data 0x10) and its descriptor, inside the boot sector.
const GDT: u64 = 0x7DC0;
const GDTR: u64 = 0x7DD8;

/// Real-mode boot sector: load 32 sectors to 0x7E00, enter flat protected mode, jump to BODY.
fn boot_sector() -> Vec<u8> {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut hang = a.create_label();
    a.cli().unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(sp, 0x7C00).unwrap();
    a.mov(ax, 0x0220).unwrap(); // read 32 sectors
    a.mov(cx, 0x0002).unwrap(); // cylinder 0, sector 2
    a.xor(dh, dh).unwrap(); // head 0, DL = boot drive
    a.mov(bx, 0x7E00).unwrap();
    a.int(0x13).unwrap();
    a.jc(hang).unwrap();
    a.lgdt(ptr(GDTR as u32)).unwrap();
    a.mov(eax, cr0).unwrap();
    a.or(eax, 1).unwrap();
    a.mov(cr0, eax).unwrap();
    // jmp far 0x08:BODY
    a.db(&[0xEA, BODY as u8, (BODY >> 8) as u8, 0x08, 0x00])
        .unwrap();
    a.set_label(&mut hang).unwrap();
    a.hlt().unwrap();
    a.jmp(hang).unwrap();
    let mut code = a.assemble(0x7C00).unwrap();
    assert!(code.len() <= image_offset(GDT), "boot sector too large");
    code.resize(512, 0);
    for (i, d) in [0u64, 0x00CF_9A00_0000_FFFF, 0x00CF_9200_0000_FFFF]
        .iter()
        .enumerate()
    {
        let off = image_offset(GDT) + 8 * i;
        code[off..off + 8].copy_from_slice(&d.to_le_bytes());
    }
    let off = image_offset(GDTR);
    code[off..off + 2].copy_from_slice(&23u16.to_le_bytes());
    code[off + 2..off + 6].copy_from_slice(&(GDT as u32).to_le_bytes());
    code[510] = 0x55;
    code[511] = 0xAA;
    code
}

/// Everything the 32-bit driver does. Returns the code and the handler addresses
/// (PIC fence handler, IOAPIC handler, default handler).
fn body() -> (Vec<u8>, u32, u32, u32) {
    let mut a = CodeAssembler::new(32).unwrap();
    let mut fail = a.create_label();
    let mut pic_handler = a.create_label();
    let mut apic_handler = a.create_label();
    let mut default_handler = a.create_label();
    let r = |off: u32| dword_ptr(esi + off);

    macro_rules! out_char {
        ($c:expr) => {
            a.mov(al, $c as i32).unwrap();
            a.mov(dx, 0x3F8).unwrap();
            a.out(dx, al).unwrap();
        };
    }
    macro_rules! check_eq {
        ($operand:expr, $value:expr, $code:expr) => {{
            let mut ok = a.create_label();
            a.cmp($operand, $value as i32).unwrap();
            a.je(ok).unwrap();
            a.mov(al, $code as i32).unwrap();
            a.jmp(fail).unwrap();
            a.set_label(&mut ok).unwrap();
            a.nop().unwrap();
        }};
    }
    // Waits (sti; hlt) until the dword at `var` reaches `n`.
    macro_rules! wait_for {
        ($var:expr, $n:expr) => {{
            let mut again = a.create_label();
            let mut done = a.create_label();
            a.set_label(&mut again).unwrap();
            a.cli().unwrap();
            a.cmp(dword_ptr($var), $n as i32).unwrap();
            a.jae(done).unwrap();
            a.sti().unwrap();
            a.hlt().unwrap();
            a.jmp(again).unwrap();
            a.set_label(&mut done).unwrap();
            a.nop().unwrap();
        }};
    }
    macro_rules! submit {
        ($tail:expr) => {
            a.mov(dword_ptr(RING + RingHeader::TAIL_OFFSET), $tail as u32)
                .unwrap();
            a.mov(r(reg::DOORBELL), 1u32).unwrap();
        };
    }

    a.mov(ax, 0x10).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(esp, 0x7000).unwrap();
    a.cld().unwrap();
    for c in b"GUEST:" {
        out_char!(*c);
    }

    // Find A3A0:0001 on bus 0 (function 0 of each device).
    let mut scan = a.create_label();
    let mut found = a.create_label();
    a.mov(ebx, 0x8000_0000u32).unwrap();
    a.set_label(&mut scan).unwrap();
    a.mov(eax, ebx).unwrap();
    a.mov(dx, 0xCF8).unwrap();
    a.out(dx, eax).unwrap();
    a.mov(dx, 0xCFC).unwrap();
    a.in_(eax, dx).unwrap();
    a.cmp(eax, 0x0001_A3A0).unwrap();
    a.je(found).unwrap();
    a.add(ebx, 0x800).unwrap();
    a.cmp(ebx, 0x8001_0000u32 as i32).unwrap();
    a.jb(scan).unwrap();
    a.mov(al, b'P' as i32).unwrap();
    a.jmp(fail).unwrap();
    a.set_label(&mut found).unwrap();
    // BAR0 and the interrupt line the firmware assigned.
    a.lea(eax, ptr(ebx + 0x10)).unwrap();
    a.mov(dx, 0xCF8).unwrap();
    a.out(dx, eax).unwrap();
    a.mov(dx, 0xCFC).unwrap();
    a.in_(eax, dx).unwrap();
    a.and(eax, 0xFFFF_FFF0u32 as i32).unwrap();
    a.mov(dword_ptr(VAR_BAR0), eax).unwrap();
    a.mov(esi, eax).unwrap();
    a.lea(eax, ptr(ebx + 0x3C)).unwrap();
    a.mov(dx, 0xCF8).unwrap();
    a.out(dx, eax).unwrap();
    a.mov(dx, 0xCFC).unwrap();
    a.in_(eax, dx).unwrap();
    a.movzx(eax, al).unwrap();
    a.mov(dword_ptr(VAR_IRQ_LINE), eax).unwrap();
    check_eq!(r(reg::MAGIC), pci::MMIO_MAGIC, b'M');
    a.mov(eax, r(reg::ABI_VERSION)).unwrap();
    a.shr(eax, 16).unwrap();
    check_eq!(eax, ABI_VERSION_U32 >> 16, b'A');
    out_char!(b'I');

    // PICs: vectors 0x20/0x28, only the cascade and our line unmasked.
    for (port, value) in [
        (0x20, 0x11),
        (0xA0, 0x11),
        (0x21, PIC_BASE),
        (0xA1, PIC_BASE + 8),
        (0x21, 4),
        (0xA1, 2),
        (0x21, 1),
        (0xA1, 1),
    ] {
        a.mov(al, value as i32).unwrap();
        a.out(port, al).unwrap();
    }
    // mask = !(1 << line) & !(1 << 2), split over master/slave
    a.mov(ecx, dword_ptr(VAR_IRQ_LINE)).unwrap();
    a.mov(eax, 1).unwrap();
    a.shl(eax, cl).unwrap();
    a.or(eax, 4).unwrap();
    a.not(eax).unwrap();
    a.out(0x21, al).unwrap();
    a.mov(al, ah).unwrap();
    a.out(0xA1, al).unwrap();
    a.lidt(ptr(IDTR)).unwrap();

    // The device: ring, fence page, interrupts.
    a.mov(r(reg::RING_GPA_LO), RING as u32).unwrap();
    a.mov(r(reg::RING_GPA_HI), 0u32).unwrap();
    a.mov(r(reg::RING_SIZE_BYTES), RING_SIZE).unwrap();
    a.mov(r(reg::FENCE_GPA_LO), FENCE_PAGE as u32).unwrap();
    a.mov(r(reg::FENCE_GPA_HI), 0u32).unwrap();
    a.mov(r(reg::IRQ_ENABLE), pci::IRQ_FENCE | pci::IRQ_ERROR)
        .unwrap();
    a.mov(r(reg::RING_CONTROL), pci::RING_CONTROL_ENABLE)
        .unwrap();
    check_eq!(r(reg::RING_CONTROL), pci::RING_CONTROL_ENABLE, b'C');

    // Submission 1: NOP, fence 1, through the PIC.
    submit!(1);
    wait_for!(VAR_PIC_COUNT, 1);
    check_eq!(r(reg::COMPLETED_FENCE_LO), 1, b'F');
    check_eq!(dword_ptr(FENCE_PAGE + 8), 1, b'G');
    check_eq!(dword_ptr(RING + RingHeader::HEAD_OFFSET), 1, b'H');
    a.mov(eax, dword_ptr(VAR_IRQ_SEEN)).unwrap();
    a.and(eax, pci::IRQ_FENCE as i32).unwrap();
    check_eq!(eax, pci::IRQ_FENCE, b'Q');
    out_char!(b'N');
    // Submission 2: PRESENT, fence 2.
    submit!(2);
    wait_for!(VAR_PIC_COUNT, 2);
    check_eq!(r(reg::COMPLETED_FENCE_LO), 2, b'F');
    check_eq!(r(reg::ERROR_COUNT), 0, b'E');
    out_char!(b'R');

    // The same line through the IOAPIC: PICs masked, LAPIC on, redirection entry for our
    // line (level-triggered, active high, to APIC 0).
    a.cli().unwrap();
    a.mov(al, 0xFF).unwrap();
    a.out(0x21, al).unwrap();
    a.out(0xA1, al).unwrap();
    a.mov(dword_ptr(0xFEE0_00F0u32), 0x1FFu32).unwrap();
    a.mov(eax, dword_ptr(VAR_IRQ_LINE)).unwrap();
    a.shl(eax, 1).unwrap();
    a.add(eax, 0x10).unwrap();
    a.mov(dword_ptr(0xFEC0_0000u32), eax).unwrap();
    a.mov(dword_ptr(0xFEC0_0010u32), APIC_VECTOR | 1 << 15)
        .unwrap();
    a.inc(eax).unwrap();
    a.mov(dword_ptr(0xFEC0_0000u32), eax).unwrap();
    a.mov(dword_ptr(0xFEC0_0010u32), 0u32).unwrap();
    submit!(3);
    wait_for!(VAR_APIC_COUNT, 1);
    check_eq!(r(reg::COMPLETED_FENCE_LO), 3, b'F');
    out_char!(b'O');

    // And through the PIIX3's direct wiring of PIRQA–D to IOAPIC inputs 16–19: slot `d`
    // INTA is PIRQ (d + 3) mod 4. The ISA pin's entry is masked first.
    a.mov(eax, dword_ptr(VAR_IRQ_LINE)).unwrap();
    a.shl(eax, 1).unwrap();
    a.add(eax, 0x10).unwrap();
    a.mov(dword_ptr(0xFEC0_0000u32), eax).unwrap();
    a.mov(dword_ptr(0xFEC0_0010u32), 1u32 << 16).unwrap();
    a.mov(eax, ebx).unwrap();
    a.shr(eax, 11).unwrap();
    a.add(eax, 3).unwrap();
    a.and(eax, 3).unwrap();
    a.add(eax, 16).unwrap();
    a.shl(eax, 1).unwrap();
    a.add(eax, 0x10).unwrap();
    a.mov(dword_ptr(0xFEC0_0000u32), eax).unwrap();
    a.mov(dword_ptr(0xFEC0_0010u32), APIC_VECTOR | 1 << 15)
        .unwrap();
    a.inc(eax).unwrap();
    a.mov(dword_ptr(0xFEC0_0000u32), eax).unwrap();
    a.mov(dword_ptr(0xFEC0_0010u32), 0u32).unwrap();
    submit!(4);
    wait_for!(VAR_APIC_COUNT, 2);
    check_eq!(r(reg::COMPLETED_FENCE_LO), 4, b'F');
    out_char!(b'G');

    // Scanout 0: a 64x48 B8G8R8X8 pattern (R = x, G = y, B = 0x80).
    a.mov(edi, FB).unwrap();
    a.xor(ecx, ecx).unwrap();
    let mut row = a.create_label();
    let mut col = a.create_label();
    a.set_label(&mut row).unwrap();
    a.xor(edx, edx).unwrap();
    a.set_label(&mut col).unwrap();
    a.mov(eax, edx).unwrap();
    a.shl(eax, 16).unwrap();
    a.mov(ah, cl).unwrap();
    a.mov(al, 0x80).unwrap();
    a.stosd().unwrap();
    a.inc(edx).unwrap();
    a.cmp(edx, FB_W as i32).unwrap();
    a.jb(col).unwrap();
    a.inc(ecx).unwrap();
    a.cmp(ecx, FB_H as i32).unwrap();
    a.jb(row).unwrap();
    a.mov(r(reg::SCANOUT0_WIDTH), FB_W).unwrap();
    a.mov(r(reg::SCANOUT0_HEIGHT), FB_H).unwrap();
    a.mov(r(reg::SCANOUT0_FORMAT), Format::B8G8R8X8Unorm as u32)
        .unwrap();
    a.mov(r(reg::SCANOUT0_PITCH_BYTES), FB_W * 4).unwrap();
    a.mov(r(reg::SCANOUT0_FB_GPA_LO), FB).unwrap();
    a.mov(r(reg::SCANOUT0_FB_GPA_HI), 0u32).unwrap();
    a.mov(r(reg::SCANOUT0_ENABLE), 1u32).unwrap();
    // An opaque white hardware cursor on top.
    a.mov(edi, CURSOR_FB).unwrap();
    a.mov(eax, 0xFFFF_FFFFu32 as i32).unwrap();
    a.mov(ecx, (CURSOR_DIM * CURSOR_DIM) as i32).unwrap();
    a.rep().stosd().unwrap();
    for (off, v) in [
        (reg::CURSOR_X, CURSOR_X),
        (reg::CURSOR_Y, CURSOR_Y),
        (reg::CURSOR_HOT_X, CURSOR_HOT),
        (reg::CURSOR_HOT_Y, CURSOR_HOT),
        (reg::CURSOR_WIDTH, CURSOR_DIM),
        (reg::CURSOR_HEIGHT, CURSOR_DIM),
        (reg::CURSOR_FORMAT, Format::B8G8R8A8Unorm as u32),
        (reg::CURSOR_PITCH_BYTES, CURSOR_DIM * 4),
        (reg::CURSOR_FB_GPA_LO, CURSOR_FB),
        (reg::CURSOR_FB_GPA_HI, 0),
        (reg::CURSOR_ENABLE, 1),
    ] {
        a.mov(r(off), v).unwrap();
    }
    out_char!(b'S');
    // Let vblanks pass (the sequence counter runs while scanout is on), then hand the
    // screen back to the VGA.
    a.mov(ebp, r(reg::SCANOUT0_VBLANK_SEQ_LO)).unwrap();
    let mut vblank = a.create_label();
    a.set_label(&mut vblank).unwrap();
    a.mov(eax, r(reg::SCANOUT0_VBLANK_SEQ_LO)).unwrap();
    a.sub(eax, ebp).unwrap();
    a.cmp(eax, VBLANKS_TO_WAIT as i32).unwrap();
    a.jb(vblank).unwrap();
    a.mov(r(reg::SCANOUT0_ENABLE), 0u32).unwrap();
    out_char!(b'D');
    let mut idle = a.create_label();
    a.set_label(&mut idle).unwrap();
    a.cli().unwrap();
    a.hlt().unwrap();
    a.jmp(idle).unwrap();

    // fail: AL = code.
    a.set_label(&mut fail).unwrap();
    a.mov(dx, 0x3F8).unwrap();
    a.out(dx, al).unwrap();
    out_char!(b'!');
    a.jmp(idle).unwrap();

    // Fence interrupt through the PIC: acknowledge the device first (the line is level
    // triggered), then EOI both PICs.
    a.set_label(&mut pic_handler).unwrap();
    a.push(eax).unwrap();
    a.push(esi).unwrap();
    a.mov(esi, dword_ptr(VAR_BAR0)).unwrap();
    a.mov(eax, r(reg::IRQ_STATUS)).unwrap();
    a.or(dword_ptr(VAR_IRQ_SEEN), eax).unwrap();
    a.mov(r(reg::IRQ_ACK), eax).unwrap();
    a.inc(dword_ptr(VAR_PIC_COUNT)).unwrap();
    a.mov(al, 0x20).unwrap();
    a.out(0xA0, al).unwrap();
    a.out(0x20, al).unwrap();
    a.pop(esi).unwrap();
    a.pop(eax).unwrap();
    a.iretd().unwrap();

    a.set_label(&mut apic_handler).unwrap();
    a.push(eax).unwrap();
    a.push(esi).unwrap();
    a.mov(esi, dword_ptr(VAR_BAR0)).unwrap();
    a.mov(eax, r(reg::IRQ_STATUS)).unwrap();
    a.mov(r(reg::IRQ_ACK), eax).unwrap();
    a.inc(dword_ptr(VAR_APIC_COUNT)).unwrap();
    a.mov(dword_ptr(0xFEE0_00B0u32), 0u32).unwrap();
    a.pop(esi).unwrap();
    a.pop(eax).unwrap();
    a.iretd().unwrap();

    // Anything else (spurious vectors included) is noted and ignored.
    a.set_label(&mut default_handler).unwrap();
    a.push(eax).unwrap();
    a.push(edx).unwrap();
    out_char!(b'?');
    a.pop(edx).unwrap();
    a.pop(eax).unwrap();
    a.iretd().unwrap();

    let res = a
        .assemble_options(BODY, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)
        .unwrap();
    let ip = |l: &CodeLabel| res.label_ip(l).unwrap() as u32;
    let (p, ap, d) = (ip(&pic_handler), ip(&apic_handler), ip(&default_handler));
    (res.inner.code_buffer, p, ap, d)
}

fn put(image: &mut [u8], gpa: u64, bytes: &[u8]) {
    let off = image_offset(gpa);
    image[off..off + bytes.len()].copy_from_slice(bytes);
}

fn idt_gate(handler: u32) -> [u8; 8] {
    let lo = 0x0008_0000 | (handler & 0xFFFF);
    let hi = (handler & 0xFFFF_0000) | 0x8E00;
    let mut g = [0u8; 8];
    g[..4].copy_from_slice(&lo.to_le_bytes());
    g[4..].copy_from_slice(&hi.to_le_bytes());
    g
}

/// The disk: boot sector, driver code, IDT, ring with three prepared descriptors and the
/// command streams they point to.
fn guest_image() -> Vec<u8> {
    let mut image = vec![0u8; 1 << 20];
    put(&mut image, 0x7C00, &boot_sector());
    let (code, pic_handler, apic_handler, default_handler) = body();
    assert!(
        BODY + code.len() as u64 <= RING,
        "driver code overlaps the ring"
    );
    put(&mut image, BODY, &code);

    // IDT: every vector to the default handler, then ours (the PIC line is only known at
    // run time, so all 16 PIC vectors go to the fence handler).
    for v in 0..256u64 {
        let h = match v as u32 {
            APIC_VECTOR => apic_handler,
            v if (PIC_BASE..PIC_BASE + 16).contains(&v) => pic_handler,
            _ => default_handler,
        };
        put(&mut image, IDT + 8 * v, &idt_gate(h));
    }
    let mut idtr = vec![0xFF, 0x07];
    idtr.extend_from_slice(&(IDT as u32).to_le_bytes());
    put(&mut image, IDTR, &idtr);

    let mut nop = CmdStreamWriter::new();
    nop.push_bare(Opcode::Nop as u32, &[]);
    let nop = nop.finish();
    let mut present = CmdStreamWriter::new();
    present.present(0);
    let present = present.finish();
    put(&mut image, NOP_STREAM, &nop);
    put(&mut image, PRESENT_STREAM, &present);
    let header = RingHeader {
        magic: RING_MAGIC,
        abi_version: ABI_VERSION_U32,
        size_bytes: RING_SIZE,
        entry_count: ENTRIES,
        entry_stride_bytes: SubmitDesc::SIZE as u32,
        ..Default::default()
    };
    put(&mut image, RING, &header.to_bytes());
    let descs = [
        (NOP_STREAM, &nop, 1, 0),
        (PRESENT_STREAM, &present, 2, SUBMIT_FLAG_PRESENT),
        (NOP_STREAM, &nop, 3, 0),
        (NOP_STREAM, &nop, 4, 0),
    ];
    for (slot, (gpa, stream, fence, flags)) in descs.into_iter().enumerate() {
        let d = SubmitDesc {
            desc_size_bytes: SubmitDesc::SIZE as u32,
            flags,
            cmd_gpa: gpa,
            cmd_size_bytes: stream.len() as u32,
            signal_fence: fence,
            ..Default::default()
        };
        put(
            &mut image,
            RING + RingHeader::SIZE as u64 + slot as u64 * SubmitDesc::SIZE as u64,
            &d.to_bytes(),
        );
    }

    image
}

fn machine(external_bios: Option<Vec<u8>>) -> Machine {
    let disk = MemoryDisk::new(guest_image(), 512, false).unwrap();
    Machine::new(MachineConfig {
        memory_bytes: 64 << 20,
        hda: Some(Box::new(disk)),
        cdrom: None,
        fda: None,
        boot_order: vec![BootDevice::HardDisk],
        external_bios,
        deterministic: true,
        ..Default::default()
    })
    .unwrap()
}

/// Runs until the guest's report (after "GUEST:") contains `marker` or fails.
fn run_until(m: &mut Machine, log: &mut String, marker: char) -> String {
    for _ in 0..400 {
        assert_eq!(m.run_for(10_000_000), RunEvent::Running);
        log.push_str(&String::from_utf8_lossy(&m.take_serial_output()));
        if let Some(at) = log.rfind("GUEST:") {
            let report = log[at + 6..].to_string();
            assert!(!report.contains('!'), "guest driver failed: {report:?}");
            if report.contains(marker) {
                return report;
            }
        }
    }
    panic!("guest never reported {marker:?}; serial: {log:?}");
}

/// The guest's scanout pattern (R = x, G = y, B = 0x80) with the white cursor on it.
fn is_pattern(frame: &Frame) -> bool {
    let cursor_x = CURSOR_X - CURSOR_HOT..CURSOR_X - CURSOR_HOT + CURSOR_DIM;
    let cursor_y = CURSOR_Y - CURSOR_HOT..CURSOR_Y - CURSOR_HOT + CURSOR_DIM;
    let expected = |x: u32, y: u32| {
        if cursor_x.contains(&x) && cursor_y.contains(&y) {
            [0xFF; 4]
        } else {
            [x as u8, y as u8, 0x80, 0xFF]
        }
    };
    (frame.width, frame.height) == (FB_W, FB_H)
        && (0..FB_H).all(|y| (0..FB_W).all(|x| frame.pixel(x, y) == Some(expected(x, y))))
}

fn drive(external_bios: Option<Vec<u8>>) {
    let mut m = machine(external_bios);
    let mut log = String::new();
    let vga_before = m.screen();
    assert!(!is_pattern(&vga_before));
    let report = run_until(&mut m, &mut log, 'S');
    assert!(report.starts_with("INROG"), "steps: {report:?}");
    assert!(!report.contains('?'), "unexpected interrupt: {report:?}");
    let frame = m.screen();
    assert!(
        is_pattern(&frame),
        "screen is not the guest's scanout: {}x{}",
        frame.width,
        frame.height
    );
    let report = run_until(&mut m, &mut log, 'D');
    assert_eq!(report, "INROGSD");
    let frame = m.screen();
    assert!(
        !is_pattern(&frame),
        "scanout disabled: the VGA output is back"
    );
    assert!(
        frame.width >= 320 && frame.height >= 200,
        "VGA frame {}x{}",
        frame.width,
        frame.height
    );
}

#[test]
fn guest_driver_on_our_bios() {
    drive(None);
}

#[test]
fn guest_driver_on_seabios() {
    let path = "/usr/share/seabios/bios.bin";
    let Ok(rom) = std::fs::read(path) else {
        eprintln!("skipped: {path} not installed");
        return;
    };
    drive(Some(rom));
}
