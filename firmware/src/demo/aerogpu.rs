//! A minimal real-mode AeroGPU driver for the demo: finds A3A0:0001 with PCI
//! configuration mechanism #1, checks MAGIC and the ABI major version in BAR0, sets up
//! a submission ring and a fence page in low RAM, takes the fence interrupt on the PCI
//! interrupt line (an IVT handler, the line unmasked in the BIOS-programmed PICs) and
//! shows a 640×480 B8G8R8X8 framebuffer in RAM through scanout 0. The first frame is a
//! device clear + present (an executor writes the cleared framebuffer back at PRESENT);
//! the picture is then drawn by the CPU over it, and every redraw is presented (VSYNC
//! paced). The device draws only the cube (`mesh`), whose frames write back just its
//! box, so presents leave the CPU's pixels alone.
//!
//! MMIO is reached through the flat ES of `enter_flat`, so every register access runs
//! with interrupts off between `enter_flat` and the next STI.
//!
//! The ABI numbers come from `aero-protocol`; the unit tests check them, and the
//! command streams, against the device model and its command processor.

use iced_x86::code_asm::*;

use super::draw::{GRADIENT, read_ticks};
use super::mesh;
use super::payload::{b, d, puts, strings, variables, w};
use super::{DemoError, LOAD_SEGMENT};
use crate::asm16::Asm;

use aero_protocol::cmd::{
    CLEAR_COLOR, CMD_STREAM_MAGIC, Opcode, PRESENT_FLAG_VSYNC, RESOURCE_USAGE_RENDER_TARGET,
    RESOURCE_USAGE_SCANOUT,
};
pub(crate) use aero_protocol::pci::reg;
use aero_protocol::pci::{self as abi, IRQ_ERROR, IRQ_FENCE, RING_CONTROL_ENABLE};
use aero_protocol::ring::{ALLOC_TABLE_MAGIC, RING_MAGIC, SUBMIT_FLAG_NO_IRQ, SUBMIT_FLAG_PRESENT};

const VENDOR_DEVICE: u32 = (abi::DEVICE_ID as u32) << 16 | abi::VENDOR_ID as u32;
pub(crate) const MMIO_MAGIC: u32 = abi::MMIO_MAGIC;
pub(crate) const ABI_MAJOR: u32 = aero_protocol::ABI_MAJOR;
#[cfg(test)]
pub(crate) const ABI_MINOR: u32 = aero_protocol::ABI_MINOR;
const ABI_VERSION: u32 = aero_protocol::ABI_VERSION_U32;
pub(crate) const FORMAT_B8G8R8X8: u32 = abi::Format::B8G8R8X8Unorm as u32;

const OP_NOP: u32 = Opcode::Nop as u32;
const OP_DEBUG_MARKER: u32 = Opcode::DebugMarker as u32;
const OP_CLEAR: u32 = Opcode::Clear as u32;
const OP_PRESENT: u32 = Opcode::Present as u32;
const OP_PRESENT_EX: u32 = Opcode::PresentEx as u32;
const OP_CREATE_TEXTURE2D: u32 = Opcode::CreateTexture2d as u32;
const OP_SET_RENDER_TARGETS: u32 = Opcode::SetRenderTargets as u32;
/// The scanout texture's handle and the allocation backing it (the framebuffer).
pub(crate) const FB_TEXTURE: u32 = 1;
pub(crate) const FB_ALLOC_ID: u32 = 1;

/// Guest memory the driver owns: ring (header + entries) and fence page in low RAM,
/// the framebuffer at 2 MiB (A20 is on).
const RING: u32 = 0x3_0000;
const RING_SIZE: u32 = 0x1000;
const RING_HEADER: u32 = 64;
const ENTRIES: u32 = 8;
const DESC_SIZE: u32 = 64;
const FENCE_PAGE: u32 = 0x3_1000;
pub(crate) const FB: u32 = 0x20_0000;
pub(crate) const FB_W: u32 = 640;
pub(crate) const FB_H: u32 = 480;
const FB_PITCH: u32 = FB_W * 4;
/// Real-mode BIOS PIC vector bases (master IRQ 0–7, slave IRQ 8–15).
const MASTER_BASE: u32 = 0x08;
const SLAVE_BASE: u32 = 0x70;
/// BIOS ticks (18.2 Hz) a fence may take before the driver gives up.
const FENCE_TIMEOUT_TICKS: i32 = 37;

