//! The machine monitor: QEMU-like line commands that change CD/DVD and floppy media while
//! the guest runs. `aero headless --monitor FILE|stdio` reads them; the window's host key
//! and file drops use the same operations.
//!
//! Commands (as in QEMU's monitor):
//!   eject [-f] [DRIVE]            open the tray and take the disc out (-f: even if locked)
//!   change DRIVE FILE [FORMAT]    put FILE in the drive (the old disc comes out)
//!   info block                    the CD/DVD and floppy drives, their media and trays
//!   sendkey KEYS [HOLD_MS]        press KEYS (QEMU names joined by '-': ctrl-alt-delete,
//!                                 shift-a, ret, f1), hold them (100 ms), release them
//!   type TEXT                     type TEXT on a US keyboard (\n is Enter, \t is Tab)
//!   screendump FILE               write the screen as PNG (QEMU writes PPM unless -f png)
//!   mouse_move DX DY [DZ]         move the mouse by DX right, DY down (DZ: wheel)
//!   mouse_button MASK             set the buttons held: 1 left, 2 right, 4 middle
//!   mouse_move_abs X Y            put the USB tablet's pointer on screen pixel X,Y
//!   click X Y [BUTTON]            move there, press BUTTON (1 left), release it
//!   system_powerdown              press the ACPI power button
//!   set_link nic on|off           plug or pull the e1000's cable (link-change interrupt)
//!   gamepad_attach [PAD]          plug a USB HID gamepad for host pad PAD (0) into a free
//!                                 root port; gamepad_detach [PAD] pulls it
//!   gamepad_button N on|off [PAD] press or release button N (1-16)
//!   gamepad_axis AXIS V [PAD]     put axis x, y (left stick), z or rz (right stick) at V
//!                                 in -127..=127 (positive right/down)
//!   gamepad_hat DIR [PAD]         the hat: up, up-right, right, ... up-left, or centre
//!   quit                          stop the emulator (exit 0)
//!   help
//! and four that say *when* the following lines run, so a script is deterministic:
//!   at SECONDS                    wait until the guest clock reaches SECONDS
//!   wait-serial TEXT              wait until TEXT appears on COM1 (after what the previous
//!                                 wait-serial matched)
//!   wait-screen TEXT              wait until TEXT is on the text-mode screen
//!   wait-match NEEDLE.json [SECONDS]  wait until the screen matches the openQA needle; with
//!                                 SECONDS, give up after that much guest time (an error
//!                                 naming the closest area; the script goes on)
//! Absolute pointing needs the USB tablet (`--usb`) bound by a guest driver: a PS/2 mouse
//! reports motion, which the guest turns into a position with its own acceleration, so
//! no sum of motions says where the pointer is. Before the guest has configured the
//! tablet, `mouse_move_abs` and `click` are errors. `mouse_move` goes to the USB mouse once
//! the guest configured it, else to the PS/2 mouse; `mouse_button` also to the tablet.
//! Keys go out one keyboard event every 10 ms of guest time, each only once the guest has
//! read the one before, and the lines after a `sendkey` or `type` wait until its last key
//! is released.
//! Drives are named like QEMU's: `ide1-cd0` is the IDE secondary master (where `--cdrom`
//! goes), `ide0-cd1` the primary slave, `ahci2-cd0` AHCI port 2, `floppy0` drive A (there
//! when the machine started with `--fda`; a floppy taken out is flushed first). DRIVE may be
//! left out of `eject` when there is one CD drive. Errors are messages; the guest runs on.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};

use aero_machine::{
    CdStatus, DriveSlot, FloppyStatus, GamepadAxis, GamepadInput, Machine, MachineError, MediaError,
};
use aero_storage::ImageFormat;

use aero::needle::Needle;

use crate::drives;
use crate::run::keymap;
use crate::screen_watch::ScreenWatch;
use winit::keyboard::KeyCode;

/// One monitor command.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Eject {
        drive: Option<String>,
        force: bool,
    },
    Change {
        drive: String,
        file: PathBuf,
        format: Option<ImageFormat>,
    },
    InfoBlock,
    /// Keys pressed in order, held, released in reverse order.
    SendKey {
        keys: Vec<KeyCode>,
        hold_ms: u64,
    },
    Type(String),
    Screendump(PathBuf),
    /// Relative PS/2 motion with the buttons currently held.
    MouseMove {
        dx: i32,
        dy: i32,
        dz: i32,
    },
    MouseMoveAbs {
        x: u32,
        y: u32,
    },
    MouseButton(u8),
    Click {
        x: u32,
        y: u32,
        button: u8,
    },
    SystemPowerdown,
    /// The NIC's cable plugged in (true) or pulled.
    SetLink(bool),
    /// A gamepad plugged, pulled or moved (`gamepad_*`).
    Gamepad(GamepadInput),
    Help,
    Quit,
}

/// A line of a monitor script: a command or a point in time to wait for.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    Run(Command),
    /// Guest time in nanoseconds.
    At(u64),
    WaitSerial(String),
    WaitScreen(String),
    /// An openQA needle's json; give up after this much guest time (None: never).
    WaitMatch {
        needle: PathBuf,
        timeout_ns: Option<u64>,
    },
}

const HELP: &str = "\
eject [-f] [DRIVE]          open the tray and take the disc out (-f: even if the guest locked it)
change DRIVE FILE [FORMAT]  insert FILE (raw ISO or floppy image, or qcow2/vhd) into DRIVE
info block                  list the CD/DVD and floppy drives
sendkey KEYS [HOLD_MS]      press keys (QEMU names joined by '-', e.g. ctrl-alt-delete), hold, release
type TEXT                   type TEXT on a US keyboard (\\n = Enter, \\t = Tab)
screendump FILE             write the screen to FILE as PNG
mouse_move DX DY [DZ]       move the mouse (DY down-positive, DZ wheel)
mouse_button MASK           hold buttons: 1 left, 2 right, 4 middle (0 releases)
mouse_move_abs X Y          put the USB tablet's pointer on screen pixel X,Y (needs --usb)
click X Y [BUTTON]          click at X,Y with the USB tablet (needs --usb)
system_powerdown            press the ACPI power button
set_link nic on|off         plug or pull the NIC's cable
gamepad_attach [PAD]        plug a USB gamepad in for pad PAD (default 0); gamepad_detach [PAD]
gamepad_button N on|off [PAD]  press or release gamepad button N (1-16)
gamepad_axis AXIS V [PAD]   gamepad axis x|y|z|rz to V in -127..=127 (positive right/down)
gamepad_hat DIR [PAD]       gamepad hat: centre, up, up-right, right, down-right, down, ...
quit                        stop the emulator
at SECONDS                  (scripts) run the next lines once the guest clock reaches SECONDS
wait-serial TEXT            (scripts) run the next lines once TEXT appeared on COM1
wait-screen TEXT            (scripts) run the next lines once TEXT is on the text-mode screen
wait-match NEEDLE [SECONDS] (scripts) run the next lines once the screen matches the needle
DRIVE: ide1-cd0 (IDE secondary master, --cdrom), ide0-cd1 (primary slave), ahci2-cd0 (AHCI port 2),
       floppy0 (drive A, --fda)";

/// QEMU's name for floppy drive A.
const FLOPPY_NAME: &str = "floppy0";

/// The media files the monitor starts with, and how new floppies are opened.
#[derive(Debug, Default)]
pub struct MediaFiles {
    /// The disc image in each CD/DVD drive.
    pub cds: HashMap<DriveSlot, PathBuf>,
    /// The image in floppy drive A.
    pub floppy: Option<PathBuf>,
    /// `--snapshot`: floppies inserted later are never written either.
    pub snapshot: bool,
}

