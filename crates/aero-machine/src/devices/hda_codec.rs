//! The HD Audio codec behind Aero's controller: one audio function group with a stereo
//! output path (DAC → line-out pin) and a stereo input path (line-in pin → ADC), the
//! smallest widget set that Linux's generic codec parser (`snd-hda-codec-generic`) and
//! Windows 7's inbox HD Audio class driver build a playback and a capture device from.
//!
//! Verbs follow the Intel High Definition Audio specification (rev. 1.0a, section 7.3):
//! a 32-bit command is codec address (31:28), node id (27:20) and either a 12-bit verb
//! with an 8-bit payload or a 4-bit verb with a 16-bit payload. Every command gets a
//! response; unknown verbs and nodes answer 0, as real codecs do.

/// Node ids.
pub const NID_ROOT: u8 = 0x00;
pub const NID_AFG: u8 = 0x01;
pub const NID_DAC: u8 = 0x02;
pub const NID_OUT_PIN: u8 = 0x03;
pub const NID_IN_PIN: u8 = 0x04;
pub const NID_ADC: u8 = 0x05;

/// Aero's vendor id (as AeroGPU's PCI id), codec 0x0001: no Linux codec driver claims it,
/// so the generic parser binds.
const VENDOR_DEVICE_ID: u32 = 0xA3A0_0001;
const REVISION_ID: u32 = 0x0010_0101;

// Parameters (verb F00).
const PARAM_VENDOR_ID: u8 = 0x00;
const PARAM_REVISION_ID: u8 = 0x02;
const PARAM_NODE_COUNT: u8 = 0x04;
const PARAM_FUNCTION_TYPE: u8 = 0x05;
const PARAM_AFG_CAPS: u8 = 0x08;
const PARAM_WIDGET_CAPS: u8 = 0x09;
const PARAM_PCM: u8 = 0x0A;
const PARAM_STREAM_FORMATS: u8 = 0x0B;
const PARAM_PIN_CAPS: u8 = 0x0C;
const PARAM_IN_AMP_CAPS: u8 = 0x0D;
const PARAM_CONN_LIST_LEN: u8 = 0x0E;
const PARAM_POWER_STATES: u8 = 0x0F;
const PARAM_OUT_AMP_CAPS: u8 = 0x12;

/// Widget capability fields (parameter 09h).
const WCAP_STEREO: u32 = 1 << 0;
const WCAP_IN_AMP: u32 = 1 << 1;
const WCAP_OUT_AMP: u32 = 1 << 2;
const WCAP_AMP_OVERRIDE: u32 = 1 << 3;
const WCAP_FORMAT_OVERRIDE: u32 = 1 << 4;
const WCAP_CONN_LIST: u32 = 1 << 8;
const WCAP_POWER: u32 = 1 << 10;
const TYPE_OUTPUT: u32 = 0x0;
const TYPE_INPUT: u32 = 0x1;
const TYPE_PIN: u32 = 0x4;

/// Rates 8–96 kHz (bits 0–8) at 16 and 32 bits per sample (bits 17, 20).
pub const PCM_CAPS: u32 = 0x1FF | 1 << 17 | 1 << 20;
const FORMATS_PCM: u32 = 1;
/// D0 and D3.
const POWER_STATES: u32 = 1 << 0 | 1 << 3;

/// Amplifiers: mute capable, 64 steps of 1 dB (step size field 3 = 4 × 0.25 dB), 0 dB at
/// the top step.
pub const AMP_STEPS: u8 = 0x3F;
pub const AMP_OFFSET: u8 = 0x3F;
const AMP_CAPS: u32 = 1 << 31 | 3 << 16 | (AMP_STEPS as u32) << 8 | AMP_OFFSET as u32;

const PIN_CAP_OUTPUT: u32 = 1 << 4;
const PIN_CAP_INPUT: u32 = 1 << 5;

/// Configuration defaults (verb F1C): a green rear 1/8" line-out jack (association 1)
/// and a blue rear 1/8" line-in jack (association 2).
const OUT_PIN_CONFIG: u32 = 0x0101_4010;
const IN_PIN_CONFIG: u32 = 0x0181_3020;

