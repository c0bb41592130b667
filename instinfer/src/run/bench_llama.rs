//! llama.cpp as the yardstick of `instinfer bench model --against
//! llama.cpp`: the Python that has `llama_cpp` (llama-cpp-python, pinned,
//! built from source into a venv in the cache on first use), the request
//! the embedded script `llama_cpp_bench.py` reads, the run of that script,
//! and its reply. What to compare and how it is printed is `bench_model`'s.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use serde_json::{Value, json};
use thiserror::Error;

/// The llama-cpp-python release the comparison is pinned to.
pub const LLAMA_CPP_PYTHON_VERSION: &str = "0.3.36";

/// A Python with `llama_cpp` importable, used instead of the cache's venv
/// (nothing is installed then).
pub const PYTHON_ENV: &str = "INSTINFER_LLAMA_CPP_PYTHON";

/// ggml's CPU flags for the source build, for the CPU this runs on. A
/// native build (`GGML_NATIVE=ON`, the default) enables whatever the build
/// machine's CPU reports, AMX included; on some of the machines this
/// project runs on the AMX kernels crash at run time (the CPU reports the
/// tiles, but using them fails), so on x86 the build names each extension
/// explicitly: AVX/AVX2/FMA/F16C and AVX-512 (with VNNI, VBMI and BF16)
/// each on exactly when this CPU has it (an AVX-512 build dies with an
/// illegal instruction on an AVX2-only CPU), and every AMX flag off.
/// Elsewhere the native build is kept.
pub fn cmake_args() -> String {
    cmake_args_for(&cpu_features())
}

/// The x86 extensions `cmake_args` asks about, in its order.
const X86_FLAGS: [&str; 8] = [
    "AVX",
    "AVX2",
    "FMA",
    "F16C",
    "AVX512",
    "AVX512_VNNI",
    "AVX512_VBMI",
    "AVX512_BF16",
];

/// Which of [`X86_FLAGS`] this CPU has (`None` off x86).
fn cpu_features() -> Option<[bool; 8]> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        // ggml's GGML_AVX512 compiles with -mavx512f/cd/vl/dq/bw.
        let avx512 = has!("avx512f")
            && has!("avx512cd")
            && has!("avx512vl")
            && has!("avx512dq")
            && has!("avx512bw");
        Some([
            has!("avx"),
            has!("avx2"),
            has!("fma"),
            has!("f16c"),
            avx512,
            avx512 && has!("avx512vnni"),
            avx512 && has!("avx512vbmi"),
            avx512 && has!("avx512bf16"),
        ])
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// `cmake_args` for a CPU with `features` (`None`: not x86).
fn cmake_args_for(features: &Option<[bool; 8]>) -> String {
    let Some(features) = features else {
        return String::new();
    };
    let mut args = vec!["-DGGML_NATIVE=OFF".to_string()];
    for (flag, on) in X86_FLAGS.iter().zip(features) {
        args.push(format!("-DGGML_{flag}={}", if *on { "ON" } else { "OFF" }));
    }
    for flag in ["AMX_TILE", "AMX_INT8", "AMX_BF16"] {
        args.push(format!("-DGGML_{flag}=OFF"));
    }
    args.join(" ")
}

/// A short name for the build `cmake_args` makes here, part of the venv's
/// folder name so that a cache moved to a CPU with other extensions
/// builds again instead of dying on an instruction it lacks.
fn build_tag() -> &'static str {
    match cpu_features() {
        None => "native",
        Some(f) if f[5] => "avx512vnni",
        Some(f) if f[4] => "avx512",
        Some(f) if f[1] => "avx2",
        Some(_) => "baseline",
    }
}

/// The script: a request on stdin, one JSON line on stdout.
const SCRIPT: &str = include_str!("llama_cpp_bench.py");

