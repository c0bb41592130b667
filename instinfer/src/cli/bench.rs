//! `instinfer bench attend`: host dense vs in-storage dense vs SparF.

use instinfer::RunError;
use instinfer::run::bench::{BenchParams, run_bench};

/// Benchmarks.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// One decode step: host f32 dense (wall) vs in-storage dense and SparF (wall and virtual).
    Attend(AttendArgs),
    /// The real model: prefill and decode tokens/s (wall), host dense vs simulated CSD.
    Model(ModelArgs),
    /// InstInfer's evaluation (OPT-13B) in the cost model, the CSD side simulated: CSVs and PNGs.
    Paper(PaperArgs),
    /// This machine: memory bandwidth vs the host attention kernels, FTL ops/s, simulator speed.
    Host(HostArgs),
    /// Record an attention trace of the real model for `bench paper --trace`.
    Trace(TraceArgs),
    /// SolidAttention with the real model and a long input: KV in DRAM vs on
    /// this machine's SSD (with and without prefetch) vs dense SSD offload,
    /// and a random-read probe of the drive (wall time).
    Solid(SolidArgs),
    /// Decode step time vs the number of NVMe/TCP targets (`instinfer
    /// serve` processes on loopback) sharing the heads, against the same
    /// boards in process (wall; virtual for in-process).
    Fabric(FabricArgs),
    /// Layer-wise prefill and decode with q/k/v/outputs in host memory, in
    /// GPU memory peer to peer, and bounced (simulated board, virtual time).
    P2p(P2pArgs),
    /// The simulated board's NAND schedule against each die's queue depth
    /// (1–32), cache read off and on: raw page reads and a dense decode
    /// (virtual time).
    Nand(NandArgs),
    /// Garbage collection under a serving mix on a small simulated drive:
    /// greedy vs cost-benefit victims, and a drive that never collects
    /// (write amplification, GC share, decode latency; virtual time).
    Gc(GcArgs),
    /// Days of service on a small simulated drive kept near full: Poisson
    /// arrivals, chat sessions, NAND faults and power cuts, every output
    /// checked (throughput over time, write amplification, GC share,
    /// latency percentiles, erase spread, a chart; virtual time).
    Soak(SoakArgs),
    /// The power-loss journal's cost per command: the same script on a
    /// simulated drive with the journal and without (virtual time).
    Journal(JournalArgs),
}

/// Arguments of `bench journal`.
#[derive(Debug, clap::Args)]
pub struct JournalArgs {
    /// Sequences opened, used and closed per drive.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    sequences: u32,
    /// Flash page size in bytes (4096 or 16384).
    #[arg(long, default_value_t = 16384)]
    page_size: u32,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Arguments of `bench soak`.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// Virtual days to serve.
    #[arg(long, default_value_t = 7.0)]
    days: f64,
    /// Live KV kept under this share of the usable flash (0.5 to 0.95).
    #[arg(long, default_value_t = 0.9)]
    fill: f64,
    /// Mean virtual seconds between request arrivals.
    #[arg(long, default_value_t = 20.0)]
    request_interval: f64,
    /// Chat sessions (at most 16).
    #[arg(long, default_value_t = 8)]
    sessions: u32,
    /// Power cuts per virtual day, on average (0: none).
    #[arg(long, default_value_t = 1.0)]
    cuts_per_day: f64,
    /// No NAND faults.
    #[arg(long)]
    no_faults: bool,
    /// Virtual hours per line of the time series.
    #[arg(long, default_value_t = 12.0)]
    bucket_hours: f64,
    /// Workload and fault seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the time series as a PNG chart here.
    #[arg(long)]
    chart: Option<std::path::PathBuf>,
    /// Erase-count spread past which static wear levelling moves a cold
    /// block (default: the FTL's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    wear_spread: Option<u32>,
}