/// One amplifier's state: per channel (left, right) mute and gain step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amp {
    pub mute: [bool; 2],
    pub gain: [u8; 2],
}

impl Default for Amp {
    /// Power-on: unmuted at 0 dB, so a guest that never touches the mixer hears sound.
    fn default() -> Self {
        Amp {
            mute: [false; 2],
            gain: [AMP_OFFSET; 2],
        }
    }
}

impl Amp {
    /// Linear factor per channel.
    pub fn factors(&self) -> [f32; 2] {
        [0, 1].map(|c| {
            if self.mute[c] {
                0.0
            } else {
                let db = f32::from(self.gain[c]) - f32::from(AMP_OFFSET);
                10f32.powf(db / 20.0)
            }
        })
    }

    fn get(&self, left: bool) -> u32 {
        let c = usize::from(!left);
        u32::from(self.mute[c]) << 7 | u32::from(self.gain[c])
    }

    fn set(&mut self, left: bool, right: bool, mute: bool, gain: u8) {
        for (c, on) in [left, right].into_iter().enumerate() {
            if on {
                self.mute[c] = mute;
                self.gain[c] = gain.min(AMP_STEPS);
            }
        }
    }
}

/// A converter's stream assignment and format (what the controller's stream carries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Converter {
    /// Stream tag 1–15 (0: not connected), first channel.
    pub stream: u8,
    pub channel: u8,
    /// Format in the SDnFMT layout.
    pub format: u16,
}

#[derive(Clone, Debug)]
pub struct Codec {
    pub dac: Converter,
    pub adc: Converter,
    pub dac_amp: Amp,
    pub adc_amp: Amp,
    out_pin_control: u8,
    in_pin_control: u8,
    /// Power state set per node (index = nid).
    power: [u8; 6],
    out_pin_eapd: u8,
    unsolicited: [u8; 6],
    subsystem_id: u32,
    config_defaults: [u32; 2],
}

impl Default for Codec {
    fn default() -> Self {
        Codec::new()
    }
}

impl Codec {
    pub fn new() -> Codec {
        Codec {
            dac: Converter::default(),
            adc: Converter::default(),
            dac_amp: Amp::default(),
            adc_amp: Amp::default(),
            out_pin_control: 0,
            in_pin_control: 0,
            power: [0; 6],
            out_pin_eapd: 0,
            unsolicited: [0; 6],
            subsystem_id: 0xA3A0_0002,
            config_defaults: [OUT_PIN_CONFIG, IN_PIN_CONFIG],
        }
    }

    /// Whether the output pin drives its jack (pin control bit 6, "out enable").
    pub fn output_enabled(&self) -> bool {
        self.out_pin_control & 0x40 != 0
    }

    /// Whether the input pin takes its jack (pin control bit 5, "in enable").
    pub fn input_enabled(&self) -> bool {
        self.in_pin_control & 0x20 != 0
    }

