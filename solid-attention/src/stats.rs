//! What the SSD attention path did, per layer: blocks needed, prefetched,
//! hit and missed, and the time decode spent blocked on the drive.

/// Counters of one layer (summed over steps, sequences and KV heads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayerStats {
    /// Decode steps.
    pub steps: u64,
    /// Blocks attended that live on the drive (the DRAM tail excluded).
    pub needed: u64,
    /// Of those, the ones chosen by score (not sinks or local).
    pub needed_dynamic: u64,
    /// Blocks read speculatively before the query was known.
    pub prefetched: u64,
    /// Needed blocks found among the prefetched ones.
    pub hits: u64,
    /// Of the hits, dynamic ones.
    pub hits_dynamic: u64,
    /// Needed blocks read after the selection.
    pub misses: u64,
    /// Wall ns the decode waited for this layer's reads.
    pub blocking_ns: u64,
}

impl LayerStats {
    /// Adds `o`.
    pub fn add(&mut self, o: &LayerStats) {
        self.steps += o.steps;
        self.needed += o.needed;
        self.needed_dynamic += o.needed_dynamic;
        self.prefetched += o.prefetched;
        self.hits += o.hits;
        self.hits_dynamic += o.hits_dynamic;
        self.misses += o.misses;
        self.blocking_ns += o.blocking_ns;
    }

    /// Hits ÷ needed (1 when nothing was needed).
    pub fn hit_rate(&self) -> f64 {
        ratio(self.hits, self.needed)
    }

    /// Dynamic hits ÷ dynamic needed: how well the previous step predicts
    /// the scored blocks (SolidAttention reports ≈ 81% similarity).
    pub fn dynamic_hit_rate(&self) -> f64 {
        ratio(self.hits_dynamic, self.needed_dynamic)
    }

    /// Prefetched blocks that were not needed.
    pub fn wasted(&self) -> u64 {
        self.prefetched.saturating_sub(self.hits)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// Counters of every layer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SolidStats {
    /// `[layer]`.
    pub layers: Vec<LayerStats>,
}

impl SolidStats {
    /// The layer's counters, growing the table as needed.
    pub fn layer(&mut self, l: usize) -> &mut LayerStats {
        if self.layers.len() <= l {
            self.layers.resize(l + 1, LayerStats::default());
        }
        &mut self.layers[l]
    }

    /// All layers summed.
    pub fn total(&self) -> LayerStats {
        let mut t = LayerStats::default();
        for l in &self.layers {
            t.add(l);
        }
        t
    }
}
