//! `instinfer discover`: the Discovery Log Page of an NVMe/TCP target (as
//! `nvme discover -t tcp` prints it), and the `--device` URL of each
//! subsystem.

use host_driver::csd::CsdError;
use instinfer::RunError;
use nvme_tcp::initiator::{TcpOptions, discover};
use serde_json::json;

/// Arguments of `discover`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The target: `HOST[:PORT]` or `tcp://HOST[:PORT]` (port 4420 if not given).
    target: String,
    /// Print one JSON array instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<(), RunError> {
    let addr = a.target.strip_prefix("tcp://").unwrap_or(&a.target);
    let addr = addr.split('/').next().unwrap_or_default();
    if addr.is_empty() {
        return Err(RunError::Input(format!("discover {:?}: no host", a.target)));
    }
    let url = nvme_tcp::TcpUrl::parse(&format!("tcp://{addr}")).map_err(RunError::Input)?;
    let ports = discover(&url.addr, &TcpOptions::default()).map_err(CsdError::from)?;
    if a.json {
        let v: Vec<_> = ports
            .iter()
            .map(|p| {
                json!({
                    "subtype": p.subtype,
                    "subnqn": p.subnqn,
                    "traddr": p.traddr,
                    "trsvcid": p.trsvcid,
                    "portid": p.portid,
                    "url": p.url(),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(v));
        return Ok(());
    }
    println!("Discovery Log Number of Records {}", ports.len());
    for (i, p) in ports.iter().enumerate() {
        let kind = match p.subtype {
            proto::discovery::SUBTYPE_NVM => "nvme subsystem",
            proto::discovery::SUBTYPE_CURRENT_DISCOVERY => "current discovery subsystem",
            _ => "other",
        };
        println!("=====Discovery Log Entry {i}======");
        println!("subtype: {kind}");
        println!("portid:  {}", p.portid);
        println!("trsvcid: {}", p.trsvcid);
        println!("subnqn:  {}", p.subnqn);
        println!("traddr:  {}", p.traddr);
        if p.subtype == proto::discovery::SUBTYPE_NVM {
            println!("device:  --device {}", p.url());
        }
    }
    Ok(())
}
