//! `aero test SCENARIO.toml`: boots the machine a scenario describes, runs its steps in
//! order (each with its own guest-time timeout), prints a progress line per step, stops at
//! the first failure with the screen, needle and diff saved, and writes JUnit XML.
//!
//! The steps run as monitor lines on `aero headless`' run loop ([`Session`]), so a step
//! behaves exactly like the monitor command of the same name. Time is counted in guest
//! instructions (deterministic), so a scenario that passes once passes on every run.
//!
//! ```toml
//! name = "grub"            # default: the file name
//! timeout = 30             # default step timeout, seconds of guest time
//! [machine]                # the keys of `--config`, paths relative to this file
//! hda = "grub.img"
//! [[step]]
//! wait-screen = "GNU GRUB"
//! timeout = 20
//! [[step]]
//! sendkey = "down"
//! ```
//! Steps: `wait-serial`, `wait-screen` (text), `wait-match`, `assert-match` (needle json,
//! relative to this file), `type` (text), `sendkey` (QEMU key names), `mouse_move`
//! ([dx, dy]), `mouse_button` (mask), `mouse_move_abs` ([x, y]) and `click` ([x, y] or
//! [x, y, button]; both need the USB tablet configured by the guest), `gamepad` (a
//! monitor `gamepad_*` command without its prefix: "attach", "button 1 on", "axis x
//! -127", "hat up", "detach"), `screendump` (file in the artifacts directory), `media-change`
//! ({ drive, file } or { drive, eject = true }), `sleep` (seconds), `power-off` (true:
//! presses the ACPI power button and waits for the guest to power off).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use aero_machine::{Machine, RunEvent};
use clap::Args;

use crate::headless::{Session, open_sink};
use crate::machine_args::{GpuChoice, MachineArgs};
use crate::monitor::{Command, Line, MatchWait, Monitor, parse_line};

#[derive(Args, Debug)]
pub struct TestArgs {
    /// The scenario: machine and steps (see README "Testing operating systems with Aero").
    scenario: PathBuf,
    /// Write the results as JUnit XML (one test case per step).
    #[arg(long, value_name = "OUT.xml")]
    junit: Option<PathBuf>,
    /// Where COM1 output, screendumps and the failure's screen, needle and diff go
    /// (default: aero-test-NAME in the current directory).
    #[arg(long, value_name = "DIR")]
    artifacts: Option<PathBuf>,
    /// What runs AeroGPU's commands (as `aero headless --gpu`).
    #[arg(long, value_enum, default_value_t = GpuChoice::Auto)]
    gpu: GpuChoice,
}

const EXIT_PASSED: u8 = 0;
const EXIT_FAILED: u8 = 1;
const EXIT_BAD_SCENARIO: u8 = 2;

/// Step timeout when neither the step nor the scenario gives one.
const DEFAULT_STEP_TIMEOUT_S: f64 = 30.0;
/// Longest step timeout accepted (a typo should not hang CI for days).
const MAX_TIMEOUT_S: f64 = 86_400.0;

/// What a step does.
#[derive(Debug)]
enum Action {
    /// Monitor lines that are done when the monitor is idle again.
    Lines(Vec<Line>),
    /// Presses the power button, then waits for the guest to power off.
    PowerOff,
}

#[derive(Debug)]
struct Step {
    /// `wait-serial: login:` — for progress lines and JUnit.
    title: String,
    action: Action,
    timeout_ns: u64,
}

struct Scenario {
    name: String,
    machine: MachineArgs,
    steps: Vec<Step>,
}

fn seconds(v: &toml::Value, what: &str) -> anyhow::Result<f64> {
    let s = v
        .as_float()
        .or_else(|| v.as_integer().map(|i| i as f64))
        .ok_or_else(|| anyhow::anyhow!("{what} must be a number of seconds"))?;
    anyhow::ensure!(
        s.is_finite() && (0.0..=MAX_TIMEOUT_S).contains(&s),
        "{what} must be between 0 and {MAX_TIMEOUT_S} seconds"
    );
    Ok(s)
}

