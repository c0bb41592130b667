//! The `instinfer` binary end to end: exit statuses, messages and the JSON
//! report of `attend`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use attention::testdata::{structured_kv, structured_query};
use instinfer::npy::NpyArray;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_instinfer"))
}

/// A fresh scratch directory per test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("instinfer-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, shape: Vec<usize>, data: Vec<f32>) {
    NpyArray::from_f32(shape, data)
        .unwrap()
        .write(path)
        .unwrap();
}

/// K, V `[kv, s, d]` (fp16 when `f16`) and Q `[q, d]` in `dir`.
fn inputs(dir: &Path, kv: usize, q_heads: usize, s: usize, d: usize, f16: bool) {
    let (k, v) = structured_kv(11, kv, s, d);
    let q = structured_query(11, q_heads, d, kv);
    if f16 {
        let bits = |x: &[f32]| {
            x.iter()
                .map(|&y| half::f16::from_f32(y).to_bits())
                .collect::<Vec<_>>()
        };
        NpyArray::from_f16_bits(vec![kv, s, d], bits(&k))
            .unwrap()
            .write(&dir.join("k.npy"))
            .unwrap();
        NpyArray::from_f16_bits(vec![kv, s, d], bits(&v))
            .unwrap()
            .write(&dir.join("v.npy"))
            .unwrap();
    } else {
        write(&dir.join("k.npy"), vec![kv, s, d], k);
        write(&dir.join("v.npy"), vec![kv, s, d], v);
    }
    write(&dir.join("q.npy"), vec![q_heads, d], q);
}

