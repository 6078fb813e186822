//! Linux's `vga16fb` (the 640x480 16-colour planar framebuffer that drives a VGA the way
//! Windows' bootvid does: mode 12h register by register, no BIOS) drawing on Aero, compared
//! with the same guest on QEMU's std-vga.
//!
//! Why the guest brings its own loader: vga16fb binds only when the boot screen_info says
//! mode 0Dh/0Eh/10h/12h on an adapter of type VIDEO_TYPE_EGAC/VGAC (0x21/0x22). The
//! kernel's own real-mode setup (what syslinux, GRUB's `linux16` and QEMU's `-kernel` run)
//! stores `orig_video_isVGA = 1` for a VGA, never 0x22, so Debian's 6.12 kernel creates the
//! `vga-framebuffer` device (its sysfb decodes the 1) but vga16fb's probe refuses it, and
//! 6.1's sysfb does not even create the device. GRUB's 32-bit `linux` says "text" (1) or
//! VESA. So the disk carries a small loader that does what a boot loader using the 32-bit
//! boot protocol does: it reads the kernel and initramfs to 1 MiB and 128 MiB through
//! INT 13h AH=42h and INT 15h AH=87h, fills the zero page (setup header from the bzImage,
//! E820 from INT 15h, command line, initramfs), sets mode 12h with INT 10h, checks it is a
//! VGA (INT 10h AX=1A00h) and records mode 12h / VIDEO_TYPE_VGAC with the BIOS's columns,
//! rows and font height, then enters the kernel's 32-bit entry in flat protected mode.
//!
//! The initramfs (`tests/images/build.sh`, `initrd-amd64-vga16.img`) loads vga16fb; fbcon
//! takes the console over and loads the palette through the DAC; the init writes text in
//! all 16 colours (fbcon's image blits: write modes 2 and 3, set/reset, bit mask, latches)
//! and raw bytes into /dev/fb0. Aero's screen must equal QEMU's screendump at the DAC's
//! 6-bit precision (QEMU widens 6-bit DAC values by its own rule; Aero replicates the top
//! bits), which is exact for what the guest wrote: tolerance zero.

use std::path::PathBuf;
use std::time::Duration;

use iced_x86::code_asm::*;

mod common;
use common::{AeroRun, Picture, QemuRun, serial_out};

const DONE: &str = "AERO-VGA16FB-DRAWN";
/// What ends a run early: the loader's failure marks, the init's, a kernel panic.
const FAILURES: &[&str] = &["!LOADER", "AERO-VGA16FB-MISSING", "Kernel panic"];
const MEMORY_MIB: u32 = 256;

/// The loader program: 16-bit code, then the copy jobs, then the 32-bit kernel entry.
const LOADER: u64 = 0x7E00;
const LOADER_SECTORS: u32 = 4;
const JOBS: u64 = LOADER + 0x600;
const PM_ENTRY: u64 = LOADER + 0x700;
/// Low memory the loader uses: boot drive, INT 13h packet, INT 15h AH=87h table, GDT.
const DRIVE: u32 = 0x0500;
/// AH of the last INT 13h/15h call, for the failure message.
const STATUS: u32 = 0x0501;
const DAP: u32 = 0x0510;
const MOVE_TABLE: u32 = 0x0540;
const GDT: u32 = 0x0580;
const GDTR: u32 = 0x05A0;
/// The zero page (struct boot_params) and the command line after it, read from disk.
const ZERO_PAGE: u32 = 0x1000;
const CMDLINE: u32 = 0x2000;
const LOW_BLOCK_SECTORS: u32 = 16;
/// Disk reads land here (64 sectors at a time) and INT 15h AH=87h copies them on.
const BOUNCE: u32 = 0x20000;
const CHUNK_SECTORS: u32 = 64;
/// Above the kernel's decompression area (16 MiB + init_size), below the top of RAM.
const INITRD_AT: u32 = 0x0800_0000;

const LOW_BLOCK_LBA: u32 = 8;
const KERNEL_LBA: u32 = 64;