fn text<'a>(v: &'a toml::Value, key: &str) -> anyhow::Result<&'a str> {
    v.as_str()
        .ok_or_else(|| anyhow::anyhow!("{key} takes a string"))
}

fn integers(v: &toml::Value, key: &str, lens: &[usize]) -> anyhow::Result<Vec<i64>> {
    let list = v
        .as_array()
        .filter(|a| lens.contains(&a.len()))
        .ok_or_else(|| anyhow::anyhow!("{key} takes a list of {lens:?} integers"))?;
    list.iter()
        .map(|i| {
            i.as_integer()
                .ok_or_else(|| anyhow::anyhow!("{key} takes integers"))
        })
        .collect()
}

/// A monitor line written as text (the monitor checks its arguments).
fn monitor_line(text: &str) -> anyhow::Result<Line> {
    parse_line(text)?.ok_or_else(|| anyhow::anyhow!("empty command"))
}

fn parse_action(
    key: &str,
    v: &toml::Value,
    base: &Path,
    artifacts: &Path,
) -> anyhow::Result<(String, Action)> {
    let rel = |p: &str| {
        let p = Path::new(p);
        if p.is_relative() {
            base.join(p)
        } else {
            p.to_path_buf()
        }
    };
    let lines = |l: Vec<Line>| Action::Lines(l);
    Ok(match key {
        "wait-serial" => {
            let t = text(v, key)?;
            anyhow::ensure!(!t.is_empty(), "wait-serial needs some text");
            (
                format!("{key}: {t}"),
                lines(vec![Line::WaitSerial(t.into())]),
            )
        }
        "wait-screen" => {
            let t = text(v, key)?;
            anyhow::ensure!(!t.is_empty(), "wait-screen needs some text");
            (
                format!("{key}: {t}"),
                lines(vec![Line::WaitScreen(t.into())]),
            )
        }
        "wait-match" | "assert-match" => {
            let needle = rel(text(v, key)?);
            aero::needle::Needle::load(&needle)?;
            let timeout_ns = (key == "assert-match").then_some(0);
            let title = format!("{key}: {}", needle.display());
            (title, lines(vec![Line::WaitMatch { needle, timeout_ns }]))
        }
        "type" => {
            let t = text(v, key)?;
            (
                format!("type: {t:?}"),
                lines(vec![Line::Run(Command::Type(t.into()))]),
            )
        }
        "sendkey" => {
            let keys = text(v, key)?;
            anyhow::ensure!(
                !keys.contains(char::is_whitespace),
                "sendkey: one key combination"
            );
            (
                format!("sendkey: {keys}"),
                lines(vec![monitor_line(&format!("sendkey {keys}"))?]),
            )
        }
        "mouse_move" => {
            let d = integers(v, key, &[2, 3])?;
            let args: Vec<String> = d.iter().map(i64::to_string).collect();
            let line = format!("mouse_move {}", args.join(" "));
            (line.clone(), lines(vec![monitor_line(&line)?]))
        }
        "mouse_button" => {
            let mask = v
                .as_integer()
                .ok_or_else(|| anyhow::anyhow!("mouse_button takes a mask"))?;
            let line = format!("mouse_button {mask}");
            (line.clone(), lines(vec![monitor_line(&line)?]))
        }
        "mouse_move_abs" => {
            let c = integers(v, key, &[2])?;
            let line = format!("mouse_move_abs {} {}", c[0], c[1]);
            (line.clone(), lines(vec![monitor_line(&line)?]))
        }
        "click" => {
            let c = integers(v, key, &[2, 3])?;
            let args: Vec<String> = c.iter().map(i64::to_string).collect();
            let line = format!("click {}", args.join(" "));
            (line.clone(), lines(vec![monitor_line(&line)?]))
        }
        "screendump" => {
            let file = artifacts.join(text(v, key)?);
            (
                format!("screendump: {}", file.display()),
                lines(vec![Line::Run(Command::Screendump(file))]),
            )
        }
        "media-change" => {
            let t = v
                .as_table()
                .ok_or_else(|| anyhow::anyhow!("media-change takes {{ drive, file }}"))?;
            let drive = t
                .get("drive")
                .and_then(toml::Value::as_str)
                .ok_or_else(|| anyhow::anyhow!("media-change needs drive = \"ide1-cd0\"…"))?;
            let eject = t.get("eject").and_then(toml::Value::as_bool) == Some(true);
            match (t.get("file").and_then(toml::Value::as_str), eject) {
                (Some(file), false) => {
                    let file = rel(file);
                    let title = format!("media-change: {drive} {}", file.display());
                    let cmd = Command::Change {
                        drive: drive.into(),
                        file,
                        format: None,
                    };
                    (title, lines(vec![Line::Run(cmd)]))
                }
                (None, true) => {
                    let cmd = Command::Eject {
                        drive: Some(drive.into()),
                        force: false,
                    };
                    (
                        format!("media-change: eject {drive}"),
                        lines(vec![Line::Run(cmd)]),
                    )
                }
                _ => anyhow::bail!("media-change takes either file = \"…\" or eject = true"),
            }
        }
        "gamepad" => {
            let line = format!("gamepad_{}", text(v, key)?);
            (line.clone(), lines(vec![monitor_line(&line)?]))
        }
        "sleep" => {
            let s = seconds(v, key)?;
            // An `at` relative to the step's start is filled in when the step starts.
            (
                format!("sleep: {s} s"),
                lines(vec![Line::At((s * 1e9) as u64)]),
            )
        }
        "power-off" => {
            anyhow::ensure!(v.as_bool() == Some(true), "power-off = true");
            ("power-off".into(), Action::PowerOff)
        }
        other => anyhow::bail!("unknown step {other:?}"),
    })
}