/// A drive the monitor can change media in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    Cd(DriveSlot),
    Floppy,
}

/// Splits a line into words; "double quotes" keep spaces (for file names).
fn words(line: &str) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        if c == '"' {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some(ch) => word.push(ch),
                    None => anyhow::bail!("unterminated quote"),
                }
            }
        } else {
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() {
                    break;
                }
                word.push(ch);
                chars.next();
            }
        }
        out.push(word);
    }
    Ok(out)
}

/// Parses one line; `Ok(None)` for blank lines and `#` comments.
pub fn parse_line(line: &str) -> anyhow::Result<Option<Line>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    if let Some(text) = line.strip_prefix("wait-serial") {
        let text = text.trim();
        anyhow::ensure!(
            !text.is_empty() && line.as_bytes().get(11).is_some_and(u8::is_ascii_whitespace),
            "usage: wait-serial TEXT"
        );
        return Ok(Some(Line::WaitSerial(text.to_string())));
    }
    if let Some(text) = line.strip_prefix("wait-screen") {
        let text = text.trim();
        anyhow::ensure!(
            !text.is_empty() && line.as_bytes().get(11).is_some_and(u8::is_ascii_whitespace),
            "usage: wait-screen TEXT"
        );
        return Ok(Some(Line::WaitScreen(text.to_string())));
    }
    if let Some(text) = line.strip_prefix("type")
        && text.starts_with(char::is_whitespace)
    {
        let text = text.trim();
        let text = text
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap_or(text);
        return Ok(Some(Line::Run(Command::Type(unescape(text)?))));
    }
    let w = words(line)?;
    let args: Vec<&str> = w.iter().map(String::as_str).collect();
    let line = match args.as_slice() {
        ["at", secs] => Line::At(seconds_ns("at", secs)?),
        ["wait-match", needle, secs @ ..] if secs.len() <= 1 => Line::WaitMatch {
            needle: PathBuf::from(needle),
            timeout_ns: secs
                .first()
                .map(|s| seconds_ns("wait-match", s))
                .transpose()?,
        },
        ["wait-match", ..] => anyhow::bail!("usage: wait-match NEEDLE.json [SECONDS]"),
        ["screendump", file] => Line::Run(Command::Screendump(PathBuf::from(file))),
        ["screendump", ..] => anyhow::bail!("usage: screendump FILE.png"),
        ["mouse_move", dx, dy, dz @ ..] if dz.len() <= 1 => Line::Run(Command::MouseMove {
            dx: motion(dx)?,
            dy: motion(dy)?,
            dz: dz.first().map(|d| motion(d)).transpose()?.unwrap_or(0),
        }),
        ["mouse_move", ..] => anyhow::bail!("usage: mouse_move DX DY [DZ]"),
        ["mouse_move_abs", x, y] => Line::Run(Command::MouseMoveAbs {
            x: coordinate(x)?,
            y: coordinate(y)?,
        }),
        ["mouse_move_abs", ..] => anyhow::bail!("usage: mouse_move_abs X Y"),
        ["mouse_button", mask] => Line::Run(Command::MouseButton(button_mask(mask)?)),
        ["mouse_button", ..] => anyhow::bail!("usage: mouse_button MASK"),
        ["click", x, y, button @ ..] if button.len() <= 1 => Line::Run(Command::Click {
            x: coordinate(x)?,
            y: coordinate(y)?,
            button: button
                .first()
                .map(|b| button_mask(b))
                .transpose()?
                .unwrap_or(1),
        }),
        ["click", ..] => anyhow::bail!("usage: click X Y [BUTTON]"),
        ["system_powerdown"] => Line::Run(Command::SystemPowerdown),
        ["set_link", "nic", state @ ("on" | "off")] => Line::Run(Command::SetLink(*state == "on")),
        ["set_link", ..] => anyhow::bail!("usage: set_link nic on|off"),
        [cmd, args @ ..] if cmd.starts_with("gamepad_") => {
            Line::Run(Command::Gamepad(parse_gamepad(cmd, args)?))
        }
        ["eject", rest @ ..] => {
            let force = rest.first() == Some(&"-f");
            let rest = if force { &rest[1..] } else { rest };
            anyhow::ensure!(rest.len() <= 1, "usage: eject [-f] [DRIVE]");
            Line::Run(Command::Eject {
                drive: rest.first().map(|s| s.to_string()),
                force,
            })
        }
        ["change", drive, file, format @ ..] if format.len() <= 1 => Line::Run(Command::Change {
            drive: drive.to_string(),
            file: PathBuf::from(file),
            format: format
                .first()
                .map(|f| drives::parse_format(f))
                .transpose()?,
        }),
        ["change", ..] => anyhow::bail!("usage: change DRIVE FILE [FORMAT]"),
        ["sendkey", keys, hold @ ..] if hold.len() <= 1 => {
            let keys = keys
                .split('-')
                .map(|k| {
                    keymap::qemu_key(k).ok_or_else(|| anyhow::anyhow!("sendkey: unknown key {k:?}"))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let hold_ms =
                match hold.first() {
                    Some(ms) => ms.parse().ok().filter(|ms| *ms <= 60_000).ok_or_else(|| {
                        anyhow::anyhow!("sendkey: {ms:?} is not a hold time in ms")
                    })?,
                    None => 100,
                };
            Line::Run(Command::SendKey { keys, hold_ms })
        }
        ["sendkey", ..] => anyhow::bail!("usage: sendkey KEYS [HOLD_MS]"),
        ["info", "block"] => Line::Run(Command::InfoBlock),
        ["info", ..] => anyhow::bail!("usage: info block"),
        ["help"] | ["?"] => Line::Run(Command::Help),
        ["quit"] | ["q"] => Line::Run(Command::Quit),
        [other, ..] => anyhow::bail!("unknown command {other:?} (try help)"),
        [] => return Ok(None),
    };
    Ok(Some(line))
}

/// The `gamepad_*` commands; PAD, the last argument, is 0 when left out.
fn parse_gamepad(cmd: &str, args: &[&str]) -> anyhow::Result<GamepadInput> {
    let (usage, fixed) = match cmd {
        "gamepad_attach" => ("gamepad_attach [PAD]", 0),
        "gamepad_detach" => ("gamepad_detach [PAD]", 0),
        "gamepad_button" => ("gamepad_button N on|off [PAD]", 2),
        "gamepad_axis" => ("gamepad_axis x|y|z|rz VALUE [PAD]", 2),
        "gamepad_hat" => ("gamepad_hat DIRECTION [PAD]", 1),
        other => anyhow::bail!("unknown command {other:?} (try help)"),
    };
    anyhow::ensure!(
        args.len() == fixed || args.len() == fixed + 1,
        "usage: {usage}"
    );
    let pad = match args.get(fixed) {
        Some(p) => p
            .parse()
            .map_err(|_| anyhow::anyhow!("{cmd}: {p:?} is not a pad number"))?,
        None => 0,
    };
    Ok(match cmd {
        "gamepad_attach" => GamepadInput::Connected { pad },
        "gamepad_detach" => GamepadInput::Disconnected { pad },
        "gamepad_button" => GamepadInput::Button {
            pad,
            button: args[0]
                .parse()
                .ok()
                .filter(|b| (1..=16).contains(b))
                .ok_or_else(|| anyhow::anyhow!("{cmd}: {:?} is not a button 1-16", args[0]))?,
            pressed: match args[1] {
                "on" | "1" | "down" => true,
                "off" | "0" | "up" => false,
                other => anyhow::bail!("{cmd}: {other:?} is neither on nor off"),
            },
        },
        "gamepad_axis" => GamepadInput::Axis {
            pad,
            axis: match args[0] {
                "x" => GamepadAxis::X,
                "y" => GamepadAxis::Y,
                "z" => GamepadAxis::Z,
                "rz" => GamepadAxis::Rz,
                other => anyhow::bail!("{cmd}: {other:?} is not an axis (x, y, z, rz)"),
            },
            value: args[1]
                .parse::<i8>()
                .ok()
                .filter(|v| *v >= -127)
                .map(|v| f32::from(v) / 127.0)
                .ok_or_else(|| anyhow::anyhow!("{cmd}: {:?} is not in -127..=127", args[1]))?,
        },
        _ => GamepadInput::Hat {
            pad,
            direction: match args[0] {
                "centre" | "center" | "none" => None,
                "up" => Some(0),
                "up-right" => Some(1),
                "right" => Some(2),
                "down-right" => Some(3),
                "down" => Some(4),
                "down-left" => Some(5),
                "left" => Some(6),
                "up-left" => Some(7),
                other => anyhow::bail!("{cmd}: {other:?} is not a direction"),
            },
        },
    })
}

/// A number of seconds of guest time (`at`, `wait-match`), in nanoseconds.
fn seconds_ns(what: &str, secs: &str) -> anyhow::Result<u64> {
    let s: f64 = secs
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s < 1e9)
        .ok_or_else(|| anyhow::anyhow!("{what}: {secs:?} is not a number of seconds"))?;
    Ok((s * 1e9) as u64)
}