fn attend(dir: &Path, extra: &[&str]) -> Output {
    let p = |f: &str| dir.join(f).display().to_string();
    bin()
        .args([
            "attend",
            "--k",
            &p("k.npy"),
            "--v",
            &p("v.npy"),
            "--q",
            &p("q.npy"),
            "--out",
            &p("out.npy"),
        ])
        .args(extra)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn attend_reports_json_and_writes_output() {
    let dir = scratch("good");
    inputs(&dir, 2, 6, 100, 32, true);
    for method in ["dense", "sparf"] {
        let o = attend(&dir, &["--method", method]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let j: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        for key in [
            "method",
            "virtual_device_us",
            "flash_pages_read",
            "flash_pages_skipped",
            "engine_bytes",
            "channel_bus_bytes",
            "elements_filtered",
            "pcie_bytes",
            "host_offload_pcie_bytes",
            "wall_ms",
            "devices",
            "s",
            "d",
        ] {
            assert!(j.get(key).is_some(), "missing {key} in {text}");
        }
        assert_eq!(j["method"], method);
        assert_eq!(j["s"], 100);
        assert_eq!(j["d"], 32);
        assert_eq!(j["host_offload_pcie_bytes"], 2 * 2 * 100 * 32 * 2);
        let out = NpyArray::read(&dir.join("out.npy")).unwrap();
        assert_eq!(out.shape, vec![6, 32]);
        assert!(out.to_f32().iter().all(|x| x.is_finite()));
    }
}

#[test]
fn attend_on_two_devices_matches_one_bit_for_bit() {
    let dir = scratch("devices");
    inputs(&dir, 3, 9, 70, 16, false);
    let mut outs = Vec::new();
    for devices in ["1", "2", "4"] {
        let o = attend(&dir, &["--method", "sparf", "--devices", devices]);
        assert!(o.status.success(), "{}", stderr(&o));
        outs.push(std::fs::read(dir.join("out.npy")).unwrap());
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
}

#[test]
fn missing_file_exits_2_with_message() {
    let dir = scratch("missing");
    let o = attend(&dir, &["--method", "dense"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("k.npy"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
}

#[test]
fn not_npy_exits_2() {
    let dir = scratch("garbage");
    inputs(&dir, 1, 1, 8, 8, false);
    std::fs::write(dir.join("k.npy"), b"hello, not numpy").unwrap();
    let o = attend(&dir, &["--method", "dense"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad magic"), "{}", stderr(&o));
}

#[test]
fn bad_shapes_exit_2() {
    let dir = scratch("shapes");
    // q_heads not a multiple of kv_heads.
    inputs(&dir, 2, 3, 8, 8, false);
    let o = attend(&dir, &["--method", "dense"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("multiple"), "{}", stderr(&o));
    // K of rank 2.
    inputs(&dir, 1, 1, 8, 8, false);
    write(&dir.join("k.npy"), vec![8, 8], vec![0.0; 64]);
    let o = attend(&dir, &["--method", "dense"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("shape"), "{}", stderr(&o));
    // Q width differs from K's.
    inputs(&dir, 1, 1, 8, 8, false);
    write(&dir.join("q.npy"), vec![1, 6], vec![0.0; 6]);
    let o = attend(&dir, &["--method", "dense"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bad_parameters_exit_2() {
    let dir = scratch("params");
    inputs(&dir, 1, 1, 16, 8, false);
    for extra in [
        &["--method", "sparf", "--r", "9"][..],
        &["--method", "sparf", "--topk", "0"],
        &["--method", "dense", "--devices", "0"],
        &["--method", "dense", "--dim-group", "3"],
        &["--method", "dense", "--page-size", "8192"],
        // d = 8 is too narrow for the NFC filter of a 16 KiB page: the drive refuses the shape.
        &["--method", "dense", "--page-size", "16384"],
        &["--method", "bogus"],
    ] {
        let o = attend(&dir, extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty());
    }
}

#[test]
fn identify_prints_capabilities() {
    let o = bin().args(["identify", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["page_size"], 4096);
    let o = bin()
        .args(["identify", "--page-size", "16384"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("16384"));
}

#[test]
fn run_and_eval_reject_bad_inputs_with_status_2() {
    let dir = scratch("model-inputs");
    let junk = dir.join("junk.gguf");
    std::fs::write(&junk, b"GGUF\x03\x00\x00\x00 not really a model").unwrap();
    for args in [
        vec!["run", "--model", junk.to_str().unwrap()],
        vec!["run", "--model", "/nonexistent/model.gguf"],
        vec!["run", "--compression", "3"],
        vec!["run", "--method", "nope"],
        vec!["eval", "--text", "/nonexistent/text.txt"],
        vec!["eval", "--text", "x", "--compression", "0"],
        vec!["run", "--backend", "nope"],
        vec!["run", "--backend", "ssd", "--budget", "1"],
        vec!["run", "--backend", "ssd", "--prefetch", "9"],
        vec!["run", "--backend", "ssd", "--merge-gap", "20"],
        vec!["run", "--backend", "ssd", "--block", "0"],
        vec!["run", "--backend", "ssd", "--method", "sparf"],
        vec!["bench", "solid", "--text", "/nonexistent/text.txt"],
        vec!["eval", "--text", "x", "--guard-alpha", "1.5"],
        vec!["eval", "--text", "x", "--guard-cap", "0.5"],
        vec!["run", "--method", "sparf-guard", "--guard-share", "0"],
        vec!["run", "--method", "sparf-pca", "--backend", "ssd"],
        vec!["run", "--method", "oracle"],
    ] {
        let out = bin().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).trim().is_empty(), "{args:?}");
    }
}

/// `--model` takes a known model's name or a path; `model path|list` name
/// the known models without fetching anything; a name that is neither is
/// refused with the names listed and status 2.
#[test]
fn model_names_select_known_models_and_unknown_ones_exit_2() {
    let dir = scratch("model-names");
    let cache = |args: &[&str]| {
        let o = bin()
            .env("XDG_CACHE_HOME", &dir)
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    let models = dir.join("instinfer").join("models");
    assert_eq!(
        cache(&["model", "path"]),
        models
            .join("SmolLM2-135M-Instruct.Q4_1.gguf")
            .display()
            .to_string()
    );
    assert_eq!(
        cache(&["model", "path", "--model", "gemma3-270m"]),
        models
            .join("gemma-3-270m-q4_k_m.gguf")
            .display()
            .to_string()
    );
    let list = cache(&["model", "list"]);
    assert!(
        list.contains("smollm2-135m") && list.contains("gemma3-270m"),
        "{list}"
    );
    assert!(list.contains("https://ai.google.dev/gemma/terms"), "{list}");

    for args in [
        vec!["run", "--model", "gemma4-1b"],
        vec!["passkey", "--model", "gemma4-1b"],
        vec!["run", "--model", "/nonexistent/model.gguf"],
    ] {
        let out = bin().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("smollm2-135m, gemma3-270m"), "{args:?}: {err}");
        assert!(err.contains(args[2]), "{args:?}: {err}");
    }
    let out = bin()
        .args(["model", "fetch", "--model", "gemma4-1b"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("gemma3-270m"), "{}", stderr(&out));
}

#[test]
fn bench_paper_names_its_figures_on_a_bad_one() {
    let out = bin()
        .args(["bench", "paper", "--figure", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("seqs") && e.contains("pages"), "{e}");
}

#[test]
fn passkey_rejects_bad_settings_with_status_2() {
    for args in [
        vec!["passkey", "--trials", "0"],
        vec!["passkey", "--min-tokens", "5000"],
        vec!["passkey", "--max-tokens", "9000"],
        vec!["passkey", "--min-tokens", "20", "--max-tokens", "20"],
        vec!["passkey", "--backend", "ssd"],
        vec!["passkey", "--compression", "0"],
        vec!["passkey", "--methods", "nope"],
        vec!["passkey", "--pages-mass", "2"],
    ] {
        let out = bin().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).trim().is_empty(), "{args:?}");
    }
}

#[test]
fn a_kv_dir_that_is_a_file_is_a_clear_error() {
    let dir = scratch("kv-dir-file");
    let file = dir.join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let out = bin()
        .args(["run", "--backend", "ssd", "--max-tokens", "2", "--kv-dir"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("not-a-dir"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x", "nothing overwritten");
}

/// `instinfer serve --listen 127.0.0.1:0 --quiet --namespace-mib 1` with
/// `extra` arguments: the process and the address it printed.
fn serve_quiet(extra: &[&str]) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut serve = bin()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--quiet",
            "--namespace-mib",
            "1",
        ])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (serve, line.trim().to_string())
}

/// `instinfer serve` as a process: prints its address, serves `identify
/// --device tcp://…`, refuses a port in use and bad arguments with 2.
#[test]
fn serve_and_identify_over_nvme_tcp() {
    let (mut serve, addr) = serve_quiet(&[]);
    let url = format!("tcp://{addr}/{}", nvme_tcp::DEFAULT_NQN);
    let o = bin()
        .args(["identify", "--json", "--device", &url])
        .output()
        .unwrap();
    let busy = bin()
        .args(["serve", "--listen", &addr, "--quiet"])
        .output()
        .unwrap();
    let wrong = bin()
        .args(["identify", "--device", &format!("tcp://{addr}/nqn.x:none")])
        .output()
        .unwrap();
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["page_size"], 16384, "{v}");
    assert_eq!(busy.status.code(), Some(2), "{}", stderr(&busy));
    assert!(stderr(&busy).contains("in use"), "{}", stderr(&busy));
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        stderr(&wrong).contains("no subsystem of that NQN"),
        "{}",
        stderr(&wrong)
    );
    let bad = bin()
        .args(["identify", "--device", "tcp://h:x/n"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("port"), "{}", stderr(&bad));
}

/// Without a GPU (or without the `cuda` feature), `run --gpu` says why and
/// exits 2; `--placement` on a drive without a GPU model is refused; `gpu`
/// reports every path.
#[test]
fn gpu_paths_explain_themselves_without_a_gpu() {
    let report = bin().arg("gpu").output().unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("dma-buf export"), "{text}");
    assert!(text.contains("passthrough"), "{text}");
    let bad = bin()
        .args([
            "run",
            "--placement",
            "gpu-p2p",
            "--device",
            "qemu:zynqmp",
            "--max-tokens",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("--placement"), "{}", stderr(&bad));
    let wrong = bin().args(["run", "--placement", "gpu"]).output().unwrap();
    assert_eq!(wrong.status.code(), Some(2));
    if text.contains("GPU                ") && text.contains("not tried") {
        let gpu = bin()
            .args(["run", "--gpu", "--max-tokens", "1"])
            .output()
            .unwrap();
        assert_eq!(gpu.status.code(), Some(2), "{}", stderr(&gpu));
        assert!(stderr(&gpu).contains("--gpu:"), "{}", stderr(&gpu));
    }
}

/// The recovery options: a host copy needs a drive backend, retries are
/// bounded; with both, a run on the simulated drive completes (the drive
/// fails nothing, so the summary reports no recovery).
#[test]
fn recovery_options_are_checked_and_run() {
    let host = bin()
        .args([
            "run",
            "--backend",
            "host",
            "--host-copy",
            "--max-tokens",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(host.status.code(), Some(2), "{}", stderr(&host));
    assert!(stderr(&host).contains("--host-copy"), "{}", stderr(&host));
    let many = bin().args(["run", "--retries", "17"]).output().unwrap();
    assert_eq!(many.status.code(), Some(2), "{}", stderr(&many));
    let ok = bin()
        .args(["run", "--host-copy", "--retries", "3", "--max-tokens", "3"])
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(!stderr(&ok).contains("recovery:"), "{}", stderr(&ok));
}

/// Ctrl-C during `run`: the generation stops at the next token, the
/// sequences on the drive are closed, and the exit status is 130.
#[test]
fn ctrl_c_stops_a_run_cleanly() {
    use std::io::Read;
    let mut child = bin()
        .args([
            "run",
            "--max-tokens",
            "2000",
            "--prompt",
            "Once upon a time",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first generated text, then interrupt.
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    let n = out.read(&mut first).unwrap();
    assert!(n > 0, "no output before the interrupt");
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut rest = Vec::new();
    let _ = out.read_to_end(&mut rest);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("sequences are closed"), "{err}");
}

/// `serve --auth-secrets`: a host with its line in the file identifies
/// through `?hostnqn=…&secrets=…`; without secrets it is refused; a
/// missing file, a file others may read and an unknown group name are
/// refused at start with 2.
#[test]
fn serve_with_authentication() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("serve-auth");
    let file = dir.join("secrets");
    let host = "nqn.2026-12.test:cli-host";
    let key = nvme_tcp::auth::Secret::new(vec![7; 32], nvme_tcp::auth::Transform::Sha256)
        .unwrap()
        .to_text();
    std::fs::write(&file, format!("{host} {key} {key}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let f = file.to_str().unwrap();
    let (mut serve, addr) =
        serve_quiet(&["--auth-secrets", f, "--dhchap-groups", "ffdhe3072,null"]);
    let base = format!("tcp://{addr}/{}", nvme_tcp::DEFAULT_NQN);
    let ok = bin()
        .args([
            "identify",
            "--device",
            &format!("{base}?hostnqn={host}&secrets={f}"),
        ])
        .output()
        .unwrap();
    let none = bin()
        .args(["identify", "--device", &format!("{base}?hostnqn={host}")])
        .output()
        .unwrap();
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert_eq!(none.status.code(), Some(1));
    assert!(
        stderr(&none).contains("requires authentication"),
        "{}",
        stderr(&none)
    );
    let start = |args: &[&str]| {
        bin()
            .args(["serve", "--listen", "127.0.0.1:0", "--quiet"])
            .args(args)
            .output()
            .unwrap()
    };
    let missing = start(&["--auth-secrets", dir.join("none").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    let bad_group = start(&["--auth-secrets", f, "--dhchap-groups", "ffdhe1024"]);
    assert_eq!(bad_group.status.code(), Some(2));
    assert!(
        stderr(&bad_group).contains("ffdhe1024"),
        "{}",
        stderr(&bad_group)
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let loose = start(&["--auth-secrets", f]);
    assert_eq!(loose.status.code(), Some(2));
    assert!(stderr(&loose).contains("chmod 600"), "{}", stderr(&loose));
}
