//! Hosts in network namespaces of their own (as SPDK's NVMe-oF suites
//! run them): the test makes a namespace for the target and one per
//! host, each host joined to the target's by a veth pair with addresses
//! that exist only inside those namespaces, and runs three authenticated
//! hosts at once against one `instinfer serve` target: a decode loop
//! checked against the host reference, per-host sequences with the same
//! ids and different data, a wrong key, and a host process killed
//! mid-stream that reconnects. Needs root and iproute2 (`ip netns`); in CI
//! their absence fails the test (testkit::require).

use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use host_driver::csd::Csd;
use instinfer::device::DeviceSpec;
use instinfer::run::demo::{DemoParams, run_demo};
use nvme_tcp::auth::{Policy, Secret, Transform};
use nvme_tcp::target::TargetAuth;
use nvme_tcp::{NvmeTcp, Target, TargetConfig, TargetHandle, TcpUrl};

use super::fabric_auth::secrets_file;
use proto::SeqShape;

const HOSTS: usize = 3;

/// Namespaces and links made by this test, removed when dropped.
struct Net {
    tag: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Net {
    fn ns(&self, who: &str) -> String {
        format!("{}{who}", self.tag)
    }

    /// The target's namespace `t` and hosts `h1..hN`, host i reaching the
    /// target at 10.77.i.1 (the target's end) from 10.77.i.2.
    fn create(hosts: usize) -> Result<Self, String> {
        let net = Self {
            tag: format!("ii{}", std::process::id() % 100_000),
        };
        let t = net.ns("t");
        ip(&["netns", "add", &t])?;
        ip(&["-n", &t, "link", "set", "lo", "up"])?;
        for i in 1..=hosts {
            let h = net.ns(&format!("h{i}"));
            let (vh, vt) = (format!("{}vh{i}", net.tag), format!("{}vt{i}", net.tag));
            ip(&["netns", "add", &h])?;
            ip(&["-n", &h, "link", "set", "lo", "up"])?;
            ip(&[
                "link", "add", &vh, "netns", &h, "type", "veth", "peer", "name", &vt, "netns", &t,
            ])?;
            ip(&[
                "-n",
                &t,
                "addr",
                "add",
                &format!("10.77.{i}.1/30"),
                "dev",
                &vt,
            ])?;
            ip(&[
                "-n",
                &h,
                "addr",
                "add",
                &format!("10.77.{i}.2/30"),
                "dev",
                &vh,
            ])?;
            ip(&["-n", &t, "link", "set", &vt, "up"])?;
            ip(&["-n", &h, "link", "set", &vh, "up"])?;
        }
        Ok(net)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for n in ["t", "h1", "h2", "h3"] {
            let _ = ip(&["netns", "del", &self.ns(n)]);
        }
    }
}

/// The target, stopped from inside its namespace when dropped (stopping
/// wakes its accept loop with a connection to its own address).
struct NsTarget {
    handle: Option<TargetHandle>,
    ns: String,
}

impl Drop for NsTarget {
    fn drop(&mut self) {
        if let Some(t) = self.handle.take() {
            let _ = in_ns(&self.ns, move || drop(t)).join();
        }
    }
}

/// A child process killed when dropped (a failing test leaves none).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `f` on a thread that has entered network namespace `ns`
/// (sockets it makes, and threads it starts, live there).
fn in_ns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = Path::new("/run/netns").join(ns);
    std::thread::spawn(move || {
        let fd = std::fs::File::open(&path).expect("namespace file");
        rustix::thread::move_into_link_name_space(
            fd.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .expect("setns");
        f()
    })
}

fn host_nqn(i: usize) -> String {
    format!("nqn.2026-12.test:netns-host{i}")
}

fn secret(i: usize, salt: u8) -> String {
    Secret::new(vec![i as u8 * 16 + salt; 32], Transform::Sha256)
        .unwrap()
        .to_text()
}

fn url(i: usize, secrets: &Path) -> String {
    format!(
        "tcp://10.77.{i}.1:4420/{}?hostnqn={}&secrets={}",
        nvme_tcp::DEFAULT_NQN,
        host_nqn(i),
        secrets.display()
    )
}

fn demo(device: &str, steps: usize) -> Result<f32, String> {
    let p = DemoParams {
        layers: 2,
        seqs: 2,
        steps,
        prompt: 48,
        devices: 1,
        device: DeviceSpec::parse(device)?,
        ..DemoParams::default()
    };
    let r = run_demo(&p).map_err(|e| e.to_string())?;
    Ok(r.rows.iter().map(|row| row.max_abs_err).fold(0.0, f32::max))
}

/// Host `i` keeps sequences 7 and 8 (the same ids as every other host)
/// with K and V all equal to its own value, and decodes them while the
/// others do the same (dense over a constant V returns V): an output of
/// another value would be another host's data. Returns how many outputs
/// were not its own value.
fn own_sequences(i: usize, secrets: &Path) -> Result<usize, String> {
    let tcp = NvmeTcp::connect(&TcpUrl::parse(&url(i, secrets))?).map_err(|e| e.to_string())?;
    let mut csd = Csd::new(tcp).map_err(|e| e.to_string())?;
    let shape = SeqShape {
        layers: 1,
        kv_heads: 1,
        group: 1,
        head_dim: 64,
        dim_group: 1,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    let value = half::f16::from_f32(i as f32).to_bits();
    let kv = vec![value; 32 * 64];
    for id in [7, 8] {
        csd.open(id, shape).map_err(|e| e.to_string())?;
        csd.append(id, 0, 0, &kv, &kv).map_err(|e| e.to_string())?;
    }
    let q = vec![half::f16::from_f32(0.5).to_bits(); 64];
    let mut wrong = 0;
    for step in 0..20u32 {
        let id = 7 + step % 2;
        let t = csd
            .submit_decode(id, 0, 31, &q, None, attention::shape::Method::Dense)
            .map_err(|e| e.to_string())?;
        let out = csd.fetch(t).map_err(|e| e.to_string())?;
        wrong += out
            .out
            .iter()
            .filter(|&&o| (o - i as f32).abs() > 1e-3)
            .count();
    }
    for id in [7, 8] {
        csd.close(id).map_err(|e| e.to_string())?;
    }
    Ok(wrong)
}

#[test]
fn three_hosts_in_three_network_namespaces() {
    let root = rustix::process::geteuid().is_root();
    let ip_ok = testkit::tool::runs("ip", "-V");
    if !testkit::require(
        root && ip_ok,
        "ip netns as root",
        "the network-namespace matrix",
    ) {
        return;
    }
    let net = Net::create(HOSTS).expect("namespaces");
    let started = Instant::now();
    // Host 2 also authenticates the controller.
    let file = secrets_file(&format!(
        "{} {}\n{} {} {}\n{} {}\n",
        host_nqn(1),
        secret(1, 0),
        host_nqn(2),
        secret(2, 0),
        secret(2, 1),
        host_nqn(3),
        secret(3, 0),
    ));
    let hosts = nvme_tcp::auth::load(&file).unwrap();
    let handle = in_ns(&net.ns("t"), move || {
        let cfg = TargetConfig {
            listen: "0.0.0.0:4420".parse().unwrap(),
            page_size: 4096,
            namespace_bytes: 16 << 20,
            log: false,
            auth: Some(TargetAuth {
                hosts,
                policy: Policy::default(),
            }),
            ..TargetConfig::default()
        };
        Target::bind(cfg).unwrap().spawn().unwrap()
    })
    .join()
    .unwrap();
    let guard = NsTarget {
        handle: Some(handle),
        ns: net.ns("t"),
    };
    let target = guard.handle.as_ref().expect("running");

    // Host 3 as a process of its own: a long decode loop, killed with
    // SIGKILL mid-stream.
    let mut child = Child(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &net.ns("h3"),
                env!("CARGO_BIN_EXE_instinfer"),
            ])
            .args([
                "demo", "--layers", "2", "--seqs", "2", "--prompt", "48", "--steps", "100000",
            ])
            .args(["--device", &url(3, &file)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("host 3's process"),
    );
    // Hosts 1 and 2 at the same time, in their namespaces.
    let work: Vec<_> = (1..=2)
        .map(|i| {
            let f = file.clone();
            in_ns(&net.ns(&format!("h{i}")), move || {
                let err = demo(&url(i, &f), 6)?;
                let wrong = own_sequences(i, &f)?;
                Ok::<_, String>((err, wrong))
            })
        })
        .collect();
    // A wrong key from host 2's namespace, while host 2 works.
    let bad = secrets_file(&format!("{} {}\n", host_nqn(2), secret(2, 9)));
    let refused = in_ns(&net.ns("h2"), move || {
        NvmeTcp::connect(&TcpUrl::parse(&url(2, &bad)).unwrap()).map(|_| ())
    })
    .join()
    .unwrap();
    let e = refused
        .expect_err("a wrong key must be refused")
        .to_string();
    assert!(e.contains("refused by the controller"), "{e}");
    // Kill host 3 mid-stream: once its sequences are open and filled,
    // while it decodes.
    let deadline = Instant::now() + Duration::from_secs(120);
    while target.host_usage(&host_nqn(3)).1 == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    let (left_open, _) = target.host_usage(&host_nqn(3));
    assert!(left_open > 0, "host 3 was killed before it opened anything");
    child.0.kill().expect("kill host 3");
    let status = child.0.wait().unwrap();
    assert!(!status.success(), "host 3 was killed, not finished");
    let mut lost = 0usize;
    for (i, w) in work.into_iter().enumerate() {
        let (err, wrong) = w
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("host {}: {e}", i + 1));
        assert!(err < 1e-2, "host {}: max |device − reference| {err}", i + 1);
        lost += wrong;
    }
    // Host 3 comes back: closes what its killed process left open (its
    // sequences outlive its connections) and runs its work again, to the
    // end.
    let f = file.clone();
    let (closed, err3, wrong3) = in_ns(&net.ns("h3"), move || {
        use host_driver::transport::{IoData, IoRequest, Transport};
        let mut tcp = NvmeTcp::connect(&TcpUrl::parse(&url(3, &f)).unwrap()).unwrap();
        let mut closed = 0;
        for seq in 0..16 {
            let sqe = proto::SeqClose { seq }.to_sqe();
            tcp.submit(IoRequest {
                sqe,
                data: IoData::None,
            })
            .unwrap();
            closed += usize::from(tcp.reap().unwrap().1.cqe.status().is_success());
        }
        drop(tcp);
        let err = demo(&url(3, &f), 6).unwrap();
        (closed, err, own_sequences(3, &f).unwrap())
    })
    .join()
    .unwrap();
    assert_eq!(
        closed as u32, left_open,
        "what host 3's killed process left open"
    );
    assert!(err3 < 1e-2, "host 3 after reconnecting: {err3}");
    assert_eq!(
        target.host_usage(&host_nqn(3)),
        (0, 0),
        "host 3 closed what it left"
    );
    lost += wrong3;
    assert_eq!(lost, 0, "decode outputs not equal to their own host's data");
    let s = target.stats();
    let refused_logins =
        s.auth_failures.load(Ordering::Relaxed) + s.refused_hosts.load(Ordering::Relaxed);
    assert_eq!(refused_logins, 1);
    assert_eq!(s.protocol_errors.load(Ordering::Relaxed), 0);
    println!(
        "netns matrix: {} hosts in {} namespaces, {} connections, {} authenticated queues, {} commands, \
         faults injected 2 (host 3 SIGKILLed with {left_open} sequences open, a wrong key), refused logins {refused_logins}, lost data {lost}, {:.1} s wall",
        HOSTS,
        HOSTS + 1,
        s.connections.load(Ordering::Relaxed),
        s.authentications.load(Ordering::Relaxed),
        s.commands.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    drop(guard);
    drop(net);
}
