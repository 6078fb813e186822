//! A thin layer over iced-x86's `CodeAssembler` for 16-bit code (the VGA BIOS, the demo
//! guest).
//!
//! iced's assembler cannot use a label as an immediate or as an absolute 16-bit
//! displacement, yet such code constantly needs "the offset of this table". So the code is
//! assembled repeatedly: each pass sees the symbol addresses of the previous pass through
//! [`Asm::addr`], and assembly stops once the addresses no longer move.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Deref, DerefMut};

use iced_x86::BlockEncoderOptions;
use iced_x86::code_asm::{CodeAssembler, CodeLabel};

/// Why 16-bit code could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum AsmError {
    #[error("assembler: {0}")]
    Iced(#[from] iced_x86::IcedError),
    #[error("symbol {0} defined twice")]
    DuplicateSymbol(&'static str),
    #[error("symbol {0} used but never defined")]
    UndefinedSymbol(&'static str),
    #[error("symbol addresses did not converge")]
    NotConverged,
    #[error("code of {0} bytes does not fit a 16-bit segment")]
    TooLarge(usize),
}

/// Most ROMs converge in 2–3 passes; more means sizes oscillate, which is a bug.
const MAX_PASSES: usize = 16;

pub(crate) struct Asm {
    a: CodeAssembler,
    labels: BTreeMap<&'static str, CodeLabel>,
    bound: BTreeSet<&'static str>,
    used: BTreeSet<&'static str>,
    prev: BTreeMap<&'static str, u16>,
    /// Instruction count when the last label was bound: iced allows one label per
    /// instruction, so a second label at the same spot needs a filler `nop`.
    last_label_at: Option<usize>,
}

impl Deref for Asm {
    type Target = CodeAssembler;
    fn deref(&self) -> &CodeAssembler {
        &self.a
    }
}

impl DerefMut for Asm {
    fn deref_mut(&mut self) -> &mut CodeAssembler {
        &mut self.a
    }
}

impl Asm {
    fn new(prev: BTreeMap<&'static str, u16>) -> Result<Self, AsmError> {
        Ok(Self {
            a: CodeAssembler::new(16)?,
            labels: BTreeMap::new(),
            bound: BTreeSet::new(),
            used: BTreeSet::new(),
            prev,
            last_label_at: None,
        })
    }

    /// The label for a ROM-wide symbol (routine or table), created on first use.
    pub(crate) fn l(&mut self, name: &'static str) -> CodeLabel {
        let a = &mut self.a;
        *self.labels.entry(name).or_insert_with(|| a.create_label())
    }

    /// Defines symbol `name` at the next emitted instruction or data.
    pub(crate) fn bind(&mut self, name: &'static str) -> Result<(), AsmError> {
        if !self.bound.insert(name) {
            return Err(AsmError::DuplicateSymbol(name));
        }
        let mut label = self.l(name);
        self.set(&mut label)?;
        // CodeLabel is a value: keep the copy that now carries the instruction index.
        self.labels.insert(name, label);
        Ok(())
    }

    /// Binds a local label (from `create_label`) at the next instruction.
    pub(crate) fn set(&mut self, label: &mut CodeLabel) -> Result<(), AsmError> {
        let here = self.a.instructions().len();
        if self.last_label_at == Some(here) {
            self.a.nop()?;
        }
        self.last_label_at = Some(self.a.instructions().len());
        self.a.set_label(label)?;
        Ok(())
    }

    /// ROM offset of symbol `name` as found by the previous pass (0 in the first pass).
    pub(crate) fn addr(&mut self, name: &'static str) -> u16 {
        self.used.insert(name);
        self.prev.get(name).copied().unwrap_or(0)
    }

    pub(crate) fn call_sym(&mut self, name: &'static str) -> Result<(), AsmError> {
        let l = self.l(name);
        self.a.call(l)?;
        Ok(())
    }

    pub(crate) fn jmp_sym(&mut self, name: &'static str) -> Result<(), AsmError> {
        let l = self.l(name);
        self.a.jmp(l)?;
        Ok(())
    }
}

/// The assembled bytes (origin 0) and the final address of every bound symbol.
pub(crate) struct Assembled {
    pub bytes: Vec<u8>,
    pub symbols: BTreeMap<&'static str, u16>,
}

/// Runs `emit` until symbol addresses are stable; the code is placed at `origin`.
pub(crate) fn assemble<E: From<AsmError>>(
    origin: u16,
    emit: impl Fn(&mut Asm) -> Result<(), E>,
) -> Result<Assembled, E> {
    let mut prev = BTreeMap::new();
    for _ in 0..MAX_PASSES {
        let mut asm = Asm::new(prev.clone())?;
        emit(&mut asm)?;
        let symbols = asm.finish(origin)?;
        if symbols.1 == prev {
            return Ok(Assembled {
                bytes: symbols.0,
                symbols: symbols.1,
            });
        }
        prev = symbols.1;
    }
    Err(AsmError::NotConverged.into())
}

impl Asm {
    /// Encodes this pass at `origin`: the bytes and every bound symbol's address.
    fn finish(self, origin: u16) -> Result<(Vec<u8>, BTreeMap<&'static str, u16>), AsmError> {
        if let Some(missing) = self.labels.keys().find(|n| !self.bound.contains(*n)) {
            return Err(AsmError::UndefinedSymbol(missing));
        }
        let mut a = self.a;
        let result = a.assemble_options(
            u64::from(origin),
            BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS,
        )?;
        let mut symbols = BTreeMap::new();
        for name in &self.bound {
            let label = self
                .labels
                .get(name)
                .ok_or(AsmError::UndefinedSymbol(name))?;
            let ip = result.label_ip(label)?;
            let ip = u16::try_from(ip).map_err(|_| AsmError::TooLarge(ip as usize))?;
            symbols.insert(*name, ip);
        }
        if let Some(missing) = self.used.iter().find(|n| !symbols.contains_key(*n)) {
            return Err(AsmError::UndefinedSymbol(missing));
        }
        Ok((result.inner.code_buffer, symbols))
    }
}
