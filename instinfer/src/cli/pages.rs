//! `--pages-local`, `--pages-mass`: the knobs of the flash-aware page
//! selection (the `pages` method). The page size comes from `--page-size`.

use clap::Args;

use attention::shape::PageScore;
use host_driver::policy::PagesSetting;
use instinfer::RunError;

/// The page selection's command-line knobs.
#[derive(Args, Debug, Clone)]
pub struct PagesArgs {
    /// `pages`: the most recent full pages always read (kept in time order
    /// at prefill).
    #[arg(long, default_value_t = PagesSetting::DEFAULT.local_pages)]
    pages_local: usize,
    /// `pages`: read pages until the chosen ones hold this share of the
    /// estimated attention mass, 0..=1 (1 reads the whole budget).
    #[arg(long, default_value_t = PagesSetting::DEFAULT.mass)]
    pages_mass: f64,
    /// `pages`: how a page is scored: bound (Quest's min/max bound), mean
    /// (the page's mean key), gauss (mean key and per-dim spread: a
    /// log-mass estimate), exact (the page oracle: reads all of K),
    /// sketch1/sketch2/sketch4 (token masses under a 1/2/4-bit key sketch
    /// in device DRAM).
    #[arg(long, default_value = "sketch2", value_parser = ["bound", "mean", "gauss", "exact", "sketch1", "sketch2", "sketch4"])]
    pages_score: String,
    /// `pages`: keep the prefill in time order instead of placing alike
    /// keys together (the placement's A/B).
    #[arg(long)]
    pages_time_order: bool,
    /// `pages`: whether the pages not read still enter the softmax, each
    /// as its mean key and mean value (kept in device DRAM).
    #[arg(long, default_value_t = PagesSetting::DEFAULT.fill, action = clap::ArgAction::Set)]
    pages_fill: bool,
    /// `pages`: the first tokens (attention sinks) pinned in device DRAM
    /// and always attended.
    #[arg(long, default_value_t = PagesSetting::DEFAULT.sink)]
    pages_sink: usize,
    /// `pages` with a sketch score: the mean score shortlists this many
    /// times the page budget and the sketch ranks those (0: the sketch
    /// scores every page).
    #[arg(long, default_value_t = PagesSetting::SHORTLIST)]
    pages_shortlist: u8,
    /// `pages` with a shortlist: who picks it: `mean` (the mean score
    /// alone) or `mean-bound` (half by the mean score, the smaller half by
    /// Quest's bound).
    #[arg(long, default_value = "mean-bound", value_parser = ["mean", "mean-bound"])]
    pages_shortlist_by: String,
}

impl PagesArgs {
    /// The checked setting for drives with `page_size` (as `--page-size`
    /// gave it).
    pub fn setting(&self, page_size: &str) -> Result<PagesSetting, RunError> {
        let s = PagesSetting {
            page_bytes: super::page_size(page_size),
            local_pages: self.pages_local,
            mass: self.pages_mass,
            similar: !self.pages_time_order,
            fill: self.pages_fill,
            sink: self.pages_sink,
            score: match self.pages_score.as_str() {
                "mean" => PageScore::Mean,
                "gauss" => PageScore::Gauss,
                "exact" => PageScore::Exact,
                "sketch1" => self.sketch(1),
                "sketch2" => self.sketch(2),
                "sketch4" => self.sketch(4),
                _ => PageScore::Bound,
            },
        };
        s.validate().map_err(RunError::Input)?;
        Ok(s)
    }

    fn sketch(&self, bits: u8) -> PageScore {
        PageScore::Sketch {
            bits,
            shortlist: self.pages_shortlist,
            bound: self.pages_shortlist_by == "mean-bound",
        }
    }
}
