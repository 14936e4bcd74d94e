//! The leaf every module leans on: locking, and the record of contract
//! violations (printed, with the caller's backtrace under
//! `GPUMEM_STANDIN_BACKTRACE=1`, kept for the query, fatal under
//! `GPUMEM_STANDIN_ABORT=1` unless a test announced it).

use std::sync::{Mutex, MutexGuard};

/// Every violation recorded, in order.
pub static VIOLATIONS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Violations a test announced (`gpumem_standin_expect_violation`): each
/// is a text the message contains, and spares one violation the abort.
pub static EXPECTED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Lock a mutex; a panic elsewhere (which aborts across the C boundary
/// anyway) leaves no half-updated table worth refusing.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `message` was announced; the announcement is used up.
fn announced(message: &str) -> bool {
    let mut expected = lock(&EXPECTED);
    let found = expected.iter().position(|e| message.contains(e.as_str()));
    found.map(|i| expected.remove(i)).is_some()
}

/// Record a contract violation.
pub fn violation(message: String) {
    let announced = announced(&message);
    let kind = if announced { "EXPECTED " } else { "" };
    eprintln!("gpumem stand-in driver: {kind}CONTRACT VIOLATION: {message}");
    if std::env::var("GPUMEM_STANDIN_BACKTRACE").is_ok_and(|v| v == "1") {
        let thread = std::thread::current();
        let bt = std::backtrace::Backtrace::force_capture();
        eprintln!("on thread {:?}:\n{bt}", thread.name());
    }
    if !announced && std::env::var("GPUMEM_STANDIN_ABORT").is_ok_and(|v| v == "1") {
        eprintln!("gpumem stand-in driver: aborting (GPUMEM_STANDIN_ABORT=1)");
        std::process::abort();
    }
    lock(&VIOLATIONS).push(message);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announced_violation_is_matched_by_its_text_once() {
        lock(&EXPECTED).push("never exported".into());
        assert!(!announced("cuMemMap: past the chunk"));
        assert!(announced("import: the chunk was never exported (…)"));
        assert!(
            !announced("import: the chunk was never exported (…)"),
            "used up"
        );
    }
}