/// Arguments of `bench gc`.
#[derive(Debug, clap::Args)]
pub struct GcArgs {
    /// Requests served per drive.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    requests: u32,
    /// Live KV kept under this share of the usable flash (0.1 to 0.95).
    #[arg(long, default_value_t = 0.8)]
    fill: f64,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Arguments of `bench nand`.
#[derive(Debug, clap::Args)]
pub struct NandArgs {
    /// Full-page reads per die in the raw sweep.
    #[arg(long, default_value_t = 64)]
    pages_per_die: u32,
    /// Only the raw sweep (no decode through the firmware).
    #[arg(long)]
    raw_only: bool,
}

/// Arguments of `bench p2p`.
#[derive(Debug, clap::Args)]
pub struct P2pArgs {
    /// Sequences.
    #[arg(long, default_value_t = 4)]
    seqs: u32,
    /// Prompt tokens per sequence.
    #[arg(long, default_value_t = 1024)]
    prompt: usize,
    /// Decode steps.
    #[arg(long, default_value_t = 16)]
    steps: usize,
    /// Flash page size, bytes.
    #[arg(long, default_value = "16384", value_parser = super::page_size_parser())]
    page_size: String,
}

/// Arguments of `bench fabric`.
#[derive(Debug, clap::Args)]
pub struct FabricArgs {
    /// Target counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    targets: Vec<usize>,
    /// Sequences decoded together.
    #[arg(long, default_value_t = 4)]
    seqs: u32,
    /// Prompt tokens per sequence.
    #[arg(long, default_value_t = 1024)]
    prompt: usize,
    /// Timed decode steps per row.
    #[arg(long, default_value_t = 8)]
    steps: usize,
    /// Flash page size, bytes.
    #[arg(long, default_value = "16384", value_parser = super::page_size_parser())]
    page_size: String,
    /// Run the targets as threads of this process instead of processes.
    #[arg(long)]
    threads: bool,
}

/// Arguments of `bench solid`.
#[derive(Debug, clap::Args)]
pub struct SolidArgs {
    /// Text whose first tokens are the prompt and whose next tokens are
    /// decoded (teacher-forced).
    #[arg(long)]
    text: std::path::PathBuf,
    /// Prompt tokens.
    #[arg(long, default_value_t = 4096)]
    context: usize,
    /// Decode steps per configuration.
    #[arg(long, default_value_t = 32)]
    steps: usize,
    /// Layers the prefetching configuration reads ahead (1–4).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=4))]
    ahead: u8,
    /// Seconds per point of the random-read probe.
    #[arg(long, default_value_t = 2.0)]
    probe_seconds: f64,
    /// Rounds over the configurations (the median round is reported).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=20))]
    repeat: u8,
    #[command(flatten)]
    ssd: super::ssd::SsdArgs,
    /// The model: a known name (`instinfer model list`; default
    /// smollm2-135m), fetched into the cache on first use, or a GGUF file.
    #[arg(long, value_name = "NAME|PATH")]
    model: Option<std::path::PathBuf>,
}

/// Arguments of `bench trace`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// Text to run the model on (e.g. WikiText-2's wiki.test.raw).
    #[arg(long)]
    text: std::path::PathBuf,
    /// Output folder (k_L.npy, v_L.npy, q_L.npy per layer).
    #[arg(long)]
    out: std::path::PathBuf,
    /// Context tokens (the decode step's query comes after them).
    #[arg(long, default_value_t = 2048)]
    tokens: usize,
    /// The model: a known name (`instinfer model list`; default
    /// smollm2-135m), fetched into the cache on first use, or a GGUF file.
    #[arg(long, value_name = "NAME|PATH")]
    model: Option<std::path::PathBuf>,
}

/// Arguments of `bench host`.
#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// Tokens of the attention kernels.
    #[arg(long, default_value_t = 8192)]
    s: usize,
    /// KV heads.
    #[arg(long, default_value_t = 8)]
    kv_heads: usize,
    /// Head dimension (a multiple of 8).
    #[arg(long, default_value_t = 128)]
    d: usize,
    /// Repetitions (the best is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
}