    /// Runs one command (the codec address already matched) and gives its response.
    pub fn command(&mut self, command: u32) -> u32 {
        let nid = ((command >> 20) & 0xFF) as u8;
        let verb12 = (command >> 8) & 0xFFF;
        let payload8 = (command & 0xFF) as u8;
        // 4-bit verbs carry a 16-bit payload: their top nibble is 2, 3, A or B (4/5/C/D
        // are the coefficient verbs, which this codec does not have).
        match verb12 >> 8 {
            0x2 => return self.set_format(nid, (command & 0xFFFF) as u16),
            0x3 => return self.set_amp(nid, (command & 0xFFFF) as u16),
            0xA => return self.get_format(nid),
            0xB => return self.get_amp(nid, (command & 0xFFFF) as u16),
            0x4 | 0x5 | 0xC | 0xD => return 0,
            _ => {}
        }
        match verb12 {
            0xF00 => self.parameter(nid, payload8),
            0xF01 => 0, // connection select: one entry, index 0
            0x701 => 0,
            0xF02 => self.connection_entries(nid, payload8),
            0xF05 => self.power_state(nid),
            0x705 => {
                if let Some(p) = self.power.get_mut(usize::from(nid)) {
                    *p = payload8 & 0x0F;
                }
                0
            }
            0xF06 => self
                .converter(nid)
                .map_or(0, |c| u32::from(c.stream) << 4 | u32::from(c.channel)),
            0x706 => {
                if let Some(c) = self.converter_mut(nid) {
                    c.stream = payload8 >> 4;
                    c.channel = payload8 & 0x0F;
                }
                0
            }
            0xF07 => match nid {
                NID_OUT_PIN => u32::from(self.out_pin_control),
                NID_IN_PIN => u32::from(self.in_pin_control),
                _ => 0,
            },
            0x707 => {
                match nid {
                    NID_OUT_PIN => self.out_pin_control = payload8 & 0xC0,
                    NID_IN_PIN => self.in_pin_control = payload8 & 0x27,
                    _ => {}
                }
                0
            }
            0xF08 => self
                .unsolicited
                .get(usize::from(nid))
                .map_or(0, |&u| u32::from(u)),
            0x708 => {
                if let Some(u) = self.unsolicited.get_mut(usize::from(nid)) {
                    *u = payload8 & 0xBF;
                }
                0
            }
            // Pin sense: no presence detect, so nothing to report.
            0xF09 => 0,
            0xF0C => match nid {
                NID_OUT_PIN => u32::from(self.out_pin_eapd),
                _ => 0,
            },
            0x70C => {
                if nid == NID_OUT_PIN {
                    self.out_pin_eapd = payload8 & 0x07;
                }
                0
            }
            0xF1C => self.pin_config(nid).unwrap_or(0),
            0x71C..=0x71F => {
                let shift = (verb12 - 0x71C) * 8;
                if let Some(i) = Self::pin_index(nid) {
                    let mask = 0xFF << shift;
                    self.config_defaults[i] =
                        self.config_defaults[i] & !mask | u32::from(payload8) << shift;
                }
                0
            }
            0xF20 if nid == NID_AFG => self.subsystem_id,
            0x720..=0x723 if nid == NID_AFG => {
                let shift = (verb12 - 0x720) * 8;
                let mask = 0xFF << shift;
                self.subsystem_id = self.subsystem_id & !mask | u32::from(payload8) << shift;
                0
            }
            // Function reset: the AFG's widgets back to power-on state.
            0x7FF if nid == NID_AFG => {
                let subsystem = self.subsystem_id;
                *self = Codec::new();
                self.subsystem_id = subsystem;
                0
            }
            _ => {
                tracing::trace!(nid, verb = verb12, payload8, "HDA codec: unhandled verb");
                0
            }
        }
    }

    fn parameter(&self, nid: u8, param: u8) -> u32 {
        match (nid, param) {
            (NID_ROOT, PARAM_VENDOR_ID) => VENDOR_DEVICE_ID,
            (NID_ROOT, PARAM_REVISION_ID) => REVISION_ID,
            (NID_ROOT, PARAM_NODE_COUNT) => u32::from(NID_AFG) << 16 | 1,
            (NID_AFG, PARAM_NODE_COUNT) => u32::from(NID_DAC) << 16 | 4,
            // Audio function group; it can send unsolicited responses.
            (NID_AFG, PARAM_FUNCTION_TYPE) => 1 << 8 | 0x01,
            (NID_AFG, PARAM_AFG_CAPS) => 0,
            (NID_AFG | NID_DAC | NID_ADC, PARAM_PCM) => PCM_CAPS,
            (NID_AFG | NID_DAC | NID_ADC, PARAM_STREAM_FORMATS) => FORMATS_PCM,
            (NID_AFG, PARAM_POWER_STATES) => POWER_STATES,
            (NID_AFG | NID_DAC, PARAM_OUT_AMP_CAPS) => AMP_CAPS,
            (NID_AFG | NID_ADC, PARAM_IN_AMP_CAPS) => AMP_CAPS,
            (NID_DAC, PARAM_WIDGET_CAPS) => {
                TYPE_OUTPUT << 20
                    | WCAP_STEREO
                    | WCAP_OUT_AMP
                    | WCAP_AMP_OVERRIDE
                    | WCAP_FORMAT_OVERRIDE
                    | WCAP_POWER
            }
            (NID_ADC, PARAM_WIDGET_CAPS) => {
                TYPE_INPUT << 20
                    | WCAP_STEREO
                    | WCAP_IN_AMP
                    | WCAP_AMP_OVERRIDE
                    | WCAP_FORMAT_OVERRIDE
                    | WCAP_CONN_LIST
                    | WCAP_POWER
            }
            (NID_OUT_PIN, PARAM_WIDGET_CAPS) => TYPE_PIN << 20 | WCAP_STEREO | WCAP_CONN_LIST,
            (NID_IN_PIN, PARAM_WIDGET_CAPS) => TYPE_PIN << 20 | WCAP_STEREO,
            (NID_OUT_PIN, PARAM_PIN_CAPS) => PIN_CAP_OUTPUT,
            (NID_IN_PIN, PARAM_PIN_CAPS) => PIN_CAP_INPUT,
            (NID_OUT_PIN | NID_ADC, PARAM_CONN_LIST_LEN) => 1,
            (NID_DAC | NID_ADC, PARAM_POWER_STATES) => POWER_STATES,
            _ => 0,
        }
    }

