//! Sound: the PC speaker (PIT channel 2 gated through port 0x61) synthesised on the
//! machine thread and mixed with what the guest plays on the HD Audio controller
//! (resampled to the device's rate) into a small bounded ring that one cpal output
//! stream drains.
//!
//! The machine thread knows the speaker's tone per slice of guest time and writes exactly
//! that much audio, adding the HD Audio frames of the same slice; the audio callback
//! plays what is there. Too much queued (the guest
//! runs ahead) drops the oldest samples; too little (an underrun) fades to silence and
//! waits for a short cushion before playing again, so neither case clicks.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use aero_machine::audio::{AudioBackend, Resampler, StereoFrame};
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use cpal::{FromSample, SizedSample};

/// Most audio queued: 120 ms. Older samples are dropped beyond that.
const MAX_QUEUED_MS: u32 = 120;
/// Cushion collected after an underrun before playback resumes.
const PRIME_MS: u32 = 30;
/// Loudness of the square wave (full scale is 1.0).
const VOLUME: f32 = 0.15;
/// Tones above this are inaudible; guests use them to silence the speaker.
const MAX_TONE_HZ: u32 = 20_000;

/// Frames shared between the machine thread and the audio callback (stereo).
pub struct Ring {
    samples: VecDeque<StereoFrame>,
    /// HD Audio frames (at the device rate) waiting to be mixed into `samples`.
    hda: VecDeque<StereoFrame>,
    capacity: usize,
    prime: usize,
    playing: bool,
    /// Last value played, faded out on underrun.
    last: StereoFrame,
}

impl Ring {
    pub fn new(sample_rate: u32) -> Ring {
        let capacity = (sample_rate * MAX_QUEUED_MS / 1000).max(1) as usize;
        Ring {
            samples: VecDeque::with_capacity(capacity),
            hda: VecDeque::new(),
            capacity,
            prime: (sample_rate * PRIME_MS / 1000) as usize,
            playing: false,
            last: [0.0; 2],
        }
    }

    fn push(&mut self, sample: StereoFrame) {
        if self.samples.len() >= self.capacity {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
    }

    /// The next frame to play.
    pub fn pop(&mut self) -> StereoFrame {
        if !self.playing && self.samples.len() >= self.prime.max(1) {
            self.playing = true;
        }
        let next = if self.playing {
            self.samples.pop_front()
        } else {
            None
        };
        match next {
            Some(s) => self.last = s,
            None => {
                self.playing = false;
                // Decay instead of a step to zero.
                self.last = self.last.map(|v| v * 0.995);
            }
        }
        self.last
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }
}

/// The machine-thread side: turns "tone T for D nanoseconds" into samples.
pub struct SpeakerFeed {
    ring: Arc<Mutex<Ring>>,
    sample_rate: u32,
    /// Position in the square wave's period, 0..1.
    phase: f64,
    /// Current loudness, moving toward the target to avoid clicks.
    gain: f32,
    /// Fraction of a sample carried to the next call.
    carry_ns: u64,
}

impl SpeakerFeed {
    pub fn new(ring: Arc<Mutex<Ring>>, sample_rate: u32) -> SpeakerFeed {
        SpeakerFeed {
            ring,
            sample_rate: sample_rate.max(1),
            phase: 0.0,
            gain: 0.0,
            carry_ns: 0,
        }
    }

    /// `elapsed_ns` of guest time passed with the speaker at `tone_hz`.
    pub fn produce(&mut self, tone_hz: Option<u32>, elapsed_ns: u64) {
        let tone = tone_hz.filter(|&hz| hz > 0 && hz <= MAX_TONE_HZ);
        let total_ns = self.carry_ns + elapsed_ns.min(1_000_000_000);
        let count = total_ns * u64::from(self.sample_rate) / 1_000_000_000;
        self.carry_ns = total_ns - count * 1_000_000_000 / u64::from(self.sample_rate);
        let Ok(mut ring) = self.ring.lock() else {
            return;
        };
        // Silence with nothing queued needs no samples: the callback plays silence.
        if tone.is_none() && self.gain == 0.0 && ring.len() == 0 && ring.hda.is_empty() {
            return;
        }
        let target = if tone.is_some() { VOLUME } else { 0.0 };
        let step = tone.map_or(0.0, |hz| f64::from(hz) / f64::from(self.sample_rate));
        for _ in 0..count {
            // About 2 ms to ramp at 48 kHz.
            self.gain += (target - self.gain) * 0.01;
            if target == 0.0 && self.gain < 1e-4 {
                self.gain = 0.0;
            }
            self.phase = (self.phase + step).fract();
            let wave = if self.phase < 0.5 { 1.0 } else { -1.0 };
            let speaker = wave * self.gain;
            let hda = ring.hda.pop_front().unwrap_or([0.0; 2]);
            ring.push(hda.map(|v| (v + speaker).clamp(-1.0, 1.0)));
        }
    }