/// A command stream: header, then packets.
fn stream(packets: &[(u32, Vec<u32>)]) -> Vec<u8> {
    let body: Vec<u8> = packets
        .iter()
        .flat_map(|(op, payload)| {
            let size = 8 + 4 * payload.len() as u32;
            [*op, size]
                .into_iter()
                .chain(payload.iter().copied())
                .flat_map(u32::to_le_bytes)
        })
        .collect();
    let size = 16 + body.len() as u32;
    [CMD_STREAM_MAGIC, ABI_VERSION, size, 0]
        .into_iter()
        .flat_map(u32::to_le_bytes)
        .chain(body)
        .collect()
}

/// Bring-up: a debug marker and a NOP.
pub(crate) fn stream_hello() -> Vec<u8> {
    let marker = b"aero demo\0\0\0";
    let words = marker
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    stream(&[(OP_DEBUG_MARKER, words), (OP_NOP, vec![])])
}

/// The submissions' allocation table: the framebuffer as allocation FB_ALLOC_ID and the
/// mesh's checker texture (the stream names them only by id, never by address, as the
/// ABI requires).
pub(crate) fn alloc_table() -> Vec<u8> {
    let fb_bytes = u64::from(FB_PITCH) * u64::from(FB_H);
    let entries = [
        (FB_ALLOC_ID, FB, fb_bytes),
        (
            mesh::CHECKER_ALLOC_ID,
            mesh::CHECKER,
            u64::from(mesh::CHECKER_BYTES),
        ),
    ];
    let count = entries.len() as u32;
    let header = [
        ALLOC_TABLE_MAGIC,
        ABI_VERSION,
        24 + 32 * count,
        count,
        32,
        0,
    ];
    let mut table: Vec<u8> = header.into_iter().flat_map(u32::to_le_bytes).collect();
    for (id, gpa, size) in entries {
        table.extend_from_slice(&id.to_le_bytes());
        table.extend_from_slice(&0u32.to_le_bytes());
        table.extend_from_slice(&u64::from(gpa).to_le_bytes());
        table.extend_from_slice(&size.to_le_bytes());
        table.extend_from_slice(&0u64.to_le_bytes());
    }
    table
}

/// The first frame: the framebuffer becomes a render-target/scanout texture backed by
/// its allocation, is bound as render target, cleared (to the gradient's top colour) and
/// presented on vsync.
pub(crate) fn stream_first_frame() -> Vec<u8> {
    let rgba = GRADIENT.map(|(_, top, _)| (top as f32 / 255.0).to_bits());
    let mut rts = vec![1, 0, FB_TEXTURE];
    rts.resize(10, 0);
    stream(&[
        (
            OP_CREATE_TEXTURE2D,
            vec![
                FB_TEXTURE,
                RESOURCE_USAGE_RENDER_TARGET | RESOURCE_USAGE_SCANOUT,
                FORMAT_B8G8R8X8,
                FB_W,
                FB_H,
                1,
                1,
                FB_PITCH,
                FB_ALLOC_ID,
                0,
                0,
                0,
                0,
                0,
            ],
        ),
        (OP_SET_RENDER_TARGETS, rts),
        (
            OP_CLEAR,
            vec![
                CLEAR_COLOR,
                rgba[0],
                rgba[1],
                rgba[2],
                1.0f32.to_bits(),
                1.0f32.to_bits(),
                0,
            ],
        ),
        (OP_PRESENT_EX, vec![0, PRESENT_FLAG_VSYNC, 0, 0]),
    ])
}

/// Every later redraw: present scanout 0 on vsync.
pub(crate) fn stream_present() -> Vec<u8> {
    stream(&[(OP_PRESENT, vec![0, PRESENT_FLAG_VSYNC])])
}