fn parse_scenario(path: &Path, artifacts: Option<&Path>) -> anyhow::Result<(Scenario, PathBuf)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut doc: toml::Table = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.message().trim_end()))?;
    let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let name = match doc.remove("name") {
        Some(v) => text_owned(&v, "name")?,
        None => path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
    };
    anyhow::ensure!(
        !name.is_empty() && !name.contains(['/', '\\']),
        "name must be a plain word (it names the artifacts directory)"
    );
    let artifacts = artifacts.map_or_else(
        || PathBuf::from(format!("aero-test-{name}")),
        Path::to_path_buf,
    );
    let default_timeout = match doc.remove("timeout") {
        Some(v) => seconds(&v, "timeout")?,
        None => DEFAULT_STEP_TIMEOUT_S,
    };
    let machine_text = match doc.remove("machine") {
        Some(toml::Value::Table(t)) => toml::to_string(&t)?,
        Some(_) => anyhow::bail!("[machine] must be a table"),
        None => String::new(),
    };
    let machine = MachineArgs::from_config_text(&machine_text, path, &base)?;
    let raw_steps = match doc.remove("step") {
        Some(toml::Value::Array(a)) => a,
        _ => anyhow::bail!("no [[step]]"),
    };
    if let Some(key) = doc.keys().next() {
        anyhow::bail!("unknown key {key:?} (name, timeout, [machine], [[step]])");
    }
    let mut steps = Vec::new();
    for (i, raw) in raw_steps.iter().enumerate() {
        let at = |e: anyhow::Error| anyhow::anyhow!("step {}: {e}", i + 1);
        let t = raw
            .as_table()
            .ok_or_else(|| anyhow::anyhow!("step {}: not a table", i + 1))?;
        let timeout = match t.get("timeout") {
            Some(v) => seconds(v, "timeout").map_err(at)?,
            None => default_timeout,
        };
        let actions: Vec<_> = t.iter().filter(|(k, _)| *k != "timeout").collect();
        let [(key, value)] = actions.as_slice() else {
            return Err(at(anyhow::anyhow!(
                "a step has exactly one action (and an optional timeout)"
            )));
        };
        let (title, action) = parse_action(key, value, &base, &artifacts).map_err(at)?;
        steps.push(Step {
            title,
            action,
            timeout_ns: (timeout * 1e9) as u64,
        });
    }
    Ok((
        Scenario {
            name,
            machine,
            steps,
        },
        artifacts,
    ))
}

