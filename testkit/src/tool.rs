//! A test that needs an external tool (gcc, iverilog, QEMU, a TrueType
//! font) which is absent prints one line saying what it skipped. Under
//! `CI=true` the same absence fails the test, so CI cannot pass by
//! skipping.

/// Whether the test may go on: `true` when `present`. When absent, prints
/// `skipped: <what> (<tool> not found)` and returns `false`, or panics
/// when the environment variable `CI` is `true`.
///
/// # Panics
/// When `present` is false and `CI=true`.
pub fn require(present: bool, tool: &str, what: &str) -> bool {
    decide(present, tool, what, in_ci())
}

/// Whether this run is CI's (`CI=true`, as CI services and `.ci/run` set).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

fn decide(present: bool, tool: &str, what: &str, ci: bool) -> bool {
    if present {
        return true;
    }
    assert!(
        !ci,
        "{what} needs {tool}, which is not installed (CI=true: absence is a failure)"
    );
    eprintln!("skipped: {what} ({tool} not found)");
    false
}

/// Whether `program` runs with `arg` (for example `--version`) and exits 0.
pub fn runs(program: &str, arg: &str) -> bool {
    std::process::Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_present_tool_lets_the_test_run() {
        assert!(decide(true, "gcc", "x", true));
        assert!(decide(true, "gcc", "x", false));
    }

    #[test]
    fn an_absent_tool_skips_outside_ci() {
        assert!(!decide(false, "iverilog", "the co-simulation", false));
    }

    #[test]
    #[should_panic(expected = "CI=true")]
    fn an_absent_tool_fails_under_ci() {
        decide(false, "iverilog", "the co-simulation", true);
    }

    #[test]
    fn a_missing_program_does_not_run() {
        assert!(!runs("instinfer-no-such-program", "--version"));
    }
}
