//! Generated data: a small deterministic generator, so both engines (and
//! every run) see the same images and tokens without touching the device's
//! random number generator, and a checksum of float bit patterns.

/// SplitMix64: small, fast, and the same on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// A batch of MNIST-shaped images (`batch` × 1 × 28 × 28) and their labels:
/// each label draws a bar at a place of its own, under uniform noise, so a
/// small CNN can learn it.
pub fn images(rng: &mut Rng, batch: usize) -> (Vec<f32>, Vec<i64>) {
    let mut pixels = Vec::with_capacity(batch * 28 * 28);
    let mut labels = Vec::with_capacity(batch);
    for _ in 0..batch {
        let label = rng.below(10);
        for y in 0..28 {
            for x in 0..28 {
                let bar = if label < 5 {
                    (4 + label * 4..7 + label * 4).contains(&y)
                } else {
                    (4 + (label - 5) * 4..7 + (label - 5) * 4).contains(&x)
                };
                let noise = rng.unit() * 0.5;
                pixels.push(if bar { 0.5 + noise } else { noise });
            }
        }
        labels.push(label as i64);
    }
    (pixels, labels)
}

/// `batch` token sequences of `len + 1` tokens from a synthetic language:
/// mostly `next = (3 * prev + 1) mod vocab`, sometimes a random token.
pub fn tokens(rng: &mut Rng, batch: usize, len: usize, vocab: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(batch * (len + 1));
    for _ in 0..batch {
        let mut token = rng.below(vocab);
        for _ in 0..=len {
            out.push(token as i64);
            token = if rng.below(8) == 0 {
                rng.below(vocab)
            } else {
                (3 * token + 1) % vocab
            };
        }
    }
    out
}

/// `batch` noisy sine waves of `len` samples (`batch × len` values, row
/// by row) and each one's next clean value: every wave draws its own
/// amplitude, frequency and phase, so the next value can only be told from
/// what came before.
pub fn waves(rng: &mut Rng, batch: usize, len: usize) -> (Vec<f32>, Vec<f32>) {
    let mut values = Vec::with_capacity(batch * len);
    let mut targets = Vec::with_capacity(batch);
    for _ in 0..batch {
        let amplitude = 0.5 + 0.5 * rng.unit();
        let frequency = 0.15 + 0.45 * rng.unit();
        let phase = std::f32::consts::TAU * rng.unit();
        let wave = |t: usize| amplitude * (frequency * t as f32 + phase).sin();
        for t in 0..len {
            values.push(wave(t) + 0.1 * (rng.unit() - 0.5));
        }
        targets.push(wave(len));
    }
    (values, targets)
}

/// FNV-1a over `bytes`, continuing from `hash`.
pub fn fnv(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// FNV-1a's starting value.
pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;
