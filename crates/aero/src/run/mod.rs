//! `aero run`: the guest in a desktop window, with keyboard, mouse, sound and gamepads.
//!
//! Two threads matter. The machine thread owns the [`Machine`] and runs it in real time;
//! the window thread (the process's main thread, as windowing systems want) owns the
//! window. Neither waits for the other: the machine drops its newest screen into a
//! one-frame slot (an older unpresented one is replaced) and wakes the window; the
//! window sends input, pause, reset and quit through a channel the machine drains
//! between short run slices.

mod audio;
mod gamepad;
pub(crate) mod keymap;
mod present;
mod scaling;
mod window;

use std::fs::File;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aero_gpu::aerogpu::{Executor, GpuScanout, SoftExecutorConfig, WgpuExecutor};
use aero_machine::{Frame, GamepadInput, Machine, MachineConfig, RunEvent};

use crate::machine_args::MachineArgs;
use crate::monitor::Monitor;
use clap::Args;

/// Host keys, shown in `--help` and the README ("Window keys").
pub const WINDOW_KEYS: &str = "\
Window keys (hold Ctrl+Alt, then):
  G       release the mouse (a click in the window grabs it)
  P       pause / resume
  R       reset the machine
  Q       power button (the guest shuts down); press again to switch off at once
  S       screenshot of the guest screen to aero-<time>.png in the current directory
  F       fullscreen on / off
  I       integer scaling on / off (sharp pixels, whole-number scale)
  E       eject the CD (first CD drive); again: put the same disc back
  End     send Ctrl+Alt+Delete to the guest
  Delete  goes to the guest as it is (Ctrl+Alt+Delete)
Dropping a disc image (.iso) on the window inserts it into the first CD drive
(a disc there comes out). A tray the guest has locked stays shut: the guest is
asked to eject instead.
Closing the window switches the machine off: disks are flushed and nothing is
asked of the guest.";

#[derive(Args, Debug)]
#[command(after_help = WINDOW_KEYS)]
pub struct RunArgs {
    #[command(flatten)]
    machine: MachineArgs,
    /// COM1 output (- = stdout).
    #[arg(long, value_name = "FILE|-")]
    serial: Option<String>,
    /// Start in fullscreen.
    #[arg(long)]
    fullscreen: bool,
    /// Scale the picture by whole numbers only (sharp pixels).
    #[arg(long = "integer-scaling")]
    integer_scaling: bool,
    /// No sound: no HD Audio controller, the PC speaker silent.
    #[arg(long = "no-audio")]
    no_audio: bool,
    /// Do not open gamepads.
    #[arg(long = "no-gamepad")]
    no_gamepad: bool,
    /// Monitor commands (eject, change, info block, quit) from stdin ("stdio") or a
    /// script FILE, as in `aero headless --monitor`.
    #[arg(long, value_name = "FILE|stdio")]
    monitor: Option<String>,
}

/// Exit statuses: 0 switched off (window closed, guest powered off); 1 no window could
/// be shown or the machine failed; 2 bad arguments; 3 the guest CPU shut down.
const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;
const EXIT_BAD_ARGS: u8 = 2;
const EXIT_SHUTDOWN: u8 = 3;

pub fn main(mut args: RunArgs) -> ExitCode {
    let setup = match args.machine.load_config().and_then(|()| Setup::new(&args)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("aero: {e:#}");
            return ExitCode::from(EXIT_BAD_ARGS);
        }
    };
    ExitCode::from(window::run(args, setup))
}

/// Input and commands for the machine thread.
#[derive(Debug)]
pub enum ToMachine {
    /// One keyboard event as scancode-set-2 bytes.
    Key(Vec<u8>),
    Mouse {
        dx: i32,
        dy: i32,
        dz: i32,
        buttons: u8,
    },
    /// The USB tablet's pointer (0..=32767 on both axes), buttons and wheel clicks.
    Pointer {
        x: u16,
        y: u16,
        buttons: u8,
        wheel: i8,
    },
    Gamepad(GamepadInput),
    Pause(bool),
    Reset,
    PowerButton,
    /// Eject the first CD drive's disc, or put the last ejected one back.
    ToggleCd,
    /// Put this disc image into the first CD drive.
    InsertCd(std::path::PathBuf),
    /// Save the guest screen as a PNG at this path (pixels read back only now).
    Screenshot(std::path::PathBuf),
    /// Stop now: flush disks and end the thread.
    Quit,
}

