//! The window thread: winit events in, the guest picture out through wgpu (`present`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{
    DeviceEvent, DeviceId, ElementState, MouseButton, MouseScrollDelta, WindowEvent,
};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop, EventLoopProxy};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{CursorGrabMode, Fullscreen, Window, WindowId};

use super::keymap::{self, Mods};
use super::present::{Drawn, Presenter, SharedGpu};
use super::{EXIT_FAILED, EXIT_OK};
use super::{
    FrameSlot, GpuPictures, Notify, Outcome, Picture, RunArgs, Setup, StopOnDrop, ToMachine,
    UserEvent, audio, gamepad, scaling,
};

/// Host time left idle after drawing a frame, in multiples of what the drawing took.
const DRAW_IDLE_FACTOR: u32 = 2;

/// Guest picture size shown before the first frame (VGA text mode).
const FIRST_FRAME: (u32, u32) = (720, 400);

impl Notify for EventLoopProxy<UserEvent> {
    fn notify(&self, event: UserEvent) {
        // Fails only when the event loop is gone, i.e. the window is closing anyway.
        let _ = self.send_event(event);
    }
}

/// Opens the window and runs everything until the machine stops. Returns the exit code.
pub fn run(args: RunArgs, setup: Setup) -> u8 {
    let event_loop = match EventLoop::<UserEvent>::with_user_event().build() {
        Ok(l) => l,
        Err(e) => {
            tracing::debug!("event loop: {e}");
            eprintln!(
                "aero: no display to open a window on; use `aero headless` to run without one"
            );
            return EXIT_FAILED;
        }
    };
    let proxy = event_loop.create_proxy();
    let (tx, rx) = std::sync::mpsc::channel();
    let slot = Arc::new(FrameSlot::default());
    // The stream lives on this thread (cpal streams are not Send); the feed goes to the machine.
    let (audio, speaker) = if args.no_audio {
        (None, None)
    } else {
        audio::start().unzip()
    };
    // HD Audio unless --no-audio: into the speaker's stream, or into nothing when the
    // host has no output device (the guest still has its sound card).
    let mut config = setup.config;
    if !args.no_audio {
        config.audio = Some(match &speaker {
            Some(feed) => Box::new(feed.hda_output()),
            None => Box::new(audio::SilentAudio),
        });
    }
    // One wgpu device for AeroGPU's executor and the window, made before the window
    // (the machine starts first); without an adapter the executor choice falls back as
    // in `aero headless`, and the window finds its own.
    let shared = match setup.gpu {
        crate::machine_args::GpuChoice::Auto | crate::machine_args::GpuChoice::Wgpu => {
            match SharedGpu::new() {
                Ok(gpu) => Some(gpu),
                Err(e) => {
                    tracing::info!("no shared wgpu device for AeroGPU and the window: {e:#}");
                    None
                }
            }
        }
        _ => None,
    };
    let gpu_pictures = GpuPictures::default();
    let machine = match super::spawn_machine(
        config,
        setup.gpu,
        setup.monitor,
        setup.serial,
        speaker,
        rx,
        proxy.clone(),
        slot.clone(),
        shared.as_ref().map(|g| (g.device.clone(), g.queue.clone())),
        gpu_pictures.clone(),
    ) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("aero: {e:#}");
            return EXIT_FAILED;
        }
    };
    let gamepad_stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
    if !args.no_gamepad {
        gamepad::start(tx.clone(), gamepad_stop.0.clone());
    }
    let mut app = App::new(setup.name, tx, slot, args.integer_scaling, args.fullscreen);
    app.shared_gpu = shared;
    app.gpu_pictures = gpu_pictures;
    app.interrupt = Some(proxy);
    let result = event_loop.run_app(&mut app);
    // Whatever ended the loop, the machine must stop and flush its disks.
    let _ = app.to_machine.send(ToMachine::Quit);
    let _ = machine.join();
    drop(gamepad_stop);
    drop(audio);
    if let Err(e) = result {
        eprintln!("aero: the window failed: {e}");
        return EXIT_FAILED;
    }
    if let Some(msg) = app.error {
        eprintln!("aero: {msg}");
        return EXIT_FAILED;
    }
    match app.outcome {
        Some(outcome) => {
            if let Outcome::Crashed(msg) | Outcome::Failed(msg) = &outcome {
                eprintln!("aero: {msg}");
            }
            outcome.exit_code()
        }
        None => EXIT_OK,
    }
}