/// Largest mouse motion one `mouse_move` sends (the PS/2 queue holds far less anyway).
const MAX_MOTION: i32 = 65_535;

fn motion(v: &str) -> anyhow::Result<i32> {
    v.parse()
        .ok()
        .filter(|v: &i32| v.abs() <= MAX_MOTION)
        .ok_or_else(|| {
            anyhow::anyhow!("mouse_move: {v:?} is not a motion in -{MAX_MOTION}..={MAX_MOTION}")
        })
}

fn coordinate(v: &str) -> anyhow::Result<u32> {
    v.parse()
        .ok()
        .filter(|v: &u32| *v <= 65_535)
        .ok_or_else(|| anyhow::anyhow!("{v:?} is not a screen coordinate"))
}

/// Mouse buttons as QEMU's `mouse_button`: bit 0 left, 1 right, 2 middle.
fn button_mask(v: &str) -> anyhow::Result<u8> {
    v.parse()
        .ok()
        .filter(|v: &u8| *v <= 7)
        .ok_or_else(|| anyhow::anyhow!("{v:?} is not a button mask (1 left, 2 right, 4 middle)"))
}

/// What `mouse_move_abs` and `click` answer before the guest has bound the tablet.
const NO_TABLET: &str = "absolute pointer positions need a USB tablet configured by the \
    guest (--usb, and a guest USB HID driver), and there is none; the PS/2 mouse only \
    reports motion (mouse_move DX DY, mouse_button MASK)";

/// `type`'s text with `\n`, `\t`, `\"` and `\\` turned into the characters.
fn unescape(text: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('n') => '\n',
            Some('t') => '\t',
            Some('"') => '"',
            Some('\\') => '\\',
            other => anyhow::bail!("type: unknown escape \\{}", other.unwrap_or(' ')),
        });
    }
    Ok(out)
}

/// QEMU-style name of the CD drive in `slot`.
pub fn drive_name(slot: DriveSlot) -> String {
    match slot {
        DriveSlot::Ide { channel, slave } => format!("ide{channel}-cd{}", slave as u8),
        DriveSlot::Ahci(port) => format!("ahci{port}-cd0"),
    }
}

fn parse_drive_name(name: &str) -> Option<DriveSlot> {
    if let Some(rest) = name.strip_prefix("ide") {
        let (channel, unit) = rest.split_once("-cd")?;
        let (channel, unit) = (channel.parse::<u8>().ok()?, unit.parse::<u8>().ok()?);
        (channel < 2 && unit < 2).then_some(DriveSlot::Ide {
            channel,
            slave: unit == 1,
        })
    } else {
        let port = name.strip_prefix("ahci")?.strip_suffix("-cd0")?;
        port.parse().ok().map(DriveSlot::Ahci)
    }
}

/// Keeps only the last `keep` bytes of `buf`.
fn keep_tail(buf: &mut Vec<u8>, keep: usize) {
    if buf.len() > keep {
        buf.drain(..buf.len() - keep);
    }
}

/// Serial output a script may still wait for, at most.
const SERIAL_BACKLOG: usize = 64 * 1024;
/// Guest time between two keyboard events of `sendkey` / `type`.
const KEY_GAP_NS: u64 = 10_000_000;
/// Characters one `type` may send (each is up to four keyboard events).
const MAX_TYPED: usize = 4096;

pub struct Monitor {
    /// Lines waiting to run, with their origin for messages ("line 3" / "stdin").
    /// A line typed wrong stays in order as its error message.
    pending: VecDeque<(String, Result<Line, String>)>,
    /// Lines typed on stdin (read by a helper thread).
    input: Option<Receiver<String>>,
    /// Where replies and errors go.
    out: Box<dyn Write + Send>,
    /// COM1 output not yet searched by a `wait-serial`.
    serial: Vec<u8>,
    /// The image file in each drive, as far as we know.
    files: HashMap<DriveSlot, PathBuf>,
    /// The last disc taken out of each drive (the window's eject key puts it back).
    ejected: HashMap<DriveSlot, PathBuf>,
    /// The image in floppy drive A, as far as we know.
    floppy: Option<PathBuf>,
    snapshot: bool,
    quit: bool,
    /// Keyboard events (set-2 bytes) still to send, with the guest time each is due.
    keys: VecDeque<(u64, Vec<u8>)>,
    /// Mouse buttons held (`mouse_button`), sent with every motion.
    buttons: u8,
    /// The tablet pointer's last position (tablet coordinates).
    tablet_xy: (u16, u16),
    /// The `wait-match` line running now.
    match_wait: Option<MatchWait>,
    /// The last `wait-match` that gave up, for a caller that saves artifacts.
    match_failure: Option<MatchWait>,
    /// Error messages since the last `take_errors`.
    errors: Vec<String>,
    /// Keep COM1 output for a later `wait-serial` even while no line waits (`aero test`).
    keep_serial: bool,
}

/// A `wait-match` in progress (or given up): its needle and what the screen watch saw.
pub struct MatchWait {
    pub needles: Vec<Needle>,
    pub watch: ScreenWatch,
    deadline: Option<u64>,
}

impl Monitor {
    /// A monitor without input, replying to stderr (the window's keys and drops).
    pub fn new(media: MediaFiles) -> Monitor {
        Monitor {
            pending: VecDeque::new(),
            input: None,
            out: Box::new(std::io::stderr()),
            serial: Vec::new(),
            files: media.cds,
            ejected: HashMap::new(),
            floppy: media.floppy,
            snapshot: media.snapshot,
            quit: false,
            keys: VecDeque::new(),
            buttons: 0,
            tablet_xy: (0, 0),
            match_wait: None,
            match_failure: None,
            errors: Vec::new(),
            keep_serial: false,
        }
    }

    /// Sends replies to `out` instead.
    pub fn set_output(&mut self, out: Box<dyn Write + Send>) {
        self.out = out;
    }

    /// Keeps COM1 output for `wait-serial` lines queued later (a bounded backlog).
    pub fn keep_serial(&mut self) {
        self.keep_serial = true;
    }

    /// Queues a line after the pending ones; `origin` names it in messages.
    pub fn push_line(&mut self, origin: String, line: Line) {
        self.pending.push_back((origin, Ok(line)));
    }

