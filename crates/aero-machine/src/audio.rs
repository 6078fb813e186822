//! The host end of the sound card: what the guest plays leaves the machine as f32 stereo
//! frames at the guest's rate, paced by the virtual clock; what it records comes in the
//! same way. The front ends resample (see [`Resampler`]) to the host device or a file.

use std::sync::{Arc, Mutex};

/// One stereo frame, -1.0..=1.0 per channel.
pub type StereoFrame = [f32; 2];

/// Where the HD Audio controller's streams go and come from.
pub trait AudioBackend: Send {
    /// `frames` the guest played at `rate_hz` (in guest-time order, without gaps while
    /// the output stream runs).
    fn play(&mut self, rate_hz: u32, frames: &[StereoFrame]);
    /// Fills `frames` with what the input jack hears at `rate_hz`.
    fn record(&mut self, _rate_hz: u32, frames: &mut [StereoFrame]) {
        frames.fill([0.0; 2]);
    }
}

/// Linear-interpolation rate converter for a stream of stereo frames.
#[derive(Clone, Debug)]
pub struct Resampler {
    from: u32,
    to: u32,
    /// Position of the next output frame between `previous` (0.0) and the next input.
    position: f64,
    previous: StereoFrame,
}

impl Resampler {
    pub fn new(from_hz: u32, to_hz: u32) -> Resampler {
        Resampler {
            from: from_hz.max(1),
            to: to_hz.max(1),
            position: 1.0,
            previous: [0.0; 2],
        }
    }

    pub fn rates(&self) -> (u32, u32) {
        (self.from, self.to)
    }

    /// Appends the converted frames of `input` to `output`.
    pub fn process(&mut self, input: &[StereoFrame], output: &mut Vec<StereoFrame>) {
        if self.from == self.to {
            output.extend_from_slice(input);
            return;
        }
        let step = f64::from(self.from) / f64::from(self.to);
        for &frame in input {
            // Output frames that fall between `previous` and `frame`.
            while self.position <= 1.0 {
                let t = self.position as f32;
                output.push([0, 1].map(|c| self.previous[c] + (frame[c] - self.previous[c]) * t));
                self.position += step;
            }
            self.position -= 1.0;
            self.previous = frame;
        }
    }
}

/// A played stream kept at the first rate it arrives at: frames at another rate are
/// converted to it, so one capture (a WAV file, a test's buffer) has one rate.
#[derive(Clone, Debug, Default)]
pub struct FirstRateStream {
    rate: Option<u32>,
    converter: Option<Resampler>,
}

impl FirstRateStream {
    /// The stream's rate, once frames have arrived.
    pub fn rate(&self) -> Option<u32> {
        self.rate
    }

    /// Appends `frames`, given at `rate_hz`, to `output` at the stream's rate.
    pub fn append(&mut self, rate_hz: u32, frames: &[StereoFrame], output: &mut Vec<StereoFrame>) {
        let target = *self.rate.get_or_insert(rate_hz);
        if rate_hz == target {
            output.extend_from_slice(frames);
            return;
        }
        let converter = self
            .converter
            .get_or_insert_with(|| Resampler::new(rate_hz, target));
        if converter.rates() != (rate_hz, target) {
            *converter = Resampler::new(rate_hz, target);
        }
        converter.process(frames, output);
    }
}

/// Recorded input played once into the guest's capture, then silence: the nearest
/// input frame at the guest's rate (the input's rate is usually the same).
#[derive(Clone, Debug, Default)]
pub struct InputPlayback {
    /// Position in the input, in input frames.
    position: f64,
}

impl InputPlayback {
    /// Fills `frames` (at `rate_hz`) from `input` (at `input_rate`) and moves on.
    pub fn fill(
        &mut self,
        input: &[StereoFrame],
        input_rate: u32,
        rate_hz: u32,
        frames: &mut [StereoFrame],
    ) {
        let step = f64::from(input_rate.max(1)) / f64::from(rate_hz.max(1));
        for frame in frames {
            let i = self.position as usize;
            *frame = input.get(i).copied().unwrap_or([0.0; 2]);
            if i < input.len() {
                self.position += step;
            }
        }
    }
}

/// A backend a test (or a tool) reads back: played frames are kept at the rate they came
/// in (the first rate seen; later ones are converted to it), and the input plays
/// `input` frames given at `input_rate` once, then silence.
#[derive(Clone, Default)]
pub struct CaptureBackend {
    inner: Arc<Mutex<CaptureState>>,
}

#[derive(Default)]
struct CaptureState {
    stream: FirstRateStream,
    played: Vec<StereoFrame>,
    input: Vec<StereoFrame>,
    input_rate: u32,
    playback: InputPlayback,
}

impl CaptureBackend {
    pub fn new() -> CaptureBackend {
        CaptureBackend::default()
    }

    /// What the input jack will hear.
    pub fn set_input(&self, rate_hz: u32, frames: Vec<StereoFrame>) {
        if let Ok(mut s) = self.inner.lock() {
            s.input = frames;
            s.input_rate = rate_hz.max(1);
            s.playback = InputPlayback::default();
        }
    }

    /// The played frames so far and their rate.
    pub fn played(&self) -> (u32, Vec<StereoFrame>) {
        self.inner
            .lock()
            .map(|s| (s.stream.rate().unwrap_or(0), s.played.clone()))
            .unwrap_or_default()
    }
}

impl AudioBackend for CaptureBackend {
    fn play(&mut self, rate_hz: u32, frames: &[StereoFrame]) {
        let Ok(mut s) = self.inner.lock() else { return };
        let state = &mut *s;
        state.stream.append(rate_hz, frames, &mut state.played);
    }

    fn record(&mut self, rate_hz: u32, frames: &mut [StereoFrame]) {
        let Ok(mut s) = self.inner.lock() else {
            frames.fill([0.0; 2]);
            return;
        };
        let state = &mut *s;
        state
            .playback
            .fill(&state.input, state.input_rate, rate_hz, frames);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_keeps_its_first_rate_and_input_plays_once_at_the_guest_rate() {
        let mut stream = FirstRateStream::default();
        let mut out = Vec::new();
        stream.append(48_000, &[[0.5; 2]; 480], &mut out);
        stream.append(24_000, &[[0.5; 2]; 240], &mut out);
        assert_eq!(stream.rate(), Some(48_000));
        assert!((958..=962).contains(&out.len()), "{}", out.len());

        let mut playback = InputPlayback::default();
        let input = [[0.1; 2], [0.2; 2]];
        let mut frames = [[9.0; 2]; 5];
        playback.fill(&input, 24_000, 48_000, &mut frames);
        assert_eq!(frames, [[0.1; 2], [0.1; 2], [0.2; 2], [0.2; 2], [0.0; 2]]);
    }

    #[test]
    fn resampler_keeps_duration_and_frequency() {
        let mut r = Resampler::new(44_100, 48_000);
        let input: Vec<StereoFrame> = (0..44_100)
            .map(|i| {
                let v = (i as f32 * 2.0 * std::f32::consts::PI * 1000.0 / 44_100.0).sin();
                [v, v]
            })
            .collect();
        let mut out = Vec::new();
        r.process(&input[..1000], &mut out);
        r.process(&input[1000..], &mut out);
        assert!((47_998..=48_001).contains(&out.len()), "{}", out.len());
        let crossings = out
            .windows(2)
            .filter(|w| (w[0][0] < 0.0) != (w[1][0] < 0.0))
            .count();
        assert!((1995..=2005).contains(&crossings), "{crossings}");
    }
}