/// Ctrl+Alt+<key> actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HostKey {
    ReleaseMouse,
    Pause,
    Reset,
    PowerOff,
    Screenshot,
    Fullscreen,
    IntegerScaling,
    CtrlAltDel,
    /// Eject the CD, or put the last one back.
    Eject,
}

fn host_key(code: KeyCode) -> Option<HostKey> {
    Some(match code {
        KeyCode::KeyG => HostKey::ReleaseMouse,
        KeyCode::KeyP => HostKey::Pause,
        KeyCode::KeyR => HostKey::Reset,
        KeyCode::KeyQ => HostKey::PowerOff,
        KeyCode::KeyS => HostKey::Screenshot,
        KeyCode::KeyF => HostKey::Fullscreen,
        KeyCode::KeyI => HostKey::IntegerScaling,
        KeyCode::End => HostKey::CtrlAltDel,
        KeyCode::KeyE => HostKey::Eject,
        _ => return None,
    })
}

struct App {
    name: String,
    to_machine: Sender<ToMachine>,
    slot: Arc<FrameSlot>,
    window: Option<Arc<Window>>,
    presenter: Option<Presenter>,
    /// The device made for AeroGPU's executor, which the presenter uses when it can.
    shared_gpu: Option<SharedGpu>,
    /// Told to the machine: the presenter draws with the executor's device.
    gpu_pictures: GpuPictures,
    /// Size of the picture on the GPU.
    frame_size: (u32, u32),
    integer: bool,
    start_fullscreen: bool,
    /// Keys held down, as sent to the guest.
    held: Vec<KeyCode>,
    /// Host-key presses whose release must not reach the guest.
    swallowed: Vec<KeyCode>,
    buttons: u8,
    grabbed: bool,
    /// The guest has configured the USB tablet: pointer positions go to it, no grab.
    tablet: bool,
    /// The cursor's last tablet position.
    pointer: (u16, u16),
    /// Sub-pixel motion and wheel remainders.
    motion: (f64, f64, f64),
    paused: bool,
    power_pressed: bool,
    quitting: bool,
    mips: f64,
    frames: u32,
    fps: u32,
    fps_since: Instant,
    outcome: Option<Outcome>,
    error: Option<String>,
    render_error_logged: bool,
    /// A new guest picture waits to be drawn.
    frame_pending: bool,
    /// When the last frame was drawn and how long drawing takes (smoothed).
    drawn_at: Instant,
    draw_cost: Duration,
    /// Size the GPU surface was last configured for.
    surface_size: (u32, u32),
    /// Fully covered by other windows: nothing to draw (a software rasteriser would burn CPU).
    occluded: bool,
    /// Where Ctrl+C / SIGTERM report; the handler is installed once drawing works.
    interrupt: Option<EventLoopProxy<UserEvent>>,
}

impl App {
    fn new(
        name: String,
        to_machine: Sender<ToMachine>,
        slot: Arc<FrameSlot>,
        integer: bool,
        fullscreen: bool,
    ) -> App {
        App {
            name,
            to_machine,
            slot,
            window: None,
            presenter: None,
            shared_gpu: None,
            gpu_pictures: GpuPictures::default(),
            frame_size: FIRST_FRAME,
            integer,
            start_fullscreen: fullscreen,
            held: Vec::new(),
            swallowed: Vec::new(),
            buttons: 0,
            grabbed: false,
            tablet: false,
            pointer: (0, 0),
            motion: (0.0, 0.0, 0.0),
            paused: false,
            power_pressed: false,
            quitting: false,
            mips: 0.0,
            frames: 0,
            fps: 0,
            fps_since: Instant::now(),
            outcome: None,
            error: None,
            render_error_logged: false,
            occluded: false,
            surface_size: (0, 0),
            frame_pending: false,
            drawn_at: Instant::now(),
            draw_cost: Duration::ZERO,
            interrupt: None,
        }
    }