/// Arguments of `bench paper`.
#[derive(Debug, clap::Args)]
pub struct PaperArgs {
    /// Figure: all, throughput, breakdown, csds, compression, channels, p2p, seqs or pages.
    #[arg(long, default_value = "all")]
    figure: String,
    /// Output folder for the CSVs and PNGs.
    #[arg(long, default_value = "target/bench-paper")]
    out: std::path::PathBuf,
    /// Sequences decoded together in each simulated CSD point.
    #[arg(long, default_value_t = 2)]
    seqs: usize,
    /// Simulate only the shortest and longest context (a quick smoke run).
    #[arg(long)]
    quick: bool,
    /// An attention trace (`instinfer bench trace`) for the simulated KV and
    /// queries instead of synthetic data.
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// Flash page sizes of the simulated CSDs, bytes, comma-separated:
    /// every figure on the first (the paper's 4096 by default), the
    /// channels figure and the point table also on the others.
    #[arg(long, default_value = "4096", value_delimiter = ',', value_parser = super::page_size_parser())]
    page_size: Vec<String>,
    /// MB of KV files the FlexGen disk probe reads (written under --out,
    /// removed after); 0 skips it and FlexGen's fitted rate stands in.
    #[arg(long, default_value_t = 256)]
    flexgen_probe_mb: u64,
}

/// Arguments of `bench model`.
#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    /// Prompt tokens.
    #[arg(long, default_value_t = 512)]
    prompt_tokens: usize,
    /// Generated tokens.
    #[arg(long, default_value_t = 32)]
    decode_tokens: usize,
    /// Timed rounds: every row (and llama.cpp) once per round, the rounds
    /// one after another, so a machine whose speed drifts slows every
    /// engine alike; the table shows each row's median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    rounds: u32,
    /// The model: a known name (`instinfer model list`; default
    /// smollm2-135m), fetched into the cache on first use, or a GGUF file.
    #[arg(long, value_name = "NAME|PATH")]
    model: Option<std::path::PathBuf>,
    /// Also run llama.cpp (llama-cpp-python 0.3.36) on the same GGUF file,
    /// prompt ids, thread count and context size, and print host dense's
    /// speed as a ratio of its. Built from source into the cache on first
    /// use (about 10 minutes); INSTINFER_LLAMA_CPP_PYTHON=/path/to/python
    /// uses a Python that already has llama_cpp.
    #[arg(long, value_name = "ENGINE")]
    against: Option<Against>,
    /// With --against: the mean NLL of the first N tokens of --nll-text on
    /// host dense and on llama.cpp (N = 1024 when the flag has no value; 0
    /// skips it).
    #[arg(long, value_name = "N", default_value_t = 0, num_args = 0..=1,
          default_missing_value = "1024", requires = "against")]
    nll_tokens: usize,
    /// The text of --nll-tokens (default: the repository's WikiText-2 test
    /// split, data/corpora/wiki.test.raw).
    #[arg(long, value_name = "FILE", requires = "against")]
    nll_text: Option<std::path::PathBuf>,
    /// With --against: greedy agreement with llama.cpp on three fixed
    /// prompts, 32 tokens each.
    #[arg(long, requires = "against")]
    greedy_prompts: bool,
}

/// The engines `bench model --against` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Against {
    /// llama.cpp through llama-cpp-python.
    #[value(name = "llama.cpp")]
    LlamaCpp,
}

/// Where the repository keeps WikiText-2's test split (`data/README.md`).
const WIKI_TEXT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/corpora/wiki.test.raw");

/// Arguments of `bench attend`.
#[derive(Debug, clap::Args)]
pub struct AttendArgs {
    /// Tokens.
    #[arg(long, default_value_t = 4096)]
    s: usize,
    /// Head dimension.
    #[arg(long, default_value_t = 128)]
    d: usize,
    /// KV heads.
    #[arg(long, default_value_t = 8)]
    kv_heads: usize,
    /// Query heads per KV head.
    #[arg(long, default_value_t = 1)]
    group: usize,
    /// Repetitions (median reported).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Simulated drives.
    #[arg(long, default_value_t = 1)]
    devices: usize,
    /// Flash page size of the simulated drives, bytes.
    #[arg(long, default_value = "4096", value_parser = super::page_size_parser())]
    page_size: String,
}