/// EAX = the configuration dword at `offset` of the function whose address is in EBX
/// (mechanism #1); leaves DX = 0CFCh for a write back.
fn pci_read(a: &mut Asm, offset: i32) -> Result<(), DemoError> {
    a.lea(eax, ptr(ebx + offset))?;
    a.mov(dx, 0xCF8)?;
    a.out(dx, eax)?;
    a.mov(dx, 0xCFC)?;
    a.in_(eax, dx)?;
    Ok(())
}

/// ESI = BAR0 (for `r`).
fn load_bar(a: &mut Asm) -> Result<(), DemoError> {
    let bar = d(a, "g_bar0");
    a.mov(esi, bar)?;
    Ok(())
}

/// A BAR0 register through the flat ES, ESI = BAR0.
fn r(offset: u32) -> AsmMemoryOperand {
    dword_ptr(esi + offset).es()
}

/// ECX = ERROR_COUNT, EDX = ERROR_CODE (flat ES loaded; interrupts back on after).
fn read_errors(a: &mut Asm) -> Result<(), DemoError> {
    load_bar(a)?;
    a.mov(ecx, r(reg::ERROR_COUNT))?;
    a.mov(edx, r(reg::ERROR_CODE))?;
    a.sti()?;
    Ok(())
}

/// "aerogpu error code <EDX>" on COM1.
fn report_error(a: &mut Asm) -> Result<(), DemoError> {
    puts(a, "s_gpu_error")?;
    a.mov(eax, edx)?;
    a.call_sym("serial_dec")?;
    puts(a, "s_crlf")?;
    Ok(())
}

pub(crate) fn emit(a: &mut Asm) -> Result<(), DemoError> {
    emit_init(a)?;
    emit_submit(a)?;
    emit_wait(a)?;
    emit_frames(a)?;
    emit_irq(a)?;
    mesh::emit(a)?;
    Ok(())
}