    fn send(&self, msg: ToMachine) {
        // The machine thread is gone only after it reported Stopped; nothing to do then.
        let _ = self.to_machine.send(msg);
    }

    fn title(&self) -> String {
        let state = if self.quitting {
            "stopping".to_string()
        } else if self.paused {
            "paused".to_string()
        } else if self.power_pressed {
            "powering off".to_string()
        } else {
            format!("running, {:.0} MIPS, {} fps", self.mips, self.fps)
        };
        let hint = if self.tablet {
            " - USB tablet"
        } else if self.grabbed {
            " - Ctrl+Alt+G releases the mouse"
        } else {
            ""
        };
        format!("{} - {state}{hint}", self.name)
    }

    fn update_title(&self) {
        if let Some(w) = &self.window {
            w.set_title(&self.title());
        }
    }

    fn monitor_size(&self) -> Option<(u32, u32)> {
        let m = self.window.as_ref()?.current_monitor()?;
        Some((m.size().width, m.size().height))
    }

    fn create_window(&mut self, event_loop: &ActiveEventLoop) -> anyhow::Result<()> {
        let monitor = event_loop
            .primary_monitor()
            .or_else(|| event_loop.available_monitors().next());
        let (w, h) = scaling::initial_window_size(
            FIRST_FRAME,
            monitor.map(|m| (m.size().width, m.size().height)),
        );
        let mut attrs = Window::default_attributes()
            .with_title(self.title())
            .with_inner_size(PhysicalSize::new(w, h))
            .with_min_inner_size(PhysicalSize::new(160, 100));
        if self.start_fullscreen {
            attrs = attrs.with_fullscreen(Some(Fullscreen::Borderless(None)));
        }
        let window = Arc::new(event_loop.create_window(attrs)?);
        let mut presenter = Presenter::new(window.clone(), self.shared_gpu.as_ref())?;
        // Until the guest draws: black.
        let black: Vec<u8> = [0, 0, 0, 255].repeat(FIRST_FRAME.0 as usize * FIRST_FRAME.1 as usize);
        let shown = presenter
            .renderer()
            .scoped(|r| r.set_picture(FIRST_FRAME, &black));
        if let Err(e) = shown {
            tracing::warn!("drawing the window: {e}");
        }
        let shared = presenter.shares_device();
        self.gpu_pictures
            .store(shared, std::sync::atomic::Ordering::Relaxed);
        tracing::info!(adapter = presenter.adapter_name(), present = ?presenter.present_mode(), shared, "drawing with wgpu");
        self.window = Some(window);
        self.presenter = Some(presenter);
        self.sync_surface();
        Ok(())
    }

    /// Follows the window's size as it is now (asked of the window system, not taken from
    /// the last resize event): the picture's rectangle and filter depend on it.
    fn sync_surface(&mut self) {
        let Some(window) = &self.window else {
            return;
        };
        let size = window.inner_size();
        let size = (size.width.max(1), size.height.max(1));
        if size != self.surface_size {
            self.surface_size = size;
            self.apply_scaling_mode();
        }
    }

    /// Integer scaling while the picture fits 1:1; aspect-correct fill otherwise.
    fn apply_scaling_mode(&mut self) {
        let Some(presenter) = self.presenter.as_mut() else {
            return;
        };
        let rect = scaling::fit(self.frame_size, self.surface_size, self.integer);
        let whole =
            rect.width.is_multiple_of(self.frame_size.0.max(1)) && rect.width >= self.frame_size.0;
        // Sharp pixels at whole-number scales, filtered otherwise.
        presenter.renderer().set_smooth(!(self.integer && whole));
    }