pub fn run(c: Command) -> Result<(), RunError> {
    match c {
        Command::Solid(a) => solid(a),
        Command::Nand(a) => {
            use instinfer::run::bench_nand::{NandBenchParams, run_nand_bench};
            let p = NandBenchParams {
                pages_per_die: a.pages_per_die,
                raw_only: a.raw_only,
                ..NandBenchParams::default()
            };
            print!("{}", run_nand_bench(&p)?);
            Ok(())
        }
        Command::Fabric(a) => fabric(a),
        Command::Journal(a) => {
            use instinfer::run::bench_journal::{JournalParams, run_journal_bench};
            let p = JournalParams {
                sequences: a.sequences,
                page_size: a.page_size,
                seed: a.seed,
            };
            print!("{}", run_journal_bench(&p)?);
            Ok(())
        }
        Command::Soak(a) => {
            use instinfer::run::bench_soak::{SoakParams, run_soak};
            let p = SoakParams {
                days: a.days,
                fill: a.fill,
                request_interval_s: a.request_interval,
                sessions: a.sessions,
                cuts_per_day: a.cuts_per_day,
                faults: !a.no_faults,
                bucket_hours: a.bucket_hours,
                wear_spread: a.wear_spread,
                seed: a.seed,
                chart: a.chart,
            };
            print!("{}", run_soak(&p)?);
            Ok(())
        }
        Command::Gc(a) => {
            use instinfer::run::bench_gc::{GcParams, run_gc_bench};
            let p = GcParams {
                requests: a.requests as usize,
                fill: a.fill,
                seed: a.seed,
            };
            print!("{}", run_gc_bench(&p)?);
            Ok(())
        }
        Command::P2p(a) => {
            use instinfer::run::bench_p2p::{P2pParams, run_p2p_bench};
            let p = P2pParams {
                seqs: a.seqs,
                prompt: a.prompt,
                steps: a.steps,
                page_size: super::page_size(&a.page_size),
            };
            println!("{}", run_p2p_bench(&p)?);
            Ok(())
        }
        Command::Trace(a) => {
            let text = std::fs::read_to_string(&a.text)
                .map_err(|e| RunError::Input(format!("{}: {e}", a.text.display())))?;
            let model = super::model::load(a.model.as_deref())?;
            let tokens = model.tokenizer().encode(&text);
            if tokens.len() < a.tokens + 1 {
                return Err(RunError::Input(format!(
                    "{} holds {} tokens, {} needed",
                    a.text.display(),
                    tokens.len(),
                    a.tokens + 1
                )));
            }
            let t = instinfer::cost::trace::record(&model, &tokens[..a.tokens + 1])?;
            t.save(&a.out)?;
            println!(
                "trace: {} layers x {} KV heads ({} query heads) x {} tokens, d {} -> {}",
                t.layers(),
                t.kv_heads,
                t.q_heads,
                t.s,
                t.d,
                a.out.display()
            );
            Ok(())
        }
        Command::Host(a) => {
            let p = instinfer::run::bench_host::HostBenchParams {
                s: a.s,
                kv_heads: a.kv_heads,
                d: a.d,
                reps: a.reps,
            };
            print!("{}", instinfer::run::bench_host::run_host_bench(&p)?);
            Ok(())
        }
        Command::Paper(a) => {
            use instinfer::run::bench_paper::{Figure, PaperParams, run_paper};
            let figures = if a.figure == "all" {
                Figure::ALL.to_vec()
            } else {
                vec![Figure::parse(&a.figure).ok_or_else(|| {
                    RunError::Input(format!(
                        "--figure {}: not all, {}",
                        a.figure,
                        Figure::names()
                    ))
                })?]
            };
            let source = match &a.trace {
                Some(dir) => {
                    instinfer::cost::KvSource::Trace(instinfer::cost::trace::Trace::load(dir)?)
                }
                None => instinfer::cost::KvSource::Synthetic,
            };
            let mut p = PaperParams {
                figures,
                out: a.out,
                seqs: a.seqs,
                page_sizes: a.page_size.iter().map(|s| super::page_size(s)).collect(),
                source,
                probe_bytes: a.flexgen_probe_mb << 20,
                ..PaperParams::default()
            };
            if a.quick {
                p.contexts = vec![1024, 2048];
            }
            print!("{}", run_paper(&p)?);
            Ok(())
        }
        Command::Model(a) => model_bench(a),
        Command::Attend(a) => {
            let p = BenchParams {
                s: a.s,
                d: a.d,
                kv_heads: a.kv_heads,
                group: a.group,
                reps: a.reps,
                devices: a.devices,
                page_size: super::page_size(&a.page_size),
                ..BenchParams::default()
            };
            println!("{}", run_bench(&p)?);
            Ok(())
        }
    }
}

