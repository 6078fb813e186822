//! The clocks Windows' APIC HAL ticks on, counted by a Linux guest against its own
//! CLOCK_MONOTONIC: the RTC periodic interrupt (IRQ 8 through the IO-APIC) at 64 and
//! 1024 Hz, HPET timer 1 at the same rates on IRQ 8 in legacy-replacement mode, and the
//! system tick on IRQ 0 from HPET timer 0 or the PIT. Every rate must be within 1%.
//!
//! `clock/clock_probe.c` (compiled here with the host's `cc -static`, added to the amd64
//! image's initramfs) programs the RTC's rate and PIE bit through ports 70h/71h and HPET
//! timer 1 through /dev/mem, as a HAL does, and counts the interrupts in /proc/interrupts
//! (Linux's rtc-cmos handler acknowledges the RTC through register C). /dev/rtc0's
//! RTC_IRQP_SET/RTC_PIE_ON would not do: Linux's RTC core emulates the periodic interrupt
//! with an hrtimer and never programs the chip. The kernel runs with
//! `nolapic_timer nohz=off highres=off`, so the tick is the global clock-event device in
//! periodic mode at CONFIG_HZ (250), as Windows' HAL programs it.
//!
//! Two boots:
//! - default: Linux puts the HPET in legacy-replacement mode: timer 0 is the tick on IRQ 0,
//!   timer 1 owns IRQ 8 and the RTC's own interrupt is cut off (the HPET specification's
//!   legacy replacement route; ICH chipsets mask the RTC's IRQ 8 likewise),
//!   so programming the RTC raises nothing.
//! - `hpet=disable`: the PIT is the tick and the RTC raises its periodic interrupt itself.
//!
//! Deterministic mode (headless's default) makes each run reproducible.

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

const HZ: f64 = 250.0;

const INIT: &str = r#"#!/bin/sh
/bin/busybox mkdir -p /proc /dev /sys
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox mount -t sysfs sysfs /sys
exec >/dev/ttyS0 2>&1
/bin/busybox dmesg -n 1
echo "AERO-CLOCKSOURCE=$(/bin/busybox cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
/bin/busybox grep -E '^Clock Event Device|mode:|event_handler' /proc/timer_list
/clock_probe cmos 64 3
/clock_probe cmos 1024 1
if /bin/busybox grep -q 'Clock Event Device: hpet' /proc/timer_list; then
    /clock_probe hpet1 64 3
    /clock_probe hpet1 1024 1
fi
/clock_probe irq 0 2
/bin/busybox cat /proc/interrupts
echo AERO-CLOCK-DONE
/bin/busybox poweroff -f
while :; do /bin/busybox sleep 3600; done
"#;

/// The probe, built from its source for the guest (static: the initramfs has no libc).
fn probe(dir: &Path) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clock/clock_probe.c");
    let out = dir.join("clock_probe");
    let status = Command::new("cc")
        .args(["-static", "-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("cc (gcc, from tests/install-deps.sh)");
    assert!(status.success(), "compiling {}", src.display());
    out
}

/// Arguments booting the amd64 kernel directly (the vmlinux, through PVH: this test is
/// about the clocks, not the boot path) with the probe in its initramfs and `extra` on
/// the kernel command line.
fn boot_args(dir: &Path, extra: &str) -> Vec<String> {
    let probe = std::fs::read(probe(dir)).unwrap();
    let files = [
        ("init", 0o100755, INIT.as_bytes().to_vec()),
        ("clock_probe", 0o100755, probe),
    ];
    let initrd = common::initrd_with_files(dir, "initrd-amd64.img", &files);
    vec![
        "--kernel".into(),
        common::amd64_vmlinux().to_str().unwrap().into(),
        "--initrd".into(),
        initrd.to_str().unwrap().into(),
        "--append".into(),
        format!(
            "console=ttyS0,115200 loglevel=4 panic=-1 nolapic_timer nohz=off highres=off {extra}"
        ),
    ]
}

/// Boots and returns the serial output up to AERO-CLOCK-DONE.
fn run(test: &str, extra: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("clock-{test}"));
    std::fs::create_dir_all(&dir).unwrap();
    let boot = boot_args(&dir, extra);
    let serial = dir.join("serial.txt");
    let _ = std::fs::remove_file(&serial);
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(["headless", "--snapshot", "--serial"])
        .arg(&serial)
        .args(["--until-serial", "AERO-CLOCK-DONE", "--timeout", "300"])
        .args(&boot)
        .output()
        .expect("run aero");
    let text = String::from_utf8_lossy(&std::fs::read(&serial).unwrap_or_default()).into_owned();
    assert!(
        text.contains("AERO-CLOCK-DONE"),
        "aero: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    text
}

/// (count, seconds) of the probe line of `kind` (and `hz` for the RTC).
fn measured(serial: &str, kind: &str, hz: u32) -> (f64, f64) {
    let line = serial
        .lines()
        .find(|l| {
            l.starts_with("AERO-CLOCK ")
                && l.contains(&format!("kind={kind} "))
                && l.contains(&format!("hz={hz} "))
        })
        .unwrap_or_else(|| panic!("no {kind} {hz} Hz result:\n{serial}"));
    let value = |key: &str| -> f64 {
        line.split(' ')
            .find_map(|f| f.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{key} in {line:?}"))
    };
    (value("count"), value("ns") / 1e9)
}

fn assert_rate(serial: &str, kind: &str, hz: u32, expected_hz: f64) {
    let (count, seconds) = measured(serial, kind, hz);
    let rate = count / seconds;
    assert!(
        (rate / expected_hz - 1.0).abs() < 0.01,
        "{kind} at {hz} Hz: {count} interrupts in {seconds:.4} s = {rate:.2} Hz, \
         expected {expected_hz} Hz within 1%:\n{serial}"
    );
}

#[test]
fn hpet_legacy_replacement_timers_tick_at_their_rates() {
    let serial = run("hpet", "");
    assert!(
        serial.contains("Clock Event Device: hpet"),
        "the HPET is not the clock-event device:\n{serial}"
    );
    assert!(!serial.contains("AERO-CLOCK-ERROR"), "{serial}");
    assert_rate(&serial, "hpet1", 64, 64.0);
    assert_rate(&serial, "hpet1", 1024, 1024.0);
    assert_rate(&serial, "irq0", 0, HZ);
    for hz in [64, 1024] {
        assert_eq!(
            measured(&serial, "cmos", hz).0,
            0.0,
            "the RTC reached IRQ 8 in legacy-replacement mode:\n{serial}"
        );
    }
}

#[test]
fn rtc_periodic_interrupt_and_pit_tick_with_hpet_disable() {
    let serial = run("no-hpet", "hpet=disable");
    assert!(
        serial.contains("Clock Event Device: pit"),
        "the PIT is not the clock-event device:\n{serial}"
    );
    assert!(!serial.contains("Clock Event Device: hpet"), "{serial}");
    assert!(!serial.contains("AERO-CLOCK-ERROR"), "{serial}");
    assert_rate(&serial, "cmos", 64, 64.0);
    assert_rate(&serial, "cmos", 1024, 1024.0);
    assert_rate(&serial, "irq0", 0, HZ);
}
