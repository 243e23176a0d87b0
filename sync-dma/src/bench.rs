//! `bench`: times `--check` over generated drivers.

use std::path::Path;
use std::process::Command;

use crate::cli::Options;
use crate::git::git;
use crate::{exit, fail, Result, API_LIST, VENDORED};

/// Times `--check` over `N` generated drivers in a scratch repository.
pub(crate) fn bench(opts: &Options) -> Result<i32> {
    let n: usize = opts
        .rest
        .first()
        .map_or(Ok(100), |s| s.parse())
        .map_err(|_| fail!(exit::BAD_INPUT, "bench takes a number of drivers"))?;
    let scratch = std::env::temp_dir().join(format!("sync-dma-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let copy = |from: &Path, to: &Path| -> Result<()> {
        std::fs::create_dir_all(to.parent().expect("has a parent"))
            .map_err(|e| fail!(exit::BAD_INPUT, "{e}"))?;
        std::fs::copy(from, to)
            .map(drop)
            .map_err(|e| fail!(exit::BAD_INPUT, "cannot copy {}: {e}", from.display()))
    };
    for file in VENDORED.iter() {
        copy(
            &opts.root.join("template").join(file),
            &scratch.join("template").join(file),
        )?;
        for i in 0..n {
            copy(
                &opts.root.join("template").join(file),
                &scratch.join(format!("drivers/drv{i:03}")).join(file),
            )?;
        }
    }
    copy(&opts.root.join(API_LIST), &scratch.join(API_LIST))?;
    git(&scratch, &["init", "-q"])?;
    let exe = std::env::current_exe().map_err(|e| fail!(exit::BAD_INPUT, "{e}"))?;
    let mut kernel_args: Vec<&std::ffi::OsStr> = Vec::new();
    for kdir in &opts.kdirs {
        kernel_args.extend(["--kdir".as_ref(), kdir.as_os_str()]);
    }
    if let Some(dir) = &opts.rust_src {
        kernel_args.extend(["--rust-src".as_ref(), dir.as_os_str()]);
    }
    let run = |args: &[&str]| {
        Command::new(&exe)
            .arg("--root")
            .arg(&scratch)
            .args(&kernel_args)
            .args(args)
            .output()
            .map_err(|e| fail!(exit::BAD_INPUT, "{e}"))
    };
    let out = run(&["init"])?;
    if !out.status.success() {
        return Err(fail!(
            exit::BAD_INPUT,
            "init failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut times = Vec::new();
    for _ in 0..10 {
        let start = std::time::Instant::now();
        let out = run(&["--check"])?;
        times.push(start.elapsed());
        if out.status.code() != Some(0) {
            return Err(fail!(
                exit::BAD_INPUT,
                "--check was not clean: {}",
                String::from_utf8_lossy(&out.stdout)
            ));
        }
    }
    times.sort();
    let _ = std::fs::remove_dir_all(&scratch);
    println!(
        "--check over {n} drivers ({} files): median {:.1} ms, min {:.1} ms, max {:.1} ms (10 runs, whole process)",
        n * VENDORED.len(),
        times[5].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[9].as_secs_f64() * 1e3
    );
    Ok(0)
}
