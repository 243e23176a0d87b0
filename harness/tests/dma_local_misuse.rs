//! Misuses of `dma_local` that safe code must not be able to write: each file of
//! `modules/dma_misuse` is built against the template's wrapper with Kbuild, and must fail with the
//! compiler error that names the rule it breaks. A case that builds, or fails for another reason,
//! fails the test.

use harness::build_module_with;

/// Each case and the error code its build must report.
const CASES: &[(&str, &str)] = &[
    ("write_through_shared_reference", "error[E0308]"),
    ("impostor_element_ptr", "error[E0308]"),
    ("impostor_module", "error[E0080]"),
    ("packed_field", "error[E0793]"),
    ("mask_set_while_mapped", "error[E0133]"),
    ("cpu_view_without_unsafe", "error[E0133]"),
    ("write_from_device_buffer", "error[E0594]"),
    ("deref_element", "error[E0283]"),
    ("union_bool_field", "error[E0277]"),
];

#[test]
fn dma_local_misuses_do_not_compile() {
    // Builds outside a scenario take a core, as a scenario's do.
    let _building = harness::Cores::take(1);
    let mut wrong = Vec::new();
    for (case, expected) in CASES {
        match build_module_with("modules/dma_misuse", &[("MISUSE", case)]) {
            Ok(_) => wrong.push(format!("{case}: built, but must fail with {expected}")),
            Err(e) => {
                let output = e.to_string();
                let errors: Vec<&str> = output
                    .lines()
                    .filter(|l| l.starts_with("error[") || l.starts_with("error:"))
                    .collect();
                // The expected error, and no other: a case that also fails for an unrelated
                // reason (a typo, an API that moved) would prove nothing.
                let others: Vec<&&str> = errors
                    .iter()
                    .filter(|l| !l.starts_with(expected) && !l.starts_with("error: aborting"))
                    .collect();
                if !errors.iter().any(|l| l.starts_with(expected)) || !others.is_empty() {
                    wrong.push(format!(
                        "{case}: expected only {expected}, the compiler said:\n{}",
                        errors.join("\n")
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
