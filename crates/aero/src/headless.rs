//! `aero headless`: boot a guest without a window, watch serial/screen, save a screenshot.
//!
//! The options are a contract with external test suites; keep them stable.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use aero_machine::{Machine, RunEvent};

use crate::machine_args::MachineArgs;
use crate::monitor::Monitor;
use clap::Args;

#[derive(Args, Debug)]
pub struct HeadlessArgs {
    #[command(flatten)]
    pub machine: MachineArgs,
    /// COM1 output (- = stdout).
    #[arg(long, value_name = "FILE|-")]
    serial: Option<String>,
    /// Port 0xE9 output (- = stdout).
    #[arg(long, value_name = "FILE|-")]
    debugcon: Option<String>,
    /// Every byte written to port 0x80, one hex code per line.
    #[arg(long = "post-log", value_name = "FILE")]
    post_log: Option<PathBuf>,
    /// Stop with exit 0 once TEXT appeared on COM1.
    #[arg(long = "until-serial", value_name = "TEXT")]
    until_serial: Option<String>,
    /// Stop with exit 0 once TEXT is on the text-mode screen.
    #[arg(long = "until-screen", value_name = "TEXT")]
    until_screen: Option<String>,
    /// Give up after this much guest time (exit 1).
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// Write the screen when the run ends.
    #[arg(long, value_name = "FILE.png")]
    screenshot: Option<PathBuf>,
    /// Write the text-mode screen as text when the run ends (empty in graphics modes).
    #[arg(long = "screen-text", value_name = "FILE")]
    screen_text: Option<PathBuf>,
    /// Instruction-count time (the default in headless mode).
    #[arg(long, conflicts_with = "realtime")]
    deterministic: bool,
    /// Follow the host clock instead of counting instructions.
    #[arg(long)]
    realtime: bool,
    /// Monitor commands (eject, change, info block, quit; QEMU-like) typed on stdin
    /// ("stdio") or from a script FILE whose `at SECONDS` / `wait-serial TEXT` lines say
    /// when the next lines run (deterministic). See README "Monitor".
    #[arg(long, value_name = "FILE|stdio")]
    monitor: Option<String>,
}

/// Exit statuses of the contract.
const EXIT_OK: u8 = 0;
const EXIT_TIMEOUT: u8 = 1;
const EXIT_BAD_ARGS: u8 = 2;
const EXIT_SHUTDOWN: u8 = 3;

/// Guest time between checks of the screen and the timeout.
const SLICE_NS: u64 = 10_000_000;

pub fn main(mut args: HeadlessArgs) -> ExitCode {
    let setup = match args.machine.load_config().and_then(|()| Setup::new(&args)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("aero: {e:#}");
            return ExitCode::from(EXIT_BAD_ARGS);
        }
    };
    match run(args, setup) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("aero: {e:#}");
            ExitCode::from(EXIT_BAD_ARGS)
        }
    }
}

/// Everything opened before the guest starts, so bad arguments fail early with exit 2.
struct Setup {
    machine: Machine,
    serial: Option<Box<dyn Write>>,
    debugcon: Option<Box<dyn Write>>,
    post_log: Option<Box<dyn Write>>,
    monitor: Option<Monitor>,
}

fn open_sink(spec: &str) -> anyhow::Result<Box<dyn Write>> {
    if spec == "-" {
        Ok(Box::new(std::io::stdout()))
    } else {
        let f = File::create(spec).map_err(|e| anyhow::anyhow!("cannot create {spec}: {e}"))?;
        Ok(Box::new(std::io::BufWriter::new(f)))
    }
}

impl Setup {
    fn new(args: &HeadlessArgs) -> anyhow::Result<Setup> {
        if let Some(t) = args.timeout {
            anyhow::ensure!(
                t.is_finite() && t > 0.0,
                "--timeout must be a positive number of seconds"
            );
        }
        let config = args
            .machine
            .machine_config(crate::machine_args::HEADLESS_MEMORY_MIB, !args.realtime)?;
        let monitor = args
            .monitor
            .as_deref()
            .map(|spec| Monitor::open(spec, args.machine.media_files()))
            .transpose()?;
        let mut machine = Machine::new(config)?;
        machine.set_aerogpu_executor(crate::machine_args::aerogpu_executor(args.machine.gpu)?);
        Ok(Setup {
            machine,
            serial: args.serial.as_deref().map(open_sink).transpose()?,
            debugcon: args.debugcon.as_deref().map(open_sink).transpose()?,
            post_log: args
                .post_log
                .as_deref()
                .map(|p| open_sink(&p.to_string_lossy()))
                .transpose()?,
            monitor,
        })
    }
}