/// gpu_init: CF = 0 when AeroGPU runs with scanout 0 on the demo framebuffer (the video
/// variables set), CF = 1 (nothing changed on screen) otherwise.
fn emit_init(a: &mut Asm) -> Result<(), DemoError> {
    let absent = a.l("gpu_absent");
    let fail = a.l("gpu_fail");
    a.bind("gpu_init")?;
    a.pushad()?;
    a.push(es)?;

    // Bus 0, every device and function.
    a.mov(ebx, 0x8000_0000u32)?;
    let mut scan = a.create_label();
    let mut found = a.create_label();
    a.set(&mut scan)?;
    pci_read(a, 0)?;
    a.cmp(eax, VENDOR_DEVICE as i32)?;
    a.je(found)?;
    a.add(ebx, 0x100)?;
    a.cmp(ebx, 0x8001_0000u32 as i32)?;
    a.jb(scan)?;
    a.jmp(absent)?;
    a.set(&mut found)?;

    // Memory decoding and bus mastering on (the device reads the ring from RAM).
    pci_read(a, 4)?;
    a.or(ax, 0x0006)?;
    a.out(dx, ax)?;
    // BAR0: 32-bit memory (or 64-bit below 4 GiB, which unreal mode can reach).
    let mut bar_ok = a.create_label();
    pci_read(a, 0x14)?;
    a.mov(ecx, eax)?;
    pci_read(a, 0x10)?;
    a.test(al, 1)?;
    a.jnz(fail)?;
    a.mov(dl, al)?;
    a.and(dl, 0x06)?;
    a.cmp(dl, 0x04)?;
    a.jne(bar_ok)?;
    a.test(ecx, ecx)?;
    a.jnz(fail)?;
    a.set(&mut bar_ok)?;
    a.and(eax, 0xFFFF_FFF0u32 as i32)?;
    a.jz(fail)?;
    let bar = d(a, "g_bar0");
    a.mov(bar, eax)?;
    // The interrupt line the BIOS routed INTA# to; 0–2 and 8 belong to the platform.
    pci_read(a, 0x3C)?;
    let line = b(a, "g_irq_line");
    a.mov(line, al)?;
    let mut irq_ok = a.create_label();
    let mut irq_bad = a.create_label();
    a.cmp(al, 3)?;
    a.jb(irq_bad)?;
    a.cmp(al, 15)?;
    a.ja(irq_bad)?;
    a.cmp(al, 8)?;
    a.jne(irq_ok)?;
    a.set(&mut irq_bad)?;
    puts(a, "s_gpu_no_irq")?;
    a.jmp(absent)?;
    a.set(&mut irq_ok)?;

    a.call_sym("enter_flat")?;
    load_bar(a)?;
    a.cmp(r(reg::MAGIC), MMIO_MAGIC as i32)?;
    a.jne(fail)?;
    a.mov(eax, r(reg::ABI_VERSION))?;
    let abi = d(a, "g_abi");
    a.mov(abi, eax)?;
    puts(a, "s_gpu_abi")?;
    a.shr(eax, 16)?;
    a.call_sym("serial_dec")?;
    a.mov(al, b'.' as i32)?;
    a.call_sym("serial_putc")?;
    let minor = w(a, "g_abi");
    a.movzx(eax, minor)?;
    a.call_sym("serial_dec")?;
    puts(a, "s_gpu_irq")?;
    let line = b(a, "g_irq_line");
    a.movzx(ax, line)?;
    a.call_sym("serial_dec")?;
    puts(a, "s_crlf")?;
    let abi = d(a, "g_abi");
    a.mov(eax, abi)?;
    a.shr(eax, 16)?;
    a.cmp(eax, ABI_MAJOR as i32)?;
    let mut abi_ok = a.create_label();
    a.je(abi_ok)?;
    puts(a, "s_gpu_abi_bad")?;
    a.jmp(fail)?;
    a.set(&mut abi_ok)?;

    // Ring header and fence page (entries are written whole at submission).
    a.mov(edi, RING)?;
    a.xor(eax, eax)?;
    a.mov(ecx, ((RING_HEADER + ENTRIES * DESC_SIZE) / 4) as i32)?;
    let mut zero = a.create_label();
    a.set(&mut zero)?;
    a.mov(dword_ptr(edi).es(), eax)?;
    a.add(edi, 4)?;
    a.dec(ecx)?;
    a.jnz(zero)?;
    a.mov(edi, RING)?;
    for (off, v) in [
        (0, RING_MAGIC),
        (4, ABI_VERSION),
        (8, RING_SIZE),
        (12, ENTRIES),
        (16, DESC_SIZE),
    ] {
        a.mov(dword_ptr(edi + off).es(), v)?;
    }
    a.mov(edi, FENCE_PAGE)?;
    a.mov(ecx, 16)?;
    let mut zero = a.create_label();
    a.set(&mut zero)?;
    a.mov(dword_ptr(edi).es(), eax)?;
    a.add(edi, 4)?;
    a.dec(ecx)?;
    a.jnz(zero)?;
    for name in ["g_tail", "g_fence", "g_irq_fence"] {
        let v = d(a, name);
        a.mov(v, eax)?;
    }

    for (off, v) in [
        (reg::IRQ_ENABLE, 0),
        (reg::IRQ_ACK, u32::MAX),
        (reg::RING_GPA_LO, RING),
        (reg::RING_GPA_HI, 0),
        (reg::RING_SIZE_BYTES, RING_SIZE),
        (reg::FENCE_GPA_LO, FENCE_PAGE),
        (reg::FENCE_GPA_HI, 0),
        (reg::RING_CONTROL, RING_CONTROL_ENABLE),
    ] {
        a.mov(r(off), v)?;
    }
    a.test(r(reg::RING_CONTROL), RING_CONTROL_ENABLE as i32)?;
    a.jz(fail)?;

    // The interrupt: IVT entry, then the line unmasked (and the cascade for IRQ 8–15).
    let line = b(a, "g_irq_line");
    a.movzx(edi, line)?;
    let mut slave = a.create_label();
    let mut vector_set = a.create_label();
    a.cmp(di, 8)?;
    a.jae(slave)?;
    a.add(di, MASTER_BASE as i32)?;
    a.jmp(vector_set)?;
    a.set(&mut slave)?;
    a.add(di, (SLAVE_BASE - 8) as i32)?;
    a.set(&mut vector_set)?;
    a.shl(edi, 2)?;
    let handler = a.addr("gpu_irq");
    a.mov(word_ptr(edi).es(), i32::from(handler))?;
    a.mov(word_ptr(edi + 2).es(), i32::from(LOAD_SEGMENT))?;
    a.call_sym("gpu_unmask")?;
    a.mov(r(reg::IRQ_ENABLE), IRQ_FENCE | IRQ_ERROR)?;

    // Bring-up submission: the device walks the ring and signals fence 1 by IRQ.
    a.mov(edx, 0)?;
    let (hello, hello_len) = (a.addr("gpu_stream_hello"), stream_hello().len());
    a.mov(si, i32::from(hello))?;
    a.mov(cx, hello_len as i32)?;
    a.call_sym("gpu_submit_wait")?;
    a.jc(fail)?;

    // Scanout 0 on the framebuffer the demo draws into.
    a.call_sym("enter_flat")?;
    load_bar(a)?;
    for (off, v) in [
        (reg::SCANOUT0_WIDTH, FB_W),
        (reg::SCANOUT0_HEIGHT, FB_H),
        (reg::SCANOUT0_FORMAT, FORMAT_B8G8R8X8),
        (reg::SCANOUT0_PITCH_BYTES, FB_PITCH),
        (reg::SCANOUT0_FB_GPA_LO, FB),
        (reg::SCANOUT0_FB_GPA_HI, 0),
        (reg::SCANOUT0_ENABLE, 1),
    ] {
        a.mov(r(off), v)?;
    }
    a.sti()?;
    // The same geometry as the VBE path: 640×480×32, logical pixels doubled.
    for (name, v) in [("v_fb", FB), ("v_pitch", FB_PITCH)] {
        let m = d(a, name);
        a.mov(m, v)?;
    }
    for (name, v) in [("v_w", FB_W), ("v_h", FB_H), ("v_bar_y", FB_H / 2 - 24)] {
        let m = w(a, name);
        a.mov(m, v as i32)?;
    }
    for (name, v) in [("v_bpp", 32), ("v_shift", 1), ("g_on", 1)] {
        let m = b(a, name);
        a.mov(m, v)?;
    }
    puts(a, "s_gpu_video")?;
    a.pop(es)?;
    a.popad()?;
    a.clc()?;
    a.ret()?;

    // Found but unusable: quiesce it and let the caller use VBE.
    a.bind("gpu_fail")?;
    let mut quiet = a.create_label();
    let bar = d(a, "g_bar0");
    a.cmp(bar, 0)?;
    a.je(quiet)?;
    a.call_sym("enter_flat")?;
    load_bar(a)?;
    a.mov(r(reg::IRQ_ENABLE), 0u32)?;
    a.mov(r(reg::RING_CONTROL), 0u32)?;
    a.mov(r(reg::SCANOUT0_ENABLE), 0u32)?;
    a.sti()?;
    a.set(&mut quiet)?;
    puts(a, "s_gpu_failed")?;
    a.bind("gpu_absent")?;
    a.sti()?;
    a.pop(es)?;
    a.popad()?;
    a.stc()?;
    a.ret()?;

    // Clears the IMR bit of g_irq_line (and of the cascade on the master).
    a.bind("gpu_unmask")?;
    a.pushad()?;
    let line = b(a, "g_irq_line");
    a.mov(cl, line)?;
    a.mov(ah, 1)?;
    a.and(cl, 7)?;
    a.shl(ah, cl)?;
    a.not(ah)?;
    let line = b(a, "g_irq_line");
    a.cmp(line, 8)?;
    let mut on_slave = a.create_label();
    let mut unmasked = a.create_label();
    a.jae(on_slave)?;
    a.in_(al, 0x21)?;
    a.and(al, ah)?;
    a.out(0x21, al)?;
    a.jmp(unmasked)?;
    a.set(&mut on_slave)?;
    a.in_(al, 0xA1)?;
    a.and(al, ah)?;
    a.out(0xA1, al)?;
    a.in_(al, 0x21)?;
    a.and(al, 0xFB)?;
    a.out(0x21, al)?;
    a.set(&mut unmasked)?;
    a.popad()?;
    a.ret()?;
    Ok(())
}