/// News for the window thread (winit user events).
#[derive(Debug)]
pub enum UserEvent {
    /// A new screen waits in the frame slot.
    FrameReady,
    /// Guest speed over the last second.
    Stats { mips: f64 },
    /// The guest has configured (true) or dropped the USB tablet: the window sends
    /// absolute positions and needs no mouse grab while it is there.
    Tablet(bool),
    /// The machine thread ended; disks are flushed.
    Stopped(Outcome),
    /// Ctrl+C in the terminal.
    Interrupt,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Switched off by the user.
    Quit,
    PoweredOff,
    /// The guest CPU shut down (triple fault).
    Crashed(String),
    /// The host side failed (e.g. writing the serial file, flushing a disk).
    Failed(String),
}

impl Outcome {
    fn exit_code(&self) -> u8 {
        match self {
            Outcome::Quit | Outcome::PoweredOff => EXIT_OK,
            Outcome::Crashed(_) => EXIT_SHUTDOWN,
            Outcome::Failed(_) => EXIT_FAILED,
        }
    }
}

/// A screen for the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Picture {
    /// Pixels (VGA, VBE, a guest-memory scanout, the CPU executor's presents).
    Pixels(Frame),
    /// AeroGPU's presented scanout on the GPU executor's device, which the window shares
    /// (see [`GpuPictures`]); the cursor drawn over it by the window.
    Gpu(GpuScanout),
}

/// Set by the window once it draws with the AeroGPU executor's device: from then on the
/// machine offers presented scanouts as textures instead of reading them back.
pub type GpuPictures = Arc<AtomicBool>;

/// The newest unpresented screen. The machine replaces it; the window takes it.
#[derive(Default)]
pub struct FrameSlot(Mutex<Option<Picture>>);

impl FrameSlot {
    /// Stores `picture`; true when the slot was empty (the window must be woken).
    pub fn put(&self, picture: Picture) -> bool {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        slot.replace(picture).is_none()
    }
    pub fn take(&self) -> Option<Picture> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Everything opened before the window, so bad arguments fail early.
pub struct Setup {
    config: MachineConfig,
    gpu: crate::machine_args::GpuChoice,
    monitor: Monitor,
    serial: Option<Box<dyn Write + Send>>,
    /// Shown in the title bar.
    name: String,
}

impl Setup {
    fn new(args: &RunArgs) -> anyhow::Result<Setup> {
        // The window follows the host clock.
        let config = args
            .machine
            .machine_config(crate::machine_args::WINDOW_MEMORY_MIB, false)?;
        let media = args.machine.media_files();
        let monitor = match args.monitor.as_deref() {
            Some(spec) => Monitor::open(spec, media)?,
            None => Monitor::new(media),
        };
        let serial: Option<Box<dyn Write + Send>> = match args.serial.as_deref() {
            None => None,
            Some("-") => Some(Box::new(std::io::stdout())),
            Some(path) => {
                let f =
                    File::create(path).map_err(|e| anyhow::anyhow!("cannot create {path}: {e}"))?;
                Some(Box::new(f))
            }
        };
        let name = format!("Aero - {}", args.machine.display_name());
        Ok(Setup {
            config,
            gpu: args.machine.gpu,
            monitor,
            serial,
            name,
        })
    }
}

/// How long the window may take to close after the machine stopped.
const WINDOW_GRACE: Duration = Duration::from_secs(10);

/// Guest time run between looks at the input channel.
const SLICE_NS: u64 = 2_000_000;
/// How often the screen is rendered and offered to the window.
const FRAME_INTERVAL: Duration = Duration::from_micros(16_667);
const STATS_INTERVAL: Duration = Duration::from_secs(1);

/// Where the machine thread reports to; the window side implements it with winit's
/// event-loop proxy.
pub trait Notify: Clone + Send + 'static {
    fn notify(&self, event: UserEvent);
}

/// The machine thread's state.
struct Runner<N: Notify> {
    machine: Machine,
    rx: Receiver<ToMachine>,
    notify: N,
    slot: Arc<FrameSlot>,
    serial: Option<Box<dyn Write + Send>>,
    speaker: Option<audio::SpeakerFeed>,
    paused_since: Option<Instant>,
    last_frame: Option<Picture>,
    /// [`Machine::display_generation`] of the last pixel picture offered.
    offered_generation: Option<u64>,
    gpu_pictures: GpuPictures,
    /// Whether the guest had configured the USB tablet at the last look.
    tablet: bool,
    /// Media changes: `--monitor` lines, the eject key, dropped files.
    monitor: Monitor,
}