// struct boot_params / screen_info offsets (Documentation/arch/x86/zero-page.rst).
const SI_VIDEO_PAGE: u32 = 0x04;
const SI_VIDEO_MODE: u32 = 0x06;
const SI_VIDEO_COLS: u32 = 0x07;
const SI_EGA_BX: u32 = 0x0A;
const SI_VIDEO_LINES: u32 = 0x0E;
const SI_IS_VGA: u32 = 0x0F;
const SI_VIDEO_POINTS: u32 = 0x10;
const VIDEO_TYPE_VGAC: u32 = 0x22;
const E820_ENTRIES: u32 = 0x1E8;
const E820_TABLE: u32 = 0x2D0;
const E820_MAX: u32 = 128;
const HDR_START: usize = 0x1F1;
const HDR_TYPE_OF_LOADER: usize = 0x210;
const HDR_CODE32_START: usize = 0x214;
const HDR_RAMDISK_IMAGE: usize = 0x218;
const HDR_RAMDISK_SIZE: usize = 0x21C;
const HDR_CMD_LINE_PTR: usize = 0x228;
const HDR_INITRD_ADDR_MAX: usize = 0x22C;
const HDR_CMDLINE_SIZE: usize = 0x238;
const HDR_INIT_SIZE: usize = 0x260;

/// Kernel messages on COM1 only (the VGA shows just what the init draws), no cursor; no_timer_check
/// because a loaded host can stall QEMU TCG long enough for its IO-APIC timer probe to panic.
const KERNEL_CMDLINE: &str =
    "console=ttyS0,115200 loglevel=4 panic=-1 no_timer_check vt.global_cursor_default=0";

fn images_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME or XDG_CACHE_HOME must be set");
    cache.join("aero/images")
}