/// gpu_submit: SI = stream offset (DS), CX = its size, EDX = submit flags; the flat ES
/// loaded, interrupts off. EAX = the fence it signals; CF = 1 if the ring is full.
fn emit_submit(a: &mut Asm) -> Result<(), DemoError> {
    a.bind("gpu_submit")?;
    a.push(ebx)?;
    a.push(ecx)?;
    a.push(esi)?;
    a.push(edi)?;
    a.mov(ebx, RING)?;
    let tail = d(a, "g_tail");
    a.mov(eax, tail)?;
    a.sub(eax, dword_ptr(ebx + 24).es())?;
    a.cmp(eax, ENTRIES as i32)?;
    let mut full = a.create_label();
    a.jae(full)?;
    let tail = d(a, "g_tail");
    a.mov(edi, tail)?;
    a.and(edi, (ENTRIES - 1) as i32)?;
    a.shl(edi, 6)?;
    a.lea(edi, ptr(ebx + edi + RING_HEADER))?;
    a.xor(eax, eax)?;
    for off in (0..DESC_SIZE).step_by(4) {
        a.mov(dword_ptr(edi + off).es(), eax)?;
    }
    a.mov(dword_ptr(edi).es(), DESC_SIZE)?;
    a.mov(dword_ptr(edi + 4).es(), edx)?;
    a.movzx(eax, si)?;
    a.add(eax, i32::from(LOAD_SEGMENT) * 16)?;
    a.mov(dword_ptr(edi + 16).es(), eax)?;
    a.movzx(eax, cx)?;
    a.mov(dword_ptr(edi + 24).es(), eax)?;
    // An allocation table for this submission, if the caller set g_alloc (then cleared).
    let alloc = d(a, "g_alloc");
    a.mov(eax, alloc)?;
    a.test(eax, eax)?;
    let mut no_table = a.create_label();
    a.jz(no_table)?;
    a.add(eax, i32::from(LOAD_SEGMENT) * 16)?;
    a.mov(dword_ptr(edi + 32).es(), eax)?;
    a.mov(dword_ptr(edi + 40).es(), alloc_table().len() as u32)?;
    let alloc = d(a, "g_alloc");
    a.mov(alloc, 0u32)?;
    a.set(&mut no_table)?;
    let fence = d(a, "g_fence");
    a.inc(fence)?;
    let fence = d(a, "g_fence");
    a.mov(eax, fence)?;
    a.mov(dword_ptr(edi + 48).es(), eax)?;
    let tail = d(a, "g_tail");
    a.inc(tail)?;
    let tail = d(a, "g_tail");
    a.mov(ecx, tail)?;
    a.mov(dword_ptr(ebx + 28).es(), ecx)?;
    load_bar(a)?;
    a.mov(r(reg::DOORBELL), 1u32)?;
    a.clc()?;
    let mut out = a.create_label();
    a.jmp(out)?;
    a.set(&mut full)?;
    a.stc()?;
    a.set(&mut out)?;
    a.pop(edi)?;
    a.pop(esi)?;
    a.pop(ecx)?;
    a.pop(ebx)?;
    a.ret()?;
    Ok(())
}