    /// Verb F02: four 8-bit entries starting at `index` (a multiple of 4).
    fn connection_entries(&self, nid: u8, index: u8) -> u32 {
        match (nid, index) {
            (NID_OUT_PIN, 0) => u32::from(NID_DAC),
            (NID_ADC, 0) => u32::from(NID_IN_PIN),
            _ => 0,
        }
    }

    fn power_state(&self, nid: u8) -> u32 {
        match self.power.get(usize::from(nid)) {
            // Actual state (7:4) follows the set state (3:0) at once.
            Some(&p) if nid != NID_ROOT => u32::from(p) << 4 | u32::from(p),
            _ => 0,
        }
    }

    fn converter(&self, nid: u8) -> Option<&Converter> {
        match nid {
            NID_DAC => Some(&self.dac),
            NID_ADC => Some(&self.adc),
            _ => None,
        }
    }

    fn converter_mut(&mut self, nid: u8) -> Option<&mut Converter> {
        match nid {
            NID_DAC => Some(&mut self.dac),
            NID_ADC => Some(&mut self.adc),
            _ => None,
        }
    }

    fn pin_index(nid: u8) -> Option<usize> {
        match nid {
            NID_OUT_PIN => Some(0),
            NID_IN_PIN => Some(1),
            _ => None,
        }
    }

    fn pin_config(&self, nid: u8) -> Option<u32> {
        Self::pin_index(nid).map(|i| self.config_defaults[i])
    }

    fn set_format(&mut self, nid: u8, format: u16) -> u32 {
        if let Some(c) = self.converter_mut(nid) {
            c.format = format & 0x7F7F;
        }
        0
    }

    fn get_format(&self, nid: u8) -> u32 {
        self.converter(nid).map_or(0, |c| u32::from(c.format))
    }

    /// Which amplifier a get/set names: the DAC's output amp or the ADC's input amp.
    fn amp_mut(&mut self, nid: u8, output: bool) -> Option<&mut Amp> {
        match (nid, output) {
            (NID_DAC, true) => Some(&mut self.dac_amp),
            (NID_ADC, false) => Some(&mut self.adc_amp),
            _ => None,
        }
    }

    /// Verb Bh: payload bit 15 output (else input), bit 13 left (else right).
    fn get_amp(&mut self, nid: u8, payload: u16) -> u32 {
        let output = payload & 0x8000 != 0;
        let left = payload & 0x2000 != 0;
        self.amp_mut(nid, output).map_or(0, |a| a.get(left))
    }

