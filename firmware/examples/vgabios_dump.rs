//! Writes Aero's VGA option ROM to a file, e.g. to try it in QEMU:
//! `cargo run -p aero-firmware --example vgabios_dump -- vga.rom` then
//! `qemu-system-x86_64 -vga none -device VGA,romfile=vga.rom ...`.

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: vgabios_dump OUTPUT.rom");
        std::process::exit(2);
    };
    let rom = match aero_firmware::vgabios::build_vga_bios() {
        Ok(rom) => rom,
        Err(e) => {
            eprintln!("building the VGA BIOS failed: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = std::fs::write(&path, &rom) {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    }
    println!("{path}: {} bytes", rom.len());
}