/// Why llama.cpp could not be run.
#[derive(Debug, Error)]
pub enum LlamaCppError {
    /// Neither `XDG_CACHE_HOME` nor `HOME` says where the venv goes.
    #[error("where to install llama-cpp-python: {0}")]
    NoCacheDir(#[from] model::fetch::FetchError),
    /// `python3` could not be started.
    #[error(
        "python3 not found ({source}); it is needed to build llama-cpp-python {LLAMA_CPP_PYTHON_VERSION}, or set {PYTHON_ENV} to a python that has llama_cpp"
    )]
    NoPython3 {
        /// Why it did not start.
        source: std::io::Error,
    },
    /// `python3 -m venv` failed.
    #[error("python3 -m venv {dir} failed ({status}): {stderr}")]
    Venv {
        /// The venv's folder.
        dir: PathBuf,
        /// Its exit status.
        status: ExitStatus,
        /// The end of its stderr.
        stderr: String,
    },
    /// `pip install llama-cpp-python==…` failed.
    #[error(
        "pip install llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION} failed ({status}); the whole log is {log}; its end:\n{tail}"
    )]
    Pip {
        /// pip's exit status.
        status: ExitStatus,
        /// The log file.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// The Python does not import `llama_cpp`.
    #[error("{python} cannot import llama_cpp{hint}: {stderr}")]
    Import {
        /// The Python.
        python: PathBuf,
        /// Where it came from, if that helps.
        hint: String,
        /// The end of its stderr.
        stderr: String,
    },
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The model's path cannot travel in the JSON request.
    #[error("{0}: the path is not UTF-8")]
    NonUtf8Path(PathBuf),
    /// The script exited with an error.
    #[error("the llama.cpp script failed ({status}): {stderr}")]
    Script {
        /// Its exit status.
        status: ExitStatus,
        /// The end of its stderr.
        stderr: String,
    },
    /// The script's output is not the reply the request asked for.
    #[error("the llama.cpp script's reply is unreadable: {0}")]
    Reply(String),
}

impl LlamaCppError {
    fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source,
        }
    }
}

/// A timed prefill of `prompt` followed by up to `decode` greedy tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchTask {
    /// Prompt ids (BOS included where the model wants one).
    pub prompt: Vec<u32>,
    /// Tokens to generate at most.
    pub decode: usize,
    /// Context size (instinfer's KV capacity for the same run).
    pub n_ctx: usize,
}

/// Up to `decode` greedy tokens after `prompt` (not timed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GreedyTask {
    /// Prompt ids.
    pub prompt: Vec<u32>,
    /// Tokens to generate at most.
    pub decode: usize,
}

/// What llama.cpp is asked to do, on one model and thread count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlamaRequest {
    /// The GGUF file.
    pub model: PathBuf,
    /// Threads for prefill and decode.
    pub n_threads: usize,
    /// End of text: generation stops there, as instinfer's does.
    pub eos: u32,
    /// The timed run.
    pub bench: Option<BenchTask>,
    /// Ids whose mean NLL (each given the ones before) is wanted.
    pub nll: Option<Vec<u32>>,
    /// Greedy generations.
    pub greedy: Vec<GreedyTask>,
}

impl LlamaRequest {
    /// The JSON the script reads.
    pub fn to_json(&self) -> Result<String, LlamaCppError> {
        let model = self
            .model
            .to_str()
            .ok_or_else(|| LlamaCppError::NonUtf8Path(self.model.clone()))?;
        let v = json!({
            "model": model,
            "n_threads": self.n_threads,
            "eos": self.eos,
            "bench": self.bench.as_ref().map(|b| json!({
                "prompt": b.prompt,
                "decode": b.decode,
                "n_ctx": b.n_ctx,
            })),
            "nll": self.nll,
            "greedy": self.greedy.iter().map(|g| json!({
                "prompt": g.prompt,
                "decode": g.decode,
            })).collect::<Vec<_>>(),
        });
        Ok(v.to_string())
    }
}