fn image(name: &str) -> Vec<u8> {
    let p = images_dir().join(name);
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `bash tests/images/build.sh` (tests/test.sh does)",
            p.display()
        )
    })
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// The 16-bit part: copy jobs, E820, mode 12h and screen_info, then protected mode.
fn loader_code() -> Vec<u8> {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut job = a.create_label();
    let mut chunk = a.create_label();
    let mut chunk_size_ok = a.create_label();
    let mut jobs_done = a.create_label();
    let mut e820 = a.create_label();
    let mut e820_done = a.create_label();
    let mut fail_read = a.create_label();
    let mut fail_move = a.create_label();
    let mut fail_e820 = a.create_label();
    let mut fail_mode = a.create_label();
    let mut fail_vga = a.create_label();

    a.mov(byte_ptr(DRIVE), dl).unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(es, ax).unwrap();
    // INT 15h AH=87h table: six descriptors, the source (+10h) is the bounce buffer and
    // the destination (+18h) is filled in per chunk; both 64 KiB, data read/write.
    for i in 0..12 {
        a.mov(dword_ptr(MOVE_TABLE + 4 * i), 0u32).unwrap();
    }
    a.mov(word_ptr(MOVE_TABLE + 0x10), 0xFFFFu32).unwrap();
    a.mov(dword_ptr(MOVE_TABLE + 0x12), BOUNCE | 0x93 << 24)
        .unwrap();
    a.mov(word_ptr(MOVE_TABLE + 0x18), 0xFFFFu32).unwrap();
    a.mov(byte_ptr(MOVE_TABLE + 0x1D), 0x93u32).unwrap();

    // Jobs of (LBA, sectors, destination): 64 sectors at a time to the bounce buffer,
    // then to the destination.
    a.mov(si, JOBS as u32).unwrap();
    a.set_label(&mut job).unwrap();
    a.mov(ecx, dword_ptr(si + 4)).unwrap();
    a.test(ecx, ecx).unwrap();
    a.jz(jobs_done).unwrap();
    a.mov(eax, dword_ptr(si)).unwrap();
    a.mov(edx, dword_ptr(si + 8)).unwrap();
    a.set_label(&mut chunk).unwrap();
    a.mov(ebx, ecx).unwrap();
    a.cmp(ebx, CHUNK_SECTORS).unwrap();
    a.jbe(chunk_size_ok).unwrap();
    a.mov(ebx, CHUNK_SECTORS).unwrap();
    a.set_label(&mut chunk_size_ok).unwrap();
    a.mov(word_ptr(DAP), 0x10u32).unwrap();
    a.mov(word_ptr(DAP + 2), bx).unwrap();
    a.mov(word_ptr(DAP + 4), 0u32).unwrap();
    a.mov(word_ptr(DAP + 6), BOUNCE >> 4).unwrap();
    a.mov(dword_ptr(DAP + 8), eax).unwrap();
    a.mov(dword_ptr(DAP + 12), 0u32).unwrap();
    a.pushad().unwrap();
    a.mov(ah, 0x42u32).unwrap();
    a.mov(dl, byte_ptr(DRIVE)).unwrap();
    a.mov(si, DAP).unwrap();
    a.int(0x13).unwrap();
    // MOV and POPAD leave the flags alone: CF is still INT 13h's.
    a.mov(byte_ptr(STATUS), ah).unwrap();
    a.popad().unwrap();
    a.jc(fail_read).unwrap();
    a.mov(word_ptr(MOVE_TABLE + 0x1A), dx).unwrap();
    a.ror(edx, 16).unwrap();
    a.mov(byte_ptr(MOVE_TABLE + 0x1C), dl).unwrap();
    a.mov(byte_ptr(MOVE_TABLE + 0x1F), dh).unwrap();
    a.ror(edx, 16).unwrap();
    a.pushad().unwrap();
    a.mov(cx, bx).unwrap();
    a.shl(cx, 8).unwrap();
    a.xor(di, di).unwrap();
    a.mov(es, di).unwrap();
    a.mov(si, MOVE_TABLE).unwrap();
    a.mov(ah, 0x87u32).unwrap();
    a.int(0x15).unwrap();
    a.mov(byte_ptr(STATUS), ah).unwrap();
    a.popad().unwrap();
    a.jc(fail_move).unwrap();
    a.add(eax, ebx).unwrap();
    a.mov(edi, ebx).unwrap();
    a.shl(edi, 9).unwrap();
    a.add(edx, edi).unwrap();
    a.sub(ecx, ebx).unwrap();
    a.jnz(chunk).unwrap();
    a.add(si, 12).unwrap();
    a.jmp(job).unwrap();
    a.set_label(&mut jobs_done).unwrap();

    // The memory map into the zero page.
    a.xor(ebx, ebx).unwrap();
    a.xor(bp, bp).unwrap();
    a.mov(di, ZERO_PAGE + E820_TABLE).unwrap();
    a.set_label(&mut e820).unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(eax, 0xE820u32).unwrap();
    a.mov(edx, 0x534D_4150u32).unwrap();
    a.mov(ecx, 20u32).unwrap();
    a.int(0x15).unwrap();
    a.jc(e820_done).unwrap();
    a.cmp(eax, 0x534D_4150u32).unwrap();
    a.jne(e820_done).unwrap();
    a.inc(bp).unwrap();
    a.add(di, 20).unwrap();
    a.cmp(bp, E820_MAX).unwrap();
    a.jae(e820_done).unwrap();
    a.test(ebx, ebx).unwrap();
    a.jnz(e820).unwrap();
    a.set_label(&mut e820_done).unwrap();
    a.test(bp, bp).unwrap();
    a.jz(fail_e820).unwrap();
    a.mov(ax, bp).unwrap();
    a.mov(byte_ptr(ZERO_PAGE + E820_ENTRIES), al).unwrap();

    // Mode 12h, and what the kernel's setup would record about it, except that the
    // adapter type says what it is: a VGA.
    a.mov(ax, 0x0012u32).unwrap();
    a.int(0x10).unwrap();
    a.mov(ah, 0x0Fu32).unwrap();
    a.int(0x10).unwrap();
    a.and(al, 0x7F).unwrap();
    a.cmp(al, 0x12).unwrap();
    a.jne(fail_mode).unwrap();
    a.mov(byte_ptr(ZERO_PAGE + SI_VIDEO_MODE), al).unwrap();
    a.mov(byte_ptr(ZERO_PAGE + SI_VIDEO_PAGE), bh).unwrap();
    a.mov(ax, 0x1200u32).unwrap();
    a.mov(bx, 0x0010u32).unwrap();
    a.int(0x10).unwrap();
    a.mov(word_ptr(ZERO_PAGE + SI_EGA_BX), bx).unwrap();
    a.mov(ax, 0x1A00u32).unwrap();
    a.int(0x10).unwrap();
    a.cmp(al, 0x1A).unwrap();
    a.jne(fail_vga).unwrap();
    a.mov(byte_ptr(ZERO_PAGE + SI_IS_VGA), VIDEO_TYPE_VGAC)
        .unwrap();
    // Columns (BDA 44Ah), rows - 1 (484h), character height (485h).
    a.mov(ax, word_ptr(0x44A)).unwrap();
    a.mov(byte_ptr(ZERO_PAGE + SI_VIDEO_COLS), al).unwrap();
    a.mov(al, byte_ptr(0x484)).unwrap();
    a.inc(al).unwrap();
    a.mov(byte_ptr(ZERO_PAGE + SI_VIDEO_LINES), al).unwrap();
    a.mov(ax, word_ptr(0x485)).unwrap();
    a.mov(word_ptr(ZERO_PAGE + SI_VIDEO_POINTS), ax).unwrap();
    serial_out(&mut a, b"AERO-LOADER-OK\r\n");

    // A20 on (INT 15h AH=87h may have left it as it found it), then the 32-bit entry:
    // flat __BOOT_CS (10h) and __BOOT_DS (18h), interrupts off.
    a.cli().unwrap();
    a.in_(al, 0x92).unwrap();
    a.or(al, 0x02).unwrap();
    a.and(al, 0xFE).unwrap();
    a.out(0x92, al).unwrap();
    for i in 0..4 {
        a.mov(dword_ptr(GDT + 4 * i), 0u32).unwrap();
    }
    a.mov(dword_ptr(GDT + 0x10), 0x0000_FFFFu32).unwrap();
    a.mov(dword_ptr(GDT + 0x14), 0x00CF_9A00u32).unwrap();
    a.mov(dword_ptr(GDT + 0x18), 0x0000_FFFFu32).unwrap();
    a.mov(dword_ptr(GDT + 0x1C), 0x00CF_9200u32).unwrap();
    a.mov(word_ptr(GDTR), 0x1Fu32).unwrap();
    a.mov(dword_ptr(GDTR + 2), GDT).unwrap();
    a.lgdt(ptr(GDTR)).unwrap();
    a.mov(eax, cr0).unwrap();
    a.or(eax, 1u32).unwrap();
    a.mov(cr0, eax).unwrap();
    // jmp far dword 10h:PM_ENTRY
    a.db(&[0x66, 0xEA]).unwrap();
    a.db(&(PM_ENTRY as u32).to_le_bytes()).unwrap();
    a.db(&[0x10, 0x00]).unwrap();

    for (label, mark, with_status) in [
        (
            &mut fail_read,
            &b"!LOADER: INT 13h read failed, AH="[..],
            true,
        ),
        (
            &mut fail_move,
            b"!LOADER: INT 15h block move failed, AH=",
            true,
        ),
        (&mut fail_e820, b"!LOADER: no E820 map", false),
        (&mut fail_mode, b"!LOADER: mode 12h not set", false),
        (&mut fail_vga, b"!LOADER: INT 10h 1A00h says no VGA", false),
    ] {
        a.set_label(label).unwrap();
        serial_out(&mut a, mark);
        if with_status {
            // Two hex digits of the saved AH.
            for shift in [4u32, 0] {
                let mut digit = a.create_label();
                a.mov(al, byte_ptr(STATUS)).unwrap();
                if shift > 0 {
                    a.shr(al, shift).unwrap();
                }
                a.and(al, 0x0F).unwrap();
                a.add(al, i32::from(b'0')).unwrap();
                a.cmp(al, i32::from(b'9')).unwrap();
                a.jbe(digit).unwrap();
                a.add(al, i32::from(b'A' - b'9' - 1)).unwrap();
                a.set_label(&mut digit).unwrap();
                a.mov(dx, 0x3F8u32).unwrap();
                a.out(dx, al).unwrap();
            }
        }
        serial_out(&mut a, b"\r\n");
        a.cli().unwrap();
        a.hlt().unwrap();
    }
    a.assemble(LOADER).unwrap()
}

