//! The floppy controller end to end: SeaBIOS, which drives the 82077AA itself (DMA channel
//! 2, IRQ 6), boots a diskette image built here whose boot sector talks on COM1 and reads
//! and writes more sectors through INT 13h.

mod common;
use std::path::PathBuf;
use std::process::Command;

const SEABIOS: &str = "/usr/share/seabios/bios.bin";
const ORG: u16 = 0x7C00;
/// Where the boot sector keeps its messages, the BIOS drive number and its print routine.
const MSG_START: u16 = ORG + 0x100;
const MSG_FAIL: u16 = ORG + 0x140;
const MSG_DONE: u16 = ORG + 0x160;
const DRIVE_BYTE: u16 = ORG + 0x1F0;
const PRINT: u16 = ORG + 0x180;

/// 16-bit code, hand-assembled, with rel16 branches computed from absolute targets.
struct Code(Vec<u8>);

impl Code {
    fn here(&self) -> u16 {
        ORG + self.0.len() as u16
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    fn imm16(&mut self, opcode: u8, value: u16) -> &mut Self {
        self.0.push(opcode);
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn rel16(&mut self, opcode: &[u8], target: u16) -> &mut Self {
        let after = self.here() + opcode.len() as u16 + 2;
        self.bytes(opcode);
        self.0
            .extend_from_slice(&target.wrapping_sub(after).to_le_bytes());
        self
    }
    fn print(&mut self, msg: u16) -> &mut Self {
        self.imm16(0xBE, msg).rel16(&[0xE8], PRINT) // mov si,msg; call print
    }
    /// INT 13h function `ah` for one sector at C/H/S into/from 0000:`buffer`; on carry
    /// jumps to the failure message.
    fn int13(&mut self, ah: u8, c: u8, h: u8, s: u8, buffer: u16, fail: u16) -> &mut Self {
        self.imm16(0xB8, u16::from(ah) << 8 | 1) // mov ax,ah:01
            .imm16(0xBB, buffer) // mov bx,buffer
            .imm16(0xB9, u16::from(c) << 8 | u16::from(s)) // mov cx,cyl:sector
            .bytes(&[0x8A, 0x16]) // mov dl,[DRIVE_BYTE]
            .bytes(&DRIVE_BYTE.to_le_bytes())
            .bytes(&[0xB6, h]) // mov dh,head
            .bytes(&[0xCD, 0x13])
            .rel16(&[0x0F, 0x82], fail) // jc fail
    }
}

/// A 1.44 MB image: boot sector, sector 2 (C0 H0 S2) and C1 H1 S5 (LBA 58) hold text.
fn floppy_image() -> Vec<u8> {
    let mut code = Code(Vec::new());
    code.bytes(&[0xFA, 0x31, 0xC0, 0x8E, 0xD8, 0x8E, 0xC0, 0x8E, 0xD0]) // cli; ds=es=ss=0
        .imm16(0xBC, ORG) // mov sp,7C00
        .bytes(&[0xFB, 0x88, 0x16]) // sti; mov [DRIVE_BYTE],dl
        .bytes(&DRIVE_BYTE.to_le_bytes())
        .print(MSG_START);
    // The fail label is placed after the success path; branch targets are patched below.
    let fail_at = ORG + 0xE0;
    code.int13(0x02, 0, 0, 2, 0x7E00, fail_at)
        .print(0x7E00)
        .int13(0x02, 1, 1, 5, 0x8000, fail_at)
        .print(0x8000)
        // Write what sector 2 holds to C0 H0 S3, read S3 back elsewhere and print it.
        .int13(0x03, 0, 0, 3, 0x7E00, fail_at)
        .int13(0x02, 0, 0, 3, 0x8400, fail_at)
        .print(0x8400)
        .print(MSG_DONE);
    let halt = code.here();
    code.bytes(&[0xF4]).rel16(&[0xE9], halt); // hlt; jmp halt
    assert!(code.here() <= fail_at, "boot code too long");
    code.0.resize(usize::from(fail_at - ORG), 0x90);
    code.print(MSG_FAIL).rel16(&[0xE9], halt);
    let mut sector = code.0;
    sector.resize(512, 0);
    let put = |sector: &mut Vec<u8>, at: u16, text: &[u8]| {
        let at = usize::from(at - ORG);
        sector[at..at + text.len()].copy_from_slice(text);
    };
    put(&mut sector, MSG_START, b"FLOPPY-BOOT-START\r\n\0");
    put(&mut sector, MSG_FAIL, b"FLOPPY-INT13-FAILED\r\n\0");
    put(&mut sector, MSG_DONE, b"FLOPPY-DONE\r\n\0");
    // print: lodsb; test al,al; jz ret; mov dx,3F8; out dx,al; jmp print; ret
    put(
        &mut sector,
        PRINT,
        &[
            0xAC, 0x84, 0xC0, 0x74, 0x06, 0xBA, 0xF8, 0x03, 0xEE, 0xEB, 0xF5, 0xC3,
        ],
    );
    sector[510] = 0x55;
    sector[511] = 0xAA;

    let mut image = vec![0xF6u8; 1_474_560];
    image[..512].copy_from_slice(&sector);
    let mut text = |lba: usize, s: &[u8]| image[lba * 512..lba * 512 + s.len()].copy_from_slice(s);
    text(1, b"SECTOR2-VIA-FDC\r\n\0");
    text(2, b"SECTOR3-ORIGINAL\r\n\0");
    text((2 + 1) * 18 + 4, b"CYL1-HEAD1-SECTOR5\r\n\0");
    image
}

#[test]
fn seabios_boots_a_floppy_through_the_controller() {
    assert!(
        std::path::Path::new(SEABIOS).exists(),
        "{SEABIOS} is missing: apt-get install seabios (tests/install-deps.sh does)"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("floppy-seabios");
    std::fs::create_dir_all(&dir).unwrap();
    let img = dir.join("boot.img");
    let original = floppy_image();
    std::fs::write(&img, &original).unwrap();
    let serial = dir.join("serial.txt");
    let debugcon = dir.join("debugcon.txt");
    let _ = std::fs::remove_file(&serial);
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(["headless", "--snapshot", "--bios", SEABIOS, "--boot", "a"])
        .arg("--fda")
        .arg(&img)
        .arg("--serial")
        .arg(&serial)
        .arg("--debugcon")
        .arg(&debugcon)
        .args(["--until-serial", "FLOPPY-DONE", "--timeout", "20"])
        .output()
        .expect("run aero");
    let serial = std::fs::read_to_string(&serial).unwrap_or_default();
    let debugcon = std::fs::read_to_string(&debugcon).unwrap_or_default();
    eprintln!(
        "stderr: {}\nserial: {serial:?}\ndebugcon: {debugcon}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        debugcon.contains("Booting from Floppy"),
        "SeaBIOS did not boot the floppy"
    );
    assert_eq!(
        serial,
        "FLOPPY-BOOT-START\r\nSECTOR2-VIA-FDC\r\nCYL1-HEAD1-SECTOR5\r\nSECTOR2-VIA-FDC\r\nFLOPPY-DONE\r\n",
        "boot sector output"
    );
    assert_eq!(out.status.code(), Some(0), "run did not end at FLOPPY-DONE");
    assert_eq!(
        std::fs::read(&img).unwrap(),
        original,
        "--snapshot must keep the image unchanged"
    );
}

/// The body of /init for the Linux test: load the floppy driver, read a sector, write another.
const LINUX_INIT: &str = r#"insmod /lib/modules/floppy.ko || echo "AERO-FD-INSMOD-FAILED"
i=0
while [ ! -b /dev/fd0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
echo "AERO-FD-READ=$(dd if=/dev/fd0 bs=512 skip=100 count=1 2>/dev/null | head -c 19)"
printf 'WRITTEN-BY-LINUX-FD' | dd of=/dev/fd0 bs=512 seek=1000 conv=sync,fsync 2>/dev/null \
    || echo "AERO-FD-WRITE-FAILED"
for d in /sys/bus/pnp/devices/*; do
    grep -q PNP0700 "$d/id" && echo "AERO-FD-PNP=$(tr '\n' ' ' <"$d/resources")"
done
# The host swaps the disk (monitor script); the driver must see it on its change line.
echo "AERO-FD-SWAP-NOW"
i=0
while [ $i -lt 50 ]; do
    got=$(dd if=/dev/fd0 bs=512 skip=100 count=1 2>/dev/null | head -c 19)
    [ "$got" = "SECOND-DISK-SECT100" ] && break
    sleep 0.2; i=$((i + 1))
done
echo "AERO-FD-AFTER-SWAP=$got"
echo "AERO-FD-DONE"
"#;

/// Linux's own floppy driver (floppy.ko: resets, probes the controller version, seeks,
/// reads and writes by DMA) on our BIOS: the amd64 kernel with an initramfs that adds the
/// module and a test /init. Then a monitor script swaps in a second disk and the driver
/// reads it (the change line), while the first image keeps what was written to it.
#[test]
fn linux_floppy_driver_reads_and_writes() {
    let dir = common::work_dir("floppy-linux");
    let mut files = vec![(
        "init".to_string(),
        0o100755,
        common::guest_init(LINUX_INIT).into_bytes(),
    )];
    files.extend(common::module_files(&[(
        "floppy",
        "kernel/drivers/block/floppy.ko",
    )]));
    // The amd64 kernel booted directly with that initramfs (the BIOS floppy path is
    // tested above; this one is about Linux's driver).
    let boot = common::linux_direct_with_files(&dir, "initrd-amd64.img", &files);

    let fd = dir.join("fd.img");
    let mut floppy = vec![0xF6u8; 1_474_560];
    floppy[100 * 512..100 * 512 + 19].copy_from_slice(b"LINUX-FD-SECTOR-100");
    std::fs::write(&fd, &floppy).unwrap();
    // The second disk (720 KB) goes in while the guest runs, through the monitor.
    let fd2 = dir.join("fd2.img");
    let mut second = vec![0x2Du8; 737_280];
    second[100 * 512..100 * 512 + 19].copy_from_slice(b"SECOND-DISK-SECT100");
    std::fs::write(&fd2, &second).unwrap();
    let script = dir.join("swap.monitor");
    std::fs::write(
        &script,
        format!(
            "wait-serial AERO-FD-SWAP-NOW\nchange floppy0 \"{}\"\n",
            fd2.display()
        ),
    )
    .unwrap();
    let serial = dir.join("serial.txt");
    let _ = std::fs::remove_file(&serial);
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(["headless", "--fda"])
        .arg(&fd)
        .arg("--monitor")
        .arg(&script)
        .arg("--serial")
        .arg(&serial)
        .args(["--until-serial", "AERO-FD-DONE", "--timeout", "120"])
        .args(&boot)
        .output()
        .expect("run aero");
    let serial = std::fs::read_to_string(&serial).unwrap_or_default();
    let tail: String = serial.lines().rev().take(30).collect::<Vec<_>>().join("\n");
    eprintln!(
        "stderr: {}\nserial (last lines, reversed):\n{tail}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        serial.contains("FDC 0 is a"),
        "the driver did not find the controller"
    );
    assert!(
        serial.contains("AERO-FD-READ=LINUX-FD-SECTOR-100"),
        "read of sector 100"
    );
    assert!(!serial.contains("AERO-FD-WRITE-FAILED"));
    // Our DSDT's FDC0, as Linux's ACPI PnP layer reads its _CRS.
    assert!(
        serial.contains("AERO-FD-PNP=state = active io 0x3f0-0x3f5 io 0x3f7-0x3f7 irq 6 dma 2"),
        "FDC0 resources"
    );
    assert!(
        serial.contains("AERO-FD-AFTER-SWAP=SECOND-DISK-SECT100"),
        "the driver did not read the swapped-in disk"
    );
    assert_eq!(out.status.code(), Some(0), "run did not reach AERO-FD-DONE");
    assert_eq!(
        std::fs::read(&fd2).unwrap(),
        second,
        "the second disk was written"
    );
    let written = std::fs::read(&fd).unwrap();
    assert_eq!(
        &written[1000 * 512..1000 * 512 + 19],
        b"WRITTEN-BY-LINUX-FD"
    );
    assert!(written[1000 * 512 + 19..1001 * 512].iter().all(|&b| b == 0));
    assert_eq!(
        written[..1000 * 512],
        floppy[..1000 * 512],
        "other sectors changed"
    );
}