/// The timed run's results (wall clock).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReply {
    /// Prompt tokens evaluated.
    pub prompt_tokens: usize,
    /// Prefill seconds.
    pub prefill_s: f64,
    /// Prompt tokens per second.
    pub prefill_tok_s: f64,
    /// Decode seconds.
    pub decode_s: f64,
    /// Decode steps (generated tokens − 1) per second.
    pub decode_tok_s: f64,
    /// The generated ids.
    pub tokens: Vec<u32>,
    /// The context size llama.cpp used.
    pub n_ctx: usize,
    /// Its logical batch.
    pub n_batch: usize,
}

/// Mean NLL of the request's ids.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NllReply {
    /// Nats per scored token.
    pub mean: f64,
    /// Tokens scored (ids − 1).
    pub scored: usize,
}

/// The script's reply.
#[derive(Clone, Debug, PartialEq)]
pub struct LlamaReply {
    /// `llama_cpp.__version__`.
    pub version: String,
    /// The timed run, when asked.
    pub bench: Option<BenchReply>,
    /// The NLL, when asked.
    pub nll: Option<NllReply>,
    /// One generation per greedy task, in order.
    pub greedy: Vec<GreedyReply>,
}

/// llama.cpp's greedy generation after one prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct GreedyReply {
    /// Its tokens, the prompt evaluated in one batch.
    pub tokens: Vec<u32>,
    /// At each token, its top logit minus the runner-up (how near a tie
    /// the choice was).
    pub margins: Vec<f64>,
    /// Its tokens with the prompt fed one token at a time: llama.cpp's
    /// own arithmetic along another path, to tell a divergence from a
    /// near-tie it does not decide the same way twice.
    pub stepwise: Vec<u32>,
}

/// Parses the script's stdout (its last non-empty line) against `req`:
/// every part asked for must be there, well formed.
pub fn parse_reply(stdout: &str, req: &LlamaRequest) -> Result<LlamaReply, LlamaCppError> {
    let bad = |m: String| LlamaCppError::Reply(m);
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or_else(|| bad("no output".into()))?;
    let v: Value = serde_json::from_str(line).map_err(|e| bad(format!("{e} in `{line}`")))?;
    let version = v
        .get("version")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `version`".into()))?
        .to_string();
    let bench = match (&req.bench, v.get("bench").filter(|b| !b.is_null())) {
        (None, _) => None,
        (Some(_), None) => return Err(bad("no `bench` result".into())),
        (Some(_), Some(b)) => Some(BenchReply {
            prompt_tokens: count(b, "prompt_tokens")?,
            prefill_s: number(b, "prefill_s")?,
            prefill_tok_s: number(b, "prefill_tok_s")?,
            decode_s: number(b, "decode_s")?,
            decode_tok_s: number(b, "decode_tok_s")?,
            tokens: ids(b.get("tokens"), "bench.tokens")?,
            n_ctx: count(b, "n_ctx")?,
            n_batch: count(b, "n_batch")?,
        }),
    };
    let nll = match (&req.nll, v.get("nll").filter(|n| !n.is_null())) {
        (None, _) => None,
        (Some(_), None) => return Err(bad("no `nll` result".into())),
        (Some(_), Some(n)) => Some(NllReply {
            mean: number(n, "mean")?,
            scored: count(n, "scored")?,
        }),
    };
    let greedy = match v.get("greedy").and_then(Value::as_array) {
        Some(a) => a
            .iter()
            .map(|g| {
                let reply = GreedyReply {
                    tokens: ids(g.get("tokens"), "greedy.tokens")?,
                    margins: g
                        .get("margins")
                        .and_then(Value::as_array)
                        .and_then(|a| a.iter().map(Value::as_f64).collect::<Option<Vec<_>>>())
                        .ok_or_else(|| bad("`greedy.margins` is not a list of numbers".into()))?,
                    stepwise: ids(g.get("stepwise"), "greedy.stepwise")?,
                };
                if reply.margins.len() != reply.tokens.len() {
                    return Err(bad(format!(
                        "{} greedy margins for {} tokens",
                        reply.margins.len(),
                        reply.tokens.len()
                    )));
                }
                Ok(reply)
            })
            .collect::<Result<Vec<_>, _>>()?,
        None if req.greedy.is_empty() => Vec::new(),
        None => return Err(bad("no `greedy` results".into())),
    };
    if greedy.len() != req.greedy.len() {
        return Err(bad(format!(
            "{} greedy generations for {} prompts",
            greedy.len(),
            req.greedy.len()
        )));
    }
    Ok(LlamaReply {
        version,
        bench,
        nll,
        greedy,
    })
}