    /// No line waits and no key is still to be sent.
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty() && self.keys.is_empty()
    }

    /// The error messages since the last call.
    pub fn take_errors(&mut self) -> Vec<String> {
        std::mem::take(&mut self.errors)
    }

    /// The `wait-match` that last gave up, with the closest screen it saw.
    pub fn take_match_failure(&mut self) -> Option<MatchWait> {
        self.match_failure.take()
    }

    /// Drops every pending line and key (a caller's own timeout ran out); returns the
    /// `wait-match` that was running, if one was.
    pub fn abandon(&mut self) -> Option<MatchWait> {
        self.pending.clear();
        self.keys.clear();
        self.match_wait.take()
    }

    /// `--monitor stdio` (lines typed while the guest runs, replies on stdout) or
    /// `--monitor FILE` (a script, checked now; replies on stderr).
    pub fn open(spec: &str, media: MediaFiles) -> anyhow::Result<Monitor> {
        let mut monitor = Monitor::new(media);
        if spec == "stdio" {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("aero-monitor".into())
                .spawn(move || {
                    for line in std::io::stdin().lock().lines() {
                        let Ok(line) = line else { break };
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                })?;
            monitor.input = Some(rx);
            monitor.out = Box::new(std::io::stdout());
        } else {
            let text = std::fs::read_to_string(spec)
                .map_err(|e| anyhow::anyhow!("--monitor: cannot read {spec}: {e}"))?;
            for (i, line) in text.lines().enumerate() {
                let origin = format!("{spec}:{}", i + 1);
                match parse_line(line) {
                    Ok(Some(l)) => {
                        // A needle that does not load is found before the guest starts.
                        if let Line::WaitMatch { needle, .. } = &l {
                            Needle::load(needle)
                                .map_err(|e| anyhow::anyhow!("--monitor {origin}: {e}"))?;
                        }
                        monitor.pending.push_back((origin, Ok(l)))
                    }
                    Ok(None) => {}
                    Err(e) => anyhow::bail!("--monitor {origin}: {e}"),
                }
            }
        }
        Ok(monitor)
    }

    /// Guest time the next key event or script line waits for, so the caller can stop
    /// exactly there.
    pub fn next_deadline(&self) -> Option<u64> {
        if let Some((t, _)) = self.keys.front() {
            return Some(*t);
        }
        match self.pending.front() {
            Some((_, Ok(Line::At(t)))) => Some(*t),
            _ => None,
        }
    }

    /// True once a `quit` ran.
    pub fn quit_requested(&self) -> bool {
        self.quit
    }

    /// Runs every line that is due, given the COM1 output of the slice that just ran.
    /// Call between run slices (and once before the first).
    pub fn poll(&mut self, machine: &mut Machine, serial: &[u8]) {
        let mut typed = Vec::new();
        if let Some(rx) = &self.input {
            loop {
                match rx.try_recv() {
                    Ok(text) => typed.push(text),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.input = None;
                        break;
                    }
                }
            }
        }
        for text in typed {
            match parse_line(&text) {
                Ok(Some(line)) => self.pending.push_back(("stdin".into(), Ok(line))),
                Ok(None) => {}
                Err(e) => self.pending.push_back(("stdin".into(), Err(e.to_string()))),
            }
        }
        if self.keep_serial || !self.pending.is_empty() || !self.keys.is_empty() {
            self.serial.extend_from_slice(serial);
        }
        loop {
            let now = machine.now_ns();
            while let Some(&(t, _)) = self.keys.front()
                && t <= now
            {
                // A guest that has not read the last key yet (busy, interrupts off) gets
                // the rest later, all shifted by the same delay: nothing overflows.
                if !machine.keyboard_idle() {
                    let delay = now + KEY_GAP_NS - t;
                    self.keys.iter_mut().for_each(|(at, _)| *at += delay);
                    break;
                }
                if let Some((_, bytes)) = self.keys.pop_front() {
                    machine.key_event(&bytes);
                }
            }
            // The next lines wait for the last key of a `sendkey` / `type`.
            if !self.keys.is_empty() {
                break;
            }
            let Some((origin, line)) = self.pending.front().cloned() else {
                break;
            };
            let line = match line {
                Ok(line) => line,
                Err(e) => {
                    self.fail(format!("error: {e}"));
                    self.pending.pop_front();
                    continue;
                }
            };
            match line {
                Line::At(t) if machine.now_ns() < t => break,
                Line::At(_) => {}
                Line::WaitSerial(text) => {
                    let needle = text.as_bytes();
                    match self.serial.windows(needle.len()).position(|w| w == needle) {
                        Some(at) => {
                            self.serial.drain(..at + needle.len());
                        }
                        None => {
                            keep_tail(&mut self.serial, needle.len() - 1);
                            break;
                        }
                    }
                }
                Line::WaitScreen(text) => {
                    if !machine
                        .text_screen()
                        .is_some_and(|screen| screen.contains(text.as_str()))
                    {
                        break;
                    }
                }
                Line::WaitMatch { needle, timeout_ns } => {
                    if !self.wait_match(machine, &origin, &needle, timeout_ns) {
                        break;
                    }
                }
                Line::Run(cmd) => match self.execute(machine, &cmd) {
                    Ok(text) if text.is_empty() => {}
                    Ok(text) => self.reply(&text),
                    Err(e) => self.fail(format!("error: {origin}: {e}")),
                },
            }
            self.pending.pop_front();
        }
        if self.pending.is_empty() && !self.keep_serial {
            self.serial.clear();
        } else {
            keep_tail(&mut self.serial, SERIAL_BACKLOG);
        }
    }

    /// One look at the screen for a `wait-match` line; true when the line is done (the
    /// screen matched, its time ran out or the needle did not load).
    fn wait_match(
        &mut self,
        machine: &mut Machine,
        origin: &str,
        needle: &std::path::Path,
        timeout_ns: Option<u64>,
    ) -> bool {
        let wait = match self.match_wait.take() {
            Some(w) => w,
            None => match Needle::load(needle) {
                Ok(n) => MatchWait {
                    needles: vec![n],
                    watch: ScreenWatch::default(),
                    deadline: timeout_ns.map(|t| machine.now_ns().saturating_add(t)),
                },
                Err(e) => {
                    self.fail(format!("error: {origin}: {e}"));
                    return true;
                }
            },
        };
        let mut wait = wait;
        if let Some(i) = wait.watch.check(machine, &wait.needles) {
            self.reply(&format!("screen matches needle {}", wait.needles[i].name));
            return true;
        }
        if wait.deadline.is_some_and(|d| machine.now_ns() >= d) {
            let why = wait.watch.describe(&wait.needles).join("; ");
            self.fail(format!(
                "error: {origin}: wait-match {}: no match in time; {why}",
                needle.display()
            ));
            self.match_failure = Some(wait);
            return true;
        }
        self.match_wait = Some(wait);
        false
    }

    fn reply(&mut self, text: &str) {
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    /// Reports an error and keeps it for `take_errors`.
    fn fail(&mut self, text: String) {
        self.reply(&text);
        self.errors.push(text);
    }

    /// Runs one command; the reply text (may be empty) or a plain error message.
    pub fn execute(&mut self, machine: &mut Machine, cmd: &Command) -> anyhow::Result<String> {
        match cmd {
            Command::Eject { drive, force } => {
                match self.resolve(machine, drive.as_deref())? {
                    Target::Cd(slot) => self.eject(machine, slot, *force)?,
                    Target::Floppy => self.eject_floppy(machine)?,
                }
                Ok(String::new())
            }
            Command::Change {
                drive,
                file,
                format,
            } => {
                match self.resolve(machine, Some(drive))? {
                    Target::Cd(slot) => self.change(machine, slot, file.clone(), *format)?,
                    Target::Floppy => self.change_floppy(machine, file.clone(), *format)?,
                }
                Ok(String::new())
            }
            Command::InfoBlock => Ok(self.info_block(machine)),
            Command::SendKey { keys, hold_ms } => {
                self.send_keys(machine.now_ns(), keys, *hold_ms)?;
                Ok(String::new())
            }
            Command::Type(text) => {
                self.type_text(machine.now_ns(), text)?;
                Ok(String::new())
            }
            Command::Screendump(path) => {
                let frame = machine.screen();
                anyhow::ensure!(
                    frame.width > 0 && frame.height > 0,
                    "screendump: the display shows no picture yet"
                );
                aero::screenshot::write_png(path, frame.width, frame.height, &frame.pixels)?;
                Ok(String::new())
            }
            Command::MouseMove { dx, dy, dz } => {
                machine.mouse_move(*dx, *dy, *dz, self.buttons);
                Ok(String::new())
            }
            Command::MouseButton(mask) => {
                self.buttons = *mask;
                if machine.tablet_ready() {
                    let (x, y) = self.tablet_xy;
                    machine.tablet_event(x, y, *mask, 0);
                } else {
                    machine.mouse_move(0, 0, 0, *mask);
                }
                Ok(String::new())
            }
            Command::MouseMoveAbs { x, y } => {
                self.tablet_move(machine, *x, *y, "mouse_move_abs")?;
                Ok(String::new())
            }
            Command::Click { x, y, button } => {
                self.tablet_move(machine, *x, *y, "click")?;
                let (tx, ty) = self.tablet_xy;
                // Press and release are separate reports: the guest sees both.
                machine.tablet_event(tx, ty, self.buttons | button, 0);
                machine.tablet_event(tx, ty, self.buttons, 0);
                Ok(String::new())
            }
            Command::SystemPowerdown => {
                machine.press_power_button();
                Ok(String::new())
            }
            Command::SetLink(up) => {
                anyhow::ensure!(
                    machine.set_nic_link(*up),
                    "set_link: the machine has no NIC"
                );
                Ok(String::new())
            }
            Command::Gamepad(event) => {
                machine.gamepad_event(*event)?;
                Ok(String::new())
            }
            Command::Help => Ok(HELP.to_string()),
            Command::Quit => {
                self.quit = true;
                Ok(String::new())
            }
        }
    }

    /// Puts the tablet's pointer on screen pixel (`x`, `y`) of the picture shown now.
    fn tablet_move(
        &mut self,
        machine: &mut Machine,
        x: u32,
        y: u32,
        what: &str,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(machine.tablet_ready(), "{what}: {NO_TABLET}");
        let frame = machine.screen();
        anyhow::ensure!(
            frame.width > 0 && frame.height > 0,
            "{what}: the display shows no picture yet"
        );
        anyhow::ensure!(
            x < frame.width && y < frame.height,
            "{what}: {x},{y} is outside the {}x{} screen",
            frame.width,
            frame.height
        );
        self.tablet_xy = (
            aero_machine::tablet_coordinate(x, frame.width),
            aero_machine::tablet_coordinate(y, frame.height),
        );
        let (tx, ty) = self.tablet_xy;
        machine.tablet_event(tx, ty, self.buttons, 0);
        Ok(())
    }

    /// Queues `sendkey`: presses in order from `now`, releases in reverse `hold_ms` later.
    fn send_keys(&mut self, now: u64, keys: &[KeyCode], hold_ms: u64) -> anyhow::Result<()> {
        let codes = keys
            .iter()
            .map(|k| keymap::lookup(*k).ok_or_else(|| anyhow::anyhow!("{k:?} cannot be sent")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let held = |c: &[KeyCode]| keys.iter().any(|k| c.contains(k));
        let mods = keymap::Mods {
            ctrl: held(&[KeyCode::ControlLeft, KeyCode::ControlRight]),
            alt: held(&[KeyCode::AltLeft, KeyCode::AltRight]),
        };
        let mut at = now;
        for key in &codes {
            for bytes in keymap::press(*key, mods) {
                self.keys.push_back((at, bytes));
                at += KEY_GAP_NS;
            }
        }
        at = at - KEY_GAP_NS + hold_ms.saturating_mul(1_000_000).max(KEY_GAP_NS);
        for key in codes.iter().rev() {
            for bytes in keymap::release(*key, mods) {
                self.keys.push_back((at, bytes));
                at += KEY_GAP_NS;
            }
        }
        Ok(())
    }

    /// Queues `type`: each character as its key (with Shift when needed), pressed and
    /// released.
    fn type_text(&mut self, now: u64, text: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            text.chars().count() <= MAX_TYPED,
            "type: at most {MAX_TYPED} characters at once"
        );
        let keys = text
            .chars()
            .map(|c| {
                keymap::typed_char(c)
                    .ok_or_else(|| anyhow::anyhow!("type: {c:?} has no key on a US keyboard"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let shift = keymap::lookup(KeyCode::ShiftLeft);
        let mut at = now;
        let mut push = |bytes: Vec<Vec<u8>>| {
            for b in bytes {
                self.keys.push_back((at, b));
                at += KEY_GAP_NS;
            }
        };
        let mods = keymap::Mods::default();
        for (code, shifted) in keys {
            let Some(key) = keymap::lookup(code) else {
                continue;
            };
            let shift = shift.filter(|_| shifted);
            if let Some(s) = shift {
                push(keymap::press(s, mods));
            }
            push(keymap::press(key, mods));
            push(keymap::release(key, mods));
            if let Some(s) = shift {
                push(keymap::release(s, mods));
            }
        }
        Ok(())
    }

    fn resolve(&self, machine: &Machine, name: Option<&str>) -> anyhow::Result<Target> {
        let drives = machine.cd_drives();
        let has_floppy = machine.floppy_drive().is_some();
        let names = || {
            drives
                .iter()
                .map(|(s, _)| drive_name(*s))
                .chain(has_floppy.then(|| FLOPPY_NAME.to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match name {
            Some(FLOPPY_NAME) if has_floppy => Ok(Target::Floppy),
            Some(FLOPPY_NAME) => {
                anyhow::bail!("this machine has no floppy drive (start it with --fda to have one)")
            }
            None => match drives.as_slice() {
                [(slot, _)] => Ok(Target::Cd(*slot)),
                [] => anyhow::bail!("this machine has no CD/DVD drive"),
                _ => anyhow::bail!("several CD/DVD drives, name one: {}", names()),
            },
            Some(name) => {
                let slot = parse_drive_name(name)
                    .filter(|s| drives.iter().any(|(d, _)| d == s))
                    .ok_or_else(|| anyhow::anyhow!("no drive {name:?} (drives: {})", names()))?;
                Ok(Target::Cd(slot))
            }
        }
    }

    fn media_error(slot: DriveSlot, e: MachineError) -> anyhow::Error {
        match e {
            MachineError::Media(_, MediaError::Locked) => anyhow::anyhow!(
                "{} is locked by the guest; an eject request was sent to the guest \
                 (eject -f takes the disc out anyway)",
                drive_name(slot)
            ),
            other => anyhow::anyhow!("{}: {other}", drive_name(slot)),
        }
    }

    /// Opens the tray of `slot` and takes the disc out.
    pub fn eject(
        &mut self,
        machine: &mut Machine,
        slot: DriveSlot,
        force: bool,
    ) -> anyhow::Result<()> {
        machine
            .eject_cd(slot, force)
            .map_err(|e| Self::media_error(slot, e))?;
        if let Some(file) = self.files.remove(&slot) {
            self.ejected.insert(slot, file);
        }
        Ok(())
    }

    /// Puts `file` in `slot`: a locked tray refuses (the guest is asked to eject).
    pub fn change(
        &mut self,
        machine: &mut Machine,
        slot: DriveSlot,
        file: PathBuf,
        format: Option<ImageFormat>,
    ) -> anyhow::Result<()> {
        let disc = drives::open_disk(&file, false, true, true, format)?;
        self.eject(machine, slot, false)?;
        machine
            .insert_cd(slot, disc)
            .map_err(|e| Self::media_error(slot, e))?;
        self.files.insert(slot, file);
        Ok(())
    }

    /// Takes the floppy out of drive A (what the guest wrote is flushed first).
    fn eject_floppy(&mut self, machine: &mut Machine) -> anyhow::Result<()> {
        machine
            .eject_floppy()
            .map_err(|e| anyhow::anyhow!("{FLOPPY_NAME}: {e}"))?;
        self.floppy = None;
        Ok(())
    }

    /// Puts `file` in drive A. The old disk comes out first, so the same image can go back
    /// in (it is locked while inserted); if `file` cannot be opened the drive stays empty.
    fn change_floppy(
        &mut self,
        machine: &mut Machine,
        file: PathBuf,
        format: Option<ImageFormat>,
    ) -> anyhow::Result<()> {
        self.eject_floppy(machine)?;
        let disk = drives::open_disk(&file, self.snapshot, false, false, format)?;
        machine
            .insert_floppy(disk)
            .map_err(|e| anyhow::anyhow!("{FLOPPY_NAME}: {e}"))?;
        self.floppy = Some(file);
        Ok(())
    }

    /// The window's eject key: ejects the first drive's disc, or puts the last ejected
    /// disc back (also closing a tray the guest opened). Returns what happened, for the user.
    pub fn toggle_first_drive(&mut self, machine: &mut Machine) -> anyhow::Result<String> {
        let (slot, status) = *machine
            .cd_drives()
            .first()
            .ok_or_else(|| anyhow::anyhow!("this machine has no CD/DVD drive"))?;
        if status.medium && !status.tray_open {
            self.eject(machine, slot, false)?;
            return Ok(format!("{}: disc ejected", drive_name(slot)));
        }
        // An empty drive gets its last disc back; a disc the guest ejected (still on the
        // open tray) goes back in.
        let known = if status.medium {
            self.files.get(&slot)
        } else {
            self.ejected.get(&slot)
        };
        let file = known.cloned().ok_or_else(|| {
            anyhow::anyhow!(
                "{} is empty; drop an ISO file on the window to insert it",
                drive_name(slot)
            )
        })?;
        self.change(machine, slot, file.clone(), None)?;
        Ok(format!("{}: {} inserted", drive_name(slot), file.display()))
    }

    /// A file dropped on the window goes into the first CD drive.
    pub fn insert_first_drive(
        &mut self,
        machine: &mut Machine,
        file: PathBuf,
    ) -> anyhow::Result<String> {
        let slot = machine
            .cd_drives()
            .first()
            .map(|(s, _)| *s)
            .ok_or_else(|| anyhow::anyhow!("this machine has no CD/DVD drive"))?;
        self.change(machine, slot, file.clone(), None)?;
        Ok(format!("{}: {} inserted", drive_name(slot), file.display()))
    }

    fn info_block(&self, machine: &Machine) -> String {
        let mut out = String::new();
        for (
            slot,
            CdStatus {
                medium,
                tray_open,
                locked,
            },
        ) in machine.cd_drives()
        {
            let disc = match (medium, self.files.get(&slot)) {
                (false, _) => "[not inserted]".to_string(),
                (true, Some(f)) => format!("{} (read-only)", f.display()),
                (true, None) => "(disc) (read-only)".to_string(),
            };
            out.push_str(&format!(
                "{} ({slot}): {disc}\n    Removable device: {}, tray {}\n",
                drive_name(slot),
                if locked { "locked" } else { "not locked" },
                if tray_open { "open" } else { "closed" },
            ));
        }
        if let Some(FloppyStatus { medium }) = machine.floppy_drive() {
            let disk = match (medium, &self.floppy) {
                (false, _) => "[not inserted]".to_string(),
                (true, Some(f)) if self.snapshot => format!("{} (snapshot)", f.display()),
                (true, Some(f)) => f.display().to_string(),
                (true, None) => "(disk)".to_string(),
            };
            out.push_str(&format!(
                "{FLOPPY_NAME} (drive A): {disk}\n    Removable device: not locked\n"
            ));
        }
        if out.is_empty() {
            out.push_str("no CD/DVD or floppy drives\n");
        }
        out.pop();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_qemu_style_lines() {
        assert_eq!(parse_line("  # comment").unwrap(), None);
        assert_eq!(
            parse_line("eject -f ide1-cd0").unwrap(),
            Some(Line::Run(Command::Eject {
                drive: Some("ide1-cd0".into()),
                force: true
            }))
        );
        assert_eq!(
            parse_line("eject").unwrap(),
            Some(Line::Run(Command::Eject {
                drive: None,
                force: false
            }))
        );
        assert_eq!(
            parse_line(r#"change ahci1-cd0 "/tmp/my disc.iso" raw"#).unwrap(),
            Some(Line::Run(Command::Change {
                drive: "ahci1-cd0".into(),
                file: "/tmp/my disc.iso".into(),
                format: Some(ImageFormat::Raw)
            }))
        );
        assert_eq!(parse_line("at 1.5").unwrap(), Some(Line::At(1_500_000_000)));
        assert_eq!(
            parse_line("wait-serial login: ok").unwrap(),
            Some(Line::WaitSerial("login: ok".into()))
        );
        for bad in [
            "change ide1-cd0",
            "change a b c d",
            "eject a b",
            "at -1",
            "at soon",
            "wait-serial",
            "wait-serialX",
            "info",
            "frobnicate",
            "change ide1-cd0 \"x",
            "change ide1-cd0 x.iso zip",
        ] {
            assert!(parse_line(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn parses_gamepad_commands() {
        let pad = |line: &str| match parse_line(line).unwrap() {
            Some(Line::Run(Command::Gamepad(event))) => event,
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(pad("gamepad_attach"), GamepadInput::Connected { pad: 0 });
        assert_eq!(
            pad("gamepad_detach 2"),
            GamepadInput::Disconnected { pad: 2 }
        );
        assert_eq!(
            pad("gamepad_button 16 on 1"),
            GamepadInput::Button {
                pad: 1,
                button: 16,
                pressed: true
            }
        );
        assert_eq!(
            pad("gamepad_axis rz -127"),
            GamepadInput::Axis {
                pad: 0,
                axis: GamepadAxis::Rz,
                value: -1.0
            }
        );
        assert_eq!(
            pad("gamepad_hat down-left"),
            GamepadInput::Hat {
                pad: 0,
                direction: Some(5)
            }
        );
        assert_eq!(
            pad("gamepad_hat centre"),
            GamepadInput::Hat {
                pad: 0,
                direction: None
            }
        );
        for bad in [
            "gamepad_button 0 on",
            "gamepad_button 17 on",
            "gamepad_button 1 maybe",
            "gamepad_button 1",
            "gamepad_axis w 3",
            "gamepad_axis x 128",
            "gamepad_axis x -128",
            "gamepad_hat sideways",
            "gamepad_attach x",
            "gamepad_attach 1 2",
            "gamepad_frob",
        ] {
            assert!(parse_line(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn parses_keys_text_and_screen_waits() {
        use KeyCode::*;
        assert_eq!(
            parse_line("sendkey ctrl-alt-delete").unwrap(),
            Some(Line::Run(Command::SendKey {
                keys: vec![ControlLeft, AltLeft, Delete],
                hold_ms: 100
            }))
        );
        assert_eq!(
            parse_line("set_link nic off").unwrap(),
            Some(Line::Run(Command::SetLink(false)))
        );
        assert_eq!(
            parse_line("set_link nic on").unwrap(),
            Some(Line::Run(Command::SetLink(true)))
        );
        assert!(parse_line("set_link nic maybe").is_err());
        assert!(parse_line("set_link e1000 off").is_err());
        assert_eq!(
            parse_line("sendkey ret 250").unwrap(),
            Some(Line::Run(Command::SendKey {
                keys: vec![Enter],
                hold_ms: 250
            }))
        );
        assert_eq!(
            parse_line(r#"type "ls -l /\n""#).unwrap(),
            Some(Line::Run(Command::Type("ls -l /\n".into())))
        );
        assert_eq!(
            parse_line("type  two  words").unwrap(),
            Some(Line::Run(Command::Type("two  words".into())))
        );
        assert_eq!(
            parse_line("wait-screen GNU GRUB").unwrap(),
            Some(Line::WaitScreen("GNU GRUB".into()))
        );
        for bad in [
            "sendkey",
            "sendkey ctrl-frob",
            "sendkey a 99999999",
            "sendkey a b c",
            "type \\q",
            "typeX",
            "wait-screen",
        ] {
            assert!(parse_line(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn parses_screen_and_mouse_commands() {
        assert_eq!(
            parse_line("wait-match needles/login.json 12.5").unwrap(),
            Some(Line::WaitMatch {
                needle: "needles/login.json".into(),
                timeout_ns: Some(12_500_000_000)
            })
        );
        assert_eq!(
            parse_line("screendump /tmp/s.png").unwrap(),
            Some(Line::Run(Command::Screendump("/tmp/s.png".into())))
        );
        assert_eq!(
            parse_line("mouse_move -4 7 1").unwrap(),
            Some(Line::Run(Command::MouseMove {
                dx: -4,
                dy: 7,
                dz: 1
            }))
        );
        assert_eq!(
            parse_line("click 100 200").unwrap(),
            Some(Line::Run(Command::Click {
                x: 100,
                y: 200,
                button: 1
            }))
        );
        assert_eq!(
            parse_line("mouse_button 5").unwrap(),
            Some(Line::Run(Command::MouseButton(5)))
        );
        for bad in [
            "wait-match",
            "wait-match a.json soon",
            "screendump",
            "mouse_move 1",
            "mouse_move 1 99999999",
            "mouse_button 8",
            "mouse_move_abs -1 0",
            "click 1",
            "click 1 2 9",
        ] {
            assert!(parse_line(bad).is_err(), "{bad:?} should be refused");
        }
    }

    /// `sendkey` presses in order and releases in reverse after the hold time; `type`
    /// adds Shift for capitals; one event per 10 ms of guest time, starting now.
    #[test]
    fn keys_are_scheduled_in_guest_time() {
        let mut m = Monitor::new(MediaFiles::default());
        m.send_keys(1_000, &[KeyCode::ShiftLeft, KeyCode::KeyA], 100)
            .unwrap();
        let got: Vec<_> = m.keys.drain(..).collect();
        assert_eq!(
            got,
            vec![
                (1_000, vec![0x12]),
                (1_000 + KEY_GAP_NS, vec![0x1C]),
                (1_000 + KEY_GAP_NS + 100_000_000, vec![0xF0, 0x1C]),
                (1_000 + 2 * KEY_GAP_NS + 100_000_000, vec![0xF0, 0x12]),
            ]
        );
        m.type_text(0, "aB\n").unwrap();
        let bytes: Vec<_> = m.keys.iter().map(|(_, b)| b.clone()).collect();
        assert_eq!(
            bytes,
            [
                &[0x1C][..],
                &[0xF0, 0x1C],
                &[0x12],
                &[0x32],
                &[0xF0, 0x32],
                &[0xF0, 0x12],
                &[0x5A],
                &[0xF0, 0x5A]
            ]
        );
        assert!(
            m.keys
                .iter()
                .enumerate()
                .all(|(i, (t, _))| *t == i as u64 * KEY_GAP_NS)
        );
        assert_eq!(m.next_deadline(), Some(0));
        assert!(m.type_text(0, "\u{e9}").is_err());
        assert!(m.type_text(0, &"a".repeat(MAX_TYPED + 1)).is_err());
    }

    #[test]
    fn drive_names_round_trip() {
        for slot in [
            DriveSlot::Ide {
                channel: 1,
                slave: false,
            },
            DriveSlot::Ide {
                channel: 0,
                slave: true,
            },
            DriveSlot::Ahci(5),
        ] {
            assert_eq!(parse_drive_name(&drive_name(slot)), Some(slot));
        }
        assert_eq!(drive_name(DriveSlot::default()), "ide0-cd0");
        for bad in ["ide2-cd0", "ide0-cd2", "ahci1", "sd0", "ide1-hd0"] {
            assert_eq!(parse_drive_name(bad), None, "{bad}");
        }
    }
}

#[cfg(test)]
mod machine_tests {
    use super::*;
    use aero_machine::MachineConfig;
    use aero_storage::ide::IdeDrive;

    fn iso(dir: &std::path::Path, name: &str, sectors: usize) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, vec![0x5A; sectors * 2048]).unwrap();
        path
    }

    #[test]
    fn floppies_are_swapped_and_the_same_image_can_go_back_in() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.img");
        let b = dir.path().join("b.img");
        std::fs::write(&a, vec![0xA0; 1_474_560]).unwrap();
        std::fs::write(&b, vec![0xB0; 737_280]).unwrap();
        let open = |p: &PathBuf| drives::open_disk(p, false, false, false, None).unwrap();
        let config = MachineConfig {
            memory_bytes: 16 << 20,
            fda: Some(open(&a)),
            ..Default::default()
        };
        let mut m = Machine::new(config).unwrap();
        let mut mon = Monitor::new(MediaFiles {
            floppy: Some(a.clone()),
            ..Default::default()
        });
        let run = |mon: &mut Monitor, m: &mut Machine, line: &str| {
            let Some(Line::Run(cmd)) = parse_line(line).unwrap() else {
                panic!("{line}")
            };
            mon.execute(m, &cmd)
        };
        assert!(mon.info_block(&m).contains("floppy0 (drive A): "));
        assert!(mon.info_block(&m).contains("a.img"));
        // a.img is locked while inserted: a second opener is refused.
        assert!(drives::open_disk(&a, false, false, false, None).is_err());
        run(&mut mon, &mut m, "eject floppy0").unwrap();
        assert_eq!(m.floppy_drive(), Some(FloppyStatus { medium: false }));
        assert!(
            mon.info_block(&m)
                .contains("floppy0 (drive A): [not inserted]")
        );
        let b_arg = format!("change floppy0 {}", b.display());
        run(&mut mon, &mut m, &b_arg).unwrap();
        assert!(mon.info_block(&m).contains("b.img"));
        // Changing back to the image that is in: it comes out first, so its lock is free.
        run(&mut mon, &mut m, &b_arg).unwrap();
        assert_eq!(m.floppy_drive(), Some(FloppyStatus { medium: true }));
        // A file that cannot be opened leaves the drive empty, with a message.
        let err = run(&mut mon, &mut m, "change floppy0 /no/such.img").unwrap_err();
        assert!(err.to_string().contains("such.img"), "{err}");
        assert_eq!(m.floppy_drive(), Some(FloppyStatus { medium: false }));
        // The unknown drive names the known ones.
        let err = run(&mut mon, &mut m, "eject floppy1").unwrap_err();
        assert!(err.to_string().contains("floppy0"), "{err}");
        // No drive A without --fda.
        let mut plain = Machine::new(MachineConfig {
            memory_bytes: 16 << 20,
            ..Default::default()
        })
        .unwrap();
        let err = run(&mut mon, &mut plain, "eject floppy0").unwrap_err();
        assert!(err.to_string().contains("no floppy drive"), "{err}");
    }

    fn status(m: &Machine, slot: DriveSlot) -> CdStatus {
        m.cd_drives()
            .into_iter()
            .find(|(s, _)| *s == slot)
            .unwrap()
            .1
    }

    #[test]
    fn script_runs_at_its_waits_and_survives_errors() {
        let dir = tempfile::tempdir().unwrap();
        let a = iso(dir.path(), "a.iso", 8);
        let script = dir.path().join("script");
        std::fs::write(
            &script,
            format!(
                "# media script\nchange ahci1-cd0 {a}\neject ide0-cd0\nchange ahci1-cd0 /no/such.iso\n\
                 wait-serial HELLO\neject\nat 2\nchange ide1-cd0 {a}\nquit\n",
                a = a.display()
            ),
        )
        .unwrap();
        let mut config = MachineConfig {
            memory_bytes: 16 << 20,
            ..Default::default()
        };
        config.extra_drives = vec![(DriveSlot::Ahci(1), IdeDrive::Cdrom(None))];
        let mut m = Machine::new(config).unwrap();
        let ide_cd = DriveSlot::Ide {
            channel: 1,
            slave: false,
        };
        let mut mon = Monitor::open(script.to_str().unwrap(), MediaFiles::default()).unwrap();
        mon.poll(&mut m, b"");
        // Power-on lines ran, the bad ones only reported: the AHCI drive has the disc.
        assert!(status(&m, DriveSlot::Ahci(1)).medium);
        assert!(mon.info_block(&m).contains("ahci1-cd0 (AHCI port 1): "));
        assert!(mon.info_block(&m).contains("a.iso"));
        mon.poll(&mut m, b"xxHEL");
        assert!(
            status(&m, DriveSlot::Ahci(1)).medium,
            "still waiting for HELLO"
        );
        // `eject` without a drive is ambiguous here (two drives): an error, then `at 2`.
        mon.poll(&mut m, b"LO there");
        assert_eq!(mon.next_deadline(), Some(2_000_000_000));
        assert!(!status(&m, ide_cd).medium);
        m.run_for(2_000_000_000);
        mon.poll(&mut m, b"");
        assert!(status(&m, ide_cd).medium, "inserted at 2 s");
        assert!(mon.quit_requested());
        assert_eq!(mon.next_deadline(), None);
        // Syntax errors are found before the guest starts.
        std::fs::write(&script, "eject\nfrobnicate\n").unwrap();
        let err = Monitor::open(script.to_str().unwrap(), MediaFiles::default()).err();
        assert!(
            format!("{err:?}").contains(":2: unknown command"),
            "{err:?}"
        );
    }

    /// A boot sector that enables the 8042's aux port and the mouse's data reporting,
    /// then copies every byte the 8042 delivers to COM1 (interrupts off, polling).
    fn mouse_echo_disk() -> Box<dyn aero_storage::BlockDevice> {
        let code = [
            0xFA, // cli
            0xB0, 0xA8, 0xE6, 0x64, // 8042: enable the aux port
            0xB0, 0xD4, 0xE6, 0x64, 0xB0, 0xF4, 0xE6, 0x60, // mouse: enable reporting
            0xE4, 0x64, 0xA8, 0x01, 0x74, 0xFA, // wait: in al,64h; test al,1; jz wait
            0xE4, 0x60, 0xBA, 0xF8, 0x03, 0xEE, // in al,60h; mov dx,3F8h; out dx,al
            0xEB, 0xF2, // jmp wait
        ];
        let mut disk = vec![0u8; 1 << 20];
        disk[..code.len()].copy_from_slice(&code);
        disk[510] = 0x55;
        disk[511] = 0xAA;
        Box::new(aero_storage::MemoryDisk::new(disk, 512, true).unwrap())
    }

    #[test]
    fn mouse_commands_reach_a_guest_reading_the_ps2_mouse() {
        let mut m = Machine::new(MachineConfig {
            memory_bytes: 16 << 20,
            hda: Some(mouse_echo_disk()),
            ..Default::default()
        })
        .unwrap();
        let mut mon = Monitor::new(MediaFiles::default());
        let mut serial = Vec::new();
        let mut run = |m: &mut Machine, ns: u64| {
            m.run_for(ns);
            serial.extend(m.take_serial_output());
            serial.clone()
        };
        // The mouse's ACK (FA) to "enable reporting" shows the guest is polling.
        let mut seen = Vec::new();
        for _ in 0..300 {
            seen = run(&mut m, 10_000_000);
            if seen.contains(&0xFA) {
                break;
            }
        }
        let ack = seen.iter().position(|b| *b == 0xFA).expect("no mouse ACK");
        let mut cmd = |m: &mut Machine, line: &str| {
            let Some(Line::Run(c)) = parse_line(line).unwrap() else {
                panic!("{line}")
            };
            mon.execute(m, &c)
        };
        cmd(&mut m, "mouse_move 5 -3").unwrap();
        run(&mut m, 10_000_000);
        cmd(&mut m, "mouse_button 1").unwrap();
        run(&mut m, 10_000_000);
        cmd(&mut m, "mouse_move -2 0").unwrap();
        let seen = run(&mut m, 10_000_000);
        // Packets: [status, dx, dy] with y up-positive; the left button held stays held.
        assert_eq!(
            &seen[ack + 1..],
            [0x08, 5, 3, 0x09, 0, 0, 0x19, 0xFE, 0],
            "PS/2 packets the guest read"
        );
        // No absolute pointing without a configured tablet: an error, nothing sent.
        for line in ["click 10 20", "mouse_move_abs 10 20", "click 1 2 4"] {
            let err = cmd(&mut m, line).unwrap_err().to_string();
            assert!(err.contains("USB tablet"), "{line}: {err}");
        }
        assert_eq!(run(&mut m, 10_000_000).len(), seen.len());
    }

    #[test]
    fn window_key_ejects_and_puts_the_disc_back() {
        let dir = tempfile::tempdir().unwrap();
        let a = iso(dir.path(), "a.iso", 8);
        let disc = drives::open_disk(&a, false, true, true, None).unwrap();
        let config = MachineConfig {
            memory_bytes: 16 << 20,
            cdrom: Some(disc),
            ..Default::default()
        };
        let mut m = Machine::new(config).unwrap();
        let slot = DriveSlot::Ide {
            channel: 1,
            slave: false,
        };
        let mut mon = Monitor::new(MediaFiles {
            cds: HashMap::from([(slot, a.clone())]),
            ..Default::default()
        });
        assert!(mon.toggle_first_drive(&mut m).unwrap().contains("ejected"));
        assert!(!status(&m, slot).medium);
        assert!(
            mon.toggle_first_drive(&mut m)
                .unwrap()
                .contains("a.iso inserted")
        );
        assert!(status(&m, slot).medium);
        assert!(
            mon.insert_first_drive(&mut m, dir.path().join("none.iso"))
                .is_err()
        );
        assert!(status(&m, slot).medium, "a bad file leaves the disc in");
    }
}