fn text_owned(v: &toml::Value, key: &str) -> anyhow::Result<String> {
    text(v, key).map(str::to_string)
}

/// How one step ended.
enum Outcome {
    Passed,
    Failed(String),
    /// Not run: an earlier step failed.
    Skipped,
}

struct StepResult {
    title: String,
    outcome: Outcome,
    host_seconds: f64,
}

pub fn main(args: TestArgs) -> ExitCode {
    let prepared = parse_scenario(&args.scenario, args.artifacts.as_deref()).and_then(
        |(scenario, artifacts)| {
            std::fs::create_dir_all(&artifacts)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", artifacts.display()))?;
            let session = open_session(&scenario, &artifacts, args.gpu)?;
            Ok((scenario, artifacts, session))
        },
    );
    let (scenario, artifacts, session) = match prepared {
        Ok(p) => p,
        Err(e) => {
            eprintln!("aero test: {e:#}");
            return ExitCode::from(EXIT_BAD_SCENARIO);
        }
    };
    let results = match run(&scenario, &artifacts, session) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("aero test: {e:#}");
            return ExitCode::from(EXIT_BAD_SCENARIO);
        }
    };
    let failed = results
        .iter()
        .any(|r| matches!(r.outcome, Outcome::Failed(_)));
    if let Some(out) = &args.junit
        && let Err(e) = std::fs::write(out, junit_xml(&scenario.name, &results))
    {
        eprintln!("aero test: cannot write {}: {e}", out.display());
        return ExitCode::from(EXIT_BAD_SCENARIO);
    }
    let passed = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Passed))
        .count();
    println!(
        "{}: {} ({passed} of {} steps passed)",
        scenario.name,
        if failed { "FAILED" } else { "passed" },
        results.len()
    );
    ExitCode::from(if failed { EXIT_FAILED } else { EXIT_PASSED })
}

/// The machine, with COM1 going to `serial.log` in the artifacts.
fn open_session(scenario: &Scenario, artifacts: &Path, gpu: GpuChoice) -> anyhow::Result<Session> {
    let config = scenario
        .machine
        .machine_config(crate::machine_args::HEADLESS_MEMORY_MIB, true)?;
    let mut monitor = Monitor::new(scenario.machine.media_files());
    monitor.keep_serial();
    // Replies ("screen matches needle …") and errors go to stderr; errors also fail the step.
    monitor.set_output(Box::new(std::io::stderr()));
    let mut machine = Machine::new(config)?;
    machine.set_aerogpu_executor(crate::machine_args::aerogpu_executor(gpu)?);
    Ok(Session {
        machine,
        serial: Some(open_sink(&artifacts.join("serial.log").to_string_lossy())?),
        debugcon: None,
        post_log: None,
        monitor: Some(monitor),
    })
}

fn run(scenario: &Scenario, artifacts: &Path, mut s: Session) -> anyhow::Result<Vec<StepResult>> {
    let total = scenario.steps.len();
    let mut results = Vec::new();
    let mut failed = false;
    for (i, step) in scenario.steps.iter().enumerate() {
        let n = i + 1;
        if failed {
            results.push(StepResult {
                title: step.title.clone(),
                outcome: Outcome::Skipped,
                host_seconds: 0.0,
            });
            continue;
        }
        print!("[{n}/{total}] {} ... ", step.title);
        let _ = std::io::stdout().flush();
        let started = Instant::now();
        let guest_start = s.machine.now_ns();
        let outcome = run_step(&mut s, step, n, artifacts)?;
        let guest_s = (s.machine.now_ns() - guest_start) as f64 / 1e9;
        match &outcome {
            Outcome::Passed => println!("ok ({guest_s:.2} s)"),
            Outcome::Failed(why) => {
                println!("FAILED after {guest_s:.2} s: {why}");
                failed = true;
            }
            Outcome::Skipped => {}
        }
        results.push(StepResult {
            title: step.title.clone(),
            outcome,
            host_seconds: started.elapsed().as_secs_f64(),
        });
    }
    s.finish()?;
    Ok(results)
}