fn number(v: &Value, key: &str) -> Result<f64, LlamaCppError> {
    v.get(key)
        .and_then(Value::as_f64)
        .filter(|x| x.is_finite())
        .ok_or_else(|| LlamaCppError::Reply(format!("`{key}` is not a finite number")))
}

fn count(v: &Value, key: &str) -> Result<usize, LlamaCppError> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|x| usize::try_from(x).ok())
        .ok_or_else(|| LlamaCppError::Reply(format!("`{key}` is not a count")))
}

fn ids(v: Option<&Value>, what: &str) -> Result<Vec<u32>, LlamaCppError> {
    let bad = || LlamaCppError::Reply(format!("`{what}` is not a list of token ids"));
    v.and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|x| {
            x.as_u64()
                .and_then(|x| u32::try_from(x).ok())
                .ok_or_else(bad)
        })
        .collect()
}

/// Runs the embedded script with `python` on `req`.
pub fn run_llama(python: &Path, req: &LlamaRequest) -> Result<LlamaReply, LlamaCppError> {
    let input = req.to_json()?;
    let script = ScriptFile::write()?;
    let mut child = Command::new(python)
        .arg(&script.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LlamaCppError::io(format!("start {}", python.display()), e))?;
    // The script reads all of stdin before it writes anything.
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| LlamaCppError::io("send the request to the llama.cpp script", e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| LlamaCppError::io("wait for the llama.cpp script", e))?;
    if !out.status.success() {
        return Err(LlamaCppError::Script {
            status: out.status,
            stderr: tail(&String::from_utf8_lossy(&out.stderr), 20),
        });
    }
    parse_reply(&String::from_utf8_lossy(&out.stdout), req)
}

/// The script in a temporary file, removed on drop.
struct ScriptFile(PathBuf);

impl ScriptFile {
    fn write() -> Result<Self, LlamaCppError> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "instinfer-llama-cpp-bench-{}-{}.py",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, SCRIPT)
            .map_err(|e| LlamaCppError::io(format!("write {}", path.display()), e))?;
        Ok(Self(path))
    }
}

impl Drop for ScriptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The venv llama-cpp-python is built into: `llama-cpp-<version>-<build>`
/// (the build as [`cmake_args`] makes it on this CPU: `avx512vnni`,
/// `avx512`, `avx2`, …) next to the models cache
/// (`$XDG_CACHE_HOME/instinfer`, else `~/.cache/instinfer`).
pub fn venv_dir() -> Result<PathBuf, LlamaCppError> {
    let models = model::fetch::cache_dir()?;
    let root = models.parent().map_or(models.clone(), Path::to_path_buf);
    Ok(root.join(format!(
        "llama-cpp-{LLAMA_CPP_PYTHON_VERSION}-{}",
        build_tag()
    )))
}

