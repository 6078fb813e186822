//! HD Audio with a real guest: Linux's `snd-hda-intel` binds Aero's ICH6 controller, the
//! generic codec parser builds a card from Aero's codec, and through the OSS emulation
//! (/dev/dsp: 8 kHz unsigned 8-bit mono, converted by ALSA to what the codec takes) the
//! guest plays a 1 kHz tone and records from the line-in jack. `aero headless
//! --audio-wav` captures the playback and `--audio-in-wav` feeds a 1.5 kHz tone in; both
//! frequencies and the played length are checked.

mod common;
use std::path::Path;

use aero::audio_file::{Wav, read_wav};

/// Samples in the guest's tone: 1024 periods of 8 samples at 8 kHz (1.024 s).
const TONE_SAMPLES: usize = 8192;
const GUEST_RATE: u32 = 8000;
const RECORD_BYTES: usize = 8000;

/// The body of the guest's /init, appended to the storage initramfs (which carries the sound
/// modules in /lib/modules/sound).
const INIT: &str = r#"# The controller driver last: its (asynchronous) probe binds the codec to the generic
# parser, which must be loaded by then (there is no modprobe to fetch it).
for m in $(grep -v '^snd-hda-intel$' /lib/modules/sound/order) snd-hda-intel; do
    insmod "/lib/modules/sound/$m.ko" || echo "AERO-SND-INSMOD-FAILED=$m"