/// Runs one step to its end; on failure saves `stepN-screen.png` (and for needles
/// `stepN.needle.png`, `stepN.diff.png`) in `artifacts`.
fn run_step(s: &mut Session, step: &Step, n: usize, artifacts: &Path) -> anyhow::Result<Outcome> {
    let Some(monitor) = s.monitor.as_mut() else {
        anyhow::bail!("the scenario session has no monitor");
    };
    let now = s.machine.now_ns();
    let origin = format!("step {n}");
    match &step.action {
        Action::Lines(lines) => {
            for line in lines {
                let line = match line {
                    // `sleep`: relative to the step's start.
                    Line::At(d) => Line::At(now.saturating_add(*d)),
                    other => other.clone(),
                };
                monitor.push_line(origin.clone(), line);
            }
        }
        Action::PowerOff => {
            monitor.push_line(origin.clone(), Line::Run(Command::SystemPowerdown));
        }
    }
    s.start();
    let deadline = now.saturating_add(step.timeout_ns);
    let mut powered_off = false;
    let failure = loop {
        let monitor = s.monitor.as_mut().expect("checked above");
        let errors = monitor.take_errors();
        if !errors.is_empty() {
            break errors.join("; ");
        }
        let done = match step.action {
            Action::Lines(_) => monitor.is_idle(),
            Action::PowerOff => powered_off,
        };
        if done {
            return Ok(Outcome::Passed);
        }
        if s.machine.now_ns() >= deadline {
            let secs = step.timeout_ns as f64 / 1e9;
            if matches!(step.action, Action::PowerOff) {
                break format!(
                    "the guest did not power off within {secs} s of guest time after the \
                     power button was pressed"
                );
            }
            let mut why = format!("timeout after {secs} s of guest time");
            if let Some(wait) = monitor.abandon() {
                why.push_str(&format!(
                    "; {}",
                    wait.watch.describe(&wait.needles).join("; ")
                ));
                save_failure(s, n, artifacts, Some(&wait))?;
                return Ok(Outcome::Failed(why));
            }
            break why;
        }
        match s.run_slice()?.event {
            RunEvent::Running => {}
            RunEvent::PoweredOff if matches!(step.action, Action::PowerOff) => powered_off = true,
            RunEvent::PoweredOff => break "the guest powered off".into(),
            RunEvent::Shutdown(msg) => break format!("the machine stopped: {msg}"),
        }
    };
    let wait = s.monitor.as_mut().and_then(|m| {
        m.abandon();
        m.take_match_failure()
    });
    save_failure(s, n, artifacts, wait.as_ref())?;
    Ok(Outcome::Failed(failure))
}

fn save_failure(
    s: &mut Session,
    n: usize,
    artifacts: &Path,
    wait: Option<&MatchWait>,
) -> anyhow::Result<()> {
    let frame = s.machine.screen();
    if frame.width > 0 && frame.height > 0 {
        let shot = artifacts.join(format!("step{n}-screen.png"));
        aero::screenshot::write_png(&shot, frame.width, frame.height, &frame.pixels)?;
    }
    if let Some(w) = wait {
        w.watch
            .write_pictures(&w.needles, &artifacts.join(format!("step{n}")))?;
    }
    Ok(())
}