fn model_bench(a: ModelArgs) -> Result<(), RunError> {
    use instinfer::run::bench_llama::llama_python;
    use instinfer::run::bench_model::{LlamaCppSetup, ModelBenchParams, NllText, run_model_bench};
    // llama.cpp first: a missing or failing install shows before minutes of
    // benchmarking, and its build is not timed against anything.
    let python = match a.against {
        Some(Against::LlamaCpp) => Some(llama_python(|m| eprintln!("... {m}"))?),
        None => None,
    };
    let nll = if a.nll_tokens > 0 {
        let path = a
            .nll_text
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from(WIKI_TEXT));
        let text = std::fs::read_to_string(&path).map_err(|e| {
            RunError::Input(format!(
                "--nll-tokens: {}: {e} (pass the text with --nll-text FILE)",
                path.display()
            ))
        })?;
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Some(NllText {
            name,
            text,
            tokens: a.nll_tokens,
        })
    } else {
        None
    };
    let (model, gguf, name) = super::model::load_named(a.model.as_deref())?;
    let p = ModelBenchParams {
        prompt_tokens: a.prompt_tokens,
        decode_tokens: a.decode_tokens,
        rounds: a.rounds as usize,
        ..Default::default()
    };
    let llama = python.map(|python| LlamaCppSetup {
        python,
        gguf,
        nll,
        greedy_prompts: a.greedy_prompts,
    });
    let report = run_model_bench(&model, &name, &p, llama.as_ref(), |what| {
        eprintln!("... {what}")
    })?;
    println!("{report}");
    Ok(())
}

#[cfg(target_os = "linux")]
fn solid(a: SolidArgs) -> Result<(), RunError> {
    use instinfer::run::bench_solid::{SolidBenchParams, run_solid_bench};
    use solid_attention::{Budget, KvLocation};
    let text = std::fs::read_to_string(&a.text)
        .map_err(|e| RunError::Input(format!("{}: {e}", a.text.display())))?;
    if !(a.probe_seconds > 0.0 && a.probe_seconds <= 60.0) {
        return Err(RunError::Input("--probe-seconds must be in (0, 60]".into()));
    }
    let model = super::model::load(a.model.as_deref())?;
    let tokens = model.tokenizer().encode(&text);
    let setup = a.ssd.setup(Budget::Default)?;
    let KvLocation::Dir(kv_dir) = setup.location else {
        return Err(RunError::Input("bench solid needs a --kv-dir".into()));
    };
    let p = SolidBenchParams {
        context: a.context,
        steps: a.steps,
        kv_dir,
        budget: setup.budget,
        block: setup.block,
        ahead: a.ahead as usize,
        probe_seconds: a.probe_seconds,
        merge_gap: setup.merge_gap,
        repeat: a.repeat as usize,
    };
    let report = run_solid_bench(&model, &tokens, &p, |what| eprintln!("... {what}"))?;
    for line in report.lines() {
        println!("{line}");
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn solid(_: SolidArgs) -> Result<(), RunError> {
    Err(RunError::Input(
        "bench solid needs Linux (O_DIRECT through io_uring)".into(),
    ))
}

fn fabric(a: FabricArgs) -> Result<(), RunError> {
    use instinfer::run::bench_fabric::{FabricParams, TargetKind, run_fabric_bench};
    let kind = if a.threads {
        TargetKind::Thread
    } else {
        TargetKind::Process(
            std::env::current_exe()
                .map_err(|e| RunError::Input(format!("where is this binary: {e}")))?,
        )
    };
    let p = FabricParams {
        targets: a.targets,
        seqs: a.seqs,
        prompt: a.prompt,
        steps: a.steps,
        page_size: super::page_size(&a.page_size),
        kind,
    };
    println!("{}", run_fabric_bench(&p)?);
    Ok(())
}
