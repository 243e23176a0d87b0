//! git, which the tool runs to find the repository and to store and read blobs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{exit, fail, Result};

/// The top of the git checkout the tool runs in.
pub(crate) fn git_toplevel() -> Result<PathBuf> {
    let out = Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .output()
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(fail!(exit::BAD_INPUT, "not in a git checkout: pass --root"));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Runs `git -C root args`, and returns its output.
pub(crate) fn git(root: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(fail!(
            exit::BAD_INPUT,
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}