impl<N: Notify> Runner<N> {
    /// Runs until the guest powers off or the window says quit; flushes disks either way.
    fn run(mut self) -> Outcome {
        let outcome = self.run_loop();
        let outcome = match self.machine.shutdown() {
            Ok(()) => outcome,
            Err(e) => Outcome::Failed(format!("flushing the disks failed: {e}")),
        };
        if let Some(w) = self.serial.as_mut() {
            let _ = w.flush();
        }
        outcome
    }

    fn run_loop(&mut self) -> Outcome {
        let mut next_frame = Instant::now();
        let mut stats_at = Instant::now();
        let mut stats_instructions = self.machine.instructions_retired();
        loop {
            // Input first, without waiting (or waiting while paused).
            loop {
                let msg = if self.paused_since.is_some() {
                    match self.rx.recv_timeout(Duration::from_millis(100)) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return Outcome::Quit,
                    }
                } else {
                    match self.rx.try_recv() {
                        Ok(m) => m,
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => return Outcome::Quit,
                    }
                };
                if let ControlFlow::Stop = self.handle(msg) {
                    return Outcome::Quit;
                }
            }
            if self.paused_since.is_some() {
                stats_at = Instant::now();
                continue;
            }
            let before = self.machine.now_ns();
            let event = self.machine.run_for(SLICE_NS);
            let elapsed = self.machine.now_ns().saturating_sub(before);
            if let Some(feed) = self.speaker.as_mut() {
                feed.produce(self.machine.speaker_tone_hz(), elapsed);
            }
            let serial = self.machine.take_serial_output();
            self.monitor.poll(&mut self.machine, &serial);
            if self.monitor.quit_requested() {
                return Outcome::Quit;
            }
            if let Some(w) = self.serial.as_mut()
                && !serial.is_empty()
                && let Err(e) = w.write_all(&serial).and_then(|()| w.flush())
            {
                return Outcome::Failed(format!("cannot write the serial output: {e}"));
            }
            let now = Instant::now();
            if now >= next_frame {
                next_frame = now + FRAME_INTERVAL;
                self.offer_frame();
            }
            if now.duration_since(stats_at) >= STATS_INTERVAL {
                let instructions = self.machine.instructions_retired();
                let secs = now.duration_since(stats_at).as_secs_f64();
                let mips = instructions.saturating_sub(stats_instructions) as f64 / secs / 1e6;
                self.notify.notify(UserEvent::Stats { mips });
                let tablet = self.machine.tablet_ready();
                if tablet != self.tablet {
                    self.tablet = tablet;
                    self.notify.notify(UserEvent::Tablet(tablet));
                }
                (stats_at, stats_instructions) = (now, instructions);
            }
            match event {
                RunEvent::Running => {}
                RunEvent::PoweredOff => {
                    self.offer_frame();
                    return Outcome::PoweredOff;
                }
                RunEvent::Shutdown(msg) => return Outcome::Crashed(msg),
            }
        }
    }

    fn handle(&mut self, msg: ToMachine) -> ControlFlow {
        match msg {
            ToMachine::Key(bytes) => self.machine.key_event(&bytes),
            ToMachine::Mouse {
                dx,
                dy,
                dz,
                buttons,
            } => self.machine.mouse_move(dx, dy, dz, buttons),
            ToMachine::Pointer {
                x,
                y,
                buttons,
                wheel,
            } => {
                self.machine.tablet_event(x, y, buttons, wheel);
            }
            ToMachine::Gamepad(input) => self.machine.gamepad_input(input),
            ToMachine::Pause(true) => {
                self.paused_since.get_or_insert_with(Instant::now);
            }
            ToMachine::Pause(false) => {
                if let Some(since) = self.paused_since.take() {
                    self.machine.resume_after_pause(since.elapsed());
                }
            }
            ToMachine::Reset => self.machine.reset(),
            ToMachine::PowerButton => self.machine.press_power_button(),
            ToMachine::ToggleCd => match self.monitor.toggle_first_drive(&mut self.machine) {
                Ok(text) => eprintln!("aero: {text}"),
                Err(e) => eprintln!("aero: {e:#}"),
            },
            ToMachine::InsertCd(path) => {
                match self.monitor.insert_first_drive(&mut self.machine, path) {
                    Ok(text) => eprintln!("aero: {text}"),
                    Err(e) => eprintln!("aero: {e:#}"),
                }
            }
            ToMachine::Screenshot(path) => {
                let frame = self.machine.screen();
                match aero::screenshot::write_png(&path, frame.width, frame.height, &frame.pixels) {
                    Ok(()) => eprintln!("aero: screenshot saved to {}", path.display()),
                    Err(e) => eprintln!("aero: screenshot failed: {e:#}"),
                }
            }
            ToMachine::Quit => {
                tracing::info!("machine: switching off");
                return ControlFlow::Stop;
            }
        }
        ControlFlow::Go
    }

    /// Hands the screen to the window if it changed: AeroGPU's presented scanout as the
    /// GPU texture it is when the window shares the executor's device (a new present
    /// is a new generation: no pixel is read or compared), otherwise rendered pixels
    /// when [`Machine::display_generation`] says the screen changed.
    fn offer_frame(&mut self) {
        let gpu = if self.gpu_pictures.load(Ordering::Relaxed) {
            self.machine.gpu_scanout()
        } else {
            None
        };
        let picture = match gpu {
            Some(scanout) => Picture::Gpu(scanout),
            None => {
                // Renders only when the screen's raw bytes changed since the last look.
                let generation = self.machine.display_generation();
                if self.offered_generation == Some(generation)
                    && matches!(self.last_frame, Some(Picture::Pixels(_)))
                {
                    return;
                }
                self.offered_generation = Some(generation);
                let frame = self.machine.last_screen();
                if frame.width == 0 || frame.height == 0 {
                    return;
                }
                Picture::Pixels(frame.clone())
            }
        };
        if self.last_frame.as_ref() == Some(&picture) {
            return;
        }
        self.last_frame = Some(picture.clone());
        if self.slot.put(picture) {
            self.notify.notify(UserEvent::FrameReady);
        }
    }
}