    /// Verb 3h: bit 15 output, 14 input, 13 left, 12 right, 7 mute, 6:0 gain.
    fn set_amp(&mut self, nid: u8, payload: u16) -> u32 {
        let (output, input) = (payload & 0x8000 != 0, payload & 0x4000 != 0);
        let (left, right) = (payload & 0x2000 != 0, payload & 0x1000 != 0);
        let mute = payload & 0x80 != 0;
        let gain = (payload & 0x7F) as u8;
        for (selected, is_output) in [(output, true), (input, false)] {
            if selected && let Some(amp) = self.amp_mut(nid, is_output) {
                amp.set(left, right, mute, gain);
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb(nid: u8, verb12: u32, payload: u8) -> u32 {
        u32::from(nid) << 20 | verb12 << 8 | u32::from(payload)
    }

    #[test]
    fn enumeration_finds_an_afg_with_dac_pins_and_adc() {
        let mut c = Codec::new();
        assert_eq!(c.command(verb(0, 0xF00, 0)), VENDOR_DEVICE_ID);
        assert_eq!(c.command(verb(0, 0xF00, 4)), 0x0001_0001);
        assert_eq!(
            c.command(verb(1, 0xF00, 5)) & 0xFF,
            1,
            "audio function group"
        );
        assert_eq!(c.command(verb(1, 0xF00, 4)), 0x0002_0004);
        let kind = |c: &mut Codec, nid| c.command(verb(nid, 0xF00, 9)) >> 20 & 0xF;
        assert_eq!(kind(&mut c, NID_DAC), 0);
        assert_eq!(kind(&mut c, NID_OUT_PIN), 4);
        assert_eq!(kind(&mut c, NID_IN_PIN), 4);
        assert_eq!(kind(&mut c, NID_ADC), 1);
        assert_eq!(c.command(verb(NID_OUT_PIN, 0xF02, 0)), u32::from(NID_DAC));
        assert_eq!(c.command(verb(NID_ADC, 0xF02, 0)), u32::from(NID_IN_PIN));
        assert_eq!(
            c.command(verb(NID_OUT_PIN, 0xF1C, 0)) >> 20 & 0xF,
            0,
            "line out"
        );
        assert_eq!(
            c.command(verb(NID_IN_PIN, 0xF1C, 0)) >> 20 & 0xF,
            8,
            "line in"
        );
    }

    #[test]
    fn stream_format_amp_and_pin_state_round_trip() {
        let mut c = Codec::new();
        c.command(verb(NID_DAC, 0x706, 0x10));
        assert_eq!(c.dac.stream, 1);
        // 4-bit verb 2: format 48 kHz, 16-bit, stereo.
        c.command(u32::from(NID_DAC) << 20 | 0x2_0011);
        assert_eq!(c.dac.format, 0x0011);
        assert_eq!(c.command(u32::from(NID_DAC) << 20 | 0xA_0000), 0x11);
        // Left output amp muted at step 5; right untouched.
        c.command(u32::from(NID_DAC) << 20 | 0x3_A085);
        assert_eq!(c.command(u32::from(NID_DAC) << 20 | 0xB_A000), 0x85);
        assert_eq!(
            c.command(u32::from(NID_DAC) << 20 | 0xB_8000),
            u32::from(AMP_OFFSET)
        );
        assert_eq!(c.dac_amp.factors()[0], 0.0);
        assert_eq!(c.dac_amp.factors()[1], 1.0);
        assert!(!c.output_enabled());
        c.command(verb(NID_OUT_PIN, 0x707, 0x40));
        assert!(c.output_enabled());
        c.command(verb(NID_AFG, 0x7FF, 0));
        assert!(!c.output_enabled());
        assert_eq!(c.dac.stream, 0);
    }

    #[test]
    fn any_command_gets_an_answer_without_panicking() {
        let mut c = Codec::new();
        for nid in [0u8, 1, 2, 3, 4, 5, 6, 0x7F, 0xFF] {
            for v in (0..0x1000u32).step_by(7) {
                c.command(u32::from(nid) << 20 | v << 8 | 0xFF);
            }
        }
        // Gains above the step count are clamped.
        c.command(u32::from(NID_DAC) << 20 | 0x3_B07F);
        assert_eq!(c.dac_amp.gain, [AMP_STEPS; 2]);
    }
}
