//! `aero-d3d9-host [--once] [--executor soft|wgpu]`: listens on a loopback TCP port
//! (printed as `port N` on the first line of stdout) and runs each connecting test D3D9
//! runtime (`tests/d3d9/runtime`) on a fresh AeroGPU device, with the CPU executor
//! (default) or the wgpu one (headless adapter). Started and stopped by
//! `tests/d3d9/run.sh` (`AERO_D3D9_EXECUTOR` picks the executor there).

use std::io::Write;
use std::net::TcpListener;

use aero_gpu::aerogpu::{SoftExecutor, SoftExecutorConfig, WgpuExecutor};
use aero_guest_tools::d3d9_host;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AERO_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args: Vec<String> = std::env::args().collect();
    let once = args.iter().any(|a| a == "--once");
    let wgpu = match args
        .iter()
        .position(|a| a == "--executor")
        .map(|i| args.get(i + 1))
    {
        None => false,
        Some(Some(e)) if e == "soft" => false,
        Some(Some(e)) if e == "wgpu" => true,
        Some(other) => anyhow::bail!("--executor takes soft or wgpu, not {other:?}"),
    };
    let listener = TcpListener::bind("127.0.0.1:0")?;
    println!("port {}", listener.local_addr()?.port());
    std::io::stdout().flush()?;
    for conn in listener.incoming() {
        let conn = conn?;
        let config = SoftExecutorConfig::default();
        let served = if wgpu {
            d3d9_host::serve(conn, WgpuExecutor::new_headless(config)?)
        } else {
            d3d9_host::serve(conn, SoftExecutor::new(config))
        };
        match served {
            Ok(s) => eprintln!(
                "aero-d3d9-host: session done: {} submissions, {} doorbells, {} failed",
                s.stats.submissions, s.stats.doorbells, s.stats.failed_submissions
            ),
            Err(e) => eprintln!("aero-d3d9-host: session ended: {e}"),
        }
        if once {
            break;
        }
    }
    Ok(())
}