enum ControlFlow {
    Go,
    Stop,
}

/// Builds the machine on its own thread and runs it there. Returns once the machine
/// exists (or failed to), with the thread's handle that yields the outcome.
#[allow(clippy::too_many_arguments)]
fn spawn_machine<N: Notify>(
    config: MachineConfig,
    gpu: crate::machine_args::GpuChoice,
    monitor: Monitor,
    serial: Option<Box<dyn Write + Send>>,
    speaker: Option<audio::SpeakerFeed>,
    rx: Receiver<ToMachine>,
    notify: N,
    slot: Arc<FrameSlot>,
    shared_gpu: Option<(wgpu::Device, wgpu::Queue)>,
    gpu_pictures: GpuPictures,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let handle = std::thread::Builder::new()
        .name("aero-machine".into())
        .spawn(move || {
            // On the window's device when there is one (it exists only for auto/wgpu).
            let executor = match shared_gpu {
                Some((device, queue)) => Ok(Box::new(WgpuExecutor::with_device(
                    device,
                    queue,
                    SoftExecutorConfig::default(),
                )) as Box<dyn Executor + Send>),
                None => crate::machine_args::aerogpu_executor(gpu),
            };
            let machine = match Machine::new(config)
                .map_err(anyhow::Error::from)
                .and_then(|m| {
                    executor.map(|e| {
                        let mut m = m;
                        m.set_aerogpu_executor(e);
                        m
                    })
                }) {
                Ok(m) => {
                    let _ = ready_tx.send(Ok(()));
                    m
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return;
                }
            };
            let runner = Runner {
                machine,
                rx,
                notify,
                slot,
                serial,
                speaker,
                paused_since: None,
                tablet: false,
                last_frame: None,
                offered_generation: None,
                gpu_pictures,
                monitor,
            };
            let notify_done = runner.notify.clone();
            let outcome = runner.run();
            let code = outcome.exit_code();
            notify_done.notify(UserEvent::Stopped(outcome));
            // The disks are flushed. Normally the window ends the process at once; if its
            // thread is ever stuck (say, inside a GPU driver), the process must still end.
            std::thread::spawn(move || {
                std::thread::sleep(WINDOW_GRACE);
                eprintln!("aero: the window did not close after the machine stopped; exiting");
                std::process::exit(i32::from(code));
            });
        })?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(e)) => {
            let _ = handle.join();
            anyhow::bail!("{e}")
        }
        Err(_) => {
            let _ = handle.join();
            anyhow::bail!("the machine thread ended while starting")
        }
    }
}

/// A stop flag for helper threads (gamepad) that ends them when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