/// The kernel's 32-bit entry (boot protocol): ESI = zero page, EBP = EDI = EBX = 0.
fn pm_entry() -> Vec<u8> {
    let mut a = CodeAssembler::new(32).unwrap();
    a.mov(ax, 0x18u32).unwrap();
    for seg in [ds, es, ss, fs, gs] {
        a.mov(seg, ax).unwrap();
    }
    a.mov(esi, ZERO_PAGE).unwrap();
    a.xor(ebp, ebp).unwrap();
    a.xor(edi, edi).unwrap();
    a.xor(ebx, ebx).unwrap();
    a.jmp(dword_ptr(ZERO_PAGE + HDR_CODE32_START as u32))
        .unwrap();
    a.assemble(PM_ENTRY).unwrap()
}

/// The disk: boot sector, loader, zero page + command line, the bzImage's protected-mode
/// part, the initramfs.
fn disk(bzimage: &[u8], initrd: &[u8], cmdline: &str) -> Vec<u8> {
    assert!(bzimage.len() > 0x300, "bzImage too short");
    assert_eq!(&bzimage[0x202..0x206], b"HdrS", "not a bzImage");
    let version = u16_at(bzimage, 0x206);
    assert!(version >= 0x020C, "boot protocol {version:#x}");
    let setup_sects = match bzimage[HDR_START] {
        0 => 4,
        n => usize::from(n),
    };
    let protected_mode = &bzimage[(setup_sects + 1) * 512..];
    let init_size = u32_at(bzimage, HDR_INIT_SIZE);
    assert!(
        0x0100_0000 + init_size < INITRD_AT,
        "init_size {init_size:#x} reaches the initramfs"
    );
    let initrd_end = INITRD_AT + initrd.len() as u32;
    assert!(initrd_end <= u32_at(bzimage, HDR_INITRD_ADDR_MAX));
    assert!(u64::from(initrd_end) < u64::from(MEMORY_MIB) << 20);
    assert!(cmdline.len() < u32_at(bzimage, HDR_CMDLINE_SIZE) as usize);

    // Zero page: the setup header as the image has it, the loader's fields on top.
    let mut low = vec![0u8; (LOW_BLOCK_SECTORS * 512) as usize];
    let header_end = 0x202 + usize::from(bzimage[0x201]);
    low[HDR_START..header_end].copy_from_slice(&bzimage[HDR_START..header_end]);
    low[HDR_TYPE_OF_LOADER] = 0xFF;
    put_u32(&mut low, HDR_RAMDISK_IMAGE, INITRD_AT);
    put_u32(&mut low, HDR_RAMDISK_SIZE, initrd.len() as u32);
    put_u32(&mut low, HDR_CMD_LINE_PTR, CMDLINE);
    let at = (CMDLINE - ZERO_PAGE) as usize;
    low[at..at + cmdline.len()].copy_from_slice(cmdline.as_bytes());

    let sectors = |len: usize| len.div_ceil(512) as u32;
    let kernel_sectors = sectors(protected_mode.len());
    let initrd_lba = KERNEL_LBA + kernel_sectors.next_multiple_of(8);
    let code32_start = u32_at(bzimage, HDR_CODE32_START);
    let jobs = [
        (LOW_BLOCK_LBA, LOW_BLOCK_SECTORS, ZERO_PAGE),
        (KERNEL_LBA, kernel_sectors, code32_start),
        (initrd_lba, sectors(initrd.len()), INITRD_AT),
        (0, 0, 0),
    ];

    let mut program = loader_code();
    assert!(program.len() <= (JOBS - LOADER) as usize, "loader too long");
    program.resize((JOBS - LOADER) as usize, 0);
    for (lba, count, to) in jobs {
        for v in [lba, count, to] {
            program.extend_from_slice(&v.to_le_bytes());
        }
    }
    program.resize((PM_ENTRY - LOADER) as usize, 0);
    program.extend_from_slice(&pm_entry());
    assert!(program.len() <= (LOADER_SECTORS * 512) as usize);

    let mut image = common::loader(LOADER, LOADER_SECTORS);
    image.extend_from_slice(&program);
    image.resize((LOW_BLOCK_LBA * 512) as usize, 0);
    image.extend_from_slice(&low);
    image.resize((KERNEL_LBA * 512) as usize, 0);
    image.extend_from_slice(protected_mode);
    image.resize((initrd_lba * 512) as usize, 0);
    image.extend_from_slice(initrd);
    image.resize(image.len().next_multiple_of(1 << 20), 0);
    image
}