/// The Python to run llama.cpp with: `$INSTINFER_LLAMA_CPP_PYTHON` if set
/// (it must import `llama_cpp`), else the cache's venv, created and built
/// there first when it does not import `llama_cpp` (about 10 minutes on 2
/// cores; `note` hears what is going on).
pub fn llama_python(mut note: impl FnMut(&str)) -> Result<PathBuf, LlamaCppError> {
    if let Some(p) = std::env::var_os(PYTHON_ENV).filter(|p| !p.is_empty()) {
        let python = PathBuf::from(p);
        check_import(&python, &format!(" (from {PYTHON_ENV})"))?;
        return Ok(python);
    }
    let dir = venv_dir()?;
    let python = dir.join("bin").join("python");
    if check_import(&python, "").is_ok() {
        return Ok(python);
    }
    note(&format!(
        "building llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} from source into {} (once; about 10 minutes)",
        dir.display()
    ));
    install(&dir)?;
    check_import(
        &python,
        &format!(" (just installed into {})", dir.display()),
    )?;
    Ok(python)
}

/// Creates the venv in `dir` and pip-installs llama-cpp-python into it,
/// pip's output going to `dir/install.log`.
fn install(dir: &Path) -> Result<(), LlamaCppError> {
    let out = Command::new("python3")
        .args(["-m", "venv"])
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| LlamaCppError::NoPython3 { source })?;
    if !out.status.success() {
        return Err(LlamaCppError::Venv {
            dir: dir.to_path_buf(),
            status: out.status,
            stderr: tail(&String::from_utf8_lossy(&out.stderr), 10),
        });
    }
    let log = dir.join("install.log");
    let file = std::fs::File::create(&log)
        .map_err(|e| LlamaCppError::io(format!("create {}", log.display()), e))?;
    let err = file
        .try_clone()
        .map_err(|e| LlamaCppError::io(format!("open {}", log.display()), e))?;
    let python = dir.join("bin").join("python");
    let status = Command::new(&python)
        .args(["-m", "pip", "install", "--no-input"])
        .arg(format!("llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}"))
        .env("CMAKE_ARGS", cmake_args())
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .status()
        .map_err(|e| LlamaCppError::io(format!("start {} -m pip", python.display()), e))?;
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        return Err(LlamaCppError::Pip {
            status,
            tail: tail(&text, 20),
            log,
        });
    }
    Ok(())
}