done
i=0
while [ ! -e /dev/dsp ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
echo "AERO-SND-DRIVER=$(basename "$(readlink /sys/class/sound/card0/device/driver)")"
echo "AERO-SND-PCI=$(basename "$(readlink /sys/class/sound/card0/device)")"
echo "AERO-SND-CODEC=$(grep -m1 '^Codec:' '/proc/asound/card0/codec#0')"
echo "AERO-SND-DSP=$(ls /dev/dsp)"
# ALSA starts with Master and Capture muted: unmute them at full volume through the OSS
# mixer (the test's tiny /bin/aero-mixer does the two ioctls).
/bin/aero-mixer && echo "AERO-SND-MIXER=ok"
# One period of a 1 kHz sine at 8 kHz, unsigned 8-bit, doubled to 1024 periods.
printf '\200\332\377\332\200\046\001\046' >/tmp/tone
for i in 1 2 3 4 5 6 7 8 9 10; do cat /tmp/tone /tmp/tone >/tmp/t2; mv /tmp/t2 /tmp/tone; done
echo "AERO-SND-TONE-BYTES=$(wc -c </tmp/tone)"
cat /tmp/tone >/dev/dsp && echo "AERO-SND-PLAYED"
head -c @RECORD@ /dev/dsp >/tmp/rec
echo "AERO-SND-REC-BYTES=$(wc -c </tmp/rec)"
echo "AERO-SND-REC-BEGIN"
od -An -v -tx1 /tmp/rec
echo "AERO-SND-REC-END"
echo "AERO-SND-DONE"
"#;

/// Arguments booting the amd64 kernel directly with the storage initramfs (modules) plus
/// our /init.
fn boot_with_init(dir: &Path) -> Vec<String> {
    let init = common::guest_init(INIT).replace("@RECORD@", &RECORD_BYTES.to_string());
    common::linux_direct_with_files(
        dir,
        "initrd-amd64-storage.img",
        &[
            ("init", 0o100755, init.into_bytes()),
            ("bin/aero-mixer", 0o100755, mixer_program()),
        ],
    )
}

/// A static x86-64 Linux program (hand-assembled, 213 bytes) that sets the OSS mixer's
/// VOLUME (ALSA's Master) and IGAIN (Capture) to 100% on both channels, which also turns
/// their switches on; exits 0 when both ioctls succeed.
fn mixer_program() -> Vec<u8> {
    const BASE: u64 = 0x40_0000;
    const CODE_AT: u64 = 64 + 56;
    #[rustfmt::skip]
    let code: [u8; 93] = [
        0xb8, 0x02, 0, 0, 0,                // mov eax, 2 (open)
        0x48, 0x8d, 0x3d, 70, 0, 0, 0,      // lea rdi, [rip + path]
        0xbe, 0x02, 0, 0, 0,                // mov esi, O_RDWR
        0x31, 0xd2,                         // xor edx, edx
        0x0f, 0x05,                         // syscall
        0x89, 0xc7,                         // mov edi, eax (the fd)
        0xb8, 0x10, 0, 0, 0,                // mov eax, 16 (ioctl)
        0xbe, 0x00, 0x4d, 0x04, 0xc0,       // mov esi, SOUND_MIXER_WRITE_VOLUME
        0x48, 0x8d, 0x15, 34, 0, 0, 0,      // lea rdx, [rip + volume]
        0x0f, 0x05,                         // syscall
        0x89, 0xc3,                         // mov ebx, eax
        0xb8, 0x10, 0, 0, 0,                // mov eax, 16 (ioctl)
        0xbe, 0x0c, 0x4d, 0x04, 0xc0,       // mov esi, SOUND_MIXER_WRITE_IGAIN
        0x48, 0x8d, 0x15, 17, 0, 0, 0,      // lea rdx, [rip + gain]
        0x0f, 0x05,                         // syscall
        0x09, 0xc3,                         // or ebx, eax
        0x89, 0xdf,                         // mov edi, ebx
        0xb8, 0x3c, 0, 0, 0,                // mov eax, 60 (exit)
        0x0f, 0x05,                         // syscall
        100, 100, 0, 0,                     // volume: left 100, right 100
        100, 100, 0, 0,                     // gain
        b'/', b'd', b'e', b'v', b'/', b'm', b'i', b'x', b'e', b'r', 0,
    ];
    let total = CODE_AT + code.len() as u64;
    let mut elf = Vec::new();
    elf.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    elf.extend_from_slice(&2u16.to_le_bytes()); // executable
    elf.extend_from_slice(&0x3eu16.to_le_bytes()); // x86-64
    elf.extend_from_slice(&1u32.to_le_bytes());
    elf.extend_from_slice(&(BASE + CODE_AT).to_le_bytes()); // entry
    elf.extend_from_slice(&64u64.to_le_bytes()); // program headers
    elf.extend_from_slice(&0u64.to_le_bytes()); // no sections
    elf.extend_from_slice(&0u32.to_le_bytes());
    for v in [64u16, 56, 1, 0, 0, 0] {
        elf.extend_from_slice(&v.to_le_bytes());
    }
    // One loadable segment, read/write/execute (the ioctls write their value back).
    elf.extend_from_slice(&1u32.to_le_bytes());
    elf.extend_from_slice(&7u32.to_le_bytes());
    for v in [0, BASE, BASE, total, total, 0x1000] {
        elf.extend_from_slice(&v.to_le_bytes());
    }
    elf.extend_from_slice(&code);
    elf
}

/// A 16-bit stereo WAV of a `hz` sine at half scale.
fn tone_wav(path: &Path, rate: u32, hz: f64, seconds: f64) {
    let frames = (f64::from(rate) * seconds) as u32;
    let mut out = Vec::new();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + frames * 4).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    for v in [16u32, 1 | 2 << 16, rate, rate * 4, 4 | 16 << 16] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(frames * 4).to_le_bytes());
    for i in 0..frames {
        let v = (f64::from(i) * hz * std::f64::consts::TAU / f64::from(rate)).sin() * 16000.0;
        let s = (v as i16).to_le_bytes();
        out.extend_from_slice(&[s[0], s[1], s[0], s[1]]);
    }
    std::fs::write(path, out).unwrap();
}

/// The strongest frequency (1 Hz steps up to half the rate) of `samples`, by direct DFT.
fn dominant_hz(samples: &[f32], rate: u32) -> f64 {
    let mean = samples.iter().sum::<f32>() / samples.len().max(1) as f32;
    let mut best = (0.0f64, 0.0f64);
    for hz in 20..rate / 2 {
        let w = std::f64::consts::TAU * f64::from(hz) / f64::from(rate);
        let (mut re, mut im) = (0.0f64, 0.0f64);
        for (i, &s) in samples.iter().enumerate() {
            let v = f64::from(s - mean);
            re += v * (w * i as f64).cos();
            im += v * (w * i as f64).sin();
        }
        let power = re * re + im * im;
        if power > best.1 {
            best = (f64::from(hz), power);
        }
    }
    best.0
}