/// Boots `image` on Aero (our BIOS, `MEMORY_MIB`) until COM1 shows `DONE` or a failure;
/// the serial output and the screen.
fn run_on_aero(image: Vec<u8>) -> (String, Picture) {
    let run = AeroRun {
        memory_mib: MEMORY_MIB,
        timeout: Duration::from_secs(600),
        failure_marks: FAILURES,
        slice: 50_000_000,
    };
    let (mut m, serial) = common::run_on_aero_with(image, None, DONE, &run);
    (serial, Picture::screen_of(&mut m))
}

/// Distinct colours on a screen.
fn colours(p: &Picture) -> usize {
    let mut seen: Vec<&[u8]> = p.rgb.chunks(3).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

#[test]
fn vga16fb_console_and_raw_writes_equal_qemu_std_vga() {
    let dir = common::out_dir("vga16fb");
    let image = disk(
        &image("vmlinuz-amd64-6.12"),
        &image("initrd-amd64-vga16.img"),
        KERNEL_CMDLINE,
    );
    // QEMU runs beside Aero: the test takes the longer of the two boots, not the sum.
    let (aero, qemu) = std::thread::scope(|s| {
        let qemu = s.spawn(|| {
            let run = QemuRun {
                memory_mib: MEMORY_MIB,
                timeout: Duration::from_secs(600),
                failure_marks: FAILURES,
            };
            common::run_on_qemu_with(&image, &dir, "vga16fb", DONE, true, &run)
        });
        let aero = run_on_aero(image.clone());
        (aero, qemu.join().unwrap())
    });
    let (serial, aero) = aero;
    assert!(serial.contains("AERO-LOADER-OK"), "Aero:\n{serial}");
    assert!(
        serial.contains("AERO-FB=0 VGA16 VGA"),
        "vga16fb not bound on Aero:\n{serial}"
    );
    assert!(serial.contains("AERO-FB-SIZE=640,480x4"), "Aero:\n{serial}");
    assert!(serial.contains(DONE), "Aero:\n{serial}");
    assert!(!serial.contains("AERO-FB-WRITE-FAILED"), "Aero:\n{serial}");
    aero.write_ppm(&dir.join("vga16fb-aero.ppm"));
    assert_eq!((aero.width, aero.height), (640, 480), "mode 12h's size");
    // All 16 colours drawn: fbcon's palette and the planar paths were used.
    assert!(colours(&aero) >= 16, "{} colours on Aero", colours(&aero));

    let (serial, qemu) = qemu.expect("qemu-system-x86_64 (tests/install-deps.sh installs it)");
    assert!(serial.contains("AERO-FB=0 VGA16 VGA"), "QEMU:\n{serial}");
    assert!(serial.contains(DONE), "QEMU:\n{serial}");
    let qemu = qemu.expect("QEMU wrote its screendump");
    common::assert_same_dac_colours(&aero, &qemu, &dir);
}