    fn present_new_frame(&mut self) {
        let Some(picture) = self.slot.take() else {
            return;
        };
        let Some(presenter) = self.presenter.as_mut() else {
            return;
        };
        let size = match &picture {
            Picture::Pixels(frame) => {
                let size = (frame.width, frame.height);
                if frame.pixels.len() as u64 != u64::from(size.0) * u64::from(size.1) * 4 {
                    return;
                }
                let shown = presenter
                    .renderer()
                    .scoped(|r| r.set_picture(size, &frame.pixels));
                self.upload_failed(shown);
                size
            }
            Picture::Gpu(scanout) => {
                let shown = presenter.renderer().scoped(|r| r.set_gpu_picture(scanout));
                self.upload_failed(shown);
                let texture = &scanout.texture.texture;
                (texture.width(), texture.height())
            }
        };
        if size != self.frame_size {
            let old = self.frame_size;
            self.frame_size = size;
            if let Some(window) = &self.window
                && window.fullscreen().is_none()
                && !window.is_maximized()
            {
                let inner = window.inner_size();
                if let Some((w, h)) = scaling::window_for_mode_change(
                    old,
                    size,
                    (inner.width, inner.height),
                    self.monitor_size(),
                ) {
                    let _ = window.request_inner_size(PhysicalSize::new(w, h));
                }
            }
            self.apply_scaling_mode();
        }
        // Drawn from about_to_wait, at the pace drawing allows.
        self.frame_pending = true;
    }

    /// Logs (once, like draw errors) an upload of the picture the device refused.
    fn upload_failed(&mut self, shown: anyhow::Result<()>) {
        if let Err(e) = shown
            && !self.render_error_logged
        {
            self.render_error_logged = true;
            tracing::warn!("drawing the window: {e}");
        }
    }

    fn mods(&self) -> Mods {
        let held = |a, b| self.held.contains(&a) || self.held.contains(&b);
        Mods {
            ctrl: held(KeyCode::ControlLeft, KeyCode::ControlRight),
            alt: held(KeyCode::AltLeft, KeyCode::AltRight),
        }
    }

    fn key(&mut self, code: KeyCode, pressed: bool) {
        if pressed {
            let mods = self.mods();
            if mods.ctrl
                && mods.alt
                && let Some(action) = host_key(code)
            {
                self.swallowed.push(code);
                self.host_action(action);
                return;
            }
            if self.held.contains(&code) {
                return;
            }
            self.held.push(code);
            tracing::debug!(?code, "key down");
            if let Some(key) = keymap::lookup(code) {
                for seq in keymap::press(key, mods) {
                    self.send(ToMachine::Key(seq));
                }
            }
        } else {
            if let Some(i) = self.swallowed.iter().position(|&c| c == code) {
                self.swallowed.remove(i);
                return;
            }
            let Some(i) = self.held.iter().position(|&c| c == code) else {
                return;
            };
            self.held.remove(i);
            if let Some(key) = keymap::lookup(code) {
                for seq in keymap::release(key, self.mods()) {
                    self.send(ToMachine::Key(seq));
                }
            }
        }
    }

    /// Lets go of every key and button, so none stays stuck in the guest.
    fn release_all(&mut self) {
        for code in std::mem::take(&mut self.held).into_iter().rev() {
            if let Some(key) = keymap::lookup(code) {
                for seq in keymap::release(key, Mods::default()) {
                    self.send(ToMachine::Key(seq));
                }
            }
        }
        self.swallowed.clear();
        if self.buttons != 0 && self.tablet {
            self.buttons = 0;
            self.send_pointer(0);
        } else if self.buttons != 0 {
            self.buttons = 0;
            self.send(ToMachine::Mouse {
                dx: 0,
                dy: 0,
                dz: 0,
                buttons: 0,
            });
        }
    }

