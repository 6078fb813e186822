//! Headless sound: `--audio-wav FILE` records what the guest played on the HD Audio
//! output (16-bit stereo at the guest's first rate; later rates are converted to it),
//! paced by the virtual clock so the file is the same on every run; `--audio-in-wav FILE`
//! is what the input jack hears (then silence).

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use aero_machine::audio::{AudioBackend, FirstRateStream, InputPlayback, StereoFrame};

/// RIFF/WAVE header size for 16-bit PCM.
const HEADER_BYTES: u64 = 44;
/// Header sizes are brought up to date this often (frames), so a killed run still
/// leaves a readable file.
const PATCH_EVERY_FRAMES: u64 = 48_000;

#[derive(Debug, thiserror::Error)]
pub enum WavError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}: not a PCM WAV file ({1})")]
    Format(PathBuf, &'static str),
}

/// A decoded WAV file: its rate and its frames as f32 stereo (mono is doubled, channels
/// past the second dropped).
#[derive(Clone, Debug, PartialEq)]
pub struct Wav {
    pub rate_hz: u32,
    pub frames: Vec<StereoFrame>,
}

/// Reads 8/16/24/32-bit integer or 32-bit float PCM.
pub fn read_wav(path: &Path) -> Result<Wav, WavError> {
    let data = std::fs::read(path).map_err(|e| WavError::Io(path.to_path_buf(), e))?;
    parse_wav(&data).map_err(|why| WavError::Format(path.to_path_buf(), why))
}

pub fn parse_wav(data: &[u8]) -> Result<Wav, &'static str> {
    if data.len() < 12 || &data[..4] != b"RIFF" || &data[8..12] != b"WAVE" {
        return Err("no RIFF/WAVE header");
    }
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let mut format = None;
    let mut samples = None;
    let mut at = 12usize;
    while at + 8 <= data.len() {
        let id = &data[at..at + 4];
        let len = u32_at(data, at + 4) as usize;
        let body = &data[at + 8..data.len().min(at + 8 + len)];
        match id {
            b"fmt " if body.len() >= 16 => {
                let tag = u16_at(body, 0);
                let channels = u16_at(body, 2);
                let rate = u32_at(body, 4);
                let bits = u16_at(body, 14);
                // WAVE_FORMAT_EXTENSIBLE keeps the real tag in its sub-format GUID.
                let tag = if tag == 0xFFFE && body.len() >= 26 {
                    u16_at(body, 24)
                } else {
                    tag
                };
                format = Some((tag, channels, rate, bits));
            }
            b"data" => samples = Some(body),
            _ => {}
        }
        at = at
            .saturating_add(8)
            .saturating_add(len)
            .saturating_add(len & 1);
    }
    let (tag, channels, rate, bits) = format.ok_or("no fmt chunk")?;
    let samples = samples.ok_or("no data chunk")?;
    if channels == 0 || rate == 0 {
        return Err("no channels or rate");
    }
    let size = usize::from(bits / 8);
    let decode: fn(&[u8]) -> f32 = match (tag, bits) {
        (1, 8) => |b| (f32::from(b[0]) - 128.0) / 128.0,
        (1, 16) => |b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0,
        (1, 24) => |b| i32::from_le_bytes([0, b[0], b[1], b[2]]) as f32 / 2_147_483_648.0,
        (1, 32) => |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32 / 2_147_483_648.0,
        (3, 32) => |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        _ => return Err("unsupported sample format"),
    };
    let frame_bytes = size * usize::from(channels);
    let frames = samples
        .chunks_exact(frame_bytes)
        .map(|f| {
            let left = decode(&f[..size]);
            let right = if channels > 1 {
                decode(&f[size..2 * size])
            } else {
                left
            };
            [left, right]
        })
        .collect();
    Ok(Wav {
        rate_hz: rate,
        frames,
    })
}

/// A 16-bit stereo WAV written as frames arrive.
struct WavWriter {
    path: PathBuf,
    out: BufWriter<File>,
    stream: FirstRateStream,
    frames: u64,
    patched_at: u64,
    failed: bool,
    scratch: Vec<StereoFrame>,
}

impl WavWriter {
    fn create(path: &Path) -> Result<WavWriter, WavError> {
        let io = |e| WavError::Io(path.to_path_buf(), e);
        let file = File::create(path).map_err(io)?;
        let mut w = WavWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            stream: FirstRateStream::default(),
            frames: 0,
            patched_at: 0,
            failed: false,
            scratch: Vec::new(),
        };
        w.out.write_all(&header(48_000, 0)).map_err(io)?;
        Ok(w)
    }

    fn write(&mut self, rate_hz: u32, frames: &[StereoFrame]) {
        if self.failed {
            return;
        }
        self.scratch.clear();
        self.stream.append(rate_hz, frames, &mut self.scratch);
        let frames = &self.scratch[..];
        let mut bytes = Vec::with_capacity(frames.len() * 4);
        for frame in frames {
            for v in frame {
                bytes.extend_from_slice(&((v.clamp(-1.0, 1.0) * 32767.0) as i16).to_le_bytes());
            }
        }
        self.frames += frames.len() as u64;
        let mut result = self.out.write_all(&bytes);
        if result.is_ok() && self.frames - self.patched_at >= PATCH_EVERY_FRAMES {
            result = self.patch_header();
        }
        if let Err(e) = result {
            eprintln!(
                "aero: warning: {}: {e}; audio capture stopped",
                self.path.display()
            );
            self.failed = true;
        }
    }

    /// Writes the rate and sizes into the header, then goes back to the end.
    fn patch_header(&mut self) -> std::io::Result<()> {
        self.patched_at = self.frames;
        self.out.flush()?;
        let file = self.out.get_mut();
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header(self.stream.rate().unwrap_or(48_000), self.frames))?;
        file.seek(SeekFrom::Start(HEADER_BYTES + self.frames * 4))?;
        Ok(())
    }
}