/// Text for XML attributes and elements.
fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no escape for most control characters: drop them.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML as Jenkins, GitLab and GitHub reporters read it: one suite, a test case per
/// step, `<failure>` on the failed one and `<skipped/>` on those after it.
fn junit_xml(name: &str, results: &[StepResult]) -> String {
    let count = |f: fn(&Outcome) -> bool| results.iter().filter(|r| f(&r.outcome)).count();
    let failures = count(|o| matches!(o, Outcome::Failed(_)));
    let skipped = count(|o| matches!(o, Outcome::Skipped));
    let time: f64 = results.iter().map(|r| r.host_seconds).sum();
    let name = xml_escape(name);
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites name=\"aero test\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">\n",
        results.len()
    ));
    x.push_str(&format!(
        "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">\n",
        results.len()
    ));
    for (i, r) in results.iter().enumerate() {
        let case = format!(
            "    <testcase classname=\"{name}\" name=\"{:02} {}\" time=\"{:.3}\"",
            i + 1,
            xml_escape(&r.title),
            r.host_seconds
        );
        match &r.outcome {
            Outcome::Passed => x.push_str(&format!("{case}/>\n")),
            Outcome::Failed(why) => x.push_str(&format!(
                "{case}>\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                xml_escape(why),
                xml_escape(why)
            )),
            Outcome::Skipped => {
                x.push_str(&format!("{case}>\n      <skipped/>\n    </testcase>\n"))
            }
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> anyhow::Result<Scenario> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        parse_scenario(&path, Some(dir.path())).map(|(s, _)| s)
    }

    #[test]
    fn scenarios_parse_and_mistakes_are_named() {
        let s = scenario(
            "timeout = 5\n[machine]\nmemory = 64\n\
             [[step]]\nwait-serial = \"login:\"\ntimeout = 2.5\n\
             [[step]]\ntype = \"root\\n\"\n\
             [[step]]\nsendkey = \"ctrl-alt-delete\"\n\
             [[step]]\nmedia-change = { drive = \"ide1-cd0\", eject = true }\n\
             [[step]]\npower-off = true\n",
        )
        .unwrap();
        assert_eq!(s.name, "s");
        assert_eq!(s.machine.memory, Some(64));
        assert_eq!(s.steps.len(), 5);
        assert_eq!(s.steps[0].timeout_ns, 2_500_000_000);
        assert_eq!(s.steps[1].timeout_ns, 5_000_000_000);
        assert_eq!(s.steps[1].title, "type: \"root\\n\"");
        assert!(matches!(s.steps[4].action, Action::PowerOff));
        let s = scenario("[[step]]\ngamepad = \"axis rz -127 1\"\n").unwrap();
        assert_eq!(s.steps[0].title, "gamepad_axis rz -127 1");
        for (bad, why) in [
            (
                "[[step]]\nfrobnicate = 1\n",
                "step 1: unknown step \"frobnicate\"",
            ),
            (
                "[[step]]\ntype = \"a\"\nsendkey = \"b\"\n",
                "exactly one action",
            ),
            ("[[step]]\nsendkey = \"nosuchkey\"\n", "unknown key"),
            ("[[step]]\ntype = \"a\"\ntimeout = -1\n", "between 0"),
            ("[[step]]\nwait-match = \"none.json\"\n", "none.json"),
            ("[machine]\nmemroy = 1\n[[step]]\ntype = \"a\"\n", "memroy"),
            (
                "colour = 1\n[[step]]\ntype = \"a\"\n",
                "unknown key \"colour\"",
            ),
            ("name = \"a\"\n", "no [[step]]"),
            ("[[step]]\nclick = [1]\n", "integers"),
            ("[[step]]\ngamepad = \"wiggle\"\n", "gamepad_wiggle"),
            ("[[step]]\ngamepad = \"button 17 on\"\n", "button 1-16"),
        ] {
            let err = format!("{:#}", scenario(bad).err().expect(bad));
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }

    #[test]
    fn junit_marks_the_failed_step_and_skips_the_rest() {
        let r = |title: &str, outcome| StepResult {
            title: title.into(),
            outcome,
            host_seconds: 0.5,
        };
        let xml = junit_xml(
            "demo<1>",
            &[
                r("wait-serial: a&b", Outcome::Passed),
                r("wait-match: x.json", Outcome::Failed("no \"match\"".into())),
                r("type: \"x\"", Outcome::Skipped),
            ],
        );
        assert!(xml.contains(
            "<testsuite name=\"demo&lt;1&gt;\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\"1.500\">"
        ));
        assert!(xml.contains("name=\"01 wait-serial: a&amp;b\" time=\"0.500\"/>"));
        assert!(xml.contains("<failure message=\"no &quot;match&quot;\">"));
        assert!(xml.contains("name=\"03 type: &quot;x&quot;\" time=\"0.500\">\n      <skipped/>"));
    }
}