/// Finds `needle` in a stream that arrives in pieces.
struct StreamMatcher {
    needle: Vec<u8>,
    tail: Vec<u8>,
}

impl StreamMatcher {
    fn new(needle: &str) -> Self {
        StreamMatcher {
            needle: needle.as_bytes().to_vec(),
            tail: Vec::new(),
        }
    }
    fn feed(&mut self, data: &[u8]) -> bool {
        if self.needle.is_empty() {
            return true;
        }
        self.tail.extend_from_slice(data);
        let found = self
            .tail
            .windows(self.needle.len())
            .any(|w| w == self.needle.as_slice());
        // Keep just enough to match across the next boundary.
        let keep = self.needle.len() - 1;
        if self.tail.len() > keep {
            self.tail.drain(..self.tail.len() - keep);
        }
        found
    }
}

fn run(args: HeadlessArgs, mut s: Setup) -> anyhow::Result<u8> {
    let timeout_ns = args.timeout.map(|t| (t * 1e9) as u64);
    let mut serial_match = args.until_serial.as_deref().map(StreamMatcher::new);
    // Monitor lines due at power-on run before the first instruction.
    if let Some(m) = s.monitor.as_mut() {
        m.poll(&mut s.machine, &[]);
    }
    let code = loop {
        // A slice ends exactly where a monitor script waits for the guest clock.
        let now = s.machine.now_ns();
        let slice = s
            .monitor
            .as_ref()
            .and_then(Monitor::next_deadline)
            .map_or(SLICE_NS, |t| t.saturating_sub(now).clamp(1, SLICE_NS));
        let event = s.machine.run_for(slice);
        let serial = s.machine.take_serial_output();
        if let Some(w) = s.serial.as_mut() {
            w.write_all(&serial)?;
            w.flush()?;
        }
        let dbg = s.machine.take_debugcon_output();
        if let Some(w) = s.debugcon.as_mut() {
            w.write_all(&dbg)?;
            w.flush()?;
        }
        for code in s.machine.take_post_codes() {
            if let Some(w) = s.post_log.as_mut() {
                writeln!(w, "{code:02x}")?;
            }
        }
        if serial_match.as_mut().is_some_and(|m| m.feed(&serial)) {
            break EXIT_OK;
        }
        if let Some(m) = s.monitor.as_mut() {
            m.poll(&mut s.machine, &serial);
            if m.quit_requested() {
                break EXIT_OK;
            }
        }
        if let Some(text) = &args.until_screen
            && s.machine
                .text_screen()
                .is_some_and(|screen| screen.contains(text.as_str()))
        {
            break EXIT_OK;
        }
        match event {
            RunEvent::Running => {}
            RunEvent::PoweredOff => break EXIT_OK,
            RunEvent::Shutdown(msg) => {
                eprintln!("aero: {msg}");
                break EXIT_SHUTDOWN;
            }
        }
        if timeout_ns.is_some_and(|t| s.machine.now_ns() >= t) {
            eprintln!(
                "aero: timeout after {:.1} s of guest time; CPU at {}",
                s.machine.now_ns() as f64 / 1e9,
                s.machine.cpu_location()
            );
            break EXIT_TIMEOUT;
        }
    };
    // For benchmarks: guest instructions per host second (AERO_LOG=aero::headless=info).
    tracing::info!(
        instructions = s.machine.instructions_retired(),
        "guest instructions retired"
    );
    for w in [s.serial.as_mut(), s.debugcon.as_mut(), s.post_log.as_mut()]
        .into_iter()
        .flatten()
    {
        w.flush()?;
    }
    if let Some(path) = &args.screenshot {
        let frame = s.machine.screen();
        aero::screenshot::write_png(path, frame.width, frame.height, &frame.pixels)?;
    }
    if let Some(path) = &args.screen_text {
        let text = s.machine.text_screen().unwrap_or_default();
        std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    s.machine.shutdown()?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_matcher_finds_text_across_chunks() {
        let mut m = StreamMatcher::new("BOOT-OK");
        assert!(!m.feed(b"xxBOO"));
        assert!(!m.feed(b"T-"));
        assert!(m.feed(b"OKyy"));
        let mut m = StreamMatcher::new("abc");
        assert!(!m.feed(b"ab"));
        assert!(!m.feed(b"xc"));
    }
}