impl Drop for WavWriter {
    fn drop(&mut self) {
        if !self.failed
            && let Err(e) = self.patch_header().and_then(|()| self.out.flush())
        {
            eprintln!("aero: warning: {}: {e}", self.path.display());
        }
    }
}

/// A 16-bit stereo PCM header for `frames` frames.
fn header(rate_hz: u32, frames: u64) -> [u8; HEADER_BYTES as usize] {
    let data_bytes = u32::try_from(frames * 4).unwrap_or(u32::MAX - 36);
    let mut h = [0u8; HEADER_BYTES as usize];
    h[..4].copy_from_slice(b"RIFF");
    h[4..8].copy_from_slice(&(36 + data_bytes).to_le_bytes());
    h[8..16].copy_from_slice(b"WAVEfmt ");
    h[16..20].copy_from_slice(&16u32.to_le_bytes());
    h[20..22].copy_from_slice(&1u16.to_le_bytes());
    h[22..24].copy_from_slice(&2u16.to_le_bytes());
    h[24..28].copy_from_slice(&rate_hz.to_le_bytes());
    h[28..32].copy_from_slice(&(rate_hz * 4).to_le_bytes());
    h[32..34].copy_from_slice(&4u16.to_le_bytes());
    h[34..36].copy_from_slice(&16u16.to_le_bytes());
    h[36..40].copy_from_slice(b"data");
    h[40..44].copy_from_slice(&data_bytes.to_le_bytes());
    h
}

/// The headless HD Audio host side: an optional WAV capture of the output and an
/// optional WAV for the input.
pub struct FileAudio {
    output: Option<WavWriter>,
    input: Option<Wav>,
    playback: InputPlayback,
}

impl FileAudio {
    pub fn open(output: Option<&Path>, input: Option<&Path>) -> Result<FileAudio, WavError> {
        Ok(FileAudio {
            input: input.map(read_wav).transpose()?,
            output: output.map(WavWriter::create).transpose()?,
            playback: InputPlayback::default(),
        })
    }
}

impl AudioBackend for FileAudio {
    fn play(&mut self, rate_hz: u32, frames: &[StereoFrame]) {
        if let Some(w) = self.output.as_mut() {
            w.write(rate_hz, frames);
        }
    }

    fn record(&mut self, rate_hz: u32, frames: &mut [StereoFrame]) {
        let Some(input) = &self.input else {
            frames.fill([0.0; 2]);
            return;
        };
        self.playback
            .fill(&input.frames, input.rate_hz, rate_hz, frames);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_round_trips_through_a_wav_file() {
        let dir = std::env::temp_dir().join(format!("aero-wav-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.wav");
        {
            let mut audio = FileAudio::open(Some(&path), None).unwrap();
            let frames: Vec<StereoFrame> =
                (0..100_000).map(|i| [i as f32 / 200_000.0, -0.5]).collect();
            audio.play(44_100, &frames[..30_000]);
            audio.play(44_100, &frames[30_000..]);
            let mut input = [[1.0; 2]; 4];
            audio.record(44_100, &mut input);
            assert_eq!(input, [[0.0; 2]; 4], "no input file: silence");
        }
        let wav = read_wav(&path).unwrap();
        assert_eq!(wav.rate_hz, 44_100);
        assert_eq!(wav.frames.len(), 100_000);
        assert!((wav.frames[50_000][0] - 0.25).abs() < 1e-3);
        assert!((wav.frames[7][1] + 0.5).abs() < 1e-3);

        let mut audio = FileAudio::open(None, Some(&path)).unwrap();
        let mut input = vec![[0.0; 2]; 100_010];
        audio.record(44_100, &mut input);
        assert!((input[50_000][0] - 0.25).abs() < 1e-3);
        assert_eq!(input[100_005], [0.0; 2], "silence after the file");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_files_are_errors() {
        assert!(parse_wav(b"RIFF").is_err());
        assert!(parse_wav(b"RIFF\0\0\0\0WAVEdata\x04\0\0\0abcd").is_err());
        let mut odd = header(8000, 0).to_vec();
        odd[34] = 12; // 12-bit samples
        assert!(parse_wav(&odd).is_err());
        // A chunk length past the end is cut, not trusted.
        let mut h = header(8000, 1).to_vec();
        h[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
        h.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(parse_wav(&h).unwrap().frames.len(), 1);
    }
}