/// The value the guest printed as `AERO-SND-KEY=value`.
fn report<'a>(serial: &'a str, key: &str) -> Option<&'a str> {
    common::serial_value(serial, &format!("AERO-SND-{key}"))
}

#[test]
fn linux_plays_a_1khz_tone_and_records_the_line_in() {
    let dir = common::work_dir("sound-play-record");
    let boot = boot_with_init(&dir);
    let serial = dir.join("serial.txt");
    let played = dir.join("played.wav");
    let input = dir.join("input.wav");
    tone_wav(&input, 48_000, 1500.0, 3.0);
    let mut args = vec![
        "headless",
        "--serial",
        serial.to_str().unwrap(),
        "--until-serial",
        "AERO-SND-DONE",
        "--timeout",
        "300",
        "--audio-wav",
        played.to_str().unwrap(),
        "--audio-in-wav",
        input.to_str().unwrap(),
    ];
    args.extend(boot.iter().map(String::as_str));
    let text = common::run_aero(&args, &serial);
    assert_eq!(report(&text, "DRIVER"), Some("snd_hda_intel"), "{text}");
    assert_eq!(report(&text, "PCI"), Some("0000:00:1b.0"), "{text}");
    assert_eq!(report(&text, "DSP"), Some("/dev/dsp"), "{text}");
    assert_eq!(
        report(&text, "CODEC"),
        Some("Codec: Generic a3a0 Generic"),
        "{text}"
    );
    assert_eq!(report(&text, "MIXER"), Some("ok"), "{text}");
    assert!(!text.contains("INSMOD-FAILED"), "{text}");
    assert_eq!(report(&text, "TONE-BYTES"), Some("8192"), "{text}");
    assert!(text.contains("AERO-SND-PLAYED"), "{text}");

    // Playback: the tone, as long as the guest played it.
    let Wav { rate_hz, frames } = read_wav(&played).unwrap();
    assert_eq!(rate_hz, GUEST_RATE, "the stream ran at the guest's rate");
    let first = frames
        .iter()
        .position(|f| f[0] != 0.0)
        .expect("sound played");
    let last = frames.iter().rposition(|f| f[0] != 0.0).unwrap();
    let span = last + 1 - first;
    assert!(
        (TONE_SAMPLES - 8..=TONE_SAMPLES).contains(&span),
        "{span} frames of sound, {TONE_SAMPLES} played"
    );
    assert!(frames.len() >= span && frames.len() < span + GUEST_RATE as usize);
    let left: Vec<f32> = frames[first..=last].iter().map(|f| f[0]).collect();
    let hz = dominant_hz(&left, rate_hz);
    assert!((990.0..=1010.0).contains(&hz), "played {hz} Hz");
    assert!(
        frames[first..=last].iter().all(|f| f[0] == f[1]),
        "mono on both channels"
    );

    // Recording: the 1.5 kHz tone fed to the line-in jack, as unsigned 8-bit samples.
    assert_eq!(report(&text, "REC-BYTES"), Some("8000"), "{text}");
    let begin = text.find("AERO-SND-REC-BEGIN").unwrap();
    let end = text.find("AERO-SND-REC-END").unwrap();
    let recorded: Vec<f32> = text[begin..end]
        .lines()
        .skip(1)
        .flat_map(|l| l.split_whitespace())
        .filter_map(|b| u8::from_str_radix(b, 16).ok())
        .map(|b| (f32::from(b) - 128.0) / 128.0)
        .collect();
    assert_eq!(recorded.len(), RECORD_BYTES, "{text}");
    let loud = recorded.iter().filter(|v| v.abs() > 0.2).count();
    assert!(
        loud > RECORD_BYTES / 4,
        "recording is silent ({loud} loud samples)"
    );
    let hz = dominant_hz(&recorded, GUEST_RATE);
    assert!((1485.0..=1515.0).contains(&hz), "recorded {hz} Hz");
}