/// Whether `python` imports `llama_cpp`.
fn check_import(python: &Path, hint: &str) -> Result<(), LlamaCppError> {
    let import_error = |stderr: String| LlamaCppError::Import {
        python: python.to_path_buf(),
        hint: hint.to_string(),
        stderr,
    };
    let out = Command::new(python)
        .args(["-c", "import llama_cpp"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| import_error(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(import_error(tail(&String::from_utf8_lossy(&out.stderr), 5)))
    }
}

/// The last `n` non-empty lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> LlamaRequest {
        LlamaRequest {
            model: PathBuf::from("/m/model.gguf"),
            n_threads: 2,
            eos: 7,
            bench: Some(BenchTask {
                prompt: vec![1, 2, 3],
                decode: 4,
                n_ctx: 8,
            }),
            nll: Some(vec![5, 6, 7]),
            greedy: vec![GreedyTask {
                prompt: vec![9],
                decode: 2,
            }],
        }
    }

    const REPLY: &str = r#"{"version": "0.3.36", "bench": {"prompt_tokens": 3, "prefill_s": 0.5, "prefill_tok_s": 6.0, "decode_s": 0.25, "decode_tok_s": 12.0, "tokens": [4, 5, 6, 7], "n_ctx": 256, "n_batch": 3}, "nll": {"mean": 2.5, "scored": 2}, "greedy": [{"tokens": [3, 4], "margins": [0.5, 0.25], "stepwise": [3, 5]}]}"#;

    #[test]
    fn the_request_carries_every_task_as_json() {
        let v: Value = serde_json::from_str(&request().to_json().unwrap()).unwrap();
        assert_eq!(v["model"], "/m/model.gguf");
        assert_eq!(v["n_threads"], 2);
        assert_eq!(v["eos"], 7);
        assert_eq!(v["bench"]["prompt"], json!([1, 2, 3]));
        assert_eq!(v["bench"]["decode"], 4);
        assert_eq!(v["bench"]["n_ctx"], 8);
        assert_eq!(v["nll"], json!([5, 6, 7]));
        assert_eq!(v["greedy"][0]["prompt"], json!([9]));
        assert_eq!(v["greedy"][0]["decode"], 2);
        let none = LlamaRequest {
            bench: None,
            nll: None,
            greedy: Vec::new(),
            ..request()
        };
        let v: Value = serde_json::from_str(&none.to_json().unwrap()).unwrap();
        assert!(v["bench"].is_null() && v["nll"].is_null());
        assert_eq!(v["greedy"], json!([]));
    }

    #[cfg(unix)]
    #[test]
    fn a_non_utf8_model_path_is_refused_not_mangled() {
        use std::os::unix::ffi::OsStrExt;
        let req = LlamaRequest {
            model: PathBuf::from(std::ffi::OsStr::from_bytes(b"/m/\xff.gguf")),
            ..request()
        };
        assert!(matches!(req.to_json(), Err(LlamaCppError::NonUtf8Path(_))));
    }

    #[test]
    fn a_reply_is_parsed_from_the_last_line_of_output() {
        let out = format!("some log line llama.cpp printed\n\n{REPLY}\n");
        let r = parse_reply(&out, &request()).unwrap();
        assert_eq!(r.version, "0.3.36");
        let b = r.bench.unwrap();
        assert_eq!(b.prompt_tokens, 3);
        assert_eq!(b.prefill_tok_s, 6.0);
        assert_eq!(b.decode_tok_s, 12.0);
        assert_eq!(b.tokens, vec![4, 5, 6, 7]);
        assert_eq!((b.n_ctx, b.n_batch), (256, 3));
        assert_eq!(
            r.nll,
            Some(NllReply {
                mean: 2.5,
                scored: 2
            })
        );
        assert_eq!(
            r.greedy,
            vec![GreedyReply {
                tokens: vec![3, 4],
                margins: vec![0.5, 0.25],
                stepwise: vec![3, 5],
            }]
        );
    }

    #[test]
    fn a_malformed_reply_is_an_error_not_a_panic() {
        let req = request();
        for out in [
            "",
            "Traceback (most recent call last):",
            "{\"version\": \"0.3.36\"",
            &REPLY.replace("\"version\": \"0.3.36\", ", ""),
            &REPLY.replace("\"tokens\": [4, 5, 6, 7]", "\"tokens\": [4, -5]"),
            &REPLY.replace("\"prefill_tok_s\": 6.0", "\"prefill_tok_s\": \"fast\""),
            &REPLY.replace("\"greedy\": [{", "\"greedy\": [], \"x\": [{"),
            &REPLY.replace("\"margins\": [0.5, 0.25]", "\"margins\": [0.5]"),
            &REPLY.replace("\"margins\": [0.5, 0.25]", "\"margins\": [0.5, \"x\"]"),
            &REPLY.replace(", \"stepwise\": [3, 5]", ""),
            &REPLY.replace("\"nll\": {\"mean\": 2.5, \"scored\": 2}", "\"nll\": null"),
        ] {
            match parse_reply(out, &req) {
                Err(LlamaCppError::Reply(m)) => assert!(!m.is_empty()),
                other => panic!("{out:?}: {other:?}"),
            }
        }
        // What was not asked for need not be there.
        let bench_only = LlamaRequest {
            nll: None,
            greedy: Vec::new(),
            ..request()
        };
        let out = REPLY.replace("\"greedy\": [{", "\"greedy\": [], \"x\": [{");
        assert!(parse_reply(&out, &bench_only).unwrap().nll.is_none());
    }

    #[test]
    fn the_venv_sits_next_to_the_models_cache() {
        if let Ok(dir) = venv_dir() {
            let models = model::fetch::cache_dir().unwrap();
            assert_eq!(dir.parent(), models.parent());
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with("llama-cpp-0.3.36-"), "{name}");
        }
    }

    #[test]
    fn the_source_build_turns_amx_off_and_follows_the_cpu() {
        let avx2_only = cmake_args_for(&Some([true, true, true, true, false, false, false, false]));
        let avx512 = cmake_args_for(&Some([true; 8]));
        for args in [&avx2_only, &avx512] {
            for flag in ["AMX_TILE", "AMX_INT8", "AMX_BF16"] {
                assert!(args.contains(&format!("-DGGML_{flag}=OFF")), "{args}");
            }
            assert!(args.contains("-DGGML_NATIVE=OFF"));
            assert!(args.contains("-DGGML_AVX2=ON"));
        }
        assert!(avx2_only.contains("-DGGML_AVX512=OFF"));
        assert!(avx2_only.contains("-DGGML_AVX512_VNNI=OFF"));
        assert!(avx512.contains("-DGGML_AVX512=ON"));
        assert!(avx512.contains("-DGGML_AVX512_VNNI=ON"));
        assert_eq!(cmake_args_for(&None), "");
    }

    #[test]
    fn tail_keeps_the_last_non_empty_lines() {
        assert_eq!(tail("a\n\nb\nc\n\n", 2), "b\nc");
        assert_eq!(tail("", 3), "");
    }

    /// The script on the cached SmolLM2 with the Python of
    /// `$INSTINFER_LLAMA_CPP_PYTHON`; skipped (with a note) without either.
    #[test]
    fn the_script_answers_every_task_on_a_real_model() {
        let Some(python) = std::env::var_os(PYTHON_ENV).filter(|p| !p.is_empty()) else {
            eprintln!("skipped: the llama.cpp script ({PYTHON_ENV} not set)");
            return;
        };
        let Some(gguf) = model::fetch::cached_path(&model::fetch::SMOLLM2_135M)
            .ok()
            .filter(|p| p.is_file())
        else {
            eprintln!("skipped: the llama.cpp script (SmolLM2-135M not in the cache)");
            return;
        };
        let m = model::Model::load(&gguf).unwrap();
        let tok = m.tokenizer();
        let prompt = tok.encode_prompt("The capital of France is", false);
        let text = tok.encode("The quick brown fox jumps over the lazy dog. It was a sunny day.");
        let req = LlamaRequest {
            model: gguf,
            n_threads: 2,
            eos: tok.eos(),
            bench: Some(BenchTask {
                prompt: prompt.clone(),
                decode: 4,
                n_ctx: prompt.len() + 5,
            }),
            nll: Some(text.clone()),
            greedy: vec![GreedyTask { prompt, decode: 3 }],
        };
        let r = run_llama(Path::new(&python), &req).unwrap();
        assert_eq!(r.version, LLAMA_CPP_PYTHON_VERSION);
        let b = r.bench.unwrap();
        assert_eq!(b.prompt_tokens, req.bench.as_ref().unwrap().prompt.len());
        assert!(!b.tokens.is_empty() && b.tokens.len() <= 4);
        assert!(b.prefill_tok_s > 0.0);
        let vocab = m.config().vocab as u32;
        assert!(b.tokens.iter().all(|&t| t < vocab));
        let n = r.nll.unwrap();
        assert_eq!(n.scored, text.len() - 1);
        // English through a language model: a few nats a token, not 0,
        // not ln(vocab) ≈ 10.8 of a uniform guess.
        assert!(n.mean > 0.5 && n.mean < 8.0, "{}", n.mean);
        // The same greedy run as the timed one, on a fresh context.
        let g = &r.greedy[0];
        assert_eq!(g.tokens, b.tokens[..b.tokens.len().min(3)]);
        assert_eq!(g.margins.len(), g.tokens.len());
        assert!(g.margins.iter().all(|&m| m >= 0.0), "{:?}", g.margins);
        assert!(!g.stepwise.is_empty() && g.stepwise.len() <= 3);
    }
}