/// gpu_submit_wait: as gpu_submit (interrupts may be on; the flat ES is loaded here),
/// then waits for the fence interrupt, reports "fence N done" and checks the error
/// latch. CF = 1 (and a message) on a full ring, a timeout or a device error.
fn emit_wait(a: &mut Asm) -> Result<(), DemoError> {
    a.bind("gpu_submit_wait")?;
    a.pushad()?;
    let mut bad = a.create_label();
    a.call_sym("enter_flat")?;
    a.call_sym("gpu_submit")?;
    a.sti()?;
    a.jc(bad)?;
    a.mov(ebp, eax)?;
    read_ticks(a)?;
    a.mov(edi, eax)?;
    let mut again = a.create_label();
    let mut done = a.create_label();
    let mut timeout = a.create_label();
    a.set(&mut again)?;
    a.cli()?;
    let seen = d(a, "g_irq_fence");
    a.cmp(seen, ebp)?;
    a.jae(done)?;
    read_ticks(a)?;
    a.sub(eax, edi)?;
    a.cmp(eax, FENCE_TIMEOUT_TICKS)?;
    a.ja(timeout)?;
    a.sti()?;
    a.hlt()?;
    a.jmp(again)?;

    a.set(&mut done)?;
    a.call_sym("enter_flat")?;
    read_errors(a)?;
    a.test(ecx, ecx)?;
    let mut clean = a.create_label();
    a.jz(clean)?;
    report_error(a)?;
    a.jmp(bad)?;
    a.set(&mut clean)?;
    puts(a, "s_gpu_fence")?;
    a.mov(eax, ebp)?;
    a.call_sym("serial_dec")?;
    puts(a, "s_gpu_done")?;
    a.popad()?;
    a.clc()?;
    a.ret()?;

    a.set(&mut timeout)?;
    a.sti()?;
    puts(a, "s_gpu_timeout")?;
    a.set(&mut bad)?;
    a.popad()?;
    a.stc()?;
    a.ret()?;
    Ok(())
}

