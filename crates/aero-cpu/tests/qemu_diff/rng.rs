//! Small deterministic PRNG (SplitMix64): the case stream depends only on the seed.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
    /// A value biased towards the edges of a `bits`-wide integer.
    pub fn edgy(&mut self, bits: u32) -> u64 {
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let sign = 1u64 << (bits - 1);
        let v = match self.below(12) {
            0 => 0,
            1 => 1,
            2 => mask,
            3 => sign,
            4 => sign - 1,
            5 => sign + 1,
            6 => self.below(16),
            7 => mask - self.below(16),
            8 => 1u64 << self.below(bits as u64),
            9 => sign.wrapping_sub(self.below(4)),
            _ => self.next_u64(),
        };
        v & mask
    }
}
