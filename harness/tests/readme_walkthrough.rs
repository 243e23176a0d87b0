//! The README's "Write your own driver" commands, taken from the README and run as written, in one
//! shell, with the caller's environment (a rustup toolchain ahead of the kernel's in `PATH`, as on a
//! developer's machine), in a copy of the checkout's layout whose `drivers/` is empty: they generate
//! `drivers/my_driver` from the template and build `my_driver.ko` against the project's kernel, in
//! place and copied out of the project, and the driver's vendored files are the template's, byte
//! for byte. A README whose walkthrough fails fails here.

use std::{fs, path::Path, process::Command};

/// The first `sh` block after the heading `heading` in `readme`.
fn commands_under<'r>(readme: &'r str, heading: &str) -> &'r str {
    let section = &readme[readme
        .find(heading)
        .unwrap_or_else(|| panic!("README has no {heading:?}"))..];
    let start = section.find("```sh\n").expect("a sh block in the section") + "```sh\n".len();
    let len = section[start..].find("```").expect("the block's end");
    &section[start..start + len]
}

#[test]
fn readme_write_your_own_driver_works_as_written() {
    // Builds outside a scenario take a core, as a scenario's do.
    let _building = harness::Cores::take(1);
    let env = harness::Env::get().unwrap_or_else(|e| panic!("{e}"));
    // The walkthrough builds on the host against the project's kernel; Debian's kernels are built
    // for in their chroots (`debian_kernels.rs`).
    if env.kernel.is_debian() {
        eprintln!(
            "the README's walkthrough is for the project's kernels, not {}",
            env.kernel.name()
        );
        return;
    }
    let readme = fs::read_to_string(env.root.join("README.md")).expect("README.md");
    let commands = commands_under(&readme, "## Write your own driver");
    // The checkout, but for its drivers, through symbolic links.
    let top = env.root.join("runs/readme-walkthrough");
    let _ = fs::remove_dir_all(&top);
    // Where the walkthrough copies the driver to: beside the checkout's copy.
    let copied = env.root.join("runs/my_driver");
    let _ = fs::remove_dir_all(&copied);
    fs::create_dir_all(top.join("drivers")).expect("a directory under runs/");
    for entry in fs::read_dir(&env.root).expect("the checkout") {
        let name = entry.expect("an entry").file_name();
        if ["drivers", "runs", "target", ".git"]
            .iter()
            .any(|n| name == *n)
        {
            continue;
        }
        std::os::unix::fs::symlink(env.root.join(&name), top.join(&name)).expect("a link");
    }
    let out = Command::new("bash")
        .args(["-e", "-c", commands])
        .current_dir(&top)
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "the README's commands failed ({}):\n{commands}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let driver = top.join("drivers/my_driver");
    assert!(
        driver.join("my_driver.ko").is_file(),
        "no my_driver.ko in {}",
        driver.display()
    );
    assert!(
        copied.join("my_driver.ko").is_file(),
        "no my_driver.ko in the copy, {}",
        copied.display()
    );
    for rel in harness::VENDORED.iter() {
        let template = fs::read(Path::new(&env.root).join("template").join(rel)).ok();
        assert!(
            template.is_some() && fs::read(driver.join(rel)).ok() == template,
            "{rel} is not the template's"
        );
    }
}