    fn grab(&mut self, on: bool) {
        let Some(window) = &self.window else { return };
        if on {
            let grabbed = window
                .set_cursor_grab(CursorGrabMode::Locked)
                .or_else(|_| window.set_cursor_grab(CursorGrabMode::Confined));
            if let Err(e) = grabbed {
                tracing::warn!("cannot grab the pointer: {e}");
            }
            window.set_cursor_visible(false);
        } else {
            let _ = window.set_cursor_grab(CursorGrabMode::None);
            window.set_cursor_visible(true);
        }
        self.grabbed = on;
        self.update_title();
    }

    fn host_action(&mut self, action: HostKey) {
        tracing::info!(?action, "host key");
        match action {
            HostKey::ReleaseMouse => self.grab(false),
            HostKey::Pause => {
                self.paused = !self.paused;
                if self.paused {
                    self.release_all();
                }
                self.send(ToMachine::Pause(self.paused));
            }
            HostKey::Reset => {
                self.power_pressed = false;
                self.send(ToMachine::Reset);
            }
            HostKey::PowerOff => {
                if self.power_pressed {
                    self.quit();
                } else {
                    self.power_pressed = true;
                    self.send(ToMachine::PowerButton);
                }
            }
            HostKey::Screenshot => self.screenshot(),
            HostKey::Fullscreen => {
                if let Some(w) = &self.window {
                    let on = w.fullscreen().is_none();
                    w.set_fullscreen(on.then_some(Fullscreen::Borderless(None)));
                }
            }
            HostKey::IntegerScaling => {
                self.integer = !self.integer;
                self.apply_scaling_mode();
                if let Some(w) = &self.window {
                    w.request_redraw();
                }
            }
            HostKey::CtrlAltDel => {
                // Ctrl and Alt are already down in the guest.
                self.send(ToMachine::Key(vec![0xE0, 0x71]));
                self.send(ToMachine::Key(vec![0xE0, 0xF0, 0x71]));
            }
            HostKey::Eject => self.send(ToMachine::ToggleCd),
        }
        self.update_title();
    }

    /// The machine saves the screen as it is now: a GPU scanout is read back only here.
    fn screenshot(&self) {
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        self.send(ToMachine::Screenshot(format!("aero-{stamp}.png").into()));
    }

    /// Switches the machine off: it flushes its disks and reports Stopped.
    fn quit(&mut self) {
        if !self.quitting {
            self.quitting = true;
            self.update_title();
            self.send(ToMachine::Quit);
        }
    }

    /// The tablet pointer where it is now, with the buttons held and `wheel` clicks.
    fn send_pointer(&self, wheel: i8) {
        let (x, y) = self.pointer;
        self.send(ToMachine::Pointer {
            x,
            y,
            buttons: self.buttons,
            wheel,
        });
    }

    fn mouse_motion(&mut self, dx: f64, dy: f64, dz: f64) {
        let (ax, ay, az) = (self.motion.0 + dx, self.motion.1 + dy, self.motion.2 + dz);
        let (ix, iy, iz) = (ax.trunc(), ay.trunc(), az.trunc());
        self.motion = (ax - ix, ay - iy, az - iz);
        if ix != 0.0 || iy != 0.0 || iz != 0.0 {
            // Casts saturate; the mouse model splits big moves into packets.
            self.send(ToMachine::Mouse {
                dx: ix as i32,
                dy: iy as i32,
                dz: iz as i32,
                buttons: self.buttons,
            });
        }
    }
}