    /// The HD Audio controller's host side, feeding this ring.
    pub fn hda_output(&self) -> HdaOutput {
        HdaOutput {
            ring: self.ring.clone(),
            device_rate: self.sample_rate,
            converter: Resampler::new(self.sample_rate, self.sample_rate),
            scratch: Vec::new(),
        }
    }
}

/// What the guest plays on HD Audio, converted to the device rate and queued for the
/// speaker feed to mix in (at most the ring's capacity; the oldest go first).
pub struct HdaOutput {
    ring: Arc<Mutex<Ring>>,
    device_rate: u32,
    converter: Resampler,
    scratch: Vec<StereoFrame>,
}

impl AudioBackend for HdaOutput {
    fn play(&mut self, rate_hz: u32, frames: &[StereoFrame]) {
        if self.converter.rates() != (rate_hz, self.device_rate) {
            self.converter = Resampler::new(rate_hz, self.device_rate);
        }
        self.scratch.clear();
        self.converter.process(frames, &mut self.scratch);
        let Ok(mut ring) = self.ring.lock() else {
            return;
        };
        let capacity = ring.capacity;
        ring.hda.extend(self.scratch.iter().copied());
        let excess = ring.hda.len().saturating_sub(capacity);
        ring.hda.drain(..excess);
    }
}

/// The HD Audio controller of a machine without a sound device on the host: it plays
/// into nothing and records silence.
pub struct SilentAudio;

impl AudioBackend for SilentAudio {
    fn play(&mut self, _rate_hz: u32, _frames: &[StereoFrame]) {}
}

/// A running output stream (kept alive by the window thread) and the feed for it.
pub struct Audio {
    _stream: cpal::Stream,
}

/// Opens the default output device. `None` (after one warning) when there is none.
pub fn start() -> Option<(Audio, SpeakerFeed)> {
    match try_start() {
        Ok(pair) => Some(pair),
        Err(e) => {
            eprintln!("aero: warning: no sound ({e:#}); running silent");
            None
        }
    }
}

fn try_start() -> anyhow::Result<(Audio, SpeakerFeed)> {
    let host = cpal::default_host();
    let device = host
        .default_output_device()
        .ok_or_else(|| anyhow::anyhow!("no audio output device"))?;
    let supported = device.default_output_config()?;
    let config = supported.config();
    let ring = Arc::new(Mutex::new(Ring::new(config.sample_rate)));
    let stream = match supported.sample_format() {
        cpal::SampleFormat::F32 => build::<f32>(&device, config, ring.clone())?,
        cpal::SampleFormat::I16 => build::<i16>(&device, config, ring.clone())?,
        cpal::SampleFormat::U16 => build::<u16>(&device, config, ring.clone())?,
        cpal::SampleFormat::I32 => build::<i32>(&device, config, ring.clone())?,
        other => anyhow::bail!("unsupported sample format {other:?}"),
    };
    stream.play()?;
    tracing::info!(
        rate = config.sample_rate,
        channels = config.channels,
        "audio output open"
    );
    Ok((
        Audio { _stream: stream },
        SpeakerFeed::new(ring, config.sample_rate),
    ))
}

fn build<T>(
    device: &cpal::Device,
    config: cpal::StreamConfig,
    ring: Arc<Mutex<Ring>>,
) -> anyhow::Result<cpal::Stream>
where
    T: SizedSample + FromSample<f32>,
{
    let channels = usize::from(config.channels.max(1));
    let stream = device.build_output_stream(
        config,
        move |data: &mut [T], _| {
            let Ok(mut ring) = ring.lock() else { return };
            for frame in data.chunks_mut(channels) {
                let [left, right] = ring.pop();
                if channels == 1 {
                    frame[0] = T::from_sample((left + right) / 2.0);
                } else {
                    frame.fill(T::from_sample(0.0));
                    frame[0] = T::from_sample(left);
                    frame[1] = T::from_sample(right);
                }
            }
        },
        |e| tracing::warn!("audio stream: {e}"),
        None,
    )?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(rate: u32) -> (Arc<Mutex<Ring>>, SpeakerFeed) {
        let ring = Arc::new(Mutex::new(Ring::new(rate)));
        (ring.clone(), SpeakerFeed::new(ring, rate))
    }

    #[test]
    fn tone_becomes_a_square_wave_of_that_frequency() {
        let (ring, mut f) = feed(48_000);
        f.produce(Some(1000), 100_000_000); // 100 ms of 1 kHz
        let mut ring = ring.lock().unwrap();
        assert_eq!(ring.len(), 4800);
        let samples: Vec<f32> = (0..4800).map(|_| ring.pop()[0]).collect();
        // After the ramp, count sign changes: two per period.
        let tail = &samples[2400..];
        let crossings = tail
            .windows(2)
            .filter(|w| (w[0] > 0.0) != (w[1] > 0.0))
            .count();
        assert!(
            (98..=102).contains(&crossings),
            "{crossings} sign changes in 50 ms of 1 kHz"
        );
        assert!(tail.iter().all(|s| s.abs() <= VOLUME + 1e-6));
    }

    #[test]
    fn silence_costs_nothing_and_underrun_fades() {
        let (ring, mut f) = feed(48_000);
        f.produce(None, 50_000_000);
        assert_eq!(ring.lock().unwrap().len(), 0);
        f.produce(Some(440), 50_000_000);
        let mut ring = ring.lock().unwrap();
        let mut last = 0.0f32;
        for _ in 0..2400 {
            last = ring.pop()[0];
        }
        // Underrun: values shrink toward zero, no jump.
        let after = ring.pop()[0];
        assert!(after.abs() <= last.abs());
        assert!(after.abs() > 0.0 || last == 0.0);
    }

    #[test]
    fn ring_is_bounded_and_waits_for_a_cushion() {
        let (ring, mut f) = feed(10_000);
        f.produce(Some(100), 10_000_000_000); // far more than fits
        assert_eq!(
            ring.lock().unwrap().len(),
            10_000 * MAX_QUEUED_MS as usize / 1000
        );
        let mut r = Ring::new(10_000);
        r.push([0.5; 2]);
        assert_eq!(
            r.pop(),
            [0.0; 2],
            "one sample is below the cushion: not played yet"
        );
        for _ in 0..300 {
            r.push([0.5; 2]);
        }
        assert_eq!(r.pop(), [0.5; 2]);
    }

    #[test]
    fn hd_audio_is_resampled_and_mixed_with_the_speaker() {
        let (ring, mut f) = feed(48_000);
        let mut hda = f.hda_output();
        // 100 ms of a constant at 24 kHz becomes 100 ms at 48 kHz, mixed into the slice.
        hda.play(24_000, &[[0.25, -0.25]; 2400]);
        f.produce(None, 100_000_000);
        let mut r = ring.lock().unwrap();
        assert_eq!(r.len(), 4800);
        let frames: Vec<StereoFrame> = (0..4800).map(|_| r.pop()).collect();
        assert!(
            frames[10..4790].iter().all(|f| *f == [0.25, -0.25]),
            "{:?}",
            &frames[..12]
        );
        drop(r);
        // With the speaker sounding, both add up.
        hda.play(48_000, &[[0.5, 0.5]; 4800]);
        f.produce(Some(1000), 100_000_000);
        let mut r = ring.lock().unwrap();
        let mixed: Vec<StereoFrame> = (0..4800).map(|_| r.pop()).collect();
        assert!(mixed.iter().any(|f| f[0] > 0.6));
        assert!(mixed.iter().all(|f| f[0] >= 0.5 - VOLUME - 1e-6));
    }

    #[test]
    fn inaudible_tones_are_silent() {
        let (ring, mut f) = feed(48_000);
        f.produce(Some(1_193_182), 10_000_000);
        assert_eq!(ring.lock().unwrap().len(), 0);
    }

    #[test]
    fn sample_count_is_exact_over_many_small_slices() {
        let (ring, mut f) = feed(44_100);
        for _ in 0..100 {
            f.produce(Some(500), 1_000_000); // 100 × 1 ms
        }
        let n = ring.lock().unwrap().len();
        assert!((4409..=4410).contains(&n), "{n}");
    }
}