fn emit_frames(a: &mut Asm) -> Result<(), DemoError> {
    // The first full picture: clear + present (vsync), waited for.
    a.bind("gpu_first_frame")?;
    let mut off = a.create_label();
    let on = b(a, "g_on");
    a.cmp(on, 0)?;
    a.je(off)?;
    a.pushad()?;
    let table = a.addr("gpu_alloc_table");
    let alloc = d(a, "g_alloc");
    a.mov(alloc, u32::from(table))?;
    let (s, len) = (a.addr("gpu_stream_first"), stream_first_frame().len());
    a.mov(si, i32::from(s))?;
    a.mov(cx, len as i32)?;
    a.mov(edx, SUBMIT_FLAG_PRESENT)?;
    a.call_sym("gpu_submit_wait")?;
    a.popad()?;
    a.set(&mut off)?;
    a.ret()?;

    // After a redraw: present without waiting (skipped while the ring is full).
    a.bind("gpu_flip")?;
    let mut skip = a.create_label();
    let on = b(a, "g_on");
    a.cmp(on, 0)?;
    a.je(skip)?;
    let dirty = b(a, "v_dirty");
    a.cmp(dirty, 0)?;
    a.je(skip)?;
    a.pushad()?;
    let dirty = b(a, "v_dirty");
    a.mov(dirty, 0)?;
    // With the mesh on, every presented frame is a mesh frame (it presents too).
    let mut plain = a.create_label();
    let mut chosen = a.create_label();
    let mesh_on = b(a, "g_mesh");
    a.cmp(mesh_on, 0)?;
    a.je(plain)?;
    a.call_sym("mesh_prepare")?;
    a.mov(edx, mesh::FRAME_FLAGS)?;
    a.jmp(chosen)?;
    a.set(&mut plain)?;
    let (s, len) = (a.addr("gpu_stream_present"), stream_present().len());
    a.mov(si, i32::from(s))?;
    a.mov(cx, len as i32)?;
    a.mov(edx, SUBMIT_FLAG_PRESENT | SUBMIT_FLAG_NO_IRQ)?;
    a.set(&mut chosen)?;
    a.call_sym("enter_flat")?;
    a.call_sym("gpu_submit")?;
    // A ring that stays full means the device stopped consuming it: say so once.
    let mut submitted = a.create_label();
    let mut accepted = a.create_label();
    a.jnc(accepted)?;
    let stalled = b(a, "g_stalled");
    a.cmp(stalled, 0)?;
    a.jne(submitted)?;
    let stalled = b(a, "g_stalled");
    a.mov(stalled, 1)?;
    puts(a, "s_gpu_stalled")?;
    a.jmp(submitted)?;
    // A mesh frame in the ring: the frame counter moves on.
    a.set(&mut accepted)?;
    let mesh_on = b(a, "g_mesh");
    a.cmp(mesh_on, 0)?;
    a.je(submitted)?;
    a.call_sym("mesh_count")?;
    a.set(&mut submitted)?;
    // Validation errors latch in the device: report each new one.
    read_errors(a)?;
    let errors = d(a, "g_errors");
    a.cmp(ecx, errors)?;
    let mut clean = a.create_label();
    a.je(clean)?;
    let errors = d(a, "g_errors");
    a.mov(errors, ecx)?;
    report_error(a)?;
    // A rejected mesh frame would be rejected again every frame: stop drawing it.
    let mesh_on = b(a, "g_mesh");
    a.cmp(mesh_on, 0)?;
    a.je(clean)?;
    let mesh_on = b(a, "g_mesh");
    a.mov(mesh_on, 0)?;
    puts(a, "s_mesh_off")?;
    a.set(&mut clean)?;
    a.popad()?;
    a.set(&mut skip)?;
    a.ret()?;
    Ok(())
}