impl ApplicationHandler<UserEvent> for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_some() {
            return;
        }
        if let Err(e) = self.create_window(event_loop) {
            self.error = Some(format!("{e:#}"));
            event_loop.exit();
        }
        // Installed only now: Mesa's software rasteriser (LLVM) puts its own SIGINT/SIGTERM
        // handlers in place while the GPU device is created and would hide ours.
        if let Some(proxy) = self.interrupt.take() {
            // The machine thread is told directly (it flushes the disks and ends the
            // process even if this thread is stuck); the window hears about it too.
            let to_machine = self.to_machine.clone();
            match ctrlc::set_handler(move || {
                let _ = to_machine.send(ToMachine::Quit);
                proxy.notify(UserEvent::Interrupt)
            }) {
                Ok(()) => tracing::debug!("Ctrl+C handler installed"),
                Err(e) => tracing::warn!("Ctrl+C handler: {e}"),
            }
        }
    }

    fn window_event(&mut self, _event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            // A destroyed window (no close request) ends the run the same way.
            WindowEvent::CloseRequested | WindowEvent::Destroyed => {
                tracing::info!(?event, "window closing");
                self.quit();
            }
            WindowEvent::Resized(_) => {
                self.sync_surface();
                if let Some(w) = &self.window {
                    w.request_redraw();
                }
            }
            WindowEvent::Occluded(occluded) => {
                self.occluded = occluded;
                if let (false, Some(w)) = (occluded, &self.window) {
                    w.request_redraw();
                }
            }
            WindowEvent::RedrawRequested => {
                if self.occluded {
                    return;
                }
                self.sync_surface();
                let start = Instant::now();
                let rect = scaling::fit(self.frame_size, self.surface_size, self.integer);
                let result = self
                    .presenter
                    .as_mut()
                    .map(|p| p.draw(self.surface_size, rect));
                if let Some(Ok(Drawn::Skipped)) = result {
                    // The window is changing size (or hidden): try again on the next round.
                    self.frame_pending = true;
                }
                self.drawn_at = Instant::now();
                self.draw_cost = (self.draw_cost * 3 + (self.drawn_at - start)) / 4;
                self.frames += 1;
                if let Some(Err(e)) = result
                    && !self.render_error_logged
                {
                    self.render_error_logged = true;
                    tracing::warn!("drawing the window: {e}");
                }
            }
            // A disc image dropped on the window goes into the CD drive.
            WindowEvent::DroppedFile(path) => self.send(ToMachine::InsertCd(path)),
            WindowEvent::Focused(false) => {
                self.release_all();
                if self.grabbed {
                    self.grab(false);
                }
            }
            WindowEvent::KeyboardInput {
                event,
                is_synthetic,
                ..
            } => {
                // Host auto-repeat and keys "pressed" on focus gain are not real presses:
                // the guest keyboard repeats by itself.
                if is_synthetic || event.repeat {
                    return;
                }
                if let PhysicalKey::Code(code) = event.physical_key {
                    self.key(code, event.state == ElementState::Pressed);
                }
            }
            WindowEvent::MouseInput { state, button, .. } => {
                let bit = match button {
                    MouseButton::Left => 1,
                    MouseButton::Right => 2,
                    MouseButton::Middle => 4,
                    _ => return,
                };
                if self.tablet {
                    if state == ElementState::Pressed {
                        self.buttons |= bit;
                    } else {
                        self.buttons &= !bit;
                    }
                    self.send_pointer(0);
                    return;
                }
                if !self.grabbed {
                    // The first click only grabs the pointer.
                    if state == ElementState::Pressed && button == MouseButton::Left {
                        self.grab(true);
                    }
                    return;
                }
                if state == ElementState::Pressed {
                    self.buttons |= bit;
                } else {
                    self.buttons &= !bit;
                }
                self.send(ToMachine::Mouse {
                    dx: 0,
                    dy: 0,
                    dz: 0,
                    buttons: self.buttons,
                });
            }
            WindowEvent::CursorMoved { position, .. } if self.tablet => {
                let picture = scaling::fit(self.frame_size, self.surface_size, self.integer);
                self.pointer = scaling::tablet_position((position.x, position.y), picture);
                self.send_pointer(0);
            }
            WindowEvent::MouseWheel { delta, .. } if self.tablet => {
                let lines = match delta {
                    MouseScrollDelta::LineDelta(_, y) => f64::from(y),
                    MouseScrollDelta::PixelDelta(p) => p.y / 40.0,
                };
                let (sum, _, _) = &mut self.motion;
                *sum += lines;
                let clicks = sum.trunc().clamp(-127.0, 127.0);
                *sum -= clicks;
                if clicks != 0.0 {
                    self.send_pointer(clicks as i8);
                }
            }
            WindowEvent::MouseWheel { delta, .. } if self.grabbed => {
                let lines = match delta {
                    MouseScrollDelta::LineDelta(_, y) => f64::from(y),
                    // Touchpads: about one notch per 40 pixels.
                    MouseScrollDelta::PixelDelta(p) => p.y / 40.0,
                };
                self.mouse_motion(0.0, 0.0, lines);
            }
            _ => {}
        }
    }

    /// Draws the newest guest picture, but leaves the CPU to the guest at least twice as
    /// long as drawing takes: with a software rasteriser a frame can cost many milliseconds
    /// of host CPU, with a GPU this is the guest's frame rate.
    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        if !self.frame_pending {
            event_loop.set_control_flow(ControlFlow::Wait);
            return;
        }
        let next = self.drawn_at + self.draw_cost * DRAW_IDLE_FACTOR;
        if Instant::now() >= next {
            self.frame_pending = false;
            if let Some(w) = &self.window {
                w.request_redraw();
            }
            event_loop.set_control_flow(ControlFlow::Wait);
        } else {
            event_loop.set_control_flow(ControlFlow::WaitUntil(next));
        }
    }

    fn device_event(&mut self, _event_loop: &ActiveEventLoop, _id: DeviceId, event: DeviceEvent) {
        if let DeviceEvent::MouseMotion { delta: (dx, dy) } = event
            && self.grabbed
        {
            self.mouse_motion(dx, dy, 0.0);
        }
    }

    fn user_event(&mut self, event_loop: &ActiveEventLoop, event: UserEvent) {
        match event {
            UserEvent::FrameReady => self.present_new_frame(),
            UserEvent::Tablet(on) => {
                self.tablet = on;
                tracing::info!(on, "USB tablet configured by the guest: absolute pointer");
                // Absolute positions need no grab; give the host pointer back.
                if on && self.grabbed {
                    self.grab(false);
                }
                self.update_title();
            }
            UserEvent::Stats { mips } => {
                let secs = self.fps_since.elapsed().as_secs_f64().max(1e-3);
                self.fps = (f64::from(self.frames) / secs).round() as u32;
                self.frames = 0;
                self.fps_since = Instant::now();
                self.mips = mips;
                self.update_title();
            }
            UserEvent::Interrupt => {
                tracing::info!("interrupted: switching off");
                self.quit();
            }
            UserEvent::Stopped(outcome) => {
                tracing::info!(?outcome, "machine stopped");
                self.outcome = Some(outcome);
                event_loop.exit();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_keys_leave_ctrl_alt_delete_to_the_guest() {
        assert_eq!(host_key(KeyCode::Delete), None);
        assert_eq!(host_key(KeyCode::KeyQ), Some(HostKey::PowerOff));
        // Every documented key is bound.
        for (letter, code) in [
            ("G", KeyCode::KeyG),
            ("P", KeyCode::KeyP),
            ("R", KeyCode::KeyR),
            ("S", KeyCode::KeyS),
            ("F", KeyCode::KeyF),
            ("I", KeyCode::KeyI),
            ("End", KeyCode::End),
            ("E", KeyCode::KeyE),
        ] {
            assert!(host_key(code).is_some(), "{letter}");
            assert!(
                super::super::WINDOW_KEYS.contains(&format!("  {letter} ")),
                "{letter} documented"
            );
        }
    }
}
