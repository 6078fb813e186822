//! What watching the screen for needles costs per frame, at 1024×768 and 1920×1080:
//!
//!   cargo run --profile ci -p aero --example needle_bench
//!
//! - the scanout-changed check (`Machine::display_generation`: framebuffer bytes compared)
//!   on a machine whose guest set that VBE mode, when nothing changed; and in the BIOS's
//!   VGA text mode (the adapter's write count), against a render;
//! - converting a changed screen for matching (`Screen::new`: grey + blur);
//! - one needle (a 200×44 area, openQA's default margin 50): found where it was recorded,
//!   and not on the screen at all (the whole margin searched).
//!
//! Not a test: the figures depend on the host. `aero headless --until-match` and
//! `wait-match` pay the first on every look (at most every 20 ms of guest time) and the
//! rest only when the generation moved (at most every 100 ms).

use std::time::Instant;

use aero::needle::{Needle, NeedleJson, Screen};
use aero::screenshot::Image;
use aero_machine::{Machine, MachineConfig};

/// Boot sector: Bochs VBE (ports 0x1CE/0x1CF) WIDTH×HEIGHT×32 with the linear
/// framebuffer, then halt with interrupts off.
fn vbe_boot_sector(width: u16, height: u16) -> Vec<u8> {
    let mut code = Vec::new();
    for (index, value) in [(1u16, width), (2, height), (3, 32), (4, 0x41)] {
        code.extend([0xBA, 0xCE, 0x01]); // mov dx, 0x1CE
        code.push(0xB8); // mov ax, index
        code.extend(index.to_le_bytes());
        code.extend([0xEF, 0x42]); // out dx, ax; inc dx
        code.push(0xB8); // mov ax, value
        code.extend(value.to_le_bytes());
        code.push(0xEF); // out dx, ax
    }
    code.extend([0xFA, 0xF4, 0xEB, 0xFD]); // cli; hlt; jmp hlt
    let mut disk = vec![0u8; 1 << 20];
    disk[..code.len()].copy_from_slice(&code);
    disk[510] = 0x55;
    disk[511] = 0xAA;
    disk
}

/// A screen with text-like blocks of varied grey (deterministic).
fn busy_screen(width: u32, height: u32, seed: u32) -> Image {
    let mut state = seed;
    let mut rgba = vec![0u8; (width * height * 4) as usize];
    for y in 0..height {
        for x in 0..width {
            // A new value every 8×16 cell, like characters.
            if x % 8 == 0 {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            }
            let on = (state >> ((y % 16) + 8)) & 1 == 1 && x % 8 != 7;
            let v = if on { 200 } else { 20 };
            let i = ((y * width + x) * 4) as usize;
            rgba[i..i + 4].copy_from_slice(&[v, v, v, 255]);
        }
        state = state.rotate_left(3);
    }
    Image {
        width,
        height,
        rgba,
    }
}

fn needle(picture: Image, x: u32, y: u32) -> Needle {
    let json: NeedleJson = serde_json::from_str(&format!(
        r#"{{"tags":["bench"],"area":[{{"xpos":{x},"ypos":{y},"width":200,"height":44,"type":"match"}}]}}"#
    ))
    .expect("needle json");
    Needle::new("bench".into(), json, picture).expect("needle")
}

/// Mean milliseconds of `runs` calls of `f`.
fn time_ms(runs: u32, mut f: impl FnMut()) -> f64 {
    f(); // warm up (allocations, caches)
    let start = Instant::now();
    for _ in 0..runs {
        f();
    }
    start.elapsed().as_secs_f64() * 1000.0 / f64::from(runs)
}

/// Boot sector that halts at once: the screen stays the BIOS's VGA text mode.
fn halt_boot_sector() -> Vec<u8> {
    let mut disk = vec![0u8; 1 << 20];
    disk[..4].copy_from_slice(&[0xFA, 0xF4, 0xEB, 0xFD]); // cli; hlt; jmp hlt
    disk[510] = 0x55;
    disk[511] = 0xAA;
    disk
}

fn main() -> anyhow::Result<()> {
    {
        let disk = aero_storage::MemoryDisk::new(halt_boot_sector(), 512, true)?;
        let mut machine = Machine::new(MachineConfig {
            memory_bytes: 64 << 20,
            hda: Some(Box::new(disk)),
            ..Default::default()
        })?;
        machine.run_for(1_000_000_000);
        let first = machine.display_generation();
        let frame = machine.last_screen();
        let (w, h) = (frame.width, frame.height);
        let unchanged = time_ms(50, || {
            assert_eq!(machine.display_generation(), first, "text screen changed");
        });
        let render = time_ms(10, || {
            machine.screen();
        });
        println!(
            "VGA text {w}x{h}: display_generation (unchanged) {:.0} ns, render {render:.2} ms",
            unchanged * 1e6
        );
    }
    for (w, h) in [(1024u32, 768u32), (1920, 1080)] {
        let disk = aero_storage::MemoryDisk::new(vbe_boot_sector(w as u16, h as u16), 512, true)?;
        let mut machine = Machine::new(MachineConfig {
            memory_bytes: 64 << 20,
            hda: Some(Box::new(disk)),
            ..Default::default()
        })?;
        machine.run_for(1_000_000_000);
        let frame = machine.screen();
        anyhow::ensure!(
            (frame.width, frame.height) == (w, h),
            "the guest did not set {w}x{h} (screen is {}x{})",
            frame.width,
            frame.height
        );
        machine.display_generation();
        let unchanged = time_ms(50, || {
            machine.display_generation();
        });

        let screen_img = busy_screen(w, h, 1);
        let convert = time_ms(10, || {
            Screen::of(&screen_img);
        });
        let screen = Screen::of(&screen_img);
        let (x, y) = (w / 3, h / 3);
        let present = needle(screen_img.clone(), x, y);
        anyhow::ensure!(present.find_on(&screen).ok(), "the needle should match");
        let found = time_ms(20, || {
            present.find_on(&screen);
        });
        let absent = needle(busy_screen(w, h, 2), x, y);
        anyhow::ensure!(!absent.find_on(&screen).ok(), "the needle should not match");
        let not_found = time_ms(20, || {
            absent.find_on(&screen);
        });
        println!(
            "{w}x{h}: display_generation (unchanged) {unchanged:.2} ms, Screen::new {convert:.2} ms, \
             needle found at its place {found:.3} ms, needle absent (margin searched) {not_found:.2} ms"
        );
    }
    Ok(())
}