fn emit_irq(a: &mut Asm) -> Result<(), DemoError> {
    // Level-triggered INTx: acknowledge the device before the EOI, or it fires again.
    a.bind("gpu_irq")?;
    a.push(ds)?;
    a.push(es)?;
    a.pushad()?;
    a.push(cs)?;
    a.pop(ds)?;
    a.call_sym("enter_flat")?;
    load_bar(a)?;
    a.mov(eax, r(reg::IRQ_STATUS))?;
    a.mov(r(reg::IRQ_ACK), eax)?;
    // The only writer of g_irq_fence: a fence counts as done when its IRQ arrived.
    a.mov(eax, r(reg::COMPLETED_FENCE_LO))?;
    let seen = d(a, "g_irq_fence");
    a.mov(seen, eax)?;
    a.mov(al, 0x20)?;
    let line = b(a, "g_irq_line");
    a.cmp(line, 8)?;
    let mut master = a.create_label();
    a.jb(master)?;
    a.out(0xA0, al)?;
    a.set(&mut master)?;
    a.out(0x20, al)?;
    a.popad()?;
    a.pop(es)?;
    a.pop(ds)?;
    a.iret()?;
    Ok(())
}

/// Aligns the next data to `n` bytes (`name` marks the padding).
pub(crate) fn align(a: &mut Asm, name: &'static str, n: u16) -> Result<(), DemoError> {
    let at = a.addr(name);
    a.bind(name)?;
    // At least one byte, so the padding and the data never share a label spot.
    let pad = n - at % n;
    a.db(&vec![0u8; usize::from(pad)])?;
    Ok(())
}

pub(crate) fn emit_data(a: &mut Asm) -> Result<(), DemoError> {
    strings(
        a,
        &[
            ("s_gpu_abi", "AERO-DEMO: aerogpu abi "),
            ("s_gpu_irq", ", irq "),
            (
                "s_gpu_abi_bad",
                "AERO-DEMO: aerogpu ABI major not supported\r\n",
            ),
            (
                "s_gpu_no_irq",
                "AERO-DEMO: aerogpu has no usable interrupt line\r\n",
            ),
            ("s_gpu_failed", "AERO-DEMO: aerogpu unusable, using VBE\r\n"),
            (
                "s_gpu_video",
                "AERO-DEMO: video aerogpu scanout 640x480x32\r\n",
            ),
            ("s_gpu_fence", "AERO-DEMO: fence "),
            ("s_gpu_done", " done\r\n"),
            ("s_gpu_timeout", "AERO-DEMO: aerogpu fence timed out\r\n"),
            ("s_gpu_error", "AERO-DEMO: aerogpu error code "),
            ("s_gpu_stalled", "AERO-DEMO: aerogpu ring stalled\r\n"),
        ],
    )?;
    variables(
        a,
        &[
            ("g_on", 1),
            ("g_stalled", 1),
            ("g_irq_line", 1),
            ("v_dirty", 1),
            ("g_bar0", 4),
            ("g_abi", 4),
            ("g_tail", 4),
            ("g_fence", 4),
            ("g_irq_fence", 4),
            ("g_errors", 4),
            ("g_alloc", 4),
        ],
    )?;
    for (pad, name, bytes) in [
        ("gpu_pad_hello", "gpu_stream_hello", stream_hello()),
        ("gpu_pad_first", "gpu_stream_first", stream_first_frame()),
        ("gpu_pad_present", "gpu_stream_present", stream_present()),
        ("gpu_pad_alloc", "gpu_alloc_table", alloc_table()),
    ] {
        align(a, pad, 8)?;
        a.bind(name)?;
        a.db(&bytes)?;
    }
    mesh::emit_data(a)?;
    Ok(())
}
